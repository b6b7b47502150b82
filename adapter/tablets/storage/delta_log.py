"""Writing a version of a tablet table: Delta's actions, with what tablets adds to them
(docs/FORMAT.md). ``_delta_log/<version>.json`` is the table's only commit point; this module
turns one version's actions (``tablets.storage.actions``) into its lines, and
``tablets.storage.delta_codec`` reads them back.

Per version: the tablets whose state changed (``add_tablet``, ``remove_tablet``, ``set_dv``)
become Delta's ``remove`` of the old file state and ``add`` of the new one (a new deletion
vector is Delta's remove + add of the same path with the new ``deletionVector``; a tablet
restated with the same file and vector is an ``add`` with ``dataChange`` false, as Delta
updates a file's statistics); a ``metadata`` action and version 0 carry ``protocol`` and
``metaData``; ``commit_info`` becomes ``commitInfo``. What Delta has no field for travels in
the places the protocol gives a writer: ``add.tags`` (a tablet's statistics, its writer, its
vector's checksum), ``metaData.configuration`` (the key, field ids without column mapping) and
``commitInfo`` (the state record that proves checkpoints and replays).
"""

from __future__ import annotations

import functools
import json
import re
import uuid
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import quote

from tablets.storage import delta_checkpoint
from tablets.storage.actions import Action, AddTablet, CommitInfo, Metadata, RemoveTablet, SetDV
from tablets.storage.delta_schema import MAPPING_MODE, MAX_COLUMN_ID, DeltaSchema, to_delta
from tablets.storage.fileio import FileIO, is_local, join
from tablets.storage.snapshot import Snapshot, TabletState
from tablets.storage.tablet import ROW_ID
from tablets.storage.types import TYPE_ALIASES

DELTA_LOG = "_delta_log"
ENGINE = "dbt-tablets"
ADOPTED = "delta_adopted"  # commit_info parameter of versions another Delta writer committed
# what tablets keeps where Delta has no field of its own
TAG_STATS = "tablets.stats"  # add.tags: the tablet's statistics as tablets records them (JSON)
TAG_TXID = "tablets.txid"  # add.tags: the transaction that wrote it
TAG_DV_CHECKSUM = "tablets.dvChecksum"  # add.tags: CRC-32 of the whole DV file
FORMAT_KEY = "tablets.format"  # metaData.configuration: the table is a tablet table (this format)
FORMAT_VERSION = "2"
KEY_COLUMNS = "tablets.keyColumns"  # metaData.configuration: JSON list
COLUMN_IDS = "tablets.columnIds"  # metaData.configuration: JSON list (without column mapping)
MAX_ID = "tablets.maxColumnId"  # metaData.configuration: the highest field id ever given
LOG_KEYS = (FORMAT_KEY, KEY_COLUMNS, COLUMN_IDS, MAX_ID)
COMMIT_KEY = "tablets"  # commitInfo: {"state": [[name, value], ...]}
_JSON_RE = re.compile(r"^(\d{20})\.json$")
# a DV file whose name Delta's storage type 'u' can say: <table>/dv/deletion_vector_<uuid>.bin
DV_NAME = re.compile(r"^dv/deletion_vector_([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.bin$")
DV_HEADER = 9  # our DV file: version byte, size, ..., CRC: Delta's blob starts at byte 1 (FORMAT_DV.md)
_BOUNDED = {"tinyint", "smallint", "int", "bigint", "float", "double", "string", "date"}
_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_Z85_INDEX = {c: i for i, c in enumerate(_Z85)}


def z85_encode(data: bytes) -> str:
    """Z85 (ZeroMQ's base 85), which Delta uses for the UUID of a DV file name (16 bytes -> 20)."""
    out = []
    for i in range(0, len(data), 4):
        n = int.from_bytes(data[i : i + 4], "big")
        out.append("".join(_Z85[(n // 85**k) % 85] for k in range(4, -1, -1)))
    return "".join(out)


def z85_decode(text: str) -> bytes:
    out = bytearray()
    for i in range(0, len(text), 5):
        n = 0
        for c in text[i : i + 5]:
            n = n * 85 + _Z85_INDEX[c]
        out += n.to_bytes(4, "big")
    return bytes(out)


def delta_dir(root: str) -> str:
    return join(root, DELTA_LOG)


def delta_name(version: int) -> str:
    return f"{version:020d}.json"


def absolute_uri(path: str) -> str:
    return PurePosixPath(path).as_uri() if is_local(path) and path.startswith("/") else path


def path_uri(path: str) -> str:
    """A file's ``path`` in Delta's log: relative to the table root (URL-encoded), or, for a
    file of another table (a shallow clone's), an absolute URI with its scheme."""
    if "://" in path:
        return path
    if path.startswith("/"):
        return absolute_uri(path)
    return quote(path, safe="/")


def dv_descriptor(root: str, dv: SetDV) -> dict[str, Any]:
    """Delta's ``deletionVector`` for our DV file: storage type 'u' (relative, the UUID in Z85)
    where the file name is Delta's ``deletion_vector_<uuid>.bin``, else 'p' (its absolute URI,
    for DV files named before: such a table read by Delta must stay where it is)."""
    body: dict[str, Any] = {"offset": 1, "sizeInBytes": dv.size - DV_HEADER, "cardinality": dv.cardinality}
    m = DV_NAME.match(dv.path)
    if m:
        return {"storageType": "u", "pathOrInlineDv": "dv" + z85_encode(uuid.UUID(m.group(1)).bytes), **body}
    return {"storageType": "p", "pathOrInlineDv": path_uri(join(root, dv.path)), **body}


_INFINITE = (float("inf"), float("-inf"))


@functools.lru_cache(maxsize=16)
def _kinds(schema: tuple[tuple[str, str, bool], ...], physical: tuple[str, ...]) -> dict[str, tuple[bool, bool]]:
    """Per physical name of a top-level, non-nested column: (bounds written, floating)."""
    out = {}
    for (_, t, _), p in zip(schema, physical, strict=True):
        t = TYPE_ALIASES.get(t.lower(), t.lower())
        if "<" not in t:
            out[p] = (t in _BOUNDED, t in ("float", "double"))
    return out


def stats_json(meta: Metadata, add: AddTablet, has_dv: bool) -> str:
    """Delta's ``stats`` of a tablet: keyed by physical name (what column mapping wants, and the
    name itself without it). Bounds only for types whose JSON form Delta and tablets agree on
    (numbers, strings, dates); never the hidden row-id column. With a deletion vector the bounds
    still hold but are not tight (``tightBounds``)."""
    kinds = _kinds(meta.schema, meta.physical_names)
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, int] = {}
    for p, s in add.stats:
        kind = kinds.get(p)
        if kind is None or p == ROW_ID:
            continue
        nulls[p] = s.null_count
        lo, hi = s.min, s.max
        if kind[0] and lo is not None and hi is not None and not (kind[1] and (lo in _INFINITE or hi in _INFINITE)):
            mins[p], maxs[p] = lo, hi
    body = {"numRecords": add.rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls, "tightBounds": not has_dv}
    return json.dumps(body, separators=(",", ":"))


def protocol(ds: DeltaSchema) -> dict[str, Any]:
    features = ["deletionVectors"] + (["columnMapping"] if ds.mapping else []) + (["timestampNtz"] if ds.ntz else [])
    features += ["typeWidening"] if ds.widened else []
    return {
        "minReaderVersion": 3,
        "minWriterVersion": 7,
        "readerFeatures": sorted(features),
        "writerFeatures": sorted(features + (["checkConstraints"] if ds.checks else [])),
    }


def table_id(meta: Metadata) -> str:
    try:
        return str(uuid.UUID(meta.table_id))
    except ValueError:
        return meta.table_id


def metadata(meta: Metadata, ds: DeltaSchema) -> dict[str, Any]:
    config = {k: v for k, v in meta.properties if not k.startswith("delta.columnMapping.")}
    config["delta.enableDeletionVectors"] = "true"
    if ds.mapping:
        config[MAPPING_MODE], config[MAX_COLUMN_ID] = "name", str(ds.max_column_id)
    if ds.widened:
        config["delta.enableTypeWidening"] = "true"
    config[FORMAT_KEY] = FORMAT_VERSION
    if meta.key_columns:
        config[KEY_COLUMNS] = json.dumps(list(meta.key_columns))
    if not ds.mapping and meta.ids_in_log:  # (ids made up on reading a log without them are not recorded)
        config[COLUMN_IDS] = json.dumps(list(meta.column_ids))
    config[MAX_ID] = str(meta.max_column_id)
    body: dict[str, Any] = {
        "id": table_id(meta),
        "format": {"provider": "parquet", "options": {}},
        "schemaString": ds.schema_string,
        "partitionColumns": [],
        "configuration": config,
        "createdTime": meta.created_ms,
    }
    if meta.comment:
        body["description"] = meta.comment
    return body


def tags(st: TabletState) -> dict[str, str]:
    add = st.add
    out = {TAG_STATS: json.dumps([[n, s.to_json()] for n, s in add.stats], separators=(",", ":"))}
    if add.txid:
        out[TAG_TXID] = add.txid
    if st.dv is not None:
        out[TAG_DV_CHECKSUM] = st.dv.checksum
    return out


def add_action(root: str, meta: Metadata, st: TabletState, ts: int, data_change: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {
        "path": path_uri(st.add.path),
        "partitionValues": {},
        "size": st.add.bytes,
        "modificationTime": ts,
        "dataChange": data_change,
        "stats": stats_json(meta, st.add, st.dv is not None),
        "tags": tags(st),
    }
    if st.dv is not None:
        body["deletionVector"] = dv_descriptor(root, st.dv)
    return body


def remove_action(root: str, st: TabletState, ts: int) -> dict[str, Any]:
    body: dict[str, Any] = {
        "path": path_uri(st.add.path),
        "deletionTimestamp": ts,
        "dataChange": True,
        "extendedFileMetadata": True,
        "partitionValues": {},
        "size": st.add.bytes,
    }
    if st.dv is not None:
        body["deletionVector"] = dv_descriptor(root, st.dv)
    return body


def commit_info(info: CommitInfo | None, version: int) -> dict[str, Any]:
    if info is None:
        return {"timestamp": 0, "operation": "UNKNOWN", "engineInfo": ENGINE}
    body: dict[str, Any] = {
        "timestamp": info.timestamp_ms,
        "operation": info.operation,
        "operationParameters": dict(info.parameters),
        "operationMetrics": {k: v for k, v in info.metrics},
        "engineInfo": ENGINE,
        "txnId": info.txid,
        "isBlindAppend": False,
    }
    if info.read_version >= 0:
        body["readVersion"] = info.read_version
    if info.state:
        body[COMMIT_KEY] = {"state": [list(p) for p in info.state]}
    return body


def delta_actions(
    root: str, before: Snapshot | None, after: Snapshot, actions: Sequence[Action]
) -> list[dict[str, Any]]:
    """Delta's actions of one version: its commit first, then the net change of each tablet
    it touched."""
    info = next((a for a in actions if isinstance(a, CommitInfo)), None)
    ts = info.timestamp_ms if info else 0
    out: list[dict[str, Any]] = [{"commitInfo": commit_info(info, after.version)}]
    if before is None or any(isinstance(a, Metadata) for a in actions):
        ds = to_delta(after.metadata)
        out += [{"protocol": protocol(ds)}, {"metaData": metadata(after.metadata, ds)}]
    touched = dict.fromkeys(a.tablet_id for a in actions if isinstance(a, (AddTablet, RemoveTablet, SetDV)))
    for t in touched:
        old = before.tablets.get(t) if before else None
        new = after.tablets.get(t)
        if old == new:
            continue
        if old is not None and new is not None and (old.add.path, old.dv) == (new.add.path, new.dv):
            out.append({"add": add_action(root, after.metadata, new, ts, data_change=False)})  # restated
            continue
        if old is not None:
            out.append({"remove": remove_action(root, old, ts)})
        if new is not None:
            out.append({"add": add_action(root, after.metadata, new, ts)})
    return out


def encode(lines: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(a, separators=(",", ":")) + "\n" for a in lines).encode()


def delta_versions(io: FileIO, root: str) -> list[int]:
    return sorted(int(m.group(1)) for f in io.list(delta_dir(root)) if (m := _JSON_RE.match(f.name)))


def write_checkpoint(io: FileIO, root: str, snap: Snapshot) -> bool:
    """Delta's checkpoint of ``snap`` (a state proven to be its version's), for Delta readers
    and for readers of a log whose older versions were cleaned up."""
    ds = to_delta(snap.metadata)
    adds = [add_action(root, snap.metadata, st, 0, False) for st in snap.tablets.values()]
    return delta_checkpoint.write(io, root, snap, adds, protocol(ds), metadata(snap.metadata, ds))
