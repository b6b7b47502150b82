"""Transactions and the row-level write API (Trino's begin -> sinks -> fragments -> finish).

A statement reads snapshot v (``begin``), stages tablets and deletion vectors under fresh names
(``RowLevelSink`` in any number of tasks, each returning fragments), and commits them as version
v+1 (``commit``). If another writer took v+1 first, the commits in between are checked: a blind
append rebases onto them; anything that invalidates what this statement read or wrote raises a
typed ``CommitConflict`` and nothing of the statement becomes visible.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import pyarrow as pa

from tablets.exceptions import (
    ConcurrentAppend,
    ConcurrentDeleteDelete,
    ConcurrentDeleteRead,
    FormatError,
    MetadataChanged,
)
from tablets.storage import log
from tablets.storage.actions import (
    Action,
    AddTablet,
    ColumnStats,
    CommitInfo,
    Metadata,
    RemoveTablet,
    SetDV,
)
from tablets.storage.dv import DVInfo, bitmap_from_positions, read_dv, write_dv
from tablets.storage.fileio import LOCAL, FileIO, join
from tablets.storage.snapshot import Snapshot
from tablets.storage.tablet import conform, dv_relpath, new_id, write_tablet
from tablets.storage.types import schema_to_arrow

DEFAULT_TARGET_TABLET_ROWS = 1_000_000


@dataclass(frozen=True)
class WriteHandle:
    """What a statement's tasks need to stage files, and what ``commit`` needs to validate.

    Picklable and small enough to ship to Spark tasks.
    """

    root: str
    read_version: int
    txid: str
    operation: str
    schema: tuple[tuple[str, str, bool], ...]
    # tablet id -> (rows, current DV or None), for every tablet the statement may delete from
    tablets: Mapping[str, tuple[int, SetDV | None]] = field(default_factory=dict)
    read_tablets: frozenset[str] = frozenset()  # tablets whose rows the statement's result depends on
    reads_appends: bool = False  # would rows appended concurrently have changed the result?
    target_tablet_rows: int = DEFAULT_TARGET_TABLET_ROWS
    sort_by: tuple[str, ...] = ()  # cluster new tablets by these columns
    io: FileIO = LOCAL  # the table's store (pickles with its settings, for executors)


@dataclass(frozen=True)
class DVFragment:
    tablet_id: str
    dv: SetDV
    deleted: int  # rows this statement deleted from the tablet


@dataclass(frozen=True)
class TabletFragment:
    add: AddTablet


Fragment = DVFragment | TabletFragment


def fragment_to_json(f: Fragment) -> str:
    kind = "dv" if isinstance(f, DVFragment) else "tablet"
    return json.dumps({kind: asdict(f)}, separators=(",", ":"))


def fragment_from_json(text: str) -> Fragment:
    obj = json.loads(text)
    if "dv" in obj:
        body = obj["dv"]
        return DVFragment(body["tablet_id"], SetDV(**body["dv"]), body["deleted"])
    add = obj["tablet"]["add"]
    stats = tuple((n, ColumnStats(**s)) for n, s in add["stats"])
    return TabletFragment(AddTablet(**{**add, "stats": stats}))


def discard(handle: WriteHandle, fragments: Iterable[Fragment]) -> None:
    """Remove the staged files of fragments that will never be committed (a refused statement),
    rather than leave them to vacuum."""
    for f in fragments:
        rel = f.add.path if isinstance(f, TabletFragment) else f.dv.path
        with contextlib.suppress(OSError):  # else vacuum removes it later
            handle.io.delete(join(handle.root, rel))


def begin(
    snapshot: Snapshot,
    root: str,
    operation: str,
    *,
    delete_from: Iterable[str] | None = None,
    read_tablets: Iterable[str] = (),
    reads_appends: bool = False,
    target_tablet_rows: int | None = None,
    sort_by: Sequence[str] = (),
    io: FileIO,
) -> WriteHandle:
    ids = snapshot.tablets.keys() if delete_from is None else delete_from
    props = snapshot.metadata
    rows = target_tablet_rows or int(props.property("target_tablet_rows", str(DEFAULT_TARGET_TABLET_ROWS)) or DEFAULT_TARGET_TABLET_ROWS)
    return WriteHandle(
        root=root,
        read_version=snapshot.version,
        txid=new_id(),
        operation=operation,
        schema=snapshot.metadata.schema,
        tablets={t: (snapshot.tablets[t].add.rows, snapshot.tablets[t].dv) for t in ids},
        read_tablets=frozenset(read_tablets),
        reads_appends=reads_appends,
        target_tablet_rows=rows,
        sort_by=tuple(sort_by),
        io=io,
    )


class RowLevelSink:
    """Stages one task's deletes and inserts. Every delete of a tablet must reach one sink
    (the engine routes row ids home by tablet id); the sink writes that tablet's new deletion
    vector once: the old DV OR this statement's deletes."""

    def __init__(self, handle: WriteHandle) -> None:
        self.handle = handle
        self._schema = schema_to_arrow(handle.schema)
        self._deletes: dict[str, list[np.ndarray]] = {}
        self._pending: list[pa.Table] = []
        self._pending_rows = 0
        self._fragments: list[Fragment] = []

    def delete(self, tablet_ids: Sequence[str], row_numbers: Sequence[int] | np.ndarray) -> None:
        """Mark rows deleted; ``tablet_ids[i]`` owns ``row_numbers[i]``."""
        ids = np.asarray(tablet_ids, dtype=object)
        rows = np.asarray(row_numbers, dtype=np.int64)
        if len(ids) == 0:
            return
        order = np.argsort(ids, kind="stable")
        ids, rows = ids[order], rows[order]
        bounds = np.flatnonzero(ids[1:] != ids[:-1]) + 1
        for chunk_ids, chunk_rows in zip(np.split(ids, bounds), np.split(rows, bounds), strict=True):
            self._deletes.setdefault(str(chunk_ids[0]), []).append(chunk_rows)

    def insert(self, data: pa.Table | pa.RecordBatch) -> None:
        table = data if isinstance(data, pa.Table) else pa.Table.from_batches([data])
        if table.num_rows == 0:
            return
        self._pending.append(conform(table, self._schema))
        self._pending_rows += table.num_rows
        if self._pending_rows >= self.handle.target_tablet_rows:
            self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        data = pa.concat_tables(self._pending)
        self._pending, self._pending_rows = [], 0
        if self.handle.sort_by:
            data = data.sort_by([(c, "ascending") for c in self.handle.sort_by])
        n = self.handle.target_tablet_rows
        for start in range(0, data.num_rows, n):
            add = write_tablet(self.handle.io, self.handle.root, data.slice(start, n), self.handle.txid)
            self._fragments.append(TabletFragment(add))

    def _write_dv(self, tablet_id: str, chunks: list[np.ndarray]) -> DVFragment:
        if tablet_id not in self.handle.tablets:
            raise FormatError(f"delete from tablet {tablet_id}, which is not in version {self.handle.read_version}")
        rows, old = self.handle.tablets[tablet_id]
        new = bitmap_from_positions(np.concatenate(chunks))
        if len(new) and (new.max() >= rows):
            raise FormatError(f"row number {new.max()} out of range for tablet {tablet_id} ({rows} rows)")
        if old is not None:
            prior = read_dv(self.handle.io, join(self.handle.root, old.path), DVInfo(old.size, old.checksum, old.cardinality))
            deleted = len(new - prior)
            new |= prior
        else:
            deleted = len(new)
        rel = dv_relpath(tablet_id, self.handle.txid)
        info = write_dv(self.handle.io, join(self.handle.root, rel), new)
        return DVFragment(tablet_id, SetDV(tablet_id, rel, info.cardinality, info.size, info.checksum), deleted)

    def finish(self) -> list[Fragment]:
        self._flush()
        for tablet_id, chunks in self._deletes.items():
            self._fragments.append(self._write_dv(tablet_id, chunks))
        self._deletes = {}
        out, self._fragments = self._fragments, []
        return out


def _check(handle: WriteHandle, writes: set[str], version: int, actions: tuple[Action, ...]) -> None:
    """Raise if committed ``actions`` (version ``version``) invalidate this statement."""
    for a in actions:
        if isinstance(a, Metadata):
            raise MetadataChanged(f"version {version} changed the table's schema or properties while {handle.operation} ran", version)
        if isinstance(a, (RemoveTablet, SetDV)):
            what = "removed" if isinstance(a, RemoveTablet) else "deleted rows from"
            if a.tablet_id in writes:
                raise ConcurrentDeleteDelete(
                    f"version {version} {what} tablet {a.tablet_id}, which this {handle.operation} also deletes from",
                    version,
                )
            if a.tablet_id in handle.read_tablets:
                raise ConcurrentDeleteRead(
                    f"version {version} {what} tablet {a.tablet_id}, which this {handle.operation} read",
                    version,
                )
        if isinstance(a, AddTablet) and handle.reads_appends:
            raise ConcurrentAppend(
                f"version {version} added rows that this {handle.operation} should have read",
                version,
            )


def commit(
    handle: WriteHandle,
    fragments: Iterable[Fragment],
    *,
    extra_actions: Sequence[Action] = (),
    parameters: Mapping[str, str] | None = None,
    metrics: Mapping[str, float] | None = None,
) -> int | None:
    """Commit the fragments (plus ``extra_actions``) as one new version; None if nothing changes."""
    actions: list[Action] = list(extra_actions)
    writes: set[str] = {a.tablet_id for a in extra_actions if isinstance(a, (RemoveTablet, SetDV))}
    for f in fragments:
        if isinstance(f, DVFragment):
            if f.tablet_id in writes:
                raise FormatError(f"two deletion vectors for tablet {f.tablet_id} in one commit")
            writes.add(f.tablet_id)
            if f.deleted:
                actions.append(f.dv)
        else:
            actions.append(f.add)
    if not actions:
        return None  # no-op commits are not written
    info = CommitInfo(
        operation=handle.operation,
        txid=handle.txid,
        timestamp_ms=int(time.time() * 1000),
        read_version=handle.read_version,
        parameters=tuple(sorted((parameters or {}).items())),
        metrics=tuple(sorted((metrics or {}).items())),
    )
    version = handle.read_version + 1
    io = handle.io
    while not log.write_version(io, handle.root, version, [*actions, info]):
        _check(handle, writes, version, log.read_version(io, handle.root, version))
        version += 1
    if version % log.CHECKPOINT_INTERVAL == 0:
        log.write_checkpoint(io, handle.root, log.load_snapshot(io, handle.root, version))
    return version
