"""The unchanged check reads the columns only it needs (``Plan.compare_only``: an UPDATE sets
them, nothing else reads them) after the others, for the rows still alike: the driver plan in
its own read, Spark's plan in its merge tasks (its scan leaves them out: ``Run.deferred``).
Each case on both plans, on the driver plan with Arrow evaluation off (Spark classifies the
driver's rows), and on Spark's tasks."""

import contextlib
from collections import Counter

import pytest
from support.both_plans import on_both_plans
from support.conf import settings
from support.differential import canon
from support.scans import record_scans
from tablets.engine.route import ARROW_EVAL_CONF, DRIVER_SCAN_CONF, DRIVER_WRITE_CONF
from tablets.exceptions import ConstraintViolation
from tablets.storage import tablet as tablet_module

pytestmark = pytest.mark.spark

SETUP = [
    "CREATE TABLE {t} (k INT, v DOUBLE, s STRING) USING tablets TBLPROPERTIES ('target_tablet_rows'='3')",
    "INSERT INTO {t} VALUES (1, 1.0, 'a'), (2, 2.0, 'b'), (3, 3.0, 'c'), (4, 4.0, NULL), (5, CAST('NaN' AS DOUBLE), 'e')",
    "ALTER TABLE {t} ADD COLUMNS (x STRING)",
    "INSERT INTO {t} VALUES (6, 6.0, 'f', 'x6'), (7, 7.0, 'g', NULL)",
]
# per key: 1 alike, 2 alike but s, 3 v differs, 4 alike (NULL s), 5 alike (NaN v), 6 alike,
# 7 x differs (a column added after the first tablets), 8 new; 2 and x of an old tablet's row
SOURCE = (
    "SELECT * FROM VALUES (1, 1.0D, 'a', CAST(NULL AS STRING)), (2, 2.0D, 'B', NULL), (3, 3.5D, 'c', NULL), "
    "(4, 4.0D, NULL, NULL), (5, CAST('NaN' AS DOUBLE), 'e', NULL), (6, 6.0D, 'f', 'x6'), (7, 7.0D, 'g', 'x7'), "
    "(8, 8.0D, 'h', NULL) AS v(k, v, s, x)"
)
UPSERT = (
    f"MERGE INTO {{t}} t USING ({SOURCE}) s ON t.k = s.k WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
)
AFTER = [
    (1, 1.0, "a", None),
    (2, 2.0, "B", None),
    (3, 3.5, "c", None),
    (4, 4.0, None, None),
    (5, "NaN", "e", None),
    (6, 6.0, "f", "x6"),
    (7, 7.0, "g", "x7"),
    (8, 8.0, "h", None),
]


@contextlib.contextmanager
def first_rows(reg_db, name, conf=None):
    """A fresh table ``reg.<name>`` with ``SETUP``'s first rows, under ``conf`` (settings)."""
    t = f"reg.{name}"
    reg_db.sql(f"DROP TABLE IF EXISTS {t}")
    with settings(reg_db.spark, conf or {}):
        for s in SETUP[:2]:
            reg_db.sql(s.replace("{t}", t))
        yield t


def column_s(reg_db, t):
    """The values of ``t``'s column ``s``, counted."""
    return Counter(r[2] for r in canon(reg_db.table_of(t).read())[1].elements())


def test_rows_alike_but_in_a_column_compared_later_are_updated(reg_db):
    results = on_both_plans(reg_db, "later", SETUP, UPSERT)
    assert results == {plan: (Counter(AFTER), (1, 3, 0)) for plan in results}
    t = "reg.later_arrow_off"
    reg_db.sql(f"DROP TABLE IF EXISTS {t}")
    with settings(reg_db.spark, {ARROW_EVAL_CONF: "false"}):  # the driver's rows, classified by Spark
        for s in SETUP:
            reg_db.sql(s.replace("{t}", t))
        m = reg_db.sql(UPSERT.replace("{t}", t)).metrics
    assert (m.rows_inserted, m.rows_updated, m.rows_unchanged) == (1, 3, 4)
    assert canon(reg_db.table_of(t).read())[1] == Counter(AFTER)


SPARK_TASKS = {DRIVER_SCAN_CONF: "0", DRIVER_WRITE_CONF: "0", "spark.sql.autoBroadcastJoinThreshold": "-1"}


@pytest.mark.parametrize("conf", [{DRIVER_SCAN_CONF: "0"}, SPARK_TASKS], ids=["spark", "spark_tasks"])
def test_spark_scans_without_the_compared_columns_and_its_tasks_compare_them(reg_db, monkeypatch, conf):
    """Spark's plan scans the key alone (``v``, ``s``, ``x`` are only compared): its merge tasks
    compare them, on the driver for few pairs and in Spark's tasks (shuffle-joined) else."""
    scanned = record_scans(monkeypatch)
    t = "reg.later_spark"
    reg_db.sql(f"DROP TABLE IF EXISTS {t}")
    with settings(reg_db.spark, conf):
        for s in SETUP:
            reg_db.sql(s.replace("{t}", t))
        m = reg_db.sql(UPSERT.replace("{t}", t)).metrics
        assert (m.rows_inserted, m.rows_updated, m.rows_unchanged) == (1, 3, 4)
        assert canon(reg_db.table_of(t).read())[1] == Counter(AFTER)
        assert scanned == [["k"]]
        # the same rows again: every matched row alike, none written
        m = reg_db.sql(UPSERT.replace("{t}", t)).metrics
        assert (m.rows_inserted, m.rows_updated, m.rows_unchanged) == (0, 0, 8)
        assert canon(reg_db.table_of(t).read())[1] == Counter(AFTER)


def test_spark_tasks_check_constraints_only_of_the_rows_they_write(reg_db):
    """A CHECK over a compared column holds for the rows the tasks write: an update that breaks
    it fails the statement, writing nothing."""
    with first_rows(reg_db, "later_check", SPARK_TASKS) as t:
        reg_db.sql(f"ALTER TABLE {t} ADD CONSTRAINT short CHECK (length(s) < 3)")
        m = reg_db.sql(
            f"MERGE INTO {t} t USING (SELECT * FROM VALUES (1, 1.0D, 'a'), (2, 2.0D, 'bb') AS v(k, v, s)) s "
            "ON t.k = s.k WHEN MATCHED THEN UPDATE SET *"
        ).metrics
        assert (m.rows_updated, m.rows_unchanged) == (1, 1)
        with pytest.raises(ConstraintViolation, match="short"):
            reg_db.sql(
                f"MERGE INTO {t} t USING (SELECT * FROM VALUES (1, 1.0D, 'a'), (2, 2.0D, 'bbbb') AS v(k, v, s)) s "
                "ON t.k = s.k WHEN MATCHED THEN UPDATE SET *"
            )
        assert column_s(reg_db, t) == Counter(["a", "bb", "c", None, "e"])


def test_a_column_compared_later_is_read_only_for_rows_still_alike(reg_db, monkeypatch):
    """An upsert whose matched rows all differ in ``v`` never reads ``s``; one whose rows are
    alike in ``v`` reads ``s`` for those rows alone."""
    with first_rows(reg_db, "later_reads") as t:
        reads: list[tuple[tuple[str, ...], int]] = []
        read_positions = tablet_module.read_positions

        def spy(io, root, add, schema, columns, positions, mapping=None):
            reads.append((tuple(columns), len(positions)))
            return read_positions(io, root, add, schema, columns, positions, mapping)

        monkeypatch.setattr(tablet_module, "read_positions", spy)
        m = reg_db.sql(
            f"MERGE INTO {t} t USING (SELECT * FROM VALUES (1, 10.0D, 'a'), (2, 20.0D, 'b'), (3, 30.0D, 'z') AS v(k, v, s)) s "
            "ON t.k = s.k WHEN MATCHED THEN UPDATE SET *"
        ).metrics
        assert m.merged_on_driver and (m.rows_updated, m.rows_unchanged) == (3, 0)
        assert {c for c, _ in reads} == {("v",)}
        reads.clear()
        m = reg_db.sql(
            f"MERGE INTO {t} t USING (SELECT * FROM VALUES (1, 10.0D, 'a'), (2, 20.0D, 'B'), (3, 33.0D, 'z') AS v(k, v, s)) s "
            "ON t.k = s.k WHEN MATCHED THEN UPDATE SET *"
        ).metrics
        assert m.merged_on_driver and (m.rows_updated, m.rows_unchanged) == (2, 1)
        assert sum(n for c, n in reads if c == ("v",)) == 3 and sum(n for c, n in reads if c == ("s",)) == 2


@pytest.mark.parametrize("conf", [{}, {DRIVER_SCAN_CONF: "0"}, SPARK_TASKS], ids=["driver", "spark", "spark_tasks"])
def test_a_column_dropped_and_added_back_is_compared_as_null_in_older_tablets(reg_db, conf):
    """``s`` dropped and added back: older tablets still hold the old values under the old
    column, and the check compares the new column's NULL with the new images."""
    with first_rows(reg_db, "later_readded", conf) as t:
        reg_db.sql(f"ALTER TABLE {t} DROP COLUMN s")
        reg_db.sql(f"ALTER TABLE {t} ADD COLUMNS (s STRING)")
        m = reg_db.sql(
            f"MERGE INTO {t} t USING (SELECT * FROM VALUES (1, 1.0D, CAST(NULL AS STRING)), (2, 2.0D, 'b') AS v(k, v, s)) s "
            "ON t.k = s.k WHEN MATCHED THEN UPDATE SET *"
        ).metrics
        assert (m.rows_updated, m.rows_unchanged) == (1, 1)  # 2: 'b' against NULL, not the old 'b'
        assert canon(reg_db.table_of(t).read())[1][(2, 2.0, "b")] == 1


@pytest.mark.parametrize("conf", [{DRIVER_SCAN_CONF: "0"}, SPARK_TASKS], ids=["spark", "spark_tasks"])
def test_a_by_source_update_is_compared_by_the_tasks(reg_db, conf):
    """``WHEN NOT MATCHED BY SOURCE THEN UPDATE SET s = 'gone'``: ``s`` is only compared; rows
    already 'gone' are unchanged, the others written once."""
    with first_rows(reg_db, "later_by_source", conf) as t:
        reg_db.sql(f"UPDATE {t} SET s = 'gone' WHERE k = 3")
        m = reg_db.sql(
            f"MERGE INTO {t} t USING (SELECT 1 AS k) s ON t.k = s.k "
            "WHEN NOT MATCHED BY SOURCE THEN UPDATE SET s = 'gone'"
        ).metrics
        assert (m.rows_updated, m.rows_unchanged) == (3, 1)
        assert column_s(reg_db, t) == Counter(["a", "gone", "gone", "gone", "gone"])
