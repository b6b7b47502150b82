"""Spark SQL expressions evaluated over Arrow tables on the driver, exactly as Spark 4 would.

The merge engine classifies row pairs by its clauses' conditions (``WHEN NOT MATCHED BY SOURCE
AND t.id % 100 = 0 THEN DELETE``); when the rows are already on the driver, evaluating such a
condition here saves a Spark job. A wrong answer silently deletes or keeps the wrong rows, so the
subset is the one whose results we can pin down without knowing the session's settings: qualified
columns and plain literals, comparisons within one type family, three-valued logic, IN, BETWEEN,
IS [NOT] NULL/TRUE/FALSE, integer/float arithmetic with ``%`` and ``/`` by a literal, ``||`` of
strings, and COALESCE and CASE WHEN over values of one type (or integers). Timestamps and
decimals are columns and exact typed literals only (dbt's ``s.updated_at > t.updated_at``,
``CAST('0.5' AS DECIMAL(5, 5))``, a TIMESTAMP_NTZ literal, a typed NULL): a TIMESTAMP is UTC
microseconds on both sides whatever the session's time zone, while a TIMESTAMP literal, a
TIMESTAMP beside a TIMESTAMP_NTZ or a DATE, and decimal arithmetic depend on settings or on
rounding rules, and compile to ``None`` (``eval_types`` holds those rules). Types follow
Spark's coercion only where ANSI and non-ANSI Spark agree (a FLOAT beside an integer is FLOAT in
one and DOUBLE in the other, so only an exactly representable literal may meet a FLOAT), an
integer overflow (ANSI raises, legacy wraps) raises :class:`EvalUnsupported` at run time, and
anything else compiles to ``None``: the caller then lets Spark evaluate it.

>>> import pyarrow as pa
>>> from tablets.spec.expr import Expr
>>> c = compile_predicate(Expr.parse("t.id % 100 = 0"), {"t": {"id": "bigint"}})
>>> c({"t": pa.table({"id": pa.array([100, 7, None], pa.int64())})}).to_pylist()
[True, False, False]
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import reduce

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import sqlglot
from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.tokens import TokenType

from tablets.engine.eval_types import (
    ARROW,
    DECIMAL_LITERAL,
    FLOATS,
    INT_RANGE,
    INTS,
    VOID,
    Env,
    Node,
    Unsupported,
    Value,
    arith_type,
    arrow_of,
    as_boolean,
    common_type,
    date_text,
    decimal_params,
    decimal_text,
    float_text,
    lit,
    same_type,
    spark_type,
    timestamp_ntz_text,
    unreachable,
    widen,
)
from tablets.spec.expr import Expr


class EvalUnsupported(Exception):
    """The data leaves the semantics the compiled expression promises (e.g. an integer overflow,
    which ANSI Spark raises on and legacy Spark wraps): let Spark evaluate the expression."""


# what a compiled expression may raise over data: the caller then lets Spark evaluate it
EVAL_FAILED = (EvalUnsupported, pa.ArrowException, NotImplementedError)


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


def compile_expr(sql: Expr, sides: Mapping[str, Mapping[str, str]]) -> Compiled | None:
    """``sql`` (columns qualified by the aliases of ``sides``: alias -> {column: Spark type})
    compiled to a function over Arrow tables, or None outside the subset."""
    return _compile(sql, sides, predicate=False)


def compile_predicate(sql: Expr, sides: Mapping[str, Mapping[str, str]]) -> Compiled | None:
    """:func:`compile_expr` for a boolean condition; the result is True only where the condition
    is TRUE (NULL counts as False, as in ``WHEN ... AND <cond>``)."""
    return _compile(sql, sides, predicate=True)


def _compile(sql: Expr, sides: Mapping[str, Mapping[str, str]], predicate: bool) -> Compiled | None:
    if "\\" in sql.text:
        return None  # Spark and sqlglot unescape string literals differently in corners (\%, \_)
    try:
        tree = sql.tree
        tokens = Spark().tokenize(sql.text)  # (the text's tokens: what the tree may have dropped)
    except sqlglot.errors.SqlglotError:
        return None
    if not _tokens_match(tokens, tree):
        return None
    walker = _Walker(sides)
    try:
        node = walker.walk(tree)
    except Unsupported:
        return None
    if node.type == DECIMAL_LITERAL or (predicate and node.type != "boolean"):
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

    def walk(self, node: exp.Expr) -> Node:
        method = _DISPATCH.get(type(node))  # the exact class: a subclass may mean something else
        if method is None:
            raise Unsupported(type(node).__name__)
        return method(self, node)

    def column(self, node: exp.Column) -> Node:
        _only(node, "this", "table")
        if not node.table or not isinstance(node.this, exp.Identifier):
            raise Unsupported("unqualified column")
        cols = self.sides.get(node.table.lower(), {})
        names = [c for c in cols if c.lower() == node.name.lower()]
        if len(names) != 1:
            raise Unsupported(f"unknown or ambiguous column {node.sql(dialect='spark')}")
        typ = spark_type(cols[names[0]])
        key = (node.table.lower(), names[0])
        if key not in [(a, c) for a, c, _ in self.inputs]:
            self.inputs.append((*key, arrow_of(typ)))
        return Node(typ, lambda env: env[key])

    def literal(self, node: exp.Literal, negate: bool = False) -> Node:
        text = node.this
        if node.is_string:
            if negate:
                raise Unsupported("negated string")
            return lit("string", text)
        sign = "-" if negate else ""
        if re.fullmatch(r"\d+", text):
            v = int(sign + text)  # Spark: INT where it fits, else BIGINT, else DECIMAL
            for t in ("int", "bigint"):
                if INT_RANGE[t][0] <= v <= INT_RANGE[t][1]:
                    return lit(t, v)
            raise Unsupported("integer literal beyond BIGINT is DECIMAL")
        m = re.fullmatch(r"(\d*)\.(\d*)", text)
        if m:
            digits = (m[1] + m[2]).lstrip("0")
            # few enough digits that every decimal -> double conversion rounds alike;
            # `+ 0.0`: a DECIMAL has no negative zero, so -0.0 becomes +0.0 as in Spark
            if len(digits) > 15 or len(m[2]) > 22:
                raise Unsupported("decimal literal too precise")
            return Node(DECIMAL_LITERAL, unreachable, float(sign + text) + 0.0)
        if re.fullmatch(r"(\d+\.?\d*|\.\d+)[eE][+-]?\d+", text):
            return lit("double", float(sign + text))  # Spark: an exponent literal is DOUBLE
        raise Unsupported(f"literal {text}")

    def neg(self, node: exp.Neg) -> Node:
        if isinstance(node.this, exp.Literal):
            return self.literal(node.this, negate=True)  # Spark's grammar reads `-5` as one literal
        x = self.walk(node.this)
        if x.type in INTS:
            return Node(x.type, lambda env: _checked(pc.negate_checked, x.fn(env)))
        if x.type in FLOATS:
            return Node(x.type, lambda env: pc.negate(x.fn(env)))
        raise Unsupported(f"-{x.type}")

    def cast(self, node: exp.Cast) -> Node:
        """Typed literals: DATE 'yyyy-mm-dd', what sqlglot makes of 5L, 5Y, 5S, 1.5D, a typed
        NULL of any type read here, and the literals whose value needs no rounding or zone:
        CAST('0.5' AS DECIMAL(5, 5)), CAST('-0.0' AS DOUBLE), CAST('2024-03-10 02:30:00' AS
        TIMESTAMP_NTZ)."""
        _only(node, "this", "to", "_type")
        to = _CAST_TO.get(node.to.this)
        if to is None:
            to = spark_type(node.to.sql(dialect="spark"))  # raises outside the types read here
        elif node.to.expressions:
            raise Unsupported(f"CAST to {node.to.sql(dialect='spark')}")
        x = self.walk(node.this)
        if not x.literal:
            raise Unsupported("CAST of a non-literal")
        v = x.value
        if x.type == VOID:
            return lit(to, None)
        if to == "date" and x.type == "string":
            return lit("date", date_text(v))
        if to in INTS and x.type in INTS and INT_RANGE[to][0] <= v <= INT_RANGE[to][1]:
            return lit(to, v)
        if to == "double" and (x.type in (DECIMAL_LITERAL, "double") or (x.type in INTS and abs(v) <= 2**53)):
            return lit("double", float(v))
        if to in FLOATS and x.type == "string":
            return lit(to, float_text(v, to))
        if to == "timestamp_ntz" and x.type == "string":
            return lit(to, timestamp_ntz_text(v))
        if decimal_params(to) and (x.type == "string" or x.type in INTS):
            return lit(to, decimal_text(str(v), to))
        raise Unsupported(f"CAST of a {x.type} literal to {to}")

    def compare(self, node: exp.Binary) -> Node:
        return _compare(_COMPARE[type(node)], self.walk(node.this), self.walk(node.expression))

    def null_safe(self, node: exp.NullSafeEQ | exp.NullSafeNEQ) -> Node:
        a, b = self.walk(node.this), self.walk(node.expression)
        t = common_type([a, b])
        fa, fb = widen(a, t).fn, widen(b, t).fn

        def eq(env: Env) -> Value:
            x, y = fa(env), fb(env)
            both_null = pc.and_(pc.is_null(x), pc.is_null(y))
            return pc.or_(pc.fill_null(_compare_values("equal", t, x, y), False), both_null)

        if isinstance(node, exp.NullSafeNEQ):
            return Node("boolean", lambda env: pc.invert(eq(env)))
        return Node("boolean", eq)

    def logic(self, node: exp.And | exp.Or) -> Node:
        a, b = as_boolean(self.walk(node.this)), as_boolean(self.walk(node.expression))
        kernel = pc.and_kleene if isinstance(node, exp.And) else pc.or_kleene
        return Node("boolean", lambda env: kernel(a.fn(env), b.fn(env)))

    def not_(self, node: exp.Not) -> Node:
        x = as_boolean(self.walk(node.this))
        return Node("boolean", lambda env: pc.invert(x.fn(env)))

    def is_(self, node: exp.Is) -> Node:
        _only(node, "this", "expression", "negate")
        x, what = self.walk(node.this), node.expression
        if isinstance(what, exp.Null):
            out = Node("boolean", lambda env: pc.is_null(x.fn(env)))
        elif isinstance(what, exp.Boolean):
            x, want = as_boolean(x), bool(what.this)
            # IS TRUE / IS FALSE never return NULL
            out = Node("boolean", lambda env: pc.fill_null(x.fn(env) if want else pc.invert(x.fn(env)), False))
        else:
            raise Unsupported("IS <something else>")
        if node.args.get("negate"):
            return Node("boolean", lambda env: pc.invert(out.fn(env)))
        return out

    def in_(self, node: exp.In) -> Node:
        _only(node, "this", "expressions")
        if not node.expressions:
            raise Unsupported("IN without a list")
        return _in(self.walk(node.this), [self.walk(e) for e in node.expressions])

    def between(self, node: exp.Between) -> Node:
        _only(node, "this", "low", "high")
        x, low, high = self.walk(node.this), self.walk(node.args["low"]), self.walk(node.args["high"])
        a, b = _compare("greater_equal", x, low), _compare("less_equal", x, high)
        return Node("boolean", lambda env: pc.and_kleene(a.fn(env), b.fn(env)))

    def arith(self, node: exp.Binary) -> Node:
        a, b = self.walk(node.this), self.walk(node.expression)
        t = arith_type(a, b)
        fa, fb = widen(a, t).fn, widen(b, t).fn
        name = _ARITH[type(node)]
        if t in INTS:
            kernel = getattr(pc, name + "_checked")
            return Node(t, lambda env: _checked(kernel, fa(env), fb(env)))
        kernel = getattr(pc, name)
        return Node(t, lambda env: kernel(fa(env), fb(env)))

    def mod(self, node: exp.Mod) -> Node:
        a, b = self.walk(node.this), self.walk(node.expression)
        if not b.literal or not b.value:
            raise Unsupported("% by other than a non-zero literal")  # x % 0: ANSI raises, legacy NULL
        t = arith_type(a, b)
        fa, divisor = widen(a, t).fn, widen(b, t).value
        if t in INTS and abs(divisor) == 1:
            # x % ±1 = 0, where C's MIN % -1 may trap
            return Node(t, lambda env: pc.multiply(fa(env), pa.scalar(0, ARROW[t])))
        d = np.array(divisor, dtype=ARROW[t].to_pandas_dtype())
        # np.fmod is Java's %: truncated, the result takes the dividend's sign (-7 % 3 = -1)
        return Node(t, lambda env: _numpy(fa(env), lambda v: np.fmod(v, d), ARROW[t]))

    def div(self, node: exp.Div) -> Node:
        """``/`` by a non-zero literal: Spark divides in DOUBLE (x / 0 raises under ANSI and is
        NULL otherwise); ``arith_type`` refuses an integer beside a DECIMAL (a DECIMAL division)."""
        _only(node, "this", "expression", "typed", "safe")
        a, b = self.walk(node.this), self.walk(node.expression)
        t = arith_type(a, b)
        if not b.literal or not b.value:
            raise Unsupported("/ by other than a non-zero literal")
        fa, divisor = widen(widen(a, t), "double").fn, pa.scalar(float(b.value), pa.float64())
        return Node("double", lambda env: pc.divide(fa(env), divisor))

    def concat(self, node: exp.DPipe) -> Node:
        """``a || b`` of two strings: NULL if either is."""
        _only(node, "this", "expression", "safe")
        a, b = self.walk(node.this), self.walk(node.expression)
        if not {a.type, b.type} <= {"string", VOID}:
            raise Unsupported(f"|| of {a.type} and {b.type}")  # Spark would cast them to STRING
        fa, fb = a.fn, b.fn

        def join(env: Env) -> Value:
            x, y = (v.cast(pa.large_string()) for v in (fa(env), fb(env)))
            return pc.binary_join_element_wise(x, y, pa.scalar("", pa.large_string()))

        return Node("string", join)

    def coalesce(self, node: exp.Coalesce) -> Node:
        _only(node, "this", "expressions")
        items = [self.walk(node.this), *(self.walk(e) for e in node.expressions)]
        t = same_type(items)
        fns = [widen(i, t).fn for i in items]
        if t == VOID:
            return lit(VOID, None)
        return Node(t, lambda env: pc.coalesce(*(f(env) for f in fns)))

    def case(self, node: exp.Case) -> Node:
        """CASE WHEN ... THEN ... [ELSE ...] END (a NULL condition does not fire). Every branch is
        computed: one Spark would skip may raise EvalUnsupported, and Spark then evaluates it."""
        _only(node, "ifs", "default")
        conds, values = [], []
        for branch in node.args["ifs"]:
            _only(branch, "this", "true")
            cond = self.walk(branch.this)
            if cond.type != "boolean":
                raise Unsupported(f"CASE WHEN of {cond.type}")  # Spark refuses even a NULL here
            conds.append(cond)
            values.append(self.walk(branch.args["true"]))
        default = node.args.get("default")
        other = self.walk(default) if default is not None else lit(VOID, None)
        t = same_type([*values, other])
        pairs = [(c.fn, widen(v, t).fn) for c, v in zip(conds, values, strict=True)]
        fo = widen(other, t).fn
        if t == VOID:
            return lit(VOID, None)

        def pick(env: Env) -> Value:
            out = fo(env)
            for fc, fv in reversed(pairs):
                out = pc.if_else(pc.fill_null(fc(env), False), fv(env), out)
            return out

        return Node(t, pick)

    def paren(self, node: exp.Paren) -> Node:
        return self.walk(node.this)

    def boolean(self, node: exp.Boolean) -> Node:
        return lit("boolean", bool(node.this))

    def null(self, node: exp.Null) -> Node:
        return lit(VOID, None)


_DISPATCH: dict[type, Callable[..., Node]] = {
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
    exp.Div: _Walker.div,
    exp.DPipe: _Walker.concat,
    exp.Coalesce: _Walker.coalesce,
    exp.Case: _Walker.case,
    **dict.fromkeys(_COMPARE, _Walker.compare),
    **dict.fromkeys(_ARITH, _Walker.arith),
}


def _only(node: exp.Expr, *allowed: str) -> None:
    extra = [k for k, v in node.args.items() if k not in allowed and v not in (None, False, [], "")]
    if extra:
        raise Unsupported(f"{type(node).__name__} with {extra}")


def _compare(op: str, a: Node, b: Node) -> Node:
    t = common_type([a, b])
    fa, fb = widen(a, t).fn, widen(b, t).fn
    return Node("boolean", lambda env: _compare_values(op, t, fa(env), fb(env)))


def _compare_values(op: str, t: str, x: Value, y: Value) -> Value:
    if t == VOID:
        return pa.scalar(None, pa.bool_())
    if t in FLOATS:
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


def _in(x: Node, items: list[Node]) -> Node:
    """x IN (...): TRUE on a match, else NULL if x or an item is NULL, else FALSE."""
    t = common_type([x, *items])
    fx, fns = widen(x, t).fn, [widen(i, t).fn for i in items]

    def equalities(env: Env) -> Value:
        v = fx(env)
        return reduce(pc.or_kleene, (_compare_values("equal", t, v, f(env)) for f in fns))

    if t not in (*INTS, "string", "date", "boolean") or not all(i.literal for i in items):
        return Node("boolean", equalities)  # floats too: a hash lookup would tell -0.0 from 0.0
    values = [i.value for i in items]
    value_set = pa.array([v for v in values if v is not None], ARROW[t])
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

    return Node("boolean", lookup)


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
