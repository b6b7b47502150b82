"""The commit log: ``_delta_log/<20-digit version>.json``, the table's one commit point.

A version of a table exists exactly when its Delta version file exists, whoever wrote it
(tablets, or another Delta writer: ``delta_codec`` reads both). It is created whole and
exclusively (``FileIO.create``: a hard link of a fsynced temp file on local disks, a
conditional PUT on object stores), so of two writers of version N exactly one succeeds.

Versions are contiguous. A listing is trusted only for what every store promises (the names it
returns exist); order comes from sorting the names, and the newest version is confirmed by
asking for the next one. A version missing between two listed ones, or before the newest when
no checkpoint covers it, is a ``FormatError``, never a shorter table.

Checkpoints of tablets' own (``_tablets/<version>.checkpoint.json``, ``tablets.storage.checkpoint``)
are derived: a state read from the log, used only once proven against the state record of a
commit (``commitInfo.tablets.state``), ignored with a warning otherwise. Delta's checkpoints
(``_delta_log/<version>.checkpoint.parquet``) are written beside them for Delta readers.

A table written before the Delta log was the commit point (versions in ``_log/``) is read from
there until its first write moves it (``tablets.storage.upgrade``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any

from tablets.exceptions import FormatError, TableNotFound
from tablets.storage import checkpoint as ckpt
from tablets.storage import delta_checkpoint, delta_codec, delta_log, legacy_log, listing
from tablets.storage.actions import Action, CommitInfo
from tablets.storage.checkpoint import Hint, Rejected, warn_once
from tablets.storage.fileio import FileIO, join
from tablets.storage.listing import CHECKPOINT_RE, LAST_CHECKPOINT, VERSION_RE, checkpoint_name, version_name
from tablets.storage.snapshot import (
    Snapshot,
    StateMismatch,
    StateSummary,
    apply_version,
    check_record,
)

LOG_DIR = delta_log.DELTA_LOG
AUX_DIR = "_tablets"  # derived files: checkpoints, their hint, markers of VACUUMs in progress
CHECKPOINT_INTERVAL = 50

__all__ = [
    "CHECKPOINT_INTERVAL",
    "LOG_DIR",
    "apply_version",
    "latest_version",
    "list_log",
    "load_snapshot",
    "log_dir",
    "read_version",
    "version_path",
    "walk",
    "write_checkpoint",
    "write_version",
]


def log_dir(root: str) -> str:
    return join(root, LOG_DIR)


def aux_dir(root: str) -> str:
    return join(root, AUX_DIR)


def checkpoint_path(root: str, version: int) -> str:
    return join(aux_dir(root), checkpoint_name(version))


def version_path(root: str, version: int) -> str:
    return join(log_dir(root), version_name(version))


# --- the layout ----------------------------------------------------------------------------

_moved: set[str] = set()  # roots known to have no unmoved _log (a table never goes back)


def is_legacy(io: FileIO, root: str) -> bool:
    """Whether ``root`` is a table of the earlier layout whose versions are still in ``_log/``
    (not yet moved by a write: ``tablets.storage.upgrade``)."""
    if root in _moved:
        return False
    legacy = legacy_log.unmoved(io, root)
    if not legacy and io.exists(version_path(root, 0)):
        _moved.add(root)
    return legacy


def forget_layout(io: FileIO, root: str) -> None:
    """``root`` moved to the Delta log (``tablets.storage.upgrade``)."""
    _moved.add(root)


def read_hint(io: FileIO, root: str) -> Hint | None:
    """What ``_tablets/_last_checkpoint`` says (only a hint)."""
    return listing.read_hint(io, join(aux_dir(root), LAST_CHECKPOINT))


def _scan(io: FileIO, root: str, start: int) -> tuple[list[int], list[int]]:
    """(versions, checkpoints) at or above ``start``, sorted."""
    after = f"{start - 1:020d}.json~" if start else None
    versions = sorted(
        int(m.group(1)) for f in io.list(log_dir(root), start_after=after) if (m := VERSION_RE.match(f.name))
    )
    checkpoints = sorted(
        int(m.group(1))
        for f in io.list(aux_dir(root))
        if (m := CHECKPOINT_RE.match(f.name)) and int(m.group(1)) >= start
    )
    return listing.confirmed(io, versions, start, lambda v: version_path(root, v)), checkpoints


def list_log(io: FileIO, root: str, *, complete: bool = False) -> tuple[list[int], list[int]]:
    """(committed versions, checkpoint versions), both sorted. Unless ``complete``, the listing
    starts at the checkpoint that ``_last_checkpoint`` names (older versions are left out).
    Raises TableNotFound if there is no committed version, FormatError if a version is missing
    in the range returned."""
    if is_legacy(io, root):
        return legacy_log.list_log(io, root, complete=complete)
    return _list(io, root, None if complete else read_hint(io, root))


def _list(io: FileIO, root: str, hint: Hint | None) -> tuple[list[int], list[int]]:
    return listing.checked(
        root,
        LOG_DIR,
        lambda start: _scan(io, root, start),
        hint,
        join(aux_dir(root), LAST_CHECKPOINT),
        lambda first: _delta_checkpoint_below(io, root, first) is not None,
    )


def is_tablet_table(io: FileIO, root: str) -> bool:
    """Cheap, for a root that has a log: whether a tablets writer wrote it (its ``_tablets/``, or
    its version 0), not only another Delta writer (a Delta table to adopt first)."""
    if is_legacy(io, root) or io.list(aux_dir(root)):
        return True
    try:
        return delta_codec.is_ours(read_lines(io, root, 0))
    except (FormatError, TableNotFound):
        return False


def has_version(io: FileIO, root: str) -> bool:
    """Whether ``root`` holds a tablet table: a log that a tablets writer wrote (a Delta table no
    tablets writer has adopted is not one yet). Cheap: a listing, and ``is_tablet_table``."""
    if is_legacy(io, root):
        return True
    try:
        list_log(io, root)
    except TableNotFound:
        return False
    except FormatError:  # a damaged tablet table is one (its error follows); another's Delta log is not
        return is_tablet_table(io, root)
    return is_tablet_table(io, root)


def latest_version(io: FileIO, root: str) -> int:
    versions, _ = list_log(io, root)
    return versions[-1]


def _no_version(root: str, version: int) -> TableNotFound:
    return TableNotFound(f"version {version} of {root} does not exist")


def read_lines(io: FileIO, root: str, version: int) -> list[dict[str, Any]]:
    path = version_path(root, version)
    try:
        data = io.read(path)
    except FileNotFoundError:
        raise _no_version(root, version) from None
    return delta_codec.parse_lines(data, path)


def decode(
    io: FileIO, root: str, version: int, lines: list[dict[str, Any]], before: Snapshot | None
) -> tuple[Action, ...]:
    return delta_codec.decode_version(
        io,
        root,
        version,
        lines,
        before.metadata if before else None,
        before.tablets if before else {},
        version_path(root, version),
    )


def read_version(io: FileIO, root: str, version: int, before: Snapshot | None = None) -> tuple[Action, ...]:
    """The actions of ``version``, read on ``before`` (the state of the version before it; read
    from the log when not given)."""
    if before is None and version > 0 and not is_legacy(io, root):
        before = load_snapshot(io, root, version - 1)
    if is_legacy(io, root):
        return legacy_log.read_version(io, root, version)
    return read_version_delta(io, root, version, before)


def read_version_delta(io: FileIO, root: str, version: int, before: Snapshot | None) -> tuple[Action, ...]:
    """``read_version`` of the Delta log, whatever the table's layout (``upgrade`` reads both)."""
    return decode(io, root, version, read_lines(io, root, version), before)


def walk(
    io: FileIO, root: str, versions: Iterable[int], snap: Snapshot | None
) -> Iterator[tuple[int, tuple[Action, ...], Snapshot]]:
    """``(version, actions, state after it)`` of each of ``versions`` (consecutive, the first one
    after ``snap``'s), each checked against its commit's state record; read ahead on object
    stores (``FileIO.read_many``)."""
    if is_legacy(io, root):
        for v, actions in legacy_log.read_versions(io, root, versions):
            snap = legacy_log.advance(snap, v, actions, root)
            yield v, actions, snap
        return
    yield from _walk_delta(io, root, versions, snap)


def _walk_delta(
    io: FileIO, root: str, versions: Iterable[int], snap: Snapshot | None
) -> Iterator[tuple[int, tuple[Action, ...], Snapshot]]:
    wanted = list(versions)
    data = io.read_many(version_path(root, v) for v in wanted)
    for v in wanted:
        try:
            raw = next(data)
        except FileNotFoundError:
            raise _no_version(root, v) from None
        actions = decode(io, root, v, delta_codec.parse_lines(raw, version_path(root, v)), snap)
        snap = advance(snap, v, actions, root)
        yield v, actions, snap


def read_commit(io: FileIO, root: str, version: int) -> CommitInfo | None:
    """The ``commit_info`` of ``version`` (``TableNotFound`` if the log does not hold it)."""
    if is_legacy(io, root):
        return legacy_log.read_commit(io, root, version)
    lines = read_lines(io, root, version)
    body = next((line["commitInfo"] for line in lines if "commitInfo" in line), None)
    return delta_codec.decode_commit(body, version)


def write_version(io: FileIO, root: str, before: Snapshot | None, after: Snapshot, actions: list[Action]) -> bool:
    """Commit ``actions`` (which take ``before`` to ``after``) as version ``after.version``;
    False if the version exists (another writer's, or this very commit's whose answer was lost:
    ``transaction`` tells which when it reads the version)."""
    lines = delta_log.delta_actions(root, before, after, actions)
    return io.create(version_path(root, after.version), delta_log.encode(lines))


def write_checkpoint(io: FileIO, root: str, snapshot: Snapshot) -> bool:
    """Create the checkpoints of ``snapshot`` (a state proven to be its version's: writers pass
    the state they just committed): tablets' own, then Delta's; False if ours exists."""
    data = ckpt.encode(snapshot)
    if not io.create(checkpoint_path(root, snapshot.version), data):
        return False
    hint = read_hint(io, root)
    if hint is None or hint.version < snapshot.version:
        io.write(join(aux_dir(root), LAST_CHECKPOINT), Hint(snapshot.version, len(data), ckpt.crc(data)).encode())
    try:
        delta_log.write_checkpoint(io, root, snapshot)
    except OSError as e:  # a reader's shortcut only: the version is committed
        logging.getLogger("tablets").warning(
            "the Delta checkpoint of %s at %d was not written (%s)", root, snapshot.version, e
        )
    return True


def read_checkpoint(io: FileIO, root: str, version: int, hint: Hint | None = None) -> Snapshot:
    """The snapshot in the checkpoint at ``version`` with what the file alone proves (its hint,
    header and checksum: ``checkpoint.decode``); ``Rejected`` if it fails."""
    path = checkpoint_path(root, version)
    try:
        data = io.read(path)
    except FileNotFoundError:
        raise Rejected("it is gone") from None
    return ckpt.decode(data, path, version, hint)


def _on_checkpoint(io: FileIO, root: str, cp: int, target: int, hint: Hint | None) -> Snapshot:
    """The snapshot at ``target`` built on the checkpoint at ``cp`` and proven (``Rejected`` if
    the checkpoint fails its proof, or no commit's record reaches it)."""
    base = read_checkpoint(io, root, cp, hint)
    snap, proven = base, False
    wanted = range(cp + 1, target + 1)
    data = io.read_many(version_path(root, v) for v in wanted)
    try:
        for v in wanted:  # a version that does not parse is its own error, not the checkpoint's
            actions = decode(io, root, v, delta_codec.parse_lines(next(data), version_path(root, v)), snap)
            snap = check_record(apply_version(snap, v, actions, where=f"version {v}"), f"version {v}")
            proven = proven or bool(snap.commit and snap.commit.state)
    except StateMismatch as e:  # the checkpoint, or version v: a replay without it tells
        raise Rejected(f"the state it leads to disagrees with the record of version {e.version} ({e.diff})") from None
    if not proven:  # nothing replayed on top records a state: its own version's commit must
        commit = read_commit(io, root, cp)
        if commit is None or not commit.state:
            raise Rejected(f"version {cp} records no state to prove it by")
        recorded = StateSummary.from_record(commit.state)
        diff = base.summary().differences(recorded)
        if diff:
            raise Rejected(f"it is not the state its version's commit records ({'; '.join(diff)})")
        if target == cp and snap.metadata_version is None:
            snap = replace(snap, metadata_version=recorded.metadata_version)
    return replace(snap, verified=True)


def load_snapshot(io: FileIO, root: str, version: int | None = None, *, trust_unproven: bool = True) -> Snapshot:
    """The snapshot at ``version`` (default: the latest committed one), from the newest
    checkpoint at or below it that passes its proof (the others are ignored with a warning),
    else from version 0."""
    if is_legacy(io, root):
        return legacy_log.load_snapshot(io, root, version, trust_unproven=trust_unproven)
    return load_snapshot_delta(io, root, version)


def _delta_checkpoint_below(io: FileIO, root: str, first: int) -> int | None:
    """The version of Delta's checkpoint a log starting at ``first`` begins from (one at
    ``first`` or ``first - 1``), if there is one."""
    for v in (first, first - 1):
        if v >= 0 and io.exists(join(log_dir(root), delta_checkpoint.name(v))):
            return v
    return None


def _on_delta_checkpoint(io: FileIO, root: str, cp: int, target: int) -> Snapshot:
    """The snapshot at ``target`` from Delta's checkpoint at ``cp``: what a log whose older
    versions another Delta writer cleaned up starts from. Proven by the state record of version
    ``cp`` where the log still holds one, else read as the only account of those versions."""
    where = join(log_dir(root), delta_checkpoint.name(cp))
    try:
        lines = delta_checkpoint.read(io, root, cp)
    except (OSError, ValueError) as e:
        raise FormatError(f"log {where}: unreadable Delta checkpoint ({e})") from None
    actions = [a for a in decode(io, root, cp, lines, None) if not isinstance(a, CommitInfo)]
    snap = replace(apply_version(None, cp, actions, where=where), checkpoint=cp, metadata_version=None)
    try:
        commit = read_commit(io, root, cp)
    except TableNotFound:
        commit = None
    if commit is not None and commit.state:
        diff = snap.summary().differences(StateSummary.from_record(commit.state))
        if diff:
            raise FormatError(
                f"log {where}: not the state version {cp} records ({'; '.join(diff)})",
                help=f"Delete {where} if the versions before it are still in {LOG_DIR}/; else restore it.",
            )
        snap = replace(snap, metadata_version=StateSummary.from_record(commit.state).metadata_version)
    return _replayed(io, root, range(cp + 1, target + 1), snap)


def _replayed(io: FileIO, root: str, versions: range, snap: Snapshot | None) -> Snapshot:
    """``snap`` with ``versions`` replayed on it (each checked against its commit's record)."""
    for _, _, after in _walk_delta(io, root, versions, snap):
        snap = after
    assert snap is not None
    return snap


def load_snapshot_delta(io: FileIO, root: str, version: int | None = None) -> Snapshot:
    """``load_snapshot`` of the Delta log, whatever the table's layout."""
    hint = read_hint(io, root)
    versions, checkpoints = _list(io, root, hint)
    if version is not None and version < versions[0]:
        versions, checkpoints = _list(io, root, None)  # time travel before the hint
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
                return _on_checkpoint(io, root, cp, target, hint)
            except Rejected as e:
                path = checkpoint_path(root, cp)
                rejected.append((path, str(e)))
                warn_once(path, f"checkpoint {path} is not used: {e}; the reader replays the log instead")
        if attempt or versions[0] == 0:
            break
        versions, checkpoints = _scan(io, root, 0)  # the listing began at the hint: older checkpoints, version 0
    missing = listing.gaps(versions, 0, target)
    dcp = _delta_checkpoint_below(io, root, versions[0]) if missing else None
    if dcp is not None and dcp <= target:  # older versions cleaned up (by a Delta writer): Delta's checkpoint
        return _on_delta_checkpoint(io, root, dcp, target)
    if missing:
        if not rejected:
            raise listing.missing_error(root, missing, versions, LOG_DIR)
        names = ", ".join(p for p, _ in rejected)
        raise FormatError(
            f"the log of {root} cannot be read at version {target}: checkpoint {names} failed its proof "
            f"({'; '.join(r for _, r in rejected)}) and version(s) {listing.runs(missing)}, needed to replay the log "
            "without it, are missing",
            help=f"Restore {names} from a backup (or the missing versions under {LOG_DIR}/); until then the "
            "table cannot be read or written at this version.",
        )
    return _replayed(io, root, range(target + 1), None)


def advance(snap: Snapshot | None, version: int, actions: tuple[Action, ...], root: str) -> Snapshot:
    """``snap`` with one more version applied and checked against its commit's state record
    (a writer catching up with the versions that landed since it read)."""
    try:
        return check_record(apply_version(snap, version, actions, where=f"version {version}"), f"version {version}")
    except StateMismatch as e:
        path = version_path(root, e.version)
        raise FormatError(
            f"log {path}: {e.detail} (a damaged version file)",
            help="Restore the version file from a copy, or time-travel to the version before it.",
        ) from None
