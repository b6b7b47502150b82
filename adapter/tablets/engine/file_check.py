"""RESTORE's check that every file it references again still exists, in Spark's tasks: on an
object store each check is a request, so a restore of many tablets asks them in parallel (as
Delta's RESTORE does) instead of one by one on the driver.

Up to ``spark.tablets.restore.driverCheckFiles`` files (default ``DRIVER_CHECK_FILES``; 0: always
Spark) the driver checks them itself, which starts no Spark job."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

import pyarrow as pa
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from tablets.engine.errors import job_failed
from tablets.engine.streams import shuffle_partitions
from tablets.engine.tasks import MISSING_RESULT, missing_files_task
from tablets.settings import conf_count
from tablets.spark.frames import local_relation
from tablets.storage import TabletTable
from tablets.storage.table import MissingFiles

CHECK_CONF = "spark.tablets.restore.driverCheckFiles"
DRIVER_CHECK_FILES = 100
FILES_PER_TASK = 1000


def missing_files(spark: SparkSession, table: TabletTable) -> MissingFiles:
    """The table's RESTORE check for ``spark``: the driver up to the setting's count of files,
    else Spark's tasks."""
    limit = conf_count(spark, CHECK_CONF, DRIVER_CHECK_FILES)

    def check(paths: Sequence[str]) -> list[str]:
        return table.missing_here(paths) if len(paths) <= limit else missing_on_spark(spark, table, paths)

    return check


def missing_on_spark(spark: SparkSession, table: TabletTable, paths: Sequence[str]) -> list[str]:
    """The paths among ``paths`` that do not exist, asked by Spark's tasks: chunks of at most
    ``FILES_PER_TASK`` (at least as many as shuffle partitions), rows of a local relation, so each
    task is sent only its own."""
    n = min(len(paths), max(shuffle_partitions(spark), math.ceil(len(paths) / FILES_PER_TASK)))
    chunks = [json.dumps(list(paths[i::n])) for i in range(n)]
    try:
        frame = local_relation(spark, pa.table({"paths": pa.array(chunks, pa.string())}))
        rows = frame.mapInArrow(missing_files_task(table.io), MISSING_RESULT).collect()
    except PySparkException as e:
        raise job_failed(f"RESTORE {table.root}", e) from e
    return sorted(r["path"] for r in rows)
