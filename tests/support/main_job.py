"""Run the integration project's main job (scripts/main.py: seed, run (create), run (merge),
test) as a subprocess, on a copy of the project, over a generated profile."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PROFILE = """
integration_tests:
  target: under_test
  outputs:
    under_test:
      type: tablets
      method: session
      host: localhost
      schema: integration
      threads: 1
      shuffle_partitions: 2
{settings}
"""


@dataclass
class MainJob:
    returncode: int
    stdout: str
    stderr: str
    seconds: float


def run_main_job(tmp_path, settings: dict, env: dict | None = None, timeout: float = 2400) -> MainJob:
    """``settings``: profile keys (scalars or flat maps) under the output. No warm Spark unless
    they ask for one: a server would outlive the test that started it."""
    settings = {"keep_alive": 0, **settings}
    project = tmp_path / "project"
    shutil.copytree(
        os.path.join(ROOT, "integration_tests"),
        project,
        ignore=shutil.ignore_patterns("target", "logs", "dbt_packages", ".user.yml"),
    )
    lines = []
    for k, v in settings.items():
        if isinstance(v, dict):
            lines.append(f"      {k}:")
            lines += [f"        {kk!r}: {vv!r}" for kk, vv in v.items()]
        else:
            lines.append(f"      {k}: {v!r}")
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "profiles.yml").write_text(PROFILE.format(settings="\n".join(lines)))
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, os.path.join(ROOT, "scripts", "main.py"), str(project), str(profiles)],
        cwd=project,
        env=env if env is not None else dict(os.environ),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return MainJob(proc.returncode, proc.stdout, proc.stderr, time.perf_counter() - t0)
