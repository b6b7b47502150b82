"""Spark SQL text helpers shared by the engine, the data source and the dbt plugin (no imports
but the standard library: Spark's Python workers load this too)."""

import re

DIALECT = "spark"  # sqlglot's name of the dialect every statement text is read and written in


def quote_ident(name: str) -> str:
    """A Spark SQL identifier in backquotes."""
    return "`" + name.replace("`", "``") + "`"


_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def quote_if_needed(name: str) -> str:
    """``name`` as it is where it is a plain identifier, else in backquotes (as Spark writes
    names in ``simpleString`` and SHOW CREATE TABLE)."""
    return name if _PLAIN.fullmatch(name) else quote_ident(name)


def sql_string(text: str) -> str:
    """A Spark SQL string literal (backslash escapes, as Spark parses them)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def repeated_names(names: list[str] | tuple[str, ...]) -> list[str]:
    """Each name given more than once, without regard to case (as Spark resolves them): its first
    spelling, in the order of first appearance."""
    lower = [n.lower() for n in names]
    return [names[lower.index(k)] for k in dict.fromkeys(lower) if lower.count(k) > 1]
