"""``CREATE [OR REPLACE] TABLE [IF NOT EXISTS] t (...) | AS SELECT ... | LIKE s USING tablets``
and ``REPLACE TABLE``: a tablet table made, adopted at its LOCATION, or replaced in one commit.

- ``REPLACE TABLE t ... USING tablets`` is CREATE OR REPLACE of a table that must exist
  (Spark's meaning; Spark's own path would drop the catalog entry, then fail on the files).
- ``CREATE TABLE t LIKE s [USING tablets]``: a new, empty tablet table with ``s``'s definition.
  From a tablet table it takes what defines one, as Delta's CREATE TABLE LIKE does: the columns
  (types, NOT NULL, comments), the key, ``cluster_by``, CHECK constraints and the other
  properties; not its rows, history or table comment. From another table or view it takes the
  columns, their nullability and comments. The statement's own TBLPROPERTIES win.
- ``CREATE TABLE c LIKE <tablet table> USING <format>``: Spark's session catalog refuses LIKE of
  a table its data source provides, so it is ``CREATE TABLE c (<the columns>) USING <format>``,
  what Spark's LIKE makes of any other table, run by Spark."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from tablets import constraints, rows
from tablets.context import Door, StatementResult, done, tablet_root
from tablets.engine.append import append
from tablets.engine.metrics import MergeMetrics
from tablets.exceptions import MergeSpecError, TableAlreadyExists, TableNotFound
from tablets.spark import catalog
from tablets.spark.datasource import spark_ddl, type_text
from tablets.spark.frames import empty_frame
from tablets.spec import CreateSpec
from tablets.spec.statement import Statement
from tablets.sql import create_like, like_with_columns, parse_statement
from tablets.storage.metadata import KEY_COLUMNS, replacement

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from tablets.storage import TabletTable


def run(door: Door, stmt: Statement) -> StatementResult | DataFrame | None:
    """The statement's result; None when it makes no tablet table (Spark's then)."""
    if stmt.form == "LIKE":
        return _like_other_format(door.spark, stmt)
    if tablet_root(door.spark, stmt) is None:
        return None
    if stmt.form == "REPLACE":
        _must_exist(door.spark, stmt.target or "")
    spec = parse_statement(stmt.text, tree=stmt.tree)
    assert isinstance(spec, CreateSpec)
    return create(door, spec)


def _must_exist(spark: SparkSession, name: str) -> None:
    exists = catalog.lookup(spark, name) is not None or (
        catalog.path_of(name) is None and catalog.kind_of(spark, name) is not None
    )
    if not exists:
        raise TableNotFound(
            f"REPLACE TABLE {name}: there is no table named {name} to replace",
            help="CREATE OR REPLACE TABLE creates it, or replaces it where it exists.",
        )


def _like_other_format(spark: SparkSession, stmt: Statement) -> DataFrame | None:
    source = create_like(stmt.text)
    root = catalog.lookup(spark, source) if source is not None else None
    if root is None:
        return None
    meta = catalog.storage(spark).table(root).snapshot().metadata
    comments = {c.lower(): note for c, note in meta.column_comments}
    return rows.spark_sql(spark, like_with_columns(stmt.text, spark_ddl(meta.schema, comments)))


def resolve_like(spark: SparkSession, spec: CreateSpec) -> CreateSpec:
    """``spec`` with the LIKE source's definition in place of ``like``."""
    assert spec.like is not None
    root = catalog.lookup(spark, spec.like)
    if root is not None:
        meta = catalog.storage(spark).table(root).snapshot().metadata
        schema = list(meta.schema)
        props = dict(meta.properties)
        if meta.key_columns:
            props[KEY_COLUMNS] = ",".join(meta.key_columns)
        comments = meta.column_comments
    else:
        try:
            fields = spark.table(spec.like).schema.fields
        except Exception:  # noqa: BLE001 - Spark's "not found"
            raise TableNotFound(
                f"CREATE TABLE {spec.target} LIKE {spec.like}: there is no table or view named {spec.like}",
                help="Name an existing table or view to copy the definition of.",
            ) from None
        schema = [(f.name, type_text(f.dataType), f.nullable) for f in fields]
        props = {}
        comments = tuple((f.name, f.metadata["comment"]) for f in fields if f.metadata.get("comment"))
    return replace(
        spec,
        like=None,
        columns_ddl=spark_ddl(schema),
        not_null=tuple(n for n, _, nullable in schema if not nullable),
        properties=tuple(sorted({**props, **dict(spec.properties)}.items())),
        column_comments=comments,
    )


def _refuse_replacing(spark: SparkSession, spec: CreateSpec) -> None:
    kind = catalog.kind_of(spark, spec.target)
    if kind == "view":  # Spark's rule: a view stays a view
        raise TableAlreadyExists(
            f"CREATE OR REPLACE TABLE {spec.target}: {spec.target} is a view, and a table does not replace a view",
            help=f"Drop the view first (DROP VIEW {spec.target}), or give the table another name.",
        )
    if kind not in (None, "tablets"):  # its drop and the new table's commit cannot be one step
        raise TableAlreadyExists(
            f"CREATE OR REPLACE TABLE {spec.target}: {spec.target} is a {kind or 'non-tablet'} table, which a "
            "tablet table replaces only after it is dropped (Spark replaces only its own v2 tables)",
            help=f"Drop it first (DROP TABLE {spec.target}), then CREATE TABLE {spec.target} ... USING tablets; "
            "dbt's materializations do that for you.",
        )


def create(door: Door, spec: CreateSpec) -> StatementResult:
    spark = door.spark
    if spec.like is not None:
        spec = resolve_like(spark, spec)
    if spec.replace:
        _refuse_replacing(spark, spec)
    props = dict(spec.properties)
    keys = [k.strip() for k in props.pop(KEY_COLUMNS, "").split(",") if k.strip()]
    at_path = catalog.path_of(spec.target) is not None  # tablets.`/path`: adopts a Delta table there
    if spec.query is None and spec.columns_ddl is None and (spec.location is not None or at_path):
        # adopt the table there (a tablet table, or a Delta table written by another engine)
        catalog.create_table(spark, spec.target, None, location=spec.location, key_columns=keys)
        return done("CREATE TABLE", spec.target)
    if spec.query is None and spec.columns_ddl is None:
        raise MergeSpecError(
            f"CREATE TABLE {spec.target}: no columns and no AS query", help="Give a column list or AS SELECT ..."
        )
    where = f"CREATE {'OR REPLACE ' if spec.replace else ''}TABLE {spec.target} ... AS SELECT"
    frame = rows.query_frame(spark, spec.query, where) if spec.query is not None else None
    schema: StructType | str | list[tuple[str, str, bool]] | None = (
        spec.columns_ddl if spec.columns_ddl is not None or frame is None else frame.schema
    )
    if schema is not None:  # its NOT NULL columns, and its CHECKs as properties
        schema = constraints.declared(spark, spec, schema, props)
    exists = f"{spec.target} exists: nothing created"
    if spec.if_not_exists and catalog.lookup(spark, spec.target) is not None:
        return done("CREATE TABLE", spec.target, exists)
    old = catalog.replaceable(spark, spec.target, spec.location) if spec.replace else None
    held = old is None and spec.location is not None and catalog.storage(spark).table(spec.location).exists()
    if held and not spec.replace and frame is not None:
        raise TableAlreadyExists(
            f"CREATE TABLE {spec.target} ... AS SELECT: a tablet table already holds LOCATION {spec.location}",
            help="Use CREATE OR REPLACE TABLE ... LOCATION ... AS SELECT to replace its rows (one commit, its "
            "history kept), or CREATE TABLE ... LOCATION without AS to adopt it as it is.",
        )
    if held and spec.replace and schema is not None:  # adopt the files, then replace their rows in one commit
        old = catalog.create_table(spark, spec.target, None, location=spec.location, replace=True)
    if old is not None and schema is not None:  # one commit: until it lands the old table stands
        return _replace(door, spec, old, frame, schema, keys, props)
    loaded: list[MergeMetrics] = []

    def fill(table: TabletTable) -> None:  # the rows, before the table has its name
        assert frame is not None
        loaded.append(append(spark, table, frame, door.options, operation="CREATE TABLE AS SELECT", name=spec.target))

    try:
        catalog.create_table(
            spark,
            spec.target,
            schema,
            location=spec.location,
            key_columns=keys,
            properties=props,
            replace=spec.replace,
            fill=fill if frame is not None else None,
            comment=spec.comment,
            column_comments=spec.column_comments,
        )
    except TableAlreadyExists:
        if spec.if_not_exists:  # another process created it since the check above: IF NOT EXISTS holds
            return done("CREATE TABLE", spec.target, exists)
        raise
    metrics = loaded[0] if loaded else MergeMetrics(operation="CREATE TABLE")
    return StatementResult("CREATE TABLE", spec.target, metrics)


def _replace(
    door: Door,
    spec: CreateSpec,
    table: TabletTable,
    frame: DataFrame | None,
    schema: StructType | str | list[tuple[str, str, bool]],
    keys: list[str],
    props: dict[str, str],
) -> StatementResult:
    """``CREATE OR REPLACE`` of a tablet table: the new schema, keys, properties and rows in
    place of every tablet, in one commit of the table's log (as Delta replaces a table);
    then the catalog entry's columns."""
    spark = door.spark
    before = table.snapshot().metadata
    meta = replacement(before, catalog.store_schema(spark, schema), keys, props, spec.comment, spec.column_comments)
    op = "CREATE OR REPLACE TABLE AS SELECT" if frame is not None else "CREATE OR REPLACE TABLE"
    if frame is None:
        frame = empty_frame(spark, meta.schema, meta.column_names)
    metrics = append(spark, table, frame, door.options, operation=op, overwrite=True, name=spec.target, metadata=meta)
    catalog.sync_schema(spark, spec.target, keys_changed=before.key_columns != meta.key_columns)
    return StatementResult("CREATE TABLE", spec.target, metrics)
