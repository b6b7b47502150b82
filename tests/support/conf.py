"""Spark settings for the span of a block."""

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

LOS_ANGELES = {"spark.sql.session.timeZone": "America/Los_Angeles"}  # a session zone other than UTC


@contextmanager
def settings(spark, values: Mapping[str, str]) -> Iterator[None]:
    """``values`` set on ``spark`` inside the block; each back to what it was (or unset) after."""
    before = {k: spark.conf.get(k, None) for k in values}
    for k, v in values.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)
