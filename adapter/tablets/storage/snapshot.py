"""Snapshots: the state of a table at one version, replayed from the log as a pure function.

Each snapshot carries a tally of its state (rows, deleted rows, deletion vectors and a digest of
its tablets and vectors), kept up to date action by action, so that a writer can record the
state after its commit (``commit_info.state``) and a reader can prove that a checkpoint, or a
replay, is the state of its version by comparing with that record (docs/FORMAT.md,
"Checkpoints"). The digest is a sum of per-entry hashes, so an action changes it in O(1).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from tablets.exceptions import FormatError
from tablets.storage.actions import (
    Action,
    AddTablet,
    CommitInfo,
    Metadata,
    RemoveTablet,
    SetDV,
)

_MOD = 1 << 128


def _h(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=16).digest(), "big")


def tablet_hash(a: AddTablet) -> int:
    """The digest term of a live tablet: its identity, path, row count and size (the fields a
    reader relies on to find and check the file; stats are covered by the checkpoint's CRC)."""
    return _h(f"add_tablet\n{a.tablet_id}\n{a.path}\n{a.rows}\n{a.bytes}")


def dv_hash(d: SetDV) -> int:
    return _h(f"set_dv\n{d.tablet_id}\n{d.path}\n{d.cardinality}\n{d.size}\n{d.checksum}")


@dataclass(frozen=True)
class TabletState:
    add: AddTablet
    dv: SetDV | None = None

    @property
    def tablet_id(self) -> str:
        return self.add.tablet_id

    @property
    def live_rows(self) -> int:
        return self.add.rows - (self.dv.cardinality if self.dv else 0)


@dataclass(frozen=True)
class Tally:
    """Running totals of a state: rows written into live tablets, rows their vectors delete,
    vectors, and the digest (sum of ``tablet_hash`` and ``dv_hash`` of every live entry, mod
    2^128)."""

    rows: int = 0
    deleted: int = 0
    dvs: int = 0
    digest: int = 0

    def plus(self, st: TabletState, sign: int) -> Tally:
        rows, deleted, dvs, digest = (
            self.rows + sign * st.add.rows,
            self.deleted,
            self.dvs,
            self.digest + sign * tablet_hash(st.add),
        )
        if st.dv is not None:
            deleted += sign * st.dv.cardinality
            dvs += sign
            digest += sign * dv_hash(st.dv)
        return Tally(rows, deleted, dvs, digest % _MOD)

    @staticmethod
    def of(tablets: Iterable[TabletState]) -> Tally:
        t = Tally()
        for st in tablets:
            t = t.plus(st, 1)
        return t


@dataclass(frozen=True)
class StateSummary:
    """What a writer records about the state after its commit (``commit_info.state``) and a
    checkpoint's header about the state it holds; ``metadata_version`` (the version whose
    ``metadata`` action is in force) is None where it is not known (a checkpoint written before
    checkpoints had headers)."""

    tablets: int
    dvs: int
    rows: int
    live_rows: int
    digest: str
    metadata_version: int | None = None

    def record(self) -> tuple[tuple[str, Any], ...]:
        pairs: dict[str, Any] = {
            "tablets": self.tablets,
            "dvs": self.dvs,
            "rows": self.rows,
            "live_rows": self.live_rows,
            "digest": self.digest,
        }
        if self.metadata_version is not None:
            pairs["metadata_version"] = self.metadata_version
        return tuple(sorted(pairs.items()))

    @staticmethod
    def from_record(pairs: Iterable[tuple[str, Any]] | Mapping[str, Any]) -> StateSummary:
        """The summary a commit or checkpoint header holds; ``FormatError`` if malformed."""
        d = dict(pairs.items() if isinstance(pairs, Mapping) else pairs)
        try:
            counts = [d["tablets"], d["dvs"], d["rows"], d["live_rows"]]
            mv = d.get("metadata_version")
            if not all(type(c) is int for c in counts) or (mv is not None and type(mv) is not int):
                raise TypeError("counts are not integers")
            tablets, dvs, rows, live_rows = counts
            return StateSummary(tablets, dvs, rows, live_rows, str(d["digest"]), mv)
        except (KeyError, TypeError) as e:
            raise FormatError(f"malformed state record {d!r} ({e})") from None

    def differences(self, other: StateSummary) -> list[str]:
        """The fields where ``other`` (a record) disagrees with this (a computed state)."""
        out = []
        for name in ("tablets", "dvs", "rows", "live_rows", "digest", "metadata_version"):
            mine, theirs = getattr(self, name), getattr(other, name)
            if name == "metadata_version" and (mine is None or theirs is None):
                continue
            if mine != theirs:
                out.append(f"{name} {mine}, recorded {theirs}")
        return out


@dataclass(frozen=True)
class Snapshot:
    version: int
    metadata: Metadata
    tablets: Mapping[str, TabletState]  # tablet id -> state, in commit order
    # the commit that made this version; None where the snapshot was read from a checkpoint
    commit: CommitInfo | None = field(default=None, compare=False)
    # the version whose metadata action is in force (None: read from a checkpoint without header)
    metadata_version: int | None = field(default=None, compare=False)
    tally: Tally | None = field(default=None, compare=False, repr=False)  # None: computed when asked
    # proven to be the state of ``version`` (by a checkpoint's proof, a commit's state record, or
    # a replay from version 0); False only on a checkpoint written before checkpoints had proofs
    verified: bool = field(default=True, compare=False)
    checkpoint: int | None = field(default=None, compare=False)  # the checkpoint it was built on

    def totals(self) -> Tally:
        return self.tally if self.tally is not None else Tally.of(self.tablets.values())

    @property
    def live_rows(self) -> int:
        t = self.totals()
        return t.rows - t.deleted

    @property
    def num_dvs(self) -> int:
        return self.totals().dvs

    def summary(self) -> StateSummary:
        t = self.totals()
        return StateSummary(
            len(self.tablets), t.dvs, t.rows, t.rows - t.deleted, f"{t.digest:032x}", self.metadata_version
        )

    def named_stats(self, tablet_id: str) -> AddTablet:
        """The tablet's ``add_tablet`` with its statistics keyed by column name, not physical
        name (``AddTablet.named``): what pruning by a statement's columns reads."""
        return self.tablets[tablet_id].add.named(self.metadata.mapping)

    def state_actions(self) -> tuple[Action, ...]:
        """The actions that rebuild this snapshot from nothing (a checkpoint's content)."""
        out: list[Action] = [self.metadata]
        for t in self.tablets.values():
            out.append(t.add)
            if t.dv is not None:
                out.append(t.dv)
        return tuple(out)


def apply_version(base: Snapshot | None, version: int, actions: Iterable[Action], where: str = "") -> Snapshot:
    """The snapshot after applying one committed version's actions to ``base`` (the commit's
    state record, if any, is not checked here: ``check_record``)."""
    metadata = base.metadata if base else None
    metadata_version = base.metadata_version if base else None
    tablets = dict(base.tablets) if base else {}
    t = base.totals() if base else Tally()
    rows, deleted, dvs, digest = t.rows, t.deleted, t.dvs, t.digest  # kept in locals: a checkpoint has 10^4+ actions
    commit = None
    for a in actions:
        if isinstance(a, Metadata):
            metadata, metadata_version = a, version
        elif isinstance(a, AddTablet):
            dv = None
            if (old := tablets.get(a.tablet_id)) is not None:
                rows, digest = rows - old.add.rows, digest - tablet_hash(old.add)
                if old.add.path == a.path:  # the same file restated (its statistics): its vector stays
                    dv = old.dv
                elif old.dv is not None:
                    deleted, dvs, digest = deleted - old.dv.cardinality, dvs - 1, digest - dv_hash(old.dv)
            tablets[a.tablet_id] = TabletState(a, dv)
            rows, digest = rows + a.rows, digest + tablet_hash(a)
        elif isinstance(a, RemoveTablet):
            if (old := tablets.pop(a.tablet_id, None)) is not None:
                rows, digest = rows - old.add.rows, digest - tablet_hash(old.add)
                if old.dv is not None:
                    deleted, dvs, digest = deleted - old.dv.cardinality, dvs - 1, digest - dv_hash(old.dv)
        elif isinstance(a, SetDV):
            state = tablets.get(a.tablet_id)
            if state is None:
                raise FormatError(f"log {where}: set_dv for unknown tablet {a.tablet_id}")
            if state.dv is not None:
                deleted, dvs, digest = deleted - state.dv.cardinality, dvs - 1, digest - dv_hash(state.dv)
            tablets[a.tablet_id] = TabletState(state.add, a)
            deleted, dvs, digest = deleted + a.cardinality, dvs + 1, digest + dv_hash(a)
        elif isinstance(a, CommitInfo):
            commit = a
        else:
            raise FormatError(f"log {where}: unexpected action {a!r}")
    if metadata is None:
        raise FormatError(f"log {where}: no metadata action at or before version {version}")
    return Snapshot(
        version,
        metadata,
        MappingProxyType(tablets),
        commit,
        metadata_version,
        Tally(rows, deleted, dvs, digest % _MOD),
        base.verified if base else True,
        base.checkpoint if base else None,
    )


class StateMismatch(FormatError):
    """A state computed from the log disagrees with the record of it (a commit's ``state`` or a
    checkpoint's header)."""

    def __init__(self, message: str, version: int, diff: str) -> None:
        self.version, self.diff = version, diff
        super().__init__(message)


def check_record(snap: Snapshot, where: str) -> Snapshot:
    """``snap`` checked against its commit's state record (when the commit has one): the
    snapshot, now verified, or ``StateMismatch``."""
    if snap.commit is None or not snap.commit.state:
        return snap
    recorded = StateSummary.from_record(snap.commit.state)
    diff = "; ".join(snap.summary().differences(recorded))
    if diff:
        raise StateMismatch(
            f"{where}: the state replayed is not the one its commit records ({diff})", snap.version, diff
        )
    if snap.verified and snap.metadata_version is not None:
        return snap
    return replace(snap, verified=True, metadata_version=recorded.metadata_version)


def replay(base: Snapshot | None, versions: Iterable[tuple[int, tuple[Action, ...]]]) -> Snapshot:
    """Fold versions (in order) onto ``base``, each checked against its commit's state record."""
    snap = base
    for version, actions in versions:
        snap = check_record(apply_version(snap, version, actions, where=f"version {version}"), f"version {version}")
    if snap is None:
        raise FormatError("log: no versions")
    return snap
