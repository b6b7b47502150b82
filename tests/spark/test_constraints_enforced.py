"""NOT NULL and CHECK constraints hold on every write path, in the same commit: a statement whose
rows break one writes nothing (the version and the rows are as before, no staged file is left
referenced) and its error names the table, the constraint, its expression and one offending
row. Both MERGE plans (the driver's Arrow plan and Spark's) give the same answer, with SQL's
three-valued logic: a CHECK that is NULL passes, NOT NULL fails on NULL."""

import json
import os

import pytest
from support.conf import settings
from support.delta_check import delta_read
from tablets.exceptions import ConstraintViolation, MergeSpecError, SchemaMismatch, StatementParseError, TabletsError

pytestmark = pytest.mark.spark

SPARK_PLAN = {"spark.tablets.merge.driverScanBytes": "0"}
ARROW_OFF = {"spark.tablets.merge.arrowEval": "false"}


DATABASE = "cons"  # created by the conftest's db fixture


@pytest.fixture(params=["driver", "spark"])
def plan(request, spark):
    """Each MERGE test runs with the driver plan (the default for small tables) and Spark's."""
    with settings(spark, SPARK_PLAN if request.param == "spark" else {}):
        yield request.param


def rows(db, sql):
    return sorted(tuple(r) for r in db.sql(sql).collect())


def make(db, name="cons.t", key=None, values="(1, 10, 'a'), (2, 20, 'b')"):
    db.sql(f"DROP TABLE IF EXISTS {name}")
    props = f" TBLPROPERTIES ('key_columns' = '{key}')" if key else ""
    db.sql(
        f"CREATE TABLE {name} (id INT NOT NULL, v INT, s STRING, CONSTRAINT positive CHECK (v > 0)) USING tablets{props}"
    )
    if values:
        db.sql(f"INSERT INTO {name} VALUES {values}")
    return db.table_of(name)


def refused(db, stmt, *words, name="cons.t", error=ConstraintViolation):
    """``stmt`` raises ``error`` naming ``words``; the table is exactly as before and no file
    the statement staged is left behind."""
    table = db.table_of(name)
    before_version, before = table.snapshot().version, rows(db, f"SELECT * FROM {name}")
    files = _files(table.root)
    with pytest.raises(error) as info:
        db.sql(stmt)
    text = str(info.value)
    for w in (name if error is ConstraintViolation else "", *words):
        assert w in text, text
    assert "__tablets" not in text and "Traceback" not in text
    assert table.snapshot().version == before_version
    assert rows(db, f"SELECT * FROM {name}") == before
    assert _files(table.root) == files  # (the refused statement's tablets were discarded)
    return text


def _files(root):
    return sorted(
        os.path.relpath(os.path.join(d, f), root)
        for d, _, fs in os.walk(root)
        for f in fs
        if f.endswith(".parquet") and "_log" not in d and "_delta_log" not in d
    )


# --- INSERT, CTAS, CREATE OR REPLACE ------------------------------------------------------------


def test_insert_values_breaking_a_check_writes_nothing(db):
    make(db)
    text = refused(db, "INSERT INTO cons.t VALUES (3, 30, 'c'), (4, -1, 'd')", "positive", "v > 0", "v=-1", "id=4")
    assert "Help:" in text and "1 row(s)" in text


def test_insert_null_into_not_null_column_writes_nothing(db):
    make(db)
    refused(db, "INSERT INTO cons.t VALUES (NULL, 5, 'x')", "column id is NOT NULL", "id=None")


def test_check_that_is_null_passes(db):
    make(db)
    db.sql("INSERT INTO cons.t VALUES (3, NULL, 'n')")  # NULL > 0 is NULL: not false, so it holds
    assert rows(db, "SELECT id FROM cons.t WHERE v IS NULL") == [(3,)]


def test_insert_select_and_overwrite(db):
    make(db)
    refused(db, "INSERT INTO cons.t SELECT id + 10, v - 15, s FROM cons.t", "positive", "v=-5")
    refused(db, "INSERT OVERWRITE cons.t SELECT id, -v, s FROM cons.t", "positive")
    db.sql("INSERT INTO cons.t SELECT id + 10, v + 1, s FROM cons.t")
    assert len(rows(db, "SELECT * FROM cons.t")) == 4


def test_ctas_breaking_its_own_constraint_creates_nothing(db):
    db.sql("DROP TABLE IF EXISTS cons.c")
    with pytest.raises(ConstraintViolation, match="positive"):
        db.sql(
            "CREATE TABLE cons.c (id INT NOT NULL, v INT, CONSTRAINT positive CHECK (v > 0)) USING tablets "
            "AS SELECT 1 AS id, -1 AS v"
        )
    # as Spark's CTAS: the table it created is dropped again (name and files), so a retry can create it
    assert db.root_of("cons.c") is None
    assert not db.spark.catalog.tableExists("cons.c")
    db.sql("CREATE TABLE cons.c USING tablets AS SELECT 1 AS id, 1 AS v")
    assert rows(db, "SELECT * FROM cons.c") == [(1, 1)]


def test_create_or_replace_that_breaks_keeps_the_old_table(db):
    make(db)
    refused(
        db,
        "CREATE OR REPLACE TABLE cons.t (id INT NOT NULL, v INT, s STRING, CONSTRAINT positive CHECK (v > 0)) "
        "USING tablets AS SELECT 7 AS id, 0 AS v, 'z' AS s",
        "positive",
        "v=0",
    )
    db.sql(
        "CREATE OR REPLACE TABLE cons.t (id INT NOT NULL, v INT, s STRING, CONSTRAINT big CHECK (v > 5)) "
        "USING tablets AS SELECT 7 AS id, 6 AS v, 'z' AS s"
    )
    props = dict(db.table_of("cons.t").snapshot().metadata.properties)
    assert props == {"delta.constraints.big": "v > 5"} or "delta.constraints.positive" not in props
    refused(db, "INSERT INTO cons.t VALUES (8, 5, 'q')", "big", "v > 5")


def test_keyed_append_is_checked(db):
    make(db, key="id")
    refused(db, "INSERT INTO cons.t VALUES (5, -5, 'k')", "positive")


# --- MERGE, UPDATE, ON CONFLICT: both plans -------------------------------------------------------


def test_merge_insert_and_update_are_checked(db, plan):
    make(db)
    src = "(SELECT * FROM VALUES (2, -20, 'B'), (9, 90, 'z') AS s(id, v, s))"
    refused(
        db,
        f"MERGE INTO cons.t t USING {src} s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
        "positive",
        "v=-20",
    )
    src = "(SELECT * FROM VALUES (2, 25, 'B'), (9, -9, 'z') AS s(id, v, s))"
    refused(
        db,
        f"MERGE INTO cons.t t USING {src} s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
        "positive",
        "id=9",
    )
    src = "(SELECT * FROM VALUES (2, 25, 'B'), (9, 9, 'z') AS s(id, v, s))"
    res = db.sql(
        f"MERGE INTO cons.t t USING {src} s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    assert res.metrics.merged_on_driver is (plan == "driver")  # each plan checked the rows itself
    assert rows(db, "SELECT id, v FROM cons.t") == [(1, 10), (2, 25), (9, 9)]


def test_merge_not_null_and_three_valued_logic(db, plan):
    make(db)
    src = "(SELECT * FROM VALUES (5, CAST(NULL AS INT), 'n') AS s(id, v, s))"
    db.sql(f"MERGE INTO cons.t t USING {src} s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *")  # NULL passes
    src = "(SELECT * FROM VALUES (1, 1, 'x') AS s(id, v, s))"
    refused(db, f"MERGE INTO cons.t t USING {src} s ON t.id = s.id WHEN MATCHED THEN UPDATE SET id = NULL", "NOT NULL")


def test_merge_check_arrow_cannot_evaluate_steps_aside_to_spark(db, plan):
    make(db)
    db.sql("ALTER TABLE cons.t ADD CONSTRAINT short CHECK (length(s) < 3)")
    src = "(SELECT * FROM VALUES (7, 7, 'long') AS s(id, v, s))"
    refused(db, f"MERGE INTO cons.t t USING {src} s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *", "short")
    res = db.sql("MERGE INTO cons.t t USING (SELECT 7 AS id, 7 AS v, 'ok' AS s) s ON t.id = s.id "
                 "WHEN NOT MATCHED THEN INSERT *")  # fmt: skip
    assert not res.metrics.merged_on_driver  # Arrow has no length(): Spark's plan evaluated the CHECK


def test_update_and_on_conflict_are_checked(db, plan):
    make(db, key="id")
    refused(db, "UPDATE cons.t SET v = v - 15", "positive", "v=-5")
    refused(db, "INSERT INTO cons.t VALUES (1, -1, 'x') ON CONFLICT (id) DO UPDATE SET v = excluded.v", "positive")
    db.sql("UPDATE cons.t SET v = v + 1")
    assert rows(db, "SELECT v FROM cons.t") == [(11,), (21,)]


def test_both_plans_agree_with_arrow_off(db, spark):
    make(db)
    with settings(spark, ARROW_OFF):
        refused(db, "MERGE INTO cons.t t USING (SELECT 3 AS id, 0 AS v, 'q' AS s) s ON t.id = s.id "
                "WHEN NOT MATCHED THEN INSERT *", "positive")  # fmt: skip


# --- ALTER TABLE -----------------------------------------------------------------------------------


def test_add_constraint_checks_existing_rows_first(db):
    make(db)
    text = refused(db, "ALTER TABLE cons.t ADD CONSTRAINT small CHECK (v < 15)", "small", "v < 15", "v=20")
    assert "already holds" in text
    db.sql("ALTER TABLE cons.t ADD CONSTRAINT small CHECK (v < 25)")
    refused(db, "INSERT INTO cons.t VALUES (3, 30, 'c')", "small")
    refused(db, "ALTER TABLE cons.t ADD CONSTRAINT small CHECK (v < 99)", "already has", error=SchemaMismatch)
    db.sql("ALTER TABLE cons.t DROP CONSTRAINT small")
    db.sql("ALTER TABLE cons.t DROP CONSTRAINT IF EXISTS small")
    refused(db, "ALTER TABLE cons.t DROP CONSTRAINT small", "no constraint small", error=SchemaMismatch)
    db.sql("INSERT INTO cons.t VALUES (3, 30, 'c')")


def test_add_constraint_with_a_bad_expression(db):
    make(db)
    refused(db, "ALTER TABLE cons.t ADD CONSTRAINT bad CHECK (nope > 1)", "nope", error=MergeSpecError)


def test_set_and_drop_not_null(db):
    make(db, values="(1, 10, NULL)")
    refused(db, "ALTER TABLE cons.t ALTER COLUMN s SET NOT NULL", "column s is NOT NULL", "already holds")
    db.sql("UPDATE cons.t SET s = 'x'")
    db.sql("ALTER TABLE cons.t ALTER COLUMN s SET NOT NULL")
    refused(db, "INSERT INTO cons.t VALUES (2, 2, NULL)", "column s is NOT NULL")
    db.sql("ALTER TABLE cons.t ALTER COLUMN id DROP NOT NULL")
    db.sql("INSERT INTO cons.t VALUES (NULL, 2, 'y')")


def test_create_refuses_other_table_constraints(db):
    with pytest.raises(StatementParseError, match="PRIMARY KEY|not supported"):
        db.sql("CREATE TABLE cons.pk (id INT, PRIMARY KEY (id)) USING tablets")


# --- metadata: SHOW TBLPROPERTIES, DESCRIBE, the Delta log -------------------------------------


def test_constraints_are_published_to_the_delta_log(db):
    table = make(db)
    db.sql("ALTER TABLE cons.t ADD CONSTRAINT small CHECK (v < 100)")
    props = {r[0]: r[1] for r in db.sql("SHOW TBLPROPERTIES cons.t").collect()}
    assert props["delta.constraints.positive"] == "v > 0" and props["delta.constraints.small"] == "v < 100"
    log = os.path.join(table.root, "_delta_log")
    last = sorted(f for f in os.listdir(log) if f.endswith(".json"))[-1]
    with open(os.path.join(log, last)) as f:
        lines = [json.loads(x) for x in f]
    proto = next(x["protocol"] for x in lines if "protocol" in x)
    meta = next(x["metaData"] for x in lines if "metaData" in x)
    assert "checkConstraints" in proto["writerFeatures"] and "checkConstraints" not in proto["readerFeatures"]
    assert meta["configuration"]["delta.constraints.small"] == "v < 100"
    fields = {f["name"]: f for f in json.loads(meta["schemaString"])["fields"]}
    assert fields["id"]["nullable"] is False and fields["v"]["nullable"] is True

    import deltalake

    dt = deltalake.DeltaTable(table.root)  # delta-rs opens it and sees the constraints
    assert dt.metadata().configuration["delta.constraints.small"] == "v < 100"
    assert "checkConstraints" in (dt.protocol().writer_features or [])
    assert dt.schema().to_arrow().field("id").nullable is False
    assert sorted(delta_read(table.root).column("id").to_pylist()) == [1, 2]


def test_describe_extended_shows_constraints(db):
    make(db)
    out = [tuple(r) for r in db.sql("DESCRIBE EXTENDED cons.t").collect()]
    text = "\n".join(" | ".join(str(x) for x in r) for r in out)
    assert "positive" in text and "CHECK (v > 0)" in text and "id IS NOT NULL" in text, text


def test_set_tblproperties_cannot_add_a_check(db):
    make(db)
    refused(
        db,
        "ALTER TABLE cons.t SET TBLPROPERTIES ('delta.constraints.x' = 'v < 0')",
        "ADD CONSTRAINT",
        error=TabletsError,
    )
    refused(
        db,
        "ALTER TABLE cons.t UNSET TBLPROPERTIES ('delta.constraints.positive')",
        "DROP CONSTRAINT",
        error=TabletsError,
    )


def test_merge_with_cluster_by_checks_its_insert_stream(db, plan):
    make(db)
    merge = (
        "MERGE INTO cons.t t USING (SELECT * FROM VALUES (2, 21, 'B'), (9, {v}, 'z') AS s(id, v, s)) s "
        "ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    table = db.table_of("cons.t")
    version = table.snapshot().version
    with pytest.raises(ConstraintViolation, match="positive"):
        db.sql(merge.format(v=-9), options={"cluster_by": ("id",)})
    assert table.snapshot().version == version
    db.sql(merge.format(v=9), options={"cluster_by": ("id",)})  # the two streams, apart
    assert rows(db, "SELECT id, v FROM cons.t") == [(1, 10), (2, 21), (9, 9)]
