"""The opt-in Spark Connect suite: a real Spark Connect server started from the installed
PySpark on 127.0.0.1 (in the foreground, stopped by its pid), with its warehouse and Derby
metastore in a temp directory; its Python workers run a venv with only the ``worker`` extra
(no tablets: the client's session ships the package as an artifact).

Opt in with TABLETS_CONNECT=1, in a pytest process of its own (a Spark Connect session switches
the process's PySpark into Connect mode)::

    TABLETS_CONNECT=1 .venv/bin/python -m pytest tests/connect     # or scripts/test-connect.sh
"""

from __future__ import annotations

import os

import pytest
from support.timings import mark_opt_in, print_summary

HERE = os.path.dirname(os.path.abspath(__file__))


def pytest_collection_modifyitems(items):
    mark_opt_in(items, HERE, "TABLETS_CONNECT", pytest.mark.connect, "scripts/test-connect.sh")


def pytest_terminal_summary(terminalreporter):
    print_summary(terminalreporter)


@pytest.fixture(scope="session")
def worker_python():
    from support.spark_servers import worker_python

    return worker_python()


@pytest.fixture(scope="session")
def connect_server(tmp_path_factory, worker_python):
    from pyspark import SparkContext
    from support.spark_servers import leftovers, start_connect

    if SparkContext._active_spark_context is not None:
        pytest.skip(
            "a classic Spark session already runs in this process: run tests/connect in a pytest process of its own"
        )
    server = start_connect(str(tmp_path_factory.mktemp("connect-server")), worker_python)
    yield server
    server.stop()
    assert leftovers([server.process.pid]) == [], "Spark Connect server processes left running"


@pytest.fixture(scope="session")
def spark(connect_server, tmp_path_factory):
    """A Spark Connect session of this process, tablets sources registered, package shipped."""
    from tablets.spark.session import build_session

    saved = {k: os.environ.get(k) for k in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE")}
    warehouse = str(tmp_path_factory.mktemp("connect-client") / "warehouse")
    session = build_session(warehouse, remote=connect_server.url)
    yield session
    session.stop()
    for k, v in saved.items():  # PySpark leaves the process in Connect mode
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
