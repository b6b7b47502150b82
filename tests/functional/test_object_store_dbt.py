"""The integration project's main job (seed, run: create, run: merge, test) with the profile's
``warehouse`` in a bucket of a real S3-compatible server (``moto_server`` on 127.0.0.1) and the
endpoint and credentials given only through the profile's ``storage_options`` (the process has
no ``AWS_*`` variables). Every tablet table lands in the bucket.

It runs as its own process (scripts/main.py on a copy of the project), since the process's
Spark session belongs to one warehouse.
"""

import os

import pytest
from support.main_job import run_main_job


@pytest.mark.slow
@pytest.mark.skipif(
    not os.environ.get("TABLETS_SLOW"),
    reason="opt-in (TABLETS_SLOW=1): the whole main job on the bucket, ~2 min; the engine on a bucket runs "
    "by default (tests/spark/test_object_store.py)",
)
def test_integration_project_on_a_bucket(s3_server, tmp_path):
    settings = {
        "master": "local[2]",
        "warehouse": s3_server.location("dbt"),
        "storage_options": dict(s3_server.env),
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    job = run_main_job(tmp_path, settings, env=env)
    assert job.returncode == 0, (job.stdout[-6000:], job.stderr[-3000:])
    assert "main job passed" in job.stdout
    assert "MERGE 3 (inserted 1, updated 1, deleted 1, unchanged 0)" in job.stdout  # stock
    keys = s3_server.keys("dbt/")
    assert any(k.startswith("dbt/_tablets_registry/") for k in keys)
    assert any("/stock/_delta_log/" in k for k in keys) and any("/stock/dv/" in k for k in keys)
    local_tablets = [
        os.path.join(d, f)
        for d, _, files in os.walk(tmp_path / "project")
        for f in files
        if "/tablets/" in os.path.join(d, f)
    ]
    assert local_tablets == []  # every tablet table lives in the bucket
