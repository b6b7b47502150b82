"""table_changes through the front door (SQL and Python) across every kind of version:
INSERT, UPDATE, DELETE, MERGE, OPTIMIZE (no change), RESTORE (its diff), ADD COLUMNS (NULL in
older rows), and the refusal where VACUUM removed what a version's changes need."""

import pyarrow as pa
import pytest
from tablets.exceptions import ChangesUnavailable, StatementParseError
from tablets.storage import TabletTable
from tablets.storage.changes import changes

pytestmark = pytest.mark.spark


DATABASE = "chg"  # created by the conftest's db fixture


def got(df, *cols):
    cols = cols or ("id", "v", "_change_type", "_commit_version")
    return sorted(tuple(r[c] for c in cols) for r in df.collect())


def test_changes_of_each_statement(db):
    db.sql("DROP TABLE IF EXISTS chg.t")
    db.sql("CREATE TABLE chg.t (id INT, v STRING) USING tablets TBLPROPERTIES ('key_columns' = 'id')")  # v0
    db.sql("INSERT INTO chg.t VALUES (1, 'a'), (2, 'b'), (3, 'c')")  # v1
    db.sql("UPDATE chg.t SET v = 'B' WHERE id = 2")  # v2
    db.sql("DELETE FROM chg.t WHERE id = 1")  # v3
    db.sql(
        "MERGE INTO chg.t t USING (SELECT * FROM VALUES (3, 'C'), (4, 'd') AS s(id, v)) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *"
    )  # v4
    assert got(db.sql("SELECT * FROM table_changes('chg.t', 1)")) == sorted(
        [
            (1, "a", "insert", 1),
            (2, "b", "insert", 1),
            (3, "c", "insert", 1),
            (2, "b", "update_preimage", 2),
            (2, "B", "update_postimage", 2),
            (1, "a", "delete", 3),
            (3, "c", "update_preimage", 4),
            (3, "C", "update_postimage", 4),
            (4, "d", "insert", 4),
        ]
    )
    # an end version; a WHERE and an alias on the call; the Python API
    q = "SELECT c.id, c._change_type FROM table_changes('chg.t', 2, 3) AS c WHERE c._change_type <> 'update_preimage'"
    assert sorted(tuple(r) for r in db.sql(q).collect()) == [(1, "delete"), (2, "update_postimage")]
    df = db.table_changes("chg.t", 4, 4)
    assert df.columns == ["id", "v", "_change_type", "_commit_version", "_commit_timestamp"]
    assert got(df) == [(3, "C", "update_postimage", 4), (3, "c", "update_preimage", 4), (4, "d", "insert", 4)]

    db.sql("OPTIMIZE chg.t")  # v5: a compaction moves rows, changes none
    hist = [r.operation for r in db.sql("DESCRIBE HISTORY chg.t LIMIT 1").collect()]
    assert hist == ["OPTIMIZE"]
    assert db.table_changes("chg.t", 5).count() == 0

    db.sql("ALTER TABLE chg.t ADD COLUMNS (x INT)")  # v6
    db.sql("INSERT INTO chg.t VALUES (5, 'e', 50)")  # v7
    rows = got(db.table_changes("chg.t", 1, 7), "id", "x", "_change_type")
    assert (1, None, "insert") in rows and (5, 50, "insert") in rows  # older rows read the new column as NULL

    db.sql("RESTORE TABLE chg.t TO VERSION AS OF 3")  # v8: back to 2, 3; 4 and 5 deleted, 3 back to 'c'
    assert got(db.table_changes("chg.t", 8)) == sorted(
        [
            (3, "C", "update_preimage", 8),
            (3, "c", "update_postimage", 8),
            (4, "d", "delete", 8),
            (5, "e", "delete", 8),
        ]
    )
    # timestamps as strings: the whole range
    first = db.sql("DESCRIBE HISTORY chg.t").collect()[-1].timestamp
    assert (
        db.sql(f"SELECT count(*) FROM table_changes('chg.t', '{first}')").collect()[0][0]
        == db.table_changes("chg.t", 0).count()
    )


def test_keyless_table_has_only_deletes_and_inserts(db):
    db.sql("DROP TABLE IF EXISTS chg.nokey")
    db.sql("CREATE TABLE chg.nokey (id INT, v STRING) USING tablets")
    db.sql("INSERT INTO chg.nokey VALUES (1, 'a')")
    db.sql("UPDATE chg.nokey SET v = 'A'")
    assert got(db.table_changes("chg.nokey", 2)) == [(1, "A", "insert", 2), (1, "a", "delete", 2)]


def test_null_keys_never_pair_as_an_update(db):
    """NULL keys are distinct: a MERGE that deletes (NULL, 'x') by source and inserts (NULL, 'y')
    updated nothing, and its feed says a delete and an insert."""
    db.sql("DROP TABLE IF EXISTS chg.nulls")
    db.sql("CREATE TABLE chg.nulls (id INT, v STRING) USING tablets TBLPROPERTIES ('key_columns' = 'id')")
    db.sql("INSERT INTO chg.nulls VALUES (NULL, 'x'), (1, 'a')")
    m = db.sql(
        "MERGE INTO chg.nulls t USING (SELECT * FROM VALUES (CAST(NULL AS INT), 'y'), (1, 'a') AS s(id, v)) s "
        "ON t.id = s.id WHEN NOT MATCHED THEN INSERT * WHEN NOT MATCHED BY SOURCE THEN DELETE"
    ).metrics
    assert (m.rows_inserted, m.rows_updated, m.rows_deleted) == (1, 0, 1)
    assert got(db.table_changes("chg.nulls", 2)) == [(None, "x", "delete", 2), (None, "y", "insert", 2)]


def test_changes_feed_a_merge_and_a_ctas(db):
    db.sql("DROP TABLE IF EXISTS chg.src")
    db.sql("DROP TABLE IF EXISTS chg.copy")
    db.sql("CREATE TABLE chg.src (id INT, v STRING) USING tablets TBLPROPERTIES ('key_columns' = 'id')")
    db.sql("INSERT INTO chg.src VALUES (1, 'a'), (2, 'b')")
    db.sql(
        "CREATE TABLE chg.copy USING tablets AS SELECT id, v FROM table_changes('chg.src', 1) WHERE _change_type = 'insert'"
    )
    db.sql("UPDATE chg.src SET v = 'B' WHERE id = 2")
    db.sql(
        "MERGE INTO chg.copy t USING (SELECT id, v FROM table_changes('chg.src', 2) WHERE _change_type = 'update_postimage') s "
        "ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v"
    )
    assert sorted(tuple(r) for r in db.sql("SELECT * FROM chg.copy").collect()) == [(1, "a"), (2, "B")]


def test_bad_ranges_and_arguments(db):
    db.sql("DROP TABLE IF EXISTS chg.r")
    db.sql("CREATE TABLE chg.r (id INT) USING tablets")
    with pytest.raises(ChangesUnavailable, match="start version 5 is after the newest version 0"):
        db.sql("SELECT * FROM table_changes('chg.r', 5)")
    with pytest.raises(ChangesUnavailable, match="not a timestamp"):
        db.table_changes("chg.r", "yesterday-ish")
    with pytest.raises(ChangesUnavailable, match="expected table_changes"):
        db.sql("SELECT * FROM table_changes('chg.r')")


def test_vacuum_refusal_names_the_version(tmp_path):
    t = TabletTable.create(str(tmp_path / "t"), pa.schema([("id", pa.int64())]), key_columns=["id"])
    t.append(pa.table({"id": [1, 2]}))  # v1
    t.overwrite(pa.table({"id": [3]}))  # v2
    t.vacuum(0, enforce_retention=False)  # v1's tablet is gone (v3, v4: VACUUM START/END)
    assert changes(t, 3).num_rows == 0
    with pytest.raises(ChangesUnavailable, match="changes of version 1 cannot be read") as e:
        changes(t, 1)
    assert "VACUUM" in str(e.value) and "Help:" in str(e.value)


def test_clone_parse_errors(db):
    with pytest.raises(StatementParseError, match="SHALLOW CLONE"):
        db.sql("CREATE TABLE chg.c SHALLOW CLONE chg.r VERSION AS OF x")


def test_changes_across_a_replace_of_the_columns_read_them_as_the_newest_version_has_them(db):
    """Regression (the bad-input soak, seed 300078): a range over a REPLACE TABLE that changed
    the columns was Arrow's ``Casting field 'id' with null values to non-nullable``. The feed
    shows the newest version's columns (NULL where an older row had none, as for ADD COLUMNS),
    all of them nullable; a column whose type changed is refused from where it can be read
    (as Delta's change feed refuses such a schema change)."""
    db.sql("DROP TABLE IF EXISTS chg.r")
    db.sql("CREATE TABLE chg.r (`my key` BIGINT, v STRING) USING tablets")  # v0
    db.sql("INSERT INTO chg.r VALUES (1, 'x'), (2, NULL)")  # v1
    db.sql("REPLACE TABLE chg.r (id INT NOT NULL, v STRING) USING tablets")  # v2
    db.sql("INSERT INTO chg.r VALUES (5, 'a')")  # v3
    assert db.sql("SELECT count(*) FROM table_changes('chg.r', '2000-01-01')").collect()[0][0] == 5
    rows = [
        tuple(r) for r in db.sql("SELECT id, v, _change_type, _commit_version FROM table_changes('chg.r', 2)").collect()
    ]
    assert sorted(rows, key=repr) == sorted(
        [(None, None, "delete", 2), (None, "x", "delete", 2), (5, "a", "insert", 3)], key=repr
    )
    db.sql("REPLACE TABLE chg.r (id INT NOT NULL, v INT) USING tablets")  # v4: v another type
    db.sql("INSERT INTO chg.r VALUES (6, 7)")  # v5
    for start in ("'2000-01-01'", "0", "4"):
        with pytest.raises(ChangesUnavailable, match="(?i)its column v is string, and int") as e:
            db.sql(f"SELECT count(*) FROM table_changes('chg.r', {start})").collect()
        assert "table_changes(t, 5, ...)" in e.value.help
    assert got(db.sql("SELECT * FROM table_changes('chg.r', 5)")) == [(6, 7, "insert", 5)]


def test_changes_before_a_not_null_was_declared_read_its_nulls(db):
    """A column added, then declared NOT NULL: the rows of the versions before read NULL in it."""
    db.sql("DROP TABLE IF EXISTS chg.nn")
    db.sql("CREATE TABLE chg.nn (id INT, v STRING) USING tablets")  # v0
    db.sql("INSERT INTO chg.nn VALUES (1, 'x')")  # v1
    db.sql("ALTER TABLE chg.nn ADD COLUMNS (w INT)")  # v2
    db.sql("DELETE FROM chg.nn WHERE id = 1")  # v3
    db.sql("INSERT INTO chg.nn VALUES (2, 'y', 3)")  # v4
    db.sql("ALTER TABLE chg.nn ALTER COLUMN w SET NOT NULL")  # v5
    assert got(db.sql("SELECT * FROM table_changes('chg.nn', 0)"), "id", "w", "_change_type") == [
        (1, None, "delete"),
        (1, None, "insert"),
        (2, 3, "insert"),
    ]


def test_a_range_across_a_dropped_column_brought_back_by_restore_is_refused(db):
    """Regression (the change-feed soak, seed 71): a column dropped, the table compacted, then
    RESTOREd to before the drop: the older tablets hold the column's values again, the compacted
    one had lost them, so a range across the drop would pair an insert and a delete of one row
    that differ in it. Refused from where it can be read (as Delta's change feed refuses a
    dropped column), and readable after the RESTORE."""
    db.sql("DROP TABLE IF EXISTS chg.back")
    db.sql("CREATE TABLE chg.back (id INT, v STRING) USING tablets TBLPROPERTIES ('target_tablet_rows' = '1')")  # v0
    db.sql("INSERT INTO chg.back VALUES (1, 'a'), (2, 'b')")  # v1
    db.sql("ALTER TABLE chg.back DROP COLUMN v")  # v2
    db.sql("DELETE FROM chg.back WHERE id = 2")  # v3
    db.sql("OPTIMIZE chg.back")  # v4: row 1 rewritten without v
    db.sql("RESTORE TABLE chg.back TO VERSION AS OF 1")  # v5: v is back, with the old tablets
    db.sql("INSERT INTO chg.back VALUES (3, 'c')")  # v6
    assert db.table_of("chg.back").version == 6
    for start in ("0", "2", "5"):
        with pytest.raises(ChangesUnavailable, match="(?i)its column v was dropped, and is back") as e:
            db.sql(f"SELECT count(*) FROM table_changes('chg.back', {start})").collect()
        assert "table_changes(t, 6, ...)" in e.value.help
    assert got(db.sql("SELECT * FROM table_changes('chg.back', 6)")) == [(3, "c", "insert", 6)]
    # a range that ends while the column is dropped reads without it, as before
    assert got(db.sql("SELECT * FROM table_changes('chg.back', 1, 3)"), "id", "_change_type", "_commit_version") == [
        (1, "insert", 1),
        (2, "delete", 3),
        (2, "insert", 1),
    ]
