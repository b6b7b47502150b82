"""The integration project's main job (seed, run: create, run: merge, test; scripts/main.py)
as dbt runs it against the standalone cluster: a profile with ``master: spark://127.0.0.1:<port>``
and the executors' own Python in ``server_side_parameters`` (``spark.pyspark.python``). The
warehouse is a local directory, which the workers (on this host) read and write directly.
"""

from __future__ import annotations

import os

from support.main_job import run_main_job
from support.spark_servers import executor_conf
from support.timings import record


def test_integration_project_on_the_cluster(cluster, worker_python, tmp_path):
    warehouse = str(tmp_path / "warehouse" / "warehouse")
    job = run_main_job(
        tmp_path,
        {"master": cluster.master, "warehouse": warehouse, "server_side_parameters": executor_conf(worker_python)},
    )
    record("cluster: dbt main job", job.seconds)
    assert job.returncode == 0, (job.stdout[-6000:], job.stderr[-3000:])
    assert "main job passed" in job.stdout
    assert "MERGE 3 (inserted 1, updated 1, deleted 1, unchanged 0)" in job.stdout  # stock
    stock = [
        os.path.join(d, f) for d, _, files in os.walk(warehouse) for f in files if "/stock/dv/" in os.path.join(d, f)
    ]
    assert stock, "the stock model's MERGE wrote no deletion vector"
