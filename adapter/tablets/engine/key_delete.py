"""A MERGE that only deletes the target rows whose key the source holds (``MERGE ... ON t.k =
s.k WHEN MATCHED THEN DELETE``: a purge, dbt's delete+insert without its new rows), on Spark's
plan sized to its changes: no join and no shuffle. The source, narrowed to its key, is collected
here once (``intake.collect_local_source``: by Arrow from its Parquet files where it is only
those; up to ``route.KEY_SET_BYTES``) into one set (``storage.select.KeySet``, a bitmap over a
dense integer span), which every task gets with its code (PySpark broadcasts a big task); each
task owns whole tablets, reads their key column alone (row groups whose statistics hold no key
are skipped) and writes each one's deletion vector itself (``storage.RowLevelSink``): a row id
never leaves the task that read it, nor is it held with a tablet id of its own.

The rows Spark's join deletes, exactly: one ``t.k = s.k`` conjunct whose equality Arrow's is
(``intake.key_values``: integers, strings, dates, booleans; timestamps and decimals cast
exactly), NULL in no set. Elsewhere the join runs: another ON, a condition, another action, a
source key held twice (a target row it matches would be deleted twice: the join reports that),
more keys than ``KEY_SET_BYTES`` (or ``HASHED_KEYS`` of a type besides integers), few pairs (one task on the driver writes those), a source far
from this process (Spark Connect). ``spark.tablets.merge.keyDelete=false`` turns it off."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import replace

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from tablets.engine.intake import by_key_set, key_values
from tablets.engine.metrics import Rows
from tablets.engine.route import KEY_SET_BYTES, driver_write_rows
from tablets.engine.run import Run
from tablets.engine.streams import Written, pairs_bound, shuffle_partitions, written
from tablets.engine.tasks import MERGE_RESULT, deletes_result
from tablets.spark.sizes import row_width
from tablets.sqltext import quote_ident
from tablets.storage import RowLevelSink
from tablets.storage.actions import AddTablet, SetDV
from tablets.storage.select import KeySet, select_rows
from tablets.storage.types import schema_to_arrow

TASK_ROWS = 1 << 23  # target rows a task reads keys of (its tablets whole): a second or two
HASHED_KEYS = 1 << 16  # the most keys of a type other than integers (Arrow's lookup hashes them per row group)


def key_deleted(run: Run, source: DataFrame | None, tablets: Sequence[str], handle) -> Written | None:
    """The statement's deletes, each tablet's written by the task that read its keys; None where
    the statement is not such a delete or the join must decide (the module's rules)."""
    keys = _source_keys(run, source, tablets)
    if keys is None:
        return None
    col, key_set = keys
    meta = run.snapshot.metadata
    states = [run.snapshot.tablets[t] for t in tablets]
    states = [st for st in states if st.live_rows]
    groups = _groups([(replace(st.add, stats=()), st.dv, st.live_rows) for st in states], run)
    schema, mapping = schema_to_arrow(meta.schema), meta.mapping

    def task(indexes: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        sink, deleted = RowLevelSink(handle), 0
        for batch in indexes:
            for i in batch.column(0).to_pylist():
                for add, dv in groups[i]:
                    found = select_rows(handle.io, handle.root, add, dv, schema, [col], {col: key_set}, mapping=mapping)
                    sink.delete_rows(add.tablet_id, found.positions.to_numpy(zero_copy_only=False))
                    deleted += len(found.positions)
        yield deletes_result(sink.finish(), deleted)

    if not groups:
        return Written((), Rows())
    jobs = run.spark.range(len(groups), numPartitions=len(groups))
    return written(run, handle, jobs.mapInArrow(task, MERGE_RESULT).collect())


def _source_keys(run: Run, source: DataFrame | None, tablets: Sequence[str]) -> tuple[str, KeySet] | None:
    """(target key column, the source's keys as one set) where the module's rules allow: the
    keys of the source collected here (``intake.collect_local_source``), else of the persisted
    ``source`` (one job)."""
    if not by_key_set(run):
        return None
    limit = driver_write_rows(run.spark)
    if 0 < pairs_bound(run, tablets) <= limit:
        return None  # few pairs: one task on the driver writes them, with no Python worker to start
    col, name = run.plan.deletes_by_key  # type: ignore[misc]
    values = None
    if run.intake.local is not None:
        data, values = run.intake.local[0].select([name]), run.intake.keys  # (its keys taken as it was collected)
    elif source is not None:
        picked = source.select(F.col(quote_ident(name)))
        if run.intake.rows * row_width(picked) > KEY_SET_BYTES:
            return None
        try:
            data = picked.toArrow()
        except (TypeError, NotImplementedError, pa.ArrowException):
            return None
    else:
        return None
    if values is None:
        values, _ = key_values(run, data)
    if values is None or col not in values:
        return None  # a type whose equality Arrow's may not be
    if len(values[col]) != data.num_rows - data.column(0).null_count:
        return None  # a key twice: a row it matches is deleted twice, which the join reports
    if not pa.types.is_integer(values[col].type) and len(values[col]) > HASHED_KEYS:
        return None  # each row group's lookup would hash them anew
    return col, KeySet(values[col])


def _groups(states: list[tuple[AddTablet, SetDV | None, int]], run: Run) -> list[list[tuple[AddTablet, SetDV | None]]]:
    """The tablets shared out to tasks by live rows (largest first, each to the lightest task):
    at most ``TASK_ROWS`` a task on average, at least as many tasks as Spark's shuffle partitions."""
    total = sum(rows for _, _, rows in states)
    n = min(len(states), max(shuffle_partitions(run.spark), math.ceil(total / TASK_ROWS)))
    groups: list[list[tuple[AddTablet, SetDV | None]]] = [[] for _ in range(n)]
    load = [0] * n
    for add, dv, rows in sorted(states, key=lambda s: -s[2]):
        i = load.index(min(load))
        groups[i].append((add, dv))
        load[i] += rows
    return groups
