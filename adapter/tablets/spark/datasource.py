"""The ``tablets`` PySpark data source: tablet tables for ``spark.read`` / ``df.write`` and SQL.

::

    spark.read.format("tablets").load("/data/t")                        # latest version
    spark.read.format("tablets").option("version", 3).load("/data/t")   # time travel
    df.write.format("tablets").mode("append").save("/data/t")           # one commit
    df.write.format("tablets").mode("overwrite").save("/data/t")        # replaces every tablet

Reads: the snapshot is resolved once, when Spark plans the read (``reader()``), and every
partition carries the tablets (with their deletion vectors) of that one version, so a query
never mixes versions and tasks never replay the log. A partition is one tablet or a group of
small tablets of about ``PARTITION_ROWS`` live rows; ``read()`` yields Arrow record batches of
the live rows (deletion vectors applied), each tablet verified first (``read_tablet``: size,
footer tablet id, row count, page CRCs). A damaged tablet fails the query with PySpark's
``PythonException``, whose text ends in ``tablets.exceptions.FormatError: tablet <path> is
damaged: ...`` and its Help line. PySpark 4.3 gives a Python source no column pruning
(``PythonScanBuilder`` implements ``SupportsPushDownFilters`` only), so every column of the
requested schema is read.

No ``pushFilters`` either, on purpose: PySpark 4.3 keeps the read that ``pushFilters`` planned
on the table's ``PythonDataSourceV2`` (``PythonScanBuilder.pushFilters`` calls ``setReadInfo``),
and every scan of that table in one query uses the last one planned. In a self-join with a
filter on one side only (``... t a JOIN t b ON a.id = b.id + 1 WHERE a.id < 3``) both sides then
read with the other side's filters, and Spark, trusting the pushed filter, drops its own: wrong
rows (seen with a ten-line toy source too). Pushed filters made selective reads 1.3-4x faster
here, but wrong rows are not a price. Queries through the SQL front door (and so dbt) read with
Spark's own Parquet scan instead (``tablets.reads``): column pruning, filter pushdown and
row-group skipping by Spark, tablets skipped by the log's statistics.

Writes follow the row-level write API (Trino's begin -> sinks -> fragments -> finish):
``writer()`` runs once on the driver and opens the write handle (the snapshot it read); each
task's ``write()`` stages tablets through a ``RowLevelSink`` and returns its fragments as JSON;
``commit()`` runs once on the driver and commits all fragments as one version. The Arrow
writer interface (``DataSourceArrowWriter``) hands the tasks Arrow batches, no Python rows.

Catalog tables (``CREATE TABLE ... USING tablets``) need a per-table provider: see
``tablets.spark.catalog`` for the Spark limitation and the workaround.

Workers import this module by name (the data source class is pickled by reference), so
``tablets`` must be importable by the Python workers: every session ships the package to its
executors (``tablets.spark.ship``), which need only the ``worker`` extra's packages.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import ArrayType, DataType, MapType, StructType

from tablets.exceptions import FormatError, SchemaMismatch, TableNotFound, TabletsError
from tablets.sqltext import quote_ident, sql_string
from tablets.storage import transaction
from tablets.storage.actions import AddTablet, RemoveTablet, SetDV
from tablets.storage.sink import RowLevelSink
from tablets.storage.table import TabletTable
from tablets.storage.tablet import read_tablet
from tablets.storage.transaction import (
    WriteHandle,
    fragment_from_json,
    fragment_to_json,
)
from tablets.storage.types import field_text, schema_to_arrow

SOURCE_NAME = "tablets"
PARTITION_ROWS = 1_000_000  # group small tablets into read partitions of about this many live rows
BATCH_ROWS = 65_536


def spark_ddl(schema: Sequence[tuple[str, str, bool]], comments: Mapping[str, str] | None = None) -> str:
    """Spark DDL of a store schema: ``"`a` bigint, `b` string"``; ``comments`` (by lower-case
    column name): ``COMMENT '...'`` after those columns."""
    notes = comments or {}
    return ", ".join(
        f"{quote_ident(n)} {t}" + (f" COMMENT {sql_string(notes[n.lower()])}" if n.lower() in notes else "")
        for n, t, _ in schema
    )


def type_text(dt: DataType) -> str:
    """The store's name of a Spark type: its ``simpleString``, with struct field names
    backquoted where they are not plain identifiers (``storage.types.field_text``), so that
    ``spark_ddl`` and the store's own parser read it back."""
    if isinstance(dt, StructType):
        return "struct<" + ",".join(field_text(f.name, type_text(f.dataType)) for f in dt.fields) + ">"
    if isinstance(dt, ArrayType):
        return f"array<{type_text(dt.elementType)}>"
    if isinstance(dt, MapType):
        return f"map<{type_text(dt.keyType)},{type_text(dt.valueType)}>"
    return dt.simpleString()


def _version_option(options: object) -> int | None:
    get = getattr(options, "get", None)
    if get is None:
        return None
    for key in ("version", "versionasof", "versionAsOf"):
        v = get(key)
        if v not in (None, ""):
            try:
                return int(v)
            except ValueError:
                raise TabletsError(
                    f"option {key}={v!r} is not a version number",
                    help="Pass an integer version (see the table's history).",
                ) from None
    return None


# --- reading ------------------------------------------------------------------------------


@dataclass(frozen=True)
class TabletsPartition(InputPartition):
    """Tablets of one pinned version, with the deletion vector each had at that version."""

    version: int
    tablets: tuple[tuple[AddTablet, SetDV | None], ...]


def _conform_output(data: pa.Table, out: pa.Schema) -> pa.Table:
    """``data`` with exactly the columns and types Spark asked for (missing columns: NULL)."""
    lower = {n.lower(): n for n in data.column_names}
    cols = []
    for f in out:
        name = lower.get(f.name.lower())
        if name is None:
            cols.append(pa.nulls(data.num_rows, f.type))
            continue
        col = data.column(name)
        cols.append(col if col.type == f.type else col.cast(f.type))
    if not cols:
        return pa.table({"_": pa.nulls(data.num_rows)}).drop_columns(["_"])
    return pa.Table.from_arrays(cols, schema=out)


class TabletsReader(DataSourceReader):
    def __init__(self, table: TabletTable, version: int | None, schema: StructType) -> None:

        if not table.exists():
            raise TableNotFound(f"no tablet table at {table.root}")
        snap = table.snapshot(version)
        self.root = table.root
        self.io = table.io  # pickles with its storage settings
        self.version = snap.version
        self.table_schema = snap.metadata.schema
        self.mapping = snap.metadata.mapping  # the version's columns in the tablets (physical names)
        self.out_schema = to_arrow_schema(schema, timezone="UTC")
        self._snapshot = snap  # planner-side only: not pickled into the tasks

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_snapshot", None)
        return state

    def partitions(self) -> list[InputPartition]:
        snap = (
            self._snapshot
            if getattr(self, "_snapshot", None) is not None
            else TabletTable(self.root, io=self.io).snapshot(self.version)
        )
        groups: list[list[tuple[AddTablet, SetDV | None]]] = []
        current: list[tuple[AddTablet, SetDV | None]] = []
        rows = 0
        for st in snap.tablets.values():
            if st.live_rows <= 0:
                continue  # every row deleted: nothing to read
            current.append((st.add, st.dv))
            rows += st.live_rows
            if rows >= PARTITION_ROWS:
                groups.append(current)
                current, rows = [], 0
        if current:
            groups.append(current)
        return [TabletsPartition(self.version, tuple(g)) for g in groups]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, TabletsPartition):
            return  # the placeholder partition Spark adds when partitions() is empty
        schema = schema_to_arrow(self.table_schema)
        present = {n.lower(): n for n in schema.names}
        cols = [present[f.name.lower()] for f in self.out_schema if f.name.lower() in present]
        for add, dv in partition.tablets:
            try:
                data = read_tablet(self.io, self.root, add, dv, schema, cols, mapping=self.mapping)  # verifies the file
            except FormatError as e:
                # PySpark shows the worker's traceback: keep it to this frame and the message
                raise e.with_traceback(None)  # noqa: B904 - the same error, shorter
            yield from _conform_output(data, self.out_schema).to_batches(max_chunksize=BATCH_ROWS)


# --- writing ------------------------------------------------------------------------------


@dataclass
class TabletsCommitMessage(WriterCommitMessage):
    fragments: list[str] = field(default_factory=list)  # fragment_to_json of each
    rows: int = 0


class TabletsWriter(DataSourceArrowWriter):
    """Created once on the driver; pickled (with the write handle) into every task."""

    def __init__(
        self,
        handle: WriteHandle,
        rename: dict[str, str],
        removes: tuple[str, ...] = (),
        rows_deleted: int = 0,
    ) -> None:
        self.handle = handle
        self.rename = rename  # incoming column name -> table column name
        self.removes = removes
        self.rows_deleted = rows_deleted

    def write(self, iterator: Iterator[pa.RecordBatch]) -> TabletsCommitMessage:
        sink = RowLevelSink(self.handle)
        rows = 0
        for batch in iterator:
            if batch.num_rows == 0:
                continue
            if self.rename:
                batch = batch.rename_columns([self.rename.get(n, n) for n in batch.schema.names])
            sink.insert(batch)
            rows += batch.num_rows
        return TabletsCommitMessage([fragment_to_json(f) for f in sink.finish()], rows)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        fragments = []
        rows = 0
        for m in messages:
            if isinstance(m, TabletsCommitMessage):
                fragments += [fragment_from_json(s) for s in m.fragments]
                rows += m.rows
        metrics = {"rows_inserted": float(rows), "tablets_added": float(len(fragments))}
        if self.removes:
            metrics["rows_deleted"] = float(self.rows_deleted)
            metrics["tablets_removed"] = float(len(self.removes))
        TabletTable(self.handle.root, io=self.handle.io).finish(
            self.handle,
            fragments,
            extra_actions=[RemoveTablet(t) for t in self.removes],
            metrics=metrics,
        )

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        # Nothing to undo: tasks only staged new files under fresh names, which no version
        # references; `vacuum` deletes such orphans once they are older than the retention.
        return None


def _column_mapping(incoming: StructType, table_schema: Sequence[tuple[str, str, bool]], root: str) -> dict[str, str]:
    names = {n.lower(): n for n, _, _ in table_schema}
    extra = [f.name for f in incoming.fields if f.name.lower() not in names]
    if extra:
        raise SchemaMismatch(
            f"columns {extra} are not in the tablet table {root} (columns {[n for n, _, _ in table_schema]})",
            help="Add the columns to the table first, or drop them from the data.",
        )
    return {f.name: names[f.name.lower()] for f in incoming.fields if f.name != names[f.name.lower()]}


# --- the source -----------------------------------------------------------------------------


class TabletsDataSource(DataSource):
    """Options: ``path`` (the table root: a local path or an ``s3://``, ``gs://``, ``abfss://``
    URI), ``version`` (time travel, reads only), ``storage_options`` (JSON object of store
    settings, e.g. ``{"AWS_ENDPOINT_URL": ...}``; the environment's are used too)."""

    provider: ClassVar[str] = SOURCE_NAME
    # set by per-table providers (tablets.spark.catalog)
    table_root: ClassVar[str | None] = None
    storage_options: ClassVar[dict[str, str] | None] = None

    @classmethod
    def name(cls) -> str:
        return cls.provider

    def _root(self) -> str:
        root = self.table_root or self.options.get("path")
        if not root:
            raise TabletsError(
                f"the {self.name()} data source needs a table path",
                help="Pass it with .load(path) / .save(path) or .option('path', ...).",
            )
        return root

    def _table(self) -> TabletTable:
        options = self.storage_options
        text = self.options.get("storage_options")
        if text:
            try:
                options = {**(options or {}), **json.loads(text)}
            except ValueError:
                raise TabletsError(
                    "option storage_options is not a JSON object", help='Pass e.g. \'{"AWS_REGION": "eu-west-1"}\'.'
                ) from None
        return TabletTable(self._root(), options)

    def schema(self) -> str:
        table = self._table()
        if not table.exists():
            raise TableNotFound(f"no tablet table at {table.root}")
        return spark_ddl(table.snapshot(_version_option(self.options)).metadata.schema)

    def reader(self, schema: StructType) -> TabletsReader:
        return TabletsReader(self._table(), _version_option(self.options), schema)

    def writer(self, schema: StructType, overwrite: bool) -> TabletsWriter:
        if _version_option(self.options) is not None:
            raise TabletsError("cannot write to a past version", help="Drop the `version` option when writing.")
        table = self._table()
        if not table.exists():  # df.write.format("tablets").save(new_path) creates the table
            cols = [(f.name, type_text(f.dataType), True) for f in schema.fields]
            TabletTable.create(table.root, cols, exist_ok=True, storage_options=self.storage_options)
        snap = table.snapshot()
        rename = _column_mapping(schema, snap.metadata.schema, table.root)
        if overwrite:
            handle = transaction.begin(
                snap,
                table.root,
                "INSERT OVERWRITE",
                delete_from=(),
                io=table.io,
                read_tablets=snap.tablets.keys(),
                reads_appends=True,
            )
            return TabletsWriter(handle, rename, tuple(snap.tablets), snap.live_rows)
        return TabletsWriter(transaction.begin(snap, table.root, "INSERT", delete_from=(), io=table.io), rename)


def register(spark: object) -> None:
    """Register the ``tablets`` source in ``spark`` (idempotent)."""
    spark.dataSource.register(TabletsDataSource)  # type: ignore[attr-defined]
