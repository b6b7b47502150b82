"""Changes between versions (Databricks' ``table_changes``), computed from the log and the files
already written: nothing is written on the hot path to serve them.

A version's changes are the difference between the live rows before it and after it, row by row
(a row is ``(tablet id, row number)``):

- rows deleted: the new bits of each tablet's deletion vector (the new vector minus the old
  one), and every live row of a tablet the version removed;
- rows inserted: the live rows of each tablet the version added.

Kinds of version:

- compactions (operation ``COMPACT`` / ``OPTIMIZE``, ``storage.maintenance``) only move live rows
  between tablets: no change;
- ``RESTORE`` references old tablets again: its row difference is taken, then a deleted row and
  an inserted row with the same values cancel out (a restore across a compaction moves rows back);
- metadata-only versions (ADD COLUMNS, properties, VACUUM START/END) change no row.

Every row is read with the ``end`` version's columns (``metadata``): a column added later reads
NULL in older rows; a dropped one is not returned. Where the table has key columns, a version
that deletes key k and inserts key k updated it: ``update_preimage`` + ``update_postimage``
(Delta's change types); without keys every change is a ``delete`` or an ``insert``.

Example::

    changes(table, 3, 7)          # pa.Table: the table's columns + _change_type,
                                  # _commit_version, _commit_timestamp
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap64

from tablets.exceptions import ChangesUnavailable, FormatError
from tablets.storage import log
from tablets.storage.actions import CommitInfo, Metadata
from tablets.storage.dv import DVInfo, read_dv
from tablets.storage.fileio import join
from tablets.storage.metadata import MetadataChange
from tablets.storage.snapshot import Snapshot, TabletState
from tablets.storage.tablet import ROW_NUMBER, ROW_TABLET, read_tablet
from tablets.storage.types import schema_to_arrow

if TYPE_CHECKING:
    from tablets.storage.table import TabletTable

CHANGE_TYPE = "_change_type"
COMMIT_VERSION = "_commit_version"
COMMIT_TIMESTAMP = "_commit_timestamp"
CHANGE_COLUMNS = (CHANGE_TYPE, COMMIT_VERSION, COMMIT_TIMESTAMP)
INSERT, DELETE, PRE, POST = "insert", "delete", "update_preimage", "update_postimage"
# operations that move rows between tablets without changing them
MOVES_ONLY = frozenset({"COMPACT", "OPTIMIZE", "UPGRADE"})  # (UPGRADE: tablets.storage.upgrade's restatement)
RESTORE = "RESTORE"


@dataclass(frozen=True)
class VersionChanges:
    """One version's deleted and inserted rows (the ``end`` version's columns)."""

    version: int
    timestamp_ms: int
    deleted: pa.Table
    inserted: pa.Table


def change_schema(metadata: Metadata) -> pa.Schema:
    """The schema of ``changes``: the table's columns, then Delta's three change columns. The
    table's columns may all be NULL: an older version's rows may predate a column, and a NOT
    NULL declared since."""
    base = schema_to_arrow(tuple((n, t, True) for n, t, _ in metadata.schema))
    return (
        base.append(pa.field(CHANGE_TYPE, pa.string(), False))
        .append(pa.field(COMMIT_VERSION, pa.int64(), False))
        .append(pa.field(COMMIT_TIMESTAMP, pa.timestamp("us", tz="UTC"), False))
    )


def version_range(
    commits: Sequence[tuple[int, int]],
    start: int | None,
    end: int | None,
    what: str,
    *,
    start_ms: int | None = None,
    end_ms: int | None = None,
) -> tuple[int, int]:
    """[start, end] as versions: ``start_ms`` is the first version committed at or after it,
    ``end_ms`` the last at or before it (Delta's reading of timestamps); ``end`` None: the
    newest (and an end past the newest is the newest). Refused when the range is empty."""
    latest = commits[-1][0]
    if start_ms is not None:
        after = [v for v, ts in commits if ts >= start_ms]
        if not after:
            raise ChangesUnavailable(
                f"{what}: no version was committed at or after the start timestamp (the newest, {latest}, at "
                f"{commits[-1][1]} ms since the epoch)",
                help="Use an earlier start, or start at version latest + 1 only once a new version exists.",
            )
        start = after[0]
    if end_ms is not None:
        before = [v for v, ts in commits if ts <= end_ms]
        if not before:
            raise ChangesUnavailable(
                f"{what}: no version was committed at or before the end timestamp (the first at {commits[0][1]} ms)",
                help="Use a later end timestamp.",
            )
        end = before[-1]
    assert start is not None
    if start < 0:
        raise ChangesUnavailable(f"{what}: start version {start} is negative", help="Versions start at 0.")
    if start > latest:
        raise ChangesUnavailable(
            f"{what}: start version {start} is after the newest version {latest}",
            help=f"Read changes from a version of 0..{latest} (DESCRIBE HISTORY lists them).",
        )
    end = latest if end is None else min(end, latest)
    if end < start:
        raise ChangesUnavailable(
            f"{what}: end version {end} is before start version {start}",
            help="Give the start first: table_changes(t, start, end).",
        )
    return start, end


def changes(
    table: TabletTable,
    start: int,
    end: int | None = None,
    *,
    where: str | None = None,
) -> pa.Table:
    """The rows each version in [``start``, ``end``] inserted, deleted and updated (``table``: a
    ``TabletTable``), with ``_change_type``, ``_commit_version`` and ``_commit_timestamp``;
    ``ChangesUnavailable`` where VACUUM removed a file a version's changes need."""
    what = where or f"table_changes({table.root}, {start}{'' if end is None else f', {end}'})"
    start, end = version_range(table.commit_times(), start, end, what)
    meta = table.snapshot(end).metadata
    schema = change_schema(meta)
    parts = [tag_changes(vc, meta.key_columns) for vc in version_changes(table, start, end, meta, what)]
    parts = [p for p in parts if p.num_rows]
    if not parts:
        return schema.empty_table()
    return pa.concat_tables([p.cast(schema) for p in parts]).combine_chunks()


def version_changes(table: TabletTable, start: int, end: int, meta: Metadata, what: str) -> Iterator[VersionChanges]:
    """Each version's deleted and inserted rows, read with ``meta``'s columns."""
    reader = _Reader(table, meta, what)
    prev: Snapshot | None = table.snapshot(start - 1) if start > 0 else None
    why = _incompatible(prev.metadata, meta) if prev is not None else None
    if why is not None:
        _refuse(table, start, end, meta, what, start - 1, why)
    for v, actions, cur in log.walk(table.io, table.root, range(start, end + 1), prev):
        why = _incompatible(cur.metadata, meta) if prev is None or cur.metadata.schema != prev.metadata.schema else None
        if why is not None:
            _refuse(table, start, end, meta, what, v, why)
        info = next((a for a in actions if isinstance(a, CommitInfo)), None)
        op = info.operation if info else ""
        ts = info.timestamp_ms if info else 0
        if op not in MOVES_ONLY:
            deleted, inserted = reader.diff(prev, cur, v)
            if op == RESTORE:
                deleted, inserted = cancel_equal(deleted, inserted)
            if deleted.num_rows or inserted.num_rows:
                yield VersionChanges(v, ts, deleted, inserted)
        prev = cur


def _incompatible(then: Metadata, now: Metadata) -> str | None:
    """Why rows of a version with ``then``'s columns cannot be read with ``now``'s: a column of
    another type since; or a column of ``now`` that ``then`` had dropped (a RESTORE brought it
    back), whose values the tablets rewritten without it (OPTIMIZE, updates) lost while the
    older tablets still hold them. None when they can (a column added since reads as NULL, one
    dropped since is not shown, as the newer version's columns are the feed's)."""
    columns = {n.lower(): t for n, t, _ in now.schema}
    for name, type_, _ in then.schema:
        if columns.get(name.lower(), type_) != type_:
            return f"its column {name} is {type_}, and {columns[name.lower()]} in the newer version"
    had = set(then.column_ids) if then.ids_in_log and now.ids_in_log else None  # (ids 1..n: no such history)
    for (name, _, _), cid in zip(now.schema, now.column_ids, strict=True):
        if had is not None and cid not in had and cid <= then.max_column_id:
            return f"its column {name} was dropped, and is back in the newer version"
    return None


def _refuse(table: TabletTable, start: int, end: int, meta: Metadata, what: str, version: int, why: str) -> None:
    """Version ``version``'s columns cannot be read as ``end``'s (``why``): as Delta's change
    feed refuses such a schema change, say from which version on the changes can be read."""
    last, bad = version, True  # the newest version in the range whose columns cannot be read as end's
    prev = table.snapshot(version)
    for v, _, cur in log.walk(table.io, table.root, range(version + 1, end + 1), prev):
        if cur.metadata.schema != prev.metadata.schema:
            bad = _incompatible(cur.metadata, meta) is not None
        last = v if bad else last
        prev = cur
    first = last + 2  # the first version whose deleted rows and inserted rows both have end's columns
    fix = (
        f"Read the changes from version {first} on (table_changes(t, {first}, ...))"
        if first <= end
        else f"Read the changes of the versions after {last + 1}, once there are some"
    )
    raise ChangesUnavailable(
        f"{what}: a column's type changed or a dropped column came back within the range (version {version}: "
        f"{why}), and the changes are read with version {end}'s columns",
        help=f"{fix}, or end the range before the change.",
    )


class _Reader:
    """Reads the rows a version's difference needs, with one version's columns."""

    def __init__(self, table: TabletTable, meta: Metadata, what: str) -> None:
        self.table, self.meta, self.what = table, meta, what
        self.schema = schema_to_arrow(meta.schema)

    def diff(self, prev: Snapshot | None, cur: Snapshot, version: int) -> tuple[pa.Table, pa.Table]:
        before = prev.tablets if prev is not None else {}
        deleted: list[pa.Table] = []
        inserted: list[pa.Table] = []
        for tid, old in before.items():
            new = cur.tablets.get(tid)
            if new is not None and new.add == old.add:
                if new.dv != old.dv:
                    gone, back = self._dv_change(old, new, version)
                    deleted.append(gone)
                    inserted.append(back)
            else:  # removed (or replaced by another file under its id)
                deleted.append(self._live(old, version))
        for tid, now in cur.tablets.items():
            was = before.get(tid)
            if was is None or was.add != now.add:
                inserted.append(self._live(now, version))
        return self._concat(deleted), self._concat(inserted)

    def _concat(self, parts: list[pa.Table]) -> pa.Table:
        parts = [p for p in parts if p.num_rows]
        return pa.concat_tables(parts) if parts else self.schema.empty_table()

    def _live(self, st: TabletState, version: int) -> pa.Table:
        t = self.table
        try:
            return read_tablet(t.io, t.root, st.add, st.dv, self.schema, mapping=self.meta.mapping)
        except FormatError as e:
            raise self._gone(version, e) from None

    def _dv_change(self, old: TabletState, new: TabletState, version: int) -> tuple[pa.Table, pa.Table]:
        """The rows whose bits ``new``'s vector has and ``old``'s has not (deleted), and the
        reverse (live again: only a RESTORE sets an older vector)."""
        t = self.table
        try:
            now = self._bits(new)
            was = self._bits(old)
            gone = sorted(now - was)
            back = sorted(was - now)
            rows = read_tablet(t.io, t.root, new.add, None, self.schema, row_ids=True, mapping=self.meta.mapping)
        except FormatError as e:
            raise self._gone(version, e) from None
        rows = rows.drop_columns([ROW_TABLET, ROW_NUMBER])
        return rows.take(pa.array(gone, pa.int64())), rows.take(pa.array(back, pa.int64()))

    def _bits(self, st: TabletState) -> BitMap64:
        if st.dv is None:
            return BitMap64()
        t = self.table
        dv = st.dv
        return read_dv(t.io, join(t.root, dv.path), DVInfo(dv.size, dv.checksum, dv.cardinality))

    def _gone(self, version: int, e: FormatError) -> ChangesUnavailable:
        return ChangesUnavailable(
            f"{self.what}: the changes of version {version} cannot be read: a file they need is gone ({e.detail}); "
            "VACUUM removes files that only older versions reference",
            help="Read changes from a version after the last VACUUM's retention (DESCRIBE HISTORY), or read the "
            "table as it is now; keep more history next time (the table property deleted_file_retention_hours).",
        )


def cancel_equal(deleted: pa.Table, inserted: pa.Table) -> tuple[pa.Table, pa.Table]:
    """``deleted`` and ``inserted`` without the rows they have in common (as multisets of values)."""
    if not deleted.num_rows or not inserted.num_rows:
        return deleted, inserted
    dl, il = _rows(deleted), _rows(inserted)
    common = Counter(dl) & Counter(il)
    if not common:
        return deleted, inserted

    def keep(rows: list[tuple[object, ...]]) -> pa.Array:
        left = Counter(common)
        mask = []
        for r in rows:
            if left[r] > 0:
                left[r] -= 1
                mask.append(False)
            else:
                mask.append(True)
        return pa.array(mask, pa.bool_())

    return deleted.filter(keep(dl)), inserted.filter(keep(il))


def _rows(t: pa.Table) -> list[tuple[object, ...]]:
    cols = [c.to_pylist() for c in t.columns]
    return [tuple(_hashable(v) for v in row) for row in zip(*cols, strict=True)] if cols else [()] * t.num_rows


def _hashable(v: object) -> object:
    if isinstance(v, list):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _hashable(x)) for k, x in v.items()))
    return v


def tag_changes(vc: VersionChanges, key_columns: Sequence[str]) -> pa.Table:
    """One version's rows with their change type: deletes and inserts of the same key pair up
    as update pre- and post-images. A key with a NULL in it pairs with nothing: NULL keys are
    distinct (the table's UNIQUE rule), so such a row is a delete or an insert."""
    deleted, inserted = vc.deleted, vc.inserted
    keys = [k for k in key_columns if k in deleted.column_names]
    d_kind = [DELETE] * deleted.num_rows
    i_kind = [INSERT] * inserted.num_rows
    if keys and deleted.num_rows and inserted.num_rows:
        dk, ik = _keys(deleted, keys), _keys(inserted, keys)
        both = {k for k in set(dk) & set(ik) if None not in k}
        d_kind = [PRE if k in both else DELETE for k in dk]
        i_kind = [POST if k in both else INSERT for k in ik]
    out = []
    for rows, kinds in ((deleted, d_kind), (inserted, i_kind)):
        if rows.num_rows:
            n = rows.num_rows
            out.append(
                rows.append_column(CHANGE_TYPE, pa.array(kinds, pa.string()))
                .append_column(COMMIT_VERSION, pa.array([vc.version] * n, pa.int64()))
                .append_column(
                    COMMIT_TIMESTAMP,
                    pa.array([vc.timestamp_ms * 1000] * n, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
                )
            )
    if not out:
        return pa.table({})
    t = pa.concat_tables(out)
    order = {DELETE: 0, PRE: 1, POST: 2, INSERT: 3}
    rank = pa.array([order[k] for k in t.column(CHANGE_TYPE).to_pylist()], pa.int8())
    return t.take(pc.sort_indices(pa.table({"r": rank}), sort_keys=[("r", "ascending")]))


def _keys(t: pa.Table, keys: Sequence[str]) -> list[tuple[object, ...]]:
    cols = [t.column(k).to_pylist() for k in keys]
    return [tuple(_hashable(v) for v in row) for row in zip(*cols, strict=True)]


# --- consumption records (dbt's tablets_changes) -------------------------------------------------

CONSUMED = "consumed"  # commit parameter: JSON {upstream table id: last version read}
CONSUMED_PROPERTY = "tablets.consumed"


def last_consumed(table: TabletTable) -> dict[str, int]:
    """What the newest commit of ``table`` that records one says it consumed: {upstream table
    id: version} (empty when none does)."""
    for h in reversed(table.history()):
        raw = dict(h.commit.parameters).get(CONSUMED) if h.commit is not None else None
        if raw:
            try:
                return {str(k): int(v) for k, v in json.loads(raw).items()}
            except (ValueError, AttributeError, TypeError):
                return {}
    return {}


def record_consumed(table: TabletTable, consumed: dict[str, int]) -> int | None:
    """Record ``consumed`` in a commit of its own (a table property, and the commit's
    parameter): for a statement that read changes and wrote nothing, so its next run starts
    after them. None when the table already records it."""

    text = json.dumps(consumed, sort_keys=True)
    if last_consumed(table) == consumed:
        return None
    change = MetadataChange(set_properties=((CONSUMED_PROPERTY, text),))
    return table.alter_metadata(change, "CONSUME CHANGES", {CONSUMED: text})
