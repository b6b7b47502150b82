"""Tablets: immutable Parquet files. Row number = row position in the file."""

from __future__ import annotations

import datetime as dt
import decimal
import uuid

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tablets.storage.actions import AddTablet, ColumnStats, SetDV
from tablets.storage.dv import DVInfo, live_mask, read_dv
from tablets.storage.fileio import FileIO, basename, join

ROW_TABLET = "_tablet_id"
ROW_NUMBER = "_row_number"
TABLET_DIR = "tablets"
TABLET_SUFFIX = ".parquet"  # a tablet file is <tablet id>.parquet
DV_DIR = "dv"
STATS_MAX_STRING = 64


def new_id() -> str:
    return uuid.uuid4().hex


def tablet_relpath(tablet_id: str) -> str:
    return f"{TABLET_DIR}/{tablet_id}{TABLET_SUFFIX}"


def dv_relpath(tablet_id: str, txid: str) -> str:
    return f"{DV_DIR}/{tablet_id}-{txid}.bin"


def tablet_id_of_path(path: str) -> str:
    """The tablet id of a tablet file path or URI (``.../tablets/<id>.parquet``)."""
    return basename(path).removesuffix(TABLET_SUFFIX)


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
        lo, hi = mm["min"].as_py(), mm["max"].as_py()
        if isinstance(lo, float) and (lo != lo or hi != hi):  # NaN: no usable bound
            lo = hi = None
        out.append((name, ColumnStats(_json_value(lo), _json_value(hi), nulls)))
    return tuple(out)


# Spark splits a file between tasks only at row-group boundaries: a 1M-row tablet of one row
# group is read by one core. 128k rows keep groups large (~2-4 MB) and scans parallel.
ROW_GROUP_ROWS = 1 << 17


def write_tablet(io: FileIO, root: str, data: pa.Table, txid: str, tablet_id: str | None = None) -> AddTablet:
    """Write ``data`` as one new tablet under ``root`` and describe it."""
    tablet_id = tablet_id or new_id()
    rel = tablet_relpath(tablet_id)
    buf = pa.BufferOutputStream()
    pq.write_table(data, buf, compression="zstd", row_group_size=ROW_GROUP_ROWS)
    body = buf.getvalue()
    io.write(join(root, rel), body)  # a fresh uuid name: nothing to overwrite
    return AddTablet(
        tablet_id=tablet_id,
        path=rel,
        rows=data.num_rows,
        bytes=body.size,
        stats=column_stats(data),
        txid=txid,
    )


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


def read_tablet(
    io: FileIO,
    root: str,
    add: AddTablet,
    dv: SetDV | None,
    schema: pa.Schema,
    columns: list[str] | None = None,
    *,
    row_ids: bool = False,
) -> pa.Table:
    """The live rows of one tablet (deletion vector applied), conformed to ``schema``.

    ``row_ids`` adds ``_tablet_id`` and ``_row_number`` (the row's position in the file)."""
    wanted = schema if columns is None else pa.schema([schema.field(c) for c in columns])
    path = join(root, add.path)
    try:
        pf = pq.ParquetFile(io.open_input(path, add.bytes))
    except FileNotFoundError:
        from tablets.exceptions import FormatError

        raise FormatError(
            f"tablet {path} is missing (the log references it)",
            help="Restore it from a backup, or time-travel to a version that does not reference it.",
        ) from None
    present = set(pf.schema_arrow.names)
    data = conform(pf.read(columns=[c for c in wanted.names if c in present]), wanted, add.rows)
    if row_ids:
        data = data.append_column(ROW_TABLET, pa.array([add.tablet_id] * add.rows, pa.string()))
        data = data.append_column(ROW_NUMBER, pa.array(range(add.rows), pa.int64()))
    if dv is not None:
        bm = read_dv(io, join(root, dv.path), DVInfo(dv.size, dv.checksum, dv.cardinality))
        data = data.filter(pa.array(live_mask(bm, add.rows)))
    return data
