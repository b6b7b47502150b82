"""The table properties tablets reads, checked where they are set (CREATE, ALTER TABLE SET
TBLPROPERTIES, a dbt model's config), so that a bad value is refused with the key, the value
and what is allowed, instead of failing (or writing nothing) at a later statement.

Other keys are the user's own (``owner``, ``team``) and are kept as they are; a key close to one
of tablets' own (``target_tablet_row``) is refused with a did-you-mean, as it would otherwise
be silently ignored.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Mapping, Sequence

from tablets.exceptions import TabletsError
from tablets.settings import BOOLEANS  # the one vocabulary of on/off values (tablets.settings)


class InvalidProperty(TabletsError):
    help = "Set the property to an allowed value (docs/FORMAT.md, 'Table properties')."


def _number(
    low: float, high: float = math.inf, *, integer: bool = False, low_open: bool = False
) -> Callable[[str], str | None]:
    kind = "a whole number" if integer else "a number"
    bounds = f"above {low:g}" if low_open else f"at least {low:g}"
    if high != math.inf:
        bounds += f" and at most {high:g}"

    def check(raw: str) -> str | None:
        try:
            value = float(raw)
        except ValueError:
            return f"{kind} {bounds}"
        if not math.isfinite(value) or (integer and value != int(value)):
            return f"{kind} {bounds}"
        if value < low or (low_open and value == low) or value > high:
            return f"{kind} {bounds}"
        return None

    return check


def _boolean(raw: str) -> str | None:
    return None if raw.strip().lower() in BOOLEANS else "true or false"


# key -> a check giving what is allowed when the value is not
CHECKS: dict[str, Callable[[str], str | None]] = {
    "target_tablet_rows": _number(1, integer=True),
    "deleted_file_retention_hours": _number(0),
    "auto_compact": _boolean,
    "auto_compact_small_fraction": _number(0, 1, low_open=True),
    "auto_compact_max_deleted_fraction": _number(0, 1, low_open=True),
    "auto_compact_min_tablets": _number(2, integer=True),
}
COLUMN_LISTS = ("cluster_by", "key_columns")  # comma lists of the table's columns
KNOWN = (*CHECKS, *COLUMN_LISTS)


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
            missing = [c.strip() for c in value.split(",") if c.strip() and c.strip().lower() not in names]
            if missing:
                raise InvalidProperty(
                    f"{where}: table property {key} = {value!r} names {', '.join(missing)}, not columns of the table "
                    f"(columns: {', '.join(columns)})",
                    help=f"Name the table's columns in {key}, separated by commas.",
                )
        else:
            close = difflib.get_close_matches(key.lower(), KNOWN, n=1, cutoff=0.85)
            if close and close[0] != key:
                raise InvalidProperty(
                    f"{where}: table property {key!r} is not one tablets knows; did you mean {close[0]!r}?",
                    help=f"Use {close[0]!r} (a property tablets reads), or another name for a property of your own.",
                )
