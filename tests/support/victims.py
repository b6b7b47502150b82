"""Processes that tests kill: a Python program started as the leader of its own process group
(so SIGKILL reaches its JVM and Python workers too), spoken to a line at a time."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Victim:
    root: str
    proc: subprocess.Popen
    log: Path | None = None
    lines: queue.Queue = field(default_factory=queue.Queue)

    def __post_init__(self) -> None:
        # a thread reads the lines: two lines sent at once land in one buffer, where waiting on
        # the pipe (select) would not see the second
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.strip())
        self.lines.put("")  # the end of its output

    def readline(self, timeout: float) -> str:
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            self.kill()
            raise AssertionError(f"victim silent for {timeout} s: {self.tail()}") from None

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def tail(self) -> str:
        return self.log.read_text()[-3000:] if self.log is not None and self.log.exists() else ""

    def kill(self) -> None:
        """SIGKILL the whole process group (driver, JVM, Python workers) and wait until every
        member is gone, so that nothing writes into the table afterwards."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                os.killpg(self.proc.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)
        raise AssertionError("members of the killed victim's process group are still alive")


def spawn(program: str, cfg: dict, cwd: Path, log: Path, root: str = "") -> Victim:
    """``program`` (Python source; ``cfg`` is its ``sys.argv[1]``, as JSON) in a new session."""
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(program), json.dumps(cfg)],
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=open(log, "w"),  # noqa: SIM115 - the child's, closed with it
        text=True,
        start_new_session=True,
    )
    victim = Victim(root, proc, log=log)
    _spawned.append(victim)
    return victim


_spawned: list[Victim] = []


@contextlib.contextmanager
def reaped() -> Iterator[None]:
    """Every victim spawned inside is killed, by its process group, on the way out, whether
    the test passed or failed (a waiting victim would otherwise outlive it)."""
    try:
        yield
    finally:
        while _spawned:
            _spawned.pop().kill()
