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
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.tablets.clauses import (
    CATEGORIES,
    ClauseConfig,
    OnConflict,
    parse_clauses,
    parse_databricks_keys,
    parse_on_conflict,
)
from dbt.adapters.tablets.problems import MergeConfigError, Problems
from dbt.adapters.tablets.strategies import (
    checked_replace_where,
    incremental_predicates,
    key_and_strategy,
    replace_where_strategy,
)
from dbt.adapters.tablets.table_options import on_schema_change, table_options
from dbt.adapters.tablets.vocabulary import (
    DATABRICKS_IGNORED,
    DBT_KEYS,
    DEFAULT_ALIASES,
    IDENT,
    INCREMENTAL,
    KNOWN_KEYS,
    LIQUID_CLUSTERED_BY,
    MERGE_TABLETS,
    OUR_PREFIXES,
    TABLE,
)

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
    # dbt-databricks' key: the MERGE is MERGE WITH SCHEMA EVOLUTION (new source columns added,
    # types widened, in the MERGE's commit)
    merge_with_schema_evolution: bool = False
    # Spark's ANSI mode for this model's statements; None: the profile's (``ansi``, default on)
    ansi: bool | None = None

    def statement_options(self) -> dict[str, Any]:
        """The engine's per-statement options (``tablets.MergeOptions`` fields, and ``ansi``,
        which the cursor applies around the statement)."""
        return {
            **ansi_option(self.ansi),
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
    ansi: bool | None = None  # as MergeConfig's

    def statement_options(self) -> dict[str, Any]:
        """The engine's options for the statement (the CREATE TABLE ... AS, a snapshot's MERGE)."""
        return {
            **ansi_option(self.ansi),
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


def ansi_option(ansi: bool | None) -> dict[str, bool]:
    return {} if ansi is None else {"ansi": ansi}


def parse_table_config(config: Mapping[str, Any] | None, model: str) -> TableConfig:
    """Validate a ``table`` model's tablet-table options; one error names every problem.

    >>> parse_table_config({"liquid_clustered_by": "day"}, "daily").cluster_by
    ('day',)
    """
    p = Problems()
    options = table_options(p, dict(config or {}), TABLE)
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
    keys, strategy = key_and_strategy(p, config, materialization)
    clauses = parse_clauses(p, config)
    shaped = parse_databricks_keys(p, config)
    if shaped is not None and clauses:
        message = "the when_* clauses and dbt-databricks' merge keys describe the same statement twice"
        fix = "keep the when_* clauses (they can say everything the others say), or remove them"
        first = next(k for k in CATEGORIES if config.get(k) is not None)
        p.add(first, config.get(first), message, "one of the two ways", fix)
    clauses = clauses or shaped or []
    on_conflict = parse_on_conflict(p, config)
    predicates = incremental_predicates(p, config)
    _exclusive(p, config, materialization, strategy, clauses, on_conflict, predicates)
    if strategy == "replace_where":  # dbt-databricks' spelling of insert_overwrite + replace_where
        strategy, replace_where = "insert_overwrite", replace_where_strategy(p, config, predicates)
        predicates = None
    else:
        replace_where = checked_replace_where(p, config, strategy, clauses)
    values = {  # in the README's order, which is the order problems are reported in
        **_update_columns(p, config),
        **_aliases(p, config, materialization),
        "null_safe_keys": p.boolean(config, "null_safe_keys", False),
        "skip_unchanged": p.boolean(config, "skip_unchanged", True),
        "on_schema_change": on_schema_change(p, config),
        **table_options(p, config, materialization),
        "prune_tablets": p.boolean(config, "prune_tablets", True),
        "merge_with_schema_evolution": p.boolean(config, "merge_with_schema_evolution", False),
    }
    if values["merge_with_schema_evolution"] and (strategy != "merge" or on_conflict is not None):
        p.add(
            "merge_with_schema_evolution",
            True,
            f"it makes the MERGE of incremental_strategy merge evolve the schema, and this model's statement is "
            f"{'INSERT ... ON CONFLICT' if on_conflict is not None else strategy}",
            "merge_with_schema_evolution with incremental_strategy merge (when_* clauses or the default upsert)",
            "remove it and set on_schema_change: append_new_columns",
        )
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
        if not isinstance(key, str) or key in KNOWN_KEYS or key in DBT_KEYS:
            continue
        close = difflib.get_close_matches(key, KNOWN_KEYS, n=1, cutoff=0.8)
        if close or key.startswith(OUR_PREFIXES):
            hint = f"did you mean `{close[0]}`?" if close else "remove it (see the config table in the README)"
            p.add(
                key,
                config[key],
                "not a dbt-tablets config key",
                "the keys in the README's config table",
                hint,
            )


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
        allowed = "either on_conflict, or when_matched / when_not_matched / when_not_matched_by_source"
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
    update = p.str_list(config, "merge_update_columns", what="column name", example="[status, amount]")
    exclude = p.str_list(config, "merge_exclude_columns", what="column name", example="[created_at]")
    if update is not None and exclude is not None:
        message = "merge_update_columns and merge_exclude_columns are mutually exclusive"
        fix = "keep merge_update_columns (update only these) or merge_exclude_columns (update all but these)"
        p.add("merge_update_columns", config.get("merge_update_columns"), message, "one of them", fix)
    return {"merge_update_columns": update, "merge_exclude_columns": exclude}


def _aliases(p: Problems, config: Mapping[str, Any], materialization: str) -> dict[str, str]:
    defaults = dict(zip(("source_alias", "target_alias"), DEFAULT_ALIASES[materialization], strict=True))
    out = {}
    for key, default in defaults.items():
        raw = config.get(key)
        if raw is None:
            out[key] = default
        elif isinstance(raw, str) and IDENT.match(raw) and raw.lower() != "excluded":
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
