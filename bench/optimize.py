"""OPTIMIZE: the driver's rewrite against Spark's tasks (tablets.engine.rewrite), and both against
a plain Spark rewrite of the same rows (issue 28's floor), in one run.

    .venv/bin/python bench/optimize.py --rows 10000000
    .venv/bin/python bench/optimize.py --rows 1000000 --tablet-rows 10000 --repeat 3
    .venv/bin/python bench/optimize.py --rows 100000000 --repeat 1 --memory 8g

The table: bench/data.py's target of N rows written as tablets of ``--tablet-rows`` rows (so
OPTIMIZE picks every one: below half the table's target_tablet_rows of 1,000,000), then 10% of
its rows deleted (deletion vectors in most tablets). Each system rewrites a fresh copy of it:

- ``driver``: OPTIMIZE with spark.tablets.optimize.driverRewriteBytes above the table's size
  (the driver reads and writes every tablet);
- ``spark``: OPTIMIZE with it 0 (tasks rewrite bins of tablets, deletes applied as they read);
- ``spark clustered``: the same table with cluster_by = 'id' (scan, range partition, sort);
- ``floor``: plain Spark reads the tablets' Parquet files and writes one file per
  target_tablet_rows (every stored row: no deletes to apply, no log); ``floor clustered`` range
  partitions and sorts them by id first: what no rewrite on Spark can beat.

Median of ``--repeat`` runs, seconds; the rows of every result are checked (count, sum(v)).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import data
import tablets
from tablets.engine.rewrite import REWRITE_CONF
from tablets.spark.session import build_session
from tablets.storage import TabletTable
from tablets.storage.fileio import join

TARGET_TABLET_ROWS = 1_000_000


def build(db, root: str, rows: int, tablet_rows: int, clustered: bool) -> str:
    """The table at ``root`` (created once per shape, copied for each run)."""
    src = os.path.join(root, "clustered" if clustered else "plain")
    if os.path.exists(os.path.join(src, "_READY")):
        return src
    shutil.rmtree(src, ignore_errors=True)
    target, _ = data.paths(data.generate(rows), "delete-heavy")
    props = {"target_tablet_rows": str(TARGET_TABLET_ROWS)}
    if clustered:
        props["cluster_by"] = "id"
    schema = pq.read_schema(os.path.join(target, sorted(os.listdir(target))[0]))
    t = TabletTable.create(src, schema, (), props)
    from tablets.storage import RowLevelSink

    # one commit of tablets of ``tablet_rows`` (a commit per tablet costs minutes at 100M)
    # a sink per source file: its rows end in a shorter tablet, as a commit per slice made them
    h = t.begin_write("APPEND", target_tablet_rows=tablet_rows)
    fragments = []
    for name in sorted(f for f in os.listdir(target) if f.endswith(".parquet")):
        sink = RowLevelSink(h)
        sink.insert(pq.read_table(os.path.join(target, name)))
        fragments += sink.finish()
    t.finish(h, fragments)
    # one sorted copy of the deleted ids, searched per tablet (``pc.is_in`` would hash all 10M
    # of them again for each of 1,200 tablets at 100M)
    ids = np.sort(
        pq.read_table(data.paths(data.generate(rows), "delete-heavy")[1], columns=["id"]).column("id").to_numpy()
    )
    h = t.begin_delete()
    sink = RowLevelSink(h)
    for part in t.scan(row_ids=True, columns=["id"]):
        got = part.column("id").to_numpy()
        at = np.minimum(np.searchsorted(ids, got), len(ids) - 1)
        gone = part.filter(pa.array(ids[at] == got))
        sink.delete(gone.column("_tablet_id").to_pylist(), gone.column("_row_number").to_numpy())
    t.finish(h, sink.finish())
    open(os.path.join(src, "_READY"), "w").close()
    return src


def check(t: TabletTable, want: tuple[int, float]) -> None:
    got = t.read(columns=["v"])
    assert (got.num_rows, pc.sum(got.column("v")).as_py()) == want, (got.num_rows, want)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--tablet-rows", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cache", default="/tmp/tablets-bench/optimize")
    ap.add_argument("--memory", default="4g", help="spark.driver.memory (as bench/merge.py's)")
    args = ap.parse_args()
    spark = build_session(tempfile.mkdtemp(), master="local[2]", conf={"spark.driver.memory": args.memory})
    db = tablets.connect(spark=spark)
    cache = os.path.join(args.cache, f"{args.rows}-{args.tablet_rows}")
    os.makedirs(cache, exist_ok=True)
    work = tempfile.mkdtemp(dir=args.cache)
    times: dict[str, list[float]] = {}
    for clustered in (False, True):
        src = build(db, cache, args.rows, args.tablet_rows, clustered)
        base = TabletTable.open(src)
        live = base.read(columns=["v"])
        want = (live.num_rows, pc.sum(live.column("v")).as_py())
        size = sum(st.add.bytes for st in base.snapshot().tablets.values())
        paths = [join(src, st.add.path) for st in base.snapshot().tablets.values()]
        systems = (
            {"spark clustered": "0", "floor clustered": None}
            if clustered
            else {"driver": str(size * 2), "spark": "0", "floor": None}
        )
        for _ in range(args.repeat):
            for name, limit in systems.items():
                copy = os.path.join(work, "t")
                shutil.rmtree(copy, ignore_errors=True)
                shutil.copytree(src, copy)
                t0 = time.perf_counter()
                if limit is None:
                    n = max(1, -(-want[0] // TARGET_TABLET_ROWS))
                    rows = spark.read.parquet(*paths)
                    rows = (
                        rows.repartitionByRange(n, "id").sortWithinPartitions("id") if clustered else rows.coalesce(n)
                    )
                    rows.write.mode("overwrite").parquet(os.path.join(work, "floor"))
                else:
                    spark.conf.set(REWRITE_CONF, limit)
                    db.sql(f"OPTIMIZE tablets.`{copy}`")
                times.setdefault(name, []).append(time.perf_counter() - t0)
                if limit is not None:
                    check(TabletTable.open(copy), want)
    print(f"OPTIMIZE of {args.rows:,} rows in tablets of {args.tablet_rows:,} (10% deleted), median of {args.repeat}")
    print(f"{'system':18} {'seconds':>8} {'x floor':>8}")
    for name, ts in times.items():
        floor = statistics.median(times["floor clustered" if "clustered" in name else "floor"])
        m = statistics.median(ts)
        print(f"{name:18} {m:8.2f} {m / floor:8.2f}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
