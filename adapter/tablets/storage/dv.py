"""Deletion vector files: one portable 64-bit Roaring bitmap of deleted row numbers per file.

Byte layout (the blob is Delta Lake's DV format; see docs/FORMAT_DV.md):

    byte 0        format version, 1
    4 bytes       big-endian length of what follows up to the CRC (magic + bitmap)
    4 bytes       little-endian magic number 1681511377
    n bytes       portable 64-bit Roaring: 8-byte LE bucket count, then per bucket a 4-byte LE
                  key (the high 32 bits) and a portable 32-bit Roaring bitmap
                  (= pyroaring ``BitMap64.serialize()``)
    4 bytes       big-endian CRC-32 of magic + bitmap
"""

from __future__ import annotations

import array
import os
import struct
import uuid
import zlib
from dataclasses import dataclass

import numpy as np
from pyroaring import BitMap, BitMap64

from tablets.exceptions import FormatError

FORMAT_VERSION = 1
MAGIC = 1681511377


@dataclass(frozen=True)
class DVInfo:
    size: int
    checksum: str  # CRC-32 of the whole file, 8 lowercase hex digits
    cardinality: int


def encode(bitmap: BitMap64) -> bytes:
    body = struct.pack("<I", MAGIC) + bitmap.serialize()
    return bytes([FORMAT_VERSION]) + struct.pack(">I", len(body)) + body + struct.pack(">I", zlib.crc32(body))


def decode(data: bytes, where: str = "deletion vector") -> BitMap64:
    if len(data) < 13:
        raise FormatError(f"{where}: truncated ({len(data)} bytes)")
    if data[0] != FORMAT_VERSION:
        raise FormatError(f"{where}: unknown format version {data[0]} (expected {FORMAT_VERSION})")
    (length,) = struct.unpack(">I", data[1:5])
    if length + 9 != len(data):
        raise FormatError(f"{where}: length field says {length} bytes, file holds {len(data) - 9}")
    body = data[5 : 5 + length]
    (stored,) = struct.unpack(">I", data[5 + length :])
    computed = zlib.crc32(body)
    if stored != computed:
        raise FormatError(f"{where}: CRC mismatch (stored 0x{stored:08x}, computed 0x{computed:08x})")
    (magic,) = struct.unpack("<I", body[:4])
    if magic != MAGIC:
        raise FormatError(f"{where}: bad magic number {magic} (expected {MAGIC})")
    try:
        bitmap = BitMap64.deserialize(body[4:])
    except Exception as e:  # pyroaring raises ValueError/RuntimeError on malformed input
        raise FormatError(f"{where}: unreadable bitmap ({e})") from e
    if bitmap.serialize() != body[4:]:
        raise FormatError(f"{where}: bitmap bytes are not canonical")
    return bitmap


def write_dv(path: str, bitmap: BitMap64) -> DVInfo:
    """Write a new DV file (never overwrites: fails if ``path`` exists)."""
    data = encode(bitmap)
    tmp = os.path.join(os.path.dirname(path), f".tmp-{uuid.uuid4().hex}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise FormatError(f"deletion vector {path} already exists; DV files are never overwritten") from None
    finally:
        os.unlink(tmp)
    return DVInfo(len(data), f"{zlib.crc32(data):08x}", len(bitmap))


def read_dv(path: str, expected: DVInfo | None = None) -> BitMap64:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise FormatError(f"deletion vector {path} is missing") from None
    if expected is not None:
        if len(data) != expected.size:
            raise FormatError(f"deletion vector {path}: {len(data)} bytes, the log says {expected.size}")
        if f"{zlib.crc32(data):08x}" != expected.checksum:
            raise FormatError(f"deletion vector {path}: checksum {zlib.crc32(data):08x}, the log says {expected.checksum}")
    bitmap = decode(data, f"deletion vector {path}")
    if expected is not None and len(bitmap) != expected.cardinality:
        raise FormatError(f"deletion vector {path}: {len(bitmap)} rows, the log says {expected.cardinality}")
    return bitmap


def bitmap_from_positions(positions) -> BitMap64:
    """A bitmap of ``positions`` (numpy array or iterable of ints).

    Built bucket by bucket (high 32 bits) from 32-bit bitmaps made of sorted ``array.array``
    values and assembled as portable bytes: 10M positions in ~0.2 s, where ``BitMap64`` fed
    the values directly takes ~12 s."""
    values = np.unique(np.asarray(list(positions) if isinstance(positions, (set, frozenset)) else positions, dtype=np.int64))
    if len(values) and values[0] < 0:
        raise FormatError(f"negative row number {values[0]} in a deletion vector")
    values = values.astype(np.uint64)
    high = (values >> np.uint64(32)).astype(np.uint32)
    low = (values & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    keys, starts = np.unique(high, return_index=True)
    ends = [*starts[1:], len(values)] if len(keys) else []
    parts = [struct.pack("<Q", len(keys))]
    for key, start, end in zip(keys, starts, ends, strict=True):
        parts.append(struct.pack("<I", int(key)))
        parts.append(BitMap(array.array("I", low[start:end].tobytes())).serialize())
    return BitMap64.deserialize(b"".join(parts))


def positions_of(bitmap: BitMap64) -> np.ndarray:
    return np.frombuffer(bitmap.to_array().tobytes(), dtype=np.uint64) if len(bitmap) else np.empty(0, np.uint64)


def live_mask(bitmap: BitMap64, num_rows: int) -> np.ndarray:
    mask = np.ones(num_rows, dtype=bool)
    if len(bitmap):
        mask[positions_of(bitmap).astype(np.int64)] = False
    return mask
