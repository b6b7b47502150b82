"""Both plans follow the session's ANSI mode where a value does not fit: with it on (Spark 4's
default, and the adapter's), the statement fails and nothing is written; with it off, both
plans write what Spark's legacy casts give (NULL for a malformed string, a wrapped integer)."""

import pytest
from support.differential import sessions
from tablets.exceptions import TabletsError

pytestmark = pytest.mark.spark

ANSI = "spark.sql.ansi.enabled"
STATEMENTS = {
    "merge": "MERGE INTO {t} USING (SELECT 1 AS id, 'not a number' AS v) s ON {t}.id = s.id "
    "WHEN MATCHED THEN UPDATE SET v = s.v",
    "merge_overflow": "MERGE INTO {t} USING (SELECT 1 AS id, 3000000000 AS v) s ON {t}.id = s.id "
    "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *",
    "insert": "INSERT INTO {t} SELECT 2, 'x'",
    "update": "UPDATE {t} SET v = 'abc' WHERE id = 1",
    "on_conflict": "INSERT INTO {t} SELECT 1, 'y' ON CONFLICT (id) DO UPDATE SET v = excluded.v",
}
LEGACY = {
    "merge": [(1, None)],
    "merge_overflow": [(1, -1294967296)],
    "insert": [(1, 42), (2, None)],
    "update": [(1, None)],
    "on_conflict": [(1, None)],
}


@pytest.fixture(scope="module")
def dbs(spark):
    out = sessions(spark)
    yield out
    for db in out.values():
        db.spark.conf.set(ANSI, "true")


def _table(db, name):
    db.sql(f"DROP TABLE IF EXISTS {name}")
    db.sql(f"CREATE TABLE {name} (id INT, v INT) USING tablets TBLPROPERTIES ('key_columns' = 'id')")
    db.sql(f"INSERT INTO {name} VALUES (1, 42)")


@pytest.mark.parametrize("plan", ["driver", "spark"])
@pytest.mark.parametrize("kind", sorted(STATEMENTS))
def test_ansi_on_fails_the_statement_and_writes_nothing(dbs, plan, kind):
    db = dbs[plan]
    db.spark.conf.set(ANSI, "true")
    if plan == "spark":
        db.spark.conf.set("spark.tablets.merge.driverScanBytes", "0")
    name = f"ansi_{plan}_{kind}"
    _table(db, name)
    version = db.table_of(name).version
    with pytest.raises(TabletsError, match="CAST_INVALID_INPUT|CAST_OVERFLOW"):
        db.sql(STATEMENTS[kind].format(t=name))
    assert db.table_of(name).version == version
    assert [tuple(r) for r in db.sql(f"SELECT id, v FROM {name}").collect()] == [(1, 42)]


@pytest.mark.parametrize("plan", ["driver", "spark"])
@pytest.mark.parametrize("kind", sorted(STATEMENTS))
def test_ansi_off_writes_sparks_legacy_values_on_both_plans(dbs, plan, kind):
    db = dbs[plan]
    db.spark.conf.set(ANSI, "false")
    if plan == "spark":
        db.spark.conf.set("spark.tablets.merge.driverScanBytes", "0")
    name = f"legacy_{plan}_{kind}"
    _table(db, name)
    db.sql(STATEMENTS[kind].format(t=name))
    assert sorted(tuple(r) for r in db.sql(f"SELECT id, v FROM {name}").collect()) == LEGACY[kind]
