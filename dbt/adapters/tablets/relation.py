"""Relations of dbt-tablets: dbt-spark's, plus whether the relation is a tablet table."""

from __future__ import annotations

from dataclasses import dataclass

from dbt.adapters.spark.relation import SparkRelation

# the catalog provider of a tablet table is ``tablets`` or ``tablets_<12 hex>`` (one per table;
# see tablets.spark.catalog for the Spark limitation behind it)
PROVIDER_MARKER = "Provider: tablets"


@dataclass(frozen=True, eq=False, repr=False)
class TabletsRelation(SparkRelation):
    is_tablets: bool | None = None

    @classmethod
    def information_says_tablets(cls, information: str | None) -> bool:
        return any(
            line.strip().startswith(PROVIDER_MARKER) for line in (information or "").splitlines()
        )
