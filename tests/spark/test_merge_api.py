"""The Python builder, engine options (skip unchanged, pruning, clustering) and commit metrics."""

import pytest
import tablets
from support.conf import LOS_ANGELES, settings
from support.jobs import spark_jobs
from tablets.engine.route import DRIVER_SCAN_CONF, PRUNE_CONF
from tablets.storage import TabletTable

pytestmark = pytest.mark.spark


DATABASE = "api"  # created by the conftest's db fixture


def rows(db, sql):
    return sorted(tuple(r) for r in db.sql(sql).collect())


def merge(db, spark, stmt, *, driver=True):
    """Run ``stmt``, its metrics; ``driver=False`` turns the driver's selection of small targets off."""
    if not driver:
        spark.conf.set(DRIVER_SCAN_CONF, "0")
    try:
        return db.sql(stmt).metrics
    finally:
        spark.conf.unset(DRIVER_SCAN_CONF)


def fresh(db, name, ddl, values=None):
    db.sql(f"DROP TABLE IF EXISTS {name}")
    db.sql(f"CREATE TABLE {name} ({ddl}) USING tablets")
    if values:
        db.sql(f"INSERT INTO {name} VALUES {values}")


def test_builder_mirrors_sql(db):
    fresh(
        db,
        "api.customers",
        "id INT, name STRING, active BOOLEAN",
        "(1, 'ann', true), (2, 'bob', true), (3, 'cy', true)",
    )
    updates = db.spark.createDataFrame(
        [(1, "ann", False), (3, "cyrus", False), (4, "dee", False)], "id INT, name STRING, gone BOOLEAN"
    )
    builder = (
        tablets.table(db, "api.customers")
        .merge(updates, on="t.id = s.id")
        .when_matched_delete(condition="s.name = t.name")
        .when_matched_update(set={"name": "s.name"})
        .when_not_matched_insert(values={"id": "s.id", "name": "s.name", "active": "true"})
        .when_not_matched_by_source_update(set={"active": "false"})
    )
    assert "[Join] FULL OUTER ON t.id = s.id" in builder.explain()
    m = builder.execute()
    assert (m.rows_deleted, m.rows_updated, m.rows_inserted) == (1, 2, 1)
    assert rows(db, "SELECT * FROM api.customers") == [(2, "bob", False), (3, "cyrus", True), (4, "dee", True)]
    # the commit records the statement's metrics
    last = db.table_of("api.customers").history()[-1].commit
    assert last.operation == "MERGE" and last.metrics_dict()["rows_updated"] == 2


def test_skip_unchanged_can_be_turned_off(db):
    fresh(db, "api.same", "id INT, v INT", "(1, 10), (2, 20)")
    stmt = "MERGE INTO api.same t USING (SELECT * FROM VALUES (1, 10), (2, 21) AS v(id, v)) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET *"
    m = db.sql(stmt).metrics
    assert (m.rows_updated, m.rows_unchanged, m.dvs_written) == (1, 1, 1)
    m = db.sql(stmt, options={"skip_unchanged": False}).metrics
    assert (m.rows_updated, m.rows_unchanged) == (2, 0)
    assert rows(db, "SELECT * FROM api.same") == [(1, 10), (2, 21)]


@pytest.mark.parametrize("plan", ["driver", "spark"])
def test_an_update_that_rewrites_unchanged_rows_reads_only_the_columns_it_keeps(db, plan):
    """Without ``skip_unchanged`` an UPDATE reads the target columns its new rows keep or its
    conditions name, not every column: an upsert of every column reads the key alone (EXPLAIN
    says so), on both plans, and gives the rows the full read gives."""
    stmt = (
        "MERGE INTO api.narrow t USING (SELECT * FROM VALUES (1, 'a', 10, 1.5D), (2, 'B', 21, 2.5D), "
        "(9, 'z', 90, 9.5D) AS v(id, s, v, d)) s ON t.id = s.id "
        "WHEN MATCHED AND s.v > 15 THEN UPDATE SET * WHEN MATCHED THEN UPDATE SET v = s.v + t.v "
        "WHEN NOT MATCHED THEN INSERT *"
    )
    conf = {DRIVER_SCAN_CONF: "0"} if plan == "spark" else {}
    results = []
    for skip in (True, False):
        fresh(
            db,
            "api.narrow",
            "id INT, s STRING, v INT, d DOUBLE",
            "(1, 'a', 10, 1.0D), (2, 'b', 20, 2.0D), (3, 'c', 30, 3.0D)",
        )
        with settings(db.spark, conf):
            m = db.sql(stmt, options={"skip_unchanged": skip}).metrics
        results.append(((m.rows_inserted, m.rows_updated + m.rows_unchanged), rows(db, "SELECT * FROM api.narrow")))
    assert results[0] == results[1]
    assert results[1][1] == [(1, "a", 20, 1.0), (2, "B", 21, 2.5), (3, "c", 30, 3.0), (9, "z", 90, 9.5)]
    upsert = "MERGE INTO api.narrow t USING (SELECT 1 AS id, 'q' AS s, 1 AS v, 0.5D AS d) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    assert "[Scan] target api.narrow AS t: id + row ids" in db.sql(
        f"EXPLAIN {upsert}", options={"skip_unchanged": False}
    )
    assert "AS t: id, s, v, d + row ids" in db.sql(f"EXPLAIN {upsert}")


def test_pruning_skips_tablets_outside_source_keys(db):
    fresh(db, "api.clustered", "id BIGINT, v INT")
    for i in range(5):  # five tablets with disjoint id ranges
        db.sql(f"INSERT INTO api.clustered SELECT id, 0 FROM range({i * 1000}, {(i + 1) * 1000})")
    res = db.sql(
        "MERGE INTO api.clustered t USING (SELECT id FROM range(2100, 2200)) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = 1"
    )
    m = res.metrics
    assert m.rows_updated == 100
    assert m.tablets_scanned < m.tablets_scanned + m.tablets_pruned and m.tablets_pruned >= 4
    assert db.sql("SELECT sum(v) FROM api.clustered").collect()[0][0] == 100
    assert "tablet pruning" in db.sql(
        "EXPLAIN MERGE INTO api.clustered t USING (SELECT id FROM range(1, 2)) s ON t.id = s.id WHEN MATCHED THEN DELETE"
    )


@pytest.mark.parametrize("driver", [True, False], ids=["driver", "spark"])
def test_pruning_skips_tablets_between_the_source_keys(db, spark, driver):
    """A source of recent keys and a few late ones (min..max spans the whole table) reads only
    the tablets that can hold one of its integer keys; pruning off reads them all, same rows."""
    fresh(db, "api.late", "id BIGINT, v INT")
    for i in range(6):  # six tablets with disjoint id ranges
        db.sql(f"INSERT INTO api.late SELECT id, 0 FROM range({i * 100}, {(i + 1) * 100})")
    stmt = (
        "MERGE INTO api.late t USING (SELECT * FROM VALUES (7L, 1), (550L, 1), (551L, 1), (900L, 1) AS s(id, v)) s "
        "ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = t.v + s.v WHEN NOT MATCHED THEN INSERT *"
    )
    m = merge(db, spark, stmt, driver=driver)
    assert (m.rows_updated, m.rows_inserted, m.tablets_scanned, m.tablets_pruned) == (3, 1, 2, 4)
    with settings(spark, {PRUNE_CONF: "false"}):
        m = merge(db, spark, stmt, driver=driver)
    assert (m.rows_updated, m.rows_inserted, m.tablets_scanned, m.tablets_pruned) == (4, 0, 7, 0)
    assert rows(db, "SELECT id, v FROM api.late WHERE v > 0") == [(7, 2), (550, 2), (551, 2), (900, 2)]
    assert db.sql("SELECT count(*) FROM api.late").collect()[0][0] == 601


def test_a_source_too_big_to_collect_prunes_by_the_buckets_of_its_keys(db, spark):
    """A source Spark keeps (no broadcast, so not collected): the aggregate that counts it also
    takes which buckets of the target's key span its keys fall in, and the tablets between its
    keys are skipped. Keys at BIGINT's ends: the buckets are computed without overflow."""
    fresh(db, "api.late_big", "id BIGINT, v INT")
    for i in range(6):  # six tablets with disjoint id ranges
        db.sql(f"INSERT INTO api.late_big SELECT id, 0 FROM range({i * 100}, {(i + 1) * 100})")
    stmt = (
        "MERGE INTO api.late_big t USING (SELECT * FROM VALUES (7L, 1), (550L, 1), (551L, 1), (900L, 1) AS s(id, v)) s "
        "ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = t.v + s.v WHEN NOT MATCHED THEN INSERT *"
    )
    with settings(spark, {"spark.sql.autoBroadcastJoinThreshold": "-1"}):
        m = merge(db, spark, stmt, driver=False)
        assert (m.rows_updated, m.rows_inserted, m.tablets_scanned, m.tablets_pruned) == (3, 1, 2, 4)
        with settings(spark, {PRUNE_CONF: "false"}):
            m = merge(db, spark, stmt, driver=False)
        assert (m.rows_updated, m.rows_inserted, m.tablets_pruned) == (4, 0, 0)
        assert rows(db, "SELECT id, v FROM api.late_big WHERE v > 0") == [(7, 2), (550, 2), (551, 2), (900, 2)]

        lo, hi = -(2**63), 2**63 - 1
        fresh(db, "api.ends", "id BIGINT, v INT")
        for a, b in [(lo, lo + 50), (-1000, -900), (hi - 50, hi)]:
            db.sql(f"INSERT INTO api.ends SELECT id, 0 FROM range({a}, {b})")
        db.sql(f"INSERT INTO api.ends VALUES ({hi}, 0)")
        m = merge(
            db,
            spark,
            f"MERGE INTO api.ends t USING (SELECT * FROM VALUES ({lo + 3}L, 1), ({hi}L, 1), (-950L, 1) AS s(id, v)) s "
            "ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v",
            driver=False,
        )
        assert m.rows_updated == 3
    assert rows(db, "SELECT id FROM api.ends WHERE v > 0") == [(lo + 3,), (-950,), (hi,)]


def test_by_source_reads_only_tablets_its_conditions_or_pairs_need(db):
    """A BY SOURCE clause acts on target rows without a pair, anywhere in the table: a tablet is
    skipped only where its statistics rule out every acting BY SOURCE clause's condition and
    (with a MATCHED clause) its keys lie outside the source's."""
    fresh(db, "api.sync", "id BIGINT, v INT")
    for lo in (0, 100, 200):
        db.sql(f"INSERT INTO api.sync SELECT id, 0 FROM range({lo}, {lo + 100})")
    m = db.sql(
        "MERGE INTO api.sync t USING (SELECT id, 1 AS v FROM range(0, 10)) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED BY SOURCE AND t.id >= 250 THEN DELETE"
    ).metrics
    assert (m.rows_updated, m.rows_deleted, m.tablets_pruned) == (10, 50, 1)  # ids 100-199: no pair, none >= 250
    m = db.sql(
        "MERGE INTO api.sync t USING (SELECT id FROM range(0, 10)) s ON t.id = s.id "
        "WHEN NOT MATCHED BY SOURCE AND t.id >= 150 THEN DELETE"
    ).metrics
    assert (m.rows_deleted, m.tablets_pruned) == (
        100,
        2,
    )  # no MATCHED clause: ids 0-99 and the updated 0-9 need no read
    m = db.sql(
        "MERGE INTO api.sync t USING (SELECT id, 2 AS v FROM range(0, 10)) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED BY SOURCE AND t.id < 5 THEN DELETE "
        "WHEN NOT MATCHED BY SOURCE THEN UPDATE SET v = 9"
    ).metrics
    assert (m.rows_updated, m.tablets_pruned) == (10 + 140, 0)  # an unconditional BY SOURCE clause reads them all
    assert rows(db, "SELECT count(*), sum(v) FROM api.sync") == [(150, 10 * 2 + 140 * 9)]


def test_cluster_by_sorts_new_tablets(db, spark):
    fresh(db, "api.sorted", "id BIGINT, v INT")
    table = db.table_of("api.sorted")
    opts = {"cluster_by": ("id",), "target_tablet_rows": 250}
    db.sql("INSERT INTO api.sorted SELECT id, 0 FROM range(0, 1)")
    db.sql(
        "MERGE INTO api.sorted t USING (SELECT (id * 7919) % 1000 AS id FROM range(0, 1000)) s ON t.id = s.id "
        "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, 1)",
        options=opts,
    )
    ranges = sorted(
        (st.add.column_stats("id").min, st.add.column_stats("id").max)
        for st in table.snapshot().tablets.values()
        if st.add.rows > 1
    )
    assert len(ranges) >= 2
    assert all(a[1] < b[0] for a, b in zip(ranges, ranges[1:], strict=False))  # disjoint, ordered key ranges


def test_time_travel_through_the_store(db):
    fresh(db, "api.tt", "id INT", "(1), (2)")
    db.sql("DELETE FROM api.tt WHERE id = 1")
    table = TabletTable(db.table_of("api.tt").root)
    assert table.read(version=1).column("id").to_pylist() == [1, 2]
    assert table.read().column("id").to_pylist() == [2]


@pytest.mark.parametrize("driver", [True, False], ids=["driver-scan", "spark-scan"])
def test_row_groups_outside_the_source_keys_are_skipped_and_deletes_still_apply(db, spark, monkeypatch, driver):
    """The target scan keeps only the source's key range, so Parquet skips row groups inside a
    tablet (Spark's reader, or the driver's by the row groups' statistics); the row numbers of
    the groups read, and their deletion vectors, stay exact."""
    import pyarrow as pa
    from tablets.storage import tablet

    monkeypatch.setattr(tablet, "ROW_GROUP_ROWS", 1000)  # ten row groups in one tablet
    fresh(db, "api.groups", "id BIGINT, v INT")
    n = 10_000
    db.table_of("api.groups").append(
        pa.table({"id": pa.array(range(n), pa.int64()), "v": pa.array([0] * n, pa.int32())})
    )
    db.sql("DELETE FROM api.groups WHERE id % 10 = 3")
    m = merge(
        db,
        spark,
        "MERGE INTO api.groups t USING (SELECT id FROM range(7000, 7100)) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = 1 WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, 2)",
        driver=driver,
    )
    assert (m.rows_updated, m.rows_inserted) == (90, 10)
    assert m.tablets_read_on_driver == (1 if driver else 0)
    got = rows(db, "SELECT id, v FROM api.groups WHERE id BETWEEN 6990 AND 7109")
    want = sorted(
        [(i, 0) for i in range(6990, 7000) if i % 10 != 3]
        + [(i, 2 if i % 10 == 3 else 1) for i in range(7000, 7100)]
        + [(i, 0) for i in range(7100, 7110) if i % 10 != 3]
    )
    assert got == want
    assert rows(db, "SELECT count(*) FROM api.groups") == [(n - n // 10 + 10,)]


def test_a_source_under_one_mib_is_collected_once_as_a_local_relation(db, spark):
    """Sessions built by tablets skip Spark's ConvertToLocalRelation, so a MERGE takes a source of
    up to 1 MiB (here ~0.5 MiB, above the 256 KiB of other sessions) as one local relation:
    fewer jobs than the cached path, and the same rows."""
    from tablets.spark.session import EXCLUDED_RULES_CONF as key
    from tablets.spark.session import LOCAL_RELATION_RULE

    assert LOCAL_RELATION_RULE in (spark.conf.get(key, None) or "")
    spark.range(0, 20_000).selectExpr("id * 3 AS id", "repeat('x', 20) AS pad").createOrReplaceTempView(
        "api_big_source"
    )
    stmt = (
        "MERGE INTO api.local_src t USING api_big_source s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET pad = 'y' WHEN NOT MATCHED THEN INSERT *"
    )
    counts, results, ours = {}, {}, spark.conf.get(key)
    for path, rules in (("local", ours), ("cached", "")):
        fresh(db, "api.local_src", "id BIGINT, pad STRING")
        db.sql("INSERT INTO api.local_src SELECT id, 'old' FROM range(0, 80000, 2)")
        spark.conf.set(key, rules)
        try:
            counts[path] = len(spark_jobs(spark, lambda: db.sql(stmt)))
        finally:
            spark.conf.set(key, ours)
        results[path] = rows(db, "SELECT pad, count(*), sum(id) FROM api.local_src GROUP BY pad")
    old = sum(range(0, 80000, 2)) - sum(range(0, 60000, 6))
    assert (
        results["local"]
        == results["cached"]
        == [("old", 30000, old), ("x" * 20, 10000, sum(range(3, 60000, 6))), ("y", 10000, sum(range(0, 60000, 6)))]
    )
    assert counts["local"] < counts["cached"], counts


def test_a_small_target_is_read_on_the_driver(db, spark):
    """A local source whose keys Arrow compares as Spark does, into a small target: the driver
    selects the target rows the source's keys can pair with (deletion vectors applied) and
    Spark joins only those: the same result as the Spark scan."""

    def run(driver: bool):
        fresh(db, "api.drv", "id BIGINT, k INT, s STRING")
        for i in range(3):  # three tablets
            db.sql(
                f"INSERT INTO api.drv SELECT id, CAST(id % 7 AS INT), CAST(id AS STRING) FROM range({i * 500}, {(i + 1) * 500})"
            )
        db.sql("DELETE FROM api.drv WHERE id % 5 = 0")
        stmt = (
            "MERGE INTO api.drv t USING (SELECT CAST(id AS INT) AS id, 'new' AS s FROM range(490, 1010, 3)) s "
            "ON t.id = s.id WHEN MATCHED AND t.k = 1 THEN DELETE WHEN MATCHED THEN UPDATE SET s = s.s "
            "WHEN NOT MATCHED THEN INSERT (id, k, s) VALUES (s.id, -1, s.s)"
        )
        return merge(db, spark, stmt, driver=driver), rows(db, "SELECT * FROM api.drv")

    on, on_rows = run(True)
    off, off_rows = run(False)
    assert on.tablets_read_on_driver == 3 and off.tablets_read_on_driver == 0
    assert on_rows == off_rows
    assert (on.rows_updated, on.rows_deleted, on.rows_inserted) == (
        off.rows_updated,
        off.rows_deleted,
        off.rows_inserted,
    )
    assert on.rows_inserted == len([i for i in range(490, 1010, 3) if i >= 1500 or i % 5 == 0])


@pytest.mark.parametrize(
    "source, on",
    [
        ("SELECT CAST(id AS STRING) AS id FROM range(0, 10)", "t.id = s.id"),  # Spark casts one side
        ("SELECT id FROM range(0, 10)", "t.id = s.id + 0"),  # an expression, not a column
        ("SELECT CAST(id AS DOUBLE) AS id FROM range(0, 10)", "t.id = s.id"),
    ],
    ids=["string-vs-bigint", "expression", "double"],
)
def test_keys_arrow_cannot_compare_as_spark_does_are_scanned_in_spark(db, source, on):
    fresh(db, "api.drv_types", "id BIGINT, v INT")
    db.sql("INSERT INTO api.drv_types SELECT id, 0 FROM range(0, 100)")
    m = db.sql(f"MERGE INTO api.drv_types t USING ({source}) s ON {on} WHEN MATCHED THEN UPDATE SET v = 1").metrics
    assert m.tablets_read_on_driver == 0 and m.rows_updated == 10


@pytest.mark.parametrize(
    "stmt",
    [
        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *",  # the one-shuffle plan
        "WHEN MATCHED THEN UPDATE SET v = s.v",  # pairs only
    ],
)
def test_a_source_whose_keys_pair_with_nothing_on_the_driver(db, stmt):
    fresh(db, "api.drv_none", "id BIGINT, v INT", "(1, 0), (9, 0)")  # 7: inside the key range, not pruned
    m = db.sql(f"MERGE INTO api.drv_none t USING (SELECT 7 AS id, 5 AS v) s ON t.id = s.id {stmt}").metrics
    assert m.tablets_read_on_driver == 1 and m.rows_updated == 0
    assert rows(db, "SELECT * FROM api.drv_none") == sorted([(1, 0), (9, 0)] + ([(7, 5)] if "INSERT" in stmt else []))


@pytest.mark.parametrize("driver", [True, False], ids=["driver-scan", "spark-scan"])
def test_clause_conditions_with_subqueries_on_both_paths(db, spark, driver):
    """Subqueries in clause conditions, one correlated with the target row: the driver's pairs
    carry the aliases as struct columns, which Spark resolves inside subqueries too."""
    fresh(db, "api.drv_sub", "id BIGINT, v INT", "(1, 10), (2, 20), (3, 30), (4, 40)")
    spark.createDataFrame([(2,), (30,)], "x BIGINT").createOrReplaceTempView("api_drv_sub_other")
    stmt = (
        "MERGE INTO api.drv_sub t USING (SELECT id, id * 100 AS v FROM range(1, 6)) s ON t.id = s.id "
        "WHEN MATCHED AND t.v IN (SELECT x FROM api_drv_sub_other) THEN DELETE "
        "WHEN MATCHED AND EXISTS (SELECT 1 FROM api_drv_sub_other o WHERE o.x = t.id) THEN UPDATE SET v = -1 "
        "WHEN NOT MATCHED AND s.id NOT IN (SELECT x FROM api_drv_sub_other) THEN INSERT *"
    )
    m = merge(db, spark, stmt, driver=driver)
    assert m.tablets_read_on_driver == (1 if driver else 0)
    assert rows(db, "SELECT * FROM api.drv_sub") == [(1, 10), (2, -1), (4, 40), (5, 500)]


def test_a_re_merge_of_the_same_rows_runs_no_spark_job(db, spark):
    """dbt's incremental run with nothing new: every source row pairs with an equal target row,
    so the driver tells the statement changes nothing: no Spark job after the source's, no commit."""
    fresh(db, "api.same_again", "id BIGINT, v DOUBLE, s STRING, d DATE")
    db.sql(
        "INSERT INTO api.same_again SELECT id, id / 2, IF(id % 3 = 0, NULL, CAST(id AS STRING)), "
        "DATE'2024-01-01' + CAST(id AS INT) FROM range(0, 1000)"
    )
    src = (
        "SELECT id, id / 2 AS v, IF(id % 3 = 0, NULL, CAST(id AS STRING)) AS s, DATE'2024-01-01' + CAST(id AS INT) AS d "
        "FROM range(100, 200)"
    )
    stmt = f"MERGE INTO api.same_again t USING ({src}) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    version = db.table_of("api.same_again").version
    results = []
    jobs = spark_jobs(spark, lambda: results.append(db.sql(stmt).metrics))
    m = results[0]
    assert (m.rows_unchanged, m.rows_updated, m.rows_inserted, m.version) == (100, 0, 0, None)
    assert "unchanged" in m.timings_ms and db.table_of("api.same_again").version == version
    assert len(jobs) <= 2, jobs  # the source's (its collect; reading its input's schema)


@pytest.mark.parametrize(
    "change, why",
    [
        ("IF(id = 152, 'x', IF(id % 3 = 0, NULL, CAST(id AS STRING)))", "one value differs"),
        ("IF(id = 151, NULL, IF(id % 3 = 0, NULL, CAST(id AS STRING)))", "a value becomes NULL"),
        ("IF(id % 3 = 0, 'was null', CAST(id AS STRING))", "NULLs get values"),
    ],
)
def test_a_re_merge_with_a_change_still_writes_it(db, change, why):
    fresh(db, "api.same_changed", "id BIGINT, s STRING")
    db.sql("INSERT INTO api.same_changed SELECT id, IF(id % 3 = 0, NULL, CAST(id AS STRING)) FROM range(0, 300)")
    stmt = (
        f"MERGE INTO api.same_changed t USING (SELECT id, {change} AS s FROM range(100, 200)) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    m = db.sql(stmt).metrics
    assert m.rows_updated > 0 and m.version is not None, why
    got = dict(rows(db, "SELECT id, s FROM api.same_changed WHERE id BETWEEN 100 AND 199"))
    want = dict(rows(db, f"SELECT id, {change} FROM range(100, 200)"))
    assert got == want


@pytest.mark.parametrize(
    "stmt, result",
    [
        # a source row alone is inserted
        (
            "MERGE INTO api.same_other t USING (SELECT id, 0 AS v FROM range(8, 12)) s ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
            "inserted 2",
        ),
        # two source rows for one target row: refused, as without the driver
        (
            "MERGE INTO api.same_other t USING (SELECT 1 AS id, 0 AS v UNION ALL SELECT 1, 0) s ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET *",
            "modified more than once",
        ),
        # a condition on the first MATCHED clause: Spark decides
        (
            "MERGE INTO api.same_other t USING (SELECT id, 0 AS v FROM range(0, 5)) s ON t.id = s.id "
            "WHEN MATCHED AND s.id = 3 THEN DELETE WHEN MATCHED THEN UPDATE SET *",
            "deleted 1",
        ),
    ],
)
def test_statements_the_driver_cannot_call_unchanged(db, stmt, result):
    from tablets.exceptions import CardinalityViolation

    fresh(db, "api.same_other", "id BIGINT, v INT")
    db.sql("INSERT INTO api.same_other SELECT id, 0 FROM range(0, 10)")
    try:
        message = db.sql(stmt).message
    except CardinalityViolation as e:
        message = str(e)
    assert result in message


def driver_and_spark(db, spark, name, ddl, inserts, stmt):
    """``stmt`` on a fresh table filled by ``inserts`` (queries), merged by the driver and by
    Spark: (driver's metrics, the Spark jobs it ran, its rows, Spark's metrics, Spark's rows)."""

    def run(driver: bool):
        fresh(db, name, ddl)
        for q in inserts:
            db.sql(f"INSERT INTO {name} {q}")
        results = []
        jobs = spark_jobs(spark, lambda: results.append(merge(db, spark, stmt, driver=driver)))
        return results[0], jobs, rows(db, f"SELECT * FROM {name}")

    on, jobs, got = run(True)
    off, _, want = run(False)
    return on, jobs, got, off, want


def assert_driver_gives_sparks_result(db, spark, name, ddl, inserts, stmt, **counts):
    """``driver_and_spark``: the driver merged the statement with no Spark job after the
    source's (its collect; reading its input's schema), and Spark's plan gave the same counts
    (``counts``: the expected ``rows_updated`` and so on) and the same rows."""
    on, jobs, got, off, want = driver_and_spark(db, spark, name, ddl, inserts, stmt)
    assert on.merged_on_driver and not off.merged_on_driver
    for name, n in counts.items():
        assert getattr(on, name) == getattr(off, name) == n, (name, getattr(on, name), getattr(off, name))
    assert got == want
    assert len(jobs) <= 2, jobs


def test_a_plain_upsert_runs_no_spark_job_after_the_source(db, spark):
    """ON the key, UPDATE SET * / INSERT *: the driver pairs, classifies and writes the statement
    itself (``driver_plan.classify_on_driver``); the result is the Spark plan's."""
    src = "SELECT id, id * 3D AS v, CAST(NULL AS STRING) AS s, DATE'2020-01-01' AS d FROM range(990, 1010)"
    assert_driver_gives_sparks_result(
        db,
        spark,
        "api.plain",
        "id BIGINT, v DOUBLE, s STRING, d DATE",
        [
            "SELECT id, id / 2, IF(id % 3 = 0, NULL, CAST(id AS STRING)), DATE'2024-01-01' + CAST(id AS INT) FROM range(0, 1000)"
        ],
        f"MERGE INTO api.plain t USING ({src}) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v, s = s.s WHEN NOT MATCHED THEN INSERT *",
        rows_updated=10,
        rows_inserted=10,
    )


def test_a_sync_with_by_source_runs_no_spark_job_after_the_source(db, spark):
    """dbt's sync: an upsert and a conditional BY SOURCE delete. The driver reads the key and
    condition columns of every tablet, classifies the rows without a pair in Arrow, and writes
    the statement itself; the result is the Spark plan's."""
    src = "SELECT id, id * 3D AS v, 'new' AS s FROM range(1490, 1510)"
    # 1401-1489 soft-deleted; ids % 100 = 0 with s not NULL deleted
    assert_driver_gives_sparks_result(
        db,
        spark,
        "api.sync",
        "id BIGINT, v DOUBLE, s STRING",
        [
            "SELECT id, id / 2, IF(id % 3 = 0, NULL, CAST(id AS STRING)) FROM range(0, 1000)",
            "SELECT id, 0, 'b' FROM range(1000, 1500)",
        ],  # two tablets
        f"MERGE INTO api.sync t USING ({src}) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v, s = s.s WHEN NOT MATCHED THEN INSERT * "
        "WHEN NOT MATCHED BY SOURCE AND t.id % 100 = 0 AND t.s IS NOT NULL THEN DELETE "
        "WHEN NOT MATCHED BY SOURCE AND t.id > 1400 THEN UPDATE SET s = NULL",
        rows_updated=10 + 89,
        rows_inserted=10,
        rows_deleted=6 + 5,
    )


def test_dbt_incremental_merge_on_timestamps_runs_no_spark_job_after_the_source(db, spark):
    """The common dbt upsert that keeps the newer row (``WHEN MATCHED AND s.updated_at >
    t.updated_at``), with TIMESTAMP, TIMESTAMP_NTZ and DECIMAL columns compared and copied, in
    a session zone other than UTC: the driver classifies and writes it; the result is Spark's."""
    ts = "timestamp_seconds(1700000000 + id * 3600)"
    with settings(spark, LOS_ANGELES):
        src = (
            f"SELECT id, {ts} + IF(id % 2 = 0, INTERVAL 1 SECOND, INTERVAL -1 SECOND) AS updated_at, "
            f"CAST({ts} AS TIMESTAMP_NTZ) AS seen, CAST(id / 4 + 1 AS DECIMAL(12,2)) AS amount FROM range(990, 1010)"
        )
        assert_driver_gives_sparks_result(
            db,
            spark,
            "api.newer",
            "id BIGINT, updated_at TIMESTAMP, seen TIMESTAMP_NTZ, amount DECIMAL(12,2)",
            [f"SELECT id, {ts}, NULL, CAST(id / 4 AS DECIMAL(12,2)) FROM range(0, 1000)"],
            f"MERGE INTO api.newer t USING ({src}) s ON t.id = s.id "
            "WHEN MATCHED AND s.updated_at > t.updated_at AND s.amount <> t.amount THEN UPDATE SET * "
            "WHEN NOT MATCHED THEN INSERT *",
            rows_updated=5,
            rows_inserted=10,
        )  # even ids are newer


def test_dbt_s_parenthesized_on_runs_on_the_driver(db, spark):
    """dbt's default merge writes ``ON (s.k1 = t.k1) AND (s.k2 = t.k2)``: the same key pairs."""
    assert_driver_gives_sparks_result(
        db,
        spark,
        "api.paren_on",
        "a BIGINT, b STRING, v INT",
        ["SELECT id % 10, CAST(id DIV 10 AS STRING), 0 FROM range(0, 100)"],
        "MERGE INTO api.paren_on AS DBT_INTERNAL_DEST USING (SELECT id % 10 AS a, CAST(id DIV 10 AS STRING) AS b, 1 AS v "
        "FROM range(95, 105)) AS DBT_INTERNAL_SOURCE ON (DBT_INTERNAL_SOURCE.a = DBT_INTERNAL_DEST.a) "
        "AND (DBT_INTERNAL_SOURCE.b = DBT_INTERNAL_DEST.b) WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
        rows_updated=5,
        rows_inserted=5,
    )


def test_integers_into_float_columns_on_the_driver(db, spark):
    """``SET v = 0`` and an INT source column into DOUBLE / FLOAT columns: values a float holds
    exactly, so the driver writes them; the result is Spark's."""
    assert_driver_gives_sparks_result(
        db,
        spark,
        "api.int_float",
        "id BIGINT, v DOUBLE, f FLOAT, n INT",
        ["SELECT id, id / 3, id / 7, 0 FROM range(0, 100)"],
        "MERGE INTO api.int_float t USING (SELECT id, CAST(id * 1000003 AS INT) AS n, CAST(id AS SMALLINT) AS m "
        "FROM range(90, 110)) s ON t.id = s.id WHEN MATCHED AND s.id % 2 = 0 THEN UPDATE SET v = 0, f = s.m, n = s.n "
        "WHEN MATCHED THEN UPDATE SET v = s.n, f = s.m WHEN NOT MATCHED THEN INSERT (id, v, f) VALUES (s.id, s.n, s.m)",
        rows_updated=10,
        rows_inserted=10,
    )


@pytest.mark.parametrize(
    "cond",
    [
        "s.updated_at >= t.updated_at OR t.updated_at IS NULL",
        "t.seen <=> s.seen",
        "s.amount > t.amount",
        "t.updated_at IN (s.updated_at, NULL) AND s.seen IS NOT NULL",
        "NOT (t.amount BETWEEN s.amount AND s.big)",
    ],
)
def test_timestamp_and_decimal_conditions_on_the_driver_give_sparks_result(db, spark, cond):
    """NULLs, equal instants and decimals of two scales, classified on the driver and by Spark."""
    ts = "timestamp_seconds(1700000000 + (id % 7) * 60)"
    maybe = "IF(id % {} = 0, NULL, {})"
    on, _, got, off, want = driver_and_spark(
        db,
        spark,
        "api.ts_cond",
        "id BIGINT, updated_at TIMESTAMP, seen TIMESTAMP_NTZ, amount DECIMAL(10,2)",
        [
            f"SELECT id, {maybe.format(5, ts)}, {maybe.format(4, f'CAST({ts} AS TIMESTAMP_NTZ)')}, "
            f"{maybe.format(6, 'CAST((id % 9) / 4 AS DECIMAL(10,2))')} FROM range(0, 60)"
        ],
        f"MERGE INTO api.ts_cond t USING (SELECT id, {maybe.format(3, ts)} AS updated_at, "
        f"{maybe.format(8, f'CAST({ts} AS TIMESTAMP_NTZ)')} AS seen, {maybe.format(7, 'CAST((id % 5) / 2 AS DECIMAL(10,2))')} "
        f"AS amount, CAST(id % 4 AS DECIMAL(20,6)) AS big FROM range(20, 80)) s ON t.id = s.id "
        f"WHEN MATCHED AND {cond} THEN UPDATE SET updated_at = s.updated_at, seen = s.seen, amount = s.amount "
        "WHEN MATCHED AND s.id % 2 = 0 THEN DELETE WHEN NOT MATCHED THEN INSERT (id, seen) VALUES (s.id, s.seen)",
    )
    assert on.merged_on_driver and not off.merged_on_driver
    assert (on.rows_updated, on.rows_deleted, on.rows_inserted) == (
        off.rows_updated,
        off.rows_deleted,
        off.rows_inserted,
    )
    assert 0 < on.rows_updated < 40
    assert got == want


@pytest.mark.parametrize(
    "stmt",
    [
        # a copy into a narrower column: Spark's cast decides the value
        "MERGE INTO api.plain_cast t USING (SELECT id, id * 2 AS v FROM range(0, 6)) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *",
        # an expression in the image
        "MERGE INTO api.plain_cast t USING (SELECT id, id * 2 AS v FROM range(0, 6)) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v + 1 WHEN NOT MATCHED THEN INSERT *",
        # a condition Arrow does not evaluate (a function call)
        "MERGE INTO api.plain_cast t USING (SELECT id, CAST(id * 2 AS INT) AS v FROM range(0, 6)) s ON t.id = s.id "
        "WHEN MATCHED AND abs(s.v - 4) > 1 THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *",
    ],
)
def test_statements_spark_classifies(db, stmt):
    fresh(db, "api.plain_cast", "id BIGINT, v INT")
    db.sql("INSERT INTO api.plain_cast SELECT id, 0 FROM range(0, 4)")
    m = db.sql(stmt).metrics
    assert not m.merged_on_driver and m.tablets_read_on_driver == 1
    assert m.rows_inserted == 2


def test_a_conditional_insert_with_no_row_alone_stays_on_the_driver(db):
    """Clauses that act on no row at hand do not matter: every source row pairs, so a
    conditional NOT MATCHED clause leaves the statement to the driver."""
    fresh(db, "api.plain_cond", "id BIGINT, v BIGINT")
    db.sql("INSERT INTO api.plain_cond SELECT id, 0 FROM range(0, 10)")
    m = db.sql(
        "MERGE INTO api.plain_cond t USING (SELECT id, 7 AS v FROM range(2, 5)) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED AND s.v > 100 THEN INSERT *"
    ).metrics
    assert m.merged_on_driver and m.rows_updated == 3
    assert rows(db, "SELECT v, count(*) FROM api.plain_cond GROUP BY v") == [(0, 7), (7, 3)]


def test_the_driver_merge_sorts_its_inserts_by_cluster_by(db):
    """One task on the driver writes every insert: sorted by cluster_by, then cut into tablets."""
    fresh(db, "api.plain_sorted", "id BIGINT, v INT")
    table = db.table_of("api.plain_sorted")
    opts = {"cluster_by": ("id",), "target_tablet_rows": 250}
    db.sql("INSERT INTO api.plain_sorted SELECT id, 0 FROM range(0, 1)")
    m = db.sql(
        "MERGE INTO api.plain_sorted t USING (SELECT (id * 7919) % 1000 AS id, 1 AS v FROM range(0, 1000)) s "
        "ON t.id = s.id WHEN NOT MATCHED THEN INSERT *",
        options=opts,
    ).metrics
    assert m.merged_on_driver and m.rows_inserted == 999
    ranges = sorted(
        (st.add.column_stats("id").min, st.add.column_stats("id").max)
        for st in table.snapshot().tablets.values()
        if st.add.rows > 1
    )
    assert len(ranges) == 4
    assert all(a[1] < b[0] for a, b in zip(ranges, ranges[1:], strict=False))  # disjoint, ordered key ranges


def test_the_driver_reads_more_in_local_mode(spark):
    from tablets.engine.route import DRIVER_SCAN_BYTES_LOCAL, driver_scan_bytes

    assert spark.conf.get("spark.master").startswith("local")
    assert driver_scan_bytes(spark) == DRIVER_SCAN_BYTES_LOCAL
    spark.conf.set(DRIVER_SCAN_CONF, "8m")
    try:
        assert driver_scan_bytes(spark) == 8 << 20
    finally:
        spark.conf.unset(DRIVER_SCAN_CONF)


@pytest.mark.parametrize(
    "have, want, exact",
    [
        ("int", "bigint", True),
        ("tinyint", "int", True),
        ("float", "double", True),
        ("string", "string", True),
        ("decimal(10,2)", "decimal(10, 2)", True),
        ("timestamp", "timestamp", True),
        ("timestamp_ntz", "timestamp_ntz", True),
        ("int", "double", True),
        ("smallint", "float", True),
        ("bigint", "double", False),
        ("int", "float", False),
        ("bigint", "int", False),
        ("double", "float", False),
        ("timestamp_ntz", "timestamp", False),
        ("timestamp", "timestamp_ntz", False),
        ("date", "timestamp", False),
        ("binary", "binary", False),
        ("decimal(10,2)", "decimal(12,2)", False),
    ],
)
def test_copies_the_driver_makes_without_spark_s_cast(have, want, exact):
    from tablets.engine.driver_plan import exact_cast as _exact_cast

    assert _exact_cast(have, want) is exact


PATHS = ["driver", "spark_local_source", "spark_cached_source"]


def merge_by_path(db, spark, name, ddl, fills, stmt, path):
    """``stmt`` on a fresh table filled by ``fills`` (queries), in a session zone other than
    UTC, by ``path`` (``PATHS``: the driver, or Spark with the source collected or cached, its
    key ranges then taken by Spark): its metrics."""
    fresh(db, name, ddl)
    cached = {"spark.sql.autoBroadcastJoinThreshold": "-1"} if path == "spark_cached_source" else {}
    with settings(spark, {**LOS_ANGELES, **cached}):
        for q in fills:
            db.sql(f"INSERT INTO {name} {q}")
        return merge(db, spark, stmt, driver=path == "driver")


_KEYS = {
    "timestamp": ("TIMESTAMP", "timestamp_seconds(1700000000 + {} * 3600)"),
    "timestamp_ntz": ("TIMESTAMP_NTZ", "CAST(timestamp_seconds(1700000000 + {} * 3600) AS TIMESTAMP_NTZ)"),
    "decimal": ("DECIMAL(12,2)", "CAST({} / 4 AS DECIMAL(12,2))"),
    "decimal_of_another_scale": ("DECIMAL(12,2)", "CAST({} / 4 AS DECIMAL(16,5))"),
}


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("key", list(_KEYS))
def test_timestamp_and_decimal_keys_pair_and_prune_soundly(db, spark, key, path):
    """TIMESTAMP, TIMESTAMP_NTZ and DECIMAL keys, in a session zone other than UTC: the tablets
    outside the source's key range are skipped, and the tablet whose smallest key is the
    source's largest is not (the log keeps timestamps as text; compared as text with the wall
    time PySpark gives, that tablet was skipped and its row inserted again), on the driver and
    in Spark, with the source collected or cached (its range then taken by Spark)."""
    ddl, expr = _KEYS[key]
    src = f"SELECT {expr.format('id')} AS k, 1 AS v FROM range(15, 21)"  # its largest key: the third tablet's smallest
    m = merge_by_path(
        db,
        spark,
        "api.keys",
        f"k {ddl if not key.startswith('decimal') else 'DECIMAL(12,2)'}, v INT",
        [f"SELECT {expr.format('id')}, 0 FROM range({lo}, {lo + 10})" for lo in (0, 10, 20)],  # keys 0-9, 10-19, 20-29
        f"MERGE INTO api.keys t USING ({src}) s ON t.k = s.k WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *",
        path,
    )
    assert (m.rows_updated, m.rows_inserted) == (6, 0)
    assert m.tablets_pruned == 1  # keys 0-9
    assert m.merged_on_driver == (path == "driver")
    assert rows(db, "SELECT count(*), count(DISTINCT k), sum(v) FROM api.keys") == [(30, 30, 6)]


_ACROSS_KINDS = {
    # a DATE key against text that Spark casts to those dates: as text, '2024-01-31 00:00:00'
    # sorts after the tablet's largest date '2024-01-31', and '2024-1-5' after every one
    "date_by_text": (
        "DATE",
        "DATE'2024-01-01' + CAST(id AS INT)",
        "SELECT explode(array('2024-01-31 00:00:00', '2024-1-5', '2024-03-15')) AS k, 1 AS v",
        (2, 1),
    ),
    # a TIMESTAMP key against wall times, which Spark casts to instants in the session zone
    "timestamp_by_wall_time": (
        "TIMESTAMP",
        "timestamp_seconds(1700000000 + id * 3600)",
        "SELECT CAST(timestamp_seconds(1700000000 + id * 3600) AS TIMESTAMP_NTZ) AS k, 1 AS v FROM range(28, 64)",
        (34, 2),
    ),
}


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("case", list(_ACROSS_KINDS))
def test_keys_of_another_kind_than_the_target_never_prune_a_match(db, spark, case, path):
    """A source key that Spark casts to the target column's type before comparing gives no
    range to skip tablets by: compared with the log's statistics as they are, it skipped the
    tablet holding its match, which was then inserted again."""
    ddl, target, src, (updated, inserted) = _ACROSS_KINDS[case]
    m = merge_by_path(
        db,
        spark,
        "api.kinds",
        f"k {ddl}, v INT",
        [f"SELECT {target}, 0 FROM range({lo}, {lo + 31})" for lo in (0, 31)],
        f"MERGE INTO api.kinds t USING ({src}) s ON t.k = s.k WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *",
        path,
    )
    assert (m.rows_updated, m.rows_inserted) == (updated, inserted)
    assert rows(db, "SELECT count(*), count(DISTINCT k), sum(v) FROM api.kinds") == [
        (62 + inserted, 62 + inserted, updated + inserted)
    ]


def test_deletes_updates_and_window_replaces_skip_the_tablets_their_where_rules_out(db, spark):
    """DELETE / UPDATE ... WHERE and a MERGE ON FALSE that replaces a window (dbt's microbatch:
    ``event_ts >= '<start>+00:00' AND event_ts < '<end>+00:00'``, in a session zone other than
    UTC) read only the tablets whose statistics let the WHERE hold; a WHERE they cannot rule
    on (an OR, a float) reads every tablet."""
    ts = "timestamp_seconds(1700000000 + id * 60)"
    fresh(db, "api.windows", "id BIGINT, event_ts TIMESTAMP, v DOUBLE")
    for lo in (0, 100, 200):  # three tablets: ids 0-99, 100-199, 200-299, a minute apart
        db.sql(f"INSERT INTO api.windows SELECT id, {ts}, id / 2 FROM range({lo}, {lo + 100})")
    m = db.sql("DELETE FROM api.windows WHERE id BETWEEN 120 AND 129").metrics
    assert (m.rows_deleted, m.tablets_pruned, m.tablets_scanned) == (10, 2, 1)
    m = db.sql("UPDATE api.windows w SET v = -1 WHERE w.id >= 290 AND v > 0").metrics
    assert (m.rows_updated, m.tablets_pruned) == (10, 2)
    m = db.sql("DELETE FROM api.windows WHERE id < 5 OR id > 295").metrics
    assert (m.rows_deleted, m.tablets_pruned) == (9, 0)
    # ids 150-159 again: the window of minutes 150-159, its bounds written with an offset
    start, end = (
        f"'{s}+00:00'"
        for s in spark.sql(
            "SELECT CAST(timestamp_seconds(1700000000 + 150 * 60) AS STRING), CAST(timestamp_seconds(1700000000 + 160 * 60) AS STRING)"
        ).first()
    )
    with settings(spark, LOS_ANGELES):
        m = db.sql(
            f"MERGE INTO api.windows t USING (SELECT id, {ts} AS event_ts, 0D AS v FROM range(150, 160)) s ON FALSE "
            f"WHEN NOT MATCHED BY SOURCE AND t.event_ts >= {start} AND t.event_ts < {end} THEN DELETE "
            "WHEN NOT MATCHED THEN INSERT *"
        ).metrics
    assert (m.rows_deleted, m.rows_inserted, m.tablets_pruned, m.tablets_scanned) == (
        10,
        10,
        3,
        1,
    )  # and the UPDATE's tablet
    assert rows(
        db, "SELECT count(*), count(DISTINCT id), sum(IF(v = 0, 1, 0)), sum(IF(v = -1, 1, 0)) FROM api.windows"
    ) == [(281, 281, 10, 6)]
