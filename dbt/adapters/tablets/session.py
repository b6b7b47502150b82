"""The session connection of dbt-tablets: dbt-spark's ``session`` method, with every statement
sent through the engine's SQL front door (``tablets.Database.sql``).

- Statements that write tablet tables (MERGE, INSERT ... ON CONFLICT, UPDATE, DELETE, INSERT
  INTO / CREATE / DROP of a tablet table) run on the engine; the cursor then holds no rows and
  the :class:`~tablets.db.StatementResult` (``MERGE 42 (inserted 10, ...)``) becomes dbt's
  adapter response.
- Everything else goes to Spark SQL and behaves exactly as in dbt-spark's ``session.Cursor``
  (a lazy DataFrame that ``fetchall`` collects).

The Spark session is started here, before dbt-spark could call ``getOrCreate()``, so that our
configuration (warehouse, Derby metastore location, Python workers, the ``tablets`` sources)
is in place; the same session serves every connection of the process. Starting it turns the
usual failures into one clear error: Java missing, the warehouse's metastore held by another
process (named: pid, command, since when; found before any JVM starts), an unreachable
``master``, ``remote`` or ``metastore_uri``.
"""

from __future__ import annotations

import json
import re
import signal
import socket
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.exceptions import FailedToConnectError
from dbt.adapters.spark.session import Connection as SparkSessionConnection
from dbt.adapters.spark.session import Cursor as SparkSessionCursor
from dbt.adapters.spark.session import SessionConnectionWrapper
from dbt_common.exceptions import DbtRuntimeError
from pyspark.sql import SparkSession

import tablets
from tablets.exceptions import TabletsError
from tablets.sessions import (
    METASTORE_PORT,
    WARM_MODULE,
    MetastoreInUse,
    adopt,
    is_connect,
    metastore_serve_command,
    same_location,
    start_session,
    warehouse_of,
)
from tablets.sqltext import sql_string

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from tablets.db import Database, StatementResult
    from tablets.sessions import MetastoreInUse

logger = AdapterLogger("Tablets")

PROBE_TIMEOUT_S = 5.0
# a statement's engine options travel in it, as a comment the cursor takes out (options_comment)
_OPTIONS = re.compile(r"/\* tablets\.options (\{.*?\}) \*/\n?", re.DOTALL)
DERBY_LOCK_MARKERS = ("Another instance of Derby may have already booted", "XSDB6")

_lock = threading.RLock()
_session: SparkSession | None = None
# the session started in the background while dbt parses the project (``start_early``)
_early: threading.Thread | None = None
_early_error: BaseException | None = None


# --- the cursor -------------------------------------------------------------------------------


ANSI_CONF = "spark.sql.ansi.enabled"


@contextmanager
def ansi_mode(spark: Any, ansi: bool | None) -> Iterator[None]:
    """Spark's ANSI mode set to ``ansi`` (a model's ``ansi`` config) for one statement, and the
    profile's restored after; None: the profile's as it is."""
    if ansi is None:
        yield
        return
    before = spark.conf.get(ANSI_CONF)
    spark.conf.set(ANSI_CONF, "true" if ansi else "false")
    try:
        yield
    finally:
        spark.conf.set(ANSI_CONF, before)


def options_comment(options: Mapping[str, Any] | None) -> str:
    """``options`` (``tablets.MergeOptions`` fields) as the comment that carries them in the
    statement they are for (``statement_options`` in the macros); "" for none."""
    if not options:
        return ""
    text = json.dumps(dict(options), default=list).replace("*/", "*\\/")  # JSON reads \/ as /
    return f"/* tablets.options {text} */\n"


def take_options(sql: str) -> tuple[str, dict[str, Any] | None]:
    """The statement without its options comment, and the options it carried (lists as tuples,
    as ``MergeOptions`` holds them); None without one."""
    m = _OPTIONS.search(sql)
    if m is None:
        return sql, None

    def tuples(v: Any) -> Any:
        return tuple(tuples(x) for x in v) if isinstance(v, list) else v

    options = {k: tuples(v) for k, v in json.loads(m.group(1)).items()}
    return sql[: m.start()] + sql[m.end() :], options


class TabletsCursor(SparkSessionCursor):
    """dbt-spark's session cursor, executing through ``Database.sql``."""

    def __init__(self, connection: TabletsConnection) -> None:
        super().__init__()
        self._connection = connection
        self.statement_result: StatementResult | None = None

    def execute(self, sql: str, *parameters: Any) -> None:

        if len(parameters) > 0:
            sql = sql % parameters
        self.statement_result = None
        self._rows = None
        sql, options = take_options(sql)
        db = self._connection.database
        ansi = options.pop("ansi", None) if options else None
        # a model's sql_header runs before its statement, in the same call
        with ansi_mode(db.spark, ansi):
            out = db.script(sql, options=options)  # errors become dbt's in the manager's exception_handler
        from tablets.db import StatementResult  # (the engine loads beside the session: _load_engine)

        if isinstance(out, StatementResult):
            self._df = None
            self._rows = []
            self.statement_result = out
            if options and options.get("parameters"):
                from dbt.adapters.tablets.changes import after_statement

                after_statement(db, options, out)  # tablets_changes: what a no-op consumed
            logger.debug(f"tablets: {out.message} on {out.target} ({_timings(out)})")
        elif isinstance(out, str):  # EXPLAIN of a statement on a tablet table
            self._df = db.spark.createDataFrame([(out,)], "plan string")
        else:
            self._df = out

    def fetchall(self) -> Any:
        with _read_errors():
            return super().fetchall()

    def fetchone(self) -> Any:
        with _read_errors():
            return super().fetchone()


@contextmanager
def _read_errors() -> Iterator[None]:
    """A query that hit a damaged tablet: the tablets FormatError naming it, not Spark's stack trace."""

    try:
        yield
    except TabletsError as exc:  # tablets.spark.errors translated it where the job failed
        raise DbtRuntimeError(str(exc)) from exc
    except Exception as exc:  # over Spark Connect: Spark's error, whose text names the tablet
        from tablets.reads import read_error

        clear = read_error(exc)
        if clear is None:
            raise
        raise DbtRuntimeError(str(clear)) from exc


def _timings(result: StatementResult) -> str:
    return ", ".join(f"{k} {v:.0f} ms" for k, v in result.metrics.timings_ms.items()) or "no timings"


class TabletsConnection(SparkSessionConnection):
    """The connection handle: the engine's Database."""

    def __init__(self, database: Database) -> None:
        super().__init__()
        self.database = database

    def cursor(self) -> TabletsCursor:
        return TabletsCursor(self)


class TabletsConnectionWrapper(SessionConnectionWrapper):
    handle: TabletsConnection
    _cursor: TabletsCursor | None

    @classmethod
    def _fix_binding(cls, value: Any) -> str | float:
        """A seed value as SQL. dbt-spark's session method turns None into the string 'None'
        (dbt-labs/dbt-spark#901) and breaks on quotes; here None is NULL and strings are
        escaped Spark SQL literals."""
        if value is None:
            return "NULL"
        if isinstance(value, str):
            return sql_string(value)
        return super()._fix_binding(value)

    @property
    def statement_result(self) -> StatementResult | None:
        return self._cursor.statement_result if self._cursor is not None else None

    @property
    def database(self) -> Database:
        return self.handle.database


# --- starting Spark -----------------------------------------------------------------------------


def _alive(spark: SparkSession | None) -> bool:
    if spark is None:
        return False

    if is_connect(spark):
        return not getattr(spark, "is_stopped", False)
    return getattr(spark.sparkContext, "_jsc", None) is not None


def _endpoints(url: str, scheme: str, default_port: int) -> list[tuple[str, int]]:
    rest = url[len(scheme) :].split("/", 1)[0].split(";", 1)[0]
    out = []
    for part in rest.split(","):
        host, _, port = part.strip().rpartition(":") if ":" in part else (part.strip(), "", "")
        try:
            out.append((host or "localhost", int(port) if port else default_port))
        except ValueError:
            out.append((part.strip(), default_port))
    return out


def probe(url: str, timeout: float = PROBE_TIMEOUT_S) -> str | None:
    """None if a ``spark://`` master / ``sc://`` Connect server answers a TCP connect (or the URL
    is not one of those), else why not. Spark itself would retry for a minute and then fail
    with a JVM stack trace."""
    for scheme, port in (("spark://", 7077), ("sc://", 15002)):
        if url.startswith(scheme):
            errors = []
            for host, p in _endpoints(url, scheme, port):
                try:
                    with socket.create_connection((host, p), timeout=timeout):
                        return None
                except OSError as e:
                    errors.append(f"{host}:{p}: {e.strerror or e}")
            return "; ".join(errors)
    return None


def _unreachable(kind: str, url: str, why: str) -> FailedToConnectError:
    if kind == "master":
        fix = (
            "Start the master (and a worker) or correct `master` in profiles.yml; remove `master` "
            "to run on the embedded local Spark."
        )
    else:
        fix = (
            "Start the Spark Connect server (sbin/start-connect-server.sh) or correct `remote` in "
            "profiles.yml; remove `remote` to run on the embedded local Spark."
        )
    return FailedToConnectError(f"The Spark {kind} {url} is unreachable ({why}).\nHelp: {fix}")


def _derby_message(exc: BaseException) -> bool:
    seen = 0
    cur: BaseException | None = exc
    while cur is not None and seen < 20:
        if any(m in str(cur) for m in DERBY_LOCK_MARKERS):
            return True
        cur = cur.__cause__ or cur.__context__
        seen += 1
    return False


def _derby_locked(warehouse: str) -> FailedToConnectError:
    """Spark's own Derby error, for a metastore tablets did not place (a ConnectionURL in
    ``server_side_parameters``): the holder is unknown. Never Derby's "delete this directory"."""
    return FailedToConnectError(
        f"The Derby metastore of warehouse {warehouse} is in use by another process (another dbt "
        "command, a notebook or a test run on the same metastore). Embedded Derby admits one "
        f"process at a time.\nHelp: {_several_processes(warehouse)}"
    )


def _several_processes(warehouse: str) -> str:

    return (
        "wait for that process to finish, or give this profile its own `warehouse`; to run "
        "several dbt commands on this warehouse at once, serve its metastore "
        f"(`{metastore_serve_command(warehouse)}`) and set `metastore_uri: thrift://127.0.0.1:{METASTORE_PORT}` "
        "in the profile."
    )


def metastore_in_use(exc: MetastoreInUse) -> FailedToConnectError:
    """The engine's ``MetastoreInUse`` in dbt's words (profile keys, not Python arguments)."""
    holder = exc.holder
    if WARM_MODULE in holder.command:
        return FailedToConnectError(
            f"The metastore of warehouse {exc.warehouse} is held by a warm Spark server, {holder.describe()}.\n"
            "Help: a profile with `keep_alive` and the same settings joins it; or stop it: "
            f"`python -m {WARM_MODULE} --stop {exc.warehouse}`."
        )
    if holder.serves:
        return FailedToConnectError(
            f"The metastore of warehouse {exc.warehouse} is served by a metastore server, "
            f"{holder.describe()}, at {holder.serves}.\nHelp: set `metastore_uri: {holder.serves}` "
            "in the profile."
        )
    return FailedToConnectError(
        f"The metastore of warehouse {exc.warehouse} ({exc.metastore}) is in use by another "
        f"process: {holder.describe()}. Embedded Derby admits one process at a time.\n"
        f"Help: {_several_processes(exc.warehouse)}"
    )


def _check_metastore(spark: SparkSession, warehouse: str) -> None:
    """Touch the metastore now, so a locked or unreachable one is one clear error at connect time."""
    try:
        spark.sql("SHOW DATABASES").collect()
    except Exception as exc:  # py4j and Spark errors alike
        if _derby_message(exc):
            raise _derby_locked(warehouse) from exc
        raise FailedToConnectError(f"Spark started, but its catalog does not answer: {_first_line(exc)}") from exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:500] if text else type(exc).__name__


def _apply_runtime_conf(spark: SparkSession, conf: Mapping[str, str]) -> None:
    for key, value in conf.items():
        try:
            if spark.conf.get(key, None) != value:
                spark.conf.set(key, value)
        except Exception:  # noqa: BLE001 - static confs of a session started elsewhere
            logger.debug(f"tablets: cannot set {key} on the running session; keeping its value")


def get_session(
    warehouse: str,
    *,
    master: str | None,
    remote: str | None,
    conf: Mapping[str, str],
    shuffle_partitions: int,
    storage_options: Mapping[str, str] | None = None,
    metastore_uri: str | None = None,
    keep_alive: int = 0,
) -> SparkSession:
    """The process's Spark session: the running one (tablets sources registered, runtime
    ``conf`` applied), or a new one built by ``tablets.spark.session.build_session``. Waits for
    a start begun by ``start_early``, and raises what stopped it."""
    global _session

    _join_early()
    with _lock:
        running = _session if _alive(_session) else SparkSession.getActiveSession()
        if _alive(running):
            assert running is not None
            adopt(running, storage_options=storage_options)  # idempotent; a session started elsewhere too
            _apply_runtime_conf(running, conf)
            _session = running
            return running
        for kind, url in (("master", master), ("remote", remote)):
            why = probe(url) if url else None
            if url and why:
                raise _unreachable(kind, url, why)
        try:
            spark = start_session(
                warehouse,
                master=master,
                remote=remote,
                conf=conf,
                shuffle_partitions=shuffle_partitions,
                storage_options=storage_options,
                metastore_uri=metastore_uri,
                keep_alive=keep_alive,
            )
        except MetastoreInUse as exc:  # before any JVM started
            raise metastore_in_use(exc) from None
        except TabletsError as exc:  # Java missing, an unreachable metastore server, ...
            raise FailedToConnectError(str(exc)) from None
        except Exception as exc:  # the JVM gateway's errors
            if _derby_message(exc):
                raise _derby_locked(warehouse) from None
            raise FailedToConnectError(f"Spark did not start: {_first_line(exc)}") from exc
        if not remote:
            _check_metastore(spark, warehouse)
            actual = warehouse_of(spark)
            if not same_location(actual, warehouse):
                logger.warning(f"tablets: the Spark session uses the warehouse {actual}, not {warehouse}")
        _session = spark
        return spark


def start_early(warehouse: str, **kwargs: Any) -> None:
    """Begin ``get_session(warehouse, **kwargs)`` in a thread, so that the JVM, the session's
    set-up and the metastore's first answer (seconds) overlap dbt's parse of the project; the
    first connection waits for it (``get_session``). Nothing when a session runs already."""
    global _early
    with _early_lock:
        if _early is not None or _alive(_session) or SparkSession.getActiveSession() is not None:
            return

        def start() -> None:
            global _early_error
            try:
                get_session(warehouse, **kwargs)
            except BaseException as exc:  # noqa: BLE001 - the first connection raises it
                _early_error = exc

        # not a daemon: a command that ends before connecting waits for the start to finish
        # rather than leave a JVM half started
        _early = threading.Thread(target=start, name="tablets-session-start")
        _early.start()


_early_lock = threading.Lock()


def _join_early() -> None:
    """Wait for ``start_early``'s thread (unless this is it); raise, once, what stopped it."""
    global _early, _early_error
    early = _early
    if early is None or early is threading.current_thread():
        return
    early.join()
    with _early_lock:
        _early = None
        error, _early_error = _early_error, None
    spark = _session
    if _alive(spark) and not is_connect(spark):
        assert spark is not None
        _make_active(spark)
        if threading.current_thread() is threading.main_thread():
            _cancel_on_interrupt(spark)
    if error is not None:
        raise error


def _make_active(spark: SparkSession) -> None:
    """``spark`` as this thread's active session, as if it had been started here (Spark's
    active session is per thread: ``SparkSession.getActiveSession()`` finds it)."""
    SparkSession._activeSession = spark  # noqa: SLF001 - what PySpark's constructor sets
    spark._jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)  # noqa: SLF001


def _cancel_on_interrupt(spark: SparkSession) -> None:
    """What PySpark sets up when the session starts in the main thread: Ctrl-C cancels the
    running Spark jobs (a session started in another thread lacks it)."""
    context = spark.sparkContext

    def handler(signum: int, frame: Any) -> None:
        try:
            context.cancelAllJobs()
        finally:
            raise KeyboardInterrupt()

    signal.signal(signal.SIGINT, handler)


def open_database(
    warehouse: str,
    *,
    master: str | None = None,
    remote: str | None = None,
    conf: Mapping[str, str] | None = None,
    shuffle_partitions: int = 4,
    storage_options: Mapping[str, str] | None = None,
    metastore_uri: str | None = None,
    keep_alive: int = 0,
    retries: int | None = None,
    retry_backoff: float | None = None,
) -> Database:

    spark = get_session(
        warehouse,
        master=master,
        remote=remote,
        conf=dict(conf or {}),
        shuffle_partitions=shuffle_partitions,
        storage_options=storage_options,
        metastore_uri=metastore_uri,
        keep_alive=keep_alive,
    )
    given = {"retries": retries, "retry_backoff": retry_backoff}  # None: the engine's default
    return tablets.connect(spark=spark, **{k: v for k, v in given.items() if v is not None})
