"""dbt-tablets: the dbt adapter plugin (type ``tablets``), extending dbt-spark."""

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
