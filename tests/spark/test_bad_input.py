"""The front door refuses what it cannot run exactly: malformed statements, unknown columns,
targets that are not tablet tables. Each is a TabletsError whose message names the statement
part in the user's words (never an internal name), and the table is unchanged (contents and
version)."""

import pytest
import tablets
from tablets.exceptions import MergeSpecError, StatementParseError, TableNotFound, TabletsError
from tablets.storage.properties import InvalidProperty

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


# --- found by the generated suite (tests/spark/test_bad_input_generated.py) ----------------------


def _fresh(db, name, *setup):
    db.sql(f"DROP TABLE IF EXISTS {name}")
    for s in setup:
        db.sql(s)


@pytest.mark.parametrize(
    "key, value", [("target_tablet_rows", "1e3"), ("target_tablet_rows", "10.0"), ("auto_compact_min_tablets", "2.0")]
)
def test_a_whole_number_property_is_written_as_one(db, key, value):
    """1e3 passed the check (a float equal to an integer), then every statement on the table,
    even the SET TBLPROPERTIES that would mend it, failed with Python's int() ValueError."""
    _fresh(db, "bad.whole", "CREATE TABLE bad.whole (id INT) USING tablets", "INSERT INTO bad.whole VALUES (1)")
    before = state(db, "bad.whole")
    with pytest.raises(InvalidProperty, match="must be a whole number"):
        db.sql(f"ALTER TABLE bad.whole SET TBLPROPERTIES ('{key}' = '{value}')")
    assert state(db, "bad.whole") == before
    db.sql("INSERT INTO bad.whole VALUES (2)")


def test_vacuum_retains_a_number_of_hours_not_nan(db):
    """RETAIN NaN HOURS passed the retention check (NaN < 168 is false) and ran."""
    _fresh(db, "bad.vac", "CREATE TABLE bad.vac (id INT) USING tablets")
    for hours in ("NaN", "inf", "Infinity"):
        with pytest.raises(StatementParseError, match="RETAIN needs a number of hours"):
            db.sql(f"VACUUM bad.vac RETAIN {hours} HOURS")


def test_adjacent_string_literals_are_one_as_in_spark(db):
    """'it''s' is Spark's 'its'; the front door could not read it in a COMMENT, so Spark's own
    path ran: the table comment was lost, a CREATE made a table no read could open, and a
    REPLACE TABLE of a view dropped the view."""
    _fresh(db, "bad.lit", "CREATE TABLE bad.lit (id INT COMMENT 'it''s') USING tablets COMMENT 'a' 'b'")
    db.sql("INSERT INTO bad.lit VALUES (1)")
    assert [tuple(r) for r in db.sql("SELECT * FROM bad.lit").collect()] == [(1,)]
    described = {r.col_name: r.comment for r in db.sql("DESCRIBE bad.lit").collect()}
    assert described["id"] == "its"
    assert "COMMENT 'ab'" in db.sql("SHOW CREATE TABLE bad.lit").collect()[0][0]
    db.sql("CREATE OR REPLACE VIEW bad.lit_view AS SELECT 1 AS id")
    with pytest.raises(TabletsError, match="is a view"):
        db.sql("REPLACE TABLE bad.lit_view (id INT, v STRING COMMENT 'it''s') USING tablets")
    assert [tuple(r) for r in db.sql("SELECT * FROM bad.lit_view").collect()] == [(1,)]


@pytest.mark.parametrize(
    "statement, words",
    [
        ("CREATE TABLE bad.rep (id INT, v INT, V STRING) USING tablets", "column v is named more than once"),
        ("ALTER TABLE bad.rep ADD COLUMNS (w INT, W STRING)", "column w is named more than once"),
        ("INSERT INTO bad.rep (v, V) VALUES (1, 2)", "v named more than once"),
        ("CREATE TABLE bad.rep (id DECIMAL(5, 7)) USING tablets", "a decimal has a precision of 1 to 38"),
        ("CREATE OR REPLACE TABLE IF NOT EXISTS bad.rep (id INT) USING tablets", "OR REPLACE and IF NOT EXISTS"),
        ("CREATE TABLE bad.rep2 (id INT) USING tablets TBLPROPERTIES ('delta.constraints.c' = 'nope > 0')", "CHECK"),
        ("CREATE TABLE bad.rep2 (id INT) USING tablets TBLPROPERTIES (delta.appendOnly = true)", "appendOnly"),
        ("CREATE TABLE bad.rep2 SHALLOW CLONE bad.rep VERSION AS OF 1.5", "a whole number"),
        ("ALTER TABLE bad.rep DROP CONSTRAINT select", "ALTER TABLE bad.rep: "),
        ("ALTER TABLE bad.rep ADD COLUMNS (x INT) FIRST", "is not a form tablet tables take"),
        ("INSERT OVERWRITE bad.rep (v) PARTITION (v = 1) VALUES (1)", "INSERT"),
        ("CREATE TABLE bad.rep2 (id INT, CONSTRAINT select CHECK (id > 0)) USING tablets", "CREATE TABLE bad.rep2"),
    ],
)
def test_what_spark_or_the_log_refused_later_is_refused_first(db, statement, words):
    """Each committed and then failed in Spark (the catalog refused a repeated column: every later
    ALTER failed too), made a table every write failed on (a CHECK given as a property), lost the
    property (a dotted key), raised Python's ValueError (VERSION AS OF 1.5) or went to Spark's
    own path for the table ('does not support table constraint')."""
    _fresh(db, "bad.rep", "CREATE TABLE bad.rep (id INT, v INT) USING tablets", "INSERT INTO bad.rep VALUES (1, 1)")
    db.sql("DROP TABLE IF EXISTS bad.rep2")
    before = state(db, "bad.rep")
    with pytest.raises(TabletsError) as info:
        db.sql(statement)
    assert words in str(info.value), str(info.value)
    assert state(db, "bad.rep") == before
    assert not db.spark.catalog.tableExists("bad.rep2")
    db.sql("ALTER TABLE bad.rep ADD COLUMNS (w INT)")  # the table still takes its statements
    assert [tuple(r) for r in db.sql("SELECT * FROM bad.rep").collect()] == [(1, 1, None)]


def test_create_keeps_dotted_property_keys_and_unquoted_values(db):
    _fresh(db, "bad.props", "CREATE TABLE bad.props (id INT) USING tablets TBLPROPERTIES (a.b = 'y', n = 5, f = false)")
    shown = dict(tuple(r) for r in db.sql("SHOW TBLPROPERTIES bad.props").collect())
    assert (shown["a.b"], shown["n"], shown["f"]) == ("y", "5", "false") and "" not in shown


def test_a_failed_replace_of_a_parquet_table_keeps_it(db):
    """CREATE OR REPLACE of a parquet table dropped it, then refused the new definition."""
    _fresh(db, "bad.keep", "CREATE TABLE bad.keep (id INT) USING parquet", "INSERT INTO bad.keep VALUES (1)")
    for statement in (
        "CREATE OR REPLACE TABLE bad.keep (id INT, _tablet_id INT) USING tablets",
        "CREATE OR REPLACE TABLE bad.keep (id INT) USING tablets TBLPROPERTIES ('target_tablet_rows' = '0')",
    ):
        with pytest.raises(TabletsError):
            db.sql(statement)
        assert [tuple(r) for r in db.sql("SELECT * FROM bad.keep").collect()] == [(1,)]
