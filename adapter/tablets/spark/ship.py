"""Ship the ``tablets`` package to Spark's executors with the session.

Why: the engine's tasks (``tablets.engine.tasks``: the deletion vector and tablet writers), the
``tablets`` data source's readers and writers (``tablets.spark.datasource``) and the per-table
provider classes (``tablets.spark.catalog``, pickled by value, with ``TabletsDataSource`` as a
base class pickled by reference) all run in Python workers that must ``import tablets``. On
``local[*]`` those workers are the driver's interpreter, which has the package; on a cluster they
are started by each executor with *its* Python and environment. Executors do not inherit the
driver's ``PYTHONPATH`` (a standalone cluster's workers never see it; a Spark Connect server runs
its Python workers for every client), so a package installed only where dbt runs is missing
there ("No module named 'tablets'").

So every session gets the package itself, as a zip of the installed ``tablets`` directory (the
``.py`` files only, no ``__pycache__``), built once per process under the temp directory with
its content hash in the file name:

- classic Spark (``local[*]``, ``spark://``, YARN, Kubernetes): ``sparkContext.addPyFile(zip)``;
- Spark Connect (``sc://``): ``spark.addArtifacts(zip, pyfile=True)`` (one session's artifacts).

The workers then need only the third-party packages the worker side imports: the ``worker``
extra (``pip install 'dbt-tablets[worker]'`` or pyarrow, pyroaring, numpy, pandas and obstore
alone). Neither sqlglot nor dbt is imported there. PySpark itself comes from the executor's
Spark installation.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pathlib
import tempfile
import threading
import weakref
import zipfile
from typing import TYPE_CHECKING, Any

from tablets.spark.backend import backend

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_zip: str | None = None
_shipped: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()

ZIP_DIR = "tablets-ship"
_EPOCH = (1980, 1, 1, 0, 0, 0)  # fixed entry times: the same sources give the same bytes


def package_dir() -> str:
    """The directory of the installed ``tablets`` package."""

    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tablets/spark/ship.py -> tablets/


def _sources(root: str) -> list[tuple[str, str]]:
    """(path, archive name) of every ``.py`` file of the package, sorted by archive name."""
    out = []
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        for f in files:
            if f.endswith(".py") and not f.startswith("."):
                path = os.path.join(directory, f)
                rel = os.path.relpath(path, os.path.dirname(root)).replace(os.sep, "/")
                out.append((path, rel))
    return sorted(out, key=lambda p: p[1])


def build_zip(root: str | None = None, directory: str | None = None) -> str:
    """Zip the package at ``root`` (default: the installed ``tablets``) into ``directory``
    (default: ``<temp>/tablets-ship``) as ``tablets-<16 hex of its content hash>.zip``; an
    existing zip of the same content is reused."""
    root = root or package_dir()
    directory = directory or os.path.join(tempfile.gettempdir(), ZIP_DIR)
    sources = [(rel, pathlib.Path(path).read_bytes()) for path, rel in _sources(root)]
    digest = hashlib.sha256()
    for rel, data in sources:
        digest.update(rel.encode() + b"\0" + hashlib.sha256(data).digest())
    path = os.path.join(directory, f"tablets-{digest.hexdigest()[:16]}.zip")
    if os.path.exists(path):
        return path
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tablets-", suffix=".zip", dir=directory)
    try:
        with os.fdopen(fd, "wb") as out, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
            for rel, data in sources:
                info = zipfile.ZipInfo(rel, date_time=_EPOCH)
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o644 << 16
                z.writestr(info, data)
        os.replace(tmp, path)  # atomic: a concurrent process builds the same bytes
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def package_zip() -> str:
    """The zip of the installed package, built once per process (again if it was deleted)."""
    global _zip
    with _lock:
        if _zip is None or not os.path.exists(_zip):
            _zip = build_zip()
        return _zip


def _key(spark: SparkSession) -> Any:
    """What a shipped zip belongs to: the SparkContext of a classic session (its sessions
    share the workers' files), the session itself on Spark Connect (artifacts are per session)."""
    return backend(spark).context_key(spark)


def ship(spark: SparkSession) -> str | None:
    """Add the package zip to ``spark`` once (per SparkContext, or per Connect session).
    Returns the zip's path, or None if Spark refused it (logged: the executors then need
    ``tablets`` installed in their own Python)."""
    key = _key(spark)
    with _lock:
        done = _shipped.get(key)
    if done is not None:
        return done
    path = package_zip()
    try:
        backend(spark).add_py_file(spark, path)
    except Exception as e:  # noqa: BLE001 - Spark's refusal must not stop the session
        logger.warning(
            "tablets: could not ship the tablets package to Spark's executors (%s); they need "
            "dbt-tablets installed in their own Python (spark.pyspark.python)",
            str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__,
        )
        return None
    with _lock:
        _shipped[key] = path
    return path
