"""Which tablets a query's predicates rule out, by the statistics the log records per tablet.

A ``Pred`` is one conjunct of a query's WHERE on one column (``id >= 5``, ``s IN ('a', 'b')``,
``d IS NULL``, ``NOT (k = 3)``, ``s LIKE 'ab%'``); ``prune(preds, add, kinds)`` says whether the
tablet ``add`` holds no row for which all of them are TRUE, by its ``AddTablet.stats`` (min, max,
NULL count per column; a column the tablet does not have reads as NULL). Conservative: what the
statistics do not tell keeps the tablet. Column kinds (``kind_of``) leave out floating point
(SQL orders NaN above every number, and the statistics ignore NaN), binary and nested columns.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from tablets.storage.actions import AddTablet, ColumnStats

COMPARISONS = ("eq", "lt", "le", "gt", "ge")
OPS = (*COMPARISONS, "eq_null_safe", "in", "is_null", "not_null", "starts_with", "not")


@dataclass(frozen=True)
class Pred:
    """``op`` on ``column`` with ``value`` (a tuple for ``in``; the negated ``Pred`` for ``not``)."""

    op: str
    column: str = ""
    value: Any = None

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"unknown predicate {self.op!r} (one of {', '.join(OPS)})")


# --- types --------------------------------------------------------------------------------------


def kind_of(t: pa.DataType) -> str | None:
    """The family of values a column of type ``t`` compares exactly with, or None."""
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_integer(t):
        return "int"
    if pa.types.is_decimal(t):
        return "decimal"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "str"
    if pa.types.is_date32(t):
        return "date"
    if pa.types.is_timestamp(t):
        return "ts_tz" if t.tz else "ts"
    return None


def column_kinds(schema: pa.Schema) -> tuple[dict[str, str], dict[str, str]]:
    """The kinds (``kind_of``) of a table's columns that statistics can rule on, by name, and
    every column's name by its lower-case name: what ``tablets.sql.reads.typed`` takes."""
    kinds = {f.name: k for f in schema if (k := kind_of(f.type)) is not None}
    return kinds, {n.lower(): n for n in schema.names}


def _value_fits(kind: str, v: object) -> bool:
    if kind == "bool":
        return isinstance(v, bool)
    if kind == "int":
        return isinstance(v, int) and not isinstance(v, bool)
    if kind == "decimal":
        return isinstance(v, (decimal.Decimal, int)) and not isinstance(v, bool)
    if kind == "str":
        return isinstance(v, str)
    if kind == "date":
        return isinstance(v, dt.date) and not isinstance(v, dt.datetime)
    if kind == "ts_tz":
        return isinstance(v, dt.datetime) and v.tzinfo is not None
    if kind == "ts":
        return isinstance(v, dt.datetime) and v.tzinfo is None
    return False


# --- statistics ------------------------------------------------------------------------------------


def _stat(kind: str, v: object) -> object:
    """A statistics bound as a value of ``kind`` (the log keeps dates, timestamps and decimals
    as text); None when unknown or not comparable."""
    if v is None:
        return None
    try:
        if kind == "date":
            return v if isinstance(v, dt.date) and not isinstance(v, dt.datetime) else dt.date.fromisoformat(str(v))
        if kind in ("ts", "ts_tz"):
            d = v if isinstance(v, dt.datetime) else dt.datetime.fromisoformat(str(v))
            if (d.tzinfo is not None) != (kind == "ts_tz"):
                return None
            return d
        if kind == "decimal":
            return decimal.Decimal(str(v))
    except (ValueError, decimal.InvalidOperation):
        return None
    return v if _value_fits(kind, v) or (kind == "decimal" and isinstance(v, int)) else None


@dataclass(frozen=True)
class Bounds:
    """What statistics say of one column in some rows: min, max (None: unknown), nulls."""

    lo: Any
    hi: Any
    null_count: int | None  # None: unknown
    rows: int

    @property
    def all_null(self) -> bool:
        return self.null_count is not None and self.null_count >= self.rows

    @property
    def has_null(self) -> bool:
        return self.null_count is None or self.null_count > 0


def bounds(stats: ColumnStats | None, rows: int, kind: str, *, absent: bool = False) -> Bounds:
    """``stats`` as ``Bounds``; ``absent``: the column is not in these rows at all (added to the
    table later: every value reads as NULL)."""
    if absent:
        return Bounds(None, None, rows, rows)
    if stats is None:
        return Bounds(None, None, None, rows)
    return Bounds(_stat(kind, stats.min), _stat(kind, stats.max), stats.null_count, rows)


def _cmp_may(op: str, b: Bounds, v: object) -> bool:
    lo, hi = b.lo, b.hi
    if isinstance(v, float) and v != v:  # NaN: Spark's largest value, beyond what min/max say
        return True
    try:
        if op == "eq":
            return (lo is None or lo <= v) and (hi is None or v <= hi)
        if op == "lt":
            return lo is None or lo < v
        if op == "le":
            return lo is None or lo <= v
        if op == "gt":
            return hi is None or hi > v
        if op == "ge":
            return hi is None or hi >= v
    except TypeError:
        return True
    return True


def may_match(pred: Pred, b: Bounds) -> bool:
    """Whether rows described by ``b`` may hold one for which ``pred`` (on that column) is TRUE."""
    op, v = pred.op, pred.value
    if op == "is_null":
        return b.has_null
    if op == "not_null":
        return not b.all_null
    if op == "eq_null_safe" and v is None:
        return b.has_null
    if b.all_null:
        return False  # every other predicate is NULL or FALSE on NULL
    if op in COMPARISONS or op == "eq_null_safe":
        return _cmp_may("eq" if op == "eq_null_safe" else op, b, v)
    if op == "in":
        return any(_cmp_may("eq", b, x) for x in v if x is not None)
    if op == "starts_with":
        try:
            return (b.hi is None or b.hi >= v) and (b.lo is None or b.lo[: len(v)] <= v)
        except TypeError:
            return True
    if op == "not":
        inner = v
        if inner.op == "is_null":
            return not b.all_null
        if inner.op == "not_null":
            return b.has_null
        one = b.lo is not None and b.lo == b.hi  # every non-NULL value is b.lo
        if inner.op == "eq" and one:
            return b.lo != inner.value
        if inner.op == "in" and one and None not in inner.value:
            return b.lo not in inner.value
        return True
    return True


def column_of(pred: Pred) -> str:
    return pred.value.column if pred.op == "not" else pred.column


def prune(preds: Sequence[Pred], add: AddTablet, kinds: dict[str, str]) -> bool:
    """Whether the tablet ``add`` can be skipped: some predicate is never TRUE in it, by the
    log's statistics (a column the tablet does not have reads as NULL)."""
    recorded = dict(add.stats)
    for p in preds:
        col = column_of(p)
        if col not in kinds:
            continue
        b = bounds(recorded.get(col), add.rows, kinds[col], absent=bool(recorded) and col not in recorded)
        if not may_match(p, b):
            return True
    return False
