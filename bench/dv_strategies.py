"""How the engine's scan applies deletion vectors, against the two alternatives it was chosen over
(the table in ``tablets.spark.frames``' docstring):

    .venv/bin/python bench/dv_strategies.py --rows 1000000 --tablets 10 --deleted 0.1 --rounds 5

``executors``: the engine's own (``tablets.spark.vectors``: tested in the scan's tasks); (w)
``words``: its fallback (``frames._apply_dvs``); (a) ``anti``: a left anti join with a
broadcast frame of every deleted row; (b) ``isin``: ``NOT row_index IN (...)`` per tablet; and
``none``: no deletion vector applied (the reference). The alternatives live here only: the scan
runs each by patching ``frames._apply_dvs`` for the round.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from tablets.spark import frames, vectors
from tablets.spark.session import build_session
from tablets.storage import TabletTable
from tablets.storage.sink import RowLevelSink
from tablets.storage.snapshot import TabletState
from tablets.storage.tablet import ROW_NUMBER


def _deleted_rows_frame(spark: SparkSession, table: TabletTable, states: Sequence[TabletState]) -> DataFrame:
    files, rows = [], []
    for st in states:
        pos = frames.dv_positions(table, st)
        files.append(pa.array([frames.tablet_file_name(st)] * len(pos), pa.string()))
        rows.append(pa.array(pos, pa.int64()))
    data = pa.table({frames._DEL_FILE: pa.concat_arrays(files), frames._DEL_WORD: pa.concat_arrays(rows)})
    return spark.createDataFrame(data)


def anti(spark: SparkSession, df: DataFrame, table: TabletTable, with_dv: Sequence[TabletState]) -> DataFrame:
    """(a) a left anti join on (file name, row index) with a broadcast frame of the deleted rows."""
    if not with_dv:
        return df
    dels = F.broadcast(_deleted_rows_frame(spark, table, with_dv))
    cond = (F.col(frames._FILE) == F.col(frames._DEL_FILE)) & (F.col(frames._ROW) == F.col(frames._DEL_WORD))
    return df.join(dels, cond, "left_anti")


def isin(spark: SparkSession, df: DataFrame, table: TabletTable, with_dv: Sequence[TabletState]) -> DataFrame:
    """(b) per tablet ``NOT row_index IN (<the deleted rows>)``."""
    if not with_dv:
        return df
    cases = F.lit(True)
    for st in with_dv:
        inlist = ",".join(map(str, frames.dv_positions(table, st).tolist()))
        this = F.col(frames._FILE) == frames.tablet_file_name(st)
        cases = F.when(this, F.expr(f"NOT {frames._ROW} IN ({inlist})")).otherwise(cases)
    return df.filter(cases)


def main(rows: int, tablets: int, deleted: float, rounds: int) -> None:
    base = tempfile.mkdtemp(prefix="tablets-bench-")
    spark = build_session(os.path.join(base, "warehouse"), master="local[2]", hive=False)
    schema = pa.schema([("id", pa.int64()), ("v", pa.string()), ("x", pa.float64())])
    t = TabletTable.create(os.path.join(base, "t"), schema)
    per = rows // tablets
    for i in range(tablets):
        ids = np.arange(i * per, (i + 1) * per)
        t.append(pa.table({"id": ids, "v": pa.array(ids.astype(str)), "x": ids * 0.5}))
    rng = np.random.default_rng(1)
    h = t.begin_delete()
    sink = RowLevelSink(h)
    for tid, st in t.snapshot().tablets.items():
        pos = rng.choice(st.add.rows, int(st.add.rows * deleted), replace=False)
        sink.delete([tid] * len(pos), pos)
    t.finish(h, sink.finish())
    snap = t.snapshot()
    words = frames._apply_dvs
    times: dict[str, list[float]] = {}
    try:
        for _ in range(rounds):
            strategies = (("executors", words), ("words", words), ("anti", anti), ("isin", isin), ("none", None))
            for strategy, apply in strategies:
                # the scan's tasks test the vectors unless told not to: then _apply_dvs does
                spark.conf.set(vectors.EXECUTORS_CONF, str(strategy == "executors").lower())
                frames._apply_dvs = apply or words
                start = time.perf_counter()
                if apply is None:
                    df = spark.read.parquet(*[t.tablet_path(st) for st in snap.tablets.values()])
                    df = df.select("id", "v", "x", F.col("_metadata.row_index").alias(ROW_NUMBER))
                else:
                    df = frames.snapshot_frame(spark, t, snap)
                n = df.agg(F.count("*"), F.sum("id"), F.max("v"), F.sum("x"), F.sum(ROW_NUMBER)).collect()[0][0]
                assert n == (rows if apply is None else snap.live_rows), (strategy, n)
                times.setdefault(strategy, []).append(time.perf_counter() - start)
    finally:
        frames._apply_dvs = words
    for strategy, ts in times.items():
        print(f"{strategy:6s} median={sorted(ts)[len(ts) // 2]:.2f}s all={[round(x, 2) for x in ts]}")
    spark.stop()
    shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--tablets", type=int, default=10)
    parser.add_argument("--deleted", type=float, default=0.1)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    main(args.rows, args.tablets, args.deleted, args.rounds)
