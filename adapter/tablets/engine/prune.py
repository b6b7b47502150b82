"""Which tablets a statement reads: those whose key statistics may overlap the source's key ranges
(``prune_by_key_ranges``), without those whose rows no clause can act on
(``drop_unacted_tablets``), by the log's statistics; and which source key ranges those
statistics compare with soundly (``comparable_ranges``). Each returns the tablets it keeps: the
executor counts the rest as pruned."""

from __future__ import annotations

import bisect
import datetime
import decimal

import pyarrow as pa

from tablets.engine.plan import (
    Branch,
    Plan,
)
from tablets.engine.run import KeyBuckets, Run, may_prune
from tablets.spec import ActionKind, Category
from tablets.spec.conditions import condition, typed
from tablets.storage import (
    pruning,
)
from tablets.storage.actions import AddTablet
from tablets.storage.pruning import outside
from tablets.storage.select import KeySet
from tablets.storage.types import schema_to_arrow

INTEGRAL = ("tinyint", "smallint", "int", "bigint", "byte", "short", "integer", "long")


def prune_by_key_ranges(run: Run, tablets: list[str], ranges: list[tuple[str, object, object]]) -> list[str]:
    """Keep tablets whose key range can overlap the source's (no BY SOURCE clause here) and,
    where the source's integer key values are known (a collected source), can hold one of them:
    a source of new keys and a few late ones skips the tablets between them."""
    sets = _integer_key_sets(run)
    buckets = run.intake.buckets if may_prune(run) else None
    keep = [
        tid
        for tid in tablets
        if not outside(stats := run.snapshot.named_stats(tid), ranges)
        and all(_may_hold(stats, c, ks) for c, ks in sets)
        and (buckets is None or _in_held_bucket(stats, buckets))
    ]
    return keep


def _integer_key_sets(run: Run) -> list[tuple[str, KeySet]]:
    """The collected source's values of its integer ``t.col = s.col`` keys (``intake``), as sets."""
    if not may_prune(run) or not run.intake.keys:
        return []
    return [(c, KeySet(v)) for c, v in run.intake.keys.items() if pa.types.is_integer(v.type) and len(v)]


def _in_held_bucket(add: AddTablet, b: KeyBuckets) -> bool:
    """Whether the tablet's key range meets a bucket that holds a source key, or a neighbour of
    one (the source's buckets are computed in decimals that may round to the next one)."""
    st = add.column_stats(b.column)
    if st is None or type(st.min) is not int or type(st.max) is not int:
        return True  # (a column of only NULLs: ``outside``'s)
    first, last = (st.min - b.lo) // b.width - 1, (st.max - b.lo) // b.width + 1
    i = bisect.bisect_left(b.held, first)
    return i < len(b.held) and b.held[i] <= last


def _may_hold(add: AddTablet, col: str, keys: KeySet) -> bool:
    st = add.column_stats(col)
    if st is None or st.min is None or st.max is None:  # (a column of only NULLs: ``outside``'s)
        return True
    return keys.may_hold(st.min, st.max)


def acting_by_source(plan: Plan) -> list[Branch]:
    return [
        b
        for b in plan.branches
        if b.clause.category is Category.NOT_MATCHED_BY_SOURCE and b.clause.action is not ActionKind.DO_NOTHING
    ]


def range_keys(run: Run) -> tuple[tuple[str, str], ...]:
    """The join keys whose source min/max the statement takes, to skip tablets by: all where no
    BY SOURCE clause acts; with them, only where each has a condition (``drop_unacted_tablets``)."""
    if not may_prune(run):
        return ()
    if run.plan.prune_keys:
        return run.plan.prune_keys
    return run.plan.join_keys if all(b.condition for b in acting_by_source(run.plan)) else ()


def drop_unacted_tablets(
    run: Run, tablets: list[str], has_source: bool, pair_ranges: list[tuple[str, object, object]] | None = None
) -> list[str]:
    """Without the tablets whose rows no clause can act on, by the log's statistics: a tablet
    where some conjunct of each acting BY SOURCE clause's condition is never true
    (``tablets.spec.conditions.condition``, ``storage.pruning``), as Delta skips files for a DELETE,
    and whose rows' pairs decide nothing: there is no source (UPDATE / DELETE ... WHERE), ON is
    false (microbatch, replace_where), no MATCHED or NOT MATCHED clause acts (a pair also keeps
    a source row from being inserted), or the tablet's keys lie outside the source's
    (``pair_ranges``: a sync that deletes a window, ``WHEN NOT MATCHED BY SOURCE AND t.day >=
    ... THEN DELETE``)."""
    plan = run.plan
    acting = acting_by_source(plan)
    if not acting or not all(b.condition for b in acting) or not may_prune(run):
        return tablets
    # whether a source row has a pair decides MATCHED clauses and which rows NOT MATCHED inserts
    pairs = (
        has_source
        and not plan.pairs_nothing
        and any(
            b.clause.category is not Category.NOT_MATCHED_BY_SOURCE and b.clause.action is not ActionKind.DO_NOTHING
            for b in plan.branches
        )
    )
    if pairs and not pair_ranges:
        return tablets
    kinds, names = pruning.column_kinds(schema_to_arrow(run.snapshot.metadata.schema))
    preds = [typed(condition(b.condition, plan.spec.target_alias) if b.condition else [], kinds, names) for b in acting]
    if not all(preds):
        return tablets

    def skipped(add: AddTablet) -> bool:
        return (not pairs or outside(add, pair_ranges or ())) and all(pruning.prune(p, add, kinds) for p in preds)

    keep = [t for t in tablets if not skipped(run.snapshot.named_stats(t))]
    return keep


def comparable_ranges(run: Run, ranges: list[tuple[str, object, object]]) -> list[tuple[str, object, object]]:
    """The source key ranges that the target's statistics bound soundly (pruning, and the
    concurrent appends a statement cannot match): values of the target column's kind. Across
    kinds Spark casts one side, which orders differently: a STRING source against a DATE column
    ('2024-1-5', '2024-01-05 00:00:00' are that date) or a wall time against an instant. All
    NULL (``lo`` None) stays: ``=`` matches nothing."""
    types = dict(run.plan.column_types)
    return [(c, lo, hi) for c, lo, hi in ranges if lo is None or _range_kind(types.get(c, ""), lo)]


def _range_kind(spark_type: str, value: object) -> bool:
    """``value`` (a source key's min or max) is of the kind of the Spark type ``spark_type``:
    numbers that compare exactly with its values, text of a string, dates of a date, instants of a TIMESTAMP,
    wall times of a TIMESTAMP_NTZ."""
    t = spark_type.lower()
    if isinstance(value, bool):
        return t == "boolean"
    if isinstance(value, int):
        return t in INTEGRAL
    if isinstance(value, float):  # not against integers: Spark compares them as doubles, inexactly
        return t in ("float", "double")
    if isinstance(value, decimal.Decimal):
        return t in INTEGRAL or t.startswith("decimal")
    if isinstance(value, str):
        return t == "string"
    if isinstance(value, datetime.datetime):
        return t == ("timestamp" if value.tzinfo is not None else "timestamp_ntz")
    if isinstance(value, datetime.date):
        return t == "date"
    return False
