"""Statements Spark would run wrongly on a tablet table, restated as the engine's own.

- ``REPLACE TABLE t ... USING tablets``: Spark's path drops the catalog entry, then fails on the
  table's files, leaving the table unnamed. It is ``CREATE OR REPLACE`` of a table that must
  exist (Spark's meaning of REPLACE).
- ``TRUNCATE TABLE t``: Spark refuses it on the table's data source, naming an internal
  provider. It is ``DELETE FROM t``: one commit, the history kept (as Delta truncates).
- ``ALTER TABLE t CLUSTER BY (cols)`` / ``CLUSTER BY NONE``: Spark's clustering DDL, which Spark
  refused, or ran on its catalog entry with no effect on the table. It sets (or unsets) the
  ``cluster_by`` property, as ``CREATE TABLE ... CLUSTER BY`` does; on another table it is
  refused (it would change nothing).
- ``CREATE TABLE c LIKE t USING <format>`` of a tablet table ``t``: Spark's session catalog
  refuses LIKE of a table its data source provides. It is ``CREATE TABLE c (<t's columns>) USING
  <format>``, what Spark's LIKE makes of any other table.

Another provider's statement stays Spark's."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tablets.exceptions import StatementParseError, TableNotFound
from tablets.spark import catalog
from tablets.spark.datasource import spark_ddl
from tablets.sql import (
    altered_clustering,
    create_like,
    create_provider,
    like_with_columns,
    statement_target,
    truncated_table,
)
from tablets.sqltext import repeated_names, sql_string

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_REPLACE_TABLE = re.compile(r"^\s*REPLACE\s+TABLE\s+", re.IGNORECASE)
_TRUNCATE = re.compile(r"^\s*TRUNCATE\s+TABLE\s+", re.IGNORECASE)
_CREATE_LIKE = re.compile(r"^\s*CREATE\s+(TABLE|.*\bTABLE)\s+.*\bLIKE\b", re.I | re.S)
_CLUSTER_BY = re.compile(r"^\s*ALTER\s+TABLE\s+(?P<table>.+?)\s+CLUSTER\s+BY\s+(?P<none>NONE\s*;?\s*$)?", re.I | re.S)


def statement(spark: SparkSession, text: str) -> str:
    """``text``, or the engine's statement for it."""
    m = _REPLACE_TABLE.match(text)
    if m is not None:
        return _replace_table(spark, text, "CREATE OR REPLACE TABLE " + text[m.end() :])
    if _TRUNCATE.match(text):
        return _truncate(spark, text)
    m = _CLUSTER_BY.match(text)
    if m is not None:
        return _clustering(spark, text, m)
    if _CREATE_LIKE.match(text):
        return _like_tablets(spark, text)
    return text


def _like_tablets(spark: SparkSession, text: str) -> str:
    source, provider = create_like(text), create_provider(text)
    root = catalog.lookup(spark, source) if source is not None and provider not in (None, "tablets") else None
    if root is None:
        return text
    meta = catalog.storage(spark).table(root).snapshot().metadata
    comments = {c.lower(): note for c, note in meta.column_comments}
    return like_with_columns(text, spark_ddl(meta.schema, comments))


def _replace_table(spark: SparkSession, text: str, rewritten: str) -> str:
    found = statement_target(rewritten)
    if found is None or (create_provider(rewritten) or "") != "tablets":
        return text
    name = found[1]
    exists = catalog.lookup(spark, name) is not None or (
        catalog.path_of(name) is None and catalog.kind_of(spark, name) is not None
    )
    if not exists:
        raise TableNotFound(
            f"REPLACE TABLE {name}: there is no table named {name} to replace",
            help="CREATE OR REPLACE TABLE creates it, or replaces it where it exists.",
        )
    return rewritten


def _truncate(spark: SparkSession, text: str) -> str:
    found = truncated_table(text)
    if found is None or catalog.lookup(spark, found[0]) is None:
        return text
    name, table_sql, partition = found
    if partition is not None:
        raise StatementParseError(
            f"TRUNCATE TABLE {name} {partition}: tablet tables are not partitioned",
            help=f"DELETE FROM {table_sql} WHERE <condition> deletes the rows a condition selects.",
        )
    return f"DELETE FROM {table_sql}"


def _clustering(spark: SparkSession, text: str, m: re.Match[str]) -> str:
    if m.group("none"):  # CLUSTER BY NONE: sqlglot does not parse it; the table as written
        table_sql = m.group("table").strip()
        found = statement_target(f"DROP TABLE {table_sql}")
        if found is None or catalog.lookup(spark, found[1]) is None:
            return text
        return f"ALTER TABLE {table_sql} UNSET TBLPROPERTIES IF EXISTS ('cluster_by')"
    clustered = altered_clustering(text)
    if clustered is None:
        return text
    name, table_sql, columns = clustered
    if catalog.lookup(spark, name) is None:
        if catalog.path_of(name) is None and catalog.kind_of(spark, name) not in (
            None,
            "view",
        ):  # Spark would do nothing
            raise StatementParseError(
                f"ALTER TABLE {name} CLUSTER BY: {name} is not a tablet table; its clustering would change nothing",
                help="Cluster a tablet table (CREATE TABLE ... USING tablets AS SELECT * FROM ... copies this one).",
            )
        return text
    names = columns.split(",") if columns else []
    if not names:
        raise StatementParseError(
            f"ALTER TABLE {name} CLUSTER BY (): no columns",
            help=f"Name the columns to sort new tablets by, or write ALTER TABLE {table_sql} CLUSTER BY NONE.",
        )
    repeated = repeated_names(names)
    if repeated:
        raise StatementParseError(
            f"ALTER TABLE {name} CLUSTER BY ({', '.join(names)}): {', '.join(repeated)} named more than once",
            help="Name each column once.",
        )
    return f"ALTER TABLE {table_sql} SET TBLPROPERTIES ('cluster_by' = {sql_string(columns)})"
