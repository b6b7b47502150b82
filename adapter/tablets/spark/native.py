"""Plain Spark SQL reads of tablet tables on Spark's own Parquet scan.

A tablet table read by ``spark.sql(...)`` or ``spark.table(...)`` outside the front door goes
through the ``tablets`` Python data source, to which PySpark 4.3 gives no column pruning and
only unsafe filter pushdown (``tablets.reads``): 1.2-6.5x the time of the same rows as a
plain Parquet table. Only a JVM class can change how Spark plans such a read, so this package
carries one, ``java/tablets/spark/NativeReads.java``: an analyzer rule (installed with
``spark.sql.extensions=tablets.spark.TabletsExtensions``) that replaces each read of a tablet
table's Python source by the plan the driver's Python process returns for it through py4j: the
front door's frame (``read_frames.read_frame``: the newest snapshot's live tablets on Spark's
Parquet scan, deletion vectors applied; tablets the query's WHERE rules out by the log's
statistics are skipped). The analyzer then deduplicates self-joins as it does for views.

Why a callback and not a JVM reader of the log: the snapshot, the pruning and the deletion
vectors' test stay in one place (Python); the JVM class only swaps plans and renders simple
conditions.
The cost: it works where the session's driver is this Python process (embedded sessions,
dbt, notebooks, PySpark jobs); a Spark Connect server or a JVM-only driver has no planner and
keeps the Python source.

The class is compiled on first use with the JDK's ``javac`` against PySpark's own jars (1-3 s,
once per source and Spark version) into the JVM cache directory (``tablets.spark.jvm``), and
put on the driver's class path by ``build_session`` before its JVM starts. The same jar carries
the expression that tests deletion vectors in the scans' tasks (``tablets.spark.vectors``), which
adds it for the executors of a cluster (``addJar``). Without ``javac`` (a JRE only), or in a session
whose JVM was started elsewhere without the extension, reads keep the Python source, with one
log line. ``spark.tablets.read.native=false`` turns native reads off (also the front door's).
A session built elsewhere can add the extension itself: ``spark.driver.extraClassPath`` = the
path ``python -m tablets.spark.native`` prints, and ``spark.sql.extensions`` =
``tablets.spark.TabletsExtensions``.
"""

from __future__ import annotations

import glob
import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
import threading
import weakref
import zipfile
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import pyspark
from pyspark.java_gateway import ensure_callback_server_started

from tablets.exceptions import FormatError
from tablets.spark.backend import backend
from tablets.spark.jvm import cache_dir

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from tablets.storage.table import TabletTable

EXTENSION = "tablets.spark.TabletsExtensions"
EXTENSIONS_CONF = "spark.sql.extensions"
CLASS_PATH_CONF = "spark.driver.extraClassPath"
JAVA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "java")
MARKER = "__tablets_native_"  # NativeReads.MARKER: the replaced read's SubqueryAlias, + provider

logger = logging.getLogger("tablets")
_lock = threading.Lock()
_sessions: dict[str, _Session] = {}  # by the JVM session key the rule passes
_planner: _Planner | None = None
_told = False


def _sources() -> list[str]:
    return sorted(glob.glob(os.path.join(JAVA_DIR, "tablets", "spark", "*.java")))


def _javac() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "javac"), os.X_OK):
        return os.path.join(home, "bin", "javac")
    found = shutil.which("javac")
    if found:
        return found
    java = shutil.which("java")
    beside = os.path.join(os.path.dirname(os.path.realpath(java)), "javac") if java else ""
    return beside if beside and os.access(beside, os.X_OK) else None


def jar() -> str | None:
    """The extension's jar, compiled here on first use; None without a ``javac``."""
    global _told
    digest = hashlib.sha1(pyspark.__version__.encode())
    for path in _sources():
        with open(path, "rb") as f:
            digest.update(f.read())
    out = os.path.join(cache_dir(), f"tablets-native-{digest.hexdigest()[:12]}.jar")
    if os.path.exists(out):
        return out
    javac = _javac()
    if javac is None:
        if not _told:
            _told = True
            logger.info(
                "tablets: no javac (a JDK) here, so plain Spark SQL reads of tablet tables go through the Python "
                "data source; the front door (dbt, tablets.connect().sql) reads them natively all the same"
            )
        return None
    jars = os.path.join(os.path.dirname(pyspark.__file__), "jars", "*")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with tempfile.TemporaryDirectory(dir=os.path.dirname(out)) as work:
        classes = os.path.join(work, "classes")
        done = subprocess.run(
            [javac, "-nowarn", "--release", "17", "-d", classes, "-cp", jars, *_sources()],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            logger.warning(
                "tablets: compiling the native-read extension failed; plain Spark SQL reads keep the "
                "Python data source:\n%s",
                done.stderr[-2000:],
            )
            return None
        tmp = os.path.join(work, "out.jar")
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nCreated-By: dbt-tablets\n\n")
            for path in sorted(glob.glob(os.path.join(classes, "**", "*.class"), recursive=True)):
                z.write(path, os.path.relpath(path, classes))
        os.replace(tmp, out)  # atomic: another process compiling at once writes the same bytes
    return out


def with_extension(conf: Mapping[str, str]) -> dict[str, str]:
    """``conf`` with the extension on the driver's class path and in ``spark.sql.extensions``
    (for a JVM about to start); unchanged without a jar."""
    out = dict(conf)
    path = jar()
    if path is None:
        return out
    paths = [p for p in (out.get(CLASS_PATH_CONF) or "").split(os.pathsep) if p]
    out[CLASS_PATH_CONF] = os.pathsep.join([*paths, path] if path not in paths else paths)
    names = [n.strip() for n in (out.get(EXTENSIONS_CONF) or "").split(",") if n.strip()]
    out[EXTENSIONS_CONF] = ",".join([*names, EXTENSION] if EXTENSION not in names else names)
    return out


class _Session:
    """A session whose native reads this process plans, and how it finds a provider's table."""

    def __init__(self, spark: SparkSession, table_of: Callable[[SparkSession, str], TabletTable | None]) -> None:
        self._spark = weakref.ref(spark)
        self.table_of = table_of

    @property
    def spark(self) -> SparkSession | None:
        return self._spark()


def register(spark: SparkSession, table_of: Callable[[SparkSession, str], TabletTable | None]) -> bool:
    """Serve ``spark``'s native reads from this process (where its JVM has the extension):
    starts py4j's callback server once. ``table_of(spark, provider)``: the tablet table a
    provider reads (the catalog's), None if none. False where the JVM lacks the extension."""
    global _planner
    jvm = backend(spark).jvm(spark)
    if jvm is None:  # Spark Connect: the server's JVM is not this process's
        return False
    try:
        rule = jvm.tablets.spark.NativeReads
        key = str(rule.sessionKey(spark._jsparkSession))  # noqa: SLF001
    except Exception:  # noqa: BLE001 - py4j: no such class (no extension in this JVM)
        return False
    with _lock:
        _sessions[key] = _Session(spark, table_of)
        if _planner is None or not rule.hasPlanner():
            ensure_callback_server_started(spark.sparkContext._gateway)  # noqa: SLF001
            _planner = _planner or _Planner()
            rule.setPlanner(_planner)
    return True


class _Planner:
    """The py4j proxy of ``tablets.spark.ReadPlanner``."""

    class Java:
        implements = ["tablets.spark.ReadPlanner"]

    def plan(self, session: str, provider: str, where: str) -> object:
        try:
            return self._plan(session, provider, where)
        except FormatError:  # a damaged tablet: the Python source reads the table and raises it
            logger.debug("tablets: no native read of %s", provider, exc_info=True)
        except Exception:  # the Python source reads it (right rows, slower)
            logger.warning(
                "tablets: planning a native read of %s failed; it reads through the Python source",
                provider,
                exc_info=True,
            )
        return None

    @staticmethod
    def _plan(session: str, provider: str, where: str) -> object:
        known = _sessions.get(session)
        spark = known.spark if known is not None else None
        if known is None or spark is None:
            return None
        return plan_read(spark, known.table_of, provider, where)


def plan_read(
    spark: SparkSession, table_of: Callable[[SparkSession, str], TabletTable | None], provider: str, where: str
) -> object:
    """The JVM frame of ``read_frame``'s rows that replaces a read of ``provider`` in ``spark``
    (``where``: the conditions Spark pushed to the read, as SQL), or None: the Python source reads it."""
    # here: the executors import this module (the data source's registry) without sqlglot
    from tablets.spark.read_frames import native_scan, read_frame, reads_natively, tablets_to_read
    from tablets.spec.conditions import condition
    from tablets.spec.expr import Expr

    if not reads_natively(spark):
        return None
    table = table_of(spark, provider)
    if table is None:
        return None
    root = table.root
    if not native_scan(spark, table, root):  # before any I/O: a store Spark cannot read (per scheme)
        return None
    snap = table.snapshot()
    keep, pruned, early = tablets_to_read(snap, condition(Expr.parse(where), "") if where else [])
    frame = read_frame(spark, table, snap, keep, early)
    if frame is None:
        return None
    logger.debug(
        "tablets: %s read natively at version %d: %d of %d tablets",
        provider,
        snap.version,
        len(keep),
        len(keep) + pruned,
    )
    return frame._jdf  # noqa: SLF001


if __name__ == "__main__":  # the jar's path, for sessions built elsewhere
    print(jar() or "")
