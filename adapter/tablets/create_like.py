"""``CREATE TABLE t LIKE s [USING tablets] [TBLPROPERTIES (...)] [LOCATION ...]``: a new, empty
tablet table with the definition of ``s``.

From a tablet table it takes what defines one, as Delta's CREATE TABLE LIKE does: the columns
(types, NOT NULL, comments), the key, ``cluster_by``, CHECK constraints and the other
properties; not its rows, history or table comment. From another table or view (``USING
tablets`` given) it takes the columns, their nullability and comments. The statement's own
TBLPROPERTIES win over the source's."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from tablets.exceptions import TableNotFound
from tablets.spark import catalog
from tablets.spark.datasource import spark_ddl, type_text
from tablets.storage.metadata import KEY_COLUMNS

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from tablets.spec import CreateSpec


def resolve(spark: SparkSession, spec: CreateSpec) -> CreateSpec:
    """``spec`` with the LIKE source's definition in place of ``like``."""
    assert spec.like is not None
    root = catalog.lookup(spark, spec.like)
    if root is not None:
        meta = catalog.storage(spark).table(root).snapshot().metadata
        schema = list(meta.schema)
        props = dict(meta.properties)
        if meta.key_columns:
            props[KEY_COLUMNS] = ",".join(meta.key_columns)
        comments = meta.column_comments
    else:
        try:
            fields = spark.table(spec.like).schema.fields
        except Exception:  # noqa: BLE001 - Spark's "not found"
            raise TableNotFound(
                f"CREATE TABLE {spec.target} LIKE {spec.like}: there is no table or view named {spec.like}",
                help="Name an existing table or view to copy the definition of.",
            ) from None
        schema = [(f.name, type_text(f.dataType), f.nullable) for f in fields]
        props = {}
        comments = tuple((f.name, f.metadata["comment"]) for f in fields if f.metadata.get("comment"))
    return replace(
        spec,
        like=None,
        columns_ddl=spark_ddl(schema),
        not_null=tuple(n for n, _, nullable in schema if not nullable),
        properties=tuple(sorted({**props, **dict(spec.properties)}.items())),
        column_comments=comments,
    )
