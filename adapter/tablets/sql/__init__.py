"""SQL statement text -> specs (sqlglot): ``parse`` (MERGE, INSERT, UPDATE, DELETE, and the router's
question ``statement_target``), ``syntax`` (what the parsers share), ``create``, ``alter``,
``maintenance`` (DESCRIBE HISTORY, RESTORE, VACUUM, OPTIMIZE, AS OF), ``metadata`` (comments,
properties), ``reads`` (the tables a query reads).

May import: ``tablets.engine`` and everything below it; never the front door or dbt
(``tests/unit/test_layers.py``).
"""

from tablets.sql.parse import (
    altered_clustering,
    create_like,
    create_provider,
    like_with_columns,
    parse_statement,
    statement_target,
    table_name,
    truncated_table,
)
from tablets.sql.syntax import split_statements

__all__ = [
    "altered_clustering",
    "create_like",
    "create_provider",
    "like_with_columns",
    "parse_statement",
    "split_statements",
    "statement_target",
    "table_name",
    "truncated_table",
]
