"""A clause's new row: its assignments as one value per target column (``update_image``,
``insert_image``), and which values are plain copies of a column (the driver copies those in
Arrow, from the trees kept beside them)."""

from __future__ import annotations

from sqlglot import exp

from tablets.engine.scope import Scope, plan_error, sql_cast
from tablets.spec.expr import Expr
from tablets.sqltext import quote_ident

# (target column, Spark SQL) of every column, its copies, and the trees of its ("expr", ...) copies
_Image = tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...], tuple[Expr | None, ...]]


def _copy(scope: Scope, tree: exp.Expr) -> tuple[str, str]:
    """A value that is a plain column of the target or the source, or NULL, as a copy; else
    the expression (qualified)."""
    if isinstance(tree, exp.Null):
        return ("null", "")
    side = scope._side(tree.table) if isinstance(tree, exp.Column) and tree.table and not tree.args.get("db") else None  # noqa: SLF001
    if side is None or tree.name.lower() not in side[1]:
        return ("expr", "")
    return ("t" if side[0] == "target" else "s", side[1][tree.name.lower()])


def _value(scope: Scope, tree: exp.Expr, assigned: dict[str, str], copies: dict, trees: dict, name: str) -> None:
    """The qualified ``tree`` as column ``name``'s value: its text, its copy, its tree."""
    value = Expr.of(tree)
    assigned[name] = value.text
    copy = _copy(scope, tree)
    copies[name] = ("expr", value.text) if copy[0] == "expr" else copy
    if copy[0] == "expr":
        trees[name] = value


def update_image(spec, scope, clause, tcols, lower_t, types, part, needed) -> _Image:
    t = spec.target_alias
    assigned: dict[str, str] = {}
    copies: dict[str, tuple[str, str]] = {}
    trees: dict[str, Expr] = {}
    if clause.star:
        for c in tcols:
            if c.lower() in scope.scols:
                assigned[c] = f"{spec.source_alias}.{quote_ident(scope.scols[c.lower()])}"
                copies[c] = ("s", scope.scols[c.lower()])
    for col, value in clause.assignments:
        name = lower_t.get(col.lower())  # (a column's own name: it may hold a dot)
        if name is None:
            raise plan_error(
                spec,
                part,
                f"SET assigns {col!r}, which is not a column of the target ({', '.join(tcols)})",
                help="Assign only target columns.",
            )
        tree = scope.qualify(value, clause.category, part)
        needed |= scope.target_refs(tree)
        _value(scope, tree, assigned, copies, trees, name)
    image = tuple((c, sql_cast(assigned.get(c, f"{t}.{quote_ident(c)}"), types[c])) for c in tcols)
    return image, tuple(copies.get(c, ("t", c)) for c in tcols), tuple(trees.get(c) for c in tcols)


def insert_image(spec, scope, clause, tcols, lower_t, types, part) -> _Image:
    values: dict[str, str] = {}
    copies: dict[str, tuple[str, str]] = {}
    trees: dict[str, Expr] = {}
    if clause.star:
        for c in tcols:
            if c.lower() in scope.scols:
                values[c] = f"{spec.source_alias}.{quote_ident(scope.scols[c.lower()])}"
                copies[c] = ("s", scope.scols[c.lower()])
    else:
        cols = list(clause.insert_columns) or tcols[: len(clause.insert_values)]
        if len(clause.insert_values) > len(tcols):
            raise plan_error(
                spec,
                part,
                f"INSERT has {len(clause.insert_values)} values but the target has {len(tcols)} columns",
                help="Give one value per target column.",
            )
        if len(cols) != len(clause.insert_values):
            raise plan_error(
                spec,
                part,
                f"INSERT names {len(cols)} columns but gives {len(clause.insert_values)} values",
                help="Give one value per named column.",
            )
        for col, value in zip(cols, clause.insert_values, strict=True):
            name = lower_t.get(col.lower())
            if name is None:
                raise plan_error(
                    spec,
                    part,
                    f"INSERT names {col!r}, which is not a column of the target ({', '.join(tcols)})",
                    help="Insert only target columns.",
                )
            if name in values:
                raise plan_error(spec, part, f"INSERT names column {col!r} twice", help="Name each column once.")
            _value(scope, scope.qualify(value, clause.category, part), values, copies, trees, name)
    image = tuple((c, sql_cast(values.get(c, "NULL"), types[c])) for c in tcols)
    return image, tuple(copies.get(c, ("null", "")) for c in tcols), tuple(trees.get(c) for c in tcols)
