"""A warm Spark (``tablets.spark.warm``): processes in a row join one server instead of each
starting a JVM; one process at a time holds it; a process killed mid-way frees it; other
settings replace an idle server; the server ends after the last process's ``keep_alive`` and
frees the warehouse's metastore; a program opening the warehouse itself stops an idle one; a
killed one is replaced. Every process here is a real one, ended by its id. The change of settings
starts a second server: opt-in (TABLETS_SLOW=1)."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from tablets.spark import metastore, warm

pytestmark = pytest.mark.spark

CLIENT = """
import json, os, sys, time
from tablets.sessions import start_session
import tablets
spark = start_session({wh!r}, keep_alive={keep_alive}, shuffle_partitions={partitions})
db = tablets.connect(spark=spark)
for statement in {statements!r}:
    db.sql(statement)
from tablets.spark.native import MARKER
read = spark.sql("SELECT * FROM warm_t")  # plain Spark SQL: the native-read planner, called back here
rows = sorted(tuple(r) for r in read.collect())
native = MARKER in read._jdf.queryExecution().analyzed().toString()
state = json.load(open(os.path.join({directory!r}, "server.json")))
print(json.dumps({{"me": os.getpid(), "server": state["pid"], "rows": rows, "native": native,
                  "partitions": spark.conf.get("spark.sql.shuffle.partitions")}}), flush=True)
if {hold!r}:
    time.sleep(600)
"""


def _script(wh, *, keep_alive=60, partitions=2, statements=(), hold=False):
    return textwrap.dedent(
        CLIENT.format(
            wh=wh,
            keep_alive=keep_alive,
            partitions=partitions,
            statements=list(statements),
            hold=hold,
            directory=warm.server_dir(wh),
        )
    )


def _run(wh, cwd, **kw):
    proc = subprocess.run(
        [sys.executable, "-c", _script(wh, **kw)], cwd=cwd, capture_output=True, text=True, timeout=600
    )
    return proc


def _answer(proc):
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "Unknown command" not in proc.stderr, proc.stderr[-4000:]  # a call back that went astray
    answer = json.loads(proc.stdout.strip().splitlines()[-1])
    assert answer["native"]
    return answer


def _gone(pid, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    return False


OWN_SESSION = """
import tablets
db = tablets.connect(warehouse={wh!r}, master="local[1]")
print(sorted(r[0] for r in db.sql("SELECT k FROM warm_t ORDER BY k").collect()), flush=True)
"""


@pytest.fixture
def warehouse(tmp_path):
    wh = str(tmp_path / "wh")
    yield wh
    directory = warm.server_dir(wh)
    state = warm._read(os.path.join(directory, warm.STATE)) or {}
    warm.stop(directory)
    if state.get("pid") and not _gone(state["pid"], 10):
        os.kill(state["pid"], signal.SIGKILL)


def test_processes_join_one_warm_server_one_at_a_time(warehouse, tmp_path):
    first = _answer(
        _run(
            warehouse,
            tmp_path,
            statements=[
                "CREATE TABLE warm_t (k INT, v STRING) USING tablets",
                "INSERT INTO warm_t VALUES (1, 'a'), (2, 'b')",
            ],
        )
    )
    server = first["server"]
    assert first["rows"] == [[1, "a"], [2, "b"]] and server != first["me"]

    # a process holds the server; another is told who, and does not start a JVM of its own
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _script(warehouse, statements=["UPDATE warm_t SET v = 'held' WHERE k = 1"], hold=True),
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        held = json.loads(holder.stdout.readline())
        assert held["server"] == server and held["rows"] == [[1, "held"], [2, "b"]]
        busy = _run(warehouse, tmp_path)
        assert busy.returncode != 0
        assert "MetastoreInUse" in busy.stderr and f"pid {holder.pid}" in busy.stderr
        # killed mid-way: its lease goes with it
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(30)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(30)

    again = _answer(_run(warehouse, tmp_path, statements=["INSERT INTO warm_t VALUES (3, 'c')"]))
    assert again["server"] == server
    assert again["rows"] == [[1, "held"], [2, "b"], [3, "c"]]
    assert again["partitions"] == "2"

    # a program opening the warehouse by itself is told that the warm server holds it
    with pytest.raises(metastore.MetastoreInUse) as e:
        metastore.claim(warehouse)
    assert "warm Spark server" in str(e.value) and "--stop" in str(e.value)

    # a notebook or script opening the warehouse itself: the idle server goes, the rows stay
    own = subprocess.run(
        [sys.executable, "-c", OWN_SESSION.format(wh=warehouse)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert own.returncode == 0, own.stderr[-4000:]
    assert own.stdout.strip().splitlines()[-1] == "[1, 2, 3]"
    assert _gone(server, 5)

    # kill -9 of a server: its JVM follows it (py4j's pipe closes); the next process starts another
    killed = _answer(_run(warehouse, tmp_path))["server"]
    os.kill(killed, signal.SIGKILL)
    assert _gone(killed, 10)
    # the last process asks for a keep_alive of 1 s: the server ends then, and frees the metastore
    last = _answer(_run(warehouse, tmp_path, keep_alive=1))
    assert last["server"] not in (server, killed) and last["rows"] == [[1, "held"], [2, "b"], [3, "c"]]
    assert _gone(last["server"], 60)
    assert not os.path.exists(os.path.join(warm.server_dir(warehouse), warm.STATE))
    assert metastore.holder_of(warehouse) is None


@pytest.mark.skipif(
    not os.environ.get("TABLETS_SLOW"),
    reason="opt-in (TABLETS_SLOW=1): two warm servers one after the other, ~1 min",
)
def test_other_settings_stop_an_idle_server_and_start_their_own(warehouse, tmp_path):
    first = _answer(_run(warehouse, tmp_path, statements=["CREATE TABLE warm_t (k INT) USING tablets"]))
    other = _answer(_run(warehouse, tmp_path, partitions=3, keep_alive=1))
    assert other["server"] != first["server"] and other["partitions"] == "3"
    assert _gone(first["server"], 5)
    assert _gone(other["server"], 60)
    assert metastore.holder_of(warehouse) is None
