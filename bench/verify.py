"""What verifying tablets costs on a full scan (docs/FORMAT.md, "Verification").

    .venv/bin/python bench/verify.py --rows 10000000 --repeat 3

A table of N rows of bench/data.py's data (id BIGINT, k INT, v DOUBLE, s STRING of 20 letters,
d DATE; 1,000,000 rows per tablet, written by the store, so with page CRCs and footer ids) is
read in full, with and without verification, runs interleaved, median of ``--repeat``:

- store: ``TabletTable.read()`` (all columns, as pyarrow tables). Without = each file read by
  pyarrow with no size check, no footer id or row count check, no page CRCs.
- spark: the engine's native scan (``snapshot_frame``) aggregated over every column. Without = no
  size check on the driver and no ``parquet.page.verify-checksum.enabled``.

The engine's Arrow-reader scan (object stores without a Hadoop connector) verifies with the
store's code in Python workers, which this driver-side switch cannot reach: its cost is the
store's.

Also the cost of writing page CRCs: one tablet of 1,000,000 rows to memory, with and without.

Each run is timed twice: wall clock, and CPU seconds of the process that does the reading (this
Python process for the store and the write, the Spark JVM for the scan, from /proc). On a
machine shared with other jobs the wall clock swings by tens of percent between runs; CPU time
is the steadier measure of the work verification adds. The ratios are the point.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(os.path.dirname(HERE), "adapter")]

import data  # noqa: E402
from tablets.storage import TabletTable  # noqa: E402
from tablets.storage import tablet as tablet_mod  # noqa: E402

TABLET_ROWS = 1_000_000


def build(root: str, rows: int) -> TabletTable:
    """The table at ``root``, made once (reused when it already has ``rows`` rows)."""
    if os.path.exists(root):
        t = TabletTable(root)
        if t.exists() and t.snapshot().live_rows == rows:
            return t
        shutil.rmtree(root)
    t = TabletTable.create(root, data.SCHEMA, key_columns=["id"])
    rng = np.random.default_rng(42)
    for start in range(0, rows, TABLET_ROWS):
        ids = np.arange(start, min(rows, start + TABLET_ROWS), dtype=np.int64)
        t.append(data._rows(rng, ids))  # the benchmark data's generator
    return t


def _unverified(io, path, add, columns):  # tablet._read_verified's signature
    with io.open_input(path) as f:
        pf = pq.ParquetFile(f)
        present = set(pf.schema_arrow.names)
        return pf.read(columns=[c for c in columns if c in present])


_verified = tablet_mod._read_verified


def set_store(verify: bool) -> None:
    tablet_mod._read_verified = _verified if verify else _unverified


def set_spark(verify: bool) -> None:
    from tablets.spark import frames

    frames.VERIFY_OPTIONS = {"parquet.page.verify-checksum.enabled": "true"} if verify else {}
    frames.check_sizes = tablet_mod.check_sizes if verify else (lambda *a, **k: None)


def process_cpu(pid: int) -> Callable[[], float]:
    """CPU seconds (user + system, all threads) used so far by process ``pid``."""
    tick = os.sysconf("SC_CLK_TCK")

    def cpu() -> float:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / tick  # utime, stime

    return cpu


def compare(
    name: str,
    run: Callable[[], object],
    switch: Callable[[bool], None],
    repeat: int,
    cpu: Callable[[], float] = time.process_time,
) -> None:
    wall: dict[bool, list[float]] = {True: [], False: []}
    used: dict[bool, list[float]] = {True: [], False: []}
    switch(True)
    run()  # warm-up: caches, JIT, Python workers
    for _ in range(repeat):
        for verify in (False, True):
            switch(verify)
            c, w = cpu(), time.perf_counter()
            run()
            wall[verify].append(time.perf_counter() - w)
            used[verify].append(cpu() - c)
    switch(True)
    for what, t in (("wall", wall), ("cpu", used)):
        off, on = statistics.median(t[False]), statistics.median(t[True])
        print(
            f"{name:6s} {what:4s} without {off:7.2f} s  with {on:7.2f} s  ratio {on / off:5.3f}   "
            f"(runs without {[round(x, 2) for x in t[False]]}, with {[round(x, 2) for x in t[True]]})",
            flush=True,
        )


def write_cost(repeat: int) -> None:
    table = data._rows(np.random.default_rng(1), np.arange(TABLET_ROWS, dtype=np.int64))

    def write(crc: bool) -> Callable[[], object]:
        def go() -> object:
            buf = pa.BufferOutputStream()
            pq.write_table(
                table, buf, compression="zstd", row_group_size=tablet_mod.ROW_GROUP_ROWS, write_page_checksum=crc
            )
            return buf.getvalue()

        return go

    state = {"crc": True}
    compare("write", lambda: write(state["crc"])(), lambda v: state.update(crc=v), repeat)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work", default="/tmp/tablets-bench/verify")
    ap.add_argument("--no-spark", action="store_true")
    args = ap.parse_args()

    t0 = time.perf_counter()
    t = build(os.path.join(args.work, f"t{args.rows}"), args.rows)
    snap = t.snapshot()
    size = sum(st.add.bytes for st in snap.tablets.values())
    print(
        f"table: {snap.live_rows:,} rows x {len(snap.metadata.schema)} columns, {len(snap.tablets)} tablets, "
        f"{size / 2**20:.0f} MiB ({time.perf_counter() - t0:.0f} s to make or find)",
        flush=True,
    )

    compare("store", lambda: t.read(), set_store, args.repeat)
    write_cost(args.repeat)
    if args.no_spark:
        return

    from pyspark.sql import functions as F

    from tablets.spark.frames import SCAN_CONF, snapshot_frame
    from tablets.spark.session import build_session

    spark = build_session(os.path.join(args.work, "warehouse"), master="local[2]", hive=False)

    def scan() -> object:
        df = snapshot_frame(spark, t, snap, row_ids=False)
        return df.agg(F.count("*"), F.sum("id"), F.sum("k"), F.sum("v"), F.max("s"), F.max("d")).collect()

    spark.conf.set(SCAN_CONF, "native")
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    compare("spark", scan, set_spark, args.repeat, process_cpu(int(jvm.java.lang.ProcessHandle.current().pid())))
    spark.stop()


if __name__ == "__main__":
    main()
