"""A MERGE process killed (SIGKILL, with its JVM and Python workers) inside the window between
its first staged file and its commit: the table is exactly as before or as after it, and a
following vacuum removes exactly the killed statement's orphans.

Each victim is a real Spark process (local[1]) that starts Spark and adopts its table, says
READY, and runs ``tablets.connect(...).sql("MERGE ...")`` when told; the next victim starts
while the current one runs, so start-up overlaps. Two windows:

- staging: the test watches the table's ``tablets/`` and ``dv/`` (inotify) and kills the victim
  as soon as a file appears there (the first staged tablet or deletion vector, or its temp file);
- the log version: the victim's driver is traced with ``strace -e inject=link:delay_enter=...``,
  which holds its ``link(2)`` calls (the one that commits ``_delta_log/<v>.json`` from its fsynced
  ``_delta_log/.tmp-*``) for 60 s without changing the process; the test kills it when the temp file
  appears, so every kill lands between the temp file and its link. Needs strace and ptrace
  permission (skipped without).

Each victim gets a fresh table with no deletion vector yet, so the MERGE, had it committed, would
have superseded no file: every file any version references must survive the vacuum, and
everything it removes must be an orphan of the killed statement.

Default suite: 2 + 1 kills (a kill in the log window always lands at the same point);
``TABLETS_SLOW=1``: 12 + 12 (staging kills then also land at random points up to 0.6 s after the
first staged file: before or after the commit).
"""

from __future__ import annotations

import ctypes
import os
import random
import select
import shutil
import struct
import subprocess
import sys
import time

import pyarrow as pa
import pytest
from support.delta_check import assert_delta_agrees, delta_rs_append
from support.victims import Victim, reaped, spawn
from tablets.storage import TabletTable, log
from tablets.storage.actions import AddTablet, SetDV
from tablets.storage.vacuum import VACUUM_END, VACUUM_START

pytestmark = [
    pytest.mark.spark,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="watches directories with inotify"),
]

SLOW = bool(os.environ.get("TABLETS_SLOW"))
SCHEMA = pa.schema([("id", pa.int64()), ("cnt", pa.int64())])
JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"  # short-lived JVMs: C1 only
MERGE = (
    "MERGE INTO t USING (SELECT id FROM range(90, 110)) s ON t.id = s.id "
    "WHEN MATCHED AND t.id % 2 = 0 THEN DELETE "
    "WHEN MATCHED THEN UPDATE SET cnt = t.cnt + 1 "
    "WHEN NOT MATCHED THEN INSERT (id, cnt) VALUES (s.id, 1)"
)
BEFORE = sorted((i, 0) for i in range(100))
AFTER = sorted([(i, 0) for i in range(90)] + [(i, 1) for i in range(91, 100, 2)] + [(i, 1) for i in range(100, 110)])

VICTIM = """
import json, sys
import tablets
from tablets.spark import catalog
from tablets.spark.session import build_session

cfg = json.loads(sys.argv[1])
spark = build_session(cfg["warehouse"], master="local[1]", hive=False, shuffle_partitions=1,
                      conf={"spark.driver.extraJavaOptions": cfg["java_options"]})
db = tablets.connect(spark=spark, retries=0)
catalog.create_table(spark, "t", None, location=cfg["root"])
print("READY", flush=True)
sys.stdin.readline()
print("DONE", db.sql(cfg["sql"]).metrics.version, flush=True)
sys.stdin.readline()
"""

IN_CREATE, IN_MOVED_TO = 0x100, 0x80


class Watch:
    """New names in some directories, through inotify (no polling, reacts in well under a ms)."""

    def __init__(self, dirs: list[str]) -> None:
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        assert self.fd >= 0, os.strerror(ctypes.get_errno())
        self.dirs = {}
        for d in dirs:
            wd = self.libc.inotify_add_watch(self.fd, d.encode(), IN_CREATE | IN_MOVED_TO)
            assert wd >= 0, os.strerror(ctypes.get_errno())
            self.dirs[wd] = d

    def wait(self, accept, timeout: float) -> str | None:
        """The first new path for which ``accept(directory, name)`` holds, or None at the timeout."""
        deadline = time.time() + timeout
        while (left := deadline - time.time()) > 0:
            if not select.select([self.fd], [], [], left)[0]:
                break
            data, pos = os.read(self.fd, 1 << 16), 0
            while pos < len(data):
                wd, _mask, _cookie, size = struct.unpack_from("iIII", data, pos)
                name = data[pos + 16 : pos + 16 + size].rstrip(b"\0").decode()
                pos += 16 + size
                if accept(self.dirs[wd], name):
                    return os.path.join(self.dirs[wd], name)
        return None

    def close(self) -> None:
        os.close(self.fd)


def _fresh_table(root: str) -> None:
    t = TabletTable.create(root, SCHEMA)
    for lo in (0, 50):  # two tablets, no deletion vector yet
        t.append(pa.table({"id": list(range(lo, lo + 50)), "cnt": [0] * 50}, schema=SCHEMA))
    for sub in ("tablets", "dv"):
        os.makedirs(os.path.join(root, sub), exist_ok=True)  # watched before the first write


def _spawn(tmp, k: int) -> Victim:
    root = str(tmp / f"t{k}")
    _fresh_table(root)
    cfg = {"warehouse": str(tmp / f"wh{k}" / "warehouse"), "root": root, "sql": MERGE, "java_options": JAVA_OPTIONS}
    return spawn(VICTIM, cfg, tmp, tmp / f"victim{k}.log", root)


def _referenced(t: TabletTable) -> set[str]:
    """Every file that any version of the table references."""
    out = set()
    for _, actions, _ in log.walk(t.io, t.root, log.list_log(t.io, t.root, complete=True)[0], None):
        for a in actions:
            if isinstance(a, (AddTablet, SetDV)):
                out.add(a.path)
    return out


def _present(t: TabletTable) -> set[str]:
    files = {f"{sub}/{f.name}" for sub in ("tablets", "dv") for f in t.io.list(os.path.join(t.root, sub))}
    temps = t.io.list(log.log_dir(t.root))
    return files | {f"{log.LOG_DIR}/{f.name}" for f in temps if f.name.startswith(".tmp-")}


def _rows(t: TabletTable) -> list[tuple]:
    data = t.read()
    return sorted(zip(data.column("id").to_pylist(), data.column("cnt").to_pylist(), strict=True))


def _strace_usable() -> bool:
    """strace is installed and may trace this user's processes (ptrace)."""
    if shutil.which("strace") is None:
        return False
    probe = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    tracer = subprocess.Popen(
        ["strace", "-p", str(probe.pid), "-e", "trace=none", "-o", os.devnull], stderr=subprocess.PIPE, text=True
    )
    try:
        assert tracer.stderr is not None
        return "attached" in tracer.stderr.readline()
    finally:
        probe.kill()
        probe.wait()
        tracer.wait(30)


def _trace_links(pid: int, path: str) -> subprocess.Popen:
    """Hold the link(2) to ``path`` of ``pid``'s main thread for 60 s (the driver's commit runs
    there); its other links (files it creates exclusively before) go on."""
    tracer = subprocess.Popen(
        [
            "strace",
            "-p",
            str(pid),
            "-P",
            path,
            "-e",
            "trace=link,linkat",
            "-e",
            "inject=link,linkat:delay_enter=60000000",
            "-o",
            os.devnull,
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert tracer.stderr is not None
    line = tracer.stderr.readline()
    assert "attached" in line, line
    return tracer


def _crash(tmp, window: str, kills: int, max_delay: float = 0.0) -> list[str]:
    """Kill ``kills`` MERGE victims in ``window``; returns one line per kill."""
    rng = random.Random(7)
    lines = []
    pending = _spawn(tmp, 0)
    for k in range(kills):
        victim = pending
        assert victim.readline(300) == "READY", (tmp / f"victim{k}.log").read_text()[-3000:]
        pending = _spawn(tmp, k + 1) if k + 1 < kills else None  # start-up overlaps this kill
        t = TabletTable(victim.root)
        before_files = _present(t)
        tracer = (
            _trace_links(victim.proc.pid, log.version_path(victim.root, t.version + 1)) if window == "log" else None
        )
        watch = Watch(
            [os.path.join(victim.root, "tablets"), os.path.join(victim.root, "dv")]
            if window == "staging"
            else [log.log_dir(victim.root)]
        )
        go = time.time()
        victim.send("GO")
        if window == "staging":
            hit = watch.wait(lambda d, n: True, 300)
            delay = rng.uniform(0, max_delay) if max_delay else 0.0
            time.sleep(delay)
        else:
            hit = watch.wait(lambda d, n: n.startswith(".tmp-"), 300)
            delay = 0.0
        victim.kill()
        watch.close()
        if tracer is not None:
            tracer.wait(30)
        assert hit is not None, f"no {window} file appeared: {(tmp / f'victim{k}.log').read_text()[-3000:]}"
        lines.append(
            _check(
                t,
                window,
                before_files,
                f"kill {k} ({window}, +{delay:.2f} s after "
                f"{os.path.basename(hit)}, {hit and time.time() - go:.1f} s after GO)",
            )
        )
    return lines


def _check(t: TabletTable, window: str, before_files: set[str], what: str) -> str:
    """Before or after, never in between; vacuum removes exactly the orphans."""
    version, rows = t.version, _rows(t)
    assert (version, rows) in ((2, BEFORE), (3, AFTER)), f"{what}: version {version}, {rows}"
    if window == "log":  # held at link(2): the version's temp file is there, the version is not
        assert version == 2 and any(n.startswith(f"{log.LOG_DIR}/.tmp-") for n in _present(t)), what
    referenced = _referenced(t)
    orphans = _present(t) - referenced
    if version == 2:  # killed before its commit: what it staged is left behind
        assert orphans - before_files, f"{what}: the kill left no staged file"
    removed = set(t.vacuum(retention_hours=0, enforce_retention=False))
    assert removed == orphans, what
    assert referenced <= _present(t), what  # every file a version references survived
    recorded = [h.commit.operation for h in t.history()[version + 1 :]]  # a VACUUM that deletes records itself
    assert recorded == ([VACUUM_START, VACUUM_END] if removed else []), what
    assert (t.version, _rows(t)) == (version + len(recorded), rows), what
    t.append(pa.table({"id": [1000], "cnt": [0]}, schema=SCHEMA))  # the table moves on
    assert t.version == version + len(recorded) + 1 and (1000, 0) in _rows(t)
    delta_rs_append(t.root, pa.table({"id": [2000], "cnt": [0]}, schema=SCHEMA))  # another Delta writer, after
    assert (2000, 0) in _rows(t)
    assert_delta_agrees(t)
    state = "after" if version == 3 else "before"
    return f"{what}: {state}, {len(orphans)} orphan(s) removed"


def test_merge_killed_while_staging(tmp_path):
    start = time.time()
    with reaped():
        lines = _crash(tmp_path, "staging", 12 if SLOW else 2, max_delay=0.6 if SLOW else 0.0)
    print("\n".join(lines), f"\n{len(lines)} kills in {time.time() - start:.0f} s")


def test_merge_killed_while_writing_the_log_version(tmp_path):
    if not _strace_usable():
        pytest.skip("needs strace with ptrace permission (it holds the driver's link(2) calls)")
    start = time.time()
    with reaped():
        lines = _crash(tmp_path, "log", 12 if SLOW else 1)
    print("\n".join(lines), f"\n{len(lines)} kills in {time.time() - start:.0f} s")
