"""An UPDATE's unchanged check (``skip_unchanged``) for the columns it reads last: old values
against new images as Spark's ``<=>`` compares them, a kind of column at a time, each kind read
only for the rows still alike.

Both plans use it: the driver plan for the columns it left out of its first read, and Spark's
merge tasks for the columns Spark's scan left out (``Plan.compare_only``: an UPDATE sets them and
nothing else reads them; ``pairs_sql.compared_in_tasks``). Imported by Spark's Python workers:
no sqlglot, no Spark."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# the Spark types whose ``<=>`` is Arrow's equality (with NULL and NaN alike): a collated string,
# a CHAR or an interval is not, nor (no Arrow equality) a nested type
ARROW_EQUAL_TYPES = frozenset(
    {"tinyint", "smallint", "int", "bigint", "float", "double", "boolean", "date", "timestamp", "timestamp_ntz"}
    | {"string", "binary"}
)


def arrow_equal(spark_type: str) -> bool:
    """Arrow compares values of ``spark_type`` as Spark's ``<=>`` does (``same_values``)."""
    t = spark_type.lower().replace(" ", "")
    return t in ARROW_EQUAL_TYPES or (t.startswith("decimal(") and t.endswith(")"))


def same_values(old: pa.Array, new: pa.Array) -> pa.Array:
    """Row by row, ``old <=> new`` as Spark says it (NULL equals NULL, NaN equals NaN, -0.0 equals
    0.0). Timestamps are compared as instants, whatever zone each side is shown in."""
    if old.type != new.type and pa.types.is_timestamp(old.type) and pa.types.is_timestamp(new.type):
        old = old.cast(new.type)
    same = pc.fill_null(pc.equal(old, new), False)
    both_null = pc.and_(pc.is_null(old), pc.is_null(new))
    if pa.types.is_floating(old.type):
        both_null = pc.or_(both_null, pc.fill_null(pc.and_(pc.is_nan(old), pc.is_nan(new)), False))
    return pc.or_(same, both_null)


def _kind(of: pa.DataType) -> int:
    """0 fixed-width, 1 variable-width: the order the columns are read in."""
    return 0 if pa.types.is_primitive(of) or pa.types.is_decimal(of) else 1


def still_alike(
    same: np.ndarray,
    later: Sequence[tuple[str, pa.Array]],
    schema: pa.Schema,
    read: Callable[[list[str], np.ndarray], pa.Table],
) -> np.ndarray:
    """``same`` (per row: alike in the columns compared so far) after the ``later`` columns,
    (name, new value) each, of ``schema``'s types (those ``arrow_equal`` accepts): fixed-width
    ones first, then variable-width, each kind read in one pass (``read(columns, rows)``: the old
    values of those rows, in that order) only for the rows still alike. An upsert whose rows all
    differ in a number or a date never reads its strings."""
    for k in sorted({_kind(schema.field(c).type) for c, _ in later}):
        alike = np.flatnonzero(same)
        if not len(alike):
            break
        these = [(c, new) for c, new in later if _kind(schema.field(c).type) == k]
        old = read([c for c, _ in these], alike)
        at = pa.array(alike)
        for c, new in these:
            same[alike] &= same_values(old.column(c).combine_chunks(), new.take(at)).to_numpy(zero_copy_only=False)
    return same
