"""VACUUM against writers: how the two never publish a version that references a deleted file.

Retention alone cannot do it here (``VACUUM ... RETAIN 0 HOURS`` is allowed once the check is
off), so a VACUUM that will delete anything serializes itself in the log:

1. it writes a marker ``_tablets/_vacuum-<txid>.json`` (read by commits that reference old files
   again, i.e. RESTORE), then commits a version ``VACUUM START`` (its retention as a parameter);
2. only then it reads the log (every version up to the newest, START included) and lists the
   files: a file is deleted if no retained version references it and it is older than the
   retention, measured on the store's clock from the START version's own timestamp;
3. it commits ``VACUUM END`` (what it deleted) and removes its marker.

A writer whose statement read a version before START and commits after it must pass START on
its way (the next version is taken): it finds it while checking the versions in between and
raises ``VacuumConflict`` if the files it staged could be older than the retention (its staged
files are at most as old as the statement). A writer that read START or later staged its files
after START: younger than the retention, never deleted. A commit that references files it did
not write and that its read version did not have live (RESTORE) checks for markers before it
checks that the files exist, then commits: a VACUUM with a marker up raises the conflict.
Why that is safe is written in docs/CONCURRENCY.md ("Vacuum").
"""

from __future__ import annotations

import json
import time

from tablets.exceptions import FormatError, VacuumConflict
from tablets.storage.actions import CommitInfo
from tablets.storage.fileio import FileIO, join

VACUUM_START = "VACUUM START"
VACUUM_END = "VACUUM END"
RETENTION = "retention_hours"
MARKER_PREFIX = "_vacuum-"
# clocks: a statement's age is measured on its own clock, file ages on the store's; this covers
# the store's timestamp granularity (a second on S3) with room to spare
SKEW_MS = 60_000.0
AUX_DIR = "_tablets"  # (tablets.storage.log's: the table's derived files)


def marker_path(root: str, txid: str) -> str:
    return join(root, AUX_DIR, f"{MARKER_PREFIX}{txid}.json")


def put_marker(io: FileIO, root: str, txid: str, retention_hours: float) -> str:
    path = marker_path(root, txid)
    io.write(
        path, json.dumps({"txid": txid, "started_ms": int(time.time() * 1000), RETENTION: retention_hours}).encode()
    )
    return path


def markers(io: FileIO, root: str) -> list[str]:
    """The markers of VACUUMs in progress (or killed: their markers stay until removed)."""
    return [
        f.path
        for sub in (AUX_DIR, "_log")  # (and markers of an earlier release's VACUUM)
        for f in io.list(join(root, sub), start_after=MARKER_PREFIX)
        if f.name.startswith(MARKER_PREFIX)
    ]


def retention_ms(info: CommitInfo) -> float:
    """The retention a ``VACUUM START`` recorded (0 where unreadable: assume the worst)."""
    try:
        return max(0.0, float(dict(info.parameters)[RETENTION]) * 3_600_000)
    except (KeyError, ValueError):
        return 0.0


def check_passed(version: int, info: CommitInfo, operation: str, began_ms: float, files: bool, foreign: bool) -> None:
    """A statement that began at ``began_ms`` and found VACUUM START ``info`` at ``version``
    among the commits since its read version: ``VacuumConflict`` if the VACUUM could have
    deleted a file of its commit."""
    retention = retention_ms(info)
    if foreign or (files and retention < time.time() * 1000 - began_ms + SKEW_MS):
        raise VacuumConflict(
            f"version {version} is a VACUUM (retention {retention / 3_600_000:g} h) that started while this "
            f"{operation} ran: it may have deleted files this {operation} "
            + ("references again" if foreign else "staged"),
            version,
        )


def check_foreign(io: FileIO, root: str, paths: list[str], operation: str) -> None:
    """Before committing a version that references files it did not write (RESTORE): no VACUUM
    in progress (``VacuumConflict``), then every file there (``FormatError``)."""
    running = markers(io, root)
    if running:
        raise VacuumConflict(
            f"a VACUUM of {root} is in progress ({', '.join(running)}): this {operation} references old files it may delete",
            help="Run the statement again once the VACUUM has finished. A VACUUM that was killed leaves its marker: "
            "if none is running, delete the marker file.",
        )
    missing = [p for p in paths if not io.exists(join(root, p))]
    if missing:
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        raise FormatError(
            f"{operation}: files it references again were deleted by VACUUM ({shown})",
            help="Restore a version newer than the last VACUUM's retention, or recover the files from a backup.",
        )
