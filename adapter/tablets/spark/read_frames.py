"""Reads of a whole tablet table for a query (not the engine's scan, ``frames``): which live tablets
a query's conditions leave to read (``tablets_to_read``), and Spark's Parquet scan of them with the
deletion vectors applied as one array literal (``read_frame``, ``read_view``). Used by the front
door's reads (``tablets.reads``) and by the native-read planner (``tablets.spark.native``).
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType

from tablets.settings import conf_flag
from tablets.spark import vectors
from tablets.spark.columns import named_columns, physical_struct
from tablets.spark.datasource import quote_ident, spark_ddl
from tablets.storage.table import TabletTable
from tablets.storage.tablet import (
    ROW_ID,
    ROW_ID_SHIFT,
    check_sizes,
    has_row_ids,
    row_id_tag,
)

if TYPE_CHECKING:
    from tablets.storage.columns import ColumnMapping
    from tablets.storage.snapshot import Snapshot, TabletState
from tablets.spark.frames import (
    VERIFY_OPTIONS,
    dv_positions,
    empty_frame,
    hadoop_location,
    native_scan,
    tablet_file_name,
    tablet_scan,
)
from tablets.spec.conditions import Cond, typed
from tablets.storage import pruning
from tablets.storage.fileio import join
from tablets.storage.types import schema_to_arrow

logger = logging.getLogger("tablets")

READ_NATIVE_CONF = "spark.tablets.read.native"  # false: queries read through the Python source


def reads_natively(spark: SparkSession) -> bool:
    """Whether queries (the front door's, and plain Spark SQL's through ``tablets.spark.native``)
    read tablet tables with ``read_frame`` (``READ_NATIVE_CONF``)."""
    return conf_flag(spark, READ_NATIVE_CONF)


# deletion vectors as one array literal of 64-bit words are planned into every stage that reads
# them: above this many words (8 MB, 32M rows with deletions) they are joined as in the engine
READ_LITERAL_WORDS = 1 << 20


def _dense_words(table: TabletTable, st: TabletState) -> np.ndarray:
    """The tablet's deletion vector as 64-bit words up to its last deleted row (bit r of word w:
    row 64w + r is deleted)."""
    pos = dv_positions(table, st)
    words = np.zeros(int(pos.max() >> 6) + 1 if len(pos) else 0, dtype=np.uint64)
    np.bitwise_or.at(words, pos >> 6, np.left_shift(np.uint64(1), (pos & 63).astype(np.uint64)))
    return words.view(np.int64)


def read_view(
    spark: SparkSession,
    name: str,
    table: TabletTable,
    snapshot: Snapshot,
    tablet_ids: Sequence[str] | None = None,
    where: Sequence[str] = (),
) -> bool:
    """Temporary view ``name`` of ``read_frame``'s rows; False (no view) where the native scan
    cannot read the table (the Python source then)."""
    frame = read_frame(spark, table, snapshot, tablet_ids, where)
    if frame is None:
        return False
    frame.createOrReplaceTempView(name)
    return True


def read_frame(
    spark: SparkSession,
    table: TabletTable,
    snapshot: Snapshot,
    tablet_ids: Sequence[str] | None = None,
    where: Sequence[str] = (),
) -> DataFrame | None:
    """The live rows of ``snapshot`` (of ``tablet_ids``, default all), every column, for a
    query: Spark's Parquet scan, so Spark reads only the columns the query uses and skips row
    groups by its filters. None where the native scan cannot read the table (the Python source
    then). ``where``: conditions (Spark SQL on the table's
    non-float columns) the query keeps only rows that meet; they are tested before the deletion
    vectors, which Spark would otherwise test first on every row (it puts a view's own filter
    before the query's). Each DataFrame call is an analysis in the JVM (~5-15 ms here): strings,
    not Columns, and as few calls as the view needs.

    Unlike ``snapshot_frame`` (the engine's, which needs row ids), a scan of tablets without
    deletion vectors has no metadata columns at all, and deletion vectors of up to
    ``READ_LITERAL_WORDS`` words are applied without a join: one array literal of the words of
    every such tablet (one block of bytes, ``long_array``), each row testing its bit
    ``words[offset(tablet) + row / 64]``, where ``offset(tablet)`` is a CASE over the tablets
    with deletions (NULL, so live, for the others and for rows past a tablet's last deleted row).
    The row and its tablet come from the tablets' ``ROW_ID`` column; tablets written before it
    (or two of one tag) take Spark's ``_metadata.row_index`` and tell the files apart by their
    sizes, which costs ~15 ns more per row read (any ``_metadata`` column does: 3M rows, a
    selective query, 184-192 ms against 242 ms). All tablets are one scan: Spark packs them into as few tasks as
    for a plain table (a union of two scans made 3x the tasks and cost more than the CASE on
    every row). Each tablet's size is checked against the log first (``check_sizes``); the frame itself is
    kept for the next query of the same tablets (``_READ_FRAMES``)."""
    ids = list(snapshot.tablets) if tablet_ids is None else list(tablet_ids)
    states = [st for st in (snapshot.tablets[t] for t in ids) if st.live_rows > 0]
    if not states:
        return empty_frame(spark, snapshot.metadata.schema, list(snapshot.metadata.column_names))
    if not native_scan(spark, table, table.tablet_path(states[0])):
        return None
    check_sizes(table.io, table.root, [st.add for st in states])  # a swapped or cut file: FormatError here
    # the table id too: a shallow clone dropped and made again at one root has the same
    # version and tablets (its source's), other vectors
    key = (
        spark,
        table.root,
        snapshot.metadata.table_id,
        snapshot.version,
        tuple(st.tablet_id for st in states),
        vectors.on_executors(spark),
    )
    with _frames_lock:
        parts = _READ_FRAMES.pop(key, None)
        if parts is not None:
            _READ_FRAMES[key] = parts  # most recently used last
    if parts is None:
        parts = _read_frame(spark, table, snapshot, states)
        with _frames_lock:
            _READ_FRAMES[key] = parts
            while len(_READ_FRAMES) > READ_FRAMES_KEPT:
                _READ_FRAMES.pop(next(iter(_READ_FRAMES)))
    return parts.frame if parts.scan is None or not where else _live(parts.scan, parts.struct, where)


def _no_float_pushdown(df: DataFrame, struct: StructType) -> DataFrame:
    """``df`` with its float and double columns as ``nanvl(c, c)`` (the same values): a filter
    on them is then not pushed into the Parquet reader, whose row-group skipping by min/max
    misses NaN (Parquet statistics leave NaN out; SQL orders NaN above every number), so
    ``WHERE x > 49`` would lose the NaN rows of a row group whose max is below 49."""
    if not any(f.dataType.typeName() in ("float", "double") for f in struct.fields):
        return df
    return df.selectExpr(*_no_float_columns(struct))  # (strings: one JVM call, where Columns take three a column)


def _no_float_columns(struct: StructType) -> list[str]:
    floats = {f.name for f in struct.fields if f.dataType.typeName() in ("float", "double")}
    return [
        f"nanvl({quote_ident(n)}, {quote_ident(n)}) AS {quote_ident(n)}" if n in floats else quote_ident(n)
        for n in struct.names
    ]


_LIVE = "__tablets_live"


@dataclass(frozen=True)
class _ReadParts:
    frame: DataFrame  # the live rows
    struct: StructType
    scan: DataFrame | None = None  # the tablets' rows with the deletion vectors' test as _LIVE


def _live(scan: DataFrame, struct: StructType, where: Sequence[str] = ()) -> DataFrame:
    """The live rows of ``scan`` (the tablets' rows with column _LIVE) that meet ``where``,
    tested before _LIVE, with the floats as ``nanvl``. Strings: one JVM analysis a call."""
    return scan.filter(" AND ".join([*(f"({w})" for w in where), quote_ident(_LIVE)])).selectExpr(
        *_no_float_columns(struct)
    )


READ_FRAMES_KEPT = 16
_frames_lock = threading.Lock()
_READ_FRAMES: dict[tuple, _ReadParts] = {}


def long_array(spark: SparkSession, values: np.ndarray) -> Column:
    """An ``array<bigint>`` literal of ``values``, held by Spark as one block of bytes
    (``UnsafeArrayData``) made here in its layout: 8 bytes of element count, a null bitmap word
    per 64 elements, then the values. Every task of a query deserializes its plan's literals, and
    the array Spark makes itself (a folded ``cast(split(text) AS array<bigint>)``, or
    ``Literal.create``) holds one boxed Long an element: 23k words cost a query ~60 ms, 200k
    ~600 ms, against ~35 and ~70 ms this way (bench/read_profile.py's table). Classic sessions
    only (the JVM's catalyst classes through py4j); elsewhere, or where a Spark version lacks
    them, the folded text."""
    n = len(values)
    try:
        jvm: Any = spark._jvm  # noqa: SLF001
        exprs = jvm.org.apache.spark.sql.catalyst.expressions
        data = np.concatenate([np.array([n], np.int64), np.zeros((n + 63) // 64, np.int64), values.astype(np.int64)])
        block = exprs.UnsafeArrayData()
        block.pointTo(bytearray(data.tobytes()), jvm.org.apache.spark.unsafe.Platform.BYTE_ARRAY_OFFSET, data.nbytes)
        literal = exprs.Literal(block, jvm.org.apache.spark.sql.types.DataType.fromDDL("array<bigint>"))
        return Column(jvm.org.apache.spark.sql.classic.ExpressionUtils.column(literal))
    except Exception:  # py4j: no such class or method in this Spark
        logger.debug(
            "tablets: no UnsafeArrayData literal in this Spark; the deletion vectors' words as folded text",
            exc_info=True,
        )
    return F.split(F.lit(",".join(map(str, values.tolist()))), ",").cast("array<bigint>")


def _read_frame(
    spark: SparkSession, table: TabletTable, snapshot: Snapshot, states: Sequence[TabletState]
) -> _ReadParts:
    struct = StructType.fromDDL(spark_ddl(snapshot.metadata.schema))
    assert isinstance(struct, StructType)
    located = [hadoop_location(spark, table.tablet_path(st)) for st in states]
    with_dv = [st for st in states if st.dv is not None]
    mapping = snapshot.metadata.mapping  # the scan reads physical names (tablets.spark.columns)

    def parquet(schema: StructType) -> DataFrame:
        return spark.read.schema(physical_struct(schema, mapping)).options(**VERIFY_OPTIONS).parquet(*located)

    if not with_dv:
        scan = parquet(struct)
        return _ReadParts(
            _no_float_pushdown(scan if mapping.identity else scan.select(*named_columns(struct, mapping)), struct),
            struct,
        )
    if vectors.on_executors(spark):
        return _read_frame_tested(spark, table, states, with_dv, struct, mapping, parquet)
    words = [_dense_words(table, st) for st in with_dv]
    if sum(len(w) for w in words) > READ_LITERAL_WORDS:
        scanned = tablet_scan(spark, table, snapshot, tablet_ids=[st.tablet_id for st in states], row_ids=False)
        return _ReadParts(_no_float_pushdown(scanned.live(scanned.frame, row_ids=False), struct), struct)
    this: Callable[[TabletState], Column]
    if _stored_row_ids(states):
        # the tablets' own row id column: no `_metadata` column, which costs every row read
        scan = parquet(StructType([*struct.fields, StructField(ROW_ID, LongType())]))
        row = F.col(ROW_ID).bitwiseAND(F.lit((1 << ROW_ID_SHIFT) - 1))
        tag = F.shiftright(F.col(ROW_ID), ROW_ID_SHIFT)

        def this(st: TabletState) -> Column:
            return tag == F.lit(row_id_tag(st.tablet_id))
    else:
        scan = parquet(struct)
        name, size, row = F.col("_metadata.file_name"), F.col("_metadata.file_size"), F.col("_metadata.row_index")
        sizes = Counter(st.add.bytes for st in states)

        def this(st: TabletState) -> Column:
            # by the file's size (a long; check_sizes held every file to the log's), not by its
            # name (~50 bytes compared a row per tablet with deletions); the name too where two
            # tablets of the scan are of one size
            same = size == F.lit(st.add.bytes)
            return same if sizes[st.add.bytes] == 1 else same & (name == tablet_file_name(st))

    # a tablet's words end at its last deleted row: a later row's word index must not run on
    # into the next tablet's words (NULL: live)
    at = F.shiftright(row, 6)
    offset = None
    start = 0
    for st, w in zip(with_dv, words, strict=True):
        hit = this(st) & (at < F.lit(len(w)))
        offset = F.when(hit, F.lit(start)) if offset is None else offset.when(hit, F.lit(start))
        start += len(w)
    assert offset is not None
    word = F.try_element_at(long_array(spark, np.concatenate(words)), (offset + at + 1).cast("int"))
    live = F.coalesce(F.bit_get(word, (row % 64).cast("int")), F.lit(0)) == 0
    scan = scan.select(*named_columns(struct, mapping), live.alias(_LIVE))
    return _ReadParts(_live(scan, struct), struct, scan)


def _read_frame_tested(
    spark: SparkSession,
    table: TabletTable,
    states: Sequence[TabletState],
    with_dv: Sequence[TabletState],
    struct: StructType,
    mapping: ColumnMapping,
    parquet: Callable[[StructType], DataFrame],
) -> _ReadParts:
    """``_read_frame`` with the deletion vectors tested in the scan's tasks (``tablets.spark.vectors``):
    the tablet of a row by its stored row ids' tag where every tablet has them, else by
    ``_metadata.file_name``."""

    if _stored_row_ids(states):
        scan = parquet(StructType([*struct.fields, StructField(ROW_ID, LongType())]))
        key = F.shiftright(F.col(ROW_ID), ROW_ID_SHIFT)
        row = F.col(ROW_ID).bitwiseAND(F.lit((1 << ROW_ID_SHIFT) - 1))
        keys: list[str | int] = [row_id_tag(st.tablet_id) for st in with_dv]
    else:
        scan = parquet(struct)
        key, row = F.col("_metadata.file_name"), F.col("_metadata.row_index")
        keys = [tablet_file_name(st) for st in with_dv]
    where = [hadoop_location(spark, join(table.root, st.dv.path)) for st in with_dv]  # type: ignore[union-attr]
    live = vectors.live(spark, key, row, [(k, w, st.dv) for k, w, st in zip(keys, where, with_dv, strict=True)])  # type: ignore[misc]
    scan = scan.select(*named_columns(struct, mapping), live.alias(_LIVE))
    return _ReadParts(_live(scan, struct), struct, scan)


def _stored_row_ids(states: Sequence[TabletState]) -> bool:
    """Every tablet of the scan holds the ``ROW_ID`` column, and their tags tell them apart
    (31-bit tags: two alike among 10k tablets about once in 40 scans; those read by ``_metadata``)."""
    return all(has_row_ids(st.add) for st in states) and len({row_id_tag(st.tablet_id) for st in states}) == len(states)


def tablets_to_read(snap: Snapshot, conds: Sequence[Cond]) -> tuple[list[str], int, list[str]]:
    """The live tablets to read, how many the query's conditions on the table ruled out, and the
    conjuncts (``Cond.sql``) that may filter the rows before the deletion vectors are tested.
    Those rows include deleted ones, so only conjuncts that cannot fail on any value: ``typed``
    ones, whose literal compares with the column without casting the column's values (ANSI
    Spark casting a string column to a number raises on 'abc'), and never on a float (no
    ``kind_of``: the view reads floats as ``nanvl(c, c)`` so that Spark does not skip row groups
    holding NaN by their min/max)."""
    schema = schema_to_arrow(snap.metadata.schema)
    kinds, names = pruning.column_kinds(schema)
    typed_conds = [(c, typed([c], kinds, names)) for c in conds]
    preds = [p for _, ps in typed_conds for p in ps]
    early = [c.sql for c, ps in typed_conds if ps and c.sql]
    keep, pruned = [], 0
    for tid, st in snap.tablets.items():
        if st.live_rows <= 0:
            continue
        if preds and pruning.prune(preds, snap.named_stats(tid), kinds):
            pruned += 1
            continue
        keep.append(tid)
    return keep, pruned, early
