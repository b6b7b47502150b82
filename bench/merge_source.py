"""A MERGE whose source reads an upstream tablet table, as a dbt incremental model over a
``ref()`` does: the source's read natively (the analyzer rule of ``tablets.spark.native``) against
through the Python data source (``spark.tablets.read.native=false``).

    .venv/bin/python bench/merge_source.py --rows 3000000 --repeat 7

The upstream table is bench/read_profile.py's (made once per --rows under --work: 6 tablets, 5%
of the rows of every other one deleted); the target holds 5,000 of its ids. Each statement
merges 10,000 upstream rows (``WHERE id BETWEEN``, half of them already in the target) into the
target; the two modes alternate, one session, the first round untimed. Prints the medians and
their ratio; ``--results`` appends them to bench/RESULTS.md.
"""

from __future__ import annotations

import datetime
import os
import shutil
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "adapter"))
sys.path.insert(0, HERE)

import report  # noqa: E402
import systems  # noqa: E402
from read_profile import data_arguments, make_data  # noqa: E402

STATEMENT = (
    "MERGE INTO default.target t USING (SELECT id, k, v FROM default.upstream WHERE id BETWEEN {lo} AND {hi}) s "
    "ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
)


def main() -> None:
    args = data_arguments(__doc__, repeat=7).parse_args()
    started, load_at_start = datetime.datetime.now(datetime.UTC), os.getloadavg()
    work = os.path.join(args.work, str(args.rows))
    root, _ = make_data(work, args.rows)

    import tablets
    from tablets.spark import catalog
    from tablets.spark.read_frames import READ_NATIVE_CONF

    wh = os.path.join(work, f"warehouse-{os.getpid()}")
    db = tablets.connect(wh, master="local[2]", conf={"spark.driver.memory": args.memory})
    spark = db.spark
    spark.conf.set("spark.sql.shuffle.partitions", "4")
    catalog.create_table(spark, "default.upstream", None, location=root)
    base = args.rows // 3
    db.sql("CREATE TABLE default.target (id BIGINT, k INT, v DOUBLE) USING tablets")
    db.sql(f"INSERT INTO default.target SELECT id, CAST(id % 1000 AS INT), 0.0D FROM range({base}, {base + 5000})")
    times: dict[str, list[float]] = {"native": [], "python": []}
    for i in range(args.repeat + 1):
        for mode in times:
            spark.conf.set(READ_NATIVE_CONF, "true" if mode == "native" else "false")
            lo = base + i * 1000
            t0 = time.perf_counter()
            db.sql(STATEMENT.format(lo=lo, hi=lo + 9999))
            if i:
                times[mode].append(time.perf_counter() - t0)
    spark.conf.unset(READ_NATIVE_CONF)
    spark.stop()
    shutil.rmtree(wh, ignore_errors=True)
    med = {m: statistics.median(ts) for m, ts in times.items()}
    ratio = f"{med['native'] / med['python']:.2f}"
    print(f"native {med['native']:.2f} s  python source {med['python']:.2f} s  ratio {ratio}")
    body = (
        f"A MERGE of 10,000 rows of an upstream {args.rows:,}-row tablet table (`WHERE id BETWEEN`) into a "
        f"5,000-row target, the source read natively or through the Python source; seconds: median (min-max) "
        f"of {args.repeat}, the modes alternating.\n\n"
        + report.table(
            ["source read", "s", "/ Python source"],
            [
                ["native (the analyzer rule)", report.cell(times["native"]), ratio],
                ["Python source", report.cell(times["python"]), "1.00"],
            ],
        )
    )
    report.append(
        args.results,
        f"merge source over a tablet table, {args.rows:,} rows, repeat {args.repeat}",
        started,
        load_at_start,
        {"ours": systems.Ours(work, work, args.memory).versions()},
        [],
        body,
    )


if __name__ == "__main__":
    main()
