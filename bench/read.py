"""Read benchmark: the same rows as a tablet table and as a plain Parquet table, read through Spark SQL.

    .venv/bin/python bench/read.py --rows 1000000 --repeat 3
    .venv/bin/python bench/read.py --rows 100000 --repeat 1 --results ''     # a quick try

One Spark session (the engine's, `local[2]`) holds both tables: the tablet table `bench.target`
loaded as merge.py loads it, and `bench.plain`, a Parquet table written by Spark from the same
files. Each query runs once untimed, then --repeat times; the median is reported, with the ratio
tablets/parquet (> 1: reading the tablet table costs more). The tablet table is read the two ways
a dbt user's SQL reaches it: by catalog name through `spark.sql` (what dbt-spark runs) and through
the dbt-tablets front door `db.sql`. Every way must return the same rows as the Parquet table.
"""

from __future__ import annotations

import argparse
import datetime
import os
import shutil
import statistics
import sys
import time

import pyarrow.compute as pc
import pyarrow.parquet as pq

import data
import report
import systems
from report import cell, table

QUERIES = {
    "aggregate": "SELECT count(*), sum(v), count(DISTINCT k) FROM {t}",
    "id range": "SELECT * FROM {t} WHERE id BETWEEN {x} AND {x} + 1000",
    "s equals": "SELECT * FROM {t} WHERE s = '{s}'",
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--clustered", action="store_true", help="the target in id order (the scale workload's data)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--memory", default="4g", help="spark.driver.memory")
    ap.add_argument("--cache", default=data.DEFAULT_CACHE)
    ap.add_argument("--work", default=None, help="tables (default /tmp/tablets-bench/work/read-ROWS)")
    ap.add_argument("--results", default=report.RESULTS, help="'' to append nowhere")
    args = ap.parse_args()
    started, load_at_start = datetime.datetime.now(datetime.UTC), os.getloadavg()
    work = args.work or f"/tmp/tablets-bench/work/read-{args.rows}"
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    data_dir = data.generate(args.rows, args.seed, args.cache, clustered=args.clustered)
    target = data.paths(data_dir, "upsert")[0]

    ours = systems.Ours(data_dir, work, args.memory)
    t0 = time.perf_counter()
    ours.open()
    ours.load()
    spark, db = ours.spark, ours.db
    plain = os.path.join(work, "plain")
    spark.sql(
        f"CREATE TABLE bench.plain USING parquet LOCATION '{plain}' AS SELECT * FROM parquet.`{target}`" + ours.order
    )
    print(
        f"{args.rows:,} rows loaded as a tablet table and a Parquet table in {time.perf_counter() - t0:.1f} s "
        f"(tablet table {report.mib(systems.du(ours.live))} MiB, Parquet {report.mib(systems.du(plain))} MiB)"
    )

    # the filter values: the middle id, and the s of one row (ids are unique, s is random: one row or few)
    x = args.rows // 2
    first = pq.read_table(target, columns=["id", "s"], filters=[("id", "=", x)])
    params = {"x": x, "s": first.column("s")[0].as_py()}
    ways = {
        "parquet (spark.sql)": lambda q: spark.sql(q.format(t="bench.plain", **params)).collect(),
        "tablets (spark.sql)": lambda q: spark.sql(q.format(t="bench.target", **params)).collect(),
        "tablets (db.sql)": lambda q: db.sql(q.format(t="bench.target", **params)).collect(),  # type: ignore[union-attr]
    }
    times: dict[tuple[str, str], list[float]] = {}
    rows_of: dict[str, int] = {}
    problems = []
    for qname, q in QUERIES.items():
        answers = {}
        for way, run in ways.items():
            answers[way] = sorted(map(tuple, run(q)), key=repr)  # untimed: warms the JVM and plans up
            times[qname, way] = []
            for _ in range(args.repeat):
                start = time.perf_counter()
                run(q)
                times[qname, way].append(round(time.perf_counter() - start, 4))
            print(f"{qname:10s} {way:20s} {cell(times[qname, way])} s", flush=True)
        rows_of[qname] = len(answers["parquet (spark.sql)"])
        problems += [
            f"MISMATCH {qname}: {way} returned other rows than the Parquet table"
            for way, a in answers.items()
            if a != answers["parquet (spark.sql)"]
        ]
    sums = {
        way: spark.sql(QUERIES["aggregate"].format(t=t)).first()[1]
        for way, t in (("parquet", "bench.plain"), ("tablets", "bench.target"))
    }
    expect = float(pc.sum(pq.read_table(target, columns=["v"]).column("v")).as_py())
    problems += [f"MISMATCH aggregate: {way} sum(v) {s} != {expect}" for way, s in sums.items() if s != expect]

    header = ["query", "rows", *[f"{w} s" for w in ways], "tablets/parquet (spark.sql)", "tablets/parquet (db.sql)"]
    out = []
    for qname in QUERIES:
        med = {w: statistics.median(times[qname, w]) for w in ways}
        base = med["parquet (spark.sql)"]
        out.append(
            [
                qname,
                f"{rows_of[qname]:,}",
                *[cell(times[qname, w]) for w in ways],
                f"{med['tablets (spark.sql)'] / base:.2f}",
                f"{med['tablets (db.sql)'] / base:.2f}",
            ]
        )
    layout = "in id order" if args.clustered else "ids shuffled across files"
    body = (
        f"Read: {args.rows:,} rows ({layout}), seconds: median (min-max) of {args.repeat} after one untimed run; "
        f"`id range`: id between {x} and {x + 1000}; `s equals`: one 20-letter value.\n\n"
        + table(header, out)
        + "".join(f"\n\n- {p}" for p in problems)
    )
    print("\n" + body)
    versions = {"ours": ours.versions()}
    report.append(
        args.results, f"read, {args.rows:,} rows, repeat {args.repeat}", started, load_at_start, versions, [], body
    )
    if problems:
        sys.exit(1)


if __name__ == "__main__":
    main()
