"""Starting the Spark session of dbt-tablets' connections, in dbt's words: before dbt-spark could
call ``getOrCreate()``, so that our configuration (warehouse, Derby metastore location, Python
workers, the ``tablets`` sources) is in place; the same session serves every connection of the
process (``tablets.sessions.shared_session``), and its start begins while dbt parses the project
(``start_early``). Starting it turns the usual failures into one clear error: Java missing, the
warehouse's metastore held by another process (named: pid, command, since when; found before any
JVM starts), an unreachable ``master``, ``remote`` or ``metastore_uri``. What needs Spark (the
session's start and liveness, the active session, interrupts, Derby's lock) is the engine's
(``tablets.sessions``); here are the profile's keys and the messages.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.exceptions import FailedToConnectError

import tablets
from tablets.exceptions import TabletsError
from tablets.sessions import (
    METASTORE_PORT,
    WARM_MODULE,
    MetastoreInUse,
    adopt,
    derby_locked,
    metastore_serve_command,
    same_location,
    shared_session,
    start_in_background,
    start_session,
    touch_catalog,
    warehouse_of,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from tablets.db import Database

logger = AdapterLogger("Tablets")

PROBE_TIMEOUT_S = 5.0


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
        touch_catalog(spark)
    except Exception as exc:  # py4j and Spark errors alike
        if derby_locked(exc):
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

    def join(running: SparkSession) -> None:
        adopt(running, storage_options=storage_options)  # idempotent; a session started elsewhere too
        _apply_runtime_conf(running, conf)

    def start() -> SparkSession:
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
            if derby_locked(exc):
                raise _derby_locked(warehouse) from None
            raise FailedToConnectError(f"Spark did not start: {_first_line(exc)}") from exc
        if not remote:
            _check_metastore(spark, warehouse)
            actual = warehouse_of(spark)
            if not same_location(actual, warehouse):
                logger.warning(f"tablets: the Spark session uses the warehouse {actual}, not {warehouse}")
        return spark

    return shared_session(start, join)


def start_early(warehouse: str, **kwargs: Any) -> None:
    """Begin ``get_session(warehouse, **kwargs)`` in a thread, so that the JVM, the session's
    set-up and the metastore's first answer (seconds) overlap dbt's parse of the project; the
    first connection waits for it (``get_session``). Nothing when a session runs already."""
    start_in_background(lambda: get_session(warehouse, **kwargs))


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
