"""The editable install the README uses lists the plugin in ``dbt --version``: a fresh
virtual environment, ``pip install -e <repo>`` (from pip's cache or index), ``dbt --version``.

dbt-core finds plugins by globbing ``dbt/adapters/*/__version__.py`` in the installed
``dbt.adapters`` package only; pyproject.toml's force-include puts the version file there."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.slow
@pytest.mark.skipif(
    not os.environ.get("TABLETS_SLOW"),
    reason="opt-in (TABLETS_SLOW=1): a new virtual environment and pip install -e, ~40 s with pip's cache warm",
)
def test_dbt_version_lists_the_editable_install(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", "-e", ROOT], capture_output=True, text=True)
    assert pip.returncode == 0, pip.stderr[-2000:]
    out = subprocess.run([str(venv / "bin" / "dbt"), "--version"], capture_output=True, text=True, check=True).stdout
    plugins = out.split("Plugins:", 1)[1]
    assert "  - tablets: 0.1.0" in plugins, out
    located = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import dbt.adapters.tablets as t; print(t.__file__)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert located == os.path.join(ROOT, "dbt", "adapters", "tablets", "__init__.py")  # the repository's
