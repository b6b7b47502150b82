"""Comments in the docs catalog (``dbt docs generate``).

dbt-spark builds the catalog from ``SHOW TABLE EXTENDED``'s schema tree, which holds no column
comments, so its catalog has none (and a multi-line table comment cannot be read back from that
text). Here every relation is also described (``DESCRIBE TABLE EXTENDED``, one statement each:
Spark's answer for views and other tables, the front door's for tablet tables, whose comments
live in their log) and its rows give the table comment and each column's comment.

>>> describe_comments([("id", "bigint", "the key"), ("", "", ""),
...                    ("# Detailed Table Information", "", ""), ("Comment", "Orders", "")])
('Orders', {'id': 'the key'})
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any


def describe_comments(rows: Iterable[Sequence[Any]]) -> tuple[str | None, dict[str, str | None]]:
    """(table comment, column name -> comment) from ``DESCRIBE TABLE EXTENDED`` rows."""
    columns: dict[str, str | None] = {}
    table_comment = None
    in_columns = True
    for row in rows:
        name, value, comment = (str(row[0] or ""), row[1], row[2])
        if in_columns and (not name or name.startswith("#")):
            in_columns = False  # the blank row or a section header ends the columns
        if in_columns:
            columns[name] = comment if comment else None
        elif name == "Comment":
            table_comment = value
    return table_comment, columns
