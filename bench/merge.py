"""MERGE benchmark: ours against its peers on the same data and statements (see shared BENCH.md).

    .venv/bin/python bench/merge.py --rows 1000000 --workloads upsert,sync --systems ours,duckdb --repeat 3

Each system runs in its own process (systems.py): duckdb and deltalake on bench/.venv-peers, made
here on first use. Prints medians, ratios ours/peer, bytes written and checks that every system's
final table equals the reference answer; appends the tables to bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy
import pyarrow

import data
import systems

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS_VENV = os.path.join(HERE, ".venv-peers")
PEERS_PACKAGES = ["duckdb", "deltalake", "pyarrow", "numpy"]
ALL_SYSTEMS = list(systems.SYSTEMS)


def python_for(system: str) -> str:
    if system not in systems.PEER_VENV:
        return sys.executable
    py = os.path.join(PEERS_VENV, "bin", "python")
    if not os.path.exists(py):  # made once; its packages are whatever the index serves that day (versions recorded)
        print(f"creating {PEERS_VENV} ...", flush=True)
        subprocess.run(["python3.11", "-m", "venv", PEERS_VENV], check=True)
        subprocess.run([py, "-m", "pip", "install", "--quiet", *PEERS_PACKAGES], check=True)
    return py


def run_worker(args: argparse.Namespace, system: str, phase: str, workloads: list[str], log: str) -> list[dict]:
    """Run systems.py in a fresh process; its @@ lines are the records, everything else goes to `log`."""
    cmd = [python_for(system), os.path.join(HERE, "systems.py"), phase, "--system", system, "--data", args.data,
           "--work", args.work, "--workloads", ",".join(workloads), "--repeat", str(args.repeat),
           "--memory", args.memory]
    records = []
    with open(log, "a") as f:
        f.write(f"$ {' '.join(cmd)}\n")
        f.flush()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=f, text=True)
        for line in proc.stdout:  # type: ignore[union-attr]
            if line.startswith("@@"):
                records.append(json.loads(line[2:]))
            else:
                f.write(line)
        if proc.wait() != 0:
            records.append({"error": f"{system} {phase} exited with {proc.returncode}, see {log}"})
    return records


def cell(times: list[float] | None) -> str:
    if not times:
        return "-"
    med = statistics.median(times)
    return f"{med:.2f}" if len(times) == 1 else f"{med:.2f} ({min(times):.2f}-{max(times):.2f})"


def mib(n: int | None) -> str:
    return "-" if n is None else f"{n / 2**20:.2f}"


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def main() -> None:
    ap = argparse.ArgumentParser(description="MERGE benchmark: ours against its peers")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--workloads", default=",".join(systems.WORKLOADS))
    ap.add_argument("--systems", default=",".join(ALL_SYSTEMS))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--memory", default="4g", help="spark.driver.memory of every Spark system")
    ap.add_argument("--process", action="store_true", help="also time one MERGE in a fresh process (start-up included)")
    ap.add_argument("--cache", default=data.DEFAULT_CACHE, help="data cache (one directory per row count)")
    ap.add_argument("--work", default=None, help="tables and logs (default /tmp/tablets-bench/work/ROWS)")
    ap.add_argument("--results", default=os.path.join(HERE, "RESULTS.md"), help="'' to append nowhere")
    args = ap.parse_args()
    workloads, names = args.workloads.split(","), args.systems.split(",")
    for w in workloads:
        if w not in systems.STATEMENTS:
            ap.error(f"unknown workload {w}; known: {', '.join(systems.WORKLOADS)}")
    for n in names:
        if n not in systems.SYSTEMS:
            ap.error(f"unknown system {n}; known: {', '.join(ALL_SYSTEMS)}")
    args.work = args.work or f"/tmp/tablets-bench/work/{args.rows}"
    os.makedirs(args.work, exist_ok=True)
    started = datetime.datetime.now(datetime.UTC)
    load_at_start = os.getloadavg()

    t0 = time.perf_counter()
    args.data = data.generate(args.rows, args.seed, args.cache)
    reference = {w: data.fingerprint(data.expected(args.data, w)) for w in workloads}
    print(f"data {args.data} ready ({time.perf_counter() - t0:.1f} s); logs in {args.work}/*.log", flush=True)

    results: dict[str, dict[str, dict]] = {}  # system -> workload -> record
    versions: dict[str, dict[str, str]] = {}
    notes: list[str] = []
    for name in names:
        print(f"{name}: loading and timing {len(workloads)} workloads ...", flush=True)
        log = os.path.join(args.work, f"{name}.log")
        open(log, "w").close()
        results[name] = {}
        for rec in run_worker(args, name, "bench", workloads, log):
            if "versions" in rec:
                versions[name] = rec["versions"]
                print(f"  loaded in {rec['load_s']} s; {rec['versions']}", flush=True)
            elif "workload" in rec:
                results[name][rec["workload"]] = rec
                status = rec.get("error") or rec.get("skipped") or f"{cell(rec['times'])} s  {rec.get('result')}"
                print(f"  {rec['workload']}: {status}", flush=True)
            elif "peak_rss_mb" in rec:
                notes.append(f"{name}: peak RSS of the whole timing process {rec['peak_rss_mb']:.0f} MB")
            else:
                notes.append(f"ERROR {rec['error']}")
                print(f"  ERROR {rec['error']}", flush=True)
        if args.process and name != "spark_floor":
            for w in workloads:
                try:
                    systems.SYSTEMS[name](args.data, args.work, args.memory).restore(w)
                except OSError as e:  # its load failed above: nothing to restore
                    recs = [{"error": f"restore: {e}"}]
                else:
                    start = time.perf_counter()
                    recs = run_worker(args, name, "once", [w], log)
                    wall = time.perf_counter() - start
                rec = results[name].setdefault(w, {"workload": w})
                if recs and "peak_rss_mb" in recs[0]:
                    rec["process_s"], rec["process_rss_mb"] = round(wall, 2), recs[0]["peak_rss_mb"]
                    print(f"  {w}: fresh process {wall:.2f} s  {recs[0]['result']}", flush=True)
                else:
                    rec["process_error"] = recs[0].get("error") if recs else "no output"
                    print(f"  {w}: fresh process ERROR {rec['process_error']}", flush=True)

    # checks: every system's final table against the reference answer (pyarrow joins in data.py)
    checks, mismatches = {}, []
    for w in workloads:
        bad, unchecked = [], []
        for name in names:
            fp = results[name].get(w, {}).get("fp")
            if fp is None:  # no final table (spark_floor), or the run failed
                unchecked.append(name)
            elif fp != reference[w]:
                bad.append(name)
                mismatches.append(f"MISMATCH {w} {name}: expected {reference[w]}, got {fp}")
        checks[w] = ("MISMATCH " + ",".join(bad) if bad else "ok") + (
            f" (unchecked: {','.join(unchecked)})" if unchecked else ""
        )
    errors = [f"ERROR {w} {n}: {r['error']}" for n in names for w, r in results[n].items() if "error" in r]

    def med(name: str, w: str) -> float | None:
        t = results.get(name, {}).get(w, {}).get("times")
        return statistics.median(t) if t and "error" not in results[name][w] else None

    peers = [n for n in names if n != "ours"]
    header = ["workload", *[f"{n} s" for n in names]]
    if "ours" in names:
        header += [f"ours/{p}" for p in peers]
    rows = []
    for w in workloads:
        row = [w] + [("ERROR" if "error" in results[n].get(w, {}) else cell(results[n].get(w, {}).get("times")))
                     for n in names]
        if "ours" in names:
            ours = med("ours", w)
            row += [f"{ours / p:.2f}" if ours is not None and p else "-" for p in (med(n, w) for n in peers)]
        rows.append(row + [checks[w]])
    timing = table([*header, "check"], rows)
    written = table(["workload", *[f"{n} MiB" for n in names]],
                    [[w] + [mib(results[n].get(w, {}).get("bytes")) for n in names] for w in workloads])
    out = [f"Statement alone, seconds: median (min-max) of {args.repeat}; ratio < 1 means ours is faster.",
           "", timing, "", "Bytes written by one run (growth of the table's directory):", "", written]
    proc_names = [n for n in names if n != "spark_floor"]
    if args.process:
        out += ["", "One MERGE in a fresh process (start-up included), seconds / peak RSS MB:", "",
                table(["workload", *proc_names],
                      [[w] + [(f"{r['process_s']:.1f} / {r['process_rss_mb']:.0f}" if "process_s" in r else "ERROR")
                              for r in (results[n].get(w, {}) for n in proc_names)] for w in workloads])]
    report = "\n".join(out)
    print("\n" + report)
    for line in mismatches + errors:
        print(line)
    if mismatches:
        print("\n" + "!" * 30 + f" MISMATCH in {len(mismatches)} result(s) " + "!" * 30)

    if args.results:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "?")
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
        vers = "; ".join(f"{n}: " + ", ".join(f"{k} {v}" for k, v in versions.get(n, {}).items()) for n in names)
        with open(args.results, "a") as f:
            f.write(f"\n## {started:%Y-%m-%d %H:%M} UTC: {args.rows:,} rows, repeat {args.repeat}\n\n"
                    f"- machine: {os.cpu_count()} cores ({cpu}), {mem:.0f} GiB, load average at start "
                    f"{load_at_start[0]:.1f}; Python {platform.python_version()}, numpy {numpy.__version__}, "
                    f"pyarrow {pyarrow.__version__}\n- versions: {vers}\n"
                    f"- command: `{' '.join(['bench/merge.py', *sys.argv[1:]])}`\n"
                    + "".join(f"- {n}\n" for n in notes) + "\n" + report + "\n"
                    + "".join(f"\n- {line}" for line in mismatches + errors) + ("\n" if mismatches + errors else ""))
        print(f"\nappended to {args.results}")
    if mismatches or errors:
        sys.exit(1)


if __name__ == "__main__":
    main()
