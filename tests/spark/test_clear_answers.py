"""Statements that used to end in a raw Spark error or a wrong refusal: each is now either run
or refused in the statement's words, with a Help line."""

import pytest
import tablets
from tablets.exceptions import MergeSpecError, TabletsError

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def db(spark):
    d = tablets.connect(spark=spark)
    d.sql("CREATE DATABASE IF NOT EXISTS clear")
    d.sql("CREATE TABLE IF NOT EXISTS clear.plain (id INT) USING parquet")
    d.sql("CREATE OR REPLACE VIEW clear.vw AS SELECT 1 AS id")
    return d


def rows(db, sql):
    return sorted(tuple(r) for r in db.sql(sql).collect())


def test_on_conflict_names_a_column_the_rows_lack(db):
    db.sql("CREATE TABLE clear.oc (id INT, v INT) USING tablets TBLPROPERTIES ('key_columns' = 'id')")
    with pytest.raises(
        MergeSpecError, match=r"ON CONFLICT \(nope\): nope is not a column of the inserted rows \(columns: id, v\)"
    ):
        db.sql("INSERT INTO clear.oc VALUES (1, 2) ON CONFLICT (nope) DO NOTHING")


@pytest.mark.parametrize(
    ("statement", "what"),
    [
        ("OPTIMIZE clear.plain", "a parquet table"),
        ("VACUUM clear.plain", "a parquet table"),
        ("RESTORE TABLE clear.plain TO VERSION AS OF 0", "a parquet table"),
        ("DESCRIBE HISTORY clear.plain", "a parquet table"),
        ("OPTIMIZE clear.vw", "a view"),
    ],
)
def test_maintenance_of_another_kind_of_table_says_what_it_is(db, statement, what):
    kind = statement.split(" clear.")[0].replace(" TABLE", "")
    with pytest.raises(
        TabletsError, match=f"{kind} clear.\\w+: clear.\\w+ is {what}, not a tablet table; {kind} runs on tablet tables"
    ):
        db.sql(statement)


def test_update_and_delete_with_a_scalar_subquery(db):
    db.sql("CREATE TABLE clear.t (id INT, v INT) USING tablets")
    db.sql("INSERT INTO clear.t VALUES (1, 1), (2, 2)")
    db.sql("CREATE TABLE clear.src (id INT, v INT) USING tablets")
    db.sql("INSERT INTO clear.src VALUES (1, 50), (2, 70)")
    db.sql("UPDATE clear.t SET v = (SELECT max(v) FROM clear.src) WHERE id = 1")
    db.sql("DELETE FROM clear.t WHERE v < (SELECT min(v) FROM clear.src)")
    assert rows(db, "SELECT * FROM clear.t") == [(1, 70)]


@pytest.mark.parametrize("name", ["values", "between", "select", "excluded"])
def test_tables_named_like_keywords(db, name):
    q = f"clear.`{name}`"
    db.sql(f"CREATE TABLE {q} (id INT, v INT) USING tablets TBLPROPERTIES ('key_columns' = 'id')")
    db.sql(f"INSERT INTO {q} VALUES (1, 1) ON CONFLICT (id) DO NOTHING")
    db.sql(f"INSERT INTO {q} VALUES (1, 5), (2, 2) ON CONFLICT (id) DO UPDATE SET v = excluded.v + v")
    db.sql(f"UPDATE {q} SET v = v + 1 WHERE id = 2")
    db.sql(f"MERGE INTO {q} t USING (SELECT 3 AS id, 3 AS v) s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *")
    assert rows(db, f"SELECT * FROM {q}") == [(1, 6), (2, 3), (3, 3)]
    # gone again: the session is shared, and a tablet table named `select` makes every query a
    # candidate for the routing parse (tests/spark/test_catalog.py checks that it stays cheap)
    db.sql(f"DROP TABLE {q}")


def test_a_column_name_with_a_backquote(db):
    db.sql("CREATE TABLE clear.b (id INT, `a``b` INT) USING tablets TBLPROPERTIES ('key_columns' = 'id')")
    db.sql("INSERT INTO clear.b VALUES (1, 2)")
    db.sql("INSERT INTO clear.b VALUES (1, 3) ON CONFLICT (id) DO UPDATE SET `a``b` = excluded.`a``b`")
    db.sql("MERGE INTO clear.b t USING (SELECT 2 AS id, 4 AS `a``b`) s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *")
    assert rows(db, "SELECT * FROM clear.b") == [(1, 3), (2, 4)]
    assert [c.name for c in db.spark.table("clear.b").schema.fields] == ["id", "a`b"]


def test_a_vacuumed_version_is_a_clear_error(db, spark):
    from tablets.exceptions import TableNotFound

    db.sql("CREATE TABLE clear.vac (id INT) USING tablets")
    db.sql("INSERT INTO clear.vac VALUES (1), (2)")
    db.sql("DELETE FROM clear.vac WHERE id = 1")
    db.sql("OPTIMIZE clear.vac")
    spark.conf.set("spark.tablets.retentionDurationCheck.enabled", "false")
    try:
        db.sql("VACUUM clear.vac RETAIN 0 HOURS")
    finally:
        spark.conf.unset("spark.tablets.retentionDurationCheck.enabled")
    assert rows(db, "SELECT * FROM clear.vac") == [(2,)]
    with pytest.raises(
        TableNotFound, match=r"version 1's files are gone .*VACUUM removed what only older versions read"
    ):
        db.sql("SELECT * FROM clear.vac VERSION AS OF 1")
