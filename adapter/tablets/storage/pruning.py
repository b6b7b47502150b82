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
    every column's name by its lower-case name: what ``tablets.spec.conditions.typed`` takes."""
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


# --- key ranges: a statement's source keys against a tablet's stats (pruning, conflicts) -----

KeyRange = tuple[str, Any, Any]  # (column, min, max) of the source's join keys; min None: all NULL


def _comparable(stat: Any, value: Any) -> tuple[Any, Any] | None:
    """(stat, value) in a form ``<`` compares soundly, or None if they do not compare. The log
    keeps dates, timestamps and decimals as text: read back as values of ``value``'s type, a
    timestamp with its offset as an instant (ISO text compares by wall time, and drops zero
    microseconds), one with a zone never against one without."""
    if stat is None or value is None:
        return None
    if isinstance(stat, bool) or isinstance(value, bool):
        return None
    try:
        if isinstance(value, dt.datetime):
            stat = stat if isinstance(stat, dt.datetime) else dt.datetime.fromisoformat(str(stat))
            return (stat, value) if (stat.tzinfo is None) == (value.tzinfo is None) else None
        if isinstance(value, dt.date):
            stat = stat if type(stat) is dt.date else dt.date.fromisoformat(str(stat))
            return stat, value
        if isinstance(value, decimal.Decimal):
            return (decimal.Decimal(str(stat)), value) if isinstance(stat, (str, int, decimal.Decimal)) else None
    except (ValueError, TypeError, decimal.InvalidOperation):
        return None
    if isinstance(stat, (int, float)) and isinstance(value, (int, float)):
        return stat, value
    if type(stat) is type(value):
        return stat, value
    return None


def outside(add: AddTablet, ranges: Sequence[KeyRange]) -> bool:
    """Whether the tablet's stats show that none of its rows has every key column within
    ``ranges`` (the source's min/max of the values ``=``-joined with it), so that no row of it
    can pair with a source row. Used to prune tablets and to rule out concurrent appends."""
    for col, lo, hi in ranges:
        if lo is None:  # every source key is NULL: `=` matches nothing
            return True
        st = add.column_stats(col)
        if st is None:
            continue
        if st.min is None and st.max is None and st.null_count == add.rows:
            return True  # every key of the tablet is NULL
        below, above = _comparable(st.max, lo), _comparable(st.min, hi)
        if (below is not None and below[0] < below[1]) or (above is not None and above[0] > above[1]):
            return True
    return False


def outside_share(add: AddTablet, col: str, lo: Any, hi: Any) -> float | None:
    """The share of the tablet's value range of ``col`` (its min to max) that lies outside
    ``lo``..``hi``, its values taken as evenly spread: what a range filter on the column could
    skip of it. 0.0 when the range holds all of it (or it has only NULLs); None where the stats
    cannot tell (no stats, values that do not compare)."""
    st = add.column_stats(col)
    if st is None:
        return None
    if st.min is None and st.max is None:
        return 0.0
    low, high = _comparable(st.min, lo), _comparable(st.max, hi)
    if low is None or high is None:
        return None
    if low[0] >= low[1] and high[0] <= high[1]:
        return 0.0
    points = [_point(v) for v in (st.min, st.max, lo, hi)]
    if any(p is None for p in points):
        return None
    t_lo, t_hi, s_lo, s_hi = points
    span = t_hi - t_lo  # type: ignore[operator]
    if span <= 0:
        return 1.0  # one value, and it is outside
    out = max(0.0, s_lo - t_lo) + max(0.0, t_hi - s_hi)  # type: ignore[operator]
    return min(1.0, out / span)


def _point(v: Any) -> float | None:
    """A value as a point on a line: numbers, dates (and their ISO text), and other text by
    its first 8 bytes (in the byte order Parquet's statistics compare in)."""
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    if hasattr(v, "toordinal"):
        return float(v.toordinal())
    if isinstance(v, str):
        try:
            return float(dt.date.fromisoformat(v).toordinal())
        except ValueError:
            return float(int.from_bytes(v.encode()[:8].ljust(8, b"\0"), "big"))
    return None
