"""A tablet table's options in a model's config: ``on_schema_change``, ``cluster_by``,
``target_tablet_rows``, ``tblproperties`` and the like."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dbt.adapters.tablets.problems import Problems
from dbt.adapters.tablets.vocabulary import LIQUID_CLUSTERED_BY, MERGE_TABLETS, ON_SCHEMA_CHANGE


def on_schema_change(p: Problems, config: Mapping[str, Any]) -> str:
    value = config.get("on_schema_change") or "ignore"
    if value in ON_SCHEMA_CHANGE:
        return str(value)
    fix = "set on_schema_change: append_new_columns (add new columns; older tablets read them as NULL)"
    p.add(
        "on_schema_change",
        value,
        "not an on_schema_change setting",
        ", ".join(ON_SCHEMA_CHANGE),
        fix,
    )
    return "ignore"


def table_options(p: Problems, config: Mapping[str, Any], materialization: str) -> dict[str, Any]:
    """Tablet sizing and clustering, table properties, and what tablet tables refuse."""
    rows = config.get("target_tablet_rows")
    if rows is not None and (isinstance(rows, bool) or not isinstance(rows, int) or rows < 1):
        fix = "set target_tablet_rows: 1000000 (rows per new tablet)"
        p.add(
            "target_tablet_rows",
            rows,
            "not a positive whole number of rows",
            "an integer >= 1, e.g. 1000000",
            fix,
        )
        rows = None
    file_format = config.get("file_format")
    if materialization == MERGE_TABLETS and file_format not in (None, "tablets"):
        fix = "remove file_format from this model (or set it to tablets)"
        p.add(
            "file_format",
            file_format,
            "merge_tablets always stores a tablet table",
            "tablets (or leave it unset)",
            fix,
        )
    for key in ("partition_by", "clustered_by"):
        if config.get(key):
            fix = "remove it; use cluster_by to sort new tablets by columns so later merges skip tablets"
            p.add(key, config.get(key), "tablet tables are not partitioned or bucketed", "unset", fix)
    props = config.get("tblproperties") or {}
    if not isinstance(props, Mapping):
        p.add(
            "tblproperties",
            props,
            "not a map",
            "a map of property -> value",
            "write tblproperties: {owner: data-team}",
        )
        props = {}
    cluster_by = p.str_list(config, "cluster_by", what="column name", example="[customer_id]")
    if config.get(LIQUID_CLUSTERED_BY) is not None:
        if config.get("cluster_by") is not None:
            p.add(
                LIQUID_CLUSTERED_BY,
                config.get(LIQUID_CLUSTERED_BY),
                "cluster_by is set too: on a tablet table they are the same setting",
                "one of them",
                "remove liquid_clustered_by (cluster_by is its name here)",
            )
        else:
            cluster_by = p.str_list(config, LIQUID_CLUSTERED_BY, what="column name", example="[customer_id]")
    ansi = config.get("ansi")
    if ansi is not None and not isinstance(ansi, bool):
        p.add("ansi", ansi, "not a boolean", "true or false", "set ansi: false (unquoted) to opt this model out")
        ansi = None
    return {
        "target_tablet_rows": rows,
        "cluster_by": cluster_by or (),
        "ansi": ansi,
        "tblproperties": tuple((str(k), str(v)) for k, v in props.items()),
    }
