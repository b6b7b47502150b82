"""CREATE TABLE ... USING tablets -> ``CreateSpec``, and the column types a column list declares."""

from __future__ import annotations

from sqlglot import exp

from tablets.exceptions import SchemaMismatch, StatementParseError
from tablets.spec import (
    CreateSpec,
)
from tablets.spec.expr import Expr
from tablets.sql.syntax import table_name, to_sql
from tablets.sqltext import quote_ident, repeated_names
from tablets.storage.constraints import PREFIX
from tablets.storage.metadata import reserved_names
from tablets.storage.properties import COLUMN_LISTS, InvalidProperty, check_properties

# --- CREATE ------------------------------------------------------------------------------------


def create_statement(tree: exp.Create) -> CreateSpec:
    this = tree.this
    target = table_name(this)
    columns_ddl = None
    defs: list[exp.ColumnDef] = []
    not_null: list[str] = []
    checks: list[tuple[str, Expr]] = []
    column_comments: list[tuple[str, str]] = []
    if isinstance(this, exp.Schema) and this.expressions:
        defs = [c for c in this.expressions if isinstance(c, exp.ColumnDef)]
        refuse_repeated([c.name for c in defs], f"CREATE TABLE {target}")
        columns_ddl = ", ".join(
            f"{quote_ident(c.name)} {stored_column_type(c, f'CREATE TABLE {target}')}" for c in defs
        )
        not_null = [
            c.name
            for c in defs
            if any(isinstance(k.args.get("kind"), exp.NotNullColumnConstraint) for k in c.args.get("constraints") or ())
        ]
        checks = [check_of(c, f"CREATE TABLE {target}") for c in this.expressions if not isinstance(c, exp.ColumnDef)]
        column_comments = [
            (c.name, k.args["kind"].this.name)
            for c in defs
            for k in c.args.get("constraints") or ()
            if isinstance(k.args.get("kind"), exp.CommentColumnConstraint)
        ]
    props: dict[str, str] = {}
    location = comment = cluster = like = None
    for p in tree.args["properties"].expressions if tree.args.get("properties") else ():
        if isinstance(p, exp.FileFormatProperty) and not p.args.get("hive_format"):
            continue  # USING tablets
        if isinstance(p, exp.LocationProperty):
            location = p.this.name
        elif isinstance(p, exp.LikeProperty):
            like = table_name(p.this)
        elif isinstance(p, exp.SchemaCommentProperty):
            comment = p.this.name
        elif isinstance(p, exp.ClusterProperty):  # Spark's CLUSTER BY (cols): the cluster_by property
            cluster = ",".join(c.name for c in p.expressions)
        elif isinstance(p, exp.OptionsProperty):
            props.update(_property(q) for q in p.expressions)
        elif type(p) is exp.Property:  # TBLPROPERTIES / WITH (key = value)
            props.update([_property(p)])
        else:
            raise StatementParseError(
                f"CREATE TABLE {target}: {to_sql(p)!r} is not supported on tablet tables",
                help="Tablet tables are neither partitioned nor bucketed, and their format is USING tablets: "
                "drop the clause; CLUSTER BY (col, ...) or TBLPROPERTIES ('cluster_by' = 'col') sorts new "
                "tablets by those columns.",
            )
    if cluster is not None:
        given = props.get("cluster_by")
        if given is not None and [c.strip() for c in given.split(",")] != cluster.split(","):
            raise StatementParseError(
                f"CREATE TABLE {target}: CLUSTER BY ({cluster}) and TBLPROPERTIES ('cluster_by' = "
                f"{props['cluster_by']!r}) disagree",
                help="Give the clustering columns once.",
            )
        props["cluster_by"] = cluster
    if "comment" in props:  # TBLPROPERTIES ('comment' = ...) is the table's comment, as in ALTER TABLE
        if comment is not None:
            raise StatementParseError(
                f"CREATE TABLE {target}: the table's comment is given twice (COMMENT and TBLPROPERTIES 'comment')",
                help="Keep the COMMENT clause.",
            )
        comment = props.pop("comment")
    where = f"CREATE TABLE {target}"
    if tree.args.get("replace") and tree.args.get("exists"):  # Spark's grammar: one or the other
        raise StatementParseError(
            f"{where}: OR REPLACE and IF NOT EXISTS do not go together",
            help="Write CREATE OR REPLACE TABLE (replace it) or CREATE TABLE IF NOT EXISTS (keep it).",
        )
    _check_properties(props, [c.name for c in defs] if columns_ddl is not None else None, where)
    query = tree.args.get("expression")
    return CreateSpec(
        target=target,
        columns_ddl=columns_ddl,
        query=to_sql(query) if query is not None else None,
        replace=bool(tree.args.get("replace")),
        if_not_exists=bool(tree.args.get("exists")),
        location=location,
        properties=tuple(sorted(props.items())),
        not_null=tuple(not_null),
        checks=tuple(checks),
        comment=comment,
        column_comments=tuple(column_comments),
        like=like,
    )


def _check_properties(props: dict[str, str], columns: list[str] | None, where: str) -> None:
    """What the table's creation would refuse, refused before anything runs (a CREATE OR REPLACE
    of another kind of table drops it first): reserved column names, the properties tablets
    reads (the column lists only where the columns are given), and CHECKs written as properties."""
    refuse_constraint_properties(props, where)
    if columns is None:
        check_properties({k: v for k, v in props.items() if k not in COLUMN_LISTS}, [], where)
        return
    reserved = reserved_names(columns)
    if reserved:
        raise SchemaMismatch(
            f"{where}: column names {reserved} are reserved by dbt-tablets", help="Rename the columns."
        )
    check_properties(props, columns, where)


def refuse_constraint_properties(props: dict[str, str] | list[tuple[str, str]], where: str) -> None:
    """``delta.constraints.<name>`` is a CHECK: given as a property it was never resolved, and every
    write failed on it (as ALTER TABLE ... SET TBLPROPERTIES refuses it)."""
    keys = [k for k in (props if isinstance(props, dict) else dict(props)) if k.lower().startswith(PREFIX)]
    if keys:
        raise InvalidProperty(
            f"{where}: table property {keys[0]} is a CHECK constraint, declared by its own clause",
            help=f"Write CONSTRAINT {keys[0][len(PREFIX) :] or 'name'} CHECK (<condition>) in the column list, or "
            "ALTER TABLE ... ADD CONSTRAINT after creating the table.",
        )


def _property(p: exp.Expr) -> tuple[str, str]:
    """(key, value) as Spark reads them: ``delta.appendOnly = true`` is ('delta.appendOnly', 'true')
    (a dotted key and a value that is no string were read as '')."""

    def parts(node: exp.Expr) -> list[str]:
        if isinstance(node, exp.Dot):
            return parts(node.this) + parts(node.expression)
        if isinstance(node, exp.Column):
            return [q.name for q in node.parts]
        return [node.name]

    value = p.args.get("value")
    if isinstance(value, exp.Boolean):
        text = "true" if value.this else "false"
    elif isinstance(value, exp.Literal):
        text = value.name
    else:
        text = to_sql(value)  # (a negative number: -1)
    return ".".join(parts(p.this)), text


def check_of(node: exp.Expr, where: str) -> tuple[str, Expr]:
    """``CONSTRAINT name CHECK (expression)`` -> (name, expression); other table constraints
    (PRIMARY KEY, FOREIGN KEY, UNIQUE) are refused, not dropped."""
    kinds = node.expressions if isinstance(node, exp.Constraint) else []
    if len(kinds) == 1 and isinstance(kinds[0], exp.CheckColumnConstraint) and node.this is not None:
        return node.this.name, Expr.of(kinds[0].this)
    raise StatementParseError(
        f"{where}: {to_sql(node)!r} is not supported on tablet tables (only CONSTRAINT name CHECK (expression))",
        help="Tablet tables enforce NOT NULL and CHECK constraints; a key is the key_columns table property "
        "(TBLPROPERTIES ('key_columns' = 'id')), UNIQUE and FOREIGN KEY are not enforced: drop them.",
    )


def stored_column_type(col: exp.ColumnDef, where: str) -> str:
    """A column's type as tablets store it: ``CHAR(n)``/``VARCHAR(n)`` are strings (as Spark
    reads them; the length is not enforced); constraints other than NOT NULL and COMMENT are
    refused, not dropped."""
    for c in col.args.get("constraints") or ():
        kind = c.args.get("kind")
        if isinstance(kind, exp.CollateColumnConstraint):
            raise StatementParseError(
                f"{where}: column {col.name}: {to_sql(c)} is not supported on tablet tables",
                help="Tablet tables compare strings byte by byte (Spark's UTF8_BINARY): drop COLLATE, "
                "and compare with lower(col) or col COLLATE UTF8_LCASE in queries.",
            )
        if not isinstance(kind, exp.NotNullColumnConstraint | exp.CommentColumnConstraint):
            raise StatementParseError(
                f"{where}: column {col.name}: {to_sql(c)} is not supported on tablet tables",
                help="Drop the constraint; fill the column with UPDATE after adding it.",
            )
    kind = col.args.get("kind")
    if kind is None:  # (its DDL was Spark's syntax error, at a position of tablets' text)
        raise StatementParseError(
            f"{where}: column {col.name} has no type", help=f"Give its type: {quote_ident(col.name)} STRING."
        )
    if isinstance(kind, exp.DataType) and kind.this in (exp.DataType.Type.CHAR, exp.DataType.Type.VARCHAR):
        return "STRING"
    if isinstance(kind, exp.DataType) and kind.this is exp.DataType.Type.DECIMAL and kind.expressions:
        _decimal(col.name, kind, where)  # (Spark's own message would name the DDL tablets writes for it)
    return to_sql(kind)


def _decimal(column: str, kind: exp.DataType, where: str) -> None:
    """Spark's bounds of DECIMAL(precision, scale): 1 <= precision <= 38, 0 <= scale <= precision."""
    numbers = [p.this.name if isinstance(p, exp.DataTypeParam) else p.name for p in kind.expressions]
    if not all(n.isdigit() for n in numbers) or len(numbers) > 2:
        return
    precision, scale = int(numbers[0]), int(numbers[1]) if len(numbers) > 1 else 0
    if not 1 <= precision <= 38 or scale > precision:
        raise SchemaMismatch(
            f"{where}: column {column}: {to_sql(kind)}: a decimal has a precision of 1 to 38 digits and a scale "
            "of at most its precision",
            help="Write DECIMAL(precision, scale) with 1 <= precision <= 38 and 0 <= scale <= precision.",
        )


def refuse_repeated(names: list[str], where: str) -> None:
    """A column list names each column once (Spark compares names without regard to case)."""
    repeated = repeated_names(names)
    if repeated:
        raise SchemaMismatch(
            f"{where}: column {', '.join(repeated)} is named more than once",
            help="Give every column a distinct name (names are compared without regard to case).",
        )
