"""A statement's expression as a value: parsed once where the statement is read, then carried.

The spec is frozen, hashable and compared by value (tests and caches rely on that), while a
sqlglot tree is mutable and compares by structure. So ``Expr`` is a small frozen wrapper: its
``text`` is what the spec carried before (sqlglot's Spark SQL of the parsed statement's node, or
the Python builder's string as given), computed once, and is what ``==``, ``hash``, ``str``,
``repr`` and every message read; its tree is private and ``tree`` hands out a copy, so no caller
can change what another sees (a copy of an expression's tree is cheap beside planning).

Text a module cannot parse (a builder's string) is an ``Expr`` too, whose ``error`` says why:
the planner reports it where it reported it before (``engine.scope.Scope.qualify``).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp

from tablets.sqltext import DIALECT


def spark_sql(tree: exp.Expr) -> str:
    """A tree as the Spark SQL text Spark is given (``F.expr``, ``spark.sql``) and messages show."""
    return tree.sql(dialect=DIALECT)


@dataclass(frozen=True)
class Expr:
    text: str
    _tree: exp.Expr | None = field(default=None, compare=False, repr=False)
    error: str | None = field(default=None, compare=False, repr=False)  # why ``text`` does not parse

    @staticmethod
    def of(tree: exp.Expr) -> Expr:
        """An expression from its tree (a copy is kept: the caller may go on changing its own)."""
        own = tree.copy()
        return Expr(spark_sql(own), own)

    @staticmethod
    def parse(text: str) -> Expr:
        """``text`` parsed once (the builder's strings, a table's stored CHECK); never raises."""
        return _parsed(text)

    @property
    def tree(self) -> exp.Expr:
        """A copy of the tree, the caller's to change; raises ``sqlglot.errors.ParseError`` for
        text that does not parse."""
        if self._tree is None:
            raise sqlglot.errors.ParseError(self.error or f"cannot parse {self.text!r}")
        return self._tree.copy()

    def __bool__(self) -> bool:
        return bool(self.text)  # an empty builder string means no condition, as it did as text

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        # the text's: the spec's and the plan's repr read as before (the re-run digest hashes it)
        return repr(self.text)


@functools.lru_cache(maxsize=512)
def _parsed(text: str) -> Expr:
    try:
        return Expr(text, sqlglot.parse_one(text, read=DIALECT))
    except sqlglot.errors.SqlglotError as e:
        return Expr(text, None, str(e))


# --- trees the engine builds (the statement's rewrites), as the parser would give them ---------


def column(name: str, table: str | None = None, *, quote_table: bool = False) -> exp.Column:
    """``table.`name``` (the name always in backquotes, the table as it needs)."""
    qualifier = exp.to_identifier(table, quoted=True if quote_table else None) if table is not None else None
    return exp.Column(this=exp.to_identifier(name, quoted=True), table=qualifier)


def paren(e: exp.Expr) -> exp.Paren:
    return exp.Paren(this=e)


def all_of(parts: Iterable[exp.Expr]) -> exp.Expr:
    """``a AND b AND c`` (left to right, as parsed); the parts as given (wrap them in ``paren``)."""
    return functools.reduce(lambda a, b: exp.And(this=a, expression=b), parts)


def any_of(parts: Iterable[exp.Expr]) -> exp.Expr:
    return functools.reduce(lambda a, b: exp.Or(this=a, expression=b), parts)


def coalesce_false(e: exp.Expr) -> exp.Expr:
    """``COALESCE(e, FALSE)``."""
    return exp.Coalesce(this=e, expressions=[exp.false()])
