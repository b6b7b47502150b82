"""Spark's plan of a statement's row pairs: one SQL query over temp views of the target scan, the
source and the deletion vectors' words, whose rows are the classified pairs (row ids, new images,
kind) that the write streams take.

- ``classified_pairs``: a small source is broadcast into one streaming scan of the target, else
  joined with it; the pairs the driver joined (``driver_pairs_view``: one local relation that
  Spark only checks against the whole ON condition and classifies) where it could;
- ``one_shuffle_pairs``: when the statement inserts, each pair also sends a marker to the task
  that gets every source row as a candidate insert, so unpaired rows need no second pass;
- ``unjoined_pairs``: ON FALSE (microbatch, replace_where) reads target and source once each,
  with no join.

Spark parses and analyzes the query once. Built as DataFrame operations it was ~25 analyses of a
growing plan plus a py4j call per expression, 0.3-0.5 s of driver time per statement whatever the
data's size."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace

import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BooleanType,
    StructField,
    StructType,
)

from tablets.engine.alike import arrow_equal
from tablets.engine.driver_plan import complete_rows, key_pairs
from tablets.engine.key_filter import key_filtered
from tablets.engine.names import (
    IMAGE_PREFIX,
    K_CANDIDATE,
    K_COMPARE,
    K_DELETE,
    K_INSERT,
    K_PAIRED,
    K_REFUSE,
    K_REPLACE,
    K_UNCHANGED,
    K_UPDATE,
    KIND,
    OUTSIDE,
    ROW,
    S_MARK,
    SID,
    T_MARK,
    TID,
)
from tablets.engine.plan import (
    JOIN_NAMES,
    Branch,
)
from tablets.engine.route import (
    RANGE_FILTER_SHARE,
)
from tablets.engine.run import Run
from tablets.engine.streams import inserts_in_one_task
from tablets.engine.tasks import K_MATCHED
from tablets.spark.frames import (
    TabletScan,
    driver_scan,
    local_relation,
    scan_struct,
    tablet_scan,
)
from tablets.spec import ActionKind
from tablets.sqltext import quote_ident
from tablets.storage.constraints import checks, not_null
from tablets.storage.pruning import outside_share
from tablets.storage.types import GREGORIAN_REFORM


def target_scan(run: Run, tablets: Sequence[str]) -> TabletScan:
    plan = run.plan
    # BY SOURCE (and UPDATE / DELETE) needs every target row the condition holds for: the driver's
    # selection of those is only its own merge's (classify_on_driver)
    rows = complete_rows(run, tablets) if not plan.by_source and plan.spec.source is not None else None
    if rows is not None:
        return driver_scan(run.spark, run.table, run.snapshot, run.scan_columns, rows)
    # row ids always: every statement reports the target rows its result depends on
    scan = tablet_scan(run.spark, run.table, run.snapshot, run.scan_columns, tablet_ids=list(tablets), row_ids=True)
    frame = scan.frame
    adds = [run.snapshot.named_stats(t) for t in tablets] if run.intake.ranges else []
    for col, lo, hi in run.intake.ranges or ():
        # rows outside the source's key range cannot pair: Spark's Parquet reader skips their
        # row groups by their statistics (pruning inside the tablets the log could not rule
        # out). Only where that can skip a fair part of some tablet: the filter doubles the
        # scan's CPU (10M rows: 5.3 s against 2.1 s), which a source spread over the whole
        # key space (an upsert of random keys) would pay for nothing. The ranges are of their
        # column's kind (comparable_ranges); F.lit writes integers, text and dates as that kind
        # (not floats: NaN; nor timestamps, whose wall times it would read in the session zone).
        # Not dates before the Gregorian reform either: Spark's Parquet pushdown of such a bound
        # misses rows of files it did not write (DATE'1582-10-10' matches none; soak seed 1000096)
        if lo is None or hi is None or not (isinstance(lo, (int, str)) or type(lo) is datetime.date):
            continue
        if type(lo) is datetime.date and lo < GREGORIAN_REFORM:
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


def compared_in_tasks(run: Run) -> tuple[str, ...]:
    """The columns only an UPDATE's unchanged check reads (``Plan.compare_only``) that Spark's scan
    may leave out, for the merge tasks to compare (``alike``) for the pairs alike in the rest:
    late materialisation, the scan reading the key and the columns the statement computes with.
    Those of a type whose ``<=>`` Arrow computes (``alike.arrow_equal``), and only where some
    column is still read."""
    types = dict(run.plan.column_types)
    deferred = tuple(c for c in run.plan.compare_only if arrow_equal(types[c]))
    return deferred if len(deferred) < len(run.plan.target_columns) else ()


def kept_in_tasks(run: Run) -> tuple[str, ...]:
    """The columns every UPDATE keeps as they are and nothing else reads (``Plan.keep_only``)
    that Spark's scan may leave out, for the merge tasks to read for the updated rows alone
    (``tasks.Deferred.fill``): late materialisation, the join reading the key and what the
    statement computes with. Not on a table with constraints, whose check runs over the images
    in Spark; only where some column is still read."""
    meta = run.snapshot.metadata
    if not run.plan.keep_only or checks(meta) or not_null(meta):
        return ()
    types = dict(run.plan.column_types)  # (the types the tasks already read back to compare)
    kept = tuple(c for c in run.plan.keep_only if arrow_equal(types[c]))
    return kept if len(kept) + len(run.deferred) < len(run.plan.target_columns) else ()


def _image_value(run: Run, branch: Branch, name: str) -> str:
    """Branch's new value of column ``name`` in Spark's pairs: NULL for an UPDATE's column that
    the merge task fills from the old row (``Run.kept``)."""
    if not branch.image or (name in run.kept and branch.clause.action is ActionKind.UPDATE):
        return "NULL"
    return dict(branch.image)[name]


def same_sql(new: str, old: str, spark_type: str) -> str:
    """``new <=> old`` for the unchanged check. Spark's ``<=>`` refuses a map (Spark orders no
    map): a map is compared by its entries sorted, so maps of the same entries are alike in any
    order; a map inside a struct, an array or a map's value makes the row count as changed."""
    t = spark_type.lower().replace(" ", "")
    if "map<" not in t:
        return f"({new} <=> {old})"
    if t.startswith("map<") and "map<" not in t[4:]:
        return f"(array_sort(map_entries({new})) <=> array_sort(map_entries({old})))"
    return "FALSE"


def temp_view(run: Run, frame: DataFrame) -> str:
    """``frame`` as a temp view of this statement (dropped when it ends), by its quoted name."""
    name = f"__tablets_v{uuid.uuid4().hex}"
    frame.createOrReplaceTempView(name)
    run.temps.views.append(name)
    return quote_ident(name)


def target_alias(run: Run) -> str:
    return quote_ident(run.plan.spec.target_alias)


def source_alias(run: Run) -> str:
    return quote_ident(run.plan.spec.source_alias)


def _target_rows(run: Run, scan: TabletScan, view: str, *, empty: bool = False) -> str:
    """The FROM item of the target's rows (its columns, file name and row index, a mark)."""
    cols = [quote_ident(c) for c in scan.columns] + list(scan.internal_columns) + [f"TRUE AS {T_MARK}"]
    return f"(SELECT {', '.join(cols)} FROM {view}{' WHERE FALSE' if empty else ''}) AS {target_alias(run)}"


def _source_rows(run: Run, view: str, *, empty: bool = False, anti: str | None = None) -> str:
    """The FROM item of the source's rows (with a mark); ``anti``: without the rows whose source
    row id is in that view."""
    rows = f"{view} LEFT ANTI JOIN {anti} USING ({SID})" if anti else view
    return f"(SELECT *, TRUE AS {S_MARK} FROM {rows}{' WHERE FALSE' if empty else ''}) AS {source_alias(run)}"


def _pair_columns(run: Run, *, sid: bool) -> list[tuple[str, str]]:
    """(name, Spark type) of the pair rows: row id, [source row id,] new images, kind."""
    cols = [(TID, "string"), (ROW, "bigint")] + ([(SID, "bigint")] if sid else [])
    if any(b.image for b in run.plan.branches):
        cols += [(f"{IMAGE_PREFIX}{i}", t) for i, (_, t) in enumerate(run.plan.column_types)]
    if any(b.clause.outside for b in run.plan.branches):
        cols.append((OUTSIDE, "boolean"))
    return cols + [(KIND, "string")]


def _pairs_sql(run: Run, from_item: str, where: str = "", *, sid: bool = False) -> str:
    """The classified rows of ``from_item`` (target rows as the target alias, source rows as the
    source alias) that some clause acts on, and the matched pairs that none acts on (kind
    K_MATCHED: the result depends on them too): row ids, [source row id,] new images and kind.

    Each column is its own CASE over the clauses' guards in statement order, so the first
    clause that holds decides: its image, and its kind (an UPDATE whose image equals the old
    row is K_UNCHANGED; K_COMPARE where it equals it in the columns the scan read, and the merge
    task compares the rest: ``compared_in_tasks``). A DO NOTHING clause takes its rows out of the
    later ones."""
    plan, t, s = run.plan, target_alias(run), source_alias(run)
    tid, row = TabletScan.row_id_sql(t)
    cols = [f"{tid} AS {TID}", f"{row} AS {ROW}"]
    if sid:
        cols.append(f"{s}.{SID} AS {SID}")
    types = dict(plan.column_types)
    names = [n for n, _ in plan.column_types]
    if any(b.image for b in plan.branches):
        for i, name in enumerate(names):
            whens = " ".join(f"WHEN {plan.guard(b)} THEN {_image_value(run, b, name)}" for b in plan.branches)
            cols.append(f"CAST(CASE {whens} END AS {types[name]}) AS {IMAGE_PREFIX}{i}")
    matched = (
        f"CASE WHEN {S_MARK} IS NOT NULL AND {T_MARK} IS NOT NULL THEN '{K_MATCHED}' END"
        if plan.join is not None
        else "NULL"
    )
    kinds = []
    for b in plan.branches:
        a = b.clause.action
        if a is ActionKind.UPDATE and run.options.skip_unchanged:
            # the columns Spark left out are compared by the row's merge task (K_COMPARE)
            # (a column the image keeps is alike: not compared)
            copies = b.copies or tuple(("expr", "") for _ in b.image)
            same = " AND ".join(
                same_sql(v, f"{t}.{quote_ident(n)}", types[n])
                for (n, v), copy in zip(b.image, copies, strict=True)
                if n not in run.deferred and copy != ("t", n)
            )
            alike = K_COMPARE if run.deferred else K_UNCHANGED
            kind = f"CASE WHEN {same or 'TRUE'} THEN '{alike}' ELSE '{K_UPDATE}' END"
        else:
            kind = {
                ActionKind.DELETE: f"'{K_DELETE}'",
                ActionKind.INSERT: f"'{K_INSERT}'",
                ActionKind.REFUSE: f"'{K_REFUSE}'",
                ActionKind.REPLACE: f"'{K_REPLACE}'",
                ActionKind.UPDATE: f"'{K_UPDATE}'",
            }.get(a, matched)
        kinds.append(f"WHEN {plan.guard(b)} THEN {kind}")
    if any(b.clause.outside for b in plan.branches):
        outside = " ".join(f"WHEN {plan.guard(b)} THEN {str(b.clause.outside).upper()}" for b in plan.branches)
        cols.append(f"CASE {outside} ELSE FALSE END AS {OUTSIDE}")
    cols.append(f"CASE {' '.join(kinds)} ELSE {matched} END AS {KIND}" if kinds else f"{matched} AS {KIND}")
    # only inserts, new images of updates and refused pairs (their key, for the message) use an
    # image: the other rows go home without one (a no-op re-merge shuffled 10.7 MiB of them at 10M)
    written = f"{KIND} IN ('{K_INSERT}', '{K_UPDATE}', '{K_REFUSE}', '{K_REPLACE}', '{K_COMPARE}')"
    out = [
        c if not c.startswith(IMAGE_PREFIX) else f"CASE WHEN {written} THEN {c} END AS {c}"
        for c, _ in _pair_columns(run, sid=sid)
    ]
    return (
        f"SELECT {', '.join(out)} FROM (SELECT {', '.join(cols)} FROM {from_item}{f' WHERE {where}' if where else ''}) "
        f"WHERE {KIND} IS NOT NULL"
    )


_PAIR = "__tablets_pair"  # a pair of the driver's join (else a source row alone)


def driver_pairs_view(run: Run, tablets: Sequence[str]) -> str | None:
    """``key_pairs``, and every source row once alone, as ONE local relation (a temp view's
    quoted name) whose struct columns are named by the aliases, so the statement's ``t.col`` and
    ``s.col`` read their fields. Spark then only checks the whole ON condition and classifies:
    no broadcast, no join. Columns: the target alias (NULL for a row alone), the source alias,
    the marks, ``_PAIR``."""
    pairs = key_pairs(run, tablets) if complete_rows(run, tablets) is not None else None
    if pairs is None or run.intake.local is None:
        return None
    t_rows, s_rows = (p.combine_chunks() for p in pairs)
    data, source_type = run.intake.local
    everyone = data.combine_chunks()

    def struct(table: pa.Table) -> pa.StructArray:  # fields nullable: a row alone's target struct is NULL
        return pa.StructArray.from_arrays(
            [c.chunk(0) if c.num_chunks else pa.array([], c.type) for c in table.columns],
            fields=[f.with_nullable(True) for f in table.schema],
        )

    t_type = struct(t_rows.slice(0, 0)).type
    n, m = t_rows.num_rows, everyone.num_rows
    flag = pa.bool_()
    frame = pa.table(
        [
            pa.concat_arrays([struct(t_rows), pa.nulls(m, t_type)]),
            pa.concat_arrays([struct(s_rows), struct(everyone)]),
            pa.array([True] * n + [None] * m, flag),
            pa.array([True] * (n + m), flag),
            pa.array([True] * n + [False] * m, flag),
        ],
        names=[run.plan.spec.target_alias, run.plan.spec.source_alias, T_MARK, S_MARK, _PAIR],
    )

    def nullable(struct: StructType) -> StructType:  # a NULL struct's fields are NULL too
        return StructType([StructField(f.name, f.dataType, True) for f in struct.fields])

    spark_type = StructType(
        [
            StructField(run.plan.spec.target_alias, nullable(scan_struct(run.snapshot, run.scan_columns))),
            StructField(run.plan.spec.source_alias, nullable(source_type)),
            *(StructField(c, BooleanType()) for c in (T_MARK, S_MARK, _PAIR)),
        ]
    )
    return temp_view(run, local_relation(run.spark, frame, spark_type))


@dataclass(frozen=True)
class Pairs:
    """Spark's classified pairs (``classified_pairs``), and whether its target scan kept only the
    rows a bloom filter of the source's keys may hold (``key_filter``)."""

    frame: DataFrame
    key_filtered: bool = False


def classified_pairs(run: Run, source: DataFrame | None, tablets: Sequence[str]) -> Pairs:
    """The classified row pairs that some clause acts on, and the matched pairs that none acts
    on (kind K_MATCHED: the result depends on them too): row ids, new images and kind."""
    plan = run.plan
    if source is not None and plan.join == "inner":  # the pairs alone: maybe joined on the driver
        paired = driver_pairs_view(run, tablets)
        if paired is not None:
            return Pairs(run.spark.sql(_pairs_sql(run, paired, f"{_PAIR} AND ({plan.on or 'TRUE'})")))
    scan = target_scan(run, tablets)
    # a shuffle join: rows that cannot pair stay out of it
    filtered = (
        key_filtered(run, scan.frame, source, tablets) if source is not None and not run.intake.broadcast else None
    )
    if filtered is not None:
        scan = replace(scan, frame=filtered)
    return Pairs(_joined_pairs(run, source, scan), key_filtered=filtered is not None)


def _joined_pairs(run: Run, source: DataFrame | None, scan: TabletScan) -> DataFrame:
    """``classified_pairs``' rows, of the target rows ``scan`` reads and ``source`` joined in Spark."""
    plan, t = run.plan, target_alias(run)
    target = temp_view(run, scan.frame)
    dv_join, live = scan.live_sql(lambda f: temp_view(run, f), t)
    if source is None:
        return run.spark.sql(_pairs_sql(run, _target_rows(run, scan, target) + dv_join, live))
    on = plan.on or "TRUE"
    if not run.intake.broadcast:
        # deleted target rows go before the join: a source row paired only with them is NOT MATCHED
        live_target = (
            f"(SELECT {t}.* FROM {_target_rows(run, scan, target)}{dv_join}{f' WHERE {live}' if live else ''}) AS {t}"
        )
        src = _source_rows(run, temp_view(run, source))
        return run.spark.sql(_pairs_sql(run, f"{src} {JOIN_NAMES[plan.join or 'inner']} JOIN {live_target} ON {on}"))
    # The source is small: stream the target once through a broadcast of it, and apply deletion
    # vectors and name row ids only on the pairs. The preserved side of an outer join cannot be
    # the broadcast one, so source rows without a pair (NOT MATCHED) are found by an anti join of
    # the source with the source row ids that did pair.
    src_view = temp_view(run, F.broadcast(source))
    by_source = plan.join in ("right", "full")
    joined = f"{_target_rows(run, scan, target)} {'LEFT OUTER' if by_source else 'INNER'} JOIN {_source_rows(run, src_view)} ON {on}{dv_join}"
    sid = plan.join in ("left", "full")
    pairs = run.spark.sql(_pairs_sql(run, joined, live, sid=sid))
    if not sid:
        return pairs
    pairs = pairs.persist(StorageLevel.MEMORY_AND_DISK)
    run.temps.persisted.append(pairs)
    pairs.count()  # fill the cache now: both branches below read it, and would each compute it
    pairs_view = temp_view(run, pairs)
    paired = temp_view(
        run, F.broadcast(run.spark.sql(f"SELECT DISTINCT {SID} FROM {pairs_view} WHERE {SID} IS NOT NULL"))
    )
    alone = f"{_source_rows(run, src_view, anti=paired)} LEFT OUTER JOIN {_target_rows(run, scan, target, empty=True)} ON FALSE"
    names = ", ".join(c for c, _ in _pair_columns(run, sid=False))
    return run.spark.sql(f"SELECT {names} FROM {pairs_view} UNION ALL {_pairs_sql(run, alone)}")


def unjoined_pairs(run: Run, source: DataFrame, tablets: Sequence[str]) -> DataFrame:
    """``classified_pairs``'s rows when ON is constantly false: the live target rows classified as NOT
    MATCHED BY SOURCE and the source rows as NOT MATCHED, each read once, with no join (Spark
    would plan ON FALSE as a nested-loop join of the two)."""
    plan = run.plan
    scan = target_scan(run, tablets)
    target, src = temp_view(run, scan.frame), temp_view(run, source)
    parts = []
    if plan.join in ("right", "full"):  # NOT MATCHED BY SOURCE clauses
        dv_join, live = scan.live_sql(lambda f: temp_view(run, f), target_alias(run))
        rows = (
            f"{_target_rows(run, scan, target)} LEFT OUTER JOIN {_source_rows(run, src, empty=True)} ON FALSE{dv_join}"
        )
        parts.append(_pairs_sql(run, rows, live))
    if plan.join in ("left", "full"):  # NOT MATCHED clauses
        parts.append(
            _pairs_sql(
                run, f"{_source_rows(run, src)} LEFT OUTER JOIN {_target_rows(run, scan, target, empty=True)} ON FALSE"
            )
        )
    return run.spark.sql(" UNION ALL ".join(parts))


def one_shuffle_fits(run: Run, rows_per_tablet: int) -> bool:
    """The statement can run as one scan and one shuffle (``one_shuffle_pairs``): a broadcast source
    whose unpaired rows are inserted, small enough that its inserts go to one task
    (``streams.inserts_in_one_task``: there every candidate meets its markers)."""
    return (
        run.intake.broadcast
        and run.plan.join in ("left", "full")
        and run.plan.has_inserts
        and inserts_in_one_task(run, rows_per_tablet)
    )


def one_shuffle_pairs(run: Run, source: DataFrame, tablets: Sequence[str]) -> DataFrame:
    """``classified_pairs``'s rows without its second pass: the target streams once through the broadcast
    source; each pair also sends a marker (its source row id) to the task that gets every
    source row as a candidate insert, which inserts the candidates without a marker
    (``tasks._resolve_candidates``). One job instead of a cached join, a count and an anti join."""
    plan = run.plan
    paired = driver_pairs_view(run, tablets) if plan.join == "left" else None
    if paired is not None:  # pairs joined on the driver: Spark checks ON and classifies
        pairs = _pairs_sql(run, paired, f"{_PAIR} AND ({plan.on or 'TRUE'})", sid=True)
        alone = _pairs_sql(run, paired, f"NOT {_PAIR}", sid=True)
    else:
        scan = target_scan(run, tablets)
        target, src = temp_view(run, scan.frame), temp_view(run, F.broadcast(source))
        dv_join, live = scan.live_sql(lambda f: temp_view(run, f), target_alias(run))
        by_source = plan.join == "full"
        joined = f"{_target_rows(run, scan, target)} {'LEFT OUTER' if by_source else 'INNER'} JOIN {_source_rows(run, src)} ON {plan.on or 'TRUE'}{dv_join}"
        pairs = _pairs_sql(run, joined, live, sid=True)
        alone = _pairs_sql(
            run,
            f"{_source_rows(run, src)} LEFT OUTER JOIN {_target_rows(run, scan, target, empty=True)} ON FALSE",
            sid=True,
        )
    cols = _pair_columns(run, sid=True)
    row = "named_struct(" + ", ".join(f"'{c}', {c}" for c, _ in cols) + ")"
    marker = (
        "named_struct("
        + ", ".join(
            f"'{c}', " + (SID if c == SID else f"'{K_PAIRED}'" if c == KIND else f"CAST(NULL AS {t})") for c, t in cols
        )
        + ")"
    )
    names = ", ".join(c for c, _ in cols if c != KIND)
    return run.spark.sql(
        f"SELECT inline(CASE WHEN {SID} IS NOT NULL THEN array({row}, {marker}) ELSE array({row}) END) "
        f"FROM ({pairs}) "
        f"UNION ALL SELECT {names}, CASE WHEN {KIND} = '{K_INSERT}' THEN '{K_CANDIDATE}' ELSE {KIND} END AS {KIND} "
        f"FROM ({alone})"
    )
