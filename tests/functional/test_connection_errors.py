"""Starting Spark fails with one clear dbt error, not a Java stack trace: Java missing, the Derby
metastore held by another process, an unreachable master or Spark Connect server.

Each case runs `dbt debug` in a fresh process (the test process already has its Spark session)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml

BIN = os.path.dirname(sys.executable)


def dbt_debug(tmp_path, target: dict, env: dict | None = None) -> str:
    project = tmp_path / "project"
    project.mkdir()
    (project / "dbt_project.yml").write_text(
        yaml.safe_dump({"name": "probe", "version": "1.0", "profile": "probe", "config-version": 2})
    )
    (project / "profiles.yml").write_text(yaml.safe_dump({"probe": {"target": "dev", "outputs": {"dev": target}}}))
    out = subprocess.run(
        [os.path.join(BIN, "dbt"), "debug", "--project-dir", str(project), "--profiles-dir", str(project)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )
    text = out.stdout + out.stderr
    assert out.returncode != 0, text
    assert "Traceback" not in text and "Py4JJavaError" not in text and "\tat org.apache" not in text, text
    return text


def profile(tmp_path, **extra) -> dict:
    return {
        "type": "tablets",
        "method": "session",
        "host": "localhost",
        "schema": "probe",
        "warehouse": str(tmp_path / "warehouse"),
        **extra,
    }


def test_unreachable_master(tmp_path):
    text = dbt_debug(tmp_path, profile(tmp_path, master="spark://127.0.0.1:1"))
    assert "The Spark master spark://127.0.0.1:1 is unreachable" in text
    assert "remove `master` to run on the embedded local Spark" in text


def test_unreachable_spark_connect(tmp_path):
    text = dbt_debug(tmp_path, profile(tmp_path, remote="sc://127.0.0.1:1"))
    assert "The Spark remote sc://127.0.0.1:1 is unreachable" in text


def test_java_missing(tmp_path):
    # PATH keeps only the virtual environment (python, dbt): no java on it
    text = dbt_debug(tmp_path, profile(tmp_path), env={"PATH": BIN, "JAVA_HOME": str(tmp_path / "no-java")})
    assert "Java 17 is required to run Spark" in text
    assert "openjdk-17-jre-headless" in text


@pytest.fixture
def held_metastore(project):
    """The warehouse whose Derby metastore this test process holds (its dbt session is up)."""
    from pyspark.sql import SparkSession
    from tablets.spark.catalog import warehouse_dir

    spark = SparkSession.getActiveSession()
    assert spark is not None
    spark.sql("SHOW DATABASES").collect()  # Derby boots on first use of the catalog
    return warehouse_dir(spark)


def test_derby_metastore_in_use(tmp_path, held_metastore):
    text = dbt_debug(tmp_path, profile(tmp_path, warehouse=held_metastore))
    assert "is in use by another process" in text
    assert "give this profile its own `warehouse`" in text


def test_commands_without_queries_never_start_spark(tmp_path, held_metastore):
    """`dbt parse` and `dbt ls` start no Spark session (the others start it while dbt parses the
    project: ``startup.start_early``), so they run beside a process that holds the metastore."""
    dbt_debug(tmp_path, profile(tmp_path, warehouse=held_metastore))  # writes the project
    project = tmp_path / "project"
    for command in ("parse", "ls"):
        out = subprocess.run(
            [os.path.join(BIN, "dbt"), command, "--project-dir", str(project), "--profiles-dir", str(project)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert out.returncode == 0, out.stdout + out.stderr
        assert "in use by another process" not in out.stdout + out.stderr
