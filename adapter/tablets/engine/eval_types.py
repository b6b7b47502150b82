"""Spark's types as the driver-side evaluator (``arrow_eval``) knows them: their names and Arrow
types, the literal texts whose value Spark reads with no rounding, zone or mode, and the
coercions where ANSI and legacy Spark agree. Anything else raises :class:`Unsupported`: the
expression then compiles to None and Spark evaluates it."""

from __future__ import annotations

import datetime
import decimal
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tablets.storage.types import to_arrow

Value: TypeAlias = Any  # a pa.Array or a pa.Scalar (a literal, broadcast by the kernels)
Env = Mapping[tuple[str, str], pa.Array]  # (alias, column) -> the column's values


class Unsupported(Exception):
    """Compile time: the construct is outside the subset (compile_expr returns None)."""


INTS = ("tinyint", "smallint", "int", "bigint")  # narrowest first
FLOATS = ("float", "double")
DECIMAL_LITERAL = "decimal literal"  # 1.5: DECIMAL in Spark, usable here only where Spark makes it DOUBLE
VOID = "void"  # the type of NULL
# the types the evaluator reads, as the store holds them
_READ = ("tinyint", "smallint", "int", "bigint", "float", "double", "string", "boolean", "date", "timestamp")
ARROW = {t: to_arrow(t) for t in (*_READ, "timestamp_ntz", VOID)}
_TYPE_NAMES = {"integer": "int", "long": "bigint", "short": "smallint", "byte": "tinyint"}
INT_RANGE = {t: (-(2 ** (b - 1)), 2 ** (b - 1) - 1) for t, b in zip(INTS, (8, 16, 32, 64), strict=True)}
_NO_VALUE = object()


@dataclass(frozen=True)
class Node:
    """A compiled expression's node: its Spark type and its values over the inputs."""

    type: str  # a key of ARROW, or DECIMAL_LITERAL
    fn: Callable[[Env], Value]
    value: Any = _NO_VALUE  # a literal's Python value (folded at compile time)

    @property
    def literal(self) -> bool:
        return self.value is not _NO_VALUE


def spark_type(name: str) -> str:
    t = name.strip().lower().replace(" ", "")
    t = _TYPE_NAMES.get(t, t)
    if t == "decimal":
        return "decimal(10,0)"
    if t == VOID or (t not in ARROW and decimal_params(t) is None):
        raise Unsupported(f"column type {name}")
    return t


def decimal_params(t: str) -> tuple[int, int] | None:
    """(precision, scale) of a Spark DECIMAL type name, else None."""
    m = re.fullmatch(r"decimal\((\d+),(\d+)\)", t)
    return (int(m[1]), int(m[2])) if m else None


def arrow_type(name: str) -> pa.DataType | None:
    """The Arrow type that holds every value of Spark type ``name`` exactly, as Spark compares
    them (the types the evaluator reads, and the driver's merge copies), or None."""
    try:
        return arrow_of(spark_type(name))
    except Unsupported:
        return None


def arrow_of(t: str) -> pa.DataType:
    dec = decimal_params(t)
    return pa.decimal128(*dec) if dec else ARROW[t]


def date_text(text: str) -> datetime.date:
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        raise Unsupported(f"date literal {text!r}")  # Spark also takes '2020-1-1', ' 2020-01-01 ', ...
    try:
        return datetime.date.fromisoformat(text)
    except ValueError as e:
        raise Unsupported(f"date literal {text!r}") from e


def lit(t: str, v: object) -> Node:
    scalar = pa.scalar(v, arrow_of(t))
    return Node(t, lambda env: scalar, v)


def unreachable(env: Env) -> Value:
    raise AssertionError("a decimal literal is evaluated only as DOUBLE")


def widen(node: Node, t: str) -> Node:
    """``node`` implicitly cast to ``t`` (a widening that Spark's coercion makes)."""
    if node.type == t or t == VOID:
        return node
    if node.literal:
        v = node.value
        # float(int) rounds to nearest-even, as Java's (double) long does
        return lit(t, None if v is None else float(v) if t == "double" else v)
    target, fn = arrow_of(t), node.fn
    return Node(t, lambda env: pc.cast(fn(env), target, safe=False))


def common_type(nodes: list[Node]) -> str:
    """The type Spark compares ``nodes`` in; raises where ANSI and legacy Spark could differ."""
    try:
        return same_type(nodes)
    except Unsupported:
        pass
    types = {n.type for n in nodes} - {VOID}
    decimals = [decimal_params(t) for t in types]
    if all(decimals):
        # Spark's wider decimal: the larger scale and the larger integral part, exact when it
        # fits 38 digits (beyond, Spark bounds it and may round)
        scale = max(s for _, s in decimals)  # type: ignore[misc]
        digits = max(p - s for p, s in decimals) + scale  # type: ignore[misc]
        if digits <= 38:
            return f"decimal({digits},{scale})"
    if types <= {*INTS, *FLOATS, DECIMAL_LITERAL} and types & set(FLOATS):
        if types & {"double", DECIMAL_LITERAL}:
            return "double"
        # FLOAT with integers: legacy Spark compares in FLOAT, ANSI in DOUBLE; the answers agree
        # when each integer is a literal FLOAT holds exactly (then DOUBLE is as good as FLOAT)
        if all(n.type in ("float", VOID) or (n.literal and float32_exact(n.value)) for n in nodes):
            return "double"
    raise Unsupported(f"comparison of {sorted(types)}")


def arith_type(a: Node, b: Node) -> str:
    """Spark's result type of a + - * % b, where ANSI and legacy Spark agree."""
    types = {a.type, b.type}
    numbers = {*INTS, *FLOATS}
    if VOID in types:
        other = (types - {VOID}) & numbers
        if other:
            return other.pop()
    elif types <= set(INTS):
        return max(types, key=INTS.index)
    elif types == {"float"}:
        return "float"
    elif types <= {*numbers, DECIMAL_LITERAL} and types & {"double"} or types == {"float", DECIMAL_LITERAL}:
        return "double"
    raise Unsupported(f"arithmetic on {sorted(types)}")  # FLOAT with integers: FLOAT or DOUBLE by mode


def same_type(nodes: list[Node]) -> str:
    """The type of a value that is one of ``nodes`` (COALESCE, CASE): the one type they share,
    or the widest of integers; other mixtures are where Spark's widening depends on its mode
    or rounds."""
    types = {n.type for n in nodes} - {VOID}
    if not types:
        return VOID
    if len(types) == 1 and DECIMAL_LITERAL not in types:
        return types.pop()
    if types <= set(INTS):
        return max(types, key=INTS.index)
    raise Unsupported(f"a value of {sorted(types)}")


_NUMBER_TEXT = re.compile(r"-?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def float_text(text: str, to: str) -> float:
    """CAST('<text>' AS DOUBLE | FLOAT) as Java parses it (correctly rounded; Python's float()
    is too), for plain numbers and NaN / ±Infinity. A FLOAT only where the nearest DOUBLE is a
    FLOAT value: then it is also the nearest FLOAT, with no second rounding."""
    if text in ("NaN", "Infinity", "-Infinity"):
        return float(text)
    if not _NUMBER_TEXT.fullmatch(text):
        raise Unsupported(f"{to} literal {text!r}")  # Spark also trims, takes 1.5d, 0x1p3, ...
    v = float(text)
    if to == "float" and not (math.isinf(v) or float(np.float32(v)) == v):
        raise Unsupported(f"float literal {text!r} rounds")
    return v


def decimal_text(text: str, to: str) -> decimal.Decimal:
    """CAST('<text>' AS DECIMAL(p, s)) where the value fits with no rounding (Spark rounds
    HALF_UP, and overflows to an error or NULL by mode)."""
    m = re.fullmatch(r"-?(\d+)(?:\.(\d+))?", text)
    p, s = decimal_params(to)  # type: ignore[misc]
    if not m or len(m[2] or "") > s or len(m[1].lstrip("0")) > p - s:
        raise Unsupported(f"{to} literal {text!r}")
    return decimal.Decimal(text)


def timestamp_ntz_text(text: str) -> datetime.datetime:
    """CAST('yyyy-mm-dd[ hh:mm:ss[.ffffff]]' AS TIMESTAMP_NTZ): no zone, the proleptic calendar."""
    m = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})(?: (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?)?", text)
    if not m:
        raise Unsupported(f"timestamp_ntz literal {text!r}")
    try:
        y, mo, d, h, mi, sec = (int(g or 0) for g in m.groups()[:6])
        return datetime.datetime(y, mo, d, h, mi, sec, int((m[7] or "0").ljust(6, "0")))
    except ValueError as e:
        raise Unsupported(f"timestamp_ntz literal {text!r}") from e


def float32_exact(v: object) -> bool:
    return isinstance(v, int) and float(np.float32(v)) == v


def as_boolean(node: Node) -> Node:
    if node.type == VOID:
        return lit("boolean", None)
    if node.type != "boolean":
        raise Unsupported(f"{node.type} as a boolean")  # Spark would cast it
    return node
