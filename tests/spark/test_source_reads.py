"""The source's columns no part of a statement reads never leave its scan (``Plan.source_reads``,
``intake.narrowed``): a key-only DELETE persists, collects and digests its keys alone. Each case
against the rows the driver plan gives, on Spark's plan with the source collected here and
persisted (too big to broadcast), and again: a re-run of the same rows is still recognised."""

import pytest
from support.conf import settings
from support.differential import canon
from tablets.engine import executor
from tablets.engine.route import DRIVER_SCAN_CONF, DRIVER_WRITE_CONF

pytestmark = pytest.mark.spark

PLANS = {
    "driver": {},
    "spark": {DRIVER_SCAN_CONF: "0"},
    "spark_persisted": {DRIVER_SCAN_CONF: "0", DRIVER_WRITE_CONF: "0", "spark.sql.autoBroadcastJoinThreshold": "-1"},
}
SETUP = [
    "CREATE TABLE {t} (id INT, v DOUBLE, s STRING) USING tablets TBLPROPERTIES ('target_tablet_rows'='3')",
    "INSERT INTO {t} VALUES (1, 1.0, 'a'), (2, 2.0, 'b'), (3, 3.0, 'c'), (4, 4.0, 'd'), (5, 5.0, 'e'), (6, 6.0, 'f')",
]
# ``noise`` no part of a statement reads
WIDE = "SELECT id, v * 10 AS v, upper(s) AS s, concat(s, s) AS noise FROM VALUES (2, 2.0D, 'x'), (5, 5.0D, 'y'), (9, 9.0D, 'z') AS w(id, v, s)"


def _run(db, name, conf, statement, monkeypatch):
    """``statement`` run twice on a fresh table under ``conf``: the rows after the first, each
    run's (deleted, updated, inserted, same source) and the source columns each run kept."""
    kept: list[list[str]] = []
    narrowed = executor.narrowed

    def spy(run, source):
        out = narrowed(run, source)
        kept.append(out.columns)
        return out

    monkeypatch.setattr(executor, "narrowed", spy)
    t = f"reg.reads_{name}"
    db.sql(f"DROP TABLE IF EXISTS {t}")
    counts = []
    with settings(db.spark, conf):
        for s in SETUP:
            db.sql(s.replace("{t}", t))
        for _ in range(2):
            m = db.sql(statement.replace("{t}", t)).metrics
            counts.append((m.rows_deleted, m.rows_updated, m.rows_inserted, m.same_source))
            if len(counts) == 1:
                rows = canon(db.table_of(t).read())[1]
    return rows, counts, kept


@pytest.mark.parametrize("plan", PLANS)
def test_a_key_only_delete_keeps_the_keys_alone(reg_db, monkeypatch, plan):
    statement = f"MERGE INTO {{t}} t USING ({WIDE}) s ON t.id = s.id WHEN MATCHED THEN DELETE"
    rows, counts, kept = _run(reg_db, f"delete_{plan}", PLANS[plan], statement, monkeypatch)
    assert sorted(r[0] for r in rows) == [1, 3, 4, 6]
    assert counts == [(2, 0, 0, False), (0, 0, 0, False)]
    assert kept == [["id"], ["id"]]


@pytest.mark.parametrize("plan", PLANS)
def test_an_upsert_keeps_what_it_reads_and_is_recognised_again(reg_db, monkeypatch, plan):
    statement = (
        f"MERGE INTO {{t}} t USING ({WIDE}) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v "
        "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v)"
    )
    rows, counts, kept = _run(reg_db, f"upsert_{plan}", PLANS[plan], statement, monkeypatch)
    assert sorted(rows) == [
        (1, 1.0, "a"),
        (2, 20.0, "b"),
        (3, 3.0, "c"),
        (4, 4.0, "d"),
        (5, 50.0, "e"),
        (6, 6.0, "f"),
        (9, 90.0, None),
    ]
    assert counts == [(0, 2, 1, False), (0, 0, 0, True)]  # the re-run: the digest of the kept columns
    assert kept == [["id", "v"], ["id", "v"]]


def test_a_condition_keeps_its_columns(reg_db, monkeypatch):
    statement = (
        f"MERGE INTO {{t}} t USING ({WIDE}) s ON t.id = s.id WHEN MATCHED AND s.s <> 'Y' THEN UPDATE SET v = s.v "
        "WHEN NOT MATCHED THEN INSERT (id, s) VALUES (s.id, s.s)"
    )
    rows, counts, kept = _run(reg_db, "condition", PLANS["spark_persisted"], statement, monkeypatch)
    assert sorted(rows) == [
        (1, 1.0, "a"),
        (2, 20.0, "b"),
        (3, 3.0, "c"),
        (4, 4.0, "d"),
        (5, 5.0, "e"),
        (6, 6.0, "f"),
        (9, None, "Z"),
    ]
    assert counts[0] == (0, 1, 1, False)
    assert kept[0] == ["id", "v", "s"]


def test_a_subquery_keeps_every_column(reg_db, monkeypatch):
    statement = (
        f"MERGE INTO {{t}} t USING ({WIDE}) s ON t.id = s.id "
        "WHEN MATCHED AND s.id IN (SELECT id FROM VALUES (2) AS q(id)) THEN DELETE"
    )
    rows, _, kept = _run(reg_db, "subquery", PLANS["spark"], statement, monkeypatch)
    assert sorted(r[0] for r in rows) == [1, 3, 4, 5, 6]
    assert kept[0] == ["id", "v", "s", "noise"]
