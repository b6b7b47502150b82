"""One local Spark session for every Spark test (starting one costs ~10 s on 2 cores)."""

import logging
import os

import pytest

# The suite's statements are tiny and many: the JVM's CPU goes to planning, code generation and
# collecting their garbage: a heap above Spark's 1 GB default and the throughput collector
# (measured in bench/RESULTS.md, 2026-11-28).
TEST_JVM = {"spark.driver.memory": "3g", "spark.driver.extraJavaOptions": "-XX:+UseParallelGC"}


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from tablets.spark.session import build_session

    base = tmp_path_factory.mktemp("spark")
    session = build_session(
        os.path.join(str(base), "warehouse"), master="local[2]", shuffle_partitions=2, conf=TEST_JVM
    )
    yield session
    session.stop()


def _front_door(spark, database: str):
    import tablets

    d = tablets.connect(spark=spark)
    d.sql(f"CREATE DATABASE IF NOT EXISTS {database}")
    return d


@pytest.fixture(scope="module")
def db(spark, request):
    """A front door on the session, with the test module's database (its ``DATABASE``) created."""
    return _front_door(spark, request.module.DATABASE)


@pytest.fixture(scope="module")
def reg_db(spark):
    """A front door on the session, with the database ``reg`` of the regression tests that run
    one statement on both plans (``support.both_plans``)."""
    return _front_door(spark, "reg")


@pytest.fixture
def tmp_table_dir(tmp_path):
    """A fresh directory for a tablet table (not yet created)."""
    return str(tmp_path / "table")


@pytest.fixture
def native_reads(caplog):
    """``take()``: the tables the front door read natively since the last ``take()`` (the
    ``tablets_read`` of each debug record ``tablets.reads`` logs: table, version, tablets,
    tablets_pruned)."""
    caplog.set_level(logging.DEBUG, logger="tablets")

    def take() -> list[dict]:
        out = [r.tablets_read for r in caplog.records if hasattr(r, "tablets_read")]
        caplog.clear()
        return out

    return take
