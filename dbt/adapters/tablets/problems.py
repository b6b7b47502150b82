"""Config problems: each names the key (with its path), the bad value, why, what is allowed and
the fix; :class:`MergeConfigError` reports all of a model's problems in one dbt error.

:class:`Problems` collects them while the config is read, with the value checks every key
shares (a string or list of strings, a boolean, a map column -> SQL expression).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dbt_common.exceptions import DbtRuntimeError

from tablets import expression_error


@dataclass(frozen=True)
class Problem:
    key: str
    value: Any
    message: str
    allowed: str
    fix: str

    def render(self) -> str:
        return (
            f"  - {self.key} = {_show(self.value)}: {self.message}\n"
            f"      allowed: {self.allowed}\n"
            f"      fix: {self.fix}"
        )


class MergeConfigError(DbtRuntimeError):
    """Every problem of one model's config, in one error."""

    def __init__(
        self,
        model: str,
        materialization: str,
        problems: Sequence[Problem],
        outcome: str = "nothing was run",
    ) -> None:
        self.model = model
        self.materialization = materialization
        self.problems = tuple(problems)
        n = len(self.problems)
        head = f"The {materialization} config of model '{model}' has {n} problem{'s' if n != 1 else ''} ({outcome}):"
        super().__init__("\n".join([head, *(p.render() for p in self.problems)]))


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."


def sql_value(value: Any) -> str | None:
    """A ``set`` / ``values`` entry as SQL text: strings verbatim, scalars as literals."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "NULL"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


class Problems:
    """The problems found so far, and the shared value checks (which record a problem and
    return None for a bad value)."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def add(self, key: str, value: Any, message: str, allowed: str, fix: str) -> None:
        self.problems.append(Problem(key, value, message, allowed, fix))

    def __contains__(self, key: object) -> bool:
        """Whether a problem was recorded for ``key``."""
        return any(p.key == key for p in self.problems)

    def raise_if_any(self, model: str, materialization: str, outcome: str = "nothing was run") -> None:
        if self.problems:
            raise MergeConfigError(model, materialization, self.problems, outcome)

    def str_list(
        self,
        config: Mapping[str, Any],
        key: str,
        *,
        what: str,
        example: str,
        allow_empty: bool = True,
    ) -> tuple[str, ...] | None:
        """A string or a list of non-empty strings (deduplicated, order kept)."""
        raw = config.get(key)
        if raw is None:
            return None
        items = ([raw] if raw.strip() else []) if isinstance(raw, str) else raw
        if not isinstance(items, list | tuple) or not all(isinstance(x, str) and x.strip() for x in items):
            allowed = f"a string or a list of strings (non-empty), e.g. {example}"
            self.add(key, raw, f"not a {what} or a list of them", allowed, f"set {key}: {example}")
            return None
        out = tuple(dict.fromkeys(x.strip() for x in items))
        if not out and not allow_empty:
            allowed = f"a string or a non-empty list, e.g. {example}"
            self.add(key, raw, "is empty", allowed, f"set {key}: {example}")
            return None
        return out

    def boolean(self, config: Mapping[str, Any], key: str, default: bool) -> bool:
        raw = config.get(key)
        if raw is None:
            return default
        if isinstance(raw, bool):
            return raw
        fix = f"set {key}: {str(default).lower()} (unquoted)"
        self.add(key, raw, "not a boolean", "true or false", fix)
        return default

    def assignments(self, key: str, raw: Any, *, what: str, example: str) -> tuple[tuple[str, str], ...] | None:
        """A non-empty map column -> SQL expression (``set``, ``values``)."""
        if not isinstance(raw, Mapping) or not raw:
            message = f"not a map of column -> SQL expression ({what})"
            fix = f"write {key.rsplit('.', 1)[-1]}: {example}"
            self.add(key, raw, message, f"a non-empty map, e.g. {example}", fix)
            return None
        out: list[tuple[str, str]] = []
        ok = True
        for col, value in raw.items():
            sql = sql_value(value)
            if not isinstance(col, str) or not col.strip() or sql is None:
                allowed = "column: 'SQL expression' (a string, number, boolean or null)"
                message = "not a column name mapped to a SQL expression"
                self.add(f"{key}.{col}", value, message, allowed, f"write {example}")
                ok = False
                continue
            wrong = expression_error(sql)
            if wrong is not None:
                self.add(f"{key}.{col}", value, f"not valid SQL: {wrong}", "a SQL expression", "correct the SQL")
                ok = False
                continue
            out.append((col.strip().strip("`"), sql))
        return tuple(out) if ok else None
