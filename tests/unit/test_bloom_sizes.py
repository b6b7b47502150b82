"""The key filter's bloom filter sizes (engine.key_filter, spark.bloom): the false positives a
filter lets through, and where its size cap makes it not worth building."""

import math

from tablets.engine import key_filter
from tablets.spark.bloom import bits_for, false_positives

CAP = key_filter.MAX_BYTES * 8


def test_a_filter_sized_for_its_keys_lets_through_the_share_asked_for():
    for n in (1, 1_000, 1_000_000, 5_000_000):
        bits = bits_for(n, key_filter.FPP)
        assert bits <= CAP
        assert math.isclose(false_positives(n, bits), key_filter.FPP, rel_tol=0.1) or n == 1


def test_at_the_cap_more_keys_let_more_through_and_past_a_point_no_filter_is_built():
    at_10m = false_positives(10_000_000, min(bits_for(10_000_000, key_filter.FPP), CAP))
    at_20m = false_positives(20_000_000, CAP)
    at_40m = false_positives(40_000_000, CAP)
    assert key_filter.FPP < at_10m < at_20m <= key_filter.MAX_FPP < at_40m
    # a 10% delete of a 1B-row table (100M source keys) would keep ~3/4 of the other rows
    assert false_positives(100_000_000, CAP) > 0.7
