"""A statement as the front door reads it: its kind, the table it names, and sqlglot's tree of
it where sqlglot reads it. ``tablets.sql.classify`` makes one per statement, once; the door
hands it to the one handler of its kind (``tablets.statements``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Kind(StrEnum):
    MERGE = "MERGE"  # MERGE, UPDATE, DELETE, INSERT ... ON CONFLICT, TRUNCATE TABLE
    INSERT = "INSERT"  # INSERT INTO / OVERWRITE <query>: an append
    CREATE = "CREATE"  # CREATE [OR REPLACE] TABLE, REPLACE TABLE, CTAS, CREATE TABLE ... LIKE
    CLONE = "CLONE"  # CREATE TABLE ... SHALLOW / DEEP CLONE
    DROP = "DROP"  # DROP TABLE
    ALTER = "ALTER"  # columns and constraints
    METADATA = "METADATA"  # DESCRIBE, SHOW TBLPROPERTIES, SHOW CREATE TABLE, properties, comments, CLUSTER BY
    MAINTENANCE = "MAINTENANCE"  # DESCRIBE HISTORY, RESTORE, VACUUM, OPTIMIZE, CHECK TABLE
    EXPLAIN = "EXPLAIN"  # EXPLAIN <statement>
    QUERY = "QUERY"  # everything else: Spark's, with tablet tables read natively


@dataclass(frozen=True)
class Statement:
    """One statement, classified. ``form`` tells a kind's forms apart where its handler needs it
    (``TRUNCATE``, ``CLUSTER BY``, ``REPLACE``, ``LIKE``; the verb of a MERGE kind); ``target``
    is the table it writes or is about (None: none, or it could not be read); ``tree`` is
    sqlglot's parse of ``text`` (without MERGE's WITH SCHEMA EVOLUTION), None where sqlglot
    cannot read it; ``parts`` what the classifier read beyond the target where a form's handler
    needs it (TRUNCATE: the table as written and its PARTITION clause or ""; CLUSTER BY: the
    table as written, then its columns); ``inner`` is an EXPLAIN's statement."""

    kind: Kind
    text: str
    form: str = ""
    target: str | None = None
    tree: Any = field(default=None, compare=False, repr=False)
    parts: tuple[str, ...] = ()
    inner: Statement | None = None
