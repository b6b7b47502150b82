"""Classic Spark or Spark Connect, decided once per session: everything else asks the session's
backend, never which of the two it is.

A classic session runs its JVM in this process (py4j: a SparkContext, ``_jvm``, ``_jdf``); a
Spark Connect session is a client of a server elsewhere, with no JVM here. Each question whose
answer differs between the two is a method of ``Backend``, answered by ``Classic`` or by
``Connect``: what a session's shared state belongs to, how the package ships, sizes and plans,
temporary views and the catalog entry's schema, liveness, the active session, interrupts, the
Java it runs on. The backend is chosen when a session is built or adopted
(``tablets.spark.session``, the warm server's join in ``tablets.spark.warm``: ``choose``) and kept
for the session; a session built elsewhere (a test's, a notebook's) gets one on its first
question, by its class. A frame asks its session's.

    >>> backend(spark).connect
    False
    >>> backend(spark.range(1)) is backend(spark)
    True

The JVM calls of the answers live here, or in the ``tablets.spark`` module that owns them
(``native``, ``bloom``, ``vectors``, ``file_source``, ``catalog``: each asks ``jvm`` or
``optimized_plan``, None over Spark Connect), never above ``tablets.spark``.
"""

from __future__ import annotations

import re
import signal
import weakref
from typing import Any, ClassVar

from tablets.settings import conf_value
from tablets.spark import jvm as _jvm

_chosen: weakref.WeakKeyDictionary[Any, Backend] = weakref.WeakKeyDictionary()

_SIZE_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "PiB": 1 << 50, "EiB": 1 << 60}
_STATS = re.compile(r"Statistics\(sizeInBytes=([0-9.E+]+) ?([KMGTPE]?i?B)\b")


class Backend:
    """What differs between a classic session and a Spark Connect one. Stateless: one instance
    of each kind (``CLASSIC``, ``CONNECT``) serves every session of that kind."""

    connect: ClassVar[bool]
    """Whether this is Spark Connect's: no JVM here, no ``.rdd``, ``_jdf`` or ``sparkContext``."""

    def context_key(self, spark: Any) -> Any:
        """What a session's shared state belongs to (registered data sources, shipped files)."""
        raise NotImplementedError

    def add_py_file(self, spark: Any, path: str) -> None:
        """Ship the zip or ``.py`` at ``path`` to the Python workers of ``spark``."""
        raise NotImplementedError

    def size_bytes(self, frame: Any) -> int | None:
        """Spark's size estimate of ``frame`` (exact for a materialized cache), or None."""
        raise NotImplementedError

    def broadcast_threshold(self, spark: Any) -> int | None:
        """``spark.sql.autoBroadcastJoinThreshold`` as Spark itself parses it, where it can be
        asked; None: read the setting's text (``tablets.spark.sizes``)."""
        raise NotImplementedError

    def plan_text(self, frame: Any) -> str | None:
        """The text of ``frame``'s analyzed plan (relations as ``RelationV2[...] name``), or None
        where none can be had."""
        raise NotImplementedError

    def deterministic(self, filtered: Any) -> bool:
        """Whether the condition of ``filtered`` (a ``DataFrame.filter``) is deterministic;
        False where that cannot be told."""
        raise NotImplementedError

    def optimized_plan(self, frame: Any) -> Any | None:
        """The JVM's optimized logical plan of ``frame`` (a py4j object), None without a JVM."""
        raise NotImplementedError

    def jvm(self, spark: Any) -> Any | None:
        """The py4j view of the JVM that runs ``spark``, None where it is not in this process."""
        raise NotImplementedError

    def session_catalog(self, spark: Any) -> Any | None:
        """The session's own catalog in the JVM (``SessionCatalog``), None without a JVM."""
        raise NotImplementedError

    def is_temp_view(self, spark: Any, name: str) -> bool:
        """Whether the unqualified ``name`` resolves to a temporary view of ``spark``."""
        raise NotImplementedError

    def analyzes_late(self) -> bool:
        """Whether ``spark.sql`` analyzes a statement only when it runs (Spark Connect), not when
        called (classic): then a temporary view it reads must outlive the frame."""
        raise NotImplementedError

    def has_file_system(self, spark: Any, scheme: str, location: str) -> bool:
        """Whether Spark's Hadoop file system reads ``scheme`` (``location``: a file there)."""
        raise NotImplementedError

    def rows_near(self) -> bool:
        """Whether a frame's rows collected to this process cost only their transfer from a
        driver beside it (classic), not a trip from a server that may be on another machine."""
        raise NotImplementedError

    def local_master(self, spark: Any) -> bool:
        """Whether ``spark``'s executors are threads of a ``local`` master in this process."""
        raise NotImplementedError

    def alive(self, spark: Any) -> bool:
        """Whether ``spark`` can still run statements (not stopped, its JVM or server reachable)."""
        raise NotImplementedError

    def make_active(self, spark: Any) -> None:
        """``spark`` as this thread's active session, as if it had been built here."""
        raise NotImplementedError

    def cancel_all_jobs(self, spark: Any) -> None:
        """Cancel every job ``spark`` runs."""
        raise NotImplementedError

    def cancel_on_interrupt(self, spark: Any) -> None:
        """Ctrl-C cancels ``spark``'s running jobs (call from the main thread): what PySpark sets
        up when a classic session starts in the main thread, for one started in another."""
        raise NotImplementedError

    def java_version(self) -> str:
        """The Java ``spark`` runs on, as ``dbt debug`` shows it."""
        raise NotImplementedError


class Classic(Backend):
    """A session whose JVM runs in this process, reached through py4j."""

    connect = False

    def context_key(self, spark: Any) -> Any:
        return spark.sparkContext  # its sessions share the sources and the workers' files

    def add_py_file(self, spark: Any, path: str) -> None:
        spark.sparkContext.addPyFile(path)

    def size_bytes(self, frame: Any) -> int | None:
        try:
            size = frame._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()  # noqa: SLF001
            return int(size if isinstance(size, int) else size.toString())  # py4j gives a BigInt or an int
        except Exception:  # noqa: BLE001 - no estimate
            return None

    def broadcast_threshold(self, spark: Any) -> int | None:
        try:  # Spark's own parse of the setting ("10MB", "-1", ...)
            return int(spark._jsparkSession.sessionState().conf().autoBroadcastJoinThreshold())  # noqa: SLF001
        except Exception:  # noqa: BLE001 - read it as text
            return None

    def plan_text(self, frame: Any) -> str | None:
        return str(frame._jdf.queryExecution().analyzed().toString())  # noqa: SLF001

    def deterministic(self, filtered: Any) -> bool:
        return bool(filtered._jdf.queryExecution().analyzed().condition().deterministic())  # noqa: SLF001

    def optimized_plan(self, frame: Any) -> Any | None:
        return frame._jdf.queryExecution().optimizedPlan()  # noqa: SLF001

    def jvm(self, spark: Any) -> Any | None:
        return spark._jvm  # noqa: SLF001

    def session_catalog(self, spark: Any) -> Any | None:
        return spark._jsparkSession.sessionState().catalog()  # noqa: SLF001

    def is_temp_view(self, spark: Any, name: str) -> bool:
        try:  # the session's own catalog: no metastore call
            catalog: Any = self.session_catalog(spark)
            return bool(catalog.getTempView(name).isDefined())
        except Exception:  # noqa: BLE001 - ask the catalog API
            return _catalog_temp_view(spark, name)

    def analyzes_late(self) -> bool:
        return False

    def has_file_system(self, spark: Any, scheme: str, location: str) -> bool:
        try:
            jvm = spark.sparkContext._jvm  # noqa: SLF001
            conf = spark.sparkContext._jsc.hadoopConfiguration()  # noqa: SLF001
            jvm.org.apache.hadoop.fs.FileSystem.getFileSystemClass(scheme, conf)
            return True
        except Exception:  # noqa: BLE001 - no such file system
            return False

    def rows_near(self) -> bool:
        return True

    def local_master(self, spark: Any) -> bool:
        return (conf_value(spark, "spark.master") or "").startswith("local")

    def alive(self, spark: Any) -> bool:
        return getattr(spark.sparkContext, "_jsc", None) is not None

    def make_active(self, spark: Any) -> None:
        from pyspark.sql import SparkSession

        SparkSession._activeSession = spark  # noqa: SLF001 - what PySpark's constructor sets
        spark._jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)  # noqa: SLF001

    def cancel_all_jobs(self, spark: Any) -> None:
        spark.sparkContext.cancelAllJobs()

    def cancel_on_interrupt(self, spark: Any) -> None:
        def handler(signum: int, frame: Any) -> None:
            try:
                self.cancel_all_jobs(spark)
            finally:
                raise KeyboardInterrupt()

        signal.signal(signal.SIGINT, handler)

    def java_version(self) -> str:
        return _jvm.java_version()


class Connect(Backend):
    """A Spark Connect client: the JVM is the server's, maybe on another machine."""

    connect = True

    def context_key(self, spark: Any) -> Any:
        return spark  # sources and artifacts are per session there

    def add_py_file(self, spark: Any, path: str) -> None:
        spark.addArtifacts(path, pyfile=True)

    def size_bytes(self, frame: Any) -> int | None:
        """The optimized plan's root statistics from the server's ``EXPLAIN COST``
        (``Statistics(sizeInBytes=1.5 KiB, ...)``)."""
        explain = getattr(frame, "_explain_string", None)  # Connect's DataFrame.explain, as text
        try:
            text = str(explain(mode="cost")) if callable(explain) else ""
        except Exception:  # noqa: BLE001 - no estimate
            return None
        m = _STATS.search(text.split("== Optimized Logical Plan ==", 1)[-1])
        if m is None:
            return None
        try:
            return int(float(m.group(1)) * _SIZE_UNITS[m.group(2)])
        except (ValueError, KeyError):
            return None

    def broadcast_threshold(self, spark: Any) -> int | None:
        return None

    def plan_text(self, frame: Any) -> str | None:
        explain = getattr(frame, "_explain_string", None)  # Connect's DataFrame.explain, as text
        return str(explain(extended=True)) if callable(explain) else None

    def deterministic(self, filtered: Any) -> bool:
        return False  # the condition's expression is the server's

    def optimized_plan(self, frame: Any) -> Any | None:
        return None

    def jvm(self, spark: Any) -> Any | None:
        return None

    def session_catalog(self, spark: Any) -> Any | None:
        return None

    def is_temp_view(self, spark: Any, name: str) -> bool:
        return _catalog_temp_view(spark, name)

    def analyzes_late(self) -> bool:
        return True

    def has_file_system(self, spark: Any, scheme: str, location: str) -> bool:
        try:  # ask the server: read the file's schema
            spark.read.parquet(location).schema  # noqa: B018
            return True
        except Exception:  # noqa: BLE001
            return False

    def rows_near(self) -> bool:
        return False

    def local_master(self, spark: Any) -> bool:
        return False  # a server's local executors are not this process's, maybe not this machine's

    def alive(self, spark: Any) -> bool:
        return not getattr(spark, "is_stopped", False)

    def make_active(self, spark: Any) -> None:
        pass  # the client's default session, set when it was built, serves every thread

    def cancel_all_jobs(self, spark: Any) -> None:
        spark.interruptAll()

    def cancel_on_interrupt(self, spark: Any) -> None:
        pass  # the client interrupts its running operation on KeyboardInterrupt itself

    def java_version(self) -> str:
        return "remote"


def _catalog_temp_view(spark: Any, name: str) -> bool:
    try:
        return bool(spark.catalog.getTable(name).isTemporary)
    except Exception:  # noqa: BLE001 - Spark's "not found"
        return False


CLASSIC = Classic()
CONNECT = Connect()


def choose(spark: Any, kind: Backend | None = None) -> Backend:
    """Decide ``spark``'s backend, once: ``kind`` where the builder knows it, else by the
    session's class (a Spark Connect session's lives in ``pyspark.sql.connect``). Returns it."""
    found = _chosen.get(spark)
    if found is None:
        found = kind or (CONNECT if type(spark).__module__.startswith("pyspark.sql.connect") else CLASSIC)
        found = _chosen.setdefault(spark, found)
    return found


def backend(spark_or_frame: Any) -> Backend:
    """The backend of a session, or of a DataFrame's session (chosen on first question for a
    session neither built nor adopted by tablets)."""
    spark = getattr(spark_or_frame, "sparkSession", spark_or_frame)  # a frame's session
    found = _chosen.get(spark)
    return found if found is not None else choose(spark)
