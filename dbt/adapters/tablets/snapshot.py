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
from dataclasses import dataclass
from typing import Any

from dbt.adapters.tablets.config import _table_options
from dbt.adapters.tablets.problems import Problems

SNAPSHOT = "snapshot"


@dataclass(frozen=True)
class SnapshotConfig:
    """A snapshot's tablet-table options. Built only by :func:`parse_snapshot_config`."""

    name: str
    target_tablet_rows: int | None = None
    cluster_by: tuple[str, ...] = ()
    tblproperties: tuple[tuple[str, str], ...] = ()

    def statement_options(self) -> dict[str, Any]:
        """The engine's options for the snapshot's statement (the CTAS or the MERGE)."""
        return {
            "target_tablet_rows": self.target_tablet_rows,
            "cluster_by": self.cluster_by,
            "parameters": (("dbt_model", self.name), ("dbt_materialization", SNAPSHOT)),
        }

    def table_properties(self) -> dict[str, str]:
        """TBLPROPERTIES of the created table (no key columns)."""
        props = dict(self.tblproperties)
        if self.target_tablet_rows is not None:
            props["target_tablet_rows"] = str(self.target_tablet_rows)
        return props


def parse_snapshot_config(config: Mapping[str, Any] | None, name: str) -> SnapshotConfig:
    """Validate a snapshot's config into a :class:`SnapshotConfig`; one error names every problem."""
    config = dict(config or {})
    p = Problems()
    options = _table_options(p, config, SNAPSHOT)
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
    return SnapshotConfig(name=name, **options)
