"""A classic session's backend (tablets.spark.backend) answers through the JVM of this process:
chosen when the session was built, asked by every caller; the process's session handed to the
thread that waits for it (tablets.spark.process)."""

from __future__ import annotations

import threading

import pytest
from pyspark.sql import SparkSession
from tablets.spark import process
from tablets.spark.backend import CLASSIC, backend

pytestmark = pytest.mark.spark


def test_the_built_session_is_classic_and_its_frames_ask_it(spark):
    frame = spark.range(10)
    assert backend(spark) is CLASSIC and backend(frame) is CLASSIC
    assert CLASSIC.context_key(spark) is spark.sparkContext
    assert CLASSIC.jvm(spark) is not None and CLASSIC.session_catalog(spark) is not None
    assert CLASSIC.optimized_plan(frame).nodeName() == "Range"
    assert CLASSIC.local_master(spark) and CLASSIC.rows_near() and not CLASSIC.analyzes_late()
    assert CLASSIC.alive(spark) and CLASSIC.java_version()


def test_plans_sizes_and_determinism(spark):
    frame = spark.range(1000)
    assert "Range" in (CLASSIC.plan_text(frame) or "")
    assert CLASSIC.size_bytes(frame) == 8000
    assert CLASSIC.broadcast_threshold(spark) == 10 << 20  # Spark's default, as Spark parses it
    assert CLASSIC.deterministic(frame.filter("id > 3"))
    assert not CLASSIC.deterministic(frame.filter("rand() > 0.5"))


def test_temporary_views(spark):
    spark.range(1).createOrReplaceTempView("backend_view")
    try:
        assert CLASSIC.is_temp_view(spark, "backend_view")
        assert not CLASSIC.is_temp_view(spark, "backend_no_such_view")
    finally:
        spark.catalog.dropTempView("backend_view")


def test_the_process_session_is_joined_and_handed_to_another_thread(spark):
    joined: list[object] = []
    assert process.shared_session(lambda: pytest.fail("a session runs: none to start"), joined.append) is spark
    assert joined == [spark] and process.alive(spark) and not process.alive(None)
    seen: list[object] = []

    def other() -> None:
        process.hand_over(spark)  # not the main thread: no signal handler
        seen.append(SparkSession.getActiveSession())

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert seen == [spark]
