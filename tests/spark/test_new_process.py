"""A tablet table outlives its process: a new process (new SparkSession, same warehouse and
metastore) sees it in the catalog and reads it through plain SQL.

Embedded Derby admits one process per metastore, and stopping a SparkSession does not release
it (Derby stays booted in the JVM; the process holds the warehouse's metastore lock until it
ends), so this scenario uses its own warehouse and runs both halves in subprocesses; the shared
test session is never involved.
"""

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.spark

WRITER = """
from tablets.spark.session import build_session
from tablets.spark import catalog
from tablets.storage import RowLevelSink
import pyarrow as pa
spark = build_session({wh!r}, master="local[1]", shuffle_partitions=1)
spark.sql("CREATE DATABASE IF NOT EXISTS np")
t = catalog.create_table(spark, "np.t", "id BIGINT, v STRING")
t.append(pa.table({{"id": [1, 2, 3], "v": ["a", "b", "c"]}}))
h = t.begin_delete()
sink = RowLevelSink(h)
sink.delete([next(iter(t.snapshot().tablets))], [1])
t.finish(h, sink.finish())
spark.stop()
"""

READER = """
from tablets.spark.session import build_session
from tablets.spark import catalog
spark = build_session({wh!r}, master="local[1]", shuffle_partitions=1)
print("TABLES", sorted(r.tableName for r in spark.sql("SHOW TABLES IN np").collect()))
print("ROWS", sorted(tuple(r) for r in spark.sql("SELECT * FROM np.t").collect()))
print("COUNT", spark.sql("SELECT count(*) FROM np.t").collect()[0][0])
print("LOOKUP", catalog.lookup(spark, "np.t") is not None)
spark.stop()
"""


def run(script, cwd):
    env = dict(os.environ)
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc.stdout


def test_table_survives_the_process(tmp_path):
    wh = str(tmp_path / "project" / "warehouse")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    run(WRITER.format(wh=wh), cwd)
    out = run(READER.format(wh=wh), cwd)
    assert "TABLES ['t']" in out
    assert "ROWS [(1, 'a'), (3, 'c')]" in out
    assert "COUNT 2" in out and "LOOKUP True" in out
    assert os.listdir(cwd) == []  # no metastore_db, derby.log or spark-warehouse in the cwd
    assert os.listdir(tmp_path / "project") == ["warehouse"]  # the metastore is inside it
    meta = tmp_path / "project" / "warehouse" / "_metastore"
    assert sorted(os.listdir(meta)) == ["derby.log", "metastore.lock", "metastore_db"]


LOST_REGISTRY = """
import os
import shutil
import tablets
from tablets.spark import catalog
from tablets.spark.session import build_session
# as if the registry had been deleted, the metastore kept
shutil.rmtree(os.path.join({wh!r}, catalog.REGISTRY_DIR))
spark = build_session({wh!r}, master="local[1]", shuffle_partitions=1)
db = tablets.connect(spark=spark)
try:
    db.sql("SELECT * FROM np.t")
except tablets.TabletsError as e:
    print("ERROR", type(e).__name__, str(e).replace(chr(10), " "))
spark.stop()
"""


def test_a_lost_registry_is_a_clear_error(tmp_path):
    wh = str(tmp_path / "project" / "warehouse")
    run(WRITER.format(wh=wh), tmp_path)
    out = run(LOST_REGISTRY.format(wh=wh), tmp_path)
    assert "ERROR TableNotFound a catalog table is a tablet table (provider tablets_" in out, out
    assert "delete the warehouse (its embedded metastore is inside it, in _metastore/)" in out


COPY = """
import tablets
from tablets.spark.session import build_session
try:
    spark = build_session({wh!r}, master="local[1]", shuffle_partitions=1)
    tablets.connect(spark=spark).sql("DROP TABLE np.t")
    print("DROPPED")
except tablets.TabletsError as e:
    print("ERROR", type(e).__name__, str(e).replace(chr(10), " "))
"""


def test_a_copied_warehouse_refuses_and_leaves_the_original_alone(tmp_path):
    """``cp -r`` of a project (its warehouse inside): the copy's registry and metastore name the
    original's tables; the copy refuses by name, and the original keeps every file and row."""
    import shutil

    wh = str(tmp_path / "project" / "warehouse")
    run(WRITER.format(wh=wh), tmp_path)  # (the registry gets its marker with its first entry)
    before = sorted(str(p.relative_to(wh)) for p in (tmp_path / "project" / "warehouse").rglob("*") if p.is_file())
    shutil.copytree(tmp_path / "project", tmp_path / "copy")
    out = run(COPY.format(wh=str(tmp_path / "copy" / "warehouse")), tmp_path)
    assert f"ERROR WarehouseCopied the warehouse at {tmp_path / 'copy' / 'warehouse'} is a copy of" in out, out
    assert f"delete {tmp_path / 'copy' / 'warehouse'}" in out
    after = sorted(str(p.relative_to(wh)) for p in (tmp_path / "project" / "warehouse").rglob("*") if p.is_file())
    assert [p for p in after if "_metastore" not in p] == [p for p in before if "_metastore" not in p]
    assert "ROWS [(1, 'a'), (3, 'c')]" in run(READER.format(wh=wh), tmp_path)


def test_a_warehouse_copied_before_it_had_a_marker_refuses_too(tmp_path):
    """A warehouse that older code wrote has no marker; a copy of it is told by its entries, which
    name managed tables in the original's layout, and refuses before anything is written."""
    import shutil

    wh = tmp_path / "project" / "warehouse"
    run(WRITER.format(wh=str(wh)), tmp_path)
    (wh / "_tablets_registry" / "_warehouse.json").unlink()  # as older code left it
    shutil.copytree(tmp_path / "project", tmp_path / "copy")
    out = run(COPY.format(wh=str(tmp_path / "copy" / "warehouse")), tmp_path)
    assert f"is a copy of (or was moved from) {wh}:" in out, out
    assert not (tmp_path / "copy" / "warehouse" / "_tablets_registry" / "_warehouse.json").exists()
    assert "ROWS [(1, 'a'), (3, 'c')]" in run(READER.format(wh=str(wh)), tmp_path)
    assert (wh / "_tablets_registry" / "_warehouse.json").exists()  # the original, read, gets its marker
