"""A frame that is only a read of Parquet files on a local disk (``spark.read.parquet``, maybe a
choice of its columns), read here with Arrow instead of by a Spark job: what a statement collects
of a small source (``engine.intake``). A Spark job to collect it costs a task's start and the
rows' conversion to Arrow, most of a small MERGE on the driver; a read here costs the decoding.

Only where the read gives exactly the rows ``DataFrame.toArrow`` gives, else None (and Spark
reads it): a classic session; the optimized plan a file relation of Parquet without partition
columns or buckets, under at most a projection of its columns; every file on a ``file:`` path,
holding every column by its exact name (and Spark matching them by name, not field id), as the
Arrow type Spark's would have (no cast, no widening: Spark's rules, not Arrow's, decide those); no
timestamp (its zone, INT96 and rebase rules are Spark's); no date before the Gregorian reform
(Spark may rebase those or refuse them)."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import to_arrow_schema

from tablets.spark.backend import backend
from tablets.storage.fileio import LOCAL
from tablets.storage.types import GREGORIAN_REFORM


def local_parquet_rows(frame: DataFrame) -> pa.Table | None:
    """``frame.toArrow()`` read straight from its Parquet files, or None where it is not only
    such a read or Arrow's rows could differ from Spark's (the module's rules)."""
    try:
        files = _plain_parquet_files(frame)
        if files is None:
            return None
        conf = frame.sparkSession.conf
        large = conf.get("spark.sql.execution.arrow.useLargeVarTypes", "false") == "true"
        folds = conf.get("spark.sql.caseSensitive", "false") != "true"
        if conf.get("spark.sql.parquet.fieldId.read.enabled", "false") == "true":
            return None  # Spark matches columns by field id there, not by name
        schema = to_arrow_schema(frame.schema, timezone="UTC", prefers_large_types=large)
    except Exception:  # noqa: BLE001 - py4j, or a type without an Arrow form: Spark reads it
        return None
    if any(pa.types.is_timestamp(f.type) or pa.types.is_nested(f.type) for f in schema):
        return None
    if len(set(schema.names)) != len(schema.names):  # a column chosen twice
        return None
    parts = []
    for path in files:
        try:
            part = _read(path, schema, folds)
        except (OSError, pa.ArrowException):  # gone or damaged: Spark's read says so in its words
            return None
        if part is None:
            return None
        parts.append(part)
    table = pa.concat_tables(parts) if parts else schema.empty_table()
    for f in schema:
        if pa.types.is_date(f.type):
            low = pc.min(table.column(f.name)).as_py()
            if low is not None and low < GREGORIAN_REFORM:
                return None
    return table


def _plain_parquet_files(frame: DataFrame) -> list[str] | None:
    """The local paths of the Parquet files ``frame`` reads, where its optimized plan is a file
    relation of Parquet (no partition columns, no buckets) under at most a projection of columns."""
    plan: Any = backend(frame).optimized_plan(frame)
    if plan is None:  # Spark Connect: the files are the server's to read
        return None
    if plan.nodeName() == "Project":
        exprs = plan.projectList()
        if any(exprs.apply(i).getClass().getSimpleName() != "AttributeReference" for i in range(exprs.size())):
            return None
        plan = plan.child()
    if plan.nodeName() != "LogicalRelation":
        return None
    relation = plan.relation()
    if (
        relation.getClass().getSimpleName() != "HadoopFsRelation"
        or relation.fileFormat().getClass().getSimpleName() != "ParquetFileFormat"
        or relation.partitionSchema().size() != 0
        or relation.bucketSpec().isDefined()
    ):
        return None
    paths = []
    for uri in frame.inputFiles():
        parsed = urlparse(uri)
        if parsed.scheme != "file":
            return None
        paths.append(unquote(parsed.path))
    return paths


def _read(path: str, schema: pa.Schema, folds: bool) -> pa.Table | None:
    """The columns of ``schema`` from the file at ``path``, None where one is missing or of
    another type than ``schema`` says (string and binary in either offset width), or where
    ``folds`` (Spark resolves names ignoring case) another column's name differs only in case
    (Spark refuses that file or reads that column)."""
    f = LOCAL.open_input(path)
    try:
        parquet = pq.ParquetFile(f)
        names = parquet.schema_arrow.names
        if not all(n in names for n in schema.names):
            return None
        if folds and len({n.lower() for n in names}) != len(names):
            return None
        table = parquet.read(columns=schema.names, use_threads=True)
    finally:
        f.close()
    for field, column in zip(schema, table.columns, strict=True):
        if column.type != field.type and _wide(column.type) != _wide(field.type):
            return None
    return table.cast(schema)


def _wide(t: pa.DataType) -> pa.DataType:
    if t == pa.string():
        return pa.large_string()
    if t == pa.binary():
        return pa.large_binary()
    return t
