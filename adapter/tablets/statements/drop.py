"""``DROP TABLE [IF EXISTS] t`` of a tablet table: its catalog entry, data and registry file."""

from __future__ import annotations

from tablets.context import Door, StatementResult, done, tablet_root
from tablets.spark import catalog
from tablets.spec import DropSpec
from tablets.spec.statement import Statement
from tablets.sql import parse_statement


def run(door: Door, stmt: Statement) -> StatementResult | None:
    """The statement's result; None when its table is not a tablet table (Spark's then)."""
    if tablet_root(door.spark, stmt) is None:
        return None
    spec = parse_statement(stmt.text, tree=stmt.tree)
    assert isinstance(spec, DropSpec)
    return done("DROP TABLE", spec.target, catalog.drop_table(door.spark, spec.target, if_exists=spec.if_exists))
