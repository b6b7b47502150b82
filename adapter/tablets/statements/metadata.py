"""A tablet table's columns, comments and properties in SQL (the front door's part; the log
work is ``TabletTable.alter_metadata``). The table's own log is the one place they are kept,
so every session and process sees them, also for a table named by its path:

- ``DESCRIBE [EXTENDED | FORMATTED] t`` and ``DESCRIBE t <column>``: Spark's rows for a Parquet
  table (``col_name``, ``data_type``, ``comment``; then ``# Detailed Table Information`` with
  ``Comment``, ``Table Properties``, ``Statistics``, ``Location``). Spark itself answers
  ``Table Properties []`` and no comments for a Python data source table;
- ``SHOW TBLPROPERTIES t [(key)]``: ``key``, ``value`` rows, sorted by key;
- ``SHOW CREATE TABLE t``: a CREATE TABLE ... USING tablets of the table's whole definition;
- ``ALTER TABLE t SET / UNSET TBLPROPERTIES``, ``COMMENT ON TABLE t IS ...`` and
  ``ALTER TABLE t ALTER COLUMN c COMMENT ...``: one metadata commit each (none when nothing
  changes), shown in ``DESCRIBE HISTORY``.

Statements about other tables (and views) return None: Spark runs them.

    >>> db.sql("COMMENT ON TABLE t IS 'Orders, one row per order'")
    >>> [r.data_type for r in db.sql("DESCRIBE EXTENDED t").collect() if r.col_name == "Comment"]
    ['Orders, one row per order']
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from tablets.constraints import declare_key, describe_rows
from tablets.context import Door
from tablets.exceptions import SchemaMismatch, StatementParseError, TabletsError
from tablets.spark import catalog
from tablets.spec.metadata import AlterMetadataSpec, DescribeSpec, ShowCreateSpec, ShowPropertiesSpec
from tablets.spec.statement import Statement
from tablets.sql.metadata import parse_metadata
from tablets.sqltext import quote_ident, quote_if_needed, repeated_names, sql_string
from tablets.storage.constraints import PREFIX, checks, not_null
from tablets.storage.metadata import CLUSTER_BY, KEY_COLUMNS, MetadataChange

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from tablets.storage import TabletTable
    from tablets.storage.actions import Metadata

DESCRIBE_COLUMNS = ("col_name", "data_type", "comment")
DESCRIBE_COLUMN_COLUMNS = ("info_name", "info_value")
PROPERTIES_COLUMNS = ("key", "value")
PROVIDER = "tablets"
SET_COMMENTS = "SET COMMENTS"  # the operation of set_comments' commits
# the rows of DESCRIBE EXTENDED t <column> that Spark fills from ANALYZE TABLE's statistics
_COLUMN_STATS = ("min", "max", "num_nulls", "distinct_count", "avg_col_len", "max_col_len", "histogram")

_owners: dict[str, tuple[str | None, str | None]] = {}  # root -> (Owner, Created By) of its catalog entry
_owners_lock = threading.Lock()


def run(door: Door, stmt: Statement) -> DataFrame | None:
    """The result of a DESCRIBE, SHOW TBLPROPERTIES or metadata change of a tablet table; None
    when it is about another table or a view (Spark's then)."""
    if stmt.form.startswith("CLUSTER BY"):
        return _clustering(door, stmt)
    spark, name, text = door.spark, stmt.target or "", stmt.text
    root = catalog.lookup(spark, name)
    if root is None:
        if catalog.path_of(name) is None:
            return None
        root = catalog.require(spark, name)  # says what is at the path instead
    spec = parse_metadata(text)
    table = catalog.storage(spark).table(root)
    if isinstance(spec, DescribeSpec):
        return describe(spark, spec, table)
    if isinstance(spec, ShowPropertiesSpec):
        return show_properties(spark, spec, table)
    if isinstance(spec, ShowCreateSpec):
        return show_create(spark, spec, table)
    return alter(spark, spec, table)


def _clustering(door: Door, stmt: Statement) -> DataFrame | None:
    """``ALTER TABLE t CLUSTER BY (cols)`` / ``CLUSTER BY NONE``: Spark's clustering DDL, which
    Spark refuses on a tablet table or runs on its catalog entry with no effect. It sets (or
    unsets) the ``cluster_by`` property, as ``CREATE TABLE ... CLUSTER BY`` does; on a plain
    table it is refused (it would change nothing); a view's is Spark's error."""
    spark, name = door.spark, stmt.target or ""
    table_sql, *columns = stmt.parts
    root = catalog.lookup(spark, name)
    if root is None:
        if catalog.path_of(name) is not None:
            root = catalog.require(spark, name)  # says what is at the path instead
        elif catalog.kind_of(spark, name) not in (None, "view"):
            raise StatementParseError(
                f"ALTER TABLE {name} CLUSTER BY: {name} is not a tablet table; its clustering would change nothing",
                help="Cluster a tablet table (CREATE TABLE ... USING tablets AS SELECT * FROM ... copies this one).",
            )
        else:
            return None
    table = catalog.storage(spark).table(root)
    if stmt.form == "CLUSTER BY NONE":
        change = MetadataChange(unset_properties=(CLUSTER_BY,))
        return alter(spark, AlterMetadataSpec(name, "UNSET TBLPROPERTIES", change), table)
    if not columns:
        raise StatementParseError(
            f"ALTER TABLE {name} CLUSTER BY (): no columns",
            help=f"Name the columns to sort new tablets by, or write ALTER TABLE {table_sql} CLUSTER BY NONE.",
        )
    repeated = repeated_names(columns)
    if repeated:
        raise StatementParseError(
            f"ALTER TABLE {name} CLUSTER BY ({', '.join(columns)}): {', '.join(repeated)} named more than once",
            help="Name each column once.",
        )
    change = MetadataChange(set_properties=((CLUSTER_BY, ",".join(columns)),))
    return alter(spark, AlterMetadataSpec(name, "SET TBLPROPERTIES", change), table)


# --- DESCRIBE ------------------------------------------------------------------------------------


def describe(spark: SparkSession, spec: DescribeSpec, table: TabletTable) -> DataFrame:
    snap = table.snapshot()
    meta = snap.metadata
    if spec.column is not None:
        return _describe_column(spark, spec, meta)
    rows: list[tuple[str, str, str | None]] = [(n, t, meta.column_comment(n)) for n, t, _ in meta.schema]
    if spec.extended:
        live_bytes = sum(s.add.bytes for s in snap.tablets.values())
        rows.extend(_details(spark, spec.target, table.root, meta, live_bytes, snap.live_rows))
    return _frame(spark, rows, DESCRIBE_COLUMNS)


def _describe_column(spark: SparkSession, spec: DescribeSpec, meta: Metadata) -> DataFrame:
    assert spec.column is not None
    by_lower = {n.lower(): (n, t) for n, t, _ in meta.schema}
    found = by_lower.get(spec.column.lower())
    if found is None:
        raise SchemaMismatch(
            f"DESCRIBE {spec.target} {spec.column}: {spec.column} is not a column of {spec.target} "
            f"(columns: {', '.join(meta.column_names)})",
            help="Name one of the table's columns (nested fields: DESCRIBE the table).",
        )
    name, dtype = found
    rows = [("col_name", name), ("data_type", dtype), ("comment", meta.column_comment(name) or "NULL")]
    if spec.extended:
        rows.extend((stat, "NULL") for stat in _COLUMN_STATS)
    return _frame(spark, rows, DESCRIBE_COLUMN_COLUMNS)


def _details(
    spark: SparkSession, name: str, root: str, meta: Metadata, live_bytes: int, live_rows: int
) -> list[tuple[str, str, str | None]]:
    """``# Detailed Table Information`` in Spark's order for a Parquet table."""
    path = catalog.path_of(name)
    if path is None:
        database, table_name = catalog.qualify(spark, name)
        owner, created_by = _catalog_owner(spark, root, database, table_name)
    else:
        database, table_name, owner, created_by = "", path, None, None
    info: list[tuple[str, str]] = [("Catalog", "spark_catalog"), ("Database", database), ("Table", table_name)]
    owner = meta.property("owner") or owner
    if owner:
        info.append(("Owner", owner))
    info.append(("Created Time", time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime(meta.created_ms / 1000))))
    info.append(("Last Access", "UNKNOWN"))
    if created_by:
        info.append(("Created By", created_by))
    info.extend([("Type", "EXTERNAL" if catalog.is_external(spark, name) else "MANAGED"), ("Provider", PROVIDER)])
    if meta.comment is not None:
        info.append(("Comment", meta.comment))
    shown = ", ".join(f"{k}={v}" for k, v in _properties(meta))
    info.append(("Table Properties", f"[{shown}]"))
    info.append(("Statistics", f"{live_bytes} bytes, {live_rows} rows"))
    info.append(("Location", root))
    out: list[tuple[str, str, str | None]] = [("", "", ""), ("# Detailed Table Information", "", "")]
    out += [(k, v, "") for k, v in info]
    shown_constraints = describe_rows(not_null(meta), checks(meta))
    if shown_constraints:  # (as Databricks shows them)
        out += [("", "", ""), ("# Constraints", "", ""), *((k, v, "") for k, v in shown_constraints)]
    return out


def _catalog_owner(spark: SparkSession, root: str, database: str, table: str) -> tuple[str | None, str | None]:
    """Owner and Created By of the catalog entry (the metastore records them at creation),
    read once per table and process."""
    with _owners_lock:
        if root in _owners:
            return _owners[root]
    found: tuple[str | None, str | None] = (None, None)
    try:
        rows = spark.sql(f"SHOW TABLE EXTENDED IN {quote_ident(database)} LIKE {sql_string(table)}").collect()
        info = str(rows[0]["information"]) if rows else ""
        owner = re.search(r"^Owner: (.*)$", info, re.MULTILINE)
        created = re.search(r"^Created By: (.*)$", info, re.MULTILINE)
        found = (owner.group(1) if owner else None, created.group(1) if created else None)
    except Exception:  # noqa: BLE001 - no metastore details: the rows are left out
        return found
    with _owners_lock:
        _owners[root] = found
    return found


def _properties(meta: Metadata) -> list[tuple[str, str]]:
    """The table's properties as Spark shows them: sorted, the key columns as ``key_columns``,
    without the reserved ``owner`` (shown as the Owner row)."""
    props = {k: v for k, v in meta.properties if k.lower() != "owner"}
    if meta.key_columns:
        props[KEY_COLUMNS] = ",".join(meta.key_columns)
    return sorted(props.items())


# --- SHOW TBLPROPERTIES -------------------------------------------------------------------------------


def show_properties(spark: SparkSession, spec: ShowPropertiesSpec, table: TabletTable) -> DataFrame:
    meta = table.snapshot().metadata
    props = dict(meta.properties)
    if meta.key_columns:
        props[KEY_COLUMNS] = ",".join(meta.key_columns)
    if spec.key is None:
        return _frame(spark, sorted(props.items()), PROPERTIES_COLUMNS)
    if spec.key in props:
        return _frame(spark, [(spec.key, props[spec.key])], PROPERTIES_COLUMNS)
    where = (
        spec.target
        if catalog.path_of(spec.target)
        else "spark_catalog." + ".".join(catalog.qualify(spark, spec.target))
    )
    return _frame(spark, [(spec.key, f"Table {where} does not have property: {spec.key}")], PROPERTIES_COLUMNS)


# --- SHOW CREATE TABLE ------------------------------------------------------------------------------


def show_create(spark: SparkSession, spec: ShowCreateSpec, table: TabletTable) -> DataFrame:
    """A CREATE TABLE that makes a tablet table of this definition, laid out as Spark's
    ``createtab_stmt``: columns with NOT NULL and comments, CHECKs, USING tablets, the comment,
    LOCATION (an EXTERNAL table's), the properties with the key. Spark's own answer for a
    Python data source table has none of USING, key or properties: run, it made a Parquet table."""
    meta = table.snapshot().metadata
    path = catalog.path_of(spec.target)
    parts = () if path else catalog.qualify(spark, spec.target)
    name = spec.target if path else ".".join(["spark_catalog", *map(quote_if_needed, parts)])
    lines = [
        f"  {quote_ident(n)} {t.upper() if t.isalpha() else t}"
        + ("" if nullable else " NOT NULL")
        + (f" COMMENT {sql_string(c)}" if (c := meta.column_comment(n)) is not None else "")
        for n, t, nullable in meta.schema
    ]
    lines += [f"  CONSTRAINT {quote_ident(k)} CHECK ({e})" for k, e in checks(meta)]
    text = f"CREATE TABLE {name} (\n" + ",\n".join(lines) + ")\nUSING tablets\n"
    if meta.comment is not None:
        text += f"COMMENT {sql_string(meta.comment)}\n"
    if path is None and catalog.is_external(spark, spec.target):
        text += f"LOCATION {sql_string(table.root)}\n"
    props = [(k, v) for k, v in _properties(meta) if not k.startswith(PREFIX)]
    if props:
        text += "TBLPROPERTIES (\n" + ",\n".join(f"  {sql_string(k)} = {sql_string(v)}" for k, v in props) + ")\n"
    return _frame(spark, [(text,)], ("createtab_stmt",))


# --- ALTER TABLE ... SET / UNSET TBLPROPERTIES, COMMENT ON TABLE, ALTER COLUMN ... COMMENT ----------


def alter(spark: SparkSession, spec: AlterMetadataSpec, table: TabletTable) -> DataFrame:
    change = spec.change
    keys = [k for k, _ in change.set_properties] + list(change.unset_properties)
    if not change.unset_properties and [k.lower() for k in keys] == [KEY_COLUMNS]:  # the key, set alone
        columns = change.set_properties[0][1].split(",")
        declare_key(spark, table, columns, f"ALTER TABLE {spec.target} {spec.operation}")
        return _frame(spark, [], ())
    if any(k.lower() == KEY_COLUMNS for k in keys):
        raise TabletsError(
            f"ALTER TABLE {spec.target} {spec.operation}: {KEY_COLUMNS} is set once, alone, on a table without a "
            "key, and never unset (every statement relies on it)",
            help="Create a new table with the key columns you want (in dbt: change unique_key and run with --full-refresh).",
        )
    if any(k.lower().startswith(PREFIX) for k in keys):  # as Delta: the rows must be checked first
        raise TabletsError(
            f"ALTER TABLE {spec.target} {spec.operation}: delta.constraints.* are CHECK constraints, "
            "set and removed by their own statements",
            help=f"Write ALTER TABLE {spec.target} ADD CONSTRAINT name CHECK (expr) or DROP CONSTRAINT name.",
        )
    meta = table.snapshot().metadata
    names = {n.lower() for n in meta.column_names}
    for column, _ in change.column_comments:
        if column.lower() not in names:
            raise SchemaMismatch(
                f"ALTER TABLE {spec.target} ALTER COLUMN {column}: {column} is not a column of {spec.target} "
                f"(columns: {', '.join(meta.column_names)})",
                help="Name one of the table's columns.",
            )
    if spec.column_type is not None:
        _check_type(spec, meta)
    table.alter_metadata(change, spec.operation, where=f"ALTER TABLE {spec.target} {spec.operation}")
    return _frame(spark, [], ())  # Spark's ALTER returns no rows and no columns


def _frame(spark: SparkSession, rows: Sequence[Sequence[str | None]], names: Sequence[str]) -> DataFrame:
    """Rows of strings as a DataFrame, from Arrow: a local relation (no Spark job, unlike a list)."""

    columns = {n: pa.array([r[i] for r in rows], pa.string()) for i, n in enumerate(names)}
    return spark.createDataFrame(pa.table(columns))


def set_comments(
    table: TabletTable,
    comment: str | None,
    column_comments: Mapping[str, str],
    parameters: Mapping[str, str] | None = None,
) -> int | None:
    """The table's comment (unless None) and these columns' comments, in one commit (dbt's
    ``persist_docs``); None when they are already so."""
    change = MetadataChange(comment=comment, column_comments=tuple(column_comments.items()))
    return table.alter_metadata(change, SET_COMMENTS, parameters)


def _check_type(spec: AlterMetadataSpec, meta: Metadata) -> None:
    assert spec.column_type is not None
    column, written = spec.column_type
    have = {n.lower(): t for n, t, _ in meta.schema}.get(column.lower())
    if have is not None and _type_text(written) != _type_text(have):
        raise TabletsError(
            f"ALTER TABLE {spec.target} CHANGE COLUMN {column}: the column is {have}, not {written}; "
            "only its comment can be changed this way",
            help=f"Write ALTER TABLE {spec.target} ALTER COLUMN {column} COMMENT '...'; to retype a column, "
            "use on_schema_change in dbt or rebuild the table.",
        )


def _type_text(t: str) -> str:
    return re.sub(r"\s+", "", t).lower().replace("integer", "int").replace("long", "bigint")
