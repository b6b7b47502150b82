"""The planner: a MergeSpec and the two schemas -> a Plan value (no Spark needed).

The plan is the seed's shape: the strictest join with a mark column on each side, one CASE that
classifies each row pair into the index of its clause, and per action the columns it needs.
Expressions come as the spec's trees (``spec.expr.Expr``) and leave qualified, as ``Expr`` again
(Spark is given their text); sqlglot qualifies unqualified columns and folds constants.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.simplify import simplify

from tablets.engine.arrow_eval import Compiled, compile_expr, compile_predicate
from tablets.engine.images import insert_image, update_image
from tablets.engine.keys import check_conflict_target, keyed
from tablets.engine.names import IMAGE_PREFIX, S_MARK, T_MARK
from tablets.engine.scope import Scope, conjuncts, plan_error, sql_cast
from tablets.spec import ActionKind, Category, Clause, MergeSpec
from tablets.spec.expr import Expr, all_of, paren, spark_sql
from tablets.sqltext import quote_ident

JOIN_NAMES = {"inner": "INNER", "left": "LEFT OUTER", "right": "RIGHT OUTER", "full": "FULL OUTER"}


@dataclass(frozen=True)
class Branch:
    index: int  # the clause's position in the statement = its CASE value
    clause: Clause
    condition: Expr | None  # qualified
    image: tuple[tuple[str, str], ...] = ()  # UPDATE/INSERT: (target column, Spark SQL) for every column
    # the image's values by target column, uncast (driver_plan.classify_on_driver reads them): a plain copy
    # ("t" | "s", column), ("null", ""), or ("expr", qualified Spark SQL); None: no image
    copies: tuple[tuple[str, str], ...] | None = None
    # by target column, the ("expr", ...) copies' trees (Arrow compiles them), else None
    values: tuple[Expr | None, ...] = field(default=(), compare=False, repr=False)

    @property
    def plain(self) -> bool:
        """Unconditional, and its image (if any) copies plain columns: the driver can apply it
        whatever the source's types allow for expressions."""
        return not self.condition and all(side != "expr" for side, _ in self.copies or ())


@dataclass(frozen=True)
class DriverClause:
    """A clause compiled to Arrow (``Plan.driver_clauses``)."""

    branch: Branch
    condition: Compiled | Literal[True]  # True: none
    values: tuple[Compiled | None, ...]  # by target column: an ("expr", ...) value's, else None


DriverClauses = tuple[DriverClause, ...]  # one category's, in statement order


@dataclass(frozen=True)
class Plan:
    spec: MergeSpec
    noop_reason: str | None
    join: str | None  # inner | left | right | full; None: no source (UPDATE/DELETE)
    on: Expr | None  # qualified
    branches: tuple[Branch, ...]  # clauses that can fire, in statement order
    dropped: tuple[tuple[Clause, str], ...]  # clauses removed before planning, and why
    target_columns: tuple[str, ...]  # target columns to read
    prune_keys: tuple[tuple[str, str], ...]  # join_keys where no BY SOURCE clause needs every tablet
    column_types: tuple[tuple[str, str], ...]  # target schema (name, Spark type)
    key_columns: tuple[str, ...] = ()  # the table's key: inserted keys are checked for duplicates
    on_is_keys: bool = False  # every conjunct of ON is one of join_keys (no other condition)
    join_keys: tuple[tuple[str, str], ...] = ()  # (target column, source expression) equi-join pairs
    on_rest: Expr | None = None  # the conjuncts of ON besides join_keys, ANDed (dbt's incremental_predicates)
    # target columns read only to tell an UPDATE's unchanged rows (skip_unchanged): the driver
    # plan reads them last, for the rows still alike (``driver_plan.classify_on_driver``)
    compare_only: tuple[str, ...] = ()
    # target columns read only to be kept as they are by every UPDATE (no condition, expression
    # or key names them): Spark's merge tasks may read them for the updated rows alone
    # (``pairs_sql.kept_in_tasks``)
    keep_only: tuple[str, ...] = ()
    # the source columns the statement reads (the source's spelling), None: every one (a star, a
    # subquery, or the source's columns unknown); the rest never leave the source's scan
    source_reads: tuple[str, ...] | None = None

    @property
    def read_first(self) -> list[str]:
        """``target_columns`` but ``compare_only``: what the driver plan reads before comparing."""
        return [c for c in self.target_columns if c not in self.compare_only]

    @property
    def noop(self) -> bool:
        return self.noop_reason is not None

    def actions(self, *kinds: ActionKind) -> tuple[Branch, ...]:
        return tuple(b for b in self.branches if b.clause.action in kinds)

    @property
    def plain(self) -> bool:
        """ON is exactly the key equalities, every clause on rows at hand an unconditional copy of
        plain columns (or DELETE), and every BY SOURCE clause's condition one Arrow evaluates as
        Spark does (``arrow_eval``): the driver can classify the rows itself (``driver_plan.classify_on_driver``)."""
        return (
            self.on_is_keys
            and all(b.plain for b in self.branches if b.clause.category is not Category.NOT_MATCHED_BY_SOURCE)
            and self.driver_clauses(Category.NOT_MATCHED_BY_SOURCE) is not None
        )

    @property
    def by_source(self) -> bool:
        """Some clause acts on target rows without a pair: every target row matters."""
        return self.join in ("right", "full")

    def driver_clauses(self, category: Category, source_types: Mapping[str, str] | None = None) -> DriverClauses | None:
        """The clauses of ``category`` in statement order, each with its condition compiled to
        Arrow (``arrow_eval``; True: none) over the columns it may read: the target's, and the
        source's as ``source_types`` (name -> Spark type) gives them, and so is each value of its
        image that is an expression (``SET is_deleted = TRUE``, ``SET n = t.n + s.n``). None where
        the driver cannot apply one: a condition or a value Arrow cannot promise to evaluate as
        Spark does."""
        sides: dict[str, Mapping[str, str]] = {}
        if category is not Category.NOT_MATCHED:
            sides[self.spec.target_alias.lower()] = dict(self.column_types)
        if category is not Category.NOT_MATCHED_BY_SOURCE and source_types is not None:
            sides[self.spec.source_alias.lower()] = source_types
        out: list[DriverClause] = []
        for b in self.branches:
            if b.clause.category is category:
                cond: Compiled | Literal[True] | None = compile_predicate(b.condition, sides) if b.condition else True
                copies = b.copies or ()
                exprs = b.values or (None,) * len(copies)
                values = tuple(
                    compile_expr(e, sides) if side == "expr" and e is not None else None
                    for (side, _), e in zip(copies, exprs, strict=True)
                )
                if cond is None or any(
                    v is None for v, (side, _) in zip(values, b.copies or (), strict=True) if side == "expr"
                ):
                    return None
                out.append(DriverClause(b, cond, values))
        return tuple(out)

    def driver_on_rest(self, source_types: Mapping[str, str] | None) -> Compiled | Literal[True] | None:
        """``on_rest`` compiled to Arrow over both sides (True: ON is only the key equalities),
        so that the driver keeps just the key-equal pairs ON accepts; None where Arrow cannot
        promise Spark's answer."""
        if self.on_rest is None:
            return True if self.join_keys else None
        if source_types is None:
            return None
        sides = {self.spec.target_alias.lower(): dict(self.column_types), self.spec.source_alias.lower(): source_types}
        return compile_predicate(self.on_rest, sides)

    @property
    def deletes_by_key(self) -> tuple[str, str] | None:
        """(target column, source column) where the statement only deletes the target rows whose
        one key ``t.k = s.k`` the source holds (one unconditional WHEN MATCHED THEN DELETE, ON
        nothing else): its source's key set decides it (``engine.key_delete``)."""
        if self.join != "inner" or not self.on_is_keys or len(self.join_keys) != 1 or len(self.branches) != 1:
            return None
        (b,) = self.branches
        if b.clause.category is not Category.MATCHED or b.clause.action is not ActionKind.DELETE or b.condition:
            return None
        col, expr = self.join_keys[0]
        name = source_column(self.spec, expr)
        return None if name is None else (col, name)

    @property
    def pairs_nothing(self) -> bool:
        """ON is constantly false (microbatch, replace_where): every row is unmatched, no join."""
        return self.on is not None and _constant(self.on.tree) is False

    @property
    def columns(self) -> list[str]:
        """The target's column names, in order."""
        return [n for n, _ in self.column_types]

    @property
    def images(self) -> list[str]:
        """The classified rows' new-image column of each target column (``columns``' order)."""
        return [f"{IMAGE_PREFIX}{i}" for i in range(len(self.column_types))]

    @property
    def has_deletes(self) -> bool:
        return bool(self.actions(ActionKind.DELETE, ActionKind.UPDATE, ActionKind.REPLACE))

    @property
    def has_inserts(self) -> bool:
        return bool(self.actions(ActionKind.INSERT, ActionKind.UPDATE, ActionKind.REPLACE))

    @property
    def needs_row_ids(self) -> bool:
        return self.has_deletes

    def guard(self, b: Branch) -> str:
        return _guard(self, b)


def _guard(plan: Plan, b: Branch) -> str:
    parts = []
    if plan.join is not None:
        parts.append(
            {
                Category.MATCHED: f"{S_MARK} IS NOT NULL AND {T_MARK} IS NOT NULL",
                Category.NOT_MATCHED: f"{T_MARK} IS NULL",
                Category.NOT_MATCHED_BY_SOURCE: f"{S_MARK} IS NULL",
            }[b.clause.category]
        )
    if b.condition:
        parts.append(f"({b.condition})")
    return " AND ".join(parts) if parts else "TRUE"


def _constant(tree: exp.Expr) -> bool | None:
    """True/False when the condition folds to a constant (NULL counts as false), else None."""
    try:
        folded = simplify(tree.copy())
    except Exception:  # noqa: BLE001 - sqlglot could not fold it (a TIMESTAMP literal with an
        return None  # offset against one without, say: only the session's zone orders them)
    if isinstance(folded, exp.Boolean):
        return bool(folded.this)
    if isinstance(folded, exp.Null):
        return False
    return None


def noop_reason(spec: MergeSpec) -> str | None:
    """Why the statement is a degenerate no-op, judged from the spec alone (no schema, no Spark)."""
    if not spec.clauses:
        return "no WHEN clauses"
    for c in spec.clauses:
        if c.action is ActionKind.DO_NOTHING:
            continue
        if c.condition is None:
            return None
        try:
            if _constant(c.condition.tree) is not False:
                return None
        except sqlglot.errors.ParseError:
            return None  # the planner reports it
    if all(c.action is ActionKind.DO_NOTHING for c in spec.clauses):
        return "every clause is DO NOTHING"
    return "every clause is DO NOTHING or has an always-false condition"


def plan_merge(
    spec: MergeSpec,
    target_schema: Sequence[tuple[str, str]],
    source_columns: Sequence[str] | None,
    key_columns: Sequence[str] = (),
    *,
    skip_unchanged: bool = True,
) -> Plan:
    """Plan ``spec`` against the target's (name, type) columns and the source's column names.

    ``skip_unchanged`` (the run's option): an UPDATE whose new image equals the old row writes
    nothing, so every target column is read to compare. Without it an UPDATE reads only the
    target columns its image keeps or its conditions and expressions name: an upsert that sets
    every column from the source reads the key alone (late materialisation's narrow scan).

    With ``key_columns`` (the table's key) no statement may leave two live rows with one key:
    key columns are never assigned a new value, an inserting MERGE matches on the whole key, and
    inserted keys are checked for duplicates when the statement runs (see ``keys.keyed``)."""
    if spec.conflict_keys:
        check_conflict_target(spec, key_columns)
    if key_columns:
        spec = keyed(spec, target_schema, source_columns, tuple(key_columns))
    tcols = [n for n, _ in target_schema]
    types = dict(target_schema)
    lower_t = {c.lower(): c for c in tcols}
    if spec.source is not None and spec.source_alias.lower() == spec.target_alias.lower():
        raise plan_error(
            spec,
            "aliases",
            f"source and target both use the alias {spec.target_alias!r}",
            help="Give the source a different alias (USING ... AS s).",
        )
    scope = Scope(spec, tcols, source_columns)
    needed: set[str] = set()
    branches: list[Branch] = []
    dropped: list[tuple[Clause, str]] = []
    seen_unconditional: set[Category] = set()  # a clause without a condition: a later one is refused
    seen_always_true: set[Category] = set()  # a condition that folds to TRUE: a later one is dropped
    on_sql = on_tree = None
    if spec.on is not None:
        on_tree = scope.qualify(spec.on, Category.MATCHED, "ON condition")
        needed |= scope.target_refs(on_tree)
        on_sql = Expr.of(on_tree)

    for i, clause in enumerate(spec.clauses):
        part = spec.part(i, clause)
        if clause.category in seen_always_true:  # SQL runs it, and it acts on no row
            dropped.append(
                (clause, f"unreachable: an earlier WHEN {clause.category.value} clause's condition is always true")
            )
            continue
        if clause.category in seen_unconditional:
            raise plan_error(
                spec,
                part,
                f"unreachable: it follows an unconditional WHEN {clause.category.value} clause",
                help="Add an AND condition to the earlier clause, or move this clause before it.",
            )
        cond_sql = None
        if clause.condition:
            tree = scope.qualify(clause.condition, clause.category, part)
            const = _constant(tree)
            if const is False:
                dropped.append((clause, "condition is always false"))
                continue
            if const is None:
                needed |= scope.target_refs(tree)
                cond_sql = Expr.of(tree)
        if cond_sql is None:
            (seen_unconditional if not clause.condition else seen_always_true).add(clause.category)
        image: tuple[tuple[str, str], ...] = ()
        copies: tuple[tuple[str, str], ...] | None = None
        values: tuple[Expr | None, ...] = ()
        if clause.action is ActionKind.UPDATE:
            image, copies, values = update_image(spec, scope, clause, tcols, lower_t, types, part, needed)
        elif clause.action in (ActionKind.INSERT, ActionKind.REPLACE):
            image, copies, values = insert_image(spec, scope, clause, tcols, lower_t, types, part)
        elif clause.action is ActionKind.REFUSE:  # the key it would repeat, for the message
            image = tuple(
                (c, f"{spec.target_alias}.{quote_ident(c)}" if c in key_columns else sql_cast("NULL", types[c]))
                for c in tcols
            )
            copies = tuple(("t", c) if c in key_columns else ("null", "") for c in tcols)
        branches.append(Branch(i, clause, cond_sql, image, copies, values))

    acting = [b for b in branches if b.clause.action is not ActionKind.DO_NOTHING]
    reason = noop_reason(spec) or (None if acting else "every clause is DO NOTHING or can never fire")
    # DO NOTHING clauses after the last acting clause of their category cannot change anything
    cats = {b.clause.category for b in acting}
    branches = [b for b in branches if b.clause.category in cats]
    join = _join_type(cats) if spec.source is not None else None
    join_keys = _join_keys(on_tree, spec, lower_t)
    rest = [c for c in conjuncts(on_tree) if _key_pair(c, spec, lower_t) is None] if on_tree is not None else []
    updates = [b for b in acting if b.clause.action is ActionKind.UPDATE]
    named = set(needed)  # what ON, the conditions and the expressions read
    kept = [{c for c, copy in zip(tcols, b.copies or (), strict=True) if copy == ("t", c)} for b in updates]
    for k in kept:  # the columns an image keeps (unassigned, or SET c = t.c)
        needed |= k
    keep_only = tuple(
        c for c in tcols if kept and all(c in k for k in kept) and c not in named and c not in key_columns
    )
    compare_only: tuple[str, ...] = ()
    if updates and skip_unchanged:  # the comparison with the old row reads every column
        compare_only = tuple(c for c in tcols if c not in needed)
        needed |= set(tcols)
    ordered = tuple(c for c in tcols if c in needed)
    return Plan(
        source_reads=_source_reads(scope, spec, on_tree, branches),
        spec=spec,
        noop_reason=reason,
        join=join,
        on=on_sql,
        branches=tuple(branches),
        dropped=tuple(dropped),
        target_columns=ordered,
        compare_only=compare_only,
        keep_only=keep_only,
        prune_keys=join_keys if Category.NOT_MATCHED_BY_SOURCE not in cats else (),
        column_types=tuple(target_schema),
        key_columns=tuple(key_columns),
        on_is_keys=bool(join_keys) and not rest,
        join_keys=join_keys,
        on_rest=Expr.of(all_of(paren(c.copy()) for c in rest)) if rest else None,
    )


def _source_reads(
    scope: Scope, spec: MergeSpec, on: exp.Expr | None, branches: Sequence[Branch]
) -> tuple[str, ...] | None:
    """``Plan.source_reads``: the source columns ON, a condition or a value names (``s.c``, an
    unqualified ``c``, the struct ``c`` of ``s.c.f`` or ``c.f``), and those an image copies; None where a star or a subquery may read any (a subquery's unqualified names
    may be the source's)."""
    if spec.source is None or not scope.known:
        return None
    trees = [on] if on is not None else []
    names: set[str] = set()
    for b in branches:
        if b.condition:
            trees.append(b.condition.tree)
        trees += [v.tree for v in b.values if v is not None]
        names |= {c.lower() for side, c in b.copies or () if side == "s"}
    for tree in trees:
        if tree.find(exp.Star, exp.Select) is not None:
            return None
        for col in tree.find_all(exp.Column):  # (``s.st.f``: db s, table st, name f)
            parts = [p.name.lower() for p in (col.args.get("db"), col.args.get("table"), col.this) if p is not None]
            if len(parts) > 1 and parts[0] == spec.source_alias.lower():
                names.add(parts[1])
            elif len(parts) == 1 or parts[0] != spec.target_alias.lower():
                names.add(parts[0])  # unqualified, or a struct's field (``st.f``)
    return tuple(c for c in scope.scols.values() if c.lower() in names)


def _join_type(cats: set[Category]) -> str:
    by_target = Category.NOT_MATCHED in cats
    by_source = Category.NOT_MATCHED_BY_SOURCE in cats
    if by_target and by_source:
        return "full"
    if by_target:
        return "left"
    if by_source:
        return "right"
    return "inner"


def _join_keys(on: exp.Expr | None, spec: MergeSpec, lower_t: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """Equi-join conjuncts ``t.col = <source expr>``: a pair's keys are equal and not NULL, so
    min/max can skip tablets and the driver can pair rows by them (``<=>`` pairs NULLs)."""
    if on is None:
        return ()
    pairs = (_key_pair(c, spec, lower_t) for c in conjuncts(on))
    return tuple(p for p in pairs if p is not None)  # (dbt writes ON (a) AND (b))


def _key_pair(c: exp.Expr, spec: MergeSpec, lower_t: dict[str, str]) -> tuple[str, str] | None:
    """The (target column, source expression) a conjunct of ON equates, None for any other."""
    if not isinstance(c, exp.EQ):  # <=> matches NULLs, which min/max do not describe
        return None
    for a, b in ((c.left, c.right), (c.right, c.left)):
        if (
            isinstance(a, exp.Column)
            and a.table.lower() == spec.target_alias.lower()
            and a.name.lower() in lower_t
            and not any(col.table.lower() == spec.target_alias.lower() for col in b.find_all(exp.Column))
            and any(True for _ in b.find_all(exp.Column))
        ):
            return lower_t[a.name.lower()], spark_sql(b)
    return None


def source_column(spec: MergeSpec, expr: str) -> str | None:
    """The name of the source column ``expr`` is (``s.col``, as written), or None."""
    m = re.fullmatch(r"`?(\w+)`?\.`?(\w+)`?", expr.strip())
    if m is None or m.group(1).lower() != spec.source_alias.lower():
        return None
    return m.group(2)
