"""Profile credentials and the connection manager of dbt-tablets (type ``tablets``).

A profile::

    my_project:
      target: dev
      outputs:
        dev:
          type: tablets
          method: session          # the default: Spark runs inside the dbt process
          host: localhost          # not used by the session method (dbt-spark requires it)
          schema: analytics
          # warehouse: /data/wh    # default: <project>/target/tablets-warehouse/warehouse
          #                        # or an object store: s3://bucket/wh, gs://..., abfss://...
          # storage_options: {AWS_REGION: eu-west-1}   # added to the AWS_* / GOOGLE_* / AZURE_*
          #                                            # environment variables
          # master: spark://10.0.0.5:7077   # a standalone cluster instead of local[*]
          # remote: sc://10.0.0.5:15002     # Spark Connect instead of an embedded Spark
          # metastore_uri: thrift://127.0.0.1:9083   # a shared metastore server, so that several
          #                                          # processes can use the warehouse at once
          # shuffle_partitions: 4
          # keep_alive: 1800       # seconds a warm local Spark waits for the next dbt command
          #                        # (the default for a local Spark; 0: each command starts
          #                        # and ends its own)
          # server_side_parameters: {"spark.driver.memory": "4g"}
          # ansi: false            # opt out of Spark's ANSI rules (on by default: a value that
          #                        # does not fit its column fails the statement)
          # retries: 5             # re-runs of a MERGE that lost a commit race to a conflicting one
          # retry_backoff: 0.1     # seconds; random waits, doubling per re-run (at most 5 s)

The engine runs in the dbt process next to the Spark driver (it plans MERGEs as DataFrames),
so ``session`` is the only method; ``master`` and ``remote`` reach a cluster from there.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import os
from collections.abc import Generator, Iterable
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from dbt.adapters.contracts.connection import AdapterResponse, Connection, ConnectionState
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.connections import (
    SparkConnectionManager,
    SparkConnectionMethod,
    SparkCredentials,
)
from dbt.flags import get_flags
from dbt_common.exceptions import DbtRuntimeError

import tablets
from dbt.adapters.tablets.session import ANSI_CONF, StatementOptions, TabletsConnection, TabletsConnectionWrapper
from dbt.adapters.tablets.startup import open_database, start_early
from tablets.exceptions import TabletsError
from tablets.sessions import check_metastore_uri

logger = AdapterLogger("Tablets")

WAREHOUSE_ENV = "TABLETS_WAREHOUSE"


def project_dir() -> str:
    """The dbt project directory: ``--project-dir`` / ``DBT_PROJECT_DIR``, else the nearest
    directory holding ``dbt_project.yml`` (dbt's own rule), else the working directory."""
    try:
        flagged = getattr(get_flags(), "PROJECT_DIR", None)
        if flagged:
            return os.path.abspath(str(flagged))
    except Exception:  # noqa: BLE001 - dbt-core not initialised (unit tests, Python API)
        pass
    here = os.path.abspath(os.getcwd())
    probe = here
    while True:
        if os.path.exists(os.path.join(probe, "dbt_project.yml")):
            return probe
        parent = os.path.dirname(probe)
        if parent == probe:
            return here
        probe = parent


def resolve_warehouse(warehouse: str | None, root: str | None = None, target_path: str | None = None) -> str:
    """The warehouse: an absolute directory (``spark.sql.warehouse.dir``; the embedded Derby
    metastore and ``derby.log`` go inside it, in ``_metastore/``) or an object store URI, kept
    as given. Relative paths are relative to the project directory."""
    root = root or project_dir()
    chosen = warehouse or os.environ.get(WAREHOUSE_ENV)
    if chosen:
        chosen = os.path.expanduser(chosen)
        return chosen if os.path.isabs(chosen) or "://" in chosen else os.path.abspath(os.path.join(root, chosen))
    target = target_path or "target"
    base = target if os.path.isabs(target) else os.path.join(root, target)
    return os.path.abspath(os.path.join(base, "tablets-warehouse", "warehouse"))


# a dbt user's commands come minutes apart (edit, run, look): the warm Spark outlives the pauses
# of a working session and is gone after a break, as build tools' daemons are (docs/DBT.md)
KEEP_ALIVE = 1800


@dataclass
class TabletsCredentials(SparkCredentials):
    method: SparkConnectionMethod = SparkConnectionMethod.SESSION
    host: str | None = "localhost"
    warehouse: str | None = None
    master: str | None = None
    remote: str | None = None
    shuffle_partitions: int = 4
    # seconds a warm local Spark waits for the next command (tablets.spark.warm); unset: KEEP_ALIVE
    # for a local Spark, 0 where Spark runs elsewhere (remote, a cluster's master)
    keep_alive: int | None = None
    storage_options: dict[str, str] | None = None
    metastore_uri: str | None = None
    retries: int | None = None  # re-runs of a statement that lost a commit race (default 5)
    retry_backoff: float | None = None  # seconds, the first re-run's longest wait (default 0.1)
    # Spark 4's ANSI rules (a value that does not fit its column fails the statement), which
    # dbt-spark turns off in every session; false opts the profile out (a model: config ansi)
    ansi: bool = True

    def __post_init__(self) -> None:
        if self.method != SparkConnectionMethod.SESSION:
            raise DbtRuntimeError(
                f"dbt-tablets runs its MERGE engine next to the Spark driver, so `method` must be "
                f"session, not {self.method}.\nHelp: use `method: session` with `master: "
                "spark://host:7077` for a cluster or `remote: sc://host:15002` for Spark Connect."
            )
        if self.master and self.remote:
            raise DbtRuntimeError(
                "`master` and `remote` are two ways to reach a cluster; give one.\n"
                "Help: `master` starts a driver in the dbt process; `remote` uses a Spark Connect server."
            )
        if self.shuffle_partitions < 1:
            raise DbtRuntimeError(f"`shuffle_partitions` must be at least 1, not {self.shuffle_partitions}")
        elsewhere = bool(self.remote or (self.master and not self.master.startswith("local")))
        if self.keep_alive is None:
            self.keep_alive = 0 if elsewhere else KEEP_ALIVE
        if self.keep_alive < 0:
            raise DbtRuntimeError(f"`keep_alive` is seconds, 0 or more, not {self.keep_alive}")
        if self.keep_alive and elsewhere:
            raise DbtRuntimeError(
                "`keep_alive` keeps a local Spark warm between dbt commands; with "
                f"`{'remote' if self.remote else 'master'}` the Spark runs elsewhere already.\n"
                "Help: leave `keep_alive` out of this profile."
            )
        if (self.retries or 0) < 0 or (self.retry_backoff or 0) < 0:
            raise DbtRuntimeError(
                f"`retries` ({self.retries}) and `retry_backoff` ({self.retry_backoff}) must be 0 or more"
            )
        if self.metastore_uri is not None:
            try:
                check_metastore_uri(self.metastore_uri)
            except TabletsError as e:
                raise DbtRuntimeError(f"`metastore_uri`: {e}") from None
        if not isinstance(self.ansi, bool):
            raise DbtRuntimeError(f"`ansi` is true or false, not {self.ansi!r}")
        given = {str(k): str(v) for k, v in (self.server_side_parameters or {}).items()}.get(ANSI_CONF)
        super().__post_init__()  # (sets spark.sql.ansi.enabled to false)
        self.server_side_parameters[ANSI_CONF] = given.lower() if given else str(self.ansi).lower()

    @property
    def type(self) -> str:
        return "tablets"

    @property
    def unique_field(self) -> str:
        return self.warehouse or self.host or "localhost"

    def _connection_keys(self) -> tuple[str, ...]:
        return (
            "method",
            "master",
            "remote",
            "warehouse",
            "metastore_uri",
            "schema",
            "shuffle_partitions",
            "keep_alive",
            "ansi",
        )

    def connection_info(self, *, with_aliases: bool = False) -> Iterable[tuple[str, Any]]:
        """The settings ``dbt debug`` prints (and Jinja's ``target`` holds), with the warehouse
        resolved. Cheap: dbt calls it for every node it parses. ``dbt debug`` adds the Spark and
        Java versions of the running session (``TabletsAdapter.debug_query``)."""
        for key, value in super().connection_info(with_aliases=with_aliases):
            if key == "warehouse" and value is None:
                value = self.__dict__.get("_resolved_warehouse")
                if value is None:
                    value = self.__dict__["_resolved_warehouse"] = resolve_warehouse(None)
            elif key == "master" and not value and not self.remote:
                value = "local[*]"
            yield key, value


# dbt commands that run queries: their Spark session starts while dbt parses the project
# (``startup.start_early``); the others (parse, ls, deps, docs serve, ...) never start one
CONNECTING_COMMANDS = frozenset(
    {
        "build",
        "run",
        "test",
        "seed",
        "snapshot",
        "show",
        "compile",
        "generate",
        "retry",
        "clone",
        "run-operation",
        "freshness",
        "debug",
    }
)


def _connects(flags: Any) -> bool:
    return getattr(flags, "WHICH", None) in CONNECTING_COMMANDS


# the engine's modules the plugin calls (and what they import: sqlglot, pandas through pyarrow)
ENGINE_MODULES = (
    "tablets.db",
    "tablets.changes",
    "tablets.constraints",
    "tablets.statements.metadata",
    "tablets.reads",
)


def _load_engine() -> None:
    """Import the engine's modules now, while the session starts in its thread: the plugin
    imports them only where it calls them, so that a fresh process starts its session about a
    second sooner (``tests/unit/test_dbt_startup.py`` checks the plugin's import)."""
    for name in ENGINE_MODULES:
        importlib.import_module(name)


_exit_registered = False


def _skip_last_collection() -> None:
    """At the process's exit, freeze the heap instead of letting the interpreter collect it
    once more (``gc.freeze``: a frozen object is never collected): dbt's manifest makes that
    last collection about a second of a command's wall time; the operating system frees the
    memory anyway. Registered once; atexit runs it only when the process ends."""
    global _exit_registered
    if not _exit_registered:
        _exit_registered = True
        atexit.register(gc.freeze)


def _session_args(creds: TabletsCredentials) -> dict[str, Any]:
    """The session a profile's connections share (``startup.get_session``'s arguments)."""
    return {
        "master": creds.master,
        "remote": creds.remote,
        "conf": dict(creds.server_side_parameters or {}),
        "shuffle_partitions": creds.shuffle_partitions,
        "storage_options": creds.storage_options,
        "metastore_uri": creds.metastore_uri,
        "keep_alive": creds.keep_alive,
    }


class TabletsConnectionManager(SparkConnectionManager):
    TYPE = "tablets"

    def __init__(self, profile: Any, mp_context: Any) -> None:
        super().__init__(profile, mp_context)
        creds = profile.credentials
        # the run's project and target path are known here (not in the credentials)
        root, target = getattr(profile, "project_root", None), getattr(profile, "target_path", None)
        if isinstance(creds, TabletsCredentials):
            creds.warehouse = resolve_warehouse(creds.warehouse, root, target)
            if _connects(get_flags()):
                start_early(resolve_warehouse(creds.warehouse), **_session_args(creds))
                _load_engine()
                _skip_last_collection()

    @classmethod
    def open(cls, connection: Connection) -> Connection:
        if connection.state == ConnectionState.OPEN:
            return connection
        creds: TabletsCredentials = connection.credentials
        db = open_database(
            resolve_warehouse(creds.warehouse),
            **_session_args(creds),
            retries=creds.retries,
            retry_backoff=creds.retry_backoff,
        )
        db.spark.conf.set(ANSI_CONF, creds.server_side_parameters[ANSI_CONF])  # a warm Spark keeps an earlier one's
        connection.handle = TabletsConnectionWrapper(TabletsConnection(db))
        connection.state = ConnectionState.OPEN
        return connection

    def run_statement(self, sql: str, options: StatementOptions) -> AdapterResponse:
        """``sql`` run as dbt runs a statement (``add_query``: its log lines, query comment and
        error handling), with ``options`` in the place of its bindings (``session.py``)."""
        _, cursor = self.add_query(self._add_query_comment(sql), auto_begin=False, bindings=options)
        return self.get_response(cursor)

    @classmethod
    def get_response(cls, cursor: Any) -> AdapterResponse:
        """``MERGE 42 (inserted 10, updated 30, deleted 2, unchanged 5)`` for engine statements."""
        result = getattr(cursor, "statement_result", None)
        if result is None:
            return AdapterResponse(_message="OK")
        return AdapterResponse(_message=result.message, code=result.operation, rows_affected=result.rows_affected)

    @contextmanager
    def exception_handler(self, sql: str) -> Generator[None, None, None]:
        try:
            yield
        except DbtRuntimeError:
            raise
        except Exception as exc:
            logger.debug(f"Error while running:\n{sql}")
            logger.debug(exc)  # the whole of it, plan and stack trace, for the debug log
            raise DbtRuntimeError(tablets.short_error(exc)) from exc
