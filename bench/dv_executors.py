"""Deletion vectors tested in the scan's tasks against their words' broadcast (issue #28 item 1).

A tablet table of N rows (``bench/data.py``'s target, cached: one tablet per Parquet file, 40
of 250k rows at 10M), 10% of every tablet's rows deleted at random; then, in one session: what
the driver builds for a scan of every tablet (the words' Arrow table and its Python peak, or the
plan's entries), and a full scan (count and sum of ``v``) both ways, median of ``--runs``
alternating.

    .venv/bin/python bench/dv_executors.py --rows 10000000 --data /tmp/tablets-bench/data/10000000/target
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import tempfile
import time
import tracemalloc

import numpy as np
import pyarrow.parquet as pq


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--data", required=True, help="a directory of the target's Parquet files")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--fraction", type=float, default=0.1)
    args = ap.parse_args()

    import tablets
    from tablets.spark import vectors
    from tablets.spark.frames import dv_words_frame, snapshot_frame
    from tablets.spark.session import build_session
    from tablets.storage import RowLevelSink

    base = tempfile.mkdtemp(prefix="dv-executors-")
    spark = build_session(os.path.join(base, "wh"), master="local[2]")
    db = tablets.connect(spark=spark)
    db.sql("CREATE DATABASE IF NOT EXISTS b")
    files = sorted(glob.glob(os.path.join(args.data, "*.parquet")))
    schema = pq.read_schema(files[0])
    spark_types = {"int64": "BIGINT", "int32": "INT", "double": "DOUBLE", "date32[day]": "DATE"}
    cols = ", ".join(f"{f.name} {spark_types.get(str(f.type), 'STRING')}" for f in schema)
    db.sql(f"CREATE TABLE b.t ({cols}) USING tablets")
    t = db.table_of("b.t")
    t0 = time.perf_counter()
    n = 0
    for f in files:
        data = pq.read_table(f)
        t.append(data)
        n += data.num_rows
        if n >= args.rows:
            break
    load = time.perf_counter() - t0
    snap = t.snapshot()
    rng = np.random.default_rng(28)
    h = t.begin_delete()
    sink = RowLevelSink(h)
    for tid, st in snap.tablets.items():
        rows = rng.choice(st.add.rows, int(st.add.rows * args.fraction), replace=False)
        sink.delete(np.full(len(rows), tid, dtype=object), rows)
    t.finish(h, sink.finish())
    snap = t.snapshot()
    with_dv = [st for st in snap.tablets.values() if st.dv is not None]
    print(f"rows {n}, tablets {len(snap.tablets)}, with a DV {len(with_dv)}, load {load:.1f} s")

    tracemalloc.start()
    t0 = time.perf_counter()
    words = dv_words_frame(spark, t, with_dv)
    built = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    n_words = words.count()
    print(f"broadcast (before): {n_words} words, built in {built:.2f} s, Python peak {peak / 2**20:.1f} MiB")
    from tablets.spark.frames import hadoop_location
    from tablets.storage.fileio import join

    lines = []
    for st in with_dv:
        where = hadoop_location(spark, join(t.root, st.dv.path))
        lines.append(f"{os.path.basename(st.add.path)}\t{where}\t{st.dv.size}\t{st.dv.checksum}\t{st.dv.cardinality}")
    entries = "\n".join(lines)
    print(f"executors (after): {len(with_dv)} entries, {len(entries.encode())} bytes of entries in the plan")

    def scan() -> float:
        t0 = time.perf_counter()
        snapshot_frame(spark, t, t.snapshot(), ["v"], row_ids=False).selectExpr("count(*)", "sum(v)").collect()
        return time.perf_counter() - t0

    times: dict[str, list[float]] = {"executors": [], "broadcast": []}
    results = {}
    for _ in range(args.runs + 1):
        for mode in ("executors", "broadcast"):
            spark.conf.set(vectors.EXECUTORS_CONF, "true" if mode == "executors" else "false")
            times[mode].append(scan())
            results[mode] = (
                snapshot_frame(spark, t, t.snapshot(), ["v"], row_ids=False).selectExpr("count(*)", "sum(v)").first()
            )
    assert results["executors"] == results["broadcast"], results
    med = {m: statistics.median(v[1:]) for m, v in times.items()}  # the first of each is warm-up
    print(
        f"full scan, median of {args.runs}: executors {med['executors']:.2f} s, broadcast {med['broadcast']:.2f} s, "
        f"ratio {med['executors'] / med['broadcast']:.2f}x; rows {results['executors']}"
    )
    spark.stop()


if __name__ == "__main__":
    main()
