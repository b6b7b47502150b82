"""Classic Spark or Spark Connect: the one place that tells them apart; everything else asks here.

A classic session has a SparkContext and a JVM in this process (py4j: ``_jvm``, ``_jdf``,
``sparkContext``); a Spark Connect session has neither: what ships (a py-file or an artifact),
how sizes are estimated (the JVM's statistics or the server's plan), and whether native reads
can be served from here all follow from this answer. A leaf: no imports of tablets.
"""

from __future__ import annotations

from typing import Any


def is_connect(spark_or_frame: Any) -> bool:
    """Whether ``spark_or_frame`` (a session or a DataFrame) is Spark Connect's: no JVM here, no
    ``.rdd``, ``_jdf`` or ``sparkContext``."""
    return type(spark_or_frame).__module__.startswith("pyspark.sql.connect")


def context_key(spark: Any) -> Any:
    """What a session's shared state belongs to: the SparkContext of a classic session (its
    sessions share the registered data sources and the workers' files), the session itself on
    Spark Connect (sources and artifacts are per session there)."""
    return spark if is_connect(spark) else spark.sparkContext
