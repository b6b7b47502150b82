"""Checking a table's log, and rebuilding what is derived from it (``CHECK TABLE t [REPAIR]``,
``TabletTable.check``; docs/FORMAT.md, "Checking a table").

A check reads every version of the log from the first one it holds, replays them (each against
its commit's state record), proves every checkpoint (tablets' in ``_tablets/`` and Delta's in
``_delta_log/``) against the state replayed at its version, and looks at every file the newest
version references (it exists, with the size the log records; a deletion vector also with its
checksum). What it finds is a list of ``Problem``s, each naming the file, what is wrong and
what to do; an empty list is a healthy table.

Nothing in the log is ever rewritten. ``repair`` rebuilds only what is derived from the log
and found damaged: a checkpoint that fails its proof is replaced by one of the replayed state,
and a checkpoint hint is pointed at a checkpoint that exists.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from tablets.exceptions import TabletsError
from tablets.storage import delta_checkpoint, delta_log, legacy_log, log
from tablets.storage.checkpoint import Hint, Rejected
from tablets.storage.fileio import FileIO, join
from tablets.storage.snapshot import Snapshot


@dataclass(frozen=True)
class Problem:
    path: str  # the file (or directory) it is about
    problem: str
    fix: str
    repaired: bool = False  # rebuilt by this check (``repair``)


def _damaged_log(e: TabletsError) -> Problem:
    return Problem(_where(str(e)), str(e).split("\nHelp:")[0], e.help or "Restore the file from a copy.")


def _where(text: str) -> str:
    """The file a log error names (``log <path>: ...``), else the text's start."""
    return text[4:].split(":", 1)[0] if text.startswith("log ") else text.split(":", 1)[0]


def _files(io: FileIO, root: str, snap: Snapshot) -> list[Problem]:
    out = []
    for st in snap.tablets.values():
        path = join(root, st.add.path)
        size = io.size(path) if io.exists(path) else None
        if size is None:
            out.append(Problem(path, "the tablet is missing (the log references it)", "Restore the file from a copy."))
        elif size != st.add.bytes:
            out.append(
                Problem(path, f"the tablet has {size} bytes, the log says {st.add.bytes}", "Restore it from a copy.")
            )
        if st.dv is None:
            continue
        where = join(root, st.dv.path)
        try:
            data = io.read(where)
        except FileNotFoundError:
            out.append(Problem(where, "the deletion vector is missing (the log references it)", "Restore it."))
            continue
        if len(data) != st.dv.size or f"{zlib.crc32(data):08x}" != st.dv.checksum:
            out.append(
                Problem(where, "the deletion vector is not the one the log records (size or checksum)", "Restore it.")
            )
    return out


def _ours(io: FileIO, root: str, cp: int, state: Snapshot, repair: bool) -> list[Problem]:
    path = log.checkpoint_path(root, cp)
    try:
        snap = log.read_checkpoint(io, root, cp)
        diff = snap.summary().differences(state.summary())
        if snap.metadata != state.metadata:
            diff.append("metadata differs")
        if not diff:
            return []
        why = "; ".join(diff)
    except Rejected as e:
        why = str(e)
    if repair:
        from tablets.storage import checkpoint as ckpt

        data = ckpt.encode(state)
        io.write(path, data)
        io.write(join(log.aux_dir(root), log.LAST_CHECKPOINT), Hint(cp, len(data), ckpt.crc(data)).encode())
    return [
        Problem(
            path,
            f"the checkpoint is not the state of version {cp} ({why}): readers replay instead",
            "CHECK TABLE ... REPAIR writes it again from the log.",
            repaired=repair,
        )
    ]


def _delta(io: FileIO, root: str, cp: int, state: Snapshot, repair: bool) -> list[Problem]:
    path = join(log.log_dir(root), delta_checkpoint.name(cp))
    try:
        lines = delta_checkpoint.read(io, root, cp)
        files = {a["add"]["path"] for a in lines if "add" in a}
        want = {delta_log.path_uri(st.add.path) for st in state.tablets.values()}
        if files == want:
            return []
        why = f"{len(files ^ want)} file(s) differ from the state replayed"
    except (OSError, ValueError, KeyError) as e:
        why = f"unreadable ({e})"
    if repair:
        io.delete(path)
        delta_log.write_checkpoint(io, root, state)
    return [
        Problem(
            path,
            f"Delta's checkpoint is not the state of version {cp} ({why}): Delta readers read it wrong",
            "CHECK TABLE ... REPAIR writes it again from the log.",
            repaired=repair,
        )
    ]


def check(io: FileIO, root: str, *, repair: bool = False) -> list[Problem]:
    """What is wrong with the table at ``root`` (empty: nothing); with ``repair``, derived files
    found damaged are rebuilt (``Problem.repaired``)."""
    if log.is_legacy(io, root):
        try:
            legacy_log.load_snapshot(io, root, trust_unproven=False)
        except TabletsError as e:
            return [_damaged_log(e)]
        return [
            Problem(
                join(root, "_log"),
                "the table has the earlier layout (versions in _log/)",
                "Its first write moves it to the Delta log (docs/FORMAT.md, 'Tables of version 1').",
            )
        ]
    try:
        versions, ours = log.list_log(io, root, complete=True)
    except TabletsError as e:
        return [_damaged_log(e)]
    delta_cps = [v for v in versions if io.exists(join(log.log_dir(root), delta_checkpoint.name(v)))]
    out: list[Problem] = []
    start = versions[0]
    try:
        snap = log.load_snapshot(io, root, start) if start else None
        for v, _, state in log.walk(io, root, range(start + (start > 0), versions[-1] + 1), snap):
            if v in ours:
                out += _ours(io, root, v, state, repair)
            if v in delta_cps:
                out += _delta(io, root, v, state, repair)
            snap = state
    except TabletsError as e:
        return [*out, _damaged_log(e)]
    assert snap is not None
    out += _files(io, root, snap)
    return out


__all__ = ["Problem", "check"]
