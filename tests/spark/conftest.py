"""One local Spark session for every Spark test (starting one costs ~10 s on 2 cores)."""

import os

import pytest


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from tablets.spark.session import build_session

    base = tmp_path_factory.mktemp("spark")
    session = build_session(os.path.join(str(base), "warehouse"), master="local[2]", shuffle_partitions=2)
    yield session
    session.stop()


@pytest.fixture
def tmp_table_dir(tmp_path):
    """A fresh directory for a tablet table (not yet created)."""
    return str(tmp_path / "table")
