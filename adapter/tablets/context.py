"""What every statement kind's handler takes and gives: the ``Door`` it runs behind (the session
and the database's settings, one frozen value per statement), the ``StatementResult`` of a
write, and the routing question they share: is the statement's table a tablet table?"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import SparkSession

from tablets.engine.metrics import MergeMetrics
from tablets.engine.run import MergeOptions
from tablets.spark import catalog
from tablets.spec.statement import Kind, Statement
from tablets.sql import create_like, create_provider


@dataclass(frozen=True)
class Door:
    """A statement's session and settings: ``options`` are the database's with the
    statement's own over them; ``retries``, ``retry_backoff``, ``retry_max_backoff``: how a
    write that lost a commit race runs again (``tablets.db.RETRIES``)."""

    spark: SparkSession
    options: MergeOptions
    retries: int
    retry_backoff: float
    retry_max_backoff: float


@dataclass(frozen=True)
class StatementResult:
    """The outcome of a statement that wrote a tablet table."""

    operation: str
    target: str
    metrics: MergeMetrics
    detail: str | None = None  # what a statement that wrote no rows did (DROP TABLE), in words

    @property
    def rows_affected(self) -> int:
        return self.metrics.rows_affected

    @property
    def message(self) -> str:
        return f"{self.operation}: {self.detail}" if self.detail else self.metrics.message()


def done(operation: str, target: str, detail: str | None = None) -> StatementResult:
    """The result of a statement that wrote no rows (DDL)."""
    return StatementResult(operation, target, MergeMetrics(operation=operation, noop=True), detail)


def tablet_root(spark: SparkSession, stmt: Statement) -> str | None:
    """The root of the tablet table ``stmt`` writes, "" for a CREATE that makes one (USING
    tablets, or LIKE a tablet table, as Spark copies), None when it writes another table."""
    if stmt.target is None:
        return None
    if stmt.kind is Kind.CREATE:
        provider = (create_provider(stmt.text) or "").lower()
        like = create_like(stmt.text) if not provider else None
        return "" if provider == "tablets" or (like and catalog.lookup(spark, like)) else None
    if catalog.path_of(stmt.target) is not None:  # tablets.`/path`: Spark cannot run it, so say why here
        return catalog.require(spark, stmt.target)
    return catalog.lookup(spark, stmt.target)
