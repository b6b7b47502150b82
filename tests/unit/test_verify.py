"""Tablet files are verified when the store reads them (docs/FORMAT.md, "Verification"): a file
that is not the tablet the log describes is a FormatError naming it, never other rows. Every
test runs on local disk and in a bucket of a real S3-compatible server (``base``)."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.damage import CASES, add_old_tablet, damage, restore, same_size_pair, tablet_paths
from tablets.exceptions import FormatError
from tablets.storage import TabletTable
from tablets.storage import tablet as tablet_mod
from tablets.storage.fileio import join
from tablets.storage.tablet import FOOTER_TABLET_ID, check_sizes

pytestmark = pytest.mark.unit

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("x", pa.float64())])


def data(lo: int, hi: int) -> pa.Table:
    ids = np.arange(lo, hi)
    return pa.table({"id": ids, "v": pa.array([f"v{i % 97}" for i in ids]), "x": ids * 0.5}, schema=SCHEMA)


def make(base: str, *sizes: int) -> TabletTable:
    """A table with one tablet per size (rows), of different contents."""
    t = TabletTable.create(join(base, "t"), SCHEMA, key_columns=["id"])
    start = 0
    for n in sizes:
        t.append(data(start, start + n))
        start += n
    return t


def sorted_rows(t: pa.Table) -> list[tuple]:
    return sorted(zip(*(c.to_pylist() for c in t.columns), strict=True))


def test_new_tablets_carry_their_id_and_page_crcs(base):
    t = make(base, 1000)
    [st] = t.snapshot().tablets.values()
    meta = pq.ParquetFile(t.io.open_input(t.tablet_path(st))).metadata
    assert meta.metadata[FOOTER_TABLET_ID] == st.tablet_id.encode()
    assert t.io.size(t.tablet_path(st)) == st.add.bytes


@pytest.mark.parametrize("case", CASES)
def test_damaged_tablet_is_a_format_error_naming_it(base, case):
    t = make(base, 3000, 2000)
    before, version = sorted_rows(t.read()), t.version
    path, other = tablet_paths(t)
    good = damage(t, path, case, other)
    with pytest.raises(FormatError) as err:
        t.read()
    text = str(err.value)
    assert path in text.splitlines()[0]
    assert ("missing" if case == "missing" else "is damaged") in text
    assert "Help: Restore the file from a copy" in text and "time-travel" in text
    if case in ("swapped", "truncated"):
        assert "bytes, the log says" in text
    elif case.startswith("flip"):
        assert "CRC" in text or "is damaged" in text
    # a statement that reads the tablet fails before it writes anything
    with pytest.raises(FormatError):
        t.compact(min_tablet_rows=10_000)
    assert t.version == version
    restore(t, path, good)
    assert sorted_rows(t.read()) == before


def test_swapped_tablet_of_the_same_size_is_caught_by_its_footer_id(base):
    t = TabletTable.create(join(base, "t"), SCHEMA)
    a, b = same_size_pair(t, data(0, 500))
    damage(t, t.tablet_path(a), "swapped", t.tablet_path(b))
    with pytest.raises(FormatError, match=f"holds tablet {b.tablet_id}, not {a.tablet_id}") as err:
        t.read()
    assert t.tablet_path(a) in str(err.value)


def test_flip_in_an_unread_column_is_not_read(base):
    """Verification covers the pages a reader reads: a damaged column that is not read cannot
    change the rows returned."""
    t = make(base, 4000)
    [path] = tablet_paths(t)
    meta = pq.ParquetFile(t.io.open_input(path)).metadata
    x = meta.row_group(0).column(2)  # column "x"
    start = x.dictionary_page_offset or x.data_page_offset
    body = bytearray(t.io.read(path))
    body[start + x.total_compressed_size // 2] ^= 0x01
    t.io.write(path, bytes(body))
    assert t.read(columns=["id"]).column("id").to_pylist() == list(range(4000))
    with pytest.raises(FormatError, match="CRC"):
        t.read()


def test_old_tablets_without_crcs_or_footer_id_still_read(base):
    t = make(base, 100)
    old = add_old_tablet(t, data(100, 300))
    meta = pq.ParquetFile(t.io.open_input(join(t.root, old.path))).metadata
    assert FOOTER_TABLET_ID not in (meta.metadata or {})
    assert sorted_rows(t.read()) == sorted_rows(data(0, 300))
    # ... and their size is still checked
    damage(t, join(t.root, old.path), "truncated")
    with pytest.raises(FormatError, match="bytes, the log says"):
        t.read()


@pytest.mark.parametrize("listing", [False, True])
def test_check_sizes_without_opening(base, monkeypatch, listing):
    if listing:
        monkeypatch.setattr(tablet_mod, "_LIST_ABOVE", 0)  # object stores list tablets/ for many tablets
    t = make(base, 300, 200)
    adds = [st.add for st in t.snapshot().tablets.values()]
    check_sizes(t.io, t.root, adds)
    for case in ("swapped", "truncated", "missing"):
        path, other = tablet_paths(t)
        good = damage(t, path, case, other)
        with pytest.raises(FormatError, match="missing" if case == "missing" else "bytes, the log says") as err:
            check_sizes(t.io, t.root, adds)
        assert path in str(err.value)
        restore(t, path, good)
