"""Snapshots: the state of a table at one version, replayed from the log as a pure function."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from tablets.exceptions import FormatError
from tablets.storage.actions import (
    Action,
    AddTablet,
    CommitInfo,
    Metadata,
    RemoveTablet,
    SetDV,
)


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
class Snapshot:
    version: int
    metadata: Metadata
    tablets: Mapping[str, TabletState]  # tablet id -> state, in commit order
    # the commit that made this version; None where the snapshot was read from a checkpoint
    commit: CommitInfo | None = field(default=None, compare=False)

    @property
    def live_rows(self) -> int:
        return sum(t.live_rows for t in self.tablets.values())

    @property
    def num_dvs(self) -> int:
        return sum(1 for t in self.tablets.values() if t.dv is not None)

    def named_stats(self, tablet_id: str) -> AddTablet:
        """The tablet's ``add_tablet`` with its statistics keyed by column name, not physical
        name (``ColumnMapping.logical_stats``): what pruning by a statement's columns reads."""
        return self.metadata.mapping.logical_stats(self.tablets[tablet_id].add)

    def state_actions(self) -> tuple[Action, ...]:
        """The actions that rebuild this snapshot from nothing (a checkpoint's content)."""
        out: list[Action] = [self.metadata]
        for t in self.tablets.values():
            out.append(t.add)
            if t.dv is not None:
                out.append(t.dv)
        return tuple(out)


def apply_version(
    base: Snapshot | None, version: int, actions: Iterable[Action], where: str = ""
) -> Snapshot:
    """The snapshot after applying one committed version's actions to ``base``."""
    metadata = base.metadata if base else None
    tablets = dict(base.tablets) if base else {}
    commit = None
    for a in actions:
        if isinstance(a, Metadata):
            metadata = a
        elif isinstance(a, AddTablet):
            tablets[a.tablet_id] = TabletState(a)
        elif isinstance(a, RemoveTablet):
            tablets.pop(a.tablet_id, None)
        elif isinstance(a, SetDV):
            state = tablets.get(a.tablet_id)
            if state is None:
                raise FormatError(f"log {where}: set_dv for unknown tablet {a.tablet_id}")
            tablets[a.tablet_id] = replace(state, dv=a)
        elif isinstance(a, CommitInfo):
            commit = a
        else:
            raise FormatError(f"log {where}: unexpected action {a!r}")
    if metadata is None:
        raise FormatError(f"log {where}: no metadata action at or before version {version}")
    return Snapshot(version, metadata, MappingProxyType(tablets), commit)


def replay(
    base: Snapshot | None, versions: Iterable[tuple[int, tuple[Action, ...]]]
) -> Snapshot:
    """Fold versions (in order) onto ``base``."""
    snap = base
    for version, actions in versions:
        snap = apply_version(snap, version, actions, where=f"version {version}")
    if snap is None:
        raise FormatError("log: no versions")
    return snap
