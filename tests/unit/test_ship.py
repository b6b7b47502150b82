"""The package zip that sessions ship to executors (tablets.spark.ship), and the engine's
Spark Connect fallbacks that need no server (byte settings, error help)."""

from __future__ import annotations

import os
import pathlib
import pickle
import subprocess
import sys
import textwrap
import zipfile

import pytest
from tablets.spark.ship import build_zip, package_dir, package_zip

pytestmark = pytest.mark.unit

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_zip_holds_the_package_sources_only(tmp_path):
    path = build_zip(directory=str(tmp_path))
    names = zipfile.ZipFile(path).namelist()
    assert "tablets/__init__.py" in names and "tablets/engine/tasks.py" in names
    assert all(n.startswith("tablets/") and n.endswith(".py") for n in names)
    assert not any("__pycache__" in n for n in names)
    expected = sum(
        1 for d, _, files in os.walk(package_dir()) if "__pycache__" not in d for f in files if f.endswith(".py")
    )
    assert len(names) == expected


def test_zip_is_named_by_its_content_and_reused(tmp_path):
    first = build_zip(directory=str(tmp_path))
    data = pathlib.Path(first).read_bytes()
    os.unlink(first)
    again = build_zip(directory=str(tmp_path))
    assert again == first and pathlib.Path(again).read_bytes() == data  # same sources, same bytes
    pkg = tmp_path / "src" / "tablets"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("x = 1\n")
    (pkg / "__pycache__").mkdir()
    (pkg / "__pycache__" / "junk.py").write_text("")
    (pkg / "notes.txt").write_text("not shipped")
    other = build_zip(str(pkg), directory=str(tmp_path))
    assert other != first and zipfile.ZipFile(other).namelist() == ["tablets/__init__.py"]
    (pkg / "__init__.py").write_text("x = 2\n")
    assert build_zip(str(pkg), directory=str(tmp_path)) != other


def test_package_zip_is_built_once_per_process():
    assert package_zip() == package_zip()
    assert os.path.basename(package_zip()).startswith("tablets-")


WORKER = """
import pickle, sys
root = {root!r}
source = (root, root + "/adapter")  # the editable install's entries
sys.path[:] = [{zip!r}] + [p for p in sys.path if p and p.rstrip("/") not in source]
import tablets.engine.tasks, tablets.spark.datasource, tablets.storage.table
assert tablets.__file__.startswith({zip!r}), tablets.__file__
cls = pickle.loads(bytes.fromhex(sys.stdin.read()))
print(cls.provider, cls.table_root)
print(" ".join(sorted({{m.split(".")[0] for m in sys.modules}})))
"""


def test_a_worker_needs_only_the_zip_and_the_worker_extra(tmp_path):
    """A Python that sees the zip but not the source tree imports the worker side of tablets
    (task writers, data source, store) without sqlglot or dbt, and unpickles a per-table provider
    class (pickled by value by Spark's cloudpickle)."""
    from pyspark import cloudpickle
    from tablets.spark.catalog import table_source

    path = build_zip(directory=str(tmp_path))
    cls = table_source(str(tmp_path / "t"))
    payload = cloudpickle.dumps(cls, protocol=pickle.HIGHEST_PROTOCOL).hex()
    code = textwrap.dedent(WORKER.format(root=ROOT, zip=path))
    out = subprocess.run([sys.executable, "-c", code], input=payload, capture_output=True, text=True, cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr[-3000:]
    first, modules = out.stdout.splitlines()
    assert first == f"{cls.provider} {cls.table_root}"
    assert "sqlglot" not in modules.split() and "dbt" not in modules.split()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10MB", 10 << 20),
        ("10485760b", 10485760),
        ("10485760", 10485760),
        ("-1", -1),
        ("1g", 1 << 30),
        (" 2 kb ", 2048),
        ("lots", None),
        ("", None),
        (None, None),
        ("1.5MB", None),
    ],
)
def test_byte_settings_parse_like_spark(text, expected):
    from tablets.spark.sizes import parse_bytes

    assert parse_bytes(text) == expected


def test_a_missing_spark_connect_operation_does_not_blame_the_data():
    from pyspark.errors import PySparkException, PySparkNotImplementedError
    from tablets.engine.errors import job_failed as _failed

    e = PySparkNotImplementedError(errorClass="NOT_IMPLEMENTED", messageParameters={"feature": "rdd"})
    err = _failed("MERGE INTO t", e)
    assert "rdd" in str(err) and "not a problem with the statement or its data" in str(err)
    assert "Fix the expression or data" not in str(err)
    worker = PySparkException(message="PythonException: ModuleNotFoundError: No module named 'pyroaring'")
    assert "pip install 'dbt-tablets[worker]'" in str(_failed("MERGE INTO t", worker))
    shipped = PySparkException(message="ModuleNotFoundError: No module named 'tablets.engine'")
    assert "tablets.spark.ship" in str(_failed("MERGE INTO t", shipped))
    plain = PySparkException(message="[DIVIDE_BY_ZERO] Division by zero.")
    assert "Fix the expression or data" in str(_failed("MERGE INTO t", plain))
