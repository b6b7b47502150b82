"""MacroTestBase: render the real macros of ``macros/`` (as dbt-databricks'
``tests/unit/macros/base.py`` does), with dbt's own Jinja environment (so ``{% materialization %}``
blocks compile to the macros dbt calls) and a small fake of the dbt context: ``config``,
``model``, ``this``, ``adapter``, ``statement`` (records the SQL of every ``{% call statement %}``,
and ``adapter.run_statement`` a model's own statement as ``main``),
``return`` and the dbt / dbt-spark macros ours delegate to (recorded as calls)."""

from __future__ import annotations

import os
import re
from typing import Any
from unittest import mock

from dbt_common.clients.jinja import get_environment
from jinja2 import FileSystemLoader

MACROS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "macros")


MACRO_PREFIX = "dbt_macro__"


class _Return(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


def _raise(message: str) -> None:
    raise RuntimeError(message)


def _raise_return(value: Any) -> None:
    raise _Return(value)


def _macro_call(macro: Any) -> Any:
    """Call a Jinja macro the way dbt's MacroGenerator does: ``return(x)`` gives ``x``."""

    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return macro(*args, **kwargs)
        except _Return as r:
            return r.value

    return call


class Relation:
    """Enough of a dbt relation for the macros: renders as schema.identifier."""

    def __init__(self, identifier: str, schema: str | None = "analytics", type: str | None = "table") -> None:
        self.identifier, self.schema, self.type, self.database = identifier, schema, type, None

    def __str__(self) -> str:
        return f"{self.schema}.{self.identifier}" if self.schema else self.identifier

    def incorporate(self, type: str | None = None, path: dict | None = None, **_: Any) -> Relation:
        ident = (path or {}).get("identifier", self.identifier)
        return Relation(ident, self.schema, type or self.type)


class MacroTestBase:
    """Subclass, then call ``self.run_macro(name, *args)``. ``self.statements`` holds
    ``(name, sql)`` of every statement the macro ran, ``self.calls`` the delegated macros."""

    def setup_method(self) -> None:
        self.config: dict[str, Any] = {}
        self.statements: list[tuple[str | None, str]] = []
        self.calls: list[tuple[str, tuple]] = []
        self.adapter = mock.Mock(name="adapter")
        self.this = Relation("m")
        self.context: dict[str, Any] = {
            "adapter": self.adapter,
            "config": mock.Mock(name="config"),
            "model": {
                "name": "m",
                "language": "sql",
                "config": self.config,
                "unique_id": "model.p.m",
            },
            "this": self.this,
            "compiled_code": "select 1 as id",
            "execute": True,
            "pre_hooks": [],
            "post_hooks": [],
            "return": _raise_return,
            "exceptions": mock.Mock(name="exceptions"),
            "log": lambda *a, **k: "",
            "statement": self._statement,
            "write": lambda sql: "",
            "store_result": lambda *a, **k: "",
        }
        self.adapter.run_statement.side_effect = lambda cfg, sql: self.statements.append(("main", squash(sql)))
        self.context["config"].get = lambda key, default=None, **_: self.config.get(key, default)
        self.context["exceptions"].raise_compiler_error.side_effect = _raise
        for name, result in self.delegates().items():
            self.context[name] = self._recorder(name, result)
        env = get_environment()
        env.loader = FileSystemLoader(MACROS)
        # dbt's sandbox refuses to call unittest.mock objects (they fake every attribute)
        env.is_safe_callable = lambda obj: True  # type: ignore[method-assign]
        self.macros: dict[str, Any] = {}
        for root, _dirs, files in os.walk(MACROS):
            for f in sorted(files):
                if f.endswith(".sql"):
                    rel = os.path.relpath(os.path.join(root, f), MACROS)
                    module = env.get_template(rel, globals=self.context).module
                    for attr, value in vars(module).items():
                        if attr.startswith(MACRO_PREFIX):  # dbt's parser names macros dbt_macro__<name>
                            self.macros[attr[len(MACRO_PREFIX) :]] = value
        self.context.update({name: _macro_call(m) for name, m in self.macros.items()})

    def delegates(self) -> dict[str, Any]:
        """dbt and dbt-spark macros the tested macros call: name -> what the fake returns."""
        return {
            "spark__create_table_as": "<spark create_table_as>",
            "spark__rename_relation": "<spark rename>",
            "spark__alter_relation_add_remove_columns": "",
            "spark__alter_column_type": "<spark alter type>",
            "spark__drop_schema": "<spark drop schema>",
            "create_temporary_view": lambda rel, sql: f"create or replace temporary view {rel} as {sql}",
            "make_temp_relation": lambda rel, suffix: Relation(rel.identifier + suffix, None, "view"),
            "load_cached_relation": None,
            "should_full_refresh": False,
            "process_schema_changes": {},
            "run_hooks": "",
            "should_revoke": False,
            "apply_grants": "",
            "persist_docs": "",
            "location_clause": "",
            "get_assert_columns_equivalent": "",
            "get_select_subquery": lambda sql: sql,
            "materialization_incremental_spark": {"relations": ["<spark incremental>"]},
        }

    def _recorder(self, name: str, result: Any):
        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((name, args))
            return result(*args, **kwargs) if callable(result) else result

        return call

    def _statement(self, name: str | None = None, *args: Any, caller: Any = None, **kwargs: Any) -> str:
        self.statements.append((name, squash(caller())))
        return ""

    def run_macro(self, name: str, *args: Any, **kwargs: Any) -> Any:
        value = self.context[name](*args, **kwargs)
        return squash(value) if isinstance(value, str) else value

    def called(self, name: str) -> list[tuple]:
        return [args for n, args in self.calls if n == name]


def squash(text: str) -> str:
    return re.sub(r"\s+", " ", str(text)).strip()
