"""Statement text -> spec, with sqlglot (Spark dialect). Never hand-written parsing.

``statement_target`` is the cheap router question (does this statement write a table, which
one?); ``parse_statement`` builds the frozen spec the planner takes. Expressions are re-emitted
as Spark SQL text with the aliases as written.
"""

from __future__ import annotations

import functools
import logging
import re

import sqlglot
from sqlglot import exp

from tablets.exceptions import MergeSpecError, StatementParseError
from tablets.spec import (
    ALLOWED_ACTIONS,
    ActionKind,
    AlterColumnsSpec,
    AppendSpec,
    AsOf,
    Category,
    Clause,
    CreateSpec,
    DropSpec,
    HistorySpec,
    MaintenanceSpec,
    MergeSpec,
    OptimizeSpec,
    RestoreSpec,
    Source,
    VacuumSpec,
)
from tablets.sqltext import DIALECT, quote_ident


class _CommandFallback(logging.Filter):
    """Drops sqlglot's "contains unsupported syntax. Falling back to parsing as a 'Command'":
    statements are parsed here only to route them (a ``SHOW DATABASES`` is Spark's either way),
    and dbt runs such statements on every connection, each one a warning in the user's log."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Falling back to parsing as a 'Command'" not in record.getMessage()


logging.getLogger("sqlglot").addFilter(_CommandFallback())

_WRITE_START = re.compile(r"^\s*(?:--[^\n]*\n\s*|/\*.*?\*/\s*)*(MERGE|INSERT|UPDATE|DELETE|CREATE|REPLACE|DROP|ALTER)\b", re.IGNORECASE | re.DOTALL)

Spec = MergeSpec | AppendSpec | CreateSpec | DropSpec | AlterColumnsSpec


@functools.lru_cache(maxsize=4)
def _parsed(text: str) -> exp.Expr:
    """One parse per statement text: routing, the provider check and the spec all read it."""
    trees = [t for t in sqlglot.parse(text, read=DIALECT) if t is not None]
    if not trees:
        raise sqlglot.errors.ParseError("empty statement")
    if len(trees) > 1:
        raise sqlglot.errors.ParseError("more than one statement: run them one at a time")
    return trees[0]


def _parse(text: str) -> exp.Expr:
    _check_tokens(text)
    try:
        return _parsed(text).copy()  # a copy: building the spec may rewrite the tree
    except sqlglot.errors.SqlglotError as e:
        raise StatementParseError(f"{_head(text)}: {parse_error_text(e)}") from e


def _head(text: str) -> str:
    """The statement's first words, to name it in a message (``MERGE INTO db.t``)."""
    words = text.split()
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
        before = text[tokens[max(0, i - 4)].start: tokens[i].end + 1]
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
                raise StatementParseError(f"{head}: SET must come before WHERE (UPDATE t SET col = value WHERE condition)")


def table_name(table: exp.Expr) -> str:
    """``db.t`` as written, without quotes."""
    if isinstance(table, exp.Schema):
        table = table.this
    if not isinstance(table, exp.Expr):  # sqlglot leaves False for a missing table
        return ""
    parts = [table.args.get("catalog"), table.args.get("db"), table.this]
    return ".".join(p.name for p in parts if p is not None and p.name)


def _needs_quotes(ident: exp.Expr) -> bool:
    return not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", ident.name or "")


def _sql(e: exp.Expr | None) -> str:
    return e.sql(dialect=DIALECT) if e is not None else ""


def statement_target(text: str) -> tuple[str, str] | None:
    """(kind, table) when ``text`` writes a table, else None. Never raises."""
    if not _WRITE_START.match(text):
        return None
    try:
        tree = _parsed(text)
    except sqlglot.errors.SqlglotError:
        return None
    if isinstance(tree, exp.Merge | exp.Insert | exp.Update | exp.Delete) and not isinstance(tree.this, exp.Expr):
        return None  # sqlglot accepted a statement with no table
    if isinstance(tree, exp.Merge):
        return "MERGE", table_name(tree.this)
    if isinstance(tree, exp.Insert) and isinstance(tree.this, (exp.Table, exp.Schema)):
        return "INSERT", table_name(tree.this)
    if isinstance(tree, exp.Update):
        return "UPDATE", table_name(tree.this)
    if isinstance(tree, exp.Delete):
        return "DELETE", table_name(tree.this)
    if isinstance(tree, exp.Create) and str(tree.args.get("kind", "")).upper() == "TABLE":
        return "CREATE", table_name(tree.this)
    if isinstance(tree, exp.Drop) and str(tree.args.get("kind", "")).upper() == "TABLE":
        return "DROP", table_name(tree.args["tables"][0])
    if isinstance(tree, exp.Alter) and str(tree.args.get("kind", "")).upper() == "TABLE":
        return "ALTER", table_name(tree.this)
    return None


def create_provider(text: str) -> str | None:
    """The ``USING <provider>`` of a CREATE TABLE statement, lower case, or None."""
    try:
        tree = _parsed(text)
    except sqlglot.errors.SqlglotError:
        return None
    props = tree.args.get("properties") if isinstance(tree, exp.Create) else None
    for p in props.expressions if props else ():
        if isinstance(p, exp.FileFormatProperty):
            return p.name.lower()
    return None


def parse_statement(text: str, *, default_source_alias: str = "s") -> Spec:
    tree = _parse(text)
    if isinstance(tree, exp.Merge):
        return _merge(tree, default_source_alias)
    if isinstance(tree, exp.Insert):
        return _insert(tree)
    if isinstance(tree, exp.Update):
        return _update(tree)
    if isinstance(tree, exp.Delete):
        return _delete(tree)
    if isinstance(tree, exp.Create):
        return _create(tree)
    if isinstance(tree, exp.Drop):
        return DropSpec(table_name(tree.args["tables"][0]), if_exists=bool(tree.args.get("exists")))
    if isinstance(tree, exp.Alter):
        from tablets.sql.alter import alter_columns  # (it builds on this module's helpers)

        return alter_columns(tree)
    raise StatementParseError(f"not a statement that writes a tablet table: {text.strip()[:80]!r}")


# --- MERGE ---------------------------------------------------------------------------------


def _alias_of(e: exp.Expr) -> str | None:
    alias = e.args.get("alias")
    return alias.name if alias is not None and alias.name else None


def _source(using: exp.Expr, default_alias: str) -> tuple[Source, str]:
    alias = _alias_of(using)
    if isinstance(using, exp.Table):
        name = table_name(using)
        fmt = using.args.get("db")
        if fmt is not None and fmt.name.lower() != "tablets" and _needs_quotes(using.this):
            # a file read by path (parquet.`/data/x`): a name without its quotes means nothing
            bare = using.copy()
            bare.set("alias", None)
            return Source(query=f"SELECT * FROM {_sql(bare)}"), alias or using.name.rstrip("/").rsplit("/", 1)[-1]
        if isinstance(using.args.get("version"), exp.Version):  # an old version of the source: read as a query
            bare = using.copy()
            bare.set("alias", None)
            return Source(query=f"SELECT * FROM {_sql(bare)}"), alias or using.name
        return Source(table=name), alias or using.name
    if isinstance(using, exp.Subquery):
        return Source(query=_sql(using.this)), alias or default_alias
    if isinstance(using, exp.Values):
        return Source(query=f"SELECT * FROM {_sql(using)}"), alias or default_alias
    raise StatementParseError(f"USING: unsupported source {_sql(using)!r}", help="Use a table, a view, a subquery or VALUES.")


def _category(when: exp.When) -> Category:
    if when.args.get("matched"):
        return Category.MATCHED
    return Category.NOT_MATCHED_BY_SOURCE if when.args.get("source") else Category.NOT_MATCHED


def _column_name(e: exp.Expr) -> str:
    return e.name if isinstance(e, (exp.Column, exp.Identifier)) else _sql(e)


def _clause(when: exp.When, number: int, target: str, target_alias: str) -> Clause:
    category = _category(when)
    cond = when.args.get("condition")
    condition = _sql(cond) if cond is not None else None
    then = when.args.get("then")
    part = f"WHEN {category.value} clause #{number}"
    if isinstance(then, exp.Var):
        word = then.name.upper()
        action = {"DELETE": ActionKind.DELETE, "DO NOTHING": ActionKind.DO_NOTHING}.get(word)
        if action is None:
            raise StatementParseError(f"MERGE INTO {target}: {part}: unknown action {word!r}")
        clause = Clause(category, action, condition)
    elif isinstance(then, exp.Update):
        items = then.expressions
        if len(items) == 1 and isinstance(items[0], exp.Star):
            clause = Clause(category, ActionKind.UPDATE, condition, star=True)
        else:
            _check_set(items, f"MERGE INTO {target}: {part}")
            pairs = []
            for eq in items:
                col = eq.this
                if isinstance(col, exp.Column) and col.table and col.table.lower() != target_alias.lower():
                    raise MergeSpecError(
                        f"MERGE INTO {target}: {part}: SET {_sql(col)} assigns a column of {col.table!r}, not of the target",
                        help=f"Assign target columns only (unqualified, or qualified with {target_alias}).",
                    )
                pairs.append((_column_name(col), _sql(eq.expression)))
            names = [p[0].lower() for p in pairs]
            dup = {n for n in names if names.count(n) > 1}
            if dup:
                raise MergeSpecError(f"MERGE INTO {target}: {part}: column(s) {sorted(dup)} assigned more than once", help="Assign each column once.")
            clause = Clause(category, ActionKind.UPDATE, condition, assignments=tuple(pairs))
    elif isinstance(then, exp.Insert):
        values = then.args.get("expression")  # sqlglot leaves False when VALUES is missing
        if not isinstance(then.this, exp.Star) and not isinstance(values, exp.Expr):
            named = f" ({_sql(then.this)[1:-1]})" if isinstance(then.this, exp.Expr) else ""
            raise StatementParseError(
                f"MERGE INTO {target}: {part}: INSERT{named} needs VALUES (...)" if named else f"MERGE INTO {target}: {part}: INSERT needs * or VALUES (...)",
                help="Write THEN INSERT * or THEN INSERT (col, ...) VALUES (value, ...).",
            )
        if isinstance(then.this, exp.Star):
            clause = Clause(category, ActionKind.INSERT, condition, star=True)
        else:
            cols = tuple(_column_name(c) for c in then.this.expressions) if isinstance(then.this, (exp.Schema, exp.Tuple)) else ()
            vals_node = values
            vals = tuple(_sql(v) for v in vals_node.expressions) if vals_node is not None else ()
            if cols and len(cols) != len(vals):
                raise MergeSpecError(
                    f"MERGE INTO {target}: {part}: INSERT names {len(cols)} columns but gives {len(vals)} values",
                    help="Give one value per named column.",
                )
            clause = Clause(category, ActionKind.INSERT, condition, insert_columns=cols, insert_values=vals)
    else:
        raise StatementParseError(f"MERGE INTO {target}: {part}: unsupported action {_sql(then)!r}")
    if clause.action not in ALLOWED_ACTIONS[category]:
        raise MergeSpecError(
            f"MERGE INTO {target}: {part} ({clause.describe()}): {clause.action.value} is not allowed under WHEN {category.value}",
            help="INSERT belongs under WHEN NOT MATCHED; UPDATE and DELETE under WHEN MATCHED or WHEN NOT MATCHED BY SOURCE.",
        )
    return clause


def _current(table: exp.Expr, statement: str) -> None:
    """A write's target is the table's current version: ``VERSION AS OF`` / ``TIMESTAMP AS OF``
    on it is refused (only reads travel in time)."""
    node = table.this if isinstance(table, exp.Schema) else table
    version = node.args.get("version") if isinstance(node, exp.Table) else None
    if isinstance(version, exp.Version):
        name = table_name(node)
        raise StatementParseError(
            f"{statement} {name} {_sql(version)}: a write changes the table's current version, not an old one",
            help=f"Leave {_sql(version)} out to write the current version, or RESTORE TABLE {name} TO "
            f"{_sql(version)} first and write after it.",
        )


def _merge(tree: exp.Merge, default_source_alias: str) -> MergeSpec:
    _current(tree.this, "MERGE INTO")
    target = table_name(tree.this)
    target_alias = _alias_of(tree.this) or tree.this.name
    source, source_alias = _source(tree.args["using"], default_source_alias)
    on = tree.args.get("on")
    if on is None:
        raise StatementParseError(f"MERGE INTO {target}: no ON condition", help="Add ON <target>.<key> = <source>.<key>.")
    whens = tree.args.get("whens")
    clauses = tuple(
        _clause(w, i + 1, target, target_alias) for i, w in enumerate(whens.expressions if whens else ())
    )
    return MergeSpec(
        target=target,
        target_alias=target_alias,
        source=source,
        source_alias=source_alias,
        on=_sql(on),
        clauses=clauses,
        null_safe=any(True for _ in on.find_all(exp.NullSafeEQ)),
    )


# --- INSERT / UPDATE / DELETE ----------------------------------------------------------------


def _insert(tree: exp.Insert) -> MergeSpec | AppendSpec:
    target_node = tree.this
    _current(target_node, "INSERT OVERWRITE" if tree.args.get("overwrite") else "INSERT INTO")
    target = table_name(target_node)
    columns = tuple(c.name for c in target_node.expressions) if isinstance(target_node, exp.Schema) else ()
    query_node = tree.args.get("expression")
    if query_node is None:
        raise StatementParseError(f"INSERT INTO {target}: no VALUES or query")
    if isinstance(query_node, exp.Values):
        widths = {len(r.expressions) if isinstance(r, exp.Tuple) else 1 for r in query_node.expressions}
        if len(widths) > 1:
            raise StatementParseError(f"INSERT INTO {target}: VALUES rows of different lengths {sorted(widths)}", help="Give every row the same number of values.")
        if columns and widths != {len(columns)}:
            raise StatementParseError(
                f"INSERT INTO {target}: names {len(columns)} columns ({', '.join(columns)}) but VALUES gives {widths.pop()}",
                help="Give one value per named column.",
            )
    query = _sql(query_node) if not isinstance(query_node, exp.Values) else f"SELECT * FROM {_sql(query_node)}"
    conflict = tree.args.get("conflict")
    if conflict is None:
        return AppendSpec(target, query, columns, overwrite=bool(tree.args.get("overwrite")))
    if tree.args.get("overwrite"):
        raise StatementParseError(
            f"INSERT OVERWRITE {target} ... ON CONFLICT: OVERWRITE replaces every row, so no existing row can conflict",
            help=f"Use INSERT INTO {target} ... ON CONFLICT to keep the other rows, or INSERT OVERWRITE without ON CONFLICT.",
        )
    return _on_conflict(target, columns, query, conflict)


def _on_conflict(target: str, columns: tuple[str, ...], query: str, conflict: exp.OnConflict) -> MergeSpec:
    """INSERT ... ON CONFLICT as MERGE (the seed's rewrite): the inserted rows are the source,
    aliased ``excluded``."""
    alias = target.split(".")[-1]
    if alias.lower() == "excluded":  # the incoming rows' name: the table is called otherwise here
        alias = "existing"
    keys = [k.this if isinstance(k, exp.Ordered) else k for k in conflict.args.get("conflict_keys") or ()]
    if not keys:
        raise MergeSpecError(f"INSERT INTO {target}: ON CONFLICT needs the conflict columns", help="Write ON CONFLICT (key, ...).")
    on = " AND ".join(f"{quote_ident(alias)}.{quote_ident(_column_name(k))} = excluded.{quote_ident(_column_name(k))}" for k in keys)
    if columns:
        cols = ", ".join(quote_ident(c) for c in columns)
        query = f"SELECT * FROM ({query}) AS excluded({cols})"
        insert = Clause(Category.NOT_MATCHED, ActionKind.INSERT, insert_columns=columns, insert_values=tuple(f"excluded.{quote_ident(c)}" for c in columns))
    else:
        insert = Clause(Category.NOT_MATCHED, ActionKind.INSERT, star=True)
    action = conflict.args.get("action")
    word = action.name.upper() if action is not None else ""
    clauses: tuple[Clause, ...]
    if not word:
        raise StatementParseError(
            f"INSERT INTO {target}: ON CONFLICT ({', '.join(_column_name(k) for k in keys)}) needs an action",
            help="Write DO NOTHING or DO UPDATE SET column = value[, ...].",
        )
    if word == "DO NOTHING":
        clauses = (insert,)
    elif word == "DO UPDATE":
        _check_set(conflict.expressions, f"INSERT INTO {target}: ON CONFLICT DO UPDATE")
        def existing_row(e: exp.Expr) -> str:
            """PostgreSQL's scoping: ``excluded.c`` is the incoming row, a bare ``c`` the existing one."""
            e = e.copy()
            for col in e.find_all(exp.Column):
                t = col.table.lower()
                if t == "excluded":
                    col.set("table", exp.to_identifier("excluded"))
                elif not t or t == alias.lower():
                    col.set("table", exp.to_identifier(alias, quoted=True))
            return _sql(e)

        pairs = [(_column_name(eq.this), existing_row(eq.expression)) for eq in conflict.expressions]
        where = conflict.args.get("where")
        if isinstance(where, exp.Where):
            where = where.this
        condition = existing_row(where) if isinstance(where, exp.Expr) else None
        clauses = (Clause(Category.MATCHED, ActionKind.UPDATE, condition, tuple(pairs)), insert)
    else:
        raise StatementParseError(f"INSERT INTO {target}: unsupported ON CONFLICT action {word!r}", help="Use DO NOTHING or DO UPDATE SET ...")
    return MergeSpec(
        target, alias, Source(query=query), "excluded", on, clauses, operation="INSERT",
        conflict_keys=tuple(_column_name(k) for k in keys),
    )


def _check_set(items: list[exp.Expr], where: str) -> None:
    """SET assigns something, each item ``column = value``, each column once."""
    if not items:
        raise StatementParseError(f"{where}: SET assigns nothing", help="Write SET column = value[, ...].")
    names = []
    for eq in items:
        if not isinstance(eq, exp.EQ) or not isinstance(eq.this, exp.Column | exp.Identifier):
            raise StatementParseError(
                f"{where}: SET {_sql(eq)!r} is not an assignment", help="Write SET column = value[, ...]."
            )
        names.append(eq.this.name.lower())
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise MergeSpecError(f"{where}: column(s) {dup} assigned more than once", help="Assign each column once.")


def _where(tree: exp.Expr) -> str | None:
    where = tree.args.get("where")
    return _sql(where.this) if where is not None else None


def _update(tree: exp.Update) -> MergeSpec:
    _current(tree.this, "UPDATE")
    target = table_name(tree.this)
    alias = _alias_of(tree.this) or tree.this.name
    if isinstance(tree.args.get("from_"), exp.Expr) or isinstance(tree.args.get("from"), exp.Expr):
        raise StatementParseError(f"UPDATE {target}: UPDATE ... FROM is not supported", help="Write it as MERGE INTO ... USING.")
    _check_set(tree.expressions, f"UPDATE {target}")
    pairs = tuple((_column_name(eq.this), _sql(eq.expression)) for eq in tree.expressions)
    clause = Clause(Category.NOT_MATCHED_BY_SOURCE, ActionKind.UPDATE, _where(tree), assignments=pairs)
    return MergeSpec(target, alias, None, "", None, (clause,), operation="UPDATE")


def _delete(tree: exp.Delete) -> MergeSpec:
    if not isinstance(tree.this, exp.Table):
        raise StatementParseError("DELETE: no table", help="Write DELETE FROM table [WHERE condition].")
    if isinstance(tree.args.get("using"), exp.Expr):
        raise StatementParseError(f"DELETE FROM {table_name(tree.this)}: DELETE ... USING is not supported", help="Write it as MERGE INTO ... USING ... WHEN MATCHED THEN DELETE.")
    _current(tree.this, "DELETE FROM")
    target = table_name(tree.this)
    alias = _alias_of(tree.this) or tree.this.name
    clause = Clause(Category.NOT_MATCHED_BY_SOURCE, ActionKind.DELETE, _where(tree))
    return MergeSpec(target, alias, None, "", None, (clause,), operation="DELETE")


# --- CREATE ------------------------------------------------------------------------------------


def _create(tree: exp.Create) -> CreateSpec:
    this = tree.this
    target = table_name(this)
    columns_ddl = None
    if isinstance(this, exp.Schema) and this.expressions:
        defs = [c for c in this.expressions if isinstance(c, exp.ColumnDef)]
        columns_ddl = ", ".join(f"{quote_ident(c.name)} {_column_type(c, f'CREATE TABLE {target}')}" for c in defs)
    props: dict[str, str] = {}
    location = None
    for p in tree.args["properties"].expressions if tree.args.get("properties") else ():
        if isinstance(p, exp.FileFormatProperty):
            continue
        if isinstance(p, exp.LocationProperty):
            location = p.this.name
        elif isinstance(p, exp.OptionsProperty):
            props.update({q.name: q.args["value"].name for q in p.expressions})
        elif isinstance(p, exp.Property):
            props[p.name] = p.args["value"].name
    query = tree.args.get("expression")
    return CreateSpec(
        target=target,
        columns_ddl=columns_ddl,
        query=_sql(query) if query is not None else None,
        replace=bool(tree.args.get("replace")),
        if_not_exists=bool(tree.args.get("exists")),
        location=location,
        properties=tuple(sorted(props.items())),
    )


def _column_type(col: exp.ColumnDef, where: str) -> str:
    """A column's type as tablets store it: ``CHAR(n)``/``VARCHAR(n)`` are strings (as Spark
    reads them; the length is not enforced); constraints other than NOT NULL and COMMENT are
    refused, not dropped."""
    for c in col.args.get("constraints") or ():
        kind = c.args.get("kind")
        if isinstance(kind, exp.CollateColumnConstraint):
            raise StatementParseError(
                f"{where}: column {col.name}: {_sql(c)} is not supported on tablet tables",
                help="Tablet tables compare strings byte by byte (Spark's UTF8_BINARY): drop COLLATE, "
                "and compare with lower(col) or col COLLATE UTF8_LCASE in queries.",
            )
        if not isinstance(kind, exp.NotNullColumnConstraint | exp.CommentColumnConstraint):
            raise StatementParseError(
                f"{where}: column {col.name}: {_sql(c)} is not supported on tablet tables",
                help="Drop the constraint; fill the column with UPDATE after adding it.",
            )
    kind = col.args["kind"]
    if isinstance(kind, exp.DataType) and kind.this in (exp.DataType.Type.CHAR, exp.DataType.Type.VARCHAR):
        return "STRING"
    return _sql(kind)


# --- table maintenance: DESCRIBE HISTORY, RESTORE, VACUUM, OPTIMIZE; time travel ----------------
# sqlglot parses none of the four statements (it keeps VACUUM and OPTIMIZE as an opaque Command),
# so the leading words pick the statement and sqlglot's tokenizer reads the rest.

_MAINTENANCE_START = re.compile(
    r"^\s*(?:--[^\n]*\n\s*|/\*.*?\*/\s*)*(?P<kind>DESCRIBE\s+HISTORY|RESTORE(?:\s+TABLE)?|VACUUM|OPTIMIZE)\b",
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
        tokens = sqlglot.tokenize(text[m.end():], read=DIALECT)
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
    rest = tokens[i + 3:]
    if not rest:
        raise StatementParseError(f"{head}: {words[0]} AS OF needs a value", help=f"Write {words[0]} AS OF <value>.")
    if words[0] == "VERSION":
        if len(rest) != 1 or rest[0].token_type.name != "NUMBER" or not rest[0].text.isdigit():
            shown = text[rest[0].start:].strip()
            raise StatementParseError(
                f"{head}: VERSION AS OF {shown!r}: a version is a whole number >= 0",
                help="Pick a version from DESCRIBE HISTORY.",
            )
        return AsOf(version=int(rest[0].text))
    return AsOf(timestamp=text[rest[0].start:].strip().rstrip(";").strip())


def parse_maintenance(text: str) -> MaintenanceSpec:
    """DESCRIBE HISTORY, RESTORE, VACUUM or OPTIMIZE -> its spec; ``StatementParseError`` names
    the part that is wrong."""
    m = _MAINTENANCE_START.match(text)
    if m is None:
        raise StatementParseError(f"not a maintenance statement: {text.strip()[:80]!r}")
    kind = " ".join(m.group("kind").upper().split())
    kind = "RESTORE" if kind.startswith("RESTORE") else kind
    body = text[m.end():].strip().rstrip(";")
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
            raise StatementParseError(f"{head}: expected LIMIT <number of versions> after the table name, not {body[tokens[i].start:]!r}")
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
                try:
                    retain = float(value)
                except ValueError:
                    retain = None
                if retain is None or len(words) < 3 or words[2] != "HOURS" or retain < 0:
                    raise StatementParseError(
                        f"{head}: RETAIN needs a number of hours >= 0 (RETAIN 168 HOURS), not {' '.join(words[:3])!r}"
                    )
                words = words[3:]
            elif words[:2] == ["DRY", "RUN"]:
                dry, words = True, words[2:]
            else:
                raise StatementParseError(f"{head}: unexpected {words[0]!r}", help="Write VACUUM t [RETAIN <hours> HOURS] [DRY RUN].")
        return VacuumSpec(name, retain, dry)
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
        raise StatementParseError(f"{kind} {version.args.get('kind')}: only VERSION AS OF and TIMESTAMP AS OF are supported")
    if kind == "VERSION":
        if not (isinstance(value, exp.Literal) and not value.is_string and value.name.isdigit()):
            raise StatementParseError(
                f"VERSION AS OF {_sql(value)}: a version is a whole number >= 0", help="Pick a version from DESCRIBE HISTORY."
            )
        return AsOf(version=int(value.name))
    return AsOf(timestamp=_sql(value))
