"""Tablet tables as Spark catalog tables (``db.t``), so plain Spark SQL, dbt's ``ref()``,
``dbt test``, ``dbt show`` and ``dbt docs`` see them like any table.

The Spark limitation this module works around (verified on PySpark 4.3.0): for a catalog table
``CREATE TABLE db.t (...) USING tablets OPTIONS (path '...')`` (or ``LOCATION '...'``) Spark
stores the options, location and properties in the metastore, but
``PythonDataSourceV2.getTable`` drops them when it builds the Python table, so
``SELECT * FROM db.t`` reaches the data source's ``reader()`` with *empty* options and the
source cannot know which table to read (likewise ``INSERT INTO db.t``). Per-query options do
arrive (``SELECT * FROM db.t WITH ('path' = ...)``), but dbt and users write plain SQL.

The workaround: every tablet table gets its own provider, ``tablets_<12 hex of sha1(root)>``,
a subclass of the ``tablets`` source whose ``name()`` is that provider and whose table root is
a class attribute. The catalog entry is ``CREATE TABLE db.t (cols) USING tablets_<hex>
LOCATION '<root>'`` (EXTERNAL: Spark never deletes or moves the data on its own; the location
and the ``tablets.path`` property are also recorded in the metastore for people and tools).
A provider must be registered in a session before Spark resolves the table, so the providers
are kept in a registry in the warehouse, one file per table::

    <warehouse>/_tablets_registry/<provider>.json     {"name": "db.t", "path": "<root>", "provider": ...}

The warehouse (``spark.tablets.warehouse``, else ``spark.sql.warehouse.dir``) and the tables
may be local directories or object store URIs (``s3://bucket/wh``): the registry and every table
go through ``tablets.storage.fileio`` with the session's storage options (``configure``).

``register_sources(spark)`` (run by ``build_session`` and ``adopt``) registers the
base ``tablets`` source and every provider of the registry: it lists one small directory.
``lookup()`` serves the engine's routing from an in-process index of that directory, re-read
when its listing changes (creates/drops in another process) and invalidated by this module's
own create/drop/rename.

Spark's ``DROP TABLE`` never reaches a Python source (it would only drop the catalog entry):
use ``drop_table`` (the SQL front door routes ``DROP TABLE`` of a tablet table here), which
drops the entry, the data and the registry file.

Tables by path, as Delta's ``delta.`/path` ``: ``tablets.`/data/t` `` or ``tablets.`s3://b/t` ``
names the tablet table at that location, with no catalog entry (``path_of``, ``require``).
The front door routes MERGE/UPDATE/DELETE/INSERT/CREATE on it to the engine; Spark refuses a
Python source in a direct query on files (UNSUPPORTED_DATASOURCE_FOR_DIRECT_QUERY, PySpark
4.3), so ``path_views`` rewrites such names in a query to temporary views read through the
table's own provider.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from tablets.exceptions import SchemaMismatch, TableAlreadyExists, TableNotFound, TabletsError
from tablets.spark.backend import backend
from tablets.spark.datasource import spark_ddl, type_text
from tablets.sqltext import quote_ident, sql_string
from tablets.storage import delta_adopt
from tablets.storage.actions import Metadata
from tablets.storage.fileio import join, normalize
from tablets.storage.table import TabletTable

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType
from pyspark.sql.types import StructType

from tablets.spark.names import *  # noqa: F403  (re-exported: catalog.qualify, catalog.split_name, ...)
from tablets.spark.names import (
    missing_provider as missing_provider,
)
from tablets.spark.names import (
    qualify,
    quiet_hive_alter,
    sql_name,
    table_exists,
)
from tablets.spark.names import (
    split_name as split_name,
)

# the catalog's whole API: its providers' registry, names and lookups by name or path live in
# registry.py, names.py and resolve.py, and are asked for here as catalog.<name>
from tablets.spark.registry import (
    PATH_PROPERTY,
    RegistryEntry,
    has_log,
    load_registry,
    provider_name,
    register_entries,
    remove_entry,
    storage,
    warehouse_dir,
    write_entry,
)
from tablets.spark.registry import (
    PROVIDER_PREFIX as PROVIDER_PREFIX,
)
from tablets.spark.registry import (
    REGISTRY_DIR as REGISTRY_DIR,
)
from tablets.spark.registry import (
    configure as configure,
)
from tablets.spark.registry import (
    register_sources as register_sources,
)
from tablets.spark.registry import (
    root_of_provider as root_of_provider,
)
from tablets.spark.registry import (
    table_source as table_source,
)
from tablets.spark.resolve import (
    TableView as TableView,
)
from tablets.spark.resolve import (
    describe_path,
    lookup,
    path_of,
)
from tablets.spark.resolve import (
    may_name_a_tablet_table as may_name_a_tablet_table,
)
from tablets.spark.resolve import (
    path_views as path_views,
)
from tablets.spark.resolve import (
    require as require,
)
from tablets.spark.resolve import (
    table_views as table_views,
)

# --- public API ---------------------------------------------------------------------------------


def list_tables(spark: SparkSession, database: str | None = None) -> list[tuple[str, str]]:
    """(qualified name, root) of the tablet tables, of ``database`` if given: registered, named
    in the catalog (a registry entry whose table never got its name, a CREATE killed between
    the two, is not a table) and with a log."""
    entries = _registered(spark, database)
    named: set[str] = set()
    for d in sorted({e.name.split(".", 1)[0] for e in entries}):
        if spark.catalog.databaseExists(d):
            rows = spark.sql(f"SHOW TABLES IN {quote_ident(d)}").collect()
            named.update(f"{d}.{r.tableName.lower()}" for r in rows if not r.isTemporary)
    return sorted((e.name, e.path) for e in entries if e.name in named)


def drop_database_tables(spark: SparkSession, database: str) -> list[str]:
    """Drop every tablet table of ``database`` before the database itself (``DROP SCHEMA ...
    CASCADE`` never reaches a Python data source): each registered one, named in the catalog or
    not (a CREATE killed before its name leaves its files and registry file); what was removed."""
    return [drop_table(spark, e.name, if_exists=True) for e in _registered(spark, database)]


def _registered(spark: SparkSession, database: str | None) -> list[RegistryEntry]:
    """The registry's entries of ``database`` (every database if None) whose store has a log."""
    db = database.lower() if database else None
    return [
        e
        for e in load_registry(spark).by_name.values()
        if (db is None or e.name.split(".", 1)[0] == db) and has_log(spark, e.path)
    ]


def store_schema(
    spark: SparkSession, schema: pa.Schema | StructType | str | list[tuple[str, str, bool]]
) -> pa.Schema | list[tuple[str, str, bool]]:
    if isinstance(schema, pa.Schema):
        return schema
    if isinstance(schema, list):  # (name, type, nullable): a CREATE's columns with their NOT NULL
        return schema

    if isinstance(schema, str):
        struct = (
            StructType.fromDDL(schema) if hasattr(StructType, "fromDDL") else spark.createDataFrame([], schema).schema
        )
    else:
        struct = schema
    if not isinstance(struct, StructType):
        raise SchemaMismatch(
            f"not a table schema: {schema!r}",
            help="Give columns as Spark DDL (`a BIGINT, b STRING`) or a pyarrow schema.",
        )
    return [(f.name, type_text(f.dataType), True) for f in struct.fields]


def default_location(spark: SparkSession, database: str, table: str) -> str:
    """Where a new tablet table goes: with a tablets warehouse of its own (an object store),
    ``<warehouse>/[<database>.db/]<table>``; else where Spark would put a managed table,
    ``<database location>/<table>``."""
    wh = warehouse_dir(spark)
    layout = wh if database == "default" else join(wh, f"{database}.db")
    if wh == normalize(spark.conf.get("spark.sql.warehouse.dir") or wh):
        try:
            uri = spark.catalog.getDatabase(database).locationUri
        except Exception:  # noqa: BLE001 - fall back to the warehouse layout
            uri = None
        if uri:
            layout = normalize(uri)
    return join(layout, table)


KEYS_PROPERTY = "tablets.key_columns"  # the entry's record of the table's key columns


def _create_entry(
    spark: SparkSession,
    db: str,
    table: str,
    root: str,
    meta: Metadata,
    *,
    comments: Mapping[str, str] | None = None,
) -> None:
    """The catalog entry of the store at ``root`` (of metadata ``meta``); ``comments``: its
    columns' (by lower-case name), where it replaces an entry that had them."""
    props = {PATH_PROPERTY: root}
    if meta.key_columns:
        props[KEYS_PROPERTY] = ",".join(meta.key_columns)
    tblprops = ", ".join(f"{sql_string(k)} = {sql_string(v)}" for k, v in props.items())
    spark.sql(
        f"CREATE TABLE {sql_name(db, table)} ({spark_ddl(meta.schema, comments)}) USING {provider_name(root)} "
        f"LOCATION {sql_string(root)} TBLPROPERTIES ({tblprops})"
    )


def create_table(
    spark: SparkSession,
    name: str,
    schema: pa.Schema | StructType | str | None,
    *,
    location: str | None = None,
    key_columns: Sequence[str] = (),
    properties: Mapping[str, str] | None = None,
    replace: bool = False,
    if_not_exists: bool = False,
    managed: bool = False,
    fill: Callable[[TabletTable], object] | None = None,
    comment: str | None = None,
    column_comments: Sequence[tuple[str, str]] = (),
) -> TabletTable:
    """Create the tablet table ``name``: the store at ``location`` (default: where Spark puts a
    managed table, ``<warehouse>/<db>.db/<table>``), the catalog entry and the registry file.

    ``fill`` (CREATE TABLE ... AS SELECT) writes the new store's rows before the table has a
    name: no reader sees it empty, and a process killed meanwhile leaves no table, only files
    that ``CREATE OR REPLACE`` replaces. If ``fill`` fails, a store made here is dropped.

    ``replace`` drops an existing table of that name (data included) first. An existing tablet
    table at an explicit ``location`` is adopted (like ``CREATE TABLE ... LOCATION`` of an
    existing Delta table); ``schema`` may then be None; ``managed``: the table at ``location``
    is the catalog's, dropped with it (a shallow clone made at the default location). ``tablets.`<path>` `` creates the table
    at that path only, with no catalog entry."""
    path = path_of(name)
    if path is not None:  # no catalog entry: readers by path see the table as soon as it is made
        made = fill is not None and (replace or not storage(spark).table(path).exists())
        store = _create_at_path(
            spark,
            path,
            schema,
            key_columns,
            properties,
            replace=replace,
            if_not_exists=if_not_exists,
            comments=(comment, column_comments),
        )
        return _filled(store, fill, drop=made)
    db, table = qualify(spark, name)
    qualified = f"{db}.{table}"
    if not spark.catalog.databaseExists(db):
        raise TableNotFound(
            f"database {db} does not exist (creating {qualified})", help=f"Create it first: CREATE DATABASE {db}."
        )
    known = load_registry(spark).by_name.get(qualified)
    in_catalog = table_exists(spark, db, table)
    if in_catalog or known is not None:
        if if_not_exists and in_catalog:
            if known is None or not has_log(spark, known.path):
                raise TableAlreadyExists(
                    f"{qualified} exists and is not a tablet table", help="Pick another name, or drop it first."
                )
            return storage(spark).table(known.path)
        if replace or not in_catalog:  # not in the catalog: a stale registry entry
            drop_table(spark, qualified, if_exists=True, keep_data=not replace and not in_catalog)
        else:
            raise TableAlreadyExists(
                f"table {qualified} already exists", help="Use CREATE OR REPLACE, or drop it first."
            )
    root = normalize(location) if location else default_location(spark, db, table)
    store = storage(spark).table(root)
    if location is not None and not replace:  # a Delta table written by another engine: adopted
        delta_adopt.adopt_if_delta(store.io, root, tuple(key_columns))
    created = False
    if store.exists():
        if location is None and not replace:
            raise TableAlreadyExists(
                f"the files of a tablet table remain at {root}, the default location of {qualified}",
                help="Use CREATE OR REPLACE to replace them, or CREATE TABLE ... LOCATION to adopt them.",
            )
        if replace and location is None:
            store.drop()
        elif replace:
            pass  # an EXTERNAL table's files: adopted, and the caller replaces its rows in one commit
        elif schema is not None:
            given = store_schema(spark, schema)
            names = [f.name for f in given] if isinstance(given, pa.Schema) else [c[0] for c in given]
            have = list(store.snapshot().metadata.column_names)
            if names and [n.lower() for n in names] != [n.lower() for n in have]:
                raise SchemaMismatch(
                    f"the tablet table at {root} has columns {have}, not {names}",
                    help="Leave the column list out to adopt the table as it is, or use another LOCATION.",
                )
    if not store.exists():
        if schema is None:
            raise SchemaMismatch(
                f"no columns given for the new table {qualified}",
                help="Give the columns (Spark DDL or a pyarrow schema).",
            )
        store = TabletTable.create(
            root,
            store_schema(spark, schema),
            key_columns=key_columns,
            properties=properties,
            storage_options=storage(spark).options,
            comment=comment,
            column_comments=column_comments,
        )
        created = True
    _filled(store, fill, drop=created)
    provider = provider_name(root)
    other = load_registry(spark).by_provider.get(provider)
    if other is not None and other.name != qualified and table_exists(spark, *other.name.split(".", 1)):
        raise TableAlreadyExists(
            f"the tablet table at {root} is already the catalog table {other.name}",
            help="Use that name, or another LOCATION.",
        )
    # managed: a table made at its default location by another path (a shallow clone)
    entry = RegistryEntry(qualified, root, provider, external=location is not None and not managed)
    write_entry(spark, entry)  # first: a catalog entry without its provider would be unreadable
    try:
        register_entries(spark, [entry])
        _create_entry(spark, db, table, root, store.snapshot().metadata)
    except Exception:
        remove_entry(spark, provider)
        if created:
            store.drop()
        raise
    return store


def _filled(store: TabletTable, fill: Callable[[TabletTable], object] | None, *, drop: bool) -> TabletTable:
    """``store`` once ``fill`` has written its rows; where it fails, the store is dropped if
    ``drop`` (made by this statement) and its error raised."""
    if fill is not None:
        try:
            fill(store)
        except BaseException:
            if drop:
                store.drop()
            raise
    return store


def replaceable(spark: SparkSession, name: str, location: str | None = None) -> TabletTable | None:
    """The tablet table that ``CREATE OR REPLACE TABLE name [LOCATION location]`` replaces in
    one commit of its own log (``storage.metadata.replacement``), as Delta does: ``name`` when it is
    a tablet table in the catalog (or at that path) and ``location``, if given, is where it is.
    None otherwise: the old table is dropped and a new one made (``create_table``)."""
    if path_of(name) is None:
        db, table = qualify(spark, name)
        if not table_exists(spark, db, table):
            return None
    root = lookup(spark, name)
    if root is None or (location is not None and normalize(location) != root):
        return None
    return storage(spark).table(root)


def _create_at_path(
    spark: SparkSession,
    path: str,
    schema: pa.Schema | StructType | str | None,
    key_columns: Sequence[str],
    properties: Mapping[str, str] | None,
    *,
    replace: bool,
    if_not_exists: bool,
    comments: tuple[str | None, Sequence[tuple[str, str]]] = (None, ()),
) -> TabletTable:
    store = storage(spark).table(path)
    if not replace and delta_adopt.adopt_if_delta(store.io, path, tuple(key_columns)):  # a Delta table there
        return store
    if store.exists():
        if if_not_exists:
            return store
        if not replace:
            raise TableAlreadyExists(
                f"a tablet table exists at {path}", help="Use CREATE OR REPLACE TABLE, or another path."
            )
        store.drop()
    elif describe_path(spark, path) != f"nothing is at {path}":
        raise TableAlreadyExists(
            f"cannot create a tablet table at {path}: {describe_path(spark, path)}",
            help="Choose an empty or new directory.",
        )
    if schema is None:
        raise SchemaMismatch(
            f"no columns given for the new table at {path}", help="Give the columns (Spark DDL or a pyarrow schema)."
        )
    return TabletTable.create(
        path,
        store_schema(spark, schema),
        key_columns=key_columns,
        properties=properties,
        storage_options=storage(spark).options,
        comment=comments[0],
        column_comments=comments[1],
    )


# providers Spark writes as plain files: no MERGE, UPDATE, DELETE, OPTIMIZE, VACUUM or history
FILE_FORMATS = {"parquet", "orc", "csv", "json", "text", "avro", "hive", "textfile", "sequencefile", "rcfile"}


def kind_of(spark: SparkSession, name: str) -> str | None:
    """What ``name`` names: "tablets" (a tablet table), "view" (a view, temporary or not), another
    table's provider in lower case ("parquet"; "" if Spark cannot tell), or None (nothing)."""
    if lookup(spark, name) is not None:
        return "tablets"
    try:
        info = spark.catalog.getTable(name)  # (Spark parses backquoted parts)
    except Exception:  # noqa: BLE001 - Spark's "not found"
        return None
    if info.isTemporary or (info.tableType or "").upper() in ("VIEW", "TEMPORARY"):
        return "view"
    return provider_of(spark, name)


def provider_of(spark: SparkSession, name: str) -> str:
    """The provider Spark's catalog records for the table ``name`` (lower case; "" if it cannot tell)."""
    try:
        rows = spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()
    except Exception:  # noqa: BLE001 - no provider to tell
        return ""
    return next((str(r[1]).lower() for r in rows if str(r[0]).strip().lower() == "provider"), "")


def is_external(spark: SparkSession, name: str) -> bool:
    """Whether the tablet table ``name`` is EXTERNAL (Spark's word): made with ``LOCATION``, or
    (an entry written before this was recorded) kept anywhere but its default location. DROP
    keeps an external table's files; a table named by its path is never managed."""
    if path_of(name) is not None:
        return True
    db, table = qualify(spark, name)
    entry = load_registry(spark).by_name.get(f"{db}.{table}")
    if entry is None:
        return False
    if entry.external is not None:
        return entry.external
    return normalize(entry.path) != default_location(spark, db, table)


def drop_table(spark: SparkSession, name: str, if_exists: bool = False, *, keep_data: bool = False) -> str:
    """Drop the catalog entry, the data (unless ``keep_data`` or the table is external) and the
    registry entry; what was removed, in words."""
    if path_of(name) is not None:
        raise TabletsError(
            f"DROP TABLE {name}: a table named by its path has no catalog entry to drop",
            help="Delete its directory to remove it, or drop the catalog table that points at it.",
        )
    db, table = qualify(spark, name)
    qualified = f"{db}.{table}"
    entry = load_registry(spark).by_name.get(qualified)
    in_catalog = table_exists(spark, db, table)
    if entry is None and not in_catalog:
        if if_exists:
            return f"no table {qualified}: nothing dropped"
        raise TableNotFound(f"table {qualified} does not exist")
    external = entry is not None and is_external(spark, qualified)
    if in_catalog:
        spark.sql(f"DROP TABLE IF EXISTS {sql_name(db, table)}")
    if entry is None:
        return f"dropped the catalog entry of {qualified}"
    if not keep_data and not external:
        storage(spark).table(entry.path).drop()
    remove_entry(spark, entry.provider)
    if keep_data or external:
        why = " (an EXTERNAL table: its data is not the catalog's to delete)" if external else ""
        return f"dropped the catalog entry of {qualified}; kept its files at {entry.path}{why}"
    return f"dropped {qualified} and deleted its files at {entry.path}"


def rename_table(spark: SparkSession, old: str, new: str) -> None:
    """Rename the catalog entry; the data stays where it is (the entry is EXTERNAL)."""
    db, table = qualify(spark, old)
    ndb, ntable = qualify(spark, new)
    entry = load_registry(spark).by_name.get(f"{db}.{table}")
    if entry is None:
        raise TableNotFound(f"{db}.{table} is not a tablet table")
    if table_exists(spark, ndb, ntable) or f"{ndb}.{ntable}" in load_registry(spark).by_name:
        raise TableAlreadyExists(f"table {ndb}.{ntable} already exists", help="Drop it first, or pick another name.")
    spark.sql(f"ALTER TABLE {sql_name(db, table)} RENAME TO {sql_name(ndb, ntable)}")
    write_entry(spark, RegistryEntry(f"{ndb}.{ntable}", entry.path, entry.provider))


def sync_schema(spark: SparkSession, name: str, *, keys_changed: bool = False) -> None:
    """Make the catalog entry's columns the store's columns (after ``add_columns``,
    ``set_schema`` or a replace): ``ALTER TABLE ... ADD COLUMNS`` when columns were only added,
    else (or when the key columns it records changed) the entry is altered in place
    (``_alter_entry``); under Spark Connect, which has no session catalog to ask, it is recreated
    (it is EXTERNAL: the data is not touched). Nothing for a table named by its path (it has no
    entry)."""
    if path_of(name) is not None:
        return
    db, table = qualify(spark, name)
    root = lookup(spark, f"{db}.{table}")
    if root is None:
        raise TableNotFound(f"{db}.{table} is not a tablet table")
    store = storage(spark).table(root)
    meta = store.snapshot().metadata
    want = [(n, t.lower()) for n, t, _ in meta.schema]
    entry = _entry_schema(spark, db, table)  # read once
    have = _entry_columns(spark, db, table, entry)
    now = [(n.lower(), t) for n, t, _ in have]
    if [(n.lower(), t) for n, t in want] == now and not keys_changed:
        return
    if [(n.lower(), t) for n, t in want[: len(have)]] == now and not keys_changed:
        added = ", ".join(f"{quote_ident(n)} {t}" for n, t in want[len(have) :])
        quiet_hive_alter(spark)
        spark.sql(f"ALTER TABLE {sql_name(db, table)} ADD COLUMNS ({added})")
        return
    if entry is not None:
        _alter_entry(spark, db, table, meta, entry, keys_changed)
        return
    # the comments Spark keeps on the entry (its own ``ALTER COLUMN ... COMMENT``) of the columns
    # kept with their type go into the new one
    types = {n.lower(): t for n, t in want}
    kept = {n.lower(): note for n, t, note in have if note and types.get(n.lower()) == t}
    spark.sql(f"DROP TABLE IF EXISTS {sql_name(db, table)}")
    _create_entry(spark, db, table, root, meta, comments=kept)


def _alter_entry(spark: SparkSession, db: str, table: str, meta: Metadata, entry: dict, keys_changed: bool) -> None:
    """The entry's columns set to the store's by one metastore update, so that no reader finds
    the table missing meanwhile and a process killed there leaves the entry whole (dropped and
    created again, it would leave neither). Spark's ``ALTER TABLE`` refuses to drop a column
    (``SessionCatalog.alterTableDataSchema``); its external catalog stores any data schema."""
    jvm = spark._jvm  # noqa: SLF001
    assert jvm is not None
    state = spark._jsparkSession.sessionState()  # noqa: SLF001
    kept = {f["name"]: f for f in entry["fields"]}  # the entry's schema (``_entry_schema``)
    fields = []
    for f in json.loads(StructType.fromDDL(spark_ddl(meta.schema)).json())["fields"]:
        old = kept.get(f["name"])
        if old is not None and old["type"] == f["type"]:  # a column kept: its comment too
            f = {**f, "metadata": old.get("metadata", {})}
        fields.append(f)
    struct = jvm.org.apache.spark.sql.types.DataType.fromJson(json.dumps({"type": "struct", "fields": fields}))
    quiet_hive_alter(spark)
    state.catalog().externalCatalog().alterTableDataSchema(db, table, struct)
    state.catalog().refreshTable(_ident(spark, db, table))
    if keys_changed:  # the entry's record of the key columns (for people reading its properties)
        if meta.key_columns:
            keys = sql_string(",".join(meta.key_columns))
            spark.sql(f"ALTER TABLE {sql_name(db, table)} SET TBLPROPERTIES ({sql_string(KEYS_PROPERTY)} = {keys})")
        else:
            spark.sql(f"ALTER TABLE {sql_name(db, table)} UNSET TBLPROPERTIES IF EXISTS ({sql_string(KEYS_PROPERTY)})")


def _entry_columns(spark: SparkSession, db: str, table: str, entry: dict | None) -> list[tuple[str, str, str | None]]:
    """(name, type, comment) of the catalog entry's columns: from ``entry``, the schema a classic
    session's catalog gave (``_entry_schema``; ``listColumns`` runs a query and makes py4j calls
    per column: ~7x the time), else (None: Spark Connect) by ``listColumns``. A type named
    otherwise only makes ``sync_schema`` set the columns again."""
    if entry is None:
        return [
            (c.name, (c.dataType or "").lower(), c.description) for c in spark.catalog.listColumns(sql_name(db, table))
        ]
    return [
        (f.name, type_text(f.dataType).lower(), f.metadata.get("comment")) for f in StructType.fromJson(entry).fields
    ]


def _ident(spark: SparkSession, db: str, table: str):  # a py4j proxy
    jvm = spark._jvm  # noqa: SLF001
    assert jvm is not None
    return jvm.org.apache.spark.sql.catalyst.TableIdentifier.apply(table, jvm.scala.Option.apply(db))


def _entry_schema(spark: SparkSession, db: str, table: str) -> dict | None:
    """The entry's schema as Spark's JSON, from a classic session's catalog; None over Spark
    Connect, which has no session catalog to ask here."""
    session_catalog = backend(spark).session_catalog(spark)
    if session_catalog is None:
        return None
    return json.loads(session_catalog.getTableMetadata(_ident(spark, db, table)).schema().json())
