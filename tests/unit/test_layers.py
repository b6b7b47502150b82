"""Layers point one way: the store loads neither pyspark nor dbt; the engine never loads dbt."""

import subprocess
import sys

import pytest

pytestmark = pytest.mark.unit


def _loaded(import_stmt: str) -> set[str]:
    code = f"{import_stmt}\nimport sys\nprint(' '.join(sorted(m.split('.')[0] for m in sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return set(out.stdout.split())


def test_storage_imports_neither_pyspark_nor_dbt():
    mods = _loaded("import tablets.storage, tablets.storage.table, tablets.storage.dv")
    assert "pyspark" not in mods
    assert "dbt" not in mods


def test_package_root_is_light():
    mods = _loaded("import tablets")
    assert "pyspark" not in mods and "dbt" not in mods


def test_engine_never_imports_dbt():
    mods = _loaded("import tablets.engine.executor, tablets.db")
    assert "pyspark" in mods
    assert "dbt" not in mods
