"""DDL that must never lose data: DROP of an EXTERNAL table (made with LOCATION) keeps its
files and says so; CREATE ... AS SELECT never appends to a table it finds at its LOCATION, and
writes a new table's rows before the table has its name (no reader sees it empty, a failed or
killed CTAS leaves no table); CREATE OR REPLACE is one commit on the existing table (history and
time travel kept)."""

import re

import pytest
from tablets.exceptions import SchemaMismatch, StatementParseError, TableAlreadyExists, TabletsError
from tablets.spark import catalog
from tablets.storage import TabletTable

pytestmark = pytest.mark.spark


DATABASE = "ddl"  # created by the conftest's db fixture


def rows(db, sql):
    return sorted(tuple(r) for r in db.sql(sql).collect())


def kind(db, name):
    return {r[0]: r[1] for r in db.sql(f"DESCRIBE EXTENDED {name}").collect()}["Type"]


def test_drop_of_an_external_table_keeps_its_files(db, tmp_path):
    root = str(tmp_path / "s")
    db.sql(f"CREATE TABLE ddl.s (id INT, v STRING) USING tablets LOCATION '{root}'")
    db.sql("INSERT INTO ddl.s VALUES (1, 'a'), (2, 'b')")
    assert kind(db, "ddl.s") == "EXTERNAL"
    result = db.sql("DROP TABLE ddl.s")
    assert (
        result.message == f"DROP TABLE: dropped the catalog entry of ddl.s; kept its files at {root} "
        "(an EXTERNAL table: its data is not the catalog's to delete)"
    )
    assert TabletTable(root).read().num_rows == 2
    db.sql(f"CREATE TABLE ddl.s USING tablets LOCATION '{root}'")  # adopted again, as it was
    assert rows(db, "SELECT * FROM ddl.s") == [(1, "a"), (2, "b")]
    db.sql("DROP TABLE ddl.s")


def test_drop_of_a_managed_table_deletes_its_files_and_says_so(db):
    db.sql("CREATE TABLE ddl.m (id INT) USING tablets")
    root = db.table_of("ddl.m").root
    assert kind(db, "ddl.m") == "MANAGED"
    assert db.sql("DROP TABLE ddl.m").message == f"DROP TABLE: dropped ddl.m and deleted its files at {root}"
    assert not TabletTable(root).exists()


def test_ctas_at_a_location_that_holds_a_table_appends_nothing(db, tmp_path):
    root = str(tmp_path / "held")
    db.sql(f"CREATE TABLE ddl.h1 USING tablets LOCATION '{root}' AS SELECT * FROM VALUES (1), (2) AS v(id)")
    db.sql("DROP TABLE ddl.h1")
    with pytest.raises(TableAlreadyExists, match="already holds LOCATION"):
        db.sql(f"CREATE TABLE ddl.h2 USING tablets LOCATION '{root}' AS SELECT * FROM VALUES (3) AS v(id)")
    assert TabletTable(root).read().num_rows == 2
    # OR REPLACE adopts the files and replaces their rows in one commit: the old rows stay readable
    db.sql(f"CREATE OR REPLACE TABLE ddl.h2 USING tablets LOCATION '{root}' AS SELECT * FROM VALUES (3) AS v(id)")
    assert rows(db, "SELECT * FROM ddl.h2") == [(3,)]
    assert rows(db, "SELECT * FROM ddl.h2 VERSION AS OF 1") == [(1,), (2,)]
    db.sql("DROP TABLE ddl.h2")
    assert TabletTable(root).exists()


def test_ctas_writes_the_rows_before_the_table_has_its_name(db, monkeypatch):
    import tablets.statements.create as front

    seen = []

    def spy(spark, table, frame, *args, **kwargs):
        seen.append((spark.catalog.tableExists("ddl.fresh"), table.version))
        return append(spark, table, frame, *args, **kwargs)

    append = front.append
    monkeypatch.setattr(front, "append", spy)
    db.sql("CREATE TABLE ddl.fresh USING tablets AS SELECT * FROM VALUES (1, 'a'), (2, 'b') AS v(id, v)")
    assert seen == [(False, 0)]  # the store's first version made, the catalog entry not yet
    assert rows(db, "SELECT * FROM ddl.fresh") == [(1, "a"), (2, "b")]
    assert [h[2] for h in db.sql("DESCRIBE HISTORY ddl.fresh").collect()] == ["CREATE TABLE AS SELECT", "CREATE TABLE"]
    db.sql("DROP TABLE ddl.fresh")


def test_a_failed_ctas_leaves_no_table_and_no_files(db, spark):
    root = catalog.default_location(spark, "ddl", "failed")
    with pytest.raises(Exception, match="boom"):  # the query fails in the job that writes the rows
        db.sql(
            "CREATE TABLE ddl.failed USING tablets AS SELECT id, CAST(raise_error('boom') AS STRING) AS v FROM range(3)"
        )
    assert not spark.catalog.tableExists("ddl.failed")
    assert not db.is_tablet_table("ddl.failed")
    assert not TabletTable(root).exists()
    db.sql("CREATE TABLE ddl.failed USING tablets AS SELECT id FROM range(2)")  # the name is free
    assert rows(db, "SELECT * FROM ddl.failed") == [(0,), (1,)]
    assert db.table_of("ddl.failed").root == root
    db.sql("DROP TABLE ddl.failed")
    with pytest.raises(
        SchemaMismatch, match="column v: column type 'void' has no Delta type \\(a NULL with no type\\)"
    ):
        db.sql("CREATE TABLE ddl.failed USING tablets AS SELECT id, NULL AS v FROM range(3)")  # no column type
    assert not spark.catalog.tableExists("ddl.failed") and not TabletTable(root).exists()


class Killed(BaseException):
    """A kill: passes every ``except Exception`` clean-up."""


def killed_before_its_name(db, spark, monkeypatch, name: str) -> str:
    """A CTAS of ``name`` as if its process died between the registry file and the catalog
    entry; the new store's root."""

    def die(*args, **kwargs):
        raise Killed

    monkeypatch.setattr(catalog, "_create_entry", die)
    with pytest.raises(Killed):
        db.sql(f"CREATE TABLE {name} USING tablets AS SELECT id FROM range(3)")
    monkeypatch.undo()
    return catalog.default_location(spark, *name.split("."))


def test_what_a_ctas_killed_before_its_name_leaves_is_no_table(db, spark, monkeypatch):
    """As if the process died between the table's registry file and its catalog entry (a
    BaseException passes the clean-up, as a kill does; test_crash_ctas kills real processes
    there in its soak): nothing lists it, CREATE TABLE names the files, CREATE OR REPLACE
    replaces them."""
    root = killed_before_its_name(db, spark, monkeypatch, "ddl.killed")
    assert TabletTable(root).exists() and not spark.catalog.tableExists("ddl.killed")
    assert "ddl.killed" not in dict(db.list_tables("ddl"))
    with pytest.raises(TableAlreadyExists, match="(?s)files of a tablet table remain .* CREATE OR REPLACE"):
        db.sql("CREATE TABLE ddl.killed USING tablets AS SELECT id FROM range(2)")
    db.sql("CREATE OR REPLACE TABLE ddl.killed USING tablets AS SELECT id FROM range(2)")
    assert rows(db, "SELECT * FROM ddl.killed") == [(0,), (1,)]
    assert ("ddl.killed", root) in db.list_tables("ddl")
    db.sql("DROP TABLE ddl.killed")


def test_drop_schema_removes_what_a_killed_ctas_left(db, spark, monkeypatch):
    """dbt's DROP SCHEMA drops the schema's tablet tables first (Spark's CASCADE never reaches
    our source): the files and registry file of a CTAS killed before its name go too."""
    db.sql("CREATE DATABASE IF NOT EXISTS ddl_gone")
    db.sql("CREATE TABLE ddl_gone.kept USING tablets AS SELECT 1 AS id")
    root = killed_before_its_name(db, spark, monkeypatch, "ddl_gone.killed")
    assert TabletTable(root).exists()
    dropped = db.drop_tables_in("ddl_gone")
    assert len(dropped) == 2 and all("deleted its files" in m for m in dropped)
    assert not TabletTable(root).exists() and not db.is_tablet_table("ddl_gone.kept")
    assert not any(n.startswith("ddl_gone.") for n in catalog.load_registry(spark).by_name)
    db.sql("DROP DATABASE ddl_gone")


def test_create_or_replace_keeps_the_history(db):
    db.sql("CREATE TABLE ddl.r USING tablets AS SELECT * FROM VALUES (1, 'a') AS v(id, v)")
    db.sql("CREATE OR REPLACE TABLE ddl.r USING tablets AS SELECT * FROM VALUES (2, 'b', 3) AS v(id, v, w)")
    assert rows(db, "SELECT * FROM ddl.r") == [(2, "b", 3)]
    assert rows(db, "SELECT * FROM ddl.r VERSION AS OF 1") == [(1, "a")]
    with pytest.raises(Exception, match="no_such"):
        db.sql("CREATE OR REPLACE TABLE ddl.r USING tablets AS SELECT no_such FROM VALUES (1) AS v(id)")
    assert rows(db, "SELECT * FROM ddl.r") == [(2, "b", 3)]


@pytest.mark.parametrize(
    ("key", "value", "allowed"),
    [
        ("target_tablet_rows", "-5", "a whole number at least 1"),
        ("target_tablet_rows", "0", "a whole number at least 1"),
        ("target_tablet_rows", "abc", "a whole number at least 1"),
        ("deleted_file_retention_hours", "abc", "a number at least 0"),
        ("auto_compact", "maybe", "true or false"),
    ],
)
def test_a_bad_property_is_refused_where_it_is_set(db, key, value, allowed):
    from tablets.storage.properties import InvalidProperty

    db.sql("CREATE TABLE IF NOT EXISTS ddl.p (id INT) USING tablets")
    with pytest.raises(InvalidProperty, match=f"{key} = '{value}' is not allowed: it must be {allowed}"):
        db.sql(f"ALTER TABLE ddl.p SET TBLPROPERTIES ('{key}' = '{value}')")
    with pytest.raises(InvalidProperty, match=f"{key} = '{value}'"):
        db.sql(f"CREATE TABLE ddl.p2 (id INT) USING tablets TBLPROPERTIES ('{key}' = '{value}')")
    db.sql("INSERT INTO ddl.p VALUES (7)")  # the table works as before, and the row is there
    assert (7,) in rows(db, "SELECT * FROM ddl.p")


def test_a_misspelt_property_gets_a_did_you_mean(db):
    from tablets.storage.properties import InvalidProperty

    with pytest.raises(InvalidProperty, match="did you mean 'target_tablet_rows'"):
        db.sql("CREATE TABLE ddl.p3 (id INT) USING tablets TBLPROPERTIES ('target_tablet_row' = '5')")
    with pytest.raises(InvalidProperty, match="cluster_by = 'nope' names nope, not columns"):
        db.sql("CREATE TABLE ddl.p4 (id INT) USING tablets TBLPROPERTIES ('cluster_by' = 'nope')")
    db.sql("CREATE TABLE ddl.p5 (id INT) USING tablets TBLPROPERTIES ('team' = 'crm', 'target_tablet_rows' = '10')")


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE ddl.tt VERSION AS OF 0 SET v = 0",
        "DELETE FROM ddl.tt TIMESTAMP AS OF '2000-01-01' WHERE id = 3",
        "MERGE INTO ddl.tt VERSION AS OF 1 t USING (SELECT 1 AS id) s ON t.id = s.id WHEN MATCHED THEN DELETE",
    ],
)
def test_a_write_to_an_old_version_is_refused(db, statement):
    from tablets.exceptions import StatementParseError

    db.sql("CREATE TABLE IF NOT EXISTS ddl.tt (id INT, v INT) USING tablets")
    db.sql("INSERT INTO ddl.tt VALUES (3, 30)")
    before = rows(db, "SELECT * FROM ddl.tt")
    with pytest.raises(StatementParseError, match="a write changes the table's current version"):
        db.sql(statement)
    assert rows(db, "SELECT * FROM ddl.tt") == before


def test_insert_overwrite_on_conflict_is_refused(db):
    from tablets.exceptions import StatementParseError

    db.sql("CREATE TABLE IF NOT EXISTS ddl.ow (id INT, v INT) USING tablets")
    db.sql("INSERT INTO ddl.ow VALUES (1, 10)")
    with pytest.raises(StatementParseError, match="OVERWRITE replaces every row"):
        db.sql("INSERT OVERWRITE ddl.ow VALUES (9, 90) ON CONFLICT (id) DO NOTHING")
    assert rows(db, "SELECT * FROM ddl.ow") == [(1, 10)]


def test_a_merge_source_may_read_an_old_version(db):
    db.sql("CREATE TABLE ddl.src (id INT, v INT) USING tablets")
    db.sql("INSERT INTO ddl.src VALUES (1, 10), (2, 20)")
    db.sql("DELETE FROM ddl.src WHERE id = 2")
    db.sql("CREATE TABLE ddl.dst (id INT, v INT) USING tablets")
    db.sql("MERGE INTO ddl.dst t USING ddl.src VERSION AS OF 1 s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *")
    assert rows(db, "SELECT * FROM ddl.dst") == [(1, 10), (2, 20)]


def test_insert_by_name_takes_the_query_columns_by_their_names(db):
    """BY NAME was ignored: the query's columns went in by position (two STRING columns swapped)."""
    db.sql("DROP TABLE IF EXISTS ddl.n")
    db.sql("CREATE TABLE ddl.n (a STRING, b STRING, n INT) USING tablets")
    db.sql("INSERT INTO ddl.n BY NAME SELECT 'B' AS b, 'A' AS a, 1 AS n")
    db.sql("INSERT INTO ddl.n BY NAME SELECT 'b2' AS B, 'a2' AS A")  # names in any case; n left NULL
    assert rows(db, "SELECT * FROM ddl.n") == [("A", "B", 1), ("a2", "b2", None)]
    db.sql("INSERT OVERWRITE ddl.n BY NAME SELECT 9 AS n, 'bb' AS b, 'aa' AS a")
    assert rows(db, "SELECT * FROM ddl.n") == [("aa", "bb", 9)]
    with pytest.raises(TabletsError, match=re.escape("INSERT ddl.n: columns ['zz'] are not columns of the table")):
        db.sql("INSERT INTO ddl.n BY NAME SELECT 'x' AS zz, 'a3' AS a")  # named by its name, not its root


@pytest.mark.parametrize(
    "statement, part",
    [
        ("INSERT OVERWRITE TABLE ddl.n PARTITION (a = 'x') SELECT 'b', 1", "PARTITION"),
        ("INSERT INTO ddl.n PARTITION (a) SELECT 'b', 1, 'x'", "PARTITION"),
        ("INSERT INTO ddl.n REPLACE WHERE n = 1 SELECT 'a', 'b', 1", "REPLACE WHERE"),
        ("ALTER TABLE ddl.n ADD COLUMN c INT FIRST", "add a column after the others"),
        ("ALTER TABLE ddl.n ADD COLUMNS (c INT AFTER a)", "add a column after the others"),
        ("INSERT INTO ddl.n BY NAME SELECT 'q' AS a ON CONFLICT (a) DO NOTHING", "BY NAME ... ON CONFLICT"),
    ],
)
def test_clauses_a_tablet_table_cannot_honour_are_refused(db, statement, part):
    """Each was taken as a plain INSERT or ADD COLUMN: PARTITION (a = 'x') overwrote every row
    with a NULL, REPLACE WHERE replaced nothing, FIRST / AFTER put the column last."""
    db.sql("DROP TABLE IF EXISTS ddl.n")
    db.sql("CREATE TABLE ddl.n (a STRING, b STRING, n INT) USING tablets")
    db.sql("INSERT INTO ddl.n VALUES ('a', 'b', 1)")
    with pytest.raises(StatementParseError, match=re.escape(part)):
        db.sql(statement)
    assert rows(db, "SELECT * FROM ddl.n") == [("a", "b", 1)] and db.table_of("ddl.n").version == 1


def test_truncate_deletes_every_row_in_one_commit(db):
    """Spark refused TRUNCATE TABLE on a tablet table, naming its internal provider."""
    db.sql("DROP TABLE IF EXISTS ddl.tr")
    db.sql("CREATE TABLE ddl.tr (id INT, v STRING) USING tablets")
    db.sql("INSERT INTO ddl.tr VALUES (1, 'a'), (2, 'b')")
    assert db.sql("TRUNCATE TABLE ddl.tr").message.startswith("DELETE 2 ")
    assert rows(db, "SELECT * FROM ddl.tr") == [] and db.table_of("ddl.tr").version == 2
    assert rows(db, "SELECT * FROM ddl.tr VERSION AS OF 1") == [(1, "a"), (2, "b")]
    with pytest.raises(StatementParseError, match="tablet tables are not partitioned"):
        db.sql("TRUNCATE TABLE ddl.tr PARTITION (v = 'a')")
