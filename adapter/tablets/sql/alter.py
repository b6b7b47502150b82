"""``ALTER TABLE`` statements about a tablet table's columns -> specs (sqlglot's tree):

- ``ADD COLUMN[S] (c type, ...)``: new columns (older tablets read them as NULL);
- ``RENAME COLUMN a TO b``;
- ``DROP COLUMN [IF EXISTS] c`` and ``DROP COLUMNS [IF EXISTS] (c, d)``.

Each is one metadata-only commit (``tablets.storage.columns``: the tablets keep columns under
their physical names, so nothing is rewritten). Other ALTER TABLE forms are refused with a
message; properties and comments are ``tablets.sql.metadata``'s.
"""

from __future__ import annotations

from sqlglot import exp

from tablets.exceptions import StatementParseError
from tablets.spec import AddColumnsSpec, AlterColumnsSpec, ConstraintSpec, DropColumnsSpec, RenameColumnSpec
from tablets.sql.create import check_of, refuse_repeated, stored_column_type
from tablets.sql.syntax import table_name, to_sql

FORMS = (
    "ADD COLUMNS (c type, ...), RENAME COLUMN a TO b, DROP COLUMN c or DROP COLUMNS (c, d), "
    "ADD CONSTRAINT name CHECK (expr), DROP CONSTRAINT [IF EXISTS] name, ALTER COLUMN c SET/DROP NOT NULL"
)


def alter_columns(tree: exp.Alter) -> AlterColumnsSpec:
    target = table_name(tree.this)
    where = f"ALTER TABLE {target}"
    actions = list(tree.args.get("actions") or ())
    if len(actions) == 1 and isinstance(actions[0], exp.RenameColumn):
        rename = actions[0]
        return RenameColumnSpec(target, _column(rename.this, where), _column(rename.args.get("to"), where))
    if (
        len(actions) == 1
        and isinstance(actions[0], exp.Drop)
        and str(actions[0].args.get("kind", "")).upper().startswith("COLUMN")
    ):
        drop = actions[0]
        names = []
        for item in drop.args.get("tables") or ():
            names += [_column(c, where) for c in (item.expressions if isinstance(item, exp.Schema) else [item])]
        return DropColumnsSpec(target, tuple(names), if_exists=bool(drop.args.get("exists")))
    constraint = _constraint(target, actions, where)
    if constraint is not None:
        return constraint
    columns, comments = [], []
    for action in actions:
        defs = action.expressions if isinstance(action, exp.Schema) else [action]
        for d in defs:
            if not isinstance(d, exp.ColumnDef):
                raise StatementParseError(
                    f"{where}: {to_sql(action)!r} is not supported on tablet tables (one of: {FORMS})",
                    help="Rebuild the table (dbt --full-refresh) for other schema changes.",
                )
            if d.args.get("position") is not None:  # FIRST / AFTER c: was taken, and the column put last
                raise StatementParseError(
                    f"{where}: {to_sql(d)!r}: tablet tables add a column after the others",
                    help="Drop FIRST / AFTER; select the columns in the order you want them.",
                )
            columns.append((d.name, stored_column_type(d, where).lower()))
            comments += [
                (d.name, k.args["kind"].this.name)
                for k in d.args.get("constraints") or ()
                if isinstance(k.args.get("kind"), exp.CommentColumnConstraint)
            ]
    refuse_repeated([c for c, _ in columns], where)  # (both were added, and the catalog refused them after)
    return AddColumnsSpec(target, tuple(columns), tuple(comments))


def _column(node: exp.Expr | None, where: str) -> str:
    """A top-level column's name (a struct's field, ``s.x``, is refused)."""
    if isinstance(node, exp.Column) and not node.table:
        return node.name
    if isinstance(node, exp.Identifier):
        return node.name
    raise StatementParseError(
        f"{where}: {to_sql(node)!r} is not a column of the table (fields of struct columns cannot be renamed or dropped)",
        help="Name a top-level column.",
    )


def _constraint(target: str, actions: list, where: str) -> ConstraintSpec | None:
    """Delta's constraint forms (one action each), or None for another statement."""
    if len(actions) != 1:
        return None
    action = actions[0]
    if isinstance(action, exp.AddConstraint):
        if len(action.expressions) != 1:
            raise StatementParseError(f"{where}: add one constraint per statement", help="Split the statement.")
        return ConstraintSpec(target, add_check=check_of(action.expressions[0], where))
    if isinstance(action, exp.Drop) and str(action.args.get("kind", "")).upper() == "CONSTRAINT":
        names = [t.name for t in action.args.get("tables") or ()]
        if len(names) != 1:
            raise StatementParseError(f"{where}: drop one constraint per statement", help="Split the statement.")
        return ConstraintSpec(target, drop=names[0], if_exists=bool(action.args.get("exists")))
    if isinstance(action, exp.AlterColumn) and action.args.get("allow_null") is not None:
        if any(action.args.get(k) for k in ("dtype", "default", "comment", "using", "visible")):
            return None
        return ConstraintSpec(target, not_null=(_column(action.this, where), not action.args["allow_null"]))
    return None
