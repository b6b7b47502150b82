"""``CREATE [OR REPLACE] TABLE [IF NOT EXISTS] c SHALLOW CLONE t [VERSION AS OF n | TIMESTAMP AS
OF ts] [LOCATION '...'] [TBLPROPERTIES (...)]`` of a tablet table (Delta's statement): a new
tablet table whose first version references ``t``'s files (``tablets.storage.clone``), made at
``c``'s default location (a managed table: DROP deletes it) or at LOCATION (external), and
entered in the catalog. Returns Delta's CLONE metrics as a one-row DataFrame.

``DEEP CLONE`` of a tablet table is refused (it would copy every file): CREATE TABLE ... USING
tablets AS SELECT copies the rows. A clone of another kind of table (Delta's) is Spark's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tablets.asof import resolve_version
from tablets.context import Door
from tablets.exceptions import TableAlreadyExists, TableNotFound, TabletsError
from tablets.spark import catalog
from tablets.spec.clone import CloneSpec
from tablets.spec.statement import Statement
from tablets.sql.clone import parse_clone
from tablets.storage.clone import shallow_clone
from tablets.storage.fileio import normalize

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from tablets.storage.snapshot import Snapshot

RESULT_DDL = (
    "source_table_size BIGINT, source_num_of_files BIGINT, num_removed_files BIGINT, num_copied_files BIGINT, "
    "removed_files_size BIGINT, copied_files_size BIGINT"
)


def run(door: Door, stmt: Statement) -> DataFrame | None:
    """The result of a CLONE of a tablet table; None when its source is another format's
    table (Delta's: Spark's then)."""
    spark = door.spark
    spec = parse_clone(stmt.text)
    what = f"CREATE TABLE {spec.target} {'SHALLOW' if spec.shallow else 'DEEP'} CLONE {spec.source}"
    root = catalog.lookup(spark, spec.source)
    if root is None:
        if catalog.path_of(spec.source) is None:
            _refuse_source(spark, spec.source, what)
            return None  # another format's clone (Delta): Spark's
        root = catalog.require(spark, spec.source)
    if not spec.shallow:
        raise TabletsError(
            f"{what}: DEEP CLONE of a tablet table is not supported (it would copy every file)",
            help=f"Use SHALLOW CLONE (no file copied), or copy the rows: CREATE TABLE {spec.target} USING tablets AS "
            f"SELECT * FROM {spec.source}.",
        )
    return clone(spark, spec, root, what)


def _refuse_source(spark: SparkSession, name: str, what: str) -> None:
    """A clone's source that Spark cannot clone either (nothing, a view, a plain file-format
    table), said by name; Spark's parser would answer with a syntax error at SHALLOW."""
    kind = catalog.kind_of(spark, name)
    if kind is None:
        raise TableNotFound(
            f"{what}: there is no table named {name}",
            help="Check the name (SHOW TABLES IN <database>); CLONE copies a tablet table.",
        )
    if kind == "view" or kind in catalog.FILE_FORMATS:
        shown = "a view" if kind == "view" else f"a {kind} table"
        raise TabletsError(
            f"{what}: {name} is {shown}, and CLONE copies a tablet table",
            help=f"Copy its rows instead: CREATE TABLE <new> USING tablets AS SELECT * FROM {name}.",
        )


def _existing(spark: SparkSession, name: str) -> str | None:
    """What ``name`` is now: "tablets" (a tablet table), "view", "table", or None."""
    kind = catalog.kind_of(spark, name)
    return kind if kind in (None, "tablets", "view") else "table"


def clone(spark: SparkSession, spec: CloneSpec, source_root: str, what: str) -> DataFrame:
    source = catalog.storage(spark).table(source_root)
    version = resolve_version(spark, source, spec.as_of, what) if spec.as_of is not None else None
    snap = source.snapshot(version)
    by_path = catalog.path_of(spec.target)
    have = None if by_path is not None else _existing(spark, spec.target)
    if by_path is not None and catalog.storage(spark).table(by_path).exists():
        have = "tablets"
    removed = 0
    if have is not None:
        if spec.if_not_exists:
            return spark.createDataFrame([(0, 0, 0, 0, 0, 0)], RESULT_DDL)
        if not spec.replace:
            raise TableAlreadyExists(
                f"{what}: {spec.target} already exists",
                help="Use CREATE OR REPLACE TABLE ... SHALLOW CLONE, or drop it first.",
            )
        if have == "tablets":  # one new version of that table: its history stays (as Delta's)
            root = normalize(by_path) if by_path is not None else catalog.require(spark, spec.target)
            if spec.location is None or normalize(spec.location) == root:
                target = catalog.storage(spark).table(root)
                removed = len(target.snapshot().tablets)
                shallow_clone(
                    source, root, snap.version, properties=dict(spec.properties), replace_table=True, statement=what
                )
                if by_path is None:
                    catalog.sync_schema(spark, spec.target, keys_changed=True)
                return _result(spark, snap, removed)
            catalog.drop_table(spark, spec.target)
        else:
            spark.sql(f"DROP {'VIEW' if have == 'view' else 'TABLE'} IF EXISTS {spec.target}")
    if by_path is not None:
        target_root = normalize(by_path)
    elif spec.location is not None:
        target_root = normalize(spec.location)
    else:
        db, table = catalog.qualify(spark, spec.target)
        target_root = catalog.default_location(spark, db, table)
    store = catalog.storage(spark).table(target_root)
    if store.exists():
        raise TableAlreadyExists(
            f"{what}: the files of a tablet table are at {target_root}",
            help="Drop that table first, or clone to another LOCATION.",
        )
    shallow_clone(source, target_root, snap.version, properties=dict(spec.properties), statement=what)
    if by_path is None:
        try:
            catalog.create_table(spark, spec.target, None, location=target_root, managed=spec.location is None)
        except Exception:
            store.drop()  # no catalog entry: the clone would be unreachable
            raise
    return _result(spark, snap, removed)


def _result(spark: SparkSession, snap: Snapshot, removed: int) -> DataFrame:
    size = sum(st.add.bytes for st in snap.tablets.values())
    return spark.createDataFrame([(size, len(snap.tablets), removed, 0, 0, 0)], RESULT_DDL)
