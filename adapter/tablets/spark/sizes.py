"""Spark's size estimates of a frame and its byte-size settings, on a classic session (the JVM's
statistics) and over Spark Connect (the server's ``EXPLAIN COST``): what the engine's plan
choice (``tablets.engine.route``) weighs.
"""

from __future__ import annotations

import re

from pyspark.sql import DataFrame, SparkSession

from tablets.settings import InvalidSetting, conf_value
from tablets.spark.backend import backend

_UNITS = {
    "": 1,
    "b": 1,
    "k": 1 << 10,
    "kb": 1 << 10,
    "m": 1 << 20,
    "mb": 1 << 20,
    "g": 1 << 30,
    "gb": 1 << 30,
    "t": 1 << 40,
    "tb": 1 << 40,
    "p": 1 << 50,
    "pb": 1 << 50,
}


def parse_bytes(text: str | None) -> int | None:
    """A byte size setting as Spark reads it (``"10MB"``, ``"10485760b"``, ``"1g"``, ``"-1"``;
    no unit is bytes), or None if it is not one."""
    m = re.fullmatch(r"\s*(-?\d+)\s*([a-zA-Z]*)\s*", text or "")
    if m is None or m.group(2).lower() not in _UNITS:
        return None
    return int(m.group(1)) * _UNITS[m.group(2).lower()]


def conf_bytes(spark: SparkSession, key: str) -> int | None:
    """The byte-size setting ``key`` of ``spark`` (``parse_bytes``); None where it is unset or the
    session cannot be asked; an ``InvalidSetting`` naming it where it is not a size."""
    text = conf_value(spark, key)
    if text is None or not text.strip():
        return None
    size = parse_bytes(text)
    if size is None:
        raise InvalidSetting(
            f"{key} = {text!r} is not a size",
            help="Set it to a number of bytes with an optional unit (65536, 64k, 64MB, 1g; 0 turns the shortcut off), "
            "or unset it for the default.",
        )
    return size


def size_bytes(frame: DataFrame) -> int | None:
    """Spark's size estimate of ``frame`` (exact for a materialized cache), or None: the JVM's
    statistics of its optimized plan, or the Connect server's ``EXPLAIN COST`` (``backend``)."""
    return backend(frame).size_bytes(frame)


_WIDTHS = {
    "boolean": 1,
    "byte": 1,
    "tinyint": 1,
    "short": 2,
    "smallint": 2,
    "int": 4,
    "integer": 4,
    "date": 4,
    "float": 4,
    "long": 8,
    "bigint": 8,
    "double": 8,
    "timestamp": 8,
    "timestamp_ntz": 8,
}


def row_width(source: DataFrame) -> int:
    """Bytes per row by Spark's default sizes (strings and binaries 20, decimals 8 or 16,
    nested types 100 per field), the basis of an estimate where Spark gives none."""
    width = 0
    for f in source.schema.fields:
        name = f.dataType.simpleString().lower()
        if name.startswith("decimal"):
            width += 8 if getattr(f.dataType, "precision", 38) <= 18 else 16
        elif name in _WIDTHS:
            width += _WIDTHS[name]
        elif name.startswith(("array", "map", "struct")):
            width += 100
        else:
            width += 20
    return max(width, 1)


def broadcast_threshold(spark: SparkSession) -> int | None:
    """``spark.sql.autoBroadcastJoinThreshold`` in bytes (-1: never broadcast)."""
    parsed = backend(spark).broadcast_threshold(spark)  # Spark's own parse, where it can be asked
    if parsed is not None:
        return parsed
    try:
        return parse_bytes(spark.conf.get("spark.sql.autoBroadcastJoinThreshold", "10MB"))
    except Exception:  # noqa: BLE001
        return None
