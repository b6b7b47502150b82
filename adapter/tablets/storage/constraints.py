"""A table's constraints, kept in its metadata the way Delta keeps them, so that the published
Delta log carries them too:

- NOT NULL: the column's ``nullable`` flag is false (Delta's ``"nullable": false``);
- CHECK: the property ``delta.constraints.<name>`` = the SQL expression (Delta's
  ``checkConstraints`` feature; names are lower-cased, as Delta stores them).

Every statement that writes rows checks its new rows against them before its commit
(``tablets.engine.constraints``); this module only reads and changes the metadata.

>>> m = Metadata("id", (("id", "bigint", True), ("v", "int", True)))
>>> m = add_check(m, "Positive", "v > 0", "ALTER TABLE t")
>>> checks(m), not_null(set_not_null(m, "V", True, "ALTER TABLE t"))
((('positive', 'v > 0'),), ('v',))
"""

from __future__ import annotations

import re
from dataclasses import replace

from tablets.exceptions import SchemaMismatch
from tablets.storage.actions import Metadata

PREFIX = "delta.constraints."
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def checks(meta: Metadata) -> tuple[tuple[str, str], ...]:
    """(name, expression) of the table's CHECK constraints, by name."""
    return tuple(sorted((k[len(PREFIX) :], v) for k, v in meta.properties if k.startswith(PREFIX)))


def not_null(meta: Metadata) -> tuple[str, ...]:
    """The columns declared NOT NULL, in schema order."""
    return tuple(n for n, _, nullable in meta.schema if not nullable)


def check_name(name: str, where: str) -> str:
    """``name`` as Delta stores it (lower case); refused unless an identifier."""
    if not _NAME.match(name):
        raise SchemaMismatch(
            f"{where}: {name!r} is not a valid constraint name",
            help="Name a constraint with letters, digits and underscores, starting with a letter.",
        )
    return name.lower()


def add_check(meta: Metadata, name: str, expression: str, where: str) -> Metadata:
    """``meta`` with CHECK ``name`` (refused if the table has one by that name, as Delta does);
    the caller has checked the table's rows."""
    key = PREFIX + check_name(name, where)
    if meta.property(key) is not None:
        raise SchemaMismatch(
            f"{where}: the table already has a constraint {name.lower()} (CHECK ({meta.property(key)}))",
            help=f"Drop it first (ALTER TABLE ... DROP CONSTRAINT {name.lower()}), or pick another name.",
        )
    props = dict(meta.properties)
    props[key] = expression
    return replace(meta, properties=tuple(sorted(props.items())))


def drop_check(meta: Metadata, name: str, if_exists: bool, where: str) -> Metadata:
    key = PREFIX + name.lower()
    if meta.property(key) is None:
        if if_exists:
            return meta
        have = ", ".join(n for n, _ in checks(meta)) or "none"
        raise SchemaMismatch(
            f"{where}: the table has no constraint {name.lower()} (its CHECK constraints: {have})",
            help="Name one of its constraints (SHOW TBLPROPERTIES lists them as delta.constraints.<name>), "
            "or write DROP CONSTRAINT IF EXISTS.",
        )
    return replace(meta, properties=tuple(kv for kv in meta.properties if kv[0] != key))


def column_of(meta: Metadata, name: str, where: str) -> str:
    """The table's column ``name`` (exact, else without regard to case, as Spark resolves it)."""
    if name in meta.column_names:
        return name
    found = {n.lower(): n for n in meta.column_names}.get(name.lower())
    if found is None:
        raise SchemaMismatch(
            f"{where}: {name} is not a column of the table (columns: {', '.join(meta.column_names)})",
            help="Name one of the table's columns (DESCRIBE the table).",
        )
    return found


def set_not_null(meta: Metadata, column: str, on: bool, where: str) -> Metadata:
    """``meta`` with ``column`` NOT NULL (``on``) or nullable again; the caller has checked the
    table's rows."""
    name = column_of(meta, column, where)
    schema = tuple((n, t, (not on) if n == name else nullable) for n, t, nullable in meta.schema)
    return replace(meta, schema=schema)


def referenced(expression: str) -> set[str]:
    """The column names (lower case) a CHECK expression reads."""
    import sqlglot  # here: the executors' side of storage runs without sqlglot (the worker extra)
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(expression, read="spark")
    except sqlglot.errors.SqlglotError:
        return set()
    return {c.name.lower() for c in tree.find_all(exp.Column)}


def refuse_losing_columns(meta: Metadata, columns: tuple[str, ...] | list[str], where: str) -> None:
    """A column a CHECK reads is neither dropped nor renamed (as Delta: the constraint would read
    a column that is gone): drop the constraint first."""
    gone = {c.lower() for c in columns}
    for name, expression in checks(meta):
        hit = sorted(referenced(expression) & gone)
        if hit:
            raise SchemaMismatch(
                f"{where}: column {hit[0]} is read by the table's CHECK constraint {name} ({expression})",
                help=f"Drop the constraint first (ALTER TABLE ... DROP CONSTRAINT {name}), then change the column.",
            )
