"""What proving checkpoints costs on a log of N tablets (docs/FORMAT.md, "Checkpoints": figures).

    .venv/bin/python bench/checkpoint.py --tablets 10000 --repeat 7
    .venv/bin/python bench/checkpoint.py --tablets 10000 --repeat 7 --baseline b099e0e   # and before, side by side

A synthetic log (log files only, no data files), written through the package's own commit path
(``transaction.commit``, so with the state records where the code writes them): version 1 adds N
tablets (min/max/null count of 5 columns each), versions 2..60 are small MERGEs (one tablet
added, 10 deletion vectors set), and the writer's checkpoint at 50. Timed, median of --repeat:

- open at 50: the checkpoint alone (with proofs: its hint, header, body CRC, the state's counts and
  digest, and the commit of version 50 read for its record);
- open at 60: the checkpoint and 10 versions (each version's record checked);
- open at 60 with the checkpoint cut (it fails its proof): the replay of 61 versions instead;
- a commit of one tablet on the N-tablet state (the state record is computed for it);
- a checkpoint written; and, with proofs, its parts: CRC-32 of the body, the digest from scratch.

``--baseline REV`` runs the same in a fresh process on ``git archive REV adapter`` (the code
before, for a side by side on this machine at this time).
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

import numpy as np

import log_compat
from tablets.storage import log, transaction
from tablets.storage.actions import AddTablet, ColumnStats, CommitInfo, Metadata, SetDV
from tablets.storage.fileio import LOCAL
from tablets.storage.transaction import DVFragment, TabletFragment

COLUMNS = 5
PROOFS = hasattr(CommitInfo, "state")  # the code under test records states (and proves checkpoints)


def add(i: int, rng: np.random.Generator) -> AddTablet:
    stats = tuple(
        (f"c{c}", ColumnStats(int(rng.integers(0, 10**9)), int(rng.integers(10**9, 2 * 10**9)), 0))
        for c in range(COLUMNS)
    )
    tid = f"{rng.integers(0, 2**63):016x}{i:016x}"
    size = 30_000_000 + int(rng.integers(0, 10**6))
    return AddTablet(tid, f"tablets/{tid}.parquet", 1_000_000, size, stats, f"{i:032x}")


def dv(tid: str, v: int, rng: np.random.Generator) -> SetDV:
    return SetDV(
        tid,
        f"dv/{tid}-{v:032x}.bin",
        int(rng.integers(1, 100_000)),
        int(rng.integers(100, 200_000)),
        f"{int(rng.integers(0, 2**32)):08x}",
    )


def commit(root: str, snap, fragments):
    h = transaction.begin(snap, root, "MERGE", delete_from=(), io=LOCAL)
    v = transaction.commit(h, fragments)
    return log.apply_version(snap, v, log_compat.read_version(LOCAL, root, v, snap))


def median(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def run(tablets: int, repeat: int) -> dict[str, float | int | bool]:
    rng = np.random.default_rng(tablets)
    root = tempfile.mkdtemp(prefix="tablets-ckpt-bench-")
    try:
        meta = Metadata("0" * 32, tuple((f"c{c}", "bigint", True) for c in range(COLUMNS)), ("c0",), (), 0)
        log_compat.write_version(LOCAL, root, 0, [meta, CommitInfo("CREATE TABLE", "0" * 32, 0, -1)])
        snap = log.apply_version(None, 0, log_compat.read_version(LOCAL, root, 0))
        snap = commit(root, snap, [TabletFragment(add(i, rng)) for i in range(tablets)])
        ids = list(snap.tablets)
        for v in range(2, 61):
            picks = rng.choice(len(ids), 10, replace=False)
            frags = [TabletFragment(add(tablets + v, rng))]
            frags += [DVFragment(ids[j], dv(ids[j], v, rng), 1) for j in picks]
            snap = commit(root, snap, frags)
        assert snap.version == 60 and log.list_log(LOCAL, root)[1] == [50]
        cp = log_compat.checkpoint_file(root, 50)
        out: dict[str, float | int | bool] = {"tablets": tablets, "proofs": PROOFS}
        out["checkpoint_bytes"] = os.path.getsize(cp)
        out["open_at_50"] = median(lambda: log.load_snapshot(LOCAL, root, 50), repeat)
        out["open_at_60"] = median(lambda: log.load_snapshot(LOCAL, root), repeat)
        s60 = log.load_snapshot(LOCAL, root)
        versions = iter(range(61, 61 + repeat))
        out["commit"] = median(
            lambda: commit(root, s60, [TabletFragment(add(tablets + 100 + next(versions), rng))]), repeat
        )
        if PROOFS:
            from tablets.storage import checkpoint
            from tablets.storage.snapshot import Tally

            body = open(cp, "rb").read().split(b"\n", 1)[1]  # noqa: SIM115
            out["crc_of_body"] = median(lambda: checkpoint.crc(body), repeat)
            out["digest_from_scratch"] = median(lambda: Tally.of(s60.tablets.values()), repeat)
        good = open(cp, "rb").read()  # noqa: SIM115
        with open(cp, "wb") as f:
            f.write(good[: len(good) * 2 // 3])
        out["open_at_60_checkpoint_cut"] = median(lambda: log.load_snapshot(LOCAL, root, 60), repeat)
        with open(cp, "wb") as f:
            f.write(good)
        names = iter(range(1000, 1000 + repeat))
        out["checkpoint_write"] = median(
            lambda: log.write_checkpoint(LOCAL, root, type(s60)(next(names), s60.metadata, s60.tablets)), repeat
        )
        return out
    finally:
        shutil.rmtree(root, ignore_errors=True)


def baseline(rev: str, tablets: int, repeat: int) -> dict:
    """The same run on ``rev``'s package, in a fresh process."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the repository
    tmp = tempfile.mkdtemp(prefix="tablets-ckpt-base-")
    try:
        archive = subprocess.run(["git", "-C", here, "archive", rev, "adapter"], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        env = {**os.environ, "PYTHONPATH": os.path.join(tmp, "adapter")}
        args = [sys.executable, os.path.abspath(__file__), "--tablets", str(tablets), "--repeat", str(repeat), "--json"]
        return json.loads(subprocess.run(args, env=env, check=True, capture_output=True, text=True).stdout)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


ROWS = [
    ("open_at_50", "open at 50: the checkpoint alone"),
    ("open_at_60", "open at 60: checkpoint + 10 versions"),
    ("open_at_60_checkpoint_cut", "open at 60, checkpoint cut: replay of 61 versions"),
    ("commit", "commit of one tablet"),
    ("checkpoint_write", "checkpoint write"),
    ("crc_of_body", "(proof) CRC-32 of the checkpoint's body"),
    ("digest_from_scratch", "(proof) digest of the state from scratch"),
]


def report(new: dict, old: dict | None) -> str:
    head = ["", f"with proofs, {new['tablets']:,} tablets"] + ([f"before ({old['rev']})", "ratio"] if old else [])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key, label in ROWS:
        if key not in new:
            continue
        cells = [label, f"{new[key] * 1000:,.1f} ms"]
        if old:
            cells += [f"{old[key] * 1000:,.1f} ms", f"{new[key] / old[key]:.2f}"] if key in old else ["", ""]
        lines.append("| " + " | ".join(cells) + " |")
    size = f"checkpoint: {new['checkpoint_bytes'] / 2**20:.1f} MiB" + (
        f" (before: {old['checkpoint_bytes'] / 2**20:.1f} MiB)" if old else ""
    )
    return "\n".join(lines) + "\n\n" + size


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tablets", type=int, default=10_000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--baseline", default="", help="a git revision to run side by side")
    p.add_argument("--json", action="store_true", help="print the figures as JSON (what --baseline reads)")
    a = p.parse_args()
    if a.json:
        print(json.dumps(run(a.tablets, a.repeat)))
        return
    new = run(a.tablets, a.repeat)
    old = {**baseline(a.baseline, a.tablets, a.repeat), "rev": a.baseline} if a.baseline else None
    print(report(new, old))


if __name__ == "__main__":
    main()
