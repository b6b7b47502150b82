"""Tablet tables: the store's public operations.

Example::

    t = TabletTable.create("/tmp/t", pa.schema([("id", pa.int64()), ("v", pa.string())]),
                           key_columns=["id"])
    t.append(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}))
    h = t.begin_delete()
    sink = RowLevelSink(h)
    sink.delete([tablet_id], [1])          # row ids come from scan(..., row_ids=True)
    t.finish(h, sink.finish())
    t.read().num_rows                       # 2
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

import pyarrow as pa

from tablets.exceptions import (
    CommitConflict,
    MetadataChanged,
    SchemaMismatch,
    TableAlreadyExists,
    TableNotFound,
    VacuumRetentionError,
)
from tablets.sqltext import repeated_names
from tablets.storage import check as check_log
from tablets.storage import clone, log, transaction, vacuum
from tablets.storage.actions import Action, AddTablet, CommitInfo, RemoveTablet, SetDV
from tablets.storage.constraints import refuse_losing_columns
from tablets.storage.fileio import FileIO, io_for, join, normalize
from tablets.storage.maintenance import (
    AutoCompactPolicy,
    check_restorable,
    restore_actions,
    restored_files,
    version_at,
)
from tablets.storage.metadata import MetadataChange, check_reserved, new_metadata
from tablets.storage.sink import RowLevelSink
from tablets.storage.snapshot import Snapshot, TabletState
from tablets.storage.tablet import ROW_NUMBER, ROW_TABLET, new_id, read_tablet
from tablets.storage.transaction import (
    DEFAULT_TARGET_TABLET_ROWS,
    Fragment,
    WriteHandle,
)
from tablets.storage.types import from_arrow, schema_from_arrow, schema_to_arrow

DEFAULT_RETENTION_HOURS = 168.0
# writes the live rows of some tablets of a snapshot as new tablets of a handle (a compaction):
# ``TabletTable.rewrite_here``, or the engine's Spark job
Rewriter = Callable[[Snapshot, Sequence[str], WriteHandle], list[Fragment]]
# the paths among those given that do not exist (RESTORE's check: the engine may run it in tasks)
MissingFiles = Callable[[Sequence[str]], list[str]]
METADATA_RETRIES = 5


@dataclass(frozen=True)
class HistoryEntry:
    version: int
    commit: CommitInfo | None


class TabletTable:
    """A tablet table at a location: a local directory or an object store URI
    (``s3://bucket/path``, ``gs://...``, ``abfss://...``; see ``tablets.storage.fileio``).
    Cheap to construct; every read resolves the log."""

    def __init__(
        self, root: str, storage_options: Mapping[str, str] | None = None, *, io: FileIO | None = None
    ) -> None:
        self.root = normalize(root)
        self.io = io or io_for(self.root, storage_options)
        # the state the last ``finish`` committed: auto-compaction's look at the table right
        # after a statement needs no replay of the log (a concurrent commit since then makes
        # its own commit conflict, and it gives up)
        self._committed: Snapshot | None = None

    def __repr__(self) -> str:
        return f"TabletTable({self.root!r})"

    # --- lifecycle ------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        root: str,
        schema: pa.Schema | Sequence[tuple[str, str, bool]],
        key_columns: Sequence[str] = (),
        properties: Mapping[str, str] | None = None,
        *,
        exist_ok: bool = False,
        storage_options: Mapping[str, str] | None = None,
        comment: str | None = None,
        column_comments: Sequence[tuple[str, str]] = (),
    ) -> TabletTable:
        table = cls(root, storage_options)
        if table.exists():
            if exist_ok:
                return table
            raise TableAlreadyExists(f"a tablet table already exists at {table.root}")
        meta = new_metadata(new_id(), schema, key_columns, properties, comment, column_comments)
        info = CommitInfo("CREATE TABLE", new_id(), meta.created_ms, -1)
        info = replace(info, state=log.apply_version(None, 0, [meta]).summary().record())
        if not log.write_version(table.io, table.root, None, log.apply_version(None, 0, [meta, info]), [meta, info]):
            if exist_ok:
                return table
            raise TableAlreadyExists(f"a tablet table was created at {table.root} concurrently")
        return table

    @classmethod
    def open(cls, root: str, storage_options: Mapping[str, str] | None = None) -> TabletTable:
        table = cls(root, storage_options)
        if not table.exists():
            raise TableNotFound(f"no tablet table at {table.root}")
        return table

    def exists(self) -> bool:
        return log.has_version(self.io, self.root)

    def check(self, *, repair: bool = False) -> list[check_log.Problem]:
        """What is wrong with the table's log and files (``tablets.storage.check``): empty for a
        healthy table; ``repair`` rebuilds the derived files found damaged."""
        return check_log.check(self.io, self.root, repair=repair)

    def drop(self) -> None:
        """Delete the table directory (or prefix) and everything in it, except the files its
        live shallow clones reference (``tablets.storage.clone``)."""
        clone.drop(self)

    # --- reading --------------------------------------------------------------------------

    def snapshot(self, version: int | None = None) -> Snapshot:
        return log.load_snapshot(self.io, self.root, version)

    @property
    def version(self) -> int:
        return log.latest_version(self.io, self.root)

    def arrow_schema(self, snapshot: Snapshot | None = None) -> pa.Schema:
        return schema_to_arrow((snapshot or self.snapshot()).metadata.schema)

    def tablet_path(self, state: TabletState) -> str:
        return join(self.root, state.add.path)

    def scan(
        self,
        snapshot: Snapshot | None = None,
        columns: Sequence[str] | None = None,
        tablet_ids: Sequence[str] | None = None,
        *,
        row_ids: bool = False,
    ) -> Iterator[pa.Table]:
        """Live rows per tablet, deletion vectors applied; ``row_ids`` adds the tablet id and
        row number of each row (what the row-level API's sinks take)."""
        snap = snapshot or self.snapshot()
        schema = self.arrow_schema(snap)
        ids = list(snap.tablets) if tablet_ids is None else tablet_ids
        cols = list(columns) if columns is not None else None
        mapping = snap.metadata.mapping
        for tid in ids:
            st = snap.tablets[tid]
            yield read_tablet(self.io, self.root, st.add, st.dv, schema, cols, row_ids=row_ids, mapping=mapping)

    def read(self, version: int | None = None, columns: Sequence[str] | None = None) -> pa.Table:
        snap = self.snapshot(version)
        schema = self.arrow_schema(snap)
        if columns is not None:
            schema = pa.schema([schema.field(c) for c in columns])
        parts = list(self.scan(snap, columns))
        return pa.concat_tables(parts) if parts else schema.empty_table()

    def commit_of(self, snapshot: Snapshot) -> CommitInfo | None:
        """The commit that made ``snapshot``'s version (from the log where a checkpoint made the
        snapshot); None where the log no longer holds that version."""
        if snapshot.commit is not None:
            return snapshot.commit
        try:
            return log.read_commit(self.io, self.root, snapshot.version)
        except TableNotFound:
            return None

    def history(self) -> list[HistoryEntry]:
        versions, _ = log.list_log(self.io, self.root, complete=True)
        out = []
        for v in versions:
            out.append(HistoryEntry(v, log.read_commit(self.io, self.root, v)))
        return out

    # --- writing --------------------------------------------------------------------------

    def begin_write(self, operation: str = "WRITE", **kwargs: object) -> WriteHandle:
        """A handle for a blind append (reads nothing: rebases over concurrent commits)."""
        return transaction.begin(self.snapshot(), self.root, operation, delete_from=(), io=self.io, **kwargs)  # type: ignore[arg-type]

    def begin_delete(self, operation: str = "DELETE", **kwargs: object) -> WriteHandle:
        """A handle for deletes (and inserts). By default the statement depends on every row of
        every tablet; with ``track_rows=True`` only on the rows its sinks delete or ``read``."""
        snap = self.snapshot()
        kwargs.setdefault("read_tablets", () if kwargs.get("track_rows") else snap.tablets.keys())
        return transaction.begin(snap, self.root, operation, io=self.io, **kwargs)  # type: ignore[arg-type]

    def begin_update(self, operation: str = "UPDATE", **kwargs: object) -> WriteHandle:
        kwargs.setdefault("reads_appends", True)
        return self.begin_delete(operation, **kwargs)

    def finish(
        self,
        handle: WriteHandle,
        fragments: Sequence[Fragment],
        *,
        extra_actions: Sequence[Action] = (),
        parameters: Mapping[str, str] | None = None,
        metrics: Mapping[str, float] | None = None,
        may_match: transaction.MayMatch | None = None,
    ) -> int | None:
        """Commit staged fragments as one version (``transaction.commit``: ``may_match`` judges
        concurrent appends that the handle's key ranges do not rule out)."""
        self._committed = transaction.commit_state(
            handle, fragments, extra_actions=extra_actions, parameters=parameters, metrics=metrics, may_match=may_match
        )
        return None if self._committed is None else self._committed.version

    def append(
        self, data: pa.Table, operation: str = "APPEND", metrics: Mapping[str, float] | None = None
    ) -> int | None:
        snap = self.snapshot()
        self._check_schema(data, snap)
        handle = transaction.begin(snap, self.root, operation, delete_from=(), io=self.io)
        sink = RowLevelSink(handle)
        sink.insert(data)
        m = {"rows_inserted": float(data.num_rows), **(metrics or {})}
        return transaction.commit(handle, sink.finish(), metrics=m)

    def overwrite(self, data: pa.Table, operation: str = "OVERWRITE") -> int | None:
        snap = self.snapshot()
        self._check_schema(data, snap)
        handle = transaction.begin(
            snap, self.root, operation, read_tablets=snap.tablets.keys(), reads_appends=True, io=self.io
        )
        sink = RowLevelSink(handle)
        sink.insert(data)
        removes = [RemoveTablet(t) for t in snap.tablets]
        metrics = {"rows_inserted": float(data.num_rows), "rows_deleted": float(snap.live_rows)}
        return transaction.commit(handle, sink.finish(), extra_actions=removes, metrics=metrics)

    def _check_schema(self, data: pa.Table, snap: Snapshot) -> None:
        names = set(snap.metadata.column_names)
        extra = [c for c in data.column_names if c not in names]
        if extra:
            raise SchemaMismatch(
                f"columns {extra} are not in the table {self.root} (columns {list(snap.metadata.column_names)})",
                help="Add the columns first (add_columns), or drop them from the data.",
            )

    def add_columns(self, columns: Sequence[tuple[str, str]], comments: Sequence[tuple[str, str]] = ()) -> int | None:
        """Schema evolution: new nullable columns (with ``comments``, (column, comment)); older
        tablets read them as NULL."""
        snap = self.snapshot()
        have = {n.lower(): (n, t) for n, t, _ in snap.metadata.schema}
        for n, t in columns:  # Spark resolves names without regard to case: V is v
            if n.lower() in have and have[n.lower()] != (n, t.lower()) and have[n.lower()] != (n, t):
                old, old_type = have[n.lower()]
                raise SchemaMismatch(
                    f"ADD COLUMNS: {n} {t}: the table has a column {old} ({old_type}), and Spark resolves names "
                    "without regard to case",
                    help="Give the new column another name, or change the column's type with ALTER COLUMN.",
                )
        twice = repeated_names([n for n, _ in columns])
        if twice:
            raise SchemaMismatch(f"ADD COLUMNS: {', '.join(twice)} named twice", help="Name each new column once.")
        new = [(n, t, True) for n, t in columns if n.lower() not in have]
        if not new:
            return None
        check_reserved([n for n, _, _ in new])
        meta = snap.metadata.with_schema(snap.metadata.schema + tuple(new))
        added = {n for n, _, _ in new}
        meta = replace(meta, column_comments=meta.column_comments + tuple(c for c in comments if c[0] in added))
        handle = transaction.begin(snap, self.root, "ADD COLUMNS", delete_from=(), io=self.io)
        return transaction.commit(
            handle, [], extra_actions=[meta], parameters={"columns": ",".join(n for n, _, _ in new)}
        )

    def set_schema(
        self, schema: pa.Schema | Sequence[tuple[str, str, bool]], operation: str = "SET SCHEMA"
    ) -> int | None:
        """Replace the schema (columns dropped are no longer read; type changes must be casts Arrow can do)."""
        snap = self.snapshot()
        cols = schema_from_arrow(schema) if isinstance(schema, pa.Schema) else tuple(schema)
        if cols == snap.metadata.schema:
            return None
        check_reserved([c[0] for c in cols])
        names = {c[0].lower() for c in cols}
        refuse_losing_columns(
            snap.metadata, [n for n in snap.metadata.column_names if n.lower() not in names], operation
        )
        meta = snap.metadata.with_schema(cols)
        handle = transaction.begin(snap, self.root, operation, delete_from=(), io=self.io)
        return transaction.commit(handle, [], extra_actions=[meta])

    def rename_column(self, column: str, new: str, *, where: str | None = None) -> int | None:
        """``ALTER TABLE ... RENAME COLUMN``: a metadata-only commit (the tablets keep the
        column under its physical name). Refused (``SchemaMismatch``, its message starting with
        ``where``) for a key column and for a name the table has."""
        check_reserved([new])
        change = MetadataChange(rename_column=(column, new))
        return self.alter_metadata(
            change, "RENAME COLUMN", {"column": column, "new_name": new}, where=where or f"RENAME COLUMN of {self.root}"
        )

    def drop_columns(self, columns: Sequence[str], *, if_exists: bool = False, where: str | None = None) -> int | None:
        """``ALTER TABLE ... DROP COLUMN(S)``: a metadata-only commit; the tablets keep the values
        (older versions read them) and a column added later under one of these names reads NULL
        in them. Refused for key columns and ``cluster_by`` columns."""
        change = MetadataChange(drop_columns=tuple(columns), if_exists=if_exists)
        return self.alter_metadata(
            change, "DROP COLUMNS", {"columns": ",".join(columns)}, where=where or f"DROP COLUMNS of {self.root}"
        )

    def alter_metadata(
        self,
        change: MetadataChange,
        operation: str,
        parameters: Mapping[str, str] | None = None,
        *,
        where: str | None = None,
    ) -> int | None:
        """Commit ``change`` to the properties, comments or column names as one version (no data
        changes); None when it changes nothing. Another statement's metadata commit in between
        makes it apply the change again on top of that one, up to ``METADATA_RETRIES`` times.
        ``where`` starts the messages of refused changes (default: ``operation``)."""
        for attempt in range(METADATA_RETRIES + 1):
            snap = self.snapshot()
            meta = change.apply(snap.metadata, where or operation)
            if meta == snap.metadata:
                return None
            handle = transaction.begin(snap, self.root, operation, delete_from=(), io=self.io)
            try:
                return transaction.commit(handle, [], extra_actions=[meta], parameters=parameters)
            except MetadataChanged:
                if attempt == METADATA_RETRIES:
                    raise
        return None  # not reached

    # --- maintenance ----------------------------------------------------------------------

    def compact(
        self,
        *,
        max_deleted_fraction: float = 0.3,
        min_tablet_rows: int = 100_000,
        target_tablet_rows: int | None = None,
        operation: str = "COMPACT",
        sort_by: Sequence[str] = (),
        parameters: Mapping[str, str] | None = None,
        rewrite: Rewriter | None = None,
    ) -> int | None:
        """Rewrite the live rows of tablets that are mostly deleted or small, in one commit
        (new tablets sorted by ``sort_by``). ``rewrite`` writes the new tablets (default
        ``rewrite_here``: this process reads and writes them)."""
        snap = self.snapshot()
        pick = [
            tid
            for tid, st in snap.tablets.items()
            if st.add.rows < min_tablet_rows
            or (st.dv is not None and st.dv.cardinality > max_deleted_fraction * st.add.rows)
        ]
        if len(pick) < 2 and not any(snap.tablets[t].dv for t in pick):
            return None  # nothing worth rewriting
        return self._rewrite(snap, pick, operation, target_tablet_rows, sort_by, parameters, rewrite)

    def _rewrite(
        self,
        snap: Snapshot,
        pick: Sequence[str],
        operation: str,
        target_tablet_rows: int | None,
        sort_by: Sequence[str] = (),
        parameters: Mapping[str, str] | None = None,
        rewrite: Rewriter | None = None,
    ) -> int | None:
        """The live rows of the tablets ``pick`` as new tablets (written by ``rewrite``), and
        ``pick`` removed, in one commit."""
        rows = target_tablet_rows or DEFAULT_TARGET_TABLET_ROWS
        handle = transaction.begin(
            snap,
            self.root,
            operation,
            delete_from=pick,
            read_tablets=pick,
            target_tablet_rows=rows,
            sort_by=sort_by,
            io=self.io,
        )
        fragments = (rewrite or self.rewrite_here)(snap, pick, handle)
        removes = [RemoveTablet(t) for t in pick]
        metrics = {
            "tablets_removed": float(len(pick)),
            "rows_copied": float(sum(snap.tablets[t].live_rows for t in pick)),
        }
        return transaction.commit(handle, fragments, extra_actions=removes, parameters=parameters, metrics=metrics)

    def rewrite_here(self, snap: Snapshot, pick: Sequence[str], handle: WriteHandle) -> list[Fragment]:
        """The ``Rewriter`` of this process: the live rows of ``pick`` read and written here, a
        tablet at a time."""
        sink = RowLevelSink(handle)
        for part in self.scan(snap, tablet_ids=pick):
            sink.insert(part)
        return sink.finish()

    def auto_compact(self, rewrite: Rewriter | None = None) -> int | None:
        """Rewrite small and deletion-heavy tablets if the table's ``auto_compact`` property is
        on and ``AutoCompactPolicy`` thresholds are passed: the new version, or None (nothing
        to do, or a concurrent commit won: the compaction gives up)."""
        snap, self._committed = self._committed or self.snapshot(), None
        policy = AutoCompactPolicy.of(snap.metadata)
        if not policy.enabled:
            return None
        pick = policy.pick(snap)
        if not pick:
            return None
        sort_by = [c.strip() for c in (snap.metadata.property("cluster_by") or "").split(",") if c.strip()]
        try:
            return self._rewrite(snap, pick, "OPTIMIZE", policy.target_tablet_rows, sort_by, {"auto": "true"}, rewrite)
        except CommitConflict:
            return None

    def commit_times(self) -> list[tuple[int, int]]:
        """(version, commit time in ms) of every version, oldest first."""
        return [(h.version, h.commit.timestamp_ms if h.commit else 0) for h in self.history()]

    def version_at(self, timestamp_ms: int, what: str = "TIMESTAMP AS OF") -> int:
        """The newest version committed at or before ``timestamp_ms`` (Delta's TIMESTAMP AS OF)."""
        return version_at(self.commit_times(), timestamp_ms, what)

    def missing_here(self, paths: Sequence[str]) -> list[str]:
        """The ``MissingFiles`` of this process: the paths among ``paths`` that do not exist, asked one by one."""
        return [p for p in paths if not self.io.exists(p)]

    def restore(self, version: int, *, statement: str | None = None, missing: MissingFiles | None = None) -> int | None:
        """One new commit whose live rows (and schema) are those of ``version``: its tablets and
        deletion vectors, the same files, referenced again. None if the table already reads so.
        The files must still exist (a ``FormatError`` names VACUUM if not): ``missing`` checks
        them (default: here, one by one)."""
        what = statement or f"RESTORE TO VERSION AS OF {version}"
        snap = self.snapshot()
        try:
            old = self.snapshot(version)
        except TableNotFound as e:
            raise TableNotFound(f"{what}: {e.detail}", help="Pick a version from DESCRIBE HISTORY.") from None
        actions = restore_actions(snap, old)
        paths = [join(self.root, p) for p in restored_files(actions)]
        gone_files = (missing or self.missing_here)(paths)
        check_restorable([p[len(self.root) :].lstrip("/") for p in gone_files], version, what)
        handle = transaction.begin(
            snap, self.root, "RESTORE", delete_from=(), read_tablets=snap.tablets.keys(), reads_appends=True, io=self.io
        )
        adds = [a for a in actions if isinstance(a, AddTablet)]
        gone = [
            snap.tablets[a.tablet_id] for a in actions if isinstance(a, RemoveTablet) and a.tablet_id in snap.tablets
        ]
        gone = [st for st in gone if st.tablet_id not in old.tablets or st.add != old.tablets[st.tablet_id].add]
        metrics = {
            "num_restored_files": float(len(adds)),
            "num_removed_files": float(len(gone)),
            "restored_files_size": float(sum(a.bytes for a in adds)),
            "removed_files_size": float(sum(st.add.bytes for st in gone)),
            "num_of_files_after_restore": float(len(old.tablets)),
            "table_size_after_restore": float(sum(st.add.bytes for st in old.tablets.values())),
        }
        return transaction.commit(
            handle, [], extra_actions=actions, parameters={"version": str(version)}, metrics=metrics
        )

    def vacuum(
        self,
        retention_hours: float = DEFAULT_RETENTION_HOURS,
        *,
        dry_run: bool = False,
        enforce_retention: bool = True,
    ) -> list[str]:
        """Delete files that no version within the retention period references.

        Files younger than the retention are kept even when unreferenced: a writer may be
        staging them. Versions older than the retention may no longer be readable afterwards.
        A VACUUM that deletes anything records itself as two versions (``VACUUM START`` /
        ``VACUUM END``): a statement that ran across its start and could lose its staged files
        gets ``VacuumConflict`` instead of committing (``tablets.storage.vacuum``).
        """
        if enforce_retention and retention_hours < DEFAULT_RETENTION_HOURS:
            raise VacuumRetentionError(
                f"retention of {retention_hours} h is below the safe minimum of {DEFAULT_RETENTION_HOURS} h: "
                "a running statement or a reader of an old version could lose its files"
            )
        retention_ms = retention_hours * 3_600_000
        # a first look (the newest version's files only: an upper bound) spares a VACUUM that
        # would delete nothing its two versions; a dry run wants the exact list
        found = self._unreferenced(time.time() * 1000 - retention_ms, newest_only=not dry_run)
        if dry_run or not found:
            return found
        txid = new_id()
        marker = vacuum.put_marker(self.io, self.root, txid, retention_hours)
        try:
            params = {vacuum.RETENTION: f"{retention_hours:g}", "retention_check": str(enforce_retention).lower()}
            start = self._record(vacuum.VACUUM_START, params, {"num_files_to_delete": float(len(found))})
            # the store's clock: a file written after START is never older than its timestamp
            listed = self.io.list(log.log_dir(self.root), start_after=log.version_name(start - 1))
            started = next((f.mtime_ms for f in listed if f.name == log.version_name(start)), time.time() * 1000)
            found = self._unreferenced(min(time.time() * 1000, started) - retention_ms)  # the log as of START
            for rel in found:
                self.io.delete(join(self.root, rel))
            self._record(vacuum.VACUUM_END, {"start_version": str(start)}, {"num_deleted_files": float(len(found))})
        finally:
            self.io.delete(marker)
        return found

    def _record(self, operation: str, parameters: Mapping[str, str], metrics: Mapping[str, float]) -> int:
        """Commit a version that holds only its ``commit_info`` (blind: it never conflicts)."""
        handle = transaction.begin(self.snapshot(), self.root, operation, delete_from=(), io=self.io)
        version = transaction.commit(handle, [], parameters=parameters, metrics=metrics, record=True)
        assert version is not None
        return version

    def _unreferenced(self, cutoff_ms: float, newest_only: bool = False) -> list[str]:
        """Files (relative paths) that no version committed since ``cutoff_ms``, nor the newest,
        references, and last modified before it; and log temp files older than it. With
        ``newest_only`` the versions before the newest are not read (a superset)."""
        keep: set[str] = set()
        live: set[str] = set()
        snap: Snapshot | None = None
        versions, _ = log.list_log(self.io, self.root, complete=True)
        if newest_only:
            snap = self.snapshot(versions[-1])
            keep = {st.add.path for st in snap.tablets.values()} | {st.dv.path for st in snap.tablets.values() if st.dv}
            versions = []
        for _, actions, state in log.walk(self.io, self.root, versions, snap):
            ts = next((a.timestamp_ms for a in actions if isinstance(a, CommitInfo)), 0)
            live = {st.add.path for st in state.tablets.values()} | {
                st.dv.path for st in state.tablets.values() if st.dv
            }
            if ts >= cutoff_ms:
                keep |= live  # every retained version stays readable
        keep |= live
        keep |= clone.kept_by_clones(self.io, self.root, cutoff_ms)  # its shallow clones' files
        found = []
        for sub in ("tablets", "dv"):
            for f in self.io.list(join(self.root, sub)):
                if f"{sub}/{f.name}" not in keep and f.mtime_ms < cutoff_ms:
                    found.append(f"{sub}/{f.name}")
        for f in self.io.list(self.root):  # data files of an adopted Delta table (delta_adopt)
            if f.name.endswith(".parquet") and f.name[0] not in "_." and f.name not in keep and f.mtime_ms < cutoff_ms:
                found.append(f.name)
        for sub in (log.LOG_DIR, log.AUX_DIR, "_log"):  # temp files of creates a crash interrupted
            for f in self.io.list(join(self.root, sub)):
                if f.name.startswith(".tmp-") and f.mtime_ms < cutoff_ms:
                    found.append(f"{sub}/{f.name}")
        return sorted(found)


__all__ = ["TabletTable", "HistoryEntry", "ROW_TABLET", "ROW_NUMBER", "from_arrow", "SetDV"]
