"""The statement part of the config: ``when_matched``, ``when_not_matched``,
``when_not_matched_by_source`` (ordered lists of ``{condition, action, set | values}``) and
``on_conflict``, read into frozen values with every problem recorded."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dbt.adapters.tablets.problems import Problems, sql_value
from tablets import ALLOWED_ACTIONS, INTERNAL_ACTIONS, ActionKind, Category, expression_error

# clause config key (when_matched, ...) -> (SQL category, allowed actions), from the engine's rules
CATEGORIES: dict[str, tuple[str, tuple[str, ...]]] = {
    f"when_{c.name.lower()}": (
        c.value,
        tuple(
            a.value.lower().replace(" ", "_")
            for a in ActionKind
            if a in ALLOWED_ACTIONS[c] and a not in INTERNAL_ACTIONS
        ),
    )
    for c in Category
}
CLAUSE_KEYS = ("condition", "action", "set", "values")
ON_CONFLICT_ACTIONS = ("do_nothing", "do_update")
ON_CONFLICT_KEYS = ("action", "set", "condition")


@dataclass(frozen=True)
class ClauseConfig:
    """``WHEN <category> [AND condition] THEN <action>``, as configured.

    ``assignments`` (update) is None for "the update columns" (every non-key column, as narrowed
    by ``merge_update_columns`` / ``merge_exclude_columns``). ``insert_values`` (insert) is None
    for "every target column the source has"; ``insert_list`` is ``values`` given as a list
    (VALUES in table column order).
    """

    key: str  # where it came from, for messages: "when_matched[1]"
    category: str  # MATCHED | NOT MATCHED | NOT MATCHED BY SOURCE
    action: str  # update | delete | insert | do_nothing
    condition: str | None = None
    assignments: tuple[tuple[str, str], ...] | None = None
    insert_values: tuple[tuple[str, str], ...] | None = None
    insert_list: tuple[str, ...] | None = None


@dataclass(frozen=True)
class OnConflict:
    """``INSERT ... ON CONFLICT (keys) DO NOTHING | DO UPDATE SET ... [WHERE condition]``."""

    action: str  # do_nothing | do_update
    assignments: tuple[tuple[str, str], ...] | None = None  # None: the update columns
    condition: str | None = None


def _action_name(raw: Any) -> str | None:
    return raw.strip().lower().replace(" ", "_") if isinstance(raw, str) else None


def _condition(p: Problems, key: str, raw: Any, example: str) -> str | None:
    if raw is None:
        return None
    if isinstance(raw, str) and raw.strip():
        wrong = expression_error(raw.strip())
        if wrong is None:
            return raw.strip()
        p.add(key, raw, f"not valid SQL: {wrong}", f'a SQL boolean expression, e.g. "{example}"', "correct the SQL")
        return None
    allowed = f'a non-empty string, e.g. "{example}"'
    p.add(
        key,
        raw,
        "not a SQL boolean expression",
        allowed,
        "write it as a quoted SQL string, or remove it",
    )
    return None


def _unknown(p: Problems, key: str, raw: Mapping[str, Any], known: tuple[str, ...], what: str) -> None:
    for k in raw:
        if k not in known:
            close = difflib.get_close_matches(str(k), known, n=1)
            hint = f"did you mean `{close[0]}`?" if close else "remove it"
            p.add(f"{key}.{k}", raw[k], f"not {what} key", ", ".join(known), hint)


def _clause_action(p: Problems, key: str, category: str, actions: tuple[str, ...], raw: Any) -> str | None:
    action = _action_name(raw)
    if action in actions:
        return action
    fix = f"set action: {actions[0]}"
    if action == "insert":
        fix += " (inserts belong in when_not_matched)"
    elif action in ("update", "delete"):
        fix += " (updates and deletes belong in when_matched / when_not_matched_by_source)"
    message = "missing" if raw is None else f"not an action of WHEN {category}"
    p.add(f"{key}.action", raw, message, ", ".join(actions), fix)
    return None


def _set(p: Problems, key: str, category: str, action: str | None, raw: Mapping[str, Any]):
    """The ``set`` of an update clause (None: the update columns)."""
    if "set" not in raw:
        if action == "update" and category == "NOT MATCHED BY SOURCE":
            message = "an update WHEN NOT MATCHED BY SOURCE has no source row to copy, so it needs `set`"
            fix = "add set, e.g. {action: update, set: {is_deleted: 'true'}}"
            p.add(
                f"{key}.set",
                None,
                message,
                "a map column -> SQL expression over the target row",
                fix,
            )
        return None
    if action not in (None, "update"):
        fix = "remove `set`, or make the action update"
        p.add(
            f"{key}.set",
            raw["set"],
            f"`set` goes with action update, not {action}",
            "set only on update clauses",
            fix,
        )
        return None
    if raw["set"] == "*":
        return None
    return p.assignments(f"{key}.set", raw["set"], what="the new values", example="{qty: 't.qty - s.qty'}")


def _values(p: Problems, key: str, action: str | None, raw: Mapping[str, Any]):
    """The ``values`` of an insert clause: (map, list); (None, None) for every column."""
    if "values" not in raw:
        return None, None
    values = raw["values"]
    if action not in (None, "insert"):
        fix = "remove `values`, or make the action insert"
        p.add(
            f"{key}.values",
            values,
            f"`values` goes with action insert, not {action}",
            "values only on insert clauses",
            fix,
        )
        return None, None
    if isinstance(values, list | tuple):
        texts = [sql_value(v) for v in values]
        if texts and all(t is not None for t in texts):
            return None, tuple(t for t in texts if t is not None)
        message = "a values list must hold one SQL expression per target column, in table order"
        allowed = "a non-empty list of SQL strings, e.g. ['s.a', '100 * s.b']"
        p.add(
            f"{key}.values",
            values,
            message,
            allowed,
            "write values: ['s.a', 's.b'] or a map {a: 's.a'}",
        )
        return None, None
    if values == "*":
        return None, None
    example = "{item: 's.item', qty: 's.qty'}"
    return p.assignments(f"{key}.values", values, what="the inserted row", example=example), None


def parse_clause(p: Problems, cat_key: str, index: int, raw: Any) -> ClauseConfig | None:
    category, actions = CATEGORIES[cat_key]
    key = f"{cat_key}[{index}]"
    if isinstance(raw, str):  # shorthand: just the action
        raw = {"action": raw}
    if not isinstance(raw, Mapping):
        message = "a clause must be a map with `action` (and optionally `condition`, `set`, `values`)"
        allowed = f"{{action: {', '.join(actions)}, condition: <SQL>, set: {{col: <SQL>}}, values: ...}}"
        p.add(key, raw, message, allowed, f"write {cat_key}: [{{action: {actions[0]}}}]")
        return None
    _unknown(p, key, raw, CLAUSE_KEYS, "a clause")
    action = _clause_action(p, key, category, actions, raw.get("action"))
    condition = _condition(p, f"{key}.condition", raw.get("condition"), "t.qty - s.qty = 0")
    assignments = _set(p, key, category, action, raw)
    insert_values, insert_list = _values(p, key, action, raw)
    if action is None:
        return None
    return ClauseConfig(key, category, action, condition, assignments, insert_values, insert_list)


def parse_clauses(p: Problems, config: Mapping[str, Any]) -> list[ClauseConfig]:
    """Every configured clause, in statement order (MATCHED, NOT MATCHED, BY SOURCE)."""
    out: list[ClauseConfig] = []
    for cat_key, (_category, actions) in CATEGORIES.items():
        raw = config.get(cat_key)
        if raw is None:
            continue
        items = [raw] if isinstance(raw, Mapping | str) else raw
        if not isinstance(items, list | tuple) or not items:
            allowed = "an ordered list of {condition, action, set | values} maps"
            p.add(
                cat_key,
                raw,
                "not a list of clauses",
                allowed,
                f"write {cat_key}: [{{action: {actions[0]}}}]",
            )
            continue
        parsed = [parse_clause(p, cat_key, i, item) for i, item in enumerate(items)]
        for i, c in enumerate(parsed[:-1]):
            if c is not None and c.condition is None:
                message = f"unreachable: {cat_key}[{i}] has no condition, so it takes every row of its category first"
                fix = f"add a condition to {cat_key}[{i}], or move it last, or remove {cat_key}[{i + 1}]"
                p.add(
                    f"{cat_key}[{i + 1}]",
                    items[i + 1],
                    message,
                    "only the last clause of a category may omit `condition`",
                    fix,
                )
        out.extend(c for c in parsed if c is not None)
    return out


def parse_on_conflict(p: Problems, config: Mapping[str, Any]) -> OnConflict | None:
    """``on_conflict``: an action name, or ``{action, set, condition}`` (``DO UPDATE SET ...
    WHERE condition``). In ``set`` and ``condition``, ``excluded.<col>`` is the incoming row and
    a bare ``<col>`` the existing one (PostgreSQL's rules)."""
    raw = config.get("on_conflict")
    if raw is None:
        return None
    action_raw, assignments, condition = raw, None, None
    if isinstance(raw, Mapping):
        action_raw = raw.get("action")
        _unknown(p, "on_conflict", raw, ON_CONFLICT_KEYS, "an on_conflict")
        if "set" in raw:
            what = "the updated row; `excluded.<col>` is the incoming row"
            assignments = p.assignments("on_conflict.set", raw["set"], what=what, example="{value: 'excluded.value'}")
        condition = _condition(p, "on_conflict.condition", raw.get("condition"), "excluded.updated_at > updated_at")
    action = _action_name(action_raw)
    if action not in ON_CONFLICT_ACTIONS:
        allowed = "do_nothing, do_update (or {action: do_update, set: {col: 'excluded.col'}, condition: ...})"
        fix = "set on_conflict: do_nothing (keep existing rows) or do_update (overwrite them)"
        p.add("on_conflict", raw, "not an ON CONFLICT action", allowed, fix)
        return None
    if action != "do_update":
        for key, value in (("set", assignments), ("condition", condition)):
            if value is not None:
                fix = f"remove `{key}`, or use action: do_update"
                p.add(
                    f"on_conflict.{key}",
                    raw.get(key),
                    f"`{key}` goes with do_update",
                    f"{key} only with action do_update",
                    fix,
                )
    return OnConflict(action, assignments, condition)


# dbt-databricks' merge keys, for models written for it: they shape the classic upsert
DATABRICKS_KEYS = (
    "skip_matched_step",
    "skip_not_matched_step",
    "matched_condition",
    "not_matched_condition",
    "not_matched_by_source_action",
    "not_matched_by_source_condition",
    "not_matched_by_source_set",
)


def parse_databricks_keys(p: Problems, config: Mapping[str, Any]) -> list[ClauseConfig] | None:
    """The clauses dbt-databricks' keys describe (None if none of them is set): update matched
    rows unless ``skip_matched_step`` (and only where ``matched_condition``), insert the others
    unless ``skip_not_matched_step`` (where ``not_matched_condition``), and, with
    ``not_matched_by_source_action`` delete / update (``not_matched_by_source_set``), act on
    target rows the source lacks (where ``not_matched_by_source_condition``)."""
    if all(config.get(k) is None for k in DATABRICKS_KEYS):
        return None
    out: list[ClauseConfig] = []
    if not p.boolean(config, "skip_matched_step", False):
        cond = _condition(p, "matched_condition", config.get("matched_condition"), "s.updated_at > t.updated_at")
        out.append(ClauseConfig("matched_condition", "MATCHED", "update", cond))
    if not p.boolean(config, "skip_not_matched_step", False):
        cond = _condition(p, "not_matched_condition", config.get("not_matched_condition"), "s.is_active")
        out.append(ClauseConfig("not_matched_condition", "NOT MATCHED", "insert", cond))
    raw_action = config.get("not_matched_by_source_action")
    action = _action_name(raw_action)
    key = "not_matched_by_source_action"
    if raw_action is not None and action not in ("delete", "update"):
        p.add(
            key,
            raw_action,
            "not an action for target rows the source lacks",
            "delete, update",
            f"set {key}: delete",
        )
    elif action is not None:
        cond_raw = config.get("not_matched_by_source_condition")
        cond = _condition(p, "not_matched_by_source_condition", cond_raw, "t.day >= '2024-01-01'")
        assignments = None
        if action == "update":
            raw_set = config.get("not_matched_by_source_set")
            example = "{is_deleted: 'true'}"
            assignments = p.assignments(
                "not_matched_by_source_set",
                raw_set,
                what="the target row's new values",
                example=example,
            )
        out.append(ClauseConfig(key, "NOT MATCHED BY SOURCE", action, cond, assignments))
    if not out:
        fix = "unset skip_matched_step or skip_not_matched_step, or set not_matched_by_source_action"
        p.add(
            "skip_matched_step",
            True,
            "with both steps skipped the MERGE has no clause",
            "at least one clause",
            fix,
        )
    return out
