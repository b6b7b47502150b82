"""Damage a tablet file the ways disks, copies and people do, through the table's FileIO (local
disk or a bucket), and put it back; below, the same for a checkpoint (or its hint) under
``_tablets/`` and for the Delta log itself.

Each tablet case leaves the log untouched: it still describes the original tablet.
"""

from __future__ import annotations

import json

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


def same_size_pair(t: TabletTable, data: pa.Table, tries: int = 8):
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


def _commit_bytes(t: TabletTable, data: pa.Table, body_of, tablet_id: str | None = None) -> AddTablet:
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


# --- checkpoints and the _last_checkpoint hint -----------------------------------------------
#
# Each damages the checkpoint (or hint) of ``checkpointed``'s table, under ``_tablets/`` (a cache
# derived from the Delta log); the versions in ``_delta_log/`` stay intact, so a reader that
# ignores what it cannot prove reads the table exactly.

CHECKPOINT_CASES = [
    "truncated",  # cut in the middle of a line
    "last_line_cut",  # the last line gone: the file still ends with a newline
    "missing_add",  # the last add_tablet of a tablet without a deletion vector gone
    "missing_dv",  # one set_dv gone: its deleted rows would come back
    "stale",  # version 49's checkpoint (as a writer writes it) under version 50's name
    "stale_forged",  # version 49's state with a header that claims version 50 (checksum redone)
    "headerless_missing_add",  # the header line and an add_tablet gone (looks like an old checkpoint)
    "garbage",
    "not_utf8",
    "empty",
]
HINT_CASES = [
    "hint_garbage",
    "hint_not_utf8",
    "hint_missing",  # names a checkpoint that is not there
    "hint_newer",  # names a version beyond the newest
    "hint_older",  # names an older checkpoint (at 25) than the newest (50)
    "hint_wrong_checksum",  # names checkpoint 50 with another file's size and checksum
]
CHECKPOINT_VERSION = 50


def checkpointed(t: TabletTable, make_rows) -> None:
    """Versions 1..40 append a tablet of ``make_rows(k)`` each, 41..50 delete 3 rows of tablet
    ``k - 40``, so the checkpoint at 50 holds 40 add_tablet and 10 set_dv lines; then 51..53
    append and delete on top (readers replay them after the checkpoint)."""
    from tablets.storage import RowLevelSink

    for k in range(1, 41):
        t.append(make_rows(k))
    ids = list(t.snapshot().tablets)
    for k in range(41, 54):
        if k in (51, 53):
            t.append(make_rows(k))
            continue
        tid = ids[(k - 41) % len(ids)]
        h = t.begin_delete(track_rows=True)
        sink = RowLevelSink(h)
        sink.delete([tid] * 3, [k % 7, k % 7 + 1, k % 7 + 2] if k != 52 else [0, 4, 6])
        t.finish(h, sink.finish())
    assert t.version == 53


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def damage_checkpoint(t: TabletTable, case: str, hint_follows: bool = False) -> bytes:
    """Damage the checkpoint at 50 (or the hint); returns the file's original bytes. With
    ``hint_follows`` the hint names the damaged file's size and checksum (as if its writer had
    written it so): then only the checkpoint's own proof can tell."""
    from tablets.storage import checkpoint, log

    cp = log.checkpoint_path(t.root, CHECKPOINT_VERSION)
    hint = join(log.aux_dir(t.root), log.LAST_CHECKPOINT)
    if case.startswith("hint_"):
        good = t.io.read(hint)
        if case == "hint_older":
            log.write_checkpoint(t.io, t.root, t.snapshot(25))
        body = {
            "hint_garbage": b"{version: fifty",
            "hint_not_utf8": b"\xff\xfe",
            "hint_missing": json.dumps({"version": 52}).encode(),
            "hint_newer": json.dumps({"version": 1000}).encode(),
            "hint_older": checkpoint.Hint(25).encode(),
            "hint_wrong_checksum": checkpoint.Hint(50, 1234, "deadbeef").encode(),
        }[case]
        t.io.write(hint, body)
        return good
    good = t.io.read(cp)
    lines = _lines(good)
    with_dv = {json.loads(x)["set_dv"]["tablet_id"] for x in lines if x.startswith(b'{"set_dv"')}

    def adds_without_dv() -> list[int]:
        return [
            i
            for i, x in enumerate(lines)
            if x.startswith(b'{"add_tablet"') and json.loads(x)["add_tablet"]["tablet_id"] not in with_dv
        ]

    if case == "truncated":
        body = good[: len(good) * 2 // 3]
    elif case == "last_line_cut":
        body = b"".join(lines[:-1])
    elif case == "missing_add":
        i = adds_without_dv()[-1]
        body = b"".join(lines[:i] + lines[i + 1 :])
    elif case == "missing_dv":
        i = next(i for i, x in enumerate(lines) if x.startswith(b'{"set_dv"'))
        body = b"".join(lines[:i] + lines[i + 1 :])
    elif case == "stale":
        body = checkpoint.encode(t.snapshot(CHECKPOINT_VERSION - 1))
    elif case == "stale_forged":
        old = _lines(checkpoint.encode(t.snapshot(CHECKPOINT_VERSION - 1)))
        head = json.loads(old[0])
        head["checkpoint"]["version"] = CHECKPOINT_VERSION
        rest = b"".join(old[1:])
        head["checkpoint"]["crc"] = checkpoint.crc(rest)
        body = json.dumps(head, separators=(",", ":"), sort_keys=True).encode() + b"\n" + rest
    elif case == "headerless_missing_add":
        i = adds_without_dv()[-1]
        body = b"".join(lines[1:i] + lines[i + 1 :])
    elif case == "garbage":
        body = b'{"metadata": nonsense\n\x00\x01 not a checkpoint\n'
    elif case == "not_utf8":
        body = b"\xff\n"
    elif case == "empty":
        body = b""
    else:
        raise ValueError(case)
    t.io.write(cp, body)
    if hint_follows:
        t.io.write(hint, checkpoint.Hint(CHECKPOINT_VERSION, len(body), checkpoint.crc(body)).encode())
    return good


def restore_checkpoint(t: TabletTable, case: str, good: bytes) -> None:
    from tablets.storage import log

    name = log.LAST_CHECKPOINT if case.startswith("hint_") else log.checkpoint_name(CHECKPOINT_VERSION)
    t.io.write(join(log.aux_dir(t.root), name), good)


def replayed(t: TabletTable, version: int | None = None) -> pa.Table:
    """The table's rows at ``version`` (default: the newest) by a replay of the whole log, no
    checkpoint: what a reader must return whatever a checkpoint says."""
    from tablets.storage import log

    newest = log.latest_version(t.io, t.root) if version is None else version
    *_, (_, _, snap) = log.walk(t.io, t.root, range(newest + 1), None)
    parts = list(t.scan(snap))
    return pa.concat_tables(parts) if parts else t.arrow_schema(snap).empty_table()


# --- the Delta log itself ---------------------------------------------------------------------
#
# Each damages ``_delta_log/`` of ``checkpointed``'s table, the table's one commit point: a
# reader must say which file is wrong (a FormatError), never return a shorter or other table,
# and a writer must not commit on it.

LOG_CASES = [
    "emptied_newest",  # version 53 emptied (0 bytes)
    "garbled",  # one bit flipped in version 52's second line: not JSON any more
    "middle_deleted",  # version 51 gone (50 and 52 are there)
    "lost_last_lines",  # version 52 cut after its commitInfo (its remove and add gone): still parses
    "stray_beyond_gap",  # a version 56 (a copy of 53's file) with 54 and 55 missing
]
# what the FormatError says, for the version ``damage_log`` returns the path of
LOG_ERRORS = {
    "emptied_newest": "log {path}: an empty version file",
    "garbled": "log {path}: unreadable action line",
    "middle_deleted": "the log of {root} is missing version(s) 51 (the next one present is 52)",
    "lost_last_lines": "log {path}: version 52: the state replayed is not the one its commit records",
    "stray_beyond_gap": "the log of {root} is missing version(s) 54..55 (the next one present is 56)",
}
# the cases that change a version's content (the versions before it still read)
LOG_CONTENT_CASES = ("emptied_newest", "garbled", "lost_last_lines")


def damage_log(t: TabletTable, case: str) -> str:
    """Damage ``t``'s Delta log; returns the path of the version file concerned (the damaged,
    deleted or stray one)."""
    from tablets.storage import log

    if case == "emptied_newest":
        path = log.version_path(t.root, 53)
        t.io.write(path, b"")
    elif case == "garbled":
        path = log.version_path(t.root, 52)
        body = bytearray(t.io.read(path))
        body[body.index(b"\n") + 1] ^= 0x01  # '{' -> 'z'
        t.io.write(path, bytes(body))
    elif case == "middle_deleted":
        path = log.version_path(t.root, 51)
        t.io.delete(path)
    elif case == "lost_last_lines":
        path = log.version_path(t.root, 52)
        lines = _lines(t.io.read(path))
        assert [next(iter(json.loads(x))) for x in lines] == ["commitInfo", "remove", "add"]
        t.io.write(path, lines[0])
    elif case == "stray_beyond_gap":
        path = log.version_path(t.root, 56)
        t.io.write(path, t.io.read(log.version_path(t.root, 53)))
    else:
        raise ValueError(case)
    return path


def table_files(t: TabletTable) -> dict[str, bytes]:
    """Every file of ``t``'s log, its derived files and its data, by path (what a refused writer
    must leave as it was)."""
    from tablets.storage import log

    return {
        f.path: t.io.read(f.path)
        for sub in (log.LOG_DIR, log.AUX_DIR, "tablets", "dv")
        for f in t.io.list(join(t.root, sub))
    }
