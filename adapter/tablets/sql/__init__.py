"""SQL statement text -> specs (sqlglot)."""

from tablets.sql.parse import create_provider, parse_statement, statement_target, table_name

__all__ = ["create_provider", "parse_statement", "statement_target", "table_name"]
