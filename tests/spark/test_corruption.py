"""Damaged tablets through Spark: a MERGE through the front door (the engine's native Parquet
scan and its Arrow reader), a Spark SQL read of a catalog table, and a MERGE on a table in a
bucket. Each is an error naming the file, never other rows, and a failed MERGE leaves the table
as it was (docs/FORMAT.md, "Verification"). Damaged checkpoints and hints: every read and MERGE
(both plans) gets the table the log replays to, or a FormatError naming the checkpoint when the
versions before it are gone (docs/FORMAT.md, "Checkpoints")."""

import shutil

import pyarrow as pa
import pytest
from support.conf import settings
from support.damage import (
    CASES,
    CHECKPOINT_CASES,
    CHECKPOINT_VERSION,
    HINT_CASES,
    add_old_tablet,
    checkpointed,
    damage,
    damage_checkpoint,
    replayed,
    restore,
    same_size_pair,
)
from tablets import reads
from tablets.engine.executor import MergeOptions, execute
from tablets.engine.route import DRIVER_SCAN_CONF
from tablets.exceptions import FormatError
from tablets.spark.frames import SCAN_CONF, snapshot_frame
from tablets.sql import parse_statement
from tablets.storage import TabletTable, log

pytestmark = pytest.mark.spark

MERGE = (
    "MERGE INTO corrupt.{name} t USING (SELECT id, 'new' AS v, 0.0D AS x FROM range(0, 3000, 7)) s ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *"
)


DATABASE = "corrupt"  # created by the conftest's db fixture


@pytest.fixture(params=["native", "arrow"])
def scan(request, spark):
    """The engine's scan of the target: Spark's Parquet reader, or the tablets Arrow reader."""
    before = spark.conf.get(SCAN_CONF, None)
    spark.conf.set(SCAN_CONF, request.param)
    yield request.param
    if before is None:
        spark.conf.unset(SCAN_CONF)
    else:
        spark.conf.set(SCAN_CONF, before)


def fresh(db, name: str) -> TabletTable:
    """A catalog table of two tablets of different sizes (2000 and 1000 rows), appended through
    the store (no Spark job)."""
    db.sql(f"DROP TABLE IF EXISTS corrupt.{name}")
    db.sql(f"CREATE TABLE corrupt.{name} (id BIGINT, v STRING, x DOUBLE) USING tablets")
    t = db.table_of(f"corrupt.{name}")
    for lo, hi in ((0, 2000), (2000, 3000)):
        ids = list(range(lo, hi))
        t.append(
            pa.table(
                {"id": ids, "v": [f"v{i % 97}" for i in ids], "x": [i * 0.5 for i in ids]}, schema=t.arrow_schema()
            )
        )
    return t


def rows(t: TabletTable) -> list[tuple]:
    return sorted(zip(*(c.to_pylist() for c in t.read().columns), strict=True))


def first_tablet(t: TabletTable) -> tuple[str, str]:
    a, b = t.snapshot().tablets.values()
    return t.tablet_path(a), t.tablet_path(b)


@pytest.mark.parametrize("case", CASES)
def test_merge_on_a_damaged_tablet_fails_and_changes_nothing(db, scan, case):
    name = f"m_{scan}_{case}"
    t = fresh(db, name)
    before, version, snap = rows(t), t.version, t.snapshot()
    path, other = first_tablet(t)
    good = damage(t, path, case, other)
    with pytest.raises(FormatError) as err:
        db.sql(MERGE.format(name=name))
    text = str(err.value)
    assert path in text.splitlines()[0], text
    assert "Help: Restore the file from a copy" in text and "Traceback" not in text and "\tat " not in text
    assert t.version == version and t.snapshot().tablets == snap.tablets
    restore(t, path, good)
    assert rows(t) == before


def test_swapped_tablet_of_the_same_size_through_the_arrow_reader(db, spark):
    """The footer's tablet id catches a swap the size cannot (the native scan does not read it:
    docs/FORMAT.md)."""
    name = "same_size"
    db.sql(f"DROP TABLE IF EXISTS corrupt.{name}")
    db.sql(f"CREATE TABLE corrupt.{name} (id BIGINT, v STRING, x DOUBLE) USING tablets")
    t = db.table_of(f"corrupt.{name}")
    a, b = same_size_pair(
        t, pa.table({"id": list(range(100)), "v": ["v"] * 100, "x": [0.5] * 100}, schema=t.arrow_schema())
    )
    path, other = t.tablet_path(a), t.tablet_path(b)
    damage(t, path, "swapped", other)
    spark.conf.set(SCAN_CONF, "arrow")
    try:
        with pytest.raises(FormatError, match="a swapped file") as err:
            db.sql(MERGE.format(name=name))
    finally:
        spark.conf.unset(SCAN_CONF)
    assert path in str(err.value)


@pytest.mark.parametrize("case", CASES)
def test_spark_sql_read_of_a_damaged_tablet(db, spark, case):
    """A query of a damaged tablet, through plain Spark SQL, ``db.sql`` and a DataFrame derived
    from either, fails with the FormatError naming the file and its Help line, wherever the job
    runs (``collect()``, ``count()``), never Spark's stack trace (tablets.spark.errors). A tablet
    the log does not describe (cut, grown, swapped for another size, missing) is read by the
    Python source, whose worker raises it; a flipped bit keeps the size: the native read fails
    in parquet-mr's page CRC check, which names the file."""
    name = f"r_{case}"
    t = fresh(db, name)
    path, other = first_tablet(t)
    good = damage(t, path, case, other)
    reads = [
        lambda: spark.sql(f"SELECT * FROM corrupt.{name}").collect(),
        lambda: db.sql(f"SELECT * FROM corrupt.{name}").collect(),
        lambda: db.sql(f"SELECT * FROM corrupt.{name}").where("id >= 0").toPandas(),  # every column: each page read
    ]
    for read in reads:
        with pytest.raises(FormatError) as err:
            read()
        text = str(err.value)
        assert text.startswith(f"tablet {path} ") and "Help: Restore the file from a copy" in text, text
        assert "at org.apache" not in text and len(text.splitlines()) == 2, text
    restore(t, path, good)
    assert spark.sql(f"SELECT count(*) FROM corrupt.{name}").collect()[0][0] == 3000


def test_old_tablets_read_with_verification_on(db, spark):
    """Tablets written before page CRCs and the footer id read through every path."""
    name = "old"
    t = fresh(db, name)
    add_old_tablet(t, pa.table({"id": pa.array(range(3000, 3100), pa.int64()), "v": ["o"] * 100, "x": [1.0] * 100}))
    assert spark.sql(f"SELECT count(*) FROM corrupt.{name}").collect()[0][0] == 3100
    snap = t.snapshot()
    for mode in ("native", "arrow"):
        spark.conf.set(SCAN_CONF, mode)
        try:
            assert snapshot_frame(spark, t, snap, ["id"], row_ids=False).count() == 3100
        finally:
            spark.conf.unset(SCAN_CONF)


@pytest.mark.parametrize("case", ["flip30", "swapped", "missing"])
def test_merge_on_a_bucket_with_a_damaged_tablet(spark, s3_server, case):
    """In a bucket the engine reads tablets with the Arrow reader (no S3 connector here)."""
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    t = TabletTable.create(s3_server.location(), schema, key_columns=["id"])
    t.append(pa.table({"id": list(range(500)), "v": [f"v{i}" for i in range(500)]}, schema=schema))
    t.append(pa.table({"id": list(range(500, 600)), "v": ["w"] * 100}, schema=schema))
    version, before = t.version, t.read()
    path, other = first_tablet(t)
    good = damage(t, path, case, other)
    spec = parse_statement("MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v")
    source = spark.createDataFrame([(1, "a"), (550, "b")], "id BIGINT, v STRING")
    with pytest.raises(FormatError) as err:
        execute(spark, t, spec, source, MergeOptions())
    assert path in str(err.value).splitlines()[0]
    assert t.version == version
    restore(t, path, good)
    assert t.read().equals(before)


# --- damaged checkpoints and hints ------------------------------------------------------------

CK_SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("x", pa.float64())])
CK_MERGE = (
    "MERGE INTO corrupt.{name} t USING (SELECT CAST(id AS BIGINT) AS id, '{v}' AS v, {x}D AS x "
    "FROM VALUES {ids} AS s(id)) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *"
)
# the source keys: a row the checkpoint's first set_dv deleted (tablet 1, rows 6..8), a row of the
# last tablet without a deletion vector (tablet 40), one of the tablets appended after it, a new key
MERGES = [({}, "new", -1.0, (107, 4005, 5105, 9001)), ({DRIVER_SCAN_CONF: "0"}, "spark", -2.0, (108, 4006, 5306, 9002))]


def ck_rows(k: int) -> pa.Table:
    ids = [k * 100 + i for i in range(10)]
    return pa.table({"id": ids, "v": [f"v{k}"] * 10, "x": [float(i) for i in ids]}, schema=CK_SCHEMA)


def as_dict(data) -> dict[int, tuple]:
    rows = data.to_pylist() if isinstance(data, pa.Table) else [r.asDict() for r in data]
    out = {r["id"]: (r["v"], r["x"]) for r in rows}
    assert len(out) == len(rows), "a key twice"
    return out


@pytest.fixture(scope="module")
def ck_pristine(tmp_path_factory) -> str:
    """A table of 53 versions with a checkpoint at 50 holding 40 tablets and 10 vectors, built
    once; each test adopts a copy as a catalog table."""
    root = str(tmp_path_factory.mktemp("ck") / "pristine")
    t = TabletTable.create(root, CK_SCHEMA, key_columns=["id"])
    checkpointed(t, ck_rows)
    return root


def ck_table(db, pristine: str, name: str, tmp_path) -> TabletTable:
    root = str(tmp_path / name)
    shutil.copytree(pristine, root)
    db.sql(f"DROP TABLE IF EXISTS corrupt.{name}")
    db.sql(f"CREATE TABLE corrupt.{name} (id BIGINT, v STRING, x DOUBLE) USING tablets LOCATION '{root}'")  # adopts it
    return db.table_of(f"corrupt.{name}")


SPARK_CK = [(c, True) for c in CHECKPOINT_CASES] + [(c, False) for c in HINT_CASES]


@pytest.mark.parametrize(("case", "hint_follows"), SPARK_CK, ids=[c for c, _ in SPARK_CK])
def test_damaged_checkpoint_or_hint_through_spark(db, spark, ck_pristine, tmp_path, case, hint_follows):
    """The store, ``db.sql`` and plain Spark SQL read what the log replays to; a MERGE by the
    driver plan and one by the Spark plan each commit on that state (their keys hit a tablet
    and a deletion vector a damaged checkpoint loses), as a replay of the log alone shows."""
    name = f"ck_{case}"
    t = ck_table(db, ck_pristine, name, tmp_path)
    want = as_dict(replayed(t))
    damage_checkpoint(t, case, hint_follows)
    assert as_dict(t.read()) == want
    assert as_dict(db.sql(f"SELECT id, v, x FROM corrupt.{name}").collect()) == want
    assert tuple(spark.sql(f"SELECT count(*), sum(id) FROM corrupt.{name}").collect()[0]) == (len(want), sum(want))
    assert as_dict(db.sql(f"SELECT * FROM corrupt.{name} VERSION AS OF {CHECKPOINT_VERSION}").collect()) == as_dict(
        replayed(t, CHECKPOINT_VERSION)
    )
    for conf, v, x, ids in MERGES:
        with settings(spark, conf):
            res = db.sql(CK_MERGE.format(name=name, v=v, x=x, ids=", ".join(f"({i})" for i in ids)))
        assert res.metrics.merged_on_driver == (not conf)
        for i in ids:
            want[i] = (v, want[i][1]) if i in want else (v, x)
        assert as_dict(replayed(t)) == want  # what it committed, by the log alone
        assert as_dict(db.sql(f"SELECT id, v, x FROM corrupt.{name}").collect()) == want


@pytest.mark.parametrize("case", ["missing_add", "stale_forged", "not_utf8"])
def test_damaged_checkpoint_without_the_versions_before_it_through_spark(db, spark, ck_pristine, tmp_path, case):
    """Nothing to replay instead: the reader starts from Delta's checkpoint of that version;
    without it too, the read and the MERGE (either plan) fail with the FormatError naming the
    checkpoint, and nothing is committed."""
    name = f"ckgone_{case}"
    t = ck_table(db, ck_pristine, name, tmp_path)
    want = db.sql(f"SELECT count(*) FROM corrupt.{name}").collect()[0][0]
    damage_checkpoint(t, case, hint_follows=True)
    for v in range(CHECKPOINT_VERSION):
        t.io.delete(log.log_dir(t.root) + f"/{log.version_name(v)}")
    assert db.sql(f"SELECT count(*) FROM corrupt.{name}").collect()[0][0] == want
    t.io.delete(log.log_dir(t.root) + f"/{CHECKPOINT_VERSION:020d}.checkpoint.parquet")
    cp = log.checkpoint_path(t.root, CHECKPOINT_VERSION)
    gone = f"the log of {t.root} cannot be read at version 53: checkpoint {cp} failed its proof"
    with pytest.raises(FormatError, match=gone):
        db.sql(f"SELECT count(*) FROM corrupt.{name}").collect()
    with pytest.raises(FormatError) as spark_err:  # plain Spark SQL: the data source's, translated
        spark.sql(f"SELECT count(*) FROM corrupt.{name}").collect()
    clear = spark_err.value
    assert str(clear).startswith(gone) and "\nHelp: Restore " in str(clear)
    assert reads.read_error(clear.__cause__) is not None  # Spark's own error, as over Spark Connect
    for conf, v, x, ids in MERGES:
        with settings(spark, conf), pytest.raises(FormatError) as err:
            db.sql(CK_MERGE.format(name=name, v=v, x=x, ids=", ".join(f"({i})" for i in ids)))
        assert f"checkpoint {cp} failed its proof" in str(err.value) and "\nHelp: Restore " in str(err.value)
    assert log.latest_version(t.io, t.root) == 53
