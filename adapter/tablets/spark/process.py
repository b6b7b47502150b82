"""The process's one Spark session, as a host that serves many connections keeps it (the dbt
plugin): the running one joined, else one started, maybe in a background thread while the host
does other work (``start_in_background``); made the active session of the thread that waits for
it, with Ctrl-C cancelling its jobs (``backend``). The host's own wording of what failed stays
with the host; what stopped a background start is raised, once, in the thread that waits.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from pyspark.sql import SparkSession

from tablets.spark.backend import backend

_lock = threading.RLock()
_session: Any = None
# the session started in the background (``start_in_background``), and what stopped it
_early: threading.Thread | None = None
_early_error: BaseException | None = None
_early_lock = threading.Lock()


def alive(spark: Any) -> bool:
    """Whether ``spark`` (None: no session) can still run statements."""
    return spark is not None and backend(spark).alive(spark)


def shared_session(start: Callable[[], Any], join: Callable[[Any], None]) -> Any:
    """The process's session: the running one (the one kept here, else Spark's active session),
    handed to ``join`` first (to set it up as the caller needs), or ``start()``'s, kept. Waits for
    a start begun by ``start_in_background``, and raises what stopped it."""
    global _session

    _join_early()
    with _lock:
        running = _session if alive(_session) else SparkSession.getActiveSession()
        if alive(running):
            join(running)
            _session = running
            return running
        spark = start()
        _session = spark
        return spark


def start_in_background(start: Callable[[], Any]) -> None:
    """Run ``start`` (which calls ``shared_session``) in a thread, so that the JVM, the session's
    set-up and the metastore's first answer (seconds) overlap the host's own start; the first
    ``shared_session`` waits for it. Nothing when a session runs already."""
    global _early
    with _early_lock:
        if _early is not None or alive(_session) or SparkSession.getActiveSession() is not None:
            return

        def run() -> None:
            global _early_error
            try:
                start()
            except BaseException as exc:  # noqa: BLE001 - the first shared_session raises it
                _early_error = exc

        # not a daemon: a command that ends before connecting waits for the start to finish
        # rather than leave a JVM half started
        _early = threading.Thread(target=run, name="tablets-session-start")
        _early.start()


def _join_early() -> None:
    """Wait for ``start_in_background``'s thread (unless this is it); hand its session to this
    thread (``hand_over``); raise, once, what stopped it."""
    global _early, _early_error
    early = _early
    if early is None or early is threading.current_thread():
        return
    early.join()
    with _early_lock:
        _early = None
        error, _early_error = _early_error, None
    if alive(_session):
        hand_over(_session)
    if error is not None:
        raise error


def hand_over(spark: Any) -> None:
    """``spark``, started in another thread, made this thread's as if it had started here: the
    active session, and (in the main thread) Ctrl-C cancelling its jobs."""
    b = backend(spark)
    b.make_active(spark)
    if threading.current_thread() is threading.main_thread():
        b.cancel_on_interrupt(spark)


def touch_catalog(spark: Any) -> None:
    """Ask the catalog once (its metastore), so that a locked or unreachable metastore is Spark's
    error now (``tablets.spark.metastore.derby_locked`` tells Derby's lock), not at the first
    statement."""
    spark.sql("SHOW DATABASES").collect()
