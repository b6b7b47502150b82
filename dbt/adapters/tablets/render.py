"""The statement a later run of a merge_tablets (or incremental, ``file_format='tablets'``) model
executes, rendered from its :class:`~dbt.adapters.tablets.config.MergeConfig` once the table
and the source (the model's SQL as a temporary view) exist and their columns are known.

What needs the columns is checked here (every problem at once, as in the config's first stage):
the key columns exist on both sides, ``set`` / ``values`` / ``merge_update_columns`` /
``cluster_by`` name table columns.

    >>> from dbt.adapters.tablets.config import parse_merge_config
    >>> cfg = parse_merge_config({"unique_key": "id"}, "orders")
    >>> print(render_merge(cfg, "analytics.orders", "orders__dbt_tmp",
    ...                    ["id", "status"], ["id", "status"]))
    MERGE INTO analytics.orders AS t
    USING orders__dbt_tmp AS s
    ON t.`id` = s.`id`
    WHEN MATCHED THEN UPDATE SET `status` = s.`status`
    WHEN NOT MATCHED THEN INSERT (`id`, `status`) VALUES (s.`id`, s.`status`)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import sqlglot
from sqlglot import exp

from dbt.adapters.tablets.clauses import ClauseConfig
from dbt.adapters.tablets.config import MergeConfig
from dbt.adapters.tablets.problems import Problems
from tablets.sqltext import quote_ident

DEFAULT_UPSERT = (
    ClauseConfig("(default upsert)", "MATCHED", "update"),
    ClauseConfig("(default upsert)", "NOT MATCHED", "insert"),
)
TABLE, MODEL = "existing table", "model's SQL"


class Columns:
    """Case-insensitive column lookup (Spark resolves names case-insensitively)."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = [str(n) for n in names]
        self._by_lower = {n.lower(): n for n in self.names}

    def get(self, name: str) -> str | None:
        return self._by_lower.get(name.strip("`").lower())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def spelled(self, name: str) -> str:
        return self.get(name) or name


def update_columns(cfg: MergeConfig, target: Columns, source: Columns) -> list[str]:
    """The columns a plain ``update`` sets: target columns the source has, minus the keys,
    narrowed by ``merge_update_columns`` or ``merge_exclude_columns``."""
    if cfg.merge_update_columns is not None:
        wanted = [target.get(c) for c in cfg.merge_update_columns]
        return [c for c in wanted if c is not None and c in source]
    skip = {k.lower() for k in (*cfg.unique_key, *(cfg.merge_exclude_columns or ()))}
    return [c for c in target.names if c.lower() not in skip and c in source]


# --- the column checks ---------------------------------------------------------------------------


def _missing(p: Problems, key: str, value: object, names: Sequence[str], cols: Columns, side: str, fix: str) -> None:
    missing = [n for n in names if n not in cols]
    if missing:
        what = "is not a column" if len(missing) == 1 else "are not columns"
        p.add(
            key,
            value,
            f"{', '.join(missing)} {what} of the {side}",
            ", ".join(cols.names) or "(none)",
            fix,
        )


def check_columns(cfg: MergeConfig, target: Columns, source: Columns) -> None:
    p = Problems()
    keys = list(cfg.unique_key)
    fix = "use columns that both the model's SQL and the existing table have (or run with --full-refresh)"
    _missing(p, "unique_key", keys, keys, target, TABLE, fix)
    _missing(p, "unique_key", keys, keys, source, MODEL, fix)
    for key in ("merge_update_columns", "merge_exclude_columns", "cluster_by"):
        names = list(getattr(cfg, key) or ())
        _missing(p, key, names, names, target, TABLE, "list columns of the table")
    update = list(cfg.merge_update_columns or ())
    _missing(
        p,
        "merge_update_columns",
        update,
        update,
        source,
        MODEL,
        "list columns that the model's SQL selects",
    )
    for c in cfg.clauses:
        _check_clause(p, c, target)
    if cfg.on_conflict is not None and cfg.on_conflict.assignments:
        pairs = dict(cfg.on_conflict.assignments)
        _missing(
            p,
            "on_conflict.set",
            pairs,
            list(pairs),
            target,
            TABLE,
            "assign only columns of the table",
        )
    if not [c for c in target.names if c in source]:
        fix = "select the table's columns, or run with --full-refresh to rebuild the table"
        p.add(
            "(model SQL)",
            source.names,
            "the model's SQL has no column of the existing table",
            ", ".join(target.names),
            fix,
        )
    p.raise_if_any(cfg.model, cfg.materialization, "the table's rows were not changed")


def _check_clause(p: Problems, c: ClauseConfig, target: Columns) -> None:
    if c.assignments:
        fix = "assign only columns of the table (add new ones with on_schema_change: append_new_columns)"
        _missing(
            p,
            f"{c.key}.set",
            dict(c.assignments),
            [n for n, _ in c.assignments],
            target,
            TABLE,
            fix,
        )
    if c.insert_values:
        cols = [n for n, _ in c.insert_values]
        _missing(
            p,
            f"{c.key}.values",
            dict(c.insert_values),
            cols,
            target,
            TABLE,
            "insert only columns of the table",
        )
    if c.insert_list is not None and len(c.insert_list) > len(target.names):
        message = f"{len(c.insert_list)} values for a table of {len(target.names)} columns"
        fix = "give at most one value per column, in table order, or use a map {column: value}"
        p.add(f"{c.key}.values", list(c.insert_list), message, ", ".join(target.names), fix)


# --- the statement -------------------------------------------------------------------------------


def render_merge(
    cfg: MergeConfig,
    target: str,
    source: str,
    target_columns: Sequence[str],
    source_columns: Sequence[str],
) -> str:
    """The statement that merges ``source`` (the model's SQL, a temporary view) into ``target``.

    ``MERGE INTO`` for a unique key with clauses (or the default upsert), ``INSERT ... ON
    CONFLICT`` for ``on_conflict``, ``INSERT INTO`` / ``INSERT OVERWRITE`` for an incremental
    model without a key or with the append / insert_overwrite strategies; delete+insert,
    microbatch and insert_overwrite with ``replace_where`` are one ``MERGE`` each (one commit).
    """
    tcols, scols = Columns(target_columns), Columns(source_columns)
    strategy = cfg.incremental_strategy
    if strategy == "microbatch" or (strategy == "insert_overwrite" and cfg.replace_where):
        return _render_replace_where(cfg, target, source, tcols, scols)
    if strategy == "delete+insert" and cfg.unique_key:
        return _render_delete_insert(cfg, target, source, tcols, scols)
    if strategy in ("append", "insert_overwrite", "delete+insert") or not cfg.unique_key:
        return _render_insert(cfg, target, source, tcols, scols)
    check_columns(cfg, tcols, scols)
    if cfg.on_conflict is not None:
        return _render_on_conflict(cfg, target, source, tcols, scols)
    verb = "MERGE INTO"
    if cfg.merge_with_schema_evolution:  # the source's new columns are the statement's too
        verb = "MERGE WITH SCHEMA EVOLUTION INTO"
        tcols = Columns([*tcols.names, *(c for c in scols.names if c not in tcols)])
    lines = [
        f"{verb} {target} AS {cfg.target_alias}",
        f"USING {source} AS {cfg.source_alias}",
        f"ON {_on(cfg, tcols)}",
    ]
    for c in DEFAULT_UPSERT if cfg.default_upsert else cfg.clauses:
        rendered = _render_clause(cfg, c, tcols, scols)
        if not (cfg.default_upsert and rendered.endswith("DO NOTHING")):  # key-only tables
            lines.append(rendered)
    return "\n".join(lines)


def _render_insert(cfg: MergeConfig, target: str, source: str, tcols: Columns, scols: Columns) -> str:
    shared = [c for c in tcols.names if c in scols]
    if not shared:
        check_columns(cfg, tcols, scols)
    verb = "INSERT OVERWRITE TABLE" if cfg.incremental_strategy == "insert_overwrite" else "INSERT INTO"
    cols = ", ".join(quote_ident(c) for c in shared)
    return f"{verb} {target} ({cols})\nSELECT {', '.join(quote_ident(scols.spelled(c)) for c in shared)} FROM {source}"


# the column that tells delete+insert's two kinds of source rows apart (see below)
NEW_ROW = "dbt_tablets_new_row"


def _render_delete_insert(cfg: MergeConfig, target: str, source: str, tcols: Columns, scols: Columns) -> str:
    """dbt-core's delete+insert (delete the target rows whose unique_key is among the new rows,
    then insert every new row) as ONE MERGE, so one commit: no reader ever sees the keys deleted
    and not yet inserted, and a failure leaves the table as it was.

    A MERGE cannot both delete a matched target row and insert the source row it matched, and a
    key repeated in the source would match a target row twice (a cardinality error). So the
    source is the new rows (flagged, never matched: the ON condition excludes them, and WHEN
    NOT MATCHED inserts each one, duplicates included) plus each distinct key once (unflagged:
    it matches the target rows to delete, and inserts nothing). incremental_predicates narrow
    the delete, as in dbt-core; their unqualified columns are the target's."""
    check_columns(cfg, tcols, scols)
    if NEW_ROW in tcols or NEW_ROW in scols:
        p = Problems()
        fix = f"rename the column {NEW_ROW}, or use incremental_strategy: merge"
        p.add("incremental_strategy", "delete+insert", f"{NEW_ROW} is reserved", "other names", fix)
        p.raise_if_any(cfg.model, cfg.materialization, "the table's rows were not changed")
    shared = [c for c in tcols.names if c in scols]
    keys = {k.lower() for k in cfg.unique_key}
    t, s, flag = cfg.target_alias, cfg.source_alias, quote_ident(NEW_ROW)
    rows = ", ".join(quote_ident(scols.spelled(c)) for c in shared)
    key_rows = ", ".join(
        quote_ident(scols.spelled(c)) if c.lower() in keys else f"NULL AS {quote_ident(c)}" for c in shared
    )
    on = _on(replace(cfg, incremental_predicates=()), tcols)
    preds = [_target_side(p, t, tcols) for p in cfg.incremental_predicates]
    names = ", ".join(quote_ident(c) for c in shared)
    values = ", ".join(f"{s}.{quote_ident(c)}" for c in shared)
    return "\n".join(
        [
            f"MERGE INTO {target} AS {t}",
            f"USING (SELECT {rows}, TRUE AS {flag} FROM {source}",
            f"  UNION ALL SELECT DISTINCT {key_rows}, FALSE AS {flag} FROM {source}) AS {s}",
            " AND ".join([f"ON {on}", f"NOT {s}.{flag}", *(f"({p})" for p in preds)]),
            "WHEN MATCHED THEN DELETE",
            f"WHEN NOT MATCHED AND {s}.{flag} THEN INSERT ({names}) VALUES ({values})",
        ]
    )


def _target_side(predicate: str, alias: str, target: Columns) -> str:
    """A delete predicate's unqualified columns, qualified as the target's (dbt-core writes
    delete+insert's predicates into ``DELETE FROM target WHERE ...``)."""
    tree = sqlglot.parse_one(predicate, read="spark")
    for col in tree.find_all(exp.Column):
        if not col.table and col.find_ancestor(exp.Select) is None and col.name in target:
            col.set("table", exp.to_identifier(alias))
    return tree.sql(dialect="spark")


def _render_replace_where(cfg: MergeConfig, target: str, source: str, tcols: Columns, scols: Columns) -> str:
    """Replace the target rows that ``replace_where`` holds for (insert_overwrite; microbatch:
    the batch's event_time window) with the new rows, as ONE MERGE (one commit).

    ``ON FALSE`` pairs no rows: every target row is NOT MATCHED BY SOURCE (deleted where the
    predicate holds), every new row NOT MATCHED (inserted). As Delta's REPLACE WHERE, a new row
    the predicate does not hold for fails the statement, before anything is committed: the
    next run would not replace it. Unqualified columns are the target row's in the delete and
    the new row's in the check."""
    pred = cfg.replace_where
    if pred is None:  # microbatch outside a batch of dbt run
        p = Problems()
        fix = "run the model with dbt run (or dbt build), which runs it batch by batch"
        p.add("event_time", None, "no batch window: dbt-core set no batch bounds", "a batch", fix)
        p.raise_if_any(cfg.model, cfg.materialization, "the table's rows were not changed")
        return ""
    shared = [c for c in tcols.names if c in scols]
    if not shared:
        check_columns(cfg, tcols, scols)
    s = cfg.source_alias
    names = ", ".join(quote_ident(c) for c in shared)
    values = ", ".join(f"{s}.{quote_ident(scols.spelled(c))}" for c in shared)
    what = "the batch event_time window" if cfg.incremental_strategy == "microbatch" else ""
    shown = pred.replace("'", '"').replace("\\", "/")  # a message with no quote to escape
    message = f"dbt-tablets: model {cfg.model}: a new row is outside {what or 'replace_where'} ({shown})"
    return "\n".join(
        [
            f"MERGE INTO {target} AS {cfg.target_alias}",
            f"USING {source} AS {s}",
            "ON FALSE",
            f"WHEN NOT MATCHED BY SOURCE AND ({pred}) THEN DELETE",
            f"WHEN NOT MATCHED AND NOT COALESCE(({pred}), FALSE)"
            f" THEN INSERT ({quote_ident(shared[0])}) VALUES (raise_error('{message}'))",
            f"WHEN NOT MATCHED THEN INSERT ({names}) VALUES ({values})",
        ]
    )


def _on(cfg: MergeConfig, target: Columns) -> str:
    t, s = cfg.target_alias, cfg.source_alias
    op = "<=>" if cfg.null_safe_keys else "="
    keys = [quote_ident(target.spelled(k)) for k in cfg.unique_key]
    return " AND ".join([*(f"{t}.{k} {op} {s}.{k}" for k in keys), *(f"({p})" for p in cfg.incremental_predicates)])


def _set_list(pairs: Sequence[tuple[str, str]]) -> str:
    return ", ".join(f"{quote_ident(c)} = {v}" for c, v in pairs)


def _render_clause(cfg: MergeConfig, c: ClauseConfig, target: Columns, source: Columns) -> str:
    s = cfg.source_alias
    conds = []
    if c.category == "NOT MATCHED BY SOURCE":  # rows outside the predicate window are never touched
        conds += [f"({pred})" for pred in cfg.incremental_predicates]
    if c.condition:
        conds.append(f"({c.condition})")
    head = f"WHEN {c.category}" + (f" AND {' AND '.join(conds)}" if conds else "")
    if c.action == "delete":
        return f"{head} THEN DELETE"
    if c.action == "do_nothing":
        return f"{head} THEN DO NOTHING"
    if c.action == "update":
        if c.assignments is not None:
            pairs = [(target.spelled(col), v) for col, v in c.assignments]
        else:
            pairs = [(col, f"{s}.{quote_ident(source.spelled(col))}") for col in update_columns(cfg, target, source)]
        return f"{head} THEN UPDATE SET {_set_list(pairs)}" if pairs else f"{head} THEN DO NOTHING"
    if c.insert_list is not None:
        names = ", ".join(quote_ident(n) for n in target.names[: len(c.insert_list)])
        return f"{head} THEN INSERT ({names}) VALUES ({', '.join(c.insert_list)})"
    if c.insert_values is not None:
        pairs = [(target.spelled(col), v) for col, v in c.insert_values]
    else:
        pairs = [(col, f"{s}.{quote_ident(source.spelled(col))}") for col in target.names if col in source]
    names, exprs = ", ".join(quote_ident(col) for col, _ in pairs), ", ".join(v for _, v in pairs)
    return f"{head} THEN INSERT ({names}) VALUES ({exprs})"


def _render_on_conflict(cfg: MergeConfig, target: str, source: str, tcols: Columns, scols: Columns) -> str:
    assert cfg.on_conflict is not None
    shared = [c for c in tcols.names if c in scols]
    keys = ", ".join(quote_ident(tcols.spelled(k)) for k in cfg.unique_key)
    lines = [
        f"INSERT INTO {target} ({', '.join(quote_ident(c) for c in shared)})",
        f"SELECT {', '.join(quote_ident(scols.spelled(c)) for c in shared)} FROM {source}",
    ]
    if cfg.on_conflict.action == "do_update":
        if cfg.on_conflict.assignments is not None:
            pairs = [(tcols.spelled(c), v) for c, v in cfg.on_conflict.assignments]
        else:
            pairs = [(c, f"excluded.{quote_ident(c)}") for c in update_columns(cfg, tcols, scols)]
        if pairs:
            where = f" WHERE {cfg.on_conflict.condition}" if cfg.on_conflict.condition else ""
            lines.append(f"ON CONFLICT ({keys}) DO UPDATE SET {_set_list(pairs)}{where}")
            return "\n".join(lines)
    lines.append(f"ON CONFLICT ({keys}) DO NOTHING")
    return "\n".join(lines)
