"""``CREATE [OR REPLACE] TABLE [IF NOT EXISTS] <name> SHALLOW CLONE <source> [VERSION AS OF n |
TIMESTAMP AS OF <expr>] [LOCATION '<path>'] [TBLPROPERTIES (...)]`` -> ``CloneSpec``.

sqlglot 30 parses only the bare form (no OR REPLACE, AS OF or LOCATION) into ``exp.Clone``, so
this walks sqlglot's tokens of the statement (names, strings and numbers as sqlglot reads
them) instead of its tree.
"""

from __future__ import annotations

from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import SqlglotError
from sqlglot.tokens import Token, TokenType

from tablets.exceptions import StatementParseError
from tablets.spec import AsOf
from tablets.spec.clone import CloneSpec
from tablets.sql.create import refuse_constraint_properties

_NAME_TOKENS = (TokenType.VAR, TokenType.IDENTIFIER, TokenType.DOT, TokenType.TABLE, TokenType.SCHEMA)


def _tokens(text: str) -> list[Token] | None:
    try:
        return list(Dialect.get_or_raise("spark").tokenize(text))
    except SqlglotError:
        return None


def _word(t: Token) -> str:
    return t.text.upper() if t.token_type != TokenType.IDENTIFIER else ""


def is_clone(text: str) -> bool:
    """True when ``text`` is a CREATE TABLE ... [SHALLOW|DEEP] CLONE statement (a table named
    ``clone`` is not one)."""
    toks = _tokens(text)
    if not toks or toks[0].token_type != TokenType.CREATE:
        return False
    try:
        return _parse(text, toks, probe=True) is not None
    except StatementParseError:
        return True  # a CLONE statement with an error further on: parse_clone says which


def parse_clone(text: str) -> CloneSpec:
    spec = _parse(text, _tokens(text) or [], probe=False)
    assert spec is not None
    return spec


def _parse(text: str, toks: list[Token], *, probe: bool) -> CloneSpec | None:
    """The spec; with ``probe``, None where the statement is not a CLONE (before its CLONE)."""
    i, n = 1, len(toks)

    def bad(what: str) -> StatementParseError:
        return StatementParseError(
            f"{text.strip()[:200]}: {what}",
            help="Write CREATE [OR REPLACE] TABLE [IF NOT EXISTS] <name> SHALLOW CLONE <source> "
            "[VERSION AS OF <n> | TIMESTAMP AS OF '<timestamp>'] [LOCATION '<path>'] [TBLPROPERTIES (...)].",
        )

    def take(*words: str) -> bool:
        nonlocal i
        if i + len(words) <= n and all(_word(toks[i + k]) == w for k, w in enumerate(words)):
            i += len(words)
            return True
        return False

    def name() -> str:
        nonlocal i
        parts: list[str] = []
        while (
            i < n
            and toks[i].token_type in _NAME_TOKENS
            and not (parts and toks[i].token_type != TokenType.DOT and parts[-1] != ".")
        ):
            parts.append(toks[i].text if toks[i].token_type != TokenType.IDENTIFIER else f"`{toks[i].text}`")
            i += 1
        if not parts or parts[-1] == ".":
            raise bad("a table name is missing")
        return "".join(parts)

    replace = take("OR", "REPLACE")
    if not take("TABLE"):
        if probe:
            return None
        raise bad("expected TABLE after CREATE")
    if_not_exists = take("IF", "NOT", "EXISTS")
    try:
        target = name()
    except StatementParseError:
        if probe:
            return None
        raise
    shallow = take("SHALLOW")  # a bare CLONE is DEEP, as in Delta
    if not shallow:
        take("DEEP")
    if not take("CLONE"):
        if probe:
            return None
        raise bad("expected SHALLOW CLONE after the table name")
    source = name()
    as_of = None
    if take("VERSION", "AS", "OF") or take("FOR", "VERSION", "AS", "OF"):
        if i >= n or toks[i].token_type != TokenType.NUMBER or not toks[i].text.isdigit():
            raise bad("VERSION AS OF takes a version number (a whole number >= 0)")
        as_of, i = AsOf(version=int(toks[i].text)), i + 1
    elif take("TIMESTAMP", "AS", "OF") or take("FOR", "TIMESTAMP", "AS", "OF"):
        if i >= n:
            raise bad("TIMESTAMP AS OF takes a timestamp")
        t = toks[i]
        as_of, i = AsOf(timestamp=f"'{t.text}'" if t.token_type == TokenType.STRING else t.text), i + 1
    location, props = None, []
    while i < n:
        if take("LOCATION") and i < n and toks[i].token_type == TokenType.STRING:
            location, i = toks[i].text, i + 1
        elif take("TBLPROPERTIES") and i < n and toks[i].token_type == TokenType.L_PAREN:
            i += 1
            while i + 2 < n and toks[i].token_type == TokenType.STRING and toks[i + 1].token_type == TokenType.EQ:
                props.append((toks[i].text, toks[i + 2].text))
                i += 3
                if i < n and toks[i].token_type == TokenType.COMMA:
                    i += 1
            if i >= n or toks[i].token_type != TokenType.R_PAREN:
                raise bad("TBLPROPERTIES takes ('key' = 'value', ...)")
            i += 1
        elif toks[i].token_type == TokenType.SEMICOLON and i == n - 1:
            i += 1
        else:
            raise bad(f"unexpected {toks[i].text!r}")
    if replace and if_not_exists:
        raise bad("OR REPLACE and IF NOT EXISTS cannot go together")
    refuse_constraint_properties(props, f"CREATE TABLE {target} SHALLOW CLONE {source}")
    return CloneSpec(target, source, shallow, replace, if_not_exists, as_of, location, tuple(props))
