"""Statement metrics, recorded in the commit and returned to the caller."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
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
    same_source: bool = False  # the same idempotent statement and source as the commit it read: no scan (engine.rerun)
    source_by_arrow: bool = False  # the source's Parquet files read here by Arrow, no Spark job (spark.file_source)
    dvs_written: int = 0
    bytes_written: int = 0
    timings_ms: dict[str, float] = field(default_factory=dict)

    @property
    def rows_affected(self) -> int:
        return self.rows_inserted + self.rows_updated + self.rows_deleted

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
