"""Reading a version of a tablet table: Delta's actions back into tablets' (docs/FORMAT.md).

A version is ``_delta_log/<version>.json``, whoever wrote it. Lines tablets wrote carry what
Delta has no field for (``add.tags``, ``metaData.configuration``, ``commitInfo``), and read
back exactly as committed. Lines another Delta writer wrote (delta-rs appends, a delete with
deletion vectors as Delta Spark writes one) read as a concurrent commit like any other: a file
without tablets' tags gets the statistics Delta's ``stats`` give (bounds only where both formats
agree), a vector without a checksum is checked by reading it. A version that uses a feature
tablets does not maintain (partition columns, change data feed, row tracking, ...) is refused by
name (``FormatError``), never read half-way.

Decoding is per file, against the state before it: Delta names a file by its path (and its
vector), tablets by the tablet id (the file name without ``.parquet``), and a file re-added
with the same statistics and a new vector is a ``set_dv``.
"""

from __future__ import annotations

import contextlib
import functools
import json
import uuid
import zlib
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, urlparse

from tablets.exceptions import FormatError, SchemaMismatch
from tablets.storage.actions import Action, AddTablet, ColumnStats, CommitInfo, Metadata, RemoveTablet, SetDV
from tablets.storage.delta_log import (
    ADOPTED,
    COLUMN_IDS,
    COMMIT_KEY,
    DV_HEADER,
    ENGINE,
    FORMAT_KEY,
    KEY_COLUMNS,
    LOG_KEYS,
    MAX_ID,
    TAG_DV_CHECKSUM,
    TAG_STATS,
    TAG_TXID,
    z85_decode,
)
from tablets.storage.delta_schema import MAPPING_MODE, MAX_COLUMN_ID, field_metadata_keys, from_delta
from tablets.storage.fileio import FileIO, basename, join
from tablets.storage.properties import DELTA_FEATURES
from tablets.storage.snapshot import TabletState
from tablets.storage.types import TYPE_ALIASES

# what tablets maintains when it writes: a version needing anything else is refused
READER_FEATURES = {"deletionVectors", "columnMapping", "timestampNtz", "typeWidening"}
WRITER_FEATURES = READER_FEATURES | {
    "appendOnly",
    "invariants",
    "checkConstraints",
    "changeDataFeed",
    "generatedColumns",
}
_ADDED_BY_US = {"delta.enableDeletionVectors", "delta.enableTypeWidening"}
_STATS_TYPES = {"tinyint", "smallint", "int", "bigint", "date"}  # bounds taken as Delta wrote them
_STATS_STRING_MAX = 31  # delta-rs and Delta Spark truncate longer strings (a prefix is no upper bound)
HELP = (
    "tablets writes only Delta tables whose features it maintains; read this table with a Delta reader, "
    "or copy its rows into a new tablet table (CREATE TABLE ... USING tablets AS SELECT ...)."
)


def refuse(root: str, feature: str) -> FormatError:
    return FormatError(f"the Delta table at {root} uses {feature}, which tablets does not write", help=HELP)


def check_protocol(root: str, p: dict[str, Any]) -> None:
    reader, writer = int(p.get("minReaderVersion", 1)), int(p.get("minWriterVersion", 2))
    if reader > 3 or writer > 7:
        raise refuse(root, f"protocol version reader {reader} / writer {writer}")
    unknown = sorted(set(p.get("readerFeatures") or ()) - READER_FEATURES)
    unknown += sorted(set(p.get("writerFeatures") or ()) - WRITER_FEATURES - set(unknown))
    if unknown:
        raise refuse(root, "the table feature(s) " + ", ".join(unknown))


def _true(config: Mapping[str, Any], key: str) -> bool:
    return str(config.get(key, "false")).strip().lower() == "true"


def check_metadata(root: str, m: dict[str, Any]) -> None:
    config = m.get("configuration") or {}
    if m.get("partitionColumns"):
        raise refuse(root, "partition columns (" + ", ".join(m["partitionColumns"]) + ")")
    for key, feature in DELTA_FEATURES.items():
        if _true(config, key):
            raise refuse(root, feature)
    # CHECK constraints are enforced on every write (tablets.engine.constraints): kept when
    # their expressions parse as Spark SQL, refused by name otherwise
    bad = sorted(k for k, v in config.items() if k.startswith("delta.constraints.") and not _parses(str(v)))
    if bad:
        raise refuse(root, "checkConstraints whose expressions tablets cannot parse (" + ", ".join(bad) + ")")
    if config.get(MAPPING_MODE, "none") not in ("none", "name"):
        raise refuse(root, f"column mapping mode {config[MAPPING_MODE]!r}")
    keys = field_metadata_keys(m["schemaString"])
    for key, feature in (
        ("delta.generationExpression", "generatedColumns"),
        ("delta.invariants", "invariants"),
        ("delta.identity.start", "identityColumns"),
        ("CURRENT_DEFAULT", "allowColumnDefaults"),
    ):
        if key in keys:
            raise refuse(root, feature)


def _parses(expression: str) -> bool:
    import sqlglot  # here: the executors' side of storage runs without sqlglot (the worker extra)

    try:
        return sqlglot.parse_one(expression, read="spark") is not None
    except sqlglot.errors.SqlglotError:
        return False


# --- lines ---------------------------------------------------------------------------------


def parse_lines(data: bytes, where: str) -> list[dict[str, Any]]:
    """The actions of a version file: one JSON object per line, each with one key. An empty
    file, bytes that are not UTF-8 and lines that are not such objects are a ``FormatError``
    naming the file (Delta writers need not end the last line with a newline)."""
    try:
        text = data.decode()
    except UnicodeDecodeError as e:
        raise FormatError(f"log {where}: not UTF-8 text (byte {e.start} is {data[e.start : e.start + 1]!r})") from None
    lines = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            ((_, body),) = obj.items()
        except (ValueError, AttributeError) as e:
            raise FormatError(f"log {where}: unreadable action line {line[:80]!r} ({e})") from None
        if not isinstance(body, dict):
            raise FormatError(f"log {where}: malformed action line {line[:80]!r}")
        lines.append(obj)
    if not lines:
        raise FormatError(f"log {where}: an empty version file (a version holds at least its commitInfo)")
    return lines


def is_ours(lines: list[dict[str, Any]]) -> bool:
    return any(line.get("commitInfo", {}).get("engineInfo") == ENGINE for line in lines)


# --- actions -------------------------------------------------------------------------------


def tablet_id(path: str) -> str:
    return basename(path).removesuffix(".parquet")


def file_path(root: str, uri: str) -> str:
    """A Delta ``path`` as tablets names files: relative to the root, or a full location."""
    if "://" not in uri and not uri.startswith("/"):
        return unquote(uri)
    if uri.startswith("file:"):
        uri = unquote(urlparse(uri).path)
    prefix = root.rstrip("/") + "/"
    return uri[len(prefix) :] if uri.startswith(prefix) else uri


def _delta_stats(meta: Metadata, raw: str | None) -> tuple[tuple[str, ColumnStats], ...]:
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


# A file's add is written again with each deletion vector it gets (Delta's remove + add), with the
# same stats: a replay parses each stats text once
@functools.lru_cache(maxsize=4096)
def _num_records(raw: str) -> int | None:
    return json.loads(raw).get("numRecords")


@functools.lru_cache(maxsize=4096)
def _our_stats(text: str) -> tuple[tuple[str, ColumnStats], ...]:
    return tuple((n, ColumnStats.from_json(s)) for n, s in json.loads(text))


def _rows(io: FileIO, root: str, path: str, raw: str | None) -> int:
    rows = _num_records(raw) if raw else None
    if rows is None:  # a writer that keeps no stats: the footer says
        import pyarrow.parquet as pq

        rows = pq.read_metadata(io.open_input(join(root, path))).num_rows
    return int(rows)


def decode_add(io: FileIO, root: str, meta: Metadata, body: dict[str, Any]) -> TabletState:
    path = file_path(root, body["path"])
    tags = body.get("tags") or {}
    raw = body.get("stats")
    stats = _our_stats(tags[TAG_STATS]) if TAG_STATS in tags else _delta_stats(meta, raw)
    add = AddTablet(tablet_id(path), path, _rows(io, root, path, raw), int(body["size"]), stats, tags.get(TAG_TXID, ""))
    dv = body.get("deletionVector")
    return TabletState(add, decode_dv(io, root, add.tablet_id, dv, tags.get(TAG_DV_CHECKSUM)) if dv else None)


def decode_dv(io: FileIO, root: str, tid: str, d: dict[str, Any], checksum: str | None) -> SetDV:
    """A Delta ``deletionVector`` as a ``set_dv``. Tablets reads a vector in place when it is
    the only one in its file (``offset`` 1: the layout tablets writes, FORMAT_DV.md); inline
    vectors and vectors packed several to a file are refused by name."""
    kind, where = d.get("storageType"), str(d.get("pathOrInlineDv", ""))
    offset = int(d.get("offset") or 1)
    if kind == "i" or offset != 1:
        what = "an inline deletion vector" if kind == "i" else f"a deletion vector at offset {offset} of its file"
        raise refuse(root, f"{what} (tablet {tid})")
    if kind == "u":
        prefix, uid = where[:-20], uuid.UUID(bytes=z85_decode(where[-20:]))
        path = f"{prefix}/deletion_vector_{uid}.bin" if prefix else f"deletion_vector_{uid}.bin"
    elif kind == "p":
        path = file_path(root, where)
    else:
        raise FormatError(f"deletion vector of {tid}: unknown storage type {kind!r}")
    size = int(d["sizeInBytes"]) + DV_HEADER
    if checksum is None:  # another writer's vector: its checksum is the file's, when it is the whole file
        try:
            data = io.read(join(root, path))
        except FileNotFoundError:
            raise FormatError(f"deletion vector {join(root, path)} is missing") from None
        if len(data) != size:
            raise refuse(root, f"a deletion vector that shares its file with others ({path}, tablet {tid})")
        checksum = f"{zlib.crc32(data):08x}"
    return SetDV(tid, path, int(d["cardinality"]), size, checksum)


def decode_metadata(m: dict[str, Any], before: Metadata | None) -> Metadata:
    config = {k: str(v) for k, v in (m.get("configuration") or {}).items()}
    mode = config.get(MAPPING_MODE, "none")
    cols = from_delta(m["schemaString"], mode)
    names = [c[0] for c in cols.schema]
    ids, known = cols.column_ids, mode == "name"
    if mode != "name" and COLUMN_IDS in config:
        listed = tuple(int(i) for i in json.loads(config[COLUMN_IDS]))
        if len(listed) == len(ids):
            ids, known = listed, True
    keys = tuple(json.loads(config[KEY_COLUMNS])) if KEY_COLUMNS in config else (before.key_columns if before else ())
    table_id = str(m.get("id") or "")
    with contextlib.suppress(ValueError):
        table_id = uuid.UUID(table_id).hex
    dropped = {*LOG_KEYS, *_ADDED_BY_US}
    return Metadata(
        table_id=table_id,
        schema=cols.schema,
        physical_names=cols.physical_names,
        column_ids=ids,
        ids_in_log=known,
        max_column_id=int(config.get(MAX_ID) or config.get(MAX_COLUMN_ID) or 0),
        key_columns=tuple(k for k in keys if k in names),
        properties=tuple(
            sorted((k, v) for k, v in config.items() if k not in dropped and not k.startswith("delta.columnMapping."))
        ),
        created_ms=int(m.get("createdTime") or 0),
        comment=m.get("description") or None,
        column_comments=cols.comments,
        type_changes=cols.type_changes,
        owned=FORMAT_KEY in config,
    )


def decode_commit(body: dict[str, Any] | None, version: int) -> CommitInfo:
    body = body or {}
    ours = body.get("engineInfo") == ENGINE
    params = {k: v if isinstance(v, str) else json.dumps(v) for k, v in (body.get("operationParameters") or {}).items()}
    if not ours:
        params[ADOPTED] = str(body.get("engineInfo") or body.get("clientVersion") or "unknown")
    metrics = {
        k: float(v)
        for k, v in (body.get("operationMetrics") or {}).items()
        if isinstance(v, (int, float)) and not isinstance(v, bool)
    }
    read = body.get("readVersion")
    state = (body.get(COMMIT_KEY) or {}).get("state") if ours else None
    return CommitInfo(
        operation=str(body.get("operation") or "UNKNOWN"),
        txid=str(body.get("txnId") or ""),
        timestamp_ms=int(body.get("timestamp") or 0),
        read_version=int(read) if read is not None else version - 1,
        parameters=tuple(sorted(params.items())),
        metrics=tuple(sorted(metrics.items())),
        state=tuple((str(k), v) for k, v in state) if state else (),
    )


def decode_version(
    io: FileIO,
    root: str,
    version: int,
    lines: list[dict[str, Any]],
    before: Metadata | None,
    live: Mapping[str, TabletState],
    where: str,
) -> tuple[Action, ...]:
    """Tablets' actions of one version's lines, on the state before it (its metadata and live
    tablets): the metadata first, then each file's change in the order of the file, the commit
    last."""
    ours = is_ours(lines)
    meta, info = before, None
    out: list[Action] = []
    for line in lines:
        ((kind, body),) = line.items()
        if kind == "metaData":
            if not ours:
                check_metadata(root, body)
            try:
                meta = decode_metadata(body, meta)
            except (SchemaMismatch, KeyError, ValueError, TypeError) as e:
                raise FormatError(f"log {where}: unreadable metaData ({e})") from None
            out.append(meta)
        elif kind == "protocol" and not ours:
            check_protocol(root, body)
        elif kind == "commitInfo":
            info = body
        elif kind in ("cdc",):
            raise refuse(root, "changeDataFeed (cdc files)")
        elif kind in ("domainMetadata", "sidecar", "checkpointMetadata"):
            raise refuse(root, f"{kind} actions")
    files: dict[str, TabletState | None] = {}  # tablet id -> its state after this version (None: removed)
    for line in lines:
        ((kind, body),) = line.items()
        if kind not in ("add", "remove"):
            continue
        if meta is None:
            raise FormatError(f"log {where}: version {version} adds a file before any metaData")
        try:
            if kind == "add":
                st = decode_add(io, root, meta, body)
                files[st.tablet_id] = st
            else:
                files.setdefault(tablet_id(file_path(root, body["path"])), None)
        except (KeyError, ValueError, TypeError) as e:
            raise FormatError(f"log {where}: malformed {kind} action ({e})") from None
    for tid, new in files.items():
        old = live.get(tid)
        if old == new:
            continue
        if new is None:
            if old is not None:
                out.append(RemoveTablet(tid))
            continue
        if old is not None and new.add.path != old.add.path:
            raise FormatError(
                f"log {where}: two live data files named {basename(new.add.path)} ({old.add.path}, {new.add.path})",
                help=HELP,
            )
        if old is not None and old.dv == new.dv:  # the same file and vector, restated
            out.append(new.add)
            continue
        if old is not None and old.add == new.add and new.dv is not None:
            out.append(new.dv)
            continue
        if old is not None:
            out.append(RemoveTablet(tid))
        out.append(new.add)
        if new.dv is not None:
            out.append(new.dv)
    out.append(decode_commit(info, version))
    return tuple(out)


__all__ = ["check_metadata", "check_protocol", "decode_version", "is_ours", "parse_lines", "refuse"]
