"""The rows of ``INSERT ... ON CONFLICT``: which inserted rows the statement takes (the front
door's, before the engine merges them)."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from tablets.exceptions import MergeSpecError
from tablets.spec import ActionKind, MergeSpec
from tablets.sqltext import quote_ident

__all__ = ["conflict_rows"]


def conflict_rows(spec: MergeSpec, frame: DataFrame) -> DataFrame:
    """The rows of ``INSERT ... ON CONFLICT (keys)``, as PostgreSQL takes them: with DO NOTHING,
    a key given twice inserts its first row (in the statement's order: VALUES as written, a
    query as Spark returns it) and skips the others; with DO UPDATE it is an error
    (PostgreSQL: "cannot affect row a second time": the engine finds it, as a target row
    matched twice or a new key inserted twice). NULL keys never conflict."""

    have = {c.lower(): c for c in frame.columns}
    unknown = [k for k in spec.conflict_keys if k.lower() not in have]
    if unknown:
        raise MergeSpecError(
            f"INSERT INTO {spec.target} ... ON CONFLICT ({', '.join(spec.conflict_keys)}): {', '.join(unknown)} "
            f"is not a column of the inserted rows (columns: {', '.join(frame.columns)})",
            help="Name the table's key columns in ON CONFLICT (...).",
        )
    keys = [F.col(quote_ident(have[k.lower()])) for k in spec.conflict_keys]
    nulls = F.lit(False)
    for k in keys:
        nulls = nulls | k.isNull()
    if any(c.action is ActionKind.UPDATE for c in spec.clauses):
        return frame  # a key given twice: the engine's checks (see Database.merge)
    order, rank = "__tablets_order", "__tablets_rank"
    first = Window.partitionBy(*keys).orderBy(order)
    ranked = frame.withColumn(order, F.monotonically_increasing_id()).withColumn(rank, F.row_number().over(first))
    return ranked.filter(nulls | (F.col(rank) == 1)).drop(order, rank)
