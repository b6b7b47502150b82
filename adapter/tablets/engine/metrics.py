"""Statement metrics, recorded in the commit and returned to the caller.

A ``MergeMetrics`` is a frozen value, built once a statement by ``summed`` from what its steps
returned: the intake's source count, the tablets the statement kept, the driver plan's choice,
the rows its merge tasks counted (``Rows``), the fragments they wrote, and the executor's
timings. The front door adds its own timings with ``with_timings``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace

from tablets.storage import DVFragment, Fragment, TabletFragment


@dataclass(frozen=True)
class MergeMetrics:
    operation: str = "MERGE"
    version: int | None = None  # the committed version; None when nothing changed
    noop: bool = False  # degenerate statement: no scan, no job, no commit
    source_rows: int = 0
    rows_inserted: int = 0
    rows_updated: int = 0
    rows_deleted: int = 0
    rows_unchanged: int = 0
    tablets_added: int = 0
    tablets_scanned: int = 0
    tablets_pruned: int = 0
    tablets_read_on_driver: int = 0  # tablets whose rows that can pair were selected on the driver
    merged_on_driver: bool = False  # classified and written on the driver: no Spark job after the source's
    written_on_driver: bool = False  # classified by Spark, few pairs written by one task on the driver
    key_filtered: bool = False  # the target scan kept the rows a bloom filter of source keys holds (key_filter)
    deleted_by_key_set: bool = (
        False  # the tasks owning the tablets deleted by the source's key set, no join (key_delete)
    )
    same_source: bool = False  # the same idempotent statement and source as the commit it read: no scan (engine.rerun)
    source_by_arrow: bool = False  # the source's Parquet files read here by Arrow, no Spark job (spark.file_source)
    dvs_written: int = 0
    bytes_written: int = 0
    timings_ms: dict[str, float] = field(default_factory=dict)  # phase -> ms (never changed: with_timings)

    @property
    def rows_affected(self) -> int:
        return self.rows_inserted + self.rows_updated + self.rows_deleted

    def with_timings(self, **ms: float) -> MergeMetrics:
        """These metrics with the phases ``ms`` timed too (the front door's ``total``, say)."""
        return replace(self, timings_ms={**self.timings_ms, **ms})

    def to_commit(self) -> dict[str, float]:
        out = {
            k: float(v)
            for k, v in asdict(self).items()
            if isinstance(v, int) and not isinstance(v, bool) and k != "version"
        }
        out.update({f"time_{k}_ms": v for k, v in self.timings_ms.items()})
        return out

    def message(self) -> str:
        """``MERGE 42 (inserted 10, updated 30, deleted 2, unchanged 5)``."""
        if self.noop:
            return f"{self.operation} 0 (no-op)"
        return (
            f"{self.operation} {self.rows_affected} (inserted {self.rows_inserted}, updated {self.rows_updated}, "
            f"deleted {self.rows_deleted}, unchanged {self.rows_unchanged})"
        )


@dataclass(frozen=True)
class Rows:
    """The rows a statement's merge tasks counted (or its shortcuts found unchanged), by what
    became of them."""

    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0


def summed(
    operation: str,
    timings: Mapping[str, float],
    *,
    source_rows: int = 0,
    source_by_arrow: bool = False,
    tablets: int = 0,
    scanned: int = 0,
    read_on_driver: int = 0,
    merged_on_driver: bool = False,
    written_on_driver: bool = False,
    key_filtered: bool = False,
    deleted_by_key_set: bool = False,
    same_source: bool = False,
    rows: Rows = Rows(),
    fragments: Sequence[Fragment] = (),
    version: int | None = None,
) -> MergeMetrics:
    """A statement's metrics from what its steps returned: the source's count (the intake's), the
    target's ``tablets`` and the ``scanned`` ones left of them (the rest were pruned), the driver
    plan's choices, the ``rows`` its tasks counted and the ``fragments`` they wrote (new tablets,
    deletion vectors, their bytes), and the ``timings`` of its phases (copied)."""
    added = [f for f in fragments if isinstance(f, TabletFragment)]
    dvs = [f for f in fragments if isinstance(f, DVFragment) and f.deleted]
    return MergeMetrics(
        operation=operation,
        version=version,
        source_rows=source_rows,
        rows_inserted=rows.inserted,
        rows_updated=rows.updated,
        rows_deleted=rows.deleted,
        rows_unchanged=rows.unchanged,
        tablets_added=len(added),
        tablets_scanned=scanned,
        tablets_pruned=tablets - scanned,
        tablets_read_on_driver=read_on_driver,
        merged_on_driver=merged_on_driver,
        written_on_driver=written_on_driver,
        key_filtered=key_filtered,
        deleted_by_key_set=deleted_by_key_set,
        same_source=same_source,
        source_by_arrow=source_by_arrow,
        dvs_written=len(dvs),
        bytes_written=sum(f.add.bytes for f in added) + sum(f.dv.size for f in dvs),
        timings_ms=dict(timings),
    )
