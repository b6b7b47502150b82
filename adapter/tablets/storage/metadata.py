"""A new table's metadata (``new_metadata``; ``replacement`` for CREATE OR REPLACE), and changes
to a table's properties, comments and column names: a pure function from one ``Metadata`` to the
next, committed by ``TabletTable.alter_metadata`` as a version of its own
(no data changes), with Delta's meaning:

- ``set_properties`` adds or replaces keys, ``unset_properties`` removes keys (a key the table
  does not have is no error, as in Spark 4);
- ``comment`` replaces the table's comment, ``clear_comment`` removes it;
- ``column_comments`` replaces a column's comment (``None`` removes it); columns are found by
  name without regard to case, as Spark resolves them, and keep the name the table gives them;
- ``rename_column`` gives a column a new name, ``drop_columns`` forgets columns: the tablets
  keep them under their physical names (``tablets.storage.columns``), so nothing is rewritten
  and a column added later under an old name never reads them. A key column is neither
  renamed nor dropped (every statement relies on the key), nor is a ``cluster_by`` column
  dropped; a rename carries the column's comment and its place in ``cluster_by``.

>>> m = Metadata("id", (("Id", "bigint", True),))
>>> MetadataChange(column_comments=(("id", "the key"),)).apply(m).column_comments
(('Id', 'the key'),)
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import pyarrow as pa

from tablets.exceptions import SchemaMismatch
from tablets.storage.actions import Metadata
from tablets.storage.constraints import refuse_losing_columns
from tablets.storage.properties import check_properties
from tablets.storage.tablet import ROW_NUMBER, ROW_TABLET
from tablets.storage.types import schema_from_arrow

# properties the store keeps elsewhere: the key is fixed at creation (statements rely on it)
KEY_COLUMNS = "key_columns"
CLUSTER_BY = "cluster_by"  # a comma list of columns new tablets are sorted by (OPTIMIZE)


@dataclass(frozen=True)
class MetadataChange:
    set_properties: tuple[tuple[str, str], ...] = ()
    unset_properties: tuple[str, ...] = ()
    comment: str | None = None
    clear_comment: bool = False
    column_comments: tuple[tuple[str, str | None], ...] = ()
    rename_column: tuple[str, str] | None = None  # (column, new name)
    drop_columns: tuple[str, ...] = ()
    if_exists: bool = False  # of drop_columns: a column the table does not have is no error

    def apply(self, meta: Metadata, where: str = "") -> Metadata:
        """``meta`` changed; ``SchemaMismatch`` for a column the table does not have and for a
        rename or drop the table refuses (the message says why and what to do)."""
        check_properties(dict(self.set_properties), meta.column_names, where or "ALTER TABLE SET TBLPROPERTIES")
        if self.rename_column is not None:
            meta = _rename(meta, *self.rename_column, where or "RENAME COLUMN")
        if self.drop_columns:
            meta = _drop(meta, self.drop_columns, self.if_exists, where or "DROP COLUMNS")
        props = dict(meta.properties)
        props.update(self.set_properties)
        for key in self.unset_properties:
            props.pop(key, None)
        comment = None if self.clear_comment else (self.comment if self.comment is not None else meta.comment)
        order = {n: i for i, n in enumerate(meta.column_names)}
        by_lower = {n.lower(): n for n in meta.column_names}
        comments = dict(meta.column_comments)
        for name, text in self.column_comments:
            column = name if name in order else by_lower.get(name.lower())
            if column is None:
                raise SchemaMismatch(
                    f"{where or 'COMMENT'}: {name} is not a column of the table (columns: {', '.join(meta.column_names)})",
                    help="Name one of the table's columns.",
                )
            if text is None:
                comments.pop(column, None)
            else:
                comments[column] = text
        return replace(
            meta,
            properties=tuple(sorted(props.items())),
            comment=comment,
            column_comments=tuple(sorted(comments.items(), key=lambda kv: order[kv[0]])),
        )


def _column(meta: Metadata, name: str) -> str | None:
    """The table's column ``name`` (Spark's resolution: exact, else without regard to case)."""
    if name in meta.column_names:
        return name
    return {n.lower(): n for n in meta.column_names}.get(name.lower())


def _not_a_column(meta: Metadata, name: str, where: str) -> SchemaMismatch:
    return SchemaMismatch(
        f"{where}: {name} is not a column of the table (columns: {', '.join(meta.column_names)})",
        help="Name one of the table's columns (DESCRIBE the table).",
    )


def _not_a_key(meta: Metadata, column: str, where: str) -> None:
    if column in meta.key_columns:
        raise SchemaMismatch(
            f"{where}: {column} is a key column of the table (key: {', '.join(meta.key_columns)}); the key is "
            "fixed when the table is created (every MERGE and dbt's unique_key rely on it)",
            help="Keep the key column as it is, or create a new table with the key you want "
            "(in dbt: change unique_key and run with --full-refresh).",
        )


def _cluster_by(meta: Metadata) -> list[str]:
    return [c.strip() for c in (meta.property(CLUSTER_BY) or "").split(",") if c.strip()]


def _rename(meta: Metadata, old: str, new: str, where: str) -> Metadata:
    column = _column(meta, old)
    if column is None:
        raise _not_a_column(meta, old, where)
    _not_a_key(meta, column, where)
    refuse_losing_columns(meta, [column], where)
    clash = _column(meta, new)
    if clash is not None and clash != column:
        raise SchemaMismatch(
            f"{where}: the table already has a column {clash}",
            help=f"Pick a name the table does not have, or drop or rename {clash} first.",
        )
    renamed = meta.renamed(column, new)
    order = _cluster_by(meta)
    if any(c.lower() == column.lower() for c in order):
        props = dict(meta.properties)
        props[CLUSTER_BY] = ",".join(new if c.lower() == column.lower() else c for c in order)
        renamed = replace(renamed, properties=tuple(sorted(props.items())))
    return renamed


def _drop(meta: Metadata, names: tuple[str, ...], if_exists: bool, where: str) -> Metadata:
    columns = []
    for name in names:
        column = _column(meta, name)
        if column is None:
            if if_exists:
                continue
            raise _not_a_column(meta, name, where)
        _not_a_key(meta, column, where)
        if column.lower() in (c.lower() for c in _cluster_by(meta)):
            raise SchemaMismatch(
                f"{where}: new tablets are sorted by {column} (the table's {CLUSTER_BY}: {meta.property(CLUSTER_BY)})",
                help=f"Take it out of {CLUSTER_BY} first (ALTER TABLE ... SET TBLPROPERTIES ('{CLUSTER_BY}' = '...'), "
                "or UNSET it), then drop the column.",
            )
        columns.append(column)
    refuse_losing_columns(meta, columns, where)
    kept = tuple(c for c in meta.schema if c[0] not in columns)
    if not kept:
        raise SchemaMismatch(
            f"{where}: a table keeps at least one column", help="Drop fewer columns, or drop the table."
        )
    return meta.with_schema(kept) if columns else meta


def reserved_names(names: Sequence[str]) -> list[str]:
    """The names of ``names`` that the format or the engine uses (any case: Spark resolves
    Parquet columns without it)."""
    return [n for n in names if n.lower() in (ROW_TABLET, ROW_NUMBER) or n.lower().startswith("__tablets")]


def check_reserved(names: Sequence[str]) -> None:
    """No column may take a name the format or the engine uses."""
    reserved = reserved_names(names)
    if reserved:
        raise SchemaMismatch(f"column names {reserved} are reserved by dbt-tablets", help="Rename the columns.")


def resolve_key_columns(names: Sequence[str], key_columns: Sequence[str]) -> tuple[str, ...]:
    """``key_columns`` spelled as the table's columns (Spark resolves names in any case);
    ``SchemaMismatch`` for one the table does not have."""
    by_lower = {n.lower(): n for n in names}
    keys = tuple(by_lower.get(k.strip().lower(), k.strip()) for k in key_columns)
    missing = [k for k in keys if k not in names]
    if missing:
        raise SchemaMismatch(
            f"key columns {missing} are not columns of the table {list(names)}",
            help="Use columns of the table as key columns.",
        )
    return keys


def new_metadata(
    table_id: str,
    schema: pa.Schema | Sequence[tuple[str, str, bool]],
    key_columns: Sequence[str],
    properties: Mapping[str, str] | None,
    comment: str | None = None,
    column_comments: Sequence[tuple[str, str]] = (),
) -> Metadata:
    cols = schema_from_arrow(schema) if isinstance(schema, pa.Schema) else tuple(schema)
    names = [c[0] for c in cols]
    if len(set(names)) != len(names):
        raise SchemaMismatch(f"duplicate column names in {names}", help="Give every column a distinct name.")
    check_reserved(names)
    by_lower = {n.lower(): n for n in names}  # (Spark resolves names in any case)
    key_columns = resolve_key_columns(names, key_columns)
    comments = tuple((by_lower[c.lower()], text) for c, text in column_comments if c.lower() in by_lower)
    check_properties(properties or {}, names, "CREATE TABLE")
    return Metadata(
        table_id=table_id,
        schema=cols,
        key_columns=tuple(key_columns),
        properties=tuple(sorted((properties or {}).items())),
        created_ms=int(time.time() * 1000),
        comment=comment,
        column_comments=tuple(sorted(comments, key=lambda c: names.index(c[0]))),
    )


def replacement(
    current: Metadata,
    schema: pa.Schema | Sequence[tuple[str, str, bool]],
    key_columns: Sequence[str] = (),
    properties: Mapping[str, str] | None = None,
    comment: str | None = None,
    column_comments: Sequence[tuple[str, str]] = (),
) -> Metadata:
    """The metadata of ``CREATE OR REPLACE`` of a table whose metadata is ``current``: the new
    columns, keys and properties under the table's own id, committed with the new rows in place
    of every tablet (``finish(..., extra_actions=[metadata, *removes])``): one version, so a
    failed replace leaves the table as it was and the old versions stay readable (time travel).
    Its columns are named in the tablets by their names, as a new table's (no old tablet stays),
    with ids after the table's highest: an id is never given twice."""
    meta = new_metadata(current.table_id, schema, key_columns, properties, comment, column_comments)
    first = current.max_column_id + 1
    return replace(meta, column_ids=tuple(range(first, first + len(meta.schema))))
