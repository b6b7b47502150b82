"""Tablet tables as catalog tables: plain Spark SQL reads and writes them."""

import os
import time

import pyarrow as pa
import pytest
import tablets
from deltalake import DeltaTable
from tablets.exceptions import SchemaMismatch, TableAlreadyExists, TableNotFound
from tablets.spark import catalog
from tablets.storage import RowLevelSink, TabletTable

pytestmark = pytest.mark.spark


def rows(spark, sql):
    return sorted(tuple(r) for r in spark.sql(sql).collect())


@pytest.fixture(scope="module")
def db(spark):
    spark.sql("CREATE DATABASE IF NOT EXISTS cat")
    return "cat"


def test_create_insert_select_overwrite_drop(spark, db):
    t = catalog.create_table(spark, "cat.items", "id BIGINT, v STRING", key_columns=["id"], properties={"owner": "me"})
    assert t.root == os.path.join(catalog.warehouse_dir(spark), "cat.db", "items")
    meta = t.snapshot().metadata
    assert meta.key_columns == ("id",) and meta.property("owner") == "me"
    assert catalog.lookup(spark, "cat.items") == t.root
    assert catalog.lookup(spark, "`cat`.`ITEMS`") == t.root
    assert catalog.lookup(spark, "spark_catalog.cat.items") == t.root
    assert catalog.lookup(spark, "cat.nope") is None and catalog.lookup(spark, "other.cat.items") is None

    spark.sql("INSERT INTO cat.items VALUES (1, 'a'), (2, 'b')")
    spark.sql("INSERT INTO cat.items SELECT id + 10, upper(v) FROM cat.items")
    assert rows(spark, "SELECT * FROM cat.items") == [(1, "a"), (2, "b"), (11, "A"), (12, "B")]
    assert rows(spark, "SELECT count(*) FROM cat.items") == [(4,)]
    spark.sql("INSERT OVERWRITE cat.items SELECT id * 100, v FROM cat.items WHERE id < 10")
    assert rows(spark, "SELECT * FROM cat.items") == [(100, "a"), (200, "b")]
    assert [h.commit.operation for h in t.history()] == ["CREATE TABLE", "INSERT", "INSERT", "INSERT OVERWRITE"]

    described = [(r.col_name, r.data_type) for r in spark.sql("DESCRIBE TABLE cat.items").collect()]
    assert described[:2] == [("id", "bigint"), ("v", "string")]
    assert "items" in [r.tableName for r in spark.sql("SHOW TABLES IN cat").collect()]
    assert ("cat.items", t.root) in catalog.list_tables(spark, "cat")

    catalog.drop_table(spark, "cat.items")
    assert not os.path.exists(t.root)
    assert catalog.lookup(spark, "cat.items") is None
    assert not spark.catalog.tableExists("cat.items")
    catalog.drop_table(spark, "cat.items", if_exists=True)
    with pytest.raises(TableNotFound):
        catalog.drop_table(spark, "cat.items")


def test_deletion_vectors_and_time_travel_through_sql(spark, db):
    t = catalog.create_table(spark, "cat.dv", pa.schema([("k", pa.int32()), ("s", pa.string())]))
    spark.sql("INSERT INTO cat.dv SELECT CAST(id AS INT), CAST(id AS STRING) FROM range(0, 10, 1, 1)")
    [tablet] = list(t.snapshot().tablets)
    live = t.read().column("k").to_pylist()  # row number = position in the file
    h = t.begin_delete()
    sink = RowLevelSink(h)
    sink.delete([tablet] * 3, [live.index(2), live.index(5), live.index(7)])
    t.finish(h, sink.finish())
    assert rows(spark, "SELECT count(*) FROM cat.dv") == [(7,)]
    assert [r[0] for r in rows(spark, "SELECT k FROM cat.dv")] == [0, 1, 3, 4, 6, 8, 9]
    assert rows(spark, "SELECT count(*) FROM cat.dv WITH ('version' = '1')") == [(10,)]
    assert rows(spark, "SELECT count(*) FROM cat.dv WHERE k > 4") == [(3,)]
    catalog.drop_table(spark, "cat.dv")


def test_unqualified_names_rename_and_schema_sync(spark, db):
    spark.sql("USE cat")
    try:
        t = catalog.create_table(spark, "evolving", "id INT")
        assert catalog.lookup(spark, "evolving") == catalog.lookup(spark, "cat.evolving") == t.root
        spark.sql("INSERT INTO evolving VALUES (1)")
        t.add_columns([("label", "string")])
        t.append(pa.table({"id": pa.array([2], pa.int32()), "label": ["two"]}))
        catalog.sync_schema(spark, "evolving")
        cols = [(c.name, c.dataType) for c in spark.catalog.listColumns("cat.evolving")]
        assert cols == [("id", "int"), ("label", "string")]
        assert rows(spark, "SELECT * FROM cat.evolving") == [(1, None), (2, "two")]
        catalog.sync_schema(spark, "evolving")  # nothing to do

        catalog.rename_table(spark, "evolving", "cat.renamed")
        assert catalog.lookup(spark, "evolving") is None
        assert catalog.lookup(spark, "cat.renamed") == t.root  # the data did not move
        assert rows(spark, "SELECT count(*) FROM renamed") == [(2,)]
        catalog.drop_table(spark, "renamed")
    finally:
        spark.sql("USE default")


def test_a_dropped_column_and_new_keys_alter_the_entry_in_place(spark, db):
    """Spark's ALTER TABLE cannot drop a column; the entry is altered through the session's
    external catalog in one update (not dropped and created again: no moment without it), and
    the columns it keeps keep their comments."""
    t = catalog.create_table(spark, "cat.narrowing", "id INT, gone STRING, kept DOUBLE", key_columns=["id"])
    spark.sql("INSERT INTO cat.narrowing VALUES (1, 'x', 1.5)")
    ident = spark._jvm.org.apache.spark.sql.catalyst.TableIdentifier.apply(
        "narrowing", spark._jvm.scala.Option.apply("cat")
    )

    def entry():
        return spark._jsparkSession.sessionState().catalog().getTableMetadata(ident)

    def created():
        return entry().createTime()

    spark.sql("ALTER TABLE cat.narrowing ALTER COLUMN kept COMMENT 'the one kept'")  # (dbt's persist_docs)
    before = created()
    time.sleep(1.1)  # (the metastore keeps the creation time in seconds)
    t.set_schema([c for c in t.snapshot().metadata.schema if c[0] != "gone"])
    catalog.sync_schema(spark, "cat.narrowing")
    assert created() == before
    cols = [(c.name, c.dataType, c.description) for c in spark.catalog.listColumns("cat.narrowing")]
    assert cols == [("id", "int", None), ("kept", "double", "the one kept")]
    assert rows(spark, "SELECT * FROM cat.narrowing") == [(1, 1.5)]
    spark.sql("ALTER TABLE cat.narrowing ADD COLUMNS (gone STRING)")
    assert rows(spark, "SELECT * FROM cat.narrowing") == [(1, 1.5, None)]

    front = tablets.connect(spark=spark)
    front.sql(
        "CREATE OR REPLACE TABLE cat.narrowing USING tablets TBLPROPERTIES ('key_columns' = 'id,kept') "
        "AS SELECT id, kept FROM cat.narrowing"
    )
    assert created() == before
    assert rows(spark, "SELECT * FROM cat.narrowing") == [(1, 1.5)]
    assert entry().properties().apply(catalog.KEYS_PROPERTY) == "id,kept"
    catalog.drop_table(spark, "cat.narrowing")


def test_create_replace_if_not_exists_and_adopt(spark, db, tmp_path):
    t = catalog.create_table(spark, "cat.r", "id BIGINT")
    spark.sql("INSERT INTO cat.r VALUES (1)")
    with pytest.raises(TableAlreadyExists):
        catalog.create_table(spark, "cat.r", "id BIGINT")
    assert catalog.create_table(spark, "cat.r", "x INT", if_not_exists=True).root == t.root
    assert rows(spark, "SELECT * FROM cat.r") == [(1,)]
    t2 = catalog.create_table(spark, "cat.r", "id BIGINT, y STRING", replace=True)
    assert rows(spark, "SELECT * FROM cat.r") == []
    assert t2.snapshot().metadata.column_names == ("id", "y")
    catalog.drop_table(spark, "cat.r")

    # an existing tablet table at an explicit location is adopted, its data kept
    root = str(tmp_path / "external")
    ext = TabletTable.create(root, pa.schema([("a", pa.int64())]))
    ext.append(pa.table({"a": [5, 6]}))
    catalog.create_table(spark, "cat.ext", None, location=root)
    assert rows(spark, "SELECT * FROM cat.ext") == [(5,), (6,)]
    with pytest.raises(TableAlreadyExists, match="already the catalog table cat.ext"):
        catalog.create_table(spark, "cat.ext2", "a BIGINT", location=root)
    with pytest.raises(SchemaMismatch):
        catalog.create_table(spark, "cat.ext3", "b BIGINT", location=root)
    # an EXTERNAL table: DROP removes the catalog entry, never the files
    assert "kept its files" in catalog.drop_table(spark, "cat.ext")
    assert TabletTable(root).read().num_rows == 2
    with pytest.raises(TableNotFound, match="database nodb does not exist"):
        catalog.create_table(spark, "nodb.t", "a INT")


def test_plain_spark_table_is_not_a_tablet_table(spark, db):
    spark.sql("CREATE TABLE IF NOT EXISTS cat.plain (a INT) USING parquet")
    assert catalog.lookup(spark, "cat.plain") is None
    with pytest.raises(TableAlreadyExists, match="not a tablet table"):
        catalog.create_table(spark, "cat.plain", "a INT", if_not_exists=True)
    spark.sql("DROP TABLE cat.plain")


def test_only_statements_naming_a_tablet_table_are_parsed_for_routing(spark, db):
    catalog.create_table(spark, "cat.ledger", "id BIGINT")
    catalog.create_table(spark, "cat.t", "id BIGINT")  # a one-letter name matches only as a word
    may = catalog.may_name_a_tablet_table
    assert may(spark, "INSERT INTO cat.LEDGER VALUES (1)")
    assert may(spark, "create table cat.x (id int) using TABLETS")
    assert not may(spark, "create or replace temporary view v as select 1 as id")
    # (a name no other test gives a tablet table: the registry is the whole warehouse's)
    assert not may(spark, "insert into cat.plain_seed_batch values " + ", ".join(f"({i})" for i in range(1000)))
    assert may(spark, "update `t` set id = 2")
    catalog.drop_table(spark, "cat.ledger")
    catalog.drop_table(spark, "cat.t")
    assert not may(spark, "INSERT INTO cat.ledger VALUES (1)")  # gone from the registry


def test_struct_field_names_that_need_quoting(spark, db):
    """Spark names struct types without quoting their fields (``struct<q r:string>``): the store
    backquotes a field name that is not a plain identifier, so CREATE, CTAS, MERGE, reads and
    the Delta log keep the name whole."""
    front = tablets.connect(spark=spark)
    odd = "STRUCT<p: INT, `q r`: STRING, `a:b`: ARRAY<STRUCT<`x,y`: INT, `t``ick`: INT>>>"
    front.sql(f"CREATE TABLE cat.odd (id INT, st {odd}) USING tablets")
    value = "named_struct('p', {0}, 'q r', '{1}', 'a:b', array(named_struct('x,y', {0}, 't`ick', 0)))"
    front.sql(f"INSERT INTO cat.odd SELECT 1, {value.format(1, 'x')}")
    front.sql(
        f"MERGE INTO cat.odd t USING (SELECT 1 AS id, {value.format(2, 'y')} AS st UNION ALL "
        f"SELECT 2, {value.format(3, 'z')}) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    got = spark.sql("SELECT id, st.p, st.`q r`, st.`a:b`[0].`x,y`, st.`a:b`[0].`t``ick` FROM cat.odd ORDER BY id")
    assert [tuple(r) for r in got.collect()] == [(1, 2, "y", 2, 0), (2, 3, "z", 3, 0)]
    t = catalog.storage(spark).table(catalog.require(spark, "cat.odd"))
    assert (
        t.snapshot().metadata.schema[1][1] == "struct<p:int,`q r`:string,`a:b`:array<struct<`x,y`:int,`t``ick`:int>>>"
    )
    st = DeltaTable(t.root).schema().fields[1].type
    assert [f.name for f in st.fields] == ["p", "q r", "a:b"]
    assert [f.name for f in st.fields[2].type.element_type.fields] == ["x,y", "t`ick"]

    front.sql("CREATE TABLE cat.odd2 USING tablets AS SELECT 7 AS id, named_struct('q r', 1) AS st")
    assert [tuple(r) for r in spark.sql("SELECT st.`q r` FROM cat.odd2").collect()] == [(1,)]
