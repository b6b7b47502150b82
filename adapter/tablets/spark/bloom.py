"""A bloom filter of a column's values, and Spark's own test of values against it, as Spark's
runtime join filters (``spark.sql.optimizer.runtime.bloomFilter``) plan them: a scalar subquery
aggregates the values into the filter (``BloomFilterAggregate``) and ``BloomFilterMightContain``
tests each row in the scan's generated code. The subquery runs once, inside the query that uses
it: the filter's bytes stay in the JVM (Spark puts them in the plan its tasks get), never in
this Python process. Neither expression is in PySpark's API, so both are built through py4j:
over Spark Connect there is no filter (None), and the caller runs without one.
"""

from __future__ import annotations

import math
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from tablets.spark.backend import backend
from tablets.sqltext import quote_ident


def bits_for(items: int, fpp: float) -> int:
    """The bits a filter of ``items`` values needs for a false positive rate of ``fpp``."""
    return max(64, math.ceil(-max(items, 1) * math.log(fpp) / (math.log(2) ** 2)))


def false_positives(items: int, bits: int, max_items: int | None = None) -> float:
    """The share of other values a filter of ``bits`` bits holding ``items`` values lets through,
    with the hash count Spark's aggregate picks for it: sized for at most ``max_items`` values
    (``MAX_ITEMS_CONF``), however many it is given."""
    n = max(items, 1)
    k = max(1, round(bits / min(n, max_items or n) * math.log(2)))
    return (1 - math.exp(-k * n / bits)) ** k


MAX_ITEMS_CONF = "spark.sql.optimizer.runtime.bloomFilter.maxNumItems"
MAX_ITEMS = 4_000_000  # its default


def max_items(spark: SparkSession) -> int:
    """The most values Spark sizes a filter's hash count for (``MAX_ITEMS_CONF``)."""
    return int(spark.conf.get(MAX_ITEMS_CONF, str(MAX_ITEMS)) or MAX_ITEMS)


def might_contain(values: DataFrame, items: int, bits: int, value: Column) -> Column | None:
    """True where the BIGINT ``value`` may be among ``values`` (a frame of one BIGINT column,
    ``items`` values expected, a filter of ``bits`` bits), false where it is not; NULL where
    ``value`` is NULL, and false everywhere when ``values`` has no rows (the aggregate of none is
    NULL). None where py4j cannot reach Spark's classes (Spark Connect)."""
    jvm: Any = backend(values).jvm(values.sparkSession)
    if jvm is None:
        return None
    exprs = jvm.org.apache.spark.sql.catalyst.expressions
    utils = jvm.org.apache.spark.sql.classic.ExpressionUtils

    def expr(c: Column) -> Any:
        return utils.expression(c._jc)  # noqa: SLF001

    agg = exprs.aggregate.BloomFilterAggregate(
        expr(F.col(quote_ident(values.columns[0]))), expr(F.lit(items).cast("bigint")), expr(F.lit(bits).cast("bigint"))
    )
    filt = values.select(Column(utils.column(agg.toAggregateExpression()))).scalar()
    return Column(utils.column(exprs.BloomFilterMightContain(expr(filt), expr(value))))
