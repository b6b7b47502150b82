"""MERGE, UPDATE, DELETE, INSERT ... ON CONFLICT and TRUNCATE TABLE of a tablet table: the spec
run by the engine in one commit (or none), run again against the new version when it lost a
commit race to a conflicting statement.

``TRUNCATE TABLE t`` is ``DELETE FROM t``: one commit, the history kept (as Delta truncates;
Spark refuses it on the table's data source, naming an internal provider)."""

from __future__ import annotations

import logging
import random
import time

from pyspark.sql import DataFrame

from tablets import rows
from tablets.context import Door, StatementResult, tablet_root
from tablets.engine.executor import SKIP_NOOP_CONF, execute
from tablets.engine.metrics import MergeMetrics
from tablets.engine.plan import noop_reason
from tablets.engine.rewrite import auto_compact
from tablets.exceptions import CardinalityViolation, CommitConflict, KeyViolation, StatementParseError
from tablets.settings import conf_flag
from tablets.spark import catalog
from tablets.spec import MergeSpec
from tablets.spec.statement import Statement
from tablets.sql import parse_statement

logger = logging.getLogger("tablets")


def run(door: Door, stmt: Statement) -> StatementResult | None:
    """The statement's result; None when its table is not a tablet table (Spark's then)."""
    if stmt.form == "TRUNCATE":
        return _truncate(door, stmt)
    if tablet_root(door.spark, stmt) is None:
        return None
    spec = parse_statement(stmt.text, tree=stmt.tree)
    assert isinstance(spec, MergeSpec)
    return run_spec(door, spec)


def _truncate(door: Door, stmt: Statement) -> StatementResult | None:
    name = stmt.target or ""
    if catalog.lookup(door.spark, name) is None:
        return None
    table_sql, partition = stmt.parts
    if partition:
        raise StatementParseError(
            f"TRUNCATE TABLE {name} {partition}: tablet tables are not partitioned",
            help=f"DELETE FROM {table_sql} WHERE <condition> deletes the rows a condition selects.",
        )
    spec = parse_statement(f"DELETE FROM {table_sql}")
    assert isinstance(spec, MergeSpec)
    return run_spec(door, spec)


def run_spec(door: Door, spec: MergeSpec, source: DataFrame | None = None) -> StatementResult:
    """Run a MERGE/UPDATE/DELETE/INSERT ON CONFLICT spec: one commit (or none)."""
    spark, opts = door.spark, door.options
    table = catalog.storage(spark).table(catalog.require(spark, spec.target))
    if noop_reason(spec) is not None and conf_flag(spark, SKIP_NOOP_CONF):  # degenerate: no scan, no job
        return StatementResult(spec.operation, spec.target, MergeMetrics(operation=spec.operation, noop=True))
    start, waited, attempt = time.perf_counter(), 0.0, 0
    while True:
        # the snapshot before the source is planned: a source that reads the target then reads
        # this version or a newer one, whose commits the conflict check sees
        snapshot = table.snapshot()
        frame = source if source is not None else rows.source_frame(spark, spec, table)
        try:
            metrics = execute(spark, table, spec, frame, opts, snapshot=snapshot)
        except KeyViolation as e:
            if not spec.conflict_keys:
                raise
            # ON CONFLICT DO UPDATE with a new key given twice: PostgreSQL's cardinality error
            raise CardinalityViolation(
                f"{e.detail} (ON CONFLICT DO UPDATE: the inserted rows give a key more than once)",
                help="Insert each key once (deduplicate the rows), or use DO NOTHING to keep the first.",
            ) from None
        except CommitConflict as e:
            attempt += 1
            if attempt > door.retries:
                raise
            delay = random.uniform(0, min(door.retry_max_backoff, door.retry_backoff * 2 ** (attempt - 1)))
            logger.info(
                "tablets: %s INTO %s lost a commit race (%s: %s); retry %d of %d in %.2f s",
                spec.operation,
                spec.target,
                type(e).__name__,
                e.detail,
                attempt,
                door.retries,
                delay,
            )
            time.sleep(delay)
            waited += delay
            continue
        metrics = metrics.with_timings(total=round((time.perf_counter() - start) * 1000, 1))
        if attempt:
            metrics = metrics.with_timings(retry_wait=round(waited * 1000, 1))
        if metrics.version is not None:
            if spec.schema_evolution and table.snapshot().metadata.schema != snapshot.metadata.schema:
                catalog.sync_schema(spark, spec.target)  # the catalog entry shows the new columns
            auto_compact(spark, table, spec.operation)
        return StatementResult(spec.operation, spec.target, metrics)
