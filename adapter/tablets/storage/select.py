"""A tablet's rows selected by key values on the driver (the driver plan's read of the target):
``KeySet`` tests a row group's key column against the source's keys, ``select_rows`` reads the
live rows of one tablet that hold them, skipping row groups by their statistics."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tablets.storage.actions import AddTablet, SetDV
from tablets.storage.columns import ColumnMapping
from tablets.storage.dv import DVInfo, live_mask, read_dv
from tablets.storage.fileio import FileIO, join
from tablets.storage.tablet import OUT_OF_RANGE, ByName, conform, python_value, unview, verified

# integer key values spanning fewer values than this are looked up in a bitmap over the span
# (at most 32 MiB)
_DENSE_SPAN = 1 << 28
# ... built from a byte per value of a span up to this (above, bit by bit)
_FLAG_SPAN = 1 << 27
# integer key values beyond this many are looked up by binary search in their sorted copy, not
# hashed for each row group
_HASHED_VALUES = 1 << 16


class KeySet:
    """One key column's values, for membership tests against a tablet's column: signed integers
    of a span under ``_DENSE_SPAN`` as a bitmap over it (one gather a row, from a map an eighth
    the size of a byte map, so that it stays in cache: bench/RESULTS.md), else ``is_in`` in the
    column's type (strings and dates compare as they are). Built once per statement; NULL is in
    no set."""

    def __init__(self, values: pa.Array) -> None:
        values = values.drop_null()
        mm = pc.min_max(values)
        # None: no values; OUT_OF_RANGE: values beyond Python's (every row group may hold them)
        self.lo: Any = python_value(mm["min"])
        self.hi: Any = python_value(mm["max"])
        if self.lo is OUT_OF_RANGE or self.hi is OUT_OF_RANGE:
            self.lo = self.hi = OUT_OF_RANGE
        self._integer = pa.types.is_integer(values.type)
        self._values: pa.Array | None = values.cast(pa.int64()) if self._integer else values
        self._cast: dict[pa.DataType, pa.Array] = {}  # the values in a tablet column's type
        self._bits: np.ndarray | None = None  # bit i: lo + i is in the set
        self._span = 0  # bits in the map; the last one (never set) stands for out of the span
        self._sorted: np.ndarray | None = None  # integer values in order (may_hold), made on first use
        self._local = threading.local()  # per thread: hits' scratch buffers (driver_rows shares a set)
        if pa.types.is_signed_integer(values.type) and self.lo is not None and self.hi - self.lo < _DENSE_SPAN:
            self._span = self.hi - self.lo + 2
            at = self._values.to_numpy(zero_copy_only=False) - self.lo
            if self._span <= _FLAG_SPAN:  # a byte a value of the span, packed: no scattered OR
                flags = np.zeros(self._span, dtype=np.bool_)
                flags[at] = True
                self._bits = np.packbits(flags, bitorder="little")
            else:
                self._bits = np.zeros((self._span + 7) // 8, dtype=np.uint8)
                np.bitwise_or.at(self._bits, at >> 3, np.left_shift(1, at & 7).astype(np.uint8))
            self._values = None  # the bitmap answers every question (hits, may_hold)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled for Spark's tasks (``engine.key_delete``): integers as their sorted values
        alone (each task would sort them; the set is rebuilt from them without a copy), and
        without this thread's scratch buffers."""
        state = {k: v for k, v in self.__dict__.items() if k != "_local"}
        if self._values is not None and self._integer:
            state["_sorted"] = self._sorted_values()
            del state["_values"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if "_values" not in state:
            self._values = pa.array(self._sorted)
        self._local = threading.local()

    def _sorted_values(self) -> np.ndarray:
        if self._sorted is None:
            assert self._values is not None
            self._sorted = np.sort(self._values.to_numpy())
        return self._sorted

    def _scratch(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """This thread's buffers for ``hits`` of ``n`` rows, kept between row groups: a row group's
        fresh temporaries (a megabyte each) cost page faults that took longer than the lookup."""
        held = getattr(self._local, "scratch", None)
        if held is None or len(held[0]) < n:
            held = self._local.scratch = (
                np.empty(n, np.int64),
                np.empty(n, np.int64),
                np.empty(n, np.uint8),
                np.empty(n, np.uint8),
            )
        return held[0][:n], held[1][:n], held[2][:n], held[3][:n]

    def may_hold(self, lo: Any, hi: Any) -> bool:
        """Whether some value of the set can lie in ``lo``..``hi`` (a tablet's or a row group's
        min and max of its column): for integers, whether one does, so that a set with gaps (new
        keys and a few late ones) rules out what lies between them; else whether the set's own
        min..max overlaps it. None bounds: no values there; an empty set holds nothing."""
        if lo is None or hi is None or self.lo is None:
            return False
        if self.lo is OUT_OF_RANGE or lo is OUT_OF_RANGE or hi is OUT_OF_RANGE:
            return True
        try:
            if hi < self.lo or lo > self.hi:
                return False
            if not (self._integer and type(lo) is int and type(hi) is int):
                return True
        except TypeError:  # bounds of another kind (statistics as bytes, say): cannot tell
            return True
        if self._bits is not None:
            return _any_bit(self._bits, max(lo, self.lo) - self.lo, min(hi, self.hi) - self.lo)
        values = self._sorted_values()
        i = int(np.searchsorted(values, max(lo, self.lo), side="left"))
        return i < len(values) and int(values[i]) <= hi

    def hits(self, column: pa.ChunkedArray | pa.Array) -> pa.Array:
        """Whether each value of ``column`` is in the set (NULL: False)."""
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        if pa.types.is_integer(column.type):
            column = column.cast(pa.int64())
            if self._bits is not None:
                data = column.fill_null(0).to_numpy(zero_copy_only=False).view(np.uint64)
                at, word, byte, shift = self._scratch(len(data))
                np.subtract(
                    data, np.uint64(self.lo % (1 << 64)), out=at.view(np.uint64)
                )  # below lo wraps past the span
                np.minimum(at.view(np.uint64), np.uint64(self._span - 1), out=at.view(np.uint64))  # (now under it)
                np.take(self._bits, np.right_shift(at, 3, out=word), out=byte)
                np.copyto(shift, np.bitwise_and(at, 7, out=word), casting="unsafe")
                hit = np.bitwise_and(np.right_shift(byte, shift, out=byte), 1, out=byte).view(bool)
                if column.null_count:
                    hit &= column.is_valid().to_numpy(zero_copy_only=False)
                return pa.array(hit)  # (a copy: the scratch is reused)
            assert self._values is not None
            if len(self._values) > _HASHED_VALUES:  # (``is_in`` hashes its set anew each call)
                data = column.fill_null(0).to_numpy(zero_copy_only=False)
                values = self._sorted_values()
                at = np.minimum(np.searchsorted(values, data), len(values) - 1)
                hit = values[at] == data
                if column.null_count:
                    hit &= column.is_valid().to_numpy(zero_copy_only=False)
                return pa.array(hit)
            return pc.is_in(column, value_set=self._values, skip_nulls=True)
        if column.type not in self._cast:  # cast once, not per row group
            assert self._values is not None
            self._cast[column.type] = self._values.cast(column.type)
        return pc.is_in(column, value_set=self._cast[column.type], skip_nulls=True)


def _any_bit(bits: np.ndarray, a: int, b: int) -> bool:
    """Whether any of bits ``a``..``b`` (bit i: byte i // 8, its i % 8th lowest) is set."""
    if a > b:
        return False
    first, last = a >> 3, b >> 3
    if first == last:
        return bool((int(bits[first]) >> (a & 7)) & ((1 << (b - a + 1)) - 1))
    if int(bits[first]) >> (a & 7) or int(bits[last]) & ((1 << ((b & 7) + 1)) - 1):
        return True
    return bool(bits[first + 1 : last].any())


def _may_hold(meta: pq.RowGroupMetaData, index: int, keys: KeySet) -> bool:
    """Whether a row group's min/max statistics of column ``index`` can hold a value of ``keys``."""
    if keys.lo is None:
        return False
    stats = meta.column(index).statistics
    if keys.lo is OUT_OF_RANGE or stats is None or not stats.has_min_max:
        return True
    try:
        return keys.may_hold(stats.min, stats.max)
    # statistics of another physical type (e.g. bytes), or beyond Python's dates: cannot tell
    except (TypeError, OverflowError, ValueError):
        return True


class Selection(NamedTuple):
    rows: pa.Table  # the selected rows' columns, conformed to the schema
    positions: pa.Array  # their positions in the file
    by_values: pa.Array  # per row: selected by the values (else by ``others``)


def select_rows(
    io: FileIO,
    root: str,
    add: AddTablet,
    dv: SetDV | None,
    schema: pa.Schema,
    columns: list[str],
    values: Mapping[str, pa.Array | KeySet],
    others: Callable[[pa.Table], pa.Array] | None = None,
    other_columns: Sequence[str] = (),
    part: tuple[int, int] = (0, 1),
    mapping: ColumnMapping | None = None,
    *,
    skip_by_stats: bool = True,
) -> Selection:
    """The live rows of one tablet whose every column named in ``values`` holds one of that
    column's values (NULL holds none), and with ``others`` also the other live rows for which
    ``others`` (over a row group's ``values`` and ``other_columns``, conformed to ``schema``)
    is True: ``columns`` conformed to ``schema``, and the rows' positions in the file. Verified
    as ``read_tablet``; reads the ``values`` columns only of the row groups whose statistics can
    hold the values (every row group with ``others``), and the other columns only of the row
    groups with a selected row. ``part`` (i, n): only row groups g with g % n == i, so that n
    threads can share one tablet. ``mapping``: as ``read_tablet``'s. ``skip_by_stats`` False:
    every row group is read."""
    wanted = pa.schema([schema.field(c) for c in columns])
    path = join(root, add.path)
    parts, positions, flags = [], [], []
    with verified(io, path, add) as pf:
        names = pf.schema_arrow.names
        if mapping is not None and not mapping.identity:
            pf = ByName(pf, mapping)  # the file's columns under the table's names
            names = pf.names
        present = [c for c in columns if c in names]
        keys = {c: v if isinstance(v, KeySet) else KeySet(v) for c, v in values.items() if c in names}
        if len(keys) < len(values):  # a key column added after this tablet: NULL in every row
            keys = {}
        probe = list(keys) + [c for c in other_columns if c not in keys]
        probe_schema = pa.schema([schema.field(c) for c in probe])
        live = None
        if dv is not None and (keys or others is not None):
            live = live_mask(read_dv(io, join(root, dv.path), DVInfo(dv.size, dv.checksum, dv.cardinality)), add.rows)
        start = 0
        for g in range(pf.metadata.num_row_groups if keys or others is not None else 0):
            meta = pf.metadata.row_group(g)
            at = start
            start += meta.num_rows
            if g % part[1] != part[0]:
                continue
            holds = bool(keys) and (
                not skip_by_stats or all(_may_hold(meta, names.index(c), ks) for c, ks in keys.items())
            )
            if not holds and others is None:
                continue
            group = conform(
                unview(pf.read_row_group(g, columns=[c for c in probe if c in names])), probe_schema, meta.num_rows
            )
            hit = None
            for c, ks in keys.items() if holds else ():
                h = ks.hits(group.column(c))
                hit = h if hit is None else pc.and_(hit, h)
            if hit is None:
                hit = pa.array(np.zeros(meta.num_rows, dtype=bool))
            mask = hit if others is None else pc.or_(hit, others(group))
            local = pc.indices_nonzero(mask).to_numpy(zero_copy_only=False)
            if live is not None:
                local = local[live[at + local]]
            if len(local) == 0:
                continue
            picked = pa.array(local)
            # the probed columns were read above: only the others are read for the selected rows
            rest = [c for c in present if c not in probe]
            read = unview(pf.read_row_group(g, columns=rest)).take(picked) if rest else None
            probed = group.take(picked)
            rows = pa.table({c: (probed if c in probe or read is None else read).column(c) for c in present})
            parts.append(conform(rows, wanted, len(local)))
            positions.append(pa.array(local + at, pa.int64()))
            flags.append(hit.take(picked))
    if not parts:
        return Selection(wanted.empty_table(), pa.array([], pa.int64()), pa.array([], pa.bool_()))
    return Selection(pa.concat_tables(parts), pa.concat_arrays(positions), pa.concat_arrays(flags))
