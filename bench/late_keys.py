"""Late keys: a MERGE whose source holds recent keys and a few old ones, on a table clustered by
its key, with the tablets between the source's keys skipped (``prune_tablets``, the default)
against every tablet the source's min..max spans read (``spark.tablets.merge.pruneTablets=false``),
in one run.

    .venv/bin/python bench/late_keys.py --rows 10000000
    .venv/bin/python bench/late_keys.py --rows 1000000 --late 5 --repeat 3

The table: ``--rows`` rows (id BIGINT 0..rows-1, v DOUBLE, s STRING) in tablets of
``--tablet-rows`` ids each, in id order (as ``cluster_by: id`` or time-ordered loads leave them).
The source: ``--recent`` ids around the newest (half of them updates of the last tablets, half
inserts) and ``--late`` ids drawn at random from the whole table (late arrivals): its min..max
spans every tablet. Each run merges into a fresh copy of the table:

- ``spark``: Spark's plan (``driverScanBytes=0``, as on a cluster), the source collected (its
  keys' values prune tablets);
- ``spark kept``: Spark's plan with the source kept in Spark (no broadcast: counted with its key
  buckets, shuffled into the join), as a big source is;
- ``driver``: the session's defaults (the driver reads the tablets it keeps);
- each also with pruning off (``... all``).

Median of ``--repeat`` runs, seconds; every result is checked (count and sum of v).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import tablets
from tablets.engine.route import DRIVER_SCAN_CONF, PRUNE_CONF
from tablets.spark.session import build_session
from tablets.storage import TabletTable

SYSTEMS = {
    "spark": {DRIVER_SCAN_CONF: "0"},
    "spark kept": {DRIVER_SCAN_CONF: "0", "spark.sql.autoBroadcastJoinThreshold": "-1"},
    "driver": {},
}


def build(cache: str, rows: int, tablet_rows: int) -> str:
    """The clustered table (made once per shape)."""
    src = os.path.join(cache, "table")
    if os.path.exists(os.path.join(src, "_READY")):
        return src
    shutil.rmtree(src, ignore_errors=True)
    schema = pa.schema([("id", pa.int64()), ("v", pa.float64()), ("s", pa.string())])
    t = TabletTable.create(src, schema, (), {"target_tablet_rows": str(tablet_rows)})
    for start in range(0, rows, tablet_rows):
        ids = np.arange(start, min(rows, start + tablet_rows), dtype=np.int64)
        t.append(pa.table({"id": ids, "v": ids * 0.5, "s": pa.array([f"row {i}" for i in ids])}, schema=schema))
    open(os.path.join(src, "_READY"), "w").close()
    return src


def source_rows(rows: int, recent: int, late: int, seed: int) -> list[tuple[int, float]]:
    rng = random.Random(seed)
    ids = set(range(rows - recent // 2, rows + recent - recent // 2))
    while len(ids) < recent + late:
        ids.add(rng.randrange(0, rows - recent))
    return [(i, -1.0) for i in sorted(ids)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--tablet-rows", type=int, default=100_000)
    ap.add_argument("--recent", type=int, default=100_000)
    ap.add_argument("--late", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cache", default="/tmp/tablets-bench/late_keys")
    args = ap.parse_args()
    spark = build_session(tempfile.mkdtemp(), master="local[2]")
    db = tablets.connect(spark=spark)
    cache = os.path.join(args.cache, f"{args.rows}-{args.tablet_rows}")
    os.makedirs(cache, exist_ok=True)
    src = build(cache, args.rows, args.tablet_rows)
    work = tempfile.mkdtemp(dir=args.cache)
    spark.createDataFrame(source_rows(args.rows, args.recent, args.late, args.seed), "id BIGINT, v DOUBLE").write.mode(
        "overwrite"
    ).parquet(os.path.join(work, "source"))
    spark.read.parquet(os.path.join(work, "source")).createOrReplaceTempView("late_source")
    stmt = (
        "MERGE INTO tablets.`{}` t USING late_source s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT (id, v, s) VALUES (s.id, s.v, 'new')"
    )
    times: dict[str, list[float]] = {}
    scanned: dict[str, int] = {}
    want = None
    for _ in range(args.repeat):
        for name, conf in SYSTEMS.items():
            for prune in ("true", "false"):
                label = name if prune == "true" else f"{name} all"
                copy = os.path.join(work, "t")
                shutil.rmtree(copy, ignore_errors=True)
                shutil.copytree(src, copy)
                for k, v in {**conf, PRUNE_CONF: prune}.items():
                    spark.conf.set(k, v)
                t0 = time.perf_counter()
                m = db.sql(stmt.format(copy)).metrics
                times.setdefault(label, []).append(time.perf_counter() - t0)
                for k in {**conf, PRUNE_CONF: prune}:
                    spark.conf.unset(k)
                scanned[label] = m.tablets_scanned
                got = TabletTable.open(copy).read(columns=["v"])
                result = (got.num_rows, pc.sum(got.column("v")).as_py())
                want = want or result
                assert result == want, (label, result, want)
    print(
        f"MERGE of {args.recent:,} recent + {args.late} late keys into {args.rows:,} rows "
        f"(tablets of {args.tablet_rows:,}, clustered by id), median of {args.repeat}"
    )
    print(f"{'system':14} {'seconds':>8} {'tablets read':>13} {'x all':>7}")
    for label, ts in times.items():
        m = statistics.median(ts)
        base = statistics.median(times[label if label.endswith(" all") else f"{label} all"])
        print(f"{label:14} {m:8.2f} {scanned[label]:13d} {m / base:7.2f}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
