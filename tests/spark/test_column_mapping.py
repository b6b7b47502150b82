"""Columns have an identity of their own, through the SQL front door and every
reader: a column dropped and added back under its old name reads NULL in the tablets written
before, on Spark's native scan (the front door's, plain Spark SQL's), the Python data source,
the driver's Arrow reader and in a MERGE; RENAME COLUMN and DROP COLUMN are metadata-only
commits; time travel, RESTORE and OPTIMIZE keep each version's columns."""

import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.conf import settings
from tablets.engine.rewrite import REWRITE_CONF
from tablets.engine.route import DRIVER_SCAN_CONF
from tablets.exceptions import SchemaMismatch, TabletsError
from tablets.spark import catalog
from tablets.spark.frames import SCAN_CONF
from tablets.spark.read_frames import READ_NATIVE_CONF
from tablets.storage.columns import PHYSICAL_PREFIX
from tablets.storage.fileio import LOCAL
from tablets.storage.tablet import write_tablet

pytestmark = pytest.mark.spark


DATABASE = "cm"  # created by the conftest's db fixture


@pytest.fixture
def table(db):
    """``cm.t``: two tablets, (1, 10, 'a'), (2, 20, 'b') and (3, 30, 'c'), one row deleted."""
    db.sql("DROP TABLE IF EXISTS cm.t")
    db.sql("CREATE TABLE cm.t (id BIGINT, c INT, v STRING) USING tablets TBLPROPERTIES ('key_columns' = 'id')")
    db.sql("INSERT INTO cm.t VALUES (1, 10, 'a'), (2, 20, 'b'), (9, 90, 'z')")
    db.sql("INSERT INTO cm.t VALUES (3, 30, 'c')")
    db.sql("DELETE FROM cm.t WHERE id = 9")  # a deletion vector: the reads that apply one
    return "cm.t"


def rows(db, sql):
    return sorted(tuple(r) for r in db.sql(sql).collect())


def spark_rows(df):
    return sorted(tuple(r) for r in df.collect())


def _native(df) -> bool:
    from tablets.spark.native import MARKER

    plan = df._jdf.queryExecution().analyzed().toString()
    return MARKER in plan and "RelationV2" not in plan


def readers(db, spark, sql):
    """The rows of ``sql`` (on ``cm.t``) through every reader: the front door (Spark's native
    scan), plain Spark SQL (the planner rule's native read), and the Python data source."""
    front = rows(db, sql)
    plain = spark.sql(sql)
    assert _native(plain)
    seen = {"front door": front, "plain Spark SQL": spark_rows(plain)}
    spark.conf.set(READ_NATIVE_CONF, "false")
    try:
        seen["Python source"] = rows(db, sql)
    finally:
        spark.conf.unset(READ_NATIVE_CONF)
    assert seen["plain Spark SQL"] == seen["Python source"] == front, seen
    return front


def test_a_dropped_column_added_back_reads_null(db, spark, table):
    t = db.table_of(table)
    t.set_schema([c for c in t.snapshot().metadata.schema if c[0] != "c"])  # dbt's sync_all_columns
    catalog.sync_schema(db.spark, table)
    db.sql("ALTER TABLE cm.t ADD COLUMNS (c INT)")
    assert readers(db, spark, "SELECT id, c, v FROM cm.t") == [(1, None, "a"), (2, None, "b"), (3, None, "c")]
    assert readers(db, spark, "SELECT id FROM cm.t WHERE c IS NULL") == [(1,), (2,), (3,)]
    assert rows(db, "SELECT id FROM cm.t WHERE c = 20") == []  # no tablet kept by its old statistics
    assert t.read().sort_by("id").column("c").to_pylist() == [None, None, None]  # the store's Arrow reader
    # the old values are still there for the versions that had them
    assert rows(db, "SELECT id, c FROM cm.t VERSION AS OF 1") == [(1, 10), (2, 20), (9, 90)]
    # new rows go under the column's new physical name; a MERGE reads them and the old ones
    db.sql("INSERT INTO cm.t VALUES (4, 'd', 40)")
    assert readers(db, spark, "SELECT id, c FROM cm.t WHERE c IS NOT NULL") == [(4, 40)]


@pytest.mark.parametrize("path", ["driver", "spark", "arrow tasks"])
def test_a_merge_updates_rows_of_older_tablets_by_the_added_column(db, spark, table, path):
    """The engine's reads of the target: on the driver (Arrow), in Spark's native scan, and in
    Arrow tasks (``spark.tablets.scan=arrow``): the re-added column is NULL in older tablets."""
    db.sql("ALTER TABLE cm.t DROP COLUMN c")
    db.sql("ALTER TABLE cm.t ADD COLUMNS (c INT)")
    settings = {
        "driver": {},
        "spark": {DRIVER_SCAN_CONF: "0"},
        "arrow tasks": {DRIVER_SCAN_CONF: "0", SCAN_CONF: "arrow"},
    }[path]
    for k, v in settings.items():
        spark.conf.set(k, v)
    try:
        m = db.sql(
            "MERGE INTO cm.t USING (SELECT 1 AS id, 7 AS c UNION ALL SELECT 3, 8 UNION ALL SELECT 5, 9) s ON t.id = s.id "
            "WHEN MATCHED AND t.c IS NULL THEN UPDATE SET c = s.c WHEN NOT MATCHED THEN INSERT (id, c, v) VALUES (s.id, s.c, 'e')"
        ).metrics
        assert m.merged_on_driver == (path == "driver")
        assert (m.rows_updated, m.rows_inserted) == (2, 1)
        assert rows(db, "SELECT id, c, v FROM cm.t") == [(1, 7, "a"), (2, None, "b"), (3, 8, "c"), (5, 9, "e")]
        u = db.sql("UPDATE cm.t SET v = 'n' WHERE c IS NULL").metrics  # no source: the Spark scan
        assert u.rows_updated == 1
    finally:
        for k in settings:
            spark.conf.unset(k)
    assert rows(db, "SELECT id, c, v FROM cm.t") == [(1, 7, "a"), (2, None, "n"), (3, 8, "c"), (5, 9, "e")]


def test_rename_is_a_metadata_commit_and_the_old_name_can_be_added_again(db, spark, table):
    t = db.table_of(table)
    files = sorted(os.listdir(os.path.join(t.root, "tablets")))
    db.sql("ALTER TABLE cm.t ALTER COLUMN c COMMENT 'the count'")
    db.sql("ALTER TABLE cm.t SET TBLPROPERTIES ('cluster_by' = 'c,id')")
    before = t.version
    db.sql("ALTER TABLE cm.t RENAME COLUMN c TO n")
    assert t.version == before + 1 and sorted(os.listdir(os.path.join(t.root, "tablets"))) == files  # nothing rewritten
    assert t.history()[-1].commit.operation == "RENAME COLUMN"
    meta = t.snapshot().metadata
    assert meta.column_names == ("id", "n", "v") and meta.physical_names == ("id", "c", "v")
    assert meta.column_comments == (("n", "the count"),) and meta.property("cluster_by") == "n,id"
    assert [c.name for c in spark.catalog.listColumns("cm.t")] == ["id", "n", "v"]  # the catalog follows
    assert readers(db, spark, "SELECT id, n FROM cm.t WHERE n >= 20") == [(2, 20), (3, 30)]
    db.sql("ALTER TABLE cm.t ADD COLUMNS (c STRING)")
    assert readers(db, spark, "SELECT id, n, c FROM cm.t") == [(1, 10, None), (2, 20, None), (3, 30, None)]
    # a rename to the name of a dropped column, then the dropped one's name again
    db.sql("ALTER TABLE cm.t DROP COLUMN c")
    db.sql("ALTER TABLE cm.t RENAME COLUMN n TO c")
    assert readers(db, spark, "SELECT id, c FROM cm.t") == [(1, 10), (2, 20), (3, 30)]
    # names swapped: the tablets' columns follow their columns, not the names
    db.sql("ALTER TABLE cm.t RENAME COLUMN c TO tmp")
    db.sql("ALTER TABLE cm.t RENAME COLUMN v TO c")
    db.sql("ALTER TABLE cm.t RENAME COLUMN tmp TO v")
    assert readers(db, spark, "SELECT id, c, v FROM cm.t") == [(1, "a", 10), (2, "b", 20), (3, "c", 30)]


def test_drop_column_takes_a_list_without_parentheses_as_spark_does(db, spark, table):
    """Spark's grammar: DROP { COLUMN | COLUMNS } [ IF EXISTS ] [(] col [, ...] [)]."""
    version = db.table_of(table).version
    db.sql("ALTER TABLE cm.t DROP COLUMN c, `v`")
    assert [c.name for c in spark.catalog.listColumns("cm.t")] == ["id"]
    assert db.table_of(table).version == version + 1  # one commit for both
    db.sql("ALTER TABLE cm.t DROP COLUMNS IF EXISTS c, v")  # nothing left to drop: no commit
    assert db.table_of(table).version == version + 1


def test_drop_then_add_keeps_history_and_ids(db, spark, table):
    t = db.table_of(table)
    db.sql("ALTER TABLE cm.t DROP COLUMNS (c, v)")
    assert [c.name for c in spark.catalog.listColumns("cm.t")] == ["id"]
    assert readers(db, spark, "SELECT * FROM cm.t") == [(1,), (2,), (3,)]
    db.sql("ALTER TABLE cm.t DROP COLUMN IF EXISTS c")  # nothing to drop: no commit
    dropped = t.version
    db.sql("ALTER TABLE cm.t ADD COLUMNS (v STRING, c INT)")
    meta = t.snapshot().metadata
    assert meta.column_ids == (1, 4, 5) and meta.max_column_id == 5
    assert all(p.startswith(PHYSICAL_PREFIX) for p in meta.physical_names[1:])
    assert readers(db, spark, "SELECT id, v, c FROM cm.t") == [(1, None, None), (2, None, None), (3, None, None)]
    # each version reads with its own columns
    assert rows(db, f"SELECT * FROM cm.t VERSION AS OF {dropped - 1}") == [(1, 10, "a"), (2, 20, "b"), (3, 30, "c")]
    assert rows(db, f"SELECT * FROM cm.t VERSION AS OF {dropped}") == [(1,), (2,), (3,)]
    # RESTORE brings the old columns back (their values with them); a column added after gets an id never given
    db.sql(f"RESTORE TABLE cm.t TO VERSION AS OF {dropped - 1}")
    assert rows(db, "SELECT id, c, v FROM cm.t") == [(1, 10, "a"), (2, 20, "b"), (3, 30, "c")]
    assert [c.name for c in spark.catalog.listColumns("cm.t")] == ["id", "c", "v"]
    db.sql("ALTER TABLE cm.t ADD COLUMNS (w INT)")
    assert t.snapshot().metadata.column_ids == (1, 2, 3, 6)
    assert rows(db, "SELECT count(*) FROM cm.t WHERE w IS NULL") == [(3,)]


def test_time_travel_across_a_rename(db, spark, table):
    db.sql("ALTER TABLE cm.t RENAME COLUMN v TO label")
    v = db.table_of(table).version
    db.sql("INSERT INTO cm.t VALUES (4, 40, 'd')")
    assert rows(db, f"SELECT id, v FROM cm.t VERSION AS OF {v - 1}") == [(1, "a"), (2, "b"), (3, "c")]
    assert rows(db, f"SELECT id, label FROM cm.t VERSION AS OF {v}") == [(1, "a"), (2, "b"), (3, "c")]
    old = spark.read.format("tablets").option("version", v - 1).load(db.table_of(table).root)
    assert old.columns == ["id", "c", "v"] and spark_rows(old.select("v")) == [("a",), ("b",), ("c",)]
    assert rows(db, "SELECT label FROM cm.t WHERE id = 4") == [("d",)]


@pytest.mark.parametrize("rewrite", ["driver", "spark"])
def test_optimize_after_a_rename_keeps_the_columns(db, spark, table, rewrite):
    """On the driver and in Spark's tasks (``engine.rewrite``) alike."""
    t = db.table_of(table)
    db.sql("ALTER TABLE cm.t RENAME COLUMN c TO n")
    db.sql("ALTER TABLE cm.t DROP COLUMN v")
    db.sql("ALTER TABLE cm.t ADD COLUMNS (v STRING)")
    db.sql("INSERT INTO cm.t VALUES (4, 40, 'new')")
    with settings(spark, {REWRITE_CONF: "64m" if rewrite == "driver" else "0"}):
        result = rows(db, "OPTIMIZE cm.t")
    assert result[0][2] == 1 and len(t.snapshot().tablets) == 1  # three tablets -> one
    assert readers(db, spark, "SELECT id, n, v FROM cm.t") == [
        (1, 10, None),
        (2, 20, None),
        (3, 30, None),
        (4, 40, "new"),
    ]
    # the new tablet keeps the columns under their physical names, with their field ids
    (st,) = t.snapshot().tablets.values()
    schema = pq.read_schema(t.tablet_path(st))
    meta = t.snapshot().metadata
    assert schema.names[:3] == list(meta.physical_names)
    assert [int(schema.field(p).metadata[b"PARQUET:field_id"]) for p in meta.physical_names] == list(meta.column_ids)
    assert {n for n, _ in st.add.stats} >= set(meta.physical_names)


def test_refused_renames_and_drops_say_why(db, table):
    t = db.table_of(table)
    v = t.version
    with pytest.raises(TabletsError) as e:
        db.sql("ALTER TABLE cm.t RENAME COLUMN id TO key")
    assert "ALTER TABLE cm.t RENAME COLUMN id TO key: id is a key column" in e.value.detail
    assert "full-refresh" in str(e.value) and "Help:" in str(e.value)
    with pytest.raises(SchemaMismatch, match="ALTER TABLE cm.t DROP COLUMNS \\(id\\): id is a key column"):
        db.sql("ALTER TABLE cm.t DROP COLUMN id")
    with pytest.raises(SchemaMismatch, match="already has a column v") as e:
        db.sql("ALTER TABLE cm.t RENAME COLUMN c TO V")
    assert "Pick a name the table does not have" in str(e.value)
    with pytest.raises(SchemaMismatch, match="nope is not a column of the table \\(columns: id, c, v\\)"):
        db.sql("ALTER TABLE cm.t DROP COLUMN nope")
    with pytest.raises(SchemaMismatch, match="reserved"):
        db.sql("ALTER TABLE cm.t RENAME COLUMN c TO __tablets_x")
    db.sql("ALTER TABLE cm.t SET TBLPROPERTIES ('cluster_by' = 'c')")
    with pytest.raises(SchemaMismatch, match="sorted by c") as e:
        db.sql("ALTER TABLE cm.t DROP COLUMN c")
    assert "cluster_by" in str(e.value)
    assert t.version == v + 1  # only the property change committed
    db.sql("ALTER TABLE cm.t RENAME COLUMN C TO Count")  # Spark's resolution: without regard to case
    assert t.snapshot().metadata.column_names == ("id", "Count", "v")


def test_a_table_whose_log_has_no_ids_reads_and_merges(db, spark, tmp_path):
    """A log written before column ids (built here as that code wrote it): read as before,
    merged into, and its first added column gets a fresh physical name and the next id."""
    root = str(tmp_path / "old")
    os.makedirs(os.path.join(root, "_log"))
    data = pa.table({"id": pa.array([1, 2], pa.int64()), "c": pa.array([10, 20], pa.int32())})
    add = write_tablet(LOCAL, root, data, "0" * 32)
    stats = [[n, {"min": s.min, "max": s.max, "null_count": s.null_count}] for n, s in add.stats]
    lines = [
        {
            "metadata": {
                "table_id": "t0",
                "schema": [["id", "bigint", True], ["c", "int", True], ["v", "string", True]],
                "key_columns": ["id"],
                "properties": [],
                "created_ms": 1,
            }
        },
        {
            "commit_info": {
                "operation": "CREATE TABLE",
                "txid": "1" * 32,
                "timestamp_ms": 1,
                "read_version": -1,
                "parameters": [],
                "metrics": [],
            }
        },
    ]
    v1 = [
        {
            "add_tablet": {
                "tablet_id": add.tablet_id,
                "path": add.path,
                "rows": 2,
                "bytes": add.bytes,
                "stats": stats,
                "txid": "0" * 32,
            }
        },
        {
            "commit_info": {
                "operation": "APPEND",
                "txid": "0" * 32,
                "timestamp_ms": 2,
                "read_version": 0,
                "parameters": [],
                "metrics": [],
            }
        },
    ]
    for version, actions in ((0, lines), (1, v1)):
        with open(os.path.join(root, "_log", f"{version:020d}.json"), "w") as f:
            f.write("".join(json.dumps(a) + "\n" for a in actions))
    name = f"tablets.`{root}`"
    assert rows(db, f"SELECT * FROM {name}") == [(1, 10, None), (2, 20, None)]
    db.sql(
        f"MERGE INTO {name} AS t USING (SELECT 2 AS id, 21 AS c) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET c = s.c WHEN NOT MATCHED THEN INSERT (id, c) VALUES (s.id, s.c)"
    )
    assert rows(db, f"SELECT id, c FROM {name}") == [(1, 10), (2, 21)]
    meta = db.table_of(name).snapshot().metadata
    assert meta.column_ids == (1, 2, 3) and meta.physical_names == ("id", "c", "v")
    db.sql(f"ALTER TABLE {name} DROP COLUMN c")
    db.sql(f"ALTER TABLE {name} ADD COLUMNS (c INT)")
    assert rows(db, f"SELECT id, c FROM {name}") == [(1, None), (2, None)]
    assert db.table_of(name).snapshot().metadata.column_ids == (1, 3, 4)


def test_writes_of_the_python_source_and_a_replace_follow_the_mapping(db, spark, table):
    t = db.table_of(table)
    db.sql("ALTER TABLE cm.t DROP COLUMN v")
    db.sql("ALTER TABLE cm.t ADD COLUMNS (v STRING)")
    frame = spark.createDataFrame([(5, 50, "e")], "id BIGINT, c INT, v STRING")
    frame.write.format("tablets").mode("append").save(t.root)  # the Python source's writer
    assert rows(db, "SELECT id, c, v FROM cm.t") == [(1, 10, None), (2, 20, None), (3, 30, None), (5, 50, "e")]
    assert rows(db, "SELECT id FROM cm.t WHERE v IS NOT NULL") == [(5,)]
    before = t.snapshot().metadata.max_column_id
    db.sql("CREATE OR REPLACE TABLE cm.t (id BIGINT, v STRING) USING tablets TBLPROPERTIES ('key_columns' = 'id')")
    db.sql("INSERT INTO cm.t VALUES (7, 'g')")
    meta = t.snapshot().metadata
    assert meta.physical_names == ("id", "v") and min(meta.column_ids) > before
    assert rows(db, "SELECT * FROM cm.t") == [(7, "g")]
