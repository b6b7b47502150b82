"""``INSERT INTO t [(cols) | BY NAME] <query>`` and ``INSERT OVERWRITE`` of a tablet table: a
blind append (or a replacement of every row) in one commit, by the engine's ``append``."""

from __future__ import annotations

from tablets import rows
from tablets.context import Door, StatementResult, tablet_root
from tablets.engine.append import append
from tablets.engine.rewrite import auto_compact
from tablets.spark import catalog
from tablets.spec import AppendSpec
from tablets.spec.statement import Statement
from tablets.sql import parse_statement


def run(door: Door, stmt: Statement) -> StatementResult | None:
    """The statement's result; None when its table is not a tablet table (Spark's then)."""
    if tablet_root(door.spark, stmt) is None:
        return None
    spec = parse_statement(stmt.text, tree=stmt.tree)
    assert isinstance(spec, AppendSpec)
    spark = door.spark
    verb = "INSERT OVERWRITE" if spec.overwrite else "INSERT INTO"
    frame = rows.query_frame(spark, spec.query, f"{verb} {spec.target}", spec.columns)
    op = "INSERT OVERWRITE" if spec.overwrite else "INSERT"
    table = catalog.storage(spark).table(catalog.require(spark, spec.target))
    metrics = append(
        spark,
        table,
        frame,
        door.options,
        operation=op,
        overwrite=spec.overwrite,
        by_name=bool(spec.columns) or spec.by_name,
        name=spec.target,
    )
    if metrics.version is not None:
        auto_compact(spark, table, op)
    return StatementResult(op, spec.target, metrics)
