"""Deletion vectors tested in the scan's tasks (``tablets.spark.vectors``): the same rows as the
broadcast of their words (the fallback), through every read path, and nothing in the plan that
grows with the rows."""

import os
import random

import numpy as np
import pyarrow as pa
import pytest
import tablets
from support.damage import add_tablet_without_row_ids
from tablets.exceptions import FormatError
from tablets.spark import vectors
from tablets.spark.frames import SCAN_CONF, snapshot_frame
from tablets.storage import RowLevelSink

pytestmark = pytest.mark.spark


def _rows(lo: int, hi: int) -> pa.Table:
    ids = np.arange(lo, hi, dtype=np.int64)
    return pa.table({"id": ids, "v": (ids % 97).astype(np.int32)})


@pytest.fixture(scope="module")
def db(spark):
    """``xd.t``: 5 tablets (one without stored row ids, two of one size), random rows deleted
    from four of them, two of those in two statements (a vector rewritten)."""
    d = tablets.connect(spark=spark)
    d.sql("CREATE DATABASE IF NOT EXISTS xd")
    d.sql("DROP TABLE IF EXISTS xd.t")
    d.sql("CREATE TABLE xd.t (id BIGINT, v INT) USING tablets")
    t = d.table_of("xd.t")
    for lo, hi in ((0, 1000), (1000, 2000), (2000, 2700), (2700, 5000)):
        t.append(_rows(lo, hi))
    add_tablet_without_row_ids(t, _rows(5000, 5500))
    rng = random.Random(28)
    for _ in range(2):
        snap = t.snapshot()
        ids = sorted(snap.tablets)
        h = t.begin_delete()
        sink = RowLevelSink(h)
        for tid in ids[:4]:
            rows = snap.tablets[tid].add.rows
            sink.delete([tid] * 40, rng.sample(range(rows), 40))
        sink.delete([ids[4]], [rng.randrange(500)])
        t.finish(h, sink.finish())
    return d


def _both(spark, read):
    """``read()`` with the vectors tested in the tasks, then with their words broadcast."""
    on = read()
    spark.conf.set(vectors.EXECUTORS_CONF, "false")
    try:
        off = read()
    finally:
        spark.conf.unset(vectors.EXECUTORS_CONF)
    return on, off


def test_every_read_path_gives_the_rows_of_the_broadcast(db, spark):
    assert vectors.on_executors(spark)
    t = db.table_of("xd.t")
    expected = sorted(t.read(columns=["id"]).column("id").to_pylist())
    assert 5500 - 4 * 80 - 2 <= len(expected) < 5500 - 4 * 40
    queries = {
        "front door": lambda: db.sql("SELECT id FROM xd.t").collect(),
        "front door, a WHERE": lambda: db.sql("SELECT id FROM xd.t WHERE v < 50").collect(),
        "spark.sql": lambda: spark.sql("SELECT id FROM xd.t").collect(),
        "engine scan": lambda: snapshot_frame(spark, t, t.snapshot(), ["id"]).select("id").collect(),
    }
    for name, q in queries.items():
        on, off = _both(spark, q)
        assert sorted(r[0] for r in on) == sorted(r[0] for r in off), name
        if "WHERE" not in name:
            assert sorted(r[0] for r in on) == expected, name


def test_the_arrow_reader_applies_them_in_its_tasks(db, spark):
    t = db.table_of("xd.t")
    expected = sorted(t.read(columns=["id"]).column("id").to_pylist())
    spark.conf.set(SCAN_CONF, "arrow")
    try:
        scan = snapshot_frame(spark, t, t.snapshot(), ["id"])
        assert sorted(r[0] for r in scan.collect()) == expected
    finally:
        spark.conf.unset(SCAN_CONF)


def test_the_plan_holds_one_entry_per_tablet_and_no_broadcast(db, spark):
    t = db.table_of("xd.t")
    df = snapshot_frame(spark, t, t.snapshot(), ["id"])
    plan = df._jdf.queryExecution().executedPlan().toString()
    assert "tablets_live" in plan and "5 deletion vectors" in plan
    assert "Broadcast" not in plan and "LocalTableScan" not in plan
    spark.conf.set(vectors.EXECUTORS_CONF, "false")
    try:
        old = snapshot_frame(spark, t, t.snapshot(), ["id"])._jdf.queryExecution().executedPlan().toString()
    finally:
        spark.conf.unset(vectors.EXECUTORS_CONF)
    assert "Broadcast" in old


def test_a_merge_deletes_and_updates_the_same_rows_either_way(db, spark):
    """The engine's target scan (``live_sql``) on both paths: a MERGE over the table's live rows."""
    results = []
    for setting in ("true", "false"):
        spark.conf.set(vectors.EXECUTORS_CONF, setting)
        try:
            db.sql("DROP TABLE IF EXISTS xd.m")
            db.sql("CREATE TABLE xd.m USING tablets AS SELECT * FROM xd.t")
            db.sql("DELETE FROM xd.m WHERE id % 7 = 0")
            db.sql(
                "MERGE INTO xd.m t USING (SELECT id, 1000 AS v FROM range(0, 6000, 5)) s ON t.id = s.id "
                "WHEN MATCHED AND t.v > 40 THEN DELETE WHEN MATCHED THEN UPDATE SET v = s.v "
                "WHEN NOT MATCHED THEN INSERT *"
            )
            results.append(sorted(tuple(r) for r in db.sql("SELECT id, v FROM xd.m").collect()))
        finally:
            spark.conf.unset(vectors.EXECUTORS_CONF)
    assert results[0] == results[1]
    assert any(v == 1000 for _, v in results[0])


def test_a_damaged_vector_fails_the_query_naming_it(db, spark, tmp_path):
    db.sql("DROP TABLE IF EXISTS xd.bad")
    db.sql("CREATE TABLE xd.bad (id BIGINT, v INT) USING tablets")
    t = db.table_of("xd.bad")
    t.append(_rows(0, 100))
    (tid,) = t.snapshot().tablets
    h = t.begin_delete()
    sink = RowLevelSink(h)
    sink.delete([tid] * 2, [3, 70])
    t.finish(h, sink.finish())
    dv = t.snapshot().tablets[tid].dv
    path = os.path.join(t.root, dv.path)
    with open(path, "rb") as f:
        data = bytearray(f.read())
    data[-6] ^= 0x01
    os.chmod(path, 0o644)
    with open(path, "wb") as f:
        f.write(bytes(data))
    with pytest.raises(FormatError, match="checksum") as err:  # tablets.spark.errors: in the product's words
        snapshot_frame(spark, t, t.snapshot(), ["id"]).collect()
    assert str(err.value).startswith(f"deletion vector {path}: checksum") and "at org.apache" not in str(err.value)
