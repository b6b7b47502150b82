"""Spark SQL expressions evaluated over Arrow tables on the driver, exactly as Spark 4 would.

The merge engine classifies row pairs by its clauses' conditions (``WHEN NOT MATCHED BY SOURCE
AND t.id % 100 = 0 THEN DELETE``); when the rows are already on the driver, evaluating such a
condition here saves a Spark job. A wrong answer silently deletes or keeps the wrong rows, so the
subset is the one whose results we can pin down without knowing the session's settings: qualified
columns and plain literals, comparisons within one type family, three-valued logic, IN, BETWEEN,
IS [NOT] NULL/TRUE/FALSE, and integer/float arithmetic with ``%`` by a literal. Timestamps and
decimals are columns only (dbt's ``s.updated_at > t.updated_at``): a TIMESTAMP is UTC
microseconds on both sides whatever the session's time zone, while a timestamp literal, a
TIMESTAMP beside a TIMESTAMP_NTZ or a DATE, and decimal arithmetic depend on settings or on
rounding rules, and compile to ``None``. Types follow
Spark's coercion only where ANSI and non-ANSI Spark agree (a FLOAT beside an integer is FLOAT in
one and DOUBLE in the other, so only an exactly representable literal may meet a FLOAT), an
integer overflow (ANSI raises, legacy wraps) raises :class:`EvalUnsupported` at run time, and
anything else compiles to ``None``: the caller then lets Spark evaluate it.

>>> import pyarrow as pa
>>> c = compile_predicate("t.id % 100 = 0", {"t": {"id": "bigint"}})
>>> c({"t": pa.table({"id": pa.array([100, 7, None], pa.int64())})}).to_pylist()
[True, False, False]
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import reduce
from typing import Any, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import sqlglot
from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.tokens import TokenType

Value: TypeAlias = Any  # a pa.Array or a pa.Scalar (a literal, broadcast by the kernels)
Env = Mapping[tuple[str, str], pa.Array]  # (alias, column) -> the column's values


class EvalUnsupported(Exception):
    """The data leaves the semantics the compiled expression promises (e.g. an integer overflow,
    which ANSI Spark raises on and legacy Spark wraps): let Spark evaluate the expression."""


class _Unsupported(Exception):
    """Compile time: the construct is outside the subset (compile_expr returns None)."""


_INTS = ("tinyint", "smallint", "int", "bigint")  # narrowest first
_FLOATS = ("float", "double")
_DECIMAL = "decimal literal"  # 1.5: DECIMAL in Spark, usable here only where Spark makes it DOUBLE
_VOID = "void"  # the type of NULL
_ARROW = {
    "tinyint": pa.int8(),
    "smallint": pa.int16(),
    "int": pa.int32(),
    "bigint": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "string": pa.string(),
    "boolean": pa.bool_(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"),
    _VOID: pa.null(),
}
_TYPE_NAMES = {"integer": "int", "long": "bigint", "short": "smallint", "byte": "tinyint"}
_RANGE = {t: (-(2 ** (b - 1)), 2 ** (b - 1) - 1) for t, b in zip(_INTS, (8, 16, 32, 64), strict=True)}
_CAST_TO = {
    exp.DataType.Type.TINYINT: "tinyint",
    exp.DataType.Type.SMALLINT: "smallint",
    exp.DataType.Type.INT: "int",
    exp.DataType.Type.BIGINT: "bigint",
    exp.DataType.Type.DOUBLE: "double",
    exp.DataType.Type.DATE: "date",
}
_COMPARE = {
    exp.EQ: "equal",
    exp.NEQ: "not_equal",
    exp.LT: "less",
    exp.LTE: "less_equal",
    exp.GT: "greater",
    exp.GTE: "greater_equal",
}
_ARITH = {exp.Add: "add", exp.Sub: "subtract", exp.Mul: "multiply"}
_NO_VALUE = object()


@dataclass(frozen=True)
class _Node:
    type: str  # a key of _ARROW, or _DECIMAL
    fn: Callable[[Env], Value]
    value: Any = _NO_VALUE  # a literal's Python value (folded at compile time)

    @property
    def literal(self) -> bool:
        return self.value is not _NO_VALUE


@dataclass(frozen=True)
class Compiled:
    """A compiled expression: call it with ``{alias: pa.Table}`` for the value of every row."""

    columns: dict[str, tuple[str, ...]]  # alias -> the columns it reads, as spelled in `sides`
    type: str  # the Spark type of the value ("boolean", "bigint", "void" for NULL, ...)
    _fn: Callable[[Env], Value] = field(repr=False)
    _inputs: tuple[tuple[str, str, pa.DataType], ...] = field(repr=False)
    _predicate: bool = field(default=False, repr=False)

    def __call__(self, tables: Mapping[str, pa.Table]) -> pa.Array:
        env = {(a, c): _input(tables[a].column(c), t, f"{a}.{c}") for a, c, t in self._inputs}
        rows = _row_count([tables[a] for a in self.columns] or list(tables.values()))
        out = self._fn(env)
        if isinstance(out, pa.Scalar):
            out = pa.nulls(rows, out.type) if not out.is_valid else pa.repeat(out, rows)
        if self._predicate:
            out = out.fill_null(False)  # WHEN ... AND <cond> fires only where cond is TRUE
        return out


def compile_expr(sql: str, sides: Mapping[str, Mapping[str, str]]) -> Compiled | None:
    """``sql`` (Spark SQL, columns qualified by the aliases of ``sides``: alias -> {column: Spark
    type}) compiled to a function over Arrow tables, or None outside the subset."""
    return _compile(sql, sides, predicate=False)


def compile_predicate(sql: str, sides: Mapping[str, Mapping[str, str]]) -> Compiled | None:
    """:func:`compile_expr` for a boolean condition; the result is True only where the condition
    is TRUE (NULL counts as False, as in ``WHEN ... AND <cond>``)."""
    return _compile(sql, sides, predicate=True)


def _compile(sql: str, sides: Mapping[str, Mapping[str, str]], predicate: bool) -> Compiled | None:
    if "\\" in sql:
        return None  # Spark and sqlglot unescape string literals differently in corners (\%, \_)
    try:
        tree = sqlglot.parse_one(sql, read="spark")
        tokens = Spark().tokenize(sql)
    except sqlglot.errors.SqlglotError:
        return None
    if not _tokens_match(tokens, tree):
        return None
    walker = _Walker(sides)
    try:
        node = walker.walk(tree)
    except _Unsupported:
        return None
    if node.type == _DECIMAL or (predicate and node.type != "boolean"):
        return None
    columns: dict[str, tuple[str, ...]] = {}
    for alias, name, _ in walker.inputs:
        columns[alias] = (*columns.get(alias, ()), name)
    return Compiled(columns, node.type, node.fn, tuple(walker.inputs), predicate)


def _tokens_match(tokens: list, tree: exp.Expr) -> bool:
    """False where sqlglot's tree drops what Spark would act on: a unary plus (Spark casts its
    operand to a number) and ``IS [NOT] UNKNOWN`` (Spark accepts only a boolean operand)."""
    plus = sum(t.token_type == TokenType.PLUS for t in tokens)
    if plus != sum(1 for _ in tree.find_all(exp.Add)):
        return False
    kinds = [t.token_type for t in tokens]
    for i, kind in enumerate(kinds):
        if kind == TokenType.UNKNOWN and TokenType.IS in kinds[max(0, i - 2) : i]:
            return False
    return True


def _input(col: pa.ChunkedArray, typ: pa.DataType, label: str) -> pa.Array:
    """One contiguous array of the column, of the Arrow type its Spark type promises."""
    if (
        pa.types.is_timestamp(typ)
        and typ.tz
        and pa.types.is_timestamp(col.type)
        and col.type.unit == "us"
        and col.type.tz
    ):
        col = col.cast(typ)  # UTC microseconds whatever zone the type names: only the label changes
    if typ == pa.string():
        if col.type == pa.string_view() or (col.type == pa.string() and col.num_chunks > 1):
            col = col.cast(pa.large_string())  # 32-bit offsets might not hold the chunks together
        elif col.type not in (pa.string(), pa.large_string()):
            raise EvalUnsupported(f"column {label} is {col.type}, expected a string column")
    elif col.type != typ:
        raise EvalUnsupported(f"column {label} is {col.type}, expected {typ}")
    return col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()


def _row_count(tables: list[pa.Table]) -> int:
    counts = {t.num_rows for t in tables}
    if len(counts) != 1:
        raise ValueError(f"expected tables of one length, got {sorted(counts) or 'no tables'}")
    return counts.pop()


class _Walker:
    """One pass over the sqlglot tree at compile time, into closures over Arrow values."""

    def __init__(self, sides: Mapping[str, Mapping[str, str]]) -> None:
        self.sides = {a.lower(): cols for a, cols in sides.items()}
        self.inputs: list[tuple[str, str, pa.DataType]] = []

    def walk(self, node: exp.Expr) -> _Node:
        method = _DISPATCH.get(type(node))  # the exact class: a subclass may mean something else
        if method is None:
            raise _Unsupported(type(node).__name__)
        return method(self, node)

    def column(self, node: exp.Column) -> _Node:
        _only(node, "this", "table")
        if not node.table or not isinstance(node.this, exp.Identifier):
            raise _Unsupported("unqualified column")
        cols = self.sides.get(node.table.lower(), {})
        names = [c for c in cols if c.lower() == node.name.lower()]
        if len(names) != 1:
            raise _Unsupported(f"unknown or ambiguous column {node.sql(dialect='spark')}")
        spark_type = _spark_type(cols[names[0]])
        key = (node.table.lower(), names[0])
        if key not in [(a, c) for a, c, _ in self.inputs]:
            self.inputs.append((*key, _arrow(spark_type)))
        return _Node(spark_type, lambda env: env[key])

    def literal(self, node: exp.Literal, negate: bool = False) -> _Node:
        text = node.this
        if node.is_string:
            if negate:
                raise _Unsupported("negated string")
            return _lit("string", text)
        sign = "-" if negate else ""
        if re.fullmatch(r"\d+", text):
            v = int(sign + text)  # Spark: INT where it fits, else BIGINT, else DECIMAL
            for t in ("int", "bigint"):
                if _RANGE[t][0] <= v <= _RANGE[t][1]:
                    return _lit(t, v)
            raise _Unsupported("integer literal beyond BIGINT is DECIMAL")
        m = re.fullmatch(r"(\d*)\.(\d*)", text)
        if m:
            digits = (m[1] + m[2]).lstrip("0")
            # few enough digits that every decimal -> double conversion rounds alike;
            # `+ 0.0`: a DECIMAL has no negative zero, so -0.0 becomes +0.0 as in Spark
            if len(digits) > 15 or len(m[2]) > 22:
                raise _Unsupported("decimal literal too precise")
            return _Node(_DECIMAL, _unreachable, float(sign + text) + 0.0)
        if re.fullmatch(r"(\d+\.?\d*|\.\d+)[eE][+-]?\d+", text):
            return _lit("double", float(sign + text))  # Spark: an exponent literal is DOUBLE
        raise _Unsupported(f"literal {text}")

    def neg(self, node: exp.Neg) -> _Node:
        if isinstance(node.this, exp.Literal):
            return self.literal(node.this, negate=True)  # Spark's grammar reads `-5` as one literal
        x = self.walk(node.this)
        if x.type in _INTS:
            return _Node(x.type, lambda env: _checked(pc.negate_checked, x.fn(env)))
        if x.type in _FLOATS:
            return _Node(x.type, lambda env: pc.negate(x.fn(env)))
        raise _Unsupported(f"-{x.type}")

    def cast(self, node: exp.Cast) -> _Node:
        """Typed literals: DATE 'yyyy-mm-dd' and what sqlglot makes of 5L, 5Y, 5S, 1.5D."""
        _only(node, "this", "to", "_type")
        to = _CAST_TO.get(node.to.this)
        if to is None or node.to.expressions:
            raise _Unsupported(f"CAST to {node.to.sql(dialect='spark')}")
        x = self.walk(node.this)
        if not x.literal:
            raise _Unsupported("CAST of a non-literal")
        v = x.value
        if x.type == _VOID:
            return _lit(to, None)
        if to == "date" and x.type == "string":
            return _lit("date", _date(v))
        if to in _INTS and x.type in _INTS and _RANGE[to][0] <= v <= _RANGE[to][1]:
            return _lit(to, v)
        if to == "double" and (x.type in (_DECIMAL, "double") or (x.type in _INTS and abs(v) <= 2**53)):
            return _lit("double", float(v))
        raise _Unsupported(f"CAST of a {x.type} literal to {to}")

    def compare(self, node: exp.Binary) -> _Node:
        return _compare(_COMPARE[type(node)], self.walk(node.this), self.walk(node.expression))

    def null_safe(self, node: exp.NullSafeEQ | exp.NullSafeNEQ) -> _Node:
        a, b = self.walk(node.this), self.walk(node.expression)
        t = _common([a, b])
        fa, fb = _to(a, t).fn, _to(b, t).fn

        def eq(env: Env) -> Value:
            x, y = fa(env), fb(env)
            both_null = pc.and_(pc.is_null(x), pc.is_null(y))
            return pc.or_(pc.fill_null(_compare_values("equal", t, x, y), False), both_null)

        if isinstance(node, exp.NullSafeNEQ):
            return _Node("boolean", lambda env: pc.invert(eq(env)))
        return _Node("boolean", eq)

    def logic(self, node: exp.And | exp.Or) -> _Node:
        a, b = _boolean(self.walk(node.this)), _boolean(self.walk(node.expression))
        kernel = pc.and_kleene if isinstance(node, exp.And) else pc.or_kleene
        return _Node("boolean", lambda env: kernel(a.fn(env), b.fn(env)))

    def not_(self, node: exp.Not) -> _Node:
        x = _boolean(self.walk(node.this))
        return _Node("boolean", lambda env: pc.invert(x.fn(env)))

    def is_(self, node: exp.Is) -> _Node:
        _only(node, "this", "expression", "negate")
        x, what = self.walk(node.this), node.expression
        if isinstance(what, exp.Null):
            out = _Node("boolean", lambda env: pc.is_null(x.fn(env)))
        elif isinstance(what, exp.Boolean):
            x, want = _boolean(x), bool(what.this)
            # IS TRUE / IS FALSE never return NULL
            out = _Node("boolean", lambda env: pc.fill_null(x.fn(env) if want else pc.invert(x.fn(env)), False))
        else:
            raise _Unsupported("IS <something else>")
        if node.args.get("negate"):
            return _Node("boolean", lambda env: pc.invert(out.fn(env)))
        return out

    def in_(self, node: exp.In) -> _Node:
        _only(node, "this", "expressions")
        if not node.expressions:
            raise _Unsupported("IN without a list")
        return _in(self.walk(node.this), [self.walk(e) for e in node.expressions])

    def between(self, node: exp.Between) -> _Node:
        _only(node, "this", "low", "high")
        x, low, high = self.walk(node.this), self.walk(node.args["low"]), self.walk(node.args["high"])
        a, b = _compare("greater_equal", x, low), _compare("less_equal", x, high)
        return _Node("boolean", lambda env: pc.and_kleene(a.fn(env), b.fn(env)))

    def arith(self, node: exp.Binary) -> _Node:
        a, b = self.walk(node.this), self.walk(node.expression)
        t = _arith_type(a, b)
        fa, fb = _to(a, t).fn, _to(b, t).fn
        name = _ARITH[type(node)]
        if t in _INTS:
            kernel = getattr(pc, name + "_checked")
            return _Node(t, lambda env: _checked(kernel, fa(env), fb(env)))
        kernel = getattr(pc, name)
        return _Node(t, lambda env: kernel(fa(env), fb(env)))

    def mod(self, node: exp.Mod) -> _Node:
        a, b = self.walk(node.this), self.walk(node.expression)
        if not b.literal or not b.value:
            raise _Unsupported("% by other than a non-zero literal")  # x % 0: ANSI raises, legacy NULL
        t = _arith_type(a, b)
        fa, divisor = _to(a, t).fn, _to(b, t).value
        if t in _INTS and abs(divisor) == 1:
            # x % ±1 = 0, where C's MIN % -1 may trap
            return _Node(t, lambda env: pc.multiply(fa(env), pa.scalar(0, _ARROW[t])))
        d = np.array(divisor, dtype=_ARROW[t].to_pandas_dtype())
        # np.fmod is Java's %: truncated, the result takes the dividend's sign (-7 % 3 = -1)
        return _Node(t, lambda env: _numpy(fa(env), lambda v: np.fmod(v, d), _ARROW[t]))

    def paren(self, node: exp.Paren) -> _Node:
        return self.walk(node.this)

    def boolean(self, node: exp.Boolean) -> _Node:
        return _lit("boolean", bool(node.this))

    def null(self, node: exp.Null) -> _Node:
        return _lit(_VOID, None)


_DISPATCH: dict[type, Callable[..., _Node]] = {
    exp.Column: _Walker.column,
    exp.Literal: _Walker.literal,
    exp.Neg: _Walker.neg,
    exp.Cast: _Walker.cast,
    exp.TryCast: _Walker.cast,
    exp.Paren: _Walker.paren,
    exp.Boolean: _Walker.boolean,
    exp.Null: _Walker.null,
    exp.NullSafeEQ: _Walker.null_safe,
    exp.NullSafeNEQ: _Walker.null_safe,
    exp.And: _Walker.logic,
    exp.Or: _Walker.logic,
    exp.Not: _Walker.not_,
    exp.Is: _Walker.is_,
    exp.In: _Walker.in_,
    exp.Between: _Walker.between,
    exp.Mod: _Walker.mod,
    **dict.fromkeys(_COMPARE, _Walker.compare),
    **dict.fromkeys(_ARITH, _Walker.arith),
}


def _only(node: exp.Expr, *allowed: str) -> None:
    extra = [k for k, v in node.args.items() if k not in allowed and v not in (None, False, [], "")]
    if extra:
        raise _Unsupported(f"{type(node).__name__} with {extra}")


def _spark_type(name: str) -> str:
    t = name.strip().lower().replace(" ", "")
    t = _TYPE_NAMES.get(t, t)
    if t == "decimal":
        return "decimal(10,0)"
    if t == _VOID or (t not in _ARROW and _decimal(t) is None):
        raise _Unsupported(f"column type {name}")
    return t


def _decimal(t: str) -> tuple[int, int] | None:
    """(precision, scale) of a Spark DECIMAL type name, else None."""
    m = re.fullmatch(r"decimal\((\d+),(\d+)\)", t)
    return (int(m[1]), int(m[2])) if m else None


def arrow_type(spark_type: str) -> pa.DataType | None:
    """The Arrow type that holds every value of Spark type ``spark_type`` exactly, as Spark
    compares them (the types this module reads, and the driver's merge copies), or None."""
    try:
        return _arrow(_spark_type(spark_type))
    except _Unsupported:
        return None


def _arrow(t: str) -> pa.DataType:
    dec = _decimal(t)
    return pa.decimal128(*dec) if dec else _ARROW[t]


def _date(text: str) -> datetime.date:
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        raise _Unsupported(f"date literal {text!r}")  # Spark also takes '2020-1-1', ' 2020-01-01 ', ...
    try:
        return datetime.date.fromisoformat(text)
    except ValueError as e:
        raise _Unsupported(f"date literal {text!r}") from e


def _lit(t: str, v: object) -> _Node:
    scalar = pa.scalar(v, _arrow(t))
    return _Node(t, lambda env: scalar, v)


def _unreachable(env: Env) -> Value:
    raise AssertionError("a decimal literal is evaluated only as DOUBLE")


def _to(node: _Node, t: str) -> _Node:
    """``node`` implicitly cast to ``t`` (a widening that Spark's coercion makes)."""
    if node.type == t or t == _VOID:
        return node
    if node.literal:
        v = node.value
        # float(int) rounds to nearest-even, as Java's (double) long does
        return _lit(t, None if v is None else float(v) if t == "double" else v)
    target, fn = _arrow(t), node.fn
    return _Node(t, lambda env: pc.cast(fn(env), target, safe=False))


def _common(nodes: list[_Node]) -> str:
    """The type Spark compares ``nodes`` in; raises where ANSI and legacy Spark could differ."""
    types = {n.type for n in nodes} - {_VOID}
    if not types:
        return _VOID
    if len(types) == 1 and _DECIMAL not in types:
        return types.pop()
    if types <= set(_INTS):
        return max(types, key=_INTS.index)
    decimals = [_decimal(t) for t in types]
    if all(decimals):
        # Spark's wider decimal: the larger scale and the larger integral part, exact when it
        # fits 38 digits (beyond, Spark bounds it and may round)
        scale = max(s for _, s in decimals)  # type: ignore[misc]
        digits = max(p - s for p, s in decimals) + scale  # type: ignore[misc]
        if digits <= 38:
            return f"decimal({digits},{scale})"
    if types <= {*_INTS, *_FLOATS, _DECIMAL} and types & set(_FLOATS):
        if types & {"double", _DECIMAL}:
            return "double"
        # FLOAT with integers: legacy Spark compares in FLOAT, ANSI in DOUBLE; the answers agree
        # when each integer is a literal FLOAT holds exactly (then DOUBLE is as good as FLOAT)
        if all(n.type in ("float", _VOID) or (n.literal and _float32_exact(n.value)) for n in nodes):
            return "double"
    raise _Unsupported(f"comparison of {sorted(types)}")


def _arith_type(a: _Node, b: _Node) -> str:
    """Spark's result type of a + - * % b, where ANSI and legacy Spark agree."""
    types = {a.type, b.type}
    numbers = {*_INTS, *_FLOATS}
    if _VOID in types:
        other = (types - {_VOID}) & numbers
        if other:
            return other.pop()
    elif types <= set(_INTS):
        return max(types, key=_INTS.index)
    elif types == {"float"}:
        return "float"
    elif types <= {*numbers, _DECIMAL} and types & {"double"} or types == {"float", _DECIMAL}:
        return "double"
    raise _Unsupported(f"arithmetic on {sorted(types)}")  # FLOAT with integers: FLOAT or DOUBLE by mode


def _float32_exact(v: object) -> bool:
    return isinstance(v, int) and float(np.float32(v)) == v


def _boolean(node: _Node) -> _Node:
    if node.type == _VOID:
        return _lit("boolean", None)
    if node.type != "boolean":
        raise _Unsupported(f"{node.type} as a boolean")  # Spark would cast it
    return node


def _compare(op: str, a: _Node, b: _Node) -> _Node:
    t = _common([a, b])
    fa, fb = _to(a, t).fn, _to(b, t).fn
    return _Node("boolean", lambda env: _compare_values(op, t, fa(env), fb(env)))


def _compare_values(op: str, t: str, x: Value, y: Value) -> Value:
    if t == _VOID:
        return pa.scalar(None, pa.bool_())
    if t in _FLOATS:
        return _float_compare(op, x, y)
    return getattr(pc, op)(x, y)


def _float_compare(op: str, x: Value, y: Value) -> Value:
    """Spark's order for floating point: NaN = NaN, NaN above +inf, -0.0 = 0.0 (Arrow follows
    IEEE, where NaN compares false). The plain and_/or_ are NULL exactly where x or y is."""
    if op in ("greater", "greater_equal"):
        return _float_compare(op.replace("greater", "less"), y, x)
    if op == "not_equal":
        return pc.invert(_float_compare("equal", x, y))
    nx, ny = pc.is_nan(x), pc.is_nan(y)
    if op == "equal":
        return pc.or_(pc.equal(x, y), pc.and_(nx, ny))
    if op == "less":
        return pc.and_(pc.invert(nx), pc.or_(ny, pc.less(x, y)))
    return pc.or_(ny, pc.and_(pc.invert(nx), pc.less_equal(x, y)))  # less_equal


def _in(x: _Node, items: list[_Node]) -> _Node:
    """x IN (...): TRUE on a match, else NULL if x or an item is NULL, else FALSE."""
    t = _common([x, *items])
    fx, fns = _to(x, t).fn, [_to(i, t).fn for i in items]

    def equalities(env: Env) -> Value:
        v = fx(env)
        return reduce(pc.or_kleene, (_compare_values("equal", t, v, f(env)) for f in fns))

    if t not in (*_INTS, "string", "date", "boolean") or not all(i.literal for i in items):
        return _Node("boolean", equalities)  # floats too: a hash lookup would tell -0.0 from 0.0
    values = [i.value for i in items]
    value_set = pa.array([v for v in values if v is not None], _ARROW[t])
    has_null = None in values
    no_bool = pa.scalar(None, pa.bool_())

    def lookup(env: Env) -> Value:
        """One hash lookup instead of a pass per item."""
        v = fx(env)
        if isinstance(v, pa.Scalar):
            return equalities(env)
        hit = pc.is_in(v, value_set=value_set.cast(v.type))  # NULL v: False (no NULL in the set)
        if has_null:
            hit = pc.if_else(hit, True, no_bool)
        return pc.if_else(pc.is_valid(v), hit, no_bool) if v.null_count else hit

    return _Node("boolean", lookup)


def _checked(kernel: Callable[..., Value], *args: Value) -> Value:
    try:
        return kernel(*args)
    except pa.ArrowInvalid as e:
        raise EvalUnsupported(
            f"integer overflow ({e}): ANSI Spark raises here and legacy Spark wraps; let Spark evaluate it"
        ) from e


def _numpy(x: Value, f: Callable[[np.ndarray], np.ndarray], typ: pa.DataType) -> Value:
    """``f`` over the non-NULL values of ``x`` (the values under a NULL are arbitrary)."""
    with np.errstate(invalid="ignore"):  # fmod(inf, d) is NaN, as in Java
        if isinstance(x, pa.Scalar):
            if not x.is_valid:
                return pa.scalar(None, typ)
            return pa.scalar(f(np.array([x.as_py()], typ.to_pandas_dtype()))[0].item(), typ)
        out = f(x.fill_null(0).to_numpy(zero_copy_only=False))
    mask = x.is_null().to_numpy(zero_copy_only=False) if x.null_count else None
    return pa.array(out, typ, mask=mask)
