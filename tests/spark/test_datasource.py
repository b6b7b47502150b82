"""The ``tablets`` data source (spark.read / df.write) and the native scan ``snapshot_frame``."""

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F
from tablets.exceptions import SchemaMismatch, TabletsError
from tablets.spark.frames import snapshot_frame
from tablets.spark.session import installed_sources_known_absent, java_version, session_conf
from tablets.storage import RowLevelSink, TabletTable
from tablets.storage.table import ROW_NUMBER, ROW_TABLET

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def rows(df):
    return sorted(tuple(r) for r in df.collect())


def make_table(root, *parts):
    t = TabletTable.create(root, SCHEMA, key_columns=["id"])
    for ids in parts:
        t.append(pa.table({"id": pa.array(ids, pa.int64()), "v": [f"v{i}" for i in ids]}))
    return t


def delete(t, pairs):
    """Delete rows by (tablet id, row number) in one commit."""
    h = t.begin_delete()
    sink = RowLevelSink(h)
    sink.delete([p[0] for p in pairs], [p[1] for p in pairs])
    return t.finish(h, sink.finish())


def load(spark, root, **options):
    return spark.read.format("tablets").options(**{k: str(v) for k, v in options.items()}).load(root)


def test_session_conf_is_pure_and_keeps_things_out_of_cwd(tmp_path):
    conf = session_conf(str(tmp_path / "wh"), extra={"spark.sql.shuffle.partitions": "7"})
    assert conf["spark.sql.warehouse.dir"] == str(tmp_path / "wh")
    assert f"databaseName={tmp_path}/wh/_metastore/metastore_db" in conf["spark.hadoop.javax.jdo.option.ConnectionURL"]
    assert conf["spark.driver.extraJavaOptions"] == f"-Dderby.system.home={tmp_path}/wh/_metastore"
    assert conf["spark.sql.shuffle.partitions"] == "7"
    assert conf["spark.master"] == "local[*]" and conf["spark.ui.enabled"] == "false"
    assert "17" in java_version() or "version" in java_version()


def test_java_options_given_join_the_sessions_own(tmp_path):
    """A caller's ``extraJavaOptions`` come after the session's own: the metastore's files
    stay out of the working directory, and the caller's ``-D`` wins where both set one."""
    conf = session_conf(str(tmp_path / "wh"), extra={"spark.driver.extraJavaOptions": "-XX:+UseParallelGC"})
    assert conf["spark.driver.extraJavaOptions"] == f"-Dderby.system.home={tmp_path}/wh/_metastore -XX:+UseParallelGC"


def test_the_look_up_of_installed_sources_is_skipped_only_where_it_finds_none(tmp_path, spark, monkeypatch):
    """A new JVM is given the look-up's empty answer where it is known (no ``pyspark_*`` module
    on the path of the Python that would look); a ``pyspark_*`` package, or another Python,
    leaves the look-up to Spark."""
    import sys

    from tablets.spark.session import _no_installed_sources

    assert installed_sources_known_absent([None, sys.executable], [str(tmp_path)])
    assert installed_sources_known_absent([sys.executable], sys.path)
    assert not installed_sources_known_absent([sys.executable, "/usr/bin/python3.9"], [str(tmp_path)])
    (tmp_path / "pyspark_ds_example").mkdir()
    (tmp_path / "pyspark_ds_example" / "__init__.py").write_text("")
    assert not installed_sources_known_absent([None], [str(tmp_path)])

    jvm = spark._jvm
    manager = getattr(getattr(jvm.org.apache.spark.sql.execution.datasources, "DataSourceManager$"), "MODULE$")
    answer = manager.dataSourceBuilders()
    unset = getattr(getattr(jvm.scala, "None$"), "MODULE$")
    try:
        getattr(manager, "dataSourceBuilders_$eq")(unset)  # as in a JVM that has not looked yet
        monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # a pyspark_* package: Spark must look
        _no_installed_sources(spark)
        assert manager.dataSourceBuilders().isEmpty()
        monkeypatch.delenv("PYTHONPATH")
        _no_installed_sources(spark)
        assert manager.dataSourceBuilders().toString() == "Some(Map())"
    finally:
        getattr(manager, "dataSourceBuilders_$eq")(answer)


def test_java_missing_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(TabletsError, match="Java 17 is required") as err:
        java_version()
    assert "openjdk-17-jre-headless" in str(err.value)


def test_read_latest_and_time_travel(spark, tmp_table_dir):
    t = make_table(tmp_table_dir, [1, 2, 3], [4, 5])
    df = load(spark, tmp_table_dir)
    assert df.schema.simpleString() == "struct<id:bigint,v:string>"
    assert rows(df) == [(i, f"v{i}") for i in range(1, 6)]
    assert rows(load(spark, tmp_table_dir, version=1)) == [(1, "v1"), (2, "v2"), (3, "v3")]
    assert load(spark, tmp_table_dir, version=0).count() == 0
    assert t.version == 2


def test_read_applies_deletion_vectors(spark, tmp_table_dir):
    t = make_table(tmp_table_dir, [1, 2, 3, 4], [5, 6])
    first, second = list(t.snapshot().tablets)
    delete(t, [(first, 1), (first, 3), (second, 0)])
    assert rows(load(spark, tmp_table_dir)) == [(1, "v1"), (3, "v3"), (6, "v6")]
    assert load(spark, tmp_table_dir).count() == 3
    assert load(spark, tmp_table_dir, version=2).count() == 6  # before the delete


def test_read_groups_small_tablets_and_skips_fully_deleted(spark, tmp_table_dir, monkeypatch):
    from tablets.spark import datasource

    t = make_table(tmp_table_dir, [1], [2], [3], [4, 5])
    tablets = list(t.snapshot().tablets)
    delete(t, [(tablets[0], 0)])
    monkeypatch.setattr(datasource, "PARTITION_ROWS", 2)
    reader = datasource.TabletsReader(TabletTable(tmp_table_dir), None, load(spark, tmp_table_dir).schema)
    parts = reader.partitions()
    assert [len(p.tablets) for p in parts] == [2, 1]  # [2,3] | [4,5]; the empty tablet is gone
    assert all(p.version == t.version for p in parts)
    assert sorted(i for p in parts for b in reader.read(p) for i in b.column("id").to_pylist()) == [2, 3, 4, 5]


def test_read_empty_table_and_added_column(spark, tmp_table_dir):
    t = make_table(tmp_table_dir)
    assert load(spark, tmp_table_dir).count() == 0
    t.append(pa.table({"id": [1], "v": ["a"]}))
    t.add_columns([("n", "int")])
    t.append(pa.table({"id": [2], "v": ["b"], "n": pa.array([7], pa.int32())}))
    df = load(spark, tmp_table_dir)
    assert df.columns == ["id", "v", "n"]
    assert rows(df) == [(1, "a", None), (2, "b", 7)]


def test_write_append_and_overwrite(spark, tmp_table_dir):
    t = make_table(tmp_table_dir, [1])
    df = spark.createDataFrame([(2, "x"), (3, "y")], "id bigint, v string").repartition(2)
    df.write.format("tablets").mode("append").save(tmp_table_dir)
    assert rows(load(spark, tmp_table_dir)) == [(1, "v1"), (2, "x"), (3, "y")]
    entry = t.history()[-1]
    assert entry.commit.operation == "INSERT" and dict(entry.commit.metrics)["rows_inserted"] == 2
    appended = t.version

    spark.createDataFrame([(9, "z")], "id bigint, v string").write.format("tablets").mode("overwrite").save(
        tmp_table_dir
    )
    assert t.version == appended + 1  # one commit
    assert rows(load(spark, tmp_table_dir)) == [(9, "z")]
    snap = t.snapshot()
    assert len(snap.tablets) == 1
    info = t.history()[-1].commit
    assert info.operation == "INSERT OVERWRITE"
    assert dict(info.metrics)["rows_deleted"] == 3 and dict(info.metrics)["rows_inserted"] == 1


def test_write_by_name_casts_and_fills_missing_columns(spark, tmp_table_dir):
    make_table(tmp_table_dir)
    spark.createDataFrame([("a", 1)], "V string, ID int").write.format("tablets").mode("append").save(tmp_table_dir)
    spark.createDataFrame([(2,)], "id int").write.format("tablets").mode("append").save(tmp_table_dir)
    assert rows(load(spark, tmp_table_dir)) == [(1, "a"), (2, None)]
    with pytest.raises(Exception, match="not in the tablet table"):
        spark.createDataFrame([(1, 2)], "id int, other int").write.format("tablets").mode("append").save(tmp_table_dir)


def test_write_creates_a_new_table(spark, tmp_table_dir):
    spark.createDataFrame([(1, "a", 1.5)], "id bigint, v string, x double").write.format("tablets").mode("append").save(
        tmp_table_dir
    )
    t = TabletTable.open(tmp_table_dir)
    assert t.snapshot().metadata.schema == (("id", "bigint", True), ("v", "string", True), ("x", "double", True))
    assert rows(load(spark, tmp_table_dir)) == [(1, "a", 1.5)]


def test_write_empty_frame_commits_nothing(spark, tmp_table_dir):
    t = make_table(tmp_table_dir, [1])
    before = t.version
    spark.createDataFrame([], "id bigint, v string").write.format("tablets").mode("append").save(tmp_table_dir)
    assert t.version == before


# --- snapshot_frame -------------------------------------------------------------------------


def file_rows(t, tablet_id):
    """(id, tablet id, row number) straight from the tablet's Parquet file."""
    path = os.path.join(t.root, t.snapshot().tablets[tablet_id].add.path)
    ids = pq.read_table(path, columns=["id"]).column("id").to_pylist()
    return [(i, tablet_id, n) for n, i in enumerate(ids)]


def test_snapshot_frame_row_ids_and_deletion_vectors(spark, tmp_table_dir):
    t = make_table(tmp_table_dir, list(range(0, 200)), list(range(200, 300)), list(range(300, 310)))
    a, b, c = list(t.snapshot().tablets)
    dels = [(a, n) for n in (0, 1, 63, 64, 65, 127, 199)] + [(b, n) for n in range(0, 100, 3)]
    delete(t, dels)
    snap = t.snapshot()
    df = snapshot_frame(spark, t, snap, ["id"])
    assert df.columns == ["id", ROW_TABLET, ROW_NUMBER]
    got = rows(df)
    gone = set(dels)
    want = sorted(r for tid in (a, b, c) for r in file_rows(t, tid) if (r[1], r[2]) not in gone)
    assert got == want
    assert len(got) == 310 - len(dels) == snap.live_rows


@pytest.mark.parametrize("older", [False, True])
def test_the_scans_row_numbers_come_from_the_tablets_row_ids(spark, tmp_table_dir, older):
    """The engine's scan numbers rows by the tablets' ``ROW_ID`` column, not Spark's
    ``_metadata.row_index`` (which costs every row read); with a tablet of the older format
    (no such column) by ``_metadata.row_index``. The same row numbers either way, with deletion
    vectors and under a filter."""
    from tablets.spark.frames import tablet_scan
    from tablets.storage.tablet import ROW_ID

    from tests.support.damage import add_tablet_without_row_ids

    t = make_table(tmp_table_dir, list(range(0, 200)))
    part = pa.table({"id": pa.array(range(200, 300), pa.int64()), "v": [f"v{i}" for i in range(200, 300)]})
    if older:
        add_tablet_without_row_ids(t, part)
    else:
        t.append(part)
    a, b = list(t.snapshot().tablets)
    dels = [(a, n) for n in (0, 63, 64, 199)] + [(b, n) for n in range(0, 100, 7)]
    delete(t, dels)
    snap = t.snapshot()
    scan = tablet_scan(spark, t, snap, ["id"], row_ids=True)
    plan = scan.frame._jdf.queryExecution().executedPlan().toString()
    assert ("row_index" in plan) == older and (ROW_ID in plan) != older, plan
    gone = set(dels)
    want = sorted(r for tid in (a, b) for r in file_rows(t, tid) if (r[1], r[2]) not in gone)
    assert rows(scan.live(scan.frame)) == want
    filtered = scan.live(scan.frame.filter(F.col("id") >= 250))
    assert rows(filtered) == [r for r in want if r[0] >= 250]


def test_snapshot_frame_columns_tablets_and_no_row_ids(spark, tmp_table_dir):
    t = make_table(tmp_table_dir, [1, 2, 3], [4, 5])
    a, b = list(t.snapshot().tablets)
    delete(t, [(b, 0)])
    snap = t.snapshot()
    assert rows(snapshot_frame(spark, t, snap, ["v"], tablet_ids=[b], row_ids=False)) == [("v5",)]
    assert rows(snapshot_frame(spark, t, snap, row_ids=False)) == [(i, f"v{i}") for i in (1, 2, 3, 5)]
    assert rows(snapshot_frame(spark, t, snap, ["id"], tablet_ids=[a])) == [(1, a, 0), (2, a, 1), (3, a, 2)]
    # an old snapshot still reads its own version (the DV came later)
    assert snapshot_frame(spark, t, t.snapshot(2), ["id"]).count() == 5
    with pytest.raises(SchemaMismatch):
        snapshot_frame(spark, t, snap, ["nope"])


def test_snapshot_frame_empty_and_added_column(spark, tmp_table_dir):
    t = make_table(tmp_table_dir)
    empty = snapshot_frame(spark, t, t.snapshot(), ["id"])
    assert empty.count() == 0 and empty.columns == ["id", ROW_TABLET, ROW_NUMBER]
    assert dict(empty.dtypes) == {"id": "bigint", ROW_TABLET: "string", ROW_NUMBER: "bigint"}
    t.append(pa.table({"id": [1], "v": ["a"]}))
    t.add_columns([("n", "int")])
    df = snapshot_frame(spark, t, t.snapshot(), ["id", "n"], row_ids=False)
    assert rows(df) == [(1, None)]
    only_deleted = make_table(tmp_table_dir + "2", [1])
    delete(only_deleted, [(next(iter(only_deleted.snapshot().tablets)), 0)])
    assert snapshot_frame(spark, only_deleted, only_deleted.snapshot()).count() == 0


def test_snapshot_frame_reads_only_asked_columns(spark, tmp_table_dir):
    t = make_table(tmp_table_dir, [1, 2])
    df = snapshot_frame(spark, t, t.snapshot(), ["id"], row_ids=False)
    plan = df._jdf.queryExecution().executedPlan().toString()
    assert "ReadSchema: struct<id:bigint>" in plan
    assert rows(df.agg(F.sum("id"))) == [(3,)]
