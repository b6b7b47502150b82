"""Deletion vectors applied where the rows are read: one JVM expression per scan
(``java/tablets/spark/DeletionVectors.java``, ``LiveRow.java``) that each task evaluates on the
rows it reads, loading the vector of a tablet the first time one of its rows asks and keeping
it in the executor for later tasks and queries.

What the driver sends is one entry per tablet with a deletion vector (its file, size, CRC-32
and cardinality, as ``set_dv`` records them: ~150 bytes), in the plan: it grows with the number
of tablets (~1,000 at 1B rows in 1M-row tablets: ~150 KB), never with the rows or the deletes.
The broadcast of 64-bit words it replaces (``frames.dv_words_frame``) grew with the rows: 9 MiB of
Arrow at 10M rows with 10% deleted, 90 MiB at 100M (docs/SCALE.md).

The executor reads the vector through Hadoop's file system, as Spark's Parquet scan reads the
tablet beside it (the native scan is used only where Hadoop knows the table's scheme), and
checks it against the log and docs/FORMAT_DV.md as ``tablets.storage.dv.read_dv`` does; a
damaged vector fails the query with the ``FormatError`` naming it (``tablets.spark.errors``).

Where it is not available the scan falls back to the words' broadcast, which gives the same rows:
Spark Connect (no JVM here), a driver JVM started without the tablets jar (no ``javac``, or a
session built elsewhere: ``tablets.spark.native``), or ``spark.tablets.dv.executors=false``. The
jar reaches the executors with ``SparkContext.addJar`` (once per context), so a cluster's
executors load the expression's class as they load the task.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from py4j.java_gateway import JavaClass
from pyspark.sql import Column

from tablets.settings import conf_flag
from tablets.spark.backend import backend

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from tablets.storage.actions import SetDV

EXECUTORS_CONF = "spark.tablets.dv.executors"  # false: the deletion vectors' words are broadcast

logger = logging.getLogger("tablets")
_lock = threading.Lock()
_ready: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()  # the JVM class, None: broadcast


def on_executors(spark: SparkSession) -> bool:
    """Whether ``spark``'s scans test deletion vectors in their tasks (else they broadcast the
    words): a classic session whose JVM has the tablets classes, with the jar added for the
    executors (done here, once per SparkContext)."""
    if backend(spark).jvm(spark) is None or not conf_flag(spark, EXECUTORS_CONF):
        return False
    sc: Any = spark.sparkContext
    with _lock:
        if sc in _ready:
            return _ready[sc] is not None
    ok = False
    cls: Any = None
    try:
        cls = sc._jvm.tablets.spark.DeletionVectors  # noqa: SLF001
        ok = isinstance(cls, JavaClass)
    except Exception:  # noqa: BLE001 - py4j: no such class here
        ok = False
    if ok and not str(sc.master).startswith("local"):  # local: the driver's JVM runs the tasks
        try:
            path = cls.jar()  # the jar the driver loaded
            assert path
            sc._jsc.sc().addJar(path)  # noqa: SLF001 - (PySpark has no addJar)
        except Exception:  # noqa: BLE001 - the executors could not load the class: broadcast instead
            logger.warning("tablets: could not add the tablets jar for the executors; deletion vectors are broadcast")
            ok = False
    if not ok:  # once per context
        logger.info("tablets: no tablets classes in this Spark's JVM; deletion vectors are broadcast to scans")
    with _lock:
        _ready[sc] = cls if ok else None
    return ok


def live(spark: SparkSession, key: Column, row: Column, vectors: Sequence[tuple[str | int, str, SetDV]]) -> Column:
    """True for a live row: ``key`` (the file name, or the stored row ids' tag) and ``row`` (the
    row number in the file) against ``vectors``: (key, Hadoop location of the file, the log's
    ``set_dv``) of every tablet of the scan with a deletion vector. Only where ``on_executors``."""
    lines = [f"{k}\t{where}\t{dv.size}\t{dv.checksum}\t{dv.cardinality}" for k, where, dv in vectors]
    by_tag = bool(vectors) and not isinstance(vectors[0][0], str)
    with _lock:
        # the class found once (``on_executors``): each py4j lookup of ``tablets``, then
        # ``tablets.spark``, searches every jar of Spark's class path for a class of that name
        cls: Any = _ready.get(spark.sparkContext)
    if cls is None:
        jvm: Any = spark._jvm  # noqa: SLF001
        cls = jvm.tablets.spark.DeletionVectors
    jsession = spark._jsparkSession  # noqa: SLF001
    return Column(cls.live(jsession, key._jc, row._jc, by_tag, "\n".join(lines)))  # noqa: SLF001
