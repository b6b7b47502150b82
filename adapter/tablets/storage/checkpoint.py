"""Checkpoints and the ``_last_checkpoint`` hint, and how a reader proves a checkpoint.

A checkpoint ``_tablets/<N>.checkpoint.json`` is a header line, then the state's actions (one
``metadata``, each live tablet's ``add_tablet`` and its ``set_dv``)::

    {"checkpoint":{"crc":"<CRC-32 of the lines after this one>","digest":...,"dvs":...,
                   "live_rows":...,"metadata_version":...,"rows":...,"tablets":...,"version":N}}

The proof, in order: the hint's size and CRC-32 of the file (when the hint names it), the
header's version is N, the body's CRC-32 is the header's, the state the body builds has the
header's counts and digest, and (``log.load_snapshot``) the state reached from it agrees with
the ``commit_info.state`` of a version it reaches (N itself, or a later one replayed on top).
A checkpoint that fails is not used: one warning, and the reader replays versions instead.

A checkpoint written before headers existed (no header line) is read as before: it is proven
only by a commit's state record (written by writers since), else trusted by readers, and a
writer verifies it by replaying the versions before it commits on it (docs/FORMAT.md).
"""

from __future__ import annotations

import json
import logging
import threading
import zlib
from dataclasses import dataclass, replace

from tablets.exceptions import FormatError
from tablets.storage.actions import decode_actions, encode_actions
from tablets.storage.snapshot import Snapshot, StateSummary, apply_version

HEADER = "checkpoint"
logger = logging.getLogger("tablets")
_warned: set[str] = set()
_warned_lock = threading.Lock()


def warn_once(path: str, text: str, level: int = logging.WARNING) -> None:
    """Log ``text`` about ``path``, the first time only in this process (readers open a table
    many times, at many versions)."""
    with _warned_lock:
        if path in _warned:
            return
        _warned.add(path)
    logger.log(level, text)


class Rejected(Exception):
    """A checkpoint that failed its proof (not raised to callers: they replay instead)."""


def crc(data: bytes) -> str:
    return f"{zlib.crc32(data):08x}"


def encode(snapshot: Snapshot) -> bytes:
    """The checkpoint file of ``snapshot``: header line, then the state's actions."""
    body = encode_actions(list(snapshot.state_actions()))
    header = dict(snapshot.summary().record(), version=snapshot.version, crc=crc(body))
    return (json.dumps({HEADER: header}, separators=(",", ":"), sort_keys=True) + "\n").encode() + body


@dataclass(frozen=True)
class Hint:
    """``_last_checkpoint``: the newest checkpoint's version, and its size and CRC-32 (hints
    written before had only the version: then size and crc are None)."""

    version: int
    size: int | None = None
    crc: str | None = None

    def encode(self) -> bytes:
        return json.dumps({"version": self.version, "size": self.size, "crc": self.crc}, sort_keys=True).encode()

    @staticmethod
    def decode(data: bytes) -> Hint:
        """``ValueError`` if it is not a hint."""
        obj = json.loads(data)
        version, size, sum_ = obj["version"], obj.get("size"), obj.get("crc")
        if type(version) is not int or version < 0 or (size is not None and type(size) is not int):
            raise ValueError(f"not a hint: {obj!r}")
        return Hint(version, size, None if sum_ is None else str(sum_))


def decode(data: bytes, path: str, version: int, hint: Hint | None) -> Snapshot:
    """The snapshot a checkpoint file holds, with the proof that the file itself can give;
    ``Rejected`` (with the reason) if it fails. A checkpoint without header comes back with
    ``verified=False`` and no ``metadata_version``."""
    named = hint is not None and hint.version == version and hint.size is not None
    if hint is not None and named and (hint.size != len(data) or hint.crc != crc(data)):
        raise Rejected(
            f"it is not the file _last_checkpoint names ({len(data)} bytes, CRC {crc(data)}; "
            f"the hint says {hint.size} bytes, CRC {hint.crc})"
        )
    first, _, body = data.partition(b"\n")
    header = None
    if first.startswith(b'{"' + HEADER.encode() + b'"'):
        try:
            header = json.loads(first)[HEADER]
            summary = StateSummary.from_record({k: v for k, v in header.items() if k not in ("version", "crc")})
        except (ValueError, TypeError, KeyError, AttributeError, FormatError) as e:
            raise Rejected(f"its header is unreadable ({e})") from None
        if header.get("version") != version:
            raise Rejected(
                f"its header says it holds version {header.get('version')}, not {version} (a stale checkpoint)"
            )
        if header.get("crc") != crc(body):
            raise Rejected(
                f"its content does not match its checksum (CRC {crc(body)}, the header says {header.get('crc')}): "
                "cut, edited or damaged"
            )
    else:
        body = data
    try:
        snap = apply_version(None, version, decode_actions(body, where=path), where=path)
    except FormatError as e:
        raise Rejected(e.detail) from None
    if header is None:
        return replace(snap, verified=False, metadata_version=None, checkpoint=version)
    snap = replace(snap, metadata_version=summary.metadata_version, checkpoint=version)
    diff = snap.summary().differences(summary)
    if diff:
        raise Rejected(f"its content is not the state its header describes ({'; '.join(diff)})")
    return snap
