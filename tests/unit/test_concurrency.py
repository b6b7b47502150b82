"""Real concurrent processes on one table: no version lost or overwritten, typed conflicts,
and crashed writers leave nothing visible. The races run on local disk and in a bucket of a
real S3-compatible server (conditional PUT)."""

import multiprocessing as mp
import os
import signal
import subprocess
import sys
import textwrap
import time

import pyarrow as pa
import pytest
from tablets.exceptions import ConcurrentDeleteDelete
from tablets.storage import RowLevelSink, TabletTable, log
from tablets.storage.fileio import join

pytestmark = pytest.mark.unit

SCHEMA = pa.schema([("id", pa.int64()), ("writer", pa.int32())])


def _appender(root: str, writer: int, n: int, start: mp.Event) -> None:
    start.wait()
    t = TabletTable(root)
    for i in range(n):
        t.append(pa.table({"id": [writer * 1000 + i], "writer": pa.array([writer], pa.int32())}))


def test_four_processes_append_concurrently(base):
    root = join(base, "t")
    TabletTable.create(root, SCHEMA)
    ctx = mp.get_context("spawn")
    start = ctx.Event()
    procs = [ctx.Process(target=_appender, args=(root, w, 25, start)) for w in range(4)]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    t = TabletTable(root)
    versions, _ = log.list_log(t.io, t.root, complete=True)
    assert versions == list(range(101))  # create + 100 appends, none lost or overwritten
    ids = sorted(t.read().column("id").to_pylist())
    assert ids == sorted(w * 1000 + i for w in range(4) for i in range(25))
    txids = {h.commit.txid for h in t.history()}
    assert len(txids) == 101


def _deleter(root: str, rows: list[int], barrier, out) -> None:
    t = TabletTable(root)
    snap = t.snapshot()
    (tid,) = snap.tablets
    h = t.begin_delete()
    sink = RowLevelSink(h)
    sink.delete([tid] * len(rows), rows)
    frags = sink.finish()  # staged: DV file written under a fresh name
    barrier.wait()
    try:
        out.put(("ok", t.finish(h, frags)))
    except ConcurrentDeleteDelete as e:
        out.put(("conflict", str(e)))


def test_two_processes_delete_from_one_tablet(base):
    root = join(base, "t")
    t = TabletTable.create(root, SCHEMA)
    t.append(pa.table({"id": list(range(10)), "writer": pa.array([0] * 10, pa.int32())}))
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(2), ctx.Queue()
    procs = [
        ctx.Process(target=_deleter, args=(root, [1, 2], barrier, out)),
        ctx.Process(target=_deleter, args=(root, [7, 8], barrier, out)),
    ]
    for p in procs:
        p.start()
    results = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(60)
    kinds = sorted(r[0] for r in results)
    assert kinds == ["conflict", "ok"]
    assert "also deletes from" in next(r[1] for r in results if r[0] == "conflict")
    ids = sorted(t.read().column("id").to_pylist())
    assert ids in ([0, 3, 4, 5, 6, 7, 8, 9], [0, 1, 2, 3, 4, 5, 6, 9])  # exactly one statement's deletes
    assert t.version == 2


def _run_and_kill(code: str, ready: str, timeout: float = 60) -> None:
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)])
    deadline = time.time() + timeout
    while not os.path.exists(ready):
        assert proc.poll() is None, "writer exited before it was killed"
        assert time.time() < deadline
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def test_writer_killed_after_staging(tmp_path):
    root = str(tmp_path / "t")
    t = TabletTable.create(root, SCHEMA)
    t.append(pa.table({"id": [1, 2, 3], "writer": pa.array([0, 0, 0], pa.int32())}))
    ready = str(tmp_path / "ready")
    _run_and_kill(
        f"""
        import time, pyarrow as pa
        from tablets.storage import RowLevelSink, TabletTable
        t = TabletTable({root!r})
        (tid,) = t.snapshot().tablets
        h = t.begin_update()
        sink = RowLevelSink(h)
        sink.delete([tid], [0])
        sink.insert(pa.table({{"id": [99], "writer": pa.array([1], pa.int32())}}))
        sink.finish()                      # tablet and DV staged, no commit
        open({ready!r}, "w").close()
        time.sleep(600)
        """,
        ready,
    )
    assert t.version == 1
    assert sorted(t.read().column("id").to_pylist()) == [1, 2, 3]
    assert len(os.listdir(os.path.join(root, "tablets"))) == 2 and len(os.listdir(os.path.join(root, "dv"))) == 1
    removed = t.vacuum(retention_hours=0, enforce_retention=False)
    assert len(removed) == 2 and {r.split("/")[0] for r in removed} == {"tablets", "dv"}
    assert sorted(t.read().column("id").to_pylist()) == [1, 2, 3]


def test_writer_killed_while_writing_log(tmp_path):
    root = str(tmp_path / "t")
    t = TabletTable.create(root, SCHEMA)
    t.append(pa.table({"id": [1, 2], "writer": pa.array([0, 0], pa.int32())}))
    ready = str(tmp_path / "ready")
    _run_and_kill(
        f"""
        import os, time, pyarrow as pa
        from tablets.storage import TabletTable, fileio
        real_write = os.write
        def half_write(fd, data):           # die half-way through the version file
            if bytes(data[:4]) == b'PAR1':  # the tablet goes through whole
                return real_write(fd, data)
            real_write(fd, data[: len(data) // 2])
            open({ready!r}, "w").close()
            time.sleep(600)
        fileio.os.write = half_write
        TabletTable({root!r}).append(pa.table({{"id": [5], "writer": pa.array([1], pa.int32())}}))
        """,
        ready,
    )
    assert t.version == 1
    assert sorted(t.read().column("id").to_pylist()) == [1, 2]
    hidden = [n for n in os.listdir(os.path.join(root, "_log")) if n.startswith(".tmp-")]
    assert len(hidden) == 1  # the half-written version never got its name
    t.append(pa.table({"id": [3], "writer": pa.array([0], pa.int32())}))  # the table moves on
    assert t.version == 2
    removed = t.vacuum(retention_hours=0, enforce_retention=False)
    assert f"_log/{hidden[0]}" in removed
    assert any(r.startswith("tablets/") for r in removed)
    assert sorted(t.read().column("id").to_pylist()) == [1, 2, 3]
