"""VACUUM racing writers never leaves a version that references a deleted file
(docs/CONCURRENCY.md, "Vacuum"): a writer whose staged files a VACUUM could reach gets
``VacuumConflict``, on local disk and in a bucket of a real S3-compatible server, with the
storage API in one process and with real processes racing (``TABLETS_SLOW=1``: the long soak)."""

import json
import multiprocessing as mp
import os
import random
import time

import pyarrow as pa
import pytest
from tablets.exceptions import CommitConflict, VacuumConflict
from tablets.storage import RowLevelSink, TabletTable, log, vacuum
from tablets.storage.fileio import join

pytestmark = pytest.mark.unit

SLOW = bool(os.environ.get("TABLETS_SLOW"))
SCHEMA = pa.schema([("id", pa.int32())])


def _nine(base) -> TabletTable:
    t = TabletTable.create(join(base, "t"), SCHEMA)
    t.append(pa.table({"id": pa.array(range(9), pa.int32())}))
    return t


def test_issue_repro_vacuum_deletes_a_staged_deletion_vector(base):
    """The issue's reproduction: a statement stages a deletion vector, VACUUM RETAIN 0 HOURS
    deletes it, the statement commits. Before: the newest version was unreadable."""
    t = _nine(base)
    h = t.begin_delete()
    s = RowLevelSink(h)
    p = next(t.scan(row_ids=True))
    s.delete(p["_tablet_id"].to_pylist()[:2], p["_row_number"].to_pylist()[:2])
    f = s.finish()
    time.sleep(0 if t.io.local else 1.1)  # whole seconds in a bucket: let VACUUM's second come
    removed = t.vacuum(retention_hours=0, enforce_retention=False)
    assert [r.split("/")[0] for r in removed] == ["dv"]
    with pytest.raises(
        VacuumConflict, match="version 2 is a VACUUM .* it may have deleted files this DELETE staged"
    ) as err:
        t.finish(h, f)
    assert isinstance(err.value, CommitConflict) and "Help: Run the statement again" in str(err.value)
    assert sorted(t.read().column("id").to_pylist()) == list(range(9))
    ops = [e.commit.operation for e in t.history()]
    assert ops == ["CREATE TABLE", "APPEND", vacuum.VACUUM_START, vacuum.VACUUM_END]
    assert t.history()[-1].commit.metrics_dict()["num_deleted_files"] == 1
    # run again, it commits
    h = t.begin_delete()
    s = RowLevelSink(h)
    s.delete(p["_tablet_id"].to_pylist()[:2], p["_row_number"].to_pylist()[:2])
    assert t.finish(h, s.finish()) == 4
    assert sorted(t.read().column("id").to_pylist()) == list(range(2, 9))


def test_vacuum_that_deletes_nothing_records_nothing(base):
    t = _nine(base)
    assert t.vacuum() == [] and t.vacuum(retention_hours=0, enforce_retention=False) == []
    assert t.version == 1
    h = t.begin_delete()
    s = RowLevelSink(h)
    s.delete([next(iter(t.snapshot().tablets))], [0])
    frags = s.finish()
    assert t.vacuum(retention_hours=0, enforce_retention=False, dry_run=True) != []
    assert t.version == 1 and t.finish(h, frags) == 2  # a dry run deletes nothing and records nothing


def test_a_long_retention_does_not_interrupt_writers(tmp_path):
    """A VACUUM whose retention is longer than the statement has run leaves its files alone, so
    the statement commits across the VACUUM's versions."""
    t = _nine(str(tmp_path))
    orphan = join(t.root, "tablets", "0" * 32 + ".parquet")
    t.io.write(orphan, b"old")
    two_hours_ago = time.time() - 2 * 3600
    os.utime(orphan, (two_hours_ago, two_hours_ago))
    h = t.begin_delete()
    s = RowLevelSink(h)
    s.delete([next(iter(t.snapshot().tablets))], [0])
    frags = s.finish()
    assert t.vacuum(retention_hours=1, enforce_retention=False) == ["tablets/" + "0" * 32 + ".parquet"]
    assert t.finish(h, frags) == 4  # past VACUUM START (2) and END (3)
    assert sorted(t.read().column("id").to_pylist()) == list(range(1, 9))


def test_restore_waits_for_a_vacuum_in_progress(base):
    """RESTORE references old files again: a VACUUM with its marker up may delete them, so the
    RESTORE raises the conflict; once the marker is gone it commits."""
    t = _nine(base)
    t.append(pa.table({"id": pa.array([100], pa.int32())}))
    t.overwrite(pa.table({"id": pa.array([7], pa.int32())}))
    marker = vacuum.put_marker(t.io, t.root, "f" * 32, 0)
    assert marker == join(t.root, "_tablets", "_vacuum-" + "f" * 32 + ".json")  # beside the Delta log, not in it
    with pytest.raises(VacuumConflict, match="a VACUUM of .* is in progress") as err:
        t.restore(2)
    assert marker in str(err.value) and "delete the marker file" in str(err.value)
    t.io.delete(marker)
    # an earlier release's VACUUM (begun before the table moved to the Delta log) put its marker in _log
    earlier = join(t.root, "_log", "_vacuum-" + "e" * 32 + ".json")
    body = {"txid": "e" * 32, "started_ms": int(time.time() * 1000), vacuum.RETENTION: 0}
    t.io.write(earlier, json.dumps(body).encode())
    with pytest.raises(VacuumConflict, match="a VACUUM of .* is in progress"):
        t.restore(2)
    t.io.delete(earlier)
    assert t.restore(2) == 4
    assert sorted(t.read().column("id").to_pylist()) == [*range(9), 100]


def test_restore_that_read_before_a_vacuum_conflicts(tmp_path):
    """A RESTORE that must pass a VACUUM START (it read the version before it) conflicts even if
    its files are still there: the VACUUM may not have reached them yet."""
    from tablets.storage import transaction
    from tablets.storage.maintenance import restore_actions

    t = _nine(str(tmp_path))
    t.append(pa.table({"id": pa.array([100], pa.int32())}))
    t.overwrite(pa.table({"id": pa.array([7], pa.int32())}))
    snap = t.snapshot()
    h = transaction.begin(
        snap, t.root, "RESTORE", delete_from=(), read_tablets=snap.tablets.keys(), reads_appends=True, io=t.io
    )
    orphan = join(t.root, "dv", "0" * 32 + "-" + "1" * 32 + ".bin")
    t.io.write(orphan, b"x")
    two_hours_ago = time.time() - 2 * 3600
    os.utime(orphan, (two_hours_ago, two_hours_ago))
    assert t.vacuum(retention_hours=1, enforce_retention=False) == ["dv/" + os.path.basename(orphan)]
    with pytest.raises(VacuumConflict, match="version 4 is a VACUUM .* references again"):
        transaction.commit(h, [], extra_actions=restore_actions(snap, t.snapshot(2)))
    assert sorted(t.read().column("id").to_pylist()) == [7]
    assert t.restore(2) == 6  # run again (after the VACUUM's END): it commits
    assert sorted(t.read().column("id").to_pylist()) == [*range(9), 100]


def test_vacuum_removes_a_killed_writers_log_temp_file(tmp_path):
    """A writer killed at the Delta step leaves ``_delta_log/.tmp-*``: VACUUM removes it once it
    is older than the retention, and keeps a younger one (a live writer's)."""
    t = _nine(str(tmp_path))
    logdir = log.log_dir(t.root)
    old, young = os.path.join(logdir, ".tmp-killed"), os.path.join(logdir, ".tmp-live")
    for path in (old, young):
        with open(path, "w") as f:
            f.write("{}")
    os.utime(old, (time.time() - 3 * 3600, time.time() - 3 * 3600))
    assert f"{log.LOG_DIR}/.tmp-killed" in t.vacuum(1, dry_run=True, enforce_retention=False)
    t.vacuum(1, enforce_retention=False)
    assert not os.path.exists(old) and os.path.exists(young)
    assert sorted(t.read().column("id").to_pylist()) == list(range(9))


@pytest.mark.parametrize("call", ["link", "replace"])
def test_a_temp_file_vacuum_took_is_written_again(tmp_path, monkeypatch, call):
    """A VACUUM removes temp files older than its retention (a killed writer's): a live writer
    that loses one between writing and linking (a version, a DV) or renaming (a tablet) writes it
    again."""
    taken = []
    real = getattr(os, call)

    def vacuumed_first(src, dst, *args, **kwargs):
        if not taken and os.path.basename(src).startswith(".tmp-"):
            taken.append(src)
            os.unlink(src)  # as VACUUM does, between the write and the link or rename
        return real(src, dst, *args, **kwargs)

    t = _nine(str(tmp_path))
    monkeypatch.setattr(os, call, vacuumed_first)
    t.append(pa.table({"id": pa.array([42], pa.int32())}))
    monkeypatch.undo()
    assert taken and sorted(t.read().column("id").to_pylist()) == [*range(9), 42]


# --- real processes: a writer and a VACUUM RETAIN 0 HOURS in a loop ---------------------------


def _writer(root: str, n: int, vacuums, out) -> None:
    """``n`` statements, each deleting one live row and inserting a new one. Every other one
    waits, between staging and committing, for a VACUUM that starts after it staged (that race
    every time); the others race as they come. Each commit is read back at once."""
    try:
        _statements(root, n, vacuums, out)
    except Exception as e:  # noqa: BLE001 - reported to the test
        out.put(("writer failed", repr(e)))
    out.put(("done",))


def _statements(root: str, n: int, vacuums, out) -> None:
    rng = random.Random(os.getpid())
    t = TabletTable(root)
    for i in range(n):
        snap = t.snapshot()
        h = t.begin_delete(track_rows=True)
        sink = RowLevelSink(h)
        part = next(p for p in t.scan(snap, row_ids=True) if p.num_rows)
        k = rng.randrange(part.num_rows)
        gone = part["id"][k].as_py()
        sink.delete([part["_tablet_id"][k].as_py()], [part["_row_number"][k].as_py()])
        sink.insert(pa.table({"id": pa.array([10_000 + i], pa.int32())}))
        frags = sink.finish()
        if i % 2:
            seen = vacuums.value
            deadline = time.time() + 60
            while vacuums.value < seen + 2 and time.time() < deadline:  # one begun after staging has ended
                time.sleep(0.01)
        else:
            time.sleep(rng.random() * 0.05)
        try:
            v = t.finish(h, frags)
        except CommitConflict as e:
            out.put(("conflict", type(e).__name__, i))
            continue
        rows = t.read(v).num_rows  # the version it made is whole (raises if a file is gone)
        out.put(("ok", gone, 10_000 + i, v, rows))


def _vacuumer(root: str, vacuums, stop, out) -> None:
    rng = random.Random(os.getpid())
    t = TabletTable(root)
    deleted = 0
    try:
        while not stop.is_set():
            deleted += len(t.vacuum(retention_hours=0, enforce_retention=False))
            with vacuums.get_lock():
                vacuums.value += 1
            time.sleep(rng.random() * 0.1)  # gaps in which some statements commit
    except Exception as e:  # noqa: BLE001 - reported to the test
        out.put(("vacuum failed", repr(e)))
    out.put(("vacuumed", deleted))


def test_writer_and_vacuum_processes_race(base):
    n = (400 if "://" not in base else 120) if SLOW else 12
    t = TabletTable.create(join(base, "race"), SCHEMA)
    t.append(pa.table({"id": pa.array(range(100), pa.int32())}))
    ctx = mp.get_context("spawn")
    vacuums, stop, out = ctx.Value("i", 0), ctx.Event(), ctx.Queue()
    start = time.time()
    procs = [
        ctx.Process(target=_writer, args=(t.root, n, vacuums, out)),
        ctx.Process(target=_vacuumer, args=(t.root, vacuums, stop, out)),
    ]
    for p in procs:
        p.start()
    results = []
    while not results or results[-1] != ("done",):
        results.append(out.get(timeout=600))
    stop.set()
    results.append(out.get(timeout=600))
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    assert not [r for r in results if r[0] in ("vacuum failed", "writer failed")], results
    oks = [r for r in results if r[0] == "ok"]
    conflicts = [r for r in results if r[0] == "conflict"]
    assert {r[1] for r in conflicts} <= {"VacuumConflict"}, conflicts
    assert {r[2] for r in conflicts} >= set(range(1, n, 2)), conflicts  # the forced races, every time
    expected = sorted((set(range(100)) | {r[2] for r in oks}) - {r[1] for r in oks})  # ids are never reused
    assert sorted(t.read().column("id").to_pylist()) == expected
    assert all(r[4] == 100 for r in oks)  # each statement deletes one row and inserts one
    ops = [e.commit.operation for e in t.history()]
    print(
        f"{n} statements: {len(oks)} committed, {len(conflicts)} VacuumConflict, "
        f"{ops.count(vacuum.VACUUM_START)} vacuums that deleted files, {results[-1][1]} files deleted, "
        f"{time.time() - start:.0f} s"
    )
    assert log.latest_version(t.io, t.root) == t.version
