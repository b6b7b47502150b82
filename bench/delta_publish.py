"""What a commit costs, this checkout against another revision, side by side in one run
(docs/FORMAT.md, "One log").

    .venv/bin/python bench/delta_publish.py --tablets 10000 --commits 60 --baseline 15ea98e

A synthetic log (log files only, no data files) through the package's own commit path:
version 1 adds N tablets (min/max/null count of 5 columns each); then --commits small commits
(one tablet added and 10 deletion vectors set, as a small MERGE does), each timed, and the
bytes of the log files each version created. Reported: the median small commit, the commit that
also writes the checkpoints (version 50), the bytes a small commit writes to the log, and an open
of the newest version (the checkpoint and the versions after it). ``--baseline REV`` runs the
same in a fresh process on ``git archive REV adapter``, interleaved with this checkout's runs
(--rounds of each).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if "TABLETS_BENCH_PACKAGE" not in os.environ:
    sys.path.insert(0, os.path.join(HERE, "..", "adapter"))

COLUMNS = [
    ("id", "bigint", False),
    ("k", "int", True),
    ("v", "double", True),
    ("s", "string", True),
    ("d", "date", True),
]


def run(tablets: int, commits: int) -> dict:
    from tablets.storage import log, transaction
    from tablets.storage.actions import AddTablet, ColumnStats, SetDV
    from tablets.storage.table import TabletTable
    from tablets.storage.tablet import dv_relpath, new_id

    def add(i: int) -> AddTablet:
        tid = new_id()
        stats = (
            ("id", ColumnStats(i * 100, i * 100 + 99, 0)),
            ("k", ColumnStats(0, 9, 0)),
            ("v", ColumnStats(0.0, 1.0, 0, 0)),
            ("s", ColumnStats("a", "z", 0)),
            ("d", ColumnStats("2020-01-01", "2020-12-31", 0)),
        )
        return AddTablet(tid, f"tablets/{tid}.parquet", 100, 4096, stats, "t")

    base = tempfile.mkdtemp(prefix="tablets-commit-")
    try:
        t = TabletTable.create(os.path.join(base, "t"), COLUMNS)
        h = transaction.begin(t.snapshot(), t.root, "APPEND", delete_from=(), io=t.io)
        transaction.commit(h, [transaction.TabletFragment(add(i)) for i in range(tablets)])
        ids = list(t.snapshot().tablets)
        times: dict[int, float] = {}
        sizes: dict[int, int] = {}
        for r in range(commits):
            h = transaction.begin(t.snapshot(), t.root, "MERGE", delete_from=(), io=t.io)
            dvs = [SetDV(tid, dv_relpath(tid, new_id()), 3, 60, "00000000") for tid in ids[r * 10 : (r + 1) * 10]]
            t0 = time.perf_counter()
            v = transaction.commit(
                h, [transaction.TabletFragment(add(0)), *(transaction.DVFragment(d.tablet_id, d, 3) for d in dvs)]
            )
            times[v] = time.perf_counter() - t0
            name = f"{v:020d}.json"
            sizes[v] = sum(
                os.path.getsize(p) for d in ("_log", "_delta_log") if os.path.exists(p := os.path.join(t.root, d, name))
            )
        small = [s for v, s in times.items() if v % log.CHECKPOINT_INTERVAL]
        opens = []
        for _ in range(5):
            t0 = time.perf_counter()
            log.load_snapshot(t.io, t.root)
            opens.append(time.perf_counter() - t0)
        return {
            "small_commit": statistics.median(small),
            "checkpoint_commit": times.get(log.CHECKPOINT_INTERVAL, 0.0),
            "log_bytes": statistics.median(s for v, s in sizes.items() if v % log.CHECKPOINT_INTERVAL),
            "open": statistics.median(opens),
        }
    finally:
        shutil.rmtree(base, ignore_errors=True)


def in_process(package: str, tablets: int, commits: int) -> dict:
    env = {**os.environ, "PYTHONPATH": package, "TABLETS_BENCH_PACKAGE": package}
    args = [sys.executable, os.path.abspath(__file__), "--tablets", str(tablets), "--commits", str(commits), "--json"]
    return json.loads(subprocess.run(args, env=env, check=True, capture_output=True, text=True).stdout)


ROWS = [
    ("small_commit", "small commit (1 tablet, 10 vectors)", "ms"),
    ("checkpoint_commit", "the commit that checkpoints (version 50)", "ms"),
    ("log_bytes", "log bytes a small commit writes", "B"),
    ("open", "open of the newest version", "ms"),
]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tablets", type=int, default=10_000)
    p.add_argument("--commits", type=int, default=60)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--baseline", default="", help="a git revision to run side by side")
    p.add_argument("--json", action="store_true", help="print one run's figures as JSON")
    a = p.parse_args()
    if a.json:
        print(json.dumps(run(a.tablets, a.commits)))
        return
    here = os.path.join(HERE, "..", "adapter")
    tmp = tempfile.mkdtemp(prefix="tablets-commit-base-")
    try:
        packages = {"this": os.path.abspath(here)}
        if a.baseline:
            root = os.path.dirname(HERE)
            archive = subprocess.run(
                ["git", "-C", root, "archive", a.baseline, "adapter"], check=True, capture_output=True
            )
            subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
            packages["base"] = os.path.join(tmp, "adapter")
        runs: dict[str, list[dict]] = {k: [] for k in packages}
        for _ in range(a.rounds):  # interleaved: the machine's drift hits both alike
            for k, pkg in packages.items():
                runs[k].append(in_process(pkg, a.tablets, a.commits))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    med = {k: {key: statistics.median(r[key] for r in rs) for key, _, _ in ROWS} for k, rs in runs.items()}
    head = ["", f"this checkout, {a.tablets:,} tablets"] + ([f"{a.baseline}", "ratio"] if a.baseline else [])
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    for key, label, unit in ROWS:
        scale = 1000 if unit == "ms" else 1
        cells = [label, f"{med['this'][key] * scale:,.1f} {unit}"]
        if a.baseline:
            old = med["base"][key]
            cells += [f"{old * scale:,.1f} {unit}", f"{med['this'][key] / old:.2f}" if old else ""]
        print("| " + " | ".join(cells) + " |")
    print(f"\nmedians of {a.rounds} interleaved runs of {a.commits} commits each")


if __name__ == "__main__":
    main()
