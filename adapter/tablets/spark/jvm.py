"""A class-data-sharing archive for the driver's JVM: a dbt run starts in about two thirds of
the time.

Why: most of a fresh process's start-up is the JVM loading and verifying Spark's, Hive's and
Derby's classes (SparkContext, the Hive client of the metastore, the first MERGE). Java 17 can
dump the classes a run loaded into an archive (``-XX:ArchiveClassesAtExit``) and map it into
later JVMs (``-XX:SharedArchiveFile``): the session, the metastore and the first MERGE each
start faster (bench/RESULTS.md, "class-data sharing").

How: the first local session whose archive is missing dumps one at its JVM's exit (once), into a temporary file with the dump's log beside it; the next session
promotes it to ``spark-<key>.jsa`` only when the log says the dump was written whole (a cut
archive crashes the JVM that maps it, and ``-XX:+VerifySharedSpaces`` does not catch that).
One process dumps at a time (a lock file naming its pid); the others start without. The key
hashes what the archive must match: the Java version, the PySpark version and jars, the
driver's class path, jars and memory. A JVM that cannot use an archive (another key's JVM,
say) runs without it, silently.

Where: ``$TABLETS_JVM_CACHE``, else ``$XDG_CACHE_HOME/dbt-tablets/jvm``, else
``~/.cache/dbt-tablets/jvm`` (about 200 MB per key; the two newest kept). Off with
``TABLETS_JVM_ARCHIVE=0`` or the Spark setting ``spark.tablets.jvm.archive=false``.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import logging
import os
import shutil
import subprocess
import time
from collections.abc import Mapping

import pyspark

from tablets.exceptions import TabletsError
from tablets.settings import flag

logger = logging.getLogger(__name__)

CONF = "spark.tablets.jvm.archive"
ENV = "TABLETS_JVM_ARCHIVE"
KEEP = 2
QUIET_SECONDS = 60
_WRITTEN = "Written dynamic archive"
_OPTS = "spark.driver.extraJavaOptions"


JAVA_HELP = (
    "Install Java 17 (e.g. `apt-get install openjdk-17-jre-headless`) and make `java` "
    "available on PATH or set JAVA_HOME"
)


def _java_binary() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = os.path.join(home, "bin", "java")
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("java")


def java_version() -> str:
    """The first line of ``java -version`` (e.g. ``openjdk version "17.0.15" 2025-04-15``)."""
    java = _java_binary()
    if java is None:
        raise TabletsError("Java 17 is required to run Spark, but `java` was not found", help=JAVA_HELP)
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        raise TabletsError(
            f"Java 17 is required to run Spark, but `{java} -version` failed: {e}", help=JAVA_HELP
        ) from e
    text = (out.stderr or out.stdout).strip()
    if out.returncode != 0 or not text:
        raise TabletsError(f"Java 17 is required to run Spark, but `{java} -version` failed: {text}", help=JAVA_HELP)
    return text.splitlines()[0]


def cache_dir() -> str:
    explicit = os.environ.get("TABLETS_JVM_CACHE")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "dbt-tablets", "jvm")


def enabled(conf: Mapping[str, str]) -> bool:
    return flag(os.environ.get(ENV), ENV) and flag(conf.get(CONF), CONF)


def key(java: str, conf: Mapping[str, str]) -> str:
    """What an archive must match: a JVM with other classes or another layout cannot use it."""

    jars = os.path.join(os.path.dirname(os.path.abspath(pyspark.__file__)), "jars")
    listing = (
        sorted((n, os.path.getsize(os.path.join(jars, n))) for n in os.listdir(jars)) if os.path.isdir(jars) else []
    )
    parts = [java, pyspark.__version__, repr(listing), os.environ.get("SPARK_HOME", "")]
    parts += [
        str(conf.get(k, ""))
        for k in ("spark.driver.extraClassPath", "spark.jars", "spark.jars.packages", "spark.driver.memory")
    ]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def process_alive(pid: int | None) -> bool:
    """Whether a process of this id runs (on this host)."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _finished(log: str) -> bool:
    try:
        with open(log, "rb") as f:
            f.seek(max(0, os.path.getsize(log) - 4096))
            return _WRITTEN.encode() in f.read()
    except OSError:
        return False


def _promote(directory: str, name: str) -> None:
    """A finished dump becomes the archive; the leftovers of a dump whose process died are
    removed (after a minute's quiet: its JVM writes the dump just after the process ends)."""
    final = os.path.join(directory, f"{name}.jsa")
    lock = os.path.join(directory, f"{name}.lock")
    tmp, log = f"{final}.tmp", f"{final}.log"
    if not os.path.exists(lock):
        return
    if os.path.exists(tmp) and _finished(log):
        os.replace(tmp, final)
    else:
        try:
            with open(lock) as f:
                pid = int(f.read().strip() or "0")
        except (OSError, ValueError):
            pid = 0
        quiet = time.time() - max((os.path.getmtime(p) for p in (lock, tmp, log) if os.path.exists(p)), default=0)
        if process_alive(pid) or quiet < QUIET_SECONDS:
            return
    for p in (tmp, log, lock):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(p)


def _trim(directory: str) -> None:
    archives = sorted(glob.glob(os.path.join(directory, "spark-*.jsa")), key=os.path.getmtime, reverse=True)
    for old in archives[KEEP:]:
        with contextlib.suppress(OSError):
            os.unlink(old)


def options(java: str, conf: Mapping[str, str]) -> str | None:
    """The JVM options that map the archive, or dump it at exit; None: neither (disabled, another
    process is dumping it, options of the user's own, or the cache cannot be written)."""
    current = str(conf.get(_OPTS, ""))
    if not enabled(conf) or any(o in current for o in ("SharedArchiveFile", "ArchiveClassesAtExit", "-Xshare")):
        return None
    directory = cache_dir()
    name = f"spark-{key(java, conf)}"
    final = os.path.join(directory, f"{name}.jsa")
    quiet = "-Xlog:cds*=off"  # a JVM that cannot map the archive says so on stdout otherwise
    try:
        os.makedirs(directory, exist_ok=True)
        _promote(directory, name)
        if os.path.exists(final):
            with contextlib.suppress(OSError):
                os.utime(final)  # newest used: kept by _trim
            return f"-XX:SharedArchiveFile={final} {quiet}"
        fd = os.open(os.path.join(directory, f"{name}.lock"), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return None  # another process dumps it
    except OSError as e:
        logger.debug("tablets: no JVM class archive (%s)", e)
        return None
    with os.fdopen(fd, "w") as f:
        f.write(str(os.getpid()))
    _trim(directory)
    return f"-XX:ArchiveClassesAtExit={final}.tmp {quiet} -Xlog:cds+dynamic=info:file={final}.log"
