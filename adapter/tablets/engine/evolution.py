"""``MERGE WITH SCHEMA EVOLUTION``: the target's metadata as the statement's source makes it, with
Delta's meaning, committed in the statement's own version (``executor``): a failed MERGE leaves
neither the rows nor the schema change.

- A source column the target lacks (names compared without regard to case, as Spark resolves
  them) is added at the end, nullable, under the source's name and type, where ``UPDATE SET *``
  or ``INSERT *`` covers it or where a SET / INSERT list names it (its value need not be that
  column). A nested type is added whole. Older tablets read it as NULL.
- A column a clause fills from the source column of the same name (``*``, or ``c = s.c``) whose
  source type is a widening of the table's (``widening``) takes the wider type: older tablets
  keep their Parquet type and are read cast (Spark's Parquet reader and Arrow's cast both widen
  exactly), and the change is recorded (``Metadata.type_changes``: Delta's ``delta.typeChanges``).
  A source type the column holds without loss (``fits``: a narrower number, an integer into a
  double) is cast into it as without evolution; any other type (a string into an int, a double
  into an int, struct fields the column lacks) is refused, naming the column and both types.

Without ``WITH SCHEMA EVOLUTION`` nothing here runs: extra source columns are not written, as
before.

>>> widening("int", "bigint"), widening("bigint", "int"), widening("decimal(10,2)", "decimal(12,4)")
(True, False, True)
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tablets.engine.plan import Plan, plan_merge, source_column
from tablets.engine.scope import plan_error
from tablets.spec import ActionKind, MergeSpec
from tablets.storage.actions import Metadata
from tablets.storage.metadata import reserved_names
from tablets.storage.types import TYPE_ALIASES

_INTEGERS = ("tinyint", "smallint", "int", "bigint")
_DECIMAL = re.compile(r"^decimal\((\d+),(\d+)\)$")
# Delta's typeWidening changes that schema evolution makes by itself (int -> double or integer ->
# decimal Delta makes only when asked, with ALTER COLUMN ... TYPE)
WIDENINGS = (
    "tinyint -> smallint -> int -> bigint, float -> double, decimal precision and scale up, date -> timestamp_ntz"
)


def _norm(t: str) -> str:
    t = t.strip().lower().replace(" ", "").replace("`", "")
    if t == "decimal":
        return "decimal(10,0)"
    return TYPE_ALIASES.get(t, t)


def widening(old: str, new: str) -> bool:
    """Whether a column of type ``old`` may widen to ``new``, every value kept exactly."""
    a, b = _norm(old), _norm(new)
    if a == b:
        return False
    if a in _INTEGERS and b in _INTEGERS:
        return _INTEGERS.index(a) < _INTEGERS.index(b)
    if (a, b) in (("float", "double"), ("date", "timestamp_ntz")):
        return True
    ma, mb = _DECIMAL.match(a), _DECIMAL.match(b)
    if ma and mb:
        (pa_, sa), (pb, sb) = (int(x) for x in ma.groups()), (int(x) for x in mb.groups())
        return sb >= sa and pb - sb >= pa_ - sa
    return False


_NUMERIC = (*_INTEGERS, "float", "double")
_DIGITS = {"tinyint": 3, "smallint": 5, "int": 10, "bigint": 20}


def fits(source: str, column: str) -> bool:
    """Whether a source value of type ``source`` goes into a column of type ``column`` without
    loss (Spark's up-cast): no type change is asked for, the value is cast as without evolution."""
    a, b = _norm(source), _norm(column)
    if a == b or a in ("void", "null") or widening(a, b):
        return True
    if a in _NUMERIC and b in _NUMERIC:
        return _NUMERIC.index(a) <= _NUMERIC.index(b)
    mb = _DECIMAL.match(b)
    if a in _INTEGERS and mb:
        return int(mb.group(1)) - int(mb.group(2)) >= _DIGITS[a]
    if _DECIMAL.match(a) and b == "double":
        return True
    if (a, b) == ("date", "timestamp"):
        return True
    return b == "string" and "<" not in a


def evolved_metadata(spec: MergeSpec, meta: Metadata, source: Sequence[tuple[str, str]]) -> Metadata | None:
    """``meta`` with the columns ``spec``'s source adds and the types it widens; None when it
    changes nothing. ``source``: the source's (name, Spark SQL type) columns."""
    by_lower = {n.lower(): n for n in meta.column_names}
    types = dict((n, t) for n, t, _ in meta.schema)
    src = {n.lower(): (n, t) for n, t in source}
    added: dict[str, tuple[str, str]] = {}  # lower name -> (source name, type), in source order
    fed: dict[str, str] = {}  # target column -> source column filled in by name
    star = any(c.star for c in spec.clauses)
    if star:
        for low, (name, t) in src.items():
            if low in by_lower:
                fed[by_lower[low]] = name
            else:
                added[low] = (name, t)
    for clause in spec.clauses:
        if clause.action is ActionKind.UPDATE:
            named = list(clause.assignments)
        elif clause.action is ActionKind.INSERT:
            named = list(zip(clause.insert_columns, clause.insert_values, strict=False))
        else:
            continue
        for column, value in named:
            low = column.lower()
            from_source = source_column(spec, value.text)
            if low in by_lower:
                if from_source is not None and from_source.lower() == low:
                    fed[by_lower[low]] = src.get(low, (from_source, ""))[0]
            elif low in src and low not in added:
                added[low] = src[low]
    schema = list(meta.schema)
    widened: list[tuple[str, str]] = []
    for column, name in fed.items():
        old, new = types[column], src.get(name.lower(), (name, ""))[1]
        if not new or fits(new, old):
            continue  # the same type, or one the column holds exactly
        if not widening(old, new):
            raise plan_error(
                spec,
                f"WITH SCHEMA EVOLUTION, column {column}",
                f"the table's {column} is {old} and the source's {name} is {new}: not a type widening "
                f"(tablets widens {WIDENINGS})",
                help=f"Cast the source column to the table's type (CAST({spec.source_alias}.{name} AS {old})), or "
                f"rebuild the table with the new type (CREATE OR REPLACE TABLE; in dbt: --full-refresh).",
            )
        widened.append((column, new))
    if not added and not widened:
        return None
    taken = reserved_names([name for name, _ in added.values()])
    if taken:
        raise plan_error(
            spec,
            "WITH SCHEMA EVOLUTION",
            f"source column(s) {', '.join(taken)} would be added, and their names are reserved by dbt-tablets",
            help="Rename them in the source (SELECT ... AS another_name), or leave them out.",
        )
    untyped = [name for name, t in added.values() if _norm(t) in ("void", "null")]
    if untyped:
        raise plan_error(
            spec,
            "WITH SCHEMA EVOLUTION",
            f"source column(s) {', '.join(untyped)} are NULL with no type: a new column needs one",
            help=f"Give them a type in the source (CAST(NULL AS STRING) AS {untyped[0]}).",
        )
    out = meta.with_schema(tuple(schema) + tuple((name, t, True) for name, t in added.values()))
    for column, new in widened:
        out = out.widened(column, new)
    return out


def planned(
    spec: MergeSpec, metadata: Metadata, fields: Sequence[tuple[str, str]] | None, *, skip_unchanged: bool
) -> tuple[Plan, Metadata | None]:
    """The plan of ``spec`` as its run makes it, and the metadata its schema evolution makes (None
    where it makes none): over that schema, the table's key columns, ``skip_unchanged``.
    ``fields``: the source's (name, Spark type), None without a source."""
    evolved = evolved_metadata(spec, metadata, fields) if spec.schema_evolution and fields is not None else None
    meta = evolved or metadata
    columns = [n for n, _ in fields] if fields is not None else None
    schema = [(n, t) for n, t, _ in meta.schema]
    return plan_merge(spec, schema, columns, meta.key_columns, skip_unchanged=skip_unchanged), evolved
