"""MERGE WITH SCHEMA EVOLUTION (issue #30, item 3), on both plans (the driver's Arrow merge and
Spark's, forced with ``driverScanBytes=0``): source columns the target lacks are added in the
statement's own commit (older tablets read NULL), ``*`` and named SET / INSERT lists cover them,
types widen where Delta's typeWidening allows (older tablets read cast, on every reader), the
Delta log says so (``typeWidening``, ``delta.typeChanges``) and delta-rs reads the same rows; a
failed MERGE leaves neither rows nor schema change."""

import json
from decimal import Decimal

import pytest
import tablets
from deltalake.exceptions import DeltaError
from support.delta_check import assert_delta_agrees, delta_read
from tablets.engine.route import DRIVER_SCAN_CONF
from tablets.exceptions import CardinalityViolation, MergeSpecError
from tablets.spark.read_frames import READ_NATIVE_CONF
from tablets.storage.delta_log import delta_dir, delta_name

pytestmark = pytest.mark.spark


DATABASE = "evo"  # created by the conftest's db fixture


@pytest.fixture(params=["driver", "spark"])
def plan(request, spark):
    """Which plan merges: the driver's (default in local mode) or Spark's."""
    if request.param == "spark":
        spark.conf.set(DRIVER_SCAN_CONF, "0")
    yield request.param
    spark.conf.unset(DRIVER_SCAN_CONF)


@pytest.fixture
def table(db):
    """``evo.t``: (1, 10, 'a'), (2, 20, 'b') in one tablet, (3, 30, 'c') in another."""
    db.sql("DROP TABLE IF EXISTS evo.t")
    db.sql("CREATE TABLE evo.t (id BIGINT, c INT, v STRING) USING tablets TBLPROPERTIES ('key_columns' = 'id')")
    db.sql("INSERT INTO evo.t VALUES (1, 10, 'a'), (2, 20, 'b')")
    db.sql("INSERT INTO evo.t VALUES (3, 30, 'c')")
    return "evo.t"


def rows(db, sql):
    return sorted(tuple(r) for r in db.sql(sql).collect())


def every_reader(db, spark, sql):
    """The rows of ``sql`` through the front door, plain Spark SQL and the Python data source."""
    front = rows(db, sql)
    plain = sorted(tuple(r) for r in spark.sql(sql).collect())
    spark.conf.set(READ_NATIVE_CONF, "false")
    try:
        python_source = rows(db, sql)
    finally:
        spark.conf.unset(READ_NATIVE_CONF)
    assert front == plain == python_source, (front, plain, python_source)
    return front


def merge(db, text, plan):
    result = db.sql(text)
    assert result.metrics.merged_on_driver is (plan == "driver")
    return result


def delta_rs_stops_at(db, name, widened):
    """delta-rs (1.6) reads every version before the widening ``widened`` as tablets do, and
    refuses the widened ones by their ``typeWidening`` feature, which it does not support: a
    clear refusal, never a wrong answer."""
    assert_delta_agrees(db, name, versions=range(widened))
    with pytest.raises(DeltaError, match="TypeWidening"):
        delta_read(db.table_of(name).root, widened)


def columns(db, name):
    return [(n, t) for n, t, _ in db.table_of(name).snapshot().metadata.schema]


def test_star_adds_the_new_column_in_the_merges_commit(db, spark, table, plan):
    before = db.table_of(table).version
    merge(
        db,
        "MERGE WITH SCHEMA EVOLUTION INTO evo.t t USING (SELECT * FROM VALUES (2, 21, 'B', 2.5), (4, 40, 'd', 4.5) "
        "AS s(id, c, v, w)) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
        plan,
    )
    t = db.table_of(table)
    assert t.version == before + 1  # one commit: the schema change and the rows
    assert columns(db, table) == [("id", "bigint"), ("c", "int"), ("v", "string"), ("w", "decimal(2,1)")]
    assert [e.commit.operation for e in t.history()[-1:]] == ["MERGE"]
    got = every_reader(db, spark, "SELECT id, c, v, w FROM evo.t")
    assert got == [(1, 10, "a", None), (2, 21, "B", Decimal("2.5")), (3, 30, "c", None), (4, 40, "d", Decimal("4.5"))]
    assert "w" in [r.col_name for r in spark.sql("DESCRIBE TABLE evo.t").collect()]  # the catalog follows
    assert_delta_agrees(db, table)


def test_without_evolution_the_extra_source_column_is_not_written(db, spark, table, plan):
    merge(
        db,
        "MERGE INTO evo.t t USING (SELECT 2 AS id, 21 AS c, 'B' AS v, 2.5 AS w) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
        plan,
    )
    assert columns(db, table) == [("id", "bigint"), ("c", "int"), ("v", "string")]
    assert rows(db, "SELECT * FROM evo.t") == [(1, 10, "a"), (2, 21, "B"), (3, 30, "c")]


def test_named_lists_may_name_new_source_columns_and_case_follows_spark(db, spark, table, plan):
    merge(
        db,
        "MERGE WITH SCHEMA EVOLUTION INTO evo.t t USING (SELECT 1 AS ID, 'A' AS V, 'n1' AS Note, 7 AS unused "
        "UNION ALL SELECT 5, 'e', 'n5', 8) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET t.v = s.v, t.note = s.note "
        "WHEN NOT MATCHED THEN INSERT (id, v, note) VALUES (s.id, s.v, s.note)",
        plan,
    )
    # ID and V are the table's id and v; Note is new and keeps the source's spelling; unused is named by no clause
    assert columns(db, table) == [("id", "bigint"), ("c", "int"), ("v", "string"), ("Note", "string")]
    assert every_reader(db, spark, "SELECT * FROM evo.t") == [
        (1, 10, "A", "n1"),
        (2, 20, "b", None),
        (3, 30, "c", None),
        (5, None, "e", "n5"),
    ]


def test_a_nested_new_column_is_added_whole(db, spark, table, plan):
    # (nested source columns make the driver hand the statement to Spark on either setting)
    db.sql(
        "MERGE WITH SCHEMA EVOLUTION INTO evo.t t USING (SELECT 3 AS id, named_struct('x', 1, 'y', 'q') AS st, "
        "array(1, 2) AS arr) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET *"
    )
    assert columns(db, table)[3:] == [("st", "struct<x:int,y:string>"), ("arr", "array<int>")]
    got = rows(db, "SELECT id, st.y, arr FROM evo.t")
    assert got == [(1, None, None), (2, None, None), (3, "q", [1, 2])]


def test_int_widens_to_bigint_and_older_tablets_read_cast(db, spark, table, plan):
    merge(
        db,
        "MERGE WITH SCHEMA EVOLUTION INTO evo.t t USING (SELECT 2 AS id, 5000000000 AS c) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET *",
        plan,
    )
    t = db.table_of(table)
    meta = t.snapshot().metadata
    assert columns(db, table)[1] == ("c", "bigint")
    assert meta.type_changes == ((meta.physical_names[1], "int", "bigint"),)
    assert every_reader(db, spark, "SELECT id, c, v FROM evo.t") == [(1, 10, "a"), (2, 5000000000, "b"), (3, 30, "c")]
    assert every_reader(db, spark, "SELECT sum(c) FROM evo.t WHERE c > 15") == [(5000000030,)]
    # a later MERGE (either plan) reads the older tablets' INT32 values as BIGINT: an unchanged row stays
    same = merge(
        db,
        "MERGE INTO evo.t t USING (SELECT 1 AS id, 10 AS c, 'a' AS v) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET *",
        plan,
    )
    assert same.metrics.version is None and same.metrics.rows_updated == 0
    merge(db, "MERGE INTO evo.t t USING (SELECT 3 AS id) s ON t.id = s.id WHEN MATCHED THEN DELETE", plan)
    assert rows(db, "SELECT id, c FROM evo.t") == [(1, 10), (2, 5000000000)]
    # Delta: the typeWidening feature, and the column's history in its field metadata
    v = t.version - 1
    text = t.io.read(f"{delta_dir(t.root)}/{delta_name(v)}").decode()
    actions = [json.loads(line) for line in text.splitlines()]
    protocol = next(a["protocol"] for a in actions if "protocol" in a)
    assert "typeWidening" in protocol["readerFeatures"] and "typeWidening" in protocol["writerFeatures"]
    md = next(a["metaData"] for a in actions if "metaData" in a)
    assert md["configuration"]["delta.enableTypeWidening"] == "true"
    field = next(f for f in json.loads(md["schemaString"])["fields"] if f["name"] == "c")
    assert field["type"] == "long"
    assert field["metadata"]["delta.typeChanges"] == [{"fromType": "integer", "toType": "long"}]
    delta_rs_stops_at(db, table, v)


def test_float_and_decimal_widen(db, spark, plan):
    db.sql("DROP TABLE IF EXISTS evo.w")
    db.sql("CREATE TABLE evo.w (id INT, f FLOAT, d DECIMAL(5,2), s SMALLINT) USING tablets")
    db.sql("INSERT INTO evo.w VALUES (1, 1.5, 123.45, 7), (3, 3.5, 3.25, 9)")
    merge(
        db,
        "MERGE WITH SCHEMA EVOLUTION INTO evo.w t USING (SELECT * FROM VALUES "
        "(1, CAST(2.5 AS DOUBLE), CAST(1.5 AS DECIMAL(11,4)), 8), "
        "(2, CAST(0.1 AS DOUBLE), CAST(1234567.8912 AS DECIMAL(11,4)), 100000) AS v(id, f, d, s)) s "
        "ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
        plan,
    )
    assert columns(db, "evo.w") == [("id", "int"), ("f", "double"), ("d", "decimal(11,4)"), ("s", "int")]
    assert every_reader(db, spark, "SELECT * FROM evo.w") == [
        (1, 2.5, Decimal("1.5000"), 8),
        (2, 0.1, Decimal("1234567.8912"), 100000),
        (3, 3.5, Decimal("3.2500"), 9),  # the older tablet's FLOAT, DECIMAL(5,2) and SMALLINT, read cast
    ]
    delta_rs_stops_at(db, "evo.w", db.table_of("evo.w").version)


def test_a_narrower_source_type_is_cast_into_the_column(db, table, plan):
    merge(
        db,
        "MERGE WITH SCHEMA EVOLUTION INTO evo.t t USING (SELECT CAST(1 AS INT) AS id, CAST(5 AS TINYINT) AS c) s "
        "ON t.id = s.id WHEN MATCHED THEN UPDATE SET *",
        plan,
    )
    assert columns(db, table) == [("id", "bigint"), ("c", "int"), ("v", "string")]
    assert rows(db, "SELECT id, c FROM evo.t WHERE id = 1") == [(1, 5)]


def test_a_type_change_that_is_no_widening_is_refused_naming_both_types(db, table, plan):
    before = db.table_of(table).version
    with pytest.raises(MergeSpecError) as e:
        db.sql(
            "MERGE WITH SCHEMA EVOLUTION INTO evo.t t USING (SELECT 1 AS id, 'ten' AS c, 1 AS extra) s "
            "ON t.id = s.id WHEN MATCHED THEN UPDATE SET *"
        )
    text = str(e.value)
    assert "column c" in text and "int" in text and "string" in text and "CAST(s.c AS int)" in e.value.help
    assert db.table_of(table).version == before
    assert columns(db, table) == [("id", "bigint"), ("c", "int"), ("v", "string")]


def test_a_failed_merge_leaves_neither_rows_nor_new_columns(db, table, plan):
    before = db.table_of(table).version
    with pytest.raises(CardinalityViolation):
        db.sql(
            "MERGE WITH SCHEMA EVOLUTION INTO evo.t t USING (SELECT 1 AS id, 'x' AS n UNION ALL SELECT 1, 'y') s "
            "ON t.id = s.id WHEN MATCHED THEN UPDATE SET *"
        )
    assert db.table_of(table).version == before
    assert columns(db, table) == [("id", "bigint"), ("c", "int"), ("v", "string")]
    assert rows(db, "SELECT * FROM evo.t") == [(1, 10, "a"), (2, 20, "b"), (3, 30, "c")]


def test_an_empty_source_still_evolves_the_schema(db, table, plan):
    db.sql(
        "MERGE WITH SCHEMA EVOLUTION INTO evo.t t USING (SELECT 1 AS id, 'x' AS n WHERE false) s "
        "ON t.id = s.id WHEN NOT MATCHED THEN INSERT *"
    )
    assert columns(db, table)[-1] == ("n", "string")
    assert rows(db, "SELECT * FROM evo.t") == [(1, 10, "a", None), (2, 20, "b", None), (3, 30, "c", None)]


def test_the_builder_and_explain_evolve_too(db, spark, table):
    source = spark.sql("SELECT 4 AS id, 40 AS c, 'd' AS v, 'new' AS tag")
    text = (
        "MERGE WITH SCHEMA EVOLUTION INTO evo.t t USING (SELECT 4 AS id, 'new' AS tag) s ON t.id = s.id "
        "WHEN NOT MATCHED THEN INSERT (id, tag) VALUES (s.id, s.tag)"
    )
    assert "tag" in db.sql(f"EXPLAIN {text}")  # planned on the schema the MERGE makes
    metrics = (
        tablets.table(db, table)
        .merge(source, on="t.id = s.id")
        .with_schema_evolution()
        .when_not_matched_insert()
        .execute()
    )
    assert metrics.rows_inserted == 1
    assert columns(db, table)[-1] == ("tag", "string")
    assert rows(db, "SELECT id, tag FROM evo.t") == [(1, None), (2, None), (3, None), (4, "new")]
