"""Spark's plan with few pairs (``streams.collect_few_pairs``): Spark joins and classifies, and
when the pairs can be at most ``spark.tablets.merge.driverWriteRows`` rows the driver collects
them and one task there writes them (no shuffle, no Python worker); above it, or with the
setting at 0, Spark's tasks write them. Both give the same table and counts."""

from collections import Counter

import pytest
import tablets
from support.conf import settings
from support.differential import canon
from support.jobs import spark_jobs
from tablets.engine.route import DRIVER_SCAN_CONF, DRIVER_WRITE_CONF
from tablets.settings import InvalidSetting

pytestmark = pytest.mark.spark

SPARK_PLAN = {DRIVER_SCAN_CONF: "0"}


DATABASE = "few"  # created by the conftest's db fixture


def _table(db, name, keys=""):
    db.sql(f"DROP TABLE IF EXISTS {name}")
    props = "'target_tablet_rows' = '3'" + (f", 'key_columns' = '{keys}'" if keys else "")
    db.sql(f"CREATE TABLE {name} (k INT, v STRING) USING tablets TBLPROPERTIES ({props})")
    db.sql(f"INSERT INTO {name} VALUES (1,'a'),(2,'b'),(3,'c'),(4,'d'),(5,'e'),(6,'f'),(7,'g')")


MERGE = """MERGE INTO {t} t USING (SELECT * FROM VALUES (1,'x'),(5,'y'),(9,'z') AS s(k, v)) s ON t.k = s.k
WHEN MATCHED AND s.v > t.v THEN UPDATE SET v = concat(s.v, t.v)
WHEN NOT MATCHED THEN INSERT *
WHEN NOT MATCHED BY SOURCE AND t.k % 2 = 0 THEN DELETE"""


def _run(db, name, conf, keys=""):
    _table(db, name, keys)
    with settings(db.spark, {**SPARK_PLAN, **conf}):
        result = {}
        jobs = spark_jobs(db.spark, lambda: result.update(m=db.sql(MERGE.format(t=name)).metrics))
    m = result["m"]
    return m, canon(db.table_of(name).read())[1], jobs


def test_few_pairs_are_written_on_the_driver_with_the_rows_spark_tasks_write(db):
    few, rows_few, jobs_few = _run(db, "few.a", {})
    tasks, rows_tasks, jobs_tasks = _run(db, "few.b", {DRIVER_WRITE_CONF: "0"})
    want = Counter({(1, "xa"): 1, (3, "c"): 1, (5, "ye"): 1, (7, "g"): 1, (9, "z"): 1})
    assert rows_few == rows_tasks == want
    counts = [(m.rows_inserted, m.rows_updated, m.rows_deleted) for m in (few, tasks)]
    assert counts == [(1, 2, 3), (1, 2, 3)]
    assert few.written_on_driver and not tasks.written_on_driver
    assert not few.merged_on_driver and not tasks.merged_on_driver
    assert len(jobs_few) < len(jobs_tasks)  # no shuffle stage and no task job for the writes


def test_pairs_that_can_be_more_than_the_limit_go_to_spark_tasks(db):
    """Unkeyed: a source row may pair with every target row (3 x 7 here), so the bound is over 10."""
    m, rows, _ = _run(db, "few.c", {DRIVER_WRITE_CONF: "10"})
    assert not m.written_on_driver
    assert rows[(9, "z")] == 1
    # keyed on k: a pair per source row at most, so 2 x 3 + 3 + 7 rows fit in 16
    m, rows_keyed, _ = _run(db, "few.d", {DRIVER_WRITE_CONF: "16"}, keys="k")
    assert m.written_on_driver and rows_keyed == rows


def test_few_pairs_breaking_a_key_write_nothing(db):
    _table(db, "few.e", keys="k")
    before = db.table_of("few.e").version
    with settings(db.spark, SPARK_PLAN), pytest.raises(tablets.exceptions.KeyViolation):
        db.sql(
            "MERGE INTO few.e t USING (SELECT * FROM VALUES (20,'x'),(20,'y') AS s(k, v)) s ON t.k = s.k "
            "WHEN NOT MATCHED THEN INSERT *"
        )
    assert db.table_of("few.e").version == before


@pytest.mark.parametrize(
    ("key", "value", "what"),
    [
        (DRIVER_WRITE_CONF, "many", "is not a whole number"),
        (DRIVER_WRITE_CONF, "-1", "is not a whole number"),
        (DRIVER_SCAN_CONF, "abc", "is not a size"),
    ],
)
def test_a_bad_size_setting_is_an_error_naming_it(db, key, value, what):
    _table(db, "few.f")
    before = db.table_of("few.f").version
    with settings(db.spark, {**SPARK_PLAN, key: value}), pytest.raises(InvalidSetting) as e:
        db.sql(MERGE.format(t="few.f"))
    assert key in str(e.value) and repr(value) in str(e.value) and what in str(e.value)
    assert "Help:" in str(e.value)
    assert db.table_of("few.f").version == before


def test_explain_says_who_writes_the_pairs(db):
    _table(db, "few.g")
    with settings(db.spark, SPARK_PLAN):
        text = db.sql("EXPLAIN " + MERGE.format(t="few.g"))
    assert "by one task on the driver where they can be at most 10,000 rows" in text
    with settings(db.spark, {**SPARK_PLAN, DRIVER_WRITE_CONF: "0"}):
        text = db.sql("EXPLAIN " + MERGE.format(t="few.g"))
    assert f"written by Spark's tasks ({DRIVER_WRITE_CONF} is 0)" in text
