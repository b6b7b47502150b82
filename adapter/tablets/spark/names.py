"""Names of catalog tables: ``db.t`` split and qualified with the session's current database, and
the clear error for a table whose provider the session does not know."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tablets.exceptions import TableNotFound, TabletsError
from tablets.spark.registry import PROVIDER_PREFIX, load_registry, register_entries, registry_dir
from tablets.sqltext import quote_ident

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


# --- names ------------------------------------------------------------------------------------


def split_name(name: str) -> list[str]:
    """``a.`b.c`.d`` -> ["a", "b.c", "d"] (backquotes, doubled backquotes inside them)."""
    parts: list[str] = []
    cur: list[str] = []
    i, quoted = 0, False
    text = name.strip()
    while i < len(text):
        ch = text[i]
        if quoted:
            if ch == "`":
                if i + 1 < len(text) and text[i + 1] == "`":
                    cur.append("`")
                    i += 1
                else:
                    quoted = False
            else:
                cur.append(ch)
        elif ch == "`":
            quoted = True
        elif ch == ".":
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
        i += 1
    parts.append("".join(cur).strip())
    if quoted or any(p == "" for p in parts):
        raise TabletsError(
            f"invalid table name {name!r}", help="Use `table`, `database.table` or `spark_catalog.database.table`."
        )
    return parts


def qualify(spark: SparkSession, name: str) -> tuple[str, str]:
    """(database, table), lower case; the current database when ``name`` has none."""
    parts = split_name(name)
    if len(parts) == 3 and parts[0].lower() == "spark_catalog":
        parts = parts[1:]
    if len(parts) == 1:
        return spark.catalog.currentDatabase().lower(), parts[0].lower()
    if len(parts) == 2:
        return parts[0].lower(), parts[1].lower()
    raise TabletsError(
        f"table name {name!r} is not in the session catalog",
        help="Tablet tables live in spark_catalog: use `database.table`.",
    )


def sql_name(db: str, table: str) -> str:
    return f"{quote_ident(db)}.{quote_ident(table)}"


def table_exists(spark: SparkSession, db: str, table: str) -> bool:
    try:
        return bool(spark.catalog.tableExists(sql_name(db, table)))
    except Exception as e:  # py4j and Spark errors alike
        clear = missing_provider(spark, e)
        if clear is None:
            raise
        raise clear from e


_MISSING_PROVIDER = re.compile(r"Failed to find the data source: (" + PROVIDER_PREFIX + r"[0-9a-f]{12})\b")


def missing_provider(spark: SparkSession, error: BaseException) -> TabletsError | None:
    """A clear error for Spark's DATA_SOURCE_NOT_FOUND on a tablet table: its catalog entry names
    a per-table provider that this warehouse's registry no longer has (the warehouse directory
    was deleted or moved, the metastore beside it kept). None for any other error."""
    m = _MISSING_PROVIDER.search(str(error))
    if m is None:
        return None
    entry = load_registry(spark).by_provider.get(m.group(1))
    if entry is not None:  # created by another process just now (a shared metastore)
        register_entries(spark, [entry])
        return TabletsError(
            f"the tablet table {entry.name} was created by another process while this statement was planned",
            help="Run the statement again: its provider is registered now.",
        )
    return TableNotFound(
        f"a catalog table is a tablet table (provider {m.group(1)}), but the warehouse registry "
        f"{registry_dir(spark)} has no such table: the table belongs to another warehouse whose "
        "metastore this session uses (a shared metastore server, or a metastore copied from the "
        "old layout, where warehouses under one parent directory shared one), or the registry was "
        "deleted",
        help="Point the session at the warehouse that holds the table; to start afresh, delete "
        "the warehouse (its embedded metastore is inside it, in _metastore/).",
    )


def quiet_hive_alter(spark: SparkSession) -> None:
    """``ALTER TABLE`` of a data source table makes Hive log "ERROR HiveAlterHandler: Failed
    to alter table" before Spark falls back to storing the schema its own way (it works)."""
    try:
        jvm = spark.sparkContext._jvm  # noqa: SLF001 - py4j's JVM, here in spark/
        if jvm is None:
            return
        level = jvm.org.apache.logging.log4j.Level.OFF
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(
            "org.apache.hadoop.hive.metastore.HiveAlterHandler", level
        )
    except Exception:  # noqa: BLE001 - cosmetic only (and no JVM under Spark Connect)
        pass
