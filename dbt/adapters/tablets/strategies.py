"""A model's ``unique_key`` and ``incremental_strategy``, and what each strategy needs:
``replace_where`` (or dbt-databricks' ``incremental_predicates``) and a microbatch's window."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from dbt.adapters.tablets.clauses import (
    CATEGORIES,
    ClauseConfig,
)
from dbt.adapters.tablets.problems import Problems
from dbt.adapters.tablets.vocabulary import (
    BATCH_END,
    BATCH_START,
    INCREMENTAL,
    INCREMENTAL_STRATEGIES,
    PREDICATE_EXAMPLE,
)


def key_and_strategy(p: Problems, config: Mapping[str, Any], materialization: str) -> tuple[tuple[str, ...], str]:
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


def checked_replace_where(
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
        return batch_window(p, config)
    return None


def replace_where_strategy(p: Problems, config: Mapping[str, Any], predicates: tuple[str, ...] | None) -> str | None:
    """dbt-databricks' ``incremental_strategy: replace_where``: the rows its
    ``incremental_predicates`` hold for are replaced by the new rows (insert_overwrite with
    their conjunction as ``replace_where``)."""
    if config.get("replace_where") is not None:
        p.add(
            "replace_where",
            config.get("replace_where"),
            "incremental_strategy replace_where takes its predicate from incremental_predicates",
            "incremental_predicates with incremental_strategy: replace_where",
            "move the predicate into incremental_predicates, or use incremental_strategy: insert_overwrite",
        )
    if not predicates:
        p.add(
            "incremental_predicates",
            config.get("incremental_predicates"),
            "incremental_strategy replace_where replaces the rows these predicates hold for, and needs at least one",
            "a list of SQL predicates on the table's columns",
            "set incremental_predicates: [\"day >= '2024-01-01'\"]",
        )
        return None
    return " AND ".join(f"({q})" for q in predicates)


def batch_window(p: Problems, config: Mapping[str, Any]) -> str | None:
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
                p.add(key, value, "not a timestamp", "dbt-core's batch bound", "run it with dbt run")
                return None
        if not isinstance(value, datetime):
            p.add(key, value, "not a timestamp", "dbt-core's batch bound", "run it with dbt run")
            return None
        bounds.append(str(value))
    col = event_time.strip()
    return f"{col} >= '{bounds[0]}' AND {col} < '{bounds[1]}'"


def incremental_predicates(p: Problems, config: Mapping[str, Any]) -> tuple[str, ...] | None:
    """``incremental_predicates`` (dbt-core), or ``predicates`` (dbt-spark's name)."""
    found = p.str_list(config, "incremental_predicates", what="SQL predicate", example=PREDICATE_EXAMPLE)
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
    return p.str_list(config, "predicates", what="SQL predicate", example=PREDICATE_EXAMPLE)
