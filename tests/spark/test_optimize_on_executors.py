"""OPTIMIZE and auto-compaction rewrite tablets in Spark's tasks (``tablets.engine.rewrite``,
issue 28): the driver picks and commits, tasks read and write. Below
``spark.tablets.optimize.driverRewriteBytes`` the driver rewrites alone, with no Spark job.
RESTORE's check that its files exist runs in tasks too above
``spark.tablets.restore.driverCheckFiles`` (``tablets.engine.file_check``)."""

import itertools
import os

import pyarrow as pa
import pytest
from support.conf import settings
from tablets.engine.file_check import CHECK_CONF
from tablets.engine.rewrite import REWRITE_CONF, bins
from tablets.exceptions import FormatError

pytestmark = pytest.mark.spark
_groups = itertools.count()


DATABASE = "rw"  # created by the conftest's db fixture


def _jobs(spark, fn):
    """``fn()`` and the number of Spark jobs it ran."""
    sc = spark.sparkContext
    group = f"rewrite-test-{next(_groups)}"
    sc.setJobGroup(group, group)
    try:
        out = fn()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    return out, len(sc.statusTracker().getJobIdsForGroup(group))


def _table(db, name, props=""):
    db.sql(f"DROP TABLE IF EXISTS {name}")
    db.sql(
        f"CREATE TABLE {name} (id BIGINT, v STRING, d DOUBLE) USING tablets "
        f"TBLPROPERTIES ('target_tablet_rows' = '10'{props})"
    )
    t = db.table_of(name)
    for start in range(0, 40, 4):  # ten tablets of four rows, ids interleaved across them
        ids = [(i * 7) % 40 for i in range(start, start + 4)]
        t.append(pa.table({"id": ids, "v": [f"v{i}" for i in ids], "d": [i + 0.5 for i in ids]}))
    db.sql(f"DELETE FROM {name} WHERE id % 5 = 0")  # deletion vectors in most tablets
    return sorted(db.table_of(name).read().to_pylist(), key=lambda r: r["id"])


def test_tasks_rewrite_groups_of_tablets_with_their_deletes_applied(db, spark):
    before = _table(db, "rw.plain")
    with settings(spark, {REWRITE_CONF: "0"}):
        result, jobs = _jobs(spark, lambda: db.sql("OPTIMIZE rw.plain"))
    assert jobs >= 1
    out = result.collect()[0]
    t = db.table_of("rw.plain")
    assert sorted(t.read().to_pylist(), key=lambda r: r["id"]) == before
    assert out.numFilesRemoved == 10
    # 32 live rows of 10 tablets (3-4 rows each) in bins of at most 10 rows: four new tablets
    assert out.numFilesAdded == len(t.snapshot().tablets) == 4
    assert all(st.dv is None for st in t.snapshot().tablets.values())
    sizes = [st.add.rows for st in t.snapshot().tablets.values()]
    assert sum(sizes) == 32 and max(sizes) <= 10
    info = db.sql("DESCRIBE HISTORY rw.plain LIMIT 1").collect()[0]
    assert info.operation == "OPTIMIZE" and info.operationMetrics["rows_copied"] == "32"


def test_a_clustered_table_is_range_partitioned_by_its_cluster_columns(db, spark):
    before = _table(db, "rw.clustered", ", 'cluster_by' = 'id'")
    with settings(spark, {REWRITE_CONF: "0"}):
        db.sql("OPTIMIZE rw.clustered")
    t = db.table_of("rw.clustered")
    assert sorted(t.read().to_pylist(), key=lambda r: r["id"]) == before
    parts = [p.column("id").to_pylist() for p in t.scan()]
    assert all(p == sorted(p) for p in parts)
    ranges = sorted((min(p), max(p)) for p in parts)
    assert all(a[1] < b[0] for a, b in zip(ranges, ranges[1:], strict=False))  # disjoint: pruning skips them
    assert sum(len(p) for p in parts) == 32


def test_few_rows_are_rewritten_on_the_driver_with_no_spark_job(db, spark):
    before = _table(db, "rw.small")
    with settings(spark, {REWRITE_CONF: "64m"}):
        _, jobs = _jobs(spark, lambda: db.sql("OPTIMIZE rw.small"))
    assert jobs == 0
    assert sorted(db.table_of("rw.small").read().to_pylist(), key=lambda r: r["id"]) == before


def test_auto_compaction_takes_the_same_path(db, spark):
    db.sql("DROP TABLE IF EXISTS rw.auto")
    db.sql(
        "CREATE TABLE rw.auto (id BIGINT, v STRING) USING tablets "
        "TBLPROPERTIES ('auto_compact' = 'true', 'auto_compact_min_tablets' = '3')"
    )
    with settings(spark, {REWRITE_CONF: "0"}):
        for i in range(4):
            db.sql(f"INSERT INTO rw.auto VALUES ({i}, 'a{i}')")
    t = db.table_of("rw.auto")
    assert len(t.snapshot().tablets) < 4
    assert sorted(t.read().column("id").to_pylist()) == [0, 1, 2, 3]
    assert any(h.commit and h.commit.operation == "OPTIMIZE" for h in t.history())


def test_bins_pack_tablets_first_fit_decreasing():
    from types import SimpleNamespace

    from tablets.storage.actions import AddTablet
    from tablets.storage.snapshot import TabletState

    sizes = {"t0": 6, "t1": 5, "t2": 4, "t3": 3, "t4": 2, "t5": 30}
    snap = SimpleNamespace(tablets={t: TabletState(AddTablet(t, f"{t}.parquet", r, 100)) for t, r in sizes.items()})
    assert bins(snap, list(sizes), 10) == [["t5"], ["t0", "t2"], ["t1", "t3", "t4"]]  # a big one alone


# --- RESTORE's check of its files ------------------------------------------------------------


def _restorable(db, name):
    db.sql(f"DROP TABLE IF EXISTS {name}")
    db.sql(f"CREATE TABLE {name} (id BIGINT, v STRING) USING tablets TBLPROPERTIES ('target_tablet_rows' = '2')")
    db.sql(f"INSERT INTO {name} VALUES (1,'a'),(2,'b'),(3,'c'),(4,'d'),(5,'e')")  # version 1: three tablets
    db.sql(f"DELETE FROM {name} WHERE id = 2")  # version 2: a deletion vector
    db.sql(f"DELETE FROM {name} WHERE id > 0")
    return db.table_of(name)


@pytest.mark.parametrize("where", ["driver", "tasks"])
def test_restore_checks_its_files_on_the_driver_or_in_tasks(db, where):
    t = _restorable(db, f"rw.restore_{where}")
    conf = {CHECK_CONF: "100" if where == "driver" else "0"}
    with settings(db.spark, conf):
        _, jobs = _jobs(db.spark, lambda: db.sql(f"RESTORE rw.restore_{where} TO VERSION AS OF 2"))
    assert sorted(r["id"] for r in t.read().to_pylist()) == [1, 3, 4, 5]
    assert (jobs == 0) if where == "driver" else (jobs >= 1)


@pytest.mark.parametrize("where", ["driver", "tasks"])
def test_restore_of_a_version_whose_files_are_gone_names_them(db, where):
    t = _restorable(db, f"rw.gone_{where}")

    def files(snap):
        return {st.add.path for st in snap.tablets.values()} | {st.dv.path for st in snap.tablets.values() if st.dv}

    lost = sorted(files(t.snapshot(2)) - files(t.snapshot()))[0]  # as a VACUUM would delete it
    os.remove(os.path.join(t.root, lost))
    before = t.version
    conf = {CHECK_CONF: "100" if where == "driver" else "0"}
    with settings(db.spark, conf), pytest.raises(FormatError, match="can no longer be restored") as e:
        db.sql(f"RESTORE rw.gone_{where} TO VERSION AS OF 2")
    assert lost in str(e.value)
    assert t.version == before
