"""The rows a statement reads: a query's (INSERT's, CREATE ... AS's), a MERGE's source, and a
query handed to Spark, each with its tablet tables by path, read AS OF a version and
``table_changes`` calls replaced by views Spark can read (``tablets.asof``, ``tablets.changes``,
``tablets.reads``). Spark's errors in them become the statement's, in one line."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pyspark.errors import PySparkException

from tablets import asof, changes, reads
from tablets.conflict_rows import conflict_rows
from tablets.engine.errors import spark_message
from tablets.exceptions import MergeSpecError
from tablets.spark import catalog

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from tablets.spec import MergeSpec
    from tablets.storage import TabletTable


def spark_sql(spark: SparkSession, text: str) -> DataFrame:
    """``text`` run by Spark, its tablet tables read by Spark's Parquet scan (``tablets.reads``)."""
    try:
        text = changes.rewrite(spark, text)  # table_changes(...) calls: views of their rows
        return reads.sql(spark, text, lambda t: catalog.path_views(spark, asof.time_travel(spark, t)))
    except Exception as e:  # Spark's analysis errors
        clear = catalog.missing_provider(spark, e)
        if clear is None:
            raise
        raise clear from e


def query_text(spark: SparkSession, text: str) -> str:
    """A query the engine reads, as text Spark can read (see the module's docstring)."""
    text = changes.rewrite(spark, text)
    return catalog.path_views(spark, asof.time_travel(spark, text))


def query_frame(spark: SparkSession, query: str, where: str, columns: Sequence[str] = ()) -> DataFrame:
    """The rows of a statement's query (named ``columns`` if given): Spark's error in it, in
    one line, naming the statement."""
    try:
        frame = spark.sql(query_text(spark, query))
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


def source_frame(spark: SparkSession, spec: MergeSpec, table: TabletTable | None = None) -> DataFrame | None:
    """The source rows of a MERGE (the inserted rows of an ON CONFLICT); None without a source."""
    if spec.source is None:
        return None
    try:
        if spec.source.table is not None and catalog.path_of(spec.source.table) is None:
            return spark.table(spec.source.table)
        path = catalog.path_of(spec.source.table) if spec.source.table is not None else None
        query = spec.source.query if path is None else "SELECT * FROM tablets.`" + path.replace("`", "``") + "`"
        # tablets.`/path` sources, and tablet tables read AS OF an old version
        frame = spark.sql(query_text(spark, query or ""))
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
