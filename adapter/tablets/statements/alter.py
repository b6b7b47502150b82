"""``ALTER TABLE t ADD COLUMNS``, ``RENAME COLUMN``, ``DROP COLUMN(S)``, ``ADD / DROP CONSTRAINT``
and ``ALTER COLUMN ... SET / DROP NOT NULL`` of a tablet table: one metadata commit of its log
(no tablet rewritten; a constraint's rows checked first, ``tablets.constraints``), then the
catalog entry's columns follow. The message names the version committed, or says that there
was nothing to change."""

from __future__ import annotations

from tablets import constraints
from tablets.context import Door, StatementResult, done, tablet_root
from tablets.spark import catalog
from tablets.spec import AddColumnsSpec, AlterColumnsSpec, ConstraintSpec, RenameColumnSpec
from tablets.spec.statement import Statement
from tablets.sql import parse_statement


def run(door: Door, stmt: Statement) -> StatementResult | None:
    """The statement's result; None when its table is not a tablet table (Spark's then)."""
    root = tablet_root(door.spark, stmt)
    if root is None:
        return None
    spec = parse_statement(stmt.text, tree=stmt.tree)
    assert isinstance(spec, AlterColumnsSpec)
    table = catalog.storage(door.spark).table(root)
    if isinstance(spec, AddColumnsSpec):
        version = table.add_columns(spec.columns, spec.comments)
    elif isinstance(spec, ConstraintSpec):
        version = constraints.alter(door.spark, spec, table)
    elif isinstance(spec, RenameColumnSpec):
        where = f"ALTER TABLE {spec.target} RENAME COLUMN {spec.column} TO {spec.new_name}"
        version = table.rename_column(spec.column, spec.new_name, where=where)
    else:
        where = f"ALTER TABLE {spec.target} DROP COLUMNS ({', '.join(spec.columns)})"
        version = table.drop_columns(spec.columns, if_exists=spec.if_exists, where=where)
    catalog.sync_schema(door.spark, spec.target)
    return done(
        "ALTER TABLE", spec.target, f"committed version {version}" if version is not None else "nothing to change"
    )
