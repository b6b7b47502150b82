"""The unchanged check of the columns read last (``tablets.engine.alike``): Spark's ``<=>`` in
Arrow, and the order and rows it reads the old values of."""

import datetime as dt
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from tablets.engine.alike import arrow_equal, same_values, still_alike

pytestmark = pytest.mark.unit


def test_same_values_is_sparks_null_safe_equality():
    nan = float("nan")
    old = pa.array([1.0, None, nan, -0.0, 2.0, None])
    new = pa.array([1.0, None, nan, 0.0, None, 3.0])
    assert same_values(old, new).to_pylist() == [True, True, True, True, False, False]


def test_timestamps_compare_as_instants_in_any_zone():
    at = dt.datetime(2026, 1, 1, 12, tzinfo=dt.UTC)
    old = pa.array([at, at], pa.timestamp("us", "UTC"))
    new = pa.array([at, at + dt.timedelta(microseconds=1)], pa.timestamp("us", "Europe/Paris"))
    assert same_values(old, new).to_pylist() == [True, False]


def test_arrow_equal_types():
    assert all(arrow_equal(t) for t in ("bigint", "DOUBLE", "string", "decimal(10, 2)", "timestamp_ntz", "date"))
    assert not any(arrow_equal(t) for t in ("string collate UTF8_LCASE", "char(3)", "array<int>", "interval day"))


def test_still_alike_reads_a_kind_at_a_time_for_the_rows_still_alike():
    schema = pa.schema([("n", pa.int64()), ("s", pa.string()), ("d", pa.decimal128(5, 2)), ("b", pa.binary())])
    dec = [Decimal(i) for i in range(1, 5)]
    old = pa.table([[1, 2, 3, 4], ["a", "b", "c", "d"], dec, [b"1", b"2", b"3", b"4"]], schema=schema)
    reads = []

    def read(cols, at):
        reads.append((tuple(cols), list(at)))
        return old.take(pa.array(at)).select(cols)

    later = [
        ("s", pa.array(["a", "b", "x", "d"])),
        ("n", pa.array([1, 9, 3, 4])),
        ("b", pa.array([b"1", b"2", b"3", b"4"])),
        ("d", pa.array(dec, pa.decimal128(5, 2))),
    ]
    same = still_alike(np.array([True, True, True, False]), later, schema, read)
    assert same.tolist() == [True, False, False, False]
    # fixed-width first (rows 0-2: row 3 already differs), then variable-width (0, 2)
    assert reads == [(("n", "d"), [0, 1, 2]), (("s", "b"), [0, 2])]
