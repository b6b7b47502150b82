"""Columns whose names need quoting (a space, a dot, a backquote, a reserved word, a letter
outside ASCII) take every statement on both plans: the engine quotes every name it writes into
Spark SQL (``quote_ident``: a backquote doubled) and takes a SET or INSERT column's name as the
parser gives it (a dot is part of a quoted name, not a qualifier). ALTER TABLE's message names
the version it committed, or that there was nothing to change."""

from __future__ import annotations

import pytest
import tablets
from support.conf import settings
from support.differential import PLANS
from tablets.engine import key_filter
from tablets.engine.route import DRIVER_WRITE_CONF, LOCAL_SOURCE_CONF

pytestmark = pytest.mark.spark

COLUMNS = "`my key` BIGINT, `Value.x` STRING, `sélect` DOUBLE, `a``b` INT, `GROUP` STRING"


DATABASE = "quoted"  # created by the conftest's db fixture


@pytest.mark.parametrize("plan", list(PLANS))
def test_statements_over_names_that_need_quoting(db, spark, plan):
    t = f"quoted.names_{plan}"
    db.sql(f"DROP TABLE IF EXISTS {t}")
    db.sql(f"CREATE TABLE {t} ({COLUMNS}) USING tablets TBLPROPERTIES ('key_columns' = 'my key')")
    db.sql(f"INSERT INTO {t} SELECT id, 'a', id * 1.5, 1, 'g' FROM RANGE(10)")
    with settings(spark, PLANS[plan]):
        merged = db.sql(
            f"MERGE INTO {t} t USING (SELECT id AS `my key`, 'b' AS `Value.x`, 2.5 AS `sélect`, 2 AS `a``b`, "
            "'h' AS `GROUP` FROM RANGE(5, 15)) s ON t.`my key` = s.`my key` "
            "WHEN MATCHED AND s.`a``b` > t.`a``b` THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
        )
        assert merged.message == "MERGE 10 (inserted 5, updated 5, deleted 0, unchanged 0)"
        updated = db.sql(f"UPDATE {t} SET `Value.x` = 'c', t.`GROUP` = `GROUP` || 'x' WHERE `sélect` > 3")
        assert updated.message.startswith("UPDATE 2 (")
        assert db.sql(f"DELETE FROM {t} WHERE `a``b` = 1 AND `my key` < 2").message.startswith("DELETE 2 (")
        conflict = db.sql(
            f"INSERT INTO {t} SELECT 3L, 'dup', 0.0, 9, 'z' ON CONFLICT (`my key`) DO UPDATE SET `Value.x` = excluded.`Value.x`"
        )
        assert conflict.message.startswith("INSERT 1 (inserted 0, updated 1,")
        assert db.sql(f"ALTER TABLE {t} ADD COLUMNS (`new col` INT)").message.startswith(
            "ALTER TABLE: committed version "
        )
        later = db.sql(
            f"MERGE INTO {t} t USING (SELECT 4L AS `my key`, 7 AS `new col`) s ON t.`my key` = s.`my key` "
            "WHEN MATCHED THEN UPDATE SET `new col` = s.`new col` WHEN NOT MATCHED THEN INSERT (`my key`, `a``b`) VALUES (s.`my key`, 0)"
        )
        assert later.message == "MERGE 1 (inserted 0, updated 1, deleted 0, unchanged 0)"
        built = tablets.table(db, t).merge(spark.sql("SELECT 40L AS k"), on="t.`my key` = s.k")
        built.when_not_matched_insert(values={"`my key`": "s.k", "t.`Value.x`": "'built'"}).execute()
    rows = sorted(tuple(r) for r in db.sql(f"SELECT * FROM {t}").collect())
    assert rows[:3] == [(2, "a", 3.0, 1, "g", None), (3, "dup", 4.5, 1, "gx", None), (4, "c", 6.0, 1, "gx", 7)]
    assert rows[3:] == [(k, "b", 2.5, 2, "h", None) for k in range(5, 15)] + [(40, "built", None, None, None, None)]
    assert db.sql(f"ALTER TABLE {t} DROP COLUMNS IF EXISTS (nope)").message == "ALTER TABLE: nothing to change"


def test_tasks_take_columns_of_any_name(db, spark):
    """Spark's tasks write rows whose columns' names hold a dot or a backquote (PySpark's
    mapInArrow takes each column by name: ``streams.map_in_arrow``), and ``cluster_by`` and
    key columns of such names partition and sort the rows."""
    t = "quoted.tasks"
    db.sql(f"DROP TABLE IF EXISTS {t}")
    db.sql(
        f"CREATE TABLE {t} (`k.1` BIGINT, `Value.x` STRING, `a``b` INT) USING tablets "
        "TBLPROPERTIES ('key_columns' = 'k.1', 'cluster_by' = 'Value.x', 'target_tablet_rows' = '3')"
    )
    in_tasks = {**PLANS["spark"], LOCAL_SOURCE_CONF: "0", DRIVER_WRITE_CONF: "0"}
    with settings(spark, in_tasks):
        db.sql(f"INSERT INTO {t} SELECT id, CAST(10 - id AS STRING), 1 FROM RANGE(8)")
        merged = db.sql(
            f"MERGE INTO {t} t USING (SELECT id AS `k.1`, CAST(id AS STRING) AS `Value.x`, 2 AS `a``b` FROM RANGE(6, 12)) s "
            "ON t.`k.1` = s.`k.1` WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
        )
        assert merged.message == "MERGE 6 (inserted 4, updated 2, deleted 0, unchanged 0)"
        db.sql(f"OPTIMIZE {t}")
    rows = sorted(tuple(r) for r in db.sql(f"SELECT * FROM {t}").collect())
    assert rows == [(i, str(10 - i), 1) for i in range(6)] + [(i, str(i), 2) for i in range(6, 12)]


def test_key_filter_over_a_key_whose_name_holds_a_dot(db, spark, monkeypatch):
    """The key filter's bloom filter hashes the source's keys into a column of its own name (it
    took the hash's generated name, ``xxhash64(k.1)``, as a struct's field). Found by the soak,
    seed 9840064."""
    monkeypatch.setattr(key_filter, "MIN_TARGET_PER_SOURCE", 0)  # (the filter for so few rows too)
    t = "quoted.bloom"
    db.sql(f"DROP TABLE IF EXISTS {t}")
    db.sql(
        f"CREATE TABLE {t} (k1 DOUBLE, `k2 Value.x` BINARY) USING tablets TBLPROPERTIES ('key_columns' = 'k1,k2 Value.x')"
    )
    no_broadcast = {**PLANS["spark"], DRIVER_WRITE_CONF: "0", "spark.sql.autoBroadcastJoinThreshold": "-1"}
    with settings(spark, no_broadcast):
        db.sql(f"INSERT INTO {t} SELECT * FROM VALUES (CAST('-Infinity' AS DOUBLE), X'6162') AS v(k1, `k2 Value.x`)")
        got = db.sql(f"INSERT INTO {t} SELECT * FROM VALUES (CAST('1.5' AS DOUBLE), X'00') AS v(k1, `k2 Value.x`)")
    assert got.message.startswith("INSERT 1 (inserted 1,")
    assert db.sql(f"SELECT count(*) FROM {t}").collect()[0][0] == 2
