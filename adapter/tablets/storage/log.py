"""The commit log: ``_log/<20-digit version>.json`` files, created atomically and exclusively.

A version file appears whole or not at all: it is written to a hidden temp file, fsynced, then
hard-linked to its final name (``link`` fails if the name exists, so two writers can never both
create version N). Checkpoints (``<version>.checkpoint.json``) hold a snapshot's state actions so
that opening a table replays at most ``CHECKPOINT_INTERVAL`` versions.
"""

from __future__ import annotations

import os
import re
import uuid

from tablets.exceptions import FormatError, TableNotFound
from tablets.storage.actions import Action, decode_actions, encode_actions
from tablets.storage.snapshot import Snapshot, apply_version, replay

LOG_DIR = "_log"
CHECKPOINT_INTERVAL = 50
_VERSION_RE = re.compile(r"^(\d{20})\.json$")
_CHECKPOINT_RE = re.compile(r"^(\d{20})\.checkpoint\.json$")


def version_name(version: int) -> str:
    return f"{version:020d}.json"


def checkpoint_name(version: int) -> str:
    return f"{version:020d}.checkpoint.json"


def log_dir(root: str) -> str:
    return os.path.join(root, LOG_DIR)


def write_exclusive(path: str, data: bytes) -> bool:
    """Create ``path`` with ``data`` atomically; False if it already exists."""
    directory = os.path.dirname(path)
    tmp = os.path.join(directory, f".tmp-{uuid.uuid4().hex}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)
    except FileExistsError:
        return False
    finally:
        os.unlink(tmp)
    dfd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
    return True


def list_log(root: str) -> tuple[list[int], list[int]]:
    """(committed versions, checkpoint versions), both sorted."""
    try:
        names = os.listdir(log_dir(root))
    except FileNotFoundError:
        raise TableNotFound(f"no tablet table at {root} (missing {LOG_DIR}/)") from None
    versions, checkpoints = [], []
    for n in names:
        if m := _VERSION_RE.match(n):
            versions.append(int(m.group(1)))
        elif m := _CHECKPOINT_RE.match(n):
            checkpoints.append(int(m.group(1)))
    versions.sort()
    checkpoints.sort()
    return versions, checkpoints


def latest_version(root: str) -> int:
    versions, _ = list_log(root)
    if not versions:
        raise TableNotFound(f"no committed version in {log_dir(root)}")
    return versions[-1]


def read_version(root: str, version: int) -> tuple[Action, ...]:
    path = os.path.join(log_dir(root), version_name(version))
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise TableNotFound(f"version {version} of {root} does not exist") from None
    return decode_actions(data, where=path)


def write_version(root: str, version: int, actions: list[Action]) -> bool:
    """Commit ``actions`` as ``version``; False if another writer committed it first."""
    return write_exclusive(os.path.join(log_dir(root), version_name(version)), encode_actions(actions))


def write_checkpoint(root: str, snapshot: Snapshot) -> None:
    path = os.path.join(log_dir(root), checkpoint_name(snapshot.version))
    if not os.path.exists(path):
        write_exclusive(path, encode_actions(list(snapshot.state_actions())))


def _read_checkpoint(root: str, version: int) -> Snapshot | None:
    path = os.path.join(log_dir(root), checkpoint_name(version))
    try:
        with open(path, "rb") as f:
            actions = decode_actions(f.read(), where=path)
    except (FileNotFoundError, FormatError):
        return None  # a checkpoint is an optimisation: fall back to replaying versions
    return apply_version(None, version, actions, where=path)


def load_snapshot(root: str, version: int | None = None) -> Snapshot:
    """The snapshot at ``version`` (default: the latest committed one)."""
    versions, checkpoints = list_log(root)
    if not versions:
        raise TableNotFound(f"no tablet table at {root} (no committed version)")
    target = versions[-1] if version is None else version
    if target not in versions:
        raise TableNotFound(
            f"version {target} of {root} does not exist (versions {versions[0]}..{versions[-1]})",
            help="Use a version listed by history().",
        )
    base = None
    for cp in reversed(checkpoints):
        if cp <= target and (base := _read_checkpoint(root, cp)) is not None:
            break
    start = base.version + 1 if base else versions[0]
    todo = [v for v in versions if start <= v <= target]
    return replay(base, ((v, read_version(root, v)) for v in todo))
