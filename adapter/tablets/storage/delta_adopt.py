"""Adopting a Delta table written by another engine (delta-rs, Delta Spark): ``_log`` is built
from its ``_delta_log``, version for version (Delta version v becomes our version v), so time
travel and history give the same versions in both, and our next commit publishes the next
Delta version (``delta_log``).

Before anything is written, the whole Delta log is read and every protocol and metadata in it
checked: a table using a feature tablets does not maintain (partition columns, change data
feed, row tracking, CHECK constraints that do not parse, generated or identity columns, append-only, column
mapping by id, an unknown reader or writer feature...) is refused with a ``FormatError`` naming
the feature, and nothing is written. Data files stay where they are: an ``add_tablet`` names
the Delta file (tablet id = its file name without ``.parquet``). Deletion vectors of Delta
files are copied into DV files of ours (one per file, our byte layout; a Delta DV file may hold
several).
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Iterable
from dataclasses import replace
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tablets.exceptions import FormatError, KeyViolation, SchemaMismatch, TableNotFound
from tablets.storage import delta_checkpoint, log
from tablets.storage.actions import (
    Action,
    AddTablet,
    ColumnStats,
    CommitInfo,
    Metadata,
    RemoveTablet,
    SetDV,
)
from tablets.storage.delta_log import ADOPTED, DELTA_LOG, delta_dir, z85_decode
from tablets.storage.delta_schema import (
    FIELD_ID,
    MAPPING_MODE,
    MAX_COLUMN_ID,
    field_metadata_keys,
    from_delta,
)
from tablets.storage.dv import decode, write_dv
from tablets.storage.fileio import FileIO, basename, io_for, join
from tablets.storage.snapshot import Snapshot, apply_version
from tablets.storage.tablet import dv_relpath, new_id, read_tablet
from tablets.storage.types import TYPE_ALIASES, schema_to_arrow

_JSON_RE = re.compile(r"^(\d{20})\.json$")
_CHECKPOINT_RE = re.compile(r"^(\d{20})\.checkpoint\.parquet$")
# what tablets maintains when it writes: a Delta table needing anything else is refused
READER_FEATURES = {"deletionVectors", "columnMapping", "timestampNtz", "typeWidening"}
WRITER_FEATURES = READER_FEATURES | {
    "appendOnly",
    "invariants",
    "checkConstraints",
    "changeDataFeed",
    "generatedColumns",
}
_STATS_TYPES = {"tinyint", "smallint", "int", "bigint", "date"}  # bounds taken as Delta wrote them
_STATS_STRING_MAX = 31  # delta-rs and Delta Spark truncate longer strings (a prefix is no upper bound)
HELP = (
    "tablets writes only Delta tables whose features it maintains; read this table with a Delta reader, "
    "or copy its rows into a new tablet table (CREATE TABLE ... USING tablets AS SELECT ...)."
)


def is_delta_table(io: FileIO, root: str) -> bool:
    return any(_JSON_RE.match(f.name) or _CHECKPOINT_RE.match(f.name) for f in io.list(delta_dir(root)))


def _refuse(root: str, feature: str) -> FormatError:
    return FormatError(f"the Delta table at {root} uses {feature}, which tablets does not write", help=HELP)


def check_protocol(root: str, p: dict[str, Any]) -> None:
    reader, writer = int(p.get("minReaderVersion", 1)), int(p.get("minWriterVersion", 2))
    if reader > 3 or writer > 7:
        raise _refuse(root, f"protocol version reader {reader} / writer {writer}")
    unknown = sorted(set(p.get("readerFeatures") or ()) - READER_FEATURES)
    unknown += sorted(set(p.get("writerFeatures") or ()) - WRITER_FEATURES - set(unknown))
    if unknown:
        raise _refuse(root, "the table feature(s) " + ", ".join(unknown))


def _true(config: dict[str, str], key: str) -> bool:
    return str(config.get(key, "false")).strip().lower() == "true"


def check_metadata(root: str, m: dict[str, Any]) -> None:
    config = m.get("configuration") or {}
    if m.get("partitionColumns"):
        raise _refuse(root, "partition columns (" + ", ".join(m["partitionColumns"]) + ")")
    for key, feature in (
        ("delta.enableChangeDataFeed", "changeDataFeed (delta.enableChangeDataFeed)"),
        ("delta.enableRowTracking", "rowTracking (delta.enableRowTracking)"),
        ("delta.appendOnly", "appendOnly (delta.appendOnly)"),
    ):
        if _true(config, key):
            raise _refuse(root, feature)
    # CHECK constraints are enforced on every write (tablets.engine.constraints): adopted when
    # their expressions parse as Spark SQL, refused by name otherwise
    bad = sorted(k for k, v in config.items() if k.startswith("delta.constraints.") and not _parses(str(v)))
    if bad:
        raise _refuse(root, "checkConstraints whose expressions tablets cannot parse (" + ", ".join(bad) + ")")
    if config.get(MAPPING_MODE, "none") not in ("none", "name"):
        raise _refuse(root, f"column mapping mode {config[MAPPING_MODE]!r}")
    keys = field_metadata_keys(m["schemaString"])
    for key, feature in (
        ("delta.generationExpression", "generatedColumns"),
        ("delta.invariants", "invariants"),
        ("delta.identity.start", "identityColumns"),
        ("CURRENT_DEFAULT", "allowColumnDefaults"),
    ):
        if key in keys:
            raise _refuse(root, feature)


def _parses(expression: str) -> bool:
    import sqlglot  # here: the executors' side of storage runs without sqlglot (the worker extra)

    try:
        return sqlglot.parse_one(expression, read="spark") is not None
    except sqlglot.errors.SqlglotError:
        return False


def _tablet_id(path: str) -> str:
    return basename(unquote(path)).removesuffix(".parquet")


def _stats(meta: Metadata, raw: str | None) -> tuple[tuple[str, ColumnStats], ...]:
    """Delta's stats as ours, keyed by physical name like Delta's: bounds only where both
    formats agree exactly (integers, dates, short strings); null counts for every column."""
    if not raw:
        return ()
    body = json.loads(raw)
    types = {
        p: TYPE_ALIASES.get(t.lower(), t.lower()) for (_, t, _), p in zip(meta.schema, meta.physical_names, strict=True)
    }
    mins, maxs, nulls = body.get("minValues") or {}, body.get("maxValues") or {}, body.get("nullCount") or {}
    out = []
    for p, t in types.items():
        if p not in nulls or isinstance(nulls[p], dict):
            continue
        lo, hi = mins.get(p), maxs.get(p)
        ok = t in _STATS_TYPES or (
            t == "string" and all(isinstance(v, str) and len(v) < _STATS_STRING_MAX for v in (lo, hi))
        )
        out.append((p, ColumnStats(lo if ok else None, hi if ok else None, int(nulls[p]))))
    return tuple(out)


def _dv(io: FileIO, root: str, tablet_id: str, d: dict[str, Any]) -> SetDV:
    """A Delta deletion vector copied into a DV file of ours (checked on the way: CRC, bitmap)."""
    kind, where = d["storageType"], d["pathOrInlineDv"]
    size = int(d["sizeInBytes"])
    if kind == "i":
        data = z85_decode(where)[:size]
        blob = size.to_bytes(4, "big") + data + zlib.crc32(data).to_bytes(4, "big")
    else:
        if kind == "u":
            prefix, uid = where[:-20], z85_decode(where[-20:]).hex()
            name = f"deletion_vector_{uid[:8]}-{uid[8:12]}-{uid[12:16]}-{uid[16:20]}-{uid[20:]}.bin"
            path = join(root, prefix, name) if prefix else join(root, name)
            src = io
        elif kind == "p":
            path, src = where, io if where.startswith(root) else io_for(where)
        else:
            raise FormatError(f"deletion vector of {tablet_id}: unknown storage type {kind!r}")
        offset = int(d.get("offset") or 0)
        blob = src.read(path)[offset : offset + 8 + size]
    bitmap = decode(b"\x01" + blob, f"deletion vector of {tablet_id} ({where})")
    if len(bitmap) != int(d["cardinality"]):
        raise FormatError(f"deletion vector of {tablet_id}: {len(bitmap)} rows, the Delta log says {d['cardinality']}")
    rel = dv_relpath(tablet_id, new_id())
    info = write_dv(io, join(root, rel), bitmap)
    return SetDV(tablet_id, rel, info.cardinality, info.size, info.checksum)


def _metadata(m: dict[str, Any], before: Metadata | None) -> Metadata:
    config = {k: str(v) for k, v in (m.get("configuration") or {}).items()}
    cols = from_delta(m["schemaString"], config.get(MAPPING_MODE, "none"))
    return Metadata(
        table_id=m.get("id") or new_id(),
        schema=cols.schema,
        physical_names=cols.physical_names,
        column_ids=cols.column_ids,
        max_column_id=int(config.get(MAX_COLUMN_ID, 0)),
        key_columns=tuple(k for k in (before.key_columns if before else ()) if k in {c[0] for c in cols.schema}),
        properties=tuple(sorted((k, v) for k, v in config.items() if not k.startswith("delta.columnMapping."))),
        created_ms=int(m.get("createdTime") or 0),
        comment=m.get("description") or None,
        column_comments=cols.comments,
        type_changes=cols.type_changes,
    )


def translate(
    io: FileIO, root: str, version: int, lines: Iterable[dict[str, Any]], before: Snapshot | None
) -> list[Action]:
    """Our actions of one Delta version (its commitInfo last, with a placeholder state)."""
    out: list[Action] = []
    meta = before.metadata if before else None
    live = {t: st.add.path for t, st in before.tablets.items()} if before else {}
    info: dict[str, Any] = {}
    # the order of actions within a Delta version means nothing: the metadata first
    for line in sorted(lines, key=lambda a: "metaData" not in a):
        ((kind, body),) = line.items()
        if kind == "metaData":
            meta = _metadata(body, meta)
            out.append(meta)
        elif kind == "add":
            if meta is None:
                raise FormatError(f"Delta table {root}: version {version} adds a file before any metaData")
            tid = _tablet_id(body["path"])
            path = unquote(body["path"])
            if live.get(tid, path) != path:  # the engine's scan knows a file by its name alone
                raise FormatError(
                    f"the Delta table at {root} has two live data files named {basename(path)} ({live[tid]}, {path})",
                    help=HELP,
                )
            stats = _stats(meta, body.get("stats"))
            rows = json.loads(body["stats"]).get("numRecords") if body.get("stats") else None
            if rows is None:
                rows = pq.read_metadata(io.open_input(join(root, path))).num_rows
            out.append(AddTablet(tid, path, int(rows), int(body["size"]), stats, ""))
            live[tid] = path
            if body.get("deletionVector"):
                out.append(_dv(io, root, tid, body["deletionVector"]))
        elif kind == "remove":
            tid = _tablet_id(body["path"])
            if tid in live:
                out.append(RemoveTablet(tid))
                del live[tid]
        elif kind == "commitInfo":
            info = body
        elif kind == "cdc":
            raise _refuse(root, "changeDataFeed (cdc files)")
        elif kind in ("domainMetadata", "sidecar", "checkpointMetadata"):
            raise _refuse(root, f"{kind} actions")
    params = {k: v if isinstance(v, str) else json.dumps(v) for k, v in (info.get("operationParameters") or {}).items()}
    params[ADOPTED] = str(info.get("engineInfo") or info.get("clientVersion") or "unknown")
    metrics = {k: float(v) for k, v in (info.get("operationMetrics") or {}).items() if isinstance(v, (int, float))}
    out.append(
        CommitInfo(
            operation=str(info.get("operation") or "UNKNOWN"),
            txid=new_id(),
            timestamp_ms=int(info.get("timestamp") or 0),
            read_version=version - 1,
            parameters=tuple(sorted(params.items())),
            metrics=tuple(sorted(metrics.items())),
        )
    )
    return out


def _read_versions(io: FileIO, root: str) -> tuple[int, list[tuple[int, list[dict[str, Any]]]]]:
    """(first version, [(version, its Delta actions)]): from version 0, or from the newest
    checkpoint when older versions were cleaned up (the checkpoint's actions as its version)."""
    names = [f.name for f in io.list(delta_dir(root))]
    versions = sorted(int(m.group(1)) for n in names if (m := _JSON_RE.match(n)))
    checkpoints = sorted(int(m.group(1)) for n in names if (m := _CHECKPOINT_RE.match(n)))
    if not versions and not checkpoints:
        raise TableNotFound(f"no Delta table at {root} (no {DELTA_LOG}/ with a version)")
    newest = max(versions[-1] if versions else -1, checkpoints[-1] if checkpoints else -1)
    have = set(versions)
    if all(v in have for v in range(newest + 1)):
        start = 0
    else:  # older versions cleaned up: the newest checkpoint with every version after it
        whole = [c for c in checkpoints if all(v in have for v in range(c + 1, newest + 1))]
        if not whole:
            missing = [v for v in range(newest + 1) if v not in have]
            raise FormatError(
                f"the Delta log of {root} is missing version(s) {missing[:5]} and no checkpoint covers them"
            )
        start = whole[-1]
    out = []
    if start > 0:
        out.append((start, delta_checkpoint.read(io, root, start)))
    for v in range(start + (start > 0), newest + 1):
        text = io.read(join(delta_dir(root), f"{v:020d}.json")).decode()
        out.append((v, [json.loads(line) for line in text.splitlines() if line.strip()]))
    return start, out


def _recorded(before: Snapshot | None, version: int, actions: list[Action]) -> tuple[Snapshot, list[Action]]:
    """The state after ``actions`` (``translate``'s: its commit last) and the actions with the
    commit recording that state, as our writers record theirs."""
    info = actions[-1]
    assert isinstance(info, CommitInfo)
    after = apply_version(before, version, actions)
    info = replace(info, state=after.summary().record())
    return replace(after, commit=info), [*actions[:-1], info]


def _check_keys(io: FileIO, root: str, snap: Snapshot, keys: tuple[str, ...]) -> None:
    """The key tablets is asked to keep must already hold: no two live rows with one key."""
    missing = [k for k in keys if k not in snap.metadata.column_names]
    if missing:
        raise SchemaMismatch(
            f"key column(s) {missing} are not columns of the Delta table at {root}",
            help=f"Name columns of the table ({', '.join(snap.metadata.column_names)}).",
        )
    schema = schema_to_arrow(snap.metadata.schema)
    parts = [
        read_tablet(io, root, st.add, st.dv, schema, list(keys), mapping=snap.metadata.mapping)
        for st in snap.tablets.values()
    ]
    if not parts:
        return
    counts = pa.concat_tables(parts).group_by(list(keys)).aggregate([([], "count_all")])
    dups = counts.filter(pc.greater(counts.column("count_all"), 1))
    if dups.num_rows:
        raise KeyViolation(
            f"the Delta table at {root} has {dups.num_rows} key value(s) held by several rows "
            f"(e.g. {dups.slice(0, 1).to_pylist()[0]}), so ({', '.join(keys)}) is no key of it",
            help="Remove the duplicates first, or adopt the table without key_columns.",
        )


def adopt(io: FileIO, root: str, key_columns: tuple[str, ...] = ()) -> int:
    """Build ``_log`` from the Delta log at ``root``; the newest version. Refuses (nothing
    written) a table using a feature tablets does not maintain, and ``key_columns`` (the key
    tablets keeps from now on, fixed as at a creation) that the rows do not already hold."""
    start, versions = _read_versions(io, root)
    for _, lines in versions:
        for line in lines:
            if "protocol" in line:
                check_protocol(root, line["protocol"])
            if "metaData" in line:
                check_metadata(root, line["metaData"])
    snap: Snapshot | None = None
    staged: list[tuple[Snapshot, list[Action]]] = []
    for v, lines in versions:  # all of it in memory first: a refusal writes nothing
        actions = translate(io, root, v, lines, snap)
        if key_columns:
            actions = [replace(a, key_columns=tuple(key_columns)) if isinstance(a, Metadata) else a for a in actions]
        snap, actions = _recorded(snap, v, actions)
        staged.append((snap, actions))
    assert snap is not None
    if key_columns:
        _check_keys(io, root, snap, tuple(key_columns))
    for after, actions in staged:
        v = after.version
        if not log.write_version(io, root, v, actions):
            raise FormatError(
                f"the Delta table at {root} is being adopted by another writer (version {v} of _log exists)",
                help="Wait for it to finish, then use the table.",
            )
        if (v == start and start > 0) or (v and v % log.CHECKPOINT_INTERVAL == 0):
            log.write_checkpoint(io, root, after)  # (our log starts where Delta's does)
    return snap.version


def adopt_if_delta(io: FileIO, root: str, key_columns: tuple[str, ...] = ()) -> bool:
    """Adopt the Delta table at ``root`` if there is one and no tablet table yet (``CREATE
    TABLE ... LOCATION``, ``tablets.`/path` ``); False if there is none to adopt."""
    if log.has_version(io, root) or not is_delta_table(io, root):
        return False
    adopt(io, root, key_columns)
    return True


def take_in(io: FileIO, root: str, version: int, before: Snapshot) -> int:
    """Delta versions from ``version`` on that another Delta writer committed to this tablet
    table (delta-rs appends to a table with deletion vectors) and ``_log`` lacks: written into
    ``_log`` as adopted versions (``before`` is the state at ``version`` - 1), so the statement
    about to commit meets them as concurrent commits and the two logs never diverge. Features
    tablets does not maintain are refused as on adoption. The number taken in (one ``exists``
    when there are none)."""
    from tablets.storage.delta_log import ENGINE, delta_name  # (delta_log imports nothing of this)

    snap, taken = before, 0
    while io.exists(join(delta_dir(root), delta_name(version))) and not io.exists(log.version_path(root, version)):
        text = io.read(join(delta_dir(root), delta_name(version))).decode()
        lines = [json.loads(line) for line in text.splitlines() if line.strip()]
        if any(line.get("commitInfo", {}).get("engineInfo") == ENGINE for line in lines):
            break  # ours (its _log version is being written): nothing to take in
        for line in lines:
            if "protocol" in line:
                check_protocol(root, line["protocol"])
            if "metaData" in line:
                check_metadata(root, line["metaData"])
        after, actions = _recorded(snap, version, translate(io, root, version, lines, snap))
        if not log.write_version(io, root, version, actions):
            break  # another writer took it in
        snap, version, taken = after, version + 1, taken + 1
    return taken


__all__ = ["FIELD_ID", "adopt", "adopt_if_delta", "check_metadata", "check_protocol", "is_delta_table", "take_in"]
