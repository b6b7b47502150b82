"""Spark 4's ANSI rules by default in the adapter's sessions (dbt-spark turns them off): a value
that does not fit its column fails the model's statement and nothing is written; a model (or
a profile, ``ansi: false``) may opt out, and then Spark's legacy casts apply (NULL, wrapped
integers), as documented in docs/DBT.md."""

from __future__ import annotations

import pytest
from dbt.tests.util import run_dbt

STRICT = """
{{ config(materialized='merge_tablets', unique_key='id') }}
{% if var('phase', 1) == 1 %} select 1 as id, 42 as v
{% else %} select 1 as id, 'not a number' as v {% endif %}
"""

LENIENT = """
{{ config(materialized='merge_tablets', unique_key='id', ansi=false) }}
{% if var('phase', 1) == 1 %} select 1 as id, 42 as v
{% else %} select 1 as id, 'not a number' as v {% endif %}
"""

TABLE = """
{{ config(materialized='table', file_format='tablets') }}
select cast('12x' as int) as v
"""


class TestAnsiByDefault:
    @pytest.fixture(scope="class")
    def models(self):
        return {"strict.sql": STRICT, "lenient.sql": LENIENT, "bad_cast.sql": TABLE}

    @pytest.fixture(scope="class")
    def runs(self, project):
        first = run_dbt(["run", "--select", "strict", "lenient"])
        second = run_dbt(["run", "--vars", "phase: 2"], expect_pass=False)
        return {r.node.name: r for r in first.results}, {r.node.name: r for r in second.results}

    def rows(self, project, table):
        return project.run_sql(f"select id, v from {project.test_schema}.{table}", fetch="all")

    def test_a_value_that_does_not_fit_fails_the_merge_and_writes_nothing(self, project, runs):
        result = runs[1]["strict"]
        assert result.status == "error"
        assert "CAST_INVALID_INPUT" in result.message and "'not a number'" in result.message
        assert [tuple(r) for r in self.rows(project, "strict")] == [(1, 42)]

    def test_a_model_opts_out_and_gets_sparks_legacy_cast(self, project, runs):
        assert runs[1]["lenient"].status == "success"
        assert [tuple(r) for r in self.rows(project, "lenient")] == [(1, None)]

    def test_a_table_model_fails_too_and_the_session_stays_strict(self, project, runs):
        assert runs[1]["bad_cast"].status == "error"
        assert "CAST_INVALID_INPUT" in runs[1]["bad_cast"].message
        assert project.run_sql("set spark.sql.ansi.enabled", fetch="one")[1] == "true"  # (after lenient's statement)
