"""The session connection of dbt-tablets: dbt-spark's ``session`` method, with every statement
sent through the engine's SQL front door (``tablets.Database.sql``).

- Statements that write tablet tables (MERGE, INSERT ... ON CONFLICT, UPDATE, DELETE, INSERT
  INTO / CREATE / DROP of a tablet table) run on the engine; the cursor then holds no rows and
  the :class:`~tablets.db.StatementResult` (``MERGE 42 (inserted 10, ...)``) becomes dbt's
  adapter response.
- Everything else goes to Spark SQL and behaves exactly as in dbt-spark's ``session.Cursor``
  (a lazy DataFrame that ``fetchall`` collects).

The Spark session these connections share is started by ``dbt.adapters.tablets.startup``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
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

# a statement's engine options travel in it, as a comment the cursor takes out (options_comment)
_OPTIONS = re.compile(r"/\* tablets\.options (\{.*?\}) \*/\n?", re.DOTALL)


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


def options_comment(options: Mapping[str, Any] | None) -> str:
    """``options`` (``tablets.MergeOptions`` fields) as the comment that carries them in the
    statement they are for (``statement_options`` in the macros); "" for none."""
    if not options:
        return ""
    text = json.dumps(dict(options), default=list).replace("*/", "*\\/")  # JSON reads \/ as /
    return f"/* tablets.options {text} */\n"


def take_options(sql: str) -> tuple[str, dict[str, Any] | None]:
    """The statement without its options comment, and the options it carried (lists as tuples,
    as ``MergeOptions`` holds them); None without one."""
    m = _OPTIONS.search(sql)
    if m is None:
        return sql, None

    def tuples(v: Any) -> Any:
        return tuple(tuples(x) for x in v) if isinstance(v, list) else v

    options = {k: tuples(v) for k, v in json.loads(m.group(1)).items()}
    return sql[: m.start()] + sql[m.end() :], options


class TabletsCursor(SparkSessionCursor):
    """dbt-spark's session cursor, executing through ``Database.sql``."""

    def __init__(self, connection: TabletsConnection) -> None:
        super().__init__()
        self._connection = connection
        self.statement_result: StatementResult | None = None

    def execute(self, sql: str, *parameters: Any) -> None:

        if len(parameters) > 0:
            sql = sql % parameters
        self.statement_result = None
        self._rows = None
        sql, options = take_options(sql)
        db = self._connection.database
        ansi = options.pop("ansi", None) if options else None
        # a model's sql_header runs before its statement, in the same call
        with ansi_mode(db.spark, ansi):
            out = db.script(sql, options=options)  # errors become dbt's in the manager's exception_handler
        from tablets.db import StatementResult  # (the engine loads beside the session: _load_engine)

        if isinstance(out, StatementResult):
            self._df = None
            self._rows = []
            self.statement_result = out
            if options and options.get("parameters"):
                from dbt.adapters.tablets.changes import after_statement

                after_statement(db, options, out)  # tablets_changes: what a no-op consumed
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

    @property
    def statement_result(self) -> StatementResult | None:
        return self._cursor.statement_result if self._cursor is not None else None

    @property
    def database(self) -> Database:
        return self.handle.database
