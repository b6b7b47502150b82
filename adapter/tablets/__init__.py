"""dbt-tablets: full SQL MERGE on plain Spark, over tablet tables (immutable Parquet tablets
with Roaring deletion vectors and an atomic commit log).

``import tablets`` is light: the Spark-facing names (``connect``, ``table``) load PySpark on
first use, so ``tablets.storage`` stays free of pyspark and dbt.

This package's top-level modules are the front door: ``db`` (``Database``: every statement),
``builder`` (the Python merge builder), ``reads`` (queries on Spark's Parquet scan),
``maintenance``, ``metadata``, ``sessions`` (start or adopt a session); they may import every
layer below: ``sql`` -> ``engine`` -> ``spark`` -> ``spec`` -> ``storage`` -> the leaves
(``exceptions``, ``settings``, ``sqltext``). The order is written once, in
``tests/unit/test_layers.py``, which fails on an upward import or a circle.
"""

from __future__ import annotations

import importlib
from typing import Any

from tablets.exceptions import (
    CardinalityViolation,
    CommitConflict,
    ConcurrentAppend,
    ConcurrentDeleteDelete,
    ConcurrentDeleteRead,
    ConstraintViolation,
    ExecutionError,
    FormatError,
    MergeSpecError,
    MetadataChanged,
    StatementParseError,
    TabletsError,
    VacuumConflict,
)

__version__ = "0.1.0"

_LAZY = {
    "connect": ("tablets.db", "connect"),
    "Database": ("tablets.db", "Database"),
    "StatementResult": ("tablets.db", "StatementResult"),
    "table": ("tablets.builder", "table"),
    "MergeMetrics": ("tablets.engine.metrics", "MergeMetrics"),
    "MergeOptions": ("tablets.engine.run", "MergeOptions"),
    # the statement vocabulary (tablets.spec): what a clause does and when it applies
    "ActionKind": ("tablets.spec", "ActionKind"),
    "Category": ("tablets.spec", "Category"),
    "ALLOWED_ACTIONS": ("tablets.spec", "ALLOWED_ACTIONS"),
    "INTERNAL_ACTIONS": ("tablets.spec", "INTERNAL_ACTIONS"),
    # why a piece of a statement (a condition, a value) is not SQL, or None
    "expression_error": ("tablets.sql.syntax", "expression_error"),
    # an error as a user reads it: Spark's in a line (no plan, no stack trace), the engine's whole
    "short_error": ("tablets.engine.errors", "short_error"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'tablets' has no attribute {name!r}")


__all__ = [
    "CardinalityViolation",
    "CommitConflict",
    "ConcurrentAppend",
    "ConcurrentDeleteDelete",
    "ConcurrentDeleteRead",
    "ConstraintViolation",
    "ExecutionError",
    "FormatError",
    "MergeSpecError",
    "MetadataChanged",
    "StatementParseError",
    "TabletsError",
    "VacuumConflict",
    *_LAZY,
]
