"""Tablet tables in an object store, through the SQL front door and Spark SQL: a warehouse in a
bucket of a real S3-compatible server (``moto_server`` on 127.0.0.1), reached with the standard
``AWS_*`` environment variables. Spark here has no S3 connector (PySpark ships no hadoop-aws),
so the engine and the catalog read tablets with the tablets Arrow reader in Python tasks.

``tablets.connect(warehouse="s3://...")`` starts its own embedded session, so the scenario runs
in a subprocess (the shared test session keeps its local warehouse).
"""

import os
import subprocess
import sys
import textwrap

import pyarrow as pa
import pytest
from support.delta_check import assert_delta_agrees
from tablets.engine.executor import MergeOptions, execute
from tablets.exceptions import CommitConflict
from tablets.sql import parse_statement
from tablets.storage import TabletTable

pytestmark = pytest.mark.spark

SCRIPT = """
import tablets
db = tablets.connect(warehouse={wh!r}, master="local[2]")
db.sql("CREATE TABLE t (id BIGINT, v STRING) USING tablets TBLPROPERTIES ('key_columns' = 'id')")
db.sql("INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
for stmt in [
    "MERGE INTO t USING (SELECT 2 AS id, 'B' AS v UNION ALL SELECT 4, 'd') s ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *",
    "UPDATE t SET v = 'z' WHERE id = 1",
    "DELETE FROM t WHERE id = 3",
    "INSERT INTO t VALUES (5, 'e') ON CONFLICT (id) DO NOTHING",
    "CREATE TABLE u USING tablets AS SELECT id, v FROM t WHERE id > 1",
]:
    print("RESULT", db.sql(stmt).message)
print("ROWS", sorted(tuple(r) for r in db.sql("SELECT * FROM t").collect()))
print("JOIN", db.sql("SELECT count(*) FROM t JOIN u USING (id)").collect()[0][0])
print("TABLES", sorted(n for n, _ in tablets.spark.list_tables(db.spark, "default")))
db.spark.stop()
"""


def test_warehouse_in_a_bucket(s3_server, tmp_path):
    wh = s3_server.location("wh")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(SCRIPT.format(wh=wh))],
        cwd=cwd,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = proc.stdout
    assert "RESULT MERGE 2 (inserted 1, updated 1, deleted 0, unchanged 0)" in out
    assert "RESULT UPDATE 1" in out and "RESULT DELETE 1" in out and "RESULT INSERT 1" in out
    assert "ROWS [(1, 'z'), (2, 'B'), (4, 'd'), (5, 'e')]" in out
    assert "JOIN 3" in out and "TABLES ['default.t', 'default.u']" in out
    assert "read by the tablets Arrow reader" in proc.stderr  # said once, not per statement
    assert proc.stderr.count("read by the tablets Arrow reader") == 1
    keys = s3_server.keys("wh/")
    for table in ("t", "u"):
        assert f"wh/{table}/_delta_log/00000000000000000000.json" in keys
        assert any(k.startswith(f"wh/{table}/tablets/") for k in keys)
    assert any(k.startswith("wh/t/dv/") for k in keys)
    assert any(k.startswith("wh/_tablets_registry/") for k in keys)
    for table in ("t", "u"):  # each is a Delta table in the bucket too: delta-rs reads every version
        assert_delta_agrees(f"{wh}/{table}")
    # on local disk: Derby's metastore, derby.log, its lock and Spark's empty local warehouse, nothing else
    local = [
        os.path.relpath(os.path.join(d, f), cwd)
        for d, _, files in os.walk(cwd)
        for f in files
        if "metastore_db" not in d.split(os.sep)
    ]
    assert [p for p in local if not p.endswith(("derby.log", "metastore.lock"))] == [], local


SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def test_interleaved_merges_on_a_bucket_never_two_winners(spark, s3_server):
    """Two MERGEs that read the same version and update one tablet: the one that commits second
    finds the other's version (its conditional PUT lost). Updating the same row it raises a
    typed conflict and nothing of it is visible; updating another row it rebases its deletion
    vector onto the winner's and both changes are in the table."""
    table = TabletTable.create(s3_server.location(), SCHEMA, key_columns=["id"])
    table.append(pa.table({"id": list(range(10)), "v": ["x"] * 10}, schema=SCHEMA))
    read = table.snapshot()
    spec = parse_statement("MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v")

    def merge(key, value):
        return execute(
            spark,
            table,
            spec,
            spark.createDataFrame([(key, value)], "id BIGINT, v STRING"),
            MergeOptions(),
            snapshot=read,
        )

    merge(1, "first")
    with pytest.raises(CommitConflict):
        merge(1, "second")
    assert table.version == read.version + 1
    merge(2, "third")  # another row of the same tablet: a clean rebase
    assert table.version == read.version + 2
    got = dict(zip(*(c.to_pylist() for c in table.read().columns), strict=True))
    assert (got[1], got[2], got[3], len(got)) == ("first", "third", "x", 10)
    assert_delta_agrees(table)  # the rebased deletion vector too
