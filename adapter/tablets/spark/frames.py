"""The engine's scan of a snapshot: Spark's native Parquet reader, deletion vectors applied.

``snapshot_frame`` reads the chosen live tablets with ``spark.read.schema(<table schema>)
.parquet(*paths)`` (a tablet written before a column was added reads it as NULL), keeps only
the columns asked for, and adds the row id: ``_tablet_id`` (the file name without
``.parquet``) and ``_row_number`` (the row's position in the file: from the tablets' ``ROW_ID``
column where each has it, else ``_metadata.row_index``, which costs every row read).
(``read_frame``, the reads of queries, takes both from the tablets' own ``ROW_ID`` column
instead where it can: docs/FORMAT.md, "Row ids".)

``tablet_scan`` is the same scan; where the session's JVM has the tablets classes its tasks test
the deletion vectors themselves (``tablets.spark.vectors``: each task loads its tablets' vectors,
cached per executor; the plan holds one entry per tablet with a vector, nothing per row), and the
Arrow reader's tasks apply them as they read. Elsewhere (Spark Connect, no ``javac``) the words'
broadcast below is the fallback: left for later, the engine joins the target with a small
broadcast source first and applies them to the pairs only.

How deletion vectors are applied in the fallback (``bench/dv_strategies.py`` measures the
ways; its figures are in bench/RESULTS.md): (w) a broadcast left join on (file name, row index
>> 6) with the 64-bit words of the DVs that hold a deletion, then ``bit_get`` on the word (one
row per word instead of per deleted row); (a) a left anti join on (file name, row index) with a
broadcast DataFrame of the deleted rows; (b) per tablet ``NOT row_index IN (<the deleted rows>)``
(megabytes of expression text to parse and plan), the slowest by far.

(w) is used. For sparse deletes it has as many rows as (a), never more; dense deletes shrink it
up to 64 times. Ranges of live rows (c) were not tried further: 10% random deletes make ~9k
ranges per tablet, an expression as big as (b)'s. Rows of tablets without a deletion vector
just miss in the broadcast hash; a frame over tablets without any DV has no join at all.
The join keys use ``_metadata.file_name`` (no regex per row); ``_tablet_id`` is derived from it
only when row ids are asked for.

Where the tablets are read: Spark's native Parquet scan when its Hadoop file system knows the
table's scheme (local paths, ``hdfs://``, ``s3a://``/``gs://``/``abfss://`` on clusters with
those connectors; ``s3://`` is read as ``spark.tablets.hadoop.scheme.s3``, default ``s3a``);
otherwise the tablets' own Arrow reader (``tablets.storage``, through obstore) in Python tasks,
one task per tablet, chosen automatically with one log line per scheme and session. Both give
the same frame (columns, file name, row index), so deletion vectors and row ids work alike.
``spark.tablets.scan`` = ``native`` or ``arrow`` forces one of them.

Verification (docs/FORMAT.md, "Verification"): the Arrow reader verifies each tablet as
``tablets.storage`` does (size, footer tablet id, row count, page CRCs). The native scan checks
every tablet's size against the log on the driver before planning (``check_sizes``: a stat per
tablet on local disk; not a per-row ``_metadata.file_size`` test, which costs a map lookup per
row), and has parquet-mr verify page CRCs (``parquet.page.verify-checksum.enabled``, passed as a
scan option, which Spark copies into the reader's Hadoop configuration). It cannot see the
footer's tablet id: a file swapped for another tablet of exactly the same size passes there.

Tablet files are passed to Spark one by one; above
``spark.sql.sources.parallelPartitionDiscovery.threshold`` paths (default 32) Spark lists them
with a Spark job, seconds where listing them here takes a fraction of one: ``build_session``
raises the threshold.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import LongType, StringType, StructField, StructType

from tablets.exceptions import SchemaMismatch
from tablets.spark import vectors
from tablets.spark.backend import backend
from tablets.spark.columns import named, physical_struct
from tablets.spark.datasource import quote_ident, spark_ddl
from tablets.storage.dv import DVInfo, live_mask, positions_of, read_dv
from tablets.storage.fileio import basename, is_local, join, scheme_of
from tablets.storage.select import KeySet, select_rows
from tablets.storage.table import ROW_NUMBER, ROW_TABLET, TabletTable
from tablets.storage.tablet import (
    ROW_ID,
    ROW_ID_SHIFT,
    ROW_INDEX,
    TABLET_SUFFIX,
    check_sizes,
    has_row_ids,
    read_rows_at,
    read_tablet,
)
from tablets.storage.types import schema_to_arrow

if TYPE_CHECKING:
    from tablets.storage.actions import SetDV
    from tablets.storage.snapshot import Snapshot, TabletState

_FILE = "__tablets_file"
BY_VALUES = "__tablets_by_values"  # driver_rows: the row holds a source key (else a BY SOURCE row)
ROW_ID_COLUMNS = (_FILE, ROW_INDEX)  # a scan row's file name and row index
_WORD = "__tablets_word"
_BITS = "__tablets_bits"
_DEL_FILE = "__tablets_del_file"
_DEL_WORD = "__tablets_del_word"

SCAN_CONF = "spark.tablets.scan"  # auto | native | arrow
HADOOP_SCHEME_CONF = "spark.tablets.hadoop.scheme."  # + the URI's scheme
_HADOOP_DEFAULTS = {"s3": "s3a", "gcs": "gs", "az": "abfss", "azure": "abfss"}
# parquet-mr's page CRC check (off by default); the native scan's options reach its Hadoop conf
VERIFY_OPTIONS = {"parquet.page.verify-checksum.enabled": "true"}

logger = logging.getLogger("tablets")
_known: weakref.WeakKeyDictionary[object, dict[str, bool]] = weakref.WeakKeyDictionary()
_known_lock = threading.Lock()


def hadoop_location(spark: SparkSession, location: str) -> str:
    """``location`` as Spark's Hadoop file systems name it (``s3://`` -> ``s3a://`` by default)."""
    if is_local(location):
        return location
    scheme = scheme_of(location)
    mapped = spark.conf.get(HADOOP_SCHEME_CONF + scheme, None) or _HADOOP_DEFAULTS.get(scheme, scheme)
    return mapped + location[len(scheme) :]


def _hadoop_knows(spark: SparkSession, tablet: str) -> bool:
    """Whether Spark's Hadoop file system can read the tablet file ``tablet``: asked of the
    JVM in classic Spark; on Spark Connect, by reading the file's schema. Cached per scheme."""
    location = hadoop_location(spark, tablet)
    scheme = scheme_of(location)
    with _known_lock:
        seen = _known.setdefault(spark, {})
        if scheme in seen:
            return seen[scheme]
    ok = backend(spark).has_file_system(spark, scheme, location)
    with _known_lock:
        _known.setdefault(spark, {})[scheme] = ok
    if not ok:
        logger.warning(
            "tablets: Spark has no Hadoop file system for %s:// here, so tablets in %s:// are read by the "
            "tablets Arrow reader in Python tasks (install the connector, or map the scheme with %s, "
            "for Spark's native Parquet scan)",
            scheme,
            scheme_of(tablet),
            HADOOP_SCHEME_CONF + scheme_of(tablet),
        )
    return ok


def native_scan(spark: SparkSession, table: TabletTable, probe: str) -> bool:
    """Whether the engine reads ``table``'s tablets with Spark's native Parquet scan."""
    mode = (spark.conf.get(SCAN_CONF, None) or "auto").lower()
    if mode in ("native", "arrow"):
        return mode == "native"
    return is_local(table.root) or _hadoop_knows(spark, probe)


def _arrow_frame(
    spark: SparkSession, table: TabletTable, snapshot: Snapshot, states: Sequence[TabletState], cols: list[str]
) -> DataFrame:
    """The native scan's frame (``cols``, file name, row index), read by Python tasks through
    the tablets store: one task per tablet, which applies the tablet's deletion vector (read
    through the store's file IO there: nothing of it passes through the driver)."""

    out = scan_struct(snapshot, cols)
    out_arrow = to_arrow_schema(out, timezone="UTC")
    table_schema = schema_to_arrow(snapshot.metadata.schema)
    adds = {st.add.tablet_id: st.add for st in states}
    dvs = {st.add.tablet_id: st.dv for st in states if st.dv is not None}
    io, root, mapping = table.io, table.root, snapshot.metadata.mapping

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            for tid in b.column(0).to_pylist():
                add = adds[tid]
                data = read_tablet(io, root, add, None, table_schema, cols, mapping=mapping)
                data = data.append_column(_FILE, pa.array([basename(add.path)] * add.rows, pa.string()))
                data = data.append_column(ROW_INDEX, pa.array(np.arange(add.rows, dtype=np.int64)))
                dv = dvs.get(tid)
                if dv is not None:  # the task reads its tablet's deletion vector itself
                    bm = read_dv(io, join(root, dv.path), DVInfo(dv.size, dv.checksum, dv.cardinality))
                    data = data.filter(pa.array(live_mask(bm, add.rows)))
                yield from data.cast(out_arrow).to_batches(max_chunksize=1 << 16)

    ids = spark.createDataFrame(pa.table({"tablet": pa.array(list(adds), pa.string())}))
    return ids.repartition(len(adds)).mapInArrow(read, out)


def dv_positions(table: TabletTable, st: TabletState) -> np.ndarray:
    assert st.dv is not None
    bm = read_dv(table.io, join(table.root, st.dv.path), DVInfo(st.dv.size, st.dv.checksum, st.dv.cardinality))
    return positions_of(bm).astype(np.int64)


def tablet_file_name(st: TabletState) -> str:
    return basename(st.add.path)


def dv_words_frame(spark: SparkSession, table: TabletTable, states: Sequence[TabletState]) -> DataFrame:
    """(file name, word index, 64-bit word of deleted bits) for every word with a deletion."""
    files, words, bits = [], [], []
    for st in states:
        pos = dv_positions(table, st)
        w = pos >> 6
        uniq, start = np.unique(w, return_index=True)
        masks = np.left_shift(np.uint64(1), (pos & 63).astype(np.uint64))
        ored = np.bitwise_or.reduceat(masks, start) if len(pos) else masks
        files.append(pa.array([tablet_file_name(st)] * len(uniq), pa.string()))
        words.append(pa.array(uniq, pa.int64()))
        bits.append(pa.array(ored.view(np.int64), pa.int64()))
    data = pa.table(
        {
            _DEL_FILE: pa.concat_arrays(files),
            _DEL_WORD: pa.concat_arrays(words),
            _BITS: pa.concat_arrays(bits),
        }
    )
    return spark.createDataFrame(data)


def _apply_dvs(spark: SparkSession, df: DataFrame, table: TabletTable, with_dv: Sequence[TabletState]) -> DataFrame:
    if not with_dv:
        return df
    # words: one row per 64-bit word holding a deletion; a row is live unless its bit is set
    words = F.broadcast(dv_words_frame(spark, table, with_dv))
    cond = (F.col(_FILE) == F.col(_DEL_FILE)) & (F.shiftright(F.col(ROW_INDEX), 6) == F.col(_DEL_WORD))
    joined = df.join(words, cond, "left")
    live = F.col(_BITS).isNull() | (F.bit_get(F.col(_BITS), (F.col(ROW_INDEX) % 64).cast("int")) == 0)
    return joined.filter(live).drop(_DEL_FILE, _DEL_WORD, _BITS)


def empty_frame(
    spark: SparkSession, schema: Sequence[tuple[str, str, bool]], columns: Sequence[str], extra: Sequence[str] = ()
) -> DataFrame:
    """No rows, of ``columns`` (and the SQL expressions ``extra``): a SQL statement, whose empty
    local relation Spark's optimizer folds (an aggregate over it runs no scan); an empty
    ``createDataFrame`` is an RDD whose tasks start Python workers (a ``count(*)`` of it takes
    several times as long)."""
    types = {n: t for n, t, _ in schema}
    cols = [f"CAST(NULL AS {types[c]}) AS {quote_ident(c)}" for c in columns]
    return spark.sql(f"SELECT {', '.join([*cols, *extra])} WHERE false")


def local_relation(spark: SparkSession, data: pa.Table, schema: StructType | None = None) -> DataFrame:
    """``data`` as a Spark local relation. PySpark 4.3's ``createDataFrame`` of an Arrow table
    keeps only the record batches before the first empty one: those are left out first."""
    if any(b.num_rows == 0 for b in data.to_batches()):
        data = pa.Table.from_batches([b for b in data.to_batches() if b.num_rows], schema=data.schema)
    return spark.createDataFrame(data, schema=schema)  # type: ignore[arg-type]  # (None: the data's own)


_NO_ROW_IDS = (f"'' AS {_FILE}", f"CAST(0 AS BIGINT) AS {ROW_INDEX}")  # an empty scan's file and row columns


@dataclass(frozen=True)
class TabletScan:
    """The rows of some tablets, deletion vectors NOT yet applied, with the file name and row index
    of every row. The engine joins first and calls ``live`` on the (much smaller) join result:
    deleted rows drop out and row ids appear only for the rows that pair with the source."""

    spark: SparkSession
    table: TabletTable
    frame: DataFrame  # columns + __tablets_file, __tablets_row
    columns: tuple[str, ...]
    with_dv: tuple[TabletState, ...]

    def live_sql(self, register: Callable[[DataFrame], str], alias: str) -> tuple[str, str]:
        """The deletion vectors in a SQL query over this scan's rows (named ``alias``, quoted):
        a join clause to append after the FROM item and the condition that keeps the live rows
        (both empty without deletion vectors). ``register`` names a DataFrame as a temp view."""
        if not self.with_dv:
            return "", ""
        words = register(F.broadcast(dv_words_frame(self.spark, self.table, self.with_dv)))
        w = "__tablets_w"
        join = (
            f" LEFT OUTER JOIN {words} AS {w} ON {alias}.{_FILE} = {w}.{_DEL_FILE}"
            f" AND shiftright({alias}.{ROW_INDEX}, 6) = {w}.{_DEL_WORD}"
        )
        return join, f"({w}.{_BITS} IS NULL OR bit_get({w}.{_BITS}, CAST({alias}.{ROW_INDEX} % 64 AS INT)) = 0)"

    @staticmethod
    def row_id_sql(alias: str) -> tuple[str, str]:
        """SQL of the row id (tablet id, row number) of a scan row named ``alias`` (quoted)."""
        return f"substring({alias}.{_FILE}, 1, length({alias}.{_FILE}) - {len(TABLET_SUFFIX)})", f"{alias}.{ROW_INDEX}"

    @staticmethod
    def row_ids(rows: pa.Table) -> tuple[pa.Array, pa.Array]:
        """``row_id_sql`` in Arrow: the tablet ids and row numbers of scan rows held here."""
        return pc.utf8_slice_codeunits(rows.column(_FILE), 0, -len(TABLET_SUFFIX)), rows.column(ROW_INDEX)

    @property
    def internal_columns(self) -> tuple[str, str]:
        """The scan frame's file name and row index columns."""
        return ROW_ID_COLUMNS

    def live(self, df: DataFrame, *, row_ids: bool = True, project: bool = True, deletes: bool = True) -> DataFrame:
        """``df`` (this scan's frame, or a join of it) without the deleted rows; with ``row_ids``,
        ``_tablet_id`` and ``_row_number`` replace the file name and row index. ``project``
        keeps only the scan's columns (and row ids), else every column of ``df``. ``deletes=False``
        skips the deletion vectors (rows known to come from no tablet)."""
        if deletes:
            df = _apply_dvs(self.spark, df, self.table, self.with_dv)
        tablet = F.expr(f"substring({_FILE}, 1, length({_FILE}) - {len(TABLET_SUFFIX)})")  # id + suffix
        if project:
            ids = [tablet.alias(ROW_TABLET), F.col(ROW_INDEX).alias(ROW_NUMBER)] if row_ids else []
            return df.select(*[F.col(quote_ident(c)) for c in self.columns], *ids)
        if not row_ids:
            return df.drop(_FILE, ROW_INDEX)
        return df.withColumn(ROW_TABLET, tablet).withColumnRenamed(ROW_INDEX, ROW_NUMBER).drop(_FILE)


def tablet_scan(
    spark: SparkSession,
    table: TabletTable,
    snapshot: Snapshot,
    columns: Sequence[str] | None = None,
    *,
    tablet_ids: Sequence[str] | None = None,
    row_ids: bool = True,
) -> TabletScan:
    """A scan of the live tablets ``tablet_ids`` (default all) of ``snapshot``: ``columns``
    (default all) read by Spark's Parquet reader, deletion vectors left for ``TabletScan.live``.
    The file name and row index are read when deletion vectors or ``row_ids`` need them."""
    ddl = spark_ddl(snapshot.metadata.schema)
    struct = StructType.fromDDL(ddl)
    assert isinstance(struct, StructType)
    names = list(snapshot.metadata.column_names)
    cols = names if columns is None else list(columns)
    missing = [c for c in cols if c not in names]
    if missing:
        raise SchemaMismatch(f"columns {missing} are not in the table {table.root} (columns {names})")
    ids = list(snapshot.tablets) if tablet_ids is None else list(tablet_ids)
    states = [snapshot.tablets[t] for t in ids]
    states = [st for st in states if st.live_rows > 0]
    if not states:
        frame = empty_frame(spark, snapshot.metadata.schema, cols, _NO_ROW_IDS)
        return TabletScan(spark, table, frame, tuple(cols), ())
    with_dv = tuple(st for st in states if st.dv is not None)
    paths = [table.tablet_path(st) for st in states]
    if not native_scan(spark, table, paths[0]):
        frame = _arrow_frame(spark, table, snapshot, states, cols)  # deletion vectors applied in its tasks
        return TabletScan(spark, table, frame, tuple(cols), ())
    check_sizes(table.io, table.root, [st.add for st in states])  # a swapped or cut file: FormatError here
    mapping = snapshot.metadata.mapping  # the tablets' columns by physical name, named here
    read = physical_struct(struct, mapping)
    # the row number from the tablets' own row ids where each has them: Spark's
    # `_metadata.row_index` costs every row read (its file name, a constant per file, does not)
    stored = (with_dv or row_ids) and all(has_row_ids(st.add) for st in states)
    if stored:
        read = StructType([*read.fields, StructField(ROW_ID, LongType())])
    df = spark.read.schema(read).options(**VERIFY_OPTIONS).parquet(*[hadoop_location(spark, p) for p in paths])
    keep = [named(c, mapping) for c in cols]
    if with_dv or row_ids:
        row = F.col(ROW_ID).bitwiseAND(F.lit((1 << ROW_ID_SHIFT) - 1)) if stored else F.col("_metadata.row_index")
        keep += [F.col("_metadata.file_name").alias(_FILE), row.alias(ROW_INDEX)]
    frame = df.select(*keep)
    if with_dv and vectors.on_executors(spark):  # tested in the scan's tasks: nothing left for ``live``
        by_name: list[tuple[str | int, str, SetDV]] = [
            (tablet_file_name(st), hadoop_location(spark, join(table.root, st.dv.path)), st.dv)
            for st in with_dv
            if st.dv is not None
        ]
        frame = frame.filter(vectors.live(spark, F.col(_FILE), F.col(ROW_INDEX), by_name))
        if not row_ids:
            frame = frame.drop(_FILE, ROW_INDEX)
        return TabletScan(spark, table, frame, tuple(cols), ())
    return TabletScan(spark, table, frame, tuple(cols), with_dv)


def driver_rows(
    table: TabletTable,
    snapshot: Snapshot,
    columns: Sequence[str],
    tablet_ids: Sequence[str],
    values: Mapping[str, pa.Array],
    max_rows: int,
    others: Callable[[pa.Table], pa.Array] | None = None,
    other_columns: Sequence[str] = (),
    max_others: int = 0,
    *,
    skip_by_stats: bool = True,
) -> pa.Table | None:
    """The live rows of the tablets ``tablet_ids`` whose key columns hold the source's values
    (``values``: column -> values; ``tablets.storage.select.select_rows``), read on the driver:
    ``columns`` plus the file name and row index, as ``tablet_scan``'s frame has them (the
    deletion vectors already applied). For a statement whose source is small and whose target
    is small enough to read here: it spares the Spark job that streams every target row through
    the join. None when more than ``max_rows`` rows are selected (the statement scans in Spark).

    With ``others`` (a BY SOURCE clause's rows): also the other live rows ``others`` holds for
    (over ``other_columns``), at most ``max_others``, and the column ``BY_VALUES`` (which rows
    the values selected). ``skip_by_stats`` False: no row group is skipped by its statistics."""

    sets = {c: KeySet(v) for c, v in values.items()}  # built once, shared by the tablets' threads
    cols = list(columns)
    arrow_schema = schema_to_arrow(snapshot.metadata.schema)
    states = [snapshot.tablets[t] for t in tablet_ids if snapshot.tablets[t].live_rows]

    # tablets read side by side: Arrow decodes without the GIL (10M rows, 16 tablets, 2 cores:
    # 1.0 -> 0.6 s); fewer tablets than cores share out their row groups (one 1M-row tablet:
    # 0.10 -> 0.05 s)
    workers = max(1, os.cpu_count() or 1)
    split = max(1, workers // max(1, len(states)))
    units = [(st, (i, split)) for st in states for i in range(split)]

    def select(unit: tuple[TabletState, tuple[int, int]]):
        st, part = unit
        return select_rows(
            table.io,
            table.root,
            st.add,
            st.dv,
            arrow_schema,
            cols,
            sets,
            others,
            other_columns,
            part,
            mapping=snapshot.metadata.mapping,
            skip_by_stats=skip_by_stats,
        )

    parts, n, m = [], 0, 0
    with ThreadPoolExecutor(max_workers=max(1, min(len(units), workers))) as pool:
        for (st, _), (rows, positions, by_values) in zip(units, pool.map(select, units), strict=True):
            paired = int(pc.sum(by_values).as_py() or 0)
            n, m = n + paired, m + rows.num_rows - paired
            if n > max_rows or m > max_others:
                return None
            rows = rows.append_column(_FILE, pa.array([tablet_file_name(st)] * rows.num_rows, pa.string()))
            rows = rows.append_column(ROW_INDEX, positions)
            parts.append(rows.append_column(BY_VALUES, by_values) if others is not None else rows)
    if not parts:
        fields = [arrow_schema.field(c) for c in cols] + [pa.field(_FILE, pa.string()), pa.field(ROW_INDEX, pa.int64())]
        return pa.schema(fields + ([pa.field(BY_VALUES, pa.bool_())] if others is not None else [])).empty_table()
    return pa.concat_tables(parts)


def driver_values(table: TabletTable, snapshot: Snapshot, columns: Sequence[str], rows: pa.Table) -> pa.Table:
    """``columns`` of rows ``driver_rows`` selected (named by their file name and row index), in
    their order: columns it left out, read for just these rows, each tablet's in a thread."""
    arrow_schema = schema_to_arrow(snapshot.metadata.schema)
    files = rows.column(_FILE).combine_chunks().dictionary_encode()
    by_name = {tablet_file_name(st): st.add for st in snapshot.tablets.values()}
    return read_rows_at(
        table.io,
        table.root,
        [by_name[f] for f in files.dictionary.to_pylist()],
        files.indices.to_numpy(zero_copy_only=False),
        rows.column(ROW_INDEX).to_numpy(),
        arrow_schema,
        list(columns),
        snapshot.metadata.mapping,
        threads=os.cpu_count() or 1,
    )


def scan_struct(snapshot: Snapshot, columns: Sequence[str]) -> StructType:
    """The Spark type of ``tablet_scan``'s (and ``driver_rows``') rows: ``columns``, file name, row index."""
    struct = StructType.fromDDL(spark_ddl(snapshot.metadata.schema))
    assert isinstance(struct, StructType)
    by_name = {f.name: f for f in struct.fields}
    return StructType(
        [by_name[c] for c in columns]
        + [StructField(_FILE, StringType(), False), StructField(ROW_INDEX, LongType(), False)]
    )


def driver_scan(
    spark: SparkSession, table: TabletTable, snapshot: Snapshot, columns: Sequence[str], rows: pa.Table
) -> TabletScan:
    """A ``TabletScan`` of ``driver_rows``' rows: a local relation, no deletion vector left to apply."""
    struct = scan_struct(snapshot, columns)
    frame = (
        local_relation(spark, rows, struct)
        if rows.num_rows
        else empty_frame(spark, snapshot.metadata.schema, columns, _NO_ROW_IDS)
    )
    return TabletScan(spark, table, frame, tuple(columns), ())


def snapshot_frame(
    spark: SparkSession,
    table: TabletTable,
    snapshot: Snapshot,
    columns: Sequence[str] | None = None,
    *,
    tablet_ids: Sequence[str] | None = None,
    row_ids: bool = True,
) -> DataFrame:
    """The live rows of ``snapshot`` (of the tablets ``tablet_ids``, default all): ``columns``
    (default all) plus, with ``row_ids``, ``_tablet_id`` and ``_row_number``."""
    scan = tablet_scan(spark, table, snapshot, columns, tablet_ids=tablet_ids, row_ids=row_ids)
    return scan.live(scan.frame, row_ids=row_ids)
