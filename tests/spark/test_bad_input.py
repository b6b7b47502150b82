"""The front door refuses what it cannot run exactly: malformed statements, unknown columns,
targets that are not tablet tables. Each is a TabletsError whose message names the statement
part in the user's words (never an internal name), and the table is unchanged (contents and
version)."""

import pytest
import tablets
from tablets.exceptions import MergeSpecError, StatementParseError, TableNotFound, TabletsError

pytestmark = pytest.mark.spark

T = "bad.t"
M = f"MERGE INTO {T} t USING src s ON t.id = s.id"

# (statement, the words the message must contain)
CORPUS = [
    # truncated
    (f"MERGE INTO {T} t USING src s ON", "ON needs a condition"),
    (f"MERGE INTO {T} t USING src s", "WHEN"),
    (f"MERGE INTO {T} t USING src s ON t.id = s.id", "at least one WHEN"),
    (f"{M} WHEN", "THEN"),
    (f"{M} WHEN MATCHED", "THEN"),
    (f"{M} WHEN MATCHED THEN", "THEN"),
    (f"{M} WHEN MATCHED THEN UPDATE SET v =", "'=' needs a value"),
    (f"{M} WHEN NOT MATCHED THEN INSERT", "INSERT needs * or VALUES"),
    (f"{M} WHEN NOT MATCHED THEN INSERT (id, v)", "needs VALUES"),
    (f"{M} WHEN NOT MATCHED THEN INSERT (id, v) VALUES", "needs VALUES"),
    (f"{M} WHEN NOT MATCHED THEN INSERT VALUES (s.id,", "a ',' with nothing after it (after '(s.id,')"),
    (f"UPDATE {T} SET v = 1 WHERE", "WHERE needs a condition"),
    (f"UPDATE {T} SET v = 1 WHERE id =", "'=' needs a value"),
    (f"DELETE FROM {T} WHERE", "WHERE needs a condition"),
    (f"DELETE FROM {T} WHERE id = 1 AND", "AND with no condition"),
    (f"INSERT INTO {T} VALUES (1, 2", "')' is missing"),
    (f"INSERT INTO {T} VALUES (1, 1, 1) ON CONFLICT", "conflict columns"),
    (f"INSERT INTO {T} VALUES (1, 1, 1) ON CONFLICT (id)", "needs an action"),
    (f"INSERT INTO {T} VALUES (1, 1, 1) ON CONFLICT (id) DO", "unexpected word 'DO'"),
    # empty SET
    (f"{M} WHEN MATCHED THEN UPDATE", "SET assigns nothing"),
    (f"{M} WHEN MATCHED THEN UPDATE SET", "SET assigns nothing"),
    (f"UPDATE {T} SET", "SET assigns nothing"),
    (f"UPDATE {T}", "SET assigns nothing"),
    (f"UPDATE {T} SET v", "not an assignment"),
    (f"INSERT INTO {T} VALUES (1, 1, 1) ON CONFLICT (id) DO UPDATE", "SET assigns nothing"),
    (f"INSERT INTO {T} VALUES (1, 1, 1) ON CONFLICT (id) DO UPDATE SET", "SET assigns nothing"),
    # stray tokens
    (f"{M} WHEN MATCHED THEN UPDATE SET v = s.v,", "','"),
    (f"UPDATE {T} SET v = 1,", "','"),
    (f"UPDATE {T} SET v = 1, WHERE id = 1", "','"),
    (f"{M} WHEN MATCHED AND THEN DELETE", "AND with no condition"),
    (f"{M} WHEN MATCHED THEN DELETE garbage", "unexpected 'garbage'"),
    (f"{M} WHEN MATCHED THEN UPDATE SET v = s.v extra tokens", "unexpected"),
    (f"DELETE FROM {T} WHERE id = 1 garbage tokens", "unexpected 'garbage'"),
    (f"INSERT INTO {T} VALUES (1, 1, 1) ON CONFLICT (id) DO NOTHING extra", "unexpected"),
    (f"{M} WHEN MATCHED THEN UPSERT", "unexpected word 'UPSERT'"),
    (f"{M} WHEN MATCHED THEN DELETE; DELETE FROM {T}", "more than one statement"),
    (f"UPDATE {T} SET v = 1 v = 2", "unexpected"),
    # wrong clause order, wrong clause
    (f"UPDATE {T} WHERE id = 1 SET v = 1", "SET must come before WHERE"),
    (f"MERGE INTO {T} t USING src s WHEN MATCHED THEN DELETE ON t.id = s.id", "unexpected"),
    (f"MERGE {T} t USING src s ON t.id = s.id WHEN MATCHED THEN DELETE", "MERGE must be followed by INTO"),
    (f"DELETE {T} WHERE id = 1", "DELETE must be followed by FROM"),
    (f"{M} WHEN MATCHED THEN INSERT *", "INSERT is not allowed under WHEN MATCHED"),
    (f"{M} WHEN NOT MATCHED THEN DELETE", "DELETE is not allowed under WHEN NOT MATCHED"),
    (f"{M} WHEN NOT MATCHED THEN UPDATE SET v = 1", "UPDATE is not allowed under WHEN NOT MATCHED"),
    (f"{M} WHEN MATCHED THEN DELETE WHEN MATCHED THEN UPDATE SET v = s.v", "unreachable"),
    # wrong counts and repeats
    (f"{M} WHEN MATCHED THEN UPDATE SET v = s.v, v = 1", "assigned more than once"),
    (f"UPDATE {T} SET v = 1, v = 2", "assigned more than once"),
    (f"{M} WHEN NOT MATCHED THEN INSERT (id, v) VALUES (1)", "2 columns but gives 1 values"),
    (f"INSERT INTO {T} (id, v) VALUES (1)", "names 2 columns"),
    (f"INSERT INTO {T} VALUES (1, 1, 1), (2, 2)", "different lengths"),
    # unknown names, in the user's words
    (f"{M} WHEN MATCHED THEN UPDATE SET v = s.nope", "the source (s) has no column 'nope'"),
    (f"{M} WHEN MATCHED AND s.vv > 1 THEN DELETE", "Did you mean v?"),
    (f"{M} WHEN MATCHED THEN UPDATE SET v = x.v", "'x', which is not a table of this statement"),
    (f"{M} WHEN MATCHED THEN UPDATE SET nope = 1", "not a column of the target"),
    (f"UPDATE {T} SET v = nope + 1", "column 'nope' is not a column of the target"),
    (f"DELETE FROM {T} WHERE t.nope = 1", "no column 'nope'"),
    (f"MERGE INTO {T} t USING (SELECT FROM src) s ON t.id = s.id WHEN MATCHED THEN DELETE", "USING"),
    (f"MERGE INTO {T} t USING no_such_source s ON t.id = s.id WHEN MATCHED THEN DELETE", "USING no_such_source"),
]


@pytest.fixture(scope="module")
def db(spark):
    d = tablets.connect(spark=spark)
    d.sql("CREATE DATABASE IF NOT EXISTS bad")
    d.sql(f"DROP TABLE IF EXISTS {T}")
    # a column named like the source alias: Spark alone would read s.nope as a field of it
    d.sql(f"CREATE TABLE {T} (id INT, v INT, s INT) USING tablets TBLPROPERTIES ('key_columns' = 'id')")
    d.sql(f"INSERT INTO {T} VALUES (1, 10, 0), (2, 20, 0)")
    d.sql("CREATE OR REPLACE TEMP VIEW src AS SELECT * FROM VALUES (1, 11), (3, 30) AS v(id, v)")
    return d


def state(db, name=T):
    table = db.table_of(name)
    return table.snapshot().version, sorted(tuple(r) for r in db.sql(f"SELECT * FROM {name}").collect())


def test_corpus_is_large():
    assert len(CORPUS) >= 40


@pytest.mark.parametrize("stmt, words", CORPUS, ids=[c[0][:70] for c in CORPUS])
def test_malformed_statement(db, stmt, words):
    before = state(db)
    with pytest.raises(TabletsError) as info:
        db.sql(stmt)
    text = str(info.value)
    assert words in text, text
    assert "__tablets" not in text and "Traceback" not in text
    assert "\nHelp: " in text
    assert state(db) == before


def test_subquery_in_set_keeps_its_own_columns(db):
    db.sql("CREATE OR REPLACE TEMP VIEW other AS SELECT * FROM VALUES (5, 100) AS o(k, w)")
    before = state(db)
    db.sql(f"{M} WHEN MATCHED THEN UPDATE SET v = (SELECT max(w) FROM other)")
    assert state(db)[1] == [(1, 100, 0), (2, 20, 0)]
    with pytest.raises(MergeSpecError) as info:  # an unknown name inside the subquery: Spark's word, ours
        db.sql(f"{M} WHEN MATCHED THEN UPDATE SET v = (SELECT max(nope) FROM other)")
    assert "nope" in str(info.value) and "__tablets" not in str(info.value)
    db.sql(f"UPDATE {T} SET v = 10 WHERE id = 1")
    assert state(db)[1] == before[1]


def test_view_target(db):
    db.sql(f"CREATE OR REPLACE VIEW bad.view_of_t AS SELECT * FROM {T}")
    db.sql(f"CREATE OR REPLACE TEMP VIEW tmp_of_t AS SELECT * FROM {T}")
    for name in ("bad.view_of_t", "tmp_of_t"):
        for stmt in (
            f"MERGE INTO {name} t USING src s ON t.id = s.id WHEN MATCHED THEN DELETE",
            f"UPDATE {name} SET v = 1",
            f"DELETE FROM {name} WHERE id = 1",
        ):
            with pytest.raises(TabletsError, match=f"{name} is a view") as info:
                db.sql(stmt)
            assert "tablet table the view reads" in str(info.value)


def test_plain_parquet_target(db):
    db.sql("DROP TABLE IF EXISTS bad.pq")
    db.sql("CREATE TABLE bad.pq (id INT, v INT) USING parquet")
    with pytest.raises(TabletsError, match="bad.pq is a parquet table, not a tablet table") as info:
        db.sql("UPDATE bad.pq SET v = 1")
    assert "USING tablets AS SELECT" in str(info.value)


def test_missing_target(db):
    with pytest.raises(TableNotFound, match="no table or view named bad.nope"):
        db.sql("DELETE FROM bad.nope WHERE id = 1")


def test_unparsable_statement_on_a_tablet_table_is_ours(db):
    with pytest.raises(StatementParseError, match="SET must come before WHERE"):
        db.sql(f"UPDATE {T} WHERE id = 1 SET v = 1")
