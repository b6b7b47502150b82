"""The per-task sinks of a statement, run inside Spark's Python workers (mapInArrow).

Each returns one Arrow batch of fragments (JSON) plus row counts per kind; the driver gathers
them and commits once (Trino's sink -> fragments -> finish).
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc

from tablets.engine.names import K_DELETE, K_INSERT, K_UNCHANGED, K_UPDATE, KIND, ROW, TID
from tablets.storage import RowLevelSink, WriteHandle, fragment_to_json

INSERT_RESULT = "fragment string, n_insert long"


def _kind_count(kinds: pa.ChunkedArray, kind: str) -> int:
    return int(pc.sum(pc.equal(kinds, kind)).as_py() or 0)


def _deletes(handle: WriteHandle, table: pa.Table) -> tuple[list[str], list[int]]:
    """One new DV per tablet of the row ids in ``table``; returns (fragments, [deletes, updates,
    unchanged, duplicates]). Duplicated row ids write nothing."""
    kinds = table.column(KIND)
    dup = table.group_by([TID, ROW]).aggregate([([], "count_all")])
    duplicates = int(pc.sum(pc.greater(dup.column("count_all"), 1)).as_py() or 0)
    frags: list[str] = []
    if not duplicates:
        real = table.filter(pc.not_equal(kinds, K_UNCHANGED))
        sink = RowLevelSink(handle)
        sink.delete(
            real.column(TID).to_numpy(zero_copy_only=False),
            real.column(ROW).to_numpy(zero_copy_only=False),
        )
        frags = [fragment_to_json(f) for f in sink.finish()]
    counts = [_kind_count(kinds, k) for k in (K_DELETE, K_UPDATE, K_UNCHANGED)]
    return frags, [*counts, duplicates]


def insert_task(handle: WriteHandle, columns: list[str]):
    """Writes the insert stream (inserted rows and new images of updated rows) as new tablets."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        sink = RowLevelSink(handle)
        n_insert = 0
        for b in batches:
            if b.num_rows == 0:
                continue
            n_insert += _kind_count(pa.chunked_array([b.column(KIND)]), K_INSERT)
            sink.insert(pa.Table.from_batches([b]).select(columns))
        frags = [fragment_to_json(f) for f in sink.finish()]
        if frags or n_insert:
            yield _result_batch(frags, [n_insert], ["n_insert"])

    return run


def merge_task(handle: WriteHandle, columns: list[str], images: list[str], *, inserts: bool = True):
    """The delete stream, and with ``inserts`` the insert stream too. The rows arrive hashed by
    tablet id (the homecoming shuffle; inserted rows, which have none, by a hash of their own).
    Row ids of deletes and old images become one DV per tablet (a row id seen twice means a
    target row that more than one source row would modify: reported, nothing written);
    inserts and new images become new tablets."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        nonempty = [b for b in batches if b.num_rows]
        if not nonempty:
            return
        table = pa.Table.from_batches(nonempty)
        kinds = table.column(KIND)
        olds = table.filter(pc.is_in(kinds, pa.array([K_DELETE, K_UPDATE, K_UNCHANGED])))
        frags, counts = _deletes(handle, olds.select([TID, ROW, KIND]))
        n_insert = _kind_count(kinds, K_INSERT)
        if inserts and not counts[-1]:  # no duplicated row id: the statement may commit
            news = table.filter(pc.is_in(kinds, pa.array([K_INSERT, K_UPDATE])))
            if news.num_rows:
                sink = RowLevelSink(handle)
                sink.insert(news.select(images).rename_columns(columns))
                frags += [fragment_to_json(f) for f in sink.finish()]
        yield _result_batch(frags, [*counts, n_insert], [*MERGE_COUNTS])

    return run


MERGE_COUNTS = ("n_delete", "n_update", "n_unchanged", "duplicates", "n_insert")
MERGE_RESULT = "fragment string, " + ", ".join(f"{c} long" for c in MERGE_COUNTS)


def _result_batch(frags: list[str], counts: list[int], names: list[str]) -> pa.RecordBatch:
    n = max(len(frags), 1)
    cols: list[pa.Array] = [pa.array(frags + [None] * (n - len(frags)), pa.string())]
    for c in counts:
        cols.append(pa.array([c] + [0] * (n - 1), pa.int64()))
    return pa.RecordBatch.from_arrays(cols, names=["fragment", *names])
