"""The table properties tablets reads, checked where they are set (CREATE, ALTER TABLE SET
TBLPROPERTIES, a dbt model's config), so that a bad value is refused with the key, the value
and what is allowed, instead of failing (or writing nothing) at a later statement.

Other keys are the user's own (``owner``, ``team``) and are kept as they are; a key close to one
of tablets' own (``target_tablet_row``, ``tablets.key_columns``) is refused with a did-you-mean,
as it would otherwise be silently ignored. A Delta property that turns on a table feature
tablets does not maintain (``DELTA_FEATURES``) is refused by name: the Delta log would declare
it, and Delta readers and writers would trust a promise no tablets statement keeps. The same
list refuses a foreign Delta table that uses one (``delta_codec.check_metadata``).
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Mapping, Sequence

from tablets.exceptions import TabletsError
from tablets.settings import BOOLEANS  # the one vocabulary of on/off values (tablets.settings)
from tablets.sqltext import repeated_names
from tablets.storage.delta_schema import MAPPING_MODE  # tablets maps by name when a rename or drop needs it


class InvalidProperty(TabletsError):
    help = "Set the property to an allowed value (docs/FORMAT.md, 'Table properties')."


def _number(
    low: float, high: float = math.inf, *, integer: bool = False, low_open: bool = False
) -> Callable[[str], str | None]:
    kind = "a whole number" if integer else "a number"

    def shown(x: float) -> str:
        return f"{int(x):,}" if integer else f"{x:g}"

    bounds = f"above {shown(low)}" if low_open else f"at least {shown(low)}"
    if high != math.inf:
        bounds += f" and at most {shown(high)}"

    def check(raw: str) -> str | None:
        if integer and not re.fullmatch(r"\s*[+-]?[0-9]+\s*", raw):  # its readers take int(): not 1e3, not 10.0
            return f"{kind} {bounds}"
        try:
            value = float(raw)
        except ValueError:
            return f"{kind} {bounds}"
        if not math.isfinite(value):
            return f"{kind} {bounds}"
        if value < low or (low_open and value == low) or value > high:
            return f"{kind} {bounds}"
        return None

    return check


def _boolean(raw: str) -> str | None:
    return None if raw.strip().lower() in BOOLEANS else "true or false"


# key -> a check giving what is allowed when the value is not; a row count is a Parquet row
# group's (a signed 32-bit count in Arrow's writer)
CHECKS: dict[str, Callable[[str], str | None]] = {
    "target_tablet_rows": _number(1, 2**31 - 1, integer=True),
    "deleted_file_retention_hours": _number(0),
    "auto_compact": _boolean,
    "auto_compact_small_fraction": _number(0, 1, low_open=True),
    "auto_compact_max_deleted_fraction": _number(0, 1, low_open=True),
    "auto_compact_min_tablets": _number(2, integer=True),
}
COLUMN_LISTS = ("cluster_by", "key_columns")  # comma lists of the table's columns
KNOWN = (*CHECKS, *COLUMN_LISTS)
# Delta properties that, set to true, turn on a feature tablets' statements do not maintain
DELTA_FEATURES = {
    "delta.enableChangeDataFeed": "changeDataFeed (delta.enableChangeDataFeed)",
    "delta.enableRowTracking": "rowTracking (delta.enableRowTracking)",
    "delta.appendOnly": "appendOnly (delta.appendOnly)",
}
FEATURE_HELP = {
    "delta.enableChangeDataFeed": "Leave it out: every tablet table keeps its changes, read with table_changes('<table>', <version>).",
    "delta.enableRowTracking": "Leave it out (or set it to false).",
    "delta.appendOnly": "Leave it out (or set it to false); a tablet table takes DELETE, UPDATE and MERGE.",
}
DELETION_VECTORS = "delta.enableDeletionVectors"  # every tablet table has them


def _delta(key: str, value: str, where: str) -> None:
    """Refuse a Delta property tablets cannot keep true."""
    v = value.strip().lower()
    if key in DELTA_FEATURES and v == "true":
        raise InvalidProperty(
            f"{where}: table property {key} = {value!r}: tablet tables do not maintain Delta's {DELTA_FEATURES[key]}",
            help=FEATURE_HELP[key],
        )
    if key == MAPPING_MODE and v not in ("name", "none"):
        raise InvalidProperty(
            f"{where}: table property {key} = {value!r} is not allowed: tablet tables map columns by name",
            help=f"Leave out {key}: tablets maps columns by name whenever a column is renamed or dropped.",
        )
    if key == DELETION_VECTORS and v != "true":
        raise InvalidProperty(
            f"{where}: table property {key} = {value!r} is not allowed: every tablet table has deletion vectors",
            help=f"Leave out {key}.",
        )


def check_properties(properties: Mapping[str, str], columns: Sequence[str], where: str) -> None:
    """Raise ``InvalidProperty`` for the first bad value of a property tablets reads, or a key
    that looks like a misspelt one of them. ``where``: the statement, for the message."""
    names = {c.lower() for c in columns}
    for key, raw in properties.items():
        value = "" if raw is None else str(raw)
        check = CHECKS.get(key)
        if check is not None:
            allowed = check(value)
            if allowed is not None:
                raise InvalidProperty(
                    f"{where}: table property {key} = {value!r} is not allowed: it must be {allowed}",
                    help=f"Set {key} to {allowed}, or leave it out for the default.",
                )
        elif key in COLUMN_LISTS:
            _column_list(key, value, columns, names, where)
        elif key.lower().startswith("delta."):
            _delta(key, value, where)
        else:
            bare = key.lower().removeprefix("tablets.")
            close = [bare] if bare != key.lower() and bare in KNOWN else []
            close = close or difflib.get_close_matches(key.lower(), KNOWN, n=1, cutoff=0.85)
            if close and close[0] != key:
                raise InvalidProperty(
                    f"{where}: table property {key!r} is not one tablets knows; did you mean {close[0]!r}?",
                    help=f"Use {close[0]!r} (a property tablets reads), or another name for a property of your own.",
                )


def _column_list(key: str, value: str, columns: Sequence[str], names: set[str], where: str) -> None:
    """A comma list of distinct columns of the table (empty: none)."""
    items = [c.strip() for c in value.split(",")]
    listed = [c for c in items if c]
    if value.strip() and len(listed) != len(items):
        raise InvalidProperty(
            f"{where}: table property {key} = {value!r} has an empty name in it",
            help=f"Name the table's columns in {key}, separated by commas.",
        )
    missing = [c for c in listed if c.lower() not in names]
    if missing:
        raise InvalidProperty(
            f"{where}: table property {key} = {value!r} names {', '.join(missing)}, not columns of the table "
            f"(columns: {', '.join(columns)})",
            help=f"Name the table's columns in {key}, separated by commas.",
        )
    repeated = repeated_names(listed)
    if repeated:
        raise InvalidProperty(
            f"{where}: table property {key} = {value!r} names {', '.join(repeated)} more than once",
            help=f"Name each column once in {key}.",
        )
