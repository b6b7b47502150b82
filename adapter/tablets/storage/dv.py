"""Deletion vector files: one portable 64-bit Roaring bitmap of deleted row numbers per file.

Byte layout (docs/FORMAT_DV.md has the full spec and a worked hex example)::

    byte 0        format version, 1
    4 bytes       big-endian length n of what follows up to the CRC (magic + bitmap)
    4 bytes       little-endian magic number 1681511377 (D1 D3 39 64)
    n - 4 bytes   portable 64-bit Roaring: 8-byte LE bucket count, then per bucket (keys strictly
                  increasing) a 4-byte LE key (the high 32 bits, most significant bit 0) and a
                  portable 32-bit Roaring bitmap of the low 32 bits (= pyroaring ``BitMap64.serialize()``)
    4 bytes       big-endian CRC-32 (zlib) of magic + bitmap

Bytes 1.. are exactly Delta Lake's on-disk DV (``dataSize``, ``bitmapData``, ``checksum``) and
exactly an Iceberg v3 Puffin ``deletion-vector-v1`` blob; the whole file is a Delta DV file
holding one DV at offset 1.

Pure Python + pyroaring + numpy: this module must not import pyspark or dbt.
"""

from __future__ import annotations

import array
import struct
import zlib
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from pyroaring import BitMap64

from tablets.exceptions import FormatError
from tablets.storage.fileio import FileIO

__all__ = [
    "FORMAT_VERSION",
    "MAGIC",
    "MAX_POSITION",
    "DVInfo",
    "bitmap_from_positions",
    "decode",
    "encode",
    "live_mask",
    "positions_of",
    "read_dv",
    "write_dv",
]

FORMAT_VERSION = 1
MAGIC = 1681511377
#: Delta and Iceberg require the most significant bit of every position to be 0.
MAX_POSITION = (1 << 63) - 1

_NATIVE_MAGIC = 1681511376  # Delta's older, non-portable RoaringBitmapArray serialization
_NO_RUN_COOKIE = 12346  # 32-bit Roaring: no run containers, 4-byte container count follows
_RUN_COOKIE = 12347  # 32-bit Roaring: low 16 bits; high 16 bits = container count - 1
_NO_OFFSET_THRESHOLD = 4  # with run containers, the offset header exists only from 4 containers on
_EMPTY_FILE_SIZE = 21  # version + length + magic + bucket count 0 + CRC
_MAX_BODY = 0xFFFFFFFF  # the length field is a uint32


@dataclass(frozen=True)
class DVInfo:
    """What the log's ``set_dv`` records about a DV file."""

    size: int
    checksum: str  # CRC-32 of the whole file, 8 lowercase hex digits
    cardinality: int


class _Bad(Exception):
    """A structural problem in the bitmap bytes (turned into a FormatError naming the file)."""


# --- encoding ------------------------------------------------------------------------------


def _encode(bitmap: BitMap64) -> tuple[bytes, int]:
    if not isinstance(bitmap, BitMap64):
        bitmap = bitmap_from_positions(bitmap)
    if len(bitmap) and bitmap.max() > MAX_POSITION:
        raise FormatError(
            f"row number {bitmap.max()} cannot be stored in a deletion vector (the maximum is 2^63-1)",
            help="Row numbers are positions in one tablet; this one is not a valid row number.",
        )
    # The same set can be serialized with different container types (a union, for example,
    # leaves bitset containers that a run container would encode smaller). Run-optimizing a copy
    # makes the bytes a function of the set alone, as in the golden files.
    canonical = bitmap.copy()
    canonical.run_optimize()
    body = struct.pack("<I", MAGIC) + canonical.serialize()
    if len(body) > _MAX_BODY:
        raise FormatError(f"deletion vector of {len(bitmap)} rows is too large ({len(body)} bytes) for one file")
    data = bytes([FORMAT_VERSION]) + struct.pack(">I", len(body)) + body + struct.pack(">I", zlib.crc32(body))
    return data, len(bitmap)


def encode(bitmap: BitMap64) -> bytes:
    """The bytes of a DV file holding ``bitmap``: canonical (run-optimized), so equal sets give
    equal bytes. Raises FormatError for positions above 2^63-1."""
    return _encode(bitmap)[0]


# --- decoding ------------------------------------------------------------------------------


def decode(data: bytes, where: str = "deletion vector") -> BitMap64:
    """The bitmap of a DV file's bytes. Raises FormatError, naming ``where``, on any inconsistency:
    version byte, length field, CRC, magic number, bitmap structure (bucket and container headers,
    offsets, keys, trailing bytes), or a bitmap pyroaring cannot load.

    Accepts any valid portable encoding, including those written by Delta (which also writes
    empty buckets for the keys below the largest) and bitmaps without run optimization."""
    data = bytes(data)
    if not data:
        raise FormatError(f"{where}: empty file (no version byte)")
    if data[0] != FORMAT_VERSION:
        raise FormatError(f"{where}: unknown format version {data[0]} (expected {FORMAT_VERSION})")
    if len(data) < _EMPTY_FILE_SIZE:
        raise FormatError(
            f"{where}: truncated ({len(data)} bytes; the smallest deletion vector file is {_EMPTY_FILE_SIZE})"
        )
    (length,) = struct.unpack_from(">I", data, 1)
    if length + 9 != len(data):
        raise FormatError(
            f"{where}: length field says {length} bytes of magic + bitmap, the file holds {len(data) - 9} "
            f"({'truncated' if length + 9 > len(data) else 'trailing bytes'})"
        )
    body = data[5 : 5 + length]
    (stored,) = struct.unpack_from(">I", data, 5 + length)
    computed = zlib.crc32(body)
    if stored != computed:
        raise FormatError(f"{where}: CRC mismatch (stored 0x{stored:08x}, computed 0x{computed:08x})")
    (magic,) = struct.unpack_from("<I", body, 0)
    if magic != MAGIC:
        what = " (Delta's native RoaringBitmapArray format, which is not portable)" if magic == _NATIVE_MAGIC else ""
        raise FormatError(f"{where}: bad magic number {magic}{what} (expected {MAGIC})")
    bitmap_bytes = body[4:]
    try:
        header_cardinality = _check_portable(bitmap_bytes)
    except _Bad as e:
        raise FormatError(f"{where}: {e}") from None
    try:
        bitmap = BitMap64.deserialize(bitmap_bytes)
    except Exception as e:  # pyroaring raises ValueError (or worse) on malformed containers
        raise FormatError(f"{where}: unreadable bitmap ({e})") from e
    if len(bitmap) != header_cardinality:
        raise FormatError(
            f"{where}: container headers say {header_cardinality} rows, the containers hold {len(bitmap)}"
        )
    return bitmap


def _check_portable(buf: bytes) -> int:
    """Walk the portable 64-bit layout; return the cardinality the headers claim.

    pyroaring ignores trailing bytes and the 32-bit offset headers, so these are checked here:
    the bytes must be exactly one well-formed bitmap."""
    if len(buf) < 8:
        raise _Bad(f"bitmap truncated ({len(buf)} bytes, no bucket count)")
    (buckets,) = struct.unpack_from("<Q", buf, 0)
    if buckets > (len(buf) - 8) // 12:  # a bucket takes at least 4 (key) + 8 (empty bitmap) bytes
        raise _Bad(f"bucket count {buckets} does not fit in {len(buf)} bytes of bitmap")
    pos, last_key, cardinality = 8, -1, 0
    for b in range(buckets):
        if pos + 4 > len(buf):
            raise _Bad(f"bitmap truncated at bucket {b}")
        (key,) = struct.unpack_from("<I", buf, pos)
        if key <= last_key:
            raise _Bad(f"bucket keys not strictly increasing ({key} after {last_key})")
        if key >> 31:
            raise _Bad(f"bucket key 0x{key:08x} has its most significant bit set (positions must be below 2^63)")
        last_key = key
        pos, count = _check_roaring32(buf, pos + 4, b)
        cardinality += count
    if pos != len(buf):
        raise _Bad(f"{len(buf) - pos} trailing bytes after the bitmap")
    return cardinality


def _check_roaring32(buf: bytes, start: int, bucket: int) -> tuple[int, int]:
    """Check one portable 32-bit Roaring bitmap at ``buf[start:]``; return (its end, header cardinality)."""
    size = len(buf)

    def need(at: int, n: int, what: str) -> None:
        if at + n > size:
            raise _Bad(f"bitmap truncated in the {what} of bucket {bucket}")

    need(start, 4, "cookie")
    (cookie,) = struct.unpack_from("<I", buf, start)
    p = start + 4
    if cookie == _NO_RUN_COOKIE:
        need(p, 4, "container count")
        (n,) = struct.unpack_from("<I", buf, p)
        p += 4
        if n > 65536:
            raise _Bad(f"bucket {bucket} claims {n} containers (at most 65536)")
        is_run = np.zeros(n, dtype=bool)
    elif cookie & 0xFFFF == _RUN_COOKIE:
        n = (cookie >> 16) + 1
        flag_bytes = (n + 7) // 8
        need(p, flag_bytes, "run-container flags")
        flags = np.unpackbits(np.frombuffer(buf, np.uint8, flag_bytes, p), bitorder="little")
        if flags[n:].any():
            raise _Bad(f"bucket {bucket}: run-container flags set beyond the last container")
        is_run = flags[:n].astype(bool)
        p += flag_bytes
    else:
        raise _Bad(f"bucket {bucket}: bad Roaring cookie 0x{cookie:08x} (expected 12346 or 12347 in the low 16 bits)")
    if n == 0:
        return p, 0
    need(p, 4 * n, "container headers")
    header = np.frombuffer(buf, "<u2", 2 * n, p).astype(np.int64)
    p += 4 * n
    keys, cards = header[0::2], header[1::2] + 1
    if n > 1 and not (np.diff(keys) > 0).all():
        raise _Bad(f"bucket {bucket}: container keys not strictly increasing")
    has_offsets = cookie == _NO_RUN_COOKIE or n >= _NO_OFFSET_THRESHOLD
    offsets = None
    if has_offsets:
        need(p, 4 * n, "container offsets")
        offsets = np.frombuffer(buf, "<u4", n, p).astype(np.int64)
        p += 4 * n
    data_start = p
    # array containers (cardinality <= 4096) take 2 bytes a value, bitsets 8 KiB, runs 2 + 4 a run
    sizes = np.where(cards <= 4096, 2 * cards, 8192)
    runs = np.flatnonzero(is_run)
    if len(runs):
        if offsets is not None:
            # Read each run count where the offset header says the container is; comparing all
            # offsets with the running sum below then proves, container by container, that each
            # count was read at the container's real start.
            at = start + offsets[runs]
            if (at < data_start).any() or (at + 2 > size).any():
                raise _Bad(f"bucket {bucket}: container offset outside the bitmap")
            raw = np.frombuffer(buf, np.uint8)
            sizes[runs] = 2 + 4 * (raw[at].astype(np.int64) | (raw[at + 1].astype(np.int64) << 8))
        else:  # fewer than 4 containers: walk them
            q = data_start
            for i in range(n):
                if is_run[i]:
                    need(q, 2, "run container")
                    (count,) = struct.unpack_from("<H", buf, q)
                    sizes[i] = 2 + 4 * count
                q += int(sizes[i])
    ends = data_start + np.cumsum(sizes)
    if offsets is not None:
        expected = np.concatenate(([data_start], ends[:-1])) - start
        wrong = np.flatnonzero(offsets != expected)
        if len(wrong):
            i = int(wrong[0])
            raise _Bad(f"bucket {bucket}: offset header puts container {i} at {offsets[i]}, it starts at {expected[i]}")
    end = int(ends[-1])
    if end > size:
        raise _Bad(f"bitmap truncated in the containers of bucket {bucket}")
    return end, int(cards.sum())


# --- files ---------------------------------------------------------------------------------


def write_dv(io: FileIO, path: str, bitmap: BitMap64, *, sync: bool = True) -> DVInfo:
    """Write a new DV file; never overwrites (FormatError if ``path`` exists): the file is
    created exclusively (``FileIO.create``), whole or not at all. Not ``sync``: the caller makes
    it durable (``FileIO.sync``) before the commit names it."""
    data, cardinality = _encode(bitmap)
    if not io.create(path, data, sync=sync):
        raise FormatError(
            f"deletion vector {path} already exists; DV files are never overwritten",
            help="DV file names carry the writing transaction's id: a second write under the same name is a bug or a retried task of a finished transaction.",
        )
    return DVInfo(len(data), f"{zlib.crc32(data):08x}", cardinality)


def read_dv(io: FileIO, path: str, expected: DVInfo | None = None) -> BitMap64:
    """The bitmap of the DV file at ``path``. With ``expected`` (from the log's ``set_dv``), the
    file's size, CRC-32 and cardinality must match it. Raises FormatError naming the path."""
    try:
        data = io.read(path)
    except FileNotFoundError:
        raise FormatError(f"deletion vector {path} is missing") from None
    if expected is not None:
        if len(data) != expected.size:
            raise FormatError(f"deletion vector {path}: {len(data)} bytes, the log says {expected.size}")
        checksum = f"{zlib.crc32(data):08x}"
        if checksum != expected.checksum:
            raise FormatError(f"deletion vector {path}: checksum {checksum}, the log says {expected.checksum}")
    bitmap = decode(data, f"deletion vector {path}")
    if expected is not None and len(bitmap) != expected.cardinality:
        raise FormatError(f"deletion vector {path}: {len(bitmap)} rows, the log says {expected.cardinality}")
    return bitmap


# --- positions -----------------------------------------------------------------------------


def bitmap_from_positions(positions: np.ndarray | Iterable[int]) -> BitMap64:
    """A bitmap of ``positions``: a numpy integer array or any iterable of ints, in any order,
    duplicates allowed. Raises FormatError for negative or non-integer positions or positions
    above 2^63-1.

    Sorts and deduplicates with numpy (sort, then compare neighbours: ``np.unique`` is much
    slower), then builds the bitmap from an ``array.array('Q')`` of the sorted values, which
    pyroaring bulk-loads; unsorted values load several times slower (bench/RESULTS.md,
    "bitmap_from_positions")."""
    if isinstance(positions, range):
        values = np.arange(positions.start, positions.stop, positions.step, dtype=np.int64)
    elif isinstance(positions, np.ndarray):
        values = positions.ravel()
    else:
        values = np.asarray(positions if isinstance(positions, (list, tuple)) else list(positions))
    if values.size == 0:
        return BitMap64()
    if values.dtype.kind not in "iu":
        # also Python ints at or above 2^63, which numpy holds as float64 or object
        raise FormatError(f"row numbers must be integers in [0, 2^63), got {values.dtype} values")
    if values.dtype.kind == "i":
        low = int(values.min())
        if low < 0:
            raise FormatError(f"negative row number {low} in a deletion vector")
    values = values.astype(np.uint64, copy=False)
    high = int(values.max())
    if high > MAX_POSITION:
        raise FormatError(f"row number {high} cannot be stored in a deletion vector (the maximum is 2^63-1)")
    if len(values) > 1:
        ordered = bool((values[1:] >= values[:-1]).all())
        if not ordered:
            values = np.sort(values)
        keep = np.empty(len(values), dtype=bool)
        keep[0] = True
        np.not_equal(values[1:], values[:-1], out=keep[1:])
        if not keep.all():
            values = values[keep]
    return BitMap64(array.array("Q", np.ascontiguousarray(values).tobytes()))


def positions_of(bitmap: BitMap64) -> np.ndarray:
    """The positions of ``bitmap``, ascending, as a uint64 array."""
    return np.frombuffer(bitmap.to_array(), dtype=np.uint64)


def live_mask(bitmap: BitMap64, num_rows: int) -> np.ndarray:
    """A bool array of ``num_rows``, False at the deleted rows. Raises FormatError if the bitmap
    holds a row number at or beyond ``num_rows``."""
    if num_rows < 0:
        raise ValueError(f"num_rows must be >= 0, got {num_rows}")
    mask = np.ones(num_rows, dtype=bool)
    if len(bitmap):
        top = bitmap.max()
        if top >= num_rows:
            raise FormatError(f"deletion vector holds row number {top}, but the tablet has {num_rows} rows")
        mask[positions_of(bitmap)] = False
    return mask
