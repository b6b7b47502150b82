"""One module per kind of statement (``tablets.spec.statement.Kind``), peers that never import
each other: each ``run(door, statement)`` answers its kind for a tablet table, or returns None
for another table (Spark's then: ``query``). ``HANDLERS`` is the front door's table."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tablets.spec.statement import Kind
from tablets.statements import (
    alter,
    clone,
    create,
    drop,
    explain,
    insert,
    maintenance,
    merge,
    metadata,
    query,
)

HANDLERS: dict[Kind, Callable[..., Any]] = {
    Kind.MERGE: merge.run,
    Kind.INSERT: insert.run,
    Kind.CREATE: create.run,
    Kind.CLONE: clone.run,
    Kind.DROP: drop.run,
    Kind.ALTER: alter.run,
    Kind.METADATA: metadata.run,
    Kind.MAINTENANCE: maintenance.run,
    Kind.EXPLAIN: explain.run,
    Kind.QUERY: query.run,
}
