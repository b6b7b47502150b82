"""The key filter's bloom filter sizes (engine.key_filter, spark.bloom): the false positives a
filter lets through as Spark sizes it, and where its size cap makes it not worth building."""

import math

from tablets.engine import key_filter
from tablets.engine.key_filter import filter_bits
from tablets.spark.bloom import MAX_ITEMS, bits_for, false_positives

CAP = key_filter.MAX_BYTES * 8


def test_a_filter_sized_for_its_keys_lets_through_the_share_asked_for():
    for n in (1_000, 1_000_000, MAX_ITEMS):
        bits = filter_bits(n, MAX_ITEMS)
        assert bits == bits_for(n, key_filter.FPP) <= CAP
        assert math.isclose(false_positives(n, bits, MAX_ITEMS), key_filter.FPP, rel_tol=0.1)


def test_past_spark_s_item_cap_more_keys_let_more_through_and_then_no_filter_is_built():
    # Spark picks the hash count for at most MAX_ITEMS keys: at 10M keys in the 8 MiB cap it lets
    # ~11% through (4% with the count fit for 10M)
    at_10m = false_positives(10_000_000, CAP, MAX_ITEMS)
    assert key_filter.FPP < false_positives(10_000_000, CAP) < at_10m < key_filter.MAX_FPP
    assert filter_bits(10_000_000, MAX_ITEMS) == CAP
    assert filter_bits(13_000_000, MAX_ITEMS) is None
    # a session that lets Spark size for more keys keeps the filter further
    assert filter_bits(13_000_000, 20_000_000) == CAP
