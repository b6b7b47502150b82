"""The opt-in cluster suite: a real standalone Spark cluster (one master, two workers of one
core each) started from the installed PySpark on 127.0.0.1, whose executors run a Python with
only the ``worker`` extra (no tablets: the session ships the package).

Opt in with TABLETS_CLUSTER=1, in a pytest process of its own (a driver process holds one
SparkContext; an embedded local session started first by another suite would be reused)::

    TABLETS_CLUSTER=1 .venv/bin/python -m pytest tests/cluster     # or scripts/test-cluster.sh
"""

from __future__ import annotations

import os

import pytest
from support.timings import mark_opt_in, print_summary

HERE = os.path.dirname(os.path.abspath(__file__))


def pytest_collection_modifyitems(items):
    mark_opt_in(items, HERE, "TABLETS_CLUSTER", pytest.mark.cluster, "scripts/test-cluster.sh")


def pytest_terminal_summary(terminalreporter):
    print_summary(terminalreporter)


@pytest.fixture(scope="session")
def worker_python():
    """The executors' interpreter: a venv with the ``worker`` extra only (cached)."""
    from support.spark_servers import worker_python

    return worker_python()


@pytest.fixture(scope="session")
def cluster(tmp_path_factory, worker_python):
    from pyspark import SparkContext
    from support.spark_servers import leftovers, start_cluster

    if SparkContext._active_spark_context is not None:
        pytest.skip("a Spark session already runs in this process: run tests/cluster in a pytest process of its own")
    cluster = start_cluster(str(tmp_path_factory.mktemp("cluster")))
    yield cluster
    cluster.stop()
    assert leftovers(cluster.pids) == [], "cluster processes left running"


@pytest.fixture(scope="session")
def driver_warehouse(tmp_path_factory):
    """The one warehouse of this process's drivers: a JVM keeps the Hive client of its first
    SparkContext, so a later driver of the process still uses the first one's metastore (with
    another warehouse its tables would be the first one's: refused, ``WarehouseCopied``)."""
    return os.path.join(str(tmp_path_factory.mktemp("driver")), "warehouse")


@pytest.fixture(scope="module")
def spark(cluster, worker_python, driver_warehouse):
    """A driver in this process on the cluster, for one test module (stopped after it, so the
    next module's driver, e.g. a dbt subprocess, gets the workers' cores)."""
    from support.spark_servers import executor_conf
    from tablets.spark.session import build_session

    session = build_session(
        driver_warehouse,
        master=cluster.master,
        shuffle_partitions=2,
        conf=executor_conf(worker_python),
    )
    yield session
    session.stop()
