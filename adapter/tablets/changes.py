"""``table_changes`` in SQL and Python (Databricks' change data feed function):

    SELECT * FROM table_changes('db.t', 3)            -- versions 3 .. the newest
    SELECT * FROM table_changes('db.t', 3, 7)
    SELECT * FROM table_changes('db.t', '2024-05-01 00:00:00', '2024-05-02 00:00:00')

returns the table's columns and ``_change_type`` (``insert``, ``delete``, ``update_preimage``,
``update_postimage``), ``_commit_version``, ``_commit_timestamp``; ``db.table_changes(name,
start, end=None)`` gives the same DataFrame. A bound that is a string is a timestamp (the
session's time zone): the start is the first version committed at or after it, the end the
last at or before it. The rows are computed by the store (``tablets.storage.changes``) from the
log and the files already written, on the driver, and become a temporary view named by the
table and the versions (immutable: a later query of the same range may reuse it), which
replaces the call in the statement's text, so it works wherever a table does: a query, a
temporary view's query (dbt's models), a MERGE's source, CREATE TABLE ... AS.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from sqlglot import exp

from tablets.exceptions import ChangesUnavailable
from tablets.spark import catalog
from tablets.spark.frames import local_relation
from tablets.spark.resolve import global_view, replace_tables
from tablets.storage.changes import CONSUMED, changes, last_consumed, record_consumed, version_range  # noqa: F401 - the dbt plugin's, through the front door

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from tablets.storage import TabletTable

FUNCTION = "table_changes"
VIEW_PREFIX = "tablets_changes_"
_MENTIONS = re.compile(r"\btable_changes\s*\(", re.IGNORECASE)

Bound = int | str | None


def _millis(spark: SparkSession, value: str, what: str) -> int:
    help = "Give a version number or a timestamp such as '2024-05-01 12:00:00' (the session time zone)."
    try:
        micros = spark.sql(f"SELECT unix_micros(CAST(({_quote(value)}) AS TIMESTAMP)) AS us").collect()[0][0]
    except Exception as e:  # noqa: BLE001 - Spark's parse error
        raise ChangesUnavailable(
            f"{what}: {value!r} is not a timestamp ({str(e).splitlines()[0][:200]})", help=help
        ) from None
    if micros is None:
        raise ChangesUnavailable(f"{what}: {value!r} is not a timestamp", help=help)
    return int(micros) // 1000


def _quote(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def resolve(spark: SparkSession, table: TabletTable, start: Bound, end: Bound, what: str) -> tuple[int, int]:
    """[start, end] as versions (strings are timestamps)."""
    if start is None:
        raise ChangesUnavailable(
            f"{what}: no start version", help="Give the first version to read: table_changes(t, 3)."
        )
    s_ms = _millis(spark, start, what) if isinstance(start, str) and not start.strip().isdigit() else None
    e_ms = _millis(spark, end, what) if isinstance(end, str) and not end.strip().isdigit() else None
    s_v = int(start) if s_ms is None else None
    e_v = int(end) if end is not None and e_ms is None else None
    return version_range(table.commit_times(), s_v, e_v, what, start_ms=s_ms, end_ms=e_ms)


def changes_frame(spark: SparkSession, name: str, start: Bound, end: Bound = None) -> DataFrame:
    """The changes of the tablet table ``name`` in [start, end] as a DataFrame."""
    return _frame(spark, name, start, end)[0]


def _frame(spark: SparkSession, name: str, start: Bound, end: Bound) -> tuple[DataFrame, str, int, int]:
    what = f"{FUNCTION}('{name}', {start!r}" + ("" if end is None else f", {end!r}") + ")"
    root = catalog.require(spark, name)
    table = catalog.storage(spark).table(root)
    s, e = resolve(spark, table, start, end, what)
    data = changes(table, s, e, where=what)
    return local_relation(spark, data), root, s, e


def rewrite(spark: SparkSession, text: str) -> str:
    """``text`` with each ``table_changes(...)`` of a FROM replaced by a temporary view of its
    rows; ``text`` itself when it calls none."""
    if not _MENTIONS.search(text):
        return text

    def view_of(node: exp.Table) -> tuple[str, None] | None:
        call = node.this
        if not isinstance(call, exp.Anonymous) or str(call.this).lower() != FUNCTION:
            return None
        args = [_arg(a) for a in call.expressions]
        if not 2 <= len(args) <= 3 or not isinstance(args[0], str):
            raise ChangesUnavailable(
                f"{call.sql(dialect='spark')[:200]}: expected table_changes('<table>', <start>[, <end>])",
                help="Name the table as a string; give versions as numbers or timestamps as strings.",
            )
        frame, root, s, e = _frame(spark, args[0], args[1], args[2] if len(args) == 3 else None)
        view = f"{VIEW_PREFIX}{catalog.provider_name(root)[len(catalog.PROVIDER_PREFIX) :]}_{s}_{e}"
        return global_view(spark, frame, view), None

    return replace_tables(text, view_of)


def _arg(e: object) -> Bound:

    if isinstance(e, exp.Literal) and (e.is_string or str(e.this).isdigit()):
        return str(e.this) if e.is_string else int(str(e.this))
    if isinstance(e, exp.Neg) and isinstance(e.this, exp.Literal) and str(e.this.this).isdigit():
        return -int(str(e.this.this))
    raise ChangesUnavailable(
        f"table_changes: {getattr(e, 'sql', lambda **_: str(e))(dialect='spark')[:100]} is not a version number "
        "or a timestamp string",
        help="Give versions as whole numbers and timestamps as strings (table_changes('db.t', 3, 7)).",
    )
