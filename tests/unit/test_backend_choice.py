"""The session's backend (tablets.spark.backend): chosen once per session and kept, asked through a
frame too; the Spark Connect answers that need no server."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from tablets.spark.backend import CLASSIC, CONNECT, backend, choose

pytestmark = pytest.mark.unit


class ClassicSession:
    """Stands for a classic session (a class outside ``pyspark.sql.connect``)."""


class ConnectSession:
    """Stands for a Spark Connect session (the class's module is Connect's)."""

    def __init__(self, explain: str = "", fails: bool = False) -> None:
        self.text, self.fails, self.interrupted = explain, fails, 0
        self.is_stopped = False

    def interruptAll(self) -> list[str]:  # PySpark's name
        self.interrupted += 1
        return []


ConnectSession.__module__ = "pyspark.sql.connect.session"


class ConnectFrame:
    __module__ = "pyspark.sql.connect.dataframe"

    def __init__(self, session: ConnectSession) -> None:
        self.sparkSession = session

    def _explain_string(self, **kwargs: object) -> str:
        if self.sparkSession.fails:
            raise RuntimeError("the server is gone")
        return self.sparkSession.text


def test_a_session_built_elsewhere_gets_its_backend_by_its_class():
    assert backend(ClassicSession()) is CLASSIC
    assert backend(ConnectSession()) is CONNECT and CONNECT.connect and not CLASSIC.connect


def test_the_backend_is_decided_once_and_a_frame_asks_its_session():
    session = ClassicSession()
    assert choose(session, CONNECT) is CONNECT  # the builder knew it
    assert choose(session, CLASSIC) is CONNECT  # decided: kept
    assert backend(session) is CONNECT
    assert backend(SimpleNamespace(sparkSession=session)) is CONNECT


def test_connect_sizes_come_from_the_servers_explain_cost():
    plan = (
        "== Analyzed Logical Plan ==\nRange (0, 9), Statistics(sizeInBytes=9.0 GiB)\n"
        "== Optimized Logical Plan ==\nRange (0, 1000, step=1), Statistics(sizeInBytes=1.5 KiB, rowCount=1000)\n"
    )
    frame = ConnectFrame(ConnectSession(plan))
    assert backend(frame) is CONNECT and backend(frame).size_bytes(frame) == 1536  # the optimized plan's
    assert CONNECT.size_bytes(ConnectFrame(ConnectSession("no statistics"))) is None
    assert CONNECT.size_bytes(ConnectFrame(ConnectSession(fails=True))) is None
    assert CONNECT.broadcast_threshold(ConnectSession()) is None  # the setting's text is read instead


def test_connect_has_no_jvm_here():
    session = ConnectSession()
    frame = ConnectFrame(session)
    assert CONNECT.jvm(session) is None and CONNECT.session_catalog(session) is None
    assert CONNECT.optimized_plan(frame) is None
    assert not CONNECT.deterministic(frame)  # cannot be told here: the careful answer
    assert CONNECT.plan_text(SimpleNamespace()) is None  # no explain: the caller counts it a read
    assert CONNECT.analyzes_late() and not CLASSIC.analyzes_late()
    assert not CONNECT.rows_near() and not CONNECT.local_master(session)
    assert CONNECT.context_key(session) is session
    assert CONNECT.java_version() == "remote"


def test_connect_liveness_and_interrupts():
    session = ConnectSession()
    assert CONNECT.alive(session)
    CONNECT.cancel_all_jobs(session)
    assert session.interrupted == 1
    session.is_stopped = True
    assert not CONNECT.alive(session)
