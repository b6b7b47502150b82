"""A model's dbt contract (``contract: {enforced: true}``) as a tablet table holds it.

- ``not_null`` (a column's) and ``check`` (a column's or the model's) become the table's own
  NOT NULL and CHECK constraints, declared in the statement that creates it (``CREATE OR
  REPLACE TABLE t (id int not null, ..., constraint c check (...)) USING tablets AS ...``), so
  the rows are checked in the commit that writes them, and every later write (the model's next
  runs, any other writer) is held to them by the engine;
- ``primary_key`` is the table's key (``key_columns``): no two live rows share a key, and its
  columns are NOT NULL, as SQL's primary key;
- ``unique``, ``foreign_key`` and ``custom`` the engine cannot enforce: one warning per model
  names each, with what to do instead (never silence).

>>> c = parse_contract({"name": "orders", "contract": {"enforced": True},
...     "columns": {"id": {"name": "id", "data_type": "int", "constraints": [{"type": "not_null"}]}},
...     "constraints": [{"type": "check", "expression": "id > 0", "name": "positive"}]})
>>> c.ddl()
'(`id` int not null, constraint positive check (id > 0))'
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dbt_common.exceptions import DbtRuntimeError

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
UNENFORCED = {
    "unique": "test it with dbt's `unique` data test (or make it the table's key: a primary_key constraint)",
    "foreign_key": "test it with dbt's `relationships` data test",
    "custom": "express it as a `check` constraint, or test it with a data test",
}


@dataclass(frozen=True)
class Contract:
    """The constraints of one model's enforced contract."""

    model: str
    columns: tuple[tuple[str, str], ...]  # (name, data_type), in the contract's order
    not_null: tuple[str, ...] = ()
    checks: tuple[tuple[str, str], ...] = ()  # (name, expression)
    key: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    def ddl(self) -> str:
        """The column list of the CREATE statement: types, NOT NULL and CHECK constraints."""
        nn = {c.lower() for c in self.not_null}
        cols = [f"`{n.replace('`', '``')}` {t}{' not null' if n.lower() in nn else ''}" for n, t in self.columns]
        cols += [f"constraint {name} check ({expression})" for name, expression in self.checks]
        return "(" + ", ".join(cols) + ")"

    def properties(self, properties: Mapping[str, str]) -> dict[str, str]:
        """The created table's properties with the contract's primary key as its key columns."""
        props = dict(properties)
        if not self.key:
            return props
        have = [k.strip() for k in props.get("key_columns", "").split(",") if k.strip()]
        if have and [k.lower() for k in have] != [k.lower() for k in self.key]:
            raise DbtRuntimeError(
                f"Model '{self.model}': its primary_key constraint ({', '.join(self.key)}) is not its unique_key "
                f"({', '.join(have)}); a tablet table has one key.\n"
                "Help: make the primary_key constraint name the unique_key's columns, or drop one of them."
            )
        props["key_columns"] = ",".join(self.key)
        return props


def parse_contract(model: Mapping[str, Any]) -> Contract | None:
    """The model's contract, or None when it is not enforced."""
    contract = model.get("contract") or {}
    enforced = contract.get("enforced") if isinstance(contract, Mapping) else getattr(contract, "enforced", False)
    if not enforced:
        return None
    name = str(model.get("name"))
    columns, not_null, checks, key, warnings = [], [], [], [], []
    for col in (model.get("columns") or {}).values():
        column = col["name"]
        columns.append((column, str(col.get("data_type") or "")))
        for i, c in enumerate(col.get("constraints") or (), start=1):
            kind = _kind(c)
            if kind == "not_null":
                not_null.append(column)
            elif kind == "check":
                checks.append((_check_name(name, c, f"{column}_check_{i}"), _expression(name, c)))
            elif kind == "primary_key":
                key.append(column)
            else:
                warnings += _unenforced(name, c, f"column {column}")
    for i, c in enumerate(model.get("constraints") or (), start=1):
        kind = _kind(c)
        if kind == "check":
            checks.append((_check_name(name, c, f"check_{i}"), _expression(name, c)))
        elif kind == "primary_key":
            key += [k for k in _get(c, "columns") or () if k not in key]
        elif kind == "not_null":
            not_null += [k for k in _get(c, "columns") or () if k not in not_null]
        else:
            warnings += _unenforced(name, c, f"columns ({', '.join(_get(c, 'columns') or ())})")
    not_null += [k for k in key if k not in not_null]  # a primary key is NOT NULL (SQL's rule)
    return Contract(name, tuple(columns), tuple(not_null), tuple(checks), tuple(key), tuple(warnings))


def _get(c: Any, key: str) -> Any:
    return c.get(key) if isinstance(c, Mapping) else getattr(c, key, None)


def _kind(c: Any) -> str:
    kind = _get(c, "type")
    return str(getattr(kind, "value", kind))


def _expression(model: str, c: Any) -> str:
    expression = str(_get(c, "expression") or "").strip()
    if not expression:
        raise DbtRuntimeError(
            f"Model '{model}': a check constraint has no expression.\n"
            "Help: give it `expression: <a SQL boolean over the model's columns>`."
        )
    return expression


def _check_name(model: str, c: Any, fallback: str) -> str:
    """The constraint's name, else a stable one from its expression (the table keeps it by name)."""
    name = _get(c, "name")
    if name:
        if not _NAME.match(str(name)):
            raise DbtRuntimeError(
                f"Model '{model}': constraint name {name!r} is not an identifier.\n"
                "Help: name it with letters, digits and underscores."
            )
        return str(name).lower()
    digest = hashlib.md5(str(_get(c, "expression")).encode(), usedforsecurity=False).hexdigest()[:8]
    return f"{fallback}_{digest}".lower()


def _unenforced(model: str, c: Any, where: str) -> Sequence[str]:
    kind = _kind(c)
    if kind == "custom" and not _get(c, "warn_unsupported"):
        return []
    if kind != "custom" and not _get(c, "warn_unenforced"):
        return []
    label = f"{kind}{' ' + str(_get(c, 'name')) if _get(c, 'name') else ''}"
    fix = UNENFORCED.get(kind, "drop it, or test it with a data test")
    return [
        f"Model '{model}': its {label} constraint on {where} is not enforced by tablet tables and is not "
        f"part of the table (tablet tables enforce not_null, check and primary_key); {fix}."
    ]


def sync_statements(
    contract: Contract,
    name: str,
    checks: Sequence[tuple[str, str]],
    not_null: Sequence[str],
    key: Sequence[str],
) -> list[str]:
    """The ALTER TABLE statements that make an existing table's constraints (``checks``,
    ``not_null``, ``key``) the contract's, for a later run of an incremental or merge_tablets
    model: the contract is the source of truth. A constraint added checks the table's rows first
    (the run fails, naming a row, if one breaks it). The key is fixed at creation."""
    if contract.key and [k.lower() for k in key] != [k.lower() for k in contract.key]:
        raise DbtRuntimeError(
            f"Model '{contract.model}': its primary_key constraint ({', '.join(contract.key)}) is not the key "
            f"of the existing table {name} ({', '.join(key) or 'none'}); a table's key is fixed when it is created.\n"
            "Help: run the model with --full-refresh to rebuild the table with the new key."
        )
    out = []
    want = dict(contract.checks)
    have = {n.lower(): e for n, e in checks}
    for n, e in have.items():
        if want.get(n) != e:
            out.append(f"alter table {name} drop constraint {n}")
    for n, e in contract.checks:
        if have.get(n) != e:
            out.append(f"alter table {name} add constraint {n} check ({e})")
    declared = {c.lower() for c in contract.not_null}
    on = {c.lower() for c in not_null}
    out += [f"alter table {name} alter column `{c}` drop not null" for c in not_null if c.lower() not in declared]
    out += [f"alter table {name} alter column `{c}` set not null" for c in contract.not_null if c.lower() not in on]
    return out
