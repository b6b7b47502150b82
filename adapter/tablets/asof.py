"""Time travel: ``VERSION AS OF n`` / ``TIMESTAMP AS OF <expr>`` of a tablet table, resolved to
a version that exists and whose files are still there, and a query's tablet tables read AS OF
a version replaced by temporary views of it (``time_travel``). Shared by queries, a MERGE's
source, RESTORE and CLONE."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from tablets.exceptions import FormatError, TableNotFound, TabletsError
from tablets.spark import catalog
from tablets.spec import AsOf
from tablets.sql.maintenance import as_of, may_time_travel
from tablets.sql.syntax import table_name
from tablets.storage.fileio import join
from tablets.storage.tablet import check_sizes

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from tablets.storage.table import TabletTable

RETENTION_PROPERTY = "deleted_file_retention_hours"
VIEW_PREFIX = "tablets_asof_"


def resolve_version(spark: SparkSession, table: TabletTable, when: AsOf, where: str) -> int:
    """The version ``when`` names, checked to exist; errors name ``where`` and the AS OF part."""
    what = f"{where}: {when.sql()}"
    if when.version is not None:
        versions = [v for v, _ in table.commit_times()]
        if when.version not in versions:
            raise TableNotFound(
                f"{what}: version {when.version} does not exist (versions {versions[0]}..{versions[-1]})",
                help="Pick a version from DESCRIBE HISTORY.",
            )
        return when.version
    try:
        micros = spark.sql(f"SELECT unix_micros(CAST(({when.timestamp}) AS TIMESTAMP)) AS us").collect()[0][0]
    except Exception as e:  # noqa: BLE001 - Spark's analysis or parse error
        raise TabletsError(
            f"{what}: not a timestamp Spark can read ({str(e).splitlines()[0][:200]})",
            help="Write TIMESTAMP AS OF '2024-05-01 12:00:00' (the session time zone).",
        ) from None
    if micros is None:
        raise TabletsError(
            f"{what}: not a timestamp", help="Write TIMESTAMP AS OF '2024-05-01 12:00:00' (the session time zone)."
        )
    return table.version_at(micros // 1000, what)


def _still_there(table: TabletTable, version: int, what: str) -> None:
    """An old version's tablets and deletion vectors still exist (VACUUM removes what only old
    versions reference): else a ``TableNotFound`` saying so, before any Spark job fails on them."""
    if version == table.version:
        return
    snap = table.snapshot(version)
    try:
        check_sizes(table.io, table.root, [st.add for st in snap.tablets.values()])
        for st in snap.tablets.values():
            if st.dv is not None and not table.io.exists(join(table.root, st.dv.path)):
                raise FormatError(f"deletion vector {st.dv.path} is missing")
    except FormatError as e:
        raise TableNotFound(
            f"{what}: version {version}'s files are gone ({e.detail}): VACUUM removed what only older versions read",
            help="Read a newer version (DESCRIBE HISTORY), or keep more history next time "
            f"(VACUUM ... RETAIN <hours> HOURS, the table property {RETENTION_PROPERTY}).",
        ) from None


def time_travel(spark: SparkSession, text: str) -> str:
    """``text`` with every ``<tablet table> VERSION AS OF n`` / ``TIMESTAMP AS OF ...`` replaced
    by a temporary view of that version (``catalog.table_views``); ``text`` itself when it has
    none. Other tables' AS OF (Delta, Iceberg) are left to Spark."""
    if not may_time_travel(text):
        return text

    def as_of_version(node: exp.Table) -> catalog.TableView | None:
        version = node.args.get("version")
        if not isinstance(version, exp.Version):
            return None
        name = table_name(node)
        root = catalog.lookup(spark, name)
        if root is None:
            if catalog.path_of(name) is None:
                return None
            root = catalog.require(spark, name)
        table = catalog.storage(spark).table(root)
        v = resolve_version(spark, table, as_of(version), f"SELECT ... FROM {name}")
        _still_there(table, v, f"SELECT ... FROM {name} {as_of(version).sql()}")
        view = f"{VIEW_PREFIX}{catalog.provider_name(root)[len(catalog.PROVIDER_PREFIX) :]}_v{v}"
        return catalog.TableView(root, view, version=v, alias=node.name)

    return catalog.table_views(spark, text, as_of_version)
