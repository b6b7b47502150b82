"""VACUUM with no retention racing MERGEs through the front door on Spark's plan (issue 26): a
real process vacuums the table in a loop while this one merges into it. Every MERGE commits
(a ``VacuumConflict`` is retried by ``Database``) or fails with that typed conflict; every
version made reads whole, and the table ends as the committed statements say
(tests/unit/test_vacuum.py races the storage API the same way, on disk and in the bucket)."""

import multiprocessing as mp
import time

import pytest
from support.conf import settings
from tablets.engine.route import DRIVER_SCAN_CONF
from tablets.exceptions import VacuumConflict
from tablets.storage import TabletTable

pytestmark = pytest.mark.spark

MERGES = 4


def _vacuumer(root: str, stop, count) -> None:
    t = TabletTable(root)
    while not stop.is_set():
        t.vacuum(retention_hours=0, enforce_retention=False)
        with count.get_lock():
            count.value += 1
        time.sleep(0.3)  # a vacuum every moment of a statement, yet room for some to commit


def test_merges_on_the_spark_plan_race_a_vacuum_process(spark):
    import tablets

    db = tablets.connect(spark=spark, retries=8, retry_backoff=0.05, retry_max_backoff=0.5)
    db.sql("CREATE DATABASE IF NOT EXISTS vrace")
    db.sql("DROP TABLE IF EXISTS vrace.t")
    db.sql("CREATE TABLE vrace.t (id BIGINT, v BIGINT) USING tablets TBLPROPERTIES ('key_columns' = 'id')")
    db.sql("INSERT INTO vrace.t SELECT id, 0 FROM range(200)")
    t = db.table_of("vrace.t")
    ctx = mp.get_context("spawn")
    stop, count = ctx.Event(), ctx.Value("i", 0)
    proc = ctx.Process(target=_vacuumer, args=(t.root, stop, count))
    proc.start()
    committed, refused, made = [], 0, []
    t0 = time.time()
    try:
        deadline = time.time() + 120
        while count.value == 0 and time.time() < deadline:  # the vacuum loop runs
            time.sleep(0.05)
        with settings(spark, {DRIVER_SCAN_CONF: "0"}):
            for i in range(MERGES):
                try:
                    db.sql(
                        f"MERGE INTO vrace.t t USING (SELECT {i * 10} AS id, {i + 1} AS v UNION ALL "
                        f"SELECT {1000 + i}, {i + 1}) s ON t.id = s.id "
                        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *"
                    )
                    committed.append(i)
                except VacuumConflict:
                    refused += 1
                # the version just made reads whole while the vacuum loop goes on (older ones
                # may be vacuumed: no retention)
                now = db.table_of("vrace.t")
                made.append((now.version, now.read(now.version).num_rows))
    finally:
        stop.set()
        proc.join(60)
        if proc.is_alive():
            proc.kill()
    assert proc.exitcode == 0
    assert count.value > 1, "the vacuum loop ran during the MERGEs"
    t = db.table_of("vrace.t")
    assert [n for _, n in made] == [200 + len([c for c in committed if c <= i]) for i in range(MERGES)]
    rows = dict(tuple(r) for r in db.sql("SELECT id, v FROM vrace.t").collect())
    want = {k: 0 for k in range(200)}
    for i in committed:
        want[i * 10] = i + 1
        want[1000 + i] = i + 1
    assert rows == want
    print(
        f"{len(committed)} committed, {refused} VacuumConflict after retries, {count.value} vacuums, "
        f"{time.time() - t0:.0f} s"
    )
