"""dbt-tablets: the dbt adapter plugin (type ``tablets``), extending dbt-spark.

The macros call it (``adapter.<method>``); it parses and validates configs (``config``,
``vocabulary``, ``strategies``, ``table_options``, ``clauses``, ``snapshot``), renders statements
(``render``) and runs them through the engine's front door only: ``tablets.Database``,
``tablets.sessions``, ``tablets.reads``, ``tablets.statements.metadata``, ``tablets.exceptions`` (never
``tablets.sql``/``engine``/``spark``/``spec``/``storage``: ``tests/unit/test_layers.py``).
"""

from dbt.adapters.base import AdapterPlugin

from dbt.adapters.tablets.connections import TabletsConnectionManager, TabletsCredentials
from dbt.adapters.tablets.impl import TabletsAdapter
from dbt.adapters.tablets.relation import TabletsRelation
from dbt.include import tablets

Plugin = AdapterPlugin(
    adapter=TabletsAdapter,  # type: ignore[arg-type]
    credentials=TabletsCredentials,
    include_path=tablets.PACKAGE_PATH,
    dependencies=["spark"],
)

__all__ = [
    "Plugin",
    "TabletsAdapter",
    "TabletsConnectionManager",
    "TabletsCredentials",
    "TabletsRelation",
]
