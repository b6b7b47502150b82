"""Column types: Spark SQL type names in the log, Arrow types in the tablets."""

from __future__ import annotations

import datetime
import re

import pyarrow as pa

from tablets.exceptions import SchemaMismatch
from tablets.sqltext import quote_if_needed

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
# the first day of the Gregorian calendar: Spark may rebase a date before it (a Parquet file's
# legacy hybrid calendar) or refuse it, where Arrow reads the days as they are
GREGORIAN_REFORM = datetime.date(1582, 10, 15)

TYPE_ALIASES = {
    "integer": "int",
    "long": "bigint",
    "short": "smallint",
    "byte": "tinyint",
    "real": "float",
    "bool": "boolean",
}
DECIMAL_TYPE = re.compile(r"^decimal\((\d+),\s*(\d+)\)$")


def field_text(name: str, type_text: str) -> str:
    """A struct field as a type name writes it: ``name:type``, the name backquoted where it is
    not a plain identifier (Spark's DDL parser reads it back; its ``simpleString`` does not
    quote, so a name with a space, comma or colon would not parse)."""
    return f"{quote_if_needed(name)}:{type_text}"


def split_top(text: str) -> list[str]:
    """``text`` split at its commas outside brackets and backquotes."""
    parts, depth, cur, quoted = [], 0, "", False
    for ch in text:
        if ch == "`":
            quoted = not quoted  # a doubled backquote inside a name toggles twice
        elif not quoted and ch in "<(":
            depth += 1
        elif not quoted and ch in ">)":
            depth -= 1
        if ch == "," and depth == 0 and not quoted:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def struct_fields(inner: str) -> list[tuple[str, str]]:
    """The (name, type name) of each field of ``struct<inner>``: ``name:type``, the name
    possibly backquoted (``field_text``), or Spark DDL's ``name type``."""
    out = []
    for part in split_top(inner):
        if part.startswith("`"):
            i, name = 1, ""
            while i < len(part):
                if part[i] == "`":
                    if part[i + 1 : i + 2] == "`":
                        name, i = name + "`", i + 2
                        continue
                    break
                name, i = name + part[i], i + 1
            rest = part[i + 1 :].lstrip()
        else:
            m = re.match(r"[^:\s]+", part)
            name = m.group(0) if m else ""
            rest = part[len(name) :].lstrip()
            head = part.partition(":")[0]
            if not rest.startswith(":") and ":" in rest and not any(c in head for c in "<("):
                name, rest = head.strip(), part[len(head) :]  # an old unquoted name with a space
        out.append((name, rest[1:] if rest.startswith(":") else rest))
    return out


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
        return pa.struct([pa.field(n, to_arrow(t)) for n, t in struct_fields(type_name.strip()[7:-1])])
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
        inner = ",".join(field_text(f.name, from_arrow(f.type)) for f in dt)
        return f"struct<{inner}>"
    if pa.types.is_dictionary(dt):
        return from_arrow(dt.value_type)
    raise SchemaMismatch(f"unsupported Arrow type {dt}", help="Cast the column to a supported type.")


def schema_to_arrow(schema: tuple[tuple[str, str, bool], ...]) -> pa.Schema:
    return pa.schema([pa.field(n, to_arrow(t), nullable=nl) for n, t, nl in schema])


def schema_from_arrow(schema: pa.Schema) -> tuple[tuple[str, str, bool], ...]:
    return tuple((f.name, from_arrow(f.type), True) for f in schema)
