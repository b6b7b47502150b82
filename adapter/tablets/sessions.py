"""Sessions, for hosts of the engine (the dbt plugin, a notebook): start one or adopt one built
elsewhere, keep the process's one (``shared_session``, maybe started in the background), and what a
host asks of it: its backend (classic or Spark Connect: ``backend(spark).java_version()``, ...), its
warehouse, its metastore. The front door's face of ``tablets.spark``: a host imports this, not
``spark/``.

    >>> spark = start_session("/tmp/wh", master="local[2]")
    >>> warehouse_of(spark)
    '/tmp/wh'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pyspark import SparkContext

from tablets.spark import catalog, jvm, metastore, warm
from tablets.spark import session as _session
from tablets.spark.backend import backend
from tablets.spark.metastore import DEFAULT_PORT as METASTORE_PORT
from tablets.spark.metastore import WARM_MODULE, MetastoreInUse, derby_locked
from tablets.spark.process import alive, shared_session, start_in_background, touch_catalog
from tablets.storage.fileio import normalize

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "METASTORE_PORT",
    "MetastoreInUse",
    "WARM_MODULE",
    "adopt",
    "alive",
    "backend",
    "check_metastore_uri",
    "derby_locked",
    "java_version",
    "metastore_serve_command",
    "same_location",
    "shared_session",
    "start_in_background",
    "start_session",
    "touch_catalog",
    "warehouse_of",
]


def start_session(
    warehouse: str | None = None,
    *,
    master: str | None = None,
    remote: str | None = None,
    conf: Mapping[str, str] | None = None,
    shuffle_partitions: int = 4,
    storage_options: Mapping[str, str] | None = None,
    metastore_uri: str | None = None,
    keep_alive: float = 0,
) -> SparkSession:
    """A new (or joined) Spark session ready for tablet tables (``tablets.spark.session.build_session``).
    ``keep_alive`` > 0: a session of the warm local Spark of these settings, started if none runs and
    kept for that many idle seconds after the last process leaves it (``tablets.spark.warm``);
    not for ``remote`` nor a cluster's ``master``, nor where this process runs a Spark already.
    Without it, an idle warm server holding the warehouse's metastore is stopped first (it would
    refuse this process the metastore; the next command that asks for one starts it again)."""
    settings: dict[str, Any] = {
        "master": master,
        "conf": conf,
        "shuffle_partitions": shuffle_partitions,
        "storage_options": storage_options,
        "metastore_uri": metastore_uri,
    }
    if keep_alive > 0 and not remote and (master or "local").startswith("local") and not _running():
        return warm.session(warehouse, keep_alive=keep_alive, **settings)
    try:
        return _session.build_session(warehouse, remote=remote, **settings)
    except MetastoreInUse as e:
        if WARM_MODULE not in e.holder.command or not warm.retire_idle(e.warehouse):
            raise
    return _session.build_session(warehouse, remote=remote, **settings)


def _running() -> bool:
    return SparkContext._active_spark_context is not None  # noqa: SLF001


def adopt(
    spark: SparkSession, warehouse: str | None = None, storage_options: Mapping[str, str] | None = None
) -> SparkSession:
    """Set up a session built elsewhere for tablet tables (``tablets.spark.session.adopt``)."""
    return _session.adopt(spark, warehouse, storage_options)


def warehouse_of(spark: SparkSession) -> str:
    """Where ``spark``'s tablet tables live: a local path or an object store URI."""
    return catalog.warehouse_dir(spark)


def same_location(a: str, b: str) -> bool:
    """Whether two paths or URIs name the same place (as the store normalizes them)."""
    return normalize(a) == normalize(b)


def java_version() -> str:
    """The first line of ``java -version``; a ``TabletsError`` with the fix where Java is missing."""
    return jvm.java_version()


def check_metastore_uri(uri: str) -> tuple[str, int]:
    """``thrift://host:port`` as (host, port); a ``TabletsError`` naming the problem otherwise."""
    return metastore.check_uri(uri)


def metastore_serve_command(warehouse: str) -> str:
    """The command that serves ``warehouse``'s metastore, for several processes at once."""
    return metastore.serve_command(warehouse)
