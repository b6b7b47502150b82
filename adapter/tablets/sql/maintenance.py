"""DESCRIBE HISTORY, RESTORE, VACUUM, OPTIMIZE and time travel (``VERSION AS OF`` /
``TIMESTAMP AS OF``) -> specs. sqlglot parses none of the four statements, so their leading words
pick the statement and sqlglot's tokenizer reads the rest."""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp

from tablets.exceptions import StatementParseError
from tablets.spec import (
    AsOf,
    CheckSpec,
    HistorySpec,
    MaintenanceSpec,
    OptimizeSpec,
    RestoreSpec,
    VacuumSpec,
)
from tablets.sql.syntax import to_sql
from tablets.sqltext import DIALECT

# --- table maintenance: DESCRIBE HISTORY, RESTORE, VACUUM, OPTIMIZE; time travel ----------------
# sqlglot parses none of the four statements (it keeps VACUUM and OPTIMIZE as an opaque Command),
# so the leading words pick the statement and sqlglot's tokenizer reads the rest.

_MAINTENANCE_START = re.compile(
    r"^\s*(?:--[^\n]*\n\s*|/\*.*?\*/\s*)*(?P<kind>DESCRIBE\s+HISTORY|RESTORE(?:\s+TABLE)?|VACUUM|OPTIMIZE|CHECK\s+TABLE)\b",
    re.IGNORECASE | re.DOTALL,
)
_AS_OF = re.compile(r"\b(?:VERSION|TIMESTAMP)\s+AS\s+OF\b", re.IGNORECASE)


def maintenance_target(text: str) -> tuple[str, str] | None:
    """(statement, table) for DESCRIBE HISTORY, RESTORE, VACUUM or OPTIMIZE, else None. Never
    raises: a statement whose table cannot be read is left to ``parse_maintenance``."""
    m = _MAINTENANCE_START.match(text)
    if m is None:
        return None
    kind = " ".join(m.group("kind").upper().split()).replace("RESTORE TABLE", "RESTORE")
    try:
        tokens = sqlglot.tokenize(text[m.end() :], read=DIALECT)
        name, _ = _name_tokens(tokens, 0)
    except (sqlglot.errors.SqlglotError, StatementParseError):
        return kind, ""
    return kind, name


def _name_tokens(tokens: list, i: int) -> tuple[str, int]:
    """A table name (``db.t``, ``\\`db\\`.\\`t\\```, ``tablets.\\`/path\\```) from token ``i``:
    the name as written (quoted parts keep their backquotes) and the next token's index."""
    parts: list[str] = []
    while i < len(tokens):
        tok = tokens[i]
        if tok.token_type.name == "IDENTIFIER":
            parts.append("`" + tok.text.replace("`", "``") + "`")
        elif tok.token_type.name not in ("STRING", "NUMBER") and tok.text.isidentifier():
            parts.append(tok.text)
        else:
            break
        i += 1
        if i < len(tokens) and tokens[i].token_type.name == "DOT":
            i += 1
            continue
        break
    if not parts:
        raise StatementParseError("a table name is missing")
    return ".".join(parts), i


def _words(tokens: list, i: int) -> list[str]:
    return [t.text.upper() for t in tokens[i:]]


def _as_of_tokens(head: str, text: str, tokens: list, i: int) -> AsOf:
    """``VERSION AS OF <n>`` / ``TIMESTAMP AS OF <expression>`` from token ``i`` to the end."""
    words = _words(tokens, i)
    if len(words) < 3 or words[0] not in ("VERSION", "TIMESTAMP") or words[1:3] != ["AS", "OF"]:
        raise StatementParseError(
            f"{head}: expected VERSION AS OF <version> or TIMESTAMP AS OF '<timestamp>'",
            help="Write RESTORE TABLE t TO VERSION AS OF 3, or TO TIMESTAMP AS OF '2024-05-01 12:00:00'.",
        )
    rest = tokens[i + 3 :]
    if not rest:
        raise StatementParseError(f"{head}: {words[0]} AS OF needs a value", help=f"Write {words[0]} AS OF <value>.")
    if words[0] == "VERSION":
        if len(rest) != 1 or rest[0].token_type.name != "NUMBER" or not rest[0].text.isdigit():
            shown = text[rest[0].start :].strip()
            raise StatementParseError(
                f"{head}: VERSION AS OF {shown!r}: a version is a whole number >= 0",
                help="Pick a version from DESCRIBE HISTORY.",
            )
        return AsOf(version=int(rest[0].text))
    return AsOf(timestamp=text[rest[0].start :].strip().rstrip(";").strip())


def parse_maintenance(text: str) -> MaintenanceSpec:
    """DESCRIBE HISTORY, RESTORE, VACUUM or OPTIMIZE -> its spec; ``StatementParseError`` names
    the part that is wrong."""
    m = _MAINTENANCE_START.match(text)
    if m is None:
        raise StatementParseError(f"not a maintenance statement: {text.strip()[:80]!r}")
    kind = " ".join(m.group("kind").upper().split())
    kind = "RESTORE" if kind.startswith("RESTORE") else kind
    body = text[m.end() :].strip().rstrip(";")
    try:
        tokens = sqlglot.tokenize(body, read=DIALECT)
    except sqlglot.errors.SqlglotError as e:
        raise StatementParseError(f"{kind}: {e}") from e
    try:
        name, i = _name_tokens(tokens, 0)
    except StatementParseError:
        raise StatementParseError(f"{kind}: a table name is missing", help=f"Write {kind} <table>.") from None
    head = f"{kind} {name}"
    words = _words(tokens, i)
    if kind == "DESCRIBE HISTORY":
        if not words:
            return HistorySpec(name)
        if words[0] != "LIMIT" or len(words) != 2 or not words[1].isdigit():
            raise StatementParseError(
                f"{head}: expected LIMIT <number of versions> after the table name, not {body[tokens[i].start :]!r}"
            )
        return HistorySpec(name, limit=int(words[1]))
    if kind.startswith("RESTORE"):
        if words[:1] == ["TO"]:
            i += 1
        return RestoreSpec(name, _as_of_tokens(head, body, tokens, i))
    if kind == "VACUUM":
        retain, dry = None, False
        while words:
            if words[0] == "RETAIN":
                value = words[1] if len(words) > 1 else ""
                # a number as Spark writes one: float() also takes NaN and Infinity, and NaN passes
                # every comparison with the table's retention
                retain = float(value) if re.fullmatch(r"[0-9]+(?:\.[0-9]*)?(?:E[+-]?[0-9]+)?", value) else None
                if retain is None or len(words) < 3 or words[2] != "HOURS" or retain < 0:
                    raise StatementParseError(
                        f"{head}: RETAIN needs a number of hours >= 0 (RETAIN 168 HOURS), not {' '.join(words[:3])!r}"
                    )
                words = words[3:]
            elif words[:2] == ["DRY", "RUN"]:
                dry, words = True, words[2:]
            else:
                raise StatementParseError(
                    f"{head}: unexpected {words[0]!r}", help="Write VACUUM t [RETAIN <hours> HOURS] [DRY RUN]."
                )
        return VacuumSpec(name, retain, dry)
    if kind == "CHECK TABLE":
        if words not in ([], ["REPAIR"]):
            raise StatementParseError(f"{head}: unexpected {words[0]!r}", help="Write CHECK TABLE t [REPAIR].")
        return CheckSpec(name, repair=bool(words))
    if words:
        what = {"WHERE": "OPTIMIZE ... WHERE", "ZORDER": "OPTIMIZE ... ZORDER BY"}.get(words[0], f"{words[0]!r}")
        raise StatementParseError(
            f"{head}: {what} is not supported on tablet tables",
            help="Write OPTIMIZE t; new tablets follow the table's cluster_by property.",
        )
    return OptimizeSpec(name)


def may_time_travel(text: str) -> bool:
    """Cheap: whether ``text`` may hold ``VERSION AS OF`` / ``TIMESTAMP AS OF``."""
    return _AS_OF.search(text) is not None


def as_of(version: exp.Expr) -> AsOf:
    """The ``AS OF`` of a table reference sqlglot parsed (``exp.Version``)."""
    kind = str(version.name).upper()
    value = version.args.get("expression")
    if str(version.args.get("kind", "")).upper() != "AS OF" or not isinstance(value, exp.Expr):
        raise StatementParseError(
            f"{kind} {version.args.get('kind')}: only VERSION AS OF and TIMESTAMP AS OF are supported"
        )
    if kind == "VERSION":
        if not (isinstance(value, exp.Literal) and not value.is_string and value.name.isdigit()):
            raise StatementParseError(
                f"VERSION AS OF {to_sql(value)}: a version is a whole number >= 0",
                help="Pick a version from DESCRIBE HISTORY.",
            )
        return AsOf(version=int(value.name))
    return AsOf(timestamp=to_sql(value))
