"""The table options of a dbt snapshot stored as a tablet table, validated once, before any SQL
runs (``TabletsAdapter.snapshot_config``).

The snapshot itself (strategies, ``hard_deletes``, ``dbt_valid_to_current``,
``snapshot_meta_column_names``) is dbt-core's and validated by dbt-core; here are only what a
tablet table adds or refuses: ``target_tablet_rows``, ``cluster_by``, ``tblproperties`` (not
``key_columns``: a snapshot keeps several versions of a key, and even ``dbt_scd_id`` may repeat
in dbt's semantics), and no ``partition_by`` / ``clustered_by``.

>>> parse_snapshot_config({"cluster_by": "id"}, "orders_history").statement_options()["cluster_by"]
('id',)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dbt.adapters.tablets.config import TableConfig
from dbt.adapters.tablets.problems import Problems
from dbt.adapters.tablets.table_options import table_options

SNAPSHOT = "snapshot"


def parse_snapshot_config(config: Mapping[str, Any] | None, name: str) -> TableConfig:
    """Validate a snapshot's config into a ``TableConfig``; one error names every problem."""
    config = dict(config or {})
    p = Problems()
    options = table_options(p, config, SNAPSHOT)
    if config.get("buckets"):
        fix = "remove it; use cluster_by to sort new tablets by columns"
        p.add("buckets", config["buckets"], "tablet tables are not bucketed", "unset", fix)
    for key, _ in options["tblproperties"]:
        if key.lower() == "key_columns":
            p.add(
                "tblproperties.key_columns",
                dict(options["tblproperties"])[key],
                "a snapshot keeps several rows per unique_key (one per version), so it has no key columns",
                "any other table property",
                "remove key_columns from tblproperties",
            )
    p.raise_if_any(name, SNAPSHOT)
    return TableConfig(model=name, materialization=SNAPSHOT, **options)
