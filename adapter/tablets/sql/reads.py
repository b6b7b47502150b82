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

from collections.abc import Iterator
from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from tablets.spec.conditions import Cond, conjuncts, predicate, with_sql
from tablets.sqltext import DIALECT

_OWN_ARGS = {"this", "db", "catalog", "alias"}


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
    elif isinstance(tree, exp.Insert) or (
        isinstance(tree, exp.Create) and str(tree.args.get("kind", "")).upper() == "TABLE"
    ):
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
    for c in conjuncts(where.this):
        pred = predicate(c, names)
        if pred is not None:
            yield with_sql(pred, c)
