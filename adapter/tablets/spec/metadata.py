"""The specs of the statements about a table's columns, comments and properties: DESCRIBE, SHOW
TBLPROPERTIES, SHOW CREATE TABLE, and the metadata changes (SET / UNSET TBLPROPERTIES, COMMENT
ON TABLE, ALTER COLUMN ... COMMENT), read by ``tablets.sql.metadata``."""

from __future__ import annotations

from dataclasses import dataclass

from tablets.storage.metadata import MetadataChange


@dataclass(frozen=True)
class DescribeSpec:
    target: str
    extended: bool = False  # EXTENDED or FORMATTED: the table's details after its columns
    column: str | None = None


@dataclass(frozen=True)
class ShowPropertiesSpec:
    target: str
    key: str | None = None


@dataclass(frozen=True)
class ShowCreateSpec:
    target: str


@dataclass(frozen=True)
class AlterMetadataSpec:
    target: str
    operation: str  # the commit's operation: SET TBLPROPERTIES, UNSET TBLPROPERTIES, ...
    change: MetadataChange
    # Hive's CHANGE COLUMN c c <type> COMMENT ...: (column, type as written), to be its type
    column_type: tuple[str, str] | None = None


MetadataSpec = DescribeSpec | ShowPropertiesSpec | ShowCreateSpec | AlterMetadataSpec
