"""Spark's size estimates of a frame and its byte-size settings, on a classic session (the JVM's
statistics) and over Spark Connect (the server's ``EXPLAIN COST``): what the engine's plan
choice (``tablets.engine.route``) weighs.
"""

from __future__ import annotations

import re

from pyspark.sql import DataFrame, SparkSession

from tablets.settings import InvalidSetting, conf_value
from tablets.spark.backend import is_connect

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
_SIZE_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "PiB": 1 << 50, "EiB": 1 << 60}
_STATS = re.compile(r"Statistics\(sizeInBytes=([0-9.E+]+) ?([KMGTPE]?i?B)\b")


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


def connect_size(frame: DataFrame) -> int | None:
    """Spark's size estimate of ``frame`` over Spark Connect: the optimized plan's root statistics
    from the server's ``EXPLAIN COST`` (``Statistics(sizeInBytes=1.5 KiB, ...)``)."""
    explain = getattr(frame, "_explain_string", None)  # Connect's DataFrame.explain, as text
    try:
        text = str(explain(mode="cost")) if callable(explain) else ""
    except Exception:  # noqa: BLE001 - no estimate
        return None
    plan = text.split("== Optimized Logical Plan ==", 1)[-1]
    m = _STATS.search(plan)
    if m is None:
        return None
    try:
        return int(float(m.group(1)) * _SIZE_UNITS[m.group(2)])
    except (ValueError, KeyError):
        return None


def size_bytes(frame: DataFrame) -> int | None:
    """Spark's size estimate of ``frame`` (exact for a materialized cache), or None."""
    if is_connect(frame):
        return connect_size(frame)
    try:
        size = frame._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()  # noqa: SLF001
        return int(size if isinstance(size, int) else size.toString())  # py4j gives a BigInt or an int
    except Exception:  # noqa: BLE001 - no estimate
        return None


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
    if not is_connect(spark):
        try:  # Spark's own parse of the setting ("10MB", "-1", ...)
            return int(spark._jsparkSession.sessionState().conf().autoBroadcastJoinThreshold())  # noqa: SLF001
        except Exception:  # noqa: BLE001 - read it as text below
            pass
    try:
        return parse_bytes(spark.conf.get("spark.sql.autoBroadcastJoinThreshold", "10MB"))
    except Exception:  # noqa: BLE001
        return None
