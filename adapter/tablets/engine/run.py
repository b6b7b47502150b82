"""One MERGE statement's state, as values: what is fixed for it (``Run``: the session, table,
snapshot and plan, what it was asked (``MergeOptions``), the schema it evolves to, its settings
(``Switches``)), what it learned of its source (``SourceIntake``) and the columns Spark's scan
leaves out (``Run.deferred``).

``executor.execute`` makes the ``Run``; a step that learns something returns it as a new value
(the intake returns its ``SourceIntake``, a refinement ``dataclasses.replace``s it) and the
executor hands the next steps ``replace(run, intake=...)``: no step writes into the state it was
given. What the steps count goes back in their return values too; ``metrics.summed`` makes the
statement's ``MergeMetrics`` of them in one place (the executor's). Two parts stay mutable, each
with one owner and a reason: ``Temporaries`` (the session objects to release, whoever made
them) and ``Run.cache`` (``driver_plan``'s memo of what it computed once, private to it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from tablets.engine.plan import Plan
from tablets.engine.route import PRUNE_CONF
from tablets.settings import conf_flag
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


@dataclass(frozen=True)
class SourceIntake:
    """What the statement learned of its source, read once (``intake``): made by the intake step,
    refined (a new value) where a later step learns more of it."""

    rows: int = 0  # the source's row count (``MergeMetrics.source_rows``)
    by_arrow: bool = False  # its Parquet files read here by Arrow (``MergeMetrics.source_by_arrow``)
    broadcast: bool = False  # the source is small enough to broadcast into the target scan
    ranges: KeyRanges | None = None  # the source's join key ranges that filter the target scan (no BY SOURCE clause)
    local: tuple[pa.Table, StructType] | None = None  # a collected source's rows (with SID) and type
    # a persisted source's rows (with SID) and type, collected to count it (``intake.counted_source``),
    # until the re-run check
    collected: tuple[pa.Table, StructType] | None = None
    frame: DataFrame | None = None  # ``local`` as a Spark local relation (``intake.local_frame``)
    keys: dict[str, pa.Array] | None = None  # a collected source's join key values, by target column
    buckets: KeyBuckets | None = None  # a big source's integer key, by bucket (count_and_ranges)
    key_sources: Mapping[str, str] = field(default_factory=dict)  # target key column -> its source column
    # a source digested in Spark (``count_and_ranges``): its re-run digest and join keys' source
    # columns (``rerun.spark_digest``), and whether those keys are never NULL
    digest: tuple[str, dict[str, str]] | None = None
    keys_not_null: bool = False


@dataclass
class Temporaries:
    """What the statement made in the session and releases when it ends. Mutable: a resource
    owner, not state. The steps that persist a frame or register a view (``intake``,
    ``pairs_sql``) hand it here as they make it, so that it is released however the statement
    ends, an error in a later step included."""

    persisted: list[DataFrame] = field(default_factory=list)
    views: list[str] = field(default_factory=list)  # temp views of the statement's query

    def release(self, spark: SparkSession) -> None:
        for df in self.persisted:
            df.unpersist()
        for name in self.views:
            spark.catalog.dropTempView(name)


class Switches:
    """The shortcuts' on/off settings (``engine.route``), each read from the session once a
    statement, when first asked: a memo, so that a setting is read (and an invalid one
    reported) only by a statement that asks for it."""

    def __init__(self, spark: SparkSession) -> None:
        self._spark = spark
        self._read: dict[str, bool] = {}

    def on(self, setting: str) -> bool:
        if setting not in self._read:
            self._read[setting] = conf_flag(self._spark, setting)
        return self._read[setting]


@dataclass(frozen=True, eq=False)
class Run:
    spark: SparkSession
    table: TabletTable
    snapshot: Snapshot
    plan: Plan
    options: MergeOptions
    switches: Switches
    # MERGE WITH SCHEMA EVOLUTION: the new metadata (``snapshot`` already has it), committed
    # with the statement's rows in one version; None: the schema stays
    evolved: Metadata | None = None
    intake: SourceIntake = SourceIntake()  # the intake's value, once the executor has it
    # Spark's plan: the columns its scan leaves out, compared by the merge tasks for the rows
    # alike in the rest (``pairs_sql.compared_in_tasks``; chosen by the executor)
    deferred: tuple[str, ...] = ()
    # Spark's plan: the columns every UPDATE keeps that its scan leaves out, read by the merge
    # tasks for the updated rows (``pairs_sql.kept_in_tasks``; chosen by the executor)
    kept: tuple[str, ...] = ()
    temps: Temporaries = field(default_factory=Temporaries)
    # memos of computations made once a statement, each under the name of the one module that
    # makes and reads it (``driver_plan``'s); shared by every ``replace`` of the run
    cache: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def scan_columns(self) -> list[str]:
        """The target columns Spark's plan reads: ``Plan.target_columns`` but ``deferred`` and ``kept``."""
        return [c for c in self.plan.target_columns if c not in self.deferred and c not in self.kept]


def setting_on(run: Run, setting: str) -> bool:
    """A shortcut's on/off setting (``engine.route``), read from the session once a statement."""
    return run.switches.on(setting)


def may_prune(run: Run) -> bool:
    """Tablets (and row groups) may be skipped by their statistics: the model's ``prune_tablets``
    and the session's ``PRUNE_CONF``."""
    return run.options.prune and setting_on(run, PRUNE_CONF)
