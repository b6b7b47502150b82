"""Statements about a table's metadata, as Spark SQL writes them -> specs:

- ``DESC[RIBE] [TABLE] [EXTENDED | FORMATTED] t [column]``;
- ``SHOW TBLPROPERTIES t [(key)]``;
- ``ALTER TABLE t SET TBLPROPERTIES (key = value, ...)`` (the key ``comment`` is the table's
  comment, as in Delta) and ``ALTER TABLE t UNSET TBLPROPERTIES [IF EXISTS] (key, ...)``;
- ``COMMENT ON TABLE t IS 'text' | NULL``;
- ``ALTER TABLE t {ALTER | CHANGE} [COLUMN] c COMMENT 'text'`` (and Hive's
  ``CHANGE [COLUMN] c c <its type> COMMENT 'text'``), what dbt's ``persist_docs`` emits.

sqlglot parses only some of these (the rest become an opaque Command), so, as for the
maintenance statements, the leading words pick the statement and sqlglot's tokenizer reads the
rest: string literals are unescaped by Spark's rules (``\\'``, ``\\n``, adjacent literals join).

>>> parse_metadata("ALTER TABLE db.t ALTER COLUMN id COMMENT 'the key'").change.column_comments
(('id', 'the key'),)
"""

from __future__ import annotations

import re

import sqlglot

from tablets.exceptions import StatementParseError
from tablets.spec.metadata import AlterMetadataSpec, DescribeSpec, MetadataSpec, ShowCreateSpec, ShowPropertiesSpec
from tablets.sqltext import DIALECT
from tablets.storage.metadata import MetadataChange

_LEAD = r"^\s*(?:--[^\n]*\n\s*|/\*.*?\*/\s*)*"
_START = re.compile(
    _LEAD + r"(?P<kind>DESC(?:RIBE)?|SHOW\s+TBLPROPERTIES|SHOW\s+CREATE\s+TABLE|ALTER\s+TABLE|COMMENT\s+ON\s+TABLE)\b",
    re.IGNORECASE | re.DOTALL,
)
# DESCRIBE forms that are about something else than a table's columns and metadata
_NOT_A_TABLE = {
    "HISTORY", "DETAIL", "QUERY", "FUNCTION", "DATABASE", "SCHEMA", "NAMESPACE", "CATALOG",
    "PROCEDURE", "SELECT", "WITH", "FROM", "VALUES", "(",
}  # fmt: skip
_STRINGS = ("STRING", "RAW_STRING", "NATIONAL_STRING")
COMMENT_PROPERTY = "comment"


class _Tokens:
    def __init__(self, head: str, text: str) -> None:
        self.head, self.text = head, text
        try:
            self.tokens = sqlglot.tokenize(text, read=DIALECT)
        except sqlglot.errors.SqlglotError as e:
            raise StatementParseError(f"{head}: {e}") from None
        self.i = 0

    def peek(self, n: int = 0) -> str:
        j = self.i + n
        return self.tokens[j].text.upper() if j < len(self.tokens) else ""

    def kind(self, n: int = 0) -> str:
        j = self.i + n
        return self.tokens[j].token_type.name if j < len(self.tokens) else "END"

    def take(self, *words: str) -> bool:
        if self.peek() in words and self.kind() not in _STRINGS and self.kind() != "IDENTIFIER":
            self.i += 1
            return True
        return False

    def expect(self, word: str, what: str) -> None:
        if not self.take(word):
            raise self.error(f"expected {word}", what)

    def done(self) -> bool:
        return self.i >= len(self.tokens) or (self.kind() == "SEMICOLON" and self.i == len(self.tokens) - 1)

    def rest(self) -> str:
        return self.text[self.tokens[self.i].start :].strip() if self.i < len(self.tokens) else ""

    def error(self, message: str, example: str) -> StatementParseError:
        found = f", not {self.rest()[:60]!r}" if self.rest() else ""
        return StatementParseError(f"{self.head}: {message}{found}", help=f"Write {example}.")

    def identifier(self) -> str | None:
        """One name part (a word or a `quoted` name), or None."""
        kind = self.kind()
        if kind == "IDENTIFIER" or (kind not in _STRINGS and kind != "NUMBER" and self.peek().isidentifier()):
            tok = self.tokens[self.i]
            self.i += 1
            return "`" + tok.text.replace("`", "``") + "`" if kind == "IDENTIFIER" else tok.text
        return None

    def name(self) -> str | None:
        """A dotted name as written (quoted parts keep their backquotes)."""
        first = self.identifier()
        if first is None:
            return None
        parts = [first]
        while self.kind() == "DOT":
            self.i += 1
            nxt = self.identifier()
            if nxt is None:
                raise self.error("a name part is missing after '.'", "db.table")
            parts.append(nxt)
        return ".".join(parts)

    def string(self, what: str, example: str) -> str:
        """A string literal (adjacent literals join, as in Spark)."""
        if self.kind() not in _STRINGS:
            raise self.error(f"{what} must be a string literal", example)
        out = []
        while self.kind() in _STRINGS:
            out.append(self.tokens[self.i].text)
            self.i += 1
        return "".join(out)

    def key(self, example: str) -> str:
        """A property key: a string literal or a dotted name (``delta.appendOnly``)."""
        if self.kind() in _STRINGS:
            return self.string("a property key", example)
        name = self.name()
        if name is None:
            raise self.error("a property key is missing", example)
        return name.replace("`", "")

    def value(self, key: str, example: str) -> str:
        kind = self.kind()
        if kind in _STRINGS:
            return self.string(f"the value of {key}", example)
        if kind in ("NUMBER", "TRUE", "FALSE"):
            self.i += 1
            return self.tokens[self.i - 1].text.lower() if kind != "NUMBER" else self.tokens[self.i - 1].text
        raise self.error(f"the value of {key} must be a string, number or boolean", example)

    def end(self, example: str) -> None:
        if not self.done():
            raise self.error("unexpected text at the end", example)


def metadata_target(text: str) -> tuple[str, str] | None:
    """(statement, table) when ``text`` is one of this module's statements, else None. Never
    raises: a statement it cannot read further is left to Spark (or ``parse_metadata``)."""
    m = _START.match(text)
    if m is None:
        return None
    kind = " ".join(m.group("kind").upper().split())
    kind = "DESCRIBE" if kind.startswith("DESC") else kind
    try:
        spec_head = _head_of(kind, text[m.end() :])
    except StatementParseError:
        return None
    return spec_head


def _head_of(kind: str, body: str) -> tuple[str, str] | None:
    t = _Tokens(kind, body)
    if kind == "DESCRIBE":
        if t.peek() in _NOT_A_TABLE:
            return None
        t.take("TABLE")
        t.take("EXTENDED", "FORMATTED")
    name = t.name()
    if name is None:
        return None
    if kind == "ALTER TABLE":
        word = t.peek()
        if word in ("SET", "UNSET") and t.peek(1) == "TBLPROPERTIES":
            return f"ALTER TABLE {word} TBLPROPERTIES", name
        if word in ("ALTER", "CHANGE") and _comment_follows(t):
            return "ALTER TABLE ALTER COLUMN", name
        return None  # other ALTER TABLE statements: the statement router's
    return kind, name


def _comment_follows(t: _Tokens) -> bool:
    """Whether an ALTER/CHANGE COLUMN sets a comment (other column changes are not ours)."""
    return any(t.tokens[j].token_type.name == "COMMENT" for j in range(t.i, len(t.tokens)))


def parse_metadata(text: str) -> MetadataSpec:
    """One of this module's statements -> its spec; ``StatementParseError`` says what is wrong."""
    m = _START.match(text)
    if m is None:
        raise StatementParseError(f"not a statement about table metadata: {text.strip()[:80]!r}")
    kind = " ".join(m.group("kind").upper().split())
    kind = "DESCRIBE" if kind.startswith("DESC") else kind
    t = _Tokens(kind, text[m.end() :])
    if kind == "DESCRIBE":
        return _describe(t)
    if kind == "SHOW TBLPROPERTIES":
        return _show(t)
    if kind == "COMMENT ON TABLE":
        return _comment_on(t)
    if kind == "SHOW CREATE TABLE":
        example = "SHOW CREATE TABLE <table>"
        target = _target(t, example)
        t.end(example)
        return ShowCreateSpec(target)
    return _alter(t)


def _target(t: _Tokens, example: str) -> str:
    name = t.name()
    if name is None:
        raise t.error("a table name is missing", example)
    t.head = f"{t.head} {name}"
    return name


def _describe(t: _Tokens) -> DescribeSpec:
    example = "DESCRIBE [EXTENDED] <table> [<column>]"
    t.take("TABLE")
    extended = t.take("EXTENDED", "FORMATTED")
    target = _target(t, example)
    column = None
    if not t.done():
        column = t.name()
        if column is None:
            raise t.error("expected a column name", example)
    t.end(example)
    return DescribeSpec(target, extended, column.replace("`", "") if column else None)


def _show(t: _Tokens) -> ShowPropertiesSpec:
    example = "SHOW TBLPROPERTIES <table> [('<key>')]"
    target = _target(t, example)
    key = None
    if t.kind() == "L_PAREN":
        t.i += 1
        key = t.key(example)
        if t.kind() != "R_PAREN":
            raise t.error("expected ')' after the key", example)
        t.i += 1
    t.end(example)
    return ShowPropertiesSpec(target, key)


def _comment_on(t: _Tokens) -> AlterMetadataSpec:
    example = "COMMENT ON TABLE <table> IS '<text>' (or IS NULL)"
    target = _target(t, example)
    t.expect("IS", example)
    if t.take("NULL"):
        change = MetadataChange(clear_comment=True)
    else:
        change = MetadataChange(comment=t.string("the comment", example))
    t.end(example)
    return AlterMetadataSpec(target, "COMMENT ON TABLE", change)


def _alter(t: _Tokens) -> AlterMetadataSpec:
    target = _target(t, "ALTER TABLE <table> SET TBLPROPERTIES ('<key>' = '<value>')")
    word = t.peek()
    if word in ("SET", "UNSET"):
        t.i += 1
        return _properties(t, target, word)
    return _column_comment(t, target)


def _properties(t: _Tokens, target: str, word: str) -> AlterMetadataSpec:
    example = (
        "ALTER TABLE <table> SET TBLPROPERTIES ('<key>' = '<value>', ...)"
        if word == "SET"
        else "ALTER TABLE <table> UNSET TBLPROPERTIES [IF EXISTS] ('<key>', ...)"
    )
    t.expect("TBLPROPERTIES", example)
    if word == "UNSET" and t.take("IF"):
        t.expect("EXISTS", example)
    if t.kind() != "L_PAREN":
        raise t.error("expected '(' and the properties", example)
    t.i += 1
    pairs: list[tuple[str, str]] = []
    while True:
        key = t.key(example)
        if word == "SET":
            if t.kind() == "EQ":
                t.i += 1
            pairs.append((key, t.value(key, example)))
        else:
            pairs.append((key, ""))
        if t.kind() == "COMMA":
            t.i += 1
            continue
        if t.kind() == "R_PAREN":
            t.i += 1
            break
        raise t.error("expected ',' or ')' after a property", example)
    t.end(example)
    operation = f"{word} TBLPROPERTIES"
    if word == "UNSET":
        keys = tuple(k for k, _ in pairs)
        clear = any(k.lower() == COMMENT_PROPERTY for k in keys)
        rest = tuple(k for k in keys if k.lower() != COMMENT_PROPERTY)
        return AlterMetadataSpec(target, operation, MetadataChange(unset_properties=rest, clear_comment=clear))
    comment = next((v for k, v in pairs if k.lower() == COMMENT_PROPERTY), None)
    rest_pairs = tuple((k, v) for k, v in pairs if k.lower() != COMMENT_PROPERTY)
    return AlterMetadataSpec(target, operation, MetadataChange(set_properties=rest_pairs, comment=comment))


def _column_comment(t: _Tokens, target: str) -> AlterMetadataSpec:
    example = "ALTER TABLE <table> ALTER COLUMN <column> COMMENT '<text>'"
    if not t.take("ALTER", "CHANGE"):
        raise t.error("expected SET/UNSET TBLPROPERTIES or ALTER COLUMN ... COMMENT", example)
    t.take("COLUMN")
    column = t.name()
    if column is None:
        raise t.error("a column name is missing", example)
    column = column.replace("`", "")
    type_text = None
    if t.peek() != "COMMENT":  # Hive's CHANGE COLUMN c c <type> COMMENT '...'
        new = t.name()
        start = t.i
        while not t.done() and t.peek() != "COMMENT":
            t.i += 1
        if new is None or new.replace("`", "").lower() != column.lower() or t.i == start:
            raise StatementParseError(
                f"{t.head}: only the column's comment can be changed on a tablet table",
                help=f"Write {example}; to rename or retype columns, rebuild the table (dbt --full-refresh).",
            )
        type_text = t.text[t.tokens[start].start : t.tokens[t.i - 1].end + 1]
    t.expect("COMMENT", example)
    text = t.string("the comment", example)
    t.end(example)
    change = MetadataChange(column_comments=((column, text),))
    return AlterMetadataSpec(target, "CHANGE COLUMN", change, column_type=(column, type_text) if type_text else None)
