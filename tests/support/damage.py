"""Damage a tablet file the ways disks, copies and people do, through the table's FileIO (local
disk or a bucket), and put it back.

Each case leaves the log untouched: it still describes the original tablet.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
from tablets.storage import TabletTable
from tablets.storage.actions import AddTablet
from tablets.storage.fileio import join
from tablets.storage.tablet import FOOTER_TABLET_ID, ROW_ID, write_tablet

# flip one bit of the byte at 10 %, 30 %, 70 % of the file; another tablet's bytes; cut; gone
CASES = ["flip10", "flip30", "flip70", "swapped", "truncated", "missing"]


def tablet_paths(t: TabletTable) -> list[str]:
    return [t.tablet_path(st) for st in t.snapshot().tablets.values()]


def damage(t: TabletTable, path: str, case: str, other: str | None = None) -> bytes:
    """Damage the file at ``path``; returns its original bytes (for ``restore``). ``swapped``
    copies ``other``'s bytes over it."""
    io = t.io
    good = io.read(path)
    if case.startswith("flip"):
        body = bytearray(good)
        body[len(body) * int(case[4:]) // 100] ^= 0x01
        io.write(path, bytes(body))
    elif case == "swapped":
        assert other is not None and other != path
        io.write(path, io.read(other))
    elif case == "truncated":
        io.write(path, good[: len(good) * 2 // 3])
    elif case == "missing":
        io.delete(path)
    else:
        raise ValueError(case)
    return good


def restore(t: TabletTable, path: str, good: bytes) -> None:
    t.io.write(path, good)


def same_size_pair(t: TabletTable, data: pa.Table, tries: int = 8):  # noqa: ANN201
    """Two tablets of ``t`` of one size and other ids: ``data`` appended until two match (the
    same rows differ only by the few bytes of their row ids' tags)."""
    by_size: dict[int, list] = {}
    for _ in range(tries):
        t.append(data)
    for st in t.snapshot().tablets.values():
        by_size.setdefault(st.add.bytes, []).append(st)
    a, b = next(pair for pair in by_size.values() if len(pair) > 1)[:2]
    return a, b


def add_old_tablet(t: TabletTable, data: pa.Table) -> AddTablet:
    """Commit a tablet written as before verification existed: no page CRCs, no tablet id in the
    footer, no row ids (the bytes pq.write_table gave then)."""
    buf = pa.BufferOutputStream()
    pq.write_table(data, buf, compression="zstd", row_group_size=1 << 17)
    return _commit_bytes(t, data, lambda _: buf.getvalue())


def add_tablet_without_row_ids(t: TabletTable, data: pa.Table, tablet_id: str | None = None) -> AddTablet:
    """Commit a tablet written as before row ids were part of the format: page CRCs and the
    footer id, no ``ROW_ID`` column."""

    def body(tid: str) -> pa.Buffer:
        buf = pa.BufferOutputStream()
        with pq.ParquetWriter(buf, data.schema, compression="zstd", write_page_checksum=True) as w:
            w.write_table(data, row_group_size=1 << 17)
            w.add_key_value_metadata({FOOTER_TABLET_ID: tid.encode()})
        return buf.getvalue()

    return _commit_bytes(t, data, body, tablet_id)


def _commit_bytes(t: TabletTable, data: pa.Table, body_of, tablet_id: str | None = None) -> AddTablet:  # noqa: ANN001
    """Commit ``data`` as one tablet whose file holds ``body_of(tablet id)``, described as then."""
    add = write_tablet(t.io, t.root, data, "0" * 32, tablet_id)  # for its id and stats; the bytes are replaced
    body = body_of(add.tablet_id)
    t.io.write(join(t.root, add.path), body)
    stats = tuple(s for s in add.stats if s[0] != ROW_ID)
    return _commit(t, AddTablet(add.tablet_id, add.path, add.rows, body.size, stats, add.txid))


def add_tablet_with_id(t: TabletTable, data: pa.Table, tablet_id: str) -> AddTablet:
    """Commit ``data`` as one tablet of the current format named ``tablet_id``."""
    return _commit(t, write_tablet(t.io, t.root, data, "0" * 32, tablet_id))


def _commit(t: TabletTable, add: AddTablet) -> AddTablet:
    from tablets.storage.transaction import TabletFragment, begin

    handle = begin(t.snapshot(), t.root, "APPEND", delete_from=(), io=t.io)
    t.finish(handle, [TabletFragment(add)])
    return add
