"""NOT NULL and CHECK constraints (``tablets.storage.constraints``) enforced on the rows a
statement writes, before its one commit: a statement whose rows break one writes nothing.

Only new rows are checked (inserted rows and new images of updated ones), in the stream that
writes them: Spark computes one column, ``VIOLATION`` (the first constraint the row breaks, else
NULL), beside the rows it hands to the write tasks; a task that sees one writes nothing and
reports the row (``tasks``), and the driver raises ``ConstraintViolation`` after discarding
what other tasks staged. A CHECK is SQL's: a row breaks it only where the expression is FALSE
(NULL passes, as in Delta); NOT NULL breaks on NULL. Where the driver plan classified the rows
in Arrow, the same check runs in Arrow (``arrow_eval``, Spark's semantics exactly) or, where
Arrow cannot evaluate an expression, the statement steps aside to Spark's plan.

``ALTER TABLE ADD CONSTRAINT`` and ``SET NOT NULL`` check the table's rows first (Delta's way):
one Spark query that stops at the first offending row. A CHECK must be a deterministic boolean
expression over the row alone (Delta's rule): a subquery, an aggregate, a window or a
non-deterministic function is refused when the constraint is declared, before anything is
committed, since no write could be checked against it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import sqlglot
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from sqlglot import exp

from tablets.engine.arrow_eval import EVAL_FAILED, compile_expr
from tablets.engine.errors import spark_message
from tablets.engine.names import K_CANDIDATE, K_COMPARE, K_INSERT, K_REPLACE, K_UPDATE, KIND, VIOLATION
from tablets.engine.tasks import violations_of
from tablets.exceptions import ConstraintViolation, MergeSpecError
from tablets.spec.expr import Expr
from tablets.sqltext import quote_ident, sql_string
from tablets.storage import WriteHandle, discard
from tablets.storage.actions import Metadata
from tablets.storage.constraints import checks, not_null

NOT_NULL = "NOT NULL "  # the label of a column's NOT NULL (a CHECK's name has no space)


def rebind(expression: str, columns: Mapping[str, str], table: str | None = None) -> Expr:
    """``expression`` (a CHECK as the table's metadata stores it: text, parsed once a process)
    with each column of the table named as ``columns`` maps it (table column -> the stream's
    column, found without regard to case), qualified by ``table`` if given."""
    lower = {c.lower(): s for c, s in columns.items()}
    tree = Expr.parse(expression).tree

    def swap(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and not node.table and node.name.lower() in lower:
            return exp.column(lower[node.name.lower()], table=table, quoted=True)
        return node

    return Expr.of(tree.transform(swap, copy=False))


def violation_sql(meta: Metadata, columns: Mapping[str, str]) -> str | None:
    """A Spark SQL expression: the label of the first constraint a row breaks, else NULL; the
    row's columns named as ``columns`` maps them. None when the table has no constraints."""
    branches = [(f"{quote_ident(columns[c])} IS NULL", NOT_NULL + c) for c in not_null(meta)]
    # WHEN NOT (x): a NULL x takes no branch, so a CHECK that is NULL passes (SQL's rule)
    branches += [(f"NOT ({rebind(e, columns)})", name) for name, e in checks(meta)]
    if not branches:
        return None
    return "CASE " + " ".join(f"WHEN {cond} THEN {sql_string(label)}" for cond, label in branches) + " END"


def violation_column(meta: Metadata, columns: Mapping[str, str], where: Column | None = None) -> Column | None:
    """``violation_sql`` as a column (only for rows ``where`` holds, if given)."""
    sql = violation_sql(meta, columns)
    if sql is None:
        return None
    col = F.expr(sql)
    return F.when(where, col) if where is not None else col


def arrow_labels(meta: Metadata, rows: pa.Table) -> pa.Array | None:
    """Per row of ``rows`` (the table's columns by name), the first constraint it breaks (else
    NULL), computed in Arrow exactly as ``violation_sql`` in Spark; None where Arrow cannot
    evaluate a CHECK exactly (the caller lets Spark do it)."""
    types = {n: t.lower() for n, t, _ in meta.schema}
    names = {n: n for n in meta.column_names}
    labels = pa.nulls(rows.num_rows, pa.string())
    found = [(pc.is_null(rows.column(c)), NOT_NULL + c) for c in not_null(meta)]
    for name, expression in checks(meta):
        try:
            compiled = compile_expr(rebind(expression, names, table="t"), {"t": types})
        except sqlglot.errors.SqlglotError:
            return None
        if compiled is None or compiled.type != "boolean":
            return None
        try:
            value = compiled({"t": rows})
        except EVAL_FAILED:
            return None
        found.append((pc.equal(value, False), name))  # FALSE breaks it; NULL and TRUE pass
    for broken, label in reversed(found):  # the first constraint a row breaks names it
        labels = pc.if_else(pc.fill_null(broken, False), pa.scalar(label), labels)
    return labels


def arrow_violation(meta: Metadata, rows: pa.Table) -> tuple[int, str | None] | None:
    """``arrow_labels``' broken rows: how many, and one of them (JSON); None: Spark decides."""
    labels = arrow_labels(meta, rows)
    if labels is None:
        return None
    return violations_of(rows.append_column(VIOLATION, labels), list(meta.column_names))


def raise_if_violated(
    handle: WriteHandle | None, fragments: list, results: Sequence[Any], meta: Metadata, where: str
) -> None:
    """After the write tasks (their result rows): if any row broke a constraint, discard what
    they staged and raise ``ConstraintViolation``."""
    n = sum(int(r["violations"] or 0) for r in results)
    if not n:
        return
    if handle is not None:
        discard(handle, fragments)
    example = next(r["violation_example"] for r in results if r["violation_example"])
    raise violation_error(meta, where, n, example)


def violation_error(meta: Metadata, where: str, n: int | None, example: str) -> ConstraintViolation:
    found = json.loads(example)
    label, row = found["constraint"], found["row"]
    shown = ", ".join(f"{k}={v!r}" for k, v in row.items())
    count = f"{n} row(s) break it" if n is not None else "a row breaks it"
    if label.startswith(NOT_NULL):
        column = label[len(NOT_NULL) :]
        what = f"column {column} is NOT NULL"
        fix = (
            f"Give {column} a value in those rows (coalesce({column}, ...)) or filter them out, or allow NULLs "
            f"(ALTER TABLE ... ALTER COLUMN {column} DROP NOT NULL; in dbt, drop its not_null constraint)."
        )
    else:
        expression = dict(checks(meta)).get(label, "?")
        what = f"CHECK constraint {label} ({expression})"
        fix = (
            f"Fix or filter the rows so that ({expression}) is not false, or drop the constraint "
            f"(ALTER TABLE ... DROP CONSTRAINT {label}; in dbt, take it out of the model's constraints)."
        )
    return ConstraintViolation(f"{where}: {what}; {count}, e.g. ({shown}); nothing was written", help=fix)


# Spark's non-deterministic functions (its Nondeterministic expressions, by SQL name)
NONDETERMINISTIC = frozenset(
    [
        "rand",
        "randn",
        "random",
        "uniform",
        "randstr",
        "uuid",
        "shuffle",
        "monotonically_increasing_id",
        "spark_partition_id",
        "input_file_name",
        "input_file_block_start",
        "input_file_block_length",
    ]
)


def refuse_unfit_check(expression: Expr, where: str) -> None:
    """Refuse a CHECK that no row can be checked against alone: a subquery, an aggregate, a
    window, a non-deterministic function (Delta refuses them too)."""
    try:
        tree = expression.tree
    except sqlglot.errors.SqlglotError as e:
        raise MergeSpecError(
            f"{where}: CHECK ({expression}) is not an expression Spark SQL parses ({str(e).splitlines()[0][:200]})",
            help="Write a boolean expression over the table's columns.",
        ) from None
    found = None
    for node in tree.walk():
        if isinstance(node, exp.Subquery | exp.Select | exp.Exists):
            found = "a subquery"
        elif isinstance(node, exp.Window):
            found = "a window function"
        elif isinstance(node, exp.AggFunc):
            found = f"the aggregate {node.sql(dialect='spark')}"
        elif (
            isinstance(node, exp.Rand | exp.Randn | exp.Uuid)
            or (isinstance(node, exp.Func) and (node.sql_name() or "").lower() in NONDETERMINISTIC)
            or (isinstance(node, exp.Anonymous) and str(node.this).lower() in NONDETERMINISTIC)
        ):
            found = f"the non-deterministic {node.sql(dialect='spark')}"
        if found:
            break
    if found:
        raise MergeSpecError(
            f"{where}: a CHECK constraint is checked on each row alone, and CHECK ({expression}) uses {found}",
            help="Write a deterministic boolean expression over the row's own columns.",
        )


def check_existing_rows(spark: SparkSession, frame: DataFrame, meta: Metadata, where: str) -> None:
    """Before ADD CONSTRAINT / SET NOT NULL: refuse if a row of ``frame`` (the table's live rows)
    breaks a constraint of ``meta`` (the table's metadata with the new constraint); first, that
    every CHECK is a boolean expression over the columns (Spark's analysis, no job)."""
    sql = violation_sql(meta, {n: n for n in meta.column_names})
    if sql is None:
        return
    names = {n: n for n in meta.column_names}
    for name, expression in checks(meta):
        try:
            kind = frame.select(F.expr(rebind(expression, names).text)).schema.fields[0].dataType.simpleString()
        except Exception as e:  # noqa: BLE001 - Spark's analysis error: the expression is the user's
            raise MergeSpecError(
                f"{where}: Spark cannot evaluate CHECK ({expression}) over the table's columns: {spark_message(e)}",
                help="Write a boolean expression over the table's columns (DESCRIBE the table).",
            ) from None
        if kind != "boolean":
            raise MergeSpecError(
                f"{where}: CHECK constraint {name} ({expression}) is of type {kind}, not a boolean",
                help=f"Write a condition, e.g. CHECK (({expression}) > 0).",
            )
    label = "__tablets_label"
    try:
        hit = frame.select("*", F.expr(sql).alias(label)).filter(F.col(label).isNotNull()).limit(1).collect()
    except Exception as e:  # noqa: BLE001 - Spark's analysis error: the expression is the user's
        raise MergeSpecError(
            f"{where}: Spark cannot evaluate the constraint over the table's rows: {spark_message(e)}",
            help="Write a boolean expression over the table's columns (DESCRIBE the table).",
        ) from None
    if hit:
        row = hit[0].asDict()
        found = row.pop(label)
        example = json.dumps({"constraint": found, "row": row}, default=str)
        raise violation_error(meta, where + ": the table already holds rows that break it", None, example)


def check_classified(meta: Metadata, rows: pa.Table, names: Sequence[str], images: Sequence[str], where: str) -> bool:
    """The driver plan's classified rows (``driver_plan.classify_on_driver``): raise if a row
    they write breaks a constraint; False where Arrow cannot tell (then Spark's plan runs)."""
    if not (not_null(meta) or checks(meta)):
        return True
    kinds = rows.column(KIND)
    new = rows.filter(pc.is_in(kinds, pa.array([K_INSERT, K_UPDATE, K_REPLACE]))).select(list(images))
    found = arrow_violation(meta, new.rename_columns(list(names)))
    if found is None:
        return False
    n, example = found
    if n and example is not None:
        raise violation_error(meta, where, n, example)
    return True


def stream_check(meta: Metadata, names: Sequence[str], images: Sequence[str]) -> Column | None:
    """The ``VIOLATION`` column of Spark's classified pairs: over the new images of the rows
    it may write (inserts, updates, those the merge tasks still compare, and the one-shuffle
    plan's candidate inserts): a row found unchanged is not written, nor checked."""
    return violation_column(
        meta,
        dict(zip(names, images, strict=True)),
        F.col(KIND).isin(K_INSERT, K_UPDATE, K_CANDIDATE, K_REPLACE, K_COMPARE),
    )
