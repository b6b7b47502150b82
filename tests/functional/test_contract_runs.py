"""An enforced contract on merge_tablets and incremental models: its not_null and check
constraints are the table's (later runs, and other writers, are held to them), a run whose rows
break one fails naming it and writes nothing, a constraint the engine cannot enforce gets a
warning naming the model, and a contract changed between runs is made the table's before the
next merge."""

from __future__ import annotations

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture, write_file

MODEL = """
{{ config(materialized='merge_tablets', unique_key='id') }}
select id, name, price from values
  (1, 'apple', 2), (2, 'pear', 3)
  {%- if var('more', false) %}, (3, 'plum', 4){% endif %}
  {%- if var('bad', false) %}, (4, 'free', 0){% endif %}
  as t(id, name, price)
"""

INCREMENTAL = """
{{ config(materialized='incremental', file_format='tablets', on_schema_change='fail') }}
select id, price from values (1, {{ var('price', 5) }}) as t(id, price)
"""

SCHEMA = """
version: 2
models:
  - name: prices
    config:
      contract: {{enforced: true}}
    constraints:
      - type: check
        name: positive_price
        expression: "price > 0"
{extra}
    columns:
      - name: id
        data_type: int
        constraints: [{{type: primary_key}}]
      - name: name
        data_type: string
        constraints: [{{type: not_null}}, {{type: unique}}]
      - name: price
        data_type: int
  - name: appended
    config:
      contract: {{enforced: true}}
    columns:
      - name: id
        data_type: int
      - name: price
        data_type: int
        constraints: [{{type: check, name: small, expression: "price < 10"}}]
"""
CHEAP = """      - type: check
        name: cheap
        expression: "price < 100\""""


class TestContractRuns:
    @pytest.fixture(scope="class")
    def models(self):
        return {"prices.sql": MODEL, "appended.sql": INCREMENTAL, "schema.yml": SCHEMA.format(extra="")}

    def rows(self, project, name="prices"):
        return sorted(tuple(r) for r in project.run_sql(f"select * from {project.test_schema}.{name}", fetch="all"))

    def props(self, project, name="prices"):
        return {r[0]: r[1] for r in project.run_sql(f"show tblproperties {project.test_schema}.{name}", fetch="all")}

    def test_the_contract_is_the_tables_and_holds_every_run(self, project):
        _, out = run_dbt_and_capture(["run"])
        assert "Model 'prices': its unique constraint on column name is not enforced" in out
        props = self.props(project)
        assert props["delta.constraints.positive_price"] == "price > 0" and props["key_columns"] == "id"
        adapter = project.adapter
        with adapter.connection_named("__test"):
            rel = adapter.Relation.create(schema=project.test_schema, identifier="prices", type="table")
            shown = adapter.tablet_stats(rel)["constraints"]  # the docs catalog's row
        assert shown == "id NOT NULL; name NOT NULL; positive_price: CHECK (price > 0)"
        version = len(project.run_sql(f"describe history {project.test_schema}.prices", fetch="all"))

        _, out = run_dbt_and_capture(
            ["run", "--select", "prices", "--vars", "{more: true, bad: true}"], expect_pass=False
        )
        assert "CHECK constraint positive_price (price > 0)" in out and "id=4" in out, out
        assert self.rows(project) == [(1, "apple", 2), (2, "pear", 3)]
        assert len(project.run_sql(f"describe history {project.test_schema}.prices", fetch="all")) == version

        # another writer is held too
        with pytest.raises(Exception, match="positive_price"):
            project.run_sql(f"insert into {project.test_schema}.prices values (9, 'x', -1)")

        # the incremental model: its append breaks its check
        run_dbt(["run", "--select", "appended", "--vars", "{price: 20}"], expect_pass=False)
        assert self.rows(project, "appended") == [(1, 5)]

    def test_a_changed_contract_is_made_the_tables(self, project):
        write_file(SCHEMA.format(extra=CHEAP), project.project_root, "models", "schema.yml")
        run_dbt(["run", "--select", "prices", "--vars", "{more: true}"])
        assert self.props(project)["delta.constraints.cheap"] == "price < 100"
        assert self.rows(project) == [(1, "apple", 2), (2, "pear", 3), (3, "plum", 4)]
        write_file(SCHEMA.format(extra=""), project.project_root, "models", "schema.yml")
        run_dbt(["run", "--select", "prices", "--vars", "{more: true}"])
        assert "delta.constraints.cheap" not in self.props(project)
