"""Target rows that cannot pair, left out before a shuffle join (``key_filtered``).

A source too big to broadcast is joined with the target by a shuffle of both sides: every target
row the scan reads crosses the shuffle, though only those whose keys are in the source can pair.
Here Spark builds a bloom filter of the source's join keys (a scalar subquery over the persisted
source, in the same query) and the target's scan keeps only the rows the filter may hold, as Spark's runtime join filters
do (which it does not plan for this join: its source side has no selective predicate). At 100M
target rows and a 1% source that is ~4% of the rows shuffled instead of all of them.

Exact by construction: a row that pairs has every ``t.col = <source expr>`` key equal to the
source row's, hence the same hash, which the filter holds (no false negatives); the join then
decides as before. Where a NOT MATCHED BY SOURCE clause acts, a row without a pair matters
where one of those clauses' conditions holds, so the filter keeps those too (an unconditional
one keeps every row: no filter). Only keys whose equal values hash alike are used: both sides
integers (as BIGINT), or both of one type among plain strings (no collation), dates, timestamps,
booleans, binaries and decimals; a float, a collated string or two different types leave that
key out, and no usable key, no filter.

``spark.tablets.merge.keyFilter=false`` turns it off (README, "Shortcuts and their switches").
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, IntegralType

from tablets.engine.prune import acting_by_source
from tablets.engine.route import KEY_FILTER_CONF
from tablets.engine.run import Run, setting_on
from tablets.spark import bloom
from tablets.spark.backend import backend
from tablets.sqltext import quote_ident

FPP = 0.02  # the filter's false positives: that share of the other target rows still crosses
MAX_BYTES = 8 << 20  # Spark's own cap (runtime.bloomFilter.maxNumBits): the plan its tasks get carries it
MIN_TARGET_PER_SOURCE = 4  # fewer target rows than this per source row: the filter saves too little
MAX_FPP = 0.25  # a filter letting more through saves too little (above ~13M keys at Spark's defaults)
_SAME_TYPE = ("string", "date", "timestamp", "timestamp_ntz", "boolean", "binary")


def key_filtered(run: Run, frame: DataFrame, source: DataFrame, tablets: Sequence[str]) -> DataFrame | None:
    """``frame`` (the target scan) without rows that can neither pair with ``source`` (persisted
    and counted) nor be acted on by a BY SOURCE clause; None (``frame`` as it is) where that is
    not worth it or not sure (see the module's docstring)."""
    plan = run.plan
    if not plan.join_keys or not setting_on(run, KEY_FILTER_CONF):
        return None
    guards = [b.condition for b in acting_by_source(plan)]
    if not all(guards):
        return None  # an unconditional BY SOURCE clause acts on every row without a pair
    target_rows = sum(run.snapshot.tablets[t].live_rows for t in tablets)
    if not run.intake.rows or target_rows < MIN_TARGET_PER_SOURCE * run.intake.rows:
        return None  # (an empty source: no pair, nothing to filter by)
    t = quote_ident(plan.spec.target_alias)
    target, src = frame.alias(plan.spec.target_alias), source.alias(plan.spec.source_alias)
    keys = _hashable_keys(target, src, plan.join_keys, t)
    if not keys:
        return None
    bits = filter_bits(run.intake.rows, bloom.max_items(run.spark))
    if bits is None:
        return None
    hashed = src.select(F.xxhash64(*(F.expr(se) for _, se in keys)))
    keep = bloom.might_contain(hashed, run.intake.rows, bits, F.xxhash64(*(F.expr(te) for te, _ in keys)))
    if keep is None:
        return None
    if guards:
        acted = F.expr(" OR ".join(f"({g})" for g in guards))
        if not backend(target).deterministic(target.filter(acted)):
            return None  # rand() in a BY SOURCE condition: its CASE must see every row once
        keep = keep | acted
    return target.filter(keep)


def filter_bits(items: int, max_items: int) -> int | None:
    """The bits of the filter of ``items`` keys (at most ``MAX_BYTES``), None where the filter
    would let more than ``MAX_FPP`` of the other rows through (Spark sizes its hash count for at
    most ``max_items`` keys, so beyond the cap the share rises fast)."""
    bits = min(bloom.bits_for(items, FPP), MAX_BYTES * 8)
    return None if bloom.false_positives(items, bits, max_items) > MAX_FPP else bits


def _hashable_keys(
    target: DataFrame, source: DataFrame, join_keys: Sequence[tuple[str, str]], t: str
) -> list[tuple[str, str]]:
    """(target SQL, source SQL) of the join keys whose equal values hash alike: integers cast to
    BIGINT on both sides, else both sides of one type of ``_SAME_TYPE`` or one decimal type."""
    types = {f.name: f.dataType for f in target.schema.fields}
    out = []
    for col, expr in join_keys:
        tt: DataType | None = types.get(col)
        if tt is None:
            continue
        st = source.select(F.expr(expr)).schema.fields[0].dataType
        te = f"{t}.{quote_ident(col)}"
        if isinstance(tt, IntegralType) and isinstance(st, IntegralType):
            out.append((f"CAST({te} AS BIGINT)", f"CAST(({expr}) AS BIGINT)"))
        elif tt.simpleString() == st.simpleString() and (
            tt.simpleString() in _SAME_TYPE or tt.simpleString().startswith("decimal(")
        ):
            out.append((te, expr))
    return out
