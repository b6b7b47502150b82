"""A condition's conjuncts as statistics predicates: the part of a WHERE, a clause's condition or
an ON condition that can rule tablets (and row groups) out by their min/max statistics.

``condition(expr, alias)`` takes the conjuncts of a condition on one table of the form
``column <op> literal``, ``BETWEEN``, ``IN (literals)``, ``IS [NOT] NULL``, ``LIKE 'prefix%'``,
``NOT`` of those (``Cond``); ``typed`` makes them ``storage.pruning`` predicates where the
literal compares with the column's values as Spark compares them. Part of the statement
vocabulary: the SQL front door's reads (``sql.reads``), the engine's pruning and the native-read
planner use it. May import the store's predicate types only.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace

import sqlglot
from sqlglot import exp

from tablets.spec.expr import Expr
from tablets.sqltext import DIALECT
from tablets.storage.pruning import Pred

_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
# a timestamp with its offset ('2024-01-01 00:00:00+00:00': dbt's microbatch bounds)
_ISO_INSTANT = re.compile(r"^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(\.\d{1,6})?[+-]\d{2}:\d{2}$")
_INT = re.compile(r"^\d+$")
_DEC = re.compile(r"^\d+\.\d*$|^\.\d+$")


@dataclass(frozen=True)
class Cond:
    """A predicate as written: ``op`` (a ``Pred`` op, or ``between``) on a lower-case column name
    with literals (``Lit``); ``not`` holds the negated ``Cond`` as its value."""

    op: str
    column: str = ""
    value: object = None
    # the conjunct as Spark SQL on the bare column name ("" where it cannot be written so): the
    # front door may filter the table's rows by it early (tablets.reads)
    sql: str = field(default="", compare=False)


def with_sql(pred: Cond, c: exp.Expr) -> Cond:
    """``pred`` with the SQL of its conjunct ``c`` on the bare column (``Cond.sql``)."""
    bare = c.copy()
    for col in bare.find_all(exp.Column):
        col.set("table", None)
    sql = bare.sql(dialect=DIALECT)
    # a backslash: Spark and sqlglot unescape some string literals differently
    return replace(pred, sql="" if "\\" in sql else sql)


def conjuncts(e: exp.Expr) -> Iterator[exp.Expr]:
    e = _unparen(e)
    if isinstance(e, exp.And):
        yield from conjuncts(e.this)
        yield from conjuncts(e.expression)
    else:
        yield e


def _unparen(e: exp.Expr) -> exp.Expr:
    while isinstance(e, exp.Paren):
        e = e.this
    return e


def _column(e: exp.Expr, names: set[str]) -> str | None:
    e = _unparen(e)
    if not isinstance(e, exp.Column) or not isinstance(e.this, exp.Identifier):
        return None
    table = e.args.get("table")
    if table is not None and table.name.lower() not in names:
        return None
    return e.name.lower()


# A literal keeps its SQL kind: ("int", 5), ("dec", Decimal), ("str", 'a'), ("date", date)
Lit = tuple[str, object]


def _literal(e: exp.Expr) -> Lit | None:
    e = _unparen(e)
    neg = False
    if isinstance(e, exp.Neg):
        neg, e = True, _unparen(e.this)
    if isinstance(e, exp.Cast) and isinstance(e.this, exp.Literal) and e.this.is_string and not neg:
        if e.to.this == exp.DataType.Type.DATE and _ISO_DATE.match(e.this.name):
            try:
                return ("date", dt.date.fromisoformat(e.this.name))
            except ValueError:
                return None
        return None
    if not isinstance(e, exp.Literal):
        return None
    raw = str(e.this)
    if e.is_string:
        return None if neg else ("str", raw)
    if _INT.match(raw):
        return ("int", -int(raw) if neg else int(raw))
    if _DEC.match(raw):
        d = decimal.Decimal(raw)
        return ("dec", -d if neg else d)
    return None  # 1e3, 1.5D, 2L, ... : other types in Spark


_SWAP = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "eq_null_safe": "eq_null_safe"}
_CMP = {exp.EQ: "eq", exp.LT: "lt", exp.LTE: "le", exp.GT: "gt", exp.GTE: "ge", exp.NullSafeEQ: "eq_null_safe"}


def predicate(e: exp.Expr, names: set[str]) -> Cond | None:
    e = _unparen(e)
    if isinstance(e, exp.Not):
        inner = _unparen(e.this)
        if isinstance(inner, exp.Is):
            p = predicate(inner, names)
            return Cond("not_null", p.column) if p is not None and p.op == "is_null" else None
        p = predicate(inner, names)
        return Cond("not", value=p) if p is not None and p.op in ("eq", "in") else None
    if isinstance(e, exp.NEQ):
        p = predicate(exp.EQ(this=e.this, expression=e.expression), names)
        return Cond("not", value=p) if p is not None else None
    for cls, op in _CMP.items():
        if isinstance(e, cls):
            col, lit = _column(e.this, names), _literal(e.expression)
            if col is None:
                col, lit, op = _column(e.expression, names), _literal(e.this), _SWAP[op]
            return Cond(op, col, lit) if col is not None and lit is not None else None
    if isinstance(e, exp.Between):
        col, lo, hi = _column(e.this, names), _literal(e.args["low"]), _literal(e.args["high"])
        if col is None or lo is None or hi is None:
            return None
        return Cond("between", col, (lo, hi))
    if isinstance(e, exp.In) and not e.args.get("query") and not e.args.get("unnest"):
        col = _column(e.this, names)
        lits = [_literal(x) for x in e.expressions]
        if col is None or not lits or any(x is None for x in lits):
            return None
        return Cond("in", col, tuple(lits))
    if isinstance(e, exp.Is) and isinstance(e.expression, exp.Null):
        col = _column(e.this, names)
        return Cond("is_null", col) if col is not None else None
    if isinstance(e, exp.Like) and not isinstance(e.parent, exp.Escape):
        col, lit = _column(e.this, names), _literal(e.expression)
        if col is None or lit is None or lit[0] != "str":
            return None
        prefix = re.split(r"[%_\\]", str(lit[1]), maxsplit=1)[0]
        return Cond("starts_with", col, ("str", prefix)) if prefix else None
    return None


def typed(conds: Sequence[Cond], kinds: dict[str, str], columns: dict[str, str]) -> list[Pred]:
    """``conds`` (of a ``TableRef``) as ``Pred`` on the table's columns, their literals as values
    of the columns' kinds (``pruning.kind_of``; ``columns``: lower-case name -> name); one whose
    literal does not compare with its column as Spark compares them is dropped."""
    out: list[Pred] = []
    for p in conds:
        if p.op == "not":
            inner = typed([p.value], kinds, columns)  # type: ignore[list-item]
            out += [Pred("not", value=i) for i in inner if i.op in ("eq", "in")]
            continue
        col = columns.get(p.column)
        kind = kinds.get(col) if col is not None else None
        if col is None or kind is None:
            continue
        if p.op in ("is_null", "not_null"):
            out.append(Pred(p.op, col))
        elif p.op == "between":
            lo, hi = _value(p.value[0], kind), _value(p.value[1], kind)  # type: ignore[index]
            if lo is not None and hi is not None:
                out += [Pred("ge", col, lo), Pred("le", col, hi)]
        elif p.op == "in":
            vals = [_value(v, kind) for v in p.value]  # type: ignore[attr-defined]
            if all(v is not None for v in vals):
                out.append(Pred("in", col, tuple(vals)))
        else:
            v = _value(p.value, kind)  # type: ignore[arg-type]
            if v is not None:
                out.append(Pred(p.op, col, v))
    return out


def _value(lit: Lit, kind: str) -> object:
    """The literal as a value compared with a column of ``kind`` as Spark compares them, or None."""
    what, v = lit
    if kind == "int" and what == "int":
        return v
    if kind in ("int", "decimal") and what in ("int", "dec"):
        return decimal.Decimal(v)  # type: ignore[arg-type]
    if kind == "str" and what == "str":
        return v
    if kind == "date":
        if what == "date":
            return v
        if what == "str" and _ISO_DATE.match(str(v)):
            try:
                return dt.date.fromisoformat(str(v))
            except ValueError:
                return None
    if kind == "ts_tz" and what == "str" and _ISO_INSTANT.match(str(v)):
        try:  # with its offset, an instant in every session zone
            return dt.datetime.fromisoformat(str(v))
        except ValueError:
            return None
    return None


def condition(expr: Expr, alias: str) -> list[Cond]:
    """The conjuncts of the condition ``expr`` on the columns of the table ``alias`` (or
    unqualified: a condition that sees only that table's columns, a BY SOURCE clause's or a
    DELETE's WHERE), as ``Cond`` to ``typed``; the others are left out (none: [])."""
    try:
        tree = expr.tree
    except sqlglot.errors.SqlglotError:
        return []
    if not isinstance(tree, exp.Condition):
        return []
    return [with_sql(p, c) for c in conjuncts(tree) if (p := predicate(c, {alias.lower()})) is not None]
