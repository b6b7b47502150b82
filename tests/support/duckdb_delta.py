"""A tablet table read by DuckDB's delta extension, the third real Delta reader of the tests (with
delta-rs and Polars: ``delta_check``).

The extension's pip package (``duckdb-ext-delta``) is built for DuckDB 1.4.4, and the differential
harness compares with a newer DuckDB, so the reader runs in an interpreter of its own,
``.venv/duckdb-delta`` (made by ``make``: ``scripts/duckdb-delta-env.sh``): one process per test
process, started on first use and ended by its id at exit.
"""

from __future__ import annotations

import atexit
import json
import subprocess
from pathlib import Path

import pyarrow as pa

_REPO = Path(__file__).resolve().parents[2]
PYTHON = _REPO / ".venv" / "duckdb-delta" / "bin" / "python"
_SERVER = Path(__file__).with_name("duckdb_delta_server.py")

_proc: subprocess.Popen | None = None


class DuckDBDeltaError(AssertionError):
    """DuckDB's delta extension could not read a version."""


def _server() -> subprocess.Popen:
    global _proc
    if _proc is not None and _proc.poll() is None:
        return _proc
    if not PYTHON.exists():
        raise RuntimeError(
            f"DuckDB's Delta reader is not installed at {PYTHON.parent.parent}: run "
            "`bash scripts/duckdb-delta-env.sh python3.11 .venv/duckdb-delta` (make test does it)"
        )
    _proc = subprocess.Popen([str(PYTHON), str(_SERVER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=_REPO)
    atexit.register(_stop, _proc)
    return _proc


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def duckdb_read(root: str, version: int | None = None, s3: dict[str, str] | None = None) -> pa.Table:
    """The live rows of ``root`` at ``version`` as DuckDB's delta extension reads them (``s3``:
    the object store's ``AWS_*`` options)."""
    proc = _server()
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write((json.dumps({"root": root, "version": version, "s3": s3}) + "\n").encode())
    proc.stdin.flush()
    head = proc.stdout.readline()
    if not head:
        raise DuckDBDeltaError(f"DuckDB's Delta reader ended (exit {proc.wait()}) reading {root} at {version}")
    answer = json.loads(head)
    if "error" in answer:
        raise DuckDBDeltaError(f"DuckDB could not read {root} at version {version}: {answer['error']}")
    return pa.ipc.open_stream(proc.stdout.read(answer["bytes"])).read_all()
