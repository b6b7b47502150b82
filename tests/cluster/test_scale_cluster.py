"""A MERGE into a 10M-row table, a DELETE of 40% of it and an OPTIMIZE, on Spark's plan on the
standalone cluster (its two workers read, shuffle and write; the driver plans and commits),
give the same counts and rows as the same statements on an embedded ``local[2]`` session in a
child process (``support.scale_case``).

TABLETS_CLUSTER_SCALE_ROWS sets the table's size (default 10,000,000).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from support import scale_case
from support.jobs import spark_jobs
from support.timings import record

HERE = os.path.dirname(os.path.abspath(__file__))
ROWS = int(os.environ.get("TABLETS_CLUSTER_SCALE_ROWS", "10000000"))


def _local(tmp_path) -> dict:
    """The statements on an embedded local[2] session, in a process of its own."""
    tests = os.path.dirname(HERE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([tests, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-m", "support.scale_case", str(tmp_path / "local"), str(ROWS)],
        cwd=str(tmp_path),
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_big_merge_delete_and_optimize_on_the_cluster_give_local_modes_answer(spark, tmp_path):
    import tablets

    db = tablets.connect(spark=spark)
    got: dict = {}
    t0 = time.perf_counter()
    jobs = spark_jobs(spark, lambda: got.update(scale_case.run(db, ROWS)))
    record(f"cluster: {ROWS:,}-row MERGE, DELETE, OPTIMIZE", time.perf_counter() - t0)
    t0 = time.perf_counter()
    expected = _local(tmp_path)
    record(f"local[2]: {ROWS:,}-row MERGE, DELETE, OPTIMIZE", time.perf_counter() - t0)
    # the rows and counts agree; how many tablets there are follows each run's task layout
    layouts = [r["optimize"].pop("removed") for r in (got, expected)]
    assert got == expected
    assert jobs and all(n > 0 for n in layouts)
    half = ROWS // 100  # of the rows / 50 source ids, about half pair
    inserted, updated, deleted = got["merge"]["counts"]
    assert not got["merge"]["on_driver"]
    assert abs(inserted - half) < half // 10 and abs(deleted * 6 - updated) < half // 10
    assert got["optimize"]["dvs_left"] == 0
    assert got["optimize"]["rows"] == got["delete"]["rows"] and got["optimize"]["hash"] == got["delete"]["hash"]
    db.sql("DROP TABLE big")
