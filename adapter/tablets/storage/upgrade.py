"""Moving a table of the earlier layout (versions in ``_log/``, the Delta log a copy derived
from it) to the Delta log as its one commit point: done by the table's first write, in one
commit (docs/FORMAT.md, "Tables of the earlier layout").

1. The Delta log the earlier release derived is completed (the versions a crash or an older
   release left out are written from ``_log``) and checked against ``_log``: at the newest
   version of ``_log`` both must hold the same files with the same vectors. If another Delta
   writer committed a version there that ``_log`` never took in, the two disagree: a
   ``FormatError`` names the version and nothing is written (tablets does not choose between
   two histories).
2. ``_log`` is ended with a version that says it moved (``legacy_log.end_log``): a reader or
   writer of the earlier release stops there.
3. One version on the Delta log restates the table as tablets knows it: its metadata (the key,
   the field ids) and every live file with its statistics (``add`` with ``dataChange`` false),
   operation ``UPGRADE``; a checkpoint is written at it so readers start there.
"""

from __future__ import annotations

import time
from dataclasses import replace

from tablets.exceptions import CommitConflict, FormatError
from tablets.storage import legacy_log, log
from tablets.storage.actions import Action, CommitInfo
from tablets.storage.snapshot import Snapshot, apply_version
from tablets.storage.tablet import new_id

OPERATION = "UPGRADE"


def _complete_delta_log(io: log.FileIO, root: str, old: Snapshot) -> None:
    """Write the versions the Delta log lacks up to ``old.version`` (from ``_log``), after
    checking, version by version, that it holds the same files as ``_log``: ``FormatError``
    (nothing written) where the two histories part."""
    snap: Snapshot | None = None
    legacy: Snapshot | None = None
    for v, actions in legacy_log.read_versions(io, root, range(old.version + 1)):
        legacy = legacy_log.advance(legacy, v, actions, root)
        if not io.exists(log.version_path(root, v)):
            log.write_version(io, root, snap, legacy, list(actions))
        snap = log.advance(snap, v, log.read_version_delta(io, root, v, snap), root)
        diff = _same_files(legacy, snap)
        if diff:
            raise FormatError(
                f"the table at {root} has two histories: at version {v}, {'; '.join(diff)} (another Delta "
                "writer committed to its Delta log while an earlier release of tablets wrote _log): nothing was "
                "written",
                help="Compare the two (DESCRIBE HISTORY, and a Delta reader's history), keep the table you want "
                "and copy it into a new tablet table (CREATE TABLE ... USING tablets AS SELECT ...).",
            )


def _same_files(a: Snapshot, b: Snapshot) -> list[str]:
    """How the files and vectors of two states of one version differ (empty: they agree)."""
    out = []
    for t in sorted(set(a.tablets) ^ set(b.tablets))[:3]:
        out.append(f"tablet {t} is live in {'_log' if t in a.tablets else '_delta_log'} only")
    for t in sorted(set(a.tablets) & set(b.tablets)):
        x, y = a.tablets[t], b.tablets[t]
        if x.add.path != y.add.path or x.add.rows != y.add.rows or x.live_rows != y.live_rows:
            out.append(f"tablet {t} has {x.live_rows} live rows in _log, {y.live_rows} in _delta_log")
        if len(out) >= 3:
            break
    return out


def restate(
    io: log.FileIO, root: str, exact: Snapshot | None, source: str, keys: tuple[str, ...] | None = None
) -> Snapshot:
    """Commit, on the newest version of the Delta log, the version that restates it as tablets
    keeps it (operation ``UPGRADE``, parameter ``from``): the metadata (``exact``'s where no
    other writer changed it since; ``keys`` as the key if given) and every live file (with
    ``exact``'s statistics where it has the file); a checkpoint at it. The state after."""
    base = log.load_snapshot_delta(io, root)
    for _ in range(20):
        meta = base.metadata
        if exact is not None and (base.metadata_version or 0) <= exact.version:
            meta = exact.metadata
        meta = replace(meta, owned=True, key_columns=meta.key_columns if keys is None else keys)
        actions: list[Action] = [meta]
        for t, st in base.tablets.items():
            mine = exact.tablets.get(t) if exact is not None else None
            actions.append(mine.add if mine is not None and mine.add.path == st.add.path else st.add)
        info = CommitInfo(OPERATION, new_id(), int(time.time() * 1000), base.version, (("from", source),))
        after = apply_version(base, base.version + 1, [*actions, info])
        info = replace(info, state=after.summary().record())
        after = replace(apply_version(base, base.version + 1, [*actions, info]), verified=True)
        if log.write_version(io, root, base, after, [*actions, info]):
            log.write_checkpoint(io, root, after)
            return after
        base = log.load_snapshot_delta(io, root)
    raise CommitConflict(f"could not restate {root} on its Delta log: other writers kept committing", base.version)


def upgrade(io: log.FileIO, root: str) -> Snapshot:
    """Move the table at ``root`` to the Delta log (if it is not moved yet); the state after."""
    while legacy_log.unmoved(io, root):
        old = legacy_log.load_snapshot(io, root, trust_unproven=False)
        _complete_delta_log(io, root, old)
        if legacy_log.end_log(io, root, old.version + 1):
            log.forget_layout(io, root)
            return restate(io, root, old, "_log")
    log.forget_layout(io, root)
    return log.load_snapshot(io, root)


def before_write(io: log.FileIO, root: str, snapshot: Snapshot) -> Snapshot:
    """The snapshot a write on a table of the earlier layout begins on: the table moved, at the
    version of the move. A statement that read an older state than the moved one runs again."""
    after = upgrade(io, root)
    if snapshot.version != after.version - 1:
        raise CommitConflict(
            f"the table at {root} changed while it moved to the Delta log (version {after.version})", after.version
        )
    diff = _same_files(snapshot, after)
    if diff:  # what it read came from a _log checkpoint that the versions of _log contradict
        raise CommitConflict(
            f"the state this statement read of {root} (checkpoint {snapshot.checkpoint} of _log) is not the one "
            f"_log's versions replay to ({'; '.join(diff)}); the table moved to the Delta log with the replayed "
            "state: the statement runs again on it",
            after.version,
        )
    return after
