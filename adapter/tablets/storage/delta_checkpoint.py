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


def name(version: int) -> str:
    return f"{version:020d}.checkpoint.parquet"


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
