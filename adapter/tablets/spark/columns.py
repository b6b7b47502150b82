"""Spark's Parquet scan of tablets by physical column name (``tablets.storage.columns``): the
scan reads with a schema of the physical names and gives each column its name with an alias.
A table whose columns all keep their names (every table before its first added column) gets
exactly the plan it had before column mapping: no alias, no extra projection."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import StructField, StructType

from tablets.sqltext import quote_ident
from tablets.storage.columns import ColumnMapping


def physical_struct(struct: StructType, mapping: ColumnMapping) -> StructType:
    """``struct`` (the table's columns, and hidden ones such as the row ids) under the names the
    tablets keep them by: the schema to read with (a column a tablet lacks reads as NULL)."""
    if mapping.identity:
        return struct
    return StructType(
        [StructField(mapping.physical_of(f.name), f.dataType, f.nullable, f.metadata) for f in struct.fields]
    )


def named(column: str, mapping: ColumnMapping) -> Column:
    """Column ``column`` of a scan read with ``physical_struct``, under its name."""
    physical = mapping.physical_of(column)
    return F.col(quote_ident(physical)) if physical == column else F.col(quote_ident(physical)).alias(column)


def named_columns(struct: StructType, mapping: ColumnMapping) -> list[Column | str]:
    """Every column of ``struct``, under its name, from such a scan (``*`` where nothing is renamed)."""
    return ["*"] if mapping.identity else [named(f.name, mapping) for f in struct.fields]
