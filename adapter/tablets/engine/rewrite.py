"""Compaction on Spark's executors (OPTIMIZE, auto-compaction): the driver picks the tablets and
commits (``storage.TabletTable.compact``); tasks read the picked tablets' live rows and write the
new tablets, so nothing on the driver grows with the rows rewritten.

- A table without ``cluster_by``: the picked tablets are packed into groups of about
  ``target_tablet_rows`` live rows (Delta's OPTIMIZE bins), sent to Spark's tasks as rows of a
  local relation (a task gets only its own groups); each task reads its groups' tablets
  (deletion vectors applied) and writes them as new tablets, with no shuffle.
- A table with ``cluster_by``: Spark's scan reads the rows, ``repartitionByRange`` gives each
  task one range of the clustering columns, and the task writes them sorted: the new tablets
  hold disjoint ranges, which pruning by statistics then skips.

Picked tablets of at most ``spark.tablets.optimize.driverRewriteBytes`` (Parquet bytes; default
``DRIVER_REWRITE_BYTES``; 0: always Spark) are rewritten by the driver alone, which starts no
Spark job (``TabletTable.rewrite_here``)."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence

import pyarrow as pa
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from tablets.engine.errors import job_failed
from tablets.engine.names import K_INSERT, KIND
from tablets.engine.streams import columns_named, map_in_arrow
from tablets.engine.tasks import INSERT_RESULT, insert_task, rewrite_task
from tablets.exceptions import TabletsError
from tablets.spark.frames import local_relation, tablet_scan
from tablets.spark.sizes import conf_bytes
from tablets.storage import Fragment, Snapshot, TabletTable, WriteHandle, fragment_from_json
from tablets.storage.actions import action_to_json
from tablets.storage.table import Rewriter

logger = logging.getLogger("tablets")

REWRITE_CONF = "spark.tablets.optimize.driverRewriteBytes"
DRIVER_REWRITE_BYTES = 64 << 20


def rewriter(spark: SparkSession, table: TabletTable) -> Rewriter:
    """The table's compaction writer for ``spark``: the driver below the size limit, else tasks."""
    limit = driver_rewrite_bytes(spark)

    def rewrite(snap: Snapshot, pick: Sequence[str], handle: WriteHandle) -> list[Fragment]:
        if sum(snap.tablets[t].add.bytes for t in pick) <= limit:
            return table.rewrite_here(snap, pick, handle)
        return rewrite_on_spark(spark, table, snap, pick, handle)

    return rewrite


def driver_rewrite_bytes(spark: SparkSession) -> int:
    size = conf_bytes(spark, REWRITE_CONF)
    return DRIVER_REWRITE_BYTES if size is None else max(size, 0)


def bins(snap: Snapshot, pick: Sequence[str], rows: int) -> list[list[str]]:
    """``pick`` in groups of at most ``rows`` live rows where they fit (a bigger tablet alone),
    fullest first: first-fit decreasing."""
    groups: list[tuple[int, list[str]]] = []
    for tid in sorted(pick, key=lambda t: -snap.tablets[t].live_rows):
        live = snap.tablets[tid].live_rows
        for i, (held, members) in enumerate(groups):
            if held + live <= rows:
                groups[i] = (held + live, [*members, tid])
                break
        else:
            groups.append((live, [tid]))
    return [members for _, members in groups]


def rewrite_on_spark(
    spark: SparkSession, table: TabletTable, snap: Snapshot, pick: Sequence[str], handle: WriteHandle
) -> list[Fragment]:
    """The live rows of ``pick`` written as new tablets of ``handle`` by Spark's tasks."""
    try:
        if handle.sort_by:
            rows = sum(snap.tablets[t].live_rows for t in pick)
            n = max(1, -(-rows // handle.target_tablet_rows))
            scan = tablet_scan(spark, table, snap, tablet_ids=pick, row_ids=False)
            names = list(snap.metadata.column_names)
            frame = scan.live(scan.frame, row_ids=False).repartitionByRange(n, *columns_named(handle.sort_by))
            stream = frame.select(*columns_named(names), F.lit(K_INSERT).alias(KIND))
            out = map_in_arrow(stream, insert_task(handle, names), INSERT_RESULT).collect()
        else:
            groups = bins(snap, pick, handle.target_tablet_rows)
            members = [
                json.dumps(
                    [
                        [action_to_json(st.add), action_to_json(st.dv) if st.dv else None]
                        for st in (snap.tablets[t] for t in g)
                    ]
                )
                for g in groups
            ]
            # the groups as rows of a local relation: each task is sent its own, in slices of
            # Spark's default parallelism, nothing that grows with the whole table
            frame = local_relation(spark, pa.table({"members": pa.array(members, pa.string())}))
            out = frame.mapInArrow(rewrite_task(handle), INSERT_RESULT).collect()
    except PySparkException as e:
        raise job_failed(f"{handle.operation} {table.root}", e) from e
    return [fragment_from_json(r["fragment"]) for r in out if r["fragment"]]


def auto_compact(spark: SparkSession, table: TabletTable, after: str) -> int | None:
    """Run the table's auto-compaction policy after ``after`` committed: the new version or
    None. Never raises: the statement has committed, and a compaction that fails or loses a
    race only leaves the tablets as they are."""
    try:
        version = table.auto_compact(rewriter(spark, table))
    except (TabletsError, OSError) as e:
        logger.warning("tablets: auto-compaction of %s after %s skipped: %s", table.root, after, e)
        return None
    if version is not None:
        logger.info("tablets: auto-compaction of %s after %s committed version %d", table.root, after, version)
    return version
