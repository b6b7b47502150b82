"""One MERGE, two plans, one answer: reproductions of silent wrong results outside testers found, each run on
the driver plan (the default in local mode) and on the Spark plan
(``spark.tablets.merge.driverScanBytes=0``), which must give the same rows and counts."""

import datetime
import decimal
import math

import pytest
from tablets.engine.route import DRIVER_SCAN_CONF

pytestmark = pytest.mark.spark

PLANS = ["driver", "spark"]


DATABASE = "one_answer"  # created by the conftest's db fixture


@pytest.fixture(params=PLANS)
def plan(request, spark):
    """The plan the statements take: the driver's (default) or Spark's."""
    if request.param == "spark":
        spark.conf.set(DRIVER_SCAN_CONF, "0")
    yield request.param
    spark.conf.unset(DRIVER_SCAN_CONF)


def rows(db, name):
    def key(r):
        return tuple((v is None, str(v)) for v in r)

    return sorted((tuple(r) for r in db.sql(f"SELECT * FROM {name}").collect()), key=key)


def fresh(db, name, ddl, *inserts):
    db.sql(f"DROP TABLE IF EXISTS {name}")
    db.sql(f"CREATE TABLE {name} {ddl}")
    for values in inserts:
        db.sql(f"INSERT INTO {name} VALUES {values}")


def counts(m):
    return (m.rows_inserted, m.rows_updated, m.rows_deleted)


def test_by_source_clauses_act_on_a_composite_key(db, plan):
    name = "one_answer.members"
    fresh(
        db,
        name,
        "(org STRING, member_id INT, status STRING) USING tablets",
        "('a',1,'on'),('a',2,'on'),('b',1,'on'),('b',2,'on')",
    )
    m = db.sql(f"""MERGE INTO {name} AS t
        USING (SELECT * FROM VALUES ('a',1,'vip'),('b',2,'on'),('c',9,'on') AS v(org, member_id, status)) AS s
        ON t.org = s.org AND t.member_id = s.member_id
        WHEN MATCHED THEN UPDATE SET status = s.status
        WHEN NOT MATCHED THEN INSERT (org, member_id, status) VALUES (s.org, s.member_id, s.status)
        WHEN NOT MATCHED BY SOURCE AND (t.org = 'a') THEN DELETE
        WHEN NOT MATCHED BY SOURCE THEN UPDATE SET status = 'gone'""").metrics
    # ('b',2) is matched and unchanged: an update that writes nothing is counted as unchanged
    assert counts(m) == (1, 2, 1)
    assert rows(db, name) == [("a", 1, "vip"), ("b", 1, "gone"), ("b", 2, "on"), ("c", 9, "on")]


def test_a_composite_key_pairs_as_a_tuple(db, plan):
    name = "one_answer.a1"
    fresh(db, name, "(k1 INT, k2 STRING, v INT) USING tablets", "(1,'p',10),(1,'q',20),(2,'q',30),(2,'p',40)")
    m = db.sql(f"""MERGE INTO {name} t USING (SELECT * FROM VALUES (1,'p',11),(2,'q',31) AS v(k1,k2,v)) s
        ON t.k1 = s.k1 AND t.k2 = s.k2 WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED BY SOURCE THEN DELETE""").metrics
    assert counts(m) == (0, 2, 2)
    assert rows(db, name) == [(1, "p", 11), (2, "q", 31)]


def test_rows_after_an_empty_tablet_are_kept(db, plan):
    name = "one_answer.c1"
    fresh(
        db,
        name,
        "(k INT, v INT) USING tablets TBLPROPERTIES ('target_tablet_rows'='2')",
        "(1,1),(2,2),(3,3),(4,4),(5,5),(6,6)",
    )
    m = db.sql(f"""MERGE INTO {name} t USING (SELECT * FROM VALUES (1,10),(5,50),(9,90) AS v(k,v)) s ON t.k = s.k
        WHEN MATCHED AND coalesce(s.v,0) > 0 THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *""").metrics
    assert counts(m) == (1, 2, 0)
    assert rows(db, name) == [(1, 10), (2, 2), (3, 3), (4, 4), (5, 50), (6, 6), (9, 90)]


def test_a_nan_key_is_not_pruned_away(db, plan):
    name = "one_answer.b1"
    fresh(db, name, "(k DOUBLE, v INT) USING tablets", "(1.0,1),(CAST('NaN' AS DOUBLE),2)", "(7.0,3)")
    m = db.sql(f"""MERGE INTO {name} t USING (SELECT * FROM VALUES (5.0D,10),(CAST('NaN' AS DOUBLE),20) AS v(k,v)) s
        ON t.k = s.k WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *""").metrics
    assert counts(m) == (1, 1, 0)
    got = rows(db, name)
    nan = [r for r in got if math.isnan(r[0])]
    assert nan == [(nan[0][0], 20)] and sorted(r for r in got if not math.isnan(r[0])) == [
        (1.0, 1),
        (5.0, 10),
        (7.0, 3),
    ]


def test_a_nan_key_only_tablet_is_not_pruned_away(db, plan):
    name = "one_answer.b2"
    fresh(db, name, "(k DOUBLE, v INT) USING tablets", "(CAST('NaN' AS DOUBLE),2)", "(7.0,3)")
    db.sql(f"""MERGE INTO {name} t USING (SELECT * FROM VALUES (CAST('NaN' AS DOUBLE),20) AS v(k,v)) s
        ON t.k = s.k WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *""")
    assert sorted(r[1] for r in rows(db, name)) == [3, 20]


def test_a_nan_key_matches_by_delete_and_update(db, plan):
    name = "one_answer.b3"
    fresh(db, name, "(k DOUBLE, v INT) USING tablets", "(1.0,1),(CAST('NaN' AS DOUBLE),2)", "(7.0,3)")
    db.sql(f"DELETE FROM {name} WHERE k = CAST('NaN' AS DOUBLE)")
    assert rows(db, name) == [(1.0, 1), (7.0, 3)]
    db.sql(f"INSERT INTO {name} VALUES (CAST('NaN' AS DOUBLE), 4)")
    db.sql(f"UPDATE {name} SET v = 5 WHERE k > 100")  # NaN is above every number in Spark
    assert sorted(r[1] for r in rows(db, name)) == [1, 3, 5]


def test_a_nan_literal_does_not_prune(db, plan):
    name = "one_answer.b4"
    fresh(db, name, "(k DOUBLE, v INT) USING tablets", "(1.0,1),(CAST('NaN' AS DOUBLE),2)", "(7.0,3)")
    db.sql(f"UPDATE {name} SET v = 9 WHERE k = double('NaN')")
    db.sql(f"DELETE FROM {name} WHERE k IN (double('NaN'), 7.0D)")
    assert rows(db, name) == [(1.0, 1)]


@pytest.mark.parametrize("setting", ["arrowEval", "pruneTablets", "skipNoop", "skipSameSource"])
def test_each_shortcut_turned_off_gives_the_same_rows(db, spark, setting):
    name = f"one_answer.switch_{setting.lower()}"
    fresh(
        db,
        name,
        "(k INT, v INT) USING tablets TBLPROPERTIES ('target_tablet_rows'='2')",
        "(1,1),(2,2),(3,3),(4,4),(5,5),(6,6)",
    )
    merge = f"""MERGE INTO {name} t USING (SELECT * FROM VALUES (1,10),(5,50),(9,90) AS v(k,v)) s ON t.k = s.k
        WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"""
    spark.conf.set(f"spark.tablets.merge.{setting}", "off")
    try:
        first, again = db.sql(merge).metrics, db.sql(merge).metrics
    finally:
        spark.conf.unset(f"spark.tablets.merge.{setting}")
    assert counts(first) == (1, 2, 0) and counts(again) == (0, 0, 0) and again.version is None
    assert again.same_source is (setting not in ("skipSameSource",))
    if setting == "arrowEval":
        assert not first.merged_on_driver
    if setting == "pruneTablets":
        assert first.tablets_pruned == 0
    assert rows(db, name) == [(1, 10), (2, 2), (3, 3), (4, 4), (5, 50), (6, 6), (9, 90)]


def test_explain_says_which_plan_the_statement_takes(db, spark):
    name = "one_answer.explained"
    fresh(db, name, "(k INT, v INT) USING tablets", "(1,1),(2,2)")
    merge = f"MERGE INTO {name} t USING (SELECT * FROM VALUES (1,10),(3,30) AS v(k,v)) s ON t.k = s.k "

    def route(clauses):
        return [line for line in db.sql(f"EXPLAIN {merge}{clauses}").splitlines() if line.startswith("[Route]")]

    assert route("WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")[0].startswith("[Route] driver plan")
    assert db.sql(merge + "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *").metrics.merged_on_driver
    by_source = "WHEN NOT MATCHED BY SOURCE AND upper(cast(t.v AS STRING)) = '1' THEN DELETE"
    assert route(by_source)[0].startswith("[Route] Spark's plan: a BY SOURCE clause")
    assert not db.sql(merge + by_source).metrics.merged_on_driver
    spark.conf.set(DRIVER_SCAN_CONF, "0")
    try:
        assert route("WHEN MATCHED THEN DELETE") == [f"[Route] Spark's plan: {DRIVER_SCAN_CONF} is 0"]
    finally:
        spark.conf.unset(DRIVER_SCAN_CONF)


def test_coalesce_case_and_typed_literals_on_a_boolean_key_merge_on_the_driver(db, plan):
    """A boolean key, and clauses with COALESCE, CASE WHEN, `/`, `||` and typed literals: the
    driver plan computes them in Arrow (no Spark job after the source's), with Spark's answer."""
    name = f"one_answer.typed_{plan}"
    fresh(
        db,
        name,
        "(flag BOOLEAN, n INT, amount DECIMAL(10, 2), note STRING, at TIMESTAMP_NTZ) USING tablets",
        "(true, 1, 1.50, 'a', TIMESTAMP_NTZ '2024-01-01 00:00:00'), (false, 2, NULL, NULL, NULL)",
    )
    m = db.sql(
        f"""MERGE INTO {name} t USING (SELECT * FROM VALUES
            (true, 10, CAST('2.25' AS DECIMAL(10, 2))), (false, NULL, CAST(NULL AS DECIMAL(10, 2)))
            AS v(flag, n, amount)) s
        ON t.flag = s.flag
        WHEN MATCHED AND COALESCE(s.amount, CAST('0' AS DECIMAL(10, 2))) > CAST('1' AS DECIMAL(10, 2)) THEN UPDATE SET
            n = CASE WHEN s.n / 4 > 2 THEN COALESCE(s.n, t.n) ELSE -1 END,
            amount = s.amount,
            note = t.note || '+',
            at = CAST('2024-03-10 02:30:00' AS TIMESTAMP_NTZ)
        WHEN MATCHED THEN UPDATE SET note = COALESCE(t.note, 'none'), at = CAST(NULL AS TIMESTAMP_NTZ)"""
    ).metrics
    assert counts(m) == (0, 2, 0)
    assert m.merged_on_driver is (plan == "driver")
    assert rows(db, name) == [
        (False, 2, None, "none", None),
        (True, 10, decimal.Decimal("2.25"), "a+", datetime.datetime(2024, 3, 10, 2, 30)),
    ]
