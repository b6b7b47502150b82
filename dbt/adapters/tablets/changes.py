"""``{{ tablets_changes(ref('orders')) }}``: an incremental model that reads its upstream's
changes since the version it last consumed, each change exactly once.

- The first run (the model's table does not exist, or ``--full-refresh``) reads the whole
  upstream at its newest version *v*, every row an ``insert`` (``_commit_version`` = *v*).
- A later run reads ``table_changes(upstream, last + 1, v)``, where *last* is what the model's
  newest commit recorded (``tablets.storage.changes.last_consumed``); nothing new: no rows.
- The model's own commit records ``consumed = {upstream table id: v}`` among its parameters (the
  statement options' ``parameters``: the same commit as its rows, so atomic). A statement that
  writes nothing records it in a commit of its own (a table property) after it.

So a run that fails before its commit is read again whole by the retry; a run that committed
and failed after (a post-hook) is not read again: the retry starts after *v*.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING

from tablets.changes import CONSUMED, last_consumed, record_consumed
from tablets.sqltext import sql_string

if TYPE_CHECKING:
    from tablets.db import Database, StatementResult

_pending: dict[str, dict[str, int]] = {}  # model name -> what its next statement consumes
_lock = threading.Lock()


def changes_sql(db: Database, model: str, upstream: str, this: str, full_refresh: bool) -> str:
    """The FROM item that reads ``upstream``'s unconsumed changes for ``model`` (table ``this``),
    noted for the model's next statement (``take_consumed``)."""
    table = db.table_of(upstream)
    snap = table.snapshot()
    uid, newest = snap.metadata.table_id, snap.version
    root = None if full_refresh else db.root_of(this)
    last = last_consumed(db.table_at(root)).get(uid) if root is not None else None
    with _lock:
        _pending.setdefault(model, {})[uid] = newest
    if last is None or last >= newest:
        ts = f"TIMESTAMP_MILLIS({snap.commit.timestamp_ms if snap.commit else 0})"
        where = "" if last is None else " WHERE false"
        return (
            f"(SELECT *, 'insert' AS _change_type, CAST({newest} AS BIGINT) AS _commit_version, {ts} AS _commit_timestamp "
            f"FROM {upstream} VERSION AS OF {newest}{where})"
        )
    return f"table_changes({sql_string(upstream)}, {last + 1}, {newest})"


def take_consumed(model: str) -> tuple[str, str] | None:
    """The commit parameter recording what ``model``'s statement consumes, once."""
    with _lock:
        got = _pending.pop(model, None)
    return (CONSUMED, json.dumps(got, sort_keys=True)) if got else None


def after_statement(db: Database, parameters: Iterable[tuple[str, str]], result: StatementResult) -> None:
    """A statement that was to record its consumption and committed nothing: record it alone."""
    raw = dict(parameters).get(CONSUMED)
    if raw and result.metrics.version is None:
        record_consumed(db.table_of(result.target), {k: int(v) for k, v in json.loads(raw).items()})
