"""What publishing the Delta log costs a commit (docs/FORMAT.md, "A Delta table at its root").

    .venv/bin/python bench/delta_publish.py --tablets 10000 --repeat 15

A synthetic log (log files only, no data files) through the package's own commit path: version 1
adds N tablets (min/max/null count of 5 columns each); then small commits (one tablet added and
10 deletion vectors set, as a small MERGE does) timed with the Delta log published and with
``delta_log.publish`` replaced by a no-op, interleaved, median of --repeat each; and the Delta
checkpoint of the N-tablet state (written every 50 versions, as ours).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "adapter"))

from tablets.storage import delta_log, transaction  # noqa: E402
from tablets.storage.actions import AddTablet, ColumnStats, SetDV  # noqa: E402
from tablets.storage.table import TabletTable  # noqa: E402
from tablets.storage.tablet import dv_relpath, new_id  # noqa: E402

COLUMNS = [
    ("id", "bigint", False),
    ("k", "int", True),
    ("v", "double", True),
    ("s", "string", True),
    ("d", "date", True),
]


def _add(i: int) -> AddTablet:
    tid = new_id()
    stats = (
        ("id", ColumnStats(i * 100, i * 100 + 99, 0)),
        ("k", ColumnStats(0, 9, 0)),
        ("v", ColumnStats(0.0, 1.0, 0, 0)),
        ("s", ColumnStats("a", "z", 0)),
        ("d", ColumnStats("2020-01-01", "2020-12-31", 0)),
    )
    return AddTablet(tid, f"tablets/{tid}.parquet", 100, 4096, stats, "t")


def _small_commit(t: TabletTable, ids: list[str]) -> float:
    h = transaction.begin(t.snapshot(), t.root, "MERGE", delete_from=(), io=t.io)
    dvs = [SetDV(tid, dv_relpath(tid, new_id()), 3, 60, "00000000") for tid in ids]
    t0 = time.perf_counter()
    transaction.commit(
        h, [transaction.TabletFragment(_add(0)), *(transaction.DVFragment(d.tablet_id, d, 3) for d in dvs)]
    )
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tablets", type=int, default=10000)
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args()
    base = tempfile.mkdtemp()
    try:
        tables = {}
        for name in ("on", "off"):  # one table each: an unpublished version would leave a gap
            t = TabletTable.create(os.path.join(base, name), COLUMNS)
            h = transaction.begin(t.snapshot(), t.root, "APPEND", delete_from=(), io=t.io)
            transaction.commit(h, [transaction.TabletFragment(_add(i)) for i in range(args.tablets)])
            tables[name] = (t, list(t.snapshot().tablets))
        real = delta_log.publish
        times: dict[str, list[float]] = {"on": [], "off": []}
        for r in range(args.repeat):
            for name in ("on", "off"):
                t, ids = tables[name]
                if name == "off":
                    delta_log.publish = lambda *a, **k: None
                try:
                    times[name].append(_small_commit(t, ids[r * 10 : (r + 1) * 10]))
                finally:
                    delta_log.publish = real
        on, off = times["on"], times["off"]
        t = tables["on"][0]
        snap = t.snapshot()
        meta = snap.metadata
        ds = delta_log.to_delta(meta)
        path = os.path.join(t.root, "_delta_log", f"{snap.version:020d}.checkpoint.parquet")
        ckpts = []
        for _ in range(3):  # the first one pays pyarrow's first import of pandas (pa.array of dicts)
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)
            t0 = time.perf_counter()
            adds = [delta_log.add_action(t.root, meta, st, 0, False) for st in snap.tablets.values()]
            delta_log.delta_checkpoint.write(
                t.io, t.root, snap, adds, delta_log.protocol(ds), delta_log.metadata(meta, ds)
            )
            ckpts.append(time.perf_counter() - t0)
        ckpt = statistics.median(ckpts[1:])
        size = os.path.getsize(path)
        print(
            f"tablets {args.tablets}: small commit with the Delta log {statistics.median(on) * 1000:.1f} ms, "
            f"without {statistics.median(off) * 1000:.1f} ms (median of {args.repeat}); "
            f"Delta checkpoint {ckpt * 1000:.0f} ms (the first of the process {ckpts[0] * 1000:.0f} ms), "
            f"{size / 1024:.0f} KiB"
        )
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
