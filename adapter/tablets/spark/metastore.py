"""The Hive metastore of a warehouse: where it lives, which process holds it, and a server that
lets several processes share it.

Where: a local warehouse keeps its embedded Derby metastore inside itself, so two warehouses
never share one::

    <warehouse>/_metastore/metastore_db     the Derby database
    <warehouse>/_metastore/derby.log
    <warehouse>/_metastore/metastore.lock   held (flock) by the process using the metastore;
                                            its text says who: pid, host, command, since

An object store warehouse keeps it on local disk, in ``./.tablets/<12 hex of the URI>/``.

Who: embedded Derby admits one process at a time, and a second process used to fail after a
minute of Derby retries with thousands of lines of Java stack trace (whose advice, "delete this
directory", would destroy the first process's catalog). ``claim()`` takes the lock before the
JVM starts and raises :class:`MetastoreInUse` at once, naming the holder. The kernel drops a
flock when its process dies, so a dead holder's lock blocks no one; Derby's own ``dbex.lck`` is
probed too (a Spark started without tablets, or an older version, holds only that one).

Several processes at once: ``python -m tablets.spark.metastore --warehouse W --port 9083``
serves W's metastore (the same Derby database an embedded session would use, so a warehouse
can switch between both) over Thrift; sessions connect with ``metastore_uri=
"thrift://127.0.0.1:9083"`` (profile key ``metastore_uri``). It is Hive 2.3's metastore
handler from PySpark's own jars, started through PySpark's JVM gateway rather than
``HiveMetaStore.main``, because Hive 2.3 binds its server socket to every interface and this
binds to ``--host`` (default 127.0.0.1).

Before this layout the metastore lived in the warehouse's parent directory; ``adopt_legacy``
moves (or, when the parent may hold other warehouses sharing it, copies) such a metastore into
the warehouse on the first start.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import logging
import os
import shutil
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass

from pyspark import SparkConf
from pyspark.java_gateway import launch_gateway

from tablets.exceptions import TabletsError
from tablets.spark.jvm import java_version
from tablets.storage.fileio import is_local, normalize

log = logging.getLogger(__name__)

METASTORE_DIR = "_metastore"
LOCK_FILE = "metastore.lock"
DEFAULT_PORT = 9083
URIS_CONF = "spark.hadoop.hive.metastore.uris"
JDO_URL_CONF = "spark.hadoop.javax.jdo.option.ConnectionURL"
DERBY_WAIT_S = 5.0  # a holder that just died: its JVM may outlive it by a moment
DERBY_LOCK_MARKERS = ("Another instance of Derby may have already booted", "XSDB6")

_held: dict[str, int] = {}  # metastore dir -> the fd of its lock, open for the process's life
_held_lock = threading.Lock()


# --- where ------------------------------------------------------------------------------------


def metastore_dir(warehouse: str) -> str:
    """The local directory of ``warehouse``'s embedded metastore (``metastore_db``,
    ``derby.log``, the lock): ``<warehouse>/_metastore``; for an object store warehouse,
    ``./.tablets/<12 hex of the URI>``."""
    wh = normalize(warehouse)
    if is_local(wh):
        return os.path.join(wh, METASTORE_DIR)
    digest = hashlib.sha1(wh.encode("utf-8")).hexdigest()[:12]
    return os.path.abspath(os.path.join(".tablets", digest))


def spark_warehouse(warehouse: str) -> str:
    """``spark.sql.warehouse.dir`` for a tablets warehouse: itself when local, else a local
    directory beside the metastore (Spark's Hadoop file system may not know the URI's scheme)."""
    return normalize(warehouse) if is_local(warehouse) else os.path.join(metastore_dir(warehouse), "spark-warehouse")


def derby_url(meta: str) -> str:
    return f"jdbc:derby:;databaseName={os.path.join(meta, 'metastore_db')};create=true"


def check_uri(uri: str) -> tuple[str, int]:
    """(host, port) of a ``thrift://host:port`` metastore URI, else a clear error."""
    rest = uri.split("://", 1)[1] if uri.lower().startswith("thrift://") else None
    host, _, port = (rest or "").split("/", 1)[0].rpartition(":")
    if rest is None or not host or not port.isdigit():
        raise TabletsError(
            f"metastore_uri {uri!r} is not a metastore server address",
            help="Write it as thrift://host:port, e.g. thrift://127.0.0.1:9083.",
        )
    return host.strip("[]"), int(port)


def reachable(uri: str, timeout: float = 5.0) -> None:
    """Raise a clear error unless the metastore server at ``uri`` accepts a connection (Spark's
    Hive client would retry and then fail with a Java stack trace)."""
    host, port = check_uri(uri)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return
    except OSError as e:
        raise TabletsError(
            f"the metastore server {uri} does not answer ({e.strerror or e})",
            help="Start it (`python -m tablets.spark.metastore --warehouse <warehouse> "
            f"--port {port}`) or correct metastore_uri; leave metastore_uri out to use the "
            "warehouse's embedded metastore.",
        ) from e


# --- who holds it -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Holder:
    """The process holding a metastore, as far as it can be known."""

    pid: int | None
    host: str = ""
    command: str = ""
    since: str = ""
    serves: str = ""  # the server's thrift:// URI when the holder is a metastore server

    def describe(self) -> str:
        who = f"pid {self.pid}" if self.pid else "a process that did not record itself"
        if self.host:
            who += f" on host {self.host}"
        if self.command:
            who += f" (`{self.command}`)"
        if self.since:
            who += f", since {self.since}"
        return who


WARM_MODULE = "tablets.spark.warm"  # its server holds the metastore (a warm Spark)


class MetastoreInUse(TabletsError):
    """Another process holds the warehouse's embedded metastore."""

    def __init__(self, warehouse: str, meta: str, holder: Holder, *, legacy: bool = False) -> None:
        self.warehouse = warehouse
        self.metastore = meta
        self.holder = holder
        where = f"The metastore of warehouse {warehouse} ({meta})"
        if legacy:
            where = f"The metastore at {meta} (the old layout's place of warehouse {warehouse}'s metastore)"
        if holder.serves:
            message = f"{where} is served by a metastore server, {holder.describe()}, at {holder.serves}."
            help = (
                f'Connect through it: metastore_uri="{holder.serves}" (dbt profile: `metastore_uri: {holder.serves}`).'
            )
        elif WARM_MODULE in holder.command:
            message = f"{where} is held by a warm Spark server, {holder.describe()}."
            help = f"Join it through a dbt profile with `keep_alive`, or stop it: `python -m {WARM_MODULE} --stop {warehouse}`."
        else:
            message = (
                f"{where} is in use by another process: {holder.describe()}. An embedded metastore "
                "admits one process at a time."
            )
            help = (
                "Wait for that process to end, or give this one its own warehouse; to run several "
                f"processes on this warehouse at once, serve its metastore (`{serve_command(warehouse)}`) "
                f'and connect every process with metastore_uri="thrift://127.0.0.1:{DEFAULT_PORT}".'
            )
        super().__init__(message, help=help)


def derby_locked(exc: BaseException) -> bool:
    """Whether Spark's error ``exc``, or one it came from, is Derby's refusal of a database
    another process has booted (a metastore tablets did not place, whose holder is unknown)."""
    seen = 0
    cur: BaseException | None = exc
    while cur is not None and seen < 20:
        if any(m in str(cur) for m in DERBY_LOCK_MARKERS):
            return True
        cur = cur.__cause__ or cur.__context__
        seen += 1
    return False


def serve_command(warehouse: str, port: int = DEFAULT_PORT) -> str:
    return f"python -m tablets.spark.metastore --warehouse {warehouse} --port {port}"


def _command_line() -> str:
    args = getattr(sys, "orig_argv", None) or [sys.executable, *sys.argv]
    return _short(" ".join(str(a) for a in args))


def _short(command: str) -> str:
    text = " ".join(command.split())
    return text if len(text) <= 160 else text[:157] + "..."


def _now() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())


def _read_owner(fd: int) -> dict[str, object]:
    """The owner record in the lock file; retried briefly, since its holder writes it just after
    taking the lock."""
    for _ in range(20):
        try:
            data = os.pread(fd, 4096, 0)
            if data.strip():
                obj = json.loads(data)
                return obj if isinstance(obj, dict) else {}
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    return {}


def _lock_holders(path: str) -> list[int]:
    """Pids holding a lock on ``path`` (Linux ``/proc/locks``; empty elsewhere)."""
    try:
        st = os.stat(path)
        with open("/proc/locks") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    dev = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    pids = []
    for line in lines:
        fields = line.split()
        if "->" in fields:  # a waiter, not a holder
            continue
        if len(fields) >= 6 and fields[5] == dev and fields[4].isdigit():
            pids.append(int(fields[4]))
    return pids


def _process_command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return _short(f.read().replace(b"\0", b" ").decode("utf-8", "replace"))
    except OSError:
        return ""


def _derby_holder(metastore_db: str) -> Holder | None:
    """The process that has booted the Derby database ``metastore_db`` (its exclusive POSIX
    lock on ``dbex.lck``), else None. The JVM holding it is a child process of its Python, so
    this process's own POSIX locks are never confused with it."""

    path = os.path.join(metastore_db, "dbex.lck")
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return None
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        pids = _lock_holders(path)
        pid = pids[0] if pids else None
        since = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(os.fstat(fd).st_mtime))
        return Holder(pid, socket.gethostname() if pid else "", _process_command(pid) if pid else "", since)
    else:
        fcntl.lockf(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def holder(meta: str) -> Holder | None:
    """Who holds the metastore in ``meta`` now (None if no one). Cheap, starts no JVM."""
    path = os.path.join(meta, LOCK_FILE)
    with _held_lock:
        if meta in _held:
            return Holder(os.getpid(), socket.gethostname(), _command_line())
    if os.path.exists(path):
        fd = _try_lock(path)
        if isinstance(fd, Holder):
            return fd
        os.close(fd)
    return _derby_holder(os.path.join(meta, "metastore_db"))


def _try_lock(path: str) -> int | Holder:
    """The fd of ``path`` with an exclusive flock, or the holder if another process has it."""

    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        owner = _read_owner(fd)
        os.close(fd)
        pids = _lock_holders(path)
        pid = owner.get("pid") if isinstance(owner.get("pid"), int) else (pids[0] if pids else None)
        return Holder(
            pid,  # type: ignore[arg-type]
            str(owner.get("host") or ""),
            str(owner.get("command") or (_process_command(pid) if isinstance(pid, int) else "")),
            str(owner.get("since") or ""),
            str(owner.get("serves") or ""),
        )
    return fd


def holder_record() -> dict[str, object]:
    """This process as a holder records itself: pid, host, command line, since when."""
    return {"pid": os.getpid(), "host": socket.gethostname(), "command": _command_line(), "since": _now()}


def holder_of(warehouse: str) -> Holder | None:
    """The other process holding ``warehouse``'s embedded metastore, or None (free, or held here)."""
    meta = metastore_dir(warehouse)
    with _held_lock:
        if meta in _held:
            return None
    path = os.path.join(meta, LOCK_FILE)
    if not os.path.exists(path):
        return None
    got = _try_lock(path)
    if isinstance(got, Holder):
        return got
    os.close(got)  # free: not this call's to keep
    return None


def claim(warehouse: str, *, serves: str = "") -> str:
    """Hold ``warehouse``'s embedded metastore for the rest of this process's life (Derby
    stays booted in the JVM after ``spark.stop()``), or raise :class:`MetastoreInUse` naming
    the holder. Idempotent. Returns the metastore directory."""
    meta = metastore_dir(warehouse)
    with _held_lock:
        if meta in _held:
            return meta
        os.makedirs(meta, exist_ok=True)
        got = _try_lock(os.path.join(meta, LOCK_FILE))
        if isinstance(got, Holder):
            raise MetastoreInUse(normalize(warehouse), meta, got)
        try:
            adopt_legacy(warehouse)
            _wait_for_derby(normalize(warehouse), meta, os.path.join(meta, "metastore_db"))
            owner = {**holder_record(), "serves": serves}
            os.ftruncate(got, 0)
            os.pwrite(got, json.dumps(owner).encode(), 0)
            os.fsync(got)
        except BaseException:
            os.close(got)
            raise
        _held[meta] = got
        return meta


def _wait_for_derby(warehouse: str, meta: str, metastore_db: str, *, legacy: bool = False) -> None:
    deadline = time.monotonic() + DERBY_WAIT_S
    while True:
        found = _derby_holder(metastore_db)
        if found is None:
            return
        if time.monotonic() > deadline:
            raise MetastoreInUse(warehouse, meta if not legacy else os.path.dirname(metastore_db), found, legacy=legacy)
        time.sleep(0.25)


# --- the layout before 0.2 ----------------------------------------------------------------------


def _other_warehouses(parent: str, warehouse: str) -> list[str]:
    """Entries of ``parent`` that may be warehouses sharing its metastore: anything but the
    warehouse, the metastore's own files and the local directories of object store warehouses."""
    keep = {os.path.basename(warehouse), "metastore_db", "derby.log"}
    out = []
    for name in sorted(os.listdir(parent)):
        path = os.path.join(parent, name)
        if name in keep or not os.path.isdir(path):
            continue
        if (
            len(name) == 12
            and all(c in "0123456789abcdef" for c in name)
            and os.path.isdir(os.path.join(path, "metastore_db"))
        ):
            continue
        out.append(name)
    return out


def adopt_legacy(warehouse: str) -> str | None:
    """Move the metastore of the old layout (``<parent of warehouse>/metastore_db``) into the
    warehouse, when the warehouse has none yet. When the parent holds other directories (other
    warehouses may share that metastore), copy it instead and leave it for them. Returns what
    was done, for the log, or None. Called with the warehouse's lock held."""
    wh = normalize(warehouse)
    if not is_local(wh):
        return None
    meta = metastore_dir(wh)
    parent = os.path.dirname(wh.rstrip(os.sep)) or os.sep
    old = os.path.join(parent, "metastore_db")
    new = os.path.join(meta, "metastore_db")
    if os.path.exists(new) or not os.path.exists(os.path.join(old, "service.properties")):
        return None
    _wait_for_derby(wh, meta, old, legacy=True)
    os.makedirs(meta, exist_ok=True)
    others = _other_warehouses(parent, wh)
    if others:
        shutil.copytree(old, new + ".partial", dirs_exist_ok=True)
        os.rename(new + ".partial", new)
        done = (
            f"copied the metastore of {parent} (shared with {', '.join(others)} in the old layout) "
            f"into {meta}; the original stays for them"
        )
    else:
        os.rename(old, new)
        with contextlib.suppress(FileNotFoundError):
            os.rename(os.path.join(parent, "derby.log"), os.path.join(meta, "derby.log"))
        done = f"moved the metastore of {wh} from {parent} into {meta}"
    log.warning("tablets: %s", done)
    return done


# --- the server -------------------------------------------------------------------------------


@dataclass
class Server:
    """A running metastore server (in this process, through PySpark's JVM gateway)."""

    uri: str
    warehouse: str
    _gateway: object
    _server: object
    _thread: threading.Thread

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self._server.stop()  # type: ignore[attr-defined]
        self._thread.join(timeout=10)
        with contextlib.suppress(Exception):  # Derby says "shut down" by raising
            self._gateway.jvm.java.sql.DriverManager.getConnection("jdbc:derby:;shutdown=true")  # type: ignore[attr-defined]
        with contextlib.suppress(Exception):
            self._gateway.shutdown()  # type: ignore[attr-defined]


def serve(warehouse: str, *, host: str = "127.0.0.1", port: int = DEFAULT_PORT) -> Server:
    """Serve ``warehouse``'s metastore over Thrift on ``host:port`` (port 0: any free port; see
    ``Server.uri``) until ``Server.stop()``. Holds the warehouse's metastore lock, so embedded
    sessions on the warehouse are told to connect here instead."""

    java_version()  # a clear error when Java is missing
    wh = normalize(warehouse)
    meta = metastore_dir(wh)
    os.makedirs(spark_warehouse(wh), exist_ok=True)
    claim(wh, serves=f"thrift://{host}:{port}" if port else "")
    gateway = launch_gateway(SparkConf().set("spark.driver.extraJavaOptions", f"-Dderby.system.home={meta}"))
    jvm = gateway.jvm
    conf = jvm.org.apache.hadoop.hive.conf.HiveConf()
    for k, v in {
        "javax.jdo.option.ConnectionURL": derby_url(meta),
        "hive.metastore.warehouse.dir": spark_warehouse(wh),
        "datanucleus.schema.autoCreateAll": "true",  # as Spark's embedded client does
        "hive.metastore.schema.verification": "false",
    }.items():
        conf.set(k, v)
    handler = jvm.org.apache.hadoop.hive.metastore.HiveMetaStore.newRetryingHMSHandler("tablets metastore", conf, False)
    sock = jvm.org.apache.thrift.transport.TServerSocket(jvm.java.net.InetSocketAddress(host, port))
    bound = sock.getServerSocket().getLocalPort()
    thrift = jvm.org.apache.thrift
    args = (
        getattr(thrift.server, "TThreadPoolServer$Args")(sock)
        .processor(jvm.org.apache.hadoop.hive.metastore.TSetIpAddressProcessor(handler))
        .transportFactory(thrift.transport.TTransportFactory())
        .protocolFactory(getattr(thrift.protocol, "TBinaryProtocol$Factory")())
        .minWorkerThreads(2)
        .maxWorkerThreads(100)
    )
    server = thrift.server.TThreadPoolServer(args)
    uri = f"thrift://{host}:{bound}"
    fd = _held[meta]
    record = json.loads(os.pread(fd, 4096, 0) or b"{}")
    record["serves"] = uri
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(record).encode(), 0)
    thread = threading.Thread(target=server.serve, name="tablets-metastore", daemon=True)
    thread.start()
    return Server(uri, wh, gateway, server, thread)


def main(argv: list[str] | None = None) -> int:

    parser = argparse.ArgumentParser(
        prog="python -m tablets.spark.metastore",
        description="Serve a warehouse's Hive metastore so that several processes (dbt commands, "
        "notebooks, jobs) can use the warehouse at once; connect them with metastore_uri.",
    )
    parser.add_argument("--warehouse", required=True, help="the warehouse (a directory or an object store URI)")
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"the port (default {DEFAULT_PORT}; 0: any free port)"
    )
    ns = parser.parse_args(argv)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        server = serve(ns.warehouse, host=ns.host, port=ns.port)
    except TabletsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"tablets metastore: serving {server.uri} for warehouse {server.warehouse} (pid {os.getpid()})", flush=True)
    stop.wait()
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
