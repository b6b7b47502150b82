"""Key columns mean something: on a table with a key (merge_tablets' unique_key, or
TBLPROPERTIES ('key_columns' = ...)) no statement leaves two live rows with one key. Each
refused statement leaves the table unchanged (contents and version)."""

from dataclasses import replace

import pytest
import tablets
from support.conf import LOS_ANGELES, settings
from support.delta_check import assert_delta_agrees
from tablets.constraints import commit_checked
from tablets.exceptions import CardinalityViolation, CommitConflict, KeyViolation, MergeSpecError, TabletsError

pytestmark = pytest.mark.spark


DATABASE = "keys"  # created by the conftest's db fixture


def rows(db, sql):
    return sorted(tuple(r) for r in db.sql(sql).collect())


def keyed(db, name="keys.t", values="(1, 10), (2, 20), (3, 30)", key="id"):
    db.sql(f"DROP TABLE IF EXISTS {name}")
    db.sql(f"CREATE TABLE {name} (id INT, v INT) USING tablets TBLPROPERTIES ('key_columns' = '{key}')")
    if values:
        db.sql(f"INSERT INTO {name} VALUES {values}")
    return db.table_of(name)


def refused(db, stmt, error, *words, name="keys.t"):
    """``stmt`` raises ``error`` naming ``words``, and the table is exactly as before."""
    table = db.table_of(name)
    before_version, before = table.snapshot().version, rows(db, f"SELECT * FROM {name}")
    with pytest.raises(error) as info:
        db.sql(stmt)
    text = str(info.value)
    for w in words:
        assert w in text, text
    assert "__tablets" not in text
    assert table.snapshot().version == before_version
    assert rows(db, f"SELECT * FROM {name}") == before
    return text


# --- ON CONFLICT ---------------------------------------------------------------------------------


def test_do_nothing_inserts_the_first_row_of_a_key(db):
    keyed(db)
    res = db.sql("INSERT INTO keys.t VALUES (9, 1), (9, 2), (3, 99), (8, 5), (8, 6) ON CONFLICT (id) DO NOTHING")
    assert res.metrics.rows_inserted == 2
    assert rows(db, "SELECT * FROM keys.t") == [(1, 10), (2, 20), (3, 30), (8, 5), (9, 1)]


def test_do_update_of_a_table_named_by_its_path(db, tmp_path):
    """The target ``tablets.`/.../v1.2/stock``` goes by ``stock`` in SET and WHERE (a bare column
    is the existing row's); text inside a literal that looks like the path stays as written."""
    root = tmp_path / "v1.2" / "stock"
    target = f"tablets.`{root}`"
    db.sql(f"CREATE TABLE {target} (id INT, v STRING) USING tablets TBLPROPERTIES ('key_columns' = 'id')")
    db.sql(f"INSERT INTO {target} VALUES (1, 'a'), (2, 'b')")
    db.sql(
        f"INSERT INTO {target} VALUES (1, 'x'), (2, 'y'), (3, 'z') ON CONFLICT (id) "
        f"DO UPDATE SET v = concat(stock.v, excluded.v, ' `{root}`.v') WHERE v <> 'b'"
    )
    assert rows(db, f"SELECT * FROM {target}") == [(1, f"ax `{root}`.v"), (2, "b"), (3, "z")]


def test_do_nothing_null_keys_never_conflict(db):
    keyed(db)
    db.sql("INSERT INTO keys.t VALUES (NULL, 1), (NULL, 2) ON CONFLICT (id) DO NOTHING")
    assert rows(db, "SELECT v FROM keys.t WHERE id IS NULL") == [(1,), (2,)]


def test_do_update_with_a_key_twice_is_a_cardinality_violation(db):
    keyed(db)
    refused(
        db,
        "INSERT INTO keys.t VALUES (9, 1), (9, 2) ON CONFLICT (id) DO UPDATE SET v = excluded.v",
        CardinalityViolation,
        "id=9",
        "keys.t",
    )
    refused(  # a key the table has, given twice
        db,
        "INSERT INTO keys.t VALUES (1, 1), (1, 2) ON CONFLICT (id) DO UPDATE SET v = excluded.v",
        CardinalityViolation,
        "keys.t",
    )


def test_on_conflict_target_must_be_the_key(db):
    keyed(db)
    refused(
        db, "INSERT INTO keys.t VALUES (9, 1) ON CONFLICT (v) DO NOTHING", MergeSpecError, "ON CONFLICT (v)", "(id)"
    )


def test_on_conflict_on_a_table_without_key(db):
    db.sql("DROP TABLE IF EXISTS keys.nokey")
    db.sql("CREATE TABLE keys.nokey (id INT, v INT) USING tablets")
    db.sql("INSERT INTO keys.nokey VALUES (1, 1)")
    text = refused(
        db,
        "INSERT INTO keys.nokey VALUES (1, 2) ON CONFLICT (id) DO NOTHING",
        MergeSpecError,
        "no key columns",
        "key_columns",
        name="keys.nokey",
    )
    assert "TBLPROPERTIES" in text


# --- assignments to key columns ------------------------------------------------------------------


def test_update_of_a_key_column_is_refused(db):
    keyed(db)
    refused(
        db,
        "MERGE INTO keys.t t USING (SELECT 1 AS id) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET id = 2",
        MergeSpecError,
        "key column 'id'",
        "clause #1",
    )
    refused(
        db,
        "INSERT INTO keys.t VALUES (1, 5) ON CONFLICT (id) DO UPDATE SET id = 99",
        MergeSpecError,
        "key column 'id'",
    )
    refused(db, "UPDATE keys.t SET id = id + 1", MergeSpecError, "key column 'id'")


def test_assignments_that_keep_the_key_are_fine(db):
    keyed(db)
    db.sql("MERGE INTO keys.t t USING (SELECT 1 AS id, 11 AS v) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET *")
    db.sql(
        "MERGE INTO keys.t t USING (SELECT 2 AS id, 22 AS v) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET id = s.id, v = s.v"
    )
    db.sql("UPDATE keys.t SET id = id, v = v + 1 WHERE id = 3")
    assert rows(db, "SELECT * FROM keys.t") == [(1, 11), (2, 22), (3, 31)]


# --- inserting MERGEs ------------------------------------------------------------------------------


def test_merge_inserting_one_new_key_twice(db):
    keyed(db)
    refused(
        db,
        "MERGE INTO keys.t t USING (SELECT * FROM VALUES (7, 1), (7, 2), (1, 3) AS v(id, v)) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *",
        KeyViolation,
        "id=7",
        "keys.t",
    )


def test_merge_that_inserts_must_match_the_key(db):
    keyed(db)
    refused(
        db,
        "MERGE INTO keys.t t USING (SELECT 1 AS id, 5 AS v) s ON t.v = s.v WHEN NOT MATCHED THEN INSERT *",
        MergeSpecError,
        "ON condition",
        "key column(s) ['id']",
    )


def test_extra_on_conjuncts_cannot_insert_an_existing_key(db):
    """dbt's incremental_predicates: a source row whose key is outside the window would be NOT
    MATCHED and inserted a second time; it is refused instead."""
    keyed(db)
    stmt = (
        "MERGE INTO keys.t t USING (SELECT * FROM VALUES (1, 5), (4, 40) AS v(id, v)) s "
        "ON t.id = s.id AND t.v > {lo} WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *"
    )
    refused(db, stmt.format(lo=15), KeyViolation, "id=1")
    res = db.sql(stmt.format(lo=5))  # key 1 (v=10) is inside the window: updated, 4 inserted
    assert (res.metrics.rows_updated, res.metrics.rows_inserted) == (1, 1)
    assert rows(db, "SELECT * FROM keys.t") == [(1, 5), (2, 20), (3, 30), (4, 40)]


def test_extra_conjunct_with_a_false_insert_condition_is_fine(db):
    keyed(db)
    db.sql(
        "MERGE INTO keys.t t USING (SELECT 1 AS id, 5 AS v) s ON t.id = s.id AND t.v > 15 "
        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED AND s.v > 100 THEN INSERT *"
    )
    assert rows(db, "SELECT * FROM keys.t") == [(1, 10), (2, 20), (3, 30)]


# --- plain inserts ---------------------------------------------------------------------------------


def test_insert_of_an_existing_key(db):
    keyed(db)
    refused(db, "INSERT INTO keys.t VALUES (4, 40), (2, 21)", KeyViolation, "id=2", "keys.t")


def test_insert_repeating_a_key(db):
    keyed(db)
    refused(db, "INSERT INTO keys.t VALUES (4, 40), (4, 41)", KeyViolation, "id=4")
    keyed(db, values=None)
    refused(db, "INSERT INTO keys.t VALUES (4, 40), (4, 41)", KeyViolation, "id=4")
    db.sql("INSERT INTO keys.t VALUES (4, 40), (5, 50), (NULL, 1), (NULL, 2)")
    assert rows(db, "SELECT count(*) FROM keys.t") == [(4,)]


def test_timestamp_keys_at_a_tablets_edge_are_refused_and_kept_once(db, spark):
    """A TIMESTAMP key (in a session zone other than UTC) equal to the smallest key of the
    table's later tablet: INSERT refuses it, ON CONFLICT DO NOTHING keeps one row (the log's
    timestamp statistics once skipped that tablet, and the key was inserted again)."""
    ts = "timestamp_seconds(1700000000 + {} * 3600)"
    with settings(spark, LOS_ANGELES):
        db.sql("DROP TABLE IF EXISTS keys.ts")
        db.sql("CREATE TABLE keys.ts (at TIMESTAMP, v INT) USING tablets TBLPROPERTIES ('key_columns' = 'at')")
        for lo in (0, 10):  # two tablets: hours 0-9 and 10-19
            db.sql(f"INSERT INTO keys.ts SELECT {ts.format('id')}, 0 FROM range({lo}, {lo + 10})")
        refused(
            db,
            f"INSERT INTO keys.ts SELECT {ts.format('id')}, 1 FROM range(9, 11)",
            KeyViolation,
            "at=",
            name="keys.ts",
        )
        db.sql(f"INSERT INTO keys.ts SELECT {ts.format('id')}, 1 FROM range(5, 11) ON CONFLICT (at) DO NOTHING")
        assert rows(db, "SELECT count(*), count(DISTINCT at), sum(v) FROM keys.ts") == [(20, 20, 0)]


def test_ctas_and_overwrite_with_repeated_keys(db):
    db.sql("DROP TABLE IF EXISTS keys.c")
    with pytest.raises(KeyViolation, match="id=1"):
        db.sql(
            "CREATE TABLE keys.c USING tablets TBLPROPERTIES ('key_columns' = 'id') "
            "AS SELECT * FROM VALUES (1, 1), (1, 2) AS v(id, v)"
        )
    keyed(db)
    refused(db, "INSERT OVERWRITE keys.t VALUES (5, 1), (5, 2)", KeyViolation, "id=5")
    db.sql("INSERT OVERWRITE keys.t VALUES (1, 1), (2, 2)")
    assert rows(db, "SELECT * FROM keys.t") == [(1, 1), (2, 2)]


def test_compound_key(db):
    db.sql("DROP TABLE IF EXISTS keys.k2")
    db.sql("CREATE TABLE keys.k2 (a INT, b INT, v INT) USING tablets TBLPROPERTIES ('key_columns' = 'a,b')")
    db.sql("INSERT INTO keys.k2 VALUES (1, 1, 0), (1, 2, 0)")
    refused(db, "INSERT INTO keys.k2 VALUES (1, 2, 5)", KeyViolation, "a=1, b=2", name="keys.k2")
    db.sql("INSERT INTO keys.k2 VALUES (1, 2, 5) ON CONFLICT (b, a) DO UPDATE SET v = excluded.v")
    assert rows(db, "SELECT * FROM keys.k2") == [(1, 1, 0), (1, 2, 5)]


def test_extra_target_conjuncts_with_by_source_clauses(db):
    """dbt's incremental_predicates with a BY SOURCE delete: rows outside the window are left
    alone, rows inside it and missing from the source are deleted."""
    db.sql("DROP TABLE IF EXISTS keys.w")
    db.sql("CREATE TABLE keys.w (id INT, day INT, v STRING) USING tablets TBLPROPERTIES ('key_columns' = 'id')")
    db.sql("INSERT INTO keys.w VALUES (1, 5, 'old'), (2, 10, 'x'), (3, 11, 'y')")
    stmt = (
        "MERGE INTO keys.w t USING (SELECT * FROM VALUES {rows} AS v(id, day, v)) s ON t.id = s.id AND t.day >= 10 "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT * "
        "WHEN NOT MATCHED BY SOURCE AND t.day >= 10 THEN DELETE"
    )
    db.sql(stmt.format(rows="(3, 11, 'Y'), (4, 12, 'z')"))
    assert rows(db, "SELECT * FROM keys.w") == [(1, 5, "old"), (3, 11, "Y"), (4, 12, "z")]
    refused(db, stmt.format(rows="(1, 6, 'dup')"), KeyViolation, "id=1", name="keys.w")
    # key 1 is in the source but outside the window, and not inserted: row 1 is still NOT
    # MATCHED BY SOURCE, and a clause for such rows acts on it
    other = stmt.replace("THEN INSERT *", "AND s.v <> 'skip' THEN INSERT *").replace(
        "AND t.day >= 10 THEN DELETE", "AND t.day < 10 THEN UPDATE SET v = 'gone'"
    )
    db.sql(other.format(rows="(1, 6, 'skip'), (4, 12, 'z')"))
    assert rows(db, "SELECT * FROM keys.w") == [(1, 5, "gone"), (3, 11, "Y"), (4, 12, "z")]


def test_do_update_where_reads_the_existing_row_bare(db):
    keyed(db)
    res = db.sql(
        "INSERT INTO keys.t VALUES (1, 5), (2, 25), (4, 40) ON CONFLICT (id) DO UPDATE SET v = excluded.v WHERE v < excluded.v"
    )
    assert (res.metrics.rows_updated, res.metrics.rows_inserted) == (1, 1)
    assert rows(db, "SELECT * FROM keys.t") == [(1, 10), (2, 25), (3, 30), (4, 40)]


def test_explain_plans_with_the_key_as_the_run_does(db):
    """EXPLAIN (and the builder's ``explain``) plans the statement on the table's key, as its run
    does: a statement the run refuses for the key is refused by EXPLAIN with the same words."""
    keyed(db)
    stmt = (
        "MERGE INTO keys.t t USING (SELECT 1 AS id, 5 AS v) s ON t.v = s.v "
        "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v)"
    )
    run = refused(db, stmt, MergeSpecError, "does not match on key column")
    with pytest.raises(MergeSpecError) as info:
        db.sql(f"EXPLAIN {stmt}")
    assert str(info.value) == run
    source = db.spark.sql("SELECT 1 AS id, 5 AS v")
    builder = tablets.table(db, "keys.t").merge(source, on="t.v = s.v").when_not_matched_insert()
    with pytest.raises(MergeSpecError, match="does not match on key column"):
        builder.explain()


def test_a_table_without_a_key_takes_one_once_its_rows_are_checked(db):
    db.sql("CREATE TABLE k_later (id INT, v STRING) USING tablets")
    db.sql("INSERT INTO k_later VALUES (1, 'a'), (1, 'b'), (NULL, 'x'), (NULL, 'y')")
    with pytest.raises(KeyViolation, match=r"repeat a key of \(id\): \(1\) x 2; nothing was changed"):
        db.sql("ALTER TABLE k_later SET TBLPROPERTIES ('key_columns' = 'id')")
    versions = db.sql("DESCRIBE HISTORY k_later").count()
    db.sql("DELETE FROM k_later WHERE v = 'b'")
    db.sql("ALTER TABLE k_later SET TBLPROPERTIES ('key_columns' = 'ID')")  # NULL keys are distinct
    assert db.sql("DESCRIBE HISTORY k_later").count() == versions + 2
    props = dict((r[0], r[1]) for r in db.sql("SHOW TBLPROPERTIES k_later").collect())
    assert props["key_columns"] == "id"
    db.sql("ALTER TABLE k_later SET TBLPROPERTIES ('key_columns' = 'id')")  # the same key: no commit
    assert db.sql("DESCRIBE HISTORY k_later").count() == versions + 2
    with pytest.raises(TabletsError, match="repeat a key"):  # now it holds for every write
        db.sql("INSERT INTO k_later VALUES (1, 'again')")
    with pytest.raises(TabletsError, match=r"the key of .* is \(id\), and a key is set once"):
        db.sql("ALTER TABLE k_later SET TBLPROPERTIES ('key_columns' = 'v')")
    assert_delta_agrees(db, "k_later")  # the key is in the Delta log's metaData; every reader reads on


def test_a_key_checked_against_a_version_does_not_commit_over_a_later_write(db):
    db.sql("CREATE TABLE k_race (id INT, v STRING) USING tablets")
    db.sql("INSERT INTO k_race VALUES (1, 'a')")
    table = db.table_of("k_race")
    checked = table.snapshot()  # the rows a key check read: no repeated key
    db.sql("INSERT INTO k_race VALUES (1, 'b')")  # committed meanwhile, unchecked: repeats key 1
    keyed = replace(checked.metadata, key_columns=("id",))
    with pytest.raises(CommitConflict):
        commit_checked(table, checked, "SET TBLPROPERTIES", keyed, {"properties": "key_columns=id"})
    assert table.snapshot().metadata.key_columns == ()
