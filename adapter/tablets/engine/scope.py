"""Column visibility while planning: which alias an unqualified name of an ON condition, a clause
condition or an assignment may mean (``Scope``), and the planner's errors, naming the statement
and its part (``plan_error``)."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

import sqlglot
from sqlglot import exp

from tablets.exceptions import MergeSpecError
from tablets.spec import Category, MergeSpec
from tablets.spec.expr import Expr

# Spark functions written without parentheses, which sqlglot reads as column names
_NILADIC = {"user", "current_database", "current_schema", "current_catalog", "current_timezone", "default"}


def plan_error(spec: MergeSpec, part: str, message: str, help: str | None = None) -> MergeSpecError:
    return MergeSpecError(f"{spec.head}: {part}: {message}", help)


class Scope:
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
        return plan_error(self.spec, part, what, help=f"{hint}Columns: {', '.join(candidates) or '(none)'}.")

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
            raise plan_error(
                self.spec,
                part,
                f"{col.sql(dialect='spark')} refers to {alias!r}, which is not a table of this statement",
                help=f"Qualify columns with {' or '.join(aliases)}.",
            )
        what, cols = side
        if name.lower() not in cols:
            raise self._unknown(
                part,
                f"{col.sql(dialect='spark')}: the {what} ({alias}) has no column {name!r}",
                list(cols.values()),
                name,
            )

    def qualify(self, expr: Expr, category: Category | None, part: str) -> exp.Expr:
        """A copy of ``expr``'s tree, its unqualified columns qualified with the alias they mean."""
        try:
            tree = expr.tree
        except sqlglot.errors.ParseError as e:  # a builder's string
            raise plan_error(self.spec, part, f"cannot parse expression {expr.text!r} ({e})") from e
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
                        part,
                        f"column {col.name!r} is not a column of the {sides}",
                        list(self.tcols.values()) + [c for c in self.scols.values() if c.lower() not in self.tcols],
                        col.name,
                    )
                continue
            if category is Category.NOT_MATCHED:
                in_t = False  # no target row exists
            elif category is Category.NOT_MATCHED_BY_SOURCE:
                in_s = False  # no source row exists
            if in_t and in_s:
                raise plan_error(
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
        sides: dict[Category | None, tuple[str, str]] = {
            Category.NOT_MATCHED: (self.t, "target"),
            Category.NOT_MATCHED_BY_SOURCE: (self.s, "source"),
        }
        banned = sides.get(category)
        if banned is None:
            return
        for col in tree.find_all(exp.Column):
            if col.find_ancestor(exp.Select) is not None:
                continue  # a subquery's own columns (UPDATE t SET v = (SELECT max(v) FROM s))
            if col.table.lower() == banned[0].lower():
                raise plan_error(
                    self.spec,
                    part,
                    f"refers to {col.sql(dialect='spark')}, but a WHEN {category.value} row has no {banned[1]} row",  # type: ignore[union-attr]
                    help=f"Use only {'source' if banned[1] == 'target' else 'target'} columns in this clause.",
                )

    def target_refs(self, tree: exp.Expr) -> set[str]:
        out = set()
        for col in tree.find_all(exp.Column):
            if col.table.lower() == self.t.lower() and col.name.lower() in self.tcols:
                out.add(self.tcols[col.name.lower()])
        return out


def sql_cast(expr: str, type_name: str) -> str:
    return f"CAST({expr} AS {type_name})"


def conjuncts(tree: exp.Expr) -> list[exp.Expr]:
    """``a AND (b AND c)`` -> [a, b, c]."""
    while isinstance(tree, exp.Paren):
        tree = tree.this
    if isinstance(tree, exp.And):
        return [c for part in (tree.left, tree.right) for c in conjuncts(part)]
    return [tree]
