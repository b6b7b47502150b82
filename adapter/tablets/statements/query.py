"""Every statement that writes no tablet table: Spark's, with the tablet tables it reads read by
Spark's own Parquet scan, AS OF a version and ``table_changes`` calls as views
(``tablets.rows``); first, a row-level write Spark would answer with a stack trace (of a view,
a plain Parquet table, a name that is not there) is refused by name (``tablets.refusals``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tablets import refusals, rows
from tablets.context import Door
from tablets.spec.statement import Kind, Statement

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def run(door: Door, stmt: Statement) -> DataFrame:
    if stmt.kind is not Kind.EXPLAIN:
        refusals.refuse_unroutable(door.spark, stmt)
    return rows.spark_sql(door.spark, stmt.text)
