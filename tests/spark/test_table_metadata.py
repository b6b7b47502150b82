"""Comments and properties of tablet tables through the SQL front door: DESCRIBE [EXTENDED],
SHOW TBLPROPERTIES, SET/UNSET TBLPROPERTIES, COMMENT ON TABLE, ALTER COLUMN ... COMMENT, laid
out as Spark lays them out for a Parquet table, kept in the table's log."""

import re

import pytest
from tablets.exceptions import SchemaMismatch, StatementParseError, TabletsError
from tablets.storage import TabletTable

pytestmark = pytest.mark.spark

# Spark's rows for a Parquet table that a tablet table has no use for (its storage format)
PARQUET_ONLY = {"Serde Library", "InputFormat", "OutputFormat"}


DATABASE = "meta"  # created by the conftest's db fixture


@pytest.fixture
def table(db):
    db.sql("DROP TABLE IF EXISTS meta.t")
    db.sql(
        "CREATE TABLE meta.t (id BIGINT, v STRING) USING tablets TBLPROPERTIES ('key_columns' = 'id', 'team' = 'crm')"
    )
    db.sql("INSERT INTO meta.t VALUES (1, 'a'), (2, 'b')")
    return "meta.t"


def rows(db, sql):
    return [tuple(r) for r in db.sql(sql).collect()]


def details(described):
    return {r[0]: r[1] for r in described[described.index(("# Detailed Table Information", "", "")) + 1 :]}


def test_describe_extended_is_laid_out_like_a_parquet_table(db, table):
    db.sql("DROP TABLE IF EXISTS meta.p")
    db.spark.sql(
        "CREATE TABLE meta.p (id BIGINT COMMENT 'the key', v STRING) USING parquet COMMENT 'A table' "
        "TBLPROPERTIES ('team' = 'crm')"
    )
    db.spark.sql("INSERT INTO meta.p VALUES (1, 'a'), (2, 'b')")
    db.spark.sql("ANALYZE TABLE meta.p COMPUTE STATISTICS")
    db.sql("COMMENT ON TABLE meta.t IS 'A table'")
    db.sql("ALTER TABLE meta.t ALTER COLUMN id COMMENT 'the key'")

    parquet = db.spark.sql("DESCRIBE EXTENDED meta.p")
    ours = db.sql("DESCRIBE EXTENDED meta.t")
    assert ours.columns == parquet.columns == ["col_name", "data_type", "comment"]
    spark_rows, our_rows = [tuple(r) for r in parquet.collect()], [tuple(r) for r in ours.collect()]
    assert (
        our_rows[:4]
        == spark_rows[:4]
        == [
            ("id", "bigint", "the key"),
            ("v", "string", None),
            ("", "", ""),
            ("# Detailed Table Information", "", ""),
        ]
    )
    theirs, mine = details(spark_rows), details(our_rows)
    assert list(mine) == [k for k in theirs if k not in PARQUET_ONLY]  # the same rows, in the same order
    for same in ("Catalog", "Database", "Owner", "Created By", "Type", "Comment", "Last Access"):
        assert mine[same] == theirs[same]
    assert mine["Table"] == "t" and mine["Provider"] == "tablets"
    assert mine["Table Properties"] == "[key_columns=id, team=crm]"
    live_bytes = sum(s.add.bytes for s in db.table_of(table).snapshot().tablets.values())
    assert mine["Statistics"] == f"{live_bytes} bytes, 2 rows"
    assert mine["Location"] == db.table_of(table).root
    # without EXTENDED: the columns only, as Spark
    assert rows(db, "DESCRIBE meta.t") == our_rows[:2]
    assert rows(db, "DESCRIBE FORMATTED meta.t") == our_rows
    assert rows(db, "DESCRIBE meta.t ID") == [("col_name", "id"), ("data_type", "bigint"), ("comment", "the key")]
    assert rows(db, "DESCRIBE meta.t id") == rows(db, "DESCRIBE meta.p id")


def test_properties_and_comments_are_commits_of_the_log(db, table):
    db.sql("ALTER TABLE meta.t SET TBLPROPERTIES ('a.b' = 'c', retention = 30, 'comment' = 'by property')")
    db.sql("ALTER TABLE meta.t UNSET TBLPROPERTIES IF EXISTS ('team', 'absent')")
    db.sql("COMMENT ON TABLE meta.t IS 'Orders\\nper day: \\'all\\''")
    db.sql("alter table meta.t change column v comment 'the value';")  # dbt-spark's form
    db.sql("ALTER TABLE meta.t CHANGE COLUMN v v string COMMENT 'the value'")  # Hive's form: no change
    assert rows(db, "SHOW TBLPROPERTIES meta.t") == [("a.b", "c"), ("key_columns", "id"), ("retention", "30")]
    assert rows(db, "SHOW TBLPROPERTIES meta.t ('a.b')") == [("a.b", "c")]
    assert rows(db, "SHOW TBLPROPERTIES meta.t (team)") == [
        ("team", "Table spark_catalog.meta.t does not have property: team")
    ]
    history = [r.operation for r in db.sql("DESCRIBE HISTORY meta.t").collect()]
    assert history[:4] == ["CHANGE COLUMN", "COMMENT ON TABLE", "UNSET TBLPROPERTIES", "SET TBLPROPERTIES"]
    # in the table's own log: any reader of the location sees them
    meta = TabletTable(db.table_of(table).root).snapshot().metadata
    assert meta.comment == "Orders\nper day: 'all'"
    assert meta.column_comments == (("v", "the value"),)
    # data statements and schema changes keep them
    db.sql("MERGE INTO meta.t t USING (SELECT 3 AS id, 'c' AS v) s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *")
    db.sql("ALTER TABLE meta.t ADD COLUMNS (w INT)")
    described = rows(db, "DESCRIBE EXTENDED meta.t")
    assert described[:3] == [("id", "bigint", None), ("v", "string", "the value"), ("w", "int", None)]
    assert details(described)["Comment"] == "Orders\nper day: 'all'"
    db.sql("COMMENT ON TABLE meta.t IS NULL")
    assert "Comment" not in details(rows(db, "DESCRIBE EXTENDED meta.t"))


def test_a_table_named_by_its_path(db, tmp_path):
    path = str(tmp_path / "bypath")
    db.sql(f"CREATE TABLE tablets.`{path}` (id INT) USING tablets")
    db.sql(f"COMMENT ON TABLE tablets.`{path}` IS 'no catalog entry'")
    info = details(rows(db, f"DESCRIBE EXTENDED tablets.`{path}`"))
    assert info["Comment"] == "no catalog entry" and info["Location"] == path


def test_bad_statements_say_what_to_do(db, table):
    with pytest.raises(TabletsError, match=r"the key of .* is \(id\), and a key is set once") as e:
        db.sql("ALTER TABLE meta.t SET TBLPROPERTIES ('key_columns' = 'v')")
    assert "--full-refresh" in e.value.help
    with pytest.raises(SchemaMismatch, match=r"ALTER COLUMN nope: nope is not a column of meta.t \(columns: id, v\)"):
        db.sql("ALTER TABLE meta.t ALTER COLUMN nope COMMENT 'x'")
    with pytest.raises(SchemaMismatch, match=r"DESCRIBE meta.t nope: nope is not a column of meta.t"):
        db.sql("DESCRIBE meta.t nope")
    with pytest.raises(TabletsError, match="the column is string, not int; only its comment can be changed"):
        db.sql("ALTER TABLE meta.t CHANGE COLUMN v v int COMMENT 'x'")
    with pytest.raises(StatementParseError, match="COMMENT ON TABLE meta.t: the comment must be a string literal"):
        db.sql("COMMENT ON TABLE meta.t IS 5")
    assert len(db.sql("DESCRIBE HISTORY meta.t").collect()) == 2  # nothing was committed


def test_other_tables_and_views_are_sparks(db, table):
    db.spark.sql("CREATE OR REPLACE VIEW meta.view_of_t COMMENT 'a view' AS SELECT id FROM meta.t")
    described = rows(db, "DESCRIBE EXTENDED meta.view_of_t")
    assert details(described)["Type"] == "VIEW" and details(described)["Comment"] == "a view"
    db.sql("DROP TABLE IF EXISTS meta.p2")
    db.spark.sql("CREATE TABLE meta.p2 (id INT) USING parquet")
    db.sql("ALTER TABLE meta.p2 SET TBLPROPERTIES ('x' = 'y')")  # Spark's own statement
    assert rows(db, "SHOW TBLPROPERTIES meta.p2 ('x')") == [("x", "y")]
    assert "Serde Library" in details(rows(db, "DESCRIBE EXTENDED meta.p2"))


def test_create_or_replace_is_one_commit(db, table, spark):
    """``CREATE OR REPLACE`` of a tablet table (dbt's table materialization) is one commit of
    its log, as Delta replaces a table: a query that fails while it runs leaves the table as it
    was, and after a replace the old versions stay readable (time travel)."""
    t = db.table_of(table)
    before = t.version
    failing = (
        "CREATE OR REPLACE TABLE meta.t USING tablets AS SELECT id, assert_true(id < 2, 'boom') AS ok FROM range(5)"
    )
    with pytest.raises(TabletsError, match="boom") as err:
        db.sql(failing)
    assert "\tat " not in str(err.value)  # no Java stack trace
    assert t.version == before and sorted(db.sql("SELECT id, v FROM meta.t").collect()) == [(1, "a"), (2, "b")]
    assert [c.name for c in spark.catalog.listColumns("meta.t")] == ["id", "v"]

    db.sql(
        "CREATE OR REPLACE TABLE meta.t USING tablets TBLPROPERTIES ('key_columns' = 'k') "
        "AS SELECT CAST(id AS INT) AS k, 'x' AS w FROM range(3)"
    )
    meta = t.snapshot().metadata
    assert t.version == before + 1 and t.root == db.table_of(table).root
    assert meta.column_names == ("k", "w") and meta.key_columns == ("k",) and meta.property("team") is None
    assert sorted(db.sql("SELECT * FROM meta.t").collect()) == [(0, "x"), (1, "x"), (2, "x")]
    assert [c.name for c in spark.catalog.listColumns("meta.t")] == ["k", "w"]
    assert sorted(tuple(r) for r in spark.sql("SELECT * FROM meta.t").collect()) == [(0, "x"), (1, "x"), (2, "x")]
    assert t.history()[-1].commit.operation == "CREATE OR REPLACE TABLE AS SELECT"
    old = sorted(tuple(r) for r in db.sql(f"SELECT * FROM meta.t VERSION AS OF {before}").collect())
    assert old == [(1, "a"), (2, "b")]

    db.sql(
        "CREATE OR REPLACE TABLE meta.t USING tablets AS SELECT k + 10 AS k, w FROM meta.t"
    )  # reads what it replaces
    assert sorted(tuple(r) for r in db.sql("SELECT * FROM meta.t").collect()) == [(10, "x"), (11, "x"), (12, "x")]
    db.sql("CREATE OR REPLACE TABLE meta.t (a STRING) USING tablets")
    assert db.sql("SELECT * FROM meta.t").collect() == [] and t.version == before + 3
    assert t.snapshot().metadata.column_names == ("a",) and t.snapshot().metadata.key_columns == ()


def test_create_keeps_its_comments_and_cluster_by_in_its_one_commit(db):
    """CREATE TABLE's COMMENT, its columns' COMMENTs and Spark's CLUSTER BY (cols) are the table's
    from its first version (they were a KeyError, or dropped); CREATE OR REPLACE sets them anew."""
    db.sql("DROP TABLE IF EXISTS meta.c")
    db.sql(
        "CREATE TABLE meta.c (id BIGINT COMMENT 'the key', v STRING NOT NULL COMMENT 'it\\'s v', w INT) "
        "USING tablets COMMENT 'A table' CLUSTER BY (v, id) TBLPROPERTIES ('key_columns' = 'id')"
    )
    t = db.table_of("meta.c")
    meta = t.snapshot().metadata
    assert t.version == 0 and meta.comment == "A table"
    assert meta.column_comments == (("id", "the key"), ("v", "it's v"))
    assert meta.property("cluster_by") == "v,id" and meta.key_columns == ("id",)
    assert rows(db, "DESCRIBE meta.c") == [("id", "bigint", "the key"), ("v", "string", "it's v"), ("w", "int", None)]
    assert details(rows(db, "DESCRIBE EXTENDED meta.c"))["Comment"] == "A table"

    db.sql("CREATE OR REPLACE TABLE meta.c USING tablets COMMENT 'Again' AS SELECT 1 AS id")
    meta = t.snapshot().metadata
    assert t.version == 1 and meta.comment == "Again" and meta.column_comments == ()
    db.sql("CREATE OR REPLACE TABLE meta.c (id INT) USING tablets TBLPROPERTIES ('comment' = 'as a property')")
    assert t.snapshot().metadata.comment == "as a property" and t.snapshot().metadata.property("comment") is None


@pytest.mark.parametrize(
    "clause",
    ["PARTITIONED BY (v)", "CLUSTERED BY (v) INTO 4 BUCKETS", "ROW FORMAT DELIMITED", "STORED AS PARQUET"],
)
def test_create_refuses_what_a_tablet_table_is_not(db, clause):
    db.sql("DROP TABLE IF EXISTS meta.r")
    with pytest.raises(
        StatementParseError, match=re.escape(f"CREATE TABLE meta.r: '{clause}' is not supported")
    ) as err:
        db.sql(f"CREATE TABLE meta.r (id INT, v STRING) USING tablets {clause}")
    assert "CLUSTER BY" in err.value.help and not db.spark.catalog.tableExists("meta.r")


def test_create_refuses_a_comment_or_clustering_given_twice(db):
    with pytest.raises(StatementParseError, match="comment is given twice"):
        db.sql("CREATE TABLE meta.r (id INT) USING tablets COMMENT 'a' TBLPROPERTIES ('comment' = 'b')")
    with pytest.raises(StatementParseError, match="disagree"):
        db.sql("CREATE TABLE meta.r (id INT, v INT) USING tablets CLUSTER BY (v) TBLPROPERTIES ('cluster_by' = 'id')")
    assert not db.spark.catalog.tableExists("meta.r")


def test_replace_table_replaces_and_never_unnames_the_table(db, table, spark):
    """Spark's REPLACE TABLE ... USING tablets dropped the catalog entry and then failed on the
    table's files: the table vanished from the catalog. It is CREATE OR REPLACE of a table that
    must exist, in one commit."""
    t = db.table_of(table)
    before = t.version
    db.sql("REPLACE TABLE meta.t (k INT COMMENT 'new') USING tablets")
    assert spark.catalog.tableExists("meta.t") and t.version == before + 1
    assert [c.name for c in spark.catalog.listColumns("meta.t")] == ["k"] and db.sql(
        "SELECT * FROM meta.t"
    ).collect() == []
    assert t.snapshot().metadata.column_comments == (("k", "new"),)
    assert sorted(tuple(r) for r in db.sql(f"SELECT * FROM meta.t VERSION AS OF {before}").collect()) == [
        (1, "a"),
        (2, "b"),
    ]
    with pytest.raises(TabletsError, match="REPLACE TABLE meta.nope: there is no table named meta.nope"):
        db.sql("REPLACE TABLE meta.nope (id INT) USING tablets")
    assert not spark.catalog.tableExists("meta.nope")


def test_create_table_like_copies_the_definition_not_the_rows(db, spark):
    """CREATE TABLE t LIKE s (Spark refused it: "spark_catalog does not support CREATE TABLE
    LIKE"): a tablet table's columns, NOT NULL, comments, key, cluster_by, CHECKs and properties,
    the statement's TBLPROPERTIES over them; another table's or view's columns with USING tablets."""
    for t in ("s", "l1", "l2", "l3", "pq"):
        db.sql(f"DROP TABLE IF EXISTS meta.{t}")
    db.sql(
        "CREATE TABLE meta.s (id INT NOT NULL COMMENT 'k', v STRING, CONSTRAINT pos CHECK (id > 0)) USING tablets "
        "COMMENT 'source' CLUSTER BY (v) TBLPROPERTIES ('key_columns' = 'id', 'team' = 'crm')"
    )
    db.sql("INSERT INTO meta.s VALUES (1, 'x')")
    db.sql("CREATE TABLE meta.l1 LIKE meta.s")
    db.sql("CREATE TABLE meta.l2 LIKE meta.s USING tablets TBLPROPERTIES ('team' = 'ops')")
    one, two = (db.table_of(f"meta.l{i}").snapshot().metadata for i in (1, 2))
    assert one.schema == (("id", "int", False), ("v", "string", True)) and one.key_columns == ("id",)
    assert one.column_comments == (("id", "k"),) and one.comment is None
    assert dict(one.properties) == {"cluster_by": "v", "delta.constraints.pos": "id > 0", "team": "crm"}
    assert dict(two.properties)["team"] == "ops"
    assert db.sql("SELECT * FROM meta.l1").collect() == []
    with pytest.raises(TabletsError, match="CHECK constraint pos"):
        db.sql("INSERT INTO meta.l1 VALUES (-1, 'x')")

    spark.sql("CREATE TABLE meta.pq (a BIGINT COMMENT 'the a', b STRUCT<`x y`: INT>) USING parquet")
    db.sql("CREATE TABLE meta.l3 LIKE meta.pq USING tablets")
    three = db.table_of("meta.l3").snapshot().metadata
    assert three.schema == (("a", "bigint", True), ("b", "struct<`x y`:int>", True))
    assert three.column_comments == (("a", "the a"),)
    with pytest.raises(TabletsError, match="there is no table or view named meta.nope"):
        db.sql("CREATE TABLE meta.l4 LIKE meta.nope USING tablets")
    assert not spark.catalog.tableExists("meta.l4")


def test_added_columns_keep_their_comments(db, table):
    """ALTER TABLE ADD COLUMN c INT COMMENT '...' dropped the comment."""
    t = db.table_of(table)
    before = t.version
    db.sql("ALTER TABLE meta.t ADD COLUMNS (c INT COMMENT 'the c', d STRING)")
    assert t.version == before + 1
    assert rows(db, "DESCRIBE meta.t")[-2:] == [("c", "int", "the c"), ("d", "string", None)]


def test_alter_table_cluster_by_sets_the_cluster_by_property(db, table):
    """Spark's ALTER TABLE ... CLUSTER BY (cols) / NONE: refused, or run on Spark's catalog entry
    with no effect on the table. It is the cluster_by property, one commit each."""
    t = db.table_of(table)
    before = t.version
    db.sql("ALTER TABLE meta.t CLUSTER BY (v, id)")
    assert t.snapshot().metadata.property("cluster_by") == "v,id" and t.version == before + 1
    with pytest.raises(TabletsError, match="names nope, not columns of the table"):
        db.sql("ALTER TABLE meta.t CLUSTER BY (nope)")
    db.sql("ALTER TABLE meta.t CLUSTER BY NONE")
    assert t.snapshot().metadata.property("cluster_by") is None and t.version == before + 2


def test_show_create_table_makes_the_same_table_again(db):
    """SHOW CREATE TABLE was Spark's text without USING tablets, the key or the properties: run
    as printed, it made a Parquet table. It is now a tablet table's whole definition."""
    for t in ("sc", "sc2"):
        db.sql(f"DROP TABLE IF EXISTS meta.{t}")
    db.sql(
        "CREATE TABLE meta.sc (id BIGINT NOT NULL COMMENT 'the key', `odd name` STRING COMMENT 'it\\'s', "
        "st STRUCT<a: INT, `b c`: STRING>, CONSTRAINT pos CHECK (id > 0)) USING tablets COMMENT 'a table' "
        "CLUSTER BY (`odd name`) TBLPROPERTIES ('key_columns' = 'id', 'team' = 'crm')"
    )
    ddl = db.sql("SHOW CREATE TABLE meta.sc").collect()[0][0]
    assert ddl.startswith("CREATE TABLE spark_catalog.meta.sc (\n") and "\nUSING tablets\n" in ddl
    db.sql(ddl.replace("spark_catalog.meta.sc (", "spark_catalog.meta.sc2 (", 1))
    one, two = (db.table_of(f"meta.{t}").snapshot().metadata for t in ("sc", "sc2"))
    for field in ("schema", "key_columns", "properties", "comment", "column_comments"):
        assert getattr(two, field) == getattr(one, field), field
