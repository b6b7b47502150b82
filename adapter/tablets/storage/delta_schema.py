"""Delta's JSON schema (PROTOCOL.md, "Schema Serialization Format") from and to the log's
``metadata``: Spark SQL type names <-> Delta types, column mapping (``delta.columnMapping.*``
field metadata) and the protocol features a schema needs.

Why a module of its own: the published Delta log (``delta_log``) writes it and the adoption of
Delta tables written by others (``delta_adopt``) reads it; both must agree to the letter.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tablets.exceptions import SchemaMismatch
from tablets.storage.actions import Metadata
from tablets.storage.types import DECIMAL_TYPE, TYPE_ALIASES, field_text, split_top, struct_fields

MAPPING_MODE = "delta.columnMapping.mode"
MAX_COLUMN_ID = "delta.columnMapping.maxColumnId"
FIELD_ID = "delta.columnMapping.id"
PHYSICAL_NAME = "delta.columnMapping.physicalName"
TYPE_CHANGES = "delta.typeChanges"  # a widened column's history (the typeWidening table feature)

_TO_DELTA = {
    "boolean": "boolean",
    "tinyint": "byte",
    "smallint": "short",
    "int": "integer",
    "bigint": "long",
    "float": "float",
    "double": "double",
    "string": "string",
    "binary": "binary",
    "date": "date",
    "timestamp": "timestamp",
    "timestamp_ntz": "timestamp_ntz",
}
_FROM_DELTA = {v: k for k, v in _TO_DELTA.items()}


def delta_type(spark_type: str) -> Any:
    """The Delta type of a Spark SQL type name (a string for primitives, a dict for nested)."""
    t = spark_type.strip()
    low = TYPE_ALIASES.get(t.lower(), t.lower())
    if low in _TO_DELTA:
        return _TO_DELTA[low]
    if m := DECIMAL_TYPE.match(low):
        return f"decimal({m.group(1)},{m.group(2)})"
    if low == "decimal":
        return "decimal(10,0)"
    if low.startswith("array<") and low.endswith(">"):
        return {"type": "array", "elementType": delta_type(t[6:-1]), "containsNull": True}
    if low.startswith("map<") and low.endswith(">"):
        k, v = split_top(t[4:-1])
        return {"type": "map", "keyType": delta_type(k), "valueType": delta_type(v), "valueContainsNull": True}
    if low.startswith("struct<") and low.endswith(">"):
        fields = [
            {"name": n, "type": delta_type(ft), "nullable": True, "metadata": {}} for n, ft in struct_fields(t[7:-1])
        ]
        return {"type": "struct", "fields": fields}
    raise SchemaMismatch(f"column type {spark_type!r} has no Delta type", help="Cast the column to a type Delta has.")


def spark_type(dtype: Any) -> str:
    """The Spark SQL type name of a Delta type."""
    if isinstance(dtype, str):
        if dtype in _FROM_DELTA:
            return _FROM_DELTA[dtype]
        if DECIMAL_TYPE.match(dtype.replace(" ", "")):
            return dtype.replace(" ", "")
        raise SchemaMismatch(
            f"Delta type {dtype!r} is not supported by tablets", help="Cast the column to a supported type."
        )
    kind = dtype.get("type")
    if kind == "array":
        return f"array<{spark_type(dtype['elementType'])}>"
    if kind == "map":
        return f"map<{spark_type(dtype['keyType'])},{spark_type(dtype['valueType'])}>"
    if kind == "struct":
        return "struct<" + ",".join(field_text(f["name"], spark_type(f["type"])) for f in dtype["fields"]) + ">"
    raise SchemaMismatch(
        f"Delta type {dtype!r} is not supported by tablets", help="Cast the column to a supported type."
    )


def mapped(meta: Metadata) -> bool:
    """Whether a Delta reader must read columns by physical name (Delta's column mapping, mode
    ``name``): only where some column's physical name is not its name, so that a table whose
    columns kept their names stays readable by readers without column mapping."""
    return not meta.mapping.identity


def _nested_ids(dtype: Any, next_id: int) -> tuple[Any, int]:
    """``dtype`` with column mapping metadata on every nested struct field (mode ``name``
    wants it on all fields): the physical name is the field's name (tablets map top-level
    columns only), ids follow the table's highest."""
    if isinstance(dtype, dict) and dtype.get("type") == "struct":
        fields = []
        for f in dtype["fields"]:
            next_id += 1
            fid = next_id
            inner, next_id = _nested_ids(f["type"], next_id)
            fields.append({**f, "type": inner, "metadata": {FIELD_ID: fid, PHYSICAL_NAME: f["name"]}})
        return {**dtype, "fields": fields}, next_id
    if isinstance(dtype, dict) and dtype.get("type") == "array":
        inner, next_id = _nested_ids(dtype["elementType"], next_id)
        return {**dtype, "elementType": inner}, next_id
    if isinstance(dtype, dict) and dtype.get("type") == "map":
        k, next_id = _nested_ids(dtype["keyType"], next_id)
        v, next_id = _nested_ids(dtype["valueType"], next_id)
        return {**dtype, "keyType": k, "valueType": v}, next_id
    return dtype, next_id


@dataclass(frozen=True)
class DeltaSchema:
    schema_string: str
    mapping: bool  # column mapping mode name
    max_column_id: int
    ntz: bool  # a column holds timestamp_ntz (the timestampNtz feature)
    widened: bool = False  # a column's type was widened (the typeWidening feature)
    checks: bool = False  # the table has CHECK constraints (the checkConstraints writer feature)


def to_delta(meta: Metadata) -> DeltaSchema:
    """The Delta schema of ``meta``: comments in field metadata, and with column mapping each
    field's id and physical name."""
    use_mapping = mapped(meta)
    top = meta.max_column_id
    fields = []
    comments = dict(meta.column_comments)
    changes: dict[str, list[dict[str, Any]]] = {}
    for physical, old, new in meta.type_changes:
        changes.setdefault(physical, []).append({"fromType": delta_type(old), "toType": delta_type(new)})
    ntz = False
    for (name, t, nullable), physical, cid in zip(meta.schema, meta.physical_names, meta.column_ids, strict=True):
        try:
            dtype = delta_type(t)
        except SchemaMismatch as e:
            raise SchemaMismatch(
                f"column {name}: {e.detail}"
                + (" (a NULL with no type)" if t.strip().lower() in ("void", "null") else ""),
                help=f"Cast the column to a type a Delta table has: CAST(... AS STRING) AS {name}, say.",
            ) from None
        ntz = ntz or "timestamp_ntz" in json.dumps(dtype)
        md: dict[str, Any] = {}
        if name in comments:
            md["comment"] = comments[name]
        if physical in changes:
            md[TYPE_CHANGES] = changes[physical]
        if use_mapping:
            md[FIELD_ID], md[PHYSICAL_NAME] = cid, physical
            dtype, top = _nested_ids(dtype, top)
        fields.append({"name": name, "type": dtype, "nullable": bool(nullable), "metadata": md})
    text = json.dumps({"type": "struct", "fields": fields}, separators=(",", ":"))
    checks = any(k.startswith("delta.constraints.") for k, _ in meta.properties)
    return DeltaSchema(text, use_mapping, top, ntz, bool(changes), checks)


@dataclass(frozen=True)
class Columns:
    """A Delta schema as the log's metadata holds it."""

    schema: tuple[tuple[str, str, bool], ...]
    physical_names: tuple[str, ...]
    column_ids: tuple[int, ...]
    comments: tuple[tuple[str, str], ...]
    type_changes: tuple[tuple[str, str, str], ...] = ()  # (physical name, from, to): Metadata's


def from_delta(schema_string: str, mode: str) -> Columns:
    """The columns of a Delta ``schemaString`` under column mapping ``mode`` (``none``, ``name``;
    ``id`` is refused by the caller)."""
    doc = json.loads(schema_string)
    schema, physical, ids, comments, changes = [], [], [], [], []
    for i, f in enumerate(doc["fields"], start=1):
        md = f.get("metadata") or {}
        schema.append((f["name"], spark_type(f["type"]), bool(f.get("nullable", True))))
        physical.append(md.get(PHYSICAL_NAME, f["name"]) if mode == "name" else f["name"])
        ids.append(int(md.get(FIELD_ID, i)) if mode == "name" else i)
        if "comment" in md:
            comments.append((f["name"], str(md["comment"])))
        for change in md.get(TYPE_CHANGES) or ():
            if change.get("fieldPath"):  # a widened array element or map value: tablets widen top-level columns
                raise SchemaMismatch(
                    f"column {f['name']}: a nested type change ({change}) is not supported by tablets",
                    help="Read this table with a Delta reader, or copy its rows into a new tablet table.",
                )
            changes.append((physical[-1], spark_type(change["fromType"]), spark_type(change["toType"])))
    return Columns(tuple(schema), tuple(physical), tuple(ids), tuple(comments), tuple(changes))


def field_metadata_keys(schema_string: str) -> set[str]:
    """Every field metadata key of a Delta schema, nested fields included (what adoption checks
    for features it does not support: generated columns, identity columns, invariants...)."""
    keys: set[str] = set()

    def walk(dtype: Any) -> None:
        if not isinstance(dtype, dict):
            return
        if dtype.get("type") == "struct":
            for f in dtype["fields"]:
                keys.update((f.get("metadata") or {}).keys())
                walk(f["type"])
        elif dtype.get("type") == "array":
            walk(dtype["elementType"])
        elif dtype.get("type") == "map":
            walk(dtype["keyType"])
            walk(dtype["valueType"])

    walk(json.loads(schema_string))
    return keys
