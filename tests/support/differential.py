"""Runs a generated case (support.sqlgen) on the product's two plans and on DuckDB, compares
after every statement, and minimises a case that fails.

The plans: "driver" (the session's defaults: a small statement is merged in Arrow on the
driver) and "spark" (``spark.tablets.merge.driverScanBytes=0``: the target always scanned in
Spark; by the case's seed, one of the configurations of ``SECOND``). Each has a table of its
own; DuckDB's table is the mirror. The driver's run reads every third MERGE's source from a
Parquet file Spark wrote of its rows (``PlanRun._file_source``). After every statement:
the rows (a multiset, canonical as ``canon`` says), the error class (refused by both or by
neither), the counts; at the end of a case, ``SELECT ... VERSION AS OF v`` of every version one of
the plans made (``TIME_TRAVEL``, by seed) against the rows read when it was made.
"""

from __future__ import annotations

import itertools
import math
import os
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

import duckdb
import pyarrow as pa
from tablets.engine.route import (
    ARROW_EVAL_CONF,
    DRIVER_SCAN_CONF,
    DRIVER_WRITE_CONF,
    KEY_DELETE_CONF,
    KEY_FILTER_CONF,
    LOCAL_SOURCE_CONF,
    PRUNE_CONF,
    RERUN_CONF,
    SKIP_NOOP_CONF,
)
from tablets.exceptions import CardinalityViolation, ConstraintViolation, KeyViolation
from tablets.spark import catalog

from support.conf import settings
from support.sqlgen import Case, Step, duck_idents, quoted, unquoted, values_query

PLANS = {"driver": {}, "spark": {DRIVER_SCAN_CONF: "0"}}
# The second table of a case runs one of these, by the case's seed: Spark's plan with every
# other shortcut on (few pairs then written by one task on the driver), Spark's plan with its
# source persisted, not taken as local rows, as a bigger one is (collected once to be counted
# and digested, then broadcast), Spark's plan with its pairs always written by Spark's tasks and
# its source kept in Spark, as a big one is (counted with its key buckets, shuffled into the
# join), with every shortcut off (the long way), or the driver plan with one of its shortcuts
# off. Each is held to DuckDB and to the first table (the session's defaults).
SPARK_TASKS = {DRIVER_SCAN_CONF: "0", DRIVER_WRITE_CONF: "0", "spark.sql.autoBroadcastJoinThreshold": "-1"}
ALL_OFF = {
    DRIVER_SCAN_CONF: "0",
    DRIVER_WRITE_CONF: "0",
    ARROW_EVAL_CONF: "false",
    KEY_FILTER_CONF: "false",
    KEY_DELETE_CONF: "false",
    PRUNE_CONF: "false",
    RERUN_CONF: "false",
    SKIP_NOOP_CONF: "false",
    LOCAL_SOURCE_CONF: "0",
}
SECOND = (
    ("spark", PLANS["spark"]),
    ("spark, all shortcuts off", ALL_OFF),
    ("spark, source persisted", {DRIVER_SCAN_CONF: "0", LOCAL_SOURCE_CONF: "0"}),
    ("driver, arrowEval off", {ARROW_EVAL_CONF: "false"}),
    ("spark, tasks", SPARK_TASKS),
    ("driver, pruning off", {PRUNE_CONF: "false"}),
)


TIME_TRAVEL = ("spark", "driver", "driver", "spark")  # the table whose versions a case reads back (by seed)


def second_plan(case: Case) -> tuple[str, dict[str, str]]:
    """The configuration of a case's second table: its name (for the tally) and settings; in a
    fifth of the cases its statements run without ``skip_unchanged`` (an UPDATE rewrites the
    rows it sets to their old values, and reads only the target columns it keeps or names)."""
    name, conf = SECOND[case.seed % len(SECOND)]
    return (f"{name}, skip_unchanged off" if rewrites_unchanged(case) else name), conf


def rewrites_unchanged(case: Case) -> bool:
    return case.seed % 5 == 1  # (5 and len(SECOND) coprime: every configuration meets it)


_names = itertools.count()


def canon(table: pa.Table) -> tuple[tuple[str, ...], Counter]:
    """Rows as a multiset of tuples: instants and dates as integers, NaN as one token, -0.0 as
    0.0 (Spark's join and grouping take them as one value)."""
    cols = []
    for col in table.columns:
        if pa.types.is_timestamp(col.type):
            col = col.cast(pa.int64())
        elif pa.types.is_date32(col.type):
            col = col.cast(pa.int32())
        vals = col.to_pylist()
        if pa.types.is_floating(col.type):
            vals = [v if v is None else "NaN" if math.isnan(v) else (0.0 if v == 0 else v) for v in vals]
        elif pa.types.is_nested(col.type):
            vals = [_hashable(v, col.type) for v in vals]
        cols.append(vals)
    return tuple(table.column_names), Counter(zip(*cols, strict=True)) if cols else Counter()


def _hashable(v, t: pa.DataType):
    """A nested value as tuples: a list in order, a struct by its fields, a map by its entries
    sorted (as the unchanged check compares maps; each engine keeps its own entry order)."""
    if v is None:
        return None
    if pa.types.is_map(t):
        return ("map", tuple(sorted(v, key=repr)))
    if pa.types.is_struct(t):
        return ("struct", tuple(_hashable(v[f.name], f.type) for f in t))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return ("list", tuple(_hashable(x, t.value_type) for x in v))
    return v


def _key_dups(names, rows: Counter, keys) -> bool:
    idx = [names.index(unquoted(k)) for k in keys]
    seen = Counter()
    for row, n in rows.items():
        key = tuple(row[i] for i in idx)
        if None not in key:
            seen[key] += n
    return any(n > 1 for n in seen.values())


@dataclass
class Outcome:
    names: tuple[str, ...] = ()
    rows: Counter = field(default_factory=Counter)
    error: str | None = None  # "cardinality", "key", "oracle: ..." (DuckDB), "error: ..." (ours)
    counts: tuple[int, ...] | None = None  # inserted, updated (+ unchanged), deleted
    metrics: object = None
    sql: str = ""


@dataclass
class Failure:
    kind: str  # rows, counts, error, timetravel
    plan: str
    step: int
    detail: str
    statement: str = ""  # the failing step's kind

    def signature(self) -> tuple[str, str, str]:
        return self.kind, self.plan, self.statement


class _Duck:
    """A DuckDB connection that takes the case's SQL: Spark's backquoted names in DuckDB's quotes."""

    def __init__(self) -> None:
        self._con = duckdb.connect()

    def execute(self, sql: str):
        return self._con.execute(duck_idents(sql))

    def sql(self, sql: str):
        return self._con.sql(duck_idents(sql))

    def register(self, name: str, table: pa.Table) -> None:
        self._con.register(name, table)

    def unregister(self, name: str) -> None:
        self._con.unregister(name)


class Mirror:
    """DuckDB's table: the oracle's answer to each step."""

    def __init__(self, case: Case) -> None:
        self.case = case
        self.con = _Duck()
        self.con.execute(f"SET TimeZone = '{case.zone}'")
        self.con.execute(case.create("tt", duck=True))
        self.history = {-1: self.con.sql("SELECT * FROM tt").to_arrow_table()}

    def rows(self) -> tuple[tuple[str, ...], Counter]:
        return canon(self.con.sql("SELECT * FROM tt").to_arrow_table())

    def run(self, i: int, step: Step) -> Outcome:
        out = self._run(step)
        if out.error in ("cardinality", "key") and (self.case.checks or self.case.not_null):
            out.error += "/constraint"  # a refusal either way: which one it names first is the engine's
        self.history[i] = self.con.sql("SELECT * FROM tt").to_arrow_table()
        out.names, out.rows = self.rows()
        return out

    def copy(self) -> Mirror:
        """Another mirror holding this one's rows now (a clone's)."""
        other = Mirror(self.case)
        other._replace(self.con.sql("SELECT * FROM tt").to_arrow_table())
        return other

    def resync(self, i: int, table: pa.Table) -> None:
        """DuckDB could not run the step (see the tally's oracle skips): take the product's rows."""
        self._replace(table)
        self.history[i] = table

    def _replace(self, table: pa.Table) -> None:
        self.con.execute("DROP TABLE tt")
        self.con.register("restored", table)
        if self.case.checks or self.case.not_null:  # the table's constraints, over its columns now
            self.con.execute("CREATE TABLE shape AS SELECT * FROM restored LIMIT 0")
            cols = [(quoted(r[0]), r[1]) for r in self.con.sql("DESCRIBE shape").fetchall()]
            self.con.execute("DROP TABLE shape")
            self.con.execute(f"CREATE TABLE tt ({self.case.columns_ddl(cols, duck=True, raw_types=True)})")
            self.con.execute("INSERT INTO tt SELECT * FROM restored")
        else:
            self.con.execute("CREATE TABLE tt AS SELECT * FROM restored")
        self.con.unregister("restored")

    def _run(self, step: Step) -> Outcome:
        k, con = step.kind, self.con
        if k in ("OPTIMIZE", "CLUSTER"):
            return Outcome()
        if k == "REPLACE":
            con.execute("DELETE FROM tt")
            return Outcome()
        if k == "RESTORE":
            self._replace(self.history[max(i for i in self.history if i <= step.to_step)])
            return Outcome()
        if k in ("ADD", "DROP"):
            con.execute(step.sql("tt", duck=True))
            return Outcome()
        sql = step.sql("tt", duck=True)
        if k == "CONFLICT":
            sql = self._conflict(step)
            if sql is None:
                return Outcome(error="cardinality")
        elif k in ("MERGE", "RERUN", "EVOLVE"):
            sql += " RETURNING merge_action"
        con.execute("BEGIN")
        try:
            res = con.execute(sql).fetchall()
        except duckdb.ConstraintException as e:
            con.execute("ROLLBACK")
            if "CHECK constraint" not in str(e) and "NOT NULL constraint" not in str(e):
                return Outcome(error=f"oracle: {str(e)[:300]}")
            return Outcome(error="/".join(["constraint", *self._also(step)]))
        except duckdb.Error as e:
            con.execute("ROLLBACK")
            return Outcome(error="cardinality" if "more than once" in str(e) else f"oracle: {str(e)[:300]}")
        if self.case.declared and _key_dups(*self.rows(), self.case.keys):
            con.execute("ROLLBACK")
            return Outcome(error="key")
        con.execute("COMMIT")
        if k in ("MERGE", "RERUN", "CONFLICT", "EVOLVE"):
            acts = Counter(r[0] for r in res)
            return Outcome(counts=(acts["INSERT"], acts["UPDATE"], acts["DELETE"]))
        n = res[0][0] if res else 0
        return Outcome(
            counts={
                "INSERT": (n, 0, 0),
                "BYNAME": (n, 0, 0),
                "UPDATE": (0, n, 0),
                "DELETE": (0, 0, n),
                "TRUNCATE": (0, 0, n),
            }[k]
        )

    def _also(self, step: Step) -> list[str]:
        """What else a statement that broke a constraint breaks (a key, the cardinality rule),
        found on a copy of the table without constraints: which one a refusal names first is the
        engine's choice."""
        con = self.con
        con.execute("CREATE TABLE free AS SELECT * FROM tt")
        try:
            sql = self._conflict(step, "free") if step.kind == "CONFLICT" else step.sql("free", duck=True)
            if sql is None:
                return ["cardinality"]
            con.execute(sql)
        except duckdb.Error as e:
            return ["cardinality"] if "more than once" in str(e) else []
        finally:
            rows = canon(con.sql("SELECT * FROM free").to_arrow_table())
            con.execute("DROP TABLE free")
        return ["key"] if self.case.declared and _key_dups(*rows, self.case.keys) else []

    def _conflict(self, step: Step, table: str = "tt") -> str | None:
        """INSERT ... ON CONFLICT as the MERGE it means (sqlgen.SPARK_SEMANTICS["ON CONFLICT"])."""
        names, rows = step.names, list(step.rows)
        idx = [names.index(k) for k in step.keys]
        seen, kept = set(), []
        for r in rows:
            key = tuple(_canon_value(r[i]) for i in idx)
            if None in key or key not in seen:
                kept.append(r)
            elif step.sets:
                return None  # DO UPDATE with a key given twice
            seen.add(key)
        on = " AND ".join(f"t.{k} = s.{k}" for k in step.keys)
        upd = (" WHEN MATCHED THEN UPDATE SET " + ", ".join(f"{c} = s.{c}" for c, _ in step.sets)) if step.sets else ""
        src = values_query(list(step.cols), kept, True)
        return (
            f"MERGE INTO {table} t USING ({src}) s ON {on}{upd} WHEN NOT MATCHED THEN INSERT VALUES "
            f"({', '.join('s.' + n for n in names)}) RETURNING merge_action"
        )


def _canon_value(v):
    """A generated value as Spark's join compares it (NaN = NaN, -0.0 = 0.0, '1.50' = '1.5')."""
    if isinstance(v, str):
        try:
            f = float(v)
        except ValueError:
            return v
        if math.isnan(f):
            return "NaN"
        if ":" not in v and "-" not in v[1:]:
            return 0.0 if f == 0 else f
    return v


class PlanRun:
    """One plan's table through a case: the versions it made and the rows of each."""

    def __init__(self, db, case: Case, plan: str, clone_of: str | None = None) -> None:
        """``clone_of``: the table is a SHALLOW CLONE of that one (its newest version), not new."""
        self.db, self.case, self.plan = db, case, plan
        self.name = f"gen.c{next(_names)}_{plan}" + ("_clone" if clone_of else "")
        conf = PLANS[plan] if plan == "driver" else second_plan(case)[1]
        self.conf = {**conf, "spark.sql.session.timeZone": case.zone}
        self.opts: dict[str, object] = {"cluster_by": (case.cluster_by,)} if case.cluster_by else {}
        if plan != "driver" and rewrites_unchanged(case):
            self.opts["skip_unchanged"] = False
        with settings(db.spark, self.conf):
            db.sql(f"CREATE TABLE {self.name} SHALLOW CLONE {clone_of}" if clone_of else case.create(self.name))
        table = db.table_of(self.name)
        self.versions = {-1: table.version}
        self.recorded = {table.version: canon(table.read())}

    def run(self, i: int, step: Step) -> Outcome:
        db, name = self.db, self.name
        with settings(db.spark, self.conf):
            source = self._file_source(i, step)
            sql = step.sql(
                name,
                restore_version=self.versions[max(j for j in self.versions if j <= step.to_step)],
                source=source,
                **(self.case.replacing(step) if step.kind == "REPLACE" else {}),
            )
            out = Outcome(sql=sql)
            try:
                if step.kind == "DROP":
                    table = db.table_of(name)
                    gone = unquoted(step.column[0])
                    table.set_schema([c for c in table.snapshot().metadata.schema if c[0] != gone])
                    catalog.sync_schema(db.spark, name)
                elif step.kind in ("OPTIMIZE", "RESTORE", "ADD", "CLUSTER", "REPLACE"):
                    db.sql(sql)
                else:
                    m = db.sql(sql, options=self.opts).metrics
                    out.metrics = m
                    out.counts = (m.rows_inserted, m.rows_updated + m.rows_unchanged, m.rows_deleted)
            except CardinalityViolation:
                out.error = "cardinality"
            except KeyViolation:
                out.error = "key"
            except ConstraintViolation:
                out.error = "constraint"
            except Exception as e:  # noqa: BLE001 - any other failure is a finding
                out.error = f"error: {type(e).__name__}: {str(e)[:400]}"
        table = db.table_of(name)
        self.versions[i] = table.version
        out.names, out.rows = canon(table.read())
        self.recorded.setdefault(table.version, (out.names, out.rows))
        return out

    def _file_source(self, i: int, step: Step) -> str | None:
        """Every third MERGE of the driver's run reads its source rows from a Parquet file that
        Spark wrote (``spark.file_source`` reads such a source by Arrow); None: from VALUES."""
        if self.plan != "driver" or step.kind not in ("MERGE", "RERUN") or (self.case.seed + i) % 3:
            return None
        warehouse = str(self.db.spark.conf.get("spark.sql.warehouse.dir")).removeprefix("file:")
        path = os.path.join(warehouse, "_sources", f"{self.name}_{i}")
        self.db.spark.sql(values_query(list(step.cols), list(step.rows), False)).write.mode("overwrite").parquet(path)
        return f"SELECT * FROM parquet.`{path}`"

    def time_travel(self) -> str | None:
        """Each version read with SELECT ... VERSION AS OF, one query per schema: what differs."""
        groups: dict[tuple, list[int]] = {}
        for v, (names, _) in sorted(self.recorded.items()):
            groups.setdefault(names, []).append(v)
        with settings(self.db.spark, self.conf):
            for names, versions in groups.items():
                cols = ", ".join(quoted(n) for n in names)
                sql = " UNION ALL ".join(
                    f"SELECT {v} AS v__, {cols} FROM {self.name} VERSION AS OF {v}" for v in versions
                )
                try:
                    got = self.db.sql(sql).toArrow()
                except Exception as e:  # noqa: BLE001
                    return f"{sql[:300]}: {type(e).__name__}: {str(e)[:300]}"
                by_v = got.column("v__").to_pylist()
                for v in versions:
                    part = got.filter(pa.array([x == v for x in by_v], pa.bool_())).drop_columns(["v__"])
                    if canon(part)[1] != self.recorded[v][1]:
                        return f"VERSION AS OF {v}: {_diff(self.recorded[v][1], canon(part)[1])}"
        return None


def _diff(want: Counter, got: Counter) -> str:
    return f"missing {sorted((want - got).elements(), key=str)}, extra {sorted((got - want).elements(), key=str)}"


@dataclass
class Tally:
    """What the statements exercised."""

    shapes: Counter = field(default_factory=Counter)
    paths: Counter = field(default_factory=Counter)
    statements: int = 0
    cases: int = 0
    oracle_skips: Counter = field(default_factory=Counter)
    refusals: Counter = field(default_factory=Counter)
    seconds: Counter = field(default_factory=Counter)  # by plan and statement kind
    configs: Counter = field(default_factory=Counter)  # statements by the second table's configuration

    def note(self, step: Step, outs: dict[str, Outcome], labels: dict[str, str]) -> None:
        self.statements += 1
        self.shapes[step.shape()] += 1
        self.configs[labels["spark"]] += 1
        for plan, o in outs.items():
            plan = labels[plan]
            if o.error:
                self.refusals[f"{plan}: {o.error.split(':')[0]}"] += 1
            m = o.metrics
            if m is None:
                continue
            for flag, on in (
                ("merged on driver", m.merged_on_driver),
                ("Spark's pairs written on driver", m.written_on_driver),
                ("read on driver", m.tablets_read_on_driver > 0),
                ("tablets pruned", m.tablets_pruned > 0),
                ("re-run (same_source)", m.same_source),
                ("target key-filtered", m.key_filtered),
                ("deleted by the source's key set", m.deleted_by_key_set),
                ("no-op", m.noop),
                ("source files read by Arrow", m.source_by_arrow),
            ):
                if on:
                    self.paths[f"{plan}: {flag}"] += 1

    def to_json(self) -> dict:
        return {k: (dict(v) if isinstance(v, Counter) else v) for k, v in vars(self).items()}

    @classmethod
    def total(cls, parts: list[dict]) -> Tally:
        """The sum of tallies saved by ``to_json`` (a soak run in chunks)."""
        out = cls()
        for part in parts:
            for k, v in part.items():
                if isinstance(v, dict):
                    getattr(out, k).update(v)
                else:
                    setattr(out, k, getattr(out, k) + v)
        return out

    def summary(self) -> str:
        lines = [f"{self.statements} statements in {self.cases} cases, each on both plans and DuckDB"]
        lines += [f"  {n:5d}  {k}" for k, n in sorted(self.shapes.items())]
        lines += ["second table's configuration (the first: the session's defaults):"]
        lines += [f"  {n:5d}  {k}" for k, n in sorted(self.configs.items())]
        lines += ["plans taken:"] + [f"  {n:5d}  {k}" for k, n in sorted(self.paths.items())]
        lines += ["refused:"] + [f"  {n:5d}  {k}" for k, n in sorted(self.refusals.items())]
        lines += ["seconds:"] + [f"  {n:7.1f}  {k}" for k, n in sorted(self.seconds.items())]
        if self.oracle_skips:
            lines += ["DuckDB could not run (the product's rows taken):"] + [
                f"  {n:5d}  {k}" for k, n in self.oracle_skips.most_common(10)
            ]
        return "\n".join(lines)


def sessions(spark) -> dict:
    """A Database per plan, each on a session of its own (one SparkContext): their settings
    are apart, so the two plans run at once in two threads."""
    import tablets
    from tablets.db import Database

    first = tablets.connect(spark=spark)
    return {"driver": first, "spark": Database(spark.newSession())}


_pool = ThreadPoolExecutor(max_workers=len(PLANS), thread_name_prefix="plan")


def _timed(tally: Tally | None, what: str, fn, *args):
    t0 = time.perf_counter()
    try:
        return fn(*args)
    finally:
        if tally is not None:
            tally.seconds[what] += time.perf_counter() - t0


def run_case(dbs: dict, case: Case, tally: Tally | None = None) -> tuple[Failure | None, dict[str, list[str]]]:
    """The first Failure of ``case`` (or None), and the SQL each plan ran."""
    mirror = Mirror(case)
    labels = {"driver": "driver", "spark": second_plan(case)[0]}
    runs = dict(zip(PLANS, _pool.map(lambda p: PlanRun(dbs[p], case, p), PLANS), strict=True))
    scripts = {p: [case.create(r.name)] for p, r in runs.items()}
    for i, step in enumerate(case.steps):
        futures = {p: _pool.submit(_timed, tally, f"{p} {step.kind}", r.run, i, step) for p, r in runs.items()}
        want = mirror.run(i, step)  # DuckDB's while the plans run
        outs = {p: f.result() for p, f in futures.items()}
        for p, o in outs.items():
            scripts[p].append(o.sql)
        if tally is not None:
            tally.note(step, outs, labels)
        fail = _compare(i, step, want, outs)
        if isinstance(fail, Failure):
            fail.statement = step.kind
            fail.plan = labels.get(fail.plan, fail.plan)
        if fail == "oracle":
            if tally is not None:
                tally.oracle_skips[f"{step.kind}: {want.error[8:90]}"] += 1
            mirror.resync(i, dbs["driver"].table_of(runs["driver"].name).read())
            continue
        if fail is not None:
            return fail, scripts
    # every version read back with VERSION AS OF, on one table a case, the plans' in turn: the
    # read path is the same for both, and each plan's files are read in half the cases
    p = TIME_TRAVEL[case.seed % len(TIME_TRAVEL)]
    futures = {p: _pool.submit(_timed, tally, f"{p} time travel", runs[p].time_travel)}
    for p, f in futures.items():
        bad = f.result()
        if bad:
            return Failure("timetravel", labels[p], len(case.steps) - 1, bad), scripts
    bad_ddl = show_create_check(runs["driver"])
    if bad_ddl is not None:
        return Failure("show create", "driver", len(case.steps) - 1, bad_ddl), scripts
    bad_delta = delta_check(runs, every_version=case.seed % 4 == 0)
    if bad_delta is not None:
        return Failure("delta", labels.get(bad_delta[0], bad_delta[0]), len(case.steps) - 1, bad_delta[1]), scripts
    return None, scripts


def show_create_check(run: PlanRun) -> str | None:
    """SHOW CREATE TABLE of the case's table, run back under another name, makes a table of the
    same definition: its columns (names, types, NOT NULL, comments), key, constraints and
    properties (the table's own bookkeeping aside)."""
    db = run.db
    text = db.sql(f"SHOW CREATE TABLE {run.name}").collect()[0][0]
    copy = f"{run.name}_ddl"
    db.sql(f"DROP TABLE IF EXISTS {copy}")
    try:
        db.sql(text.replace(run.name, copy, 1))
        a, b = (db.table_of(n).snapshot().metadata for n in (run.name, copy))
        mine = ("delta.", "tablets.", "consumed")

        def definition(m) -> tuple:
            props = tuple(
                (k, v) for k, v in m.properties if not k.startswith(mine) or k.startswith("delta.constraints.")
            )
            return m.schema, m.key_columns, m.column_comments, m.comment, props

        if definition(a) != definition(b):
            return f"SHOW CREATE TABLE ran back differs:\n{text}\n{definition(a)}\n{definition(b)}"
        return None
    except Exception as e:  # noqa: BLE001 - a finding
        return f"SHOW CREATE TABLE does not run back: {type(e).__name__}: {str(e)[:300]}\n{text}"
    finally:
        db.sql(f"DROP TABLE IF EXISTS {copy}")


def delta_check(runs: dict, every_version: bool = False) -> tuple[str, str] | None:
    """The Delta readers read each case's table as tablets does (the table as a Delta table,
    issue #29): by default the newest version of the driver plan's table (one small read), every
    version of it where ``every_version`` (a quarter of the cases); ``TABLETS_DELTA_CHECK=all``:
    every version of every plan's; ``=off``: nothing."""
    import os

    mode = os.environ.get("TABLETS_DELTA_CHECK", "newest")
    if mode == "off":
        return None
    from support.delta_check import assert_delta_agrees

    for p, r in runs.items():
        if mode != "all" and p != "driver":
            continue
        table = r.db.table_of(r.name)
        try:
            assert_delta_agrees(table, versions=None if mode == "all" or every_version else [table.version])
        except AssertionError as e:
            return p, f"delta-rs: {e}"
    return None


def _compare(i: int, step: Step, want: Outcome, outs: dict[str, Outcome]) -> Failure | str | None:
    d, s = outs["driver"], outs["spark"]
    if want.error and want.error.startswith("oracle"):
        if d.error == s.error and d.rows == s.rows:
            return "oracle"  # the plans agree; DuckDB has no answer
        return Failure(
            "error" if d.error != s.error else "rows",
            "both",
            i,
            f"DuckDB: {want.error}; driver {d.error}, spark {s.error}",
        )
    for p, o in outs.items():
        if o.error != want.error and (o.error is None or o.error not in (want.error or "").split("/")):
            return Failure("error", p, i, f"expected {want.error or 'success'}, got {o.error or 'success'}")
        if o.names != want.names or o.rows != want.rows:
            return Failure("rows", p, i, f"columns {o.names} vs {want.names}: {_diff(want.rows, o.rows)}")
    if not want.error and step.kind not in ("OPTIMIZE", "RESTORE", "ADD", "DROP", "CLUSTER", "REPLACE"):
        if d.counts != s.counts:
            return Failure(
                "counts",
                "driver vs spark",
                i,
                f"driver {d.counts}, spark {s.counts} (inserted, updated+unchanged, deleted)",
            )
        same = any(o.metrics is not None and o.metrics.same_source for o in outs.values())
        if want.counts is not None and not same:
            for p, o in outs.items():
                if o.counts != want.counts:
                    return Failure(
                        "counts", p, i, f"DuckDB {want.counts}, {p} {o.counts} (inserted, updated+unchanged, deleted)"
                    )
    return None


# --- minimising ------------------------------------------------------------------------------------


def _drop_step(case: Case, j: int) -> Case:
    steps = []
    for i, st in enumerate(case.steps):
        if i == j:
            continue
        if st.kind == "RESTORE" and st.to_step >= j:
            st = replace(st, to_step=st.to_step - 1)
        steps.append(st)
    return replace(case, steps=steps)


def _step_variants(st: Step):
    for i in range(len(st.rows)):
        yield replace(st, rows=st.rows[:i] + st.rows[i + 1 :])
    if len(st.clauses) > 1:
        for i in range(len(st.clauses)):
            yield replace(st, clauses=st.clauses[:i] + st.clauses[i + 1 :])
    for i, c in enumerate(st.clauses):
        if c.cond is not None:
            yield replace(st, clauses=st.clauses[:i] + (replace(c, cond=None),) + st.clauses[i + 1 :])
        if c.action in ("UPDATE", "INSERT") and len(c.sets) > 1:
            for j in range(len(c.sets)):
                if c.action == "UPDATE" or c.sets[j][0] not in dict(st.on):
                    yield replace(
                        st,
                        clauses=st.clauses[:i] + (replace(c, sets=c.sets[:j] + c.sets[j + 1 :]),) + st.clauses[i + 1 :],
                    )
    if st.on_extra is not None:
        yield replace(st, on_extra=None)
    if any(ns for _, ns in st.on):
        yield replace(st, on=tuple((k, False) for k, _ in st.on))
    if st.where is not None:
        yield replace(st, where=None)
    if len(st.sets) > 1:
        for j in range(len(st.sets)):
            yield replace(st, sets=st.sets[:j] + st.sets[j + 1 :])


def _mentions(st: Step, col: str) -> bool:
    exprs = [st.where, st.on_extra, *(e for _, e in st.sets)]
    for c in st.clauses:
        exprs += [c.cond, *(e for _, e in c.sets)]
    return (
        any(e is not None and col in e.spark for e in exprs)
        or any(c == col for c, _ in st.sets)
        or any(col in (n for n, _ in c.sets) for c in st.clauses)
    )


def _drop_column(case: Case, col: str) -> Case | None:
    if col in case.keys or col in case.constrained() or any(_mentions(st, col) for st in case.steps):
        return None

    def cut(cols, rows):
        idx = [i for i, (n, _) in enumerate(cols) if n != col]
        return tuple(cols[i] for i in idx), tuple(tuple(r[i] for i in idx) for r in rows)

    steps = []
    for st in case.steps:
        if st.column and st.column[0] == col:
            continue
        cols, rows = cut(st.cols, st.rows)
        steps.append(replace(st, cols=cols, rows=rows))
    cols, _ = cut(case.cols, ())
    return replace(case, cols=cols, steps=steps, cluster_by=None if case.cluster_by == col else case.cluster_by)


def minimise(
    dbs: dict, case: Case, failure: Failure, budget_s: float = 240.0
) -> tuple[Case, Failure, dict[str, list[str]]]:
    """A smaller case with a failure of the same signature (kind and plan), found by dropping
    steps, columns, rows, clauses, conditions, until nothing more can go or the budget is spent."""
    deadline = time.monotonic() + budget_s
    best, best_fail, best_sql = replace(case, steps=case.steps[: failure.step + 1]), failure, None

    def fails(c: Case):
        nonlocal best, best_fail, best_sql
        if time.monotonic() > deadline:
            return False
        f, scripts = run_case(dbs, c)
        if f is not None and f.signature() == failure.signature():
            best, best_fail, best_sql = replace(c, steps=c.steps[: f.step + 1]), f, scripts
            return True
        return False

    fails(best)
    changed = True
    while changed and time.monotonic() < deadline:
        changed = False
        for j in reversed(range(len(best.steps))):
            if j < len(best.steps) and fails(_drop_step(best, j)):
                changed = True
        for col, _ in list(best.cols):
            c = _drop_column(best, col)
            if c is not None and fails(c):
                changed = True
        for flag in ({"declared": False}, {"tablet_rows": None}, {"cluster_by": None}, {"zone": "UTC"}, {"checks": ()},
                     {"not_null": ()}):  # fmt: skip
            if any(getattr(best, k) != v for k, v in flag.items()) and fails(replace(best, **flag)):
                changed = True
        for j in range(len(best.steps)):
            for variant in _step_variants(best.steps[j]) if j < len(best.steps) else ():
                if fails(replace(best, steps=best.steps[:j] + [variant] + best.steps[j + 1 :])):
                    changed = True
                    break
    return best, best_fail, best_sql or {}


def repro(case: Case, failure: Failure, scripts: dict[str, list[str]]) -> str:
    """The minimised case as SQL: the statements the driver plan's table ran, named t1."""
    if scripts.get("driver"):
        name = scripts["driver"][0].split()[2]
        sql = [s.replace(name, "t1") for s in scripts["driver"]]
    else:
        sql = [case.create("t1")] + [st.sql("t1", restore_version=st.to_step + 1) for st in case.steps]
    head = f"-- seed {case.seed}; spark.sql.session.timeZone={case.zone}" + (
        f"; cluster_by={case.cluster_by}" if case.cluster_by else ""
    )
    tail = f"-- {failure.kind} on {failure.plan} at statement {failure.step + 1}: {failure.detail}"
    return "\n".join([head, *(s + ";" for s in sql), tail])
