"""What a statement is: its kind, the table it names and its tree, decided once, from its text
alone (no catalog). The front door then asks the one handler of that kind
(``tablets.statements``), which knows whether the table is a tablet table.

The forms Spark would run wrongly on a tablet table are classified as the statement they are:
``REPLACE TABLE`` is a CREATE OR REPLACE of a table that must exist, ``TRUNCATE TABLE`` a
DELETE of every row, ``ALTER TABLE ... CLUSTER BY`` a change of the ``cluster_by`` property,
``CREATE TABLE ... LIKE <tablet table> USING <format>`` a CREATE of that format with the
tablet table's columns. Never raises: a statement it cannot read is left to its handler's
parser, or to Spark.
"""

from __future__ import annotations

import re

from tablets.spec.statement import Kind, Statement
from tablets.sql.clone import is_clone
from tablets.sql.maintenance import maintenance_target
from tablets.sql.metadata import metadata_target
from tablets.sql.parse import altered_clustering, create_provider, read_target, statement_target, truncated_table

_EXPLAIN = re.compile(r"^\s*EXPLAIN\s+(?:(?:EXTENDED|FORMATTED|CODEGEN|COST)\s+)?", re.IGNORECASE)
_REPLACE_TABLE = re.compile(r"^\s*REPLACE\s+TABLE\s+", re.IGNORECASE)
_TRUNCATE = re.compile(r"^\s*TRUNCATE\s+TABLE\s+", re.IGNORECASE)
_CREATE_LIKE = re.compile(r"^\s*CREATE\s+(TABLE|.*\bTABLE)\s+.*\bLIKE\b", re.I | re.S)
_CLUSTER_BY = re.compile(r"^\s*ALTER\s+TABLE\s+(?P<table>.+?)\s+CLUSTER\s+BY\s+(?P<none>NONE\s*;?\s*$)?", re.I | re.S)
_WRITES = {"MERGE": Kind.MERGE, "UPDATE": Kind.MERGE, "DELETE": Kind.MERGE, "INSERT": Kind.INSERT}
_WRITES |= {"CREATE": Kind.CREATE, "DROP": Kind.DROP, "ALTER": Kind.ALTER}


def classify(text: str, *, writes: bool = True) -> Statement:
    """``text`` as one ``Statement``. ``writes`` False: the caller knows that ``text`` cannot
    write a tablet table (it names none: ``catalog.may_name_a_tablet_table``), so a statement
    that writes is not parsed here (a seed's batch of rows) and is Spark's."""
    m = _EXPLAIN.match(text)
    if m is not None:
        return Statement(Kind.EXPLAIN, text, inner=classify(text[m.end() :], writes=writes))
    if _REPLACE_TABLE.match(text):
        found = _write(_REPLACE_TABLE.sub("CREATE OR REPLACE TABLE ", text, count=1), "REPLACE")
        if found is not None and found.kind is Kind.CREATE and (create_provider(found.text) or "") == "tablets":
            return found
        return Statement(Kind.QUERY, text)
    if _TRUNCATE.match(text):
        truncated = truncated_table(text)
        if truncated is None:
            return Statement(Kind.QUERY, text)
        name, table_sql, partition = truncated
        return Statement(Kind.MERGE, text, "TRUNCATE", name, parts=(table_sql, partition or ""))
    clustered = _CLUSTER_BY.match(text)
    if clustered is not None:
        return _clustering(text, clustered)
    if _CREATE_LIKE.match(text) and create_provider(text) not in (None, "tablets"):
        return Statement(Kind.CREATE, text, "LIKE")
    maintained = maintenance_target(text)
    if maintained is not None:
        return Statement(Kind.MAINTENANCE, text, maintained[0], maintained[1])
    described = metadata_target(text)
    if described is not None:
        return Statement(Kind.METADATA, text, described[0], described[1])
    if "clone" in text.lower() and is_clone(text):
        return Statement(Kind.CLONE, text)
    return (_write(text) if writes else None) or Statement(Kind.QUERY, text)


def _clustering(text: str, m: re.Match[str]) -> Statement:
    if m.group("none"):  # CLUSTER BY NONE: sqlglot does not parse it; the table as written
        table_sql = m.group("table").strip()
        found = statement_target(f"DROP TABLE {table_sql}")
        if found is None:
            return Statement(Kind.QUERY, text)
        return Statement(Kind.METADATA, text, "CLUSTER BY NONE", found[1], parts=(table_sql,))
    clustered = altered_clustering(text)
    if clustered is None:
        return Statement(Kind.QUERY, text)
    name, table_sql, columns = clustered
    return Statement(Kind.METADATA, text, "CLUSTER BY", name, parts=(table_sql, *columns))


def _write(text: str, form: str = "") -> Statement | None:
    """A statement that writes a table, read once (``parse.read_target``)."""
    found = read_target(text)
    if found is None:
        return None
    verb, name, tree = found
    kind = _WRITES[verb]
    if kind is Kind.INSERT and tree is not None and tree.args.get("conflict") is not None:
        kind = Kind.MERGE  # INSERT ... ON CONFLICT is a MERGE of the inserted rows
    return Statement(kind, text, form or verb, name, tree)
