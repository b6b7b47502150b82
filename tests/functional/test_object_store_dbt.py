"""The integration project's main job (seed, run: create, run: merge, test) with the profile's
``warehouse`` in a bucket of a real S3-compatible server (``moto_server`` on 127.0.0.1) and the
endpoint and credentials given only through the profile's ``storage_options`` (the process has
no ``AWS_*`` variables). Every tablet table lands in the bucket.

It runs as its own process (scripts/main.py on a copy of the project), since the process's
Spark session belongs to one warehouse.
"""

import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PROFILE = """
integration_tests:
  target: bucket
  outputs:
    bucket:
      type: tablets
      method: session
      schema: integration
      master: "local[2]"
      shuffle_partitions: 2
      threads: 1
      warehouse: {warehouse}
      storage_options:
{options}
"""


def test_integration_project_on_a_bucket(s3_server, tmp_path):
    project = tmp_path / "project"
    shutil.copytree(
        os.path.join(ROOT, "integration_tests"), project,
        ignore=shutil.ignore_patterns("target", "logs", "dbt_packages", ".user.yml"),
    )
    warehouse = s3_server.location("dbt")
    options = "\n".join(f"        {k}: {v!r}" for k, v in s3_server.env.items())
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "profiles.yml").write_text(PROFILE.format(warehouse=warehouse, options=options))
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    proc = subprocess.run(
        [sys.executable, os.path.join(ROOT, "scripts", "main.py"), str(project), str(tmp_path / "profiles")],
        cwd=project, env=env, capture_output=True, text=True, timeout=1500,
    )
    assert proc.returncode == 0, (proc.stdout[-6000:], proc.stderr[-3000:])
    assert "main job passed" in proc.stdout
    assert "MERGE 3 (inserted 1, updated 1, deleted 1, unchanged 0)" in proc.stdout  # stock
    keys = s3_server.keys("dbt/")
    assert any(k.startswith("dbt/_tablets_registry/") for k in keys)
    assert any("/stock/_log/" in k for k in keys) and any("/stock/dv/" in k for k in keys)
    local_tablets = [
        os.path.join(d, f) for d, _, files in os.walk(project) for f in files if "/tablets/" in os.path.join(d, f)
    ]
    assert local_tablets == []  # every tablet table lives in the bucket
