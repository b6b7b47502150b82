"""Checkpoints are proven before they are used (docs/FORMAT.md, "Checkpoints"): every damage of
a checkpoint or of the ``_last_checkpoint`` hint is detected and the reader replays the log (one
warning), or, with the versions it needs gone, raises a ``FormatError`` naming the checkpoint;
never a wrong read, and a writer never commits on a state it could not verify. Local disk and a
bucket of a real S3-compatible server (``base``)."""

import json
import logging

import pyarrow as pa
import pytest
from support.damage import (
    CHECKPOINT_CASES,
    CHECKPOINT_VERSION,
    HINT_CASES,
    checkpointed,
    damage_checkpoint,
    replayed,
)
from tablets.exceptions import FormatError
from tablets.storage import RowLevelSink, TabletTable, log
from tablets.storage.actions import CommitInfo, decode_actions, encode_actions
from tablets.storage.fileio import join

pytestmark = pytest.mark.unit

SCHEMA = pa.schema([("id", pa.int64()), ("k", pa.int32())])
ROWS = 10  # per tablet


def make_rows(k: int) -> pa.Table:
    return pa.table({"id": [k * 100 + i for i in range(ROWS)], "k": pa.array([k] * ROWS, pa.int32())}, schema=SCHEMA)


def ids(t: TabletTable, version: int | None = None) -> list[int]:
    return sorted(t.read(version).column("id").to_pylist())


_pristine: dict[str, str] = {}


def _copy(t: TabletTable, to: str) -> TabletTable:
    for sub in ("_log", "tablets", "dv"):
        for f in t.io.list(join(t.root, sub)):
            t.io.write(join(to, sub, f.name), t.io.read(f.path))
    return TabletTable(to)


def _table(where: str, request) -> TabletTable:
    """A copy of ``checkpointed``'s table (built once per store: 53 commits cost seconds in a bucket)."""
    if where == "local":
        base = str(request.getfixturevalue("tmp_path_factory").mktemp("ckpt"))
    else:
        base = request.getfixturevalue("s3_server").location()
    if where not in _pristine:
        t = TabletTable.create(join(base, "pristine"), SCHEMA)
        checkpointed(t, make_rows)
        assert log.list_log(t.io, t.root)[1] == [CHECKPOINT_VERSION]
        _pristine[where] = t.root
    return _copy(TabletTable(_pristine[where]), join(base, "t"))


@pytest.fixture
def table(base, request):
    return _table("local" if "://" not in base else "s3", request)


def _expected(t: TabletTable, *versions: int) -> dict[int, list[int]]:
    """The rows of ``versions`` (default: the newest), by a replay of the whole log (no checkpoint)."""
    return {v: sorted(replayed(t, v).column("id").to_pylist()) for v in versions or [t.version]}


def test_issue_repro_checkpoint_missing_its_last_add_tablet(tmp_path):
    """The issue's reproduction: 50 appends, the checkpoint at 50 loses its last line."""
    t = TabletTable.create(str(tmp_path / "t"), pa.schema([("id", pa.int32())]))
    for k in range(50):
        t.append(pa.table({"id": pa.array([k], pa.int32())}))
    p = join(t.root, "_log", log.checkpoint_name(50))
    lines = t.io.read(p).splitlines(keepends=True)
    t.io.write(p, b"".join(lines[:-1]))
    assert t.read().num_rows == 50  # was 49, no error
    t.io.write(p, b"\xff\n")
    assert t.read().num_rows == 50  # was a UnicodeDecodeError


CASES = [(c, False) for c in CHECKPOINT_CASES + HINT_CASES] + [(c, True) for c in CHECKPOINT_CASES]
# every case on local disk; in the bucket one of each kind of proof (each read there is slower)
IN_BUCKET = [
    ("missing_dv", True),
    ("stale_forged", True),
    ("not_utf8", False),
    ("hint_wrong_checksum", False),
    ("hint_newer", False),
]
RUNS = [("local", c, f) for c, f in CASES] + [("s3", c, f) for c, f in IN_BUCKET]


@pytest.mark.parametrize(
    ("where", "case", "hint_follows"), RUNS, ids=[f"{w}-{c}" + ("+hint" if f else "") for w, c, f in RUNS]
)
def test_damaged_checkpoint_or_hint_is_never_read(where, case, hint_follows, request, caplog):
    """Read at the newest version, at the checkpoint's and in between, three times each (twice
    in the bucket, where each read replays the log a request per version), with one warning;
    then a writer commits on top of the proven state. ``+hint``: the hint names the damaged
    file (only the checkpoint's own proof tells)."""
    t = _table(where, request)
    want = _expected(t, CHECKPOINT_VERSION, 52, 53)
    damage_checkpoint(t, case, hint_follows)
    with caplog.at_level(logging.WARNING, logger="tablets"):
        for _ in range(3 if where == "local" else 2):
            assert ids(t) == want[53]
            assert ids(t, CHECKPOINT_VERSION) == want[CHECKPOINT_VERSION]
            assert ids(t, 52) == want[52]
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    if case in ("hint_older",):  # an older hint is no damage: the newer checkpoint is used
        assert warnings == []
    else:  # said once, however often the table is read
        assert len(warnings) == len(set(warnings)) >= 1, warnings
        assert all(t.root in w for w in warnings), warnings
    # a writer on top commits on the proven state, and records it
    h = t.begin_delete(track_rows=True)
    sink = RowLevelSink(h)
    part = next(t.scan(row_ids=True))
    sink.delete(part["_tablet_id"].to_pylist()[:1], part["_row_number"].to_pylist()[:1])
    sink.insert(make_rows(99))
    v = t.finish(h, sink.finish())
    after = _expected(t, v)[v]
    assert len(after) == len(want[53]) - 1 + ROWS
    assert ids(t) == after


@pytest.mark.parametrize("case", ["missing_add", "missing_dv", "stale", "stale_forged", "not_utf8"])
def test_damaged_checkpoint_without_the_versions_before_it(table, case):
    """Nothing to replay instead: a FormatError naming the checkpoint, with a Help line; nothing
    is committed."""
    t = table
    damage_checkpoint(t, case)
    for v in range(CHECKPOINT_VERSION):
        t.io.delete(join(t.root, "_log", log.version_name(v)))
    cp = join(t.root, "_log", log.checkpoint_name(CHECKPOINT_VERSION))
    for attempt in (t.read, lambda: t.append(make_rows(77))):
        with pytest.raises(FormatError) as err:
            attempt()
        text = str(err.value)
        assert f"checkpoint {cp} failed its proof" in text and "are missing" in text, text
        assert "\nHelp: Restore " in text
    assert log.latest_version(t.io, t.root) == 53


def test_stale_checkpoint_of_the_same_counts_is_caught_by_the_digest(base):
    """A checkpoint of version 1 named version 2, where version 2 only changed a property: the
    counts agree, the metadata version and the header do not."""
    t = TabletTable.create(join(base, "m"), SCHEMA)
    t.append(make_rows(1))
    from tablets.storage.metadata import MetadataChange

    t.alter_metadata(MetadataChange(set_properties=(("p", "1"),)), "SET TBLPROPERTIES")
    from tablets.storage import checkpoint

    old = checkpoint.encode(t.snapshot(1))
    lines = old.splitlines(keepends=True)
    head = json.loads(lines[0])
    head["checkpoint"]["version"] = 2  # forged: only the commit's record can tell
    t.io.write(
        join(t.root, "_log", log.checkpoint_name(2)),
        json.dumps(head, separators=(",", ":"), sort_keys=True).encode() + b"\n" + b"".join(lines[1:]),
    )
    assert t.snapshot().metadata.property("p") == "1"


def test_version_file_not_utf8_is_a_format_error_naming_it(table):
    t = table
    for v in (10, 52):
        path = join(t.root, "_log", log.version_name(v))
        good = t.io.read(path)
        t.io.write(path, b'{"commit_info":\xff}\n')
        with pytest.raises(FormatError, match=rf"log {path}: not UTF-8 text"):
            t.read(v)
        if v == 52:
            with pytest.raises(FormatError, match=rf"log {path}: not UTF-8 text"):
                t.read()
        else:
            assert len(ids(t)) > 0  # the checkpoint at 50 covers version 10
        t.io.write(path, good)


def test_version_file_missing_a_line_is_caught_by_its_record(table):
    """A version file cut at a line boundary still parses; its commit's state record does not
    match what it replays to."""
    t = table
    path = join(t.root, "_log", log.version_name(53))
    actions = decode_actions(t.io.read(path))
    assert [type(a).__name__ for a in actions] == ["AddTablet", "CommitInfo"]
    t.io.write(path, encode_actions([actions[1]]))
    with pytest.raises(
        FormatError, match=rf"log {path}: version 53: the state replayed is not the one its commit records"
    ):
        t.read()
    with pytest.raises(FormatError, match=rf"log {path}"):
        t.append(make_rows(88))


def test_every_commit_records_the_state_after_it(base):
    t = TabletTable.create(join(base, "r"), SCHEMA)
    t.append(make_rows(1))
    for v in range(t.version + 1):
        info = log.read_commit(t.io, t.root, v)
        snap = t.snapshot(v)
        assert dict(info.state) == dict(snap.summary().record())
    assert dict(log.read_commit(t.io, t.root, 1).state)["live_rows"] == ROWS


def _strip(t: TabletTable) -> None:
    """Rewrite the log as a writer before checkpoint proofs wrote it: no state records, a
    checkpoint without header, a hint with the version only."""
    from tablets.storage import checkpoint

    for v in range(t.version + 1):
        path = join(t.root, "_log", log.version_name(v))
        acts = [
            CommitInfo(**{**a.__dict__, "state": ()}) if isinstance(a, CommitInfo) else a
            for a in decode_actions(t.io.read(path))
        ]
        t.io.write(path, encode_actions(acts))
    cp = join(t.root, "_log", log.checkpoint_name(CHECKPOINT_VERSION))
    t.io.write(cp, t.io.read(cp).split(b"\n", 1)[1])
    t.io.write(join(t.root, "_log", log.LAST_CHECKPOINT), checkpoint.Hint(CHECKPOINT_VERSION).encode())


def test_old_checkpoint_is_read_and_a_writer_verifies_it(table, caplog):
    t = table
    want = _expected(t)
    _strip(t)
    with caplog.at_level(logging.INFO, logger="tablets"):
        snap = t.snapshot()
    assert not snap.verified and snap.checkpoint == CHECKPOINT_VERSION
    assert any("has no proof" in r.getMessage() for r in caplog.records)
    assert ids(t) == want[53]
    v = t.append(make_rows(60))  # verified by a replay first, then committed with its record
    assert dict(log.read_commit(t.io, t.root, v).state)["live_rows"] == len(want[53]) + ROWS
    assert t.snapshot().verified  # the record proves the old checkpoint for every later read


def test_old_damaged_checkpoint_stops_writers(table):
    """Without a header or records nothing proves an old checkpoint to a reader (the limit of
    the old format: it reads what it says); a writer replays the log first and refuses."""
    t = table
    want = _expected(t)
    _strip(t)
    cp = join(t.root, "_log", log.checkpoint_name(CHECKPOINT_VERSION))
    lines = t.io.read(cp).splitlines(keepends=True)
    t.io.write(cp, b"".join(lines[:-1]))  # its last tablet (or vector) gone
    assert ids(t) != want[53]
    with pytest.raises(FormatError, match=rf"checkpoint {cp} is not the state of version 50"):
        t.append(make_rows(61))
    assert t.version == 53
