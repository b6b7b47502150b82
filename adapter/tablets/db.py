"""The SQL front door: ``tablets.connect()`` and ``Database.sql()``.

Statements that write a tablet table (MERGE, INSERT ... ON CONFLICT, UPDATE, DELETE,
CREATE TABLE ... USING tablets, DROP TABLE) go to the engine; its maintenance (DESCRIBE HISTORY,
RESTORE, VACUUM, OPTIMIZE) and its metadata (DESCRIBE, SHOW TBLPROPERTIES, properties and
comments) are answered from its log (``tablets.maintenance``, ``tablets.metadata``); everything
else goes to Spark SQL unchanged. Spark itself refuses row-level statements on Python data
sources, so routing happens before Spark parses the text.

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

import logging
import random
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession

from tablets import changes, clone, constraints, create_like, maintenance, reads, refusals, restate
from tablets.conflict_rows import conflict_rows
from tablets.engine import route
from tablets.engine.append import append
from tablets.engine.evolution import planned
from tablets.engine.executor import SKIP_NOOP_CONF, execute, source_fields, spark_message
from tablets.engine.explain import explain
from tablets.engine.metrics import MergeMetrics
from tablets.engine.plan import noop_reason
from tablets.engine.run import MergeOptions
from tablets.exceptions import (
    CardinalityViolation,
    CommitConflict,
    KeyViolation,
    MergeSpecError,
    TableAlreadyExists,
)
from tablets.sessions import start_session
from tablets.settings import conf_flag
from tablets.spark import catalog
from tablets.spark.frames import empty_frame
from tablets.spark.session import adopt
from tablets.spec import (
    AddColumnsSpec,
    AlterColumnsSpec,
    AppendSpec,
    ConstraintSpec,
    CreateSpec,
    DropColumnsSpec,
    DropSpec,
    MergeSpec,
    RenameColumnSpec,
)
from tablets.sql import create_like as create_like_source
from tablets.sql import create_provider, parse_statement, split_statements, statement_target
from tablets.storage.metadata import replacement

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

    from tablets.storage import TabletTable

_EXPLAIN = re.compile(r"^\s*EXPLAIN\s+(?:(?:EXTENDED|FORMATTED|CODEGEN|COST)\s+)?", re.IGNORECASE)


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


# A statement that lost a commit race runs again against the new version, up to RETRIES times,
# after a random wait of up to BACKOFF * 2^(attempt-1) seconds, at most MAX_BACKOFF ("full
# jitter": writers that collided spread out instead of colliding again in step)
RETRIES = 5
BACKOFF = 0.1
MAX_BACKOFF = 5.0

logger = logging.getLogger("tablets")


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

    # --- routing --------------------------------------------------------------------------

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
        m = _EXPLAIN.match(text)
        if m:
            inner = text[m.end() :]
            if self._tablet_target(inner) is not None:
                return self.explain(inner, options=options)
            return self._spark_sql(text)
        text = restate.statement(self.spark, text)  # REPLACE TABLE, TRUNCATE TABLE, ALTER ... CLUSTER BY
        done = maintenance.run(self.spark, text)  # maintenance; DESCRIBE, SHOW TBLPROPERTIES, comments
        if done is None:
            done = clone.run(self.spark, text)  # CREATE TABLE ... SHALLOW CLONE of a tablet table
        if done is not None:
            return done
        routed = self._tablet_target(text)
        if routed is None:
            refusals.refuse_unroutable(self.spark, text)
            return self._spark_sql(text)
        opts = replace(self.options, **(options or {}))  # type: ignore[arg-type]
        spec = parse_statement(text)
        if isinstance(spec, CreateSpec):
            return self._create(spec, opts)
        if isinstance(spec, DropSpec):
            dropped = catalog.drop_table(self.spark, spec.target, if_exists=spec.if_exists)
            return StatementResult("DROP TABLE", spec.target, MergeMetrics(operation="DROP TABLE", noop=True), dropped)
        if isinstance(spec, AppendSpec):
            return self._append(spec, opts)
        if isinstance(spec, AddColumnsSpec | RenameColumnSpec | DropColumnsSpec | ConstraintSpec):
            return self._alter_columns(spec)
        return self.merge(spec, options=opts)

    def _alter_columns(self, spec: AlterColumnsSpec) -> StatementResult:
        """ADD COLUMNS, RENAME COLUMN, DROP COLUMN(S): one metadata commit of the table's log
        (no tablet rewritten), then the catalog entry's columns follow. Its message names the
        version it committed, or says that there was nothing to change."""
        table = self.table_of(spec.target)
        if isinstance(spec, AddColumnsSpec):
            version = table.add_columns(spec.columns, spec.comments)
        elif isinstance(spec, ConstraintSpec):  # NOT NULL and CHECK (tablets.constraints)
            version = constraints.alter(self.spark, spec, table)
        elif isinstance(spec, RenameColumnSpec):
            where = f"ALTER TABLE {spec.target} RENAME COLUMN {spec.column} TO {spec.new_name}"
            version = table.rename_column(spec.column, spec.new_name, where=where)
        else:
            where = f"ALTER TABLE {spec.target} DROP COLUMNS ({', '.join(spec.columns)})"
            version = table.drop_columns(spec.columns, if_exists=spec.if_exists, where=where)
        catalog.sync_schema(self.spark, spec.target)
        done = f"committed version {version}" if version is not None else "nothing to change"
        return StatementResult("ALTER TABLE", spec.target, MergeMetrics(operation="ALTER TABLE", noop=True), done)

    def _spark_sql(self, text: str) -> DataFrame:
        try:
            # tablet tables a query reads: Spark's own Parquet scan (tablets.reads)
            text = changes.rewrite(self.spark, text)  # table_changes(...) calls: views of their rows
            return reads.sql(
                self.spark, text, lambda t: catalog.path_views(self.spark, maintenance.time_travel(self.spark, t))
            )
        except Exception as e:  # Spark's analysis errors
            clear = catalog.missing_provider(self.spark, e)
            if clear is None:
                raise
            raise clear from e

    def _query(self, text: str) -> str:
        """A query the engine reads (a source, INSERT's or CTAS's rows) with its tablet tables by
        path, AS OF a version and ``table_changes`` calls replaced by views Spark can read."""
        text = changes.rewrite(self.spark, text)
        return catalog.path_views(self.spark, maintenance.time_travel(self.spark, text))

    def table_changes(self, name: str, start: int | str, end: int | str | None = None) -> DataFrame:
        """The rows each version of ``name`` in [start, end] inserted, deleted and updated, with
        ``_change_type``, ``_commit_version`` and ``_commit_timestamp`` (``tablets.changes``);
        a string bound is a timestamp.

            >>> db.table_changes("db.orders", 3).groupBy("_change_type").count()
        """
        return changes.changes_frame(self.spark, name, start, end)

    def _tablet_target(self, text: str) -> str | None:
        """The root of the tablet table ``text`` writes, or "" for CREATE ... USING tablets."""
        if not catalog.may_name_a_tablet_table(self.spark, text):
            return None
        found = statement_target(text)
        if found is None:
            return None
        kind, name = found
        if kind == "CREATE":
            provider = (create_provider(text) or "").lower()
            like = create_like_source(text) if not provider else None  # LIKE a tablet table: one too, as Spark copies
            return "" if provider == "tablets" or (like and catalog.lookup(self.spark, like)) else None
        if catalog.path_of(name) is not None:  # tablets.`/path`: Spark cannot run it, so say why here
            return catalog.require(self.spark, name)
        return catalog.lookup(self.spark, name)

    # --- statements -----------------------------------------------------------------------

    def table_of(self, name: str) -> TabletTable:
        """The tablet table ``name`` (``db.t``, or ``tablets.`/path` ``): ``TableNotFound`` says
        what is there instead."""
        return catalog.storage(self.spark).table(catalog.require(self.spark, name))

    def source_frame(self, spec: MergeSpec, table: TabletTable | None = None) -> DataFrame | None:
        if spec.source is None:
            return None
        try:
            if spec.source.table is not None and catalog.path_of(spec.source.table) is None:
                return self.spark.table(spec.source.table)
            path = catalog.path_of(spec.source.table) if spec.source.table is not None else None
            query = spec.source.query if path is None else "SELECT * FROM tablets.`" + path.replace("`", "``") + "`"
            # tablets.`/path` sources, and tablet tables read AS OF an old version
            frame = self.spark.sql(self._query(query or ""))
        except PySparkException as e:
            part = "the inserted rows" if spec.operation == "INSERT" else f"USING {spec.source.sql()[:200]}"
            raise MergeSpecError(
                f"{spec.head}: {part}: Spark cannot read the source: {spark_message(e)}",
                help="Fix the source query or table name.",
            ) from None
        if spec.operation == "INSERT" and table is not None and any(c.star for c in spec.clauses):
            # INSERT INTO t <query> ON CONFLICT ...: the query's columns are the table's, by position
            names = table.snapshot().metadata.column_names
            if len(frame.columns) > len(names):
                raise MergeSpecError(
                    f"{spec.head}: the inserted rows give {len(frame.columns)} values, and the table has "
                    f"{len(names)} columns ({', '.join(names)})",
                    help="Give at most one value per column of the table, in its order.",
                )
            frame = frame.toDF(*names[: len(frame.columns)])
        if spec.conflict_keys:
            frame = conflict_rows(spec, frame)
        return frame

    def merge(
        self, spec: MergeSpec, *, source: DataFrame | None = None, options: MergeOptions | None = None
    ) -> StatementResult:
        """Run a MERGE/UPDATE/DELETE/INSERT ON CONFLICT spec: one commit (or none)."""
        opts = options or self.options
        table = self.table_of(spec.target)
        if noop_reason(spec) is not None and conf_flag(self.spark, SKIP_NOOP_CONF):  # degenerate: no scan, no job
            return StatementResult(spec.operation, spec.target, MergeMetrics(operation=spec.operation, noop=True))
        start, waited, attempt = time.perf_counter(), 0.0, 0
        while True:
            # the snapshot before the source is planned: a source that reads the target then reads
            # this version or a newer one, whose commits the conflict check sees
            snapshot = table.snapshot()
            frame = source if source is not None else self.source_frame(spec, table)
            try:
                metrics = execute(self.spark, table, spec, frame, opts, snapshot=snapshot)
            except KeyViolation as e:
                if not spec.conflict_keys:
                    raise
                # ON CONFLICT DO UPDATE with a new key given twice: PostgreSQL's cardinality error
                raise CardinalityViolation(
                    f"{e.detail} (ON CONFLICT DO UPDATE: the inserted rows give a key more than once)",
                    help="Insert each key once (deduplicate the rows), or use DO NOTHING to keep the first.",
                ) from None
            except CommitConflict as e:
                attempt += 1
                if attempt > self.retries:
                    raise
                delay = random.uniform(0, min(self.retry_max_backoff, self.retry_backoff * 2 ** (attempt - 1)))
                logger.info(
                    "tablets: %s INTO %s lost a commit race (%s: %s); retry %d of %d in %.2f s",
                    spec.operation,
                    spec.target,
                    type(e).__name__,
                    e.detail,
                    attempt,
                    self.retries,
                    delay,
                )
                time.sleep(delay)
                waited += delay
                continue
            metrics = metrics.with_timings(total=round((time.perf_counter() - start) * 1000, 1))
            if attempt:
                metrics = metrics.with_timings(retry_wait=round(waited * 1000, 1))
            if metrics.version is not None:
                if spec.schema_evolution and table.snapshot().metadata.schema != snapshot.metadata.schema:
                    catalog.sync_schema(self.spark, spec.target)  # the catalog entry shows the new columns
                maintenance.auto_compact(self.spark, table, spec.operation)
            return StatementResult(spec.operation, spec.target, metrics)

    def explain(self, text: str, *, options: Mapping[str, object] | None = None) -> str:
        """The plan ``text`` would take, run with ``options`` (as ``sql`` takes them)."""
        spec = parse_statement(text)
        if not isinstance(spec, MergeSpec):
            return f"{type(spec).__name__}: {spec}"
        return self.explain_merge(spec, options=options)

    def explain_merge(
        self, spec: MergeSpec, *, source: DataFrame | None = None, options: Mapping[str, object] | None = None
    ) -> str:
        """The plan ``spec`` would take, of ``source`` (else the statement's own), planned as its
        run plans it: the table's key, the schema evolution makes, ``options`` over the database's."""
        opts = replace(self.options, **(options or {}))  # type: ignore[arg-type]
        table = self.table_of(spec.target)
        snap = table.snapshot()
        frame = source
        if frame is None and noop_reason(spec) is None:
            frame = self.source_frame(spec, table)
        plan, _ = planned(spec, snap.metadata, source_fields(frame), skip_unchanged=opts.skip_unchanged)
        size = sum(st.add.bytes for st in snap.tablets.values())
        return explain(plan, skip_unchanged=opts.skip_unchanged, route=route.describe(self.spark, plan, size, frame))

    def _query_frame(self, query: str, where: str, columns: Sequence[str] = ()) -> DataFrame:
        """The rows of a statement's query (named ``columns`` if given): Spark's error in it, in
        one line, naming the statement."""
        try:
            frame = self.spark.sql(self._query(query))
            if columns:
                if len(columns) != len(frame.columns):
                    raise MergeSpecError(
                        f"{where}: names {len(columns)} columns ({', '.join(columns)}) but its query gives "
                        f"{len(frame.columns)}",
                        help="Give one query column per named column.",
                    )
                frame = frame.toDF(*columns)
        except PySparkException as e:
            raise MergeSpecError(
                f"{where}: Spark cannot read the query: {spark_message(e)}",
                help="Fix the query (its columns, their names and types).",
            ) from None
        return frame

    def _append(self, spec: AppendSpec, opts: MergeOptions) -> StatementResult:
        verb = "INSERT OVERWRITE" if spec.overwrite else "INSERT INTO"
        frame = self._query_frame(spec.query, f"{verb} {spec.target}", spec.columns)
        op = "INSERT OVERWRITE" if spec.overwrite else "INSERT"
        table = self.table_of(spec.target)
        metrics = append(
            self.spark,
            table,
            frame,
            opts,
            operation=op,
            overwrite=spec.overwrite,
            by_name=bool(spec.columns) or spec.by_name,
            name=spec.target,
        )
        if metrics.version is not None:
            maintenance.auto_compact(self.spark, table, op)
        return StatementResult(op, spec.target, metrics)

    def _create(self, spec: CreateSpec, opts: MergeOptions) -> StatementResult:
        if spec.like is not None:
            spec = create_like.resolve(self.spark, spec)
        kind = catalog.kind_of(self.spark, spec.target) if spec.replace else None
        if kind == "view":  # Spark's rule: a view stays a view
            raise TableAlreadyExists(
                f"CREATE OR REPLACE TABLE {spec.target}: {spec.target} is a view, and a table does not replace a view",
                help=f"Drop the view first (DROP VIEW {spec.target}), or give the table another name.",
            )
        if kind not in (None, "tablets"):  # its drop and the new table's commit cannot be one step
            raise TableAlreadyExists(
                f"CREATE OR REPLACE TABLE {spec.target}: {spec.target} is a {kind or 'non-tablet'} table, which a "
                "tablet table replaces only after it is dropped (Spark replaces only its own v2 tables)",
                help=f"Drop it first (DROP TABLE {spec.target}), then CREATE TABLE {spec.target} ... USING tablets; "
                "dbt's materializations do that for you.",
            )
        props = dict(spec.properties)
        keys = [k.strip() for k in props.pop("key_columns", "").split(",") if k.strip()]
        at_path = catalog.path_of(spec.target) is not None  # tablets.`/path`: adopts a Delta table there
        if spec.query is None and spec.columns_ddl is None and (spec.location is not None or at_path):
            # adopt the table there (a tablet table, or a Delta table written by another engine)
            catalog.create_table(self.spark, spec.target, None, location=spec.location, key_columns=keys)
            return StatementResult("CREATE TABLE", spec.target, MergeMetrics(operation="CREATE TABLE", noop=True))
        if spec.query is None and spec.columns_ddl is None:
            raise MergeSpecError(
                f"CREATE TABLE {spec.target}: no columns and no AS query", help="Give a column list or AS SELECT ..."
            )
        where = f"CREATE {'OR REPLACE ' if spec.replace else ''}TABLE {spec.target} ... AS SELECT"
        frame = self._query_frame(spec.query, where) if spec.query is not None else None
        schema: StructType | str | list[tuple[str, str, bool]] | None = (
            spec.columns_ddl if spec.columns_ddl is not None or frame is None else frame.schema
        )
        if schema is not None:  # its NOT NULL columns, and its CHECKs as properties
            schema = constraints.declared(self.spark, spec, schema, props)
        if spec.if_not_exists and catalog.lookup(self.spark, spec.target) is not None:
            return StatementResult(
                "CREATE TABLE",
                spec.target,
                MergeMetrics(operation="CREATE TABLE", noop=True),
                f"{spec.target} exists: nothing created",
            )
        old = catalog.replaceable(self.spark, spec.target, spec.location) if spec.replace else None
        held = old is None and spec.location is not None and catalog.storage(self.spark).table(spec.location).exists()
        if held and not spec.replace and frame is not None:
            raise TableAlreadyExists(
                f"CREATE TABLE {spec.target} ... AS SELECT: a tablet table already holds LOCATION {spec.location}",
                help="Use CREATE OR REPLACE TABLE ... LOCATION ... AS SELECT to replace its rows (one commit, its "
                "history kept), or CREATE TABLE ... LOCATION without AS to adopt it as it is.",
            )
        if held and spec.replace and schema is not None:  # adopt the files, then replace their rows in one commit
            old = catalog.create_table(self.spark, spec.target, None, location=spec.location, replace=True)
        if old is not None and schema is not None:  # one commit: until it lands the old table stands
            return self._replace(spec, old, frame, schema, keys, props, opts)
        loaded: list[MergeMetrics] = []

        def fill(table: TabletTable) -> None:  # the rows, before the table has its name
            assert frame is not None
            loaded.append(append(self.spark, table, frame, opts, operation="CREATE TABLE AS SELECT", name=spec.target))

        try:
            catalog.create_table(
                self.spark,
                spec.target,
                schema,
                location=spec.location,
                key_columns=keys,
                properties=props,
                replace=spec.replace,
                fill=fill if frame is not None else None,
                comment=spec.comment,
                column_comments=spec.column_comments,
            )
        except TableAlreadyExists:
            if spec.if_not_exists:  # another process created it since the check above: IF NOT EXISTS holds
                return StatementResult(
                    "CREATE TABLE",
                    spec.target,
                    MergeMetrics(operation="CREATE TABLE", noop=True),
                    f"{spec.target} exists: nothing created",
                )
            raise
        metrics = loaded[0] if loaded else MergeMetrics(operation="CREATE TABLE")
        return StatementResult("CREATE TABLE", spec.target, metrics)

    def _replace(
        self,
        spec: CreateSpec,
        table: TabletTable,
        frame: DataFrame | None,
        schema: StructType | str | list[tuple[str, str, bool]],
        keys: list[str],
        props: dict[str, str],
        opts: MergeOptions,
    ) -> StatementResult:
        """``CREATE OR REPLACE`` of a tablet table: the new schema, keys, properties and rows in
        place of every tablet, in one commit of the table's log (as Delta replaces a table);
        then the catalog entry's columns."""
        before = table.snapshot().metadata
        meta = replacement(
            before, catalog.store_schema(self.spark, schema), keys, props, spec.comment, spec.column_comments
        )
        op = "CREATE OR REPLACE TABLE AS SELECT" if frame is not None else "CREATE OR REPLACE TABLE"
        if frame is None:
            frame = empty_frame(self.spark, meta.schema, meta.column_names)
        metrics = append(self.spark, table, frame, opts, operation=op, overwrite=True, name=spec.target, metadata=meta)
        catalog.sync_schema(self.spark, spec.target, keys_changed=before.key_columns != meta.key_columns)
        return StatementResult("CREATE TABLE", spec.target, metrics)

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
