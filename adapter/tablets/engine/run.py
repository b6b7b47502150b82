"""One MERGE statement's state while it runs: what it was asked (``MergeOptions``), what it
learned of its source (``SourceIntake``), what the driver computed of the target
(``DriverWork``), what it must release (``Temporaries``), and the settings it read once.

A ``Run`` is made by ``executor.execute`` and passed to each step; each group is written by the
one step named beside it and read by the later ones.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from tablets.engine.metrics import MergeMetrics
from tablets.engine.plan import DriverClauses, Plan
from tablets.engine.route import PRUNE_CONF
from tablets.settings import conf_flag
from tablets.spec import Category
from tablets.storage import Snapshot, TabletTable
from tablets.storage.actions import Metadata

KeyRanges = list[tuple[str, object, object]]  # (target column, min, max) of the source's join keys


@dataclass(frozen=True)
class KeyBuckets:
    """Which buckets of an integer key's span over the target's tablets hold a source key: the
    span ``lo``..``hi`` cut into buckets of ``width``, numbered from 0 (-1: below it, ``count``:
    above it). Taken by the aggregate that counts a source too big to collect (``intake``)."""

    column: str
    lo: int
    hi: int
    width: int
    count: int
    held: tuple[int, ...]  # the buckets a source key falls in, in order


@dataclass(frozen=True)
class MergeOptions:
    skip_unchanged: bool = True  # an UPDATE whose new image equals the old row writes nothing
    target_tablet_rows: int | None = None  # rows per new tablet (default: the table's property)
    cluster_by: tuple[str, ...] = ()  # sort new tablets by these columns so later merges prune
    prune: bool = True  # skip tablets whose key min/max cannot match the source
    parameters: tuple[tuple[str, str], ...] = field(default=())  # recorded in the commit


@dataclass
class SourceIntake:
    """What the statement learned of its source, read once (``intake``)."""

    broadcast: bool = False  # the source is small enough to broadcast into the target scan
    ranges: KeyRanges | None = None  # the source's join key ranges that filter the target scan (no BY SOURCE clause)
    local: tuple[pa.Table, StructType] | None = None  # a collected source's rows (with SID) and type
    # a persisted source's rows (with SID) and type, collected to count it (``intake.counted_source``),
    # until the re-run check
    collected: tuple[pa.Table, StructType] | None = None
    frame: DataFrame | None = None  # ``local`` as a Spark local relation (``intake.local_frame``)
    keys: dict[str, pa.Array] | None = None  # a collected source's join key values, by target column
    buckets: KeyBuckets | None = None  # a big source's integer key, by bucket (count_and_ranges)
    key_sources: dict[str, str] = field(default_factory=dict)  # target key column -> its source column
    # a source digested in Spark (``count_and_ranges``): its re-run digest and join keys' source
    # columns (``rerun.spark_digest``), and whether those keys are never NULL
    digest: tuple[str, dict[str, str]] | None = None
    keys_not_null: bool = False


@dataclass
class DriverWork:
    """The driver plan's results (``driver_plan``), computed once a statement, by tablets."""

    selected: dict[tuple[str, ...], pa.Table | None] = field(default_factory=dict)  # select_target_rows
    pairs: dict[tuple[str, ...], tuple[pa.Table, pa.Table] | None] = field(default_factory=dict)  # key_pairs
    on_driver: bool = False  # the target's rows were selected on the driver: the pairs are few
    clauses: dict[Category, DriverClauses | None] = field(default_factory=dict)  # driver_clauses, by category
    on_rest: tuple[Any] | None = None  # (driver_on_rest's answer,) once computed (it may be None)


@dataclass
class Temporaries:
    """What the statement made in the session and releases when it ends."""

    persisted: list[DataFrame] = field(default_factory=list)
    views: list[str] = field(default_factory=list)  # temp views of the statement's query

    def release(self, spark: SparkSession) -> None:
        for df in self.persisted:
            df.unpersist()
        for name in self.views:
            spark.catalog.dropTempView(name)


@dataclass
class Run:
    spark: SparkSession
    table: TabletTable
    snapshot: Snapshot
    plan: Plan
    options: MergeOptions
    metrics: MergeMetrics
    intake: SourceIntake = field(default_factory=SourceIntake)
    driver: DriverWork = field(default_factory=DriverWork)
    temps: Temporaries = field(default_factory=Temporaries)
    # MERGE WITH SCHEMA EVOLUTION: the new metadata (``snapshot`` already has it), committed
    # with the statement's rows in one version; None: the schema stays
    evolved: Metadata | None = None
    switches: dict[str, bool] = field(default_factory=dict)  # the shortcuts' settings, read once (setting_on)
    # Spark's plan: the columns its scan leaves out, compared by the merge tasks for the rows
    # alike in the rest (``pairs_sql.compared_in_tasks``; set by ``executor.spark_streams``)
    deferred: tuple[str, ...] = ()

    @property
    def scan_columns(self) -> list[str]:
        """The target columns Spark's plan reads: ``Plan.target_columns`` but ``deferred``."""
        return [c for c in self.plan.target_columns if c not in self.deferred]

    def phase(self, name: str, start: float) -> float:
        now = time.perf_counter()
        self.metrics.timings_ms[name] = round((now - start) * 1000, 1)
        return now


def setting_on(run: Run, setting: str) -> bool:
    """A shortcut's on/off setting (``engine.route``), read from the session once a statement."""
    if setting not in run.switches:
        run.switches[setting] = conf_flag(run.spark, setting)
    return run.switches[setting]


def may_prune(run: Run) -> bool:
    """Tablets (and row groups) may be skipped by their statistics: the model's ``prune_tablets``
    and the session's ``PRUNE_CONF``."""
    return run.options.prune and setting_on(run, PRUNE_CONF)
