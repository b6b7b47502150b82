"""Tablets: immutable Parquet files. Row number = row position in the file.

Every tablet is verified when it is read (docs/FORMAT.md, "Verification"): its size against the
log's ``add_tablet.bytes``, the tablet id in its footer (key ``tablets.tablet_id``) against the
log's, its row count, and the CRC-32 of every page read. Any mismatch is a ``FormatError`` that
names the file; tablets written before page CRCs and the footer id are checked for what they have.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import functools
import hashlib
import uuid
import zlib
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tablets.exceptions import FormatError
from tablets.storage.actions import AddTablet, ColumnStats, SetDV
from tablets.storage.columns import ColumnMapping
from tablets.storage.dv import DVInfo, live_mask, read_dv
from tablets.storage.fileio import FileIO, SizeMismatch, is_absolute, join

ROW_TABLET = "_tablet_id"
ROW_NUMBER = "_row_number"
ROW_INDEX = "__tablets_row"  # a row's position in its tablet, as Spark's scans and the merge streams name it
TABLET_DIR = "tablets"
TABLET_SUFFIX = ".parquet"  # a tablet file is <tablet id>.parquet
DV_DIR = "dv"
STATS_MAX_STRING = 64
FOOTER_TABLET_ID = b"tablets.tablet_id"  # footer key-value metadata: the tablet's own id
# A hidden column of every tablet written since row ids entered the format: (tag << 32) | row
# number, the tag 31 bits of the tablet id (row_id_tag). Spark's Parquet scan reads it in place of
# its `_metadata` columns, which cost every row read ~15 ns more (docs/FORMAT.md, "Row ids").
# Its entry in the log's stats marks a tablet that has it (has_row_ids): older logs stay readable.
ROW_ID = "__tablets_row_id"
ROW_ID_SHIFT = 32
DAMAGED_HELP = (
    "Restore the file from a copy (byte for byte: the log records its size and tablet id), or "
    "time-travel to a version from before this tablet was added (see the table's history)."
)


def new_id() -> str:
    return uuid.uuid4().hex


def tablet_relpath(tablet_id: str) -> str:
    return f"{TABLET_DIR}/{tablet_id}{TABLET_SUFFIX}"


def dv_relpath(tablet_id: str, txid: str) -> str:
    """``dv/deletion_vector_<uuid>.bin``: Delta's name for a DV file, so the published Delta log
    names it relative to the table (storage type 'u'); the UUID is a hash of (tablet, txid), so
    a retried task writes the same name (and fails on it rather than leave a second file)."""
    digest = hashlib.blake2b(f"{tablet_id}-{txid}".encode(), digest_size=16).digest()
    return f"{DV_DIR}/deletion_vector_{uuid.UUID(bytes=digest)}.bin"


def row_id_tag(tablet_id: str) -> int:
    """The tag of ``tablet_id``'s rows in its ``ROW_ID`` column (31 bits: the values stay positive)."""
    return zlib.crc32(tablet_id.encode()) >> 1


def has_row_ids(add: AddTablet) -> bool:
    """Whether the tablet's file holds the ``ROW_ID`` column (its log stats list it)."""
    return add.column_stats(ROW_ID) is not None


# a value Python's types cannot hold (a timestamp or date past year 9999, as Spark may store)
OUT_OF_RANGE = object()


def python_value(value: pa.Scalar) -> object:
    """``value.as_py()``, or ``OUT_OF_RANGE``."""
    try:
        return value.as_py()
    except (OverflowError, ValueError):
        return OUT_OF_RANGE


def _json_value(v: object) -> object:
    if isinstance(v, (dt.datetime, dt.date, dt.time)):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, bytes):
        return None
    if isinstance(v, str) and len(v) > STATS_MAX_STRING:
        return None  # a truncated string bound would need care to stay a bound; skip it
    return v


def column_stats(data: pa.Table) -> tuple[tuple[str, ColumnStats], ...]:
    out = []
    for name, col in zip(data.column_names, data.columns, strict=True):
        t = col.type
        nulls = col.null_count
        if pa.types.is_nested(t) or pa.types.is_binary(t) or pa.types.is_null(t) or len(col) == nulls:
            out.append((name, ColumnStats(None, None, nulls)))
            continue
        mm = pc.min_max(col)
        lo, hi = python_value(mm["min"]), python_value(mm["max"])
        if lo is OUT_OF_RANGE or hi is OUT_OF_RANGE:  # no bounds: pruning keeps the tablet
            out.append((name, ColumnStats(None, None, nulls)))
            continue
        nans = int(pc.sum(pc.is_nan(col)).as_py() or 0) if pa.types.is_floating(t) else None
        if nans:  # NaN is above every number in Spark (min/max leave it out): no upper bound
            hi = None
            if lo != lo:  # only NaN
                lo = None
        out.append((name, ColumnStats(_json_value(lo), _json_value(hi), nulls, nans)))
    return tuple(out)


# Spark splits a file between tasks only at row-group boundaries: a 1M-row tablet of one row
# group is read by one core. 128k rows keep groups large (~2-4 MB) and scans parallel.
ROW_GROUP_ROWS = 1 << 17
# A column falls back from dictionary to plain encoding once its dictionary passes this size.
# pyarrow's default (1 MiB) holds a whole row group of unique 64-bit keys: Spark then decodes
# every page through a 1 MiB dictionary, and a selective query on such a column read 3x slower
# than the same rows written by Spark (1M rows, `id BETWEEN`: 0.68-0.79 s against 0.23-0.36 s;
# 0.19-0.23 s at 64 KiB). Columns of few distinct values keep their dictionaries; files shrink
# (26 -> 22 MB here: a dictionary of unique values only adds bytes).
DICTIONARY_PAGE_BYTES = 64 << 10


def write_tablet(io: FileIO, root: str, data: pa.Table, txid: str, tablet_id: str | None = None) -> AddTablet:
    """Write ``data`` as one new tablet under ``root`` and describe it."""
    tablet_id = tablet_id or new_id()
    rel = tablet_relpath(tablet_id)
    stats = column_stats(data)
    n = data.num_rows
    deltas = _delta_columns(data)
    encodings = dict.fromkeys(deltas, "DELTA_BINARY_PACKED")
    if n < 1 << ROW_ID_SHIFT:
        # delta encoding: a run of +1 steps is a few bytes a page and decodes at memory speed
        encodings[ROW_ID] = "DELTA_BINARY_PACKED"
        base = row_id_tag(tablet_id) << ROW_ID_SHIFT
        data = data.append_column(ROW_ID, pa.array(np.arange(base, base + n, dtype=np.int64)))
        stats += ((ROW_ID, ColumnStats(base, base + max(n - 1, 0), 0)),)
    options: dict[str, object] = {}
    if encodings:
        options = {
            "use_dictionary": [c for c in _leaf_paths(data.schema) if c not in encodings],
            "column_encoding": encodings,
        }
    buf = pa.BufferOutputStream()
    with pq.ParquetWriter(
        buf,
        data.schema,
        compression="zstd",
        write_page_checksum=True,
        dictionary_pagesize_limit=DICTIONARY_PAGE_BYTES,
        **options,
    ) as w:
        w.write_table(data, row_group_size=ROW_GROUP_ROWS)
        w.add_key_value_metadata({FOOTER_TABLET_ID: tablet_id.encode()})
    body = buf.getvalue()
    io.write(join(root, rel), body)  # a fresh uuid name: nothing to overwrite
    return AddTablet(tablet_id=tablet_id, path=rel, rows=n, bytes=body.size, stats=stats, txid=txid)


# An integer column of this share of distinct values or more in its first DELTA_SAMPLE rows (a key,
# an id, a measure) is delta-encoded rather than given a dictionary that falls back to plain pages:
# Parquet's DELTA_BINARY_PACKED keeps each value in the bits its page's spread needs, so files are
# smaller and Arrow decodes them faster (bench/RESULTS.md, 2026-11-29); Spark's scan is no slower.
# Columns of few values keep their dictionaries (a run of one value is a few bytes there).
DELTA_SAMPLE = 1 << 16
DELTA_DISTINCT_SHARE = 0.5


def _delta_columns(data: pa.Table) -> list[str]:
    """The top-level integer (and date and timestamp: 32/64-bit integers in Parquet) columns of
    ``data`` that are better delta-encoded: many distinct values in a sample of their rows."""
    out = []
    for f, col in zip(data.schema, data.columns, strict=True):
        t = f.type
        if not (pa.types.is_integer(t) or pa.types.is_date32(t) or pa.types.is_timestamp(t)):
            continue
        sample = col.slice(0, DELTA_SAMPLE)
        valid = len(sample) - sample.null_count
        if valid and pc.count_distinct(sample).as_py() >= DELTA_DISTINCT_SHARE * valid:
            out.append(f.name)
    return out


@functools.lru_cache(maxsize=64)
def _leaf_paths(schema: pa.Schema) -> tuple[str, ...]:
    """The Parquet leaf column paths of ``schema`` (``s.x``, ``l.list.element``): the writer
    takes per-column settings by them, and a nested column has one per leaf."""
    buf = pa.BufferOutputStream()
    pq.write_table(schema.empty_table(), buf)
    leaves = pq.ParquetFile(pa.BufferReader(buf.getvalue())).schema
    return tuple(leaves.column(i).path for i in range(len(leaves)))


def conform(data: pa.Table, schema: pa.Schema, num_rows: int | None = None) -> pa.Table:
    """``data`` with exactly ``schema``'s columns: missing ones (added later) read as NULL."""
    n = data.num_rows if num_rows is None else num_rows
    cols = []
    for f in schema:
        if f.name in data.column_names:
            c = data.column(f.name)
            cols.append(c if c.type == f.type else c.cast(f.type))
        else:
            cols.append(pa.nulls(n, f.type))
    if not cols:  # no columns asked for (count(*)): keep the row count
        return pa.table({"_": pa.nulls(n)}).drop_columns(["_"])
    return pa.Table.from_arrays(cols, schema=schema)


def damaged(path: str, what: str) -> FormatError:
    """The error for a tablet file that is not the one the log describes."""
    return FormatError(f"tablet {path} is damaged: {what}", help=DAMAGED_HELP)


def missing(path: str) -> FormatError:
    return FormatError(f"tablet {path} is missing (the log references it)", help=DAMAGED_HELP)


@contextlib.contextmanager
def verified(io: FileIO, path: str, add: AddTablet) -> Iterator[pq.ParquetFile]:
    """One tablet file, open, after checking it is the log's tablet (size, footer id, row
    count); page CRCs are checked as pages are read. Failures are ``FormatError``s naming it."""
    try:
        with io.open_input(path, add.bytes) as f:
            pf = pq.ParquetFile(f, page_checksum_verification=True)
            found = (pf.metadata.metadata or {}).get(FOOTER_TABLET_ID)
            if found is not None and found.decode(errors="replace") != add.tablet_id:
                raise damaged(
                    path, f"it holds tablet {found.decode(errors='replace')}, not {add.tablet_id} (a swapped file)"
                )
            if pf.metadata.num_rows != add.rows:
                raise damaged(path, f"{pf.metadata.num_rows} rows, the log says {add.rows}")
            yield pf
    except FileNotFoundError:
        raise missing(path) from None
    except SizeMismatch as e:
        raise damaged(
            path, f"{e.actual} bytes, the log says {add.bytes} (replaced, truncated or appended to)"
        ) from None
    except (PermissionError, pa.ArrowMemoryError):
        raise  # not the file's fault
    except (OSError, pa.ArrowException) as e:  # a page CRC, the footer, or bytes that do not decode
        raise damaged(path, str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__) from None


def unview(data: pa.Table) -> pa.Table:
    """``data`` with string and binary views as plain strings and binaries: files written by
    delta-rs (an adopted Delta table) store views in their Arrow schema, which some of Arrow's
    kernels (``take``) do not take."""
    views = [i for i, f in enumerate(data.schema) if pa.types.is_string_view(f.type) or pa.types.is_binary_view(f.type)]
    for i in views:
        f = data.schema.field(i)
        plain = pa.string() if pa.types.is_string_view(f.type) else pa.binary()
        data = data.set_column(i, f.with_type(plain), data.column(i).cast(plain))
    return data


def _read_verified(io: FileIO, path: str, add: AddTablet, columns: list[str]) -> pa.Table:
    """The columns of one tablet file (those it has), after checking it is the log's tablet."""
    with verified(io, path, add) as pf:
        present = set(pf.schema_arrow.names)
        return unview(pf.read(columns=[c for c in columns if c in present]))


def read_tablet(
    io: FileIO,
    root: str,
    add: AddTablet,
    dv: SetDV | None,
    schema: pa.Schema,
    columns: list[str] | None = None,
    *,
    row_ids: bool = False,
    mapping: ColumnMapping | None = None,
) -> pa.Table:
    """The live rows of one tablet (deletion vector applied), conformed to ``schema``; the file
    is verified first (size, footer id, row count, page CRCs): ``FormatError`` if it is not the
    tablet the log describes. ``mapping``: where the tablet keeps each column (its physical
    name; None: under its name).

    ``row_ids`` adds ``_tablet_id`` and ``_row_number`` (the row's position in the file)."""
    wanted = schema if columns is None else pa.schema([schema.field(c) for c in columns])
    if mapping is None:
        read = _read_verified(io, join(root, add.path), add, wanted.names)
    else:
        read = mapping.to_names(_read_verified(io, join(root, add.path), add, mapping.physical_names(wanted.names)))
    data = conform(read, wanted, add.rows)
    if row_ids:
        data = data.append_column(ROW_TABLET, pa.array([add.tablet_id] * add.rows, pa.string()))
        data = data.append_column(ROW_NUMBER, pa.array(range(add.rows), pa.int64()))
    if dv is not None:
        bm = read_dv(io, join(root, dv.path), DVInfo(dv.size, dv.checksum, dv.cardinality))
        data = data.filter(pa.array(live_mask(bm, add.rows)))
    return data


def read_positions(
    io: FileIO,
    root: str,
    add: AddTablet,
    schema: pa.Schema,
    columns: list[str],
    positions: np.ndarray,
    mapping: ColumnMapping | None = None,
) -> pa.Table:
    """``columns`` (conformed to ``schema``) of one tablet's rows at ``positions`` (ascending
    row numbers in the file, as ``select_rows`` gives them), in that order, reading those
    columns only of the row groups that hold them. Verified as ``read_tablet``; ``mapping``:
    as ``read_tablet``'s."""
    wanted = pa.schema([schema.field(c) for c in columns])
    parts = []
    with verified(io, join(root, add.path), add) as pf:
        names = pf.schema_arrow.names
        if mapping is not None and not mapping.identity:
            pf = ByName(pf, mapping)
            names = pf.names
        present = [c for c in columns if c in names]
        start = i = 0
        for g in range(pf.metadata.num_row_groups):
            if i == len(positions):
                break
            n = pf.metadata.row_group(g).num_rows
            j = int(np.searchsorted(positions, start + n, side="left"))
            if j > i:
                local = pa.array(positions[i:j] - start)
                read = unview(pf.read_row_group(g, columns=present)).take(local) if present else pa.table({})
                parts.append(conform(read, wanted, j - i))
            start, i = start + n, j
    return pa.concat_tables(parts) if parts else wanted.empty_table()


def read_rows_at(
    io: FileIO,
    root: str,
    adds: Sequence[AddTablet],
    which: np.ndarray,
    positions: np.ndarray,
    schema: pa.Schema,
    columns: list[str],
    mapping: ColumnMapping | None = None,
    threads: int = 1,
) -> pa.Table:
    """``columns`` of the rows (``adds[which[i]]``, ``positions[i]``), in that order: each
    tablet's rows read by ``read_positions`` (its tablets in ``threads`` threads). Fewer tablets
    than threads: a tablet of several row groups is read in runs of its positions side by side
    (Arrow decodes without the GIL; a row group two runs share is decoded by both)."""
    if not len(which):
        return pa.schema([schema.field(c) for c in columns]).empty_table()
    order = np.lexsort((positions, which))  # by tablet, then position
    chunks = np.split(order, np.flatnonzero(np.diff(which[order])) + 1)
    if threads > len(chunks):
        share = threads // len(chunks)
        chunks = [
            run
            for c in chunks
            for run in np.array_split(c, max(1, min(share, -(-adds[int(which[c[0]])].rows // ROW_GROUP_ROWS))))
            if len(run)
        ]

    def read(chunk: np.ndarray) -> pa.Table:
        return read_positions(io, root, adds[int(which[chunk[0]])], schema, columns, positions[chunk], mapping)

    if threads > 1 and len(chunks) > 1:
        with ThreadPoolExecutor(max_workers=min(threads, len(chunks))) as pool:
            got = pa.concat_tables(list(pool.map(read, chunks)))
    else:
        got = pa.concat_tables([read(c) for c in chunks])
    back = np.empty_like(order)
    back[order] = np.arange(len(order))
    return got.take(pa.array(back))


class ByName:
    """The little of a ``ParquetFile`` that ``select_rows`` uses, with the columns under the
    table's names (``mapping``) where the file keeps them under physical names."""

    def __init__(self, pf: pq.ParquetFile, mapping: ColumnMapping) -> None:
        self._pf, self._mapping = pf, mapping
        self.metadata = pf.metadata
        # a column the file lacks (added after it) must not match a dropped column the file
        # has under the same name: columns the table no longer has are nameless here
        self.names = [mapping.name_of(p) or "" for p in pf.schema_arrow.names]

    def read_row_group(self, g: int, columns: list[str]) -> pa.Table:
        return self._mapping.to_names(unview(self._pf.read_row_group(g, columns=self._mapping.physical_names(columns))))


# Above this many tablets, one listing of tablets/ is cheaper than a HEAD per file.
_LIST_ABOVE = 16


def check_sizes(io: FileIO, root: str, adds: Sequence[AddTablet]) -> None:
    """Check that every tablet file exists with the log's size, without opening any (for
    readers that do not go through ``read_tablet``, e.g. Spark's native Parquet scan): one stat
    per tablet on local disk, one HEAD per tablet or one listing of ``tablets/`` elsewhere."""
    if io.local or len(adds) <= _LIST_ABOVE:
        sizes: dict[str, int] = {}
        for add in adds:
            with contextlib.suppress(FileNotFoundError):
                sizes[add.path] = io.size(join(root, add.path))
    else:  # one listing per directory the tablets are in (an adopted Delta table's: the root)
        sizes = {}
        local = [a for a in adds if not is_absolute(a.path)]
        for sub in sorted({a.path.rpartition("/")[0] for a in local}):
            sizes.update(
                {f"{sub}/{f.name}" if sub else f.name: f.size for f in io.list(join(root, sub) if sub else root)}
            )
        for add in adds:  # a clone's tablets of its source lie elsewhere: one HEAD each
            if add.path not in sizes and is_absolute(add.path):
                with contextlib.suppress(FileNotFoundError):
                    sizes[add.path] = io.size(add.path)
    for add in adds:
        path = join(root, add.path)
        if add.path not in sizes:
            raise missing(path)
        if sizes[add.path] != add.bytes:
            raise damaged(
                path, f"{sizes[add.path]} bytes, the log says {add.bytes} (replaced, truncated or appended to)"
            )
