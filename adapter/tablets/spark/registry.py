"""The providers of tablet tables and their registry in the warehouse: one provider per table
(``provider_name``: a subclass of the ``tablets`` source that knows the table's root), one file
per table under ``<warehouse>/_tablets_registry/``, registered in a session before Spark resolves
its tables (``register_sources``); where a session's tables live and the store settings that
reach them (``configure``, ``storage``). See ``tablets.spark.catalog`` for why."""

from __future__ import annotations

import hashlib
import json
import re
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tablets.exceptions import WarehouseCopied
from tablets.spark import native
from tablets.spark.backend import backend
from tablets.spark.datasource import SOURCE_NAME, TabletsDataSource
from tablets.spark.datasource import register as register_base
from tablets.storage.fileio import FileIO, environment_options, io_for, join, normalize
from tablets.storage.log import LAST_CHECKPOINT, log_dir, version_name
from tablets.storage.table import TabletTable

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

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
    entry = load_registry(spark).by_provider.get(provider)
    return entry.path if entry is not None else None


def table_source(root: str, storage_options: Mapping[str, str] | None = None) -> type[TabletsDataSource]:
    """The data source class of one tablet table (pickled by value into Spark's workers, with
    the store settings its reads need)."""
    root = normalize(root)
    provider = provider_name(root)
    _provider_roots[provider] = root
    return type(
        f"TabletsTable_{provider[len(PROVIDER_PREFIX) :]}",
        (TabletsDataSource,),
        {
            "provider": provider,
            "table_root": root,
            "storage_options": dict(storage_options or {}),
            "__module__": __name__,
        },
    )


# --- the registry -----------------------------------------------------------------------------


@dataclass(frozen=True)
class RegistryEntry:
    name: str  # qualified, lower case: db.t
    path: str
    provider: str
    external: bool | None = None  # made with LOCATION: DROP keeps the files (None: entries of before)


@dataclass
class _Registry:
    directory: str
    listing: tuple[tuple[str, int, float], ...]
    by_name: dict[str, RegistryEntry]
    by_provider: dict[str, RegistryEntry]
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


def configure(
    spark: SparkSession, warehouse: str | None = None, storage_options: Mapping[str, str] | None = None
) -> Storage:
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
    return normalize(
        spark.conf.get(WAREHOUSE_CONF, None) or spark.conf.get("spark.sql.warehouse.dir") or "spark-warehouse"
    )


def storage(spark: SparkSession) -> Storage:
    with _lock:
        st = _storage.get(spark)
    return st if st is not None else configure(spark)


def warehouse_dir(spark: SparkSession) -> str:
    """The session's tablets warehouse: a local path or an object store URI."""
    return storage(spark).warehouse


def registry_dir(spark: SparkSession) -> str:
    return join(warehouse_dir(spark), REGISTRY_DIR)


WAREHOUSE_MARKER = "_warehouse.json"  # {"root": <the warehouse's own root>}: what a copy is told by


def check_warehouse(io: FileIO, warehouse: str, entries: Sequence[RegistryEntry]) -> None:
    """Refuse a warehouse whose registry was written for another root (a ``cp -r`` of a dbt
    project's ``target/``, a moved directory): its entries and Spark's metastore name the
    original's tables as managed, and a DROP or INSERT here would change them. A registry
    without its marker is given one naming this root, unless its managed entries name tables
    of another warehouse (a copy made before markers were written)."""
    path = join(warehouse, REGISTRY_DIR, WAREHOUSE_MARKER)
    try:
        marked = json.loads(io.read(path)).get("root")
    except FileNotFoundError:
        marked = _copied_from(warehouse, entries)
        if marked is None:
            if entries:
                io.write(path, json.dumps({"root": warehouse}).encode(), sync=True)
            return
    except (ValueError, AttributeError):
        marked = None
    if marked != warehouse:
        raise WarehouseCopied(
            f"the warehouse at {warehouse} is a copy of (or was moved from) {marked}: its registry and "
            f"metastore name the tables at {marked}, so tablets uses neither here (nothing done in a copy may "
            "write to or delete the original's files)",
            help=f"To start afresh here, delete {warehouse} (dbt builds it again: dbt build). To keep using the "
            f"original, point the profile (or spark.tablets.warehouse) back at {marked}.",
        )


def _copied_from(warehouse: str, entries: Sequence[RegistryEntry]) -> str | None:
    """The other warehouse whose managed layout (``<warehouse>/[<db>.db/]<table>``) an entry
    outside this one has, else None. Entries made with LOCATION, and those of a database with a
    location of its own, live anywhere."""
    for e in entries:
        if e.external or e.path.startswith(warehouse.rstrip("/") + "/"):
            continue
        db, _, table = e.name.rpartition(".")
        tail = table if db in ("", "default") else f"{db}.db/{table}"
        if e.path.endswith("/" + tail):
            return e.path[: -len(tail) - 1]
    return None


def load_registry(spark: SparkSession) -> _Registry:
    st = storage(spark)
    directory = join(st.warehouse, REGISTRY_DIR)
    files = [
        f
        for f in st.io.list(directory)
        if f.name.endswith(".json") and not f.name.startswith(".") and f.name != WAREHOUSE_MARKER
    ]
    listing = tuple((f.name, f.size, f.mtime_ms) for f in files)
    with _lock:
        cached = _registries.get(directory)
        if cached is not None and cached.listing == listing:
            return cached
    by_name: dict[str, RegistryEntry] = {}
    by_provider: dict[str, RegistryEntry] = {}
    for f in files:
        try:
            obj = json.loads(st.io.read(f.path))
            entry = RegistryEntry(
                obj["name"].lower(), obj["path"], obj.get("provider") or f.name[:-5], obj.get("external")
            )
        except (OSError, ValueError, KeyError, AttributeError):
            continue  # a file being replaced, or not ours
        by_name[entry.name] = entry
        by_provider[entry.provider] = entry
    check_warehouse(st.io, st.warehouse, list(by_name.values()))
    reg = _Registry(directory, listing, by_name, by_provider)
    with _lock:
        _registries[directory] = reg
    return reg


def _invalidate(directory: str) -> None:
    with _lock:
        _registries.pop(directory, None)


def write_entry(spark: SparkSession, entry: RegistryEntry) -> None:
    directory = registry_dir(spark)
    check_warehouse(storage(spark).io, warehouse_dir(spark), [entry])  # (the marker, with the first entry)
    body: dict[str, object] = {"name": entry.name, "path": entry.path, "provider": entry.provider}
    if entry.external is not None:
        body["external"] = entry.external
    data = json.dumps(body).encode()
    storage(spark).io.write(join(directory, f"{entry.provider}.json"), data, sync=True)
    _invalidate(directory)


def remove_entry(spark: SparkSession, provider: str) -> None:
    directory = registry_dir(spark)
    storage(spark).io.delete(join(directory, f"{provider}.json"))
    _invalidate(directory)


def has_log(spark: SparkSession, root: str) -> bool:
    """Cheap: one existence check of version 0 (or, where the versions before a checkpoint
    are gone, of the checkpoint hint)."""
    io = io_for(root, storage(spark).options)
    return (
        io.exists(join(log_dir(root), version_name(0)))
        or io.exists(join(log_dir(root), LAST_CHECKPOINT))
        or io.exists(join(root, "_log", version_name(0)))  # a table of format version 1, not yet moved
    )


def _registry_of(spark: SparkSession) -> set[str]:
    """The providers registered where Spark keeps them: per SparkContext (every session of a
    context sees them: registering one again fails), per session over Spark Connect."""
    return _registered.setdefault(backend(spark).context_key(spark), set())


def register_entries(spark: SparkSession, entries: Sequence[RegistryEntry]) -> None:
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
    register_entries(spark, list(load_registry(spark).by_provider.values()))

    native.register(spark, table_of_provider)


def table_of_provider(spark: SparkSession, provider: str) -> TabletTable | None:
    """The tablet table the provider ``provider`` reads, None if it is no registered table's."""
    root = root_of_provider(spark, provider)
    return None if root is None else storage(spark).table(root)
