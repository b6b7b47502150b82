"""Spark SQL text helpers shared by the engine, the data source and the dbt plugin (no imports:
Spark's Python workers load this too)."""

DIALECT = "spark"  # sqlglot's name of the dialect every statement text is read and written in


def quote_ident(name: str) -> str:
    """A Spark SQL identifier in backquotes."""
    return "`" + name.replace("`", "``") + "`"


def sql_string(text: str) -> str:
    """A Spark SQL string literal (backslash escapes, as Spark parses them)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
