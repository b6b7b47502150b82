"""Statements for a table that is not a tablet table, refused with a clear error where Spark's
would be a stack trace (a view, a plain file-format table, no such table) or where it would blame
a rewrite (a statement about a tablet table that does not parse)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tablets.exceptions import TableNotFound, TabletsError
from tablets.spark import catalog
from tablets.sql import parse_statement, statement_target

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from tablets.spec.statement import Statement

ROW_WRITE = re.compile(
    r"^\s*(?:--[^\n]*\n\s*|/\*.*?\*/\s*)*(?:MERGE(?:\s+WITH\s+SCHEMA\s+EVOLUTION)?(?:\s+INTO)?|UPDATE|DELETE(?:\s+FROM)?|INSERT\s+INTO)\s+(?:TABLE\s+)?(?P<name>[\w.`]+)",
    re.IGNORECASE | re.DOTALL,
)
_VERBS = ("MERGE", "UPDATE", "DELETE", "INSERT")
ON_CONFLICT = re.compile(r"\bON\s+CONFLICT\b", re.IGNORECASE)
CONSTRAINT_DDL = re.compile(
    r"^\s*ALTER\s+TABLE\s+(?P<name>[\w.`]+)\s+(?:(?:ADD|DROP)\s+CONSTRAINT|ALTER\s+COLUMN\s+\S+\s+(?:SET|DROP)\s+NOT\s+NULL)",
    re.IGNORECASE,
)


def refuse_unroutable(spark: SparkSession, stmt: Statement) -> None:
    """Constraint DDL on a view, and a MERGE, UPDATE, DELETE or INSERT ... ON CONFLICT that is
    not for a tablet table: a clear error where Spark's would be a stack trace (a view, a plain file-format table, no
    such table) or where it would blame a rewrite (a statement about a tablet table that
    does not parse). Tables of a catalog that can run it (Delta, Iceberg) pass through."""
    text = stmt.text
    c = CONSTRAINT_DDL.match(text)
    if c is not None and catalog.kind_of(spark, c.group("name")) == "view":
        raise TabletsError(
            f"ALTER TABLE {c.group('name')}: {c.group('name')} is a view; constraints belong to tables",
            help="Declare the constraint on the tablet table the view reads from.",
        )
    m = ROW_WRITE.match(text)
    if m is None:
        return
    found = (stmt.form, stmt.target) if stmt.target is not None and stmt.form in _VERBS else statement_target(text)
    name = (found[1] if found else m.group("name")).replace("`", "")
    if found is None:
        if catalog.lookup(spark, name) is not None:
            parse_statement(text)  # raises the parse error in the statement's words
        return
    kind = found[0]
    if kind not in _VERBS or (kind == "INSERT" and not ON_CONFLICT.search(text)):
        return
    what = "INSERT ... ON CONFLICT" if kind == "INSERT" else kind
    provider = catalog.kind_of(spark, name)
    if provider is None:
        raise TableNotFound(
            f"{what} {name}: there is no table or view named {name}",
            help="Check the name (SHOW TABLES IN <database>), or create it with CREATE TABLE ... USING tablets.",
        )
    if provider == "view":
        raise TabletsError(
            f"{what} {name}: {name} is a view; {what} writes tables",
            help="Write to the tablet table the view reads from.",
        )
    if provider in catalog.FILE_FORMATS:
        raise TabletsError(
            f"{what} {name}: {name} is a {provider} table, not a tablet table, and Spark cannot run {what} on it",
            help=f"Copy it into a tablet table (CREATE TABLE <new> USING tablets AS SELECT * FROM {name}; in dbt: "
            "materialized='merge_tablets') and write to that.",
        )
