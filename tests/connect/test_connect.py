"""dbt-tablets over Spark Connect (``remote: sc://...``): every statement kind through the SQL
front door on a ``tablets.connect(spark=<Connect session>)``, and the integration project's main
job (seed, run: create, run: merge, test) through a profile with ``remote: sc://127.0.0.1:<port>``.

The server's Python workers have no tablets package: they run what the session shipped with
``spark.addArtifacts(zip, pyfile=True)`` (``tablets.spark.ship``).

Measured on 2 cores (shared with other Spark jobs): the main job over Connect took 100 s (the
same job on the embedded ``local[2]``: 121 s; on the two-worker cluster: 151-156 s); a small
MERGE 5-6 s; the whole module about 2.7 minutes with the server's start.
"""

from __future__ import annotations

import os
import time

from support.main_job import run_main_job
from support.timings import record


def test_connect_session_is_remote(spark):
    from tablets.spark.backend import CONNECT, backend

    assert backend(spark) is CONNECT and backend(spark.range(1)).connect
    assert spark.range(3).count() == 3


def test_statements_over_connect(spark):
    import tablets
    from tablets.spark import catalog
    from tablets.storage import TabletTable

    db = tablets.connect(spark=spark)
    db.sql("CREATE DATABASE IF NOT EXISTS direct")
    res = db.sql("CREATE TABLE direct.stock (item STRING, qty BIGINT) USING tablets")
    assert res.operation == "CREATE TABLE"
    res = db.sql("INSERT INTO direct.stock VALUES ('a', 10), ('b', 5), ('c', 1)")
    assert res.metrics.rows_inserted == 3
    # an insert-only MERGE: the statement kind that needed `.rdd` (not on Spark Connect)
    t0 = time.perf_counter()
    res = db.sql(
        "MERGE INTO direct.stock t USING (SELECT 'd' AS item, 4L AS qty UNION ALL SELECT 'a', 99L) s "
        "ON t.item = s.item WHEN NOT MATCHED THEN INSERT *"
    )
    record("connect: insert-only MERGE", time.perf_counter() - t0)
    assert (res.metrics.rows_inserted, res.metrics.rows_updated) == (1, 0)
    t0 = time.perf_counter()
    res = db.sql(
        "MERGE INTO direct.stock t USING (SELECT 'a' AS item, 10L AS sold UNION ALL SELECT 'b', 2L "
        "UNION ALL SELECT 'e', 3L) s ON t.item = s.item "
        "WHEN MATCHED AND t.qty - s.sold = 0 THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET qty = t.qty - s.sold "
        "WHEN NOT MATCHED THEN INSERT (item, qty) VALUES (s.item, s.sold)"
    )
    record("connect: MERGE (delete, update, insert)", time.perf_counter() - t0)
    m = res.metrics
    assert (m.rows_inserted, m.rows_updated, m.rows_deleted) == (1, 1, 1)
    assert m.dvs_written == 1
    res = db.sql("UPDATE direct.stock SET qty = qty * 100 WHERE item = 'c'")
    assert res.metrics.rows_updated == 1
    res = db.sql("DELETE FROM direct.stock WHERE item = 'd'")
    assert res.metrics.rows_deleted == 1
    rows = sorted(tuple(r) for r in db.sql("SELECT item, qty FROM direct.stock").collect())
    assert rows == [("b", 3), ("c", 100), ("e", 3)]
    root = catalog.lookup(spark, "direct.stock")
    assert root is not None and os.listdir(os.path.join(root, "dv"))
    assert TabletTable(root).snapshot().live_rows == 3
    db.sql("DROP TABLE direct.stock")
    assert catalog.lookup(spark, "direct.stock") is None


def test_a_dropped_column_keeps_the_entrys_comments_over_connect(spark):
    """Under Connect the entry is made again when a column goes (no session catalog to alter it
    in place): the comments Spark keeps on it for the columns kept go into the new one."""
    import tablets
    from tablets.spark import catalog

    db = tablets.connect(spark=spark)
    db.sql("CREATE DATABASE IF NOT EXISTS direct")
    db.sql("CREATE TABLE direct.narrowing (id INT, gone STRING, kept DOUBLE) USING tablets")
    db.sql("INSERT INTO direct.narrowing VALUES (1, 'x', 1.5)")
    spark.sql("ALTER TABLE direct.narrowing ALTER COLUMN kept COMMENT 'the one kept'")
    spark.sql("ALTER TABLE direct.narrowing ALTER COLUMN gone COMMENT 'going'")
    t = db.table_of("direct.narrowing")
    t.set_schema([c for c in t.snapshot().metadata.schema if c[0] != "gone"])
    catalog.sync_schema(spark, "direct.narrowing")
    cols = [(c.name, c.dataType, c.description) for c in spark.catalog.listColumns("direct.narrowing")]
    assert cols == [("id", "int", None), ("kept", "double", "the one kept")]
    assert sorted(tuple(r) for r in db.sql("SELECT * FROM direct.narrowing").collect()) == [(1, 1.5)]
    db.sql("DROP TABLE direct.narrowing")


def test_size_estimates_over_connect(spark):
    """The broadcast decision has Spark's size estimate on Connect too (EXPLAIN COST)."""
    from tablets.spark import sizes

    df = spark.range(1000).selectExpr("id", "cast(id AS string) AS s")
    size = sizes.size_bytes(df)
    assert size is not None and 0 < size < 1 << 20
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "2MB")
    try:
        assert sizes.broadcast_threshold(spark) == 2 << 20
    finally:
        spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")


def test_integration_project_over_connect(connect_server, tmp_path):
    warehouse = str(tmp_path / "warehouse" / "warehouse")
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE")}
    job = run_main_job(tmp_path, {"remote": connect_server.url, "warehouse": warehouse}, env=env)
    record("connect: dbt main job", job.seconds)
    assert job.returncode == 0, (job.stdout[-6000:], job.stderr[-3000:])
    assert "main job passed" in job.stdout
    assert "MERGE 3 (inserted 1, updated 1, deleted 1, unchanged 0)" in job.stdout  # stock
    dvs = [
        os.path.join(d, f) for d, _, files in os.walk(warehouse) for f in files if "/stock/dv/" in os.path.join(d, f)
    ]
    assert dvs, "the stock model's MERGE wrote no deletion vector"
