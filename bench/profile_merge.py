"""Where a MERGE's seconds go: per Spark job and stage, from Spark's event log.

    .venv/bin/python bench/profile_merge.py --rows 10000000 --workloads upsert,no-op --repeat 3
    .venv/bin/python bench/profile_merge.py --rows 10000000 --workloads upsert --system spark_floor --tasks

Loads the benchmark target (bench/data.py) into a tablet table once, then per workload restores
it, runs the statement and prints the engine's phase timings and every Spark job the statement
ran: wall time, stages, tasks, the stages' summed task time, input and shuffle bytes (``--tasks``:
each task's start, length and shuffle records). ``--system spark_floor`` profiles the floor's
statement (``systems.SparkFloor``) the same way. Profiling only: the ratios against peers are
bench/merge.py's.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import glob
import json
import os
import pstats
import shutil
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import data
import systems


class Profiled(systems.Ours):
    def open(self) -> None:
        import tablets

        if getattr(self, "db", None) is None:
            self.events = os.path.join(self.work, "events")
            os.makedirs(self.events, exist_ok=True)
            self.db = tablets.connect(
                warehouse=os.path.join(self.work, "wh"),
                master="local[2]",
                conf={
                    "spark.driver.memory": self.memory,
                    **EVENT_LOG,
                    "spark.eventLog.dir": self.events,
                    **getattr(self, "extra", {}),
                },
            )
            self.spark = self.db.spark


EVENT_LOG = {"spark.eventLog.enabled": "true", "spark.eventLog.compress": "false"}


class ProfiledFloor(systems.SparkFloor):
    def open(self) -> None:
        if getattr(self, "spark", None) is None:
            self.events = os.path.join(self.work, "events")
            os.makedirs(self.events, exist_ok=True)
            self.CONF = {**EVENT_LOG, "spark.eventLog.dir": self.events, **getattr(self, "extra", {})}
        super().open()


def _events(directory: str) -> list[dict]:
    out = []
    for path in glob.glob(os.path.join(directory, "**", "*"), recursive=True):
        if os.path.isdir(path):
            continue
        with open(path) as f:
            for line in f:
                with contextlib.suppress(json.JSONDecodeError):  # a line still being written
                    out.append(json.loads(line))
    return out


def jobs_between(events: list[dict], start_ms: float, end_ms: float) -> list[dict]:
    """The jobs that started in [start, end], with their stages' metrics and tasks."""
    stages: dict[int, dict] = {}
    tasks_of: dict[int, list[dict]] = {}
    for e in events:
        if e.get("Event") == "SparkListenerTaskEnd":
            info, metrics = e["Task Info"], e.get("Task Metrics") or {}
            tasks_of.setdefault(e["Stage ID"], []).append(
                {
                    "launch": info["Launch Time"],
                    "ms": info["Finish Time"] - info["Launch Time"],
                    "read": (metrics.get("Shuffle Read Metrics") or {}).get("Total Records Read", 0),
                    "written": (metrics.get("Shuffle Write Metrics") or {}).get("Shuffle Records Written", 0),
                }
            )
    for e in events:
        if e.get("Event") == "SparkListenerStageCompleted":
            info = e["Stage Info"]
            tasks = {"run_ms": 0, "input": 0, "shuffle_read": 0, "shuffle_write": 0}
            for acc in info.get("Accumulables", []):
                name, value = acc.get("Name"), acc.get("Value")
                if name == "internal.metrics.executorRunTime":
                    tasks["run_ms"] = int(value)
                elif name == "internal.metrics.input.bytesRead":
                    tasks["input"] = int(value)
                elif name in (
                    "internal.metrics.shuffle.read.remoteBytesRead",
                    "internal.metrics.shuffle.read.localBytesRead",
                ):
                    tasks["shuffle_read"] += int(value)
                elif name == "internal.metrics.shuffle.write.bytesWritten":
                    tasks["shuffle_write"] = int(value)
            stages[info["Stage ID"]] = {
                "id": info["Stage ID"],
                "name": info["Stage Name"].replace("/work/main/", ""),
                "tasks": info["Number of Tasks"],
                "ms": info.get("Completion Time", 0) - info.get("Submission Time", 0),
                **tasks,
                "task_list": sorted(tasks_of.get(info["Stage ID"], []), key=lambda t: t["launch"]),
            }
    jobs, ends = [], {}
    for e in events:
        if e.get("Event") == "SparkListenerJobEnd":
            ends[e["Job ID"]] = e["Completion Time"]
    for e in events:
        if e.get("Event") == "SparkListenerJobStart" and start_ms <= e["Submission Time"] <= end_ms:
            ids = e.get("Stage IDs", [])
            jobs.append(
                {
                    "job": e["Job ID"],
                    "ms": ends.get(e["Job ID"], e["Submission Time"]) - e["Submission Time"],
                    "offset_ms": e["Submission Time"] - start_ms,
                    "stages": [stages[i] for i in ids if i in stages],
                }
            )
    return jobs


def _trace_planning() -> None:
    """Print the JVM's analysis / optimization / planning time of every collect and count."""
    from pyspark.sql.classic.dataframe import DataFrame

    def wrap(name: str):
        orig = getattr(DataFrame, name)

        def run(self, *a, **k):
            t = time.perf_counter()
            try:
                return orig(self, *a, **k)
            finally:
                wall = (time.perf_counter() - t) * 1000
                phases = self._jdf.queryExecution().tracker().phases()
                it = phases.keySet().iterator()
                parts = []
                while it.hasNext():
                    key = it.next()
                    ph = phases.get(key).get()
                    parts.append(f"{key} {ph.durationMs()} ms")
                print(f"    [{name} {wall:.0f} ms: {', '.join(parts)}]")

        setattr(DataFrame, name, run)

    for n in ("collect", "count", "toArrow"):
        wrap(n)


class _Py4jTrace:
    """Every py4j call to the JVM of one run: its milliseconds, the command and the line of
    the package (or bench) that made it, printed in order (the driver's round trips)."""

    def __init__(self) -> None:
        from py4j import clientserver

        self.calls: list[tuple[float, float, str, str]] = []
        self.on = False
        cls = clientserver.ClientServerConnection
        orig = cls.send_command
        trace = self

        def send(conn, command, *a, **k):
            if not trace.on:
                return orig(conn, command, *a, **k)
            t = time.perf_counter()
            try:
                return orig(conn, command, *a, **k)
            finally:
                trace.calls.append((t, time.perf_counter() - t, " ".join(command.split("\n")[:3]), _caller()))

        cls.send_command = send

    def print(self, start: float) -> None:
        for t, ms, command, caller in self.calls:
            print(f"    +{(t - start) * 1000:6.1f} ms {ms * 1000:6.1f} ms  {caller:50s} {command[:70]}")
        print(f"    {len(self.calls)} calls, {sum(c[1] for c in self.calls) * 1000:.1f} ms")
        self.calls.clear()


def _caller() -> str:
    f = sys._getframe(2)
    while f is not None:
        name = f.f_code.co_filename
        if "/tablets/" in name or "/bench/" in name:
            return f"{name.rsplit('/', 1)[-1]}:{f.f_lineno} {f.f_code.co_name}"
        f = f.f_back
    return "?"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--workloads", default="upsert,sync,no-op,insert-only")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--memory", default="4g")
    ap.add_argument("--work", default="/tmp/tablets-bench/profile")
    ap.add_argument("--conf", action="append", default=[], help="k=v: a Spark setting of the session")
    ap.add_argument("--phases", action="store_true", help="print Spark's planning phases of every collect/count")
    ap.add_argument("--cprofile", action="store_true", help="also print the driver's Python profile of the last run")
    ap.add_argument("--lines", type=int, default=45, help="--cprofile's lines (by cumulative time)")
    ap.add_argument("--py4j", action="store_true", help="also print every py4j call of the last run to the JVM")
    ap.add_argument("--system", choices=("ours", "spark_floor"), default="ours")
    ap.add_argument("--tasks", action="store_true", help="also print each task: start, ms, shuffle records")
    args = ap.parse_args()
    data_dir = data.generate(args.rows)
    work = os.path.join(args.work, str(args.rows))
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    sys_ = (Profiled if args.system == "ours" else ProfiledFloor)(data_dir, work, args.memory)
    sys_.extra = dict(c.split("=", 1) for c in args.conf)
    if args.phases:
        _trace_planning()
    py4j = _Py4jTrace() if args.py4j else None
    sys_.open()
    t = time.perf_counter()
    sys_.load()
    shutil.copytree(sys_.live, sys_.pristine("upsert"))
    if "no-op" in args.workloads.split(","):
        sys_.prepare_noop()
    print(f"loaded {args.rows:,} rows in {time.perf_counter() - t:.1f} s")
    for w in args.workloads.split(","):
        walls = []
        for run in range(args.repeat + 1):
            sys_.restore(w)
            start = time.time() * 1000
            prof = cProfile.Profile() if args.cprofile and run == args.repeat else None
            traced = py4j is not None and run == args.repeat
            t = time.perf_counter()
            if prof:
                prof.enable()
            if traced:
                py4j.on = True
            res = sys_.merge(w)
            wall = time.perf_counter() - t
            if traced:
                py4j.on = False
                py4j.print(t)
            if prof:
                prof.disable()
                pstats.Stats(prof).sort_stats("cumulative").print_stats(args.lines)
            end = time.time() * 1000
            if run == 0:
                continue  # warm-up
            walls.append(wall)
            time.sleep(0.5)  # let the event log flush
            jobs = jobs_between(_events(sys_.events), start, end)
            print(f"\n{w} run {run}: {wall:.2f} s  {res['timings_ms'] if res else ''}")  # type: ignore[index]
            if res:
                print(f"  {res['message']}")  # type: ignore[index]
            for j in jobs:
                print(f"  job {j['job']} +{j['offset_ms']:.0f} ms: {j['ms']} ms")
                for s in j["stages"]:
                    mib = {k: s[k] / 2**20 for k in ("input", "shuffle_read", "shuffle_write")}
                    print(
                        f"    stage {s['id']} {s['name']}: {s['ms']} ms, {s['tasks']} tasks, "
                        f"task time {s['run_ms']} ms, in {mib['input']:.1f} MiB, "
                        f"shuffle r/w {mib['shuffle_read']:.1f}/{mib['shuffle_write']:.1f} MiB"
                    )
                    first = s["task_list"][0]["launch"] if args.tasks and s["task_list"] else 0
                    for task in s["task_list"] if args.tasks else ():
                        print(
                            f"      task +{task['launch'] - first} ms: {task['ms']} ms, "
                            f"shuffle records r/w {task['read']}/{task['written']}"
                        )
        print(f"\n{w}: median {statistics.median(walls):.2f} s of {len(walls)}")


if __name__ == "__main__":
    main()
