"""The README's profile keeps a warm Spark (``keep_alive`` unset: its default): a second `dbt`
command in a fresh process joins the one the first started, and a copy of the project (``cp -r``,
its target/ included) never does, nor touches the original's server or tables. Real `dbt`
processes; every server is ended by its id."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml
from tablets.spark import warm

pytestmark = pytest.mark.functional

BIN = os.path.dirname(sys.executable)
MODEL = """{{ config(materialized='merge_tablets', unique_key='id') }}
select id, id * {{ var('phase', 1) }} as v from (select explode(sequence(1, 3)) as id)
"""


def _project(root):
    (root / "models").mkdir(parents=True)
    (root / "dbt_project.yml").write_text(
        yaml.safe_dump({"name": "warm", "version": "1.0", "profile": "warm", "config-version": 2})
    )
    (root / "models" / "m.sql").write_text(MODEL)
    target = {"type": "tablets", "method": "session", "schema": "warm", "threads": 1}  # the README's keys
    (root / "profiles.yml").write_text(yaml.safe_dump({"warm": {"target": "dev", "outputs": {"dev": target}}}))


def _dbt_run(project, *args, ok=True):
    out = subprocess.run(
        [os.path.join(BIN, "dbt"), "run", "--project-dir", str(project), "--profiles-dir", str(project), *args],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert (out.returncode == 0) == ok, out.stdout[-4000:] + out.stderr[-2000:]
    return out.stdout


def _server(project):
    wh = os.path.join(str(project), "target", "tablets-warehouse", "warehouse")
    state = warm._read(os.path.join(warm.server_dir(wh), warm.STATE)) or {}
    return wh, state.get("pid")


@pytest.fixture
def servers():
    """Warehouses whose warm servers the test started: each stopped (``warm.stop``, by its id)."""
    warehouses: list[str] = []
    yield warehouses
    for wh in warehouses:
        warm.stop(warm.server_dir(wh), timeout=30)


def test_a_second_command_joins_the_warm_spark_and_a_copied_project_never_shares_it(tmp_path, servers):
    project = tmp_path / "project"
    _project(project)
    _dbt_run(project)
    wh, first = _server(project)
    assert first, "no warm Spark after the first command"
    servers.append(wh)
    out = _dbt_run(project, "--vars", "phase: 2")
    assert "updated 3" in out, out
    assert _server(project)[1] == first  # joined, not started

    copy = tmp_path / "copy"
    shutil.copytree(project, copy)  # target/ with it: the warehouse, its metastore, the server's state
    out = _dbt_run(copy, "--vars", "phase: 3", ok=False)  # a copied warehouse refuses (docs/FORMAT.md)
    assert "is a copy of (or was moved from)" in out, out
    copy_wh, second = _server(copy)
    servers.append(copy_wh)
    assert second != first and copy_wh != wh
    with open(os.path.join(warm.server_dir(wh), warm.STATE)) as f:
        assert json.load(f)["pid"] == first  # the original's server, untouched
    out = _dbt_run(project, "--vars", "phase: 2")  # and its table: still phase 2's rows
    assert "unchanged 3" in out and _server(project)[1] == first, out
