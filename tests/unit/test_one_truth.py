"""One commit point per table (docs/FORMAT.md): the Delta log is the only place a version can
exist, so another Delta writer is a concurrent writer, a crash leaves one truth, and a dropped
table leaves nothing a Delta reader opens. Real delta-rs writers in their own processes, on
local disk and in a bucket of a real S3-compatible server (``base``)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections import Counter

import pyarrow as pa
import pytest
from support.delta_check import delta_read, storage_options
from support.delta_check import delta_rs_append as append
from tablets.storage import RowLevelSink, TabletTable, log
from tablets.storage.clone import shallow_clone
from tablets.storage.fileio import join
from tablets.storage.table import ROW_NUMBER

pytestmark = pytest.mark.unit

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def rows_of(t: pa.Table) -> Counter:
    return Counter(zip(t.column("id").to_pylist(), [str(x) for x in t.column("v").to_pylist()], strict=True))


def delta_rs_append(root: str, ids: list[int]) -> None:
    append(root, pa.table({"id": pa.array(ids, pa.int64()), "v": [f"d{i}" for i in ids]}))


def make(base: str, n: int = 10) -> TabletTable:
    t = TabletTable.create(join(base, "t"), SCHEMA, key_columns=["id"])
    t.append(pa.table({"id": list(range(n)), "v": [f"v{i}" for i in range(n)]}, schema=SCHEMA))
    return t


def agree_everywhere(t: TabletTable) -> None:
    """tablets and delta-rs read the same rows at every version."""
    for v in range(t.version + 1):
        assert rows_of(t.read(v)) == rows_of(delta_read(t.root, v)), f"version {v}"


def delete_ids(t: TabletTable, doomed: set[int]) -> int | None:
    snap = t.snapshot()
    h = t.begin_delete(track_rows=True)
    sink = RowLevelSink(h)
    for tid in snap.tablets:
        for part in t.scan(snap, ["id"], tablet_ids=[tid], row_ids=True):
            hit = [i for i, x in enumerate(part.column("id").to_pylist()) if x in doomed]
            sink.delete([tid] * len(hit), [part.column(ROW_NUMBER)[i].as_py() for i in hit])
    return t.finish(h, sink.finish())


def test_a_delta_rs_append_while_a_commit_is_in_flight_is_kept(base, monkeypatch):
    """Case 1 of the issue: delta-rs commits the version tablets is about to create. tablets'
    create fails, it meets delta-rs' version as a concurrent commit, and commits after it:
    neither write is lost, and both readers agree at every version."""
    t = make(base)
    real = log.write_version
    held = []

    def racing(io, root, before, after, actions):  # the moment between staging and the create
        if not held:
            held.append(after.version)
            delta_rs_append(root, [100, 101, 102])
        return real(io, root, before, after, actions)

    monkeypatch.setattr(log, "write_version", racing)
    committed = delete_ids(t, {1, 2})
    assert held == [2] and committed == 3  # delta-rs took version 2
    expected = {i for i in range(10) if i not in (1, 2)} | {100, 101, 102}
    assert set(t.read().column("id").to_pylist()) == expected
    assert set(delta_read(t.root).column("id").to_pylist()) == expected
    assert t.history()[2].commit.operation == "WRITE"  # delta-rs' version, in tablets' history
    agree_everywhere(t)


def test_a_delete_of_rows_another_writer_appended_meanwhile_sees_them(base, monkeypatch):
    """A statement that reads appends (an update) conflicts with delta-rs' rows it should have
    read: a typed conflict, nothing of it committed, delta-rs' version kept."""
    from tablets.exceptions import ConcurrentAppend

    t = make(base)
    real = log.write_version

    def racing(io, root, before, after, actions):
        if after.version == 2 and not io.exists(log.version_path(root, 2)):
            delta_rs_append(root, [5])  # a second row with key 5
        return real(io, root, before, after, actions)

    monkeypatch.setattr(log, "write_version", racing)
    snap = t.snapshot()
    h = t.begin_update(track_rows=True)
    sink = RowLevelSink(h)
    (tid,) = snap.tablets
    sink.delete([tid], [5])
    sink.insert(pa.table({"id": [5], "v": ["new"]}, schema=SCHEMA))
    with pytest.raises(ConcurrentAppend):
        t.finish(h, sink.finish())
    assert t.version == 2
    assert sorted(t.read().column("id").to_pylist()) == sorted([*range(10), 5])
    agree_everywhere(t)


_CRASHER = textwrap.dedent(
    """
    import os, sys
    import pyarrow as pa
    from tablets.storage import RowLevelSink, TabletTable, fileio
    from tablets.storage.table import ROW_NUMBER

    root, at = sys.argv[1], int(sys.argv[2])
    calls = [0]

    def crash_at(original):
        def wrapped(self, *a, **k):
            calls[0] += 1
            if calls[0] == at:
                os._exit(17)  # killed at this step of the commit
            return original(self, *a, **k)
        return wrapped

    for cls in (fileio.LocalFileIO, fileio.ObjectStoreFileIO):
        for name in ("create", "write", "sync"):
            setattr(cls, name, crash_at(getattr(cls, name)))
    t = TabletTable(root)
    snap = t.snapshot()
    h = t.begin_update()
    sink = RowLevelSink(h)
    (tid,) = snap.tablets
    sink.delete([tid, tid], [3, 4])
    sink.insert(pa.table({"id": [3, 4], "v": ["u3", "u4"]}))
    t.finish(h, sink.finish())
    """
)


def test_a_writer_killed_at_every_step_of_a_commit_then_delta_rs_appends(base):
    """Cases 2 and 3 of the issue: a tablets writer killed at each step of a commit leaves the
    table before or after it, for tablets and Delta readers alike; a delta-rs append after the
    crash is kept; tablets' next write sees it."""
    step = 1
    while True:
        t = make(join(base, f"crash{step}"))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        done = subprocess.run([sys.executable, "-c", _CRASHER, t.root, str(step)], env=env, timeout=120)
        committed = t.version == 2
        assert done.returncode in (0, 17)
        assert set(t.read().column("id").to_pylist()) == set(range(10))
        expected = {**{i: f"v{i}" for i in range(10)}, **({3: "u3", 4: "u4"} if committed else {})}
        assert dict(zip(t.read().column("id").to_pylist(), t.read().column("v").to_pylist(), strict=True)) == expected
        delta_rs_append(t.root, [200 + step])
        assert 200 + step in t.read().column("id").to_pylist()
        t.append(pa.table({"id": [300], "v": ["after"]}, schema=SCHEMA))
        assert {200 + step, 300} <= set(delta_read(t.root).column("id").to_pylist())
        agree_everywhere(t)
        if done.returncode == 0:
            break
        step += 1
    assert step > 3  # tablet, vector, version (and their syncs): every step was tried


def test_drop_of_a_table_with_a_live_clone_leaves_no_delta_table(base):
    """Case 4: after DROP, a Delta reader does not open the dropped table; a new table under
    that root reads as the new one everywhere; the clone still reads its rows."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    src = make(base)
    clone_root = join(base, "c")
    shallow_clone(src, clone_root)
    src.drop()
    with pytest.raises(TableNotFoundError):
        DeltaTable(src.root, storage_options=storage_options(src.root))
    new = TabletTable.create(src.root, SCHEMA)
    new.append(pa.table({"id": [42], "v": ["new"]}, schema=SCHEMA))
    assert delta_read(new.root).column("id").to_pylist() == [42]
    assert new.read().column("id").to_pylist() == [42]
    clone = TabletTable(clone_root)
    assert sorted(clone.read().column("id").to_pylist()) == list(range(10))
    assert sorted(delta_read(clone_root).column("id").to_pylist()) == list(range(10))


def test_a_clone_names_its_sources_files_by_uris_and_polars_reads_tablet_tables(tmp_path):
    """Case 6: a clone's Delta log names the source's files by absolute URIs with a scheme (the
    protocol's ``path``); delta-rs' query engine reads the clone with the source's vectors
    applied, and Polars reads a tablet table with deletion vectors. (delta-rs 1.6's
    ``file_uris()``, which Polars reads through, joins an absolute URI under the root: a
    clone's outside files are out of their reach, docs/FORMAT.md "Shallow clones".)"""
    import polars as pl

    src = make(str(tmp_path))
    delete_ids(src, {0})
    assert sorted(pl.read_delta(src.root)["id"].to_list()) == list(range(1, 10))
    clone_root = str(tmp_path / "c")
    shallow_clone(src, clone_root)
    lines = log.read_lines(src.io, clone_root, 0)
    adds = [a["add"] for a in lines if "add" in a]
    assert adds and all(a["path"].startswith("file:///") for a in adds)
    assert all(a["deletionVector"]["pathOrInlineDv"].startswith("file:///") for a in adds if a.get("deletionVector"))
    assert sorted(delta_read(clone_root).column("id").to_pylist()) == list(range(1, 10))
    assert sorted(TabletTable(clone_root).read().column("id").to_pylist()) == list(range(1, 10))


def test_a_log_another_delta_writer_checkpointed_and_cleaned_up_still_reads(tmp_path):
    """delta-rs checkpoints the table and its older JSON versions are removed (a Delta writer's
    log retention): tablets starts from Delta's checkpoint, reads the same rows as delta-rs,
    and commits on top."""
    from deltalake import DeltaTable

    t = make(str(tmp_path))
    delete_ids(t, {3})
    delta_rs_append(t.root, [50])
    DeltaTable(t.root).create_checkpoint()
    for v in range(t.version):
        os.remove(log.version_path(t.root, v))
    assert sorted(t.read().column("id").to_pylist()) == [*(i for i in range(10) if i != 3), 50]
    delete_ids(t, {4})
    assert sorted(t.read().column("id").to_pylist()) == [*(i for i in range(10) if i not in (3, 4)), 50]
    assert rows_of(t.read()) == rows_of(delta_read(t.root))
