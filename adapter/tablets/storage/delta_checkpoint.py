"""Delta checkpoints of the published Delta log: ``_delta_log/<version>.checkpoint.parquet``
(Delta's classic V1 checkpoint: one row per action, a struct column per action kind) and
``_delta_log/_last_checkpoint``, written where ``_log`` checkpoints (every 50 versions), from
the state the writer has just committed and proven, so Delta readers open a long log as fast
as ours. ``read`` gives the actions of a Delta checkpoint back (adopting a Delta table whose
older JSON versions were cleaned up).
"""

from __future__ import annotations

import io as _io
import json
import re
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tablets.storage.fileio import FileIO, join
from tablets.storage.snapshot import Snapshot

_STR_MAP = pa.map_(pa.string(), pa.string())
_DV = pa.struct(
    [
        ("storageType", pa.string()),
        ("pathOrInlineDv", pa.string()),
        ("offset", pa.int32()),
        ("sizeInBytes", pa.int32()),
        ("cardinality", pa.int64()),
    ]
)
SCHEMA = pa.schema(
    [
        (
            "protocol",
            pa.struct(
                [
                    ("minReaderVersion", pa.int32()),
                    ("minWriterVersion", pa.int32()),
                    ("readerFeatures", pa.list_(pa.string())),
                    ("writerFeatures", pa.list_(pa.string())),
                ]
            ),
        ),
        (
            "metaData",
            pa.struct(
                [
                    ("id", pa.string()),
                    ("name", pa.string()),
                    ("description", pa.string()),
                    ("format", pa.struct([("provider", pa.string()), ("options", _STR_MAP)])),
                    ("schemaString", pa.string()),
                    ("partitionColumns", pa.list_(pa.string())),
                    ("configuration", _STR_MAP),
                    ("createdTime", pa.int64()),
                ]
            ),
        ),
        (
            "add",
            pa.struct(
                [
                    ("path", pa.string()),
                    ("partitionValues", _STR_MAP),
                    ("size", pa.int64()),
                    ("modificationTime", pa.int64()),
                    ("dataChange", pa.bool_()),
                    ("stats", pa.string()),
                    ("tags", _STR_MAP),
                    ("deletionVector", _DV),
                ]
            ),
        ),
        ("txn", pa.struct([("appId", pa.string()), ("version", pa.int64()), ("lastUpdated", pa.int64())])),
        (
            "remove",
            pa.struct(
                [
                    ("path", pa.string()),
                    ("deletionTimestamp", pa.int64()),
                    ("dataChange", pa.bool_()),
                    ("extendedFileMetadata", pa.bool_()),
                    ("partitionValues", _STR_MAP),
                    ("size", pa.int64()),
                    ("deletionVector", _DV),
                ]
            ),
        ),
    ]
)


_CHECKPOINT_RE = re.compile(r"^(\d{20})\.checkpoint\.parquet$")


def name(version: int) -> str:
    return f"{version:020d}.checkpoint.parquet"


def app_transactions(io: FileIO, root: str, version: int) -> list[dict[str, Any]]:
    """The newest ``txn`` action of each application id in the Delta log up to ``version``:
    another Delta writer's (an idempotent or streaming writer's last batch, adopted or taken in;
    tablets writes none), which a checkpoint must carry or that writer would repeat its batch.
    Read from the newest Delta checkpoint before ``version`` and the JSON versions after it."""
    directory = join(root, "_delta_log")
    names = {f.name for f in io.list(directory)}
    before = [int(m.group(1)) for n in names if (m := _CHECKPOINT_RE.match(n)) and int(m.group(1)) < version]
    txns: dict[str, dict[str, Any]] = {}
    start = 0
    if before:
        start = max(before) + 1
        checkpoint = pq.ParquetFile(pa.BufferReader(io.read(join(directory, name(start - 1)))))
        if "txn" in checkpoint.schema_arrow.names:  # (its one column: not the files' rows)
            for body in checkpoint.read(columns=["txn"]).column("txn").to_pylist():
                if body and body.get("appId"):
                    txns[body["appId"]] = body
    for v in range(start, version + 1):
        json_name = f"{v:020d}.json"
        if json_name not in names:
            continue
        data = io.read(join(directory, json_name))
        if b'"txn"' not in data:  # (tablets' own versions: none)
            continue
        for line in data.decode().splitlines():
            body = json.loads(line).get("txn") if line.strip() else None
            if body and body.get("appId"):
                txns[body["appId"]] = body
    return [{"txn": {k: body.get(k) for k in ("appId", "version", "lastUpdated")}} for _, body in sorted(txns.items())]


def _maps(body: dict[str, Any], *keys: str) -> dict[str, Any]:
    """``body`` with its JSON objects at ``keys`` as Arrow map entries (lists of pairs)."""
    return {**body, **{k: list((body.get(k) or {}).items()) for k in keys}}


def write(
    io: FileIO,
    root: str,
    snap: Snapshot,
    adds: list[dict[str, Any]],
    protocol: dict[str, Any],
    metadata: dict[str, Any],
) -> bool:
    """Create the Delta checkpoint of ``snap`` (exclusively: False if it exists) and point
    ``_last_checkpoint`` at it."""
    meta = _maps({**metadata, "format": _maps(metadata["format"], "options")}, "configuration")
    rows: list[dict[str, Any]] = [{"protocol": protocol}, {"metaData": meta}]
    rows += [{"add": _maps(a, "partitionValues", "tags")} for a in adds]
    rows += app_transactions(io, root, snap.version)
    columns = {f.name: pa.array([r.get(f.name) for r in rows], f.type) for f in SCHEMA}
    buf = _io.BytesIO()
    pq.write_table(pa.Table.from_pydict(columns, schema=SCHEMA), buf)
    directory = join(root, "_delta_log")
    if not io.create(join(directory, name(snap.version)), buf.getvalue()):
        return False
    io.write(join(directory, "_last_checkpoint"), json.dumps({"version": snap.version, "size": len(rows)}).encode())
    return True


def read(io: FileIO, root: str, version: int) -> list[dict[str, Any]]:
    """The actions of the Delta checkpoint at ``version`` as JSON-like dicts (maps as dicts)."""
    data = io.read(join(root, "_delta_log", name(version)))
    table = pq.read_table(pa.BufferReader(data))
    out: list[dict[str, Any]] = []
    for row in table.to_pylist():
        for kind in ("protocol", "metaData", "add", "remove"):
            body = row.get(kind)
            if body is not None and (kind != "add" or body.get("path")) and (kind != "remove" or body.get("path")):
                out.append({kind: _dicts(body)})
    return out


def _dicts(value: Any) -> Any:
    """Arrow map values (lists of (key, value) tuples) as dicts, recursively."""
    if isinstance(value, dict):
        return {k: _dicts(v) for k, v in value.items()}
    if isinstance(value, list) and value and all(isinstance(x, tuple) and len(x) == 2 for x in value):
        return dict(value)
    return value
