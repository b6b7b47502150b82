"""Runs a Plan on Spark and commits it once.

Jobs, in order (each only when the plan needs it):
1. the source, read exactly once (even if non-deterministic): below ``LOCAL_SOURCE_BYTES`` (or
   ``LOCAL_SOURCE_BYTES_NO_RULE``, where the session lets it: ``local_limit``) by
   Spark's estimate it is collected as Arrow and becomes a local relation (count, row ids and
   key ranges taken on the driver); else it is persisted, counted, and the min/max of its join
   keys taken, in one pass. The key ranges prune tablets by the log's statistics and row groups
   inside the rest by Parquet's (a range filter on the target scan, only where a tablet
   reaches outside the range);
2. the base join: a small source is broadcast into one streaming scan of the target. When the
   statement inserts, each pair also sends a marker to the task that gets every source row as
   a candidate insert (``_one_shuffle``), so unpaired rows need no second pass. ON FALSE
   (microbatch, replace_where) reads target and source once each, with no join (``_unpaired``);
3. both streams in one shuffle: row ids of deletes and of old images of updates hashed by tablet
   id, so each tablet's new deletion vector is written by exactly one task (homecoming), with
   inserts and new images of updates written as new tablets by the same tasks. With
   ``cluster_by`` the insert stream is range-partitioned instead: two jobs over one persisted
   base join.
Then the driver commits all fragments as one version.

Small statements (``_selected``): with a local source, an ON condition that equates target
columns with source columns of types Arrow compares as Spark does, no BY SOURCE clause, and
target tablets (after pruning) of at most ``DRIVER_SCAN_CONF`` bytes, the driver reads only the
target rows holding the source's keys (row groups skipped by their statistics, deletion vectors
applied) and joins them with the source on those keys (``_key_pairs``). Where ON is exactly
those equalities and the clauses that act on the rows have conditions and values Arrow
computes as Spark does (``arrow_eval``; copies of plain columns: ``UPDATE SET *``, ``INSERT *``,
``SET v = s.v``, DELETE: ``_arrow_rows``), the driver classifies the pairs too and runs the
merge task itself: no Spark job after the source's, and a
re-merge that changes nothing ends without a commit. Else the pairs become one local relation
(``_paired``) that Spark checks against the whole ON condition and classifies in one job, whose
rows the merge task writes on the driver: no scan job, no broadcast, no shuffle, no Python
worker. Where it cannot pair there (a left join the one-shuffle plan does not take), the
selected rows still replace the target scan.
"""

from __future__ import annotations

import datetime
import decimal
import math
import re
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import StorageLevel
from pyspark.errors import AnalysisException, PySparkException
from pyspark.sql import Column, DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BooleanType,
    LongType,
    StructField,
    StructType,
    TimestampType,
)

from tablets.engine import rerun
from tablets.engine.arrow_eval import EvalUnsupported, arrow_type
from tablets.engine.metrics import MergeMetrics
from tablets.engine.names import (
    IMAGE_PREFIX,
    K_CANDIDATE,
    K_DELETE,
    K_INSERT,
    K_PAIRED,
    K_REFUSE,
    K_UNCHANGED,
    K_UPDATE,
    KIND,
    ROW,
    S_MARK,
    SID,
    T_MARK,
    TID,
)
from tablets.engine.plan import (
    JOIN_NAMES,
    Branch,
    DriverClause,
    DriverClauses,
    Plan,
    plan_merge,
    source_column,
)
from tablets.engine.route import (
    ARROW_EVAL_CONF,
    DRIVER_BY_SOURCE_ROWS,
    DRIVER_MERGE_SOURCE_BYTES,
    DRIVER_SCAN_ROWS,
    PRUNE_CONF,
    RANGE_FILTER_SHARE,
    RERUN_CONF,
    SKIP_NOOP_CONF,
    SMALL_BYTES,
    broadcast_threshold,
    driver_scan_bytes,
    is_connect_frame,
    local_limit,
    row_width,
    size_bytes,
)
from tablets.engine.spec import ActionKind, Category, Clause, MergeSpec, Source
from tablets.engine.tasks import INSERT_RESULT, K_MATCHED, MERGE_RESULT, insert_task, merge_task
from tablets.exceptions import (
    CardinalityViolation,
    ExecutionError,
    KeyViolation,
    MergeSpecError,
    TabletsError,
)
from tablets.spark.frames import (
    BY_VALUES,
    TabletScan,
    driver_rows,
    driver_scan,
    local_relation,
    scan_struct,
    tablet_scan,
)
from tablets.spark.native import MARKER as NATIVE_MARKER
from tablets.spark.session import conf_flag
from tablets.sql.reads import condition, typed
from tablets.sqltext import quote_ident
from tablets.storage import (
    DVFragment,
    Snapshot,
    TabletFragment,
    TabletState,
    TabletTable,
    discard,
    fragment_from_json,
    pruning,
)
from tablets.storage.actions import Action, AddTablet, Metadata, RemoveTablet
from tablets.storage.fileio import normalize
from tablets.storage.transaction import begin, outside, outside_share
from tablets.storage.types import schema_to_arrow


@dataclass(frozen=True)
class MergeOptions:
    skip_unchanged: bool = True  # an UPDATE whose new image equals the old row writes nothing
    target_tablet_rows: int | None = None  # rows per new tablet (default: the table's property)
    cluster_by: tuple[str, ...] = ()  # sort new tablets by these columns so later merges prune
    prune: bool = True  # skip tablets whose key min/max cannot match the source
    parameters: tuple[tuple[str, str], ...] = field(default=())  # recorded in the commit


@dataclass
class _Run:
    spark: SparkSession
    table: TabletTable
    snapshot: Snapshot
    plan: Plan
    options: MergeOptions
    metrics: MergeMetrics
    broadcast: bool = False  # the source is small enough to broadcast into the target scan
    ranges: list[tuple[str, object, object]] | None = None  # the source's join key ranges (no BY SOURCE clause)
    persisted: list[DataFrame] = field(default_factory=list)
    views: list[str] = field(default_factory=list)  # temp views of the statement's query
    keys: dict[str, pa.Array] | None = None  # a local source's join key values, by target column
    key_sources: dict[str, str] = field(default_factory=dict)  # target key column -> its source column
    local: tuple[pa.Table, StructType] | None = None  # a local source's rows (with SID) and type
    selected: dict[tuple[str, ...], pa.Table | None] = field(default_factory=dict)  # driver_rows, by tablets
    pairs: dict[tuple[str, ...], tuple[pa.Table, pa.Table] | None] = field(default_factory=dict)  # _key_pairs, by tablets
    on_driver: bool = False  # the target's rows were selected on the driver: the pairs are few
    local_frame: DataFrame | None = None  # run.local as a Spark local relation (_local_frame)
    clauses: dict[Category, DriverClauses | None] = field(default_factory=dict)  # _clauses, by category
    switches: dict[str, bool] = field(default_factory=dict)  # the shortcuts' settings, read once (_on)

    def phase(self, name: str, start: float) -> float:
        now = time.perf_counter()
        self.metrics.timings_ms[name] = round((now - start) * 1000, 1)
        return now


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
    schema = [(n, t) for n, t, _ in snapshot.metadata.schema]
    plan = plan_merge(spec, schema, source.columns if source is not None else None, snapshot.metadata.key_columns)
    metrics = MergeMetrics(operation=spec.operation)
    if plan.noop and conf_flag(spark, SKIP_NOOP_CONF):
        metrics.noop = True
        return metrics
    run = _Run(spark, table, snapshot, plan, options, metrics)
    try:
        return _execute(run, source)
    except TabletsError:
        raise
    except AnalysisException as e:
        raise MergeSpecError(
            f"{spec.operation} INTO {spec.target}: Spark cannot resolve the statement: {spark_message(e)}",
            help="Check the column names and aliases in the ON condition, the clause conditions and the assignments.",
        ) from e
    except PySparkException as e:
        raise _failed(f"{spec.operation} INTO {spec.target}", e) from e
    except Exception as e:  # py4j errors from the JVM side
        if type(e).__module__.startswith("py4j"):
            raise _failed(f"{spec.operation} INTO {spec.target}", e) from e
        raise


def _broadcastable(run: _Run, source: DataFrame) -> bool:
    """The (persisted, counted) source is below ``spark.sql.autoBroadcastJoinThreshold``: by
    Spark's estimate, else (no estimate) by its row count times its row width."""
    limit = broadcast_threshold(run.spark)
    if limit is None or limit < 0:
        return False
    size = size_bytes(source)
    if size is None:
        size = run.metrics.source_rows * row_width(source)
    return size <= limit


def _failed(what: str, e: Exception) -> TabletsError:
    """The error of a failed Spark job (a PySparkException, or py4j's for a job the JVM aborted),
    with a Help line that fits the failure: a tablets error raised in a Python worker (a damaged
    tablet's FormatError) comes back as itself, message and help intact; a tablet that Spark's
    Parquet reader found damaged is a FormatError naming it; else the environment (a Spark API
    missing on Spark Connect, a package missing in the executors' Python) or the statement."""
    from tablets import exceptions
    from tablets.storage.tablet import damaged

    text = str(e)
    # a worker's traceback ends with "tablets.exceptions.<Class>: <message>\nHelp: <help>"
    own = list(re.finditer(r"^tablets\.exceptions\.(\w+): (.*)\n(?:Help: (.*))?", text + "\n", re.MULTILINE))
    kind = getattr(exceptions, own[-1].group(1), None) if own else None
    if own and isinstance(kind, type) and issubclass(kind, TabletsError):
        return kind(own[-1].group(2), help=own[-1].group(3))
    # the native scan's: "[FAILED_READ_FILE...] Encountered error while reading file <uri>. ..."
    read = re.search(r"Encountered error while reading file (\S+?)\.?\s", text)
    if read is not None:
        causes = re.findall(r"Caused by: [\w.$]+: (.+)", text)
        why = causes[-1].strip() if causes else "unreadable"
        path = re.sub(r"^file:(//)?", "", read.group(1))
        if re.search(r"/tablets/[0-9a-f]{32}\.parquet$", path):
            return damaged(path, why)
        return ExecutionError(f"{what} failed reading {path}: {why}")
    cls = (getattr(e, "getCondition", None) or (lambda: None))() or ""
    if cls in ("NOT_IMPLEMENTED", "JVM_ATTRIBUTE_NOT_SUPPORTED") or isinstance(e, NotImplementedError):
        return ExecutionError(
            f"{what} failed: the engine used an operation this Spark session (e.g. Spark Connect) does not offer: "
            f"{_first_line(e)}",
            help="This is a limitation of dbt-tablets on this kind of session, not a problem with the statement or "
            "its data; the table is unchanged. Please report it, with the message above.",
        )
    missing = re.search(r"No module named '([\w.]+)'", text)
    if missing is not None:
        module = missing.group(1)
        fix = (
            "the tablets package is shipped with every session (tablets.spark.ship): check the log for a "
            "warning that shipping failed, or install dbt-tablets there"
            if module.split(".")[0] == "tablets"
            else "install the `worker` extra's packages there (pip install 'dbt-tablets[worker]')"
        )
        return ExecutionError(
            f"{what} failed: Spark's Python workers cannot import {module}",
            help=f"The executors' Python (spark.pyspark.python) lacks {module}: {fix}. The table is unchanged.",
        )
    # a Python function's error (a UDF of a Python model): its exception and where, not the first line
    if "An exception was thrown from the Python worker" in text:
        body = text.split("JVM stacktrace:", 1)[0]
        raised = re.findall(r"^([A-Za-z_][\w.]*: .*)$", body, re.MULTILINE)
        where = re.findall(r'File "([^"]+)", line (\d+), in (\S+)', body)
        at = f' ({where[-1][0]}, line {where[-1][1]}, in {where[-1][2]})' if where else ""
        if raised:
            return ExecutionError(f"{what} failed: a Python function raised {raised[-1][:500]}{at}")
    # py4j's first line is "An error occurred while calling o123.x": the JVM's message follows
    lines = [ln.lstrip(": ") for ln in text.splitlines() if ln.strip() and not ln.startswith("An error occurred while calling")]
    return ExecutionError(f"{what} failed while running: {lines[0][:500] if lines else type(e).__name__}")


_SUGGESTIONS = re.compile(r"\s*Did you mean one of the following\?\s*\[[^\]]*\]\.?")
_INTERNAL = re.compile(r"`?(?:\w+\.)?`?__tablets_\w+`?")


def spark_message(e: Exception) -> str:
    """The first line of a Spark error, without the engine's internal column names (Spark's
    suggestions list them) and without the SQLSTATE tail."""
    text = _SUGGESTIONS.sub("", _first_line(e))
    text = re.sub(r"\s*SQLSTATE: \w+\.?$", "", text)
    return _INTERNAL.sub("(an internal column)", text)


def _first_line(e: Exception) -> str:
    text = str(e).strip()
    return text.splitlines()[0][:500] if text else type(e).__name__


def _execute(run: _Run, source: DataFrame | None) -> MergeMetrics:
    plan, m, t0 = run.plan, run.metrics, time.perf_counter()
    cats = {b.clause.category for b in plan.branches if b.clause.action is not ActionKind.DO_NOTHING}
    tablets = list(run.snapshot.tablets)
    persisted = run.persisted
    ranges = None
    original, has_source = source, source is not None
    try:
        if source is not None:
            local = _local_source(run, source)
            if local is not None:
                source, ranges = local  # source None: made from the collected rows if Spark needs it
            else:
                source = _cached_source(run, source)
                ranges = _source_pass(run, source)
            if source is not None:
                run.broadcast = _broadcastable(run, source)
            t0 = run.phase("source", t0)
            if m.source_rows == 0 and Category.NOT_MATCHED_BY_SOURCE not in cats and _on(run, SKIP_NOOP_CONF):
                return m  # empty source: nothing can match or be inserted
        digest = _source_digest(run)
        if digest is not None and _ran_before(run, *digest):
            run.phase("same_source", t0)  # the table is what this statement made of these rows
            return m
        pair_ranges = None
        if ranges is not None:
            ranges = _comparable_ranges(run, ranges)
            if plan.prune_keys:
                tablets = _prune(run, tablets, ranges)
                run.ranges = ranges
            else:  # a BY SOURCE clause may act on any tablet: _unacted decides
                pair_ranges, ranges = ranges, None
        if not has_source or plan.pairs_nothing or pair_ranges is not None:
            tablets = _unacted(run, tablets, has_source, pair_ranges)
        m.tablets_scanned = len(tablets)
        # the statement classified here in Arrow, where it can be (``_arrow_rows``): no Spark job
        rows = _arrow_rows(run, tablets) if has_source else None
        m.merged_on_driver = rows is not None
        if rows is not None and _on(run, SKIP_NOOP_CONF) and _changes_nothing(run, rows):
            run.phase("unchanged", t0)  # a re-merge of the same rows: no commit
            return m
        # a source that reads the target depends on all of it: the conservative conflict rules
        self_read = original is not None and _reads_target(run, original)
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
            nonlocal source
            if has_source and source is None:
                source = _spark_source(run, original)
            return source

        if rows is not None:  # one task, here: it sorts its inserts by cluster_by itself
            fragments = _delete_stream(run, rows, handle, len(tablets), inserts=plan.has_inserts)
            t0 = run.phase("merge_on_driver", t0)
        else:
            fragments = _spark_streams(run, spark_source(), tablets, handle)
            t0 = time.perf_counter()
        for f in fragments:
            if isinstance(f, TabletFragment):
                m.tablets_added += 1
                m.bytes_written += f.add.bytes
            elif isinstance(f, DVFragment) and f.deleted:
                m.dvs_written += 1
                m.bytes_written += f.dv.size
        m.version = run.table.finish(
            handle,
            fragments,
            parameters={
                "statement": plan.spec.operation,
                **dict(run.options.parameters),
                **({rerun.SOURCE_DIGEST: digest[0]} if digest is not None else {}),
            },
            metrics=m.to_commit(),
            may_match=None if self_read else (lambda adds: _appends_match(run, spark_source(), adds)),
        )
        run.phase("commit", t0)
        return m
    finally:
        for df in persisted:
            df.unpersist()
        for name in run.views:
            run.spark.catalog.dropTempView(name)


def _spark_streams(run: _Run, source: DataFrame | None, tablets: list[str], handle) -> list:
    """The statement's pairs classified by Spark, and the fragments of its streams' tasks."""
    plan, persisted, t0 = run.plan, run.persisted, time.perf_counter()
    together = not run.options.cluster_by
    if source is not None and plan.pairs_nothing and plan.join in ("left", "right", "full"):
        base = _unpaired(run, source, tablets)
    elif source is not None and together and _one_shuffle_fits(run, handle.target_tablet_rows):
        base = _one_shuffle(run, source, tablets)
    else:
        base = _base(run, source, tablets)
    if plan.has_inserts and not together:
        base = base.persist(StorageLevel.MEMORY_AND_DISK)  # two jobs read the one join
        persisted.append(base)
    fragments = []
    # the row ids of every target row the statement matched or acts on go home to their
    # tablet's task (its DV, and the rows the result depends on); the insert stream rides
    # along, unless cluster_by wants it range-partitioned by its own columns
    fragments += _delete_stream(run, base, handle, len(tablets), inserts=together and plan.has_inserts)
    t0 = run.phase("streams" if together and plan.has_inserts else "delete_stream", t0)
    if plan.has_inserts and not together:
        fragments += _insert_stream(run, base, handle)
        t0 = run.phase("insert_stream", t0)
    return fragments


def _cached_source(run: _Run, source: DataFrame) -> DataFrame:
    """The source persisted as Spark reads it, with a row id that lets an anti join find the
    source rows without a pair (see _base)."""
    source = source.withColumn(SID, F.monotonically_increasing_id()).persist(StorageLevel.MEMORY_AND_DISK)
    run.persisted.append(source)
    return source


def _spark_source(run: _Run, original: DataFrame) -> DataFrame:
    """The source as a DataFrame where the driver collected it but Spark runs the statement:
    its rows as a local relation, or (Spark cannot take them back) the source read again."""
    frame = _local_frame(run)
    if frame is None:
        frame = _cached_source(run, original)
        _source_pass(run, frame)
    run.broadcast = _broadcastable(run, frame)
    return frame


# NaN is no float's min or max for Arrow, but Spark's largest value: floats take Spark's ranges
# (whether a range compares with its column's statistics: _comparable_ranges)
_ARROW_RANGE_TYPES = ("int", "uint", "string", "large_string", "date32", "decimal", "timestamp")


def _local_source(run: _Run, source: DataFrame) -> tuple[DataFrame | None, list[tuple[str, object, object]] | None] | None:
    """A source that Spark estimates below ``LOCAL_SOURCE_BYTES`` is collected to the driver
    once (Arrow) and used as a local relation: one job instead of a cached copy filled and
    aggregated (three jobs), its size exact, its row ids plain positions, its count and key
    ranges taken on the driver. None (the cached path) when it is big, of unknown size, or of
    a type Arrow cannot carry. The frame is None where the driver may merge the statement
    alone: ``_local_frame`` makes it if Spark needs it after all."""
    limit = broadcast_threshold(run.spark)
    size = size_bytes(source)
    if limit is None or limit < 0 or size is None:
        return None
    alone = _driver_may_merge(run)
    if size > min(limit, local_limit(run.spark)) and not (alone and size <= DRIVER_MERGE_SOURCE_BYTES):
        return None
    try:
        data = source.toArrow()  # the statement's own errors (the source query's) go up from here
    except (TypeError, NotImplementedError, pa.ArrowException):
        return None  # a type without an Arrow form: the cached path
    schema = StructType([*source.schema.fields, StructField(SID, LongType(), False)])
    run.local = (data.append_column(SID, pa.array(np.arange(data.num_rows, dtype=np.int64))), schema)
    frame = None if alone else _local_frame(run)
    keys = _range_keys(run)
    ranges: list[tuple[str, object, object]] | None = [] if keys else None
    for col, expr in keys:
        i = _source_column(run, data, expr)
        if i is None or not str(data.schema.field(i).type).startswith(_ARROW_RANGE_TYPES):
            frame = frame or _local_frame(run)  # an expression: Spark takes the ranges
            ranges = _source_ranges(run, frame) if frame is not None else None
            break
        lo_hi = pc.min_max(data.column(i))
        ranges.append((col, lo_hi["min"].as_py(), lo_hi["max"].as_py()))  # type: ignore[union-attr]
    if run.local is None:  # Spark cannot take these rows back as they are
        return None
    run.metrics.source_rows = data.num_rows
    run.keys = _key_values(run, data)
    return frame, ranges


def _source_digest(run: _Run) -> tuple[str, dict[str, str]] | None:
    """``rerun.digest`` of a local source, and its join keys' source columns, where the statement
    is idempotent by its shape (``rerun.idempotent``) and unchanged rows are skipped."""
    if run.local is None or not run.options.skip_unchanged or not _on(run, RERUN_CONF):
        return None
    data, schema = run.local
    fields = [f for f in schema.fields if f.name != SID]
    keys = rerun.idempotent(run.plan, {f.name: f.dataType.simpleString() for f in fields})
    if keys is None:
        return None
    digest = rerun.digest(run.plan, data.drop_columns([SID]), StructType(fields).json(), keys)
    return None if digest is None else (digest, keys)


def _ran_before(run: _Run, digest: str, keys: dict[str, str]) -> bool:
    """The table's latest commit is this statement's with the same rows (``digest``), made on the
    version before it, and the source's keys are unique and not NULL: running it again changes
    nothing (``engine.rerun``). Sets the unchanged count: the rows that run matched or inserted."""
    commit = run.table.commit_of(run.snapshot)
    if (
        commit is None
        or commit.read_version != run.snapshot.version - 1
        or dict(commit.parameters).get(rerun.SOURCE_DIGEST) != digest
        or run.local is None
        or not rerun.unique_keys(run.local[0], keys)
    ):
        return False
    if run.plan.actions(ActionKind.UPDATE):
        prior = commit.metrics_dict()
        run.metrics.rows_unchanged = int(sum(prior.get(k, 0.0) for k in ("rows_updated", "rows_unchanged", "rows_inserted")))
    run.metrics.same_source = True
    return True


def _local_frame(run: _Run) -> DataFrame | None:
    """The collected source (``run.local``) as a Spark local relation, made once; None (and
    ``run.local`` cleared) where Spark cannot take its rows back as they are."""
    if run.local_frame is None and run.local is not None:
        data, schema = run.local
        try:
            run.local_frame = local_relation(run.spark, data, schema)
        except Exception:  # noqa: BLE001 - the caller reads the source in Spark instead
            run.local = None
    return run.local_frame


def _driver_may_merge(run: _Run) -> bool:
    """The statement's shape lets the driver merge it alone (``_arrow_rows``) and the whole
    target is within ``DRIVER_SCAN_CONF``: worth collecting a bigger source for."""
    if not run.plan.plain:
        return False
    return sum(st.add.bytes for st in run.snapshot.tablets.values()) <= driver_scan_bytes(run.spark)


def _source_column(run: _Run, data: pa.Table, expr: str) -> int | None:
    """The index in ``data`` of the source column ``expr`` names (``s.col``), or None."""
    name = source_column(run.plan.spec, expr)
    if name is None:
        return None
    return {n.lower(): i for i, n in enumerate(data.column_names)}.get(name.lower())


def _key_values(run: _Run, data: pa.Table) -> dict[str, pa.Array] | None:
    """The local source's values of the ON condition's ``t.col = s.col`` conjuncts, by target
    column, where Arrow's equality is Spark's (integers, strings, dates): the target rows that
    can pair hold them (``_target``'s driver scan). None without such a conjunct."""
    types = dict(run.plan.column_types)
    out: dict[str, pa.Array] = {}
    for col, expr in run.plan.join_keys:
        i = _source_column(run, data, expr)
        if i is None:
            continue
        arrow, spark = data.schema.field(i).type, types.get(col, "").lower()
        values = pc.unique(data.column(i).combine_chunks().drop_null())
        if (
            (spark in _INTEGRAL and pa.types.is_integer(arrow))
            or (spark == "string" and (pa.types.is_string(arrow) or pa.types.is_large_string(arrow)))
            or (spark == "date" and pa.types.is_date32(arrow))
        ):
            out[col] = values
        elif (want := _key_type(arrow, spark)) is not None:
            try:
                out[col] = values.cast(want)  # safe: a value the target's type cannot hold exactly raises
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                continue
        else:
            continue
        run.key_sources[col] = data.column_names[i]
    return out or None


def _key_type(arrow: pa.DataType, spark: str) -> pa.DataType | None:
    """The target column's Arrow type where a source key of Arrow type ``arrow`` compares with
    it in Arrow as in Spark, once cast to it: timestamps of the same kind (instants compare in
    any zone; a wall time against an instant is Spark's cast in the session zone) and decimals
    (exact, whatever their scales)."""
    if pa.types.is_timestamp(arrow) and spark == ("timestamp" if arrow.tz else "timestamp_ntz"):
        return arrow_type(spark)
    if pa.types.is_decimal(arrow) and spark.startswith("decimal"):
        return arrow_type(spark)
    return None


def _source_ranges(run: _Run, source: DataFrame) -> list[tuple[str, object, object]]:
    return _key_ranges(run, source, _range_keys(run))[1]


def _source_pass(run: _Run, source: DataFrame) -> list[tuple[str, object, object]] | None:
    """Count the source (filling the persisted copy) and take min/max of its join keys."""
    keys = _range_keys(run)
    row, ranges = _key_ranges(run, source, keys, [F.count(F.lit(1)).alias("n")])
    run.metrics.source_rows = int(row["n"])
    return ranges if keys else None


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def _key_ranges(
    run: _Run, source: DataFrame, keys: Sequence[tuple[str, str]], first: Sequence[Column] = ()
) -> tuple[Row, list[tuple[str, object, object]]]:
    """One aggregate of the source: ``first``, then min/max of each key expression. PySpark
    gives a TIMESTAMP as a wall time in the Python process's zone: these are taken as instants
    (``unix_micros``), which the target's statistics compare with (``_comparable_ranges``)."""
    frame = source.alias(run.plan.spec.source_alias)

    def aggregate(instants: set[int]) -> DataFrame:
        aggs = list(first)
        for i, (_, expr) in enumerate(keys):
            lo, hi = F.min(F.expr(expr)), F.max(F.expr(expr))
            if i in instants:
                lo, hi = F.unix_micros(lo), F.unix_micros(hi)
            aggs += [lo.alias(f"lo{i}"), hi.alias(f"hi{i}")]
        return frame.agg(*aggs)

    df = aggregate(set())
    kinds = {f.name: f.dataType for f in df.schema.fields}
    instants = {i for i in range(len(keys)) if isinstance(kinds[f"lo{i}"], TimestampType)}
    row = (aggregate(instants) if instants else df).collect()[0]

    def value(i: int, v: object) -> object:
        return _EPOCH + datetime.timedelta(microseconds=v) if i in instants and isinstance(v, int) else v

    return row, [(col, value(i, row[f"lo{i}"]), value(i, row[f"hi{i}"])) for i, (col, _) in enumerate(keys)]


def _prune(run: _Run, tablets: list[str], ranges: list[tuple[str, object, object]]) -> list[str]:
    """Keep tablets whose key range can overlap the source's (no BY SOURCE clause here)."""
    keep = [tid for tid in tablets if not outside(run.snapshot.named_stats(tid), ranges)]
    run.metrics.tablets_pruned = len(tablets) - len(keep)
    return keep


_RELATION = re.compile(r"RelationV2\[[^\]]*\] (\S+)")
_NATIVE = re.compile(r"SubqueryAlias " + NATIVE_MARKER + r"(tablets_[0-9a-f]{12})\b")


def _reads_target(run: _Run, source: DataFrame) -> bool:
    """Whether the source may read the target table (dbt's ``where ts > (select max(ts) from
    {{ this }})``): its rows then depend on every row of the target. Told from the relations of
    the source's analyzed plan; a relation read by path, or a plan that cannot be had, counts."""
    from tablets.spark import catalog

    try:
        if is_connect_frame(source):
            explain = getattr(source, "_explain_string", None)  # Connect's DataFrame.explain, as text
            if not callable(explain):
                return True
            text = str(explain(extended=True))
        else:
            text = str(source._jdf.queryExecution().analyzed().toString())  # noqa: SLF001
        for provider in set(_NATIVE.findall(text)):  # a read the native-read rule replaced
            root = catalog.root_of_provider(run.spark, provider)
            if root is None or normalize(root) == normalize(run.table.root):
                return True
        for name in set(_RELATION.findall(text)):
            root = catalog.lookup(run.spark, name)
            if root is not None and normalize(root) == normalize(run.table.root):
                return True
            if root is None and (name == "tablets" or name.startswith(catalog.PROVIDER_PREFIX)):
                return True  # a tablet table read by path: maybe the target
    except Exception:  # noqa: BLE001 - cannot tell
        return True
    return False


def _appends_match(run: _Run, source: DataFrame | None, adds: list[AddTablet]) -> bool:
    """Whether the statement would have matched or acted on a row of ``adds`` (tablets that
    concurrent commits appended; asked at commit time): its own join and classification over
    just those tablets, deletion vectors ignored. A failure counts as a match: a conflict,
    never a wrong result."""
    snap = replace(run.snapshot, tablets={a.tablet_id: TabletState(a) for a in adds})
    probe = replace(run, snapshot=snap, metrics=MergeMetrics(operation=run.metrics.operation))
    try:
        rows = _base(probe, source, [a.tablet_id for a in adds]).filter(F.col(TID).isNotNull()).limit(1).collect()
    except Exception:  # noqa: BLE001 - cannot tell
        return True
    return bool(rows)


_INTEGRAL = ("tinyint", "smallint", "int", "bigint", "byte", "short", "integer", "long")


def _range_keys(run: _Run) -> tuple[tuple[str, str], ...]:
    """The join keys whose source min/max the statement takes, to skip tablets by: all where no
    BY SOURCE clause acts; with them, only where each has a condition (``_unacted``)."""
    if not _prunes(run):
        return ()
    if run.plan.prune_keys:
        return run.plan.prune_keys
    return run.plan.join_keys if all(b.condition for b in _by_source_acting(run.plan)) else ()


def _on(run: _Run, setting: str) -> bool:
    """A shortcut's on/off setting (``engine.route``), read from the session once a statement."""
    if setting not in run.switches:
        run.switches[setting] = conf_flag(run.spark, setting)
    return run.switches[setting]


def _prunes(run: _Run) -> bool:
    """Tablets (and row groups) may be skipped by their statistics: the model's ``prune_tablets``
    and the session's ``PRUNE_CONF``."""
    return run.options.prune and _on(run, PRUNE_CONF)


def _by_source_acting(plan: Plan) -> list[Branch]:
    return [b for b in plan.branches if b.clause.category is Category.NOT_MATCHED_BY_SOURCE and b.clause.action is not ActionKind.DO_NOTHING]


def _unacted(
    run: _Run, tablets: list[str], has_source: bool, pair_ranges: list[tuple[str, object, object]] | None = None
) -> list[str]:
    """Without the tablets whose rows no clause can act on, by the log's statistics: a tablet
    where some conjunct of each acting BY SOURCE clause's condition is never true
    (``tablets.sql.reads.condition``, ``storage.pruning``), as Delta skips files for a DELETE,
    and whose rows' pairs decide nothing: there is no source (UPDATE / DELETE ... WHERE), ON is
    false (microbatch, replace_where), no MATCHED or NOT MATCHED clause acts (a pair also keeps
    a source row from being inserted), or the tablet's keys lie outside the source's
    (``pair_ranges``: a sync that deletes a window, ``WHEN NOT MATCHED BY SOURCE AND t.day >=
    ... THEN DELETE``)."""
    plan = run.plan
    acting = _by_source_acting(plan)
    if not acting or not all(b.condition for b in acting) or not _prunes(run):
        return tablets
    # whether a source row has a pair decides MATCHED clauses and which rows NOT MATCHED inserts
    pairs = has_source and not plan.pairs_nothing and any(
        b.clause.category is not Category.NOT_MATCHED_BY_SOURCE and b.clause.action is not ActionKind.DO_NOTHING
        for b in plan.branches)
    if pairs and not pair_ranges:
        return tablets
    kinds, names = pruning.column_kinds(schema_to_arrow(run.snapshot.metadata.schema))
    preds = [typed(condition(b.condition or "", plan.spec.target_alias), kinds, names) for b in acting]
    if not all(preds):
        return tablets

    def skipped(add: AddTablet) -> bool:
        return (not pairs or outside(add, pair_ranges or ())) and all(pruning.prune(p, add, kinds) for p in preds)

    keep = [t for t in tablets if not skipped(run.snapshot.named_stats(t))]
    run.metrics.tablets_pruned += len(tablets) - len(keep)
    return keep


def _comparable_ranges(run: _Run, ranges: list[tuple[str, object, object]]) -> list[tuple[str, object, object]]:
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
        return t in _INTEGRAL
    if isinstance(value, float):  # not against integers: Spark compares them as doubles, inexactly
        return t in ("float", "double")
    if isinstance(value, decimal.Decimal):
        return t in _INTEGRAL or t.startswith("decimal")
    if isinstance(value, str):
        return t == "string"
    if isinstance(value, datetime.datetime):
        return t == ("timestamp" if value.tzinfo is not None else "timestamp_ntz")
    if isinstance(value, datetime.date):
        return t == "date"
    return False


def _selected(run: _Run, tablets: Sequence[str]) -> pa.Table | None:
    """The target rows of ``tablets`` that the local source's keys can pair with, selected on the
    driver (``frames.driver_rows``); None where the statement scans the target in Spark: no
    such keys, tablets above ``DRIVER_SCAN_CONF`` bytes, or too many rows selected."""
    if run.keys is None:
        return None
    at = tuple(tablets)
    if at not in run.selected:
        rows = None
        if sum(run.snapshot.tablets[t].add.bytes for t in tablets) <= driver_scan_bytes(run.spark):
            limit = max(DRIVER_SCAN_ROWS, 4 * run.metrics.source_rows)
            if not run.plan.by_source:
                rows = driver_rows(run.table, run.snapshot, run.plan.target_columns, tablets, run.keys, limit,
                                   skip_by_stats=_prunes(run))
            elif (
                run.plan.on_is_keys
                and _on(run, ARROW_EVAL_CONF)
                and (clauses := _clauses(run, Category.NOT_MATCHED_BY_SOURCE)) is not None
            ):
                columns = sorted({c for dc in clauses if dc.condition is not True for c in dc.condition.columns.get(_t_key(run), ())})

                def acted(rows: pa.Table) -> pa.Array:  # some BY SOURCE clause acts on the row
                    return pa.array(_first_clause({_t_key(run): rows}, rows.num_rows, clauses) >= 0)

                try:
                    rows = driver_rows(run.table, run.snapshot, run.plan.target_columns, tablets, run.keys, limit,
                                       acted, columns, DRIVER_BY_SOURCE_ROWS, skip_by_stats=_prunes(run))
                except EvalUnsupported:  # (an overflow, say): Spark evaluates the statement
                    rows = None
        run.selected[at] = rows
        if rows is not None:
            run.metrics.tablets_read_on_driver = len(tablets)
            run.on_driver = True
    return run.selected[at]


def _clauses(run: _Run, category: Category) -> DriverClauses | None:
    """``Plan.driver_clauses`` of ``category`` over the collected source's types, compiled once
    a statement."""
    if category not in run.clauses:
        source = {f.name: f.dataType.simpleString() for f in run.local[1].fields} if run.local is not None else None
        run.clauses[category] = run.plan.driver_clauses(category, source)
    return run.clauses[category]


def _t_key(run: _Run) -> str:
    return run.plan.spec.target_alias.lower()


def _first_clause(tables: dict[str, pa.Table], n: int, clauses: DriverClauses) -> np.ndarray:
    """Per row (``n`` rows of ``tables``, by alias): the position in ``clauses`` (one category's,
    in statement order) of the first clause whose condition holds, where it acts; else -1 (DO
    NOTHING first, or none holds). Raises ``EvalUnsupported`` where Spark must evaluate."""
    first = np.full(n, -1, dtype=np.int64)
    open_ = np.ones(n, dtype=bool)
    for i, dc in enumerate(clauses):
        cond = dc.condition
        holds = open_ if cond is True else open_ & cond(tables).to_numpy(zero_copy_only=False)
        if dc.branch.clause.action is not ActionKind.DO_NOTHING:
            first[holds] = i
        open_ &= ~holds
    return first


def _target(run: _Run, tablets: Sequence[str]) -> TabletScan:
    plan = run.plan
    # BY SOURCE needs every target row: the driver's selection is only its own merge's (_arrow_rows)
    rows = _selected(run, tablets) if not plan.by_source else None
    if rows is not None:
        return driver_scan(run.spark, run.table, run.snapshot, plan.target_columns, rows)
    # row ids always: every statement reports the target rows its result depends on
    scan = tablet_scan(run.spark, run.table, run.snapshot, list(plan.target_columns), tablet_ids=list(tablets), row_ids=True)
    frame = scan.frame
    adds = [run.snapshot.named_stats(t) for t in tablets] if run.ranges else []
    for col, lo, hi in run.ranges or ():
        # rows outside the source's key range cannot pair: Spark's Parquet reader skips their
        # row groups by their statistics (pruning inside the tablets the log could not rule
        # out). Only where that can skip a fair part of some tablet: the filter doubles the
        # scan's CPU (10M rows: 5.3 s against 2.1 s), which a source spread over the whole
        # key space (an upsert of random keys) would pay for nothing. The ranges are of their
        # column's kind (_comparable_ranges); F.lit writes integers, text and dates as that kind
        # (not floats: NaN; nor timestamps, whose wall times it would read in the session zone)
        if lo is None or hi is None or not (isinstance(lo, (int, str)) or type(lo) is datetime.date):
            continue
        shares = (outside_share(a, col, lo, hi) for a in adds)
        if any(sh is None or sh >= RANGE_FILTER_SHARE for sh in shares):
            frame = frame.filter(F.col(quote_ident(col)).between(_literal(lo), _literal(hi)))
    return replace(scan, frame=frame)


def _literal(value: object) -> Column:
    """``F.lit`` of a range bound; a date as SQL text, since PySpark's own conversion of a date
    of year 1 (``DATE'0001-01-01'``) fails in the JVM with a bare IllegalArgumentException."""
    if type(value) is datetime.date:
        return F.lit(value.isoformat()).cast("date")
    return F.lit(value)


# The statement's row pairs are one SQL query over temp views of the target scan, the source
# and the deletion vectors' words: Spark parses and analyzes it once. Built as DataFrame
# operations it was ~25 analyses of a growing plan plus a py4j call per expression, 0.3-0.5 s
# of driver time per statement whatever the data's size.


def _view(run: _Run, frame: DataFrame) -> str:
    """``frame`` as a temp view of this statement (dropped when it ends), by its quoted name."""
    name = f"__tablets_v{uuid.uuid4().hex}"
    frame.createOrReplaceTempView(name)
    run.views.append(name)
    return quote_ident(name)


def _t(run: _Run) -> str:
    return quote_ident(run.plan.spec.target_alias)


def _s(run: _Run) -> str:
    return quote_ident(run.plan.spec.source_alias)


def _target_item(run: _Run, scan: TabletScan, view: str, *, empty: bool = False) -> str:
    """The FROM item of the target's rows (its columns, file name and row index, a mark)."""
    cols = [quote_ident(c) for c in scan.columns] + list(scan.internal_columns) + [f"TRUE AS {T_MARK}"]
    return f"(SELECT {', '.join(cols)} FROM {view}{' WHERE FALSE' if empty else ''}) AS {_t(run)}"


def _source_item(run: _Run, view: str, *, empty: bool = False, anti: str | None = None) -> str:
    """The FROM item of the source's rows (with a mark); ``anti``: without the rows whose source
    row id is in that view."""
    rows = f"{view} LEFT ANTI JOIN {anti} USING ({SID})" if anti else view
    return f"(SELECT *, TRUE AS {S_MARK} FROM {rows}{' WHERE FALSE' if empty else ''}) AS {_s(run)}"


def _pair_columns(run: _Run, *, sid: bool) -> list[tuple[str, str]]:
    """(name, Spark type) of the pair rows: row id, [source row id,] new images, kind."""
    cols = [(TID, "string"), (ROW, "bigint")] + ([(SID, "bigint")] if sid else [])
    if any(b.image for b in run.plan.branches):
        cols += [(f"{IMAGE_PREFIX}{i}", t) for i, (_, t) in enumerate(run.plan.column_types)]
    return cols + [(KIND, "string")]


def _pairs_sql(run: _Run, from_item: str, where: str = "", *, sid: bool = False) -> str:
    """The classified rows of ``from_item`` (target rows as the target alias, source rows as the
    source alias) that some clause acts on, and the matched pairs that none acts on (kind
    K_MATCHED: the result depends on them too): row ids, [source row id,] new images and kind.

    Each column is its own CASE over the clauses' guards in statement order, so the first
    clause that holds decides: its image, and its kind (an UPDATE whose image equals the old
    row is K_UNCHANGED). A DO NOTHING clause takes its rows out of the later ones."""
    plan, t, s = run.plan, _t(run), _s(run)
    tid, row = TabletScan.row_id_sql(t)
    cols = [f"{tid} AS {TID}", f"{row} AS {ROW}"]
    if sid:
        cols.append(f"{s}.{SID} AS {SID}")
    types = dict(plan.column_types)
    names = [n for n, _ in plan.column_types]
    if any(b.image for b in plan.branches):
        for i, name in enumerate(names):
            whens = " ".join(f"WHEN {plan.guard(b)} THEN {dict(b.image)[name] if b.image else 'NULL'}" for b in plan.branches)
            cols.append(f"CAST(CASE {whens} END AS {types[name]}) AS {IMAGE_PREFIX}{i}")
    matched = f"CASE WHEN {S_MARK} IS NOT NULL AND {T_MARK} IS NOT NULL THEN '{K_MATCHED}' END" if plan.join is not None else "NULL"
    kinds = []
    for b in plan.branches:
        a = b.clause.action
        if a is ActionKind.UPDATE and run.options.skip_unchanged:
            same = " AND ".join(f"({v} <=> {t}.{quote_ident(n)})" for n, v in b.image)
            kind = f"CASE WHEN {same} THEN '{K_UNCHANGED}' ELSE '{K_UPDATE}' END"
        else:
            kind = {ActionKind.DELETE: f"'{K_DELETE}'", ActionKind.INSERT: f"'{K_INSERT}'", ActionKind.REFUSE: f"'{K_REFUSE}'",
                    ActionKind.UPDATE: f"'{K_UPDATE}'"}.get(a, matched)
        kinds.append(f"WHEN {plan.guard(b)} THEN {kind}")
    cols.append(f"CASE {' '.join(kinds)} ELSE {matched} END AS {KIND}" if kinds else f"{matched} AS {KIND}")
    # only inserts, new images of updates and refused pairs (their key, for the message) use an
    # image: the other rows go home without one (a no-op re-merge shuffled 10.7 MiB of them at 10M)
    written = f"{KIND} IN ('{K_INSERT}', '{K_UPDATE}', '{K_REFUSE}')"
    out = [c if not c.startswith(IMAGE_PREFIX) else f"CASE WHEN {written} THEN {c} END AS {c}" for c, _ in _pair_columns(run, sid=sid)]
    return (f"SELECT {', '.join(out)} FROM (SELECT {', '.join(cols)} FROM {from_item}{f' WHERE {where}' if where else ''}) "
            f"WHERE {KIND} IS NOT NULL")


_PAIR = "__tablets_pair"  # a pair of the driver's join (else a source row alone)


def _key_pairs(run: _Run, tablets: Sequence[str]) -> tuple[pa.Table, pa.Table] | None:
    """Where the driver selected the target rows (``_selected``) of a local source's statement:
    the pairs of target and source rows with equal keys, joined here (a NULL key pairs with
    nothing), as two tables of equal length, row i of one paired with row i of the other.
    Joined once per statement: the unchanged check and the pairs' relation share it."""
    at = tuple(tablets)
    if at not in run.pairs:
        run.pairs[at] = _join_keys(run, tablets)
    return run.pairs[at]


def _join_keys(run: _Run, tablets: Sequence[str]) -> tuple[pa.Table, pa.Table] | None:
    rows = _selected(run, tablets)
    if rows is None or run.local is None:
        return None
    if BY_VALUES in rows.column_names:
        # a row each of whose key columns holds some source value may still pair with nothing
        # (a composite key is a tuple): the join decides, and ``_unpaired_rows`` keeps the rest
        rows = rows.drop_columns([BY_VALUES])
    data = run.local[0]
    on_t, on_s = {}, {}
    for i, col in enumerate(run.keys or {}):
        tcol, scol = rows.column(col), data.column(run.key_sources[col])
        if pa.types.is_integer(tcol.type):
            tcol, scol = tcol.cast(pa.int64()), scol.cast(pa.int64())
        else:
            scol = scol.cast(tcol.type)
        on_t[f"k{i}"], on_s[f"k{i}"] = tcol, scol
    keys = list(on_s)
    on_t["i"] = pa.array(np.arange(rows.num_rows, dtype=np.int64))
    on_s["j"] = pa.array(np.arange(data.num_rows, dtype=np.int64))
    right = pa.table(on_s)
    for k in keys:
        right = right.filter(pc.is_valid(right.column(k)))
    pairs = pa.table(on_t).join(right, keys=keys, join_type="inner")
    return rows.take(pairs.column("i").combine_chunks()), data.take(pairs.column("j").combine_chunks())


# each kind's types, narrowest first: a value widens exactly to a later type of its kind
_WIDENING = (
    {"tinyint": 0, "byte": 0, "smallint": 1, "short": 1, "int": 2, "integer": 2, "bigint": 3, "long": 3},
    {"float": 0, "double": 1},
)


# integers every value of which a float type holds exactly (its 24- or 53-bit significand):
# ``SET v = 0`` into a DOUBLE
_EXACT_IN_FLOAT = {
    "float": {"tinyint", "byte", "smallint", "short"},
    "double": {"tinyint", "byte", "smallint", "short", "int", "integer"},
}


def _exact_cast(have: str, want: str) -> bool:
    """A value of Spark type ``have`` becomes one of ``want`` unchanged, in Arrow as in Spark:
    the same type, a wider integer or floating type, or an integer type a float type holds."""
    have, want = have.lower().replace(" ", ""), want.lower().replace(" ", "")
    if have == want:
        return arrow_type(have) is not None  # the driver's own merge copies only these
    if have in _EXACT_IN_FLOAT.get(want, ()):
        return True
    return any(have in kind and want in kind and kind[have] < kind[want] for kind in _WIDENING)


def _same_values(old: pa.Array, new: pa.Array) -> pa.Array:
    """Row by row, ``old <=> new`` as Spark says it (NULL equals NULL, NaN equals NaN)."""
    same = pc.fill_null(pc.equal(old, new), False)
    both_null = pc.and_(pc.is_null(old), pc.is_null(new))
    if pa.types.is_floating(old.type):
        both_null = pc.or_(both_null, pc.fill_null(pc.and_(pc.is_nan(old), pc.is_nan(new)), False))
    return pc.or_(same, both_null)


def _arrow_rows(run: _Run, tablets: Sequence[str]) -> pa.Table | None:
    """The statement's classified rows, as ``_pairs_sql`` gives them, computed here in Arrow from
    the driver's pairs (``_key_pairs``): where ON is exactly the key equalities the driver pairs
    on, the clauses that act on the rows at hand copy plain columns of their own types
    (``Branch.copies``: ``UPDATE SET *``, ``INSERT *``, ``SET v = s.v``, DELETE) under
    conditions Arrow evaluates as Spark does (``arrow_eval``; dbt's CDC ``WHEN MATCHED AND
    s.op = 'D' THEN DELETE``), and BY SOURCE clauses likewise (``Plan.driver_clauses``: the
    target rows without a pair that they act on were selected with the pairs). None
    otherwise: Spark evaluates the statement. The merge task then runs here
    (``_delete_stream``): the whole statement without a Spark job."""
    plan = run.plan
    if not (run.local is not None and plan.on_is_keys and len(run.key_sources) == len(plan.join_keys)):
        return None
    if not _on(run, ARROW_EVAL_CONF):
        return None
    pairs = _key_pairs(run, tablets)
    if pairs is None:
        return None
    t_rows, s_rows = (p.combine_chunks() for p in pairs)
    data, source_type = run.local
    types = {n: t.lower() for n, t in plan.column_types}
    arrow = schema_to_arrow(run.snapshot.metadata.schema)
    source_types = {f.name: f.dataType.simpleString().lower() for f in source_type.fields}
    names = [n for n, _ in plan.column_types]
    images = [f"{IMAGE_PREFIX}{i}" for i in range(len(names))]
    t_key, s_key = _t_key(run), plan.spec.source_alias.lower()

    def image(dc: DriverClause, t: pa.Table | None, src: pa.Table) -> list[pa.Array] | None:
        """The clause's new row image over its rows: copies, NULLs and expressions (values of
        the column's own type, or a wider one of its kind: Spark's cast would change no value)."""
        out = []
        for col, (side, name), value in zip(names, dc.branch.copies or (), dc.values, strict=True):
            want = arrow.field(col).type
            if side == "null":
                out.append(pa.nulls(src.num_rows, want))
                continue
            try:
                if value is not None:  # ("expr", ...)
                    if not _exact_cast(value.type, types[col]):
                        return None
                    out.append(value({t_key: t, s_key: src} if t is not None else {s_key: src}).cast(want))
                    continue
                have = (types.get(name) if side == "t" else source_types.get(name)) or ""
                rows = t if side == "t" else src
                if rows is None or name not in rows.column_names or not _exact_cast(have, types[col]):
                    return None
                out.append(rows.column(name).cast(want))
            except (pa.ArrowException, NotImplementedError, EvalUnsupported):
                return None
        return out

    def part(tid: pa.Array, row: pa.Array, values: list[pa.Array] | None, kind: pa.Array) -> pa.Table:
        n = len(kind)
        cols = values or [pa.nulls(n, arrow.field(c).type) for c in names]
        return pa.table([tid, row, *cols, kind], names=[TID, ROW, *images, KIND])

    def target_part(dc: DriverClause | None, t: pa.Table, src: pa.Table) -> pa.Table | None:
        """The rows of clause ``dc`` (None: no clause) over target rows ``t``, paired with ``src``."""
        n = t.num_rows
        tid, row = TabletScan.row_ids(t)
        action = dc.branch.clause.action if dc is not None else None
        values = image(dc, t, src) if dc is not None and action in (ActionKind.UPDATE, ActionKind.REFUSE) else None
        if action in (ActionKind.UPDATE, ActionKind.REFUSE) and values is None:
            return None
        if action is ActionKind.UPDATE and run.options.skip_unchanged:
            same = pa.array(np.ones(n, dtype=bool))
            for col, new in zip(names, values or (), strict=True):
                same = pc.and_(same, _same_values(t.column(col), new))
            kind = pc.if_else(same, pa.scalar(K_UNCHANGED), pa.scalar(K_UPDATE))
        else:
            code = {ActionKind.UPDATE: K_UPDATE, ActionKind.DELETE: K_DELETE, ActionKind.REFUSE: K_REFUSE}.get(action, K_MATCHED)
            kind = pa.array([code] * n, pa.string())
        return part(tid, row, values, kind)

    def classified(category: Category, tables: dict[str, pa.Table], t: pa.Table | None, src: pa.Table) -> list[pa.Table] | None:
        """Rows of ``category`` (``t`` paired with ``src``; ``t`` None for source rows alone),
        each by the first clause that holds; pairs no clause acts on as K_MATCHED (the result
        depends on them). None: Spark must decide."""
        n = src.num_rows if t is None else t.num_rows
        these = _clauses(run, category) if n else ()
        if these is None:
            return None
        try:
            first = _first_clause(tables, n, these)
        except EvalUnsupported:
            return None
        groups: list[tuple[DriverClause | None, np.ndarray]] = [(None, first < 0)] if category is Category.MATCHED else []
        groups += [(dc, first == i) for i, dc in enumerate(these) if dc.branch.clause.action is not ActionKind.DO_NOTHING]
        out = []
        for dc, where in groups:
            if not where.any():
                continue
            pick = pa.array(where)
            if t is None:  # the NOT MATCHED action: INSERT
                assert dc is not None
                values = image(dc, None, src.filter(pick))
                m = int(where.sum())
                p = None if values is None else part(pa.nulls(m, pa.string()), pa.nulls(m, pa.int64()), values, pa.array([K_INSERT] * m, pa.string()))
            else:
                p = target_part(dc, t.filter(pick), src.filter(pick))
            if p is None:
                return None
            out.append(p)
        return out

    parts: list[pa.Table] = []
    matched = classified(Category.MATCHED, {t_key: t_rows, s_key: s_rows}, t_rows, s_rows)
    if matched is None:
        return None
    parts += matched
    if plan.by_source:  # the rows without a pair that a BY SOURCE clause acts on (``_selected``)
        unpaired = _unpaired_rows(run, tablets, t_rows)
        by_source = classified(Category.NOT_MATCHED_BY_SOURCE, {t_key: unpaired}, unpaired, unpaired)
        if by_source is None:
            return None
        parts += by_source
    alone = data.filter(pc.invert(pc.is_in(data.column(SID), value_set=s_rows.column(SID))))
    inserts = classified(Category.NOT_MATCHED, {s_key: alone}, None, alone)
    if inserts is None:
        return None
    parts += inserts
    if not parts:
        return part(pa.array([], pa.string()), pa.array([], pa.int64()), None, pa.array([], pa.string()))
    return pa.concat_tables(parts)


def _unpaired_rows(run: _Run, tablets: Sequence[str], paired: pa.Table) -> pa.Table:
    """The selected target rows (``_selected``: those holding source values, and those a BY
    SOURCE clause acts on) that paired with no source row, by their row ids."""
    rows = _selected(run, tablets)
    assert rows is not None  # (_key_pairs selected them)
    rows = rows.drop_columns([BY_VALUES])
    if not paired.num_rows:
        return rows
    tid, row = TabletScan.row_ids(rows)
    ptid, prow = TabletScan.row_ids(paired)
    ids = pa.table({"t": tid, "r": row, "i": pa.array(np.arange(rows.num_rows, dtype=np.int64))})
    hit = ids.join(pa.table({"t": ptid, "r": prow}).group_by(["t", "r"]).aggregate([]), keys=["t", "r"], join_type="left semi")
    keep = np.ones(rows.num_rows, dtype=bool)
    keep[hit.column("i").to_numpy()] = False
    return rows.filter(pa.array(keep))


def _changes_nothing(run: _Run, rows: pa.Table) -> bool:
    """``_arrow_rows``' rows write nothing: every pair unchanged or acted on by no clause, and no
    target row acted on twice (that is an error the merge task raises). Sets the unchanged count."""
    kinds = rows.column(KIND)
    if not pc.all(pc.is_in(kinds, pa.array([K_UNCHANGED, K_MATCHED]))).as_py():  # (True when empty)
        return False
    acted = rows.filter(pc.equal(kinds, K_UNCHANGED))
    if acted.group_by([TID, ROW]).aggregate([([], "count_all")]).num_rows != acted.num_rows:
        return False
    run.metrics.rows_unchanged = acted.num_rows
    return True


def _paired(run: _Run, tablets: Sequence[str]) -> str | None:
    """``_key_pairs``, and every source row once alone, as ONE local relation (a temp view's
    quoted name) whose struct columns are named by the aliases, so the statement's ``t.col`` and
    ``s.col`` read their fields. Spark then only checks the whole ON condition and classifies:
    no broadcast, no join. Columns: the target alias (NULL for a row alone), the source alias,
    the marks, ``_PAIR``."""
    pairs = _key_pairs(run, tablets)
    if pairs is None or run.local is None:
        return None
    t_rows, s_rows = (p.combine_chunks() for p in pairs)
    data, source_type = run.local
    everyone = data.combine_chunks()

    def struct(table: pa.Table) -> pa.StructArray:
        return pa.StructArray.from_arrays([c.chunk(0) if c.num_chunks else pa.array([], c.type) for c in table.columns],
                                          fields=list(table.schema))

    t_type = struct(t_rows.slice(0, 0)).type
    n, m = t_rows.num_rows, everyone.num_rows
    flag = pa.bool_()
    frame = pa.table([
        pa.concat_arrays([struct(t_rows), pa.nulls(m, t_type)]),
        pa.concat_arrays([struct(s_rows), struct(everyone)]),
        pa.array([True] * n + [None] * m, flag),
        pa.array([True] * (n + m), flag),
        pa.array([True] * n + [False] * m, flag),
    ], names=[run.plan.spec.target_alias, run.plan.spec.source_alias, T_MARK, S_MARK, _PAIR])

    def nullable(struct: StructType) -> StructType:  # a NULL struct's fields are NULL too
        return StructType([StructField(f.name, f.dataType, True) for f in struct.fields])

    spark_type = StructType([
        StructField(run.plan.spec.target_alias, nullable(scan_struct(run.snapshot, run.plan.target_columns))),
        StructField(run.plan.spec.source_alias, nullable(source_type)),
        *(StructField(c, BooleanType()) for c in (T_MARK, S_MARK, _PAIR)),
    ])
    return _view(run, local_relation(run.spark, frame, spark_type))


def _base(run: _Run, source: DataFrame | None, tablets: Sequence[str]) -> DataFrame:
    """The classified row pairs that some clause acts on, and the matched pairs that none acts
    on (kind K_MATCHED: the result depends on them too): row ids, new images and kind."""
    plan, t = run.plan, _t(run)
    if source is not None and plan.join == "inner":  # the pairs alone: maybe joined on the driver
        paired = _paired(run, tablets)
        if paired is not None:
            return run.spark.sql(_pairs_sql(run, paired, f"{_PAIR} AND ({plan.on or 'TRUE'})"))
    scan = _target(run, tablets)
    target = _view(run, scan.frame)
    dv_join, live = scan.live_sql(lambda f: _view(run, f), t)
    if source is None:
        return run.spark.sql(_pairs_sql(run, _target_item(run, scan, target) + dv_join, live))
    on = plan.on or "TRUE"
    if not run.broadcast:
        # deleted target rows go before the join: a source row paired only with them is NOT MATCHED
        live_target = f"(SELECT {t}.* FROM {_target_item(run, scan, target)}{dv_join}{f' WHERE {live}' if live else ''}) AS {t}"
        src = _source_item(run, _view(run, source))
        return run.spark.sql(_pairs_sql(run, f"{src} {JOIN_NAMES[plan.join or 'inner']} JOIN {live_target} ON {on}"))
    # The source is small: stream the target once through a broadcast of it, and apply deletion
    # vectors and name row ids only on the pairs. The preserved side of an outer join cannot be
    # the broadcast one, so source rows without a pair (NOT MATCHED) are found by an anti join of
    # the source with the source row ids that did pair.
    src_view = _view(run, F.broadcast(source))
    by_source = plan.join in ("right", "full")
    joined = f"{_target_item(run, scan, target)} {'LEFT OUTER' if by_source else 'INNER'} JOIN {_source_item(run, src_view)} ON {on}{dv_join}"
    sid = plan.join in ("left", "full")
    pairs = run.spark.sql(_pairs_sql(run, joined, live, sid=sid))
    if not sid:
        return pairs
    pairs = pairs.persist(StorageLevel.MEMORY_AND_DISK)
    run.persisted.append(pairs)
    pairs.count()  # fill the cache now: both branches below read it, and would each compute it
    pairs_view = _view(run, pairs)
    paired = _view(run, F.broadcast(run.spark.sql(f"SELECT DISTINCT {SID} FROM {pairs_view} WHERE {SID} IS NOT NULL")))
    alone = f"{_source_item(run, src_view, anti=paired)} LEFT OUTER JOIN {_target_item(run, scan, target, empty=True)} ON FALSE"
    names = ", ".join(c for c, _ in _pair_columns(run, sid=False))
    return run.spark.sql(f"SELECT {names} FROM {pairs_view} UNION ALL {_pairs_sql(run, alone)}")


def _unpaired(run: _Run, source: DataFrame, tablets: Sequence[str]) -> DataFrame:
    """``_base``'s rows when ON is constantly false: the live target rows classified as NOT
    MATCHED BY SOURCE and the source rows as NOT MATCHED, each read once, with no join (Spark
    would plan ON FALSE as a nested-loop join of the two)."""
    plan = run.plan
    scan = _target(run, tablets)
    target, src = _view(run, scan.frame), _view(run, source)
    parts = []
    if plan.join in ("right", "full"):  # NOT MATCHED BY SOURCE clauses
        dv_join, live = scan.live_sql(lambda f: _view(run, f), _t(run))
        rows = f"{_target_item(run, scan, target)} LEFT OUTER JOIN {_source_item(run, src, empty=True)} ON FALSE{dv_join}"
        parts.append(_pairs_sql(run, rows, live))
    if plan.join in ("left", "full"):  # NOT MATCHED clauses
        parts.append(_pairs_sql(run, f"{_source_item(run, src)} LEFT OUTER JOIN {_target_item(run, scan, target, empty=True)} ON FALSE"))
    return run.spark.sql(" UNION ALL ".join(parts))


def _one_shuffle_fits(run: _Run, rows_per_tablet: int) -> bool:
    """The statement can run as one scan and one shuffle (``_one_shuffle``): a broadcast source
    whose unpaired rows are inserted, small enough that its inserts go to one task."""
    return (
        run.broadcast
        and run.plan.join in ("left", "full")
        and run.plan.has_inserts
        and run.metrics.source_rows < rows_per_tablet
    )


def _one_shuffle(run: _Run, source: DataFrame, tablets: Sequence[str]) -> DataFrame:
    """``_base``'s rows without its second pass: the target streams once through the broadcast
    source; each pair also sends a marker (its source row id) to the task that gets every
    source row as a candidate insert, which inserts the candidates without a marker
    (``tasks._resolve_candidates``). One job instead of a cached join, a count and an anti join."""
    plan = run.plan
    paired = _paired(run, tablets) if plan.join == "left" else None
    if paired is not None:  # pairs joined on the driver: Spark checks ON and classifies
        pairs = _pairs_sql(run, paired, f"{_PAIR} AND ({plan.on or 'TRUE'})", sid=True)
        alone = _pairs_sql(run, paired, f"NOT {_PAIR}", sid=True)
    else:
        scan = _target(run, tablets)
        target, src = _view(run, scan.frame), _view(run, F.broadcast(source))
        dv_join, live = scan.live_sql(lambda f: _view(run, f), _t(run))
        by_source = plan.join == "full"
        joined = f"{_target_item(run, scan, target)} {'LEFT OUTER' if by_source else 'INNER'} JOIN {_source_item(run, src)} ON {plan.on or 'TRUE'}{dv_join}"
        pairs = _pairs_sql(run, joined, live, sid=True)
        alone = _pairs_sql(run, f"{_source_item(run, src)} LEFT OUTER JOIN {_target_item(run, scan, target, empty=True)} ON FALSE", sid=True)
    cols = _pair_columns(run, sid=True)
    row = "named_struct(" + ", ".join(f"'{c}', {c}" for c, _ in cols) + ")"
    marker = "named_struct(" + ", ".join(
        f"'{c}', " + (SID if c == SID else f"'{K_PAIRED}'" if c == KIND else f"CAST(NULL AS {t})") for c, t in cols
    ) + ")"
    names = ", ".join(c for c, _ in cols if c != KIND)
    return run.spark.sql(
        f"SELECT inline(CASE WHEN {SID} IS NOT NULL THEN array({row}, {marker}) ELSE array({row}) END) "
        f"FROM ({pairs}) "
        f"UNION ALL SELECT {names}, CASE WHEN {KIND} = '{K_INSERT}' THEN '{K_CANDIDATE}' ELSE {KIND} END AS {KIND} "
        f"FROM ({alone})"
    )


def _delete_stream(run: _Run, base: DataFrame | pa.Table, handle, n_tablets: int, *, inserts: bool) -> list:
    """Row ids of deletes and old images hashed by tablet id (homecoming), so one task writes each
    tablet's DV. With ``inserts`` the insert stream shares the shuffle and the tasks: new images
    of updates ride along to their old tablet's task, inserted rows go to one task when they fit
    one tablet, else are spread by a hash. ``base`` in Arrow (``_arrow_rows``): one task, here."""
    names = [n for n, _ in run.plan.column_types]
    images = [f"{IMAGE_PREFIX}{i}" for i in range(len(names))]
    parts = max(1, int(run.spark.conf.get("spark.sql.shuffle.partitions") or 4))
    keys = _key_images(run.plan, images)
    task = merge_task(handle, names, images, inserts=inserts, keys=keys)
    if not inserts and not isinstance(base, pa.Table):
        base = base.filter(F.col(KIND).isin(K_DELETE, K_UPDATE, K_UNCHANGED, K_MATCHED)).select(TID, ROW, KIND)
    # few rows (the target's were selected on the driver): one task's work, done here, with no
    # shuffle and no Python worker (the first in a fresh process costs seconds)
    rows = _on_driver(base, task) if run.on_driver or isinstance(base, pa.Table) else None
    if rows is None and inserts:
        # inserted rows of one key meet in one task, which checks them for duplicates
        one_task = run.metrics.source_rows < handle.target_tablet_rows
        spread = F.lit("") if one_task else F.xxhash64(*(keys or images)).cast("string")
        # no more tasks than tablets and the inserts' one: each is a Python task's fixed cost
        stream = base.repartition(min(parts, n_tablets + 1) if one_task else parts, F.coalesce(F.col(TID), spread))
        rows = stream.mapInArrow(task, MERGE_RESULT).collect()
    elif rows is None:
        rows = base.repartition(max(1, min(n_tablets, parts)), TID).mapInArrow(task, MERGE_RESULT).collect()
    fragments = [fragment_from_json(r["fragment"]) for r in rows if r["fragment"]]
    _check_keys(run, handle, fragments, rows)
    dups = sum(r["duplicates"] for r in rows)
    if dups:
        discard(handle, fragments)
        raise CardinalityViolation(
            f"{run.plan.spec.operation} INTO {run.plan.spec.target}: {dups} target row(s) would be modified more than "
            "once (more than one source row matches them and an UPDATE or DELETE clause applies); nothing was written"
        )
    m = run.metrics
    m.rows_deleted = sum(r["n_delete"] for r in rows)
    m.rows_updated = sum(r["n_update"] for r in rows)
    m.rows_unchanged = sum(r["n_unchanged"] for r in rows)
    m.rows_inserted = sum(r["n_insert"] for r in rows)
    return fragments


def _on_driver(frame: DataFrame | pa.Table, task) -> list[dict] | None:
    """The result rows of ``task`` (a ``tasks`` sink) over all of ``frame``'s rows, run here as one
    task; None where ``frame`` has a type without an Arrow form (Spark's tasks cannot run it either,
    but say so in their own words)."""
    try:
        data = frame if isinstance(frame, pa.Table) else frame.toArrow()
    except (TypeError, NotImplementedError, pa.ArrowException):
        return None
    return [r for b in task(iter(data.to_batches())) for r in b.to_pylist()]


def _insert_stream(run: _Run, base: DataFrame, handle) -> list:
    names = [n for n, _ in run.plan.column_types]
    stream = base.filter(F.col(KIND).isin(K_INSERT, K_UPDATE, K_REFUSE)).select(
        *[F.col(f"{IMAGE_PREFIX}{i}").alias(n) for i, n in enumerate(names)], KIND
    )
    bound = run.metrics.source_rows + (run.snapshot.live_rows if run.plan.actions(ActionKind.UPDATE) else 0)
    keys = list(run.plan.key_columns) if run.plan.actions(ActionKind.INSERT) else []
    stream = _spread(run.spark, stream, bound, handle.target_tablet_rows, run.options.cluster_by, keys)
    rows = stream.mapInArrow(insert_task(handle, names, keys), INSERT_RESULT).collect()
    fragments = [fragment_from_json(r["fragment"]) for r in rows if r["fragment"]]
    _check_keys(run, handle, fragments, rows)
    run.metrics.rows_inserted = sum(r["n_insert"] for r in rows)
    return fragments


def _spread(spark: SparkSession, stream: DataFrame, bound: int, rows_per: int, cluster_by: Sequence[str], keys: Sequence[str]) -> DataFrame:
    """The insert stream's partitions: by range of ``cluster_by``; one task when it fits one
    tablet; else, with ``keys``, hashed by key so one task sees every row of a key."""
    if cluster_by and not keys:
        return stream.repartitionByRange(max(1, math.ceil(bound / rows_per)), *cluster_by)
    if bound < rows_per:  # (a no-op on one partition; no `.rdd` to ask: Spark Connect has none)
        return stream.coalesce(1)  # one well-sized tablet rather than one per shuffle partition
    if keys:
        parts = max(1, int(spark.conf.get("spark.sql.shuffle.partitions") or 4))
        stream = stream.repartition(parts, *keys)
        return stream.sortWithinPartitions(*cluster_by) if cluster_by else stream
    return stream


def _key_images(plan: Plan, images: Sequence[str]) -> list[str]:
    """The image columns of the key columns, when the statement inserts into a keyed table."""
    if not plan.key_columns or not plan.actions(ActionKind.INSERT):
        return []
    names = [n for n, _ in plan.column_types]
    return [images[names.index(k)] for k in plan.key_columns]


def _check_keys(run: _Run, handle, fragments: list, rows: list) -> None:
    """Fail (writing nothing) if inserted rows would repeat a key."""
    bad = sum(r["key_violations"] for r in rows)
    if not bad:
        return
    discard(handle, fragments)
    example = next((r["key_example"] for r in rows if r["key_example"]), None)
    spec = run.plan.spec
    raise KeyViolation(
        f"{spec.operation} INTO {spec.target}: {bad} inserted row(s) would repeat a key of ({', '.join(run.plan.key_columns)})"
        + (f", e.g. {example}" if example else "")
        + "; nothing was written"
    )


def append(
    spark: SparkSession,
    table: TabletTable,
    frame: DataFrame,
    options: MergeOptions = MergeOptions(),
    *,
    operation: str = "APPEND",
    overwrite: bool = False,
    by_name: bool = True,
    name: str | None = None,
    metadata: Metadata | None = None,
) -> MergeMetrics:
    """Write ``frame`` as new tablets in one commit: a blind append (rebases over concurrent
    commits), or an overwrite that also removes every tablet of the version it read; with
    ``metadata`` (``storage.table.replacement``: ``CREATE OR REPLACE``) an overwrite that gives the
    table that schema, keys and properties in the same commit.

    ``by_name``: match columns by name (missing ones are NULL); else by position, as SQL
    ``INSERT INTO t SELECT ...`` does. On a table with key columns the rows must not repeat a
    key among themselves or (appending) of the table's live rows: ``KeyViolation``, and then
    the append is a MERGE that refuses every matched pair."""
    t0 = time.perf_counter()
    snap = table.snapshot()
    if metadata is not None:
        assert overwrite, "new metadata replaces the table's rows"
        snap = replace(snap, metadata=metadata)  # the rows are written in the new schema
    names = [n for n, _, _ in snap.metadata.schema]
    types = {n: t for n, t, _ in snap.metadata.schema}
    if not by_name:
        if len(frame.columns) > len(names):
            raise MergeSpecError(
                f"{operation} {table.root}: the query gives {len(frame.columns)} columns, the table has {len(names)}",
                help="Select one column per table column, or name the columns to insert.",
            )
        frame = frame.toDF(*names[: len(frame.columns)])
    have = {c.lower(): c for c in frame.columns}
    extra = [c for c in frame.columns if c.lower() not in {n.lower() for n in names}]
    if extra:
        raise MergeSpecError(
            f"{operation} {table.root}: columns {extra} are not columns of the table ({', '.join(names)})",
            help="Drop them from the query, or add them to the table first (on_schema_change / ALTER TABLE ADD COLUMNS).",
        )
    cols = [
        (F.col(quote_ident(have[n.lower()])) if n.lower() in have else F.lit(None)).cast(types[n]).alias(n) for n in names
    ]
    keys = list(snap.metadata.key_columns)
    if keys and not overwrite and snap.live_rows:
        on = " AND ".join(f"t.`{k}` = s.`{k}`" for k in keys)
        clauses = (Clause(Category.MATCHED, ActionKind.REFUSE), Clause(Category.NOT_MATCHED, ActionKind.INSERT, star=True))
        spec = MergeSpec(name or table.root, "t", Source(query="<rows>"), "s", on, clauses, operation=operation)
        return execute(spark, table, spec, frame.select(*cols), options, snapshot=snap)
    stream = frame.select(*cols, F.lit(K_INSERT).alias(KIND))
    size = size_bytes(stream)
    small = size is not None and size < SMALL_BYTES
    # rows a local source could hold are written on the driver: no Python worker to start (the
    # first in a fresh process costs seconds: dbt's CTAS of a small model)
    here = size is not None and size <= local_limit(spark)
    if keys:  # rows of one key meet in one task, which checks them
        parts = max(1, int(spark.conf.get("spark.sql.shuffle.partitions") or 4))
        stream = stream.coalesce(1) if small else stream.repartition(parts, *keys)
    elif small:
        stream = stream.coalesce(1)  # one tablet, not one per input partition
    handle = begin(
        snap,
        table.root,
        operation,
        io=table.io,
        delete_from=(),
        read_tablets=snap.tablets.keys() if overwrite else (),
        reads_appends=overwrite or bool(keys),  # a concurrent append could repeat our keys
        target_tablet_rows=options.target_tablet_rows,
        sort_by=options.cluster_by,
    )
    m = MergeMetrics(operation=operation)
    task = insert_task(handle, names, keys)
    try:
        rows = _on_driver(stream, task) if here else None
        if rows is None:
            rows = stream.mapInArrow(task, INSERT_RESULT).collect()
    except AnalysisException as e:
        raise MergeSpecError(f"{operation} {name or table.root}: {_first_line(e)}", help="Check the query and its column types.") from e
    except PySparkException as e:
        raise _failed(f"{operation} {name or table.root}", e) from e
    frags = [fragment_from_json(r["fragment"]) for r in rows if r["fragment"]]
    bad = sum(r["key_violations"] for r in rows)
    if bad:
        discard(handle, frags)
        example = next((r["key_example"] for r in rows if r["key_example"]), None)
        raise KeyViolation(
            f"{operation} {name or table.root}: {bad} row(s) repeat a key of ({', '.join(keys)})"
            + (f", e.g. {example}" if example else "") + "; nothing was written"
        )
    m.rows_inserted = sum(r["n_insert"] for r in rows)
    m.tablets_added = len(frags)
    m.bytes_written = sum(f.add.bytes for f in frags if isinstance(f, TabletFragment))
    removes: list[Action] = [RemoveTablet(t) for t in snap.tablets] if overwrite else []
    if metadata is not None:
        removes.insert(0, metadata)
    if overwrite:
        m.rows_deleted = snap.live_rows
    m.timings_ms["write"] = round((time.perf_counter() - t0) * 1000, 1)
    m.version = table.finish(handle, frags, extra_actions=removes, parameters=dict(options.parameters), metrics=m.to_commit())
    return m
