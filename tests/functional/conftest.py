"""Functional tests: real dbt runs (dbt-tests-adapter) on the embedded Spark.

Every test class gets its own dbt project and schema, but they all share ONE Spark session per
pytest process: the adapter starts it on the first connection and reuses it afterwards (the
embedded Derby metastore admits one process at a time, and starting Spark costs 10-30 s).

The fixtures of ``dbt.tests.fixtures.project`` (the dbt-tests-adapter pytest plugin) are
imported here rather than named in ``pytest_plugins``: pytest refuses ``pytest_plugins`` in a
conftest below the rootdir when the whole suite runs from the repository root.
"""

from __future__ import annotations

import os

import pytest
from dbt.tests.fixtures.project import *  # noqa: F403 - the dbt-tests-adapter fixtures


@pytest.fixture(scope="session")
def dbt_profile_target(tmp_path_factory):
    warehouse = os.environ.get("TABLETS_TEST_WAREHOUSE") or str(tmp_path_factory.mktemp("dbt-tablets") / "warehouse")
    return {
        "type": "tablets",
        "method": "session",
        "warehouse": warehouse,
        "master": "local[2]",
        "shuffle_partitions": 2,
        "threads": 1,
        "keep_alive": 0,  # the session in this test process, not a warm server outliving it
    }


@pytest.fixture(scope="session", autouse=True)
def _restore_ansi():
    """dbt-spark turns ANSI mode off in the shared session; give other test tiers theirs back."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    before = active.conf.get("spark.sql.ansi.enabled", None) if active is not None else None
    yield
    after = SparkSession.getActiveSession()
    if after is None:
        return
    if before is None:
        after.conf.unset("spark.sql.ansi.enabled")
    else:
        after.conf.set("spark.sql.ansi.enabled", before)


def pytest_collection_modifyitems(items):
    here = os.path.dirname(os.path.abspath(__file__))
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.functional)
