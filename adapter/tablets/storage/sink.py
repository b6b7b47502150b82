"""A task's staging of its deletes and inserts (``RowLevelSink``): the deletion vector of each
tablet its row ids reach, new tablets of its rows, and the rows the result depends on."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from tablets.exceptions import FormatError
from tablets.storage.actions import SetDV
from tablets.storage.dv import DVInfo, bitmap_from_positions, read_dv, write_dv
from tablets.storage.fileio import join
from tablets.storage.tablet import conform, dv_relpath, write_tablet
from tablets.storage.transaction import DVFragment, Fragment, ReadFragment, TabletFragment, WriteHandle
from tablets.storage.types import schema_to_arrow


class RowLevelSink:
    """Stages one task's deletes and inserts. Every delete of a tablet must reach one sink
    (the engine routes row ids home by tablet id); the sink writes that tablet's new deletion
    vector once: the old DV OR this statement's deletes. With ``handle.track_rows`` it also
    reports the rows the statement depends on (its deletes and the rows given to ``read``)."""

    def __init__(self, handle: WriteHandle) -> None:
        self.handle = handle
        self._schema = schema_to_arrow(handle.schema)
        self._deletes: dict[str, list[np.ndarray]] = {}
        self._reads: dict[str, list[np.ndarray]] = {}
        self._pending: list[pa.Table] = []
        self._pending_rows = 0
        self._fragments: list[Fragment] = []

    def delete(self, tablet_ids: Sequence[str], row_numbers: Sequence[int] | np.ndarray) -> None:
        """Mark rows deleted; ``tablet_ids[i]`` owns ``row_numbers[i]``."""
        _group(self._deletes, tablet_ids, row_numbers)

    def delete_rows(self, tablet_id: str, row_numbers: np.ndarray) -> None:
        """Mark rows of one tablet deleted: ``delete`` without a tablet id per row."""
        if len(row_numbers):
            self._deletes.setdefault(tablet_id, []).append(np.asarray(row_numbers, dtype=np.int64))

    def delete_coded(self, names: Sequence[str], codes: np.ndarray, row_numbers: np.ndarray) -> None:
        """``delete`` of rows whose tablet is ``names[codes[i]]`` (a dictionary's indices: no
        tablet id string per row)."""
        _group_coded(self._deletes, names, codes, row_numbers)

    def read_coded(self, names: Sequence[str], codes: np.ndarray, row_numbers: np.ndarray) -> None:
        """``read`` of rows whose tablet is ``names[codes[i]]``."""
        _group_coded(self._reads, names, codes, row_numbers)

    def read(self, tablet_ids: Sequence[str], row_numbers: Sequence[int] | np.ndarray) -> None:
        """Record rows the statement's result depends on without changing them (rows it matched
        and left alone); a concurrent delete of one of them is a conflict."""
        _group(self._reads, tablet_ids, row_numbers)

    def insert(self, data: pa.Table | pa.RecordBatch) -> None:
        table = data if isinstance(data, pa.Table) else pa.Table.from_batches([data])
        if table.num_rows == 0:
            return
        self._pending.append(conform(table, self._schema))
        self._pending_rows += table.num_rows
        if self._pending_rows >= self.handle.target_tablet_rows:
            self._flush(whole=False)

    def _flush(self, *, whole: bool = True) -> None:
        """Write the pending rows as tablets of ``target_tablet_rows``; not ``whole``: only full
        ones, the rest kept for the next (rows inserted a batch at a time make no small tablets)."""
        if not self._pending:
            return
        data = pa.concat_tables(self._pending)
        if self.handle.sort_by:
            data = data.sort_by([(c, "ascending") for c in self.handle.sort_by])
        n = self.handle.target_tablet_rows
        full = data.num_rows if whole else data.num_rows - data.num_rows % n
        rest = data.slice(full)
        self._pending, self._pending_rows = ([rest] if rest.num_rows else []), rest.num_rows
        data = data.slice(0, full)
        if self.handle.mapping is not None:
            data = self.handle.mapping.to_physical(data)
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
            prior = read_dv(
                self.handle.io, join(self.handle.root, old.path), DVInfo(old.size, old.checksum, old.cardinality)
            )
            deleted = len(new - prior)
            new |= prior
        else:
            deleted = len(new)
        rel = dv_relpath(tablet_id, self.handle.txid)
        info = write_dv(self.handle.io, join(self.handle.root, rel), new, sync=False)
        return DVFragment(tablet_id, SetDV(tablet_id, rel, info.cardinality, info.size, info.checksum), deleted)

    def finish(self) -> list[Fragment]:
        self._flush()
        for tablet_id, chunks in self._deletes.items():
            self._fragments.append(self._write_dv(tablet_id, chunks))
        if self.handle.track_rows:
            for tablet_id in {*self._deletes, *self._reads}:
                chunks = self._deletes.get(tablet_id, []) + self._reads.get(tablet_id, [])
                self._fragments.append(ReadFragment.of(tablet_id, bitmap_from_positions(np.concatenate(chunks))))
        self._deletes, self._reads = {}, {}
        # what this sink wrote, made durable together before the driver may commit it
        written = [
            f.add.path if isinstance(f, TabletFragment) else f.dv.path
            for f in self._fragments
            if not isinstance(f, ReadFragment)
        ]
        self.handle.io.sync(join(self.handle.root, p) for p in written)
        out, self._fragments = self._fragments, []
        return out


def _group(
    into: dict[str, list[np.ndarray]], tablet_ids: Sequence[str], row_numbers: Sequence[int] | np.ndarray
) -> None:
    """Append ``row_numbers`` to ``into``, per tablet (``tablet_ids[i]`` owns ``row_numbers[i]``)."""
    ids = np.asarray(tablet_ids, dtype=object)
    rows = np.asarray(row_numbers, dtype=np.int64)
    if len(ids) == 0:
        return
    order = np.argsort(ids, kind="stable")
    ids, rows = ids[order], rows[order]
    bounds = np.flatnonzero(ids[1:] != ids[:-1]) + 1
    for chunk_ids, chunk_rows in zip(np.split(ids, bounds), np.split(rows, bounds), strict=True):
        into.setdefault(str(chunk_ids[0]), []).append(chunk_rows)


def _group_coded(
    into: dict[str, list[np.ndarray]], names: Sequence[str], codes: np.ndarray, row_numbers: np.ndarray
) -> None:
    """Append ``row_numbers`` to ``into``, per tablet (``names[codes[i]]`` owns ``row_numbers[i]``)."""
    if len(codes) == 0:
        return
    order = np.argsort(codes, kind="stable")
    codes, rows = codes[order], np.asarray(row_numbers, dtype=np.int64)[order]
    bounds = np.flatnonzero(codes[1:] != codes[:-1]) + 1
    for chunk_codes, chunk_rows in zip(np.split(codes, bounds), np.split(rows, bounds), strict=True):
        into.setdefault(names[int(chunk_codes[0])], []).append(chunk_rows)
