"""The driver plan: small statements classified in Arrow on the driver, with no Spark job.

With a local source, an ON condition that equates target columns with source columns of types
Arrow compares as Spark does, no BY SOURCE clause, and target tablets (after pruning) of at most
``DRIVER_SCAN_CONF`` bytes, the driver reads only the target rows holding the source's keys (row
groups skipped by their statistics, deletion vectors applied: ``select_target_rows``) and joins
them with the source on those keys (``key_pairs``). Where the rest of ON (dbt's
``incremental_predicates``, say) is one Arrow computes as Spark does (``driver_on_rest``: the pairs
it rejects are no pairs) and the clauses that act on the rows have conditions and values too
(``arrow_eval``; copies of plain columns: ``UPDATE SET *``, ``INSERT *``, ``SET v = s.v``, DELETE:
``classify_on_driver``), the driver classifies the pairs too and runs the merge task itself: no
Spark job after the source's, and a re-merge that changes nothing ends without a commit
(``changes_nothing``). Else the pairs go to Spark (``pairs_sql.driver_pairs_view``).

The columns only the unchanged check reads (``Plan.compare_only``: an UPDATE sets them and
nothing else reads them) are left out of the first read and compared last, a kind of type at a
time, read for the rows still alike (``_still_alike``); Spark gets them all (``complete_rows``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tablets.engine.alike import same_values, still_alike
from tablets.engine.arrow_eval import EVAL_FAILED, Compiled
from tablets.engine.eval_types import arrow_type
from tablets.engine.names import (
    K_DELETE,
    K_INSERT,
    K_REFUSE,
    K_REPLACE,
    K_UNCHANGED,
    K_UPDATE,
    KIND,
    OUTSIDE,
    ROW,
    SID,
    TID,
)
from tablets.engine.plan import (
    DriverClause,
    DriverClauses,
)
from tablets.engine.route import (
    ARROW_EVAL_CONF,
    DRIVER_BY_SOURCE_ROWS,
    DRIVER_SCAN_ROWS,
    driver_scan_bytes,
)
from tablets.engine.run import Run, may_prune, setting_on
from tablets.engine.tasks import K_MATCHED
from tablets.spark.datasource import type_text
from tablets.spark.frames import (
    BY_VALUES,
    TabletScan,
    driver_rows,
    driver_values,
)
from tablets.spec import ActionKind, Category
from tablets.storage.types import schema_to_arrow


@dataclass
class _Memo:
    """What this module computed once a statement (``Run.cache``), by tablets: a memo of its
    pure computations over the run, read and written here only."""

    selected: dict[tuple[str, ...], pa.Table | None] = field(default_factory=dict)  # select_target_rows
    pairs: dict[tuple[str, ...], tuple[pa.Table, pa.Table] | None] = field(default_factory=dict)  # key_pairs
    clauses: dict[Category, DriverClauses | None] = field(default_factory=dict)  # driver_clauses, by category
    on_rest: tuple[Any] | None = None  # (driver_on_rest's answer,) once computed (it may be None)


def _memo(run: Run) -> _Memo:
    return run.cache.setdefault(__name__, _Memo())


def read_on_driver(run: Run) -> int:
    """How many tablets' rows the driver selected for the statement (``select_target_rows``, the
    last selection made): then its pairs are few. 0 where it selected none."""
    return next((len(at) for at, rows in reversed(_memo(run).selected.items()) if rows is not None), 0)


def select_target_rows(run: Run, tablets: Sequence[str]) -> pa.Table | None:
    """The target rows of ``tablets`` that the local source's keys can pair with, selected on the
    driver (``frames.driver_rows``); None where the statement scans the target in Spark: no
    such keys, tablets above ``DRIVER_SCAN_CONF`` bytes, or too many rows selected."""
    source_less = run.plan.spec.source is None  # UPDATE / DELETE: the rows their clause acts on
    if run.intake.keys is None and not source_less:
        return None
    at, memo = tuple(tablets), _memo(run)
    if at not in memo.selected:
        rows = None
        scan = driver_scan_bytes(run.spark)
        if scan > 0 and sum(run.snapshot.tablets[t].add.bytes for t in tablets) <= scan:
            limit = max(DRIVER_SCAN_ROWS, 4 * run.intake.rows)
            if not run.plan.by_source and not source_less:
                rows = driver_rows(
                    run.table,
                    run.snapshot,
                    # the columns only an UPDATE's comparison reads come later, for the rows
                    # still alike (classify_on_driver) or all (complete_rows)
                    run.plan.read_first,
                    tablets,
                    run.intake.keys or {},
                    limit,
                    skip_by_stats=may_prune(run),
                )
            elif (
                (source_less or driver_on_rest(run) is not None)
                and setting_on(run, ARROW_EVAL_CONF)
                and (clauses := driver_clauses(run, Category.NOT_MATCHED_BY_SOURCE)) is not None
            ):
                columns = sorted(
                    {
                        c
                        for dc in clauses
                        if dc.condition is not True
                        for c in dc.condition.columns.get(target_key(run), ())
                    }
                )

                def acted(rows: pa.Table) -> pa.Array:  # some BY SOURCE clause acts on the row
                    return pa.array(first_clause({target_key(run): rows}, rows.num_rows, clauses) >= 0)

                try:
                    rows = driver_rows(
                        run.table,
                        run.snapshot,
                        # (a DELETE with no condition reads no column: its row ids need a table of rows)
                        run.plan.read_first or run.plan.columns[:1],
                        tablets,
                        run.intake.keys or {},
                        limit,
                        acted,
                        columns,
                        DRIVER_SCAN_ROWS if source_less else DRIVER_BY_SOURCE_ROWS,
                        skip_by_stats=may_prune(run),
                    )
                except EVAL_FAILED:  # (an overflow, say): Spark evaluates the statement
                    rows = None
        memo.selected[at] = rows
    return memo.selected[at]


def complete_rows(run: Run, tablets: Sequence[str]) -> pa.Table | None:
    """``select_target_rows``' rows with every column Spark's plan reads (``Run.scan_columns``), in
    their order (then the file name and row index), for Spark to classify: the columns only the
    unchanged check reads (``Plan.compare_only``) are read now for these rows, but those the merge
    tasks compare (``Run.deferred``) nor those they read for the updated rows (``Run.kept``)."""
    rows = select_target_rows(run, tablets)
    if rows is None:
        return None
    columns = run.scan_columns
    missing = [c for c in columns if c not in rows.column_names]
    if missing:
        values = driver_values(run.table, run.snapshot, missing, rows)
        for c in missing:
            rows = rows.append_column(values.schema.field(c), values.column(c))
    target = set(run.plan.columns)
    wanted = [*columns, *(c for c in rows.column_names if c not in target)]  # (then file name, row index)
    if rows.column_names != wanted:
        rows = rows.select(wanted)
        at, memo = tuple(tablets), _memo(run)
        memo.selected[at] = rows
        memo.pairs.pop(at, None)  # joined again, with Spark's columns
    return rows


def _still_alike(run: Run, t: pa.Table, same: np.ndarray, later: list[tuple[str, pa.Array]]) -> np.ndarray:
    """``alike.still_alike`` over ``t``'s rows: the old values read for the rows still alike
    (``driver_values``)."""
    return still_alike(
        same,
        later,
        schema_to_arrow(run.snapshot.metadata.schema),
        lambda cols, at: driver_values(run.table, run.snapshot, cols, t.take(pa.array(at))),
    )


def driver_clauses(run: Run, category: Category) -> DriverClauses | None:
    """``Plan.driver_clauses`` of ``category`` over the collected source's types, compiled once
    a statement."""
    memo = _memo(run)
    if category not in memo.clauses:
        source = (
            {f.name: type_text(f.dataType) for f in run.intake.local[1].fields}
            if run.intake.local is not None
            else None
        )
        memo.clauses[category] = run.plan.driver_clauses(category, source)
    return memo.clauses[category]


def driver_on_rest(run: Run) -> Compiled | Literal[True] | None:
    """``Plan.driver_on_rest`` over the collected source's types, compiled once a statement:
    True where ON is only the key equalities the driver pairs on."""
    memo = _memo(run)
    if memo.on_rest is None:
        source = (
            {f.name: type_text(f.dataType) for f in run.intake.local[1].fields}
            if run.intake.local is not None
            else None
        )
        memo.on_rest = (run.plan.driver_on_rest(source),)
    return memo.on_rest[0]


def target_key(run: Run) -> str:
    return run.plan.spec.target_alias.lower()


def first_clause(tables: dict[str, pa.Table], n: int, clauses: DriverClauses) -> np.ndarray:
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


def key_pairs(run: Run, tablets: Sequence[str]) -> tuple[pa.Table, pa.Table] | None:
    """Where the driver selected the target rows (``select_target_rows``) of a local source's statement:
    the pairs of target and source rows with equal keys, joined here (a NULL key pairs with
    nothing), as two tables of equal length, row i of one paired with row i of the other.
    Joined once per statement: the unchanged check and the pairs' relation share it."""
    at, memo = tuple(tablets), _memo(run)
    if at not in memo.pairs:
        memo.pairs[at] = _join_on_keys(run, tablets)
    return memo.pairs[at]


def _join_on_keys(run: Run, tablets: Sequence[str]) -> tuple[pa.Table, pa.Table] | None:
    rows = select_target_rows(run, tablets)
    if rows is None or run.intake.local is None:
        return None
    if BY_VALUES in rows.column_names:
        # a row each of whose key columns holds some source value may still pair with nothing
        # (a composite key is a tuple): the join decides, and ``_unpaired_target_rows`` keeps the rest
        rows = rows.drop_columns([BY_VALUES])
    data = run.intake.local[0]
    on_t, on_s = {}, {}
    for i, col in enumerate(run.intake.keys or {}):
        tcol, scol = rows.column(col), data.column(run.intake.key_sources[col])
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


def exact_cast(have: str, want: str) -> bool:
    """A value of Spark type ``have`` becomes one of ``want`` unchanged, in Arrow as in Spark:
    the same type, a wider integer or floating type, or an integer type a float type holds."""
    have, want = have.lower().replace(" ", ""), want.lower().replace(" ", "")
    if have == want:
        return arrow_type(have) is not None  # the driver's own merge copies only these
    if have in _EXACT_IN_FLOAT.get(want, ()):
        return True
    return any(have in kind and want in kind and kind[have] < kind[want] for kind in _WIDENING)


def classify_on_driver(run: Run, tablets: Sequence[str]) -> pa.Table | None:
    """The statement's classified rows, as ``_pairs_sql`` gives them, computed here in Arrow from
    the driver's pairs (``key_pairs``, kept where the rest of ON holds: ``driver_on_rest``): where
    the clauses that act on the rows at hand copy plain columns of their own types (``Branch.copies``: ``UPDATE SET *``, ``INSERT *``, ``SET v = s.v``, DELETE) under
    conditions Arrow evaluates as Spark does (``arrow_eval``; dbt's CDC ``WHEN MATCHED AND
    s.op = 'D' THEN DELETE``), and BY SOURCE clauses likewise (``Plan.driver_clauses``: the
    target rows without a pair that they act on were selected with the pairs). None
    otherwise: Spark evaluates the statement. The merge task then runs here
    (``delete_stream``): the whole statement without a Spark job."""
    plan = run.plan
    source_less = plan.spec.source is None  # UPDATE / DELETE: their clause is a BY SOURCE one
    if not setting_on(run, ARROW_EVAL_CONF):
        return None
    types = {n: t.lower() for n, t in plan.column_types}
    arrow = schema_to_arrow(run.snapshot.metadata.schema)
    names, images = plan.columns, plan.images
    t_key, s_key = target_key(run), plan.spec.source_alias.lower()
    on_rest: Compiled | Literal[True] | None = True
    if source_less:
        selected = select_target_rows(run, tablets)
        if selected is None:
            return None
        t_rows = s_rows = selected.drop_columns([BY_VALUES]).slice(0, 0)  # no pairs
        data, source_types = None, {}
    else:
        if not (run.intake.local is not None and len(run.intake.key_sources) == len(plan.join_keys)):
            return None
        on_rest = driver_on_rest(run)
        if on_rest is None:
            return None
        pairs = key_pairs(run, tablets)
        if pairs is None:
            return None
        t_rows, s_rows = (p.combine_chunks() for p in pairs)
        data, source_type = run.intake.local
        source_types = {f.name: type_text(f.dataType).lower() for f in source_type.fields}
    if on_rest is not None and on_rest is not True and t_rows.num_rows:  # the key-equal pairs the rest of ON accepts
        try:
            accepted = pc.fill_null(on_rest({t_key: t_rows, s_key: s_rows}), False)
        except EVAL_FAILED:
            return None
        t_rows, s_rows = t_rows.filter(accepted), s_rows.filter(accepted)

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
                    if not exact_cast(value.type, types[col]):
                        return None
                    out.append(value({t_key: t, s_key: src} if t is not None else {s_key: src}).cast(want))
                    continue
                have = (types.get(name) if side == "t" else source_types.get(name)) or ""
                rows = t if side == "t" else src
                if rows is None or name not in rows.column_names or not exact_cast(have, types[col]):
                    return None
                out.append(rows.column(name).cast(want))
            except EVAL_FAILED:
                return None
        return out

    marks_outside = any(b.clause.outside for b in plan.branches)

    def part(
        tid: pa.Array, row: pa.Array, values: list[pa.Array] | None, kind: pa.Array, outside: bool = False
    ) -> pa.Table:
        n = len(kind)
        cols = values or [pa.nulls(n, arrow.field(c).type) for c in names]
        if marks_outside:  # (as the Spark plan's pairs: pairs_sql._pairs_sql)
            return pa.table(
                [tid, row, *cols, pa.array([outside] * n, pa.bool_()), kind], names=[TID, ROW, *images, OUTSIDE, KIND]
            )
        return pa.table([tid, row, *cols, kind], names=[TID, ROW, *images, KIND])

    def target_part(dc: DriverClause | None, t: pa.Table, src: pa.Table) -> pa.Table | None:
        """The rows of clause ``dc`` (None: no clause) over target rows ``t``, paired with ``src``."""
        n = t.num_rows
        tid, row = TabletScan.row_ids(t)
        action = dc.branch.clause.action if dc is not None else None
        written = (ActionKind.UPDATE, ActionKind.REFUSE, ActionKind.REPLACE)
        values = image(dc, t, src) if dc is not None and action in written else None
        if action in written and values is None:
            return None
        if action is ActionKind.UPDATE and run.options.skip_unchanged:
            same = pa.array(np.ones(n, dtype=bool))
            later = []  # the columns not read yet (Plan.compare_only)
            for col, new in zip(names, values or (), strict=True):
                if col in t.column_names:
                    same = pc.and_(same, same_values(t.column(col), new))
                else:
                    later.append((col, new))
            if later:
                same = pa.array(_still_alike(run, t, same.to_numpy(zero_copy_only=False).copy(), later))
            kind = pc.if_else(same, pa.scalar(K_UNCHANGED), pa.scalar(K_UPDATE))
        else:
            code = (
                {
                    ActionKind.UPDATE: K_UPDATE,
                    ActionKind.DELETE: K_DELETE,
                    ActionKind.REFUSE: K_REFUSE,
                    ActionKind.REPLACE: K_REPLACE,
                }.get(action, K_MATCHED)
                if action is not None
                else K_MATCHED
            )
            kind = pa.array([code] * n, pa.string())
        return part(tid, row, values, kind, dc is not None and dc.branch.clause.outside)

    def classified(
        category: Category, tables: dict[str, pa.Table], t: pa.Table | None, src: pa.Table
    ) -> list[pa.Table] | None:
        """Rows of ``category`` (``t`` paired with ``src``; ``t`` None for source rows alone),
        each by the first clause that holds; pairs no clause acts on as K_MATCHED (the result
        depends on them). None: Spark must decide."""
        n = src.num_rows if t is None else t.num_rows
        these = driver_clauses(run, category) if n else ()
        if these is None:
            return None
        try:
            first = first_clause(tables, n, these)
        except EVAL_FAILED:
            return None
        groups: list[tuple[DriverClause | None, np.ndarray]] = (
            [(None, first < 0)] if category is Category.MATCHED else []
        )
        groups += [
            (dc, first == i) for i, dc in enumerate(these) if dc.branch.clause.action is not ActionKind.DO_NOTHING
        ]
        out = []
        for dc, where in groups:
            if not where.any():
                continue
            pick = pa.array(where)
            if t is None:  # the NOT MATCHED action: INSERT
                assert dc is not None
                values = image(dc, None, src.filter(pick))
                m = int(where.sum())
                p = (
                    None
                    if values is None
                    else part(
                        pa.nulls(m, pa.string()), pa.nulls(m, pa.int64()), values, pa.array([K_INSERT] * m, pa.string())
                    )
                )
            else:
                p = target_part(dc, t.filter(pick), src.filter(pick))
            if p is None:
                return None
            out.append(p)
        return out

    parts: list[pa.Table] = []
    if data is not None:
        matched = classified(Category.MATCHED, {t_key: t_rows, s_key: s_rows}, t_rows, s_rows)
        if matched is None:
            return None
        parts += matched
    if (
        plan.by_source or source_less
    ):  # the rows without a pair that a BY SOURCE clause acts on (``select_target_rows``)
        unpaired = _unpaired_target_rows(run, tablets, t_rows)
        by_source = classified(Category.NOT_MATCHED_BY_SOURCE, {t_key: unpaired}, unpaired, unpaired)
        if by_source is None:
            return None
        parts += by_source
    if data is not None:
        alone = data.filter(pc.invert(pc.is_in(data.column(SID), value_set=s_rows.column(SID))))
        inserts = classified(Category.NOT_MATCHED, {s_key: alone}, None, alone)
        if inserts is None:
            return None
        parts += inserts
    if not parts:
        return part(pa.array([], pa.string()), pa.array([], pa.int64()), None, pa.array([], pa.string()))
    return pa.concat_tables(parts)


def _unpaired_target_rows(run: Run, tablets: Sequence[str], paired: pa.Table) -> pa.Table:
    """The selected target rows (``select_target_rows``: those holding source values, and those a BY
    SOURCE clause acts on) that paired with no source row, by their row ids."""
    rows = select_target_rows(run, tablets)
    assert rows is not None  # (key_pairs selected them)
    rows = rows.drop_columns([BY_VALUES])
    if not paired.num_rows:
        return rows
    tid, row = TabletScan.row_ids(rows)
    ptid, prow = TabletScan.row_ids(paired)
    ids = pa.table({"t": tid, "r": row, "i": pa.array(np.arange(rows.num_rows, dtype=np.int64))})
    hit = ids.join(
        pa.table({"t": ptid, "r": prow}).group_by(["t", "r"]).aggregate([]), keys=["t", "r"], join_type="left semi"
    )
    keep = np.ones(rows.num_rows, dtype=bool)
    keep[hit.column("i").to_numpy()] = False
    return rows.filter(pa.array(keep))


def changes_nothing(rows: pa.Table) -> int | None:
    """Where ``classify_on_driver``' rows write nothing (every pair unchanged or acted on by no
    clause, and no target row acted on twice: that is an error the merge task raises), the
    unchanged count; else None."""
    kinds = rows.column(KIND)
    if not pc.all(pc.is_in(kinds, pa.array([K_UNCHANGED, K_MATCHED]))).as_py():  # (True when empty)
        return None
    acted = rows.filter(pc.equal(kinds, K_UNCHANGED))
    if acted.group_by([TID, ROW]).aggregate([([], "count_all")]).num_rows != acted.num_rows:
        return None
    return acted.num_rows
