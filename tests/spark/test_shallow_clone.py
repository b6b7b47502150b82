"""SHALLOW CLONE through the front door: no file copied, each table lives its own life, and
VACUUM or DROP of either never deletes a file the other still reads."""

import os

import pytest
import tablets
from tablets.exceptions import TableAlreadyExists, TabletsError
from tablets.spark import catalog

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def db(spark):
    d = tablets.connect(spark=spark)
    d.sql("CREATE DATABASE IF NOT EXISTS cln")
    d.spark.conf.set("spark.tablets.retentionDurationCheck.enabled", "false")
    yield d
    d.spark.conf.unset("spark.tablets.retentionDurationCheck.enabled")  # the session is the next module's too


def rows(db, sql):
    return sorted(tuple(r) for r in db.sql(sql).collect())


def files(root):
    out = set()
    for sub in ("tablets", "dv"):
        d = os.path.join(root, sub)
        out |= {os.path.join(d, f) for f in os.listdir(d)} if os.path.isdir(d) else set()
    return out


def source(db, name):
    db.sql(f"DROP TABLE IF EXISTS {name}")
    db.sql(f"CREATE TABLE {name} (id INT, v STRING) USING tablets TBLPROPERTIES ('key_columns' = 'id')")
    db.sql(f"INSERT INTO {name} VALUES (1, 'a'), (2, 'b'), (3, 'c')")  # v1
    db.sql(f"DELETE FROM {name} WHERE id = 3")  # v2: a deletion vector


def test_clone_reads_the_source_and_then_lives_its_own_life(db):
    source(db, "cln.s")
    src_root = catalog.lookup(db.spark, "cln.s")
    before = files(src_root)
    out = db.sql("CREATE TABLE cln.c SHALLOW CLONE cln.s").collect()[0]
    assert out.source_num_of_files == 1 and out.num_copied_files == 0
    c_root = catalog.lookup(db.spark, "cln.c")
    assert files(c_root) == set() and files(src_root) == before  # nothing copied
    assert rows(db, "SELECT * FROM cln.c") == [(1, "a"), (2, "b")]
    assert [r.operation for r in db.sql("DESCRIBE HISTORY cln.c").collect()] == ["CLONE"]
    assert os.listdir(os.path.join(src_root, "_clones"))

    db.sql("UPDATE cln.c SET v = 'B' WHERE id = 2")  # a new DV for the source's tablet, in the clone's root
    db.sql("MERGE INTO cln.c t USING (SELECT 4 AS id, 'd' AS v) s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *")
    assert files(src_root) == before
    assert all(p.startswith(c_root) for p in files(c_root)) and files(c_root)
    assert rows(db, "SELECT * FROM cln.c") == [(1, "a"), (2, "B"), (4, "d")]
    assert rows(db, "SELECT * FROM cln.s") == [(1, "a"), (2, "b")]
    assert rows(db, "SELECT * FROM cln.c VERSION AS OF 0") == [(1, "a"), (2, "b")]
    # plain Spark SQL (the Python data source, or the analyzer rule's native scan)
    assert sorted(tuple(r) for r in db.spark.sql("SELECT * FROM cln.c").collect()) == [(1, "a"), (2, "B"), (4, "d")]
    assert sorted(tuple(r) for r in db.spark.read.format(catalog.provider_name(c_root)).load().collect()) == [
        (1, "a"),
        (2, "B"),
        (4, "d"),
    ]

    # the source rewrites everything and vacuums with no retention: the clone still reads
    db.sql("DELETE FROM cln.s")
    db.sql("INSERT INTO cln.s VALUES (9, 'z')")
    db.sql("VACUUM cln.s RETAIN 0 HOURS")
    assert rows(db, "SELECT * FROM cln.c") == [(1, "a"), (2, "B"), (4, "d")]
    db.sql("VACUUM cln.c RETAIN 0 HOURS")  # never deletes the source's files
    assert rows(db, "SELECT * FROM cln.s") == [(9, "z")]
    assert rows(db, "SELECT * FROM cln.c") == [(1, "a"), (2, "B"), (4, "d")]

    # DROP of the source keeps what the clone reads; DROP of the clone then takes the rest
    db.sql("DROP TABLE cln.s")
    assert rows(db, "SELECT * FROM cln.c") == [(1, "a"), (2, "B"), (4, "d")]
    assert not os.path.exists(os.path.join(src_root, "_delta_log"))  # no Delta reader opens the dropped table
    db.sql("DROP TABLE cln.c")
    assert not os.path.exists(src_root) and not os.path.exists(c_root)


def test_clone_of_a_version_replace_if_not_exists_and_location(db, tmp_path):
    source(db, "cln.s2")
    db.sql("DROP TABLE IF EXISTS cln.c2")
    db.sql("CREATE TABLE cln.c2 SHALLOW CLONE cln.s2 VERSION AS OF 1")
    assert rows(db, "SELECT * FROM cln.c2") == [(1, "a"), (2, "b"), (3, "c")]
    with pytest.raises(TableAlreadyExists, match="already exists"):
        db.sql("CREATE TABLE cln.c2 SHALLOW CLONE cln.s2")
    db.sql("CREATE TABLE IF NOT EXISTS cln.c2 SHALLOW CLONE cln.s2")
    assert rows(db, "SELECT count(*) FROM cln.c2") == [(3,)]
    db.sql("CREATE OR REPLACE TABLE cln.c2 SHALLOW CLONE cln.s2")
    assert rows(db, "SELECT * FROM cln.c2") == [(1, "a"), (2, "b")]
    # a clone of a clone, at a LOCATION (external: DROP keeps its files)
    loc = str(tmp_path / "ext")
    db.sql("DROP TABLE IF EXISTS cln.c3")
    db.sql(f"CREATE TABLE cln.c3 SHALLOW CLONE cln.c2 LOCATION '{loc}' TBLPROPERTIES ('owner' = 'me')")
    assert rows(db, "SELECT * FROM cln.c3") == [(1, "a"), (2, "b")]
    assert ("owner", "me") in [tuple(r) for r in db.sql("SHOW TBLPROPERTIES cln.c3").collect()]
    db.sql("DROP TABLE cln.c2")
    db.sql("VACUUM cln.s2 RETAIN 0 HOURS")
    assert rows(db, "SELECT * FROM cln.c3") == [(1, "a"), (2, "b")]
    with pytest.raises(TabletsError, match="DEEP CLONE of a tablet table is not supported"):
        db.sql("CREATE TABLE cln.d DEEP CLONE cln.s2")
    db.sql("DROP TABLE cln.c3")
    assert os.path.exists(os.path.join(loc, "_delta_log"))
