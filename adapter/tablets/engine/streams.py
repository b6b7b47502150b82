"""The write streams: the classified pairs' rows go to the merge tasks (``tasks``), which write
deletion vectors and new tablets and return their fragments.

Both streams in one shuffle (``delete_stream``): row ids of deletes and of old images of updates
hashed by tablet id, so each tablet's new deletion vector is written by exactly one task
(homecoming), with inserts and new images of updates written as new tablets by the same tasks.
With ``cluster_by`` the insert stream is range-partitioned instead (``insert_stream``): two jobs
over one persisted base join. Few rows run as one task on the driver (``run_task_here``).
Each stream returns what its tasks wrote and counted (``Written``)."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from tablets.engine.constraints import raise_if_violated
from tablets.engine.metrics import Rows
from tablets.engine.names import (
    IMAGE_PREFIX,
    K_DELETE,
    K_INSERT,
    K_REFUSE,
    K_REPLACE,
    K_UNCHANGED,
    K_UPDATE,
    KIND,
    OUTSIDE,
    ROW,
    TID,
    VIOLATION,
)
from tablets.engine.plan import (
    Plan,
)
from tablets.engine.route import driver_write_rows
from tablets.engine.run import Run
from tablets.engine.tasks import INSERT_RESULT, K_MATCHED, MERGE_RESULT, Deferred, insert_task, merge_task
from tablets.exceptions import (
    CardinalityViolation,
    KeyViolation,
)
from tablets.spec import ActionKind
from tablets.sqltext import quote_ident
from tablets.storage import (
    Fragment,
    discard,
    fragment_from_json,
)


@dataclass(frozen=True)
class Written:
    """What a stream's tasks wrote (their fragments) and the rows they counted."""

    fragments: tuple[Fragment, ...]
    rows: Rows


def delete_stream(
    run: Run,
    base: DataFrame | pa.Table,
    handle,
    n_tablets: int,
    *,
    inserts: bool,
    compare: Deferred | None = None,
    few: bool = False,
) -> Written:
    """Row ids of deletes and old images hashed by tablet id (homecoming), so one task writes each
    tablet's DV. With ``inserts`` the insert stream shares the shuffle and the tasks: new images
    of updates ride along to their old tablet's task, inserted rows go to one task where
    ``inserts_in_one_task`` says they fit one, else are spread by a hash of their key. ``base`` in
    Arrow (``classify_on_driver``): one task, here. ``compare``: the columns Spark's scan left out,
    which the tasks compare for its K_COMPARE rows (``tasks.Deferred``). ``few``: the target's rows
    were selected on the driver (``driver_plan.read_on_driver``), so the pairs are few."""
    names, images = run.plan.columns, run.plan.images
    parts = stream_partitions(run.spark, stream_rows(run))
    keys = _key_images(run.plan, images)
    task = merge_task(handle, names, images, inserts=inserts, keys=keys, compare=compare)
    if not inserts and not isinstance(base, pa.Table):
        base = base.filter(F.col(KIND).isin(K_DELETE, K_UPDATE, K_UNCHANGED, K_MATCHED, K_REPLACE)).select(
            TID, ROW, KIND, *([OUTSIDE] if OUTSIDE in base.columns else [])
        )
    # few rows (the target's were selected on the driver): one task's work, done here, with no
    # shuffle and no Python worker (the first in a fresh process costs seconds)
    rows: list[Any] | None = run_task_here(base, task) if few or isinstance(base, pa.Table) else None
    if rows is None and inserts:
        # inserted rows of one key meet in one task, which checks them for duplicates
        one_task = inserts_in_one_task(run, handle.target_tablet_rows)
        spread = F.lit("") if one_task else F.xxhash64(*_hashable(run.plan, keys or images)).cast("string")
        # no more tasks than tablets and the inserts' one: each is a Python task's fixed cost
        stream = base.repartition(min(parts, n_tablets + 1) if one_task else parts, F.coalesce(F.col(TID), spread))
        rows = stream.mapInArrow(task, MERGE_RESULT).collect()
    elif rows is None:
        rows = base.repartition(max(1, min(n_tablets, parts)), TID).mapInArrow(task, MERGE_RESULT).collect()
    assert rows is not None
    return written(run, handle, rows)


def written(run: Run, handle, rows: list[Any]) -> Written:
    """What the merge tasks' result ``rows`` say they wrote and counted; raises (discarding what
    they wrote) where a target row was acted on twice, a key repeated or a constraint broken."""
    fragments = [fragment_from_json(r["fragment"]) for r in rows if r["fragment"]]
    # a target row modified twice makes the MERGE itself invalid: reported before what its rows
    # would break at the end of the statement (a repeated key, a constraint), as SQL MERGE does
    dups = sum(r["duplicates"] for r in rows)
    if dups:
        discard(handle, fragments)
        raise CardinalityViolation(
            f"{run.plan.spec.head}: {dups} target row(s) would be modified more than "
            "once (more than one source row matches them and an UPDATE or DELETE clause applies); nothing was written"
        )
    check_keys(run, handle, fragments, rows)
    raise_if_violated(handle, fragments, rows, run.snapshot.metadata, _where(run))
    counted = Rows(
        inserted=sum(r["n_insert"] for r in rows),
        updated=sum(r["n_update"] for r in rows),
        deleted=sum(r["n_delete"] for r in rows),
        unchanged=sum(r["n_unchanged"] for r in rows),
    )
    return Written(tuple(fragments), counted)


# The most rows one merge or insert task is given (the sizing rule, docs/SCALE.md "Work sized to
# the data"): a merge task holds its partition's row ids, ~400 B of worker memory each, and
# writes its rows a tablet at a time (an insert task too, unless cluster_by sorts them), so ~0.5 GB for 2^20 row
# ids. Row ids of one tablet always go to one task: a tablet's rows (``target_tablet_rows``) are
# the floor whatever this says.
TASK_ROWS = 1 << 20


def inserts_in_one_task(run: Run, target_tablet_rows: int) -> bool:
    """The statement's inserted rows go to one task (it writes them as tablets of
    ``target_tablet_rows``): at most a source row each, no more than the sizing rule gives a
    task (``TASK_ROWS``) or than one tablet holds."""
    return run.intake.rows < max(target_tablet_rows, TASK_ROWS)


def stream_rows(run: Run) -> int:
    """At most how many rows a statement's write streams carry: a pair or an insert per source row
    (a target row pairs at most once with an acting clause), and with BY SOURCE clauses every
    live target row too."""
    bound = run.intake.rows
    if run.plan.join in ("right", "full"):
        bound += run.snapshot.live_rows
    return bound


def pairs_bound(run: Run, tablets: Sequence[str]) -> int:
    """At most how many rows Spark's classified pairs of a statement over ``tablets`` hold: each
    pair (and its marker, ``pairs_sql.one_shuffle_pairs``), each source row without one, and with
    BY SOURCE clauses each target row without one. A pair per source row where ON equates every
    key column of a keyed table (its keys are unique and ``=`` never pairs NULL), else one per
    (source row, target row)."""
    target = sum(run.snapshot.tablets[t].live_rows for t in tablets)
    plan = run.plan
    if plan.join is None:  # UPDATE / DELETE: the target rows
        return target
    source = run.intake.rows
    keyed = bool(plan.key_columns) and set(plan.key_columns) <= {c for c, _ in plan.join_keys}
    pairs = source if keyed else source * target
    return 2 * pairs + source + (target if plan.by_source else 0)


def collect_few_pairs(run: Run, base: DataFrame, tablets: Sequence[str], few: bool) -> pa.Table | None:
    """Spark's classified pairs collected to the driver, where they can be at most
    ``route.driver_write_rows`` rows: one task here writes them (no shuffle, no Python worker),
    as the driver plan's pairs are. None where they can be more, or have no Arrow form, or are
    ``few`` (``delete_stream`` runs them here anyway)."""
    limit = driver_write_rows(run.spark)
    if limit <= 0 or few or pairs_bound(run, tablets) > limit:
        return None
    try:
        return base.toArrow()
    except (TypeError, NotImplementedError, pa.ArrowException):
        return None


def stream_partitions(spark: SparkSession, rows: int) -> int:
    """Shuffle partitions for ``rows`` entering the write streams: Spark's setting, raised so that
    no task is given more than ``TASK_ROWS`` rows on average."""
    return max(shuffle_partitions(spark), math.ceil(rows / TASK_ROWS))


def shuffle_partitions(spark: SparkSession) -> int:
    """Spark's ``spark.sql.shuffle.partitions`` (at least 1)."""
    return max(1, int(spark.conf.get("spark.sql.shuffle.partitions") or 4))


def map_in_arrow(frame: DataFrame, task, schema: str) -> DataFrame:
    """``frame.mapInArrow(task, schema)`` whatever its columns are named: PySpark's mapInArrow
    takes each column by name (``frame[name]``), which reads a dot as a struct's field and refuses
    a backquote. Such columns travel under their positions' names, and ``task`` sees the frame's own."""
    names = frame.columns
    if all(n.replace("_", "").isalnum() and n.isascii() for n in names):
        return frame.mapInArrow(task, schema)

    def named(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return task(b.rename_columns(names) for b in batches)

    return frame.toDF(*(f"_c{i}" for i in range(len(names)))).mapInArrow(named, schema)


def run_task_here(frame: DataFrame | pa.Table, task) -> list[Any] | None:
    """The result rows of ``task`` (a ``tasks`` sink) over all of ``frame``'s rows, run here as one
    task; None where ``frame`` has a type without an Arrow form (Spark's tasks cannot run it either,
    but say so in their own words)."""
    try:
        data = frame if isinstance(frame, pa.Table) else frame.toArrow()
    except (TypeError, NotImplementedError, pa.ArrowException):
        return None
    return [r for b in task(iter(data.to_batches())) for r in b.to_pylist()]


def insert_stream(run: Run, base: DataFrame, handle) -> Written:
    names = [n for n, _ in run.plan.column_types]
    if OUTSIDE in base.columns:  # a row's one BY SOURCE update, however many pairs it has
        once = F.col(OUTSIDE) & (F.col(KIND) == K_UPDATE)
        base = base.filter(~once).unionByName(base.filter(once).dropDuplicates([TID, ROW]))
    stream = base.filter(F.col(KIND).isin(K_INSERT, K_UPDATE, K_REFUSE, K_REPLACE)).select(
        *[F.col(f"{IMAGE_PREFIX}{i}").alias(n) for i, n in enumerate(names)],
        KIND,
        *([VIOLATION] if VIOLATION in base.columns else []),
    )
    bound = run.intake.rows + (run.snapshot.live_rows if run.plan.actions(ActionKind.UPDATE) else 0)
    keys = list(run.plan.key_columns) if run.plan.actions(ActionKind.INSERT) else []
    stream = _spread(run.spark, stream, bound, handle.target_tablet_rows, run.options.cluster_by, keys)
    rows = map_in_arrow(stream, insert_task(handle, names, keys), INSERT_RESULT).collect()
    fragments = [fragment_from_json(r["fragment"]) for r in rows if r["fragment"]]
    check_keys(run, handle, fragments, rows)
    raise_if_violated(handle, fragments, rows, run.snapshot.metadata, _where(run))
    return Written(tuple(fragments), Rows(inserted=sum(r["n_insert"] for r in rows)))


def _spread(
    spark: SparkSession, stream: DataFrame, bound: int, rows_per: int, cluster_by: Sequence[str], keys: Sequence[str]
) -> DataFrame:
    """The insert stream's partitions: by range of ``cluster_by``; one task when it fits one
    tablet; else, with ``keys``, hashed by key so one task sees every row of a key."""
    if cluster_by and not keys:
        return stream.repartitionByRange(max(1, math.ceil(bound / rows_per)), *columns_named(cluster_by))
    if bound < rows_per:  # (a no-op on one partition; no `.rdd` to ask: Spark Connect has none)
        return stream.coalesce(1)  # one well-sized tablet rather than one per shuffle partition
    if keys:
        stream = stream.repartition(stream_partitions(spark, bound), *columns_named(keys))
        return stream.sortWithinPartitions(*columns_named(cluster_by)) if cluster_by else stream
    return stream


def columns_named(names: Sequence[str]) -> list[Column]:
    """Columns by their own names (a dot or a backquote is part of a name)."""
    return [F.col(quote_ident(n)) for n in names]


def _hashable(plan: Plan, images: Sequence[str]) -> list[Column]:
    """``images`` as Spark's hash takes them: it hashes no map, so a column whose type holds one
    is hashed as its JSON text (equal values, equal text: rows of one key still meet)."""
    types = dict(zip(plan.images, (t for _, t in plan.column_types), strict=True))
    return [F.to_json(F.col(c)) if "map<" in types[c].lower() else F.col(c) for c in images]


def _key_images(plan: Plan, images: Sequence[str]) -> list[str]:
    """The image columns of the key columns, when the statement inserts into a keyed table."""
    if not plan.key_columns or not plan.actions(ActionKind.INSERT):
        return []
    names = [n for n, _ in plan.column_types]
    return [images[names.index(k)] for k in plan.key_columns]


def check_keys(run: Run, handle, fragments: list, rows: list) -> None:
    """Fail (writing nothing) if inserted rows would repeat a key."""
    bad = sum(r["key_violations"] for r in rows)
    if not bad:
        return
    discard(handle, fragments)
    example = next((r["key_example"] for r in rows if r["key_example"]), None)
    spec = run.plan.spec
    raise KeyViolation(
        f"{spec.head}: {bad} inserted row(s) would repeat a key of ({', '.join(run.plan.key_columns)})"
        + (f", e.g. {example}" if example else "")
        + "; nothing was written"
    )


def _where(run: Run) -> str:
    return f"{run.plan.spec.head}"
