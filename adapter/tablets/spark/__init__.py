"""Spark access: the session, the ``tablets`` data source, catalog tables and native scans.

- ``build_session``: the embedded (or remote) Spark session, with
  every tablets source registered.
- ``TabletsDataSource``: ``spark.read.format("tablets")`` / ``df.write.format("tablets")``.
- ``create_table``, ``drop_table``, ``rename_table``, ``lookup``, ``list_tables``,
  ``sync_schema``, ``register_sources``: tablet tables as Spark catalog tables.
- ``snapshot_frame``: the engine's scan of a snapshot through Spark's native Parquet reader,
  deletion vectors applied, with row ids.

Rooms, top down (no circles): ``session`` (build, ``adopt``) -> ``catalog`` (create, drop, rename;
``registry``, ``names``, ``resolve``) -> ``native`` (the analyzer rule's read planner) ->
``read_frames`` (queries' reads) -> ``frames`` (the engine's scan) -> ``vectors`` (deletion vectors
tested in the scans' tasks), ``datasource``, ``columns``; ``process`` (the process's one session,
for a host); leaves: ``backend`` (classic or Spark Connect, decided once per session: every
question whose answer differs between the two is its method), ``jvm`` (Java, the class archive),
``sizes`` (Spark's size estimates), ``ship``, ``metastore``.

May import: ``tablets.spec``, ``tablets.storage`` and the leaves; never ``tablets.sql``,
``tablets.engine``, the front door or dbt (``tests/unit/test_layers.py``).
"""

from tablets.spark.catalog import (
    create_table,
    drop_table,
    list_tables,
    lookup,
    provider_name,
    register_sources,
    rename_table,
    sync_schema,
)
from tablets.spark.datasource import SOURCE_NAME, TabletsDataSource
from tablets.spark.frames import snapshot_frame
from tablets.spark.jvm import java_version
from tablets.spark.session import adopt, build_session, session_conf

__all__ = [
    "SOURCE_NAME",
    "TabletsDataSource",
    "adopt",
    "build_session",
    "create_table",
    "drop_table",
    "java_version",
    "list_tables",
    "lookup",
    "provider_name",
    "register_sources",
    "rename_table",
    "session_conf",
    "snapshot_frame",
    "sync_schema",
]
