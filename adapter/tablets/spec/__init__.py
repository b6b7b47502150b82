"""The statement spec: one frozen value shared by the SQL front door, the Python builder,
the planner and EXPLAIN (``conditions``: a condition's conjuncts as statistics predicates).
May import only ``tablets.storage`` and the leaves: both ``tablets.sql`` and ``tablets.engine``
stand on it.

A MERGE is a target, a source, an ON condition and ordered clauses. UPDATE and DELETE are
specs with no source: every target row is NOT MATCHED BY SOURCE. INSERT ... ON CONFLICT is a
MERGE whose source is the inserted rows, aliased ``excluded``.

Expressions are ``spec.expr.Expr`` values: parsed once where the statement is read (``sql.parse``,
the Python builder), their trees carried to the planner, their text (sqlglot's Spark SQL) what
messages show; qualified with the aliases ``target_alias`` and ``source_alias``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tablets.spec.expr import Expr


class Category(StrEnum):
    MATCHED = "MATCHED"
    NOT_MATCHED = "NOT MATCHED"  # by target: a source row with no target row
    NOT_MATCHED_BY_SOURCE = "NOT MATCHED BY SOURCE"  # a target row with no source row


class ActionKind(StrEnum):
    UPDATE = "UPDATE"
    DELETE = "DELETE"
    INSERT = "INSERT"
    DO_NOTHING = "DO NOTHING"
    # internal, never parsed: a matched pair that would make an insert duplicate a key
    REFUSE = "REFUSE (duplicate key)"
    # internal: a pair whose target row a BY SOURCE clause deletes and whose source row a NOT
    # MATCHED clause inserts (a keyed table's ON with more than the key: ``engine.keys``)
    REPLACE = "DELETE AND INSERT"


# the actions the engine makes of a statement itself, never written by a user
INTERNAL_ACTIONS = frozenset({ActionKind.REFUSE, ActionKind.REPLACE})

ALLOWED_ACTIONS: dict[Category, frozenset[ActionKind]] = {
    Category.MATCHED: frozenset(
        {ActionKind.UPDATE, ActionKind.DELETE, ActionKind.DO_NOTHING, ActionKind.REFUSE, ActionKind.REPLACE}
    ),
    Category.NOT_MATCHED: frozenset({ActionKind.INSERT, ActionKind.DO_NOTHING}),
    Category.NOT_MATCHED_BY_SOURCE: frozenset({ActionKind.UPDATE, ActionKind.DELETE, ActionKind.DO_NOTHING}),
}


@dataclass(frozen=True)
class Clause:
    """``WHEN <category> [AND condition] THEN <action>``.

    - UPDATE: ``assignments`` ((column, expr), ...) or ``star`` (SET *: every target column
      from the source column of the same name).
    - INSERT: ``insert_columns`` and ``insert_values`` (same length), or ``star`` (INSERT *),
      or ``insert_values`` alone (VALUES in table column order).
    """

    category: Category
    action: ActionKind
    condition: Expr | None = None
    assignments: tuple[tuple[str, Expr], ...] = ()
    insert_columns: tuple[str, ...] = ()
    insert_values: tuple[Expr, ...] = ()
    star: bool = False
    # the keyed rewrite's clause for a pair the original ON leaves unmatched (engine.keys): its
    # act on the target row is the row's one NOT MATCHED BY SOURCE event, however many pairs
    outside: bool = False

    def describe(self) -> str:
        cond = f" AND {self.condition}" if self.condition else ""
        return f"WHEN {self.category.value}{cond} THEN {self.action.value}"


@dataclass(frozen=True)
class Source:
    """The source relation: a table/view name, or a query (SELECT/VALUES text)."""

    table: str | None = None
    query: str | None = None

    def sql(self) -> str:
        return self.table if self.table is not None else f"({self.query})"


@dataclass(frozen=True)
class MergeSpec:
    target: str
    target_alias: str
    source: Source | None  # None: UPDATE/DELETE with no source (target rows only)
    source_alias: str
    on: Expr | None  # None when source is None
    clauses: tuple[Clause, ...]
    operation: str = "MERGE"  # MERGE | UPDATE | DELETE | INSERT (ON CONFLICT)
    null_safe: bool = False  # informational: ON uses <=>
    options: tuple[tuple[str, str], ...] = field(default=())
    conflict_keys: tuple[str, ...] = ()  # INSERT ... ON CONFLICT (keys)
    # MERGE WITH SCHEMA EVOLUTION: source columns the target lacks are added, and its types
    # widened, in the statement's own commit (engine.evolution)
    schema_evolution: bool = False

    def categories(self) -> set[Category]:
        return {c.category for c in self.clauses}

    def part(self, i: int, clause: Clause) -> str:
        """Clause ``i`` as a message names it: a MERGE's by number and words; an UPDATE, DELETE
        or ON CONFLICT (run as a MERGE of one clause) by the part of the statement it came from."""
        if self.operation == "MERGE":
            return f"clause #{i + 1} ({clause.describe()})"
        if self.operation == "UPDATE":
            return "SET" + (" ... WHERE" if clause.condition else "")
        if self.operation == "DELETE":
            return "WHERE"
        return "ON CONFLICT DO UPDATE SET" if clause.action is ActionKind.UPDATE else "the inserted rows"

    @property
    def head(self) -> str:
        """The statement's opening words, as its SQL reads (``UPDATE t``, ``DELETE FROM t``):
        what a message about it starts with."""
        verb = {"UPDATE": "UPDATE", "DELETE": "DELETE FROM"}.get(self.operation, f"{self.operation} INTO")
        return f"{verb} {self.target}"


@dataclass(frozen=True)
class AppendSpec:
    """``INSERT INTO t [(cols)] <query>`` / ``INSERT OVERWRITE``: no merge, a blind append."""

    target: str
    query: str
    columns: tuple[str, ...] = ()
    overwrite: bool = False
    by_name: bool = False  # INSERT INTO t BY NAME <query>: the query's columns by their names


@dataclass(frozen=True)
class CreateSpec:
    """``CREATE [OR REPLACE] TABLE t [(cols) | LIKE s] USING tablets [COMMENT] [CLUSTER BY]
    [OPTIONS/TBLPROPERTIES] [AS query]``."""

    target: str
    columns_ddl: str | None = None  # "a INT, b STRING" when given
    query: str | None = None
    replace: bool = False
    if_not_exists: bool = False
    location: str | None = None
    properties: tuple[tuple[str, str], ...] = ()
    not_null: tuple[str, ...] = ()  # columns declared NOT NULL
    checks: tuple[tuple[str, Expr], ...] = ()  # CONSTRAINT name CHECK (expression)
    comment: str | None = None  # COMMENT '...': the table's
    column_comments: tuple[tuple[str, str], ...] = ()  # (column, comment) of the column list
    like: str | None = None  # CREATE TABLE t LIKE <like> (tablets.statements.create)


@dataclass(frozen=True)
class DropSpec:
    target: str
    if_exists: bool = False


@dataclass(frozen=True)
class AddColumnsSpec:
    """``ALTER TABLE t ADD COLUMNS (c type, ...)``: schema evolution (old tablets read NULL)."""

    target: str
    columns: tuple[tuple[str, str], ...]
    comments: tuple[tuple[str, str], ...] = ()  # (column, COMMENT '...') of the added columns


@dataclass(frozen=True)
class RenameColumnSpec:
    """``ALTER TABLE t RENAME COLUMN a TO b``: a metadata-only commit (the tablets keep the
    column under its physical name)."""

    target: str
    column: str
    new_name: str


@dataclass(frozen=True)
class DropColumnsSpec:
    """``ALTER TABLE t DROP COLUMN [IF EXISTS] c`` / ``DROP COLUMNS (c, d)``: a metadata-only
    commit (the values stay in the tablets, for older versions)."""

    target: str
    columns: tuple[str, ...]
    if_exists: bool = False


@dataclass(frozen=True)
class ConstraintSpec:
    """``ALTER TABLE t ADD CONSTRAINT c CHECK (expr)``, ``DROP CONSTRAINT [IF EXISTS] c`` and
    ``ALTER COLUMN c SET / DROP NOT NULL`` (Delta's forms): one metadata commit; adding one
    first checks the table's rows."""

    target: str
    add_check: tuple[str, Expr] | None = None  # (name, expression)
    drop: str | None = None
    if_exists: bool = False  # of drop
    not_null: tuple[str, bool] | None = None  # (column, NOT NULL or not)


AlterColumnsSpec = AddColumnsSpec | RenameColumnSpec | DropColumnsSpec | ConstraintSpec


# --- table maintenance (Delta's statements) -----------------------------------------------------


@dataclass(frozen=True)
class AsOf:
    """``VERSION AS OF n`` or ``TIMESTAMP AS OF <expression>`` (Spark SQL text, evaluated by Spark)."""

    version: int | None = None
    timestamp: str | None = None

    def sql(self) -> str:
        return f"VERSION AS OF {self.version}" if self.version is not None else f"TIMESTAMP AS OF {self.timestamp}"


@dataclass(frozen=True)
class HistorySpec:
    """``DESCRIBE HISTORY t [LIMIT n]``: the commits, newest first."""

    target: str
    limit: int | None = None


@dataclass(frozen=True)
class RestoreSpec:
    """``RESTORE [TABLE] t [TO] VERSION AS OF n`` / ``TIMESTAMP AS OF '...'``: one new commit
    whose live rows are those of that version."""

    target: str
    as_of: AsOf


@dataclass(frozen=True)
class VacuumSpec:
    """``VACUUM t [RETAIN n HOURS] [DRY RUN]``: delete files no retained version references."""

    target: str
    retain_hours: float | None = None  # None: the table's retention (default 168 h)
    dry_run: bool = False


@dataclass(frozen=True)
class OptimizeSpec:
    """``OPTIMIZE t``: rewrite small and deletion-heavy tablets (compaction)."""

    target: str


@dataclass(frozen=True)
class CheckSpec:
    """``CHECK TABLE t [REPAIR]``: what is wrong with the table's log and files; ``REPAIR``
    rebuilds the files derived from the log (checkpoints) found damaged."""

    target: str
    repair: bool = False


MaintenanceSpec = HistorySpec | RestoreSpec | VacuumSpec | OptimizeSpec | CheckSpec
