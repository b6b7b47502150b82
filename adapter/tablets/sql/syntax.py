"""Statement text -> sqlglot trees (Spark dialect), and what every statement parser shares: the
parse with its errors made clear (``parse_error_text``), names of tables (``table_name``) and
expressions re-emitted as Spark SQL (``to_sql``)."""

from __future__ import annotations

import functools
import logging
import re

import sqlglot
from sqlglot import exp

from tablets.exceptions import StatementParseError
from tablets.sqltext import DIALECT


class _CommandFallback(logging.Filter):
    """Drops sqlglot's "contains unsupported syntax. Falling back to parsing as a 'Command'":
    statements are parsed here only to route them (a ``SHOW DATABASES`` is Spark's either way),
    and dbt runs such statements on every connection, each one a warning in the user's log."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Falling back to parsing as a 'Command'" not in record.getMessage()


logging.getLogger("sqlglot").addFilter(_CommandFallback())


@functools.lru_cache(maxsize=4)
def parsed_sql(text: str) -> exp.Expr:
    """One parse per statement text: routing, the provider check and the spec all read it."""
    trees = [t for t in sqlglot.parse(_joined_strings(text), read=DIALECT) if t is not None]
    if not trees:
        raise sqlglot.errors.ParseError("empty statement")
    if len(trees) > 1:
        raise sqlglot.errors.ParseError("more than one statement: run them one at a time")
    tree = trees[0]
    if isinstance(tree, exp.Command) and str(tree.this).upper() == "ALTER":
        m = _DROP_LIST.match(str(tree.expression or ""))
        if m:  # Spark's grammar allows the list without parentheses; sqlglot's only with them
            return parsed_sql(f"ALTER {m.group(1)}COLUMNS{m.group(2) or ''} ({m.group(3)})")
    return tree


def _joined_strings(text: str) -> str:
    """``text`` with adjacent string literals as one: Spark reads ``'it''s'`` as ``'its'`` (as
    ``'a' 'b'`` is ``'ab'``), and sqlglot fails on them where one literal must stand (a COMMENT),
    which left the statement to Spark's own path for the tablets provider."""
    if text.count("'") + text.count('"') < 4:
        return text
    try:
        tokens = sqlglot.tokenize(text, read=DIALECT)
    except sqlglot.errors.SqlglotError:
        return text

    def plain(i: int) -> bool:  # (escapes are left alone: their meaning is Spark's to give)
        tok = tokens[i]
        return tok.token_type is sqlglot.TokenType.STRING and "\\" not in text[tok.start : tok.end + 1]

    out, done, i = [], 0, 0
    while i < len(tokens):
        j = i
        while (
            plain(j)
            and j + 1 < len(tokens)
            and plain(j + 1)
            and not text[tokens[j].end + 1 : tokens[j + 1].start].strip()
        ):
            j += 1
        if j > i:
            value = "".join(t.text for t in tokens[i : j + 1])
            out += [text[done : tokens[i].start], exp.Literal.string(value).sql(dialect=DIALECT)]
            done = tokens[j].end + 1
        i = j + 1
    return "".join(out) + text[done:]


_DROP_LIST = re.compile(r"(?is)\s*(TABLE\s+.+?\s+DROP\s+)COLUMNS?(\s+IF\s+EXISTS)?\s+([^()]+,[^()]+?)\s*$")


def expression_error(text: str) -> str | None:
    """Why ``text`` is not one SQL expression (a clause's condition or value), in the words
    of ``parse_error_text``; None where it is."""
    try:
        sqlglot.parse_one(text, read=DIALECT, into=exp.Condition)
    except sqlglot.errors.SqlglotError as e:
        return parse_error_text(e).replace("the statement is incomplete", "the expression is incomplete")
    return None


def split_statements(text: str) -> list[str]:
    """``text``'s statements, split at the semicolons between them (not those inside quotes,
    identifiers or comments); pieces with nothing but comments or space are dropped. Text that
    does not tokenize is one statement: its own parse says what is wrong."""
    if ";" not in text:
        return [text]
    try:
        tokens = sqlglot.Dialect.get_or_raise(DIALECT).tokenize(text)
    except sqlglot.errors.SqlglotError:
        return [text]
    out: list[str] = []
    start, words = 0, False
    for t in tokens:
        if t.token_type is sqlglot.TokenType.SEMICOLON:
            if words:
                out.append(text[start : t.start])
            start, words = t.end + 1, False
        else:
            words = True
    if words:
        out.append(text[start:])
    return out or [text]


def parse_sql(text: str, tree: exp.Expr | None = None) -> exp.Expr:
    """``text``'s tree (``tree``, where the statement was read already), its tokens checked; a
    copy: building the spec may rewrite the tree."""
    _check_tokens(text)
    if tree is not None:
        return tree.copy()
    try:
        return parsed_sql(text).copy()
    except sqlglot.errors.SqlglotError as e:
        raise StatementParseError(f"{_head(text)}: {parse_error_text(e)}") from e


def _head(text: str) -> str:
    """The statement's first words, to name it in a message (``MERGE INTO db.t``)."""
    words = text.split()
    create = re.match(
        r"\s*((?:CREATE|REPLACE|ALTER)\b.{0,60}?\bTABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?\S+)", text, re.I | re.S
    )
    if create is not None:  # CREATE TABLE db.t, not CREATE OR; ALTER TABLE db.t
        return " ".join(create.group(1).split())
    n = 3 if words and words[0].upper() in ("MERGE", "INSERT", "DELETE") else 2
    return " ".join(words[:n]) or "empty statement"


# sqlglot's "Required keyword: ... missing for <class ...X>" in the statement's own words
_MISSING = {
    "Whens": "MERGE needs at least one WHEN ... THEN clause",
    "When": "a WHEN clause needs THEN and an action (UPDATE SET, DELETE, INSERT or DO NOTHING)",
    "Where": "WHERE needs a condition",
    "EQ": "'=' needs a value on its right",
    "NEQ": "'<>' needs a value on its right",
    "And": "AND needs a condition on its right",
    "Or": "OR needs a condition on its right",
    "Values": "VALUES needs at least one row",
    "Tuple": "a value list is incomplete",
}


def parse_error_text(e: Exception) -> str:
    """A sqlglot parse error as the user reads their statement: what is wrong, and where."""
    errors = getattr(e, "errors", None) or [{}]
    err = errors[0]
    desc = str(err.get("description") or str(e).splitlines()[0])
    m = re.match(r"Required keyword: '\w+' missing for <class '[\w.]+\.(\w+)'>", desc)
    if m:
        what = _MISSING.get(m.group(1), "the statement is incomplete")
    elif desc.startswith("Expected table name"):
        what = "a table name is missing"
    elif desc.startswith("Expecting )"):
        what = "a ')' is missing"
    elif desc.startswith("Unknown option"):
        what = f"unexpected word {desc.split()[-1]!r}"
    elif "Unexpected token" in desc or desc.startswith("Invalid expression"):
        what = f"unexpected {err.get('highlight')!r}" if err.get("highlight") else "unexpected text"
    else:
        what = desc
    if err.get("line") is None:
        return what
    context = f"{err.get('start_context', '')}{err.get('highlight', '')}".strip()
    return f"{what} (line {err['line']}, column {err['col']}, after {context[-40:]!r})"


_END = {"WHEN", "WHERE", "THEN", "R_PAREN", "SEMICOLON", "SET", "VALUES", "ON", "FROM"}


def _check_tokens(text: str) -> None:
    """What sqlglot's lenient parser accepts but Spark SQL does not: a stray comma, a dangling
    AND/OR, a missing INTO/FROM, SET after WHERE."""
    try:
        tokens = sqlglot.tokenize(text, read=DIALECT)
    except sqlglot.errors.SqlglotError as e:
        raise StatementParseError(f"{_head(text)}: {e}") from e
    kinds = [t.token_type.name for t in tokens] + ["END"]
    head = _head(text)

    def fail(i: int, what: str) -> StatementParseError:
        before = text[tokens[max(0, i - 4)].start : tokens[i].end + 1]
        return StatementParseError(f"{head}: {what} (after {before!r})")

    for i, tok in enumerate(tokens):
        nxt = kinds[i + 1]
        if tok.token_type.name == "COMMA" and (nxt in _END or nxt == "END"):
            raise fail(i, "a ',' with nothing after it")
        if tok.token_type.name in ("AND", "OR") and (nxt in _END or nxt == "END"):
            raise fail(i, f"{tok.text.upper()} with no condition after it")
        if tok.token_type.name in ("ON", "WHERE") and nxt in ("WHEN", "END", "SEMICOLON"):
            raise fail(i, f"{tok.text.upper()} needs a condition")
        if tok.token_type.name == "SET" and nxt in ("WHEN", "WHERE", "END", "SEMICOLON"):
            raise fail(i, "SET assigns nothing")
    first = kinds[0]
    needs = {"MERGE": ("INTO",), "INSERT": ("INTO", "OVERWRITE"), "DELETE": ("FROM",)}.get(first)
    if needs and kinds[1] not in needs:
        raise fail(0, f"{first} must be followed by {' or '.join(needs)}")
    if first == "UPDATE":
        depth, seen_where = 0, False
        for t in tokens:
            name = t.token_type.name
            depth += (name == "L_PAREN") - (name == "R_PAREN")
            if depth == 0 and name == "WHERE":
                seen_where = True
            if depth == 0 and name == "SET" and seen_where:
                raise StatementParseError(
                    f"{head}: SET must come before WHERE (UPDATE t SET col = value WHERE condition)"
                )


def table_name(table: exp.Expr) -> str:
    """``db.t`` as written, without quotes."""
    if isinstance(table, exp.Schema):
        table = table.this
    if not isinstance(table, exp.Expr):  # sqlglot leaves False for a missing table
        return ""
    parts = [table.args.get("catalog"), table.args.get("db"), table.this]
    return ".".join(p.name for p in parts if p is not None and p.name)


def needs_quotes(ident: exp.Expr) -> bool:
    return not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", ident.name or "")


def to_sql(e: exp.Expr | None) -> str:
    return e.sql(dialect=DIALECT) if e is not None else ""
