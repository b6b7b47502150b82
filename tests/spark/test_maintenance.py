"""Table maintenance through the SQL front door (DESCRIBE HISTORY, VERSION/TIMESTAMP AS OF,
RESTORE, VACUUM, OPTIMIZE) and auto-compaction, with every intermediate version read back."""

import os
import time

import pyarrow as pa
import pytest
from tablets.engine.rewrite import auto_compact
from tablets.exceptions import (
    FormatError,
    StatementParseError,
    TableNotFound,
    TabletsError,
    VacuumRetentionError,
)
from tablets.statements import maintenance
from tablets.storage import TabletTable
from tablets.storage.sink import RowLevelSink

pytestmark = pytest.mark.spark

# front-door merges in the auto-compaction test: ~3 s each on 2 shared cores (8 in the default
# suite, 100 with TABLETS_SLOW=1; the 100-merge test through the store always runs)
FRONT_DOOR_MERGES = 100 if os.environ.get("TABLETS_SLOW") else 8


DATABASE = "maint"  # created by the conftest's db fixture


def rows(db, sql):
    return sorted(tuple(r) for r in db.sql(sql).collect())


def fresh(db, name, props=""):
    db.sql(f"DROP TABLE IF EXISTS {name}")
    db.sql(f"CREATE TABLE {name} (id INT, v STRING) USING tablets {props}")


def merge(db, name, pairs):
    values = ", ".join(f"({i}, '{v}')" for i, v in pairs)
    return db.sql(
        f"MERGE INTO {name} t USING (SELECT * FROM VALUES {values} AS s(id, v)) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *"
    )


def test_history_time_travel_and_restore(db):
    fresh(db, "maint.h")
    db.sql("INSERT INTO maint.h VALUES (1, 'a'), (2, 'b')")  # v1
    merge(db, "maint.h", [(2, "B"), (3, "c")])  # v2
    db.sql("DELETE FROM maint.h WHERE id = 1")  # v3
    hist = db.sql("DESCRIBE HISTORY maint.h")
    assert hist.columns == [
        "version",
        "timestamp",
        "operation",
        "operationParameters",
        "operationMetrics",
        "readVersion",
    ]
    got = [(r.version, r.operation, r.readVersion) for r in hist.collect()]
    assert got == [(3, "DELETE", 2), (2, "MERGE", 1), (1, "INSERT", 0), (0, "CREATE TABLE", None)]
    top = db.sql("DESCRIBE HISTORY maint.h LIMIT 1").collect()
    assert len(top) == 1 and top[0].operationMetrics["rows_deleted"] == "1"

    assert rows(db, "SELECT * FROM maint.h VERSION AS OF 1") == [(1, "a"), (2, "b")]
    assert rows(db, "SELECT h.id FROM maint.h FOR VERSION AS OF 2 AS h WHERE h.v = 'B'") == [(2,)]
    assert rows(db, "SELECT h.id FROM maint.h VERSION AS OF 0") == []
    # a self-join of two versions: what the MERGE changed
    changed = rows(
        db,
        "SELECT n.id, o.v, n.v FROM maint.h VERSION AS OF 2 n JOIN maint.h VERSION AS OF 1 o ON n.id = o.id WHERE n.v <> o.v",
    )
    assert changed == [(2, "b", "B")]
    # the versions' views are global: listings of a schema (dbt's catalog) show none of them
    assert db.spark.sql("SHOW TABLES IN maint").filter("tableName LIKE 'tablets_asof_%'").count() == 0
    v2_time = [r.timestamp for r in hist.collect() if r.version == 2][0]
    assert rows(db, f"SELECT * FROM maint.h TIMESTAMP AS OF '{v2_time}'") == [(1, "a"), (2, "B"), (3, "c")]

    with pytest.raises(TableNotFound, match=r"VERSION AS OF 9: version 9 does not exist \(versions 0..3\)"):
        db.sql("SELECT * FROM maint.h VERSION AS OF 9")
    with pytest.raises(TableNotFound, match="TIMESTAMP AS OF '2001-01-01': the table did not exist yet"):
        db.sql("SELECT * FROM maint.h TIMESTAMP AS OF '2001-01-01'")
    with pytest.raises(TabletsError, match="TIMESTAMP AS OF 'nonsense'.*not a timestamp"):
        db.sql("SELECT * FROM maint.h TIMESTAMP AS OF 'nonsense'")

    out = db.sql("RESTORE TABLE maint.h TO VERSION AS OF 1").collect()[0]
    assert (out.num_of_files_after_restore, out.num_restored_files) == (1, 1)
    assert rows(db, "SELECT * FROM maint.h") == [(1, "a"), (2, "b")]
    assert db.sql("DESCRIBE HISTORY maint.h LIMIT 1").collect()[0].operation == "RESTORE"
    db.sql(f"RESTORE maint.h TO TIMESTAMP AS OF '{v2_time}'")
    assert rows(db, "SELECT * FROM maint.h") == [(1, "a"), (2, "B"), (3, "c")]
    # the restored table takes writes as before
    merge(db, "maint.h", [(1, "A")])
    assert rows(db, "SELECT * FROM maint.h") == [(1, "A"), (2, "B"), (3, "c")]
    with pytest.raises(TableNotFound, match="RESTORE maint.h: VERSION AS OF 42: version 42 does not exist"):
        db.sql("RESTORE TABLE maint.h TO VERSION AS OF 42")
    with pytest.raises(StatementParseError, match="RESTORE maint.h: expected VERSION AS OF"):
        db.sql("RESTORE TABLE maint.h TO 3")
    with pytest.raises(TableNotFound, match="DESCRIBE HISTORY maint.nothing: there is no table"):
        db.sql("DESCRIBE HISTORY maint.nothing")


def test_table_by_path(db, tmp_path):
    path = str(tmp_path / "p")
    db.sql(f"CREATE TABLE tablets.`{path}` (id INT, v STRING) USING tablets")
    db.sql(f"INSERT INTO tablets.`{path}` VALUES (1, 'a')")
    db.sql(f"INSERT INTO tablets.`{path}` VALUES (2, 'b')")
    assert rows(db, f"SELECT * FROM tablets.`{path}` VERSION AS OF 1") == [(1, "a")]
    assert [r.version for r in db.sql(f"DESCRIBE HISTORY tablets.`{path}`").collect()] == [2, 1, 0]
    db.sql(f"RESTORE TABLE tablets.`{path}` TO VERSION AS OF 1")
    assert rows(db, f"SELECT * FROM tablets.`{path}`") == [(1, "a")]


def test_check_table_reports_and_repairs(db, tmp_path):
    """CHECK TABLE: no rows for a healthy table; a damaged version is named (and a SELECT fails
    with the same FormatError); REPAIR rebuilds a damaged checkpoint, never the log."""
    from tablets.storage import log

    path = str(tmp_path / "chk")
    db.sql(f"CREATE TABLE tablets.`{path}` (id INT, v STRING) USING tablets")
    db.sql(f"INSERT INTO tablets.`{path}` VALUES (1, 'a')")
    assert db.sql(f"CHECK TABLE tablets.`{path}`").columns == ["path", "problem", "fix", "repaired"]
    assert db.sql(f"CHECK TABLE tablets.`{path}`").collect() == []
    version = log.version_path(path, 1)
    with open(version, "rb") as f:
        good = f.read()
    with open(version, "wb"):
        pass  # emptied
    (row,) = db.sql(f"CHECK TABLE tablets.`{path}` REPAIR").collect()
    assert row.path == version and "empty version file" in row.problem and not row.repaired
    with pytest.raises(FormatError, match="empty version file"):
        db.sql(f"SELECT * FROM tablets.`{path}`").collect()
    with open(version, "wb") as f:
        f.write(good)
    assert rows(db, f"SELECT * FROM tablets.`{path}`") == [(1, "a")]
    with pytest.raises(StatementParseError, match="CHECK TABLE t \\[REPAIR\\]"):
        db.sql(f"CHECK TABLE tablets.`{path}` FAST")


def test_vacuum_and_restore_of_a_vacuumed_version(db):
    fresh(db, "maint.vac")
    db.sql("INSERT INTO maint.vac VALUES (1, 'a')")
    db.sql("INSERT OVERWRITE maint.vac SELECT 2, 'b'")
    with pytest.raises(
        VacuumRetentionError, match=r"VACUUM maint.vac RETAIN 1 HOURS: below the table's retention of 168 hours"
    ):
        db.sql("VACUUM maint.vac RETAIN 1 HOURS")
    assert db.sql("VACUUM maint.vac").collect()[0].numDeletedFiles == 0  # 168 h: everything is young
    db.spark.conf.set(maintenance.RETENTION_CHECK_CONF, "false")
    try:
        would = [r.path for r in db.sql("VACUUM maint.vac RETAIN 0 HOURS DRY RUN").collect()]
        assert len(would) == 1 and would[0].endswith(".parquet")
        assert db.sql("VACUUM maint.vac RETAIN 0 HOURS").collect()[0].numDeletedFiles == 1
    finally:
        db.spark.conf.unset(maintenance.RETENTION_CHECK_CONF)
    with pytest.raises(
        FormatError,
        match=r"RESTORE maint.vac TO VERSION AS OF 1: version 1 can no longer be restored: its files were deleted by VACUUM",
    ):
        db.sql("RESTORE TABLE maint.vac TO VERSION AS OF 1")
    assert rows(db, "SELECT * FROM maint.vac") == [(2, "b")]
    with pytest.raises(StatementParseError, match="VACUUM maint.vac: RETAIN needs a number of hours"):
        db.sql("VACUUM maint.vac RETAIN soon HOURS")


def test_optimize(db):
    fresh(db, "maint.opt", "TBLPROPERTIES ('cluster_by' = 'id')")
    for i in (5, 3, 1, 4, 2):
        db.sql(f"INSERT INTO maint.opt VALUES ({i}, 'x{i}')")
    db.sql("DELETE FROM maint.opt WHERE id = 4")
    before = rows(db, "SELECT * FROM maint.opt")
    out = db.sql("OPTIMIZE maint.opt").collect()[0]
    assert (out.numFilesRemoved, out.numFilesAdded) == (5, 1)
    assert rows(db, "SELECT * FROM maint.opt") == before
    assert db.table_of("maint.opt").read().column("id").to_pylist() == [1, 2, 3, 5]  # sorted by cluster_by
    assert db.sql("DESCRIBE HISTORY maint.opt LIMIT 1").collect()[0].operation == "OPTIMIZE"
    assert db.sql("OPTIMIZE maint.opt").collect()[0].version is None  # nothing left to do
    with pytest.raises(StatementParseError, match="OPTIMIZE maint.opt: OPTIMIZE ... ZORDER BY is not supported"):
        db.sql("OPTIMIZE maint.opt ZORDER BY (id)")


def test_auto_compaction_through_the_front_door(db):
    """Small merges into a table with auto_compact: the tablet count stays bounded, each
    compaction is its own OPTIMIZE commit, and every version reads as the merges left it."""
    fresh(db, "maint.auto", "TBLPROPERTIES ('auto_compact' = 'true', 'auto_compact_min_tablets' = '3')")
    state: dict[int, str] = {}
    expected: dict[int, list[tuple[int, str]]] = {0: []}
    start = time.perf_counter()
    for n in range(FRONT_DOOR_MERGES):
        pairs = [(n, f"n{n}")] + ([(n // 2, f"u{n}")] if n else [])
        res = merge(db, "maint.auto", pairs)
        state.update(dict(pairs))
        expected[res.metrics.version] = sorted(state.items())
        assert len(db.table_of("maint.auto").snapshot().tablets) <= 3  # without it: one more per merge
    elapsed = time.perf_counter() - start
    hist = db.sql("DESCRIBE HISTORY maint.auto").collect()
    autos = [r for r in hist if r.operation == "OPTIMIZE"]
    assert autos and all(r.operationParameters == {"auto": "true"} for r in autos)
    table = db.table_of("maint.auto")
    for r in hist:  # compactions keep the rows of the version before them
        if r.version not in expected:
            expected[r.version] = expected[r.version - 1]
    for v, want in expected.items():
        assert rows(db, f"SELECT * FROM maint.auto VERSION AS OF {v}") == want, v
        assert sorted((d["id"], d["v"]) for d in table.read(v).to_pylist()) == want
    print(f"{FRONT_DOOR_MERGES} front-door merges with auto-compaction: {elapsed:.1f} s")


def test_hundred_merges_with_auto_compaction(tmp_path, spark):
    """100 small merges (an update of old rows, an insert of new ones, as the engine commits
    them) with the auto-compaction hook after each: the tablet count stays under the bound
    and every one of the ~100 versions reads back exactly."""
    t = TabletTable.create(
        str(tmp_path / "t"),
        pa.schema([("id", pa.int64()), ("v", pa.string())]),
        ["id"],
        {"auto_compact": "true", "auto_compact_min_tablets": "8"},
    )
    state: dict[int, str] = {}
    expected = {0: []}
    most = 0
    for n in range(100):
        snap = t.snapshot()
        old = n // 3
        h = t.begin_update("MERGE")
        sink = RowLevelSink(h)
        for part in t.scan(snap, row_ids=True):
            hit = [i for i, k in enumerate(part.column("id").to_pylist()) if k == old]
            if hit:
                sink.delete([part.column("_tablet_id")[hit[0]].as_py()], [part.column("_row_number")[hit[0]].as_py()])
        new = {n + 1000: f"n{n}", old: f"u{n}"}
        sink.insert(pa.table({"id": list(new), "v": list(new.values())}))
        v = t.finish(h, sink.finish())
        state.update(new)
        expected[v] = sorted(state.items())
        c = auto_compact(spark, t, "MERGE")
        if c is not None:
            expected[c] = expected[v]
        most = max(most, len(t.snapshot().tablets))
    assert most <= 8  # without auto-compaction: 100 tablets
    compactions = [h for h in t.history() if h.commit and h.commit.operation == "OPTIMIZE"]
    assert len(compactions) >= 10
    for v, want in expected.items():
        assert sorted((d["id"], d["v"]) for d in t.read(v).to_pylist()) == want, v


def test_auto_compaction_gives_up_on_a_race(tmp_path, monkeypatch, spark):
    from tablets.exceptions import ConcurrentDeleteRead

    t = TabletTable.create(
        str(tmp_path / "t"),
        pa.schema([("id", pa.int64())]),
        (),
        {"auto_compact": "true", "auto_compact_min_tablets": "2"},
    )
    t.append(pa.table({"id": [1]}))
    t.append(pa.table({"id": [2]}))

    def lose(*a, **k):
        raise ConcurrentDeleteRead("version 3 removed tablet x, which this OPTIMIZE read", 3)

    monkeypatch.setattr("tablets.storage.transaction.commit", lose)
    assert auto_compact(spark, t, "INSERT") is None
    monkeypatch.undo()
    assert auto_compact(spark, t, "INSERT") == 3
    assert sorted(t.read().column("id").to_pylist()) == [1, 2]
