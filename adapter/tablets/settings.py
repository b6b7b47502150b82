"""The readers of settings: on/off (``spark.tablets.*`` switches, ``TABLETS_*`` environment
variables and boolean table properties all take the same words) and counts.

On: ``true``, ``on``, ``1``, ``yes``; off: ``false``, ``off``, ``0``, ``no`` (any case, spaces
around ignored). Unset or empty: the setting's default. Anything else is an ``InvalidSetting``
naming the setting, rather than a guess (``skipSameSource=of`` must not leave a shortcut on).

A leaf: imports only ``tablets.exceptions`` (Spark's workers may load it).
"""

from __future__ import annotations

from typing import Any

from tablets.exceptions import TabletsError

ON = ("true", "on", "1", "yes")
OFF = ("false", "off", "0", "no")
BOOLEANS = ON + OFF


class InvalidSetting(TabletsError):
    help = "Set it to true or false (on/off, 1/0 and yes/no are read the same way), or unset it for the default."


COUNT_HELP = "Set it to a whole number of 0 or more (0 turns the shortcut off), or unset it for the default."


def flag(value: object, name: str, default: bool = True) -> bool:
    """``value`` of the on/off setting ``name``: True or False; ``default`` when unset or empty."""
    if value is None:
        return default
    text = str(value).strip().lower()
    if not text:
        return default
    if text in ON:
        return True
    if text in OFF:
        return False
    raise InvalidSetting(f"{name} = {str(value)!r} is not an on/off value: use one of {', '.join(BOOLEANS)}")


def conf_value(spark: Any, key: str) -> str | None:
    """The Spark setting ``key`` of ``spark`` as set, or None where it is unset or the session
    cannot be asked (a Spark Connect server gone, say): each reader's default then."""
    try:
        value = spark.conf.get(key, None)
    except Exception:  # noqa: BLE001 - cannot tell: the default
        return None
    return None if value is None else str(value)


def conf_flag(spark: Any, key: str, default: bool = True) -> bool:
    """The on/off Spark setting ``key`` of ``spark`` (``flag``); ``default`` where unset or the
    session cannot be asked."""
    return flag(conf_value(spark, key), key, default)


def count(value: object, name: str, default: int) -> int:
    """``value`` of the setting ``name``, a whole number of 0 or more; ``default`` when unset or empty."""
    text = "" if value is None else str(value).strip()
    if not text:
        return default
    try:
        n = int(text)
    except ValueError:
        n = -1
    if n < 0:
        raise InvalidSetting(f"{name} = {str(value)!r} is not a whole number of 0 or more", help=COUNT_HELP)
    return n


def conf_count(spark: Any, key: str, default: int) -> int:
    """The Spark setting ``key`` of ``spark`` as a count (``count``); ``default`` where unset or the
    session cannot be asked."""
    return count(conf_value(spark, key), key, default)
