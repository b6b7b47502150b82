"""The Python merge builder: mirrors SQL MERGE and builds the same MergeSpec the SQL path does.

Example::

    metrics = (
        tablets.table(db, "analytics.customers")
        .merge(updates_df, on="t.id = s.id")
        .when_matched_delete(condition="s.deleted")
        .when_matched_update(set={"name": "s.name"})
        .when_not_matched_insert()                      # INSERT *
        .when_not_matched_by_source_update(set={"active": "false"})
        .execute()
    )
    metrics.rows_updated
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import sqlglot
from sqlglot import exp

from tablets.engine.metrics import MergeMetrics
from tablets.spec import ActionKind, Category, Clause, MergeSpec, Source
from tablets.spec.expr import Expr
from tablets.sqltext import DIALECT

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from tablets.db import Database


class MergeBuilder:
    def __init__(
        self, db: Database, target: str, source: DataFrame, on: str, source_alias: str, target_alias: str
    ) -> None:
        self._db = db
        self._source = source
        self._spec = MergeSpec(
            target=target,
            target_alias=target_alias,
            source=Source(table="<DataFrame>"),
            source_alias=source_alias,
            on=Expr.parse(on),
            clauses=(),
        )

    def _add(self, clause: Clause) -> MergeBuilder:
        self._spec = replace(self._spec, clauses=self._spec.clauses + (clause,))
        return self

    @staticmethod
    def _set(set: Mapping[str, str]) -> tuple[tuple[str, Expr], ...]:
        return tuple((_column(k), Expr.parse(str(v))) for k, v in set.items())

    def when_matched_update(self, condition: str | None = None, set: Mapping[str, str] | None = None) -> MergeBuilder:
        """UPDATE SET col = expr, ...; ``set=None`` is UPDATE SET * (every column from the source)."""
        return self._add(
            Clause(Category.MATCHED, ActionKind.UPDATE, _cond(condition), self._set(set or {}), star=set is None)
        )

    def when_matched_delete(self, condition: str | None = None) -> MergeBuilder:
        return self._add(Clause(Category.MATCHED, ActionKind.DELETE, _cond(condition)))

    def when_matched_do_nothing(self, condition: str | None = None) -> MergeBuilder:
        return self._add(Clause(Category.MATCHED, ActionKind.DO_NOTHING, _cond(condition)))

    def when_not_matched_insert(
        self, condition: str | None = None, values: Mapping[str, str] | Sequence[str] | None = None
    ) -> MergeBuilder:
        """INSERT (cols) VALUES (exprs) from a mapping, VALUES (exprs) from a list, or INSERT *."""
        if values is None:
            return self._add(Clause(Category.NOT_MATCHED, ActionKind.INSERT, _cond(condition), star=True))
        if isinstance(values, Mapping):
            return self._add(
                Clause(
                    Category.NOT_MATCHED,
                    ActionKind.INSERT,
                    _cond(condition),
                    insert_columns=tuple(_column(k) for k in values),
                    insert_values=tuple(Expr.parse(str(v)) for v in values.values()),
                )
            )
        return self._add(
            Clause(
                Category.NOT_MATCHED,
                ActionKind.INSERT,
                _cond(condition),
                insert_values=tuple(Expr.parse(v) for v in values),
            )
        )

    def when_not_matched_do_nothing(self, condition: str | None = None) -> MergeBuilder:
        return self._add(Clause(Category.NOT_MATCHED, ActionKind.DO_NOTHING, _cond(condition)))

    def when_not_matched_by_source_update(
        self, condition: str | None = None, set: Mapping[str, str] | None = None
    ) -> MergeBuilder:
        return self._add(
            Clause(Category.NOT_MATCHED_BY_SOURCE, ActionKind.UPDATE, _cond(condition), self._set(set or {}))
        )

    def when_not_matched_by_source_delete(self, condition: str | None = None) -> MergeBuilder:
        return self._add(Clause(Category.NOT_MATCHED_BY_SOURCE, ActionKind.DELETE, _cond(condition)))

    def when_not_matched_by_source_do_nothing(self, condition: str | None = None) -> MergeBuilder:
        return self._add(Clause(Category.NOT_MATCHED_BY_SOURCE, ActionKind.DO_NOTHING, _cond(condition)))

    def with_schema_evolution(self) -> MergeBuilder:
        """MERGE WITH SCHEMA EVOLUTION: the source's new columns (and wider types) join the
        table in the statement's commit (delta-rs' ``merge(..., merge_schema=True)``)."""
        self._spec = replace(self._spec, schema_evolution=True)
        return self

    @property
    def spec(self) -> MergeSpec:
        return self._spec

    def explain(self) -> str:
        """The plan ``execute`` would take (``Database.explain_merge``)."""
        return self._db.explain_merge(self._spec, source=self._source)

    def execute(self) -> MergeMetrics:
        return self._db.merge(self._spec, source=self._source).metrics


class TableRef:
    """``tablets.table(db, name)``: a tablet table by catalog name."""

    def __init__(self, db: Database, name: str) -> None:
        self.db = db
        self.name = name

    def merge(self, source: DataFrame, on: str, *, source_alias: str = "s", target_alias: str = "t") -> MergeBuilder:
        return MergeBuilder(self.db, self.name, source, on, source_alias, target_alias)

    def to_df(self) -> DataFrame:
        return self.db.spark.table(self.name)

    def history(self):
        return self.db.table_of(self.name).history()


def table(db: Database, name: str) -> TableRef:
    return TableRef(db, name)


def _cond(text: str | None) -> Expr | None:
    """A clause's condition, parsed here once (text that does not parse: the planner says so)."""
    return Expr.parse(text) if text is not None else None


def _column(text: str) -> str:
    """The column a key of ``set`` or ``values`` names, as the SQL parser gives it: ``c``,
    ``t.c`` and ``` `c` ``` name c; a name holding a dot or a backquote is quoted (```t.`a.b` ```)."""
    try:
        node = sqlglot.parse_one(text, read=DIALECT)
    except sqlglot.errors.ParseError:
        return text
    return node.name if isinstance(node, exp.Column) else text
