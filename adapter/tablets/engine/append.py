"""Blind appends and overwrites (INSERT INTO, INSERT OVERWRITE, CREATE OR REPLACE): new tablets in
one commit; on a keyed table an append is a MERGE that refuses every matched pair."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from pyspark.errors import AnalysisException, PySparkException
from pyspark.sql import DataFrame, SparkSession
from sqlglot import exp

from tablets.engine.constraints import raise_if_violated, violation_column
from tablets.engine.errors import first_line, job_failed
from tablets.engine.executor import execute
from tablets.engine.metrics import MergeMetrics, Rows, summed
from tablets.engine.names import (
    K_INSERT,
    KIND,
    VIOLATION,
)
from tablets.engine.route import (
    SMALL_BYTES,
    local_limit,
)
from tablets.engine.run import MergeOptions
from tablets.engine.streams import columns_named, map_in_arrow, run_task_here, shuffle_partitions
from tablets.engine.tasks import INSERT_RESULT, insert_task
from tablets.exceptions import (
    KeyViolation,
    MergeSpecError,
)
from tablets.spark.sizes import size_bytes
from tablets.spec import ActionKind, Category, Clause, MergeSpec, Source
from tablets.spec.expr import Expr, all_of, column
from tablets.sqltext import quote_ident, sql_string
from tablets.storage import (
    TabletTable,
    discard,
    fragment_from_json,
)
from tablets.storage.actions import Action, Metadata, RemoveTablet
from tablets.storage.transaction import begin


def append(
    spark: SparkSession,
    table: TabletTable,
    frame: DataFrame,
    options: MergeOptions = MergeOptions(),
    *,
    operation: str = "APPEND",
    overwrite: bool = False,
    by_name: bool = True,
    name: str | None = None,
    metadata: Metadata | None = None,
) -> MergeMetrics:
    """Write ``frame`` as new tablets in one commit: a blind append (rebases over concurrent
    commits), or an overwrite that also removes every tablet of the version it read; with
    ``metadata`` (``storage.metadata.replacement``: ``CREATE OR REPLACE``) an overwrite that gives the
    table that schema, keys and properties in the same commit.

    ``by_name``: match columns by name (missing ones are NULL); else by position, as SQL
    ``INSERT INTO t SELECT ...`` does. On a table with key columns the rows must not repeat a
    key among themselves or (appending) of the table's live rows: ``KeyViolation``, and then
    the append is a MERGE that refuses every matched pair."""
    t0 = time.perf_counter()
    snap = table.snapshot()
    if metadata is not None:
        assert overwrite, "new metadata replaces the table's rows"
        snap = replace(snap, metadata=metadata)  # the rows are written in the new schema
    names = [n for n, _, _ in snap.metadata.schema]
    types = {n: t for n, t, _ in snap.metadata.schema}
    if not by_name:
        if len(frame.columns) > len(names):
            raise MergeSpecError(
                f"{operation} {name or table.root}: the query gives {len(frame.columns)} columns, the table has {len(names)}",
                help="Select one column per table column, or name the columns to insert.",
            )
        frame = frame.toDF(*names[: len(frame.columns)])
    have = {c.lower(): c for c in frame.columns}
    extra = [c for c in frame.columns if c.lower() not in {n.lower() for n in names}]
    if extra:
        raise MergeSpecError(
            f"{operation} {name or table.root}: columns {extra} are not columns of the table ({', '.join(names)})",
            help="Drop them from the query, or add them to the table first (on_schema_change / ALTER TABLE ADD COLUMNS).",
        )
    # one projection built from text: a py4j call, not three per column (each a round trip to a
    # JVM that may be busy compiling)
    cols = [
        f"CAST({quote_ident(have[n.lower()]) if n.lower() in have else 'NULL'} AS {types[n]}) AS {quote_ident(n)}"
        for n in names
    ]
    try:  # the rows' types against the table's: Spark's analysis, no job
        frame.selectExpr(*cols).schema  # noqa: B018 - analysed for its error
    except AnalysisException as e:
        raise MergeSpecError(
            f"{spec_head(operation, name or table.root)}: the rows do not fit the table's columns: {first_line(e)}",
            help="Give each column a value of its type (CAST(... AS <type>)), in the table's column order or by name.",
        ) from None
    keys = list(snap.metadata.key_columns)
    if keys and not overwrite and snap.live_rows:
        on = Expr.of(all_of(exp.EQ(this=column(k, "t"), expression=column(k, "s")) for k in keys))
        clauses = (
            Clause(Category.MATCHED, ActionKind.REFUSE),
            Clause(Category.NOT_MATCHED, ActionKind.INSERT, star=True),
        )
        spec = MergeSpec(name or table.root, "t", Source(query="<rows>"), "s", on, clauses, operation=operation)
        return execute(spark, table, spec, frame.selectExpr(*cols), options, snapshot=snap)
    stream = frame.selectExpr(*cols, f"{sql_string(K_INSERT)} AS {quote_ident(KIND)}")
    check = violation_column(snap.metadata, {n: n for n in names})
    if check is not None:  # one column beside the rows: the write task refuses rows that break a constraint
        stream = stream.select("*", check.alias(VIOLATION))
    size = size_bytes(stream)
    small = size is not None and size < SMALL_BYTES
    # rows a local source could hold are written on the driver: no Python worker to start (the
    # first in a fresh process costs seconds: dbt's CTAS of a small model)
    here = size is not None and size <= local_limit(spark)
    if keys:  # rows of one key meet in one task, which checks them
        stream = stream.coalesce(1) if small else stream.repartition(shuffle_partitions(spark), *columns_named(keys))
    elif small:
        stream = stream.coalesce(1)  # one tablet, not one per input partition
    handle = begin(
        snap,
        table.root,
        operation,
        io=table.io,
        delete_from=(),
        read_tablets=snap.tablets.keys() if overwrite else (),
        reads_appends=overwrite or bool(keys),  # a concurrent append could repeat our keys
        target_tablet_rows=options.target_tablet_rows,
        sort_by=options.cluster_by,
    )
    task = insert_task(handle, names, keys)
    try:
        rows: list[Any] | None = run_task_here(stream, task) if here else None
        if rows is None:
            rows = map_in_arrow(stream, task, INSERT_RESULT).collect()
    except AnalysisException as e:
        raise MergeSpecError(
            f"{operation} {name or table.root}: {first_line(e)}", help="Check the query and its column types."
        ) from e
    except PySparkException as e:
        raise job_failed(f"{operation} {name or table.root}", e) from e
    frags = [fragment_from_json(r["fragment"]) for r in rows if r["fragment"]]
    bad = sum(r["key_violations"] for r in rows)
    if bad:
        discard(handle, frags)
        example = next((r["key_example"] for r in rows if r["key_example"]), None)
        raise KeyViolation(
            f"{spec_head(operation, name or table.root)}: {bad} row(s) repeat a key of ({', '.join(keys)})"
            + (f", e.g. {example}" if example else "")
            + "; nothing was written"
        )
    raise_if_violated(handle, frags, rows, snap.metadata, spec_head(operation, name or table.root))
    removes: list[Action] = [RemoveTablet(t) for t in snap.tablets] if overwrite else []
    if metadata is not None:
        removes.insert(0, metadata)
    counted = Rows(inserted=sum(r["n_insert"] for r in rows), deleted=snap.live_rows if overwrite else 0)
    timings = {"write": round((time.perf_counter() - t0) * 1000, 1)}
    m = summed(operation, timings, rows=counted, fragments=frags)
    version = table.finish(
        handle, frags, extra_actions=removes, parameters=dict(options.parameters), metrics=m.to_commit()
    )
    return replace(m, version=version)


def spec_head(operation: str, target: str) -> str:
    """``INSERT INTO t``, ``INSERT OVERWRITE t``, ``CREATE TABLE AS SELECT t``: a message's start."""
    return f"INSERT INTO {target}" if operation == "INSERT" else f"{operation} {target}"
