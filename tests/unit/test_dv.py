"""Deletion vector files: golden bytes, round trips, and corruption always detected."""

import os
import struct
import zlib

import numpy as np
import pytest
from pyroaring import BitMap64
from tablets.exceptions import FormatError
from tablets.storage.dv import (
    MAGIC,
    DVInfo,
    bitmap_from_positions,
    decode,
    encode,
    live_mask,
    positions_of,
    read_dv,
    write_dv,
)
from tablets.storage.fileio import LOCAL

pytestmark = pytest.mark.unit

GOLDEN = os.path.join(os.path.dirname(__file__), "golden", "dv")
CASES = {
    "empty": [],
    "sparse": [0, 3, 1000, 65535, 65536, 2**31],
    "dense": list(range(100_000)),
    "beyond_2_32": [1, 2**32, 2**32 + 7, 5 * 2**32 + 3],
}


def golden(name: str) -> bytes:
    with open(os.path.join(GOLDEN, f"{name}.bin"), "rb") as f:
        return f.read()


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_files(name):
    data = golden(name)
    assert sorted(decode(data)) == CASES[name]
    assert encode(bitmap_from_positions(CASES[name])) == data


def test_layout_by_hand():
    """version | BE length | LE magic | portable Roaring64 (LE bucket count, LE key, 32-bit
    portable Roaring) | BE CRC-32 of magic + bitmap."""
    data = golden("beyond_2_32")
    assert data[0] == 1
    (length,) = struct.unpack(">I", data[1:5])
    assert length == len(data) - 9
    body = data[5 : 5 + length]
    assert struct.unpack("<I", body[:4]) == (MAGIC,)
    assert struct.unpack(">I", data[-4:]) == (zlib.crc32(body),)
    (buckets,) = struct.unpack("<Q", body[4:12])
    assert buckets == 3  # high words 0, 1 and 5
    (key0,) = struct.unpack("<I", body[12:16])
    assert key0 == 0
    # a portable 32-bit Roaring bitmap without runs starts with cookie 12346
    (cookie,) = struct.unpack("<I", body[16:20])
    assert cookie == 12346


@pytest.mark.parametrize(
    "values",
    [[], list(range(0, 1 << 20, 3)), [7, 1 << 40, (1 << 63) - 1], list(range(10))],
    ids=["empty", "dense", "far", "small"],
)
def test_round_trip(values):
    bm = bitmap_from_positions(values)
    assert list(decode(encode(bm))) == sorted(set(values))


def test_round_trip_random_million():
    pos = np.random.default_rng(7).integers(0, 1 << 34, 1_000_000)
    bm = bitmap_from_positions(pos)
    assert np.array_equal(positions_of(decode(encode(bm))), np.unique(pos).astype(np.uint64))
    assert encode(bm) == encode(BitMap64(np.unique(pos).tolist()))  # same bytes as pyroaring's own


def test_every_flipped_bit_is_a_format_error():
    data = golden("sparse")
    for i in range(len(data)):
        for bit in (0, 7):
            bad = bytearray(data)
            bad[i] ^= 1 << bit
            with pytest.raises(FormatError):
                decode(bytes(bad))


def test_truncation_and_trailing_bytes():
    data = golden("sparse")
    for n in range(len(data)):
        with pytest.raises(FormatError):
            decode(data[:n])
    with pytest.raises(FormatError):
        decode(data + b"\0")


def test_write_never_overwrites_and_read_checks(tmp_path):
    path = str(tmp_path / "a.bin")
    info = write_dv(LOCAL, path, bitmap_from_positions([1, 2, 3]))
    with open(path, "rb") as f:
        data = f.read()
    assert info == DVInfo(len(data), f"{zlib.crc32(data):08x}", 3)
    with pytest.raises(FormatError, match="already exists"):
        write_dv(LOCAL, path, bitmap_from_positions([4]))
    assert list(read_dv(LOCAL, path, info)) == [1, 2, 3]
    with pytest.raises(FormatError, match="checksum"):
        read_dv(LOCAL, path, DVInfo(info.size, "00000000", 3))
    with pytest.raises(FormatError, match="missing"):
        read_dv(LOCAL, str(tmp_path / "nope.bin"))
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".tmp-")]


def test_live_mask():
    mask = live_mask(bitmap_from_positions([0, 2]), 4)
    assert mask.tolist() == [False, True, False, True]
    with pytest.raises(FormatError):
        bitmap_from_positions([-1])
