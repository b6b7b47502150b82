"""Reads of a tablet table through Spark SQL against the same rows as a plain Parquet table.

    .venv/bin/python bench/read_profile.py --rows 3000000 --repeat 9
    .venv/bin/python bench/read_profile.py --paths plain,spark,native --queries "id range 1%,unique test" --results ''

One session (local[2], 4 shuffle partitions). The data (made once per --rows under --work):
``id BIGINT`` 0..N-1 in order, ``k INT`` = id % 1000, ``v DOUBLE`` = id / 64, ``s STRING`` = 's'
+ a 7-digit permutation of id (unsorted), ``d DATE`` = 2020-01-01 + id % 1000 days; written as
6 tablets, then 5% of the rows of every other tablet deleted. The plain table holds the same
live rows as Parquet files written with the tablets' settings (zstd, 128k-row groups), one file
per tablet. Each query's result is checked equal across the paths; the median of --repeat runs
(interleaved across the paths) after one untimed warm-up run is printed with the ratio to plain Parquet.

Paths: ``plain`` (the Parquet table), ``python`` (``spark.sql`` on the catalog table with
native reads off: the Python data source), ``spark`` (``spark.sql`` on the catalog table: the
native-read rule, ``tablets.spark.native``), ``native`` (``Database.sql``, as dbt runs it: the
front door reads the table with Spark's Parquet scan, ``tablets.reads``).
"""

from __future__ import annotations

import argparse
import datetime
import os
import shutil
import statistics
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "adapter"))
sys.path.insert(0, HERE)

import report  # noqa: E402
import systems  # noqa: E402
from tablets.storage.sink import RowLevelSink  # noqa: E402
from tablets.storage.table import TabletTable  # noqa: E402
from tablets.storage.tablet import ROW_GROUP_ROWS  # noqa: E402

TABLETS = 6
DELETED = 0.05
LABELS = {
    "plain": "plain Parquet",
    "python": "Python source",
    "spark": "spark.sql (native-read rule)",
    "native": "front door (db.sql, dbt)",
}

QUERIES = {
    "full aggregate": "SELECT count(*), sum(id), sum(k), sum(v), max(s), min(d) FROM {t}",
    "id range 1%": "SELECT count(*), sum(v), max(s) FROM {t} WHERE id BETWEEN {lo} AND {hi}",
    "string equality": "SELECT id, k, v, s, d FROM {t} WHERE s = '{s}'",
    "int eq + date range": "SELECT count(*), sum(v) FROM {t} WHERE k = 7 AND d >= DATE'2021-06-01'",
    "not_null test": "SELECT count(*) FROM (SELECT s FROM {t} WHERE s IS NULL) q",
    "unique test": "SELECT count(*) FROM (SELECT id FROM {t} WHERE id IS NOT NULL GROUP BY id HAVING count(*) > 1) q",
}


def make_data(work: str, rows: int) -> tuple[str, str]:
    root, plain = os.path.join(work, "tablet"), os.path.join(work, "plain")
    if os.path.exists(os.path.join(plain, "_done")):
        return root, plain
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(plain)
    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("k", pa.int32()),
            ("v", pa.float64()),
            ("s", pa.string()),
            ("d", pa.date32()),
        ]
    )
    t = TabletTable.create(root, schema)
    per = rows // TABLETS
    perm = np.random.default_rng(7).permutation(rows)
    for i in range(TABLETS):
        ids = np.arange(i * per, rows if i == TABLETS - 1 else (i + 1) * per, dtype=np.int64)
        t.append(
            pa.table(
                {
                    "id": ids,
                    "k": (ids % 1000).astype(np.int32),
                    "v": ids / 64.0,
                    "s": pa.array(np.char.add("s", np.char.zfill(perm[ids].astype(str), 7))),
                    "d": pa.array((ids % 1000).astype("timedelta64[D]") + np.datetime64("2020-01-01"), pa.date32()),
                }
            )
        )
    rng = np.random.default_rng(1)
    h = t.begin_delete()
    sink = RowLevelSink(h)
    for n, (tid, st) in enumerate(t.snapshot().tablets.items()):
        if n % 2 == 0:
            pos = np.sort(rng.choice(st.add.rows, int(st.add.rows * DELETED), replace=False))
            sink.delete([tid] * len(pos), pos)
    t.finish(h, sink.finish())
    snap = t.snapshot()
    for n, st in enumerate(snap.tablets.values()):
        live = next(t.scan(snap, tablet_ids=[st.tablet_id]))
        out = os.path.join(plain, f"part-{n:05d}.parquet")
        pq.write_table(live, out, compression="zstd", row_group_size=ROW_GROUP_ROWS)
    open(os.path.join(plain, "_done"), "w").close()
    return root, plain


def data_arguments(doc: str | None, repeat: int) -> argparse.ArgumentParser:
    """The options of the scripts over this table: its size, where it lives, the session's
    memory, the runs and where their results go."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=3_000_000)
    ap.add_argument("--repeat", type=int, default=repeat)
    ap.add_argument("--work", default="/tmp/tablets-read-bench")
    ap.add_argument("--memory", default="2g")
    ap.add_argument("--results", default=report.RESULTS, help="'' to append nowhere")
    return ap


def main() -> None:
    ap = data_arguments(__doc__, repeat=3)
    ap.add_argument("--paths", default="plain,python,spark,native")
    ap.add_argument("--queries", default=",".join(QUERIES))
    args = ap.parse_args()
    started, load_at_start = datetime.datetime.now(datetime.UTC), os.getloadavg()

    work = os.path.join(args.work, str(args.rows))
    start = time.perf_counter()
    root, plain = make_data(work, args.rows)
    print(f"data: {time.perf_counter() - start:.1f} s ({work})", flush=True)

    import tablets
    from tablets.spark import catalog

    conf = {"spark.driver.memory": args.memory}
    wh = os.path.join(work, f"warehouse-{os.getpid()}")
    db = tablets.connect(wh, master="local[2]", conf=conf)
    spark = db.spark
    spark.conf.set("spark.sql.shuffle.partitions", "4")
    catalog.create_table(spark, "default.tab", None, location=root)
    spark.sql(f"CREATE TABLE default.plain USING parquet LOCATION '{plain}'")

    one = pq.read_table(os.path.join(plain, "part-00003.parquet"), columns=["s"]).column(0)[12345].as_py()
    params = {"lo": args.rows // 2, "hi": args.rows // 2 + args.rows // 100, "s": one}
    from tablets.spark.read_frames import READ_NATIVE_CONF

    def python_source(q: str) -> list:
        spark.conf.set(READ_NATIVE_CONF, "false")
        try:
            return spark.sql(q.format(t="default.tab", **params)).collect()
        finally:
            spark.conf.set(READ_NATIVE_CONF, "true")

    runners = {
        "plain": lambda q: spark.sql(q.format(t="default.plain", **params)).collect(),
        "python": python_source,
        "spark": lambda q: spark.sql(q.format(t="default.tab", **params)).collect(),
        "native": lambda q: db.sql(q.format(t="default.tab", **params)).collect(),
    }
    paths = args.paths.split(",")
    rows: list[list[str]] = []
    for name in args.queries.split(","):
        q = QUERIES[name]
        results = {p: sorted(map(tuple, runners[p](q))) for p in paths}  # warm-up, and the answer
        times: dict[str, list[float]] = {p: [] for p in paths}
        for _ in range(args.repeat):  # interleaved: the machine is shared
            for p in paths:
                t0 = time.perf_counter()
                runners[p](q)
                times[p].append(time.perf_counter() - t0)
        medians = {p: statistics.median(ts) for p, ts in times.items()}
        same = all(r == results[paths[0]] for r in results.values())
        base = medians.get("plain")
        cells = [
            f"{p} {medians[p]:.2f} s" + (f" ({medians[p] / base:.2f}x)" if base and p != "plain" else "") for p in paths
        ]
        print(f"{name:22s} " + "  ".join(cells) + ("" if same else "  RESULTS DIFFER"), flush=True)
        if not same:
            for p, r in results.items():
                print("   ", p, r[:3])
        rows.append(
            [
                name,
                *[report.cell(times[p]) for p in paths],
                *[f"{medians[p] / base:.2f}" for p in paths if base and p != "plain"],
                "ok" if same else "RESULTS DIFFER",
            ]
        )
    spark.stop()
    shutil.rmtree(wh, ignore_errors=True)
    ratios = [f"{LABELS[p]}/plain" for p in paths if p != "plain"]
    header = ["query", *[f"{LABELS[p]} s" for p in paths], *ratios, "check"]
    body = (
        f"Reads with deletion vectors: {args.rows:,} rows in {TABLETS} tablets, {DELETED:.0%} of the rows of every "
        f"other one deleted; the plain table holds the same live rows. Seconds: median (min-max) of {args.repeat} "
        "after one untimed run, the paths interleaved.\n\n" + report.table(header, rows)
    )
    report.append(
        args.results,
        f"read with deletion vectors, {args.rows:,} rows, repeat {args.repeat}",
        started,
        load_at_start,
        {"ours": systems.Ours(work, work, args.memory).versions()},
        [],
        body,
    )


if __name__ == "__main__":
    main()
