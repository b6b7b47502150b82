"""The log of the earlier layout: ``_log/<20-digit version>.json`` files of tablets' own
actions, with ``_delta_log`` a copy derived from it (docs/FORMAT.md, "Tables of the earlier
layout"). Read as it is until the table's first write moves it to the Delta log
(``tablets.storage.upgrade``), which then ends ``_log`` with a version that says where the log
went: a reader or writer of the earlier release meets an action it does not know and stops,
rather than read or write a log that is no longer the table's.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator
from dataclasses import replace

from tablets.exceptions import FormatError, TableNotFound
from tablets.storage import checkpoint as ckpt
from tablets.storage import listing
from tablets.storage.actions import Action, CommitInfo, decode_actions
from tablets.storage.checkpoint import Hint, Rejected, warn_once
from tablets.storage.fileio import FileIO, join
from tablets.storage.listing import CHECKPOINT_RE, LAST_CHECKPOINT, VERSION_RE, checkpoint_name, version_name
from tablets.storage.snapshot import (
    Snapshot,
    StateMismatch,
    StateSummary,
    apply_version,
    check_record,
    replay,
)

LOG_DIR = "_log"
__all__ = ["end_log", "list_log", "load_snapshot", "read_commit", "read_version", "read_versions", "unmoved"]


MOVED = "moved"  # the action of the version that ends _log: {"moved": {"to": "_delta_log"}}


def unmoved(io: FileIO, root: str) -> bool:
    """Whether ``_log`` holds versions and was not moved to the Delta log."""
    names = sorted(f.name for f in io.list(log_dir(root)) if VERSION_RE.match(f.name))
    if not names:
        return False
    return not _moved(io.read(join(log_dir(root), names[-1])))


def _moved(data: bytes) -> bool:
    try:
        return MOVED in json.loads(data.decode().splitlines()[0])
    except (ValueError, IndexError, UnicodeDecodeError):
        return False


def end_log(io: FileIO, root: str, version: int) -> bool:
    """End ``_log`` at ``version`` with the version that says it moved; False if that version
    exists (a writer of the earlier release committed it first)."""
    body = json.dumps({MOVED: {"to": "_delta_log"}}, separators=(",", ":")) + "\n"
    return io.create(version_path(root, version), body.encode())


def log_dir(root: str) -> str:
    return join(root, LOG_DIR)


def read_hint(io: FileIO, root: str) -> Hint | None:
    """What ``_last_checkpoint`` says (only a hint)."""
    return listing.read_hint(io, join(log_dir(root), LAST_CHECKPOINT))


def _scan(io: FileIO, root: str, start: int) -> tuple[list[int], list[int]]:
    """(versions, checkpoints) at or above ``start``, sorted."""
    # "<v>.checkpoint.json" sorts before "<v>.json" ('.c' < '.j'); "~" sorts after both
    after = f"{start - 1:020d}.json~" if start else None
    versions, checkpoints = [], []
    for f in io.list(log_dir(root), start_after=after):
        if m := VERSION_RE.match(f.name):
            versions.append(int(m.group(1)))
        elif m := CHECKPOINT_RE.match(f.name):
            checkpoints.append(int(m.group(1)))
    checkpoints.sort()
    return listing.confirmed(io, sorted(versions), start, lambda v: version_path(root, v)), checkpoints


def list_log(io: FileIO, root: str, *, complete: bool = False) -> tuple[list[int], list[int]]:
    """(committed versions, checkpoint versions), both sorted. Unless ``complete``, the listing
    starts at the checkpoint that ``_last_checkpoint`` names (older versions are left out).
    Raises TableNotFound if there is no committed version, FormatError if a version is missing
    in the range returned."""
    return _list(io, root, None if complete else read_hint(io, root))


def _list(io: FileIO, root: str, hint: Hint | None) -> tuple[list[int], list[int]]:
    return listing.checked(
        root, LOG_DIR, lambda start: _scan(io, root, start), hint, join(log_dir(root), LAST_CHECKPOINT), lambda _: False
    )


def version_path(root: str, version: int) -> str:
    return join(log_dir(root), version_name(version))


def _no_version(root: str, version: int) -> TableNotFound:
    return TableNotFound(f"version {version} of {root} does not exist")


def read_version(io: FileIO, root: str, version: int) -> tuple[Action, ...]:
    path = version_path(root, version)
    try:
        data = io.read(path)
    except FileNotFoundError:
        raise _no_version(root, version) from None
    return decode_actions(data, where=path)


def read_versions(io: FileIO, root: str, versions: Iterable[int]) -> Iterator[tuple[int, tuple[Action, ...]]]:
    """``(version, actions)`` of each of ``versions`` in order, read ahead on object stores
    (``FileIO.read_many``); ``TableNotFound`` at the first that does not exist."""
    paths = [(v, version_path(root, v)) for v in versions]
    data = io.read_many(path for _, path in paths)
    for v, path in paths:
        try:
            raw = next(data)
        except FileNotFoundError:
            raise _no_version(root, v) from None
        yield v, decode_actions(raw, where=path)


def read_commit(io: FileIO, root: str, version: int) -> CommitInfo | None:
    """The ``commit_info`` of ``version`` (``TableNotFound`` if the log does not hold it)."""
    return next((a for a in read_version(io, root, version) if isinstance(a, CommitInfo)), None)


def read_checkpoint(io: FileIO, root: str, version: int, hint: Hint | None = None) -> Snapshot:
    """The snapshot in the checkpoint at ``version`` with what the file alone proves (its hint,
    header and checksum: ``checkpoint.decode``); ``Rejected`` if it fails."""
    path = join(log_dir(root), checkpoint_name(version))
    try:
        data = io.read(path)
    except FileNotFoundError:
        raise Rejected("it is gone") from None
    return ckpt.decode(data, path, version, hint)


def _on_checkpoint(
    io: FileIO, root: str, cp: int, target: int, hint: Hint | None, trust_unproven: bool
) -> Snapshot | None:
    """The snapshot at ``target`` built on the checkpoint at ``cp`` and proven (``Rejected`` if
    the checkpoint fails its proof); None for an unproven old checkpoint that is not trusted."""
    base = read_checkpoint(io, root, cp, hint)
    snap, proven = base, False
    for v, actions in read_versions(io, root, range(cp + 1, target + 1)):
        snap = apply_version(snap, v, actions, where=f"version {v}")
        try:
            snap = check_record(snap, f"version {v}")
        except StateMismatch as e:  # the checkpoint, or version v: a replay without it tells
            raise Rejected(f"the state it leads to disagrees with the record of version {v} ({e.diff})") from None
        proven = proven or bool(snap.commit and snap.commit.state)
    if not proven:  # nothing replayed on top records a state: its own version's commit must
        commit = read_commit(io, root, cp)
        if commit is not None and commit.state:
            recorded = StateSummary.from_record(commit.state)
            diff = base.summary().differences(recorded)
            if diff:
                raise Rejected(f"it is not the state its version's commit records ({'; '.join(diff)})")
            if target == cp and snap.metadata_version is None:
                snap = replace(snap, metadata_version=recorded.metadata_version)
            proven = True
    if proven or snap.verified:
        return replace(snap, verified=True)
    if not trust_unproven:
        return None
    path = join(log_dir(root), checkpoint_name(cp))
    warn_once(
        path, f"checkpoint {path} has no proof (written before checkpoints had headers): read as it is", logging.INFO
    )
    return snap


def load_snapshot(io: FileIO, root: str, version: int | None = None, *, trust_unproven: bool = True) -> Snapshot:
    """The snapshot at ``version`` (default: the latest committed one), from the newest
    checkpoint at or below it that passes its proof (the others are ignored with a warning),
    else from version 0. ``trust_unproven=False`` (writers) passes over checkpoints written
    before checkpoints had proofs unless a commit's state record proves them."""
    hint = read_hint(io, root)
    versions, checkpoints = _list(io, root, hint)
    if version is not None and version < versions[0]:
        versions, checkpoints = list_log(io, root, complete=True)  # time travel before the hint
    target = versions[-1] if version is None else version
    if target not in versions:
        raise TableNotFound(
            f"version {target} of {root} does not exist (versions {versions[0]}..{versions[-1]})",
            help="Use a version listed by history().",
        )
    rejected: list[tuple[str, str]] = []
    tried: set[int] = set()
    for attempt in range(2):
        for cp in reversed(checkpoints):
            if cp > target or cp in tried or listing.gaps(versions, cp + 1, target):
                continue
            tried.add(cp)
            try:
                snap = _on_checkpoint(io, root, cp, target, hint, trust_unproven)
            except Rejected as e:
                path = join(log_dir(root), checkpoint_name(cp))
                rejected.append((path, str(e)))
                warn_once(path, f"checkpoint {path} is not used: {e}; the reader replays the log instead")
                continue
            if snap is not None:
                return snap
        if attempt or versions[0] == 0:
            break
        versions, checkpoints = _scan(io, root, 0)  # the listing began at the hint: older checkpoints, version 0
    missing = listing.gaps(versions, 0, target)
    if missing:
        if not rejected:
            raise listing.missing_error(root, missing, versions, LOG_DIR)
        names = ", ".join(p for p, _ in rejected)
        raise FormatError(
            f"the log of {root} cannot be read at version {target}: checkpoint {names} failed its proof "
            f"({'; '.join(r for _, r in rejected)}) and version(s) {listing.runs(missing)}, needed to replay the log "
            "without it, are missing",
            help=f"Restore {names} from a backup (or the missing versions under _log/); until then the table "
            "cannot be read or written at this version.",
        )
    return _replay_all(io, root, target)


def advance(snap: Snapshot | None, version: int, actions: tuple[Action, ...], root: str) -> Snapshot:
    """``snap`` with one more version applied and checked against its commit's state record
    (a writer catching up with the versions that landed since it read)."""
    try:
        return check_record(apply_version(snap, version, actions, where=f"version {version}"), f"version {version}")
    except StateMismatch as e:
        raise _damaged(root, e) from None


def _damaged(root: str, e: StateMismatch) -> FormatError:
    path = version_path(root, e.version)
    return FormatError(
        f"log {path}: {e.detail} (a damaged version file)",
        help="Restore the version file from a copy, or time-travel to the version before it.",
    )


def _replay_all(io: FileIO, root: str, target: int) -> Snapshot:
    try:
        return replay(None, read_versions(io, root, range(target + 1)))
    except StateMismatch as e:
        raise _damaged(root, e) from None
