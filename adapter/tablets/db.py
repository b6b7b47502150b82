"""The SQL front door: ``tablets.connect()`` and ``Database.sql()``.

A statement is classified once (``tablets.sql.classify``: its kind, the table it names, its
parsed tree) and run by the one handler of its kind (``tablets.statements``): writes of a tablet
table (MERGE, INSERT, UPDATE, DELETE, CREATE ... USING tablets, ALTER, DROP) by the engine; its
maintenance (DESCRIBE HISTORY, RESTORE, VACUUM, OPTIMIZE) and metadata (DESCRIBE, SHOW
TBLPROPERTIES, properties and comments) from its log; everything else goes to Spark SQL, its
tablet tables read by Spark's Parquet scan. Spark itself refuses row-level statements on Python
data sources, so routing happens before Spark parses the text.

Example::

    >>> import tablets
    >>> db = tablets.connect(warehouse="/tmp/wh")
    >>> db.sql("CREATE TABLE t (id BIGINT, v STRING) USING tablets")
    >>> db.sql("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    >>> db.sql("MERGE INTO t USING (SELECT 2 AS id, 'B' AS v) s ON t.id = s.id "
    ...        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *").metrics.rows_updated
    1
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from pyspark.sql import DataFrame, SparkSession

from tablets import changes, rows
from tablets.context import Door, StatementResult
from tablets.engine.run import MergeOptions
from tablets.exceptions import StatementParseError
from tablets.sessions import start_session
from tablets.spark import catalog
from tablets.spark.session import adopt
from tablets.sql import split_statements
from tablets.sql.classify import classify
from tablets.statements import HANDLERS, explain, merge, query

if TYPE_CHECKING:
    from tablets.spec import MergeSpec
    from tablets.storage import TabletTable

__all__ = ["RETRIES", "Database", "StatementResult", "connect"]

# A statement that lost a commit race runs again against the new version, up to RETRIES times,
# after a random wait of up to BACKOFF * 2^(attempt-1) seconds, at most MAX_BACKOFF ("full
# jitter": writers that collided spread out instead of colliding again in step)
RETRIES = 5
BACKOFF = 0.1
MAX_BACKOFF = 5.0


class Database:
    """A Spark session that knows tablet tables. ``db.spark`` is the SparkSession.

    ``retries``, ``retry_backoff`` and ``retry_max_backoff`` (seconds): how a MERGE, UPDATE,
    DELETE or INSERT ... ON CONFLICT that lost a commit race to a conflicting statement is run
    again (see ``RETRIES``); after the last retry its ``CommitConflict`` is raised."""

    def __init__(
        self,
        spark: SparkSession,
        *,
        options: MergeOptions = MergeOptions(),
        retries: int = RETRIES,
        retry_backoff: float = BACKOFF,
        retry_max_backoff: float = MAX_BACKOFF,
    ) -> None:
        if retries < 0 or retry_backoff < 0 or retry_max_backoff < retry_backoff:
            raise ValueError(
                f"retries ({retries}) and retry_backoff ({retry_backoff}) must be >= 0 and retry_max_backoff "
                f"({retry_max_backoff}) at least retry_backoff"
            )
        self.spark = spark
        self.options = options
        self.retries = retries
        self.retry_backoff = retry_backoff
        self.retry_max_backoff = retry_max_backoff

    def _door(self, options: Mapping[str, object] | MergeOptions | None = None) -> Door:
        if not isinstance(options, MergeOptions):
            options = replace(self.options, **(options or {}))  # type: ignore[arg-type]
        return Door(self.spark, options, self.retries, self.retry_backoff, self.retry_max_backoff)

    # --- statements -----------------------------------------------------------------------

    def script(self, text: str, *, options: Mapping[str, object] | None = None) -> DataFrame | StatementResult | str:
        """Run ``text``'s statements in order (a dbt model's ``sql_header`` before its statement):
        the last one's result; ``options`` are the last one's."""
        *before, last = split_statements(text)
        for statement in before:
            self.sql(statement)
        return self.sql(last, options=options)

    def sql(self, text: str, *, options: Mapping[str, object] | None = None) -> DataFrame | StatementResult | str:
        """Run one statement. Queries return a DataFrame; writes to tablet tables a
        StatementResult; ``EXPLAIN`` of a tablet write the plan text."""
        door = self._door(options)
        stmt = classify(text, writes=catalog.may_name_a_tablet_table(self.spark, text))
        result = HANDLERS[stmt.kind](door, stmt)
        return result if result is not None else query.run(door, stmt)

    def table_changes(self, name: str, start: int | str, end: int | str | None = None) -> DataFrame:
        """The rows each version of ``name`` in [start, end] inserted, deleted and updated, with
        ``_change_type``, ``_commit_version`` and ``_commit_timestamp`` (``tablets.changes``);
        a string bound is a timestamp.

            >>> db.table_changes("db.orders", 3).groupBy("_change_type").count()
        """
        return changes.changes_frame(self.spark, name, start, end)

    def table_of(self, name: str) -> TabletTable:
        """The tablet table ``name`` (``db.t``, or ``tablets.`/path` ``): ``TableNotFound`` says
        what is there instead."""
        return catalog.storage(self.spark).table(catalog.require(self.spark, name))

    def source_frame(self, spec: MergeSpec, table: TabletTable | None = None) -> DataFrame | None:
        """The source rows of ``spec`` (its inserted rows for an ON CONFLICT); None without one."""
        return rows.source_frame(self.spark, spec, table)

    def merge(
        self, spec: MergeSpec, *, source: DataFrame | None = None, options: MergeOptions | None = None
    ) -> StatementResult:
        """Run a MERGE/UPDATE/DELETE/INSERT ON CONFLICT spec: one commit (or none)."""
        return merge.run_spec(self._door(options or self.options), spec, source)

    def explain(self, text: str, *, options: Mapping[str, object] | None = None) -> str:
        """The plan ``text`` (a write of a tablet table) would take, run with ``options``."""
        stmt = classify("EXPLAIN " + text)
        plan = explain.run(self._door(options), stmt)
        if plan is None:
            raise StatementParseError(
                f"EXPLAIN {text.strip()[:80]!r}: not a MERGE, UPDATE, DELETE or INSERT of a tablet table",
                help="Explain a statement that writes a tablet table; Spark explains the others (db.sql('EXPLAIN ...')).",
            )
        return plan

    def explain_merge(
        self, spec: MergeSpec, *, source: DataFrame | None = None, options: Mapping[str, object] | None = None
    ) -> str:
        """The plan ``spec`` would take, of ``source`` (else the statement's own), planned as its
        run plans it: the table's key, the schema evolution makes, ``options`` over the database's."""
        return explain.plan_text(self._door(options), spec, source)

    # --- tables, for hosts (the dbt plugin): by catalog name, through the catalog ----------------

    def root_of(self, name: str) -> str | None:
        """Where the tablet table ``name`` (``db.t``, or ``tablets.`/path` ``) lives; None if
        ``name`` is no tablet table."""
        return catalog.lookup(self.spark, name)

    def is_tablet_table(self, name: str) -> bool:
        return self.root_of(name) is not None

    def table_at(self, root: str) -> TabletTable:
        """The tablet table at ``root``, with the session's store settings."""
        return catalog.storage(self.spark).table(root)

    def list_tables(self, database: str | None = None) -> list[tuple[str, str]]:
        """(name, root) of the tablet tables of ``database`` (default: every database)."""
        return catalog.list_tables(self.spark, database)

    def drop_tables_in(self, database: str) -> list[str]:
        """Drop every tablet table of ``database`` (before the database itself), including the
        files of a CREATE killed before its table got its name; what was removed."""
        return catalog.drop_database_tables(self.spark, database)

    def drop_table(self, name: str, *, if_exists: bool = False) -> str:
        """Drop the tablet table ``name``: its catalog entry, data and registry file."""
        return catalog.drop_table(self.spark, name, if_exists=if_exists)

    def rename_table(self, old: str, new: str) -> None:
        catalog.rename_table(self.spark, old, new)

    def sync_schema(self, name: str) -> None:
        """The catalog entry of ``name`` made to show the table's schema again (after a change)."""
        catalog.sync_schema(self.spark, name)


def connect(
    warehouse: str | None = None,
    *,
    spark: SparkSession | None = None,
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    options: MergeOptions = MergeOptions(),
    storage_options: Mapping[str, str] | None = None,
    metastore_uri: str | None = None,
    retries: int = RETRIES,
    retry_backoff: float = BACKOFF,
    retry_max_backoff: float = MAX_BACKOFF,
) -> Database:
    """A Database over ``spark`` or over an embedded local Spark session (started if needed).

    ``warehouse`` is a local directory or an object store URI (``s3://bucket/wh``, ``gs://``,
    ``abfss://``) where tablet tables are created; ``storage_options`` (e.g.
    ``{"AWS_ENDPOINT_URL": ..., "AWS_REGION": ...}``) add to the standard environment variables
    to reach it. The new session holds the warehouse's embedded metastore (one process at a
    time), or uses the metastore server at ``metastore_uri`` (``thrift://127.0.0.1:9083``,
    started by ``python -m tablets.spark.metastore --warehouse ...``) so that several processes
    can use the warehouse at once. A statement that loses a commit race to a conflicting one is
    run again up to ``retries`` times, after a random wait of up to ``retry_backoff`` seconds,
    doubling per retry up to ``retry_max_backoff``."""
    if spark is None:
        active = SparkSession.getActiveSession()
        if active is not None:
            spark = adopt(active, warehouse, storage_options)
        else:  # (an idle warm Spark holding the warehouse's metastore is stopped first)
            spark = start_session(
                warehouse, master=master, conf=conf, storage_options=storage_options, metastore_uri=metastore_uri
            )
    else:
        adopt(spark, warehouse, storage_options)  # a session built elsewhere
    return Database(
        spark, options=options, retries=retries, retry_backoff=retry_backoff, retry_max_backoff=retry_max_backoff
    )
