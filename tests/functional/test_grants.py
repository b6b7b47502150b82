"""A model's ``grants`` on Spark, which has no GRANT statement: refused before anything is
written, by name, with the fix; a model without grants beside it runs."""

from __future__ import annotations

import pytest
from dbt.tests.util import run_dbt

GRANTED = """
{{ config(materialized='merge_tablets', unique_key='id', grants={'select': ['reporter']}) }}
select 1 as id
"""

TABLE = """
{{ config(materialized='table', grants={'select': ['reporter']}) }}
select 1 as id
"""

PLAIN = "select 1 as id"


class TestGrantsAreRefusedBeforeAnyWrite:
    @pytest.fixture(scope="class")
    def models(self):
        return {"granted.sql": GRANTED, "granted_table.sql": TABLE, "plain.sql": PLAIN}

    @pytest.fixture(scope="class")
    def seeds(self):
        return {"granted_seed.csv": "id\n1\n"}

    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"seeds": {"+grants": {"select": ["reporter"]}}}

    @pytest.fixture(scope="class")
    def results(self, project):
        seeded = run_dbt(["seed"], expect_pass=False)
        ran = run_dbt(["run"], expect_pass=False)
        return {r.node.name: r for r in [*seeded.results, *ran.results]}

    def test_refused_by_name_and_nothing_written(self, project, results):
        tables = [r[1] for r in project.run_sql(f"show tables in {project.test_schema}", fetch="all")]
        for name in ("granted", "granted_table", "granted_seed"):
            assert results[name].status == "error", name
            msg = results[name].message
            assert f"model '{name}': grants = {{'select': ['reporter']}}: Spark has no GRANT statement" in msg
            assert "nothing was written" in msg and "fix: remove `grants`" in msg
            assert name not in tables
        assert results["plain"].status == "success"
