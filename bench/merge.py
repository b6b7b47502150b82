"""MERGE benchmark: ours against its peers on the same data and statements (see shared BENCH.md).

    .venv/bin/python bench/merge.py --rows 1000000 --workloads upsert,sync --systems ours,duckdb --repeat 3
    .venv/bin/python bench/merge.py --workloads scale --scale-rows 1000000,10000000

Each system runs in its own process (systems.py), the peers on their own venvs (peers.py, made
here on first use). Prints medians, ratios ours/peer, bytes written and checks that every system's
final table equals the reference answer; appends the tables to bench/RESULTS.md. The scale
workload is a 10k-row upsert into targets in id order of each --scale-rows size.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time

import data
import peers
import report
import systems
from report import cell, mib, table

HERE = os.path.dirname(os.path.abspath(__file__))
# on request: ours_base / ours_spark_base (--baseline), ours_noskip / ours_spark_noskip
ON_REQUEST = ("ours_base", "ours_spark_base", "ours_noskip", "ours_spark_noskip")
ALL_SYSTEMS = [n for n in systems.SYSTEMS if n not in ON_REQUEST]


def python_for(system: str) -> str:
    return peers.python(systems.PEER_VENV[system]) if system in systems.PEER_VENV else sys.executable


def run_worker(
    args: argparse.Namespace,
    system: str,
    phase: str,
    workloads: list[str],
    log: str,
    data_dir: str | None = None,
    work: str | None = None,
) -> list[dict]:
    """Run systems.py in a fresh process; its @@ lines are the records, everything else goes to `log`."""
    cmd = [
        python_for(system),
        os.path.join(HERE, "systems.py"),
        phase,
        "--system",
        system,
        "--data",
        data_dir or args.data,
        "--work",
        work or args.work,
        "--workloads",
        ",".join(workloads),
        "--repeat",
        str(args.repeat),
        "--warmup",
        str(args.warmup),
        "--memory",
        args.memory,
    ]
    if system.startswith("iceberg"):
        cmd += ["--jars", ",".join(peers.iceberg_jars(args.cache))]
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


def run_system(
    args: argparse.Namespace,
    name: str,
    workloads: list[str],
    data_dir: str,
    work: str,
    versions: dict[str, dict[str, str]],
    notes: list[str],
) -> dict[str, dict]:
    """Load the target into one system and time the workloads there; workload -> record."""
    log = os.path.join(work, f"{name}.log")
    open(log, "w").close()
    out: dict[str, dict] = {}
    for rec in run_worker(args, name, "bench", workloads, log, data_dir, work):
        if "versions" in rec:
            versions[name] = rec["versions"]
            for note in rec.get("notes", []):  # "<workload>: how it differs", for the workloads run
                if note.split(":")[0] in workloads and f"{name} {note}" not in notes:
                    notes.append(f"{name} {note}")
            print(f"  loaded in {rec['load_s']} s; {rec['versions']}", flush=True)
        elif "workload" in rec:
            out[rec["workload"]] = rec
            status = rec.get("error") or rec.get("skipped") or f"{cell(rec['times'])} s  {rec.get('result')}"
            print(f"  {rec['workload']}: {status}", flush=True)
        elif "peak_rss_mb" in rec:
            notes.append(
                f"{name}: peak RSS of the whole timing process {rec['peak_rss_mb']:.0f} MB"
                + (f" ({os.path.basename(data_dir)})" if data_dir != getattr(args, "data", None) else "")
            )
        else:
            notes.append(f"ERROR {rec['error']}")
            print(f"  ERROR {rec['error']}", flush=True)
    return out


def _pooled(before: dict[str, dict], now: dict[str, dict]) -> dict[str, dict]:
    """One system's records of two rounds as one: their times together; an error or a final
    table that differs between the rounds is kept."""
    out = dict(before)
    for w, rec in now.items():
        old = out.get(w)
        if old is None or "error" in rec:
            out[w] = rec
        elif "error" not in old:
            out[w] = {**old, "times": [*old.get("times", []), *rec.get("times", [])]}
            if rec.get("fp") != old.get("fp"):
                out[w]["fp"] = f"rounds differ: {old.get('fp')} / {rec.get('fp')}"
    return out


def median(rec: dict | None) -> float | None:
    t = (rec or {}).get("times")
    return statistics.median(t) if t and "error" not in rec else None  # type: ignore[operator]


def check(recs: dict[str, dict | None], reference: dict) -> tuple[str, list[str]]:
    """The check cell of one workload (every system's final table against the reference) and mismatch lines."""
    bad, unchecked, lines = [], [], []
    for name, rec in recs.items():
        fp = (rec or {}).get("fp")
        if fp is None:  # no final table (spark_floor), or the run failed
            unchecked.append(name)
        elif fp != reference:
            bad.append(name)
            lines.append(f"MISMATCH {name}: expected {reference}, got {fp}")
    text = "MISMATCH " + ",".join(bad) if bad else "ok"
    return text + (f" (unchecked: {','.join(unchecked)})" if unchecked else ""), lines


def main_workloads(
    args: argparse.Namespace,
    workloads: list[str],
    names: list[str],
    versions: dict[str, dict[str, str]],
    notes: list[str],
    problems: list[str],
) -> str:
    t0 = time.perf_counter()
    args.data = data.generate(args.rows, args.seed, args.cache)
    reference = {w: data.reference(args.data, w) for w in workloads}
    print(f"data {args.data} ready ({time.perf_counter() - t0:.1f} s); logs in {args.work}/*.log", flush=True)

    results: dict[str, dict[str, dict]] = {}  # system -> workload -> record
    # rounds: every system again, in the reverse order each time, its times pooled, so that a
    # machine whose speed drifts weighs on each system alike
    for r in range(args.rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            print(f"{name}: loading and timing {len(workloads)} workloads (round {r + 1}) ...", flush=True)
            got = run_system(args, name, workloads, args.data, args.work, versions, notes)
            results[name] = _pooled(results[name], got) if name in results else got
    for name in names:
        if args.process and name != "spark_floor":
            log = os.path.join(args.work, f"{name}.log")
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

    checks = {}
    for w in workloads:
        checks[w], lines = check({n: results[n].get(w) for n in names}, reference[w])
        problems += [f"{w} {line}" for line in lines]
    problems += [f"ERROR {w} {n}: {r['error']}" for n in names for w, r in results[n].items() if "error" in r]

    ref = next((n for n in names if n.startswith("ours")), None)  # the ratios' numerator: ours, or ours_spark
    peers_ = [n for n in names if n != ref]
    header = ["workload", *[f"{n} s" for n in names]]
    if ref:
        header += [f"{ref}/{p}" for p in peers_]
    rows = []
    for w in workloads:
        row = [w] + [
            ("ERROR" if "error" in results[n].get(w, {}) else cell(results[n].get(w, {}).get("times"))) for n in names
        ]
        if ref:
            ours = median(results[ref].get(w))
            meds = (median(results[n].get(w)) for n in peers_)
            row += [f"{ours / p:.2f}" if ours is not None and p else "-" for p in meds]
        rows.append(row + [checks[w]])
    timing = table([*header, "check"], rows)
    written = table(
        ["workload", *[f"{n} MiB" for n in names]],
        [[w] + [mib(results[n].get(w, {}).get("bytes")) for n in names] for w in workloads],
    )
    out = [
        f"Statement alone, seconds: median (min-max) of {args.repeat * args.rounds}"
        + (
            f" ({args.rounds} rounds of {args.repeat}, the systems' order reversed each round)"
            if args.rounds > 1
            else ""
        )
        + "; ratio < 1 means ours is faster.",
        "",
        timing,
        "",
        "Bytes written by one run (growth of the table's directory):",
        "",
        written,
    ]
    out += [
        "",
        "Peak RSS MiB while the workload's statements ran (VmHWM reset before them, read before the "
        "check's scan): the timing process (the driver's Python; the whole engine where it is a "
        "library) / Spark's JVM (driver and executor: local mode) / the largest Python worker alive:",
        "",
        table(["workload", *names], [[w, *(_peaks(results[n].get(w, {})) for n in names)] for w in workloads]),
    ]
    proc_names = [n for n in names if n != "spark_floor"]
    if args.process:
        out += [
            "",
            "One MERGE in a fresh process (start-up included), seconds / peak RSS MB:",
            "",
            table(
                ["workload", *proc_names],
                [
                    [w]
                    + [
                        (f"{r['process_s']:.1f} / {r['process_rss_mb']:.0f}" if "process_s" in r else "ERROR")
                        for r in (results[n].get(w, {}) for n in proc_names)
                    ]
                    for w in workloads
                ],
            ),
        ]
    return "\n".join(out)


def _peaks(rec: dict) -> str:
    p = rec.get("peaks_mb")
    if not p:
        return "-"
    return " / ".join(f"{p[k]:,.0f}" if p[k] else "-" for k in ("process", "jvm", "worker"))


def scale_workload(
    args: argparse.Namespace,
    names: list[str],
    versions: dict[str, dict[str, str]],
    notes: list[str],
    problems: list[str],
) -> str:
    """A 10k-row upsert into a target in id order of each size: time per size, largest/smallest per system."""
    sizes = [int(x) for x in args.scale_rows.split(",")]
    results: dict[int, dict[str, dict]] = {}  # size -> system -> record
    checks = {}
    for size in sizes:
        t0 = time.perf_counter()
        data_dir = data.generate(size, args.seed, args.cache, clustered=True)
        reference = data.reference(data_dir, "scale")
        work = os.path.join(os.path.dirname(args.work), f"scale-{size}")
        os.makedirs(work, exist_ok=True)
        print(f"scale: data {data_dir} ready ({time.perf_counter() - t0:.1f} s); logs in {work}/*.log", flush=True)
        results[size] = {}
        for name in names:
            print(f"{name}: scale, {size:,} rows ...", flush=True)
            results[size][name] = run_system(args, name, ["scale"], data_dir, work, versions, notes).get("scale", {})
        checks[size], lines = check(results[size], reference)
        problems += [f"scale {size:,} {line}" for line in lines]
        problems += [f"ERROR scale {size:,} {n}: {r['error']}" for n, r in results[size].items() if "error" in r]

    rows = [
        [f"{size:,}"]
        + [("ERROR" if "error" in results[size][n] else cell(results[size][n].get("times"))) for n in names]
        + [checks[size]]
        for size in sizes
    ]
    lo, hi = sizes[0], sizes[-1]
    if len(sizes) > 1:
        ratios = []
        for n in names:
            a, b = median(results[lo][n]), median(results[hi][n])
            ratios.append(f"{b / a:.2f}" if a and b else "-")
        rows.append([f"{hi:,} / {lo:,}", *ratios, ""])
    out = [
        f"Scale: a {data.SCALE_SOURCE_ROWS:,}-row upsert (half updates among the newest {data.SCALE_WINDOW:,} ids, "
        f"half new ids) into a target in id order; statement alone, seconds: median (min-max) of {args.repeat}.",
        "",
        table(["target rows", *[f"{n} s" for n in names], "check"], rows),
    ]
    peers_ = [n for n in names if n != "ours"]
    if "ours" in names and peers_:
        ratios = []
        for size in sizes:
            o = median(results[size]["ours"])
            meds = [median(results[size][n]) for n in peers_]
            ratios.append([f"{size:,}"] + [f"{o / p:.2f}" if o and p else "-" for p in meds])
        out += [
            "",
            "Ratio ours/peer (< 1: ours is faster):",
            "",
            table(["target rows", *[f"ours/{n}" for n in peers_]], ratios),
        ]
    if "ours" in names:
        tab = []
        for size in sizes:
            r = results[size]["ours"].get("result") or {}
            counts = ("tablets_scanned", "tablets_pruned", "tablets_read_on_driver")
            tab.append([f"{size:,}", *(str(r.get(k, "-")) for k in counts)])
        out += [
            "",
            "ours: tablets the MERGE read, skipped by key range, and read on the driver (MergeMetrics "
            "tablets_scanned, tablets_pruned, tablets_read_on_driver), last run:",
            "",
            table(["target rows", "tablets scanned", "tablets pruned", "tablets read on the driver"], tab),
        ]
    return "\n".join(out)


def baseline_checkout(rev: str, cache: str) -> str:
    """A checkout of ``rev`` of this repository (a detached worktree under ``cache``), made once."""
    root = os.path.dirname(HERE)
    commit = subprocess.run(
        ["git", "-C", root, "rev-parse", "--verify", f"{rev}^{{commit}}"], capture_output=True, text=True, check=True
    ).stdout.strip()
    path = os.path.join(cache, f"baseline-{commit[:12]}")
    if not os.path.isdir(path):
        subprocess.run(
            ["git", "-C", root, "worktree", "add", "--detach", path, commit], check=True, capture_output=True
        )
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description="MERGE benchmark: ours against its peers")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--workloads", default=",".join(systems.MAIN_WORKLOADS), help="comma list; 'scale' on request")
    ap.add_argument("--scale-rows", default="1000000,10000000", help="target sizes of the scale workload")
    ap.add_argument("--systems", default=",".join(ALL_SYSTEMS))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--warmup",
        type=int,
        default=1,
        help="untimed runs of the first workload in each process before its timed ones (the JVM warms up over ~5)",
    )
    ap.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="run every system this many times, the order reversed each round, times pooled (a drifting machine)",
    )
    ap.add_argument("--memory", default="4g", help="spark.driver.memory of every Spark system")
    ap.add_argument("--process", action="store_true", help="also time one MERGE in a fresh process (start-up included)")
    ap.add_argument("--cache", default=data.DEFAULT_CACHE, help="data cache (one directory per row count)")
    ap.add_argument("--work", default=None, help="tables and logs (default /tmp/tablets-bench/work/ROWS)")
    ap.add_argument("--results", default=os.path.join(HERE, "RESULTS.md"), help="'' to append nowhere")
    ap.add_argument(
        "--baseline",
        default=None,
        help="a git revision: ours_base / ours_spark_base run its engine (a worktree in --cache)",
    )
    args = ap.parse_args()
    workloads, names = args.workloads.split(","), args.systems.split(",")
    for w in workloads:
        if w not in systems.STATEMENTS:
            ap.error(f"unknown workload {w}; known: {', '.join(systems.WORKLOADS)}")
    for n in names:
        if n not in systems.SYSTEMS:
            ap.error(f"unknown system {n}; known: {', '.join(systems.SYSTEMS)}")
    try:
        sizes = [int(x) for x in args.scale_rows.split(",")]
    except ValueError:
        sizes = []
    if not sizes or any(x < 100_000 for x in sizes) or sizes != sorted(sizes):
        ap.error(
            f"--scale-rows {args.scale_rows!r}: give ascending row counts of at least 100000, "
            "e.g. 1000000,10000000,100000000"
        )
    if args.baseline:
        os.environ[systems.BASELINE_ENV] = baseline_checkout(args.baseline, args.cache)
    elif any(n.endswith("_base") for n in names):
        ap.error("ours_base / ours_spark_base need --baseline REV")
    args.work = args.work or f"/tmp/tablets-bench/work/{args.rows}"
    os.makedirs(args.work, exist_ok=True)
    started = datetime.datetime.now(datetime.UTC)
    load_at_start = os.getloadavg()

    versions: dict[str, dict[str, str]] = {}
    notes: list[str] = []
    problems: list[str] = []
    sections, titles = [], []
    main_w = [w for w in workloads if w != "scale"]
    if main_w:
        sections.append(main_workloads(args, main_w, names, versions, notes, problems))
        titles.append(f"{args.rows:,} rows")
    if "scale" in workloads:
        sections.append(scale_workload(args, names, versions, notes, problems))
        titles.append(f"scale {args.scale_rows.replace(',', ', ')} rows")
    body = "\n\n".join(sections)
    print("\n" + body)
    print("".join(f"\n- {n}" for n in notes if not n.startswith("ERROR")))
    for line in problems:
        print(line)
    mismatches = [p for p in problems if "MISMATCH" in p]
    if mismatches:
        print("\n" + "!" * 30 + f" MISMATCH in {len(mismatches)} result(s) " + "!" * 30)
    report.append(
        args.results,
        f"{' + '.join(titles)}, repeat {args.repeat}"
        + (f" x {args.rounds} rounds" if args.rounds > 1 else "")
        + (f", {args.warmup} untimed runs first" if args.warmup != 1 else ""),
        started,
        load_at_start,
        versions,
        notes,
        body + "".join(f"\n\n- {p}" for p in problems),
    )
    if problems:
        sys.exit(1)


if __name__ == "__main__":
    main()
