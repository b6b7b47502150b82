"""A bloom filter of a column's values built by Spark, and Spark's own test of a value against it.

Spark builds the filter (``DataFrameStatFunctions.bloomFilter``: one job, an aggregate of each
partition's filter) and tests rows with ``BloomFilterMightContain``, the expression of its own
runtime join filters (``spark.sql.optimizer.runtime.bloomFilter``), which compiles into the
scan's generated code. Neither is in PySpark's API, so both go through py4j: over Spark Connect
there is no filter (None), and the caller runs without one.

The filter's bytes become a literal of the plan, as Spark's runtime filters do (a scalar
subquery's result): each task of the filtered scan carries them, so the caller bounds their size.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession

from tablets.spark.backend import is_connect

logger = logging.getLogger(__name__)


def bits_for(items: int, fpp: float) -> int:
    """The bits a filter of ``items`` values needs for a false positive rate of ``fpp``."""
    return max(64, math.ceil(-max(items, 1) * math.log(fpp) / (math.log(2) ** 2)))


def false_positives(items: int, bits: int) -> float:
    """The share of other values a filter of ``bits`` bits holding ``items`` values lets through,
    with the hash count Spark's ``BloomFilter.create`` picks for them."""
    n = max(items, 1)
    k = max(1, round(bits / n * math.log(2)))
    return (1 - math.exp(-k * n / bits)) ** k


def build(frame: DataFrame, column: str, items: int, bits: int) -> bytes | None:
    """The serialized filter of ``frame``'s BIGINT ``column`` (``items`` values expected, ``bits``
    bits), None where py4j cannot reach Spark's classes (Spark Connect)."""
    if is_connect(frame.sparkSession):
        return None
    jvm: Any = frame.sparkSession._jvm  # noqa: SLF001
    filt = frame._jdf.stat().bloomFilter(column, items, bits)  # noqa: SLF001
    out = jvm.java.io.ByteArrayOutputStream()
    filt.writeTo(out)
    return bytes(out.toByteArray())


def might_contain(spark: SparkSession, filt: bytes, value: Column) -> Column:
    """True where the BIGINT ``value`` may be in the filter, false where it is not; NULL where
    ``value`` is NULL (Spark's ``might_contain``)."""
    jvm: Any = spark._jvm  # noqa: SLF001
    exprs = jvm.org.apache.spark.sql.catalyst.expressions
    literal = exprs.Literal.create(bytearray(filt), jvm.org.apache.spark.sql.types.DataTypes.BinaryType)
    utils = jvm.org.apache.spark.sql.classic.ExpressionUtils
    test = exprs.BloomFilterMightContain(literal, utils.expression(value._jc))  # noqa: SLF001
    return Column(utils.column(test))
