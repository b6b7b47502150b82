"""Queries of tablet tables through the SQL front door, on Spark's own Parquet scan.

A tablet catalog table read by Spark SQL goes through the ``tablets`` Python data source, which
PySpark 4.3 gives no column pruning (``PythonScanBuilder`` implements ``SupportsPushDownFilters``
only: every column crosses from Python to the JVM, even for ``count(*)``), and whose filter
pushdown gives wrong rows in self-joins (see ``tablets.spark.datasource``). The front door
(``tablets.db.Database.sql``, through which dbt runs every statement) does better:
``sql(spark, text)`` replaces each tablet table that a query reads by a temporary view over
``read_frames.read_view`` (the newest snapshot's live tablets read by Spark's Parquet scan, deletion
vectors applied), so Spark reads only the columns the query uses and skips row groups by its
filters; tablets that the query's WHERE rules out by the log's statistics are not read at all
(``tablets.sql.reads``, ``tablets.storage.pruning``; a debug record of the ``tablets`` logger per
table says which version it read and how many tablets it skipped, in words and, for tools, as
its ``tablets_read`` attribute). Only the names are replaced in the statement's own text; the views are dropped once
Spark has analyzed the statement (the DataFrame holds their plans, and so keeps the version it
read, as a DataFrame of the Python source does).

Statements: queries, and ``INSERT`` / ``CREATE TABLE ... AS`` of other tables. Not views, which
read the newest version each time they are queried (and a permanent view cannot refer to a
temporary one). Left to the Python source: names that a temporary view of the session shadows,
tables whose files Spark's Hadoop file system cannot read (``frames.native_scan``), Spark Connect
sessions (the server analyzes a statement only when it runs: the views would be gone), statements
``tablets.sql.reads`` is not sure about, and every read when ``spark.tablets.read.native``
(``read_frames.READ_NATIVE_CONF``) is ``false``. ``spark.sql()`` outside the front door, views,
and the engine's own reads (a MERGE's source, ``INSERT ... SELECT``, ``CREATE TABLE ... USING
tablets AS``) are not rewritten here: the analyzer rule of ``tablets.spark.native`` replaces their
reads of the Python source by ``read_frames.read_frame`` (marked, so that the engine still tells from
the source's plan whether it reads the target, which its conflict rules depend on).

Verification: each tablet's size is checked against the log before planning (``check_sizes``:
a cut, grown or missing tablet is a ``FormatError`` here) and parquet-mr checks the page CRCs
of the pages it reads; a damaged page fails the query with Spark's ``FAILED_READ_FILE``, which
``read_error`` turns into the ``FormatError`` naming the tablet (dbt's cursor does). The footer's
tablet id is not read (a tablet swapped for another of exactly the same size passes), as in the
engine's scan (``frames``).
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from tablets.spark import catalog
from tablets.spark.backend import backend
from tablets.spark.errors import read_error  # noqa: F401 - dbt's cursor and older callers ask here
from tablets.spark.read_frames import read_view, reads_natively, tablets_to_read
from tablets.sql.reads import TableRef, references
from tablets.sqltext import quote_ident

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from tablets.storage.snapshot import Snapshot

VIEW_PREFIX = "__tablets_read_"
logger = logging.getLogger("tablets")
_ids = itertools.count()
_ids_lock = threading.Lock()


def sql(spark: SparkSession, text: str, prepare: Callable[[str], str] = lambda t: t) -> DataFrame:
    """``spark.sql(prepare(text))``, with the tablet tables ``text`` reads on Spark's Parquet
    scan (``prepare``: the front door's other rewrites, of time travel and the like)."""
    with views(spark, text) as rewritten:
        return spark.sql(prepare(rewritten))


@contextmanager
def views(spark: SparkSession, text: str) -> Iterator[str]:
    """``text`` with its tablet tables replaced by temporary views, which exist until the block
    ends (analyze the statement inside it)."""
    made: list[str] = []
    try:
        yield _rewrite(spark, text, made)
    finally:
        for v in made:
            spark.catalog.dropTempView(v)


def _rewrite(spark: SparkSession, text: str, made: list[str]) -> str:
    # Spark Connect analyzes a statement when it runs, after the views would be gone
    if backend(spark).analyzes_late() or not reads_natively(spark) or not catalog.may_name_a_tablet_table(spark, text):
        return text
    refs = references(text)
    if not refs:
        return text
    snaps: dict[str, Snapshot] = {}  # one version of each table per statement (self-joins)
    edits: list[tuple[TableRef, str]] = []
    for ref in refs:
        view = _view(spark, ref, made, snaps)
        if view is not None:
            edits.append((ref, view))
    if not edits:
        return text
    out = text
    for ref, view in sorted(edits, key=lambda e: e[0].start, reverse=True):
        bare = ref.aliased or catalog.path_of(ref.name) is not None  # a path is no name to qualify columns by
        alias = "" if bare else f" AS {quote_ident(ref.name.rsplit('.', 1)[-1])}"
        out = out[: ref.start] + view + alias + out[ref.end + 1 :]
    return out


def _view(spark: SparkSession, ref: TableRef, made: list[str], snaps: dict[str, Snapshot]) -> str | None:
    if catalog.path_of(ref.name) is not None:
        root = catalog.require(spark, ref.name)  # not a tablet table: says what is there
    else:
        found = catalog.lookup(spark, ref.name)
        if found is None or _shadowed(spark, ref.name):
            return None
        root = found
    table = catalog.storage(spark).table(root)
    snap = snaps.setdefault(root, table.snapshot())
    keep, pruned, early = tablets_to_read(snap, ref.conds)
    with _ids_lock:
        view = f"{VIEW_PREFIX}{next(_ids)}"
    if not read_view(spark, view, table, snap, keep, early):
        return None
    made.append(view)
    read = {"table": ref.name, "version": snap.version, "tablets": len(keep) + pruned, "tablets_pruned": pruned}
    logger.debug(
        "tablets: %s read natively at version %d: %d of %d tablets (%d skipped by their statistics)",
        ref.name,
        snap.version,
        len(keep),
        len(keep) + pruned,
        pruned,
        extra={"tablets_read": read},
    )
    return view


def _shadowed(spark: SparkSession, name: str) -> bool:
    """Whether an unqualified ``name`` resolves to a temporary view of the session."""
    if "." in name:
        return False
    return backend(spark).is_temp_view(spark, name)
