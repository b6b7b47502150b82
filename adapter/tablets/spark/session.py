"""The Spark session dbt-tablets runs on: an embedded local Spark by default.

``build_session()`` configures and starts the session (``builder.getOrCreate()``, so that
dbt-spark's own ``getOrCreate()`` later reuses it) and registers the tablets data sources.

Where things go (nothing is created in the process's working directory):

- warehouse: the ``warehouse`` argument, else ``$TABLETS_WAREHOUSE``, else
  ``./.tablets/warehouse`` (made absolute at start). It may be an object store URI
  (``s3://bucket/wh``): tablet tables and their registry then live there
  (``spark.tablets.warehouse``), while Spark's own ``spark.sql.warehouse.dir`` stays local;
- Hive metastore (embedded Derby) and ``derby.log``: inside a local warehouse,
  ``<warehouse>/_metastore/``; for a URI, ``./.tablets/<12 hex of the URI>/`` (with Spark's
  local ``spark-warehouse``). See ``tablets.spark.metastore``.

Embedded Derby admits one process at a time: the session holds a lock on the warehouse's
metastore for the process's life, and a second process gets ``MetastoreInUse`` (naming the
first) before its JVM starts. Several processes share a warehouse through a metastore server
(``metastore_uri="thrift://host:port"``, served by ``python -m tablets.spark.metastore``).

A new local JVM maps a class-data-sharing archive of Spark's classes (``tablets.spark.jvm``):
a fresh process starts in about two thirds of the time.

Every session (built here, or adopted: ``adopt``) gets the ``tablets`` package
shipped to its executors (``tablets.spark.ship``): on a cluster or a Spark Connect server they
need only the ``worker`` extra's third-party packages.
"""

from __future__ import annotations

import contextlib
import os
import pkgutil
import re
import sys
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

from pyspark import SparkContext
from pyspark.sql import SparkSession

from tablets.exceptions import TabletsError
from tablets.spark import jvm, metastore, native
from tablets.spark.backend import CLASSIC, CONNECT, choose
from tablets.spark.catalog import configure, register_sources
from tablets.spark.errors import install as install_errors
from tablets.spark.jvm import java_version
from tablets.spark.metastore import metastore_dir, spark_warehouse
from tablets.spark.ship import ship
from tablets.storage.fileio import normalize

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_WAREHOUSE = os.path.join(".tablets", "warehouse")


def default_warehouse() -> str:
    return normalize(os.environ.get("TABLETS_WAREHOUSE") or DEFAULT_WAREHOUSE)


def _local_cores(master: str) -> int | None:
    """The cores of a ``local``/``local[N]``/``local[*]`` master, else None (a cluster)."""
    m = re.fullmatch(r"local(?:\[(\*|\d+)(?:,\s*\d+)?\])?", master.strip())
    if m is None:
        return None
    if m.group(1) is None:
        return 1
    return (os.cpu_count() or 1) if m.group(1) == "*" else int(m.group(1))


# Spark's ConvertToLocalRelation evaluates projections over a local relation row by row on the
# driver while optimizing (~35 us a row); without it the engine takes a MERGE's source of up to
# 1 MiB as one local relation (tablets.engine.intake.collect_local_source). Queries over VALUES then
# run their projection as a (small) task instead
LOCAL_RELATION_RULE = "org.apache.spark.sql.catalyst.optimizer.ConvertToLocalRelation"
EXCLUDED_RULES_CONF = "spark.sql.optimizer.excludedRules"
JAVA_OPTIONS = "spark.driver.extraJavaOptions"
OPTIMIZER_CONF = {EXCLUDED_RULES_CONF: LOCAL_RELATION_RULE}


def session_conf(
    warehouse: str,
    *,
    master: str | None = None,
    shuffle_partitions: int = 4,
    extra: Mapping[str, str] | None = None,
    metastore_uri: str | None = None,
) -> dict[str, str]:
    """The Spark configuration of an embedded session over ``warehouse`` (pure): its metastore
    is the warehouse's embedded Derby, or the server at ``metastore_uri``."""
    wh = spark_warehouse(warehouse)
    meta = metastore_dir(warehouse)
    conf = {
        "spark.master": master or "local[*]",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.sql.warehouse.dir": wh,
        "spark.tablets.warehouse": normalize(warehouse),
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # dates and instants reach Parquet pushdown as java.time values (the proleptic calendar
        # tablets store): as java.sql.Date, DATE'1582-10-10' (the Julian calendar's gap) matched
        # no row of a tablet that holds it
        "spark.sql.datetime.java8API.enabled": "true",
        # the engine's scans name their tablet files one by one: above this many paths Spark
        # lists them with a Spark job (1-3 s on 2 cores) instead of on the driver (~0.1 s)
        "spark.sql.sources.parallelPartitionDiscovery.threshold": "100000",
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
        **OPTIMIZER_CONF,
    }
    cores = _local_cores(conf["spark.master"])
    if cores:
        # file scans in tasks of about a tablet (a 10-tablet table read as 3 tasks on 2 cores
        # leaves a core idle for a third of the scan): Spark's split size is the total size
        # over this many partitions, never below spark.sql.files.openCostInBytes
        conf["spark.sql.files.minPartitionNum"] = str(4 * cores)
    if metastore_uri:
        conf[metastore.URIS_CONF] = metastore_uri
    else:
        conf[metastore.JDO_URL_CONF] = metastore.derby_url(meta)
        # derby.log goes to derby.system.home (default: the working directory)
        conf[JAVA_OPTIONS] = f"-Dderby.system.home={meta}"
    extra = dict(extra or {})
    given = extra.pop(JAVA_OPTIONS, None)
    conf.update(extra)
    if given:  # after ours, so that a -D of the caller's wins (the JVM takes the last)
        conf[JAVA_OPTIONS] = f"{conf.get(JAVA_OPTIONS, '')} {given}".strip()
    return conf


def _loopback(master: str | None) -> bool:
    """``local[*]`` or a master on this host's loopback address."""
    if not master or master.startswith("local"):
        return True
    host = master.split("://", 1)[-1].split("/", 1)[0].rsplit(":", 1)[0]
    return host in ("127.0.0.1", "localhost", "[::1]")


def prepare_env(master: str | None = None, conf: Mapping[str, str] | None = None) -> dict[str, str]:
    """The process environment a PySpark driver reads, and the session conf that matches it.

    PySpark's driver hands its *environment's* ``PYSPARK_PYTHON`` to every Python worker (a
    ``spark.pyspark.python`` given to the builder does not reach them): an explicit
    ``spark.pyspark.python`` in ``conf`` (e.g. the executors' own venv on a cluster, from dbt's
    ``server_side_parameters``) is therefore exported; else an exported ``PYSPARK_PYTHON`` is
    kept; else this interpreter (otherwise workers start the first python3 on PATH, which may lack
    pyarrow). ``SPARK_LOCAL_IP`` defaults to 127.0.0.1 only where executors share this host's
    loopback (a remote cluster's executors must reach the driver)."""
    conf = dict(conf or {})
    if _loopback(master):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    for key, var in (
        ("spark.pyspark.python", "PYSPARK_PYTHON"),
        ("spark.pyspark.driver.python", "PYSPARK_DRIVER_PYTHON"),
    ):
        python = conf.get(key) or os.environ.get(var) or sys.executable
        os.environ[var] = python
        conf[key] = python
    return conf


def build_session(
    warehouse: str | None = None,
    *,
    master: str | None = None,
    remote: str | None = None,
    app_name: str = "dbt-tablets",
    conf: Mapping[str, str] | None = None,
    hive: bool = True,
    shuffle_partitions: int = 4,
    storage_options: Mapping[str, str] | None = None,
    metastore_uri: str | None = None,
) -> SparkSession:
    """Start (or join, through ``getOrCreate``) a Spark session ready for tablet tables.

    ``remote`` connects to a Spark Connect server instead of starting a local Spark; ``conf``
    entries override the defaults of :func:`session_conf`; ``storage_options`` reach an object
    store warehouse (see ``tablets.storage.fileio``). ``metastore_uri`` (``thrift://host:port``)
    uses a metastore server, so that several processes can share the warehouse; without it the
    session holds the warehouse's embedded metastore, or raises ``MetastoreInUse`` at once if
    another process does.
    """

    builder = SparkSession.builder.appName(app_name)
    if remote:
        builder = builder.remote(remote)
        for k, v in {**OPTIMIZER_CONF, **(conf or {})}.items():
            builder = builder.config(k, v)
    else:
        conf = prepare_env(master, conf)
        java = java_version()  # a clear error instead of the JVM gateway's when Java is missing
        wh = normalize(warehouse) if warehouse else default_warehouse()
        os.makedirs(spark_warehouse(wh), exist_ok=True)
        full = session_conf(
            wh, master=master, shuffle_partitions=shuffle_partitions, extra=conf, metastore_uri=metastore_uri
        )
        if SparkContext._active_spark_context is None:  # noqa: SLF001 - a JVM to start: native reads, the class archive
            full = native.with_extension(full)
            archive = jvm.options(java, full)
            if archive:
                full[JAVA_OPTIONS] = f"{full.get(JAVA_OPTIONS, '')} {archive}".strip()
        if hive:
            _metastore_ready(wh, full, user_conf=conf)
            builder = builder.enableHiveSupport()
        for k, v in full.items():
            builder = builder.config(k, v)
    fresh = SparkContext._active_spark_context is None  # noqa: SLF001 - a JVM this call starts
    spark = builder.getOrCreate()
    choose(spark, CONNECT if remote else CLASSIC)  # decided here, once: everything else asks it
    if remote:
        return adopt(spark, warehouse, storage_options)
    spark.sparkContext.setLogLevel("ERROR")
    if fresh:
        _no_installed_sources(spark)
    warming = [_warm_catalog(spark)] if fresh and hive else []
    try:
        return adopt(spark, normalize(warehouse) if warehouse else default_warehouse(), storage_options)
    finally:
        for thread in warming:
            thread.join()


def installed_sources_known_absent(pythons: list[str | None], paths: list[str]) -> bool:
    """Whether Spark's look-up of installed Python data sources (run by one of ``pythons``, on
    ``paths``) is known to find none: each Python it may run is this interpreter (or unset) and
    no ``pyspark_*`` module is on the paths."""
    if any(p not in (None, "", sys.executable) for p in pythons):
        return False
    return not any(m.name.startswith("pyspark_") for m in pkgutil.iter_modules([p for p in paths if p]))


def _no_installed_sources(spark: SparkSession) -> None:
    """Spare a new JVM Spark's look-up of installed Python data sources when it would find none.

    On the first use of a Python data source (our registration), Spark starts a Python process
    that imports PySpark and lists every module on its path, to register each ``pyspark_*``
    package's ``DefaultSource`` (``pyspark.sql.worker.lookup_data_sources``): one to two seconds
    of a fresh process's CPU. Where the answer is known (``installed_sources_known_absent``), the
    JVM is given the empty result it would have found."""
    conf = spark.sparkContext.getConf()
    pythons = [conf.get(k) for k in ("spark.pyspark.driver.python", "spark.pyspark.python")]
    pythons += [os.environ.get(v) for v in ("PYSPARK_DRIVER_PYTHON", "PYSPARK_PYTHON")]
    paths = [*sys.path, *os.environ.get("PYTHONPATH", "").split(os.pathsep)]
    if not installed_sources_known_absent(pythons, paths):
        return
    with contextlib.suppress(Exception):  # another Spark version: the look-up runs as before
        jvm = spark._jvm  # noqa: SLF001
        assert jvm is not None
        manager = getattr(getattr(jvm.org.apache.spark.sql.execution.datasources, "DataSourceManager$"), "MODULE$")
        if manager.dataSourceBuilders().isEmpty():
            empty = getattr(getattr(jvm.scala.collection.immutable, "Map$"), "MODULE$").empty()
            getattr(manager, "dataSourceBuilders_$eq")(jvm.scala.Some(empty))


def _warm_catalog(spark: SparkSession) -> threading.Thread:
    """Start the session's catalog (the Hive client and its metastore: seconds in a fresh JVM)
    in a thread, beside ``adopt``'s registration of the sources: on two cores the two overlap.
    A failure is left to the first catalog call, which meets it again and reports it. (A first
    job run so as well did not pay: a dbt run's start-up is CPU-bound on two cores.)"""

    def touch() -> None:
        with contextlib.suppress(Exception):
            spark._jsparkSession.sharedState().externalCatalog()  # noqa: SLF001 - a lazy val

    thread = threading.Thread(target=touch, name="tablets-catalog-start", daemon=True)
    thread.start()
    return thread


def adopt(
    spark: SparkSession, warehouse: str | None = None, storage_options: Mapping[str, str] | None = None
) -> SparkSession:
    """Set ``spark`` up for tablet tables, whoever built it: the package shipped to its
    executors (``tablets.spark.ship``), its warehouse and store settings where given
    (``catalog.configure``; else those it has, or its conf's), and every tablets source and the
    native-read planner registered (``catalog.register_sources``); its backend, classic or Spark
    Connect, decided (``tablets.spark.backend``) unless its builder did. Idempotent; returns ``spark``."""

    choose(spark)
    ship(spark)
    install_errors(spark)
    if warehouse or storage_options is not None:
        configure(spark, warehouse, storage_options)
    register_sources(spark)
    return spark


def _metastore_ready(warehouse: str, conf: Mapping[str, str], *, user_conf: Mapping[str, str]) -> None:
    """Before the JVM starts: a metastore server must answer; an embedded metastore is claimed
    for this process (``MetastoreInUse`` names the process holding it). Nothing to do when a
    running SparkContext will be joined (its metastore was settled when it started), or when
    the user's conf names a metastore database of their own."""

    if SparkContext._active_spark_context is not None:  # noqa: SLF001 - PySpark's one running context
        return
    uris = [u.strip() for u in (conf.get(metastore.URIS_CONF) or "").split(",") if u.strip()]
    if uris:
        errors: list[TabletsError] = []
        for uri in uris:
            try:
                metastore.reachable(uri)
                return
            except TabletsError as e:
                errors.append(e)
        raise errors[0]
    if metastore.JDO_URL_CONF not in user_conf:
        metastore.claim(warehouse)
