"""The error hierarchy of dbt-tablets.

Every error raised by the store, the engine or the SQL front door is a ``TabletsError``.
Messages say what went wrong and end with a ``Help:`` line saying what to do.
"""

from __future__ import annotations


class TabletsError(Exception):
    """Base class of every dbt-tablets error."""

    help: str = ""

    def __init__(self, message: str, help: str | None = None) -> None:
        self.detail = message
        if help is not None:
            self.help = help
        text = message if not self.help else f"{message}\nHelp: {self.help}"
        super().__init__(text)


# --- storage -------------------------------------------------------------------------------


class FormatError(TabletsError):
    """A file of the table is corrupt or not in the format this version understands."""

    help = "The file was damaged or written by something else; restore it from a copy or time-travel to an earlier version."


class WarehouseCopied(TabletsError):
    """A warehouse copied (or moved) from another root: its registry and metastore name the
    original's tables, so tablets uses neither."""


class TableNotFound(TabletsError):
    help = "Check the path or table name, or create the table first."


class TableAlreadyExists(TabletsError):
    help = "Drop the table first, or open it instead of creating it."


class ChangesUnavailable(TabletsError):
    """``table_changes`` cannot serve the versions asked for (out of range, or files VACUUM removed)."""

    help = "Read changes of versions the table still has (DESCRIBE HISTORY)."


class SchemaMismatch(TabletsError):
    help = "Cast the data to the table's schema, or evolve the schema first."


class CommitConflict(TabletsError):
    """A concurrent commit landed between this statement's read and its commit."""

    help = "Run the statement again: it will read the new version."

    def __init__(self, message: str, version: int | None = None, help: str | None = None) -> None:
        self.version = version
        super().__init__(message, help)


class ConcurrentDeleteDelete(CommitConflict):
    """Another commit deleted from (or removed) a tablet this statement deletes from."""


class ConcurrentDeleteRead(CommitConflict):
    """Another commit removed or re-deleted rows of a tablet this statement read."""


class ConcurrentAppend(CommitConflict):
    """Another commit added data this statement should have read."""


class MetadataChanged(CommitConflict):
    """Another commit changed the table's schema, keys or properties."""


class VacuumConflict(CommitConflict):
    """A VACUUM ran while this statement did and may have deleted files its commit references."""

    help = (
        "Run the statement again: it stages new files. A VACUUM whose retention is longer than your "
        "statements take never interrupts them."
    )


class VacuumRetentionError(TabletsError):
    help = "Use a longer retention, or pass enforce_retention=False if no reader or writer can still need the files."


# --- engine --------------------------------------------------------------------------------


class MergeSpecError(TabletsError):
    """The statement is well-formed SQL but not a valid MERGE (or UPDATE/DELETE/INSERT)."""

    help = "Fix the statement part named above."


class StatementParseError(MergeSpecError):
    help = "Check the statement's syntax; see the README for the supported forms."


class CardinalityViolation(TabletsError):
    help = (
        "Make the source unique on the ON columns (deduplicate it, e.g. with row_number()), "
        "or add a clause condition so at most one source row acts on each target row."
    )


class KeyViolation(TabletsError):
    """The statement would leave two live rows with the same key (the table's key columns),
    as PostgreSQL's unique_violation."""

    help = (
        "Deduplicate the rows on the key columns, or update existing keys with MERGE or "
        "INSERT ... ON CONFLICT (key) DO UPDATE; the table is unchanged."
    )


class ConstraintViolation(TabletsError):
    """Rows a statement would write break a NOT NULL or CHECK constraint of the table (or, on
    ALTER TABLE ADD CONSTRAINT / SET NOT NULL, rows the table holds); nothing was written."""

    help = "Fix or filter the rows named above, or drop the constraint; the table is unchanged."


class ExecutionError(TabletsError):
    """A Spark job of the statement failed; nothing was committed."""

    help = "Fix the expression or data named above and run the statement again; the table is unchanged."
