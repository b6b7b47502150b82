"""Table maintenance that is pure log work: restore a version, find a version by time, and the
auto-compaction policy (which tablets are worth rewriting after a commit).

Auto-compaction (table property ``auto_compact``, like Delta's
``delta.autoOptimize.autoCompact``; on by default for dbt ``merge_tablets`` models): after a
statement commits, the table's tablets are checked and, when the policy says so, rewritten in a
commit of their own (operation ``OPTIMIZE``, parameter ``auto=true``). The policy
(``AutoCompactPolicy``, thresholds as table properties):

- a tablet is **small** when its live rows are below ``auto_compact_small_fraction`` (default
  0.25) of ``target_tablet_rows``; it is **deletion-heavy** when it was written with at least
  that many rows and more than ``auto_compact_max_deleted_fraction`` (default 0.5) of them are
  deleted;
- compaction runs when there are at least ``auto_compact_min_tablets`` (default 16) small
  tablets, or any deletion-heavy one; it rewrites all of them (and only them).

So a table that receives many small merges keeps fewer than ``auto_compact_min_tablets`` small
tablets (plus the full ones). A compaction that loses a commit race gives up: the statement
that triggered it has already committed and never fails because of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from tablets.exceptions import FormatError, TableNotFound, TabletsError
from tablets.settings import flag
from tablets.storage.actions import Action, AddTablet, Metadata, RemoveTablet, SetDV
from tablets.storage.properties import COLUMN_LISTS
from tablets.storage.snapshot import Snapshot
from tablets.storage.transaction import DEFAULT_TARGET_TABLET_ROWS

AUTO_COMPACT = "auto_compact"


def _number(props: Mapping[str, str], key: str, default: float) -> float:
    raw = props.get(key)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise TabletsError(f"table property {key}={raw!r} is not a number", help=f"Set {key} to a number.") from None


@dataclass(frozen=True)
class AutoCompactPolicy:
    enabled: bool = False
    target_tablet_rows: int = DEFAULT_TARGET_TABLET_ROWS
    small_fraction: float = 0.25
    max_deleted_fraction: float = 0.5
    min_tablets: int = 16

    @classmethod
    def of(cls, metadata: Metadata) -> AutoCompactPolicy:
        props = dict(metadata.properties)
        return cls(
            enabled=flag(props.get(AUTO_COMPACT), AUTO_COMPACT, default=False),
            target_tablet_rows=int(_number(props, "target_tablet_rows", DEFAULT_TARGET_TABLET_ROWS)),
            small_fraction=_number(props, "auto_compact_small_fraction", cls.small_fraction),
            max_deleted_fraction=_number(props, "auto_compact_max_deleted_fraction", cls.max_deleted_fraction),
            min_tablets=max(2, int(_number(props, "auto_compact_min_tablets", cls.min_tablets))),
        )

    def pick(self, snap: Snapshot) -> list[str]:
        """The tablets to rewrite now, or [] when the thresholds are not passed."""
        floor = self.small_fraction * self.target_tablet_rows
        small = [t for t, st in snap.tablets.items() if st.live_rows < floor]
        heavy = [  # a tablet written small is already counted as small
            t
            for t, st in snap.tablets.items()
            if st.dv is not None
            and st.add.rows >= floor
            and st.dv.cardinality > self.max_deleted_fraction * st.add.rows
        ]
        if len(small) < self.min_tablets and not heavy:
            return []
        return list(dict.fromkeys([*small, *heavy]))


def version_at(commits: list[tuple[int, int]], timestamp_ms: int, what: str) -> int:
    """The newest version committed at or before ``timestamp_ms`` (``commits``: (version,
    commit time) in version order), as Delta's ``TIMESTAMP AS OF`` picks it."""
    before = [v for v, ts in commits if ts <= timestamp_ms]
    if not before:
        first = commits[0][1] if commits else 0
        raise TableNotFound(
            f"{what}: the table did not exist yet at that time (its first commit is at {first} ms since the epoch)",
            help="Use a later timestamp, or a version from DESCRIBE HISTORY.",
        )
    return before[-1]


def restore_actions(current: Snapshot, old: Snapshot) -> list[Action]:
    """The actions that make ``current`` read as ``old``: remove the tablets ``old`` does not
    have, add back (the same files) those it has and ``current`` does not, and set each
    tablet's deletion vector to the one it had then (a tablet whose rows were deleted only
    since ``old`` is removed and added back, to drop its vector). The columns of ``old`` come
    back too, as they were (ids and physical names: its tablets are read as then); properties,
    comments (of the columns it has), the table id and the highest column id given stay, the
    properties that list columns (``cluster_by``) without the columns it does not have."""
    actions: list[Action] = []
    now, then = current.metadata, old.metadata
    if (then.schema, then.physical_names, then.column_ids) != (now.schema, now.physical_names, now.column_ids):
        actions.append(_listing_only(now.with_columns_of(then)))
    actions.extend(RemoveTablet(t) for t in current.tablets if t not in old.tablets)
    for tid, st in old.tablets.items():
        cur = current.tablets.get(tid)
        if cur == st:
            continue
        if cur is not None and (cur.add != st.add or (cur.dv is not None and st.dv is None)):
            actions.append(RemoveTablet(tid))
            cur = None
        if cur is None:
            actions.append(st.add)
        if st.dv is not None and (cur is None or cur.dv != st.dv):
            actions.append(st.dv)
    return actions


def _listing_only(meta: Metadata) -> Metadata:
    """``meta`` with its column-list properties naming only its columns (one left empty dropped)."""
    names = {n.lower() for n in meta.column_names}
    props = []
    for key, value in meta.properties:
        if key.lower() in COLUMN_LISTS:
            value = ",".join(c for c in value.split(",") if c.strip().lower() in names)
            if not value:
                continue
        props.append((key, value))
    return replace(meta, properties=tuple(props))


def restored_files(actions: list[Action]) -> list[str]:
    """The files (relative paths) that restore's actions reference again."""
    return [a.path for a in actions if isinstance(a, AddTablet | SetDV)]


def check_restorable(missing: list[str], version: int, statement: str) -> None:
    if missing:
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        raise FormatError(
            f"{statement}: version {version} can no longer be restored: its files were deleted by VACUUM ({shown})",
            help="Restore a version newer than the last VACUUM's retention, or recover the files from a backup.",
        )
