"""A seed's rows, for the one statement that loads a seed of tablet tables
(``macros/adapters/seed.sql``): the CSV's values as text in a temp view (``c0``, ``c1``, ...),
which the statement casts to each column's type.

dbt-spark writes the values into ``INSERT ... VALUES`` statements of 10,000 rows, each value a
SQL literal cast to its column's type. Here they travel as data: a statement of 10,000 rows of
SQL cost about a minute to parse and plan, a view of their text costs milliseconds. Each value's
text is what dbt-spark's literal would cast from, except numbers, which keep every digit (the
literal was Python's float of the value: an id of 19 digits came back changed)."""

from __future__ import annotations

import datetime
import decimal
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pyarrow as pa

ROWS = "__tablets_seed_rows__"  # the statement's name for the view of the rows


def text(value: Any) -> str | None:
    """A seed value as the text its column's type is cast from (None: NULL)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, decimal.Decimal):
        return format(value, "f")  # every digit, no exponent (CAST('1E+3' AS BIGINT) is NULL)
    if isinstance(value, datetime.datetime):  # as dbt-spark binds it: to the millisecond
        return value.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    return str(value)


def rows_table(column_count: int, rows: Sequence[Sequence[Any]]) -> pa.Table:
    """The rows' values as text, a string column ``c<i>`` per CSV column, in one chunk (PySpark
    4.3's ``createDataFrame`` keeps only the batches before an empty one)."""
    columns = [pa.array([text(row[i]) for row in rows], pa.string()) for i in range(column_count)]
    return pa.table(columns, names=[f"c{i}" for i in range(column_count)])


@contextmanager
def rows_view(spark, column_count: int, rows: Sequence[Sequence[Any]]) -> Iterator[str]:
    """A temp view of ``rows_table`` for the statement's time, by its name."""
    name = f"__tablets_seed_{uuid.uuid4().hex}"
    spark.createDataFrame(rows_table(column_count, rows)).createOrReplaceTempView(name)
    try:
        yield name
    finally:
        spark.catalog.dropTempView(name)
