"""The per-task sinks of a statement, run inside Spark's Python workers (mapInArrow).

Each returns one Arrow batch of fragments (JSON) plus row counts per kind; the driver gathers
them and commits once (Trino's sink -> fragments -> finish).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tablets.engine.alike import still_alike
from tablets.engine.names import (
    K_CANDIDATE,
    K_COMPARE,
    K_DELETE,
    K_INSERT,
    K_PAIRED,
    K_REFUSE,
    K_REPLACE,
    K_UNCHANGED,
    K_UPDATE,
    KIND,
    OUTSIDE,
    ROW,
    SID,
    TID,
    VIOLATION,
)
from tablets.storage import Fragment, RowLevelSink, WriteHandle, fragment_to_json
from tablets.storage.actions import AddTablet, SetDV, action_from_json
from tablets.storage.columns import ColumnMapping
from tablets.storage.tablet import OUT_OF_RANGE, python_value, read_rows_at, read_tablet
from tablets.storage.types import schema_to_arrow

# a target row paired with a source row that no clause acts on (DO NOTHING, a false condition):
# it changes nothing, but the statement's result depends on it (row-level conflict checks)
K_MATCHED = "M"

# key_violations: inserted rows whose key another inserted row or a live row already has;
# key_example: one such key, for the error message; violations: written rows that break a
# constraint (the stream's VIOLATION column), violation_example: one of them (JSON)
INSERT_RESULT = (
    "fragment string, n_insert long, key_violations long, violations long, key_example string, violation_example string"
)

# the kinds whose source row is inserted (a REPLACE also deletes its target row)
INSERTED = (K_INSERT, K_REPLACE)


def _kind_count(kinds: pa.ChunkedArray, kind: str) -> int:
    return int(pc.sum(pc.equal(kinds, kind)).as_py() or 0)


def _deletes(handle: WriteHandle, table: pa.Table) -> tuple[list[str], list[int]]:
    """One new DV per tablet of the deleted and updated row ids in ``table`` (and, with
    ``handle.track_rows``, the rows of every kind the result depends on); returns (fragments,
    [deletes, updates, unchanged, duplicates]). A row id that more than one pair acts on is a
    duplicate, and then nothing is written. Tablet ids are taken as a dictionary's codes: no
    string per row is held or sorted."""
    kinds = table.column(KIND).combine_chunks()
    tids = pc.dictionary_encode(table.column(TID).combine_chunks())
    names = tids.dictionary.to_pylist()
    codes = tids.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    rows = table.column(ROW).combine_chunks().to_numpy(zero_copy_only=False).astype(np.int64)
    acted = pc.not_equal(kinds, K_MATCHED).to_numpy(zero_copy_only=False)
    # (tablet, row) as one integer: a tablet's rows are far fewer than 2^40
    _, repeats = np.unique((codes[acted] << 40) | rows[acted], return_counts=True)
    duplicates = int((repeats > 1).sum())
    frags: list[str] = []
    if not duplicates:
        real = pc.is_in(kinds, pa.array([K_DELETE, K_UPDATE, K_REPLACE])).to_numpy(zero_copy_only=False)
        kept = pc.is_in(kinds, pa.array([K_UNCHANGED, K_MATCHED])).to_numpy(zero_copy_only=False)
        sink = RowLevelSink(handle)
        sink.delete_coded(names, codes[real], rows[real])
        sink.read_coded(names, codes[kept], rows[kept])
        frags = [fragment_to_json(f) for f in sink.finish()]
    counts = [_kind_count(kinds, k) for k in (K_DELETE, K_UPDATE, K_UNCHANGED)]
    counts[0] += _kind_count(kinds, K_REPLACE)
    return frags, [*counts, duplicates]


def _repeated_outside(table: pa.Table, seen: set[tuple[str, int]]) -> pa.Array | None:
    """Per row of ``table``: whether it repeats an act outside ON's rest (``OUTSIDE``) on a target
    row already acted on so (``seen``, across batches). Such acts are the row's one BY SOURCE
    event, however many pairs made it: it counts, and is written, once. None: no such rows."""
    if OUTSIDE not in table.column_names:
        return None
    outside = pc.fill_null(table.column(OUTSIDE), False)
    if not pc.any(outside).as_py():
        return None
    repeat = np.zeros(table.num_rows, dtype=bool)
    tids, rows = table.column(TID).to_pylist(), table.column(ROW).to_pylist()
    for i in np.flatnonzero(outside.to_numpy(zero_copy_only=False)):
        key = (tids[i], rows[i])
        repeat[i] = key in seen
        seen.add(key)
    return pa.array(repeat)


def _resolve_candidates(table: pa.Table) -> pa.Table:
    """The one-shuffle plan's rows: a candidate whose source row id has a marker (it paired with
    a target row) is dropped, the others become inserts; markers are dropped. Every candidate
    and marker is in this task (they are routed together)."""
    kinds = table.column(KIND)
    if SID not in table.column_names or not pc.any(pc.is_in(kinds, pa.array([K_CANDIDATE, K_PAIRED]))).as_py():
        return table
    paired = table.filter(pc.equal(kinds, K_PAIRED)).column(SID)
    candidate = pc.equal(kinds, K_CANDIDATE)
    unpaired = pc.and_(candidate, pc.invert(pc.is_in(table.column(SID), paired)))
    rest = pc.invert(pc.is_in(kinds, pa.array([K_CANDIDATE, K_PAIRED])))
    table = table.filter(pc.or_(rest, unpaired))
    kinds = table.column(KIND)
    fixed = pc.if_else(pc.equal(kinds, K_CANDIDATE), pa.scalar(K_INSERT), kinds)
    return table.set_column(table.column_names.index(KIND), KIND, fixed)


def _key_violations(rows: pa.Table, keys: Sequence[str], names: Sequence[str]) -> tuple[int, str | None]:
    """Inserted rows (``rows``: K_INSERT, K_REPLACE and K_REFUSE kinds) that would duplicate a key: refused
    pairs, and inserted rows sharing a non-NULL key (the stream is partitioned by key, so every
    row of one key is in this task). NULL keys are distinct, as in a SQL UNIQUE constraint."""
    if not keys or rows.num_rows == 0:
        return 0, None
    kinds = rows.column(KIND)
    refused = rows.filter(pc.equal(kinds, K_REFUSE))
    inserted = rows.filter(pc.is_in(kinds, pa.array(INSERTED)))
    for k in keys:
        inserted = inserted.filter(pc.is_valid(inserted.column(k)))
    counts = _as_spark_groups(inserted.select(list(keys))).group_by(list(keys)).aggregate([([], "count_all")])
    dups = counts.filter(pc.greater(counts.column("count_all"), 1))
    example = refused if refused.num_rows else dups
    if example.num_rows == 0:
        return 0, None
    text = ", ".join(f"{n}={shown(example.column(k)[0])}" for k, n in zip(keys, names, strict=True))
    return refused.num_rows + int(pc.sum(dups.column("count_all")).as_py() or 0), text


def _as_spark_groups(rows: pa.Table) -> pa.Table:
    """Floating-point columns as Spark groups and joins them: -0.0 as 0.0, every NaN as one."""
    for i, col in enumerate(rows.columns):
        if pa.types.is_floating(col.type):
            zero, nan = pa.scalar(0.0, col.type), pa.scalar(float("nan"), col.type)
            col = pc.if_else(pc.equal(col, zero), zero, col)
            rows = rows.set_column(i, rows.field(i), pc.if_else(pc.is_nan(col), nan, col))
    return rows


def insert_task(handle: WriteHandle, columns: list[str], keys: Sequence[str] = ()):
    """Writes the insert stream (inserted rows and new images of updated rows) as new tablets, a
    tablet at a time as the batches arrive (``_NewRows``). ``keys``: the table's key columns,
    checked across the inserted rows (then the driver discards what was written)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        new = _NewRows(handle, columns)
        keyed: list[pa.Table] = []
        n_insert, any_rows = 0, False
        for batch in batches:
            if not batch.num_rows:
                continue
            any_rows = True
            table = pa.Table.from_batches([batch])
            kinds = table.column(KIND)
            n_insert += sum(_kind_count(kinds, k) for k in INSERTED)
            if keys:
                keyed.append(table.select([*keys, KIND]))
            new.add(table.filter(pc.not_equal(kinds, K_REFUSE)))
        if not any_rows:
            return
        bad, example = _key_violations(pa.concat_tables(keyed), keys, keys) if keyed else (0, None)
        frags = new.finish()
        if frags or n_insert or bad or new.broken:
            names = ["n_insert", "key_violations", "violations"]
            yield _result_batch(frags, [n_insert, bad, new.broken], names, example, new.example)

    return run


class _NewRows:
    """A task's new rows, written a tablet at a time as they come, or held and sorted together
    where the table sorts new tablets (``cluster_by``); once a row breaks a constraint nothing
    more is written (a NULL cannot be), and the driver discards what was."""

    def __init__(self, handle: WriteHandle, columns: list[str]) -> None:
        self.sink, self.columns, self.sorts = RowLevelSink(handle), columns, bool(handle.sort_by)
        self.held: list[pa.Table] = []
        self.broken = 0
        self.example: str | None = None

    def add(self, rows: pa.Table) -> None:
        """``rows``: the table's columns (and the stream's VIOLATION, if it checks constraints)."""
        n, example = violations_of(rows, self.columns)
        self.broken, self.example = self.broken + n, self.example or example
        if self.broken:
            return
        if self.sorts:
            self.held.append(rows.select(self.columns))
        else:
            self.sink.insert(rows.select(self.columns))

    def finish(self) -> list[str]:
        if self.held and not self.broken:
            self.sink.insert(pa.concat_tables(self.held))
        return [fragment_to_json(f) for f in self.sink.finish()]


@dataclass(frozen=True)
class Deferred:
    """What a merge task reads of the old rows that Spark's scan left out: for its K_COMPARE
    rows, the columns that finish the unchanged check (``alike``); for its updated rows, the
    columns every UPDATE keeps (late materialisation); each with its image column, and the
    statement's tablets (their adds, by id) with the schema and mapping they are read with."""

    columns: tuple[tuple[str, str], ...]  # (target column, image column) compared
    kept: tuple[tuple[str, str], ...]  # (target column, image column) an update keeps
    adds: Mapping[str, AddTablet]
    schema: pa.Schema
    mapping: ColumnMapping | None = None

    @property
    def held_kinds(self) -> pa.Array:
        """The kinds of row a merge task holds for this (``finish``)."""
        return pa.array(([K_COMPARE] if self.columns else []) + ([K_UPDATE] if self.kept else []))

    def finish(self, handle: WriteHandle, rows: pa.Table) -> pa.Table:
        """``rows`` (of ``held_kinds``) compared, then the updated ones given their kept columns
        (Spark marks an update K_COMPARE only where some compared column is left to the task)."""
        compare = pc.equal(rows.column(KIND), K_COMPARE)
        if self.columns and pc.any(compare).as_py():
            rows = pa.concat_tables([rows.filter(pc.invert(compare)), self.classify(handle, rows.filter(compare))])
        return self.fill(handle, rows) if self.kept else rows

    def _reader(self, handle: WriteHandle, rows: pa.Table):
        tids = rows.column(TID).combine_chunks().dictionary_encode()
        adds = [self.adds[t] for t in tids.dictionary.to_pylist()]
        which = tids.indices.to_numpy(zero_copy_only=False)
        positions = rows.column(ROW).to_numpy()

        def read(cols: list[str], at: np.ndarray) -> pa.Table:
            return read_rows_at(handle.io, handle.root, adds, which[at], positions[at], self.schema, cols, self.mapping)

        return read

    def fill(self, handle: WriteHandle, rows: pa.Table) -> pa.Table:
        """``rows`` with the kept columns of their K_UPDATE rows' images read from the old rows
        (by row id: one read of those columns, in position order); the others as they came."""
        updated = np.flatnonzero(pc.equal(rows.column(KIND), K_UPDATE).to_numpy(zero_copy_only=False))
        if not len(updated):
            return rows
        old = self._reader(handle, rows)([c for c, _ in self.kept], updated)
        # each old value at its row (a row not updated keeps its own): the read values scattered
        spots = np.zeros(rows.num_rows, dtype=np.int64)
        spots[updated] = np.arange(len(updated))
        mask = np.zeros(rows.num_rows, dtype=bool)
        mask[updated] = True
        for c, image in self.kept:
            at = rows.column_names.index(image)
            field = rows.schema.field(at)
            values = old.column(c).combine_chunks().cast(field.type).take(pa.array(spots))
            rows = rows.set_column(at, field, pc.if_else(pa.array(mask), values, rows.column(at).combine_chunks()))
        return rows

    def classify(self, handle: WriteHandle, rows: pa.Table) -> pa.Table:
        """``rows`` (all K_COMPARE) as K_UPDATE or K_UNCHANGED: their old values of the left-out
        columns read by row id, a kind of column at a time, for the rows still alike."""
        later = [(c, rows.column(image).combine_chunks()) for c, image in self.columns]
        same = still_alike(np.ones(rows.num_rows, dtype=bool), later, self.schema, self._reader(handle, rows))
        kinds = pa.array(np.where(same, K_UNCHANGED, K_UPDATE), pa.string())
        at = rows.column_names.index(KIND)  # (its field as Spark sent it: maybe not nullable)
        return rows.set_column(at, rows.schema.field(at), kinds)


# K_COMPARE rows a merge task holds before it reads their old values: a tablet's row groups are
# read once per batch of them, and what is held stays bounded
COMPARE_BYTES = 64 << 20


def merge_task(
    handle: WriteHandle,
    columns: list[str],
    images: list[str],
    *,
    inserts: bool = True,
    keys: Sequence[str] = (),
    compare: Deferred | None = None,
):
    """The delete stream, and with ``inserts`` the insert stream too. The rows arrive hashed by
    tablet id (the homecoming shuffle; inserted rows, which have none, by a hash of their own).
    Row ids of deletes and old images become one DV per tablet (a row id seen twice means a
    target row that more than one source row would modify: reported, and the driver discards
    what was written); inserts and new images become new tablets. ``keys`` (the key columns'
    image names): inserted rows are checked for duplicate keys (they arrive hashed by key).

    The task streams its partition: new images are written a tablet at a time as their batches
    arrive, and what it keeps to the end is each target row's id and kind, the inserted rows'
    keys, and the one-shuffle plan's candidates (the source's rows). Where the table sorts new
    tablets (``cluster_by``), the new images are held and sorted together, as one task's are.
    With ``compare``, the updates Spark found alike in the columns it read (K_COMPARE), and the
    updates whose kept columns it left out, are held up to ``COMPARE_BYTES`` and finished
    (``Deferred.finish``) before they count."""
    key_names = [columns[images.index(k)] for k in keys]

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        new = _NewRows(handle, columns)
        olds: list[pa.Table] = []  # row ids and kinds of target rows: the DVs, once all are here
        keyed: list[pa.Table] = []  # inserted rows' keys: a key repeated anywhere in the partition
        held: list[pa.Table] = []  # candidates and markers: resolved once all are here
        n_insert = 0
        outside_rows: set[tuple[str, int]] = set()  # target rows whose BY SOURCE act is taken

        def take(table: pa.Table) -> None:
            nonlocal n_insert
            repeat = _repeated_outside(table, outside_rows)
            kinds = table.column(KIND)
            old = pc.is_in(kinds, _OLD_KINDS)
            olds.append(
                table.filter(old if repeat is None else pc.and_(old, pc.invert(repeat))).select([TID, ROW, KIND])
            )
            if repeat is not None:  # (a repeated REPLACE still inserts its source row)
                table = table.filter(pc.invert(pc.and_(repeat, pc.not_equal(kinds, K_REPLACE))))
                kinds = table.column(KIND)
            n_insert += sum(_kind_count(kinds, k) for k in INSERTED)
            if keys and inserts:  # (without, the insert stream checks the keys: no images here)
                keyed.append(table.filter(pc.is_in(kinds, _KEYED_KINDS)).select([*keys, KIND]))
            if not inserts:  # (the rows carry no images: the insert stream writes them)
                return
            news = table.filter(pc.is_in(kinds, _NEW_KINDS))
            news = news.select([*images, *([VIOLATION] if VIOLATION in news.column_names else [])])
            new.add(news.rename_columns([*columns, *news.column_names[len(columns) :]]))

        comparing: list[pa.Table] = []  # K_COMPARE rows, not read yet
        comparing_bytes = 0

        def compared() -> None:
            nonlocal comparing_bytes
            assert compare is not None
            take(compare.finish(handle, pa.concat_tables(comparing)))
            comparing.clear()
            comparing_bytes = 0

        held_kinds = compare.held_kinds if compare is not None else None

        for batch in batches:
            if not batch.num_rows:
                continue
            table = pa.Table.from_batches([batch])
            if SID in table.column_names:
                one_shuffle = pc.is_in(table.column(KIND), _ONE_SHUFFLE_KINDS)
                if pc.any(one_shuffle).as_py():
                    held.append(table.filter(one_shuffle))
                    table = table.filter(pc.invert(one_shuffle))
            if held_kinds is not None:
                alike = pc.is_in(table.column(KIND), held_kinds)
                if pc.any(alike).as_py():
                    comparing.append(table.filter(alike))
                    comparing_bytes += comparing[-1].nbytes
                    table = table.filter(pc.invert(alike))
                    if comparing_bytes >= COMPARE_BYTES:
                        compared()
            if table.num_rows:
                take(table)
        if comparing:
            compared()
        if held:
            take(_resolve_candidates(pa.concat_tables(held)))
        if not olds:
            return
        frags, counts = _deletes(handle, pa.concat_tables(olds))
        bad, example = _key_violations(pa.concat_tables(keyed), keys, key_names) if keyed else (0, None)
        frags += new.finish()
        yield _result_batch(frags, [*counts, n_insert, bad, new.broken], [*MERGE_COUNTS], example, new.example)

    return run


_OLD_KINDS = pa.array([K_DELETE, K_UPDATE, K_UNCHANGED, K_MATCHED, K_REPLACE])
_KEYED_KINDS = pa.array([K_INSERT, K_REFUSE, K_REPLACE])
_NEW_KINDS = pa.array([K_INSERT, K_UPDATE, K_REPLACE])
_ONE_SHUFFLE_KINDS = pa.array([K_CANDIDATE, K_PAIRED])


def rewrite_task(handle: WriteHandle):
    """A compaction's task (``engine.rewrite``): each row of the input is a group of tablets (its
    ``members``: JSON lines of each tablet's add and deletion vector, so a task is sent only its
    own groups) whose live rows this task reads (deletion vectors applied) and writes as new tablets."""
    schema = schema_to_arrow(handle.schema)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for members in batch.column("members").to_pylist():
                sink = RowLevelSink(handle)
                rows = 0
                for add_json, dv_json in json.loads(members):
                    add, dv = action_from_json(add_json), action_from_json(dv_json) if dv_json else None
                    assert isinstance(add, AddTablet) and (dv is None or isinstance(dv, SetDV))
                    sink.insert(read_tablet(handle.io, handle.root, add, dv, schema, mapping=handle.mapping))
                    rows += add.rows - (dv.cardinality if dv else 0)
                frags = [fragment_to_json(f) for f in sink.finish()]
                yield _result_batch(frags, [rows, 0, 0], ["n_insert", "key_violations", "violations"])

    return run


MISSING_RESULT = "path string"


def missing_files_task(io):
    """RESTORE's check (``engine.file_check``): each row of the input is a chunk of paths (a JSON
    list, so a task is sent only its own chunks); the task returns those that do not exist."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for chunk in batch.column("paths").to_pylist():
                gone = [p for p in json.loads(chunk) if not io.exists(p)]
                yield pa.RecordBatch.from_arrays([pa.array(gone, pa.string())], names=["path"])

    return run


MERGE_COUNTS = ("n_delete", "n_update", "n_unchanged", "duplicates", "n_insert", "key_violations", "violations")
MERGE_RESULT = (
    "fragment string, "
    + ", ".join(f"{c} long" for c in MERGE_COUNTS)
    + ", key_example string, violation_example string"
)


def violations_of(rows: pa.Table, columns: Sequence[str]) -> tuple[int, str | None]:
    """Rows the stream marked as breaking a constraint (``VIOLATION``; the engine's
    ``constraints`` module computes it), and one of them as JSON for the error."""
    if VIOLATION not in rows.column_names or rows.num_rows == 0:
        return 0, None
    labels = rows.column(VIOLATION).combine_chunks()
    bad = pc.is_valid(labels)
    n = int(pc.sum(bad).as_py() or 0)
    if not n:
        return 0, None
    i = int(pc.index(bad, True).as_py())
    row = {c: _value(rows.column(c)[i]) for c in columns}
    return n, json.dumps({"constraint": labels[i].as_py(), "row": row}, default=str)


def _value(value: pa.Scalar) -> object:
    """``value`` in Python, or as Arrow's text where Python's types cannot hold it (a timestamp
    past year 9999 in the session's zone)."""
    v = python_value(value)
    return pc.cast(value, pa.string()).as_py() if v is OUT_OF_RANGE else v


def shown(value: pa.Scalar) -> str:
    """``value`` as an error message shows it (``repr`` of its Python value, where it has one)."""
    v = _value(value)
    return repr(v) if not isinstance(v, str) or value.type == pa.string() else v


def deletes_result(fragments: list[Fragment], deleted: int) -> pa.RecordBatch:
    """A merge task's result (``MERGE_RESULT``) for a task that only deleted ``deleted`` rows."""
    counts = {c: 0 for c in MERGE_COUNTS} | {"n_delete": deleted}
    return _result_batch([fragment_to_json(f) for f in fragments], list(counts.values()), [*MERGE_COUNTS])


def _result_batch(
    frags: list[str], counts: list[int], names: list[str], example: str | None = None, violation: str | None = None
) -> pa.RecordBatch:
    n = max(len(frags), 1)
    cols: list[pa.Array] = [pa.array(frags + [None] * (n - len(frags)), pa.string())]
    for c in counts:
        cols.append(pa.array([c] + [0] * (n - 1), pa.int64()))
    cols.append(pa.array([example] + [None] * (n - 1), pa.string()))
    cols.append(pa.array([violation] + [None] * (n - 1), pa.string()))
    return pa.RecordBatch.from_arrays(cols, names=["fragment", *names, "key_example", "violation_example"])
