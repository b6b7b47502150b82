"""Shared test set-up: make the source tree importable without an install (the README's
`make test` installs the package editable anyway), and the S3-compatible server that the
object-store tests share (one ``moto_server`` process per test session, started on first use)."""

import contextlib
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if os.path.join(ROOT, "adapter") not in sys.path:
    sys.path.insert(0, os.path.join(ROOT, "adapter"))
if os.path.join(ROOT, "tests") not in sys.path:
    sys.path.insert(0, os.path.join(ROOT, "tests"))
# child Python processes (``python -c``, Spark's workers) import this tree's package too, not
# whatever checkout the environment installed editable
_paths = [os.path.join(ROOT, "adapter"), os.path.join(ROOT, "tests")]
os.environ["PYTHONPATH"] = os.pathsep.join(
    [*_paths, *(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p not in _paths)]
)


@pytest.fixture(scope="session")
def s3_server():
    """A real S3-compatible server process on 127.0.0.1; its variables are set in this process
    (as a user would export them) for the whole session."""
    from support import s3

    server = s3.start()
    saved = {k: os.environ.get(k) for k in server.env}
    os.environ.update(server.env)
    yield server
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    server.stop()


@pytest.fixture(params=["local", "s3"])
def base(request, tmp_path):
    """A location for tables, on local disk and in the bucket."""
    if request.param == "local":
        return str(tmp_path)
    return request.getfixturevalue("s3_server").location()


# the longest files first: ``make test`` runs the suite in two processes (pytest-xdist, a file
# each at a time, ``--no-loadscope-reorder``), which take files in this order; a long file
# taken last runs alone
_LONG_FIRST = (
    "spark/test_differential_generated.py",
    "spark/test_merge_differential.py",
    "spark/test_merge_api.py",
    "functional/test_object_store_dbt.py",
    "spark/test_new_process.py",
    "spark/test_metastore.py",
    "spark/test_object_store.py",
    "unit/test_checkpoints.py",
    "spark/test_changes_differential.py",
    "spark/test_crash.py",
    "spark/test_warm_server.py",
    "functional/test_merge_tablets.py",
    "functional/adapter/test_snapshots.py",
)


def pytest_collection_modifyitems(items):
    def rank(item) -> int:
        path = str(item.fspath).replace(os.sep, "/")
        return next((i for i, f in enumerate(_LONG_FIRST) if path.endswith("/tests/" + f)), len(_LONG_FIRST))

    items.sort(key=rank)  # stable: the order within a file and among the others stays


@pytest.fixture(scope="session", autouse=True)
def _no_warm_server_outlives_the_tests(tmp_path_factory):
    """A warm Spark server (``tablets.spark.warm``) that a test started under this run's temporary
    directories, and left running, is ended by its id when the session ends."""
    yield
    import signal

    base = str(tmp_path_factory.getbasetemp())
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if b"tablets.spark.warm" in args and any(base.encode() in a for a in args):
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGTERM)
