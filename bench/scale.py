"""Scale measurements for docs/SCALE.md: what a tablet table of N rows costs.

    .venv/bin/python bench/scale.py --rows 10000000                      # table, MERGEs, DVs, snapshot, synthetic
    nice -n 10 .venv/bin/python bench/scale.py --rows 100000000 --cache /tmp/tablets-scale/data
    .venv/bin/python bench/scale.py --rows 100000000 --merges upsert-small,upsert,sync,delete,again \
        --conf spark.tablets.merge.driverScanBytes=0 --synthetic ''   # Spark's plan, as on a cluster
    .venv/bin/python bench/scale.py --rows 0                             # the synthetic parts only (no Spark)

Measured on a table of N rows of bench/data.py's data (id BIGINT, k INT, v DOUBLE, s STRING of 20
letters, d DATE), created and loaded with the engine (`tablets.connect`, CREATE TABLE ... USING
tablets, INSERT ... SELECT from the Parquet files; 1,000,000 rows per tablet), then a 1% upsert
MERGE and a 10% delete MERGE (data.py's sources): tablets (count, rows, bytes), version files,
a forced checkpoint, the snapshot's load time and Python memory (tracemalloc), deletion vectors,
what each statement's scans send about them (one entry per tablet with a vector; the fallback's
broadcast of DV words, counted if it happens), and each merge task's input and peak memory (the task
functions are wrapped: rows and Arrow bytes in, the Arrow pool's peak through a proxy pool, the
worker's peak RSS after resetting it through /proc/self/clear_refs).

Synthetic (no data written, only log files): DV sizes for one tablet at several delete
densities, and the log, checkpoint and snapshot for 1,000 / 10,000 / 100,000 tablets.

Timings are informational (a shared 2-core machine); sizes and memory are the point.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import pickle
import platform
import shutil
import statistics
import sys
import tempfile
import time
import tracemalloc

import numpy as np
import pyarrow as pa

import data
from tablets.storage import TabletTable, log
from tablets.storage.actions import AddTablet, ColumnStats, CommitInfo, Metadata, SetDV, decode_actions
from tablets.storage.dv import bitmap_from_positions, decode, encode, positions_of, read_dv
from tablets.storage.fileio import LOCAL, join
from tablets.storage.snapshot import Snapshot
from tablets.storage.transaction import begin

UPSERT = (
    "MERGE INTO bench.target t USING source s ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET v = s.v, s = s.s WHEN NOT MATCHED THEN INSERT *"
)
DELETE = "MERGE INTO bench.target t USING source s ON t.id = s.id WHEN MATCHED THEN DELETE"
SYNC = UPSERT + " WHEN NOT MATCHED BY SOURCE AND t.id % 100 = 0 THEN DELETE"
# step: (data.py workload whose source it merges, statement)
STEPS = {
    "upsert-small": ("upsert-small", UPSERT),
    "upsert": ("upsert", UPSERT),
    "sync": ("sync", SYNC),
    "delete": ("delete-heavy", DELETE),
    "again": ("upsert", UPSERT),
}
MiB = 2**20


# --- small helpers -----------------------------------------------------------------------------


def table(header: list[str], rows: list[list[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows])


def spread(values: list[float], fmt: str = "{:,.0f}") -> str:
    """min / median / max."""
    if not values:
        return "-"
    return " / ".join(fmt.format(v) for v in (min(values), statistics.median(values), max(values)))


def mib(n: float) -> str:
    return f"{n / MiB:,.1f}"


def status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))


def reset_peak(pid: str = "self") -> None:
    """Reset a process's peak RSS (VmHWM) to its current RSS."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def peak_kb(pid: str = "self") -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return 0


def java_child() -> str:
    """The pid of this process's JVM (Spark's driver, local mode: the executor too)."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)
            with open(f"/proc/{pid}/comm") as f:
                comm = f.read().strip()
        except OSError:
            continue
        if int(fields[1].split()[1]) == os.getpid() and comm == "java":
            return pid
    return "0"


def jvm_heap_peak(spark) -> int:
    """Sum of the JVM heap pools' peak use since the last call (an upper bound: garbage included)."""
    total = 0
    for pool in spark._jvm.java.lang.management.ManagementFactory.getMemoryPoolMXBeans():
        if str(pool.getType()) == "Heap memory":
            total += int(pool.getPeakUsage().getUsed())
            pool.resetPeakUsage()
    return total


def broadcast_estimate(spark, frame) -> tuple[int | None, bool]:
    """Spark's size estimate of a persisted, counted frame and whether it is within
    spark.sql.autoBroadcastJoinThreshold: how the engine decides to broadcast a MERGE's source
    (its copy of the source has one more BIGINT column, the source row id)."""
    try:
        size = frame._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()
        size = int(size if isinstance(size, int) else size.toString())
        limit = int(spark._jsparkSession.sessionState().conf().autoBroadcastJoinThreshold())
    except Exception:  # noqa: BLE001 - no estimate (Spark Connect)
        return None, False
    return size, limit >= 0 and size <= limit


def measure_load(load, repeat: int) -> dict[str, float]:
    """Median seconds of ``load()`` (tracemalloc off), then the Python memory the result holds and
    the peak while loading (tracemalloc on)."""
    times = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        snap = load()
        times.append(time.perf_counter() - t0)
        del snap
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    snap = load()
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "seconds": statistics.median(times),
        "held": held - before,
        "peak": peak - before,
        "tablets": len(snap.tablets),
        "dvs": snap.num_dvs,
    }


# --- per-task measurement inside Spark's Python workers ------------------------------------------

DV_SENT: dict[str, dict[str, int]] = {}  # per statement: what its scans sent about deletion vectors
NO_DV_SENT = {"scans": 0, "entries": 0, "entry_bytes": 0, "word_broadcasts": 0}
PHASE = {"name": "load"}  # which statement the driver is planning; bound into each task function


def _measured_run(inner, batches, label: str, out: str):
    """Run one task's function, recording its input and its peak memory as one JSON line in ``out``."""
    reset_peak()  # in case the worker is reused (scale.py turns reuse off)
    rss0 = status_kb("VmRSS")
    parent = pa.default_memory_pool()
    pool = pa.proxy_memory_pool(parent)  # this task's Arrow allocations, counted apart
    # buffers keep a raw pointer to the pool that allocated them: it must outlive them (the worker)
    sys.__dict__.setdefault("_tablets_scale_pools", []).append(pool)
    pa.set_memory_pool(pool)
    seen = {"rows": 0, "bytes": 0, "dv": 0, "tablet": 0}

    def counted():
        for b in batches:
            seen["rows"] += b.num_rows
            seen["bytes"] += b.nbytes
            yield b

    t0 = time.perf_counter()
    try:
        for res in inner(counted()):
            for frag in res.column(0).to_pylist():
                if frag:
                    seen["dv" if frag.startswith('{"dv"') else "tablet"] += 1
            yield res
    finally:
        pa.set_memory_pool(parent)
        if seen["rows"]:
            rec = {
                "phase": label,
                "pid": os.getpid(),
                "seconds": round(time.perf_counter() - t0, 3),
                "rows": seen["rows"],
                "arrow_in": seen["bytes"],
                "pool_peak": pool.max_memory(),
                "rss_start_kb": rss0,
                "rss_peak_kb": peak_kb(),
                "dvs": seen["dv"],
                "tablets": seen["tablet"],
            }
            with open(out, "a") as f:
                f.write(json.dumps(rec) + "\n")


LOADS: dict[str, list[float]] = {}  # statement -> seconds of each snapshot load on the driver


def count_snapshot_loads() -> None:
    """Count and time the driver's snapshot loads per statement (every reader goes through log.load_snapshot)."""
    original = log.load_snapshot

    def load(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            LOADS.setdefault(PHASE["name"], []).append(time.perf_counter() - t0)

    log.load_snapshot = load


def count_dv_sends() -> None:
    """What each statement's scans send about deletion vectors: the entries each task reads its
    vectors from (``vectors.live``: one line per tablet with a vector), or the fallback's
    broadcast of 64-bit words (``frames.dv_words_frame``), which grows with the deleted rows."""
    from tablets.spark import frames, vectors

    live, words = vectors.live, frames.dv_words_frame

    def sent() -> dict[str, int]:
        return DV_SENT.setdefault(PHASE["name"], dict(NO_DV_SENT))

    def counted_live(spark, key, row, entries):
        sent()["scans"] += 1
        sent()["entries"] += len(entries)
        sent()["entry_bytes"] += sum(len(f"{k}\t{w}\t{d.size}\t{d.checksum}\t{d.cardinality}\n") for k, w, d in entries)
        return live(spark, key, row, entries)

    def counted_words(*args, **kwargs):
        sent()["word_broadcasts"] += 1
        return words(*args, **kwargs)

    vectors.live = counted_live
    frames.dv_words_frame = counted_words


def install_task_probes(out: str) -> None:
    """Wrap the engine's task functions (as the write streams and appends imported them) with
    ``_measured_run``."""
    from tablets.engine import append, streams

    def wrap(factory):
        def make(*args, **kwargs):
            inner, label = factory(*args, **kwargs), PHASE["name"]
            return lambda batches: _measured_run(inner, batches, label, out)

        return make

    streams.merge_task = wrap(streams.merge_task)
    streams.insert_task = wrap(streams.insert_task)
    append.insert_task = wrap(append.insert_task)


# --- the measured table --------------------------------------------------------------------------


def log_files(t: TabletTable) -> list[dict[str, object]]:
    out = []
    for f in t.io.list(log.log_dir(t.root)):
        if not f.name.endswith(".json"):
            continue
        text = t.io.read(f.path)
        if f.name.endswith(".checkpoint.json"):  # its first line is the checkpoint's own header
            text = text.split(b"\n", 1)[1]
        actions = decode_actions(text)
        kinds: dict[str, int] = {}
        for a in actions:
            kinds[type(a).__name__] = kinds.get(type(a).__name__, 0) + 1
        info = next((a for a in actions if isinstance(a, CommitInfo)), None)
        lines = text.decode().splitlines()
        add_lines = [len(x) + 1 for x in lines if x.startswith('{"add_tablet"')]
        dv_lines = [len(x) + 1 for x in lines if x.startswith('{"set_dv"')]
        out.append(
            {
                "name": f.name,
                "bytes": f.size,
                "operation": info.operation if info else "checkpoint",
                "actions": kinds,
                "add_line": statistics.mean(add_lines) if add_lines else None,
                "dv_line": statistics.mean(dv_lines) if dv_lines else None,
            }
        )
    return out


def tablet_summary(snap: Snapshot) -> dict[str, object]:
    rows = [st.add.rows for st in snap.tablets.values()]
    size = [st.add.bytes for st in snap.tablets.values()]
    return {"tablets": len(rows), "rows": rows, "bytes": size, "total_rows": sum(rows), "total_bytes": sum(size)}


def dv_summary(t: TabletTable, snap: Snapshot) -> dict[str, object]:
    """The live DVs: sizes, cardinalities, densities, and the rows and Arrow bytes of the
    (file name, word, bits) table that a scan of every tablet broadcasts (frames.dv_words_frame)."""
    sizes, cards, density, words = [], [], [], 0
    words_bytes = 0
    t0 = time.perf_counter()
    for st in snap.tablets.values():
        if st.dv is None:
            continue
        bm = read_dv(t.io, join(t.root, st.dv.path))
        pos = positions_of(bm)
        n = len(np.unique(pos >> np.uint64(6)))
        words += n
        words_bytes += n * (4 + len(st.add.path.rsplit("/", 1)[-1]) + 8 + 8)  # offsets + name, word, bits
        sizes.append(st.dv.size)
        cards.append(st.dv.cardinality)
        density.append(st.dv.cardinality / st.add.rows)
    return {
        "dvs": len(sizes),
        "sizes": sizes,
        "cards": cards,
        "density": density,
        "words": words,
        "words_bytes": words_bytes,
        "read_seconds": time.perf_counter() - t0,
    }


def run_table(args: argparse.Namespace) -> dict[str, object]:
    import tablets

    work = os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    probes = os.path.join(work, "tasks.jsonl")
    if os.path.exists(probes):
        os.remove(probes)
    install_task_probes(probes)
    count_snapshot_loads()
    count_dv_sends()
    root = os.path.join(work, "table")
    res: dict[str, object] = {"rows": args.rows}

    t0 = time.perf_counter()
    data_dir = data.generate(args.rows, args.seed, args.cache)
    res["data_seconds"] = time.perf_counter() - t0
    print(f"data {data_dir} ({res['data_seconds']:.0f} s)", flush=True)

    # a fresh Python worker per task, so that each task's peak RSS is its own
    conf = {
        "spark.driver.memory": args.memory,
        "spark.sql.shuffle.partitions": str(args.shuffle_partitions),
        "spark.python.worker.reuse": "true" if args.reuse_workers else "false",
        **dict(kv.split("=", 1) for kv in args.conf),
    }
    db = tablets.connect(warehouse=os.path.join(work, "wh"), master="local[2]", conf=conf)
    jvm = java_child()
    db.sql("CREATE DATABASE IF NOT EXISTS bench")
    db.sql("DROP TABLE IF EXISTS bench.target")
    shutil.rmtree(root, ignore_errors=True)
    db.sql(f"CREATE TABLE bench.target (id BIGINT, k INT, v DOUBLE, s STRING, d DATE) USING tablets LOCATION '{root}'")
    PHASE["name"] = "load"
    driver: dict[str, dict[str, float]] = {}

    rss_at_start = {"kb": 0}

    def start() -> float:
        rss_at_start["kb"] = status_kb("VmRSS")
        reset_peak()
        reset_peak(jvm)
        jvm_heap_peak(db.spark)
        return time.perf_counter()

    def done(step: str, t0: float) -> float:
        wall = time.perf_counter() - t0
        driver[step] = {
            "python_peak_mb": peak_kb() / 1024,
            "python_start_mb": rss_at_start["kb"] / 1024,
            "jvm_rss_peak_mb": peak_kb(jvm) / 1024,
            "jvm_heap_peak_mb": jvm_heap_peak(db.spark) / MiB,
        }
        return wall

    t0 = start()
    db.sql(f"INSERT INTO bench.target SELECT * FROM parquet.`{data.paths(data_dir, 'upsert')[0]}`")
    res["load_seconds"] = done("load", t0)
    t = TabletTable(root)
    res["built"] = tablet_summary(t.snapshot())
    print(f"loaded in {res['load_seconds']:.0f} s: {res['built']['tablets']} tablets", flush=True)  # type: ignore[index]

    merges = {}
    for step in args.merges.split(","):
        source, statement = STEPS[step]
        frame = db.spark.read.parquet(data.paths(data_dir, source)[1])
        frame.createOrReplaceTempView("source")
        # what the engine decides from: the persisted source's size estimate against the broadcast threshold
        cached = frame.persist()
        cached.count()
        source_size, broadcast = broadcast_estimate(db.spark, cached)
        cached.unpersist(blocking=True)
        PHASE["name"] = step
        t0 = start()
        out = db.sql(statement)
        wall = done(step, t0)
        m = out.metrics  # type: ignore[union-attr]
        merges[step] = {
            "wall": wall,
            "version": m.version,
            "source_rows": m.source_rows,
            "source_size": source_size,
            "broadcast": broadcast,
            "inserted": m.rows_inserted,
            "updated": m.rows_updated,
            "deleted": m.rows_deleted,
            "unchanged": m.rows_unchanged,
            "tablets_scanned": m.tablets_scanned,
            "tablets_added": m.tablets_added,
            "dvs_written": m.dvs_written,
            "bytes_written": m.bytes_written,
            "timings_ms": m.timings_ms,
        }
        print(f"{step}: {wall:.1f} s {m.message()} {m.timings_ms}", flush=True)
    res["merges"] = merges
    for step, v in driver.items():
        v["snapshot_loads"], v["snapshot_load_ms"] = len(LOADS.get(step, [])), 1000 * sum(LOADS.get(step, []))
        v["dv_sent"] = DV_SENT.get(step, NO_DV_SENT)
    res["driver"] = driver
    PHASE["name"] = "after"
    db.spark.stop()

    # the snapshot: replayed from the versions, then from a forced checkpoint
    snap = t.snapshot()
    res["final"] = tablet_summary(snap)
    res["load_replay"] = measure_load(lambda: log.load_snapshot(t.io, t.root), args.repeat)
    t0 = time.perf_counter()
    log.write_checkpoint(t.io, t.root, snap)
    res["checkpoint_write_seconds"] = time.perf_counter() - t0
    res["load_checkpoint"] = measure_load(lambda: log.load_snapshot(t.io, t.root), args.repeat)
    res["log"] = log_files(t)
    res["dv"] = dv_summary(t, snap)
    handle = begin(snap, t.root, "MERGE", delete_from=snap.tablets, read_tablets=snap.tablets, io=t.io)
    res["handle_pickle"] = len(pickle.dumps(handle))
    res["tasks"] = []
    if os.path.exists(probes):
        with open(probes) as f:
            res["tasks"] = [json.loads(line) for line in f]
    res["disk_bytes"] = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(root) for f in fs)
    return res


def report_table(res: dict) -> str:
    b, f = res["built"], res["final"]
    n = res["rows"]
    out = [f"### Measured table: {n:,} rows", ""]
    rows = []
    for name, s in (("after INSERT", b), ("after the MERGEs", f)):
        rows.append(
            [
                name,
                s["tablets"],
                spread(s["rows"]),
                spread([x / MiB for x in s["bytes"]], "{:,.1f}"),
                f"{s['total_bytes'] / s['total_rows']:.1f}",
                mib(s["total_bytes"]),
            ]
        )
    out += [
        table(
            [
                "state",
                "tablets",
                "rows per tablet min / med / max",
                "MiB per tablet min / med / max",
                "bytes per row",
                "tablet MiB total",
            ],
            rows,
        ),
        "",
    ]
    out += [
        f"Load (INSERT ... SELECT from Parquet): {res['load_seconds']:.1f} s; whole table directory at the end "
        f"{mib(res['disk_bytes'])} MiB.",
        "",
    ]
    rows = []
    for e in res["log"]:
        acts = ", ".join(f"{k} {v}" for k, v in sorted(e["actions"].items()))
        rows.append(
            [
                e["name"],
                e["operation"],
                f"{e['bytes']:,}",
                acts,
                "-" if e["add_line"] is None else f"{e['add_line']:.0f}",
                "-" if e["dv_line"] is None else f"{e['dv_line']:.0f}",
            ]
        )
    out += [
        table(
            ["log file", "operation", "bytes", "actions", "bytes per add_tablet line", "bytes per set_dv line"], rows
        ),
        "",
    ]
    out += [
        table(
            [
                "statement",
                "driver Python RSS at start / peak MiB",
                "driver JVM peak RSS MiB (executor too: local)",
                "JVM heap peak MiB",
                "snapshot loads (ms in all)",
                "scans with DVs: entries sent (bytes)",
                "DV word broadcasts",
            ],
            [
                [
                    k,
                    f"{v.get('python_start_mb', 0):,.0f} / {v['python_peak_mb']:,.0f}",
                    f"{v['jvm_rss_peak_mb']:,.0f}",
                    f"{v['jvm_heap_peak_mb']:,.0f}",
                    f"{v['snapshot_loads']} ({v['snapshot_load_ms']:.0f})",
                    f"{v['dv_sent']['scans']}: {v['dv_sent']['entries']} ({v['dv_sent']['entry_bytes']:,})",
                    v["dv_sent"]["word_broadcasts"],
                ]
                for k, v in res["driver"].items()
            ],
        ),
        "",
    ]
    rows = []
    for step, m in res["merges"].items():
        rows.append(
            [
                step,
                f"{m['wall']:.1f}",
                f"{m['source_rows']:,}",
                f"{mib(m['source_size'] or 0)} ({'broadcast' if m['broadcast'] else 'shuffle join'})",
                f"{m['inserted']:,}",
                f"{m['updated']:,}",
                f"{m['deleted']:,}",
                m["tablets_scanned"],
                m["tablets_added"],
                m["dvs_written"],
                mib(m["bytes_written"]),
                ", ".join(f"{k} {v / 1000:.1f}" for k, v in m["timings_ms"].items() if k != "total"),
            ]
        )
    out += [
        table(
            [
                "MERGE",
                "wall s",
                "source rows",
                "source MiB (Spark's estimate), join",
                "inserted",
                "updated",
                "deleted",
                "tablets scanned",
                "tablets added",
                "DVs written",
                "MiB written",
                "phases s",
            ],
            rows,
        ),
        "",
    ]
    rows = []
    for what in ("load_replay", "load_checkpoint"):
        s = res[what]
        rows.append(
            [
                what.replace("load_", "from "),
                s["tablets"],
                s["dvs"],
                f"{s['seconds'] * 1000:.1f}",
                f"{s['held'] / 1024:,.0f}",
                f"{s['held'] / s['tablets']:,.0f}",
                f"{s['peak'] / 1024:,.0f}",
            ]
        )
    out += [
        table(
            [
                "snapshot load",
                "tablets",
                "DVs",
                "ms (median)",
                "held KiB",
                "held bytes per tablet",
                "peak KiB while loading",
            ],
            rows,
        ),
        "",
    ]
    out += [
        f"Checkpoint written in {res['checkpoint_write_seconds'] * 1000:.0f} ms; a MERGE's write handle "
        f"(every tablet's rows and DV, shipped to each task) pickles to {res['handle_pickle']:,} bytes.",
        "",
    ]
    d = res["dv"]
    if d["dvs"]:
        out += [
            table(
                [
                    "DVs",
                    "bytes min / med / max",
                    "cardinality min / med / max",
                    "density min / med / max",
                    "bytes per deleted row",
                    "words the fallback would broadcast",
                    "their Arrow MiB",
                    "read all DVs s",
                ],
                [
                    [
                        d["dvs"],
                        spread(d["sizes"]),
                        spread(d["cards"]),
                        spread(d["density"], "{:.2%}"),
                        f"{sum(d['sizes']) / max(1, sum(d['cards'])):.3f}",
                        f"{d['words']:,}",
                        mib(d["words_bytes"]),
                        f"{d['read_seconds']:.2f}",
                    ]
                ],
            ),
            "",
        ]
    rows = []
    for step in ["load", *res["merges"]]:
        ts = [x for x in res["tasks"] if x["phase"] == step]
        if not ts:
            continue
        shuffled = sum(x["rows"] for x in ts)
        worst = max(ts, key=lambda x: x["rss_peak_kb"] - x["rss_start_kb"])
        rows.append(
            [
                step,
                len(ts),
                f"{shuffled:,}",
                spread([x["rows"] for x in ts]),
                spread([x["arrow_in"] / MiB for x in ts], "{:,.1f}"),
                spread([x["pool_peak"] / MiB for x in ts], "{:,.1f}"),
                spread([(x["rss_peak_kb"] - x["rss_start_kb"]) / 1024 for x in ts], "{:,.0f}"),
                f"{worst['rss_peak_kb'] / 1024:,.0f}",
                f"{max(x['pool_peak'] / x['rows'] for x in ts):,.0f}",
                f"{max(x['dvs'] for x in ts)} / {max(x['tablets'] for x in ts)}",
                spread([x["seconds"] for x in ts], "{:,.1f}"),
            ]
        )
    out += [
        table(
            [
                "tasks of",
                "tasks",
                "rows in (all)",
                "rows in per task min / med / max",
                "Arrow MiB in per task",
                "Arrow pool peak MiB per task",
                "RSS growth MiB per task",
                "worker peak RSS MiB",
                "max pool peak bytes per row",
                "max DVs / tablets written by a task",
                "task s",
            ],
            rows,
        )
    ]
    return "\n".join(out)


# --- synthetic: deletion vectors -----------------------------------------------------------------


def dv_cases(rows: int, rng: np.random.Generator) -> list[tuple[str, np.ndarray]]:
    def random(frac: float) -> np.ndarray:
        return rng.choice(rows, int(rows * frac), replace=False)

    def runs(count: int, frac: float) -> np.ndarray:
        length = int(rows * frac) // count
        starts = np.sort(rng.choice(rows // length, count, replace=False)) * length
        return (starts[:, None] + np.arange(length)[None, :]).ravel()

    return [
        ("random 0.1%", random(0.001)),
        ("random 0.5%", random(0.005)),
        ("random 1%", random(0.01)),
        ("random 10%", random(0.10)),
        ("random 50%", random(0.50)),
        ("every 10th row (10%)", np.arange(0, rows, 10)),
        ("one range of 10%", np.arange(rows // 3, rows // 3 + rows // 10)),
        ("100 ranges, 10% in all", runs(100, 0.10)),
        ("1,000 ranges, 1% in all", runs(1000, 0.01)),
        ("all rows", np.arange(rows)),
    ]


def run_dvs(rows: int) -> list[list[object]]:
    rng = np.random.default_rng(7)
    out = []
    for name, pos in dv_cases(rows, rng):
        t0 = time.perf_counter()
        body = encode(bitmap_from_positions(pos))
        t1 = time.perf_counter()
        decode(body)
        t2 = time.perf_counter()
        out.append(
            [
                name,
                f"{len(pos):,}",
                f"{len(body):,}",
                f"{len(body) / len(pos):.3f}",
                f"{(t1 - t0) * 1000:.1f}",
                f"{(t2 - t1) * 1000:.1f}",
            ]
        )
    return out


# --- synthetic: the log and the snapshot for many tablets ------------------------------------------

TYPES = ("bigint", "int", "double", "string", "date")


def synthetic_schema(columns: int) -> tuple[tuple[str, str, bool], ...]:
    base = [("id", "bigint"), ("k", "int"), ("v", "double"), ("s", "string"), ("d", "date")]
    cols = base[:columns] + [(f"col_{i:03d}", TYPES[i % 5]) for i in range(len(base), columns)]
    return tuple((n, ty, True) for n, ty in cols)


def synthetic_add(i: int, schema, rng: np.random.Generator, rows: int = 1_000_000) -> AddTablet:
    stats = []
    for name, ty, _ in schema:
        if ty == "bigint":
            lo, hi = int(rng.integers(0, 1000)), int(rng.integers(999_000_000, 1_000_000_000))
        elif ty == "int":
            lo, hi = int(rng.integers(0, 5)), int(rng.integers(995, 1000))
        elif ty == "double":
            lo, hi = float(rng.integers(0, 64)) / 64, float(rng.integers(2**20 - 64, 2**20)) / 64
        elif ty == "string":
            lo = "a" + "".join(chr(c) for c in rng.integers(97, 123, 19))
            hi = "z" + "".join(chr(c) for c in rng.integers(97, 123, 19))
        else:
            lo, hi = f"2020-01-0{rng.integers(1, 10)}", f"2023-12-{rng.integers(20, 32)}"
        stats.append((name, ColumnStats(lo, hi, 0)))
    tid = f"{rng.integers(0, 2**63):016x}{i:016x}"
    return AddTablet(
        tid, f"tablets/{tid}.parquet", rows, 30_000_000 + int(rng.integers(0, 10**6)), tuple(stats), f"{i:032x}"
    )


def synthetic_dv(tid: str, version: int, rng: np.random.Generator) -> SetDV:
    return SetDV(
        tid,
        f"dv/{tid}-{version:032x}.bin",
        int(rng.integers(1, 100_000)),
        int(rng.integers(100, 200_000)),
        f"{int(rng.integers(0, 2**32)):08x}",
    )


def run_synthetic(tablets: int, columns: int, repeat: int) -> dict[str, object]:
    """Log files for a table of ``tablets`` tablets (no data): version 1 adds them all, versions
    2..50 are small MERGEs (1 tablet added, 10 DVs set), then a checkpoint at 50 with a DV on
    every tablet. Loads: 51 versions without a checkpoint, the checkpoint at 1 + 49 versions,
    the checkpoint at 50 alone."""
    rng = np.random.default_rng(tablets + columns)
    root = tempfile.mkdtemp(prefix="tablets-scale-synth-")
    io = LOCAL
    try:
        schema = synthetic_schema(columns)
        meta = Metadata("0" * 32, schema, ("id",), (("target_tablet_rows", "1000000"),), 0)
        v0 = [meta, CommitInfo("CREATE TABLE", "0" * 32, 0, -1)]
        log.write_version(io, root, None, snap := log.apply_version(None, 0, v0), v0)
        adds = [synthetic_add(i, schema, rng) for i in range(tablets)]
        t0 = time.perf_counter()
        v1 = [*adds, CommitInfo("APPEND", "1" * 32, 0, 0)]
        log.write_version(io, root, snap, after := log.apply_version(snap, 1, v1), v1)
        write_v1 = time.perf_counter() - t0
        snap = after
        ids = [a.tablet_id for a in adds]
        for v in range(2, 51):
            new = synthetic_add(tablets + v, schema, rng, rows=5000)
            dvs = [synthetic_dv(ids[j], v, rng) for j in rng.choice(len(ids), min(10, len(ids)), replace=False)]
            acts = [new, *dvs, CommitInfo("MERGE", f"{v:032x}", 0, v - 1)]
            log.write_version(io, root, snap, after := log.apply_version(snap, v, acts), acts)
            snap = after
            ids.append(new.tablet_id)
        v1_bytes = os.path.getsize(join(log.log_dir(root), log.version_name(1)))
        small = os.path.getsize(join(log.log_dir(root), log.version_name(2)))
        res: dict[str, object] = {
            "tablets": tablets,
            "columns": columns,
            "v1_bytes": v1_bytes,
            "write_v1": write_v1,
            "small_version_bytes": small,
        }
        res["replay51"] = measure_load(lambda: log.load_snapshot(io, root), repeat)
        # a checkpoint at 1, then 49 versions to replay
        snap1 = log.load_snapshot(io, root, 1)
        log.write_checkpoint(io, root, snap1)
        del snap1
        res["cp1_plus49"] = measure_load(lambda: log.load_snapshot(io, root), repeat)
        # every tablet with a DV, checkpointed at 50: the largest state a reader starts from
        snap = log.load_snapshot(io, root)
        tabs = dict(snap.tablets)
        for tid, st in tabs.items():
            tabs[tid] = type(st)(st.add, synthetic_dv(tid, 50, rng))
        full = Snapshot(50, snap.metadata, tabs)
        t0 = time.perf_counter()
        log.write_checkpoint(io, root, full)
        res["checkpoint_write"] = time.perf_counter() - t0
        res["checkpoint_bytes"] = os.path.getsize(join(log.log_dir(root), log.checkpoint_name(50)))
        res["cp50"] = measure_load(lambda: log.load_snapshot(io, root), repeat)
        handle = begin(full, root, "MERGE", delete_from=full.tablets, read_tablets=full.tablets, io=io)
        t0 = time.perf_counter()
        res["handle_pickle"] = len(pickle.dumps(handle))
        res["handle_seconds"] = time.perf_counter() - t0
        return res
    finally:
        shutil.rmtree(root, ignore_errors=True)


def report_synthetic(results: list[dict]) -> str:
    rows = []
    for r in results:
        n = r["tablets"]
        rows.append(
            [
                f"{n:,}",
                r["columns"],
                mib(r["v1_bytes"]),
                f"{r['v1_bytes'] / n:,.0f}",
                f"{r['small_version_bytes']:,}",
                mib(r["checkpoint_bytes"]),
                f"{r['checkpoint_write']:.2f}",
                f"{r['replay51']['seconds']:.2f}",
                f"{r['cp1_plus49']['seconds']:.2f}",
                f"{r['cp50']['seconds']:.2f}",
                mib(r["cp50"]["held"]),
                f"{r['cp50']['held'] / r['cp50']['tablets']:,.0f}",
                mib(r["cp50"]["peak"]),
                mib(r["handle_pickle"]),
            ]
        )
    return table(
        [
            "tablets",
            "columns",
            "version of N adds MiB",
            "bytes per add_tablet",
            "small MERGE version bytes",
            "checkpoint (N adds + N DVs) MiB",
            "checkpoint write s",
            "load: 51 versions s",
            "load: checkpoint + 49 versions s",
            "load: checkpoint s",
            "snapshot held MiB",
            "held bytes per tablet",
            "peak while loading MiB",
            "write handle pickle MiB",
        ],
        rows,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description="Scale measurements for docs/SCALE.md")
    ap.add_argument("--rows", type=int, default=10_000_000, help="target rows N; 0 for the synthetic parts only")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument(
        "--merges",
        default="upsert,delete",
        help="of upsert-small,upsert,sync,delete,again, in order: again = the upsert after the deletes "
        "(a scan with 10%% DVs); upsert-small a 0.1%% source, sync the upsert with a BY SOURCE delete",
    )
    ap.add_argument("--memory", default="4g", help="spark.driver.memory")
    ap.add_argument("--shuffle-partitions", type=int, default=4, help="spark.sql.shuffle.partitions (the engine's 4)")
    ap.add_argument(
        "--reuse-workers",
        action="store_true",
        help="keep Spark's Python worker reuse (default: off, so each task's peak RSS is its own)",
    )
    ap.add_argument(
        "--conf",
        action="append",
        default=[],
        help="k=v for the session, repeatable (spark.tablets.merge.driverScanBytes=0: Spark's plan, as on a cluster)",
    )
    ap.add_argument("--repeat", type=int, default=3, help="timed snapshot loads; the median is reported")
    ap.add_argument("--synthetic", default="1000,10000,100000", help="tablet counts of the synthetic logs; '' for none")
    ap.add_argument("--columns", default="5,50", help="column counts of the synthetic logs (stats per column)")
    ap.add_argument("--dv-rows", type=int, default=1_000_000, help="rows of the synthetic DV's tablet")
    ap.add_argument("--cache", default=data.DEFAULT_CACHE, help="bench data cache (data.py)")
    ap.add_argument("--work", default=None, help="table and warehouse (default /tmp/tablets-scale/ROWS)")
    ap.add_argument("--keep", action="store_true", help="keep the table afterwards")
    ap.add_argument("--json", default=None, help="also write every figure to this JSON file")
    args = ap.parse_args()
    args.work = args.work or f"/tmp/tablets-scale/{args.rows}"
    started = datetime.datetime.now(datetime.UTC)
    import subprocess

    rev = subprocess.run(
        ["git", "-C", os.path.dirname(os.path.abspath(__file__)), "describe", "--always", "--dirty"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    print(
        f"dbt-tablets {rev}; {started:%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.1f}, "
        f"Python {platform.python_version()}, pyarrow {pa.__version__}, numpy {np.__version__}",
        flush=True,
    )
    results: dict[str, object] = {"started": f"{started:%Y-%m-%d %H:%M}", "argv": sys.argv[1:]}
    sections = []

    if args.rows:
        res = run_table(args)
        results["table"] = res
        sections.append(report_table(res))
        if not args.keep:
            shutil.rmtree(os.path.join(os.path.abspath(args.work), "table"), ignore_errors=True)

    sections.append(
        f"### Synthetic deletion vectors: one tablet of {args.dv_rows:,} rows\n\n"
        + table(
            ["deleted rows", "count", "DV file bytes", "bytes per deleted row", "build + encode ms", "decode ms"],
            run_dvs(args.dv_rows),
        )
    )

    synth = []
    for n in [int(x) for x in args.synthetic.split(",") if x]:
        for c in [int(x) for x in args.columns.split(",") if x]:
            print(f"synthetic log: {n:,} tablets x {c} columns ...", flush=True)
            synth.append(run_synthetic(n, c, args.repeat if n <= 10_000 else 1))
            gc.collect()
    if synth:
        results["synthetic"] = synth
        sections.append("### Synthetic logs (no data): the snapshot of N tablets\n\n" + report_synthetic(synth))

    print("\n" + "\n\n".join(sections))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1, default=str)
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
