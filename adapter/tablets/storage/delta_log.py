"""The Delta log a tablet table publishes at its root (docs/FORMAT.md, "A Delta table at its
root"): ``_delta_log/<version>.json``, one per version of ``_log``, with the same number.

``_log`` stays the commit point: a version is committed when its ``_log`` file exists, and this
module writes the Delta version right after (``publish``). A writer that crashed between the
two leaves the Delta log one version short; the next commit (or ``catch_up``) writes the
missing versions first, so Delta versions stay contiguous and Delta readers see at worst the
table one version old. Delta versions are created exclusively (``FileIO.create``), like ours:
two publishers of one version write the same translation, and the second one's create is a
no-op.

Translation, per version: the tablets whose state changed (``add_tablet``, ``remove_tablet``,
``set_dv``) become Delta's ``remove`` of the old file state and ``add`` of the new one (a new
deletion vector is Delta's remove + add of the same path with the new ``deletionVector``); a
``metadata`` action, version 0 and the first version after versions written by another Delta
writer carry ``protocol`` and ``metaData``; ``commit_info`` becomes ``commitInfo``.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import uuid
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import quote

from tablets.exceptions import TabletsError
from tablets.storage import delta_checkpoint
from tablets.storage.actions import Action, AddTablet, CommitInfo, Metadata, RemoveTablet, SetDV
from tablets.storage.delta_schema import MAPPING_MODE, MAX_COLUMN_ID, DeltaSchema, to_delta
from tablets.storage.fileio import FileIO, is_local, join
from tablets.storage.snapshot import Snapshot, TabletState, apply_version
from tablets.storage.tablet import ROW_ID
from tablets.storage.types import TYPE_ALIASES

DELTA_LOG = "_delta_log"
ENGINE = "dbt-tablets"
ADOPTED = "delta_adopted"  # commit_info parameter of versions adopted from another Delta writer
CHECKPOINT_INTERVAL = 50  # as _log's (tablets.storage.log), so both checkpoint the same versions
_LOGGER = logging.getLogger("tablets")
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


def dv_descriptor(root: str, dv: SetDV) -> dict[str, Any]:
    """Delta's ``deletionVector`` for our DV file: storage type 'u' (relative, the UUID in Z85)
    where the file name is Delta's ``deletion_vector_<uuid>.bin``, else 'p' (its absolute URI,
    for DV files named before: such a table read by Delta must stay where it is)."""
    body: dict[str, Any] = {"offset": 1, "sizeInBytes": dv.size - DV_HEADER, "cardinality": dv.cardinality}
    m = DV_NAME.match(dv.path)
    if m:
        return {"storageType": "u", "pathOrInlineDv": "dv" + z85_encode(uuid.UUID(m.group(1)).bytes), **body}
    return {"storageType": "p", "pathOrInlineDv": absolute_uri(join(root, dv.path)), **body}


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


def add_action(root: str, meta: Metadata, st: TabletState, ts: int, data_change: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {
        "path": quote(st.add.path, safe="/"),
        "partitionValues": {},
        "size": st.add.bytes,
        "modificationTime": ts,
        "dataChange": data_change,
        "stats": stats_json(meta, st.add, st.dv is not None),
    }
    if st.dv is not None:
        body["deletionVector"] = dv_descriptor(root, st.dv)
    return body


def remove_action(root: str, st: TabletState, ts: int) -> dict[str, Any]:
    body: dict[str, Any] = {
        "path": quote(st.add.path, safe="/"),
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
    return body


def _foreign(snap: Snapshot | None) -> bool:
    """Whether the Delta version before this one may not carry our protocol: written by another
    Delta writer (adopted), or not known (a snapshot from a checkpoint has no commit)."""
    return snap is not None and (snap.commit is None or any(k == ADOPTED for k, _ in snap.commit.parameters))


def delta_actions(
    root: str, before: Snapshot | None, after: Snapshot, actions: Sequence[Action]
) -> list[dict[str, Any]]:
    """Delta's actions of one version: the net change of each tablet it touched."""
    info = next((a for a in actions if isinstance(a, CommitInfo)), None)
    ts = info.timestamp_ms if info else 0
    out: list[dict[str, Any]] = []
    if before is None or _foreign(before) or any(isinstance(a, Metadata) for a in actions):
        ds = to_delta(after.metadata)
        out += [{"protocol": protocol(ds)}, {"metaData": metadata(after.metadata, ds)}]
    touched = dict.fromkeys(a.tablet_id for a in actions if isinstance(a, (AddTablet, RemoveTablet, SetDV)))
    for t in touched:
        old = before.tablets.get(t) if before else None
        new = after.tablets.get(t)
        if old == new:
            continue
        if old is not None:
            out.append({"remove": remove_action(root, old, ts)})
        if new is not None:
            out.append({"add": add_action(root, after.metadata, new, ts)})
    out.append({"commitInfo": commit_info(info, after.version)})
    return out


def encode(lines: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(a, separators=(",", ":")) + "\n" for a in lines).encode()


def delta_versions(io: FileIO, root: str) -> list[int]:
    return sorted(int(m.group(1)) for f in io.list(delta_dir(root)) if (m := _JSON_RE.match(f.name)))


def _write(io: FileIO, root: str, before: Snapshot | None, after: Snapshot, actions: Sequence[Action]) -> None:
    path = join(delta_dir(root), delta_name(after.version))
    if not io.create(path, encode(delta_actions(root, before, after, actions))):
        theirs = io.read(path).decode(errors="replace")
        if f'"engineInfo":"{ENGINE}"' not in theirs:
            _LOGGER.warning(
                "%s was written by another Delta writer: Delta readers of %s no longer see the versions of tablets "
                "from %d on (write a tablet table only through tablets)",
                path,
                root,
                after.version,
            )
    if after.version % CHECKPOINT_INTERVAL == 0 and after.version:
        delta_checkpoint.write(
            io,
            root,
            after,
            [add_action(root, after.metadata, st, 0, False) for st in after.tablets.values()],
            protocol(to_delta(after.metadata)),
            metadata(after.metadata, to_delta(after.metadata)),
        )


def publish(
    io: FileIO,
    root: str,
    version: int,
    actions: Sequence[Action],
    before: Snapshot | None,
    after: Snapshot | None = None,
) -> None:
    """Publish ``_log`` version ``version`` (just committed on ``before``, the state of the
    version before it) as Delta version ``version``, after any Delta versions missing before it.
    Never raises: the version is committed already; a failure leaves the Delta log short, and
    the next commit (or ``catch_up``) completes it."""
    try:
        if version and not io.exists(join(delta_dir(root), delta_name(version - 1))):
            catch_up(io, root, version - 1)
        _write(io, root, before, after or apply_version(before, version, actions), actions)
    except (OSError, TabletsError, ValueError) as e:
        _LOGGER.warning(
            "the Delta log of %s was not written at version %d (%s): the next commit completes it", root, version, e
        )


def catch_up(io: FileIO, root: str, upto: int | None = None) -> int:
    """Write the Delta versions of ``root`` missing up to ``upto`` (default: the newest of
    ``_log``): a crash between the two logs, or a table from before Delta publishing. The
    newest Delta version."""
    from tablets.storage import log  # (log imports transaction's world: late)

    versions, _ = log.list_log(io, root, complete=True)
    upto = versions[-1] if upto is None else upto
    have = delta_versions(io, root)
    start = have[-1] + 1 if have else versions[0]
    if start > upto:
        return upto
    before = log.load_snapshot(io, root, start - 1) if start > 0 else None
    if before is not None and not have:  # _log starts after 0 (a checkpoint): Delta starts there too
        before = None
        snap = log.load_snapshot(io, root, start)
        st = list(snap.tablets.values())
        ds = to_delta(snap.metadata)
        delta_checkpoint.write(
            io,
            root,
            snap,
            [add_action(root, snap.metadata, s, 0, False) for s in st],
            protocol(ds),
            metadata(snap.metadata, ds),
        )
        before, start = snap, start + 1
    for v, actions in log.read_versions(io, root, range(start, upto + 1)):
        after = log.advance(before, v, actions, root)  # checked against its commit's record
        _write(io, root, before, after, actions)
        before = after
    return upto
