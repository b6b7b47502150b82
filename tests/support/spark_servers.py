"""Real Spark servers for the opt-in cluster and Spark Connect suites, started from the installed
PySpark on 127.0.0.1 and stopped by their process ids:

- a standalone cluster: one master and two workers (``bin/spark-class ...deploy.master.Master``
  and ``...deploy.worker.Worker``), each the leader of its own process group, so stopping a
  worker's group also ends the executor JVMs and Python workers it started;
- a Spark Connect server (``bin/spark-submit --class ...SparkConnectServer``, in the foreground,
  so its pid is ours), with its warehouse and Derby metastore in a given directory.

``worker_python()`` is the executors' interpreter: a virtual environment with only the
``worker`` extra's packages (no tablets, no pyspark: PySpark comes from the executors' Spark),
built once and cached under the temp directory, keyed by the extra's requirement list;
``older_spark_python()`` one with PySpark 3.5 alone, whose Parquet readers open the tablets.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import tomllib
import urllib.request
from dataclasses import dataclass, field

from support.s3 import die_with_parent, free_port

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def spark_home() -> str:
    import pyspark

    return os.path.dirname(os.path.abspath(pyspark.__file__))


def worker_requirements() -> list[str]:
    """The ``worker`` extra of pyproject.toml."""
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return list(tomllib.load(f)["project"]["optional-dependencies"]["worker"])


def worker_python() -> str:
    """The Python of a venv holding only the ``worker`` extra (built on first use: ~20 s)."""
    return cached_venv("tablets-worker-venv", worker_requirements())


# Spark 3.5 is the Spark most lakehouses run today: tablets must open in its Parquet readers
OLDER_SPARK = ["pyspark==3.5.9"]


def older_spark_python() -> str:
    """The Python of a venv holding PySpark 3.5 and nothing else (built on first use: ~1 min)."""
    return cached_venv("tablets-spark35-venv", OLDER_SPARK)


def cached_venv(name: str, reqs: list[str]) -> str:
    """The Python of a venv holding ``reqs`` and not tablets, built once under the temp directory
    and keyed by ``reqs``; processes building it at once each build their own, the first kept."""
    key = hashlib.sha256(json.dumps([sys.version_info[:2], reqs]).encode()).hexdigest()[:12]
    venv = os.path.join(tempfile.gettempdir(), f"{name}-{key}")
    python = os.path.join(venv, "bin", "python")
    if os.path.exists(os.path.join(venv, ".complete")):
        return python
    building = f"{venv}.{os.getpid()}"
    subprocess.run([sys.executable, "-m", "venv", "--clear", building], check=True)
    subprocess.run(
        [
            os.path.join(building, "bin", "python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            *reqs,
        ],
        check=True,
    )
    probe = subprocess.run(
        [os.path.join(building, "bin", "python"), "-c", "import importlib.util as u; print(u.find_spec('tablets'))"],
        capture_output=True,
        text=True,
        check=True,
        env=_env(),
    )
    assert probe.stdout.strip() == "None", f"the venv {name} must not have tablets"
    open(os.path.join(building, ".complete"), "w").close()
    try:
        os.rename(building, venv)
    except OSError:  # another process finished first
        subprocess.run(["rm", "-rf", building], check=False)
    return python


def executor_conf(python: str) -> dict[str, str]:
    """What a driver (this process, or dbt through ``server_side_parameters``) gives the test
    cluster: the executors' own Python, and executors that fit the 1 GiB workers."""
    return {"spark.pyspark.python": python, "spark.executor.memory": "768m"}


def _env(**extra: str) -> dict[str, str]:
    """A server's environment: none of this process's Spark settings, and no PYTHONPATH (the test
    run's points at this tree's package, which the servers' workers must not have) unless given."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_")) and k != "PYTHONPATH"}
    env.update(SPARK_HOME=spark_home(), SPARK_LOCAL_IP="127.0.0.1", **extra)
    return env


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _stop(proc: subprocess.Popen, timeout: float = 30) -> None:
    """SIGTERM the process group the process leads (the process, and the executors and Python
    workers it started), then SIGKILL whatever is left after ``timeout`` seconds."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            proc.poll()  # reap the leader: a zombie still counts as a member of its group
            if not _group_alive(proc.pid):
                return
            time.sleep(0.2)
    proc.poll()


def _json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.loads(r.read())


@dataclass
class Cluster:
    master: str  # spark://127.0.0.1:<port>
    webui: str
    processes: list[subprocess.Popen] = field(default_factory=list)
    logs: str = ""

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.processes]

    def stop(self) -> None:
        for p in reversed(self.processes):  # workers (and their executors) first
            _stop(p)


def start_cluster(base: str, workers: int = 2, timeout: float = 180) -> Cluster:
    """A master and ``workers`` workers (1 core, 1 GiB each) on 127.0.0.1; their logs and work
    directories under ``base``."""
    home = spark_home()
    os.makedirs(base, exist_ok=True)
    port, ui = free_port(), free_port()
    cluster = Cluster(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui}", logs=base)

    def spawn(name: str, args: list[str]) -> None:
        log = open(os.path.join(base, f"{name}.log"), "wb")  # noqa: SIM115 - the child keeps it
        cluster.processes.append(
            subprocess.Popen(
                [os.path.join(home, "bin", "spark-class"), *args],
                env=_env(SPARK_WORKER_DIR=os.path.join(base, "work")),
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=base,
                start_new_session=True,
                preexec_fn=die_with_parent,
            )
        )
        log.close()

    try:
        spawn(
            "master",
            [
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(ui),
            ],
        )
        for i in range(workers):
            spawn(
                f"worker{i}",
                [
                    "org.apache.spark.deploy.worker.Worker",
                    cluster.master,
                    "--cores",
                    "1",
                    "--memory",
                    "1g",
                    "--host",
                    "127.0.0.1",
                    "--webui-port",
                    str(free_port()),
                    "--work-dir",
                    os.path.join(base, f"work{i}"),
                ],
            )
        deadline = time.monotonic() + timeout
        while True:
            try:
                state = _json(f"{cluster.webui}/json/")
                if sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE") >= workers:
                    return cluster
            except OSError:
                pass
            dead = [p for p in cluster.processes if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                raise RuntimeError(f"the cluster did not start (logs in {base})")
            time.sleep(1)
    except BaseException:
        cluster.stop()
        raise


@dataclass
class ConnectServer:
    url: str  # sc://127.0.0.1:<port>
    process: subprocess.Popen
    log: str

    def stop(self) -> None:
        _stop(self.process)


def start_connect(base: str, python: str, timeout: float = 240) -> ConnectServer:
    """A Spark Connect server (``local[2]``, Hive catalog) whose warehouse, Derby metastore and
    log are under ``base``; its Python workers run ``python``."""
    home = spark_home()
    os.makedirs(base, exist_ok=True)
    port = free_port()
    meta = os.path.join(base, "metastore")
    os.makedirs(meta, exist_ok=True)
    conf = {
        "spark.master": "local[2]",
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": os.path.join(base, "spark-warehouse"),
        "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={os.path.join(meta, 'metastore_db')};create=true",
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={meta}",
        "spark.sql.shuffle.partitions": "2",
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "false",
        "spark.pyspark.python": python,
        "spark.pyspark.driver.python": python,
    }
    args = [
        os.path.join(home, "bin", "spark-submit"),
        "--class",
        "org.apache.spark.sql.connect.service.SparkConnectServer",
        "--name",
        "tablets-connect-test",
    ]
    for k, v in conf.items():
        args += ["--conf", f"{k}={v}"]
    log = os.path.join(base, "connect.log")
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            args,
            env=_env(PYSPARK_PYTHON=python),
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=base,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
    server = ConnectServer(f"sc://127.0.0.1:{port}", proc, log)
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2):
                return server
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            server.stop()
            raise RuntimeError(f"the Spark Connect server did not start (log: {log})")
        time.sleep(1)


def leftovers(pids: list[int]) -> list[int]:
    """The process groups among ``pids`` (each a group leader's pid) that still have a process."""
    return [pid for pid in pids if _group_alive(pid)]


@dataclass
class MetastoreServer:
    uri: str  # thrift://127.0.0.1:<port>
    process: subprocess.Popen
    log: str

    def stop(self) -> None:
        _stop(self.process)


def start_metastore(warehouse: str, base: str, timeout: float = 240) -> MetastoreServer:
    """``python -m tablets.spark.metastore`` for ``warehouse`` on 127.0.0.1 (a free port the
    server picks itself), leading its own process group (its JVM included); its log under
    ``base``."""
    os.makedirs(base, exist_ok=True)
    log = os.path.join(base, "metastore.log")
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tablets.spark.metastore",
                "--warehouse",
                warehouse,
                "--host",
                "127.0.0.1",
                "--port",
                "0",
            ],
            env=_env(PYTHONPATH=os.path.join(ROOT, "adapter")),
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=base,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
    deadline = time.monotonic() + timeout
    while True:
        with open(log, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("tablets metastore: serving "):
                    return MetastoreServer(line.split()[3], proc, log)
        if proc.poll() is not None or time.monotonic() > deadline:
            _stop(proc)
            raise RuntimeError(f"the metastore server did not start (log: {log})")
        time.sleep(0.5)
