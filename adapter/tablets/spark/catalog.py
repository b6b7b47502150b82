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

``register_sources(spark)`` (run by ``build_session`` / ``get_or_create_session``) registers the
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

import hashlib
import json
import os
import re
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from tablets.exceptions import SchemaMismatch, TableAlreadyExists, TableNotFound, TabletsError
from tablets.spark.backend import context_key
from tablets.spark.datasource import SOURCE_NAME, TabletsDataSource, spark_ddl
from tablets.spark.datasource import register as register_base
from tablets.sqltext import quote_ident, sql_string
from tablets.storage.fileio import FileIO, environment_options, io_for, join, normalize
from tablets.storage.log import LAST_CHECKPOINT, log_dir, version_name
from tablets.storage.table import TabletTable

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

REGISTRY_DIR = "_tablets_registry"
PROVIDER_PREFIX = f"{SOURCE_NAME}_"
PATH_PROPERTY = "tablets.path"
WAREHOUSE_CONF = "spark.tablets.warehouse"

_lock = threading.RLock()


# --- providers ------------------------------------------------------------------------------


def provider_name(root: str) -> str:
    """The per-table provider of the tablet table at ``root``."""
    digest = hashlib.sha1(normalize(root).encode("utf-8")).hexdigest()[:12]
    return f"{PROVIDER_PREFIX}{digest}"


_provider_roots: dict[str, str] = {}  # every provider this process made a source class of


def root_of_provider(spark: SparkSession, provider: str) -> str | None:
    """The root of the tablet table whose provider is ``provider``, else None: a provider names
    one root for good (a digest of it), so the sources this process made answer without I/O;
    the registry only for one it has not made."""
    root = _provider_roots.get(provider)
    if root is not None:
        return root
    entry = _load(spark).by_provider.get(provider)
    return entry.path if entry is not None else None


def table_source(root: str, storage_options: Mapping[str, str] | None = None) -> type[TabletsDataSource]:
    """The data source class of one tablet table (pickled by value into Spark's workers, with
    the store settings its reads need)."""
    root = normalize(root)
    provider = provider_name(root)
    _provider_roots[provider] = root
    return type(
        f"TabletsTable_{provider[len(PROVIDER_PREFIX):]}",
        (TabletsDataSource,),
        {
            "provider": provider,
            "table_root": root,
            "storage_options": dict(storage_options or {}),
            "__module__": __name__,
        },
    )


def is_tablets_provider(provider: str | None) -> bool:
    p = (provider or "").lower()
    return p == SOURCE_NAME or (p.startswith(PROVIDER_PREFIX) and len(p) == len(PROVIDER_PREFIX) + 12)


# --- the registry -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Entry:
    name: str  # qualified, lower case: db.t
    path: str
    provider: str
    external: bool | None = None  # made with LOCATION: DROP keeps the files (None: entries of before)


@dataclass
class _Registry:
    directory: str
    listing: tuple[tuple[str, int, float], ...]
    by_name: dict[str, _Entry]
    by_provider: dict[str, _Entry]
    names: re.Pattern[str] | None = None  # see may_name_a_tablet_table


@dataclass(frozen=True)
class Storage:
    """Where a session's tablet tables live, and the store settings to reach them."""

    warehouse: str
    options: Mapping[str, str] = field(default_factory=dict)

    @property
    def io(self) -> FileIO:
        return io_for(self.warehouse, self.options)

    def table(self, root: str) -> TabletTable:
        return TabletTable(root, self.options)


_registries: dict[str, _Registry] = {}
_storage: weakref.WeakKeyDictionary[Any, Storage] = weakref.WeakKeyDictionary()
_registered: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()


def configure(spark: SparkSession, warehouse: str | None = None, storage_options: Mapping[str, str] | None = None) -> Storage:
    """Set where ``spark``'s tablet tables live (default: ``spark.tablets.warehouse``, else
    ``spark.sql.warehouse.dir``) and the storage options (credentials, endpoint) to reach them."""
    with _lock:
        current = _storage.get(spark)
        wh = normalize(warehouse) if warehouse else (current.warehouse if current else _conf_warehouse(spark))
        options = dict(storage_options) if storage_options is not None else dict(current.options if current else {})
        st = Storage(wh, options)
        _storage[spark] = st
        return st


def _conf_warehouse(spark: SparkSession) -> str:
    return normalize(spark.conf.get(WAREHOUSE_CONF, None) or spark.conf.get("spark.sql.warehouse.dir") or "spark-warehouse")


def storage(spark: SparkSession) -> Storage:
    with _lock:
        st = _storage.get(spark)
    return st if st is not None else configure(spark)


def warehouse_dir(spark: SparkSession) -> str:
    """The session's tablets warehouse: a local path or an object store URI."""
    return storage(spark).warehouse


def registry_dir(spark: SparkSession) -> str:
    return join(warehouse_dir(spark), REGISTRY_DIR)


def _load(spark: SparkSession) -> _Registry:
    st = storage(spark)
    directory = join(st.warehouse, REGISTRY_DIR)
    files = [f for f in st.io.list(directory) if f.name.endswith(".json") and not f.name.startswith(".")]
    listing = tuple((f.name, f.size, f.mtime_ms) for f in files)
    with _lock:
        cached = _registries.get(directory)
        if cached is not None and cached.listing == listing:
            return cached
    by_name: dict[str, _Entry] = {}
    by_provider: dict[str, _Entry] = {}
    for f in files:
        try:
            obj = json.loads(st.io.read(f.path))
            entry = _Entry(obj["name"].lower(), obj["path"], obj.get("provider") or f.name[:-5], obj.get("external"))
        except (OSError, ValueError, KeyError, AttributeError):
            continue  # a file being replaced, or not ours
        by_name[entry.name] = entry
        by_provider[entry.provider] = entry
    reg = _Registry(directory, listing, by_name, by_provider)
    with _lock:
        _registries[directory] = reg
    return reg


def _invalidate(directory: str) -> None:
    with _lock:
        _registries.pop(directory, None)


def _write_entry(spark: SparkSession, entry: _Entry) -> None:
    directory = registry_dir(spark)
    body = {"name": entry.name, "path": entry.path, "provider": entry.provider}
    if entry.external is not None:
        body["external"] = entry.external
    data = json.dumps(body).encode()
    storage(spark).io.write(join(directory, f"{entry.provider}.json"), data, sync=True)
    _invalidate(directory)


def _remove_entry(spark: SparkSession, provider: str) -> None:
    directory = registry_dir(spark)
    storage(spark).io.delete(join(directory, f"{provider}.json"))
    _invalidate(directory)


def _has_log(spark: SparkSession, root: str) -> bool:
    """Cheap: one existence check of version 0 (or, where the versions before a checkpoint
    are gone, of the checkpoint hint)."""
    io = io_for(root, storage(spark).options)
    return io.exists(join(log_dir(root), version_name(0))) or io.exists(join(log_dir(root), LAST_CHECKPOINT))


def _registry_of(spark: SparkSession) -> set[str]:
    """The providers registered where Spark keeps them: per SparkContext (every session of a
    context sees them: registering one again fails), per session over Spark Connect."""
    return _registered.setdefault(context_key(spark), set())


def _register(spark: SparkSession, entries: Sequence[_Entry]) -> None:
    with _lock:
        done = _registry_of(spark)
        for e in entries:
            if e.provider not in done:
                # the environment's store settings too: Spark's Python workers may lack them
                options = {**environment_options(e.path), **storage(spark).options}
                spark.dataSource.register(table_source(e.path, options))
                done.add(e.provider)


def register_sources(spark: SparkSession) -> None:
    """Register ``tablets`` and the provider of every registered tablet table in ``spark``."""
    with _lock:
        done = _registry_of(spark)
        if SOURCE_NAME not in done:
            register_base(spark)
            done.add(SOURCE_NAME)
    _register(spark, list(_load(spark).by_provider.values()))
    from tablets.spark import native

    native.register(spark, table_of_provider)


def table_of_provider(spark: SparkSession, provider: str) -> TabletTable | None:
    """The tablet table the provider ``provider`` reads, None if it is no registered table's."""
    root = root_of_provider(spark, provider)
    return None if root is None else storage(spark).table(root)


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
        raise TabletsError(f"invalid table name {name!r}", help="Use `table`, `database.table` or `spark_catalog.database.table`.")
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
    raise TabletsError(f"table name {name!r} is not in the session catalog", help="Tablet tables live in spark_catalog: use `database.table`.")


def _sql_name(db: str, table: str) -> str:
    return f"{quote_ident(db)}.{quote_ident(table)}"


def _exists(spark: SparkSession, db: str, table: str) -> bool:
    try:
        return bool(spark.catalog.tableExists(_sql_name(db, table)))
    except Exception as e:  # noqa: BLE001 - py4j and Spark errors alike
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
    entry = _load(spark).by_provider.get(m.group(1))
    if entry is not None:  # created by another process just now (a shared metastore)
        _register(spark, [entry])
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


def _quiet_hive_alter(spark: SparkSession) -> None:
    """``ALTER TABLE`` of a data source table makes Hive log "ERROR HiveAlterHandler: Failed
    to alter table" before Spark falls back to storing the schema its own way (it works)."""
    try:
        jvm = spark.sparkContext._jvm
        if jvm is None:
            return
        level = jvm.org.apache.logging.log4j.Level.OFF
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel("org.apache.hadoop.hive.metastore.HiveAlterHandler", level)
    except Exception:  # noqa: BLE001 - cosmetic only (and no JVM under Spark Connect)
        pass


# --- tables by path ------------------------------------------------------------------------------

_PATH_NAME = re.compile(r"^\s*tablets\s*\.\s*(?:`(?P<quoted>(?:[^`]|``)*)`|(?P<bare>\S.*?))\s*$", re.IGNORECASE)
_PATHLIKE = re.compile(r"^(?:/|[A-Za-z][A-Za-z0-9+.-]*:)")
_PATH_REF = re.compile(r"(?<![\w$`])tablets\s*\.\s*`", re.IGNORECASE)
PATH_VIEW_PREFIX = "tablets_path_"


def path_of(name: str) -> str | None:
    """The location named by ``tablets.`<path>` `` (or ``tablets.<path>`` as the SQL parser
    gives it back), normalized; None for any other name. Only absolute paths and URIs count, so
    a database called ``tablets`` keeps its tables."""
    m = _PATH_NAME.match(name)
    if m is None:
        return None
    raw = m.group("quoted").replace("``", "`") if m.group("quoted") is not None else m.group("bare")
    return normalize(raw) if raw and _PATHLIKE.match(raw) else None


def describe_path(spark: SparkSession, path: str) -> str:
    """What is at ``path``, for an error saying why it is not a tablet table."""
    io = io_for(path, storage(spark).options)
    if io.local and os.path.isfile(path):
        return f"{path} is a file, not a table directory"
    if io.list(join(path, "_delta_log")):
        return f"{path} is a Delta table (it has _delta_log/)"
    if io.list(join(path, "metadata")):
        return f"{path} looks like an Iceberg table (it has metadata/)"
    if io.list(log_dir(path)):
        return f"{path} has a tablets log (_log/) without its first version"
    files = io.list(path)
    if any(f.name.endswith(".parquet") for f in files):
        return f"{path} is a directory of Parquet files, not a tablet table (no _log/)"
    if files or (io.local and os.path.isdir(path) and os.listdir(path)):
        return f"{path} is a directory, but not a tablet table (no _log/{version_name(0)})"
    return f"nothing is at {path}"


def require(spark: SparkSession, name: str) -> str:
    """The root of the tablet table ``name`` (a catalog name or ``tablets.`<path>` ``), else a
    ``TableNotFound`` that says what is there instead and what to do."""
    root = lookup(spark, name)
    if root is not None:
        return root
    path = path_of(name)
    if path is None:
        raise TableNotFound(f"{name} is not a tablet table", help="Create it with CREATE TABLE ... USING tablets.")
    raise TableNotFound(
        f"tablets.`{path}` is not a tablet table: {describe_path(spark, path)}",
        help=f"Name the directory of a tablet table (the one holding _log/), or create one there: "
        f"CREATE TABLE tablets.`{path}` (id BIGINT, ...) USING tablets. To read other formats, use "
        "their own reader (spark.read.parquet(...), delta.`...`).",
    )


def path_views(spark: SparkSession, text: str) -> str:
    """``text`` with every ``tablets.`<path>` `` table of a query replaced by a temporary view of
    that tablet table (made now, so it reads the newest version); ``text`` itself when it names
    none. Spark refuses Python sources in its own ``provider.`path` `` syntax."""
    if not _PATH_REF.search(text):
        return text

    def at_path(node: Any) -> TableView | None:
        if node.args.get("catalog") is not None or node.args.get("db") is None:
            return None
        path = path_of(f"tablets.`{node.name}`") if node.args["db"].name.lower() == SOURCE_NAME else None
        if path is None:
            return None
        root = require(spark, f"tablets.`{path}`")
        return TableView(root, PATH_VIEW_PREFIX + provider_name(root)[len(PROVIDER_PREFIX):])

    return table_views(spark, text, at_path)


@dataclass(frozen=True)
class TableView:
    """A tablet table (at ``version``, else the newest) as the temporary view ``view``."""

    root: str
    view: str
    version: int | None = None
    alias: str | None = None  # the name the query's columns use, when the reference had no alias


def table_views(spark: SparkSession, text: str, pick: Any) -> str:
    """``text`` with every table reference that ``pick(sqlglot Table node)`` maps to a
    ``TableView`` replaced by that view (registered and created now); ``text`` itself when none
    is. The one rewrite behind tables named by path and time travel."""
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(text, read="spark")
    except sqlglot.errors.SqlglotError:
        return text  # Spark's own parser reports it
    if tree is None:
        return text
    changed = False
    for node in list(tree.find_all(exp.Table)):
        got = pick(node)
        if got is None:
            continue
        provider = provider_name(got.root)
        _register(spark, [_Entry(f"tablets.`{got.root}`", got.root, provider)])
        reader = spark.read.format(provider)
        if got.version is not None:
            reader = reader.option("version", str(got.version))
        reader.load().createOrReplaceTempView(got.view)
        replacement = exp.to_table(got.view)
        if node.alias:
            replacement.set("alias", node.args.get("alias"))
        elif got.alias:
            replacement.set("alias", exp.TableAlias(this=exp.to_identifier(got.alias)))
        node.replace(replacement)
        changed = True
    return tree.sql(dialect="spark") if changed else text


# --- public API ---------------------------------------------------------------------------------


def lookup(spark: SparkSession, name: str) -> str | None:
    """The root of the tablet table named ``name`` in the catalog, else None. Cheap: a stat of
    the registry directory and a dict lookup (plus the current database for unqualified names)."""
    path = path_of(name)
    if path is not None:
        return path if _has_log(spark, path) else None
    try:
        parts = split_name(name)
    except TabletsError:
        return None
    if len(parts) > 3 or (len(parts) == 3 and parts[0].lower() != "spark_catalog"):
        return None
    db, table = qualify(spark, name)
    entry = _load(spark).by_name.get(f"{db}.{table}")
    if entry is None or not _has_log(spark, entry.path):
        return None
    _register(spark, [entry])  # created by another process since this session started
    return entry.path


def may_name_a_tablet_table(spark: SparkSession, text: str) -> bool:
    """False when ``text`` cannot write a tablet table because it mentions neither the
    ``tablets`` provider nor the bare name of any registered tablet table (a cheap test that
    spares parsing seed batches and view DDL; a True only means "parse it")."""
    reg = _load(spark)
    # tables created by another process since this session started (a shared metastore): their
    # providers must be known before Spark resolves a plain SELECT of them
    _register(spark, list(reg.by_provider.values()))
    if reg.names is None:  # built once per registry state: a word match of any bare table name
        bare = sorted({n.rsplit(".", 1)[-1] for n in reg.by_name} | {SOURCE_NAME}, key=len, reverse=True)
        reg.names = re.compile(r"(?<![\w$])(?:" + "|".join(map(re.escape, bare)) + r")(?![\w$])", re.IGNORECASE)
    return reg.names.search(text) is not None


def list_tables(spark: SparkSession, database: str | None = None) -> list[tuple[str, str]]:
    """(qualified name, root) of the registered tablet tables, of ``database`` if given."""
    reg = _load(spark)
    db = database.lower() if database else None
    out = [
        (e.name, e.path)
        for e in reg.by_name.values()
        if (db is None or e.name.split(".", 1)[0] == db) and _has_log(spark, e.path)
    ]
    return sorted(out)


def store_schema(spark: SparkSession, schema: pa.Schema | StructType | str) -> pa.Schema | list[tuple[str, str, bool]]:
    if isinstance(schema, pa.Schema):
        return schema
    from pyspark.sql.types import StructType

    if isinstance(schema, str):
        struct = StructType.fromDDL(schema) if hasattr(StructType, "fromDDL") else spark.createDataFrame([], schema).schema
    else:
        struct = schema
    if not isinstance(struct, StructType):
        raise SchemaMismatch(f"not a table schema: {schema!r}", help="Give columns as Spark DDL (`a BIGINT, b STRING`) or a pyarrow schema.")
    return [(f.name, f.dataType.simpleString(), True) for f in struct.fields]


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


def _create_entry(spark: SparkSession, db: str, table: str, root: str, store: TabletTable) -> None:
    meta = store.snapshot().metadata
    props = {PATH_PROPERTY: root}
    if meta.key_columns:
        props["tablets.key_columns"] = ",".join(meta.key_columns)
    tblprops = ", ".join(f"{sql_string(k)} = {sql_string(v)}" for k, v in props.items())
    spark.sql(
        f"CREATE TABLE {_sql_name(db, table)} ({spark_ddl(meta.schema)}) USING {provider_name(root)} "
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
) -> TabletTable:
    """Create the tablet table ``name``: the store at ``location`` (default: where Spark puts a
    managed table, ``<warehouse>/<db>.db/<table>``), the catalog entry and the registry file.

    ``replace`` drops an existing table of that name (data included) first. An existing tablet
    table at an explicit ``location`` is adopted (like ``CREATE TABLE ... LOCATION`` of an
    existing Delta table); ``schema`` may then be None. ``tablets.`<path>` `` creates the table
    at that path only, with no catalog entry."""
    path = path_of(name)
    if path is not None:
        return _create_at_path(spark, path, schema, key_columns, properties, replace=replace, if_not_exists=if_not_exists)
    db, table = qualify(spark, name)
    qualified = f"{db}.{table}"
    if not spark.catalog.databaseExists(db):
        raise TableNotFound(f"database {db} does not exist (creating {qualified})", help=f"Create it first: CREATE DATABASE {db}.")
    known = _load(spark).by_name.get(qualified)
    in_catalog = _exists(spark, db, table)
    if in_catalog or known is not None:
        if if_not_exists and in_catalog:
            if known is None or not _has_log(spark, known.path):
                raise TableAlreadyExists(f"{qualified} exists and is not a tablet table", help="Pick another name, or drop it first.")
            return storage(spark).table(known.path)
        if replace or not in_catalog:  # not in the catalog: a stale registry entry
            drop_table(spark, qualified, if_exists=True, keep_data=not replace and not in_catalog)
        else:
            raise TableAlreadyExists(f"table {qualified} already exists", help="Use CREATE OR REPLACE, or drop it first.")
    root = normalize(location) if location else default_location(spark, db, table)
    store = storage(spark).table(root)
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
            raise SchemaMismatch(f"no columns given for the new table {qualified}", help="Give the columns (Spark DDL or a pyarrow schema).")
        store = TabletTable.create(
            root, store_schema(spark, schema), key_columns=key_columns, properties=properties,
            storage_options=storage(spark).options,
        )
        created = True
    provider = provider_name(root)
    other = _load(spark).by_provider.get(provider)
    if other is not None and other.name != qualified and _exists(spark, *other.name.split(".", 1)):
        raise TableAlreadyExists(f"the tablet table at {root} is already the catalog table {other.name}", help="Use that name, or another LOCATION.")
    entry = _Entry(qualified, root, provider, external=location is not None)
    _write_entry(spark, entry)  # first: a catalog entry without its provider would be unreadable
    try:
        _register(spark, [entry])
        _create_entry(spark, db, table, root, store)
    except Exception:
        _remove_entry(spark, provider)
        if created:
            store.drop()
        raise
    return store


def replaceable(spark: SparkSession, name: str, location: str | None = None) -> TabletTable | None:
    """The tablet table that ``CREATE OR REPLACE TABLE name [LOCATION location]`` replaces in
    one commit of its own log (``storage.table.replacement``), as Delta does: ``name`` when it is
    a tablet table in the catalog (or at that path) and ``location``, if given, is where it is.
    None otherwise: the old table is dropped and a new one made (``create_table``)."""
    if path_of(name) is None:
        db, table = qualify(spark, name)
        if not _exists(spark, db, table):
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
) -> TabletTable:
    store = storage(spark).table(path)
    if store.exists():
        if if_not_exists:
            return store
        if not replace:
            raise TableAlreadyExists(f"a tablet table exists at {path}", help="Use CREATE OR REPLACE TABLE, or another path.")
        store.drop()
    elif describe_path(spark, path) != f"nothing is at {path}":
        raise TableAlreadyExists(
            f"cannot create a tablet table at {path}: {describe_path(spark, path)}",
            help="Choose an empty or new directory.",
        )
    if schema is None:
        raise SchemaMismatch(f"no columns given for the new table at {path}", help="Give the columns (Spark DDL or a pyarrow schema).")
    return TabletTable.create(
        path, store_schema(spark, schema), key_columns=key_columns, properties=properties,
        storage_options=storage(spark).options,
    )


# providers Spark writes as plain files: no MERGE, UPDATE, DELETE, OPTIMIZE, VACUUM or history
FILE_FORMATS = {"parquet", "orc", "csv", "json", "text", "avro", "hive", "textfile", "sequencefile", "rcfile"}


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
    entry = _load(spark).by_name.get(f"{db}.{table}")
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
    entry = _load(spark).by_name.get(qualified)
    in_catalog = _exists(spark, db, table)
    if entry is None and not in_catalog:
        if if_exists:
            return f"no table {qualified}: nothing dropped"
        raise TableNotFound(f"table {qualified} does not exist")
    external = entry is not None and is_external(spark, qualified)
    if in_catalog:
        spark.sql(f"DROP TABLE IF EXISTS {_sql_name(db, table)}")
    if entry is None:
        return f"dropped the catalog entry of {qualified}"
    if not keep_data and not external:
        storage(spark).table(entry.path).drop()
    _remove_entry(spark, entry.provider)
    if keep_data or external:
        why = " (an EXTERNAL table: its data is not the catalog's to delete)" if external else ""
        return f"dropped the catalog entry of {qualified}; kept its files at {entry.path}{why}"
    return f"dropped {qualified} and deleted its files at {entry.path}"


def rename_table(spark: SparkSession, old: str, new: str) -> None:
    """Rename the catalog entry; the data stays where it is (the entry is EXTERNAL)."""
    db, table = qualify(spark, old)
    ndb, ntable = qualify(spark, new)
    entry = _load(spark).by_name.get(f"{db}.{table}")
    if entry is None:
        raise TableNotFound(f"{db}.{table} is not a tablet table")
    if _exists(spark, ndb, ntable) or f"{ndb}.{ntable}" in _load(spark).by_name:
        raise TableAlreadyExists(f"table {ndb}.{ntable} already exists", help="Drop it first, or pick another name.")
    spark.sql(f"ALTER TABLE {_sql_name(db, table)} RENAME TO {_sql_name(ndb, ntable)}")
    _write_entry(spark, _Entry(f"{ndb}.{ntable}", entry.path, entry.provider))


def sync_schema(spark: SparkSession, name: str, *, keys_changed: bool = False) -> None:
    """Make the catalog entry's columns the store's columns (after ``add_columns``,
    ``set_schema`` or a replace): ``ALTER TABLE ... ADD COLUMNS`` when columns were only added,
    else (or when the key columns it records changed) the entry is recreated (it is EXTERNAL:
    the data is not touched). Nothing for a table named by its path (it has no entry)."""
    if path_of(name) is not None:
        return
    db, table = qualify(spark, name)
    root = lookup(spark, f"{db}.{table}")
    if root is None:
        raise TableNotFound(f"{db}.{table} is not a tablet table")
    store = storage(spark).table(root)
    want = [(n, t.lower()) for n, t, _ in store.snapshot().metadata.schema]
    have = [(c.name, (c.dataType or "").lower()) for c in spark.catalog.listColumns(_sql_name(db, table))]
    if [(n.lower(), t) for n, t in want] == [(n.lower(), t) for n, t in have] and not keys_changed:
        return
    head = [(n.lower(), t) for n, t in want[: len(have)]]
    if head == [(n.lower(), t) for n, t in have] and not keys_changed:
        added = ", ".join(f"{quote_ident(n)} {t}" for n, t in want[len(have):])
        _quiet_hive_alter(spark)
        spark.sql(f"ALTER TABLE {_sql_name(db, table)} ADD COLUMNS ({added})")
        return
    spark.sql(f"DROP TABLE IF EXISTS {_sql_name(db, table)}")
    _create_entry(spark, db, table, root, store)
