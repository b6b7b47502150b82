"""Open tables through the SQL front door (issue #29): every statement's version is a Delta
version that delta-rs reads with the rows ``VERSION AS OF`` gives, ``DESCRIBE HISTORY`` and
delta-rs ``history()`` list the same versions, and Delta tables written by delta-rs are adopted
(``CREATE TABLE ... USING tablets LOCATION``, ``tablets.`/path` ``), merged into, and read back
by delta-rs exactly."""

from collections import Counter

import pyarrow as pa
import pytest
from support.delta_check import assert_delta_agrees, delta_read
from support.differential import canon
from tablets.exceptions import FormatError
from tablets.statements import maintenance

deltalake = pytest.importorskip("deltalake")
pytestmark = pytest.mark.spark


DATABASE = "opendelta"  # created by the conftest's db fixture


def _sql_rows(db, table: str, version: int) -> Counter:
    return canon(db.sql(f"SELECT * FROM {table} VERSION AS OF {version}").toArrow())[1]


def assert_versions_agree(db, table: str, versions) -> None:
    """``SELECT ... VERSION AS OF v`` and delta-rs at version v: the same live rows."""
    root = db.table_of(table).root
    for v in versions:
        assert canon(delta_read(root, v))[1] == _sql_rows(db, table, v), f"version {v}"
    ours = [r.version for r in db.sql(f"DESCRIBE HISTORY {table}").collect()]
    theirs = [h["version"] for h in deltalake.DeltaTable(root).history()]
    assert ours == theirs


def test_every_statement_is_a_delta_version(db):
    t = "opendelta.stmts"
    db.sql(f"DROP TABLE IF EXISTS {t}")
    db.sql(f"CREATE TABLE {t} (id INT, v STRING) USING tablets TBLPROPERTIES ('key_columns' = 'id')")  # 0
    db.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')")  # 1
    db.sql(
        f"MERGE INTO {t} t USING (SELECT 2 AS id, 'B' AS v UNION ALL SELECT 5, 'e') s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *"
    )  # 2
    db.sql(f"UPDATE {t} SET v = 'z' WHERE id = 1")  # 3
    db.sql(f"DELETE FROM {t} WHERE id = 3")  # 4
    db.sql(f"INSERT INTO {t} VALUES (4, 'x'), (6, 'f') ON CONFLICT (id) DO NOTHING")  # 5
    db.sql(f"ALTER TABLE {t} ADD COLUMNS (w DOUBLE)")  # 6
    db.sql(
        f"MERGE INTO {t} t USING (SELECT 6 AS id, 'F' AS v, 1.5 AS w) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET *"
    )  # 7
    db.sql(f"OPTIMIZE {t}")  # 8
    db.sql(f"RESTORE TABLE {t} TO VERSION AS OF 5")  # 9
    n = db.table_of(t).version
    assert n == 9
    assert_versions_agree(db, t, range(n + 1))
    db.spark.conf.set(maintenance.RETENTION_CHECK_CONF, "false")
    try:
        assert db.sql(f"VACUUM {t} RETAIN 0 HOURS").collect()[0].numDeletedFiles > 0  # 10, 11
    finally:
        db.spark.conf.unset(maintenance.RETENTION_CHECK_CONF)
    newest = db.table_of(t).version
    assert_versions_agree(db, t, [9, newest])
    assert_delta_agrees(db, t, versions=[newest])


def _delta_rs_table(root: str) -> None:
    w = deltalake.write_deltalake
    w(root, pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": ["a", "b", "c"]}))
    w(root, pa.table({"id": pa.array([4, 5], pa.int64()), "v": ["d", "e"]}), mode="append")
    deltalake.DeltaTable(root).delete("id = 2")
    deltalake.DeltaTable(root).create_checkpoint()
    w(root, pa.table({"id": pa.array([6], pa.int64()), "v": ["f"]}), mode="append")


def test_adopt_a_delta_rs_table_and_merge_into_it(db, tmp_path):
    root = str(tmp_path / "from_delta_rs")
    _delta_rs_table(root)
    t = "opendelta.adopted"
    db.sql(f"DROP TABLE IF EXISTS {t}")
    db.sql(f"CREATE TABLE {t} USING tablets LOCATION '{root}' TBLPROPERTIES ('key_columns' = 'id')")
    assert_versions_agree(db, t, range(4))
    db.sql(
        f"MERGE INTO {t} t USING (SELECT 3 AS id, 'C' AS v UNION ALL SELECT 7, 'g') s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *"
    )
    db.sql(f"UPDATE {t} SET v = 'A' WHERE id = 1")
    db.sql(f"DELETE FROM {t} WHERE id = 5")
    db.sql(f"INSERT INTO {t} VALUES (7, 'x'), (8, 'h') ON CONFLICT (id) DO UPDATE SET v = excluded.v")
    db.sql(f"OPTIMIZE {t}")
    want = sorted(tuple(r) for r in db.sql(f"SELECT * FROM {t}").collect())
    assert want == [(1, "A"), (3, "C"), (4, "d"), (6, "f"), (7, "x"), (8, "h")]
    got = delta_read(root).sort_by("id")
    assert list(zip(got.column("id").to_pylist(), got.column("v").to_pylist(), strict=True)) == want
    assert_delta_agrees(db, t)
    db.spark.conf.set(maintenance.RETENTION_CHECK_CONF, "false")
    try:  # delta-rs's own files, no longer referenced, are vacuumed too
        assert db.sql(f"VACUUM {t} RETAIN 0 HOURS").collect()[0].numDeletedFiles > 0
    finally:
        db.spark.conf.unset(maintenance.RETENTION_CHECK_CONF)
    assert sorted(delta_read(root).column("id").to_pylist()) == [1, 3, 4, 6, 7, 8]


def test_adopt_by_path(db, tmp_path):
    root = str(tmp_path / "by_path")
    _delta_rs_table(root)
    db.sql(f"CREATE TABLE tablets.`{root}` USING tablets")
    db.sql(f"DELETE FROM tablets.`{root}` WHERE id = 4")
    assert sorted(delta_read(root).column("id").to_pylist()) == [1, 3, 5, 6]
    assert_delta_agrees(root)


def test_a_delta_table_with_a_feature_tablets_does_not_write_is_refused(db, tmp_path):
    root = str(tmp_path / "cdf")
    deltalake.write_deltalake(
        root, pa.table({"id": pa.array([1], pa.int64())}), configuration={"delta.enableChangeDataFeed": "true"}
    )
    with pytest.raises(FormatError, match="uses changeDataFeed"):
        db.sql(f"CREATE TABLE opendelta.cdf USING tablets LOCATION '{root}'")
    assert not db.spark.catalog.tableExists("opendelta.cdf")
