"""The config keys dbt-tablets reads and the values they take: materializations, incremental
strategies, dbt's microbatch bounds, dbt-databricks' keys a tablet table cannot honour, and the
keys a typo is told from."""

from __future__ import annotations

import re

from dbt.adapters.tablets.clauses import (
    CATEGORIES,
    DATABRICKS_KEYS,
)

MERGE_TABLETS = "merge_tablets"
INCREMENTAL = "incremental"
TABLE = "table"
ON_SCHEMA_CHANGE = ("ignore", "fail", "append_new_columns", "sync_all_columns")
INCREMENTAL_STRATEGIES = ("merge", "append", "insert_overwrite", "replace_where", "delete+insert", "microbatch")
# dbt-core's microbatch window of the batch being run (set on the model's config per batch)
BATCH_START = "__dbt_internal_microbatch_event_time_start"
BATCH_END = "__dbt_internal_microbatch_event_time_end"
DEFAULT_ALIASES = {
    MERGE_TABLETS: ("s", "t"),
    INCREMENTAL: ("DBT_INTERNAL_SOURCE", "DBT_INTERNAL_DEST"),
}

# dbt-databricks' name of cluster_by (liquid clustering): honoured as cluster_by, with a warning
LIQUID_CLUSTERED_BY = "liquid_clustered_by"
# dbt-databricks keys a tablet table cannot honour: (why, what to do instead); each model that
# sets any of them gets one warning naming them (ignored_keys_warning), and runs without them
DATABRICKS_IGNORED = {
    "zorder": (
        "Z-ordering is Delta's OPTIMIZE ... ZORDER BY",
        "set cluster_by: new tablets are sorted by it and merges skip tablets by its ranges",
    ),
    "auto_liquid_cluster": (
        "Databricks picks the clustering columns itself",
        "name them with cluster_by",
    ),
    "table_format": (
        "it makes Databricks write Iceberg; a tablet table is its own format",
        "remove it (file_format: tablets)",
    ),
    "databricks_tags": (
        "they are Unity Catalog tags, which Spark's catalog does not have",
        "record them as tblproperties",
    ),
    "query_tags": ("they tag queries of a Databricks SQL warehouse", "remove them"),
    "include_full_name_in_path": (
        "the table goes to <location_root>/<alias> (dbt-spark's location_root)",
        "remove it, or put the schema in location_root",
    ),
    "unique_tmp_table_suffix": (
        "the new rows are a temporary view of this dbt session, which no other run sees",
        "remove it",
    ),
    "use_safer_relation_operations": (
        "a tablet table is replaced in one commit of its own",
        "remove it",
    ),
    "incremental_apply_config_changes": (
        "tablet tables keep their settings (tblproperties) from creation",
        "remove it; ALTER TABLE ... SET TBLPROPERTIES changes a table's properties",
    ),
}
# every key read here; unknown keys close to these are reported as likely typos
KNOWN_KEYS = (
    "unique_key", "null_safe_keys", *CATEGORIES, "on_conflict", "merge_update_columns",
    "merge_exclude_columns", "source_alias", "target_alias", "skip_unchanged",
    "incremental_predicates", "predicates", "on_schema_change", "target_tablet_rows", "cluster_by",
    "prune_tablets", "incremental_strategy", "file_format", "partition_by", "clustered_by",
    "buckets", "tblproperties", "replace_where", "merge_with_schema_evolution", "ansi", *DATABRICKS_KEYS,
    LIQUID_CLUSTERED_BY,
    *DATABRICKS_IGNORED,
)  # fmt: skip
# dbt's own config keys that look like ours but are not typos
DBT_KEYS = frozenset(
    {
        "materialized", "on_configuration_change", "unique_id", "full_refresh",
        "event_time", "batch_size", "begin", "lookback", "concurrent_batches",
        BATCH_START, BATCH_END,
    }
)  # fmt: skip
OUR_PREFIXES = (
    "when_",
    "merge_",
    "on_conflict",
    "tablet",
    "target_tablet",
    "null_safe",
    "skip_unch",
)
IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
PREDICATE_EXAMPLE = '["t.day >= date_sub(current_date(), 7)"]'
