"""Transactions and the row-level write API (Trino's begin -> sinks -> fragments -> finish).

A statement reads snapshot v (``begin``), stages tablets and deletion vectors under fresh names
(``RowLevelSink`` in any number of tasks, each returning fragments), and commits them as version
v+1 (``commit``). If another writer took v+1 first, the commits in between are checked: a blind
append rebases onto them; anything that invalidates what this statement read or wrote raises a
typed ``CommitConflict`` and nothing of the statement becomes visible.

Row-level validation (``WriteHandle.track_rows``): the sinks also report, per tablet, the rows
the statement's result depends on (``ReadFragment``: rows it deleted or updated, and rows it
matched and left alone). A concurrent commit that deleted none of them does not conflict: the
statement's deletion vectors are rebased onto the winner's at commit time (a new DV file, the
union). Concurrent appends conflict only if their rows could have been matched: tablets whose
key stats lie outside the statement's source key ranges (``append_ranges``) cannot; the others
are judged by the caller's ``may_match`` (the engine joins them with the statement's source).
The rules, and why the result always equals a serial order, are in docs/CONCURRENCY.md.
"""

from __future__ import annotations

import base64
import contextlib
import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from pyroaring import BitMap64

from tablets.exceptions import (
    CommitConflict,
    ConcurrentAppend,
    ConcurrentDeleteDelete,
    ConcurrentDeleteRead,
    FormatError,
    MetadataChanged,
    TableNotFound,
)
from tablets.storage import log, upgrade, vacuum
from tablets.storage.actions import (
    Action,
    AddTablet,
    ColumnStats,
    CommitInfo,
    Metadata,
    RemoveTablet,
    SetDV,
)
from tablets.storage.columns import ColumnMapping
from tablets.storage.dv import DVInfo, read_dv, write_dv
from tablets.storage.fileio import LOCAL, FileIO, join
from tablets.storage.pruning import KeyRange, outside
from tablets.storage.snapshot import Snapshot, apply_version
from tablets.storage.tablet import dv_relpath, new_id

DEFAULT_TARGET_TABLET_ROWS = 1_000_000


@dataclass(frozen=True)
class WriteHandle:
    """What a statement's tasks need to stage files, and what ``commit`` needs to validate.

    Picklable and small enough to ship to Spark tasks.
    """

    root: str
    read_version: int
    txid: str
    operation: str
    schema: tuple[tuple[str, str, bool], ...]
    # tablet id -> (rows, current DV or None), for every tablet the statement may delete from
    tablets: Mapping[str, tuple[int, SetDV | None]] = field(default_factory=dict)
    read_tablets: frozenset[str] = frozenset()  # tablets whose every row the statement's result depends on
    reads_appends: bool = False  # would rows appended concurrently have changed the result?
    # The sinks report, per tablet, the rows the result depends on (ReadFragment), so deletes of
    # other rows of its tablets do not conflict and its deletion vectors are rebased instead.
    track_rows: bool = False
    # With ``reads_appends``: an appended tablet whose stats put a key column outside its range
    # cannot match (None: any appended tablet may)
    append_ranges: tuple[KeyRange, ...] | None = None
    target_tablet_rows: int = DEFAULT_TARGET_TABLET_ROWS
    sort_by: tuple[str, ...] = ()  # cluster new tablets by these columns
    io: FileIO = LOCAL  # the table's store (pickles with its settings, for executors)
    # where new tablets put each column (physical names, field ids); None: under its name.
    # A metadata change while the statement runs is a conflict, so it stays right until commit
    mapping: ColumnMapping | None = None
    began_ms: float = 0.0  # wall clock before anything was staged: how old its files can be
    # the verified snapshot it read: the state its commit builds on (the driver's; not pickled)
    base: Snapshot | None = field(default=None, compare=False, repr=False)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("base", None)  # tasks need not carry the table's state
        return state


@dataclass(frozen=True)
class DVFragment:
    tablet_id: str
    dv: SetDV
    deleted: int  # rows this statement deleted from the tablet


@dataclass(frozen=True)
class TabletFragment:
    add: AddTablet


@dataclass(frozen=True)
class ReadFragment:
    """Rows of one tablet of the read version that the statement's result depends on: the rows
    it deletes or updates, and the rows it matched and left alone. Several fragments of one
    tablet add up. Never written to the log: only the committing statement checks them."""

    tablet_id: str
    rows: str  # base64 of the portable Roaring bitmap (BitMap64.serialize())

    @classmethod
    def of(cls, tablet_id: str, rows: BitMap64) -> ReadFragment:
        return cls(tablet_id, base64.b64encode(rows.serialize()).decode("ascii"))

    def bitmap(self) -> BitMap64:
        return BitMap64.deserialize(base64.b64decode(self.rows))


Fragment = DVFragment | TabletFragment | ReadFragment


def fragment_to_json(f: Fragment) -> str:
    kind = "dv" if isinstance(f, DVFragment) else "read" if isinstance(f, ReadFragment) else "tablet"
    return json.dumps({kind: asdict(f)}, separators=(",", ":"))


def fragment_from_json(text: str) -> Fragment:
    obj = json.loads(text)
    if "dv" in obj:
        body = obj["dv"]
        return DVFragment(body["tablet_id"], SetDV(**body["dv"]), body["deleted"])
    if "read" in obj:
        return ReadFragment(**obj["read"])
    add = obj["tablet"]["add"]
    stats = tuple((n, ColumnStats.from_json(s)) for n, s in add["stats"])
    return TabletFragment(AddTablet(**{**add, "stats": stats}))


def discard(handle: WriteHandle, fragments: Iterable[Fragment]) -> None:
    """Remove the staged files of fragments that will never be committed (a refused statement),
    rather than leave them to vacuum."""
    for f in fragments:
        if isinstance(f, ReadFragment):
            continue
        rel = f.add.path if isinstance(f, TabletFragment) else f.dv.path
        with contextlib.suppress(OSError):  # else vacuum removes it later
            handle.io.delete(join(handle.root, rel))


def begin(
    snapshot: Snapshot,
    root: str,
    operation: str,
    *,
    delete_from: Iterable[str] | None = None,
    read_tablets: Iterable[str] = (),
    reads_appends: bool = False,
    track_rows: bool = False,
    append_ranges: Sequence[KeyRange] | None = None,
    target_tablet_rows: int | None = None,
    sort_by: Sequence[str] = (),
    io: FileIO,
) -> WriteHandle:
    if log.is_legacy(io, root):  # a table of the earlier layout: its first write moves it
        snapshot = upgrade.before_write(io, root, snapshot)
    if not snapshot.verified:
        snapshot = _verified(snapshot, root, io)
    ids = snapshot.tablets.keys() if delete_from is None else delete_from
    props = snapshot.metadata
    rows = target_tablet_rows or int(
        props.property("target_tablet_rows", str(DEFAULT_TARGET_TABLET_ROWS)) or DEFAULT_TARGET_TABLET_ROWS
    )
    return WriteHandle(
        root=root,
        read_version=snapshot.version,
        txid=new_id(),
        operation=operation,
        schema=snapshot.metadata.schema,
        tablets={t: (snapshot.tablets[t].add.rows, snapshot.tablets[t].dv) for t in ids},
        read_tablets=frozenset(read_tablets),
        reads_appends=reads_appends,
        track_rows=track_rows,
        append_ranges=None if append_ranges is None else tuple(append_ranges),
        target_tablet_rows=rows,
        sort_by=tuple(sort_by),
        io=io,
        mapping=snapshot.metadata.mapping,
        began_ms=time.time() * 1000,
        base=snapshot,
    )


def verified(snapshot: Snapshot, root: str, io: FileIO) -> Snapshot:
    """``snapshot`` checked against the log (``_verified``) where it came from an unproven
    checkpoint: what a statement that changes the metadata before ``begin`` takes."""
    return snapshot if snapshot.verified else _verified(snapshot, root, io)


_proven: set[tuple[str, int, str]] = set()  # (root, version, digest) already checked by replay


def _verified(snapshot: Snapshot, root: str, io: FileIO) -> Snapshot:
    """A snapshot read from a checkpoint without proof (written before checkpoints had one),
    checked by replaying the log without it: a writer never commits on a state it has not
    verified. ``FormatError`` if the checkpoint disagrees with the log."""
    key = (root, snapshot.version, snapshot.summary().digest)
    if key not in _proven:
        proven = log.load_snapshot(io, root, snapshot.version, trust_unproven=False)
        diff = proven.summary().differences(snapshot.summary())
        if diff or proven.metadata != snapshot.metadata:
            path = log.checkpoint_path(root, snapshot.checkpoint or 0)
            raise FormatError(
                f"checkpoint {path} is not the state of version {snapshot.checkpoint} that the log replays to "
                f"({'; '.join(diff) or 'metadata differs'}): nothing was committed",
                help=f"Delete {path}: the log holds the versions it summarises, and readers then replay them. "
                "The next checkpoint is written with a proof.",
            )
        _proven.add(key)
        snapshot = replace(snapshot, metadata_version=proven.metadata_version)
    return replace(snapshot, verified=True)


MayMatch = Callable[[list[AddTablet]], bool]


@dataclass(frozen=True)
class _Validation:
    """What a commit judges the commits that landed since its read version against: the
    tablets it writes, the deletion vectors its tasks staged, the rows its result depends on,
    its judge of appends and the files it stages. Built once (``_validation``), from the
    statement's handle and fragments."""

    handle: WriteHandle
    writes: frozenset[str]  # tablets this statement removes or sets a DV on
    staged: Mapping[str, SetDV]  # tablet -> the DV its tasks staged
    depends: Mapping[str, BitMap64]  # tablet -> rows its result depends on (with track_rows)
    may_match: MayMatch | None
    files: tuple[bool, bool]  # (stages files, references files it did not write): what VACUUM could reach


def _validation(
    handle: WriteHandle, fragments: Sequence[Fragment], extra_actions: Sequence[Action], may_match: MayMatch | None
) -> tuple[_Validation, list[Action]]:
    """The statement's ``_Validation`` and the actions it commits (``extra_actions``, its DVs and
    new tablets)."""
    actions: list[Action] = list(extra_actions)
    writes: set[str] = {a.tablet_id for a in extra_actions if isinstance(a, (RemoveTablet, SetDV))}
    dvs: dict[str, SetDV] = {}
    depends: dict[str, BitMap64] = {}
    for f in fragments:
        if isinstance(f, DVFragment):
            if f.tablet_id in writes:
                raise FormatError(f"two deletion vectors for tablet {f.tablet_id} in one commit")
            writes.add(f.tablet_id)
            if f.deleted:
                dvs[f.tablet_id] = f.dv
                actions.append(f.dv)
        elif isinstance(f, ReadFragment):
            depends[f.tablet_id] = depends.get(f.tablet_id, BitMap64()) | f.bitmap()
        else:
            actions.append(f.add)
    # files it references that it did not write and its read version did not have live (RESTORE)
    foreign = any(isinstance(a, (AddTablet, SetDV)) for a in extra_actions)
    staged = any(isinstance(f, TabletFragment) for f in fragments) or bool(dvs)
    return _Validation(handle, frozenset(writes), dvs, depends, may_match, (staged, foreign)), actions


class _CatchUp:
    """A commit's catching up with the commits that landed between its read version and the
    version it tries: read in order (``observe``), then judged as a whole (``resolve``) against
    what it validates (``_Validation``): the statement's result must be what it would have been
    had it read the newest of them. Rebases the statement's deletion vectors onto theirs.
    Mutable: what it has read and judged grows with each retry of the commit."""

    def __init__(self, check: _Validation, state: Snapshot) -> None:
        self.check = check
        self.handle = check.handle
        self.state = state  # the verified state of the version before the one it tries
        self.dvs = dict(check.staged)  # tablet -> the DV it commits (the staged one, or a rebased one)
        self.changed: dict[str, tuple[int, SetDV]] = {}  # tablet -> (version, newest DV of others)
        self.judged_dv: dict[str, str] = {}  # tablet -> path of the DV last judged
        self.appended: dict[str, tuple[int, AddTablet]] = {}  # live tablets appended since
        self.judged: set[str] = set()  # appended tablets already judged
        self.written: list[str] = []  # DV files rebased here
        self._bitmaps: dict[str, BitMap64] = {}

    def actions(self, actions: list[Action]) -> list[Action]:
        return [self.dvs.get(a.tablet_id, a) if isinstance(a, SetDV) else a for a in actions]

    def catch_up(self, version: int) -> int | None:
        """Read and judge the versions from ``version`` on; the next version to try. None where
        ``version`` is this statement's own commit (a create that landed but whose answer was
        lost, and whose retry met the object): committing again would apply it twice."""
        first = version
        while True:
            try:
                actions = log.read_version(self.handle.io, self.handle.root, version, self.state)
            except TableNotFound:
                break
            if version == first and any(isinstance(a, CommitInfo) and a.txid == self.handle.txid for a in actions):
                return None
            self.observe(version, actions)
            self.state = log.advance(self.state, version, actions, self.handle.root)
            version += 1
        self.resolve()
        return version

    def observe(self, version: int, actions: tuple[Action, ...]) -> None:
        h, op = self.handle, self.handle.operation
        for a in actions:
            if isinstance(a, CommitInfo) and a.operation == vacuum.VACUUM_START:
                vacuum.check_passed(version, a, op, h.began_ms, *self.check.files)
            if isinstance(a, Metadata):
                raise MetadataChanged(
                    f"version {version} changed the table's schema or properties while {op} ran", version
                )
            if isinstance(a, AddTablet):
                old = self.state.tablets.get(a.tablet_id)
                if old is not None and old.add.path == a.path:
                    continue  # the same file restated (its statistics): no rows added or removed
                named = a.named(h.mapping) if h.mapping is not None else a
                if h.reads_appends and not (h.append_ranges is not None and outside(named, h.append_ranges)):
                    self.appended[a.tablet_id] = (version, a)
                continue
            if not isinstance(a, (RemoveTablet, SetDV)):
                continue
            t = a.tablet_id
            if t in self.appended:
                if isinstance(a, RemoveTablet):  # its rows left the table (or came back appended)
                    del self.appended[t]
                continue  # deletes from an appended tablet: all of its rows are judged anyway
            what = "removed" if isinstance(a, RemoveTablet) else "deleted rows from"
            rebases = isinstance(a, SetDV) and h.track_rows and t in self.dvs
            if t in self.check.writes and not rebases:
                raise ConcurrentDeleteDelete(
                    f"version {version} {what} tablet {t}, which this {op} also deletes from", version
                )
            if t in h.read_tablets or (isinstance(a, RemoveTablet) and len(self.check.depends.get(t, ()))):
                raise ConcurrentDeleteRead(f"version {version} {what} tablet {t}, which this {op} read", version)
            if isinstance(a, SetDV) and h.track_rows and (t in self.check.depends or t in self.dvs):
                self.changed[t] = (version, a)

    def resolve(self) -> None:
        h, op = self.handle, self.handle.operation
        for t, (version, dv) in self.changed.items():
            if self.judged_dv.get(t) == dv.path:
                continue
            self.judged_dv[t] = dv.path
            read = h.tablets[t][1] if t in h.tablets else None  # (not known: every row counts as gone)
            before = self._bitmap(read) if read is not None else BitMap64()
            now = self._bitmap(dv)
            gone = now - before  # rows deleted by others since this statement's snapshot
            staged = self._bitmap(self.check.staged[t]) if t in self.check.staged else None
            if staged is not None and len(gone & (staged - before)):
                raise ConcurrentDeleteDelete(
                    f"version {version} deleted {len(gone & (staged - before))} row(s) of tablet {t} that this {op} "
                    "also deletes or updates",
                    version,
                )
            hit = gone & self.check.depends.get(t, BitMap64())
            if len(hit):
                raise ConcurrentDeleteRead(
                    f"version {version} deleted {len(hit)} row(s) of tablet {t} that this {op} matched", version
                )
            if staged is not None:  # rebase: a new DV with the winner's deletes and ours
                rel = dv_relpath(t, new_id())
                info = write_dv(h.io, join(h.root, rel), now | staged)
                self.written.append(rel)
                self.dvs[t] = SetDV(t, rel, info.cardinality, info.size, info.checksum)
        fresh = [(v, a) for t, (v, a) in self.appended.items() if t not in self.judged]
        if not fresh:
            return
        self.judged.update(a.tablet_id for _, a in fresh)
        may_match = self.check.may_match
        if may_match is None or may_match([a for _, a in fresh]):
            versions = sorted({v for v, _ in fresh})
            which = "version " + ", ".join(map(str, versions))
            why = "should have read" if may_match is None else "would have matched or changed"
            raise ConcurrentAppend(f"{which} added rows that this {op} {why}", versions[0])

    def _bitmap(self, dv: SetDV) -> BitMap64:
        if dv.path not in self._bitmaps:
            h = self.handle
            self._bitmaps[dv.path] = read_dv(h.io, join(h.root, dv.path), DVInfo(dv.size, dv.checksum, dv.cardinality))
        return self._bitmaps[dv.path]

    def superseded(self) -> list[str]:
        """DV files written for this statement that its commit does not reference."""
        final = {d.path for d in self.dvs.values()}
        return [p for p in [*(d.path for d in self.check.staged.values()), *self.written] if p not in final]


def commit(handle: WriteHandle, fragments: Iterable[Fragment], **options: Any) -> int | None:
    """``commit_state`` (its options too), for the new version: None if nothing changed."""
    state = commit_state(handle, fragments, **options)
    return None if state is None else state.version


def commit_state(
    handle: WriteHandle,
    fragments: Iterable[Fragment],
    *,
    extra_actions: Sequence[Action] = (),
    parameters: Mapping[str, str] | None = None,
    metrics: Mapping[str, float] | None = None,
    may_match: MayMatch | None = None,
    record: bool = False,
) -> Snapshot | None:
    """Commit the fragments (plus ``extra_actions``) as one new version: the table's state at
    that version (what a checkpoint of it holds), or None if nothing changes (unless
    ``record``: a version that only records an operation, VACUUM START / END).

    ``may_match(tablets)`` says whether rows of tablets appended concurrently (that
    ``handle.append_ranges`` do not rule out) could have been matched or changed by this
    statement; without it any such append conflicts. On a conflict the statement's staged files
    are deleted and the typed ``CommitConflict`` raised."""
    fragments = list(fragments)
    validation, actions = _validation(handle, fragments, extra_actions, may_match)
    if not actions and not record:
        return None  # no-op commits are not written
    io = handle.io
    base = handle.base or log.load_snapshot(io, handle.root, handle.read_version, trust_unproven=False)
    # files it references that it did not write and its read version did not have live (RESTORE)
    foreign = [a.path for a in extra_actions if isinstance(a, (AddTablet, SetDV))]
    check = _CatchUp(validation, base)
    version = handle.read_version + 1
    try:
        while True:
            if foreign:
                vacuum.check_foreign(io, handle.root, foreign, handle.operation)
            stats = dict(metrics or {})
            if check.written:
                stats["dvs_rebased"] = float(sum(1 for t, d in check.dvs.items() if d != validation.staged[t]))
            info = CommitInfo(
                operation=handle.operation,
                txid=handle.txid,
                timestamp_ms=int(time.time() * 1000),
                read_version=handle.read_version,
                parameters=tuple(sorted((parameters or {}).items())),
                metrics=tuple(sorted(stats.items())),
            )
            final = check.actions(actions)
            after = apply_version(check.state, version, [*final, info])
            info = replace(info, state=after.summary().record())  # what proves a checkpoint of this state
            if log.write_version(io, handle.root, check.state, after, [*final, info]):
                break
            caught_up = check.catch_up(version)
            if caught_up is None:
                break  # the version holds this very commit: its create landed, its answer was lost
            version = caught_up
    except CommitConflict:
        discard(handle, fragments)  # never referenced: nothing of the statement stays
        for rel in check.written:
            with contextlib.suppress(OSError):
                io.delete(join(handle.root, rel))
        raise
    for rel in check.superseded():
        with contextlib.suppress(OSError):  # else vacuum removes it later
            io.delete(join(handle.root, rel))
    if version % log.CHECKPOINT_INTERVAL == 0:
        log.write_checkpoint(io, handle.root, after)
    return after
