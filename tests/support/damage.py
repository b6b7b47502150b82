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
from tablets.storage.tablet import write_tablet

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


def add_old_tablet(t: TabletTable, data: pa.Table) -> AddTablet:
    """Commit a tablet written as before verification existed: no page CRCs, no tablet id in the
    footer (the bytes pq.write_table gave then)."""
    from tablets.storage.transaction import TabletFragment, begin

    add = write_tablet(t.io, t.root, data, "0" * 32)  # for its id and stats; the bytes are replaced
    buf = pa.BufferOutputStream()
    pq.write_table(data, buf, compression="zstd", row_group_size=1 << 17)
    body = buf.getvalue()
    t.io.write(join(t.root, add.path), body)
    old = AddTablet(add.tablet_id, add.path, add.rows, body.size, add.stats, add.txid)
    handle = begin(t.snapshot(), t.root, "APPEND", delete_from=(), io=t.io)
    t.finish(handle, [TabletFragment(old)])
    return old
