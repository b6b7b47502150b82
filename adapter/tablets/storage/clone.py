"""Zero-copy (shallow) clones: a new table whose first version references another table's
tablets and deletion vectors where they are (Delta's ``SHALLOW CLONE``).

- **The clone's version 0** holds a ``metadata`` action (the source version's columns, ids,
  physical names, keys, properties and comments under a new table id), one ``add_tablet`` per
  live tablet and one ``set_dv`` per deletion vector of that version, with the **full location**
  of each file (``/wh/src/tablets/<id>.parquet``, ``s3://b/src/dv/<id>-<txid>.bin``) instead of a
  path relative to the root, and ``commit_info`` operation ``CLONE`` (parameters ``source``,
  ``source_version``, ``source_table_id``). No file is copied.
- **Then it lives its own life**: its writes go under its own root (new tablets, and new deletion
  vectors for the source's tablets: ``dv/<tablet id>-<txid>.bin`` of the clone), and its VACUUM
  lists only its own ``tablets/`` and ``dv/``: it never deletes a file outside its root.
- **Registration**: before committing, the clone writes ``_clones/<clone table id>.json``
  (``{"root", "source", "source_version", "created_ms"}``) in the root of every table whose files it
  references. A VACUUM of such a table keeps every file of its root that a clone's version
  committed within the retention (or its newest version) references (``kept_by_clones``). A
  marker whose clone root holds no table is the trace of a clone being created (younger than a
  day: the files of ``source_version`` are kept) or of a dropped one (older: removed).
- **DROP** of a table with live clones deletes its log and the files no clone references, and
  keeps those and ``_clones/`` (``drop``); DROP of a clone deletes its root and its markers.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Protocol

from tablets.exceptions import TableAlreadyExists, TabletsError
from tablets.storage import log, transaction, vacuum
from tablets.storage.actions import Action, AddTablet, CommitInfo, Metadata, RemoveTablet, SetDV
from tablets.storage.fileio import FileIO, is_absolute, is_local, join, normalize, parent, scheme_of
from tablets.storage.properties import check_properties
from tablets.storage.snapshot import Snapshot
from tablets.storage.tablet import new_id


class Table(Protocol):
    """What this module reads of a table (``TabletTable``, which calls it)."""

    root: str
    io: FileIO

    def snapshot(self, version: int | None = None) -> Snapshot: ...


CLONES_DIR = "_clones"
CLONE = "CLONE"
# a marker whose clone has no log yet is a clone being created for this long
CREATING_MS = 24 * 3_600_000.0


def owner_root(path: str) -> str:
    """The root of the table whose file ``path`` (a full location) is: ``<root>/tablets/<f>``
    or ``<root>/dv/<f>``."""
    return parent(parent(path))


def clone_actions(
    source_root: str, snap: Snapshot, clone_id: str, properties: Mapping[str, str] | None = None
) -> list[Action]:
    """Version 0 of a clone of ``snap`` (without its commit_info); ``properties`` are set on
    top of the source's."""
    props = tuple(sorted({**dict(snap.metadata.properties), **(properties or {})}.items()))
    meta = replace(snap.metadata, table_id=clone_id, created_ms=int(time.time() * 1000), properties=props)
    out: list[Action] = [meta]
    for st in snap.tablets.values():
        out.append(replace(st.add, path=join(source_root, st.add.path)))
        if st.dv is not None:
            out.append(replace(st.dv, path=join(source_root, st.dv.path)))
    return out


def _marker(root: str, clone_id: str) -> str:
    return join(root, CLONES_DIR, f"{clone_id}.json")


def shallow_clone(
    source: Table,
    target_root: str,
    version: int | None = None,
    *,
    properties: Mapping[str, str] | None = None,
    replace_table: bool = False,
    statement: str = "",
) -> int:
    """Clone ``source`` at ``version`` (default: the newest) to
    ``target_root``, no file copied: its version 0, or with ``replace_table`` and a table there,
    one new version of that table whose state is the clone's (its history stays, as Delta's
    CREATE OR REPLACE ... CLONE). ``TableAlreadyExists`` if a table is there and not replaced.
    The version committed."""
    what = statement or f"SHALLOW CLONE {source.root}"
    io, root = source.io, normalize(target_root)
    if _store_of(root) != _store_of(source.root):
        raise TabletsError(
            f"{what}: the clone's location {root} is on another store than its source {source.root}",
            help="Put the clone on the same file system or bucket as its source (a shallow clone references its files).",
        )
    if root == source.root or root.startswith(source.root.rstrip("/") + "/"):
        raise TabletsError(
            f"{what}: the clone's location {root} is inside its source's root", help="Use another location."
        )
    old = log.load_snapshot(io, root) if log.has_version(io, root) else None
    if old is not None and not replace_table:
        raise TableAlreadyExists(f"{what}: a tablet table already exists at {root}")
    snap = source.snapshot(version)
    if properties:
        check_properties(properties, snap.metadata.column_names, what)
    clone_id = old.metadata.table_id if old is not None else new_id()
    actions = clone_actions(source.root, snap, clone_id, properties)
    if old is not None:  # keep ids never given twice; drop every tablet the table had
        meta = actions[0]
        assert isinstance(meta, Metadata)
        actions[0] = replace(meta, max_column_id=max(meta.max_column_id, old.metadata.max_column_id))
        actions[1:1] = [RemoveTablet(t) for t in old.tablets]
    files = [a.path for a in actions if isinstance(a, AddTablet | SetDV)]
    owners = sorted({owner_root(p) for p in files} | {source.root})
    body = json.dumps(
        {
            "root": root,
            "source": source.root,
            "source_version": snap.version,
            "created_ms": int(time.time() * 1000),
        }
    ).encode()
    for owner in owners:  # first: a VACUUM of an owner that starts from now on keeps these files
        source.io.write(_marker(owner, clone_id), body, sync=True)
    params = {"source": source.root, "source_table_id": snap.metadata.table_id, "source_version": str(snap.version)}
    metrics = {
        "num_tablets": float(len(snap.tablets)),
        "source_table_size": float(sum(st.add.bytes for st in snap.tablets.values())),
    }
    try:
        for owner in owners:  # a VACUUM already deleting (its marker up), or files already gone
            vacuum.check_foreign(source.io, owner, [p for p in files if owner_root(p) == owner], what)
        if old is not None:
            handle = transaction.begin(
                old,
                root,
                CLONE,
                delete_from=(),
                read_tablets=old.tablets.keys(),
                reads_appends=True,
                io=io,
            )
            committed = transaction.commit(handle, [], extra_actions=actions, parameters=params, metrics=metrics)
            assert committed is not None
            return committed
        info = CommitInfo(CLONE, new_id(), int(time.time() * 1000), -1, tuple(params.items()), tuple(metrics.items()))
        info = replace(info, state=log.apply_version(None, 0, actions).summary().record())
        after = log.apply_version(None, 0, [*actions, info])
        if not log.write_version(io, root, None, after, [*actions, info]):
            raise TableAlreadyExists(f"{what}: a tablet table was created at {root} concurrently")
    except BaseException:
        if old is None:
            for owner in owners:
                source.io.delete(_marker(owner, clone_id))
        raise
    return 0


def _store_of(root: str) -> str:
    if is_local(root):
        return "file"
    scheme, rest = root.split("://", 1)
    return f"{scheme_of(root)}://{rest.split('/', 1)[0]}"


def clones(io: FileIO, root: str) -> list[tuple[str, dict[str, object]]]:
    """The clones registered in ``root``: (marker path, marker body)."""
    out = []
    for f in io.list(join(root, CLONES_DIR)):
        if not f.name.endswith(".json"):
            continue
        try:
            body = json.loads(io.read(f.path))
        except (FileNotFoundError, ValueError):
            continue
        if isinstance(body, dict) and isinstance(body.get("root"), str):
            out.append((f.path, {**body, "_mtime_ms": f.mtime_ms}))
    return out


def _files(snap: Snapshot) -> Iterable[str]:
    for st in snap.tablets.values():
        yield st.add.path
        if st.dv is not None:
            yield st.dv.path


def kept_by_clones(io: FileIO, root: str, cutoff_ms: float, *, all_versions: bool = False) -> set[str]:
    """The files of ``root`` (paths relative to it) that its live clones reference: in every
    version committed at or after ``cutoff_ms`` and in the newest (every version with
    ``all_versions``). Markers of clones that are gone are removed."""
    mine = normalize(root).rstrip("/") + "/"

    def here(paths: Iterable[str]) -> set[str]:
        return {p[len(mine) :] for p in paths if p.startswith(mine)}

    keep: set[str] = set()
    for marker, body in clones(io, root):
        croot = str(body["root"])
        try:
            versions, _ = log.list_log(io, croot, complete=True)
        except TabletsError:
            versions = []
        if not versions:
            age = time.time() * 1000 - float(body.get("created_ms", body["_mtime_ms"]))  # type: ignore[arg-type]
            v, src = body.get("source_version"), body.get("source")
            if age < CREATING_MS and isinstance(v, int) and isinstance(src, str):
                # being created: keep what it clones (its source's files are relative to that root)
                with contextlib.suppress(TabletsError):
                    snap0 = log.load_snapshot(io, src, v)
                    keep |= here(join(src, p) for p in _files(snap0))
            elif age >= CREATING_MS:
                io.delete(marker)  # the clone was dropped
            continue
        for v, actions, snap in log.walk(io, croot, versions, None):
            ts = next((a.timestamp_ms for a in actions if isinstance(a, CommitInfo)), 0)
            if all_versions or ts >= cutoff_ms or v == versions[-1]:
                keep |= here(_files(snap))
    return keep


def drop(table: Table) -> None:
    """DROP of ``table``: its own markers in the tables it clones go; with no live clone of its
    own the root goes whole, else its log and the files no clone references (every version of
    theirs), and its ``_clones/`` stay."""
    io, root = table.io, table.root
    try:
        snap = table.snapshot()
        meta_id = snap.metadata.table_id
        owners = {owner_root(p) for p in _files(snap) if is_absolute(p)}
        for owner in owners:
            io.delete(_marker(owner, meta_id))
            if not clones(io, owner) and not log.has_version(io, normalize(owner)):
                io.delete_tree(owner)  # a dropped source kept these files for its last clone
    except TabletsError:
        pass  # no readable log: nothing of it to unregister
    keep = kept_by_clones(io, root, 0.0, all_versions=True)
    if not keep:
        io.delete_tree(root)
        return
    for sub in ("tablets", "dv"):
        for f in io.list(join(root, sub)):
            if f"{sub}/{f.name}" not in keep:
                io.delete(f.path)
    for sub in (log.LOG_DIR, log.AUX_DIR, "_log"):  # nothing a Delta reader opens as the dropped table
        io.delete_tree(join(root, sub))
