"""Key columns in a statement: a keyed table's MERGE must pair on its keys, and the rows it
inserts must carry them (``keyed``); ``INSERT ... ON CONFLICT`` names them (``check_conflict_target``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import sqlglot
from sqlglot import exp

from tablets.engine.images import insert_image
from tablets.engine.scope import Scope, conjuncts, plan_error, sql_cast
from tablets.spec import ActionKind, Category, Clause, MergeSpec
from tablets.spec.expr import Expr, all_of, any_of, coalesce_false, column, paren, spark_sql
from tablets.sqltext import quote_ident

# --- key columns -----------------------------------------------------------------------------


def _inserted_keys_matched(spec, scope, tcols, lower_t, target_schema, keys, found) -> None:
    """Each INSERT of a keyed table inserts, as each key column, the source expression ON
    equates it with (or NULL, which repeats no key): only then is a row that could repeat a key
    of the table MATCHED instead. A key computed in the INSERT (``VALUES (s.k - 10, ...)``) could
    repeat one unseen, so it is refused."""
    types = dict(target_schema)
    for i, clause in enumerate(spec.clauses):
        if clause.action is not ActionKind.INSERT:
            continue
        part = spec.part(i, clause)
        image, _, _ = insert_image(spec, scope, clause, tcols, lower_t, types, part)
        for col, value in image:
            if col not in keys or _same_sql(value, sql_cast("NULL", types[col])):
                continue
            matched = found.get(col.lower(), "")
            if _same_sql(value, sql_cast(matched, types[col])) or _same_sql(value, matched):
                continue
            raise plan_error(
                spec,
                part,
                f"the INSERT computes key column {col!r} (the table's key is ({', '.join(keys)})) instead of "
                f"inserting {matched}, the source value ON matches it with: a computed key could repeat one of the table's",
                help=f"Compute the key in the source query (USING (SELECT ..., <expression> AS {col} ...)) and insert {matched}.",
            )


def _first_of(spec: MergeSpec, scope: Scope, category: Category) -> list[tuple[exp.Expr, Clause]]:
    """Each clause of ``category``, with the condition that it is the first of them to hold."""
    out: list[tuple[exp.Expr, Clause]] = []
    earlier: list[exp.Expr] = []
    for c in spec.clauses:
        if c.category is not category:
            continue
        cond = scope.qualify(c.condition, category, f"{category.value} clause") if c.condition else exp.true()
        first = [*(exp.Not(this=coalesce_false(e.copy())) for e in earlier), coalesce_false(cond.copy())]
        out.append((all_of(first), c))
        earlier.append(cond)
    return out


def _tree(spec: MergeSpec, c: Clause) -> exp.Expr:
    """``c``'s condition as written (a builder's string may not parse: said as the planner says it)."""
    assert c.condition is not None
    try:
        return c.condition.tree
    except sqlglot.errors.ParseError as e:
        raise plan_error(spec, "MATCHED clause", f"cannot parse expression {c.condition.text!r} ({e})") from e


def _same_sql(a: str, b: str) -> bool:
    return a.replace("`", "").lower() == b.replace("`", "").lower()


def _key_matches(
    spec: MergeSpec, on: exp.Expr, lower_t: dict[str, str], keys: Sequence[str]
) -> tuple[dict[str, str], list[exp.Expr], set[str], dict[str, exp.Expr]]:
    """The ON condition's ``target.key = <source expression>`` (or ``<=>``) conjuncts, by key
    column, the other conjuncts, the key columns matched with ``<=>``, and the source
    expressions' trees."""
    t = spec.target_alias.lower()
    wanted = {k.lower() for k in keys}
    found: dict[str, str] = {}
    trees: dict[str, exp.Expr] = {}
    rest: list[exp.Expr] = []
    null_safe: set[str] = set()
    for c in conjuncts(on):
        hit = None
        if isinstance(c, (exp.EQ, exp.NullSafeEQ)):
            for a, b in ((c.left, c.right), (c.right, c.left)):
                if (
                    isinstance(a, exp.Column)
                    and a.table.lower() == t
                    and a.name.lower() in wanted
                    and a.name.lower() not in found
                    and not any(col.table.lower() == t for col in b.find_all(exp.Column))
                ):
                    hit = (lower_t[a.name.lower()], spark_sql(b))
                    trees[a.name.lower()] = b
                    break
        if hit is None:
            rest.append(c)
        else:
            found[hit[0].lower()] = hit[1]
            if isinstance(c, exp.NullSafeEQ):
                null_safe.add(hit[0].lower())
    return found, rest, null_safe, trees


def check_conflict_target(spec: MergeSpec, keys: Sequence[str]) -> None:
    """ON CONFLICT (cols) must name the table's key, as PostgreSQL wants a unique index on them."""
    given = {c.lower() for c in spec.conflict_keys}
    if keys and given == {k.lower() for k in keys}:
        return
    target = ", ".join(spec.conflict_keys)
    if not keys:
        raise plan_error(
            spec,
            f"ON CONFLICT ({target})",
            f"the table has no key columns, so no row can conflict on ({target})",
            help=f"Declare the key when you create the table: TBLPROPERTIES ('key_columns' = '{target}') "
            "(dbt: merge_tablets' unique_key), or use MERGE.",
        )
    raise plan_error(
        spec,
        f"ON CONFLICT ({target})",
        f"({target}) is not the table's key ({', '.join(keys)})",
        help=f"Write ON CONFLICT ({', '.join(keys)}), or use MERGE to match on other columns.",
    )


def keyed(
    spec: MergeSpec,
    target_schema: Sequence[tuple[str, str]],
    source_columns: Sequence[str] | None,
    keys: tuple[str, ...],
) -> MergeSpec:
    """Check ``spec`` against the table's key and make inserts checkable.

    - An UPDATE may assign a key column only its current value (``SET id = t.id``, or the
      source expression ON equates it with: ``SET *`` of an upsert);
    - a MERGE that inserts must match on every key column (``ON t.k = s.k AND ...``): else an
      inserted row could repeat a key the table has;
    - other ON conjuncts (dbt's incremental_predicates) are moved into the MATCHED clauses'
      conditions, so a source row whose key the table has is always MATCHED, and a pair that
      the original ON would have left NOT MATCHED and inserted is refused (REFUSE: the
      statement fails with ``KeyViolation``). That needs the NOT MATCHED BY SOURCE clauses to
      see the same rows as before, so it is refused with such clauses."""
    tcols = [n for n, _ in target_schema]
    lower_t = {c.lower(): c for c in tcols}
    scope = Scope(spec, tcols, source_columns)
    key_list = ", ".join(keys)
    found: dict[str, str] = {}
    found_trees: dict[str, exp.Expr] = {}
    rest: list[exp.Expr] = []
    null_safe: set[str] = set()
    if spec.on is not None:
        found, rest, null_safe, found_trees = _key_matches(
            spec, scope.qualify(spec.on, Category.MATCHED, "ON condition"), lower_t, keys
        )
    for i, clause in enumerate(spec.clauses):
        if clause.action is not ActionKind.UPDATE:
            continue
        part = spec.part(i, clause)
        assigned: list[tuple[str, Expr | str]] = list(clause.assignments)
        if clause.star and source_columns is not None:
            scols = {c.lower(): c for c in source_columns}
            assigned += [
                (k, f"{spec.source_alias}.{quote_ident(scols[k.lower()])}") for k in keys if k.lower() in scols
            ]
        for col, value in assigned:
            key = lower_t.get(col.lower())
            if key is None or key not in keys:
                continue
            tree = spark_sql(scope.qualify(value, clause.category, part)) if isinstance(value, Expr) else value
            if _same_sql(tree, f"{spec.target_alias}.{key}") or (
                clause.category is Category.MATCHED and _same_sql(found.get(key.lower(), ""), tree)
            ):
                continue
            raise plan_error(
                spec,
                part,
                f"SET assigns key column {key!r} (the table's key is ({key_list})): a key never changes, so that "
                "no statement can leave two rows with one key",
                help="Delete the row and insert it with its new key, or leave the key out of SET "
                "(SET * of a MERGE that matches on the key is fine).",
            )
    inserts = [c for c in spec.clauses if c.action is ActionKind.INSERT]
    if not inserts or spec.source is None:
        return spec
    missing = [k for k in keys if k.lower() not in found]
    if missing:
        raise plan_error(
            spec,
            "ON condition",
            f"the statement inserts rows, but {str(spec.on)!r} does not match on key column(s) {missing} "
            f"(the table's key is ({key_list})): an inserted row could repeat a key the table has",
            help="Match on every key column: ON "
            + " AND ".join(f"{spec.target_alias}.{k} = {spec.source_alias}.{k}" for k in keys)
            + ".",
        )
    _inserted_keys_matched(spec, scope, tcols, lower_t, target_schema, keys, found)
    if not rest:
        return spec
    by_source = Category.NOT_MATCHED_BY_SOURCE in spec.categories()
    if by_source and any(c.table.lower() != spec.target_alias.lower() for r in rest for c in r.find_all(exp.Column)):
        raise plan_error(
            spec,
            "ON condition",
            f"on a table with a key ({key_list}), a MERGE that inserts and has WHEN NOT MATCHED BY SOURCE "
            f"clauses must match on the key and target columns only, not also on "
            f"{' AND '.join(spark_sql(r) for r in rest)}",
            help="Move the conditions on source columns into the WHEN clauses' AND conditions.",
        )
    extra = all_of(paren(r.copy()) for r in rest)
    on = all_of(
        (exp.NullSafeEQ if k.lower() in null_safe else exp.EQ)(
            this=column(k, spec.target_alias), expression=found_trees[k.lower()].copy()
        )
        for k in keys
    )
    if null_safe:
        # keys holding NULL repeat, so pairing on them alone could pair a target row with several
        # source rows outside the rest: where a null-safe key is NULL, rows pair only as the
        # whole ON says (its rest then holds, so the clauses below treat them as plain matched
        # pairs); the key conjuncts stay join keys Spark hashes
        present = all_of(
            exp.Not(this=exp.Is(this=column(k, spec.target_alias), expression=exp.Null()))
            for k in keys
            if k.lower() in null_safe
        )
        on = exp.And(this=on, expression=paren(exp.Or(this=paren(present), expression=paren(extra.copy()))))
    clauses: list[Clause] = []
    for c in spec.clauses:
        if c.category is Category.MATCHED:
            cond = exp.And(this=paren(extra.copy()), expression=paren(_tree(spec, c))) if c.condition else extra
            c = replace(c, condition=Expr.of(cond))
        clauses.append(c)
    # a pair the original ON leaves unmatched is two events: its source row is NOT MATCHED (the
    # first NOT MATCHED clause that holds), its target row NOT MATCHED BY SOURCE (with such
    # clauses ON's rest names target columns only, so every pair of the row is outside alike)
    outside = exp.Not(this=coalesce_false(extra.copy()))
    firsts = _first_of(spec, scope, Category.NOT_MATCHED)
    deletes = [
        paren(j) for j, d in _first_of(spec, scope, Category.NOT_MATCHED_BY_SOURCE) if d.action is ActionKind.DELETE
    ]
    deleted = any_of(deletes) if deletes else None
    # its source row inserted and its target row deleted: one row of the key remains
    for first, ins in firsts:
        if deleted is not None and ins.action is ActionKind.INSERT:
            replaced = all_of([outside.copy(), paren(first.copy()), paren(deleted.copy())])
            clauses.append(
                replace(
                    ins, category=Category.MATCHED, action=ActionKind.REPLACE, condition=Expr.of(replaced), outside=True
                )
            )
    # its source row inserted and its target row kept: refused
    firsts_inserting = [paren(f.copy()) for f, ins in firsts if ins.action is ActionKind.INSERT]
    inserted = any_of(firsts_inserting) if firsts_inserting else exp.false()
    refused = exp.And(this=outside.copy(), expression=paren(inserted))
    clauses.append(Clause(Category.MATCHED, ActionKind.REFUSE, Expr.of(refused)))
    # a target row whose key matches but whose own columns fail the other conjuncts was NOT
    # MATCHED BY SOURCE: its clauses (target columns only) act on it as a matched pair now
    for c in spec.clauses:
        if c.category is Category.NOT_MATCHED_BY_SOURCE:
            part = "NOT MATCHED BY SOURCE clause"
            by_src = (
                exp.And(this=outside.copy(), expression=paren(scope.qualify(c.condition, c.category, part)))
                if c.condition
                else outside.copy()
            )
            sets = tuple((col, Expr.of(scope.qualify(v, c.category, part))) for col, v in c.assignments)
            clauses.append(
                replace(c, category=Category.MATCHED, condition=Expr.of(by_src), assignments=sets, outside=True)
            )
    return replace(spec, on=Expr.of(on), clauses=tuple(clauses))
