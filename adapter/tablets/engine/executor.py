"""Runs a Plan on Spark and commits it once: the entry of a MERGE (``execute``), its errors made
the engine's own, and the choice between the driver plan and Spark's.

Jobs, in order (each only when the plan needs it), each in its own module:
1. ``intake``: the source, read exactly once (collected as Arrow when small, else persisted),
   its row count and join key ranges; the re-run digest of a collected source;
2. ``prune``: the tablets the statement may touch, by the log's statistics;
3. ``driver_plan``: a small statement classified in Arrow on the driver, with no Spark job;
   else ``pairs_sql``: Spark's plan of the row pairs (``spark_streams`` picks which);
4. ``streams``: the classified rows written by the merge tasks as deletion vectors and new
   tablets;
5. the commit of all fragments as one version, with ``conflicts`` telling it what the statement
   read.
The statement's state is values: what is fixed for it is one frozen ``run.Run``; each step returns
what it learned (the intake its ``SourceIntake``, prune the tablets it keeps, the driver plan its
classified rows, the pairs their ``Pairs``, the streams what they ``Written``) and this module hands
the next steps a ``replace``d ``Run``. It times the phases (``_Clock``) and sums the statement's
``MergeMetrics`` from those values in one place (``metrics.summed``). Errors of Spark's jobs
become ``errors.job_failed``. Appends and overwrites are ``append``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from pyspark import StorageLevel
from pyspark.errors import AnalysisException, PySparkException
from pyspark.sql import DataFrame, SparkSession

from tablets.engine import rerun
from tablets.engine.conflicts import appends_match, reads_target
from tablets.engine.constraints import check_classified, stream_check
from tablets.engine.driver_plan import changes_nothing, classify_on_driver, read_on_driver
from tablets.engine.errors import job_failed, spark_message
from tablets.engine.evolution import planned
from tablets.engine.intake import (
    broadcastable,
    collect_local_source,
    counted_source,
    narrowed,
    persisted_source,
    ran_before,
    source_digest,
    source_frame,
)
from tablets.engine.key_delete import key_deleted
from tablets.engine.metrics import MergeMetrics, Rows, summed
from tablets.engine.names import VIOLATION
from tablets.engine.pairs_sql import (
    Pairs,
    classified_pairs,
    compared_in_tasks,
    kept_in_tasks,
    one_shuffle_fits,
    one_shuffle_pairs,
    unjoined_pairs,
)
from tablets.engine.prune import comparable_ranges, drop_unacted_tablets, prune_by_key_ranges
from tablets.engine.route import (
    SKIP_NOOP_CONF,
)
from tablets.engine.run import MergeOptions, Run, Switches, setting_on
from tablets.engine.streams import Written, collect_few_pairs, delete_stream, insert_stream
from tablets.engine.tasks import Deferred
from tablets.exceptions import (
    MergeSpecError,
    TabletsError,
)
from tablets.settings import conf_flag
from tablets.spark.datasource import type_text
from tablets.spec import ActionKind, Category, MergeSpec
from tablets.storage import (
    Snapshot,
    TabletTable,
)
from tablets.storage.transaction import begin, verified
from tablets.storage.types import schema_to_arrow

__all__ = ["SKIP_NOOP_CONF", "MergeOptions", "execute", "spark_message"]


def execute(
    spark: SparkSession,
    table: TabletTable,
    spec: MergeSpec,
    source: DataFrame | None,
    options: MergeOptions = MergeOptions(),
    snapshot: Snapshot | None = None,
) -> MergeMetrics:
    """Plan and run ``spec`` against ``table``; one commit, or none if nothing changes."""
    snapshot = snapshot or table.snapshot()
    plan, evolved = planned(spec, snapshot.metadata, source_fields(source), skip_unchanged=options.skip_unchanged)
    if evolved is not None:  # the statement runs on the new schema; its commit carries it
        snapshot = replace(verified(snapshot, table.root, table.io), metadata=evolved)
    if plan.noop and evolved is None and conf_flag(spark, SKIP_NOOP_CONF):
        return MergeMetrics(operation=spec.operation, noop=True)
    run = Run(spark, table, snapshot, plan, options, Switches(spark), evolved=evolved)
    try:
        return _run_merge(run, source)
    except TabletsError:
        raise
    except AnalysisException as e:
        raise MergeSpecError(
            f"{spec.head}: Spark cannot resolve the statement: {spark_message(e)}",
            help="Check the column names and aliases in the ON condition, the clause conditions and the assignments.",
        ) from e
    except PySparkException as e:
        raise job_failed(f"{spec.head}", e) from e
    except Exception as e:  # py4j errors from the JVM side
        if type(e).__module__.startswith("py4j"):
            raise job_failed(f"{spec.head}", e) from e
        raise


class _Clock:
    """The statement's phases timed (phase -> ms), each from the end of the one before (or from
    ``restart``)."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = {}
        self._since = time.perf_counter()

    def restart(self) -> None:
        self._since = time.perf_counter()

    def phase(self, name: str) -> None:
        now = time.perf_counter()
        self.ms[name] = round((now - self._since) * 1000, 1)
        self._since = now


@dataclass(frozen=True)
class _Streamed:
    """What Spark's plan wrote (``spark_streams``): its streams' fragments and counts, and how."""

    written: Written
    key_filtered: bool = False  # its target scan kept the rows a bloom filter of source keys holds
    by_key_set: bool = False  # the tasks owning the tablets deleted by the source's keys (key_delete)
    on_driver: bool = False  # its few pairs collected and written by one task here


def _run_merge(run: Run, source: DataFrame | None) -> MergeMetrics:
    plan, clock = run.plan, _Clock()
    cats = {b.clause.category for b in plan.branches if b.clause.action is not ActionKind.DO_NOTHING}
    tablets = list(run.snapshot.tablets)
    ranges = None
    if source is not None:
        source = narrowed(run, source)
    original, has_source = source, source is not None

    def metrics(**counted) -> MergeMetrics:  # the statement's, of what its steps returned
        return summed(
            plan.spec.operation, clock.ms, source_rows=run.intake.rows, source_by_arrow=run.intake.by_arrow, **counted
        )

    try:
        if source is not None:
            local = collect_local_source(run, source)
            if local is not None:
                ranges, intake = local
                source = intake.frame  # None: made from the collected rows if Spark needs it
            else:
                source = persisted_source(run, source)
                ranges, intake = counted_source(run, source)
            if source is not None:
                intake = replace(intake, broadcast=broadcastable(run, source, intake.rows))
            run = replace(run, intake=intake)
            clock.phase("source")
            if (
                intake.rows == 0
                and Category.NOT_MATCHED_BY_SOURCE not in cats
                and run.evolved is None
                and setting_on(run, SKIP_NOOP_CONF)
            ):
                return metrics()  # empty source: nothing can match or be inserted
        digest = source_digest(run)
        if digest is not None and run.evolved is None:
            unchanged = ran_before(run, *digest, source)
            if unchanged is not None:
                clock.phase("same_source")  # the table is what this statement made of these rows
                return metrics(same_source=True, rows=Rows(unchanged=unchanged))
        # (counted: Spark reads the persisted rows from here on)
        run = replace(run, intake=replace(run.intake, collected=None))
        pair_ranges = None
        if ranges is not None:
            ranges = comparable_ranges(run, ranges)
            if plan.prune_keys:
                tablets = prune_by_key_ranges(run, tablets, ranges)
                run = replace(run, intake=replace(run.intake, ranges=ranges))
            else:  # a BY SOURCE clause may act on any tablet: drop_unacted_tablets decides
                pair_ranges, ranges = ranges, None
        if not has_source or plan.pairs_nothing or pair_ranges is not None:
            tablets = drop_unacted_tablets(run, tablets, has_source, pair_ranges)
        kept = {"tablets": len(run.snapshot.tablets), "scanned": len(tablets)}
        # the statement classified here in Arrow, where it can be (``classify_on_driver``): no Spark job
        rows = classify_on_driver(run, tablets)
        if rows is not None and not check_classified(
            run.snapshot.metadata,
            rows,
            run.plan.columns,
            run.plan.images,
            f"{plan.spec.head}",
        ):
            rows = None  # a CHECK Arrow cannot evaluate exactly: Spark's plan evaluates it
        if rows is not None and run.evolved is None and setting_on(run, SKIP_NOOP_CONF):
            unchanged = changes_nothing(rows)
            if unchanged is not None:
                clock.phase("unchanged")  # a re-merge of the same rows: no commit
                return metrics(
                    **kept, read_on_driver=read_on_driver(run), merged_on_driver=True, rows=Rows(unchanged=unchanged)
                )
        # a source that reads the target depends on all of it: the conservative conflict rules
        self_read = original is not None and reads_target(run, original)
        handle = begin(
            run.snapshot,
            run.table.root,
            plan.spec.operation,
            io=run.table.io,
            delete_from=tablets,
            read_tablets=run.snapshot.tablets.keys() if self_read else (),
            reads_appends=True,
            # row-level conflicts (docs/CONCURRENCY.md): the tasks report the target rows the
            # result depends on; appended tablets outside the source's key ranges cannot match
            track_rows=not self_read,
            append_ranges=ranges if Category.NOT_MATCHED_BY_SOURCE not in cats and not self_read else None,
            target_tablet_rows=run.options.target_tablet_rows,
            sort_by=run.options.cluster_by,
        )

        def spark_source() -> DataFrame | None:  # the collected rows as a frame, once Spark needs them
            nonlocal source, run
            if has_source and source is None:
                assert original is not None
                source, intake = source_frame(run, original)
                run = replace(run, intake=intake)
            return source

        by_keys = key_deleted(run, source, tablets, handle) if rows is None and has_source else None
        if rows is not None:  # one task, here: it sorts its inserts by cluster_by itself
            streamed = _Streamed(delete_stream(run, rows, handle, len(tablets), inserts=plan.has_inserts))
            clock.phase("merge_on_driver")
        elif by_keys is not None:  # the tasks that own the tablets, by the source's keys: no join
            streamed = _Streamed(by_keys, by_key_set=True)
            clock.phase("delete_stream")
        else:
            frame = spark_source()
            # late materialisation: the scan leaves out what only the unchanged check reads, and the
            # merge tasks compare it for the pairs alike in the rest; and what every UPDATE keeps,
            # which they read for the updated rows (they get the new images: not with cluster_by,
            # whose inserts go apart)
            if not run.options.cluster_by:
                run = replace(run, deferred=compared_in_tasks(run))
                run = replace(run, kept=kept_in_tasks(run))
            streamed = spark_streams(run, frame, tablets, handle, clock)
            clock.restart()
        counted = {
            **kept,
            "read_on_driver": read_on_driver(run),
            "merged_on_driver": rows is not None,
            "written_on_driver": streamed.on_driver,
            "key_filtered": streamed.key_filtered,
            "deleted_by_key_set": streamed.by_key_set,
            "rows": streamed.written.rows,
            "fragments": streamed.written.fragments,
        }

        def may_match(adds) -> bool:  # (the source first: it may refine ``run``)
            frame = spark_source()
            return appends_match(run, frame, adds)

        version = run.table.finish(
            handle,
            streamed.written.fragments,
            extra_actions=[run.evolved] if run.evolved is not None else (),
            parameters={
                "statement": plan.spec.operation,
                **dict(run.options.parameters),
                **({rerun.SOURCE_DIGEST: digest[0]} if digest is not None else {}),
            },
            metrics=metrics(**counted).to_commit(),
            may_match=None if self_read else may_match,
        )
        clock.phase("commit")
        return metrics(**counted, version=version)
    finally:
        run.temps.release(run.spark)


def spark_streams(run: Run, source: DataFrame | None, tablets: list[str], handle, clock: _Clock) -> _Streamed:
    """The statement's pairs classified by Spark, and what its streams' tasks wrote."""
    plan = run.plan
    clock.restart()
    together = not run.options.cluster_by
    compare = deferred(run, tablets)
    if source is not None and plan.pairs_nothing and plan.join in ("left", "right", "full"):
        pairs = Pairs(unjoined_pairs(run, source, tablets))
    elif source is not None and together and one_shuffle_fits(run, handle.target_tablet_rows):
        pairs = Pairs(one_shuffle_pairs(run, source, tablets))
    else:
        pairs = classified_pairs(run, source, tablets)
    base = pairs.frame
    # a statement that only deletes writes no row: nothing to check (its scan lacks the columns)
    check = stream_check(run.snapshot.metadata, run.plan.columns, run.plan.images) if plan.has_inserts else None
    if check is not None:  # the rows the streams write, checked where they are written
        base = base.withColumn(VIOLATION, check)
    selected = read_on_driver(run) > 0  # the target's rows were selected on the driver: the pairs are few
    few = collect_few_pairs(run, base, tablets, selected)
    if few is not None:  # one task, here, as the driver plan's pairs: it sorts by cluster_by itself
        written = delete_stream(run, few, handle, len(tablets), inserts=plan.has_inserts, compare=compare)
        clock.phase("streams")
        return _Streamed(written, pairs.key_filtered, on_driver=True)
    if plan.has_inserts and not together:
        base = base.persist(StorageLevel.MEMORY_AND_DISK)  # two jobs read the one join
        run.temps.persisted.append(base)
    # the row ids of every target row the statement matched or acts on go home to their
    # tablet's task (its DV, and the rows the result depends on); the insert stream rides
    # along, unless cluster_by wants it range-partitioned by its own columns
    written = delete_stream(
        run, base, handle, len(tablets), inserts=together and plan.has_inserts, compare=compare, few=selected
    )
    clock.phase("streams" if together and plan.has_inserts else "delete_stream")
    if plan.has_inserts and not together:
        inserted = insert_stream(run, base, handle)
        clock.phase("insert_stream")
        # the insert stream's count of inserted rows stands for the statement's
        rows = replace(written.rows, inserted=inserted.rows.inserted)
        written = Written(written.fragments + inserted.fragments, rows)
    return _Streamed(written, pairs.key_filtered)


def deferred(run: Run, tablets: list[str]) -> Deferred | None:
    """``tasks.Deferred`` of ``run.deferred`` over ``tablets`` (their adds without statistics,
    which the tasks do not read), None where Spark's scan reads every column."""
    if not run.deferred and not run.kept:
        return None
    names = run.plan.columns
    return Deferred(
        tuple((c, run.plan.images[names.index(c)]) for c in run.deferred),
        tuple((c, run.plan.images[names.index(c)]) for c in run.kept),
        {t: replace(run.snapshot.tablets[t].add, stats=()) for t in tablets},
        schema_to_arrow(run.snapshot.metadata.schema),
        run.snapshot.metadata.mapping,
    )


def source_fields(source: DataFrame | None) -> list[tuple[str, str]] | None:
    """(name, Spark type) of ``source``'s columns (``evolution.planned``), None without one."""
    return None if source is None else [(f.name, type_text(f.dataType)) for f in source.schema.fields]
