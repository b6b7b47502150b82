"""Listing a log: what both layouts (``log``, the Delta log; ``legacy_log``, ``_log/`` of
format version 1) ask of a listing. A listing is trusted only for what every store promises
(the names it returns exist); order comes from sorting the names, the newest version is
confirmed by asking for the next one, and a version missing in the range read is a
``FormatError`` naming it, never a shorter table."""

from __future__ import annotations

import re
from collections.abc import Callable

from tablets.exceptions import FormatError, TableNotFound
from tablets.storage.checkpoint import Hint, warn_once
from tablets.storage.fileio import FileIO

LAST_CHECKPOINT = "_last_checkpoint"
VERSION_RE = re.compile(r"^(\d{20})\.json$")
CHECKPOINT_RE = re.compile(r"^(\d{20})\.checkpoint\.json$")


def version_name(version: int) -> str:
    return f"{version:020d}.json"


def checkpoint_name(version: int) -> str:
    return f"{version:020d}.checkpoint.json"


def read_hint(io: FileIO, path: str) -> Hint | None:
    """What a ``_last_checkpoint`` hint says (only a hint: None, with a warning, if unreadable)."""
    try:
        return Hint.decode(io.read(path))
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError, AttributeError):
        warn_once(path, f"{path} is unreadable: ignored (the reader lists the whole log)")
        return None


def confirmed(io: FileIO, versions: list[int], start: int, path_of: Callable[[int], str]) -> list[int]:
    """``versions`` (sorted) with the ones a lagging listing left out after the newest."""
    nxt = (versions[-1] + 1) if versions else start
    while io.exists(path_of(nxt)):
        versions.append(nxt)
        nxt += 1
    return versions


def gaps(present: list[int], lo: int, hi: int) -> list[int]:
    have = set(present)
    return [v for v in range(lo, hi + 1) if v not in have]


def runs(missing: list[int]) -> str:
    if missing[-1] - missing[0] + 1 == len(missing):
        return f"{missing[0]}" if len(missing) == 1 else f"{missing[0]}..{missing[-1]}"
    return ", ".join(map(str, missing[:5])) + (", ..." if len(missing) > 5 else "")


def missing_error(root: str, missing: list[int], present: list[int], directory: str) -> FormatError:
    nxt = next((v for v in present if v > missing[0]), None)
    return FormatError(
        f"the log of {root} is missing version(s) {runs(missing)}"
        + (f" (the next one present is {nxt})" if nxt is not None else ""),
        help=f"Restore the missing files under {directory}/ from a backup. A table with a gap in its "
        "log is not read, written or vacuumed until the log is whole again.",
    )


def checked(
    root: str,
    directory: str,
    scan: Callable[[int], tuple[list[int], list[int]]],
    hint: Hint | None,
    hint_path: str,
    begins_at: Callable[[int], bool],
) -> tuple[list[int], list[int]]:
    """(versions, checkpoints) from ``scan(start)``, ``start`` the hint's version: the hint
    ignored (one warning) where it names a version beyond the newest or a missing checkpoint;
    ``TableNotFound`` without a version; a gap a ``FormatError``. A log whose first version
    ``begins_at`` a checkpoint (older versions cleaned up) starts there."""
    start = hint.version if hint else 0
    versions, checkpoints = scan(start)
    if start and not versions:
        found = checked(root, directory, scan, None, hint_path, begins_at)
        warn_once(hint_path, f"{hint_path} names version {start}, beyond the newest version of the log: ignored")
        return found
    if not versions:
        raise TableNotFound(f"no tablet table at {root} (no {directory}/ with a committed version)")
    if hint is not None and hint.version not in checkpoints:
        warn_once(hint_path, f"{hint_path} names checkpoint {hint.version}, which is missing: ignored")
    first = versions[0]
    if first > start and (first in checkpoints or begins_at(first)):
        start = first
    missing = gaps(versions, start, versions[-1])
    if missing:
        raise missing_error(root, missing, versions, directory)
    return versions, [c for c in checkpoints if c <= versions[-1]]
