"""Checkpoints are proven before they are used (docs/FORMAT.md, "Checkpoints"): every damage of
a checkpoint or of the ``_last_checkpoint`` hint is detected and the reader replays the log (one
warning), or, with the versions it needs gone, raises a ``FormatError`` naming the checkpoint;
never a wrong read, and a writer never commits on a state it could not verify. Local disk and a
bucket of a real S3-compatible server (``base``)."""

import json
import logging
from dataclasses import replace

import pyarrow as pa
import pytest
from support.damage import (
    CHECKPOINT_CASES,
    CHECKPOINT_VERSION,
    HINT_CASES,
    LOG_CASES,
    LOG_CONTENT_CASES,
    LOG_ERRORS,
    checkpointed,
    damage_checkpoint,
    damage_log,
    replayed,
    table_files,
)
from tablets.exceptions import CommitConflict, FormatError
from tablets.storage import RowLevelSink, TabletTable, delta_log, log
from tablets.storage.actions import CommitInfo, encode_actions
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
    for sub in (log.LOG_DIR, log.AUX_DIR, "tablets", "dv"):
        for f in t.io.list(join(t.root, sub)):
            t.io.write(join(to, sub, f.name), t.io.read(f.path))
    return TabletTable(to)


def _base(where: str, request) -> str:
    if where == "local":
        return str(request.getfixturevalue("tmp_path_factory").mktemp("ckpt"))
    return request.getfixturevalue("s3_server").location()


def _pristine_table(where: str, request) -> TabletTable:
    """``checkpointed``'s table (built once per store: 53 commits cost seconds in a bucket)."""
    if where not in _pristine:
        t = TabletTable.create(join(_base(where, request), "pristine"), SCHEMA)
        checkpointed(t, make_rows)
        assert log.list_log(t.io, t.root)[1] == [CHECKPOINT_VERSION]
        _pristine[where] = t.root
    return TabletTable(_pristine[where])


def _table(where: str, request) -> TabletTable:
    """A copy of ``checkpointed``'s table."""
    return _copy(_pristine_table(where, request), join(_base(where, request), "t"))


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
    p = log.checkpoint_path(t.root, 50)
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
    """Nothing to replay instead: the reader starts from Delta's checkpoint of the same version
    (proven by the version's state record); without that one too, a FormatError naming the
    checkpoint, with a Help line, and nothing is committed."""
    t = table
    want = _expected(t)
    damage_checkpoint(t, case)
    for v in range(CHECKPOINT_VERSION):
        t.io.delete(log.version_path(t.root, v))
    assert {t.version: ids(t)} == want
    delta_cp = join(log.log_dir(t.root), f"{CHECKPOINT_VERSION:020d}.checkpoint.parquet")
    t.io.delete(delta_cp)
    cp = log.checkpoint_path(t.root, CHECKPOINT_VERSION)
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
        log.checkpoint_path(t.root, 2),
        json.dumps(head, separators=(",", ":"), sort_keys=True).encode() + b"\n" + b"".join(lines[1:]),
    )
    assert t.snapshot().metadata.property("p") == "1"


def test_version_file_not_utf8_is_a_format_error_naming_it(table):
    t = table
    for v in (10, 52):
        path = log.version_path(t.root, v)
        good = t.io.read(path)
        t.io.write(path, b'{"commitInfo":\xff}\n')
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
    path = log.version_path(t.root, 53)
    lines = log.read_lines(t.io, t.root, 53)
    assert [next(iter(x)) for x in lines] == ["commitInfo", "add"]
    t.io.write(path, delta_log.encode(lines[:1]))
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
        # where it travels: the Delta version file's commitInfo (its first line), under "tablets"
        (first, *_) = log.read_lines(t.io, t.root, v)
        assert first["commitInfo"]["tablets"]["state"] == [list(p) for p in info.state]
    assert dict(log.read_commit(t.io, t.root, 1).state)["live_rows"] == ROWS


# --- the Delta log itself ----------------------------------------------------------------------


def _listing(t: TabletTable) -> list[str]:
    return [f.name for f in t.io.list(log.log_dir(t.root))]


@pytest.mark.parametrize("case", LOG_CASES)
def test_damaged_delta_log_is_a_format_error_and_stops_writers(table, case):
    """Damage to ``_delta_log/`` (the one commit point: nothing else holds the versions) is a
    FormatError naming the damaged file or the missing versions, for every read the damage
    reaches, never a shorter or other table; an append is refused with it and writes nothing
    (no version, in a gap or after it; no tablet, vector or checkpoint)."""
    t = table
    want = _expected(t, 51, 52)
    path = damage_log(t, case)
    said = LOG_ERRORS[case].format(path=path, root=t.root)
    damaged = int(path.rsplit("/", 1)[1].split(".")[0])
    reads = [t.read, t.snapshot, lambda: t.read(min(damaged, 53))]
    if case not in LOG_CONTENT_CASES:  # a gap: the listing itself is refused, at any version
        reads += [lambda: log.latest_version(t.io, t.root), lambda: t.read(CHECKPOINT_VERSION)]
    for attempt in reads:
        with pytest.raises(FormatError) as err:
            attempt()
        assert said in str(err.value), str(err.value)
    if case in LOG_CONTENT_CASES:  # time travel to before the damaged version still reads
        assert ids(t, damaged - 1) == want[damaged - 1]
    before, files = _listing(t), table_files(t)
    for _ in range(2):  # the second finds what the first left: nothing
        with pytest.raises(FormatError) as err:
            t.append(make_rows(77))
        assert said in str(err.value), str(err.value)
        assert _listing(t) == before
        assert table_files(t) == files


@pytest.mark.parametrize("case", ["emptied_newest", "garbled"])
def test_unreadable_version_after_the_checkpoint_is_not_blamed_on_it(table, case, caplog):
    """A version file that does not parse is its own damage, whatever checkpoint precedes it: no
    warning says the (sound) checkpoint is not used, and with the versions before the checkpoint
    gone the error still names the version file, not the checkpoint (whose restore would not
    help)."""
    t = table
    path = damage_log(t, case)
    said = LOG_ERRORS[case].format(path=path, root=t.root)
    with caplog.at_level(logging.WARNING, logger="tablets"), pytest.raises(FormatError) as err:
        t.read()
    assert str(err.value).startswith(said), str(err.value)
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    for v in range(CHECKPOINT_VERSION):
        t.io.delete(log.version_path(t.root, v))
    with pytest.raises(FormatError) as err:
        t.read()
    assert str(err.value).startswith(said) and "failed its proof" not in str(err.value), str(err.value)
    assert warnings == []


GONE = ["checkpoint", "hint", "both", "damaged_and_hint_gone", "delta_checkpoint"]
GONE_RUNS = [("local", g) for g in GONE] + [("s3", g) for g in ("checkpoint", "hint")]


@pytest.mark.parametrize(("where", "gone"), GONE_RUNS, ids=[f"{w}-{g}" for w, g in GONE_RUNS])
def test_missing_checkpoint_or_hint_is_replayed(where, gone, request):
    """``_tablets/`` is a cache derived from the Delta log: its checkpoint or ``_last_checkpoint``
    gone (or the checkpoint damaged with no hint to name it) makes a reader replay, with the same
    rows at every version, and a writer commit on the replayed state. Delta's own checkpoint
    (``_delta_log/<N>.checkpoint.parquet`` and its ``_last_checkpoint``), for Delta readers, is
    not what tablets reads a table by."""
    t = _table(where, request)
    want = _expected(t, CHECKPOINT_VERSION, 52, 53)
    cp, hint = log.checkpoint_path(t.root, CHECKPOINT_VERSION), join(log.aux_dir(t.root), log.LAST_CHECKPOINT)
    if gone in ("checkpoint", "both"):
        t.io.delete(cp)
    if gone in ("hint", "both", "damaged_and_hint_gone"):
        t.io.delete(hint)
    if gone == "damaged_and_hint_gone":
        damage_checkpoint(t, "missing_dv")
    if gone == "delta_checkpoint":
        parquet = join(log.log_dir(t.root), f"{CHECKPOINT_VERSION:020d}.checkpoint.parquet")
        assert t.io.exists(parquet)
        t.io.write(parquet, b"PAR1 not a checkpoint")
        t.io.write(join(log.log_dir(t.root), log.LAST_CHECKPOINT), b"{nonsense")
    for v in (53, CHECKPOINT_VERSION, 52):
        assert ids(t, v) == want[v]
    assert ids(t) == want[53]
    v = t.append(make_rows(99))
    assert _expected(t, v)[v] == ids(t) == sorted(want[53] + make_rows(99).column("id").to_pylist())


# --- checkpoints and versions written before checkpoints had proofs ------------------------------


def _strip(t: TabletTable) -> None:
    """Rewrite the Delta log as if no writer had recorded states (as another Delta writer's
    versions are), with a checkpoint without header and a hint with the version only."""
    from tablets.storage import checkpoint

    for v in range(t.version + 1):
        lines = log.read_lines(t.io, t.root, v)
        for line in lines:
            line.get("commitInfo", {}).pop(delta_log.COMMIT_KEY, None)
        t.io.write(log.version_path(t.root, v), delta_log.encode(lines))
    cp = log.checkpoint_path(t.root, CHECKPOINT_VERSION)
    t.io.write(cp, t.io.read(cp).split(b"\n", 1)[1])
    t.io.write(join(log.aux_dir(t.root), log.LAST_CHECKPOINT), checkpoint.Hint(CHECKPOINT_VERSION).encode())


@pytest.mark.parametrize("damaged", [False, True], ids=["whole", "last_line_cut"])
def test_unproven_checkpoint_on_the_delta_log_is_not_used(table, damaged, caplog):
    """On the Delta log a checkpoint nothing proves (no header, no commit's record reaches it)
    is never read: one warning and a replay, so even a line lost from it is no wrong read; a
    writer commits on the replayed state, with its record."""
    t = table
    want = _expected(t)
    _strip(t)
    cp = log.checkpoint_path(t.root, CHECKPOINT_VERSION)
    if damaged:
        lines = t.io.read(cp).splitlines(keepends=True)
        t.io.write(cp, b"".join(lines[:-1]))
    with caplog.at_level(logging.WARNING, logger="tablets"):
        snap = t.snapshot()
        assert ids(t) == want[53]
    assert snap.verified and snap.checkpoint is None
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and f"checkpoint {cp} is not used" in warnings[0], warnings
    v = t.append(make_rows(60))
    assert dict(log.read_commit(t.io, t.root, v).state)["live_rows"] == len(want[53]) + ROWS
    assert ids(t) == _expected(t, v)[v]


def _legacy_copy(where: str, request) -> TabletTable:
    """A copy of ``checkpointed``'s table in the earlier layout (tablets' own actions in
    ``_log/``, its checkpoint and hint there, ``_delta_log`` the copy that layout derived) as a
    writer before checkpoint proofs left it: no state records, a checkpoint without header, a
    hint with the version only."""
    from tablets.storage import checkpoint, legacy_log

    src = _pristine_table(where, request)
    to, io = join(_base(where, request), "t"), src.io
    for sub in (log.LOG_DIR, "tablets", "dv"):
        for f in io.list(join(src.root, sub)):
            io.write(join(to, sub, f.name), io.read(f.path))
    for v, actions, _ in log.walk(io, src.root, range(src.version + 1), None):
        old = [replace(a, state=()) if isinstance(a, CommitInfo) else a for a in actions]  # as the earlier format wrote
        assert io.create(join(legacy_log.log_dir(to), log.version_name(v)), encode_actions(old))
    body = io.read(log.checkpoint_path(src.root, CHECKPOINT_VERSION)).split(b"\n", 1)[1]
    io.write(join(legacy_log.log_dir(to), log.checkpoint_name(CHECKPOINT_VERSION)), body)
    io.write(join(legacy_log.log_dir(to), log.LAST_CHECKPOINT), checkpoint.Hint(CHECKPOINT_VERSION).encode())
    t = TabletTable(to)
    assert log.is_legacy(t.io, t.root)
    return t


@pytest.fixture
def legacy(base, request):
    return _legacy_copy("local" if "://" not in base else "s3", request)


def test_old_checkpoint_is_read_and_a_writer_verifies_it(legacy, caplog):
    """A table of the earlier layout, written before checkpoint proofs: readers read its old
    checkpoint as it is (the earlier format's limit); the first writer verifies it by a replay,
    moves the table to the Delta log (``UPGRADE``) and commits with its record."""
    t = legacy
    want = _expected(t)
    cp = join(t.root, "_log", log.checkpoint_name(CHECKPOINT_VERSION))
    with caplog.at_level(logging.INFO, logger="tablets"):
        snap = t.snapshot()
    assert not snap.verified and snap.checkpoint == CHECKPOINT_VERSION
    assert any(f"checkpoint {cp} has no proof" in r.getMessage() for r in caplog.records)
    assert ids(t) == want[53]
    v = t.append(make_rows(60))  # verified by a replay first, then committed with its record
    assert not log.is_legacy(t.io, t.root) and log.read_commit(t.io, t.root, v - 1).operation == "UPGRADE"
    assert dict(log.read_commit(t.io, t.root, v).state)["live_rows"] == len(want[53]) + ROWS
    assert t.snapshot().verified  # the record proves the state for every later read
    assert ids(t) == sorted(want[53] + make_rows(60).column("id").to_pylist())


def test_old_damaged_checkpoint_stops_writers(legacy):
    """Without a header or records nothing proves an old checkpoint to a reader (the limit of
    the earlier format: it reads what it says); a writer replays the log first and does not
    commit on it: the statement is refused, nothing of it is committed, and the table moves to
    the Delta log with the state the log replays to."""
    t = legacy
    want = _expected(t)
    cp = join(t.root, "_log", log.checkpoint_name(CHECKPOINT_VERSION))
    lines = t.io.read(cp).splitlines(keepends=True)
    t.io.write(cp, b"".join(lines[:-1]))  # its last tablet (or vector) gone
    assert ids(t) != want[53]
    with pytest.raises(
        CommitConflict, match=f"checkpoint {CHECKPOINT_VERSION} of _log.* is not the one _log's versions replay to"
    ):
        t.append(make_rows(61))
    assert log.read_commit(t.io, t.root, t.version).operation == "UPGRADE"  # the move, on the replayed state
    assert ids(t) == want[53]  # nothing of the refused append
