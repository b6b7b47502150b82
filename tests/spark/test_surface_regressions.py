"""The newer surfaces' defects an outside test found (issue #59), each a statement that failed,
ran and did the wrong thing, or said something unclear: now run as Spark and Delta define it, or
refused by name with the table unchanged. Row statements run on both plans
(``support.both_plans``)."""

import pytest
from support.both_plans import check, on_both_plans
from tablets.exceptions import MergeSpecError, StatementParseError, TableAlreadyExists, TableNotFound, TabletsError
from tablets.storage.properties import InvalidProperty

pytestmark = pytest.mark.spark

CONSTRAINED = [
    "CREATE TABLE {t} (id INT NOT NULL, v INT, txt STRING, CONSTRAINT pos CHECK (v > 0)) USING tablets "
    "TBLPROPERTIES ('key_columns' = 'id')",
    "INSERT INTO {t} VALUES (1, 1, 'a'), (2, 2, 'b'), (3, 3, 'c'), (4, 4, 'd')",
]


@pytest.mark.parametrize(
    "statement, rows, counts",
    [
        ("DELETE FROM {t} WHERE id = 1", [(2, 2, "b"), (3, 3, "c"), (4, 4, "d")], (0, 0, 1)),
        ("DELETE FROM {t} WHERE id = 4 OR txt LIKE 'a%'", [(2, 2, "b"), (3, 3, "c")], (0, 0, 2)),
        ("TRUNCATE TABLE {t}", [], (0, 0, 4)),
        (
            "MERGE INTO {t} t USING (SELECT 1 AS id) s ON t.id = s.id WHEN NOT MATCHED BY SOURCE THEN DELETE",
            [(1, 1, "a")],
            (0, 0, 3),
        ),
    ],
    ids=["delete", "delete-or", "truncate", "merge-by-source-delete"],
)
def test_a_statement_that_only_deletes_runs_on_a_constrained_table(reg_db, statement, rows, counts):
    """The constraint check was computed over the DELETE's scan, which lacks the constrained
    columns, though a DELETE writes no row: Spark's plan failed with an internal column."""
    check(on_both_plans(reg_db, "deletes_constrained", CONSTRAINED, statement), rows, counts)


def test_an_update_breaking_a_check_names_the_statement_as_written(reg_db):
    db = reg_db
    db.sql("DROP TABLE IF EXISTS reg.upd_msg")
    for s in CONSTRAINED:
        db.sql(s.replace("{t}", "reg.upd_msg"))
    with pytest.raises(TabletsError, match=r"^UPDATE reg\.upd_msg: CHECK constraint pos"):
        db.sql("UPDATE reg.upd_msg SET v = -1 WHERE id = 2")
    with pytest.raises(TabletsError, match=r"^INSERT INTO reg\.upd_msg: "):
        db.sql("INSERT INTO reg.upd_msg VALUES (NULL, 1, 'x')")


def _fresh(db, name, *setup):
    db.sql(f"DROP TABLE IF EXISTS {name}")
    db.sql(f"DROP VIEW IF EXISTS {name}")
    for s in setup:
        db.sql(s)


def _unchanged(db, name, run):
    """``run()`` raises; the table's version and rows are as before."""
    table = db.table_of(name)
    version, rows = table.version, sorted(map(tuple, db.sql(f"SELECT * FROM {name}").collect()))
    with pytest.raises(TabletsError) as e:
        run()
    assert (table.version, sorted(map(tuple, db.sql(f"SELECT * FROM {name}").collect()))) == (version, rows)
    return e.value


def test_insert_with_a_column_list_and_by_name_is_refused(reg_db):
    """Spark's grammar has a column list or BY NAME: both were taken by position."""
    _fresh(reg_db, "reg.byname", "CREATE TABLE reg.byname (id INT, v INT) USING tablets")
    e = _unchanged(
        reg_db, "reg.byname", lambda: reg_db.sql("INSERT INTO reg.byname (id, v) BY NAME SELECT 1 AS v, 8 AS id")
    )
    assert isinstance(e, StatementParseError) and "a column list and BY NAME" in str(e)
    reg_db.sql("INSERT INTO reg.byname BY NAME SELECT 1 AS v, 8 AS id")
    assert [tuple(r) for r in reg_db.sql("SELECT * FROM reg.byname").collect()] == [(8, 1)]


@pytest.mark.parametrize(
    "statement",
    [
        "REPLACE TABLE reg.aview (id INT) USING tablets",
        "CREATE OR REPLACE TABLE reg.aview USING tablets AS SELECT 2 AS id",
    ],
)
def test_a_table_does_not_replace_a_view(reg_db, statement):
    _fresh(reg_db, "reg.aview", "CREATE VIEW reg.aview AS SELECT 1 AS id")
    with pytest.raises(TableAlreadyExists, match="is a view"):
        reg_db.sql(statement)
    assert reg_db.spark.catalog.getTable("reg.aview").tableType == "VIEW"
    assert [tuple(r) for r in reg_db.sql("SELECT * FROM reg.aview").collect()] == [(1,)]


@pytest.mark.parametrize(
    "check, found",
    [
        ("(SELECT max(v) FROM reg.chk_src) > 0", "a subquery"),
        ("v IN (SELECT v FROM reg.chk_src)", "a subquery"),
        ("rand() > 0.5", "non-deterministic"),
        ("uuid() <> ''", "non-deterministic"),
        ("max(v) > 0", "aggregate"),
    ],
)
def test_a_check_no_row_can_be_checked_against_is_refused(reg_db, check, found):
    """It committed, then every write failed with Spark's CORRELATED_REFERENCE (a subquery), or
    the rows were said to break it (rand())."""
    _fresh(
        reg_db,
        "reg.chk",
        "CREATE TABLE reg.chk (id INT, v INT) USING tablets",
        "INSERT INTO reg.chk VALUES (1, 1)",
        "CREATE TABLE IF NOT EXISTS reg.chk_src (v INT) USING parquet",
    )
    e = _unchanged(reg_db, "reg.chk", lambda: reg_db.sql(f"ALTER TABLE reg.chk ADD CONSTRAINT c CHECK ({check})"))
    assert isinstance(e, MergeSpecError) and found in str(e) and "ADD CONSTRAINT c" in str(e)
    reg_db.sql("INSERT INTO reg.chk VALUES (2, 2)")  # writes still run
    reg_db.sql("DROP TABLE IF EXISTS reg.chk_new")
    with pytest.raises(MergeSpecError, match=found):
        reg_db.sql(f"CREATE TABLE reg.chk_new (id INT, v INT, CONSTRAINT c CHECK ({check})) USING tablets")


def test_a_check_that_is_not_a_condition_says_so_in_the_users_words(reg_db):
    """``CHECK (v)`` of a boolean v is a condition; of an int it was an error about ``(NOT v)``."""
    _fresh(
        reg_db,
        "reg.chk_b",
        "CREATE TABLE reg.chk_b (id INT, v BOOLEAN) USING tablets",
        "INSERT INTO reg.chk_b VALUES (1, false)",
    )
    e = _unchanged(reg_db, "reg.chk_b", lambda: reg_db.sql("ALTER TABLE reg.chk_b ADD CONSTRAINT ok CHECK (v)"))
    assert "already holds rows that break it" in str(e) and "NOT" not in str(e).split("\n")[0]
    e = _unchanged(reg_db, "reg.chk_b", lambda: reg_db.sql("ALTER TABLE reg.chk_b ADD CONSTRAINT n CHECK (id)"))
    assert "CHECK constraint n (id) is of type int, not a boolean" in str(e)


def test_schema_evolution_does_not_add_a_reserved_column(reg_db):
    """It added ``__tablets_row_id``, after which every SELECT * failed."""
    _fresh(reg_db, "reg.evo", "CREATE TABLE reg.evo (id INT, v INT) USING tablets", "INSERT INTO reg.evo VALUES (1, 1)")
    e = _unchanged(
        reg_db,
        "reg.evo",
        lambda: reg_db.sql(
            "MERGE WITH SCHEMA EVOLUTION INTO reg.evo t USING (SELECT 1 AS id, 5 AS __tablets_row_id) s "
            "ON t.id = s.id WHEN MATCHED THEN UPDATE SET *"
        ),
    )
    assert "__tablets_row_id" in str(e) and "reserved" in str(e)


@pytest.mark.parametrize(
    "key, value, said",
    [
        ("delta.appendOnly", "true", "appendOnly"),
        ("delta.enableChangeDataFeed", "true", "table_changes"),
        ("delta.enableRowTracking", "true", "rowTracking"),
        ("delta.columnMapping.mode", "id", "map columns by name"),
        ("delta.enableDeletionVectors", "false", "deletion vectors"),
        ("target_tablet_rows", "99999999999999999999999", "at most 2,147,483,647"),
        ("cluster_by", "id,id", "more than once"),
        ("cluster_by", "id,,v", "empty name"),
        ("tablets.key_columns", "id", "did you mean 'key_columns'"),
    ],
)
def test_a_property_tablets_cannot_keep_true_is_refused(reg_db, key, value, said):
    """Each was accepted, then published to Delta readers untrue, or failed every later INSERT."""
    _fresh(
        reg_db,
        "reg.props",
        "CREATE TABLE reg.props (id INT, v INT) USING tablets",
        "INSERT INTO reg.props VALUES (1, 1)",
    )
    e = _unchanged(
        reg_db, "reg.props", lambda: reg_db.sql(f"ALTER TABLE reg.props SET TBLPROPERTIES ('{key}' = '{value}')")
    )
    assert isinstance(e, InvalidProperty) and said in str(e) and "ALTER TABLE reg.props" in str(e)
    reg_db.sql("DROP TABLE IF EXISTS reg.props_new")
    with pytest.raises(InvalidProperty, match=said.replace("(", r"\(")):
        reg_db.sql(f"CREATE TABLE reg.props_new (id INT, v INT) USING tablets TBLPROPERTIES ('{key}' = '{value}')")
    reg_db.sql("ALTER TABLE reg.props SET TBLPROPERTIES ('delta.appendOnly' = 'false', 'owner' = 'me')")  # still fine


@pytest.mark.parametrize(
    "clause, said",
    [("()", "no columns"), ("(id, id)", "id named more than once"), ("(id, ID)", "named more than once")],
)
def test_cluster_by_names_each_column_once(reg_db, clause, said):
    _fresh(reg_db, "reg.clu", "CREATE TABLE reg.clu (id INT, v INT) USING tablets")
    e = _unchanged(reg_db, "reg.clu", lambda: reg_db.sql(f"ALTER TABLE reg.clu CLUSTER BY {clause}"))
    assert said in str(e)
    reg_db.sql("ALTER TABLE reg.clu CLUSTER BY (v, id)")
    assert reg_db.table_of("reg.clu").snapshot().metadata.property("cluster_by") == "v,id"


def test_cluster_by_of_a_parquet_table_is_refused(reg_db):
    """It did nothing and said nothing."""
    _fresh(reg_db, "reg.plain", "CREATE TABLE reg.plain (id INT) USING parquet")
    with pytest.raises(StatementParseError, match="reg.plain is not a tablet table"):
        reg_db.sql("ALTER TABLE reg.plain CLUSTER BY (id)")


def test_a_clone_of_what_is_not_a_tablet_table_says_what_it_is(reg_db):
    """Each was Spark's PARSE_SYNTAX_ERROR at SHALLOW."""
    _fresh(reg_db, "reg.cview", "CREATE VIEW reg.cview AS SELECT 1 AS id")
    _fresh(reg_db, "reg.cplain", "CREATE TABLE reg.cplain (id INT) USING parquet")
    reg_db.sql("DROP TABLE IF EXISTS reg.cl")
    with pytest.raises(TableNotFound, match="no table named reg.nosuch"):
        reg_db.sql("CREATE TABLE reg.cl SHALLOW CLONE reg.nosuch")
    with pytest.raises(TabletsError, match="reg.cview is a view"):
        reg_db.sql("CREATE TABLE reg.cl SHALLOW CLONE reg.cview")
    with pytest.raises(TabletsError, match="reg.cplain is a parquet table"):
        reg_db.sql("CREATE TABLE reg.cl SHALLOW CLONE reg.cplain")
    assert not reg_db.spark.catalog.tableExists("reg.cl")


def test_create_like_a_tablet_table_in_another_format(reg_db):
    """Spark's LIKE makes a table of the other format with the source's columns; it was
    ``spark_catalog does not support CREATE TABLE LIKE``."""
    _fresh(reg_db, "reg.like_src", "CREATE TABLE reg.like_src (id INT COMMENT 'the key', v STRING) USING tablets")
    reg_db.sql("DROP TABLE IF EXISTS reg.like_pq")
    reg_db.sql("CREATE TABLE reg.like_pq LIKE reg.like_src USING parquet")
    assert reg_db.spark.catalog.getTable("reg.like_pq") is not None
    fields = reg_db.spark.table("reg.like_pq").schema.fields
    assert [(f.name, f.dataType.simpleString()) for f in fields] == [("id", "int"), ("v", "string")]
    assert fields[0].metadata.get("comment") == "the key"
    reg_db.sql("INSERT INTO reg.like_pq VALUES (1, 'a')")
    assert reg_db.sql("SELECT * FROM reg.like_pq").count() == 1


def test_a_merge_into_a_not_null_timestamp_column_inserts(reg_db):
    """Found by the harness's constrained tables: the driver's pairs of a source row alone held
    a NULL target struct whose NOT NULL timestamp field Arrow refused (ArrowInvalid)."""
    setup = ["CREATE TABLE {t} (k1 INT, c0 TIMESTAMP NOT NULL) USING tablets"]
    statement = (
        "MERGE INTO {t} t USING (SELECT 1 AS k1, CAST(NULL AS TIMESTAMP) AS c0) s ON t.k1 = s.k1 "
        "WHEN MATCHED THEN UPDATE SET c0 = t.c0 "
        "WHEN NOT MATCHED THEN INSERT (c0, k1) VALUES (CAST('1900-01-01 00:00:00+00:00' AS TIMESTAMP), s.k1)"
    )
    results = on_both_plans(reg_db, "nn_ts", setup, statement)
    assert all(isinstance(r, tuple) and r[1] == (1, 0, 0) for r in results.values()), results


# --- found by the generated bad-input suite (test_bad_input_generated.py) ---------------------


def test_create_or_replace_of_a_parquet_table_is_refused_and_keeps_it(reg_db):
    """It dropped the Parquet table first: a replace that then failed left neither table."""
    _fresh(
        reg_db, "reg.pq_keep", "CREATE TABLE reg.pq_keep (id INT) USING parquet", "INSERT INTO reg.pq_keep VALUES (1)"
    )
    for statement in (
        "CREATE OR REPLACE TABLE reg.pq_keep USING tablets AS SELECT 1 / 0 AS id",
        "REPLACE TABLE reg.pq_keep (id INT) USING tablets",
    ):
        with pytest.raises(TableAlreadyExists, match="reg.pq_keep is a parquet table"):
            reg_db.sql(statement)
    assert [tuple(r) for r in reg_db.sql("SELECT * FROM reg.pq_keep").collect()] == [(1,)]


def test_constraint_ddl_on_a_view_is_refused(reg_db):
    """It reached Spark, whose planner failed with an INTERNAL_ERROR (a raw Py4JJavaError)."""
    _fresh(reg_db, "reg.cv", "CREATE VIEW reg.cv AS SELECT 1 AS id")
    with pytest.raises(TabletsError, match="reg.cv is a view; constraints belong to tables"):
        reg_db.sql("ALTER TABLE reg.cv ADD CONSTRAINT c CHECK (id > 0)")


def test_add_columns_of_a_name_the_table_has_in_another_case_is_refused(reg_db):
    """``ADD COLUMNS (V DATE)`` beside ``v`` committed a second v; every later ALTER failed."""
    _fresh(reg_db, "reg.addv", "CREATE TABLE reg.addv (id INT, v INT) USING tablets")
    e = _unchanged(reg_db, "reg.addv", lambda: reg_db.sql("ALTER TABLE reg.addv ADD COLUMNS (V DATE)"))
    assert "has a column v (int)" in str(e)
    e = _unchanged(reg_db, "reg.addv", lambda: reg_db.sql("ALTER TABLE reg.addv ADD COLUMNS (w INT, W STRING)"))
    assert "named twice" in str(e) or "more than once" in str(e)
    reg_db.sql("ALTER TABLE reg.addv ADD COLUMNS (w INT)")
    assert [c.name for c in reg_db.spark.table("reg.addv").schema] == ["id", "v", "w"]


@pytest.mark.parametrize(
    "statement, said",
    [
        ("INSERT INTO reg.q SELECT nope FROM VALUES (1) AS s(x)", "INSERT INTO reg.q: Spark cannot read the query"),
        ("INSERT INTO reg.q (id, v) SELECT 1", "names 2 columns (id, v) but its query gives 1"),
        ("CREATE TABLE reg.q_new USING tablets AS SELECT nope", "CREATE TABLE reg.q_new ... AS SELECT: Spark cannot"),
        ("INSERT INTO reg.q VALUES (1, 2, 3) ON CONFLICT (id) DO NOTHING", "give 3 values, and the table has 2"),
        ("UPDATE reg.q SET v = nope WHERE id = 1", "UPDATE reg.q: SET ... WHERE: "),
        (
            "INSERT INTO reg.q VALUES (1, 2) ON CONFLICT (id) DO UPDATE SET v = excluded.nope",
            "ON CONFLICT DO UPDATE SET",
        ),
        ("SELECT * FROM table_changes('reg.q', 1.5)", "is not a version number"),
    ],
)
def test_errors_in_a_statements_query_name_the_statement(reg_db, statement, said):
    """They were Spark's raw errors (naming internal views), a MERGE clause the statement does
    not have, or a Python ValueError."""
    _fresh(reg_db, "reg.q", "CREATE TABLE reg.q (id INT, v INT) USING tablets TBLPROPERTIES ('key_columns' = 'id')")
    reg_db.sql("DROP TABLE IF EXISTS reg.q_new")
    e = _unchanged(reg_db, "reg.q", lambda: reg_db.sql(statement).collect())
    assert said in str(e) and "clause #" not in str(e) and "__tablets" not in str(e)


def test_update_set_through_another_name_is_refused(reg_db):
    """``UPDATE t SET s.v = 0`` (s a STRING column) set v in every row: the qualifier was dropped."""
    _fresh(
        reg_db,
        "reg.updq",
        "CREATE TABLE reg.updq (id INT, v INT, s STRING) USING tablets",
        "INSERT INTO reg.updq VALUES (1, 1, 'a')",
    )
    e = _unchanged(reg_db, "reg.updq", lambda: reg_db.sql("UPDATE reg.updq SET s.v = 0"))
    assert "SET s.v names neither a column" in str(e)
    reg_db.sql("UPDATE reg.updq SET updq.v = 2")
    reg_db.sql("UPDATE reg.updq AS x SET x.v = x.v + 1 WHERE x.id = 1")
    assert [tuple(r) for r in reg_db.sql("SELECT * FROM reg.updq").collect()] == [(1, 3, "a")]


def test_insert_overwrite_of_rows_that_do_not_fit_names_the_statement(reg_db):
    """It was Spark's raw CAST_WITHOUT_SUGGESTION."""
    _fresh(
        reg_db,
        "reg.ovw",
        "CREATE TABLE reg.ovw (id INT, s STRING, v INT) USING tablets",
        "INSERT INTO reg.ovw VALUES (1, 'a', 1)",
    )
    e = _unchanged(
        reg_db, "reg.ovw", lambda: reg_db.sql("INSERT OVERWRITE TABLE reg.ovw (id, s, v) VALUES (7, 1, X'00')")
    )
    assert str(e).startswith("INSERT OVERWRITE reg.ovw: the rows do not fit the table's columns")


def test_restore_to_before_a_clustered_column_was_added_leaves_no_cluster_by_on_it(reg_db):
    """Regression (the harness soak, seed 1000751): RESTORE to a version before the column that
    ``cluster_by`` names was added kept the property, so SHOW CREATE TABLE did not run back and
    OPTIMIZE sorted by a column the table no longer has. The restored columns take the property
    with them, as they take the key."""
    reg_db.sql("DROP TABLE IF EXISTS reg.rc")
    reg_db.sql("DROP TABLE IF EXISTS reg.rc_again")
    reg_db.sql("CREATE TABLE reg.rc (k1 TIMESTAMP, b INT) USING tablets")
    reg_db.sql("ALTER TABLE reg.rc ADD COLUMNS (a0_bigint BIGINT)")
    reg_db.sql("ALTER TABLE reg.rc CLUSTER BY (a0_bigint, b)")
    reg_db.sql("RESTORE TABLE reg.rc TO VERSION AS OF 0")
    props = {r.key: r.value for r in reg_db.sql("SHOW TBLPROPERTIES reg.rc").collect()}
    assert props.get("cluster_by") == "b"
    ddl = reg_db.sql("SHOW CREATE TABLE reg.rc").collect()[0][0]
    reg_db.sql(ddl.replace("reg.rc", "reg.rc_again", 1).replace("spark_catalog.reg.rc", "reg.rc_again", 1))
    reg_db.sql("ALTER TABLE reg.rc CLUSTER BY (b)")
    reg_db.sql("ALTER TABLE reg.rc ADD COLUMNS (a0_bigint BIGINT)")
    reg_db.sql("ALTER TABLE reg.rc CLUSTER BY (a0_bigint)")
    reg_db.sql("RESTORE TABLE reg.rc TO VERSION AS OF 0")
    assert "cluster_by" not in {r.key for r in reg_db.sql("SHOW TBLPROPERTIES reg.rc").collect()}
    reg_db.sql("OPTIMIZE reg.rc")
