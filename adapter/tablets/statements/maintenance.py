"""Table maintenance in SQL, with Delta Lake's statements and names (the front door's part;
the log work is ``tablets.storage.maintenance``):

- ``DESCRIBE HISTORY t [LIMIT n]``: the commits, newest first (``version``, ``timestamp``,
  ``operation``, ``operationParameters``, ``operationMetrics``, ``readVersion``);
- ``SELECT ... FROM t VERSION AS OF n`` / ``TIMESTAMP AS OF <expr>`` (also ``FOR VERSION AS OF``):
  the table reference becomes a temporary view of that version;
- ``RESTORE [TABLE] t [TO] VERSION AS OF n`` / ``TIMESTAMP AS OF <expr>``: one new commit whose
  live rows are version n's (the same files: a version whose files VACUUM deleted cannot be);
- ``VACUUM t [RETAIN n HOURS] [DRY RUN]``: the table's retention (property
  ``deleted_file_retention_hours``, default 168, Delta's 7 days) is the default and the minimum,
  unless ``spark.tablets.retentionDurationCheck.enabled`` is ``false`` (Delta's
  ``spark.databricks.delta.retentionDurationCheck.enabled``);
- ``OPTIMIZE t``: compaction (tablets below half of ``target_tablet_rows`` or with over 30% of
  their rows deleted), new tablets sorted by the table's ``cluster_by`` property if it has one;
  the rows are rewritten by Spark's tasks, or by the driver when they are few
  (``tablets.engine.rewrite``);
Each returns a DataFrame, as Delta's do.

    >>> db.sql("DESCRIBE HISTORY t LIMIT 1").collect()[0].operation
    'MERGE'
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from tablets.asof import RETENTION_PROPERTY, resolve_version
from tablets.context import Door
from tablets.engine.file_check import missing_files
from tablets.engine.rewrite import rewriter
from tablets.exceptions import TableNotFound, TabletsError, VacuumRetentionError
from tablets.settings import conf_flag
from tablets.spark import catalog
from tablets.spec import (
    CheckSpec,
    HistorySpec,
    MaintenanceSpec,
    OptimizeSpec,
    RestoreSpec,
    VacuumSpec,
)
from tablets.spec.statement import Statement
from tablets.sql.maintenance import parse_maintenance
from tablets.storage.table import DEFAULT_RETENTION_HOURS, TabletTable
from tablets.storage.transaction import DEFAULT_TARGET_TABLET_ROWS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

RETENTION_CHECK_CONF = "spark.tablets.retentionDurationCheck.enabled"
HISTORY_DDL = (
    "version BIGINT, timestamp TIMESTAMP, operation STRING, operationParameters MAP<STRING, STRING>, "
    "operationMetrics MAP<STRING, STRING>, readVersion BIGINT"
)

logger = logging.getLogger("tablets")


# --- routing ---------------------------------------------------------------------------------


def _tablet_root(spark: SparkSession, kind: str, name: str) -> str | None:
    """The root of the tablet table a maintenance statement names; None for another table
    (Delta's own statements then run in Spark); ``TableNotFound`` when there is none."""
    if not name:
        return None
    root = catalog.lookup(spark, name)
    if root is not None or catalog.path_of(name) is not None:
        return root if root is not None else catalog.require(spark, name)
    try:
        exists = spark.catalog.tableExists(name.replace("`", ""))
    except Exception:  # noqa: BLE001 - a name Spark cannot read: its own error follows
        return None
    if not exists:
        raise TableNotFound(f"{kind} {name}: there is no table named {name}", help="Check the name (SHOW TABLES).")
    what = _plain(spark, name)
    if what is not None:
        raise TabletsError(
            f"{kind} {name}: {name} is {what}, not a tablet table; {kind} runs on tablet tables",
            help=f"Run it on a tablet table (copy {name} into one: CREATE TABLE <new> USING tablets AS SELECT * FROM {name}).",
        )
    return None


def _plain(spark: SparkSession, name: str) -> str | None:
    """What ``name`` is when Spark cannot run a maintenance statement on it either: "a view" or
    "a <provider> table" (a plain file format); None for a table of another format (Delta's
    own OPTIMIZE then runs in Spark)."""
    kind = catalog.kind_of(spark, name)
    if kind == "view":
        return "a view"
    return f"a {kind} table" if kind in catalog.FILE_FORMATS else None


def run(door: Door, stmt: Statement) -> DataFrame | None:
    """The result of a DESCRIBE HISTORY, RESTORE, VACUUM, OPTIMIZE or CHECK TABLE of a tablet
    table; None when it names another kind of table (Spark's then)."""
    kind, name = stmt.form, stmt.target or ""
    if not name:
        parse_maintenance(stmt.text)  # the statement's own parse error
    root = _tablet_root(door.spark, kind, name)
    if root is None:
        return None
    return _run(door.spark, parse_maintenance(stmt.text), catalog.storage(door.spark).table(root))


def _run(spark: SparkSession, spec: MaintenanceSpec, table: TabletTable) -> DataFrame:
    if isinstance(spec, HistorySpec):
        return history_frame(spark, table, spec.limit)
    if isinstance(spec, RestoreSpec):
        return restore(spark, spec, table)
    if isinstance(spec, VacuumSpec):
        return vacuum(spark, spec, table)
    if isinstance(spec, CheckSpec):
        return check(spark, spec, table)
    return optimize(spark, spec, table)


CHECK_DDL = "path STRING, problem STRING, fix STRING, repaired BOOLEAN"


def check(spark: SparkSession, spec: CheckSpec, table: TabletTable) -> DataFrame:
    """One row per problem found (none: a healthy table)."""
    rows = [(p.path, p.problem, p.fix, p.repaired) for p in table.check(repair=spec.repair)]
    return spark.createDataFrame(rows, CHECK_DDL)


# --- DESCRIBE HISTORY --------------------------------------------------------------------------


def _number(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(v)


def history_frame(spark: SparkSession, table: TabletTable, limit: int | None = None) -> DataFrame:
    rows: list[tuple[object, ...]] = []
    for h in reversed(table.history()):
        c = h.commit
        if c is None:
            rows.append((h.version, None, None, {}, {}, None))
            continue
        rows.append(
            (
                h.version,
                datetime.fromtimestamp(c.timestamp_ms / 1000, tz=UTC),
                c.operation,
                dict(c.parameters),
                {k: _number(v) for k, v in c.metrics},
                c.read_version if c.read_version >= 0 else None,
            )
        )
    if limit is not None:
        rows = rows[:limit]
    return spark.createDataFrame(rows, HISTORY_DDL)


# --- RESTORE, VACUUM, OPTIMIZE ---------------------------------------------------------------------


def restore(spark: SparkSession, spec: RestoreSpec, table: TabletTable) -> DataFrame:
    where = f"RESTORE {spec.target}"
    version = resolve_version(spark, table, spec.as_of, where)
    before = table.snapshot().metadata.schema
    committed = table.restore(version, statement=f"{where} TO {spec.as_of.sql()}", missing=missing_files(spark, table))
    if committed is not None and table.snapshot(committed).metadata.schema != before:
        catalog.sync_schema(spark, spec.target)
    metrics = {}
    if committed is not None:
        info = next(h.commit for h in reversed(table.history()) if h.version == committed)
        metrics = info.metrics_dict() if info else {}
    cols = [
        "table_size_after_restore",
        "num_of_files_after_restore",
        "num_removed_files",
        "num_restored_files",
        "removed_files_size",
        "restored_files_size",
    ]
    snap = table.snapshot()
    metrics.setdefault("table_size_after_restore", float(sum(st.add.bytes for st in snap.tablets.values())))
    metrics.setdefault("num_of_files_after_restore", float(len(snap.tablets)))
    row = tuple(int(metrics.get(c, 0)) for c in cols)
    return spark.createDataFrame([row], ", ".join(f"{c} BIGINT" for c in cols))


def retention_hours(spark: SparkSession, spec: VacuumSpec, table: TabletTable) -> float:
    """RETAIN's hours, checked against the table's retention (the default when not given)."""
    raw = table.snapshot().metadata.property(RETENTION_PROPERTY)
    try:
        minimum = float(raw) if raw else DEFAULT_RETENTION_HOURS
    except ValueError:
        raise TabletsError(
            f"VACUUM {spec.target}: table property {RETENTION_PROPERTY}={raw!r} is not a number of hours",
            help=f"ALTER the table's {RETENTION_PROPERTY} to a number.",
        ) from None
    hours = minimum if spec.retain_hours is None else spec.retain_hours
    check = conf_flag(spark, RETENTION_CHECK_CONF)
    if check and hours < minimum:
        raise VacuumRetentionError(
            f"VACUUM {spec.target} RETAIN {_number(hours)} HOURS: below the table's retention of {_number(minimum)} hours "
            f"({RETENTION_PROPERTY}): a running statement or a reader of an old version could lose its files",
            help=f"Retain at least {_number(minimum)} hours; if nothing can still read older versions, set "
            f"{RETENTION_CHECK_CONF}=false for this session (as Delta's retentionDurationCheck).",
        )
    return hours


def vacuum(spark: SparkSession, spec: VacuumSpec, table: TabletTable) -> DataFrame:
    hours = retention_hours(spark, spec, table)
    removed = table.vacuum(hours, dry_run=spec.dry_run, enforce_retention=False)
    if spec.dry_run:  # Delta: the files that would be deleted
        return spark.createDataFrame([(f"{table.root}/{p}",) for p in removed], "path STRING")
    logger.info("tablets: VACUUM %s deleted %d file(s)", spec.target, len(removed))
    return spark.createDataFrame([(table.root, len(removed))], "path STRING, numDeletedFiles BIGINT")


def optimize(spark: SparkSession, spec: OptimizeSpec, table: TabletTable) -> DataFrame:
    meta = table.snapshot().metadata
    rows = int(meta.property("target_tablet_rows") or 0) or None

    target = rows or DEFAULT_TARGET_TABLET_ROWS
    sort_by = [c.strip() for c in (meta.property("cluster_by") or "").split(",") if c.strip()]
    version = table.compact(
        min_tablet_rows=max(1, target // 2),
        target_tablet_rows=target,
        operation="OPTIMIZE",
        sort_by=sort_by,
        rewrite=rewriter(spark, table),
    )
    added = removed = 0
    if version is not None:
        info = next(h.commit for h in reversed(table.history()) if h.version == version)
        removed = int(info.metrics_dict().get("tablets_removed", 0)) if info else 0
        before, after = table.snapshot(version - 1), table.snapshot(version)
        added = len(set(after.tablets) - set(before.tablets))
    return spark.createDataFrame(
        [(table.root, version, added, removed)],
        "path STRING, version BIGINT, numFilesAdded BIGINT, numFilesRemoved BIGINT",
    )
