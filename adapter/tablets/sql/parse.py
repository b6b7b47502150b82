"""Statement text -> spec, with sqlglot (Spark dialect). Never hand-written parsing.

``statement_target`` is the cheap router question (does this statement write a table, which
one?); ``parse_statement`` builds the frozen spec the planner takes. Expressions are parsed here
once and carried as ``Expr`` (their trees, and their Spark SQL with the aliases as written).
"""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp

from tablets.exceptions import MergeSpecError, StatementParseError
from tablets.spec import (
    ALLOWED_ACTIONS,
    ActionKind,
    AlterColumnsSpec,
    AppendSpec,
    Category,
    Clause,
    CreateSpec,
    DropSpec,
    MergeSpec,
    Source,
)
from tablets.spec.expr import Expr, all_of, column
from tablets.sql.alter import FORMS, alter_columns
from tablets.sql.create import create_statement
from tablets.sql.syntax import needs_quotes, parse_sql, parsed_sql, table_name, to_sql
from tablets.sqltext import quote_ident, repeated_names

_WRITE_START = re.compile(
    r"^\s*(?:--[^\n]*\n\s*|/\*.*?\*/\s*)*(MERGE|INSERT|UPDATE|DELETE|CREATE|REPLACE|DROP|ALTER)\b",
    re.IGNORECASE | re.DOTALL,
)
Spec = MergeSpec | AppendSpec | CreateSpec | DropSpec | AlterColumnsSpec
# Databricks' and Spark 4.1's MERGE WITH SCHEMA EVOLUTION, which sqlglot does not know: the
# words are taken off (and remembered) before it parses the MERGE they qualify
_EVOLUTION = re.compile(
    r"^(\s*(?:--[^\n]*\n\s*|/\*.*?\*/\s*)*MERGE)\s+WITH\s+SCHEMA\s+EVOLUTION\b", re.IGNORECASE | re.DOTALL
)


def schema_evolution(text: str) -> tuple[str, bool]:
    """``text`` without the ``WITH SCHEMA EVOLUTION`` of a MERGE, and whether it had it."""
    plain, n = _EVOLUTION.subn(r"\1", text, count=1)
    return plain, bool(n)


def statement_target(text: str) -> tuple[str, str] | None:
    """(kind, table) when ``text`` writes a table, else None. Never raises."""
    found = read_target(text)
    return None if found is None else found[:2]


def read_target(text: str) -> tuple[str, str, exp.Expr | None] | None:
    """(kind, table, sqlglot's tree or None) when ``text`` writes a table, else None: the one
    parse of a statement that writes (``parse_statement`` takes the tree). Never raises."""
    if not _WRITE_START.match(text):
        return None
    text, _ = schema_evolution(text)
    tree = _tree(text)
    if tree is None or _alter_command(tree):
        found = _unread_target(text)
        return None if found is None else (*found, None)
    target = _target_of(tree)
    return None if target is None else (*target, tree)


def _target_of(tree: exp.Expr) -> tuple[str, str] | None:
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


# a statement sqlglot cannot read, by its leading words: CREATE / REPLACE TABLE ... USING tablets,
# ALTER TABLE, INSERT OVERWRITE
_NAME_PART = r"(?:`(?:[^`]|``)*`|\w+)"
_NAME = rf"(?P<name>{_NAME_PART}(?:\s*\.\s*{_NAME_PART})*)"
_UNREAD = re.compile(
    r"^\s*(?:(?P<create>(?:CREATE\s+(?:OR\s+REPLACE\s+)?|REPLACE\s+)(?:TEMPORARY\s+|EXTERNAL\s+)?TABLE"
    r"\s+(?:IF\s+NOT\s+EXISTS\s+)?)|(?P<alter>ALTER\s+TABLE\s+)|(?P<insert>INSERT\s+OVERWRITE\s+(?:TABLE\s+)?))"
    + _NAME,
    re.IGNORECASE,
)
_USING = re.compile(r"\bUSING\s+(?P<provider>\w+)", re.IGNORECASE)


def _unread_target(text: str) -> tuple[str, str] | None:
    """(kind, table) of a statement sqlglot cannot read that the front door must answer (with
    sqlglot's reason, ``parse_statement``) when the table is a tablet table or USING tablets
    makes one: Spark's own path made a catalog entry no tablet table stands behind, dropped the
    view a REPLACE TABLE named, or said the table 'does not support table constraint'."""
    m = _UNREAD.match(text)
    if m is None:
        return None
    if m.group("create"):
        using = _USING.search(text)
        if using is None or using.group("provider").lower() != "tablets":
            return None
    kind = "CREATE" if m.group("create") else "ALTER" if m.group("alter") else "INSERT"
    parts = re.findall(_NAME_PART, m.group("name"))
    return kind, ".".join(p[1:-1].replace("``", "`") if p.startswith("`") else p for p in parts)


def _alter_command(tree: exp.Expr) -> bool:
    """An ALTER sqlglot kept as an opaque Command (``ADD COLUMNS (...) FIRST``, a type it does not
    know): Spark ran it on the tablet table's catalog entry alone."""
    return isinstance(tree, exp.Command) and str(tree.this).upper() == "ALTER"


def _tree(text: str) -> exp.Expr | None:
    """``text`` parsed, or None where sqlglot cannot (the statement is then Spark's to judge)."""
    try:
        return parsed_sql(text)
    except sqlglot.errors.SqlglotError:
        return None


def _create_properties(text: str) -> list[exp.Expr]:
    tree = _tree(text)
    props = tree.args.get("properties") if isinstance(tree, exp.Create) else None
    return list(props.expressions) if props else []


def truncated_table(text: str) -> tuple[str, str, str | None] | None:
    """(name, the table as SQL, its PARTITION clause or None) of a TRUNCATE TABLE, or None."""
    tree = _tree(text)
    if not isinstance(tree, exp.TruncateTable) or len(tree.expressions) != 1:
        return None
    table, partition = tree.expressions[0], tree.args.get("partition")
    return table_name(table), to_sql(table), to_sql(partition) if partition is not None else None


def altered_clustering(text: str) -> tuple[str, str, tuple[str, ...]] | None:
    """(name, the table as SQL, its columns) of ``ALTER TABLE t CLUSTER BY (cols)``, or None."""
    tree = _tree(text)
    if not isinstance(tree, exp.Alter):
        return None
    actions = tree.args.get("actions") or []
    if len(actions) != 1 or not isinstance(actions[0], exp.ClusterProperty):
        return None
    return table_name(tree.this), to_sql(tree.this), tuple(c.name for c in actions[0].expressions)


def create_like(text: str) -> str | None:
    """The source table of a ``CREATE TABLE t LIKE s`` statement, or None."""
    return next((table_name(p.this) for p in _create_properties(text) if isinstance(p, exp.LikeProperty)), None)


def like_with_columns(text: str, columns_ddl: str) -> str:
    """``CREATE TABLE t LIKE s ...`` as ``CREATE TABLE t (<columns_ddl>) ...``, its other
    clauses as written."""
    tree = _tree(text)
    assert isinstance(tree, exp.Create)
    columns = sqlglot.parse_one(f"CREATE TABLE x ({columns_ddl})", read="spark").this.expressions
    tree.set("this", exp.Schema(this=tree.this, expressions=columns))
    props = tree.args["properties"]
    props.set("expressions", [p for p in props.expressions if not isinstance(p, exp.LikeProperty)])
    return to_sql(tree)


def create_provider(text: str) -> str | None:
    """The ``USING <provider>`` of a CREATE TABLE statement, lower case, or None."""
    if _tree(text) is None:
        found = _unread_target(text)
        return "tablets" if found is not None and found[0] == "CREATE" else None
    return next((p.name.lower() for p in _create_properties(text) if isinstance(p, exp.FileFormatProperty)), None)


def parse_statement(text: str, *, default_source_alias: str = "s", tree: exp.Expr | None = None) -> Spec:
    """The spec of ``text``; ``tree``: sqlglot's parse of it (``read_target``'s), not parsed again."""
    text, evolve = schema_evolution(text)
    tree = parse_sql(text, tree)
    if isinstance(tree, exp.Merge):
        return _merge(tree, default_source_alias, evolve)
    if isinstance(tree, exp.Insert):
        return _insert(tree)
    if isinstance(tree, exp.Update):
        return _update(tree)
    if isinstance(tree, exp.Delete):
        return _delete(tree)
    if isinstance(tree, exp.Create):
        return create_statement(tree)
    if isinstance(tree, exp.Drop):
        return DropSpec(table_name(tree.args["tables"][0]), if_exists=bool(tree.args.get("exists")))
    if isinstance(tree, exp.Alter):
        return alter_columns(tree)
    found = _unread_target(text) if _alter_command(tree) else None
    if found is not None:
        m = _UNREAD.match(text)
        rest = text[m.end() :].strip() if m is not None else text
        raise StatementParseError(
            f"ALTER TABLE {found[1]}: {rest[:200]!r} is not a form tablet tables take (one of: {FORMS})",
            help="Rebuild the table (dbt --full-refresh) for other schema changes.",
        )
    raise StatementParseError(f"not a statement that writes a tablet table: {text.strip()[:80]!r}")


# --- MERGE ---------------------------------------------------------------------------------


def _own_name(table: exp.Expr) -> str:
    """What a target without an alias is called in its statement: its name, or for a table
    named by its path (``tablets.`/data/v1.2/stock```) the path's last part where that is an
    identifier (``stock``), else ``target``: a path is no SQL identifier."""
    if isinstance(table, exp.Schema):
        table = table.this
    name = table.name
    if "/" not in name:
        return name
    last = name.rstrip("/").rsplit("/", 1)[-1]
    return last if re.fullmatch(r"[A-Za-z_]\w*", last) else "target"


def _alias_of(e: exp.Expr) -> str | None:
    alias = e.args.get("alias")
    return alias.name if alias is not None and alias.name else None


def _source(using: exp.Expr, default_alias: str) -> tuple[Source, str]:
    alias = _alias_of(using)
    if isinstance(using, exp.Table):
        name = table_name(using)
        fmt = using.args.get("db")
        if fmt is not None and fmt.name.lower() != "tablets" and needs_quotes(using.this):
            # a file read by path (parquet.`/data/x`): a name without its quotes means nothing
            bare = using.copy()
            bare.set("alias", None)
            return Source(query=f"SELECT * FROM {to_sql(bare)}"), alias or using.name.rstrip("/").rsplit("/", 1)[-1]
        if isinstance(using.args.get("version"), exp.Version):  # an old version of the source: read as a query
            bare = using.copy()
            bare.set("alias", None)
            return Source(query=f"SELECT * FROM {to_sql(bare)}"), alias or using.name
        return Source(table=name), alias or using.name
    if isinstance(using, exp.Subquery):
        return Source(query=to_sql(using.this)), alias or default_alias
    if isinstance(using, exp.Values):
        return Source(query=f"SELECT * FROM {to_sql(using)}"), alias or default_alias
    raise StatementParseError(
        f"USING: unsupported source {to_sql(using)!r}", help="Use a table, a view, a subquery or VALUES."
    )


def _category(when: exp.When) -> Category:
    if when.args.get("matched"):
        return Category.MATCHED
    return Category.NOT_MATCHED_BY_SOURCE if when.args.get("source") else Category.NOT_MATCHED


def _column_name(e: exp.Expr) -> str:
    return e.name if isinstance(e, (exp.Column, exp.Identifier)) else to_sql(e)


def _clause(when: exp.When, number: int, target: str, target_alias: str) -> Clause:
    category = _category(when)
    cond = when.args.get("condition")
    condition = Expr.of(cond) if cond is not None else None
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
                        f"MERGE INTO {target}: {part}: SET {to_sql(col)} assigns a column of {col.table!r}, not of the target",
                        help=f"Assign target columns only (unqualified, or qualified with {target_alias}).",
                    )
                pairs.append((_column_name(col), Expr.of(eq.expression)))
            names = [p[0].lower() for p in pairs]
            dup = {n for n in names if names.count(n) > 1}
            if dup:
                raise MergeSpecError(
                    f"MERGE INTO {target}: {part}: column(s) {sorted(dup)} assigned more than once",
                    help="Assign each column once.",
                )
            clause = Clause(category, ActionKind.UPDATE, condition, assignments=tuple(pairs))
    elif isinstance(then, exp.Insert):
        values = then.args.get("expression")  # sqlglot leaves False when VALUES is missing
        if not isinstance(then.this, exp.Star) and not isinstance(values, exp.Expr):
            named = f" ({to_sql(then.this)[1:-1]})" if isinstance(then.this, exp.Expr) else ""
            raise StatementParseError(
                f"MERGE INTO {target}: {part}: INSERT{named} needs VALUES (...)"
                if named
                else f"MERGE INTO {target}: {part}: INSERT needs * or VALUES (...)",
                help="Write THEN INSERT * or THEN INSERT (col, ...) VALUES (value, ...).",
            )
        if isinstance(then.this, exp.Star):
            clause = Clause(category, ActionKind.INSERT, condition, star=True)
        else:
            cols = (
                tuple(_column_name(c) for c in then.this.expressions)
                if isinstance(then.this, (exp.Schema, exp.Tuple))
                else ()
            )
            vals_node = values
            vals = tuple(Expr.of(v) for v in vals_node.expressions) if vals_node is not None else ()
            if cols and len(cols) != len(vals):
                raise MergeSpecError(
                    f"MERGE INTO {target}: {part}: INSERT names {len(cols)} columns but gives {len(vals)} values",
                    help="Give one value per named column.",
                )
            clause = Clause(category, ActionKind.INSERT, condition, insert_columns=cols, insert_values=vals)
    else:
        raise StatementParseError(f"MERGE INTO {target}: {part}: unsupported action {to_sql(then)!r}")
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
            f"{statement} {name} {to_sql(version)}: a write changes the table's current version, not an old one",
            help=f"Leave {to_sql(version)} out to write the current version, or RESTORE TABLE {name} TO "
            f"{to_sql(version)} first and write after it.",
        )


def _merge(tree: exp.Merge, default_source_alias: str, schema_evolution: bool = False) -> MergeSpec:
    _current(tree.this, "MERGE INTO")
    target = table_name(tree.this)
    target_alias = _alias_of(tree.this) or _own_name(tree.this)
    source, source_alias = _source(tree.args["using"], default_source_alias)
    on = tree.args.get("on")
    if on is None:
        raise StatementParseError(
            f"MERGE INTO {target}: no ON condition", help="Add ON <target>.<key> = <source>.<key>."
        )
    whens = tree.args.get("whens")
    clauses = tuple(_clause(w, i + 1, target, target_alias) for i, w in enumerate(whens.expressions if whens else ()))
    return MergeSpec(
        target=target,
        target_alias=target_alias,
        source=source,
        source_alias=source_alias,
        on=Expr.of(on),
        clauses=clauses,
        null_safe=any(True for _ in on.find_all(exp.NullSafeEQ)),
        schema_evolution=schema_evolution,
    )


# --- INSERT / UPDATE / DELETE ----------------------------------------------------------------


def _insert(tree: exp.Insert) -> MergeSpec | AppendSpec:
    target_node = tree.this
    _current(target_node, "INSERT OVERWRITE" if tree.args.get("overwrite") else "INSERT INTO")
    target = table_name(target_node)
    verb = "INSERT OVERWRITE" if tree.args.get("overwrite") else "INSERT INTO"
    for part, node in (("PARTITION", target_node.args.get("partition")), ("REPLACE WHERE", tree.args.get("where"))):
        if node is not None:  # were taken for a plain INSERT: the wrong rows replaced, or none
            raise StatementParseError(
                f"{verb} {target}: {part} is not supported on tablet tables ({to_sql(node)[:200]})",
                help="Tablet tables are not partitioned. To replace the rows a condition selects, use "
                "MERGE INTO ... ON FALSE WHEN NOT MATCHED BY SOURCE AND <condition> THEN DELETE "
                "WHEN NOT MATCHED THEN INSERT *, or DELETE then INSERT.",
            )
    columns = tuple(c.name for c in target_node.expressions) if isinstance(target_node, exp.Schema) else ()
    repeated = repeated_names(columns)
    if repeated:  # Spark's error named the query's columns, not the list
        raise StatementParseError(
            f"{verb} {target} ({', '.join(columns)}): {', '.join(repeated)} named more than once",
            help="Name each column once.",
        )
    if columns and tree.args.get("by_name"):  # Spark's grammar: a column list or BY NAME
        raise StatementParseError(
            f"{verb} {target} ({', '.join(columns)}) BY NAME: a column list and BY NAME do not go together",
            help=f"Write {verb} {target} BY NAME <query> (the query's columns by their names), or "
            f"{verb} {target} ({', '.join(columns)}) <query> (by position).",
        )
    query_node = tree.args.get("expression")
    if query_node is None:
        raise StatementParseError(f"INSERT INTO {target}: no VALUES or query")
    if isinstance(query_node, exp.Values):
        widths = {len(r.expressions) if isinstance(r, exp.Tuple) else 1 for r in query_node.expressions}
        if len(widths) > 1:
            raise StatementParseError(
                f"INSERT INTO {target}: VALUES rows of different lengths {sorted(widths)}",
                help="Give every row the same number of values.",
            )
        if columns and widths != {len(columns)}:
            raise StatementParseError(
                f"INSERT INTO {target}: names {len(columns)} columns ({', '.join(columns)}) but VALUES gives {widths.pop()}",
                help="Give one value per named column.",
            )
    query = to_sql(query_node) if not isinstance(query_node, exp.Values) else f"SELECT * FROM {to_sql(query_node)}"
    conflict = tree.args.get("conflict")
    if conflict is None:
        return AppendSpec(
            target, query, columns, overwrite=bool(tree.args.get("overwrite")), by_name=bool(tree.args.get("by_name"))
        )
    if tree.args.get("by_name"):
        raise StatementParseError(
            f"INSERT INTO {target} BY NAME ... ON CONFLICT is not supported",
            help="Name the columns instead: INSERT INTO t (a, b) SELECT a, b ... ON CONFLICT ...",
        )
    if tree.args.get("overwrite"):
        raise StatementParseError(
            f"INSERT OVERWRITE {target} ... ON CONFLICT: OVERWRITE replaces every row, so no existing row can conflict",
            help=f"Use INSERT INTO {target} ... ON CONFLICT to keep the other rows, or INSERT OVERWRITE without ON CONFLICT.",
        )
    return _on_conflict(target, _own_name(target_node), columns, query, conflict)


def _on_conflict(target: str, alias: str, columns: tuple[str, ...], query: str, conflict: exp.OnConflict) -> MergeSpec:
    """INSERT ... ON CONFLICT as MERGE (the seed's rewrite): the inserted rows are the source,
    aliased ``excluded``; the table goes by ``alias`` (its name)."""
    if alias.lower() == "excluded":  # the incoming rows' name: the table is called otherwise here
        alias = "existing"
    keys = [k.this if isinstance(k, exp.Ordered) else k for k in conflict.args.get("conflict_keys") or ()]
    if not keys:
        raise MergeSpecError(
            f"INSERT INTO {target}: ON CONFLICT needs the conflict columns", help="Write ON CONFLICT (key, ...)."
        )
    on = Expr.of(
        all_of(
            exp.EQ(
                this=column(_column_name(k), alias, quote_table=True), expression=column(_column_name(k), "excluded")
            )
            for k in keys
        )
    )
    if columns:
        cols = ", ".join(quote_ident(c) for c in columns)
        query = f"SELECT * FROM ({query}) AS excluded({cols})"
        insert = Clause(
            Category.NOT_MATCHED,
            ActionKind.INSERT,
            insert_columns=columns,
            insert_values=tuple(Expr.of(column(c, "excluded")) for c in columns),
        )
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

        def existing_row(e: exp.Expr) -> Expr:
            """PostgreSQL's scoping: ``excluded.c`` is the incoming row, a bare ``c`` the existing one."""
            e = e.copy()
            for col in e.find_all(exp.Column):
                t = col.table.lower()
                if t == "excluded":
                    col.set("table", exp.to_identifier("excluded"))
                elif not t or t == alias.lower():
                    col.set("table", exp.to_identifier(alias, quoted=True))
            return Expr.of(e)

        pairs = [(_column_name(eq.this), existing_row(eq.expression)) for eq in conflict.expressions]
        where = conflict.args.get("where")
        if isinstance(where, exp.Where):
            where = where.this
        condition = existing_row(where) if isinstance(where, exp.Expr) else None
        clauses = (Clause(Category.MATCHED, ActionKind.UPDATE, condition, tuple(pairs)), insert)
    else:
        raise StatementParseError(
            f"INSERT INTO {target}: unsupported ON CONFLICT action {word!r}", help="Use DO NOTHING or DO UPDATE SET ..."
        )
    return MergeSpec(
        target,
        alias,
        Source(query=query),
        "excluded",
        on,
        clauses,
        operation="INSERT",
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
                f"{where}: SET {to_sql(eq)!r} is not an assignment", help="Write SET column = value[, ...]."
            )
        names.append(eq.this.name.lower())
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise MergeSpecError(f"{where}: column(s) {dup} assigned more than once", help="Assign each column once.")


def _where(tree: exp.Expr) -> Expr | None:
    where = tree.args.get("where")
    return Expr.of(where.this) if where is not None else None


def _update(tree: exp.Update) -> MergeSpec:
    _current(tree.this, "UPDATE")
    target = table_name(tree.this)
    alias = _alias_of(tree.this) or _own_name(tree.this)
    if isinstance(tree.args.get("from_"), exp.Expr) or isinstance(tree.args.get("from"), exp.Expr):
        raise StatementParseError(
            f"UPDATE {target}: UPDATE ... FROM is not supported", help="Write it as MERGE INTO ... USING."
        )
    _check_set(tree.expressions, f"UPDATE {target}")
    names = {alias.lower(), target.lower(), target.split(".")[-1].replace("`", "").lower()}
    if _alias_of(tree.this) is None:
        names.add("t")  # the target's name in a statement without an alias (as MERGE's default)
    for eq in tree.expressions:  # SET x.c: x must be the table (a struct's field is not assignable)
        qualifier = eq.this.table if isinstance(eq.this, exp.Column) else ""
        if qualifier and (eq.this.args.get("db") is not None or qualifier.lower() not in names):
            raise StatementParseError(
                f"UPDATE {target}: SET {to_sql(eq.this)} names neither a column of {target} nor one through its "
                f"name or alias ({alias})",
                help="Assign a whole column (SET c = ...); to change a struct's field, SET c = named_struct(...).",
            )
    pairs = tuple((_column_name(eq.this), Expr.of(eq.expression)) for eq in tree.expressions)
    clause = Clause(Category.NOT_MATCHED_BY_SOURCE, ActionKind.UPDATE, _where(tree), assignments=pairs)
    return MergeSpec(target, alias, None, "", None, (clause,), operation="UPDATE")


def _delete(tree: exp.Delete) -> MergeSpec:
    if not isinstance(tree.this, exp.Table):
        raise StatementParseError("DELETE: no table", help="Write DELETE FROM table [WHERE condition].")
    if isinstance(tree.args.get("using"), exp.Expr):
        raise StatementParseError(
            f"DELETE FROM {table_name(tree.this)}: DELETE ... USING is not supported",
            help="Write it as MERGE INTO ... USING ... WHEN MATCHED THEN DELETE.",
        )
    _current(tree.this, "DELETE FROM")
    target = table_name(tree.this)
    alias = _alias_of(tree.this) or _own_name(tree.this)
    clause = Clause(Category.NOT_MATCHED_BY_SOURCE, ActionKind.DELETE, _where(tree))
    return MergeSpec(target, alias, None, "", None, (clause,), operation="DELETE")
