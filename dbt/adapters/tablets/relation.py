"""Relations of dbt-tablets: dbt-spark's (whether a table is a tablet table is the registry's
answer, ``TabletsAdapter.is_tablet_table``)."""

from __future__ import annotations

from dataclasses import dataclass

from dbt.adapters.spark.relation import SparkRelation


@dataclass(frozen=True, eq=False, repr=False)
class TabletsRelation(SparkRelation):
    pass
