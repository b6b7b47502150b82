"""The session connection of dbt-tablets: dbt-spark's ``session`` method, with every statement
sent through the engine's SQL front door (``tablets.Database.sql``).

- Statements that write tablet tables (MERGE, INSERT ... ON CONFLICT, UPDATE, DELETE, INSERT
  INTO / CREATE / DROP of a tablet table) run on the engine; the cursor then holds no rows and
  the :class:`~tablets.db.StatementResult` (``MERGE 42 (inserted 10, ...)``) becomes dbt's
  adapter response.
- Everything else goes to Spark SQL and behaves exactly as in dbt-spark's ``session.Cursor``
  (a lazy DataFrame that ``fetchall`` collects).
- A materialization's own statement comes with its options as a value
  (:class:`StatementOptions`, in the place of dbt's query bindings: ``TabletsAdapter.run_statement``),
  so it runs through dbt's ``add_query`` (its log lines, query comment and error handling) and
  its SQL stays what dbt shows in ``target/run/``.

The Spark session these connections share is started by ``dbt.adapters.tablets.startup``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.session import Connection as SparkSessionConnection
from dbt.adapters.spark.session import Cursor as SparkSessionCursor
from dbt.adapters.spark.session import SessionConnectionWrapper
from dbt_common.exceptions import DbtRuntimeError

from tablets.exceptions import TabletsError
from tablets.sqltext import sql_string

if TYPE_CHECKING:
    from tablets.db import Database, StatementResult

logger = AdapterLogger("Tablets")

# --- the cursor -------------------------------------------------------------------------------


ANSI_CONF = "spark.sql.ansi.enabled"


@contextmanager
def ansi_mode(spark: Any, ansi: bool | None) -> Iterator[None]:
    """Spark's ANSI mode set to ``ansi`` (a model's ``ansi`` config) for one statement, and the
    profile's restored after; None: the profile's as it is."""
    if ansi is None:
        yield
        return
    before = spark.conf.get(ANSI_CONF)
    spark.conf.set(ANSI_CONF, "true" if ansi else "false")
    try:
        yield
    finally:
        spark.conf.set(ANSI_CONF, before)


@dataclass(frozen=True)
class StatementOptions:
    """What a model's statement runs with: the engine's options (``tablets.MergeOptions``
    fields: ``skip_unchanged``, tablet size, commit ``parameters``, ...) and the model's ANSI
    mode (None: the profile's)."""

    engine: tuple[tuple[str, Any], ...] = ()
    ansi: bool | None = None

    @property
    def parameters(self) -> tuple[tuple[str, str], ...]:
        return tuple(dict(self.engine).get("parameters", ()))


class TabletsCursor(SparkSessionCursor):
    """dbt-spark's session cursor, executing through ``Database.sql``."""

    def __init__(self, connection: TabletsConnection) -> None:
        super().__init__()
        self._connection = connection
        self.statement_result: StatementResult | None = None

    def execute(self, sql: str, *parameters: Any) -> None:
        if len(parameters) > 0:
            sql = sql % parameters
        self.run(sql, StatementOptions())

    def run(self, sql: str, options: StatementOptions) -> None:
        self.statement_result = None
        self._rows = None
        db = self._connection.database
        # a model's sql_header runs before its statement, in the same call
        with ansi_mode(db.spark, options.ansi):
            out = db.script(sql, options=dict(options.engine) or None)  # errors: the manager's exception_handler
        from tablets.db import StatementResult  # (the engine loads beside the session: _load_engine)

        if isinstance(out, StatementResult):
            self._df = None
            self._rows = []
            self.statement_result = out
            if options.parameters:
                from dbt.adapters.tablets.changes import after_statement

                after_statement(db, options.parameters, out)  # tablets_changes: what a no-op consumed
            logger.debug(f"tablets: {out.message} on {out.target} ({_timings(out)})")
        elif isinstance(out, str):  # EXPLAIN of a statement on a tablet table
            self._df = db.spark.createDataFrame([(out,)], "plan string")
        else:
            self._df = out

    def fetchall(self) -> Any:
        with _read_errors():
            return super().fetchall()

    def fetchone(self) -> Any:
        with _read_errors():
            return super().fetchone()


@contextmanager
def _read_errors() -> Iterator[None]:
    """A query that hit a damaged tablet: the tablets FormatError naming it, not Spark's stack trace."""

    try:
        yield
    except TabletsError as exc:  # tablets.spark.errors translated it where the job failed
        raise DbtRuntimeError(str(exc)) from exc
    except Exception as exc:  # over Spark Connect: Spark's error, whose text names the tablet
        from tablets.reads import read_error

        clear = read_error(exc)
        if clear is None:
            raise
        raise DbtRuntimeError(str(clear)) from exc


def _timings(result: StatementResult) -> str:
    return ", ".join(f"{k} {v:.0f} ms" for k, v in result.metrics.timings_ms.items()) or "no timings"


class TabletsConnection(SparkSessionConnection):
    """The connection handle: the engine's Database."""

    def __init__(self, database: Database) -> None:
        super().__init__()
        self.database = database

    def cursor(self) -> TabletsCursor:
        return TabletsCursor(self)


class TabletsConnectionWrapper(SessionConnectionWrapper):
    handle: TabletsConnection
    _cursor: TabletsCursor | None

    @classmethod
    def _fix_binding(cls, value: Any) -> str | float:
        """A seed value as SQL. dbt-spark's session method turns None into the string 'None'
        (dbt-labs/dbt-spark#901) and breaks on quotes; here None is NULL and strings are
        escaped Spark SQL literals."""
        if value is None:
            return "NULL"
        if isinstance(value, str):
            return sql_string(value)
        return super()._fix_binding(value)

    def execute(self, sql: str, bindings: Any = None) -> None:
        """dbt's ``add_query`` hands its bindings here: a model's :class:`StatementOptions`, or a
        seed's values (dbt-spark's)."""
        if not isinstance(bindings, StatementOptions):
            super().execute(sql, bindings)
            return
        assert self._cursor is not None, "Cursor not available"
        self._cursor.run(sql.strip().removesuffix(";"), bindings)

    @property
    def statement_result(self) -> StatementResult | None:
        return self._cursor.statement_result if self._cursor is not None else None

    @property
    def database(self) -> Database:
        return self.handle.database
