"""NOT NULL and CHECK constraints of tablet tables, as statements declare them:

- ``CREATE [OR REPLACE] TABLE t (id BIGINT NOT NULL, ..., CONSTRAINT c CHECK (expr)) USING
  tablets [AS SELECT ...]``: in the table's first metadata (a CTAS's rows are checked against
  them in the same commit);
- ``ALTER TABLE t ADD CONSTRAINT c CHECK (expr)`` and ``ALTER COLUMN c SET NOT NULL``: the
  table's rows are checked first (one Spark query, stopping at the first offending row, which
  the error names), then one metadata commit that conflicts with any write committed since the
  version checked, so no unchecked row slips in;
- ``DROP CONSTRAINT [IF EXISTS] c`` and ``ALTER COLUMN c DROP NOT NULL``: one metadata commit.

They live in the table's metadata (``tablets.storage.constraints``: Delta's
``delta.constraints.<name>`` property and ``nullable: false``); every write enforces them
(``tablets.engine.constraints``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import pyarrow as pa

from tablets.engine.constraints import check_existing_rows, refuse_unfit_check
from tablets.exceptions import KeyViolation, SchemaMismatch
from tablets.spark import catalog
from tablets.spark.frames import empty_frame
from tablets.spark.read_frames import read_frame
from tablets.spark.registry import RegistryEntry, provider_name, register_entries
from tablets.spec import ConstraintSpec, CreateSpec
from tablets.storage.actions import Metadata
from tablets.storage.constraints import (
    PREFIX,
    add_check,
    check_name,
    checks,
    column_of,
    drop_check,
    not_null,
    set_not_null,
)
from tablets.storage.metadata import resolve_key_columns
from tablets.storage.transaction import begin, commit

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from tablets.storage import Snapshot, TabletTable


def declared(
    spark: SparkSession,
    spec: CreateSpec,
    schema: StructType | str | list[tuple[str, str, bool]],
    properties: dict[str, str],
) -> StructType | str | list[tuple[str, str, bool]]:
    """A CREATE's schema with its NOT NULL columns, and its CHECKs added to ``properties``
    (after each is checked to be a boolean expression over the columns)."""
    if not spec.not_null and not spec.checks:
        return schema
    where = f"CREATE TABLE {spec.target}"
    stored = catalog.store_schema(spark, schema)
    cols = [(f.name, str(f.type), f.nullable) for f in stored] if isinstance(stored, pa.Schema) else list(stored)
    names = [c[0] for c in cols]
    lower = {n.lower(): n for n in names}
    for c in spec.not_null:
        if c.lower() not in lower:
            raise SchemaMismatch(f"{where}: NOT NULL names {c}, not a column", help="Name one of the columns.")
    off = {lower[c.lower()] for c in spec.not_null}
    cols = [(n, t, nullable and n not in off) for n, t, nullable in cols]
    for name, expression in spec.checks:
        key = PREFIX + check_name(name, where)
        refuse_unfit_check(expression, f"{where} CONSTRAINT {name.lower()}")
        if key in properties:
            raise SchemaMismatch(f"{where}: two constraints named {name.lower()}", help="Give each its own name.")
        properties[key] = expression.text
    meta = Metadata("new", tuple(cols), properties=tuple(sorted(properties.items())))
    check_existing_rows(spark, empty_frame(spark, meta.schema, names), meta, where)
    return cols


def alter(spark: SparkSession, spec: ConstraintSpec, table: TabletTable) -> int | None:
    """Run ``spec`` on ``table``: one metadata commit (None when it changes nothing)."""
    snap = table.snapshot()
    meta, where = snap.metadata, f"ALTER TABLE {spec.target}"
    if spec.drop is not None:
        new = drop_check(meta, spec.drop, spec.if_exists, f"{where} DROP CONSTRAINT {spec.drop}")
        adds = False
    elif spec.add_check is not None:
        name, expression = spec.add_check
        where = f"{where} ADD CONSTRAINT {name.lower()}"
        refuse_unfit_check(expression, where)
        new, adds = add_check(meta, name, expression.text, where), True
    else:
        assert spec.not_null is not None
        column, on = spec.not_null
        column = column_of(meta, column, where)
        where = f"{where} ALTER COLUMN {column} {'SET' if on else 'DROP'} NOT NULL"
        new, adds = set_not_null(meta, column, on, where), on
    if new == meta:
        return None
    if adds and snap.live_rows:
        check_existing_rows(spark, _rows(spark, table, snap), new, where)
    return commit_checked(table, snap, "ADD CONSTRAINT" if adds else "DROP CONSTRAINT", new, {"constraint": where})


def commit_checked(
    table: TabletTable, snap: Snapshot, operation: str, new: Metadata, parameters: dict[str, str]
) -> int | None:
    """One commit of ``new`` metadata whose rule was checked against ``snap``'s rows: every tablet
    counts as read, so a write committed since that version conflicts (its rows were not checked)."""
    handle = begin(
        snap, table.root, operation, delete_from=(),
        read_tablets=snap.tablets.keys(), reads_appends=True, io=table.io,
    )  # fmt: skip
    return commit(handle, [], extra_actions=[new], parameters=parameters)


def declare_key(spark: SparkSession, table: TabletTable, columns: Sequence[str], where: str) -> int | None:
    """Record ``columns`` as the key of a table created without one (a table that another dbt
    materialization built, taken over by merge_tablets): the live rows are checked first (no two
    with one key; NULL keys are distinct), then one metadata commit that conflicts with any write
    committed since. None when the table has that key already; a table's key, once set, is fixed."""
    snap = table.snapshot()
    meta = snap.metadata
    keys = resolve_key_columns(meta.column_names, [c for c in columns if c.strip()])
    if [k.lower() for k in meta.key_columns] == [k.lower() for k in keys]:
        return None
    if meta.key_columns or not keys:
        raise SchemaMismatch(
            f"{where}: the key of {table.root} is ({', '.join(meta.key_columns) or 'none'}), and a key is set "
            "once, on a table without one (every statement relies on it)",
            help="Create a new table with the key columns you want (in dbt: change unique_key and run with --full-refresh).",
        )
    if snap.live_rows:
        from pyspark.sql import functions as F

        rows = _rows(spark, table, snap).where(" AND ".join(f"`{k}` IS NOT NULL" for k in keys))
        repeated = rows.groupBy(*keys).count().where(F.col("count") > 1).limit(3).collect()
        if repeated:
            shown = "; ".join(f"({', '.join(repr(r[k]) for k in keys)}) x {r['count']}" for r in repeated)
            raise KeyViolation(
                f"{where}: the table's rows repeat a key of ({', '.join(keys)}): {shown}; nothing was changed",
                help="Remove the duplicate rows first, or rebuild the table (in dbt: --full-refresh).",
            )
    properties = {"properties": f"key_columns={','.join(keys)}"}
    return commit_checked(table, snap, "SET TBLPROPERTIES", replace(meta, key_columns=keys), properties)


def _rows(spark: SparkSession, table: TabletTable, snap: Snapshot) -> DataFrame:
    """The live rows of ``snap``: Spark's Parquet scan, else the Python source at that version."""
    frame = read_frame(spark, table, snap)
    if frame is not None:
        return frame
    provider = provider_name(table.root)
    register_entries(spark, [RegistryEntry(f"tablets.`{table.root}`", table.root, provider)])
    return spark.read.format(provider).option("version", str(snap.version)).load()


def of_table(table: TabletTable) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...], tuple[str, ...]]:
    """The table's (CHECK (name, expression)s, NOT NULL columns, key columns), for hosts."""
    meta = table.snapshot().metadata
    return checks(meta), not_null(meta), meta.key_columns


def describe_rows(meta_not_null: Sequence[str], checks: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """DESCRIBE EXTENDED's ``# Constraints`` rows: (name, definition)."""
    rows = [(f"{c}_not_null", f"{c} IS NOT NULL") for c in meta_not_null]
    return rows + [(name, f"CHECK ({expression})") for name, expression in checks]
