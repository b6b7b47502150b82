"""MERGE on a real standalone cluster: the differential cases of tests/spark (the same case
generator and DuckDB oracle, imported) give DuckDB's results, and deletion vectors and tablets
are written by the executors, whose Python has no tablets package of its own: every task ran
the zip the session shipped (``tablets.spark.ship``).

TABLETS_CLUSTER_CASES=120 runs every differential case (default: every fifth of them).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time

import pytest
from support.timings import record

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = int(os.environ.get("TABLETS_CLUSTER_CASES", "0")) or None


def _differential():
    """tests/spark/test_merge_differential.py, loaded under a name of its own."""
    name = "tablets_differential_cases"
    if name not in sys.modules:
        path = os.path.join(os.path.dirname(HERE), "spark", "test_merge_differential.py")
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


diff = _differential()
CASE_IDS = list(range(CASES)) if CASES else list(range(0, diff.CASES, 5))


def _executor_facts(spark) -> list[tuple[str, str, int]]:
    """(sys.executable, where tablets was imported from, pid) of the Python workers of 4 tasks."""

    def probe(batches):
        import os
        import sys

        import pyarrow as pa
        import tablets

        for _ in batches:
            yield pa.RecordBatch.from_pydict(
                {"python": [sys.executable], "tablets": [tablets.__file__], "pid": [os.getpid()]}
            )

    rows = spark.range(4, numPartitions=4).mapInArrow(probe, "python string, tablets string, pid long").collect()
    return [(r.python, r.tablets, r.pid) for r in rows]


def test_executors_run_the_shipped_package(spark, worker_python, cluster):
    facts = _executor_facts(spark)
    assert {p for p, _, _ in facts} == {worker_python}
    assert all(".zip" in t and t.endswith(os.path.join("tablets", "__init__.py")) for _, t, _ in facts), facts
    assert os.getpid() not in {pid for _, _, pid in facts}
    assert spark.sparkContext.master == cluster.master


@pytest.mark.parametrize("case", CASE_IDS)
def test_merge_matches_duckdb_on_the_cluster(spark, tmp_path, case):
    import random

    rng = random.Random(case)
    target = diff._rows(rng, rng.randint(0, 9), 6)
    source = diff._rows(rng, rng.randint(0, 7), 6)
    stmt = diff._statement(rng)
    ghosts = diff._rows(rng, rng.randint(0, 3), 6)
    expected = diff._duckdb(target, source, stmt)
    if case % 3 == 1:
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    try:
        t0 = time.perf_counter()
        got = diff._ours(spark, str(tmp_path / "t"), target, ghosts, source, stmt, skip_unchanged=case % 2 == 0)
        record("cluster: differential MERGE", time.perf_counter() - t0)
    finally:
        spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")
    assert got == expected, f"{stmt}\ntarget={target}\nghosts={ghosts}\nsource={source}"


def test_deletion_vectors_are_written_by_the_executors(spark):
    """SQL through the front door on the cluster: INSERT, a MERGE that deletes and updates
    (deletion vectors, written by the executors' tasks), UPDATE, DELETE, SELECT; and a plain
    ``spark.sql`` read (the native-read rule)."""
    import tablets
    from tablets.spark import catalog
    from tablets.storage import TabletTable

    db = tablets.connect(spark=spark)
    db.sql("CREATE TABLE stock (item STRING, qty BIGINT) USING tablets")
    db.sql("INSERT INTO stock SELECT concat('i', id), id FROM range(100)")
    spark.createDataFrame([("i1", 1), ("i2", 5), ("new", 7)], "item string, qty bigint").createOrReplaceTempView(
        "sales"
    )
    t0 = time.perf_counter()
    res = db.sql(
        "MERGE INTO stock t USING sales s ON t.item = s.item "
        "WHEN MATCHED AND t.qty - s.qty = 0 THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET qty = s.qty - t.qty "
        "WHEN NOT MATCHED THEN INSERT (item, qty) VALUES (s.item, s.qty)"
    )
    record("cluster: stock MERGE (SQL)", time.perf_counter() - t0)
    m = res.metrics
    assert (m.rows_inserted, m.rows_updated, m.rows_deleted, m.dvs_written) == (1, 1, 1, 1)
    root = catalog.lookup(spark, "stock")
    assert root is not None
    snap = TabletTable(root).snapshot()
    dvs = [st.dv for st in snap.tablets.values() if st.dv is not None]
    assert len(dvs) == 1 and dvs[0].cardinality == 2  # i1 deleted, i2's old image
    dv_files = os.listdir(os.path.join(root, "dv"))
    assert len(dv_files) == 1 and dv_files[0] == os.path.basename(dvs[0].path)
    db.sql("UPDATE stock SET qty = qty + 1000 WHERE item = 'i3'")
    db.sql("DELETE FROM stock WHERE qty >= 90 AND qty < 1000")
    rows = dict((r.item, r.qty) for r in db.sql("SELECT * FROM stock").collect())
    assert "i1" not in rows and rows["i2"] == 3 and rows["new"] == 7 and rows["i3"] == 1003
    assert len(rows) == 100 - 1 - 10 + 1
    # plain Spark SQL on the cluster: the native-read rule's Parquet scan, deletion vectors applied
    from tablets.spark.native import MARKER

    plain = spark.sql("SELECT item, qty FROM stock WHERE qty < 1000")
    assert MARKER in plain._jdf.queryExecution().analyzed().toString()
    # the deletion vectors are tested in the executors' tasks (the jar added for them), not broadcast
    assert "tablets_live" in plain._jdf.queryExecution().optimizedPlan().toString()
    assert dict((r.item, r.qty) for r in plain.collect()) == {k: v for k, v in rows.items() if v < 1000}
    db.sql("DROP TABLE stock")
