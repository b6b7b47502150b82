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
from tablets.exceptions import (
    CommitConflict,
    ConcurrentAppend,
    ConcurrentDeleteDelete,
    ConcurrentDeleteRead,
    MetadataChanged,
)
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


def test_a_commit_whose_answer_was_lost_is_not_committed_twice(base, monkeypatch):
    """The version's PUT lands but its answer does not (a timeout the client retried, and the
    retry met the object): the writer finds its own commit there and stops."""
    t = TabletTable.create(join(base, "t"), SCHEMA)
    create = type(t.io).create
    lost = []

    def landed_unanswered(io, path, data):
        if not lost and "/_delta_log/" in path and path.endswith(".json"):
            lost.append(path)
            create(io, path, data)
            return False
        return create(io, path, data)

    monkeypatch.setattr(type(t.io), "create", landed_unanswered)
    assert t.append(pa.table({"id": [1], "writer": pa.array([0], pa.int32())})) == 1
    assert lost
    assert log.list_log(t.io, t.root, complete=True)[0] == [0, 1]
    assert t.read().column("id").to_pylist() == [1]


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


def _race_deleters(base, deleter) -> tuple[TabletTable, list]:
    """Two processes that read one version and delete rows 1, 2 and 7, 8 of its one tablet."""
    root = join(base, "t")
    t = TabletTable.create(root, SCHEMA)
    t.append(pa.table({"id": list(range(10)), "writer": pa.array([0] * 10, pa.int32())}))
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=deleter, args=(root, rows, barrier, out)) for rows in ([1, 2], [7, 8])]
    for p in procs:
        p.start()
    results = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(60)
    return t, results


def test_two_processes_delete_from_one_tablet(base):
    t, results = _race_deleters(base, _deleter)
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
    hidden = [n for n in os.listdir(os.path.join(root, "_delta_log")) if n.startswith(".tmp-")]
    assert len(hidden) == 1  # the half-written version never got its name
    t.append(pa.table({"id": [3], "writer": pa.array([0], pa.int32())}))  # the table moves on
    assert t.version == 2
    removed = t.vacuum(retention_hours=0, enforce_retention=False)
    assert f"_delta_log/{hidden[0]}" in removed
    assert any(r.startswith("tablets/") for r in removed)
    assert sorted(t.read().column("id").to_pylist()) == [1, 2, 3]


# --- the commit rules, row by row (docs/CONCURRENCY.md's matrix) ----------------------------
#
# Each test lets statement S read a version, a concurrent commit C land first, then commits S:
# the same interleaving two processes produce, in one process so that every rule is hit
# deterministically. The MERGE rows are covered with real Spark MERGEs in
# tests/spark/test_concurrent_merges.py.


def _ten(base) -> tuple[TabletTable, str]:
    """A table with one tablet of ids 0..9 (row number = id)."""
    t = TabletTable.create(join(base, "t"), SCHEMA)
    t.append(pa.table({"id": list(range(10)), "writer": pa.array([0] * 10, pa.int32())}))
    (tid,) = t.snapshot().tablets
    return t, tid


def _stage(t: TabletTable, tid: str, delete=(), read=(), insert=(), **kwargs):
    """S: a handle on the current version and its staged fragments."""
    kwargs.setdefault("track_rows", True)
    h = t.begin_delete("MERGE", **kwargs)
    sink = RowLevelSink(h)
    sink.delete([tid] * len(delete), list(delete))
    sink.read([tid] * len(read), list(read))
    if insert:
        sink.insert(pa.table({"id": list(insert), "writer": pa.array([2] * len(insert), pa.int32())}))
    return h, sink.finish()


def _delete(t: TabletTable, tid: str, rows) -> int | None:
    """C: a committed delete of ``rows``."""
    h = t.begin_delete()
    sink = RowLevelSink(h)
    sink.delete([tid] * len(rows), list(rows))
    return t.finish(h, sink.finish())


def _ids(t: TabletTable) -> list[int]:
    return sorted(t.read().column("id").to_pylist())


def _files(t: TabletTable, sub: str) -> set[str]:
    return {f.name for f in t.io.list(join(t.root, sub))}


def test_rule_metadata_change_conflicts(base):
    t, tid = _ten(base)
    h, frags = _stage(t, tid, delete=[1])
    t.add_columns([("extra", "string")])
    with pytest.raises(MetadataChanged):
        t.finish(h, frags)
    assert _files(t, "dv") == set()  # the refused statement's staged DV is gone


def test_rule_deletes_of_other_rows_rebase(base):
    t, tid = _ten(base)
    h, frags = _stage(t, tid, delete=[1, 2], read=[3])
    staged = _files(t, "dv")
    _delete(t, tid, [7])
    _delete(t, tid, [8])  # two commits in between: rebased once onto the newest
    assert t.finish(h, frags) == 4
    assert _ids(t) == [0, 3, 4, 5, 6, 9]
    dv = t.snapshot().tablets[tid].dv
    assert dv.cardinality == 4 and dv.path.split("/")[1] not in staged  # a new DV file, the union
    assert not staged & _files(t, "dv")  # the superseded staged DV was removed
    info = t.history()[-1].commit
    assert info.metrics_dict()["dvs_rebased"] == 1
    older = sorted(f"dv/{n}" for n in _files(t, "dv") - {dv.path.split("/")[1]})  # C's DVs
    if not t.io.local:
        time.sleep(1.1)  # whole seconds in a bucket: VACUUM keeps files of its START's second
    assert len(older) == 2 and t.vacuum(retention_hours=0, enforce_retention=False) == older
    assert _ids(t) == [0, 3, 4, 5, 6, 9]


def test_rule_delete_of_a_row_this_statement_deletes_conflicts(base):
    t, tid = _ten(base)
    h, frags = _stage(t, tid, delete=[1, 2], insert=[100])
    _delete(t, tid, [2, 5])
    with pytest.raises(ConcurrentDeleteDelete, match="also deletes or updates"):
        t.finish(h, frags)
    assert _ids(t) == [0, 1, 3, 4, 6, 7, 8, 9]
    assert len(_files(t, "tablets")) == 1  # the staged tablet is gone too


def test_rule_delete_of_a_row_this_statement_matched_conflicts(base):
    t, tid = _ten(base)
    h, frags = _stage(t, tid, delete=[1], read=[5])  # 5: matched, left alone (DO NOTHING, ...)
    _delete(t, tid, [5])
    with pytest.raises(ConcurrentDeleteRead, match="matched"):
        t.finish(h, frags)


def test_rule_statement_that_only_matched_rows_ignores_other_deletes(base):
    t, tid = _ten(base)
    h, frags = _stage(t, tid, read=[5], insert=[100])  # e.g. ON CONFLICT DO NOTHING + an insert
    _delete(t, tid, [6])
    assert t.finish(h, frags) == 3
    assert _ids(t) == [0, 1, 2, 3, 4, 5, 7, 8, 9, 100]


def test_rule_untracked_statement_conflicts_per_tablet(base):
    t, tid = _ten(base)
    h, frags = _stage(t, tid, delete=[1], track_rows=False)  # depends on the whole tablet
    _delete(t, tid, [8])
    with pytest.raises(ConcurrentDeleteDelete, match="also deletes from"):
        t.finish(h, frags)


def test_rule_untracked_reader_conflicts_with_any_delete_of_its_tablets(base):
    t, tid = _ten(base)
    h, frags = _stage(t, tid, insert=[100], track_rows=False)  # read every tablet
    _delete(t, tid, [8])
    with pytest.raises(ConcurrentDeleteRead, match="read"):
        t.finish(h, frags)


def _compact(t: TabletTable) -> int | None:
    return t.compact(min_tablet_rows=1000)


def test_rule_compaction_vs_statement_deleting_from_the_tablet(base):
    t, tid = _ten(base)
    t.append(pa.table({"id": [50], "writer": pa.array([1], pa.int32())}))  # compaction needs 2 tablets
    h, frags = _stage(t, tid, delete=[1])
    assert _compact(t) is not None
    with pytest.raises(ConcurrentDeleteDelete, match="removed"):
        t.finish(h, frags)
    # and the other way round: the compaction read the tablet the statement deleted from
    t2, tid2 = _ten(join(base, "other"))
    t2.append(pa.table({"id": [50], "writer": pa.array([1], pa.int32())}))
    snap = t2.snapshot()
    _delete(t2, tid2, [1])
    with pytest.raises(ConcurrentDeleteDelete):
        _compact_from(t2, snap)


def _compact_from(t: TabletTable, snap) -> int | None:
    """A compaction that read ``snap`` (an older version), committed now."""
    from tablets.storage import transaction
    from tablets.storage.actions import RemoveTablet

    pick = list(snap.tablets)
    h = transaction.begin(snap, t.root, "COMPACT", delete_from=pick, read_tablets=pick, io=t.io)
    sink = RowLevelSink(h)
    for part in t.scan(snap, tablet_ids=pick):
        sink.insert(part)
    return transaction.commit(h, sink.finish(), extra_actions=[RemoveTablet(x) for x in pick])


def test_rule_removal_of_a_tablet_this_statement_matched_rows_of_conflicts(base):
    t, tid = _ten(base)
    t.append(pa.table({"id": [50], "writer": pa.array([1], pa.int32())}))
    h, frags = _stage(t, tid, read=[4], insert=[100], reads_appends=True)
    _compact(t)
    with pytest.raises(ConcurrentDeleteRead, match="removed"):
        t.finish(h, frags)


def test_rule_removal_of_a_tablet_this_statement_did_not_depend_on(base):
    t, tid = _ten(base)
    t.append(pa.table({"id": [50], "writer": pa.array([1], pa.int32())}))
    h, frags = _stage(t, tid, insert=[100], reads_appends=True)  # scanned, matched nothing
    _compact(t)
    asked = []
    # the compaction's new tablet holds the same rows: the caller's judge says they do not match
    assert t.finish(h, frags, may_match=lambda adds: asked.append(adds) or False) == 4
    assert len(asked) == 1 and asked[0][0].rows == 11
    assert _ids(t) == [*range(10), 50, 100]


def _append(t: TabletTable, ids) -> int | None:
    return t.append(pa.table({"id": list(ids), "writer": pa.array([1] * len(ids), pa.int32())}))


def test_rule_blind_statement_ignores_appends(base):
    t, tid = _ten(base)
    h = t.begin_write("APPEND")
    sink = RowLevelSink(h)
    sink.insert(pa.table({"id": [100], "writer": pa.array([2], pa.int32())}))
    frags = sink.finish()
    _append(t, [5])
    assert t.finish(h, frags) == 3


def test_rule_appends_outside_the_key_ranges_do_not_conflict(base):
    t, tid = _ten(base)
    h, frags = _stage(t, tid, delete=[3], reads_appends=True, append_ranges=[("id", 2, 4)])
    _append(t, [100, 120])  # stats 100..120: cannot match keys 2..4
    _append(t, [None])  # every key NULL: cannot match `=`
    asked = []
    assert t.finish(h, frags, may_match=lambda adds: asked.append(adds) or True) == 4
    assert asked == []  # ruled out by stats alone


def test_rule_appends_inside_the_key_ranges_are_judged(base):
    t, tid = _ten(base)
    h, frags = _stage(t, tid, delete=[3], reads_appends=True, append_ranges=[("id", 2, 4)])
    _append(t, [1, 5])  # stats 1..5 overlap 2..4: the judge decides (here: no row matches)
    assert t.finish(h, frags, may_match=lambda adds: False) == 3
    t2, tid2 = _ten(join(base, "other"))
    h, frags = _stage(t2, tid2, delete=[3], reads_appends=True, append_ranges=[("id", 2, 4)])
    _append(t2, [3])
    with pytest.raises(ConcurrentAppend, match="would have matched"):
        t2.finish(h, frags, may_match=lambda adds: True)


def test_rule_appends_conflict_without_a_judge(base):
    t, tid = _ten(base)
    h, frags = _stage(t, tid, delete=[3], reads_appends=True)
    _append(t, [100])
    with pytest.raises(ConcurrentAppend, match="should have read"):
        t.finish(h, frags)


def test_rule_overwrite_conflicts_with_deletes_and_appends(base):
    t, tid = _ten(base)
    snap = t.snapshot()
    _delete(t, tid, [1])
    with pytest.raises(ConcurrentDeleteDelete):  # it removes the tablet that lost a row
        _overwrite_from(t, snap)
    snap = t.snapshot()
    _append(t, [100])
    with pytest.raises(ConcurrentAppend):
        _overwrite_from(t, snap)


def _overwrite_from(t: TabletTable, snap) -> int | None:
    from tablets.storage import transaction
    from tablets.storage.actions import RemoveTablet

    h = transaction.begin(snap, t.root, "OVERWRITE", read_tablets=snap.tablets.keys(), reads_appends=True, io=t.io)
    sink = RowLevelSink(h)
    sink.insert(pa.table({"id": [7], "writer": pa.array([3], pa.int32())}))
    return transaction.commit(h, sink.finish(), extra_actions=[RemoveTablet(x) for x in snap.tablets])


def _tracked_deleter(root: str, rows: list[int], barrier, out) -> None:
    t = TabletTable(root)
    (tid,) = t.snapshot().tablets
    h = t.begin_delete(track_rows=True)
    sink = RowLevelSink(h)
    sink.delete([tid] * len(rows), rows)
    frags = sink.finish()
    barrier.wait()
    try:
        out.put(("ok", t.finish(h, frags)))
    except CommitConflict as e:
        out.put((type(e).__name__, str(e)))


def test_two_processes_delete_different_rows_of_one_tablet(base):
    t, results = _race_deleters(base, _tracked_deleter)
    assert sorted(r[0] for r in results) == ["ok", "ok"]
    assert sorted(r[1] for r in results) == [2, 3]
    assert sorted(t.read().column("id").to_pylist()) == [0, 3, 4, 5, 6, 9]
    assert t.snapshot().tablets[next(iter(t.snapshot().tablets))].dv.cardinality == 4
