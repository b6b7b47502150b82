"""A warm Spark for short-lived processes: a local Spark kept running between commands, which
each later process of the same settings joins instead of starting its own.

A fresh process spends most of its start-up in the JVM and Spark's contexts (docs/DBT.md):
class loading, JIT compilation, the Hive client and its Derby metastore. ``session(...,
keep_alive=S)`` starts them once, in a server process of their own (``python -m
tablets.spark.warm --serve DIR``), which stays up until nothing has used it for ``S`` seconds.
Each later process with the same settings connects to that JVM over py4j (as PySpark's own
``spark-submit`` driver does) and gets a new ``SparkSession`` of its running SparkContext:
its own SQL settings, temp views and registered sources, the warm JVM, catalog and Python
workers. What the process does with it is what it would do with its own embedded session.

One process at a time, as with an embedded metastore: a process holds the server's lease (a
lock on ``<metastore dir>/server/lease``) for its whole life, and a second one gets
``MetastoreInUse`` naming the first. When a process ends (or dies), the server cancels what it
left running and drops its cached data before the next one joins. The server holds the
warehouse's embedded metastore, so another program opening the warehouse on its own is told
that the server holds it and how to stop it (``python -m tablets.spark.warm --stop WAREHOUSE``).

Settings differ (master, warehouse, Spark conf, the Python, the tablets package, PySpark's
version): the process does not join; an idle server of other settings is stopped first, since
it holds the metastore.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from typing import Any

import pyspark
from pyspark import SparkConf, SparkContext
from pyspark.java_gateway import launch_gateway
from pyspark.sql import SparkSession

from tablets.exceptions import TabletsError
from tablets.spark import metastore, native
from tablets.spark.backend import CLASSIC, choose
from tablets.spark.jvm import process_alive
from tablets.spark.metastore import Holder, MetastoreInUse, metastore_dir
from tablets.spark.session import adopt, build_session, default_warehouse, prepare_env
from tablets.storage.fileio import normalize

STATE = "server.json"  # the running server: pid, py4j port and secret, settings' digest
LEASE = "lease"  # held by the process using the server; names it
START = "start.lock"  # one process at a time starts a server
LOG = "server.log"
START_TIMEOUT_S = 300.0
LEASE_WAIT_S = 10.0  # the server holds the lease for a moment each time it checks for idleness
TICK_S = 0.5
ORPHAN_WAIT_S = 30.0  # a killed server's JVM shutting down

PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the tablets package's directory

_leases: list[int] = []  # this process's lease: held until it ends


def server_dir(warehouse: str) -> str:
    """Where the warm server of ``warehouse`` keeps its state: beside the warehouse's metastore."""
    return os.path.join(metastore_dir(warehouse), "server")


def fingerprint(warehouse: str, args: Mapping[str, Any]) -> str:
    """A digest of everything a joined session would differ by: its settings, this Python and
    its environment for the workers, the tablets package and the JVM's classes."""
    facts = {
        "warehouse": warehouse,
        "args": {k: args[k] for k in sorted(args)},
        "python": sys.executable,
        "pythonpath": os.environ.get("PYTHONPATH", ""),
        "pyspark": pyspark.__version__,
        "tablets": PACKAGE,
        "sources": _sources_stamp(),
        "jar": native.jar() or "",
    }
    return hashlib.sha256(json.dumps(facts, sort_keys=True, default=str).encode()).hexdigest()


def _sources_stamp() -> list[float]:
    """The package's Python sources, as far as an edit or an upgrade changes them (the warm
    server's Python workers keep the modules they imported)."""
    stamps = [
        os.stat(os.path.join(d, f)).st_mtime for d, _, files in os.walk(PACKAGE) for f in files if f.endswith(".py")
    ]
    return [len(stamps), max(stamps, default=0.0)]


def session(
    warehouse: str | None,
    *,
    keep_alive: float,
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    shuffle_partitions: int = 4,
    storage_options: Mapping[str, str] | None = None,
    metastore_uri: str | None = None,
) -> SparkSession:
    """A session of the warm server of these settings, started (and kept for ``keep_alive``
    idle seconds) if none runs; ready for tablet tables, as ``build_session``'s."""
    wh = normalize(warehouse) if warehouse else default_warehouse()
    args = {
        "master": master,
        "conf": dict(conf or {}),
        "shuffle_partitions": shuffle_partitions,
        "storage_options": dict(storage_options) if storage_options is not None else None,
        "metastore_uri": metastore_uri,
    }
    prepare_env(master, conf)  # the workers' Python, as a session started here would set it
    directory = server_dir(wh)
    os.makedirs(directory, exist_ok=True)
    digest = fingerprint(wh, args)
    spark = _attach(directory, digest, wh, keep_alive)
    if spark is None:
        with _start_lock(directory):
            spark = _attach(directory, digest, wh, keep_alive)  # another process may have started it meanwhile
            if spark is None:
                _start(directory, wh, digest, args)
                spark = _attach(directory, digest, wh, keep_alive)
        if spark is None:
            raise TabletsError(
                f"the warm Spark server of warehouse {wh} started but could not be joined", help=_log_help(directory)
            )
    return adopt(spark, wh, storage_options)


# --- joining ------------------------------------------------------------------------------------


def _read(path: str) -> dict[str, Any] | None:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _attach(directory: str, digest: str, warehouse: str, keep_alive: float) -> SparkSession | None:
    """A new session of the running server of ``digest``, its lease held by this process (the
    server then waits ``keep_alive`` idle seconds after it ends); None where no such server runs
    (one of other settings, idle, is stopped)."""
    state = _read(os.path.join(directory, STATE))
    if not state or "port" not in state or not process_alive(state.get("pid")):
        return None
    if not _own(state, directory):
        return None
    if state.get("fingerprint") != digest:
        _retire(directory, state, warehouse)
        return None
    fd = _lease(directory, warehouse, state["pid"], keep_alive)
    if fd is None:  # the server is stopping
        return None
    try:
        spark = _connect(state)
    except Exception:  # noqa: BLE001 - it ended, or its context stopped: start another once it is gone
        os.close(fd)
        stop(directory)
        return None
    _leases.append(fd)
    return spark


def _lease(directory: str, warehouse: str, server: int, keep_alive: float = 0) -> int | None:
    """This process's lease on the server (an open, locked file descriptor), or None if the
    server itself keeps it (it is stopping); ``MetastoreInUse`` if another process has it."""
    path = os.path.join(directory, LEASE)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    start = time.monotonic()
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            holder = _read(path) or {}
            pid = holder.get("pid")
            # the server takes the lease for a moment at each check: a holder is one that keeps it
            held = time.monotonic() - start > 1.0
            if held and pid and pid != os.getpid() and process_alive(pid) and pid != server:
                os.close(fd)
                meta = metastore_dir(warehouse)
                raise MetastoreInUse(
                    warehouse,
                    meta,
                    Holder(pid, holder.get("host", ""), holder.get("command", ""), holder.get("since", "")),
                ) from None
            if not process_alive(server) or time.monotonic() - start > LEASE_WAIT_S:
                os.close(fd)
                return None
            time.sleep(0.05)
    me = {**metastore.holder_record(), "keep_alive": keep_alive}
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(me).encode(), 0)
    return fd


def _connect(state: Mapping[str, Any]) -> SparkSession:
    """A new session of the server's SparkContext, through a py4j gateway of this process."""
    os.environ["PYSPARK_GATEWAY_PORT"] = str(state["port"])
    os.environ["PYSPARK_GATEWAY_SECRET"] = str(state["secret"])
    try:
        gateway = launch_gateway()  # connects, and imports what PySpark's classes expect
    finally:  # not inherited by this process's children
        os.environ.pop("PYSPARK_GATEWAY_PORT", None)
        os.environ.pop("PYSPARK_GATEWAY_SECRET", None)
    # Python objects the JVM calls back (the native-read planner) are named p0, p1, ... per
    # process; the JVM tells the process now calling it when one of an earlier process's is
    # collected, by name: numbered from a random start, this process's are never those
    gateway.gateway_property.pool.next_id = secrets.randbits(60)
    jvm: Any = gateway.jvm
    default = jvm.org.apache.spark.sql.SparkSession.getDefaultSession()
    if default.isEmpty() or default.get().sparkContext().isStopped():  # stopped by a process that used it
        gateway.close()
        raise TabletsError("the warm Spark's context has stopped")
    js = default.get().newSession()
    jsc = jvm.org.apache.spark.api.java.JavaSparkContext(js.sparkContext())
    sc = SparkContext(gateway=gateway, jsc=jsc, conf=SparkConf(_jconf=jsc.getConf()))
    sc.setLogLevel("ERROR")
    spark = SparkSession(sc, jsparkSession=js)
    choose(spark, CLASSIC)  # a session of the server's JVM, reached here through py4j
    return spark


def _retire(directory: str, state: Mapping[str, Any], warehouse: str) -> None:
    """Stop an idle server of other settings (it holds the metastore), and wait for its end;
    ``MetastoreInUse`` while a process uses it."""
    pid = state["pid"]
    fd = _lease(directory, warehouse, pid)  # held while it stops: nobody joins it meanwhile
    try:
        stop(directory)
    finally:
        if fd is not None:
            os.close(fd)


def retire_idle(warehouse: str) -> bool:
    """Stop the idle warm server of ``warehouse`` (for a process that opens the warehouse on its
    own); whether one ran. ``MetastoreInUse`` names the process using it, if one does."""
    directory = server_dir(normalize(warehouse))
    state = _read(os.path.join(directory, STATE))
    if not state or not process_alive(state.get("pid")) or not _own(state, directory):
        return False
    _retire(directory, state, normalize(warehouse))
    return True


def _own(state: Mapping[str, Any], directory: str) -> bool:
    """Whether ``state`` is of the server of ``directory``'s warehouse. A state file copied with
    its warehouse (a copied dbt project's target/) names the original's server: the copy drops
    the file and neither joins nor stops that server."""
    if "warehouse" not in state or server_dir(state["warehouse"]) == directory:
        return True
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(directory, STATE))
    return False


def stop(directory: str, timeout: float = 60.0) -> bool:
    """Ask the server whose state is in ``directory`` to stop, and wait for it; whether one ran."""
    state = _read(os.path.join(directory, STATE))
    pid = state.get("pid") if state and _own(state, directory) else None
    if not process_alive(pid):
        return False
    assert pid is not None
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while process_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    return True


# --- starting -----------------------------------------------------------------------------------


@contextlib.contextmanager
def _start_lock(directory: str):
    fd = os.open(os.path.join(directory, START), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _start(directory: str, warehouse: str, digest: str, args: Mapping[str, Any]) -> None:
    """Start the server process and wait until it serves (or raise what stopped it)."""
    holder = metastore.holder_of(warehouse)  # a process holding the metastore: its error, before a JVM starts
    previous = _read(os.path.join(directory, STATE)) or {}
    if holder is not None and previous.get("pid") and not process_alive(previous["pid"]):
        # a server killed (kill -9): its JVM ends once it sees py4j's pipe closed, and frees the metastore
        deadline = time.monotonic() + ORPHAN_WAIT_S
        while holder is not None and time.monotonic() < deadline:
            time.sleep(0.2)
            holder = metastore.holder_of(warehouse)
    if holder is not None and not args.get("metastore_uri"):
        raise MetastoreInUse(warehouse, metastore_dir(warehouse), holder)
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(directory, STATE))
    spec = os.path.join(directory, f"args-{os.getpid()}.json")
    fd = os.open(spec, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # storage options may hold secrets
    with os.fdopen(fd, "w") as f:
        json.dump({"warehouse": warehouse, "fingerprint": digest, **args}, f)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (os.path.dirname(PACKAGE), env.get("PYTHONPATH", "")) if p)
    with open(os.path.join(directory, LOG), "ab") as log:
        proc = subprocess.Popen(  # this interpreter, this module
            [sys.executable, "-m", "tablets.spark.warm", "--serve", directory, "--args", spec],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # not the caller's Ctrl-C, nor its end
        )
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        state = _read(os.path.join(directory, STATE))
        if state and state.get("pid") == proc.pid:
            if "error" in state:  # its own words (a metastore taken meanwhile names its holder)
                proc.wait(30)
                error = str(state["error"])  # a TabletsError's text carries its help
                raise TabletsError(error, help="" if "\nHelp: " in error else _log_help(directory))
            return
        if proc.poll() is not None:
            raise TabletsError("the warm Spark server ended as it started", help=_log_help(directory))
        if time.monotonic() > deadline:
            proc.kill()
            raise TabletsError(
                f"the warm Spark server did not start in {START_TIMEOUT_S:.0f} s", help=_log_help(directory)
            )
        time.sleep(0.1)


def _log_help(directory: str) -> str:
    return f"Its log is {os.path.join(directory, LOG)}."


# --- serving ------------------------------------------------------------------------------------


def _write(path: str, data: Mapping[str, Any]) -> None:
    tmp = f"{path}.{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # the py4j secret
    with os.fdopen(fd, "w") as f:
        json.dump(dict(data), f)
    os.replace(tmp, path)


def serve(directory: str, spec_path: str) -> int:
    """The server: start the session, publish how to join it, and stop once no process has
    held the lease for the ``keep_alive`` seconds that the last one to hold it asked for."""
    with open(spec_path) as f:
        spec = json.load(f)
    os.remove(spec_path)
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    state_path = os.path.join(directory, STATE)
    try:
        spark = build_session(
            spec["warehouse"],
            master=spec["master"],
            conf=spec["conf"],
            shuffle_partitions=spec["shuffle_partitions"],
            storage_options=spec["storage_options"],
            metastore_uri=spec["metastore_uri"],
        )
        spark.sql("SHOW DATABASES").collect()  # the catalog's first answer: warm
    except BaseException as e:  # noqa: BLE001 - told to the process waiting for the start
        _write(
            state_path,
            {"pid": os.getpid(), "error": str(e)},
        )
        return 1
    gateway = spark.sparkContext._gateway  # noqa: SLF001
    assert gateway is not None
    params = gateway.gateway_parameters
    lease = os.open(os.path.join(directory, LEASE), os.O_RDWR | os.O_CREAT, 0o600)
    _write(
        state_path,
        {
            "pid": os.getpid(),
            "port": params.port,
            "secret": params.auth_token,
            "fingerprint": spec["fingerprint"],
            "warehouse": spec["warehouse"],
        },
    )
    idle_since, used, keep_alive = time.monotonic(), False, START_TIMEOUT_S  # the first process joins meanwhile
    try:
        while not stopping.wait(TICK_S):
            if _stopped(spark):  # a process stopped it, or the JVM died: nothing to serve
                break
            try:
                fcntl.flock(lease, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                used = True
                continue
            if used:  # a process left: what it left running or cached goes before the next joins
                with contextlib.suppress(Exception):
                    spark.sparkContext.cancelAllJobs()
                    spark.catalog.clearCache()
                used, idle_since = False, time.monotonic()
                keep_alive = float((_read(os.path.join(directory, LEASE)) or {}).get("keep_alive") or 0)
            if time.monotonic() - idle_since > keep_alive:
                break  # the lease kept: nobody joins while it stops
            fcntl.flock(lease, fcntl.LOCK_UN)
    finally:
        with contextlib.suppress(FileNotFoundError):
            if (_read(state_path) or {}).get("pid") == os.getpid():
                os.remove(state_path)
        with contextlib.suppress(Exception):
            spark.stop()
    return 0


def _stopped(spark: SparkSession) -> bool:
    try:
        return bool(spark.sparkContext._jsc.sc().isStopped())  # noqa: SLF001
    except Exception:  # noqa: BLE001 - the JVM is gone
        return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tablets.spark.warm", description=__doc__.split("\n\n")[0])
    parser.add_argument("--stop", metavar="WAREHOUSE", help="stop the warm Spark server of this warehouse")
    parser.add_argument("--serve", metavar="DIR", help=argparse.SUPPRESS)
    parser.add_argument("--args", metavar="FILE", help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    if opts.serve:
        return serve(opts.serve, opts.args)
    if opts.stop:
        ran = stop(server_dir(normalize(opts.stop)))
        print("stopped" if ran else "no warm Spark server runs for this warehouse")
        return 0
    parser.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
