"""The ``merge_tablets`` config, parsed and validated once, before any SQL runs, into a frozen
:class:`MergeConfig` (the statement is rendered from it by ``render.py``).

Pure Python (no Spark, no JVM): the Jinja calls it through ``adapter.merge_config()``
("Jinja orchestrates, Python decides") and unit tests call it directly. Every problem is
collected and raised at once in one :class:`~dbt.adapters.tablets.problems.MergeConfigError`
naming the model, each bad key, the bad value, the allowed values and the fix.

The same parser serves ``materialized='incremental'`` with ``file_format='tablets'``
(``materialization=INCREMENTAL``): dbt's aliases ``DBT_INTERNAL_SOURCE`` / ``DBT_INTERNAL_DEST``,
an optional ``unique_key`` and the ``incremental_strategy`` key. ``materialized='table'`` with
``file_format='tablets'`` has the table options only (:func:`parse_table_config`).

dbt-databricks' keys: its merge keys shape the statement (``clauses.py``);
``liquid_clustered_by`` is ``cluster_by``; the ones a tablet table cannot honour
(``DATABRICKS_IGNORED``) are ignored with one warning per model (:func:`config_warnings`).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from dbt.adapters.tablets.clauses import (
    CATEGORIES,
    DATABRICKS_KEYS,
    ClauseConfig,
    OnConflict,
    parse_clauses,
    parse_databricks_keys,
    parse_on_conflict,
)
from dbt.adapters.tablets.problems import MergeConfigError, Problems

__all__ = [
    "INCREMENTAL",
    "MERGE_TABLETS",
    "TABLE",
    "ClauseConfig",
    "MergeConfig",
    "MergeConfigError",
    "TableConfig",
    "config_warnings",
    "parse_merge_config",
    "parse_table_config",
]

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
    "merge_with_schema_evolution": (
        "it is Delta's MERGE WITH SCHEMA EVOLUTION",
        "set on_schema_change: append_new_columns",
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
    "buckets", "tblproperties", "replace_where", *DATABRICKS_KEYS, LIQUID_CLUSTERED_BY,
    *DATABRICKS_IGNORED,
)  # fmt: skip
# dbt's own config keys that look like ours but are not typos
_DBT_KEYS = frozenset(
    {
        "materialized", "on_configuration_change", "unique_id", "full_refresh",
        "event_time", "batch_size", "begin", "lookback", "concurrent_batches",
        BATCH_START, BATCH_END,
    }
)  # fmt: skip
_OUR_PREFIXES = (
    "when_",
    "merge_",
    "on_conflict",
    "tablet",
    "target_tablet",
    "null_safe",
    "skip_unch",
)
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PREDICATE_EXAMPLE = '["t.day >= date_sub(current_date(), 7)"]'


@dataclass(frozen=True)
class MergeConfig:
    """A model's validated merge config. Built only by :func:`parse_merge_config`."""

    model: str
    materialization: str
    unique_key: tuple[str, ...]
    clauses: tuple[ClauseConfig, ...]  # statement order: MATCHED, NOT MATCHED, BY SOURCE
    default_upsert: bool  # no clause configured: update the update columns, insert all
    null_safe_keys: bool = False
    on_conflict: OnConflict | None = None
    merge_update_columns: tuple[str, ...] | None = None
    merge_exclude_columns: tuple[str, ...] | None = None
    source_alias: str = "s"
    target_alias: str = "t"
    skip_unchanged: bool = True
    incremental_predicates: tuple[str, ...] = ()
    on_schema_change: str = "ignore"
    incremental_strategy: str = "merge"
    target_tablet_rows: int | None = None
    cluster_by: tuple[str, ...] = ()
    prune_tablets: bool = True
    tblproperties: tuple[tuple[str, str], ...] = field(default=())
    # insert_overwrite: the target rows it replaces (None: all of them); microbatch: the batch's
    # event_time window, [start, end), rendered from dbt's batch bounds
    replace_where: str | None = None

    def statement_options(self) -> dict[str, Any]:
        """The engine's per-statement options (``tablets.MergeOptions`` fields)."""
        return {
            "skip_unchanged": self.skip_unchanged,
            "target_tablet_rows": self.target_tablet_rows,
            "cluster_by": self.cluster_by,
            "prune": self.prune_tablets,
            "parameters": (
                ("dbt_model", self.model),
                ("dbt_materialization", self.materialization),
            ),
        }

    def table_properties(self) -> dict[str, str]:
        """TBLPROPERTIES of the created table: ``tblproperties``, the key columns, tablet size,
        ``cluster_by`` and (merge_tablets) ``auto_compact``.

        Only merge_tablets records its key columns (the store checks them when it creates the
        table); dbt's incremental contract is that a bad unique_key fails on the first merge,
        not on the create."""
        props = dict(self.tblproperties)
        if self.unique_key and self.materialization == MERGE_TABLETS:
            props["key_columns"] = ",".join(self.unique_key)
        if self.target_tablet_rows is not None:
            props["target_tablet_rows"] = str(self.target_tablet_rows)
        if self.cluster_by:  # OPTIMIZE and auto-compaction sort the tablets they write by it
            props.setdefault("cluster_by", ",".join(self.cluster_by))
        if self.materialization == MERGE_TABLETS:  # Delta's autoOptimize.autoCompact (README, "Maintenance")
            props.setdefault("auto_compact", "true")
        return props


@dataclass(frozen=True)
class TableConfig:
    """The tablet-table options of a ``table`` model (``file_format='tablets'``) or a snapshot.
    Built only by :func:`parse_table_config` and ``snapshot.parse_snapshot_config``."""

    model: str
    target_tablet_rows: int | None = None
    cluster_by: tuple[str, ...] = ()
    tblproperties: tuple[tuple[str, str], ...] = ()
    materialization: str = TABLE

    def statement_options(self) -> dict[str, Any]:
        """The engine's options for the statement (the CREATE TABLE ... AS, a snapshot's MERGE)."""
        return {
            "target_tablet_rows": self.target_tablet_rows,
            "cluster_by": self.cluster_by,
            "parameters": (("dbt_model", self.model), ("dbt_materialization", self.materialization)),
        }

    def table_properties(self) -> dict[str, str]:
        """TBLPROPERTIES of the created table: ``tblproperties``, tablet size, ``cluster_by`` (a
        table model's; a snapshot's has never been recorded)."""
        props = dict(self.tblproperties)
        if self.target_tablet_rows is not None:
            props["target_tablet_rows"] = str(self.target_tablet_rows)
        if self.cluster_by and self.materialization == TABLE:  # OPTIMIZE sorts the tablets it writes by it
            props.setdefault("cluster_by", ",".join(self.cluster_by))
        return props


def parse_table_config(config: Mapping[str, Any] | None, model: str) -> TableConfig:
    """Validate a ``table`` model's tablet-table options; one error names every problem.

    >>> parse_table_config({"liquid_clustered_by": "day"}, "daily").cluster_by
    ('day',)
    """
    p = Problems()
    options = _table_options(p, dict(config or {}), TABLE)
    p.raise_if_any(model, TABLE)
    return TableConfig(model=model, **options)


def parse_merge_config(
    config: Mapping[str, Any] | None, model: str, materialization: str = MERGE_TABLETS
) -> MergeConfig:
    """Validate a model's config (``model.config`` in Jinja) into a frozen :class:`MergeConfig`.

    Raises one ``MergeConfigError`` naming every problem. ``materialization`` is
    ``merge_tablets`` or ``incremental`` (``file_format='tablets'``), which differ in the
    default aliases, whether ``unique_key`` is required and the strategies allowed.

    >>> parse_merge_config({"unique_key": ["id", "day"]}, "orders").unique_key
    ('id', 'day')
    """
    config = dict(config or {})
    p = Problems()
    _unknown_keys(p, config)
    keys, strategy = _key_and_strategy(p, config, materialization)
    clauses = parse_clauses(p, config)
    shaped = parse_databricks_keys(p, config)
    if shaped is not None and clauses:
        message = (
            "the when_* clauses and dbt-databricks' merge keys describe the same statement twice"
        )
        fix = "keep the when_* clauses (they can say everything the others say), or remove them"
        first = next(k for k in CATEGORIES if config.get(k) is not None)
        p.add(first, config.get(first), message, "one of the two ways", fix)
    clauses = clauses or shaped or []
    on_conflict = parse_on_conflict(p, config)
    predicates = _predicates(p, config)
    _exclusive(p, config, materialization, strategy, clauses, on_conflict, predicates)
    if strategy == "replace_where":  # dbt-databricks' spelling of insert_overwrite + replace_where
        strategy, replace_where = "insert_overwrite", _replace_where_strategy(p, config, predicates)
        predicates = None
    else:
        replace_where = _replace_where(p, config, strategy, clauses)
    values = {  # in the README's order, which is the order problems are reported in
        **_update_columns(p, config),
        **_aliases(p, config, materialization),
        "null_safe_keys": p.boolean(config, "null_safe_keys", False),
        "skip_unchanged": p.boolean(config, "skip_unchanged", True),
        "on_schema_change": _on_schema_change(p, config),
        **_table_options(p, config, materialization),
        "prune_tablets": p.boolean(config, "prune_tablets", True),
    }
    if values["null_safe_keys"] and on_conflict:
        message = "ON CONFLICT matches keys by equality; null-safe keys need a MERGE ON condition"
        fix = "remove null_safe_keys, or write when_* clauses instead of on_conflict"
        p.add(
            "null_safe_keys",
            True,
            message,
            "null_safe_keys with when_* clauses (or the default upsert)",
            fix,
        )
    p.raise_if_any(model, materialization)
    return MergeConfig(
        model=model,
        materialization=materialization,
        unique_key=keys,
        clauses=tuple(clauses),
        default_upsert=shaped is None and not clauses and on_conflict is None,
        on_conflict=on_conflict,
        incremental_predicates=predicates or (),
        incremental_strategy=strategy,
        replace_where=replace_where,
        **values,
    )


def _unknown_keys(p: Problems, config: Mapping[str, Any]) -> None:
    for key in config:
        if not isinstance(key, str) or key in KNOWN_KEYS or key in _DBT_KEYS:
            continue
        close = difflib.get_close_matches(key, KNOWN_KEYS, n=1, cutoff=0.8)
        if close or key.startswith(_OUR_PREFIXES):
            hint = (
                f"did you mean `{close[0]}`?"
                if close
                else "remove it (see the config table in the README)"
            )
            p.add(
                key,
                config[key],
                "not a dbt-tablets config key",
                "the keys in the README's config table",
                hint,
            )


def _key_and_strategy(
    p: Problems, config: Mapping[str, Any], materialization: str
) -> tuple[tuple[str, ...], str]:
    incremental = materialization == INCREMENTAL
    raw_key = config.get("unique_key")
    if raw_key in ("", []) and incremental:
        raw_key = None  # dbt: an empty unique_key means none
    example = "id or [id, day]"
    keys = (
        p.str_list(
            {"unique_key": raw_key},
            "unique_key",
            what="column name",
            example=example,
            allow_empty=False,
        )
        or ()
    )
    if not incremental:
        if not keys and "unique_key" not in p:
            message = "merge_tablets needs the key that matches source rows to target rows (the ON condition)"
            p.add(
                "unique_key",
                raw_key,
                message,
                "a column name or a list of column names",
                "set unique_key: id (or [id, day])",
            )
        return keys, "merge"
    raw = config.get("incremental_strategy")
    strategy = raw.strip().lower() if isinstance(raw, str) else ("merge" if keys else "append")
    if strategy not in INCREMENTAL_STRATEGIES:
        fix = (
            "use merge (with unique_key; every row is upserted in one commit), delete+insert,"
            " append, insert_overwrite (with replace_where), replace_where (with incremental_predicates) or microbatch"
        )
        p.add(
            "incremental_strategy",
            raw,
            "not a strategy for tablet tables",
            ", ".join(INCREMENTAL_STRATEGIES),
            fix,
        )
    return keys, strategy


def _replace_where(
    p: Problems, config: Mapping[str, Any], strategy: str, clauses: list[ClauseConfig]
) -> str | None:
    """``replace_where`` (insert_overwrite), or microbatch's window; strategies that do not
    read the when_* clauses refuse them rather than ignore them."""
    if strategy in ("delete+insert", "microbatch") and clauses:
        first = next(k for k in CATEGORIES if config.get(k) is not None)
        message = f"when_* clauses describe a MERGE; {strategy} does not read them"
        fix = "set incremental_strategy: merge, or remove the when_* keys"
        p.add(first, config.get(first), message, "incremental_strategy: merge", fix)
    raw = config.get("replace_where")
    if raw is not None:
        if strategy != "insert_overwrite":
            message = f"replace_where narrows insert_overwrite, not {strategy}"
            fix = "set incremental_strategy: insert_overwrite, or remove replace_where"
            p.add("replace_where", raw, message, "incremental_strategy: insert_overwrite", fix)
        elif not isinstance(raw, str) or not raw.strip():
            message = "not a SQL predicate"
            allowed = "a boolean SQL expression on the table's columns"
            p.add(
                "replace_where",
                raw,
                message,
                allowed,
                "write replace_where: \"day >= '2024-01-01'\"",
            )
        else:
            return raw.strip()
    if strategy == "microbatch":
        return _batch_window(p, config)
    return None


def _replace_where_strategy(p: Problems, config: Mapping[str, Any], predicates: tuple[str, ...] | None) -> str | None:
    """dbt-databricks' ``incremental_strategy: replace_where``: the rows its
    ``incremental_predicates`` hold for are replaced by the new rows (insert_overwrite with
    their conjunction as ``replace_where``)."""
    if config.get("replace_where") is not None:
        p.add(
            "replace_where", config.get("replace_where"),
            "incremental_strategy replace_where takes its predicate from incremental_predicates",
            "incremental_predicates with incremental_strategy: replace_where",
            "move the predicate into incremental_predicates, or use incremental_strategy: insert_overwrite",
        )
    if not predicates:
        p.add(
            "incremental_predicates", config.get("incremental_predicates"),
            "incremental_strategy replace_where replaces the rows these predicates hold for, and needs at least one",
            "a list of SQL predicates on the table's columns",
            "set incremental_predicates: [\"day >= '2024-01-01'\"]",
        )
        return None
    return " AND ".join(f"({q})" for q in predicates)


def _batch_window(p: Problems, config: Mapping[str, Any]) -> str | None:
    """``event_time >= '<start>' AND event_time < '<end>'``: the batch's window, the same bounds
    (and the same text) dbt-core filters the model's inputs with. None before dbt sets them
    (parsing, or the first batch that creates the table)."""
    event_time = config.get("event_time")
    if not isinstance(event_time, str) or not event_time.strip():
        message = "microbatch replaces each batch's event_time window, and needs the column"
        p.add("event_time", event_time, message, "a column name", "set event_time: event_ts")
        return None
    bounds = []
    for key in (BATCH_START, BATCH_END):
        value = config.get(key)
        if value is None:
            return None
        if isinstance(value, str):
            try:
                value = datetime.fromisoformat(value)
            except ValueError:
                p.add(
                    key, value, "not a timestamp", "dbt-core's batch bound", "run it with dbt run"
                )
                return None
        if not isinstance(value, datetime):
            p.add(key, value, "not a timestamp", "dbt-core's batch bound", "run it with dbt run")
            return None
        bounds.append(str(value))
    col = event_time.strip()
    return f"{col} >= '{bounds[0]}' AND {col} < '{bounds[1]}'"


def _predicates(p: Problems, config: Mapping[str, Any]) -> tuple[str, ...] | None:
    """``incremental_predicates`` (dbt-core), or ``predicates`` (dbt-spark's name)."""
    found = p.str_list(
        config, "incremental_predicates", what="SQL predicate", example=_PREDICATE_EXAMPLE
    )
    if config.get("predicates") is None:
        return found
    if found is not None:
        message = "predicates and incremental_predicates are the same setting, given twice"
        p.add(
            "predicates",
            config.get("predicates"),
            message,
            "one of them",
            "keep incremental_predicates only",
        )
        return found
    return p.str_list(config, "predicates", what="SQL predicate", example=_PREDICATE_EXAMPLE)


def _exclusive(
    p: Problems,
    config: Mapping[str, Any],
    materialization: str,
    strategy: str,
    clauses: list[ClauseConfig],
    on_conflict: OnConflict | None,
    predicates: tuple[str, ...] | None,
) -> None:
    """Keys that cannot go together with ``on_conflict``."""
    if on_conflict is None:
        return
    raw = config.get("on_conflict")
    if clauses:
        message = "on_conflict and when_* clauses are two ways to write the statement; pick one"
        allowed = (
            "either on_conflict, or when_matched / when_not_matched / when_not_matched_by_source"
        )
        p.add(
            "on_conflict",
            raw,
            message,
            allowed,
            "remove on_conflict (write the clauses), or remove the when_* keys",
        )
    if materialization == INCREMENTAL and strategy != "merge":
        message = f"on_conflict needs incremental_strategy merge, not {strategy}"
        p.add(
            "on_conflict",
            raw,
            message,
            "incremental_strategy: merge",
            "set incremental_strategy: merge",
        )
    if predicates:
        given = config.get("incremental_predicates") or config.get("predicates")
        fix = "write the statement as when_* clauses (on_conflict do_nothing = when_not_matched: [{action: insert}])"
        message = "INSERT ... ON CONFLICT has no ON condition to narrow"
        p.add(
            "incremental_predicates",
            given,
            message,
            "incremental_predicates with when_* clauses",
            fix,
        )


def _update_columns(p: Problems, config: Mapping[str, Any]) -> dict[str, Any]:
    update = p.str_list(
        config, "merge_update_columns", what="column name", example="[status, amount]"
    )
    exclude = p.str_list(
        config, "merge_exclude_columns", what="column name", example="[created_at]"
    )
    if update is not None and exclude is not None:
        message = "merge_update_columns and merge_exclude_columns are mutually exclusive"
        fix = "keep merge_update_columns (update only these) or merge_exclude_columns (update all but these)"
        p.add(
            "merge_update_columns", config.get("merge_update_columns"), message, "one of them", fix
        )
    return {"merge_update_columns": update, "merge_exclude_columns": exclude}


def _aliases(p: Problems, config: Mapping[str, Any], materialization: str) -> dict[str, str]:
    defaults = dict(
        zip(("source_alias", "target_alias"), DEFAULT_ALIASES[materialization], strict=True)
    )
    out = {}
    for key, default in defaults.items():
        raw = config.get(key)
        if raw is None:
            out[key] = default
        elif isinstance(raw, str) and _IDENT.match(raw) and raw.lower() != "excluded":
            out[key] = raw
        else:
            allowed = "letters, digits and _ (not starting with a digit; not `excluded`)"
            p.add(key, raw, "not a plain SQL identifier", allowed, f"set {key}: {default}")
            out[key] = default
    if out["source_alias"].lower() == out["target_alias"].lower():
        fix = f"set source_alias: {defaults['source_alias']} and target_alias: {defaults['target_alias']}"
        p.add(
            "source_alias",
            config.get("source_alias"),
            "the source and target aliases are the same",
            "two different identifiers",
            fix,
        )
    return out


def _on_schema_change(p: Problems, config: Mapping[str, Any]) -> str:
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


def _table_options(p: Problems, config: Mapping[str, Any], materialization: str) -> dict[str, Any]:
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
            p.add(
                key, config.get(key), "tablet tables are not partitioned or bucketed", "unset", fix
            )
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
            cluster_by = p.str_list(
                config, LIQUID_CLUSTERED_BY, what="column name", example="[customer_id]"
            )
    return {
        "target_tablet_rows": rows,
        "cluster_by": cluster_by or (),
        "tblproperties": tuple((str(k), str(v)) for k, v in props.items()),
    }


def _is_set(value: Any) -> bool:
    return value is not None and value is not False and value != "" and value != [] and value != {}


def config_warnings(config: Mapping[str, Any] | None, model: str) -> list[str]:
    """The warnings a model's config earns on a tablet table (the run goes on): dbt-databricks'
    ``liquid_clustered_by`` taken as ``cluster_by``, and one for the dbt-databricks keys that
    are ignored, naming each with why and what to do instead.

    >>> config_warnings({"zorder": ["id"]}, "orders")[0].splitlines()[1]
    "  - zorder = ['id']: Z-ordering is Delta's OPTIMIZE ... ZORDER BY"
    """
    config = dict(config or {})
    out = []
    liquid = config.get(LIQUID_CLUSTERED_BY)
    if _is_set(liquid) and config.get("cluster_by") is None:
        out.append(
            f"Model '{model}': liquid_clustered_by = {liquid!r} (Databricks' liquid clustering) is "
            "cluster_by on a tablet table: new tablets are sorted by these columns and merges skip "
            "tablets by their ranges.\nHelp: name the key cluster_by to silence this warning."
        )
    ignored = [k for k in DATABRICKS_IGNORED if _is_set(config.get(k))]
    if ignored:
        lines = [f"Model '{model}': ignored, as a tablet table cannot honour these dbt-databricks settings:"]
        for key in ignored:
            why, fix = DATABRICKS_IGNORED[key]
            lines.append(f"  - {key} = {config[key]!r}: {why}")
            lines.append(f"      fix: {fix}")
        out.append("\n".join(lines))
    return out
