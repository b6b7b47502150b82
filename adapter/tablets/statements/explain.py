"""``EXPLAIN <statement>`` of a MERGE, UPDATE, DELETE or INSERT ... ON CONFLICT of a tablet table:
the plan its run would take (``tablets.engine.explain``), planned as its run plans it (the
table's key, the columns schema evolution adds, the route). Another EXPLAIN is Spark's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tablets import rows
from tablets.context import Door, tablet_root
from tablets.engine import route
from tablets.engine.evolution import planned
from tablets.engine.executor import source_fields
from tablets.engine.explain import explain
from tablets.engine.plan import noop_reason
from tablets.spark import catalog
from tablets.spec import MergeSpec
from tablets.spec.statement import Kind, Statement
from tablets.sql import parse_statement

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

_WRITES = (Kind.MERGE, Kind.INSERT, Kind.CREATE, Kind.DROP, Kind.ALTER)


def run(door: Door, stmt: Statement) -> str | None:
    """The plan text; None when the explained statement writes no tablet table (Spark's)."""
    inner = stmt.inner
    if inner is None or inner.kind not in _WRITES or inner.form in ("TRUNCATE", "REPLACE", "LIKE"):
        return None
    if tablet_root(door.spark, inner) is None:
        return None
    spec = parse_statement(inner.text, tree=inner.tree)
    if not isinstance(spec, MergeSpec):
        return f"{type(spec).__name__}: {spec}"
    return plan_text(door, spec)


def plan_text(door: Door, spec: MergeSpec, source: DataFrame | None = None) -> str:
    """The plan ``spec`` would take, of ``source`` (else the statement's own)."""
    opts = door.options
    table = catalog.storage(door.spark).table(catalog.require(door.spark, spec.target))
    snap = table.snapshot()
    frame = source
    if frame is None and noop_reason(spec) is None:
        frame = rows.source_frame(door.spark, spec, table)
    plan, _ = planned(spec, snap.metadata, source_fields(frame), skip_unchanged=opts.skip_unchanged)
    size = sum(st.add.bytes for st in snap.tablets.values())
    return explain(plan, skip_unchanged=opts.skip_unchanged, route=route.describe(door.spark, plan, size, frame))
