"""Which plan a statement takes: the sizes and settings that decide between the driver plan (the
statement merged in Arrow on the driver, for a collected source and a target small enough to
read there) and Spark's plan, one switch per shortcut, and the line EXPLAIN prints about it.

The limits below were chosen by measurement (docs/SCALE.md, bench/RESULTS.md); the figures live
there, not here.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from tablets.engine.plan import Plan, source_column
from tablets.settings import conf_count, conf_flag, conf_value
from tablets.spark.backend import backend
from tablets.spark.session import EXCLUDED_RULES_CONF, LOCAL_RELATION_RULE
from tablets.spark.sizes import broadcast_threshold, conf_bytes, size_bytes
from tablets.spec import Category

# the insert path writes a stream Spark estimates below this as one tablet (one task)
SMALL_BYTES = 64 << 20
# a source Spark estimates below this is collected and becomes a local relation: not up to the
# broadcast threshold where Spark's ConvertToLocalRelation rule runs, which evaluates
# projections over a local relation row by row on the driver while optimizing
LOCAL_SOURCE_BYTES = 256 << 10
# ... up to this in sessions that exclude that rule (tablets' own: tablets.spark.session); a
# bigger local relation costs more driver time to plan and ship than the cached path's jobs
LOCAL_SOURCE_BYTES_NO_RULE = 1 << 20
# ... and up to this where the driver may merge the statement alone (no local relation is built)
DRIVER_MERGE_SOURCE_BYTES = 16 << 20
# ... and up to this for a delete by the source's key set (``engine.key_delete``): the keys
# collected here and shipped to every task
KEY_SET_BYTES = 128 << 20
# the target scan filters by the source's key range where it may skip this share of a tablet
RANGE_FILTER_SHARE = 0.1
# the driver reads the target when its tablets (after pruning) take at most this many bytes
# (DRIVER_SCAN_CONF; 0: never): on a cluster or over Spark Connect ...
DRIVER_SCAN_BYTES = 64 << 20
# ... and in local mode, where the executors are threads of the driver's machine: its Arrow
# reads use the same cores with no task to schedule (a row group at a time per thread)
DRIVER_SCAN_BYTES_LOCAL = 1 << 30
# ... and when it selects at most this many rows (or 4 per source row): else Spark scans
DRIVER_SCAN_ROWS = 100_000
# ... and at most this many rows without a pair that BY SOURCE clauses act on (a row id each)
DRIVER_BY_SOURCE_ROWS = 2_000_000

# One switch per shortcut (README, "Shortcuts and their switches"): each turned off runs the
# statement the long way, which gives the same rows (tests/spark/test_differential_generated.py).
# "0": the driver never reads the target (nor merges): Spark's plan
DRIVER_SCAN_CONF = "spark.tablets.merge.driverScanBytes"
# "false": the driver never classifies rows in Arrow; its selected pairs go to Spark's CASE
ARROW_EVAL_CONF = "spark.tablets.merge.arrowEval"
# "false": no tablet or row group is skipped by statistics (MERGE, UPDATE, DELETE read every tablet)
PRUNE_CONF = "spark.tablets.merge.pruneTablets"
# "false": a MERGE run again with the same rows reads the target to find it changes nothing
RERUN_CONF = "spark.tablets.merge.skipSameSource"
# "0": the classified pairs of Spark's plan always go to Spark's tasks, however few they can be
# (DRIVER_WRITE_ROWS: at most this many are collected and written by one task on the driver)
DRIVER_WRITE_CONF = "spark.tablets.merge.driverWriteRows"
DRIVER_WRITE_ROWS = 10_000
# "false": the target's scan keeps every row before a shuffle join, not only those whose keys a
# bloom filter of the source's holds (engine.key_filter)
KEY_FILTER_CONF = "spark.tablets.merge.keyFilter"
# "false": a MERGE that only deletes the rows whose key a big source holds joins them in Spark,
# not by the source's key set in the tasks that own the tablets (engine.key_delete)
KEY_DELETE_CONF = "spark.tablets.merge.keyDelete"
# "false": a statement that changes nothing (degenerate, an empty source, a re-merge of rows
# already there) still runs to its commit step, which then writes nothing
SKIP_NOOP_CONF = "spark.tablets.merge.skipNoop"
# "0": no source is taken as a local relation; each is persisted in Spark (and, below the
# broadcast threshold, collected once to count it: ``intake.counted_source``); unset:
# LOCAL_SOURCE_BYTES or LOCAL_SOURCE_BYTES_NO_RULE
LOCAL_SOURCE_CONF = "spark.tablets.merge.localSourceBytes"


def local_limit(spark: SparkSession) -> int:
    """The largest source taken as a local relation (``LOCAL_SOURCE_CONF``): by default more where
    the session's optimizer skips ConvertToLocalRelation (tablets' own sessions)."""
    size = conf_bytes(spark, LOCAL_SOURCE_CONF)
    if size is not None:
        return size
    rules = conf_value(spark, EXCLUDED_RULES_CONF) or ""  # cannot tell: the rule runs
    return (
        LOCAL_SOURCE_BYTES_NO_RULE
        if LOCAL_RELATION_RULE in {r.strip() for r in rules.split(",")}
        else LOCAL_SOURCE_BYTES
    )


def driver_scan_bytes(spark: SparkSession) -> int:
    """``DRIVER_SCAN_CONF`` in bytes (0 or less: never); by default ``DRIVER_SCAN_BYTES_LOCAL``
    in local mode (not over Spark Connect), else ``DRIVER_SCAN_BYTES``."""
    size = conf_bytes(spark, DRIVER_SCAN_CONF)
    if size is not None:
        return size
    # a Spark Connect client may be on another machine than its server's local-mode executors
    local = backend(spark).local_master(spark)
    return DRIVER_SCAN_BYTES_LOCAL if local else DRIVER_SCAN_BYTES


def driver_write_rows(spark: SparkSession) -> int:
    """``DRIVER_WRITE_CONF``: the most rows Spark's classified pairs can hold for the driver to
    collect and write them as one task (0: never)."""
    return conf_count(spark, DRIVER_WRITE_CONF, DRIVER_WRITE_ROWS)


_INTEGRAL = ("tinyint", "smallint", "int", "bigint", "byte", "short", "integer", "long")


def _driver_key(target: str, source: str) -> bool:
    """A ``t.col = s.col`` pair the driver selects target rows by: types whose equality Arrow
    computes as Spark does (``intake.key_values``)."""
    t, s = target.lower(), source.lower()
    if t in _INTEGRAL and s in _INTEGRAL:
        return True
    return (
        t == s
        and (t in ("string", "date", "boolean", "timestamp", "timestamp_ntz"))
        or (t.startswith("decimal") and s.startswith("decimal"))
    )


def describe(spark: SparkSession, plan: Plan, target_bytes: int, source: DataFrame | None) -> list[str]:
    """EXPLAIN's lines on the plan the statement will take, with the reason, as ``executor``
    decides it (the row limits are only known as it runs), and the switches that force the
    long way."""
    switches = (
        f"   switches: {DRIVER_SCAN_CONF}=0 (Spark's plan), {ARROW_EVAL_CONF}=false, {PRUNE_CONF}=false, "
        f"{RERUN_CONF}=false, {SKIP_NOOP_CONF}=false, {DRIVER_WRITE_CONF}=0, {KEY_DELETE_CONF}=false"
    )

    def spark_plan(why: str) -> list[str]:
        few = driver_write_rows(spark)
        writes = (
            f"   its pairs are written by Spark's tasks, or by one task on the driver where they can be at most {few:,}"
            f" rows ({DRIVER_WRITE_CONF})"
            if few
            else f"   its pairs are written by Spark's tasks ({DRIVER_WRITE_CONF} is 0)"
        )
        lines = [f"[Route] Spark's plan: {why}", writes]
        if plan.deletes_by_key is not None and conf_flag(spark, KEY_DELETE_CONF):
            lines.append(
                f"   a delete by one key: its source's keys (up to {KEY_SET_BYTES:,} bytes) are collected once and the"
                f" tasks that own the tablets delete by them, no join ({KEY_DELETE_CONF})"
            )
        return [*lines, switches]

    scan = driver_scan_bytes(spark)
    if scan <= 0:
        return spark_plan(f"{DRIVER_SCAN_CONF} is 0")
    if source is None:  # UPDATE / DELETE
        if not conf_flag(spark, ARROW_EVAL_CONF) or plan.driver_clauses(Category.NOT_MATCHED_BY_SOURCE) is None:
            return spark_plan("its condition or values are not ones the driver computes exactly as Spark does")
        if target_bytes > scan:
            return spark_plan(f"the target's tablets take {target_bytes:,} bytes, above {DRIVER_SCAN_CONF} ({scan:,})")
        return [
            "[Route] driver plan: the driver reads the tablets that statistics keep, selects the rows the condition"
            f" holds for and writes them in Arrow, with no Spark job; Spark's plan if they are more than"
            f" {DRIVER_SCAN_ROWS:,} rows",
            switches,
        ]
    limit, size = broadcast_threshold(spark), size_bytes(source)
    if limit is None or limit < 0 or size is None:
        return spark_plan("the source is not collected (no size estimate, or broadcasts are off)")
    alone = plan.plain and target_bytes <= scan
    collect = (
        min(limit, local_limit(spark)) if not alone else max(min(limit, local_limit(spark)), DRIVER_MERGE_SOURCE_BYTES)
    )
    if size > collect:
        return spark_plan(
            f"the source (Spark estimates {size:,} bytes) is above the {collect:,} bytes collected to the driver"
        )
    types = dict(plan.column_types)
    source_types = {f.name.lower(): f.dataType.simpleString() for f in source.schema.fields}
    keys = [
        c
        for c, e in plan.join_keys
        if (name := source_column(plan.spec, e)) is not None
        and _driver_key(types.get(c, ""), source_types.get(name.lower(), ""))
    ]
    if not keys:
        return spark_plan("ON has no `t.col = s.col` of types the driver compares as Spark does")
    if target_bytes > scan:
        return spark_plan(
            f"the target's tablets take {target_bytes:,} bytes, above {DRIVER_SCAN_CONF} ({scan:,}),"
            " unless pruning by the source's key range leaves less"
        )
    arrow = conf_flag(spark, ARROW_EVAL_CONF)
    on_in_arrow = plan.driver_on_rest(source_types) is not None  # the key equalities, and the rest in Arrow
    if plan.by_source and not (
        on_in_arrow and arrow and plan.driver_clauses(Category.NOT_MATCHED_BY_SOURCE) is not None
    ):
        return spark_plan("a BY SOURCE clause acts on target rows without a pair, which the driver cannot select here")
    rows = f"more than {DRIVER_SCAN_ROWS:,} rows (or 4 per source row)"
    if on_in_arrow and arrow and len(keys) == len(plan.join_keys):
        return [
            f"[Route] driver plan: the source is collected; the driver reads the target rows holding its keys"
            f" ({', '.join(keys)}) and classifies and writes them in Arrow, with no Spark job after the source's;"
            f" Spark's plan instead if it selects {rows} or a clause's values are not exact in Arrow",
            switches,
        ]
    return [
        f"[Route] driver selection: the driver reads the target rows holding the source's keys ({', '.join(keys)});"
        f" one Spark job checks ON and classifies them (Spark's plan if it selects {rows})",
        switches,
    ]
