"""The commit log: ``_log/<20-digit version>.json`` files, created atomically and exclusively.

A version file appears whole or not at all, and of two writers of version N exactly one
creates it: ``FileIO.create`` (a hard link of a fsynced temp file on local disks, a conditional
PUT on object stores). Checkpoints (``<version>.checkpoint.json``) hold a snapshot's state
actions so that opening a table replays at most ``CHECKPOINT_INTERVAL`` versions;
``_last_checkpoint`` names the newest one, so a reader lists the log from there on.

Versions are contiguous. A listing is trusted only for what every store promises (the names it
returns exist); order comes from sorting the names, and the newest version is confirmed by
asking for the next one. A version missing between two listed ones, or before the newest when
no checkpoint covers it, is a ``FormatError``, never a shorter table.
"""

from __future__ import annotations

import json
import re

from tablets.exceptions import FormatError, TableNotFound
from tablets.storage.actions import Action, CommitInfo, decode_actions, encode_actions
from tablets.storage.fileio import FileIO, join
from tablets.storage.snapshot import Snapshot, apply_version, replay

LOG_DIR = "_log"
LAST_CHECKPOINT = "_last_checkpoint"
CHECKPOINT_INTERVAL = 50
_VERSION_RE = re.compile(r"^(\d{20})\.json$")
_CHECKPOINT_RE = re.compile(r"^(\d{20})\.checkpoint\.json$")

__all__ = [
    "CHECKPOINT_INTERVAL",
    "LOG_DIR",
    "apply_version",
    "latest_version",
    "list_log",
    "load_snapshot",
    "log_dir",
    "read_version",
    "write_checkpoint",
    "write_version",
]


def version_name(version: int) -> str:
    return f"{version:020d}.json"


def checkpoint_name(version: int) -> str:
    return f"{version:020d}.checkpoint.json"


def log_dir(root: str) -> str:
    return join(root, LOG_DIR)


def _hint(io: FileIO, root: str) -> int | None:
    """The version of the newest checkpoint, as ``_last_checkpoint`` says (only a hint)."""
    try:
        return int(json.loads(io.read(join(log_dir(root), LAST_CHECKPOINT)))["version"])
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return None


def list_log(io: FileIO, root: str, *, complete: bool = False) -> tuple[list[int], list[int]]:
    """(committed versions, checkpoint versions), both sorted. Unless ``complete``, the listing
    starts at the newest checkpoint that ``_last_checkpoint`` names (older versions are left
    out). Raises TableNotFound if there is no committed version, FormatError if a version is
    missing in the range returned."""
    start = 0 if complete else (_hint(io, root) or 0)
    # "<v>.checkpoint.json" sorts before "<v>.json" ('.c' < '.j'); "~" sorts after both
    after = f"{start - 1:020d}.json~" if start else None
    versions, checkpoints = [], []
    for f in io.list(log_dir(root), start_after=after):
        if m := _VERSION_RE.match(f.name):
            versions.append(int(m.group(1)))
        elif m := _CHECKPOINT_RE.match(f.name):
            checkpoints.append(int(m.group(1)))
    if not versions and not checkpoints:
        if start:
            return list_log(io, root, complete=True)  # a stale hint
        raise TableNotFound(f"no tablet table at {root} (no {LOG_DIR}/ with a committed version)")
    versions.sort()
    checkpoints.sort()
    # a listing may lag behind the newest commits: ask for the next version until it is absent
    nxt = (versions[-1] + 1) if versions else start
    while io.exists(join(log_dir(root), version_name(nxt))):
        versions.append(nxt)
        nxt += 1
    if not versions:
        raise TableNotFound(f"no tablet table at {root} (no committed version)")
    expected = start
    for v in versions:
        if v != expected:
            missing = f"{expected}" if v == expected + 1 else f"{expected}..{v - 1}"
            raise FormatError(
                f"the log of {root} is missing version(s) {missing} (the next one present is {v})",
                help="Restore the missing files under _log/ from a backup. A table with a gap in its "
                "log is not read, written or vacuumed until the log is whole again.",
            )
        expected = v + 1
    return versions, checkpoints


def latest_version(io: FileIO, root: str) -> int:
    versions, _ = list_log(io, root)
    return versions[-1]


def read_version(io: FileIO, root: str, version: int) -> tuple[Action, ...]:
    path = join(log_dir(root), version_name(version))
    try:
        data = io.read(path)
    except FileNotFoundError:
        raise TableNotFound(f"version {version} of {root} does not exist") from None
    return decode_actions(data, where=path)


def read_commit(io: FileIO, root: str, version: int) -> CommitInfo | None:
    """The ``commit_info`` of ``version`` (``TableNotFound`` if the log does not hold it)."""
    return next((a for a in read_version(io, root, version) if isinstance(a, CommitInfo)), None)


def write_version(io: FileIO, root: str, version: int, actions: list[Action]) -> bool:
    """Commit ``actions`` as ``version``; False if another writer committed it first."""
    return io.create(join(log_dir(root), version_name(version)), encode_actions(actions))


def write_checkpoint(io: FileIO, root: str, snapshot: Snapshot) -> None:
    path = join(log_dir(root), checkpoint_name(snapshot.version))
    if io.create(path, encode_actions(list(snapshot.state_actions()))) or io.exists(path):
        hint = json.dumps({"version": snapshot.version}).encode()
        if (_hint(io, root) or -1) < snapshot.version:
            io.write(join(log_dir(root), LAST_CHECKPOINT), hint)


def _read_checkpoint(io: FileIO, root: str, version: int) -> Snapshot | None:
    path = join(log_dir(root), checkpoint_name(version))
    try:
        actions = decode_actions(io.read(path), where=path)
    except (FileNotFoundError, FormatError):
        return None  # a checkpoint is an optimisation: fall back to replaying versions
    return apply_version(None, version, actions, where=path)


def load_snapshot(io: FileIO, root: str, version: int | None = None) -> Snapshot:
    """The snapshot at ``version`` (default: the latest committed one)."""
    versions, checkpoints = list_log(io, root)
    if version is not None and version < versions[0]:
        versions, checkpoints = list_log(io, root, complete=True)  # time travel before the hint
    target = versions[-1] if version is None else version
    if target not in versions:
        raise TableNotFound(
            f"version {target} of {root} does not exist (versions {versions[0]}..{versions[-1]})",
            help="Use a version listed by history().",
        )
    base = None
    for cp in reversed(checkpoints):
        if cp <= target and (base := _read_checkpoint(io, root, cp)) is not None:
            break
    if base is None and versions[0] != 0:  # the hinted checkpoint is unreadable: replay it all
        return load_snapshot_complete(io, root, target)
    start = base.version + 1 if base else versions[0]
    todo = [v for v in versions if start <= v <= target]
    return replay(base, ((v, read_version(io, root, v)) for v in todo))


def load_snapshot_complete(io: FileIO, root: str, version: int) -> Snapshot:
    versions, _ = list_log(io, root, complete=True)
    if version not in versions:
        raise TableNotFound(f"version {version} of {root} does not exist")
    return replay(None, ((v, read_version(io, root, v)) for v in versions if v <= version))
