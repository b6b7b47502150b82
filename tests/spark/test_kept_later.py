"""Late materialisation of what an UPDATE keeps (``Plan.keep_only``: every UPDATE keeps the
column as it is and nothing else reads it): Spark's plan scans without it and its merge tasks
read it for the updated rows alone (``Run.kept``, ``tasks.Deferred.fill``). Each case against
the rows the driver plan gives, on Spark's plan with few pairs (one task, on the driver) and in
Spark's tasks (shuffle-joined)."""

from collections import Counter

import pytest
from support.conf import settings
from support.differential import canon
from support.scans import record_scans
from tablets.engine.route import DRIVER_SCAN_CONF, DRIVER_WRITE_CONF

pytestmark = pytest.mark.spark

# canon's dates: days since the epoch
D1, D3, D4, D5, D6 = (18261 + day for day in (1, 3, 4, 5, 6))
SPARK = {DRIVER_SCAN_CONF: "0"}
SPARK_TASKS = {DRIVER_SCAN_CONF: "0", DRIVER_WRITE_CONF: "0", "spark.sql.autoBroadcastJoinThreshold": "-1"}
PLANS = {"driver": {}, "spark": SPARK, "spark_tasks": SPARK_TASKS}

SETUP = [
    "CREATE TABLE {t} (id INT, k INT, v DOUBLE, s STRING, d DATE) USING tablets TBLPROPERTIES ('target_tablet_rows'='3')",
    "INSERT INTO {t} VALUES (1, 10, 1.0, 'a', DATE'2020-01-01'), (2, 20, 2.0, 'b', NULL), (3, NULL, 3.0, 'c', DATE'2020-01-03'), "
    "(4, 40, 4.0, NULL, DATE'2020-01-04'), (5, 50, 5.0, 'e', DATE'2020-01-05')",
    "DELETE FROM {t} WHERE id = 2",
    "ALTER TABLE {t} ADD COLUMNS (x STRING)",
    "INSERT INTO {t} VALUES (6, 60, 6.0, 'f', DATE'2020-01-06', 'x6'), (7, 70, 7.0, 'g', NULL, NULL)",
]
SOURCE = "SELECT * FROM VALUES (1, 1.5D, 'A'), (3, 3.0D, 'c'), (4, 4.5D, 'D'), (7, 7.5D, NULL), (9, 9.0D, 'i') AS v(id, v, s)"
UPSERT = (
    f"MERGE INTO {{t}} t USING ({SOURCE}) s ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET v = s.v, s = s.s WHEN NOT MATCHED THEN INSERT (id, v, s) VALUES (s.id, s.v, s.s)"
)


def _run(db, name, conf, statements, monkeypatch):
    """``statements`` on a fresh table under ``conf``: its rows after, the last statement's
    counts and the columns each of Spark's tablet scans read."""
    scanned = record_scans(monkeypatch)
    t = f"reg.kept_{name}"
    db.sql(f"DROP TABLE IF EXISTS {t}")
    with settings(db.spark, conf):
        for s in statements[:-1]:
            db.sql(s.replace("{t}", t))
        scanned.clear()
        m = db.sql(statements[-1].replace("{t}", t)).metrics
    return canon(db.table_of(t).read())[1], (m.rows_inserted, m.rows_updated, m.rows_unchanged), scanned


def _on_every_plan(db, name, statements, monkeypatch):
    return {plan: _run(db, f"{name}_{plan}", conf, statements, monkeypatch) for plan, conf in PLANS.items()}


def test_an_upsert_scans_the_key_alone_and_the_tasks_read_what_it_keeps(reg_db, monkeypatch):
    """``k``, ``d`` and ``x`` (a column added after the first tablets: NULL there) are kept;
    ``v`` and ``s`` only compared: Spark's scan reads ``id``, and the rows are the driver plan's."""
    out = _on_every_plan(reg_db, "upsert", [*SETUP, UPSERT], monkeypatch)
    rows, counts, _ = out["driver"]
    assert counts == (1, 3, 1)
    assert rows == Counter(
        [
            (1, 10, 1.5, "A", D1, None),
            (3, None, 3.0, "c", D3, None),
            (4, 40, 4.5, "D", D4, None),
            (5, 50, 5.0, "e", D5, None),
            (6, 60, 6.0, "f", D6, "x6"),
            (7, 70, 7.5, None, None, None),
            (9, None, 9.0, "i", None, None),
        ]
    )
    for plan in ("spark", "spark_tasks"):
        assert out[plan][:2] == (rows, counts), plan
        assert out[plan][2] == [["id"]], plan


def test_a_column_one_update_sets_and_another_keeps_is_read_by_the_scan(reg_db, monkeypatch):
    """Two UPDATE clauses, one setting ``k`` and ``v``, the other ``s``: what one keeps and the
    other sets is read by Spark's scan (the task could not tell the rows apart); ``d`` and ``x``,
    kept by both, are not."""
    merge = (
        f"MERGE INTO {{t}} t USING ({SOURCE}) s ON t.id = s.id "
        "WHEN MATCHED AND s.v > 4 THEN UPDATE SET k = -1, v = s.v WHEN MATCHED THEN UPDATE SET s = s.s"
    )
    out = _on_every_plan(reg_db, "two_updates", [*SETUP, merge], monkeypatch)
    rows, counts, _ = out["driver"]
    assert counts == (0, 3, 1)
    assert rows[(4, -1, 4.5, None, D4, None)] == 1 and rows[(1, 10, 1.0, "A", D1, None)] == 1
    for plan in ("spark", "spark_tasks"):
        assert out[plan][:2] == (rows, counts), plan
        assert out[plan][2] == [["id", "k", "v", "s"]], plan


def test_a_by_source_update_keeps_its_other_columns_through_the_tasks(reg_db, monkeypatch):
    merge = (
        f"MERGE INTO {{t}} t USING ({SOURCE}) s ON t.id = s.id WHEN NOT MATCHED BY SOURCE THEN UPDATE SET s = 'gone'"
    )
    out = _on_every_plan(reg_db, "by_source", [*SETUP, merge], monkeypatch)
    rows, counts, _ = out["driver"]
    assert counts == (0, 2, 0)
    assert rows[(5, 50, 5.0, "gone", D5, None)] == 1 and rows[(6, 60, 6.0, "gone", D6, "x6")] == 1
    for plan in ("spark", "spark_tasks"):
        assert out[plan][:2] == (rows, counts), plan


def test_a_constrained_table_reads_what_its_updates_keep(reg_db, monkeypatch):
    """The check runs over the images in Spark: a table with constraints keeps Spark's scan whole
    (the kept values are there to be checked)."""
    setup = [*SETUP, "ALTER TABLE {t} ADD CONSTRAINT pos CHECK (k > 0 OR v > 0)"]
    out = _on_every_plan(reg_db, "checked", [*setup, UPSERT], monkeypatch)
    for plan in ("spark", "spark_tasks"):
        assert out[plan][:2] == out["driver"][:2], plan
        assert "k" in out[plan][2][0], plan
