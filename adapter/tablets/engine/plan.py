"""The planner: a MergeSpec and the two schemas -> a Plan value (no Spark needed).

The plan is the seed's shape: the strictest join with a mark column on each side, one CASE that
classifies each row pair into the index of its clause, and per action the columns it needs.
Expressions stay Spark SQL text; sqlglot qualifies unqualified columns and folds constants.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.simplify import simplify

from tablets.engine.arrow_eval import Compiled, compile_expr, compile_predicate
from tablets.engine.names import S_MARK, T_MARK
from tablets.exceptions import MergeSpecError
from tablets.spec import ActionKind, Category, Clause, MergeSpec

JOIN_NAMES = {"inner": "INNER", "left": "LEFT OUTER", "right": "RIGHT OUTER", "full": "FULL OUTER"}


@dataclass(frozen=True)
class Branch:
    index: int  # the clause's position in the statement = its CASE value
    clause: Clause
    condition: str | None  # qualified Spark SQL
    image: tuple[tuple[str, str], ...] = ()  # UPDATE/INSERT: (target column, Spark SQL) for every column
    # the image's values by target column, uncast (driver_plan.classify_on_driver reads them): a plain copy
    # ("t" | "s", column), ("null", ""), or ("expr", qualified Spark SQL); None: no image
    copies: tuple[tuple[str, str], ...] | None = None

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
    on: str | None  # qualified
    branches: tuple[Branch, ...]  # clauses that can fire, in statement order
    dropped: tuple[tuple[Clause, str], ...]  # clauses removed before planning, and why
    target_columns: tuple[str, ...]  # target columns to read
    prune_keys: tuple[tuple[str, str], ...]  # join_keys where no BY SOURCE clause needs every tablet
    column_types: tuple[tuple[str, str], ...]  # target schema (name, Spark type)
    key_columns: tuple[str, ...] = ()  # the table's key: inserted keys are checked for duplicates
    on_is_keys: bool = False  # every conjunct of ON is one of join_keys (no other condition)
    join_keys: tuple[tuple[str, str], ...] = ()  # (target column, source expression) equi-join pairs

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
                values = tuple(compile_expr(sql, sides) if side == "expr" else None for side, sql in b.copies or ())
                if cond is None or any(v is None for v, (side, _) in zip(values, b.copies or (), strict=True) if side == "expr"):
                    return None
                out.append(DriverClause(b, cond, values))
        return tuple(out)

    @property
    def pairs_nothing(self) -> bool:
        """ON is constantly false (microbatch, replace_where): every row is unmatched, no join."""
        return self.on is not None and _constant(sqlglot.parse_one(self.on, dialect="spark")) is False

    @property
    def has_deletes(self) -> bool:
        return bool(self.actions(ActionKind.DELETE, ActionKind.UPDATE))

    @property
    def has_inserts(self) -> bool:
        return bool(self.actions(ActionKind.INSERT, ActionKind.UPDATE))

    @property
    def needs_row_ids(self) -> bool:
        return self.has_deletes

    def guard(self, b: Branch) -> str:
        return _guard(self, b)


# Spark functions written without parentheses, which sqlglot reads as column names
_NILADIC = {"user", "current_database", "current_schema", "current_catalog", "current_timezone", "default"}


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


def _err(spec: MergeSpec, part: str, message: str, help: str | None = None) -> MergeSpecError:
    return MergeSpecError(f"{spec.operation} INTO {spec.target}: {part}: {message}", help)


class _Scope:
    """Column visibility for one expression: which aliases an unqualified name may mean."""

    def __init__(self, spec: MergeSpec, target_cols: Sequence[str], source_cols: Sequence[str] | None) -> None:
        self.spec = spec
        self.t = spec.target_alias
        self.s = spec.source_alias
        self.tcols = {c.lower(): c for c in target_cols}
        self.scols = {c.lower(): c for c in (source_cols or ())}
        # the source's columns are known (else, e.g. EXPLAIN of a no-op, Spark resolves them)
        self.known = spec.source is None or source_cols is not None

    def _side(self, alias: str) -> tuple[str, dict[str, str]] | None:
        if alias.lower() == self.t.lower():
            return "target", self.tcols
        if self.spec.source is not None and alias.lower() == self.s.lower() and self.known:
            return "source", self.scols
        return None

    def _unknown(self, part: str, what: str, candidates: Sequence[str], wrote: str) -> MergeSpecError:
        close = difflib.get_close_matches(wrote.lower(), [c.lower() for c in candidates], n=1, cutoff=0.6)
        spelled = {c.lower(): c for c in candidates}
        hint = f"Did you mean {spelled[close[0]]}? " if close else ""
        return _err(self.spec, part, what, help=f"{hint}Columns: {', '.join(candidates) or '(none)'}.")

    def resolve(self, col: exp.Column, part: str) -> None:
        """A qualified reference names an alias of the statement and one of its columns."""
        alias, name = (col.args["db"].name, col.table) if col.args.get("db") else (col.table, col.name)
        side = self._side(alias)
        if side is None:
            if alias.lower() in (self.t.lower(), self.s.lower()):
                return  # the source's columns are not known here: Spark resolves it
            if alias.lower() in self.tcols or alias.lower() in self.scols:
                return  # a struct column's field: col.field
            aliases = [self.t] + ([self.s] if self.spec.source is not None else [])
            raise _err(
                self.spec, part, f"{col.sql(dialect='spark')} refers to {alias!r}, which is not a table of this statement",
                help=f"Qualify columns with {' or '.join(aliases)}.",
            )
        what, cols = side
        if name.lower() not in cols:
            raise self._unknown(
                part, f"{col.sql(dialect='spark')}: the {what} ({alias}) has no column {name!r}",
                list(cols.values()), name,
            )

    def qualify(self, text: str, category: Category | None, part: str) -> exp.Expr:
        try:
            tree = sqlglot.parse_one(text, read="spark")
        except sqlglot.errors.ParseError as e:
            raise _err(self.spec, part, f"cannot parse expression {text!r} ({e})") from e
        for col in list(tree.find_all(exp.Column)):
            if col.find_ancestor(exp.Select) is not None:
                continue  # a subquery's own columns: Spark resolves them against its tables
            if col.table:
                self.resolve(col, part)
                continue
            name = col.name.lower()
            in_t, in_s = name in self.tcols, name in self.scols
            if not (in_t or in_s):
                if self.known and name not in _NILADIC:
                    sides = "target" + (" or the source" if self.spec.source is not None else "")
                    raise self._unknown(
                        part, f"column {col.name!r} is not a column of the {sides}",
                        list(self.tcols.values()) + [c for c in self.scols.values() if c.lower() not in self.tcols], col.name,
                    )
                continue
            if category is Category.NOT_MATCHED:
                in_t = False  # no target row exists
            elif category is Category.NOT_MATCHED_BY_SOURCE:
                in_s = False  # no source row exists
            if in_t and in_s:
                raise _err(
                    self.spec,
                    part,
                    f"column reference {col.name!r} is ambiguous (a column of both the target and the source)",
                    help=f"Qualify it as {self.t}.{col.name} or {self.s}.{col.name}.",
                )
            if in_t:
                col.set("table", exp.to_identifier(self.t))
            elif in_s:
                col.set("table", exp.to_identifier(self.s))
        self.check_sides(tree, category, part)
        return tree

    def check_sides(self, tree: exp.Expr, category: Category | None, part: str) -> None:
        """NOT MATCHED sees only the source row; NOT MATCHED BY SOURCE only the target row."""
        banned = {Category.NOT_MATCHED: (self.t, "target"), Category.NOT_MATCHED_BY_SOURCE: (self.s, "source")}.get(category)  # type: ignore[arg-type]
        if banned is None:
            return
        for col in tree.find_all(exp.Column):
            if col.find_ancestor(exp.Select) is not None:
                continue  # a subquery's own columns (UPDATE t SET v = (SELECT max(v) FROM s))
            if col.table.lower() == banned[0].lower():
                raise _err(
                    self.spec, part,
                    f"refers to {col.sql(dialect='spark')}, but a WHEN {category.value} row has no {banned[1]} row",  # type: ignore[union-attr]
                    help=f"Use only {'source' if banned[1] == 'target' else 'target'} columns in this clause.",
                )

    def target_refs(self, tree: exp.Expr) -> set[str]:
        out = set()
        for col in tree.find_all(exp.Column):
            if col.table.lower() == self.t.lower() and col.name.lower() in self.tcols:
                out.add(self.tcols[col.name.lower()])
        return out


def _constant(tree: exp.Expr) -> bool | None:
    """True/False when the condition folds to a constant (NULL counts as false), else None."""
    folded = simplify(tree.copy())
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
            if _constant(sqlglot.parse_one(c.condition, read="spark")) is not False:
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
) -> Plan:
    """Plan ``spec`` against the target's (name, type) columns and the source's column names.

    With ``key_columns`` (the table's key) no statement may leave two live rows with one key:
    key columns are never assigned a new value, an inserting MERGE matches on the whole key, and
    inserted keys are checked for duplicates when the statement runs (see ``_keyed``)."""
    if spec.conflict_keys:
        _check_conflict_target(spec, key_columns)
    if key_columns:
        spec = _keyed(spec, target_schema, source_columns, tuple(key_columns))
    tcols = [n for n, _ in target_schema]
    types = dict(target_schema)
    lower_t = {c.lower(): c for c in tcols}
    if spec.source is not None and spec.source_alias.lower() == spec.target_alias.lower():
        raise _err(spec, "aliases", f"source and target both use the alias {spec.target_alias!r}", help="Give the source a different alias (USING ... AS s).")
    scope = _Scope(spec, tcols, source_columns)
    needed: set[str] = set()
    branches: list[Branch] = []
    dropped: list[tuple[Clause, str]] = []
    seen_unconditional: set[Category] = set()  # a clause without a condition: a later one is refused
    seen_always_true: set[Category] = set()  # a condition that folds to TRUE: a later one is dropped
    on_sql = None
    if spec.on is not None:
        on_tree = scope.qualify(spec.on, Category.MATCHED, "ON condition")
        needed |= scope.target_refs(on_tree)
        on_sql = on_tree.sql(dialect="spark")

    for i, clause in enumerate(spec.clauses):
        part = f"clause #{i + 1} ({clause.describe()})"
        if clause.category in seen_always_true:  # SQL runs it, and it acts on no row
            dropped.append((clause, f"unreachable: an earlier WHEN {clause.category.value} clause's condition is always true"))
            continue
        if clause.category in seen_unconditional:
            raise _err(
                spec, part, f"unreachable: it follows an unconditional WHEN {clause.category.value} clause",
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
                cond_sql = tree.sql(dialect="spark")
        if cond_sql is None:
            (seen_unconditional if not clause.condition else seen_always_true).add(clause.category)
        image: tuple[tuple[str, str], ...] = ()
        copies: tuple[tuple[str, str], ...] | None = None
        if clause.action is ActionKind.UPDATE:
            image, copies = _update_image(spec, scope, clause, tcols, lower_t, types, part, needed)
        elif clause.action is ActionKind.INSERT:
            image, copies = _insert_image(spec, scope, clause, tcols, lower_t, types, part)
        elif clause.action is ActionKind.REFUSE:  # the key it would repeat, for the message
            image = tuple((c, f"{spec.target_alias}.`{c}`" if c in key_columns else _cast("NULL", types[c])) for c in tcols)
            copies = tuple(("t", c) if c in key_columns else ("null", "") for c in tcols)
        branches.append(Branch(i, clause, cond_sql, image, copies))

    acting = [b for b in branches if b.clause.action is not ActionKind.DO_NOTHING]
    reason = noop_reason(spec) or (None if acting else "every clause is DO NOTHING or can never fire")
    # DO NOTHING clauses after the last acting clause of their category cannot change anything
    cats = {b.clause.category for b in acting}
    branches = [b for b in branches if b.clause.category in cats]
    join = _join_type(cats) if spec.source is not None else None
    join_keys = _join_keys(on_sql, spec, lower_t)
    if any(b.clause.action is ActionKind.UPDATE for b in acting):
        needed |= set(tcols)  # the new image copies unassigned columns; skip-unchanged compares all
    ordered = tuple(c for c in tcols if c in needed)
    return Plan(
        spec=spec,
        noop_reason=reason,
        join=join,
        on=on_sql,
        branches=tuple(branches),
        dropped=tuple(dropped),
        target_columns=ordered,
        prune_keys=join_keys if Category.NOT_MATCHED_BY_SOURCE not in cats else (),
        column_types=tuple(target_schema),
        key_columns=tuple(key_columns),
        on_is_keys=bool(join_keys) and len(join_keys) == len(_conjuncts(sqlglot.parse_one(on_sql, read="spark"))),
        join_keys=join_keys,
    )


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


def _cast(expr: str, type_name: str) -> str:
    return f"CAST({expr} AS {type_name})"


_Image = tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]


def _copy(scope: _Scope, tree: exp.Expr) -> tuple[str, str]:
    """A value that is a plain column of the target or the source, or NULL, as a copy; else
    the expression (qualified)."""
    if isinstance(tree, exp.Null):
        return ("null", "")
    side = scope._side(tree.table) if isinstance(tree, exp.Column) and tree.table and not tree.args.get("db") else None  # noqa: SLF001
    if side is None or tree.name.lower() not in side[1]:
        return ("expr", tree.sql(dialect="spark"))
    return ("t" if side[0] == "target" else "s", side[1][tree.name.lower()])


def _update_image(spec, scope, clause, tcols, lower_t, types, part, needed) -> _Image:
    t = spec.target_alias
    assigned: dict[str, str] = {}
    copies: dict[str, tuple[str, str]] = {}
    if clause.star:
        for c in tcols:
            if c.lower() in scope.scols:
                assigned[c] = f"{spec.source_alias}.`{scope.scols[c.lower()]}`"
                copies[c] = ("s", scope.scols[c.lower()])
    for col, value in clause.assignments:
        name = lower_t.get(col.split(".")[-1].strip("`").lower())
        if name is None:
            raise _err(spec, part, f"SET assigns {col!r}, which is not a column of the target ({', '.join(tcols)})", help="Assign only target columns.")
        tree = scope.qualify(value, clause.category, part)
        needed |= scope.target_refs(tree)
        assigned[name] = tree.sql(dialect="spark")
        copies[name] = _copy(scope, tree)
    image = tuple((c, _cast(assigned.get(c, f"{t}.`{c}`"), types[c])) for c in tcols)
    return image, tuple(copies.get(c, ("t", c)) for c in tcols)


def _insert_image(spec, scope, clause, tcols, lower_t, types, part) -> _Image:
    values: dict[str, str] = {}
    copies: dict[str, tuple[str, str]] = {}
    if clause.star:
        for c in tcols:
            if c.lower() in scope.scols:
                values[c] = f"{spec.source_alias}.`{scope.scols[c.lower()]}`"
                copies[c] = ("s", scope.scols[c.lower()])
    else:
        cols = list(clause.insert_columns) or tcols[: len(clause.insert_values)]
        if len(clause.insert_values) > len(tcols):
            raise _err(spec, part, f"INSERT has {len(clause.insert_values)} values but the target has {len(tcols)} columns", help="Give one value per target column.")
        if len(cols) != len(clause.insert_values):
            raise _err(spec, part, f"INSERT names {len(cols)} columns but gives {len(clause.insert_values)} values", help="Give one value per named column.")
        for col, value in zip(cols, clause.insert_values, strict=True):
            name = lower_t.get(col.strip("`").lower())
            if name is None:
                raise _err(spec, part, f"INSERT names {col!r}, which is not a column of the target ({', '.join(tcols)})", help="Insert only target columns.")
            if name in values:
                raise _err(spec, part, f"INSERT names column {col!r} twice", help="Name each column once.")
            tree = scope.qualify(value, clause.category, part)
            values[name] = tree.sql(dialect="spark")
            copies[name] = _copy(scope, tree)
    image = tuple((c, _cast(values.get(c, "NULL"), types[c])) for c in tcols)
    return image, tuple(copies.get(c, ("null", "")) for c in tcols)


def _join_keys(on_sql: str | None, spec: MergeSpec, lower_t: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """Equi-join conjuncts ``t.col = <source expr>``: a pair's keys are equal and not NULL, so
    min/max can skip tablets and the driver can pair rows by them (``<=>`` pairs NULLs)."""
    if on_sql is None:
        return ()
    out = []
    for c in _conjuncts(sqlglot.parse_one(on_sql, read="spark")):  # dbt writes ON (a) AND (b)
        if not isinstance(c, exp.EQ):  # <=> matches NULLs, which min/max do not describe
            continue
        for a, b in ((c.left, c.right), (c.right, c.left)):
            if (
                isinstance(a, exp.Column)
                and a.table.lower() == spec.target_alias.lower()
                and a.name.lower() in lower_t
                and not any(col.table.lower() == spec.target_alias.lower() for col in b.find_all(exp.Column))
                and any(True for _ in b.find_all(exp.Column))
            ):
                out.append((lower_t[a.name.lower()], b.sql(dialect="spark")))
                break
    return tuple(out)


def source_column(spec: MergeSpec, expr: str) -> str | None:
    """The name of the source column ``expr`` is (``s.col``, as written), or None."""
    m = re.fullmatch(r"`?(\w+)`?\.`?(\w+)`?", expr.strip())
    if m is None or m.group(1).lower() != spec.source_alias.lower():
        return None
    return m.group(2)


# --- key columns -----------------------------------------------------------------------------


def _conjuncts(tree: exp.Expr) -> list[exp.Expr]:
    """``a AND (b AND c)`` -> [a, b, c]."""
    while isinstance(tree, exp.Paren):
        tree = tree.this
    if isinstance(tree, exp.And):
        return [c for part in (tree.left, tree.right) for c in _conjuncts(part)]
    return [tree]


def _inserted_keys_matched(spec, scope, tcols, lower_t, target_schema, keys, found) -> None:
    """Each INSERT of a keyed table inserts, as each key column, the source expression ON
    equates it with (or NULL, which repeats no key): only then is a row that could repeat a key
    of the table MATCHED instead. A key computed in the INSERT (``VALUES (s.k - 10, ...)``) could
    repeat one unseen, so it is refused."""
    types = dict(target_schema)
    for i, clause in enumerate(spec.clauses):
        if clause.action is not ActionKind.INSERT:
            continue
        part = f"clause #{i + 1} ({clause.describe()})"
        image, _ = _insert_image(spec, scope, clause, tcols, lower_t, types, part)
        for col, value in image:
            if col not in keys or _same_sql(value, _cast("NULL", types[col])):
                continue
            matched = found.get(col.lower(), "")
            if _same_sql(value, _cast(matched, types[col])) or _same_sql(value, matched):
                continue
            raise _err(
                spec, part,
                f"the INSERT computes key column {col!r} (the table's key is ({', '.join(keys)})) instead of "
                f"inserting {matched}, the source value ON matches it with: a computed key could repeat one of the table's",
                help=f"Compute the key in the source query (USING (SELECT ..., <expression> AS {col} ...)) and insert {matched}.",
            )


def _same_sql(a: str, b: str) -> bool:
    return a.replace("`", "").lower() == b.replace("`", "").lower()


def _key_matches(spec: MergeSpec, on: exp.Expr, lower_t: dict[str, str], keys: Sequence[str]) -> tuple[dict[str, str], list[exp.Expr]]:
    """The ON condition's ``target.key = <source expression>`` conjuncts, by key column, and
    the other conjuncts."""
    t = spec.target_alias.lower()
    wanted = {k.lower() for k in keys}
    found: dict[str, str] = {}
    rest: list[exp.Expr] = []
    for c in _conjuncts(on):
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
                    hit = (lower_t[a.name.lower()], b.sql(dialect="spark"))
                    break
        if hit is None:
            rest.append(c)
        else:
            found[hit[0].lower()] = hit[1]
    return found, rest


def _check_conflict_target(spec: MergeSpec, keys: Sequence[str]) -> None:
    """ON CONFLICT (cols) must name the table's key, as PostgreSQL wants a unique index on them."""
    given = {c.lower() for c in spec.conflict_keys}
    if keys and given == {k.lower() for k in keys}:
        return
    target = ", ".join(spec.conflict_keys)
    if not keys:
        raise _err(
            spec, f"ON CONFLICT ({target})",
            f"the table has no key columns, so no row can conflict on ({target})",
            help=f"Declare the key when you create the table: TBLPROPERTIES ('key_columns' = '{target}') "
            "(dbt: merge_tablets' unique_key), or use MERGE.",
        )
    raise _err(
        spec, f"ON CONFLICT ({target})",
        f"({target}) is not the table's key ({', '.join(keys)})",
        help=f"Write ON CONFLICT ({', '.join(keys)}), or use MERGE to match on other columns.",
    )


def _keyed(
    spec: MergeSpec, target_schema: Sequence[tuple[str, str]], source_columns: Sequence[str] | None, keys: tuple[str, ...]
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
    scope = _Scope(spec, tcols, source_columns)
    key_list = ", ".join(keys)
    found: dict[str, str] = {}
    rest: list[exp.Expr] = []
    if spec.on is not None:
        found, rest = _key_matches(spec, scope.qualify(spec.on, Category.MATCHED, "ON condition"), lower_t, keys)
    for i, clause in enumerate(spec.clauses):
        if clause.action is not ActionKind.UPDATE:
            continue
        part = f"clause #{i + 1} ({clause.describe()})"
        assigned = [(c.split(".")[-1].strip("`"), v) for c, v in clause.assignments]
        if clause.star and source_columns is not None:
            scols = {c.lower(): c for c in source_columns}
            assigned += [(k, f"{spec.source_alias}.`{scols[k.lower()]}`") for k in keys if k.lower() in scols]
        for col, value in assigned:
            key = lower_t.get(col.lower())
            if key is None or key not in keys:
                continue
            tree = scope.qualify(value, clause.category, part).sql(dialect="spark")
            if _same_sql(tree, f"{spec.target_alias}.{key}") or (
                clause.category is Category.MATCHED and _same_sql(found.get(key.lower(), ""), tree)
            ):
                continue
            raise _err(
                spec, part,
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
        raise _err(
            spec, "ON condition",
            f"the statement inserts rows, but {spec.on!r} does not match on key column(s) {missing} "
            f"(the table's key is ({key_list})): an inserted row could repeat a key the table has",
            help="Match on every key column: ON " + " AND ".join(f"{spec.target_alias}.{k} = {spec.source_alias}.{k}" for k in keys) + ".",
        )
    _inserted_keys_matched(spec, scope, tcols, lower_t, target_schema, keys, found)
    if not rest:
        return spec
    by_source = Category.NOT_MATCHED_BY_SOURCE in spec.categories()
    if by_source and any(c.table.lower() != spec.target_alias.lower() for r in rest for c in r.find_all(exp.Column)):
        raise _err(
            spec, "ON condition",
            f"on a table with a key ({key_list}), a MERGE that inserts and has WHEN NOT MATCHED BY SOURCE "
            f"clauses must match on the key and target columns only, not also on "
            f"{' AND '.join(r.sql(dialect='spark') for r in rest)}",
            help="Move the conditions on source columns into the WHEN clauses' AND conditions.",
        )
    extra = " AND ".join(f"({r.sql(dialect='spark')})" for r in rest)
    on = " AND ".join(f"{spec.target_alias}.`{k}` = {found[k.lower()]}" for k in keys)
    clauses: list[Clause] = []
    for c in spec.clauses:
        if c.category is Category.MATCHED:
            c = replace(c, condition=f"({extra}) AND ({c.condition})" if c.condition else extra)
        clauses.append(c)
    # a pair the original ON leaves unmatched: refused if a NOT MATCHED clause would insert it
    whens = []
    for c in spec.clauses:
        if c.category is not Category.NOT_MATCHED:
            continue
        when = scope.qualify(c.condition, Category.NOT_MATCHED, "NOT MATCHED clause").sql(dialect="spark") if c.condition else "TRUE"
        whens.append(f"WHEN {when} THEN {'TRUE' if c.action is ActionKind.INSERT else 'FALSE'}")
    outside = f"NOT COALESCE({extra}, FALSE)"
    clauses.append(Clause(Category.MATCHED, ActionKind.REFUSE, f"{outside} AND (CASE {' '.join(whens)} ELSE FALSE END)"))
    # a target row whose key matches but whose own columns fail the other conjuncts was NOT
    # MATCHED BY SOURCE: its clauses (target columns only) act on it as a matched pair now
    for c in spec.clauses:
        if c.category is Category.NOT_MATCHED_BY_SOURCE:
            part = "NOT MATCHED BY SOURCE clause"
            by_src = f"{outside} AND ({scope.qualify(c.condition, c.category, part).sql(dialect='spark')})" if c.condition else outside
            sets = tuple((col, scope.qualify(v, c.category, part).sql(dialect="spark")) for col, v in c.assignments)
            clauses.append(replace(c, category=Category.MATCHED, condition=by_src, assignments=sets))
    return replace(spec, on=on, clauses=tuple(clauses))
