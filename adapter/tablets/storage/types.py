"""Column types: Spark SQL type names in the log, Arrow types in the tablets."""

from __future__ import annotations

import re

import pyarrow as pa

from tablets.exceptions import SchemaMismatch

_SIMPLE: dict[str, pa.DataType] = {
    "boolean": pa.bool_(),
    "tinyint": pa.int8(),
    "smallint": pa.int16(),
    "int": pa.int32(),
    "bigint": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "string": pa.string(),
    "binary": pa.binary(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"),
    "void": pa.null(),
}
TYPE_ALIASES = {
    "integer": "int",
    "long": "bigint",
    "short": "smallint",
    "byte": "tinyint",
    "real": "float",
    "bool": "boolean",
}
DECIMAL_TYPE = re.compile(r"^decimal\((\d+),\s*(\d+)\)$")


def split_top(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def to_arrow(type_name: str) -> pa.DataType:
    t = type_name.strip().lower()
    t = TYPE_ALIASES.get(t, t)
    if t in _SIMPLE:
        return _SIMPLE[t]
    if m := DECIMAL_TYPE.match(t):
        return pa.decimal128(int(m.group(1)), int(m.group(2)))
    if t == "decimal":
        return pa.decimal128(10, 0)
    if t.startswith("array<") and t.endswith(">"):
        return pa.list_(to_arrow(type_name.strip()[6:-1]))
    if t.startswith("map<") and t.endswith(">"):
        k, v = split_top(type_name.strip()[4:-1])
        return pa.map_(to_arrow(k), to_arrow(v))
    if t.startswith("struct<") and t.endswith(">"):
        fields = []
        for part in split_top(type_name.strip()[7:-1]):
            name, _, ftype = part.partition(":")
            fields.append(pa.field(name.strip().strip("`"), to_arrow(ftype)))
        return pa.struct(fields)
    raise SchemaMismatch(
        f"unsupported column type {type_name!r}", help="Cast the column to a supported Spark SQL type."
    )


def from_arrow(dt: pa.DataType) -> str:
    for name, t in _SIMPLE.items():
        if dt == t:
            return name
    if pa.types.is_timestamp(dt):
        return "timestamp" if dt.tz else "timestamp_ntz"
    if pa.types.is_large_string(dt) or pa.types.is_string_view(dt):
        return "string"
    if pa.types.is_decimal(dt):
        return f"decimal({dt.precision},{dt.scale})"
    if pa.types.is_list(dt) or pa.types.is_large_list(dt):
        return f"array<{from_arrow(dt.value_type)}>"
    if pa.types.is_map(dt):
        return f"map<{from_arrow(dt.key_type)},{from_arrow(dt.item_type)}>"
    if pa.types.is_struct(dt):
        inner = ",".join(f"{f.name}:{from_arrow(f.type)}" for f in dt)
        return f"struct<{inner}>"
    if pa.types.is_dictionary(dt):
        return from_arrow(dt.value_type)
    raise SchemaMismatch(f"unsupported Arrow type {dt}", help="Cast the column to a supported type.")


def schema_to_arrow(schema: tuple[tuple[str, str, bool], ...]) -> pa.Schema:
    return pa.schema([pa.field(n, to_arrow(t), nullable=nl) for n, t, nl in schema])


def schema_from_arrow(schema: pa.Schema) -> tuple[tuple[str, str, bool], ...]:
    return tuple((f.name, from_arrow(f.type), True) for f in schema)
