"""Which tablet table a name or a path means (``lookup``, ``may_name_a_tablet_table``); tables by path, as Delta's ``delta.`/path` ``: ``tablets.`/data/t` `` names the tablet table at
that location, with no catalog entry (``path_of``, ``require``); ``path_views`` rewrites such names
in a query to temporary views read through the table's own provider (Spark refuses a Python
source in a direct query on files)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tablets.exceptions import TableNotFound, TabletsError
from tablets.spark.datasource import SOURCE_NAME
from tablets.spark.names import qualify, split_name
from tablets.spark.registry import (
    PROVIDER_PREFIX,
    RegistryEntry,
    has_log,
    load_registry,
    provider_name,
    register_entries,
    storage,
)
from tablets.storage.fileio import io_for, join, normalize
from tablets.storage.log import LOG_DIR, is_tablet_table, log_dir, version_name

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


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
    if io.list(log_dir(path)):
        return (
            f"{path} is a Delta table no tablets writer has adopted (its {LOG_DIR}/ has no tablets metadata): "
            f"adopt it with CREATE TABLE tablets.`{path}` USING tablets"
        )
    if io.list(join(path, "metadata")):
        return f"{path} looks like an Iceberg table (it has metadata/)"
    files = io.list(path)
    if any(f.name.endswith(".parquet") for f in files):
        return f"{path} is a directory of Parquet files, not a tablet table (no {LOG_DIR}/)"
    if files or (io.local and os.path.isdir(path) and os.listdir(path)):
        return f"{path} is a directory, but not a tablet table (no {LOG_DIR}/{version_name(0)})"
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
        help=f"Name the directory of a tablet table (the one holding _delta_log/ with a tablets version), or create one there: "
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
        return TableView(root, PATH_VIEW_PREFIX + provider_name(root)[len(PROVIDER_PREFIX) :])

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

    # here: the executors import this module (the sources' registry) without sqlglot
    from tablets.spark.read_frames import read_frame, reads_natively

    def view_of(node: Any) -> tuple[str, str | None] | None:
        got = pick(node)
        if got is None:
            return None
        frame = None
        if got.version is not None and reads_natively(spark):
            # an old version through Spark's Parquet scan, as the newest is read (the native
            # planner reads relations without options only): no Python worker reads it
            table = storage(spark).table(got.root)
            frame = read_frame(spark, table, table.snapshot(got.version))
        if frame is None:
            provider = provider_name(got.root)
            register_entries(spark, [RegistryEntry(f"tablets.`{got.root}`", got.root, provider)])
            reader = spark.read.format(provider)
            if got.version is not None:
                reader = reader.option("version", str(got.version))
            frame = reader.load()
        return global_view(spark, frame, got.view), got.alias

    return replace_tables(text, view_of)


def global_view(spark: SparkSession, frame: Any, name: str) -> str:
    """``frame`` as the global temporary view ``name``, by its qualified name. Global: a session's
    temporary views show in every listing of a schema (dbt's catalog then trips on them), and the
    statement may be analyzed after this call returns (Spark Connect analyzes when it runs)."""
    frame.createOrReplaceGlobalTempView(name)
    return f"{spark.conf.get('spark.sql.globalTempDatabase', 'global_temp')}.{name}"


def replace_tables(text: str, view_of: Any) -> str:
    """``text`` with each table reference (a sqlglot ``Table`` node, table functions included)
    for which ``view_of(node)`` made a view, as ``(view, alias)``, replaced by that view under the
    reference's alias, else ``alias``; ``text`` itself when there is none, or when sqlglot cannot
    parse it (Spark's own parser then reports it)."""
    import sqlglot  # here: the executors import this package without sqlglot (the worker extra)
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(text, read="spark")
    except sqlglot.errors.SqlglotError:
        return text
    if tree is None:
        return text
    changed = False
    for node in list(tree.find_all(exp.Table)):
        got = view_of(node)
        if got is None:
            continue
        view, alias = got
        replacement = exp.to_table(view)
        if node.alias:
            replacement.set("alias", node.args.get("alias"))
        elif alias:
            replacement.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))
        node.replace(replacement)
        changed = True
    return tree.sql(dialect="spark") if changed else text


# --- by name --------------------------------------------------------------------------------------


def lookup(spark: SparkSession, name: str) -> str | None:
    """The root of the tablet table named ``name`` in the catalog, else None. Cheap: a stat of
    the registry directory and a dict lookup (plus the current database for unqualified names)."""
    path = path_of(name)
    if path is not None:
        return path if has_log(spark, path) and is_tablet_table(io_for(path, storage(spark).options), path) else None
    try:
        parts = split_name(name)
    except TabletsError:
        return None
    if len(parts) > 3 or (len(parts) == 3 and parts[0].lower() != "spark_catalog"):
        return None
    db, table = qualify(spark, name)
    entry = load_registry(spark).by_name.get(f"{db}.{table}")
    if entry is None or not has_log(spark, entry.path):
        return None
    register_entries(spark, [entry])  # created by another process since this session started
    return entry.path


def may_name_a_tablet_table(spark: SparkSession, text: str) -> bool:
    """False when ``text`` cannot write a tablet table because it mentions neither the
    ``tablets`` provider nor the bare name of any registered tablet table (a cheap test that
    spares parsing seed batches and view DDL; a True only means "parse it")."""
    reg = load_registry(spark)
    # tables created by another process since this session started (a shared metastore): their
    # providers must be known before Spark resolves a plain SELECT of them
    register_entries(spark, list(reg.by_provider.values()))
    if reg.names is None:  # built once per registry state: a word match of any bare table name
        bare = sorted({n.rsplit(".", 1)[-1] for n in reg.by_name} | {SOURCE_NAME}, key=len, reverse=True)
        reg.names = re.compile(r"(?<![\w$])(?:" + "|".join(map(re.escape, bare)) + r")(?![\w$])", re.IGNORECASE)
    return reg.names.search(text) is not None
