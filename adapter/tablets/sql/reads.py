"""The table references of a query, for reading tablet tables with Spark's own Parquet scan.

``references(text)`` finds every table a read-only statement reads (a query, or the query of an
``INSERT`` / ``CREATE TABLE ... AS`` into another table), with where its name is written (so
the name alone can be replaced in the original text: the statement is never re-generated) and
the predicates its WHERE puts on it alone, for skipping tablets by their statistics and for
filtering its rows before the deletion vectors are tested (``Cond.sql``).

Predicates are taken only where they cannot skip a row the query needs: the conjuncts of the
WHERE of a SELECT that reads that one table (no join), of the form ``column <op> literal``,
``BETWEEN``, ``IN (literals)``, ``IS [NOT] NULL``, ``LIKE 'prefix%'``, ``NOT`` of those; a literal
only of a type that compares with the column's as Spark compares them (numbers with integer and
decimal columns, strings with strings, dates and ``'yyyy-mm-dd'`` with dates, timestamps with
their offset (``'2024-01-01 00:00:00+00:00'``) with TIMESTAMP columns). Spark still
evaluates the whole WHERE: the predicates only choose which tablets are read.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace

import sqlglot
from sqlglot import exp

from tablets.sql.parse import DIALECT
from tablets.storage.pruning import Pred

_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
# a timestamp with its offset ('2024-01-01 00:00:00+00:00': dbt's microbatch bounds)
_ISO_INSTANT = re.compile(r"^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(\.\d{1,6})?[+-]\d{2}:\d{2}$")
_INT = re.compile(r"^\d+$")
_DEC = re.compile(r"^\d+\.\d*$|^\.\d+$")
_OWN_ARGS = {"this", "db", "catalog", "alias"}


@dataclass(frozen=True)
class Cond:
    """A predicate as written: ``op`` (a ``Pred`` op, or ``between``) on a lower-case column name
    with literals (``Lit``); ``not`` holds the negated ``Cond`` as its value."""

    op: str
    column: str = ""
    value: object = None
    # the conjunct as Spark SQL on the bare column name ("" where it cannot be written so): the
    # front door may filter the table's rows by it early (tablets.spark.reads)
    sql: str = field(default="", compare=False)


@dataclass(frozen=True)
class TableRef:
    """One table reference: its name, where it is written (``start``..``end`` inclusive, in the
    statement text), whether it has an alias, and the predicates of its SELECT's WHERE on it."""

    name: str  # as written, without quotes: db.t
    start: int
    end: int
    aliased: bool
    conds: tuple[Cond, ...] = ()


def references(text: str) -> list[TableRef] | None:
    """The table references of ``text`` that may be replaced by a view, or None when the
    statement is not a read (or not one this rewrite is sure about: a column qualified by
    database, a table with a sample or hints and no alias)."""
    try:
        trees = [t for t in sqlglot.parse(text, read=DIALECT) if t is not None]
    except sqlglot.errors.SqlglotError:
        return None
    if len(trees) != 1:
        return None
    tree = trees[0]
    if isinstance(tree, exp.Query):
        body: exp.Expr = tree
    elif isinstance(tree, exp.Insert) or (isinstance(tree, exp.Create) and str(tree.args.get("kind", "")).upper() == "TABLE"):
        q = tree.expression
        if not isinstance(q, exp.Query):
            return None
        body = q
    else:
        return None
    if any(c.args.get("db") is not None for c in body.find_all(exp.Column)):
        return None  # db.t.col: the view's name would not resolve it
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    out = []
    for node in body.find_all(exp.Table):
        ref = _reference(node, text, ctes)
        if ref is not None:
            out.append(ref)
    return out


def _reference(node: exp.Table, text: str, ctes: set[str]) -> TableRef | None:
    parts = [node.args.get(k) for k in ("catalog", "db", "this")]
    idents = [p for p in parts if isinstance(p, exp.Identifier)]
    if not idents or len(idents) != len([p for p in parts if p is not None]):
        return None  # a table function, a path, a name sqlglot built
    if any("start" not in i.meta for i in idents):
        return None
    if len(idents) == 1 and idents[0].name.lower() in ctes:
        return None  # a CTE of the statement
    extra = [k for k, v in node.args.items() if k not in _OWN_ARGS and v not in (None, [], False)]
    if extra:
        return None  # AS OF, TABLESAMPLE, hints, ... : left to Spark
    name = ".".join(i.name for i in idents)
    start, end = idents[0].meta["start"], idents[-1].meta["end"]
    if text[start : end + 1].replace("`", "").replace(" ", "") != name.replace("`", ""):
        return None  # offsets that do not point at the name (comments, odd quoting)
    return TableRef(name, start, end, bool(node.alias), tuple(_predicates(node)))


# --- predicates ------------------------------------------------------------------------------------


def _predicates(node: exp.Table) -> Iterator[Cond]:
    select = node.parent
    if not isinstance(select, exp.From) or not isinstance(select.parent, exp.Select):
        return
    select = select.parent
    if select.args.get("joins") or select.args.get("laterals"):
        return
    where = select.args.get("where")
    if where is None:
        return
    names = {node.name.lower()}
    if node.alias:
        names = {node.alias.lower()}
    for c in _conjuncts(where.this):
        pred = _pred(c, names)
        if pred is not None:
            yield _with_sql(pred, c)


def _with_sql(pred: Cond, c: exp.Expr) -> Cond:
    """``pred`` with the SQL of its conjunct ``c`` on the bare column (``Cond.sql``)."""
    bare = c.copy()
    for col in bare.find_all(exp.Column):
        col.set("table", None)
    sql = bare.sql(dialect=DIALECT)
    # a backslash: Spark and sqlglot unescape some string literals differently
    return replace(pred, sql="" if "\\" in sql else sql)


def _conjuncts(e: exp.Expr) -> Iterator[exp.Expr]:
    e = _unparen(e)
    if isinstance(e, exp.And):
        yield from _conjuncts(e.this)
        yield from _conjuncts(e.expression)
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


def _pred(e: exp.Expr, names: set[str]) -> Cond | None:
    e = _unparen(e)
    if isinstance(e, exp.Not):
        inner = _unparen(e.this)
        if isinstance(inner, exp.Is):
            p = _pred(inner, names)
            return Cond("not_null", p.column) if p is not None and p.op == "is_null" else None
        p = _pred(inner, names)
        return Cond("not", value=p) if p is not None and p.op in ("eq", "in") else None
    if isinstance(e, exp.NEQ):
        p = _pred(exp.EQ(this=e.this, expression=e.expression), names)
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


def condition(text: str, alias: str) -> list[Cond]:
    """The conjuncts of the SQL condition ``text`` on the columns of the table ``alias`` (or
    unqualified: a condition that sees only that table's columns, a BY SOURCE clause's or a
    DELETE's WHERE), as ``Cond`` to ``typed``; the others are left out (none: [])."""
    try:
        tree = sqlglot.parse_one(text, read=DIALECT, into=exp.Condition)
    except (sqlglot.errors.SqlglotError, ValueError):
        return []
    return [_with_sql(p, c) for c in _conjuncts(tree) if (p := _pred(c, {alias.lower()})) is not None]
