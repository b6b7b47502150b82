"""The seed documents' statements with their exact outcomes, through the SQL front door."""

import pytest
from support.jobs import spark_jobs
from tablets.exceptions import CardinalityViolation, ExecutionError, MergeSpecError
from tablets.storage import TabletTable, log
from tablets.storage.actions import SetDV

pytestmark = pytest.mark.spark


DATABASE = "seeds"  # created by the conftest's db fixture


def rows(db, sql):
    return sorted(tuple(r) for r in db.sql(sql).collect())


def fresh(db, name, ddl, values):
    db.sql(f"DROP TABLE IF EXISTS {name}")
    db.sql(f"CREATE TABLE {name} ({ddl}) USING tablets")
    if values:
        db.sql(f"INSERT INTO {name} VALUES {values}")


def firebolt_tables(db):
    fresh(db, "seeds.target", "a INT, b INT", None)
    db.sql("INSERT INTO seeds.target SELECT id, id % 17 FROM range(1, 101, 10)")
    db.sql(
        "CREATE OR REPLACE TEMP VIEW source AS SELECT CAST(id AS INT) AS a, CAST(id % 17 AS INT) AS b FROM range(1, 101, 5)"
    )


def test_stock_daily_sales(db):
    fresh(db, "seeds.stock", "Item STRING, QtyOnHand INT", "('A', 10), ('B', 5), ('C', 3)")
    db.sql(
        "CREATE OR REPLACE TEMP VIEW DailySales AS SELECT * FROM VALUES ('A', 4), ('B', 5), ('D', 2) AS v(Item, QtySold)"
    )
    res = db.sql(
        """MERGE INTO seeds.stock S USING DailySales DS ON S.Item = DS.Item
           WHEN MATCHED AND (QtyOnHand - QtySold = 0) THEN DELETE
           WHEN MATCHED THEN UPDATE SET QtyOnHand = QtyOnHand - QtySold
           WHEN NOT MATCHED THEN INSERT VALUES (Item, QtySold)"""
    )
    assert (res.metrics.rows_inserted, res.metrics.rows_updated, res.metrics.rows_deleted) == (1, 1, 1)
    assert res.message == "MERGE 3 (inserted 1, updated 1, deleted 1, unchanged 0)"
    assert rows(db, "SELECT * FROM seeds.stock") == [("A", 6), ("C", 3), ("D", 2)]


def test_hogwarts_sync(db):
    fresh(
        db,
        "seeds.public_hogwarts_students",
        "id INT, full_name STRING, graduation_date DATE",
        "(1, 'Harry Potter', DATE'1998-06-30'), (2, 'Ron Weasley', DATE'1998-06-30'), (3, 'Cedric Diggory', DATE'1995-06-30')",
    )
    db.sql(
        """CREATE OR REPLACE TEMP VIEW hogwarts_students AS SELECT * FROM VALUES
           (1, 'Harry Potter', DATE'1980-07-31', DATE'1998-06-30', array('DADA')),
           (2, 'Ronald Weasley', DATE'1980-03-01', DATE'1998-06-30', array('Charms')),
           (4, 'Luna Lovegood', DATE'1981-02-13', DATE'1999-06-30', array())
           AS v(id, full_name, dob, graduation_date, owl_exams)"""
    )
    res = db.sql(
        """MERGE INTO seeds.public_hogwarts_students AS t USING hogwarts_students AS s ON t.id = s.id
           WHEN NOT MATCHED THEN INSERT (id, full_name, graduation_date) VALUES (s.id, s.full_name, s.graduation_date)
           WHEN MATCHED THEN UPDATE SET full_name = s.full_name, graduation_date = s.graduation_date
           WHEN NOT MATCHED BY SOURCE THEN DELETE"""
    )
    m = res.metrics
    assert (m.rows_inserted, m.rows_updated, m.rows_deleted, m.rows_unchanged) == (1, 1, 1, 1)
    assert [r[:2] for r in rows(db, "SELECT * FROM seeds.public_hogwarts_students")] == [
        (1, "Harry Potter"),
        (2, "Ronald Weasley"),
        (4, "Luna Lovegood"),
    ]


def test_firebolt_example_1_inserts_6(db):
    firebolt_tables(db)
    res = db.sql(
        "MERGE INTO seeds.target t USING source s ON t.a = s.a WHEN NOT MATCHED AND s.b < 11 THEN INSERT VALUES (s.a, 100 * s.b)"
    )
    assert res.metrics.rows_inserted == 6
    assert db.sql("SELECT count(*) FROM seeds.target").collect()[0][0] == 16
    assert rows(db, "SELECT * FROM seeds.target WHERE a % 10 = 6") == [
        (6, 600),
        (26, 900),
        (36, 200),
        (56, 500),
        (76, 800),
        (86, 100),
    ]


def test_firebolt_example_2_do_nothing_takes_rows_out(db):
    firebolt_tables(db)
    res = db.sql(
        """MERGE INTO seeds.target t USING source s ON t.a = s.a
           WHEN NOT MATCHED AND s.b % 2 == 0 THEN DO NOTHING
           WHEN NOT MATCHED AND s.b < 11 THEN INSERT VALUES (s.a, 100 * s.b)
           WHEN NOT MATCHED AND s.b >= 11 THEN INSERT VALUES (s.a, 1 + s.b)"""
    )
    assert res.metrics.rows_inserted == 5
    assert rows(db, "SELECT * FROM seeds.target WHERE a % 10 = 6") == [
        (26, 900),
        (56, 500),
        (66, 16),
        (86, 100),
        (96, 12),
    ]


def test_firebolt_example_3_full_sync(db):
    firebolt_tables(db)
    res = db.sql(
        """MERGE INTO seeds.target t USING source s ON t.a = s.a
           WHEN NOT MATCHED BY TARGET THEN INSERT VALUES (s.a, s.b)
           WHEN NOT MATCHED BY SOURCE THEN DELETE
           WHEN MATCHED THEN UPDATE SET b = s.b"""
    )
    m = res.metrics
    assert (m.rows_inserted, m.rows_updated, m.rows_deleted, m.rows_unchanged) == (10, 0, 0, 10)
    assert rows(db, "SELECT * FROM seeds.target") == rows(db, "SELECT * FROM source")


@pytest.mark.parametrize(
    "stmt",
    [
        "MERGE INTO seeds.target t USING source AS s ON t.a = s.a WHEN MATCHED THEN DO NOTHING",
        """MERGE INTO seeds.target t USING source AS s ON t.a = s.a
           WHEN NOT MATCHED BY SOURCE AND t.b IN (1, 2, 3) THEN DO NOTHING
           WHEN NOT MATCHED AND s.b = 4 THEN DO NOTHING
           WHEN NOT MATCHED AND s.a > 10 THEN DO NOTHING""",
        "MERGE INTO seeds.target t USING source s ON t.a = s.a WHEN NOT MATCHED BY SOURCE AND 7 < 5 THEN DELETE",
    ],
)
def test_degenerate_noop_runs_no_spark_job(db, stmt):
    firebolt_tables(db)
    root = db.table_of("seeds.target").root
    before = TabletTable(root).version
    out = {}
    assert spark_jobs(db.spark, lambda: out.setdefault("r", db.sql(stmt))) == []
    assert out["r"].metrics.noop and out["r"].rows_affected == 0
    assert TabletTable(root).version == before
    assert "degenerate: no-op" in db.sql("EXPLAIN " + stmt)


def test_insert_on_conflict(db):
    db.sql("DROP TABLE IF EXISTS seeds.kv")
    db.sql("CREATE TABLE seeds.kv (id INT, value STRING) USING tablets TBLPROPERTIES ('key_columns' = 'id')")
    db.sql("INSERT INTO seeds.kv VALUES (1, 'one'), (2, 'two')")
    res = db.sql("INSERT INTO seeds.kv VALUES (2, 'TWO'), (3, 'three') ON CONFLICT (id) DO NOTHING")
    assert (res.metrics.rows_inserted, res.metrics.rows_updated) == (1, 0)
    res = db.sql(
        "INSERT INTO seeds.kv (id, value) VALUES (1, 'uno'), (4, 'four') ON CONFLICT (id) DO UPDATE SET value = EXCLUDED.value"
    )
    assert (res.metrics.rows_inserted, res.metrics.rows_updated) == (1, 1)
    assert rows(db, "SELECT * FROM seeds.kv") == [(1, "uno"), (2, "two"), (3, "three"), (4, "four")]


def test_update_and_delete_statements(db):
    fresh(db, "seeds.ud", "id INT, v INT", "(1, 10), (2, 20), (3, 30), (4, NULL)")
    m = db.sql("UPDATE seeds.ud SET v = v + 1 WHERE id >= 2").metrics
    assert (m.rows_updated, m.rows_unchanged) == (2, 1)  # NULL + 1 is NULL: unchanged
    assert rows(db, "SELECT * FROM seeds.ud") == [(1, 10), (2, 21), (3, 31), (4, None)]
    assert db.sql("DELETE FROM seeds.ud WHERE v IS NULL OR id = 1").metrics.rows_deleted == 2
    assert rows(db, "SELECT * FROM seeds.ud") == [(2, 21), (3, 31)]


def test_cardinality_violation_changes_nothing(db):
    fresh(db, "seeds.card", "id INT, v INT", "(1, 10), (2, 20)")
    root = db.table_of("seeds.card").root
    before = TabletTable(root).version
    with pytest.raises(CardinalityViolation, match="more than once"):
        db.sql(
            "MERGE INTO seeds.card t USING (SELECT * FROM VALUES (1, 5), (1, 6), (3, 7) AS v(id, v)) s ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *"
        )
    assert TabletTable(root).version == before
    assert rows(db, "SELECT * FROM seeds.card") == [(1, 10), (2, 20)]
    # only actions that fire count: the duplicate falls to no clause here
    res = db.sql(
        "MERGE INTO seeds.card t USING (SELECT * FROM VALUES (1, 5), (1, 6) AS v(id, v)) s ON t.id = s.id "
        "WHEN MATCHED AND s.v = 5 THEN UPDATE SET v = s.v"
    )
    assert res.metrics.rows_updated == 1


def test_failing_expression_changes_nothing(db):
    fresh(db, "seeds.fail", "id INT, v INT", "(1, 10), (2, 20)")
    root = db.table_of("seeds.fail").root
    before = TabletTable(root).version
    with pytest.raises(ExecutionError):
        db.sql(
            "MERGE INTO seeds.fail t USING (SELECT 1 AS id) s ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET v = CAST(raise_error('boom') AS INT) WHEN NOT MATCHED THEN INSERT (id) VALUES (s.id)"
        )
    assert TabletTable(root).version == before
    assert rows(db, "SELECT * FROM seeds.fail") == [(1, 10), (2, 20)]


def test_bad_statement_parts_are_named(db):
    fresh(db, "seeds.bad", "id INT, v INT", "(1, 10)")
    with pytest.raises(MergeSpecError, match="nope"):
        db.sql("MERGE INTO seeds.bad t USING (SELECT 1 AS id) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET nope = 1")
    with pytest.raises(MergeSpecError, match="unreachable"):
        db.sql(
            "MERGE INTO seeds.bad t USING (SELECT 1 AS id) s ON t.id = s.id WHEN MATCHED THEN DELETE WHEN MATCHED AND s.id = 1 THEN DELETE"
        )


def test_one_dv_per_touched_tablet(db):
    fresh(db, "seeds.many", "id INT, v INT", None)
    for i in range(6):  # six tablets
        db.sql(f"INSERT INTO seeds.many SELECT id, 0 FROM range({i * 100}, {i * 100 + 100})")
    table = db.table_of("seeds.many")
    n_tablets = len(table.snapshot().tablets)
    assert n_tablets >= 6
    res = db.sql(
        "MERGE INTO seeds.many t USING (SELECT id FROM range(0, 600, 7)) s ON t.id = s.id "
        "WHEN MATCHED AND s.id % 2 = 0 THEN DELETE WHEN MATCHED THEN UPDATE SET v = 1"
    )
    m = res.metrics
    assert m.rows_deleted + m.rows_updated == len(range(0, 600, 7))
    actions = log.read_version(table.io, table.root, m.version)
    dvs = [a.tablet_id for a in actions if isinstance(a, SetDV)]
    assert sorted(dvs) == sorted(set(dvs)) and len(dvs) == n_tablets  # every tablet is touched, once
    assert m.dvs_written == n_tablets


def test_nondeterministic_source_is_read_once(db):
    fresh(db, "seeds.nd", "id BIGINT, r DOUBLE", None)
    db.sql("INSERT INTO seeds.nd SELECT id, -1.0 FROM range(0, 2000)")
    res = db.sql(
        "MERGE INTO seeds.nd t USING (SELECT id, rand() AS r FROM range(0, 2000)) s ON t.id = s.id "
        "WHEN MATCHED AND s.r < 0.5 THEN DELETE WHEN MATCHED THEN UPDATE SET r = s.r"
    )
    m = res.metrics
    assert m.rows_deleted + m.rows_updated == 2000
    left = db.sql("SELECT count(*), min(r) FROM seeds.nd").collect()[0]
    assert left[0] == m.rows_updated and left[1] >= 0.5


def test_explain_join_types_and_classification(db):
    firebolt_tables(db)
    plans = {
        "INNER": "WHEN MATCHED THEN UPDATE SET b = s.b",
        "LEFT OUTER": "WHEN NOT MATCHED THEN INSERT *",
        "RIGHT OUTER": "WHEN NOT MATCHED BY SOURCE THEN DELETE",
        "FULL OUTER": "WHEN MATCHED THEN DELETE WHEN NOT MATCHED BY SOURCE THEN DELETE WHEN NOT MATCHED THEN INSERT *",
    }
    for join, clauses in plans.items():
        text = db.sql(f"EXPLAIN MERGE INTO seeds.target t USING source s ON t.a = s.a {clauses}")
        assert f"[Join] {join} ON" in text, text
    text = db.sql(
        """EXPLAIN MERGE INTO seeds.target t USING source s ON t.a = s.a
           WHEN NOT MATCHED AND s.b % 2 = 0 THEN DO NOTHING
           WHEN NOT MATCHED AND s.b < 11 THEN INSERT VALUES (s.a, 100 * s.b)
           WHEN NOT MATCHED AND s.b >= 11 THEN INSERT VALUES (s.a, 1 + s.b)
           WHEN MATCHED THEN UPDATE SET b = s.b"""
    )
    assert "THEN 0" in text and "THEN 1" in text and "THEN 2" in text and "THEN 3" in text
    assert "[Delete stream]" in text and "[Insert stream]" in text and "homecoming" in text
    assert "__tablets_clause = 1 (INSERT) UNION ALL __tablets_clause = 2 (INSERT)" in text
