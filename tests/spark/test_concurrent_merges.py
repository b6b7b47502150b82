"""Concurrent upsert MERGEs from real Spark processes (local[1] each) on one table on local disk.

Every worker process starts Spark once, adopts the shared table into its own catalog and, when
all workers are ready, runs its MERGEs through ``tablets.connect(...).sql``. Each statement adds
1 to a counter of the rows it touches and appends its id to their ``ids`` column, so the final
table tells whether the committed statements took effect in a serial order (the commit order):
every row's counter is the number of committed statements that touched it and its ``ids`` lists
them in version order. Lost updates, double inserts or a statement that read a stale row would
all show.

- disjoint keys of the same tablets (and disjoint new keys): every statement commits, none sees
  an error: deletes of other rows of a tablet rebase, appends of other keys do not conflict;
- overlapping keys: statements that really collide are retried (backoff with jitter); the ones
  still refused after the retries raise a typed ``CommitConflict``, and the table is exactly
  the serial result of the committed ones.

The default suite runs 2 workers x 6 statements per case; ``TABLETS_SLOW=1`` runs 4 x 25.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass

import pyarrow as pa
import pytest
import tablets
from tablets import exceptions
from tablets.engine.executor import execute
from tablets.exceptions import ConcurrentAppend, ConcurrentDeleteDelete, ConcurrentDeleteRead
from tablets.sql import parse_statement
from tablets.storage import TabletTable

pytestmark = pytest.mark.spark

SLOW = bool(os.environ.get("TABLETS_SLOW"))
SCHEMA = pa.schema([("id", pa.int64()), ("cnt", pa.int64()), ("ids", pa.string())])
RETRIES = 5
# short-lived JVMs: the C1 compiler only (measured: a worker's start and first MERGEs ~40% faster)
JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

WORKER = """
import json, logging, os, sys, time
import tablets
from tablets.exceptions import CommitConflict
from tablets.spark import catalog
from tablets.spark.session import build_session

cfg = json.loads(sys.argv[1])
spark = build_session(cfg["warehouse"], master="local[1]", hive=False, shuffle_partitions=1,
                      conf={"spark.driver.extraJavaOptions": cfg["java_options"]})
db = tablets.connect(spark=spark, retries=cfg["retries"], retry_backoff=0.1, retry_max_backoff=2.0)
retried = []


class Retries(logging.Handler):
    def emit(self, record):
        retried.append(record.getMessage())


log = logging.getLogger("tablets")
log.addHandler(Retries())
log.setLevel(logging.INFO)
for case in cfg["cases"]:
    catalog.create_table(spark, case["name"], None, location=case["root"])  # adopt the shared table
    open(os.path.join(cfg["sync"], f"{case['name']}-{cfg['worker']}"), "w").close()
    while len([n for n in os.listdir(cfg["sync"]) if n.startswith(case["name"] + "-")]) < cfg["workers"]:
        time.sleep(0.05)  # every worker ready: start together
    out, began = [], time.time()
    for i, keys in enumerate(case["statements"]):
        stmt = f"w{cfg['worker']}s{i}"
        values = ", ".join(f"({k})" for k in keys)
        sql = (
            f"MERGE INTO {case['name']} t USING (SELECT id, '{stmt}' AS stmt FROM VALUES {values} AS v(id)) s "
            "ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET cnt = t.cnt + 1, ids = concat(t.ids, ',', s.stmt) "
            "WHEN NOT MATCHED THEN INSERT (id, cnt, ids) VALUES (s.id, 1, s.stmt)"
        )
        before, start = len(retried), time.perf_counter()
        row = {"stmt": stmt, "keys": keys}
        try:
            row["version"] = db.sql(sql).metrics.version
        except CommitConflict as e:
            row["error"] = type(e).__name__
        except Exception as e:
            row["error"] = "OTHER " + repr(e)[:2000]
        row["retries"] = len(retried) - before
        row["seconds"] = round(time.perf_counter() - start, 2)
        out.append(row)
    with open(case["out"] + f".{cfg['worker']}", "w") as f:
        json.dump({"began": began, "ended": time.time(), "statements": out}, f)
"""


@dataclass
class Case:
    name: str
    root: str
    statements: list[list[list[int]]]  # per worker, per statement: the keys it upserts
    initial: list[int]  # keys in the table before the race


def _table(root: str, keys: list[int], tablets: int) -> None:
    """The table before the race: ``keys`` (cnt 0, ids 'init') in ``tablets`` tablets."""
    t = TabletTable.create(root, SCHEMA)
    per = -(-len(keys) // tablets)
    for i in range(0, len(keys), per):
        part = keys[i : i + per]
        t.append(pa.table({"id": part, "cnt": [0] * len(part), "ids": ["init"] * len(part)}, schema=SCHEMA))


def _disjoint(base: str, workers: int, n: int, rng: random.Random) -> Case:
    """Worker w upserts keys = w (mod workers) of both tablets, and one new key of its own per
    statement: no two statements of different workers touch a row in common."""
    initial = list(range(40))
    stmts = []
    for w in range(workers):
        mine = [k for k in initial if k % workers == w]
        stmts.append([sorted(rng.sample(mine, 3)) + [1000 + w + workers * i] for i in range(n)])
    root = os.path.join(base, "disjoint")
    _table(root, initial, 2)
    return Case("disjoint", root, stmts, initial)


def _overlapping(base: str, workers: int, n: int, rng: random.Random) -> Case:
    """Every statement upserts 3 keys of 0..14 (0..9 exist: updates; 10..14 do not yet: the
    first statement to commit inserts them, later ones update them)."""
    initial = list(range(10))
    stmts = [[sorted(rng.sample(range(15), 3)) for _ in range(n)] for _ in range(workers)]
    root = os.path.join(base, "overlapping")
    _table(root, initial, 2)
    return Case("overlapping", root, stmts, initial)


def _race(tmp_path, cases: list[Case], workers: int, timeout: float) -> dict[str, tuple[list[dict], float]]:
    """Run the workers; per case, every statement's outcome and the seconds from the first
    worker's start of the case to the last one's end."""
    sync = tmp_path / "sync"
    sync.mkdir()
    procs = []
    for w in range(workers):
        cfg = {
            "worker": w,
            "workers": workers,
            "warehouse": str(tmp_path / f"wh{w}" / "warehouse"),
            "sync": str(sync),
            "retries": RETRIES,
            "java_options": JAVA_OPTIONS,
            "cases": [
                {"name": c.name, "root": c.root, "statements": c.statements[w], "out": str(tmp_path / c.name)}
                for c in cases
            ],
        }
        log = open(tmp_path / f"worker{w}.log", "w")  # noqa: SIM115 - closed with the process
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", textwrap.dedent(WORKER), json.dumps(cfg)],
                cwd=tmp_path,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
    deadline = time.time() + timeout
    try:
        for p in procs:
            while p.poll() is None:
                assert time.time() < deadline, "workers did not finish in time"
                time.sleep(0.2)
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
    for w, p in enumerate(procs):
        assert p.returncode == 0, (tmp_path / f"worker{w}.log").read_text()[-4000:]
    out = {}
    for c in cases:
        parts = [json.loads((tmp_path / f"{c.name}.{w}").read_text()) for w in range(workers)]
        seconds = max(p["ended"] for p in parts) - min(p["began"] for p in parts)
        out[c.name] = ([r for p in parts for r in p["statements"]], seconds)
    return out


def _serial(case: Case, results: list[dict]) -> None:
    """The table is the committed statements applied one by one in version order."""
    committed = sorted((r for r in results if "version" in r), key=lambda r: r["version"])
    cnt = {k: 0 for k in case.initial}
    ids = {k: ["init"] for k in case.initial}
    for r in committed:
        for k in r["keys"]:
            cnt[k] = cnt.get(k, 0) + 1
            ids.setdefault(k, []).append(r["stmt"])
    t = TabletTable(case.root)
    rows = t.read().to_pylist()
    assert len(rows) == len({r["id"] for r in rows}), "a key was inserted twice"
    assert {r["id"]: r["cnt"] for r in rows} == cnt, "a lost or doubled update"
    assert {r["id"]: r["ids"].split(",") for r in rows} == ids, "not the serial (commit) order"
    versions = [r["version"] for r in committed]
    assert len(set(versions)) == len(versions)
    assert t.version == 2 + len(committed)  # create, 2 appends, then one version per commit


def _report(name: str, results: list[dict], seconds: float) -> str:
    ok = [r for r in results if "version" in r]
    failed = [r for r in results if "error" in r]
    retried = sum(r["retries"] for r in results)
    kinds = sorted({r["error"] for r in failed})
    return (
        f"\n{name}: {len(results)} statements in {seconds:.0f} s: {len(ok)} committed, {len(failed)} refused "
        f"{kinds}, {retried} retries ({sum(1 for r in results if r['retries'])} statements retried), "
        f"median statement {sorted(r['seconds'] for r in results)[len(results) // 2]:.1f} s"
    )


@pytest.fixture(scope="module")
def race(tmp_path_factory):
    workers, n = (4, 25) if SLOW else (2, 6)
    tmp = tmp_path_factory.mktemp("race")
    rng = random.Random(8)
    cases = [_disjoint(str(tmp), workers, n, rng), _overlapping(str(tmp), workers, n, rng)]
    results = _race(tmp, cases, workers, timeout=3600 if SLOW else 600)
    return {c.name: (c, *results[c.name]) for c in cases}, workers * n


def test_disjoint_keys_all_commit(race):
    cases, total = race
    case, results, seconds = cases["disjoint"]
    print(_report("disjoint", results, seconds))
    assert [r for r in results if "error" in r] == []
    assert len(results) == total
    _serial(case, results)
    assert sum(r["retries"] for r in results) == 0  # nothing conflicted: the rows differ


def test_overlapping_keys_serial_order(race):
    cases, total = race
    case, results, seconds = cases["overlapping"]
    print(_report("overlapping", results, seconds))
    assert len(results) == total
    for r in results:
        if "error" in r:  # refused only after the retries, with a typed conflict
            assert r["retries"] == RETRIES, r
            assert issubclass(getattr(exceptions, r["error"]), exceptions.CommitConflict), r
    assert any("version" in r for r in results)
    _serial(case, results)


# --- the MERGE rows of the commit rules, with real MERGEs ------------------------------------
#
# A statement run against an older snapshot (``execute(..., snapshot=)``) commits exactly as one
# that read that version while the commits since landed: two processes' interleaving, made
# deterministic, on the shared Spark session. Each row of docs/CONCURRENCY.md's matrix that a
# MERGE, UPDATE or DELETE can hit has a test here.


@pytest.fixture(scope="module")
def db(spark):
    d = tablets.connect(spark=spark, retries=0)
    d.sql("CREATE DATABASE IF NOT EXISTS cm")
    return d


def _fresh(db, tablets_: int = 1) -> TabletTable:
    """cm.t: ids 0..9 with v = 0 in one tablet (plus ids 10.. in more tablets)."""
    db.sql("DROP TABLE IF EXISTS cm.t")
    db.sql("CREATE TABLE cm.t (id BIGINT, v BIGINT) USING tablets")
    for i in range(tablets_):
        db.sql(f"INSERT INTO cm.t SELECT id, 0 FROM range({i * 10}, {i * 10 + 10})")
    return db.table_of("cm.t")


def _stale(db, sql: str, snapshot):
    """Run ``sql`` as a statement that read ``snapshot``."""
    spec = parse_statement(sql)
    table = db.table_of(spec.target)
    return execute(db.spark, table, spec, db.source_frame(spec, table), db.options, snapshot=snapshot)


def _upsert(*keys: int, add: int = 1) -> str:
    values = ", ".join(f"({k})" for k in keys)
    return (
        f"MERGE INTO cm.t t USING (SELECT CAST(id AS BIGINT) AS id FROM VALUES {values} AS v(id)) s ON t.id = s.id "
        f"WHEN MATCHED THEN UPDATE SET v = t.v + {add} WHEN NOT MATCHED THEN INSERT VALUES (s.id, {add})"
    )


def _contents(db) -> dict[int, int]:
    rows = db.sql("SELECT id, v FROM cm.t").collect()
    assert len(rows) == len({r.id for r in rows}), "a key twice"
    return {r.id: r.v for r in rows}


def _base_rows(n: int = 10) -> dict[int, int]:
    return {i: 0 for i in range(n)}


def test_rule_merges_updating_one_row_conflict(db):
    t = _fresh(db)
    old = t.snapshot()
    db.sql(_upsert(5))
    with pytest.raises(ConcurrentDeleteDelete, match="also deletes or updates"):
        _stale(db, _upsert(5), old)
    assert _contents(db) == {**_base_rows(), 5: 1}


def test_rule_merges_updating_other_rows_of_one_tablet_both_commit(db):
    t = _fresh(db)
    old = t.snapshot()
    db.sql(_upsert(5))
    m = _stale(db, _upsert(7, 12), old)  # 12: a new key, inside the range of the other's
    assert m.version == old.version + 2 and (m.rows_updated, m.rows_inserted) == (1, 1)
    assert _contents(db) == {**_base_rows(), 5: 1, 7: 1, 12: 1}
    (first,) = [st for st in t.snapshot().tablets.values() if st.add.rows == 10]
    assert first.dv.cardinality == 2  # the rebased DV: both statements' old images
    assert t.history()[-1].commit.metrics_dict()["dvs_rebased"] == 1


@pytest.mark.parametrize(
    "statement",
    [
        # 5 matched, the clause's condition false: left alone (7 is updated)
        "MERGE INTO cm.t t USING (SELECT * FROM VALUES (5L, false), (7L, true) AS v(id, go)) s ON t.id = s.id "
        "WHEN MATCHED AND s.go THEN UPDATE SET v = 9",
        # 5 matched, DO NOTHING; 20 inserted (after the delete, 5 would have been inserted too)
        "MERGE INTO cm.t t USING (SELECT * FROM VALUES (5L), (20L) AS v(id)) s ON t.id = s.id "
        "WHEN MATCHED THEN DO NOTHING WHEN NOT MATCHED THEN INSERT VALUES (s.id, 9)",
        # 5 matched, an UPDATE whose new image equals the old row writes nothing (7 is updated)
        "MERGE INTO cm.t t USING (SELECT * FROM VALUES (5L, 0L), (7L, 1L) AS v(id, add)) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = t.v + s.add",
    ],
    ids=["condition-false", "do-nothing", "unchanged-update"],
)
def test_rule_delete_of_a_row_the_merge_matched_conflicts(db, statement):
    t = _fresh(db)
    old = t.snapshot()
    db.sql("DELETE FROM cm.t WHERE id = 5")
    with pytest.raises(ConcurrentDeleteRead, match="matched"):
        _stale(db, statement, old)
    assert _contents(db) == {i: 0 for i in range(10) if i != 5}


def test_rule_merge_ignores_deletes_of_rows_it_did_not_match(db):
    t = _fresh(db)
    old = t.snapshot()
    db.sql("DELETE FROM cm.t WHERE id = 8")
    assert _stale(db, _upsert(5), old).version == old.version + 2
    assert _contents(db) == {i: int(i == 5) for i in range(10) if i != 8}


def test_rule_merge_ignores_appends_outside_its_key_range(db):
    t = _fresh(db)
    old = t.snapshot()
    db.sql("INSERT INTO cm.t VALUES (500, 0)")
    assert _stale(db, _upsert(5), old).version == old.version + 2
    assert _contents(db) == {**_base_rows(), 5: 1, 500: 0}


def test_rule_merge_ignores_appends_its_join_does_not_match(db):
    t = _fresh(db)
    old = t.snapshot()
    db.sql("INSERT INTO cm.t VALUES (15, 0)")  # inside the source's key range 3..20, no match
    assert _stale(db, _upsert(3, 20), old).version == old.version + 2
    assert _contents(db) == {**_base_rows(), 3: 1, 15: 0, 20: 1}


def test_rule_merge_conflicts_with_an_append_it_would_have_matched(db):
    t = _fresh(db)
    old = t.snapshot()
    db.sql(_upsert(20))  # inserts key 20
    with pytest.raises(ConcurrentAppend, match="would have matched"):
        _stale(db, _upsert(20), old)  # would insert 20 a second time
    assert _contents(db) == {**_base_rows(), 20: 1}


def test_rule_by_source_merge_judges_appends_by_its_clauses(db):
    sync = (
        "MERGE INTO cm.t t USING (SELECT id FROM range(0, 10)) s ON t.id = s.id "
        "WHEN MATCHED AND t.id = 2 THEN UPDATE SET v = t.v + 1 "
        "WHEN NOT MATCHED BY SOURCE AND t.v > 100 THEN DELETE"
    )
    t = _fresh(db)
    old = t.snapshot()
    db.sql("INSERT INTO cm.t VALUES (50, 0)")  # unmatched, its BY SOURCE condition false
    assert _stale(db, sync, old).version == old.version + 2
    old = t.snapshot()
    db.sql("INSERT INTO cm.t VALUES (60, 500)")  # the BY SOURCE clause would delete it
    with pytest.raises(ConcurrentAppend):
        _stale(db, sync, old)
    assert _contents(db) == {**_base_rows(), 2: 1, 50: 0, 60: 500}


def test_rule_update_where_rebases_and_judges_appends(db):
    update = "UPDATE cm.t SET v = v + 1 WHERE id < 3 OR id = 70"
    t = _fresh(db)
    old = t.snapshot()
    db.sql("DELETE FROM cm.t WHERE id = 8")  # another row of the tablet: rebased
    db.sql("INSERT INTO cm.t VALUES (50, 0)")  # its WHERE is false there
    assert _stale(db, update, old).version == old.version + 3
    old = t.snapshot()
    db.sql("INSERT INTO cm.t VALUES (70, 0)")  # its WHERE holds there
    with pytest.raises(ConcurrentAppend):
        _stale(db, update, old)
    assert _contents(db) == {**{i: int(i < 3) for i in range(10) if i != 8}, 50: 0, 70: 0}


def test_rule_merge_whose_source_reads_the_target_takes_the_conservative_rules(db):
    t = _fresh(db)
    old = t.snapshot()
    db.sql("DELETE FROM cm.t WHERE id = 8")  # a row it neither matched nor changed
    with pytest.raises(ConcurrentDeleteRead):
        _stale(
            db,
            "MERGE INTO cm.t t USING (SELECT max(id) + 100 AS id FROM cm.t) s ON t.id = s.id "
            "WHEN NOT MATCHED THEN INSERT VALUES (s.id, 0)",
            old,
        )


def test_rule_compaction_vs_merge_deleting_from_the_tablet(db):
    t = _fresh(db, tablets_=2)
    old = t.snapshot()
    assert t.compact(min_tablet_rows=1000) is not None
    with pytest.raises(ConcurrentDeleteDelete, match="removed"):
        _stale(db, _upsert(5), old)
    assert _contents(db) == _base_rows(20)


def test_retry_settings(db):
    d = tablets.connect(spark=db.spark, retries=3, retry_backoff=0.5, retry_max_backoff=4)
    assert (d.retries, d.retry_backoff, d.retry_max_backoff) == (3, 0.5, 4)
    with pytest.raises(ValueError, match="retries"):
        tablets.connect(spark=db.spark, retries=-1)
    from dbt_common.exceptions import DbtRuntimeError

    from dbt.adapters.tablets.connections import TabletsCredentials

    creds = TabletsCredentials(schema="s", retries=7, retry_backoff=0.2)
    assert (creds.retries, creds.retry_backoff) == (7, 0.2)
    with pytest.raises(DbtRuntimeError, match="retries"):
        TabletsCredentials(schema="s", retries=-1)
