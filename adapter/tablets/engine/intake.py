"""The source, read exactly once (even if non-deterministic), and what the statement learns of it: a
frozen ``run.SourceIntake``, returned to the executor (which hands it to the later steps as
``Run.intake``); a later step that learns more (``source_frame``) returns a new one.

Below ``LOCAL_SOURCE_BYTES`` (or ``LOCAL_SOURCE_BYTES_NO_RULE``, where the session lets it, or
``LOCAL_SOURCE_CONF``: ``local_limit``) by Spark's estimate it is collected as Arrow and becomes
a local relation (count, row ids and key ranges taken on the driver: ``collect_local_source``);
else it is persisted, and counted with the min/max of its join keys: below the broadcast
threshold collected once and counted in Arrow (``counted_source``), else by one aggregate
(``persisted_source``, ``count_and_ranges``). The key ranges prune tablets by the log's
statistics and row groups inside the rest by Parquet's (``prune``, ``pairs_sql.target_scan``).

Each gives the re-run digest (``source_digest``, ``ran_before``; in Arrow of the rows collected,
else taken by the same aggregate): a statement run again with the same rows on the version it
made changes nothing (``engine.rerun``)."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Row
from pyspark.sql import functions as F
from pyspark.sql.types import (
    IntegralType,
    LongType,
    StructField,
    StructType,
    TimestampType,
)

from tablets.engine import rerun
from tablets.engine.eval_types import arrow_type
from tablets.engine.names import (
    SID,
)
from tablets.engine.plan import (
    source_column,
)
from tablets.engine.prune import INTEGRAL, range_keys
from tablets.engine.route import (
    DRIVER_MERGE_SOURCE_BYTES,
    KEY_DELETE_CONF,
    KEY_SET_BYTES,
    RERUN_CONF,
    driver_scan_bytes,
    local_limit,
)
from tablets.engine.run import KeyBuckets, KeyRanges, Run, SourceIntake, setting_on
from tablets.spark.backend import backend
from tablets.spark.datasource import type_text
from tablets.spark.file_source import local_parquet_rows
from tablets.spark.frames import (
    local_relation,
)
from tablets.spark.sizes import broadcast_threshold, row_width, size_bytes
from tablets.spec import ActionKind
from tablets.sqltext import quote_ident
from tablets.storage.tablet import OUT_OF_RANGE, python_value


def broadcastable(run: Run, source: DataFrame, rows: int) -> bool:
    """The (persisted, counted: ``rows``) source is below ``spark.sql.autoBroadcastJoinThreshold``:
    by Spark's estimate, else (no estimate) by its row count times its row width."""
    limit = broadcast_threshold(run.spark)
    if limit is None or limit < 0:
        return False
    size = size_bytes(source)
    if size is None:
        size = rows * row_width(source)
    return size <= limit


def narrowed(run: Run, source: DataFrame) -> DataFrame:
    """The source's columns the statement reads (``Plan.source_reads``), chosen before it is
    read: one nothing reads is neither persisted, collected nor digested (a key-only DELETE
    holds its keys alone). At least one column: rows without columns count as none in Arrow."""
    reads, names = run.plan.source_reads, source.columns
    if reads is None or len({n.lower() for n in names}) != len(names):
        return source  # (a name twice: Spark's select could not tell them apart)
    wanted = {c.lower() for c in reads}
    keep = [n for n in names if n.lower() in wanted] or names[:1]
    return source if len(keep) == len(names) else source.select(*(F.col(quote_ident(n)) for n in keep))


def persisted_source(run: Run, source: DataFrame) -> DataFrame:
    """The source persisted as Spark reads it, with a row id that lets an anti join find the
    source rows without a pair (see classified_pairs)."""
    source = source.withColumn(SID, F.monotonically_increasing_id()).persist(StorageLevel.MEMORY_AND_DISK)
    run.temps.persisted.append(source)
    return source


def source_frame(run: Run, original: DataFrame) -> tuple[DataFrame, SourceIntake]:
    """The source as a DataFrame where the driver collected it but Spark runs the statement:
    its rows as a local relation, or (Spark cannot take them back) the source read again; and
    ``run.intake`` with what that taught (the frame, whether it broadcasts, a new count)."""
    intake = local_frame(run, run.intake)
    frame = intake.frame
    if frame is None:
        frame = persisted_source(run, original)
        intake = count_and_ranges(replace(run, intake=intake), frame)[1]
    return frame, replace(intake, broadcast=broadcastable(run, frame, intake.rows))


# NaN is no float's min or max for Arrow, but Spark's largest value: floats take Spark's ranges
# (whether a range compares with its column's statistics: comparable_ranges)
_ARROW_RANGE_TYPES = ("int", "uint", "string", "large_string", "date32", "decimal", "timestamp")


def collect_local_source(run: Run, source: DataFrame) -> tuple[KeyRanges | None, SourceIntake] | None:
    """A source that Spark estimates below ``LOCAL_SOURCE_BYTES`` is collected to the driver
    once (Arrow) and used as a local relation: one job instead of a cached copy filled and
    aggregated (three jobs), its size exact, its row ids plain positions, its count and key
    ranges taken on the driver. None (the cached path) when it is big, of unknown size, or of
    a type Arrow cannot carry. Else its key ranges and what was learned of it (``SourceIntake``),
    whose ``frame`` is None where the driver may classify the statement (the target is small
    enough to read here): ``source_frame`` makes it if Spark needs it after all."""
    limit = broadcast_threshold(run.spark)
    size = size_bytes(source)
    if size is None:
        return None
    on_driver = _target_on_driver(run)
    small = limit is not None and limit >= 0 and size <= min(limit, local_limit(run.spark))
    # the driver may merge the statement alone (``classify_on_driver``), or Spark's tasks delete by
    # the source's key set (``engine.key_delete``): worth collecting a bigger source for
    alone = run.plan.plain and on_driver and limit is not None and limit >= 0
    most = DRIVER_MERGE_SOURCE_BYTES if alone else 0
    keyed = by_key_set(run)
    if local_limit(run.spark) > 0 and keyed:
        most = max(most, KEY_SET_BYTES)
    if not small and not (most and size <= most):
        return None
    try:
        # a source that is only Parquet files here: read by Arrow, no Spark job
        data = local_parquet_rows(source)
        by_arrow = data is not None
        if data is None:
            data = source.toArrow()  # the statement's own errors (the source query's) go up from here
    except (TypeError, NotImplementedError, pa.ArrowException):
        return None  # a type without an Arrow form: the cached path
    schema = StructType([*source.schema.fields, StructField(SID, LongType(), False)])
    intake = SourceIntake(local=(data.append_column(SID, pa.array(np.arange(data.num_rows, dtype=np.int64))), schema))
    if not on_driver and not keyed:  # else Spark may not need it
        intake = local_frame(run, intake)
    taken, ranges = _arrow_ranges(run, data)
    if not taken:  # an expression: Spark takes the ranges
        intake = local_frame(run, intake)
        ranges = _source_ranges(run, intake.frame) if intake.frame is not None else None
    if intake.local is None:  # Spark cannot take these rows back as they are
        return None
    keys, key_sources = key_values(run, data)
    # (by_arrow: not where Spark reads it again after all, ``source_frame``)
    return ranges, replace(intake, rows=data.num_rows, by_arrow=by_arrow, keys=keys, key_sources=key_sources)


def by_key_set(run: Run) -> bool:
    """The statement only deletes by one key (``Plan.deletes_by_key``), and may do so by the
    source's key set in Spark's tasks (``engine.key_delete``): its source is collected here."""
    return run.plan.deletes_by_key is not None and setting_on(run, KEY_DELETE_CONF) and backend(run.spark).rows_near()


def _arrow_ranges(run: Run, data: pa.Table) -> tuple[bool, list[tuple[str, object, object]] | None]:
    """(taken, ranges): min/max of the join keys' source columns in ``data``, None without join
    keys; not taken where a key is an expression or of a type whose min/max Arrow does not give
    as Spark does (Spark must take them)."""
    keys = range_keys(run)
    ranges: list[tuple[str, object, object]] | None = [] if keys else None
    for col, expr in keys:
        i = _source_column(run, data, expr)
        if i is None or not str(data.schema.field(i).type).startswith(_ARROW_RANGE_TYPES):
            return False, None
        lo_hi = pc.min_max(data.column(i))
        lo, hi = python_value(lo_hi["min"]), python_value(lo_hi["max"])
        if lo is not OUT_OF_RANGE and hi is not OUT_OF_RANGE:  # else no range of this column
            ranges.append((col, lo, hi))  # type: ignore[union-attr]
    return True, ranges


def counted_source(run: Run, source: DataFrame) -> tuple[KeyRanges | None, SourceIntake]:
    """Count the persisted ``source`` (filling it) and take its join keys' ranges, and what was
    learned of it (``SourceIntake``): where Spark
    may broadcast it (by its estimate) its rows are collected here once, one job where the
    aggregate takes three, and counted, ranged and digested in Arrow as a collected source is
    (``SourceIntake.collected``, until the re-run check; key ranges Arrow cannot take, of an
    expression, by Spark, over the rows now persisted); else by Spark's aggregate
    (``count_and_ranges``). Not over Spark Connect, where this process may be far from the server
    that holds the rows."""
    limit, size = broadcast_threshold(run.spark), size_bytes(source)
    if (
        limit is None
        or limit < 0
        or size is None
        or size > min(limit, DRIVER_MERGE_SOURCE_BYTES)
        or not backend(run.spark).rows_near()
    ):
        return count_and_ranges(run, source)
    try:
        data = source.toArrow()  # the statement's own errors (the source query's) go up from here
    except (TypeError, NotImplementedError, pa.ArrowException):
        return count_and_ranges(run, source)  # a type without an Arrow form
    taken, ranges = _arrow_ranges(run, data)
    if not taken:
        ranges = _source_ranges(run, source)
    return ranges, replace(run.intake, rows=data.num_rows, collected=(data, source.schema))


def source_digest(run: Run) -> tuple[str, dict[str, str]] | None:
    """The re-run digest of the source (``rerun.digest`` of a collected one, else the one Spark
    took as it counted it: ``count_and_ranges``), and its join keys' source columns, where the
    statement is idempotent by its shape (``rerun.idempotent``) and unchanged rows are skipped."""
    held = run.intake.local or run.intake.collected
    if held is None:
        return run.intake.digest
    keys = _rerun_keys(run, held[1])
    if keys is None:
        return None
    data, schema = held
    digest = rerun.digest(run.plan, data.drop_columns([SID]), _source_type(schema), keys)
    return None if digest is None else (digest, keys)


def _source_type(schema: StructType) -> str:
    """The source's Spark type as a digest takes it (JSON), without the statement's row id."""
    return StructType([f for f in schema.fields if f.name != SID]).json()


def _rerun_keys(run: Run, schema: StructType) -> dict[str, str] | None:
    """``rerun.idempotent``'s keys for a source of ``schema``, where the shortcut may be taken."""
    if not run.options.skip_unchanged or not setting_on(run, RERUN_CONF):
        return None
    return rerun.idempotent(run.plan, {f.name: type_text(f.dataType) for f in schema.fields if f.name != SID})


def ran_before(run: Run, digest: str, keys: dict[str, str], source: DataFrame | None) -> int | None:
    """The table's latest commit is this statement's with the same rows (``digest``), made on the
    version before it, and the source's keys are unique and not NULL: running it again changes
    nothing (``engine.rerun``). Then the unchanged count (the rows that run matched or inserted,
    where the statement updates; else 0), else None.
    ``source``: the persisted source, where Spark digested it (its keys are counted there)."""
    commit = run.table.commit_of(run.snapshot)
    if (
        commit is None
        or commit.read_version != run.snapshot.version - 1
        or dict(commit.parameters).get(rerun.SOURCE_DIGEST) != digest
    ):
        return None
    held = run.intake.local or run.intake.collected
    if held is not None:
        if not rerun.unique_keys(held[0], keys):
            return None
    elif source is None or not run.intake.keys_not_null or not _unique_in_spark(run, source, keys):
        return None
    if not run.plan.actions(ActionKind.UPDATE):
        return 0
    prior = commit.metrics_dict()
    return int(sum(prior.get(k, 0.0) for k in ("rows_updated", "rows_unchanged", "rows_inserted")))


def _unique_in_spark(run: Run, source: DataFrame, keys: dict[str, str]) -> bool:
    """No two rows of the (persisted, counted) source share a key (its keys are not NULL)."""
    names = sorted(set(keys.values()))
    distinct = source.agg(F.count_distinct(*(F.col(quote_ident(n)) for n in names))).collect()[0][0]
    return int(distinct) == run.intake.rows


def local_frame(run: Run, intake: SourceIntake) -> SourceIntake:
    """``intake`` with its collected source (``local``) as a Spark local relation (``frame``),
    made once; without ``local`` where Spark cannot take its rows back as they are."""
    if intake.frame is None and intake.local is not None:
        data, schema = intake.local
        try:
            return replace(intake, frame=local_relation(run.spark, data, schema))
        except Exception:  # noqa: BLE001 - the caller reads the source in Spark instead
            return replace(intake, local=None)
    return intake


def _target_on_driver(run: Run) -> bool:
    """The whole target is within ``DRIVER_SCAN_CONF``: the driver may read and classify it."""
    return sum(st.add.bytes for st in run.snapshot.tablets.values()) <= driver_scan_bytes(run.spark)


def _source_column(run: Run, data: pa.Table, expr: str) -> int | None:
    """The index in ``data`` of the source column ``expr`` names (``s.col``), or None."""
    name = source_column(run.plan.spec, expr)
    if name is None:
        return None
    return {n.lower(): i for i, n in enumerate(data.column_names)}.get(name.lower())


def key_values(run: Run, data: pa.Table) -> tuple[dict[str, pa.Array] | None, dict[str, str]]:
    """The local source's values of the ON condition's ``t.col = s.col`` conjuncts, by target
    column, where Arrow's equality is Spark's (integers, strings, dates, booleans): the target rows that
    can pair hold them (``target_scan``'s driver scan). None without such a conjunct. And the
    source column of each, by target column."""
    types = dict(run.plan.column_types)
    out: dict[str, pa.Array] = {}
    sources: dict[str, str] = {}
    for col, expr in run.plan.join_keys:
        i = _source_column(run, data, expr)
        if i is None:
            continue
        arrow, spark = data.schema.field(i).type, types.get(col, "").lower()
        column = data.column(i).combine_chunks()
        values = _unique(column.drop_null() if column.null_count else column)
        if (
            (spark in INTEGRAL and pa.types.is_integer(arrow))
            or (spark == "string" and (pa.types.is_string(arrow) or pa.types.is_large_string(arrow)))
            or (spark == "date" and pa.types.is_date32(arrow))
            or (spark == "boolean" and pa.types.is_boolean(arrow))
        ):
            out[col] = values
        elif (want := _key_type(arrow, spark)) is not None:
            try:
                out[col] = values.cast(want)  # safe: a value the target's type cannot hold exactly raises
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                continue
        else:
            continue
        sources[col] = data.column_names[i]
    return out or None, sources


def _unique(values: pa.Array) -> pa.Array:
    """``values`` once each: integers by sorting (Arrow's hash table of 10M keys took ~1 GB)."""
    if pa.types.is_integer(values.type):
        ordered = np.sort(values.to_numpy(zero_copy_only=False))  # (the one copy)
        if len(ordered) > 1:
            first = np.empty(len(ordered), np.bool_)
            first[0] = True
            np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
            if not first.all():
                ordered = ordered[first]
        return pa.array(ordered, values.type)
    return pc.unique(values)


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


def _source_ranges(run: Run, source: DataFrame) -> list[tuple[str, object, object]]:
    return _key_ranges(run, source, range_keys(run))[1]


def count_and_ranges(run: Run, source: DataFrame) -> tuple[KeyRanges | None, SourceIntake]:
    """Count the source (filling the persisted copy) and take min/max of its join keys, and of
    its first integer key the buckets it falls in (``KeyBuckets``), in one aggregate: the ranges,
    and ``run.intake`` with the count (and the re-run digest, the buckets) taken."""
    keys = range_keys(run)
    span = _bucket_span(run, keys) if run.plan.prune_keys else None
    first = [F.count(F.lit(1)).alias("n")]
    counted, digested = source, _digested(run, source)
    if digested is not None:  # the re-run digest, taken in the same pass (``rerun.row_hashes``)
        counted, rerun_keys = digested
        names = sorted(set(rerun_keys.values()))
        first += [F.expr(a).alias(f"h{i}") for i, a in enumerate(rerun.hash_parts(ROW_HASHES))]
        first += [F.count(F.col(quote_ident(n))).alias(f"k{i}") for i, n in enumerate(names)]
    row, ranges = _key_ranges(run, counted, keys, first, span)
    count = int(row["n"])
    intake = replace(run.intake, rows=count)
    if digested is not None:
        sums = [row[f"h{i}"] for i in range(rerun.HASH_PARTS)]
        intake = replace(
            intake,
            digest=(rerun.spark_digest(run.plan, _source_type(source.schema), count, sums), rerun_keys),
            keys_not_null=all(row[f"k{i}"] == count for i in range(len(names))),
        )
    if span is not None and row["buckets"] is not None:
        i, lo, hi, width = span
        held = tuple(sorted(int(b) for b in row["buckets"]))
        intake = replace(intake, buckets=KeyBuckets(keys[i][0], lo, hi, width, KEY_BUCKETS, held))
    return (ranges if keys else None), intake


ROW_HASHES = ("__tablets_h1", "__tablets_h2")


def _digested(run: Run, source: DataFrame) -> tuple[DataFrame, dict[str, str]] | None:
    """The source with each row's two hashes (``ROW_HASHES``: ``rerun.row_hashes``) and its join
    keys' source columns, where the statement may be recognised when run again (``rerun``); None
    elsewhere, or where a column's type has no such hash."""
    keys = _rerun_keys(run, source.schema)
    if keys is None:
        return None
    fields = [(quote_ident(f.name), type_text(f.dataType)) for f in source.schema.fields if f.name != SID]
    hashes = rerun.row_hashes(fields)
    if hashes is None:
        return None
    return source.withColumns({n: F.expr(h) for n, h in zip(ROW_HASHES, hashes, strict=True)}), keys


KEY_BUCKETS = 4096  # buckets of a big source's integer key: the set a task holds stays small


def _bucket_span(run: Run, keys: Sequence[tuple[str, str]]) -> tuple[int, int, int, int] | None:
    """(index in ``keys``, lo, hi, bucket width) for the first integer key column whose span
    over the target's tablets their statistics give, else None."""
    types = dict(run.plan.column_types)
    for i, (col, _) in enumerate(keys):
        if types.get(col, "").lower() not in INTEGRAL:
            continue
        bounds = [run.snapshot.named_stats(t).column_stats(col) for t in run.snapshot.tablets]
        mins = [b.min for b in bounds if b is not None and type(b.min) is int]
        maxs = [b.max for b in bounds if b is not None and type(b.max) is int]
        if mins and maxs:
            lo, hi = min(mins), max(maxs)
            return i, lo, hi, max(1, -(-(hi - lo + 1) // KEY_BUCKETS))
    return None


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def _key_ranges(
    run: Run,
    source: DataFrame,
    keys: Sequence[tuple[str, str]],
    first: Sequence[Column] = (),
    span: tuple[int, int, int, int] | None = None,
) -> tuple[Row, list[tuple[str, object, object]]]:
    """One aggregate of the source: ``first``, then min/max of each key expression, and with
    ``span`` (``_bucket_span``) the set of buckets its key falls in, as ``buckets`` (None where
    that key's source values are no integers). PySpark gives a TIMESTAMP as a wall time in the
    Python process's zone: these are taken as instants (``unix_micros``), which the target's
    statistics compare with (``comparable_ranges``)."""
    frame = source.alias(run.plan.spec.source_alias)

    def aggregate(instants: set[int], buckets: bool) -> DataFrame:
        aggs = list(first)
        for i, (_, expr) in enumerate(keys):
            lo, hi = F.min(F.expr(expr)), F.max(F.expr(expr))
            if i in instants:
                lo, hi = F.unix_micros(lo), F.unix_micros(hi)
            aggs += [lo.alias(f"lo{i}"), hi.alias(f"hi{i}")]
        if buckets and span is not None:
            i, lo_, hi_, width = span
            e = f"({keys[i][1]})"
            # exact in DECIMAL(38, 0) (a BIGINT difference can overflow); the quotient may be
            # rounded to a neighbouring bucket, which prune_by_key_ranges allows for
            bucket = (
                f"CASE WHEN {e} < {lo_} THEN -1 WHEN {e} > {hi_} THEN {KEY_BUCKETS} "
                f"ELSE CAST(FLOOR((CAST({e} AS DECIMAL(38, 0)) - {lo_}) / {width}) AS INT) END"
            )
            aggs.append(F.collect_set(F.expr(bucket)).alias("buckets"))
        elif span is not None:
            aggs.append(F.lit(None).alias("buckets"))
        return frame.agg(*aggs)

    df = aggregate(set(), False)
    kinds = {f.name: f.dataType for f in df.schema.fields}
    instants = {i for i in range(len(keys)) if isinstance(kinds[f"lo{i}"], TimestampType)}
    integral = span is not None and isinstance(kinds[f"lo{span[0]}"], IntegralType)
    row = (aggregate(instants, integral) if instants or integral else df).collect()[0]

    def value(i: int, v: object) -> object:
        return _EPOCH + datetime.timedelta(microseconds=v) if i in instants and isinstance(v, int) else v

    return row, [(col, value(i, row[f"lo{i}"]), value(i, row[f"hi{i}"])) for i, (col, _) in enumerate(keys)]
