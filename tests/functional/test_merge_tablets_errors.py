"""What a user sees when something is wrong: one error naming the model, every bad key, the bad
value, the allowed values and the fix, raised before any SQL runs; and engine errors as dbt
errors with the engine's Help line."""

from __future__ import annotations

import pytest
from dbt.tests.util import run_dbt

BAD_CONFIG = """
{{ config(
    materialized='merge_tablets',
    unique_key=[],
    when_matched=[{'action': 'upsert'}],
    when_not_matched=[{'action': 'insert', 'values': 7}],
    on_schema_change='evolve',
    merge_update_columns=['a'],
    merge_exclude_columns=['b'],
) }}
select 1 as id
"""

KEY_GONE = """
{{ config(materialized='merge_tablets', unique_key='id') }}
{% if var('phase', 1) == 1 %} select 1 as id, 'a' as v {% else %} select 1 as key, 'b' as v {% endif %}
"""

DUPLICATES = """
{{ config(materialized='merge_tablets', unique_key='id') }}
{% if var('phase', 1) == 1 %} select 1 as id, 'a' as v
{% else %} select * from values (1, 'x'), (1, 'y') as v(id, v) {% endif %}
"""

DELETE_INSERT = """
{{ config(materialized='incremental', file_format='tablets', incremental_strategy='upsert', unique_key='id') }}
select 1 as id
"""


class TestMergeTabletsErrors:
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "bad_config.sql": BAD_CONFIG,
            "key_gone.sql": KEY_GONE,
            "duplicates.sql": DUPLICATES,
            "delete_insert.sql": DELETE_INSERT,
        }

    @pytest.fixture(scope="class")
    def runs(self, project):
        first = run_dbt(["run"], expect_pass=False)
        second = run_dbt(["run", "--vars", "phase: 2", "--select", "key_gone", "duplicates"], expect_pass=False)
        return {r.node.name: r for r in first.results}, {r.node.name: r for r in second.results}

    def test_every_config_problem_at_once_before_any_sql(self, project, runs):
        result = runs[0]["bad_config"]
        assert result.status == "error"
        msg = result.message
        assert "model 'bad_config' has 5 problems" in msg
        for fragment in (
            "unique_key = []: is empty",
            "when_matched[0].action = 'upsert': not an action of WHEN MATCHED",
            "allowed: update, delete, do_nothing\n",  # (the documented ones only)
            "when_not_matched[0].values = 7",
            "on_schema_change = 'evolve'",
            "merge_update_columns and merge_exclude_columns are mutually exclusive",
        ):
            assert fragment in msg
        assert msg.count("fix: ") == 5
        tables = [r[1] for r in project.run_sql(f"show tables in {project.test_schema}", fetch="all")]
        assert "bad_config" not in tables

    def test_a_key_the_model_no_longer_selects(self, project, runs):
        assert runs[0]["key_gone"].status == "success"
        msg = runs[1]["key_gone"].message
        assert "unique_key = ['id']: id is not a column of the model's SQL" in msg

    def test_engine_errors_keep_their_help(self, project, runs):
        msg = runs[1]["duplicates"].message
        assert "more than once" in msg and "Help:" in msg
        assert [tuple(r) for r in project.run_sql(f"select * from {project.test_schema}.duplicates", fetch="all")] == [
            (1, "a")
        ]

    def test_incremental_strategy_on_tablet_tables(self, project, runs):
        msg = runs[0]["delete_insert"].message
        assert (
            "incremental_strategy = 'upsert'" in msg
            and "allowed: merge, append, insert_overwrite, replace_where, delete+insert, microbatch" in msg
        )


BAD_SQL = """
{{ config(
    materialized='merge_tablets',
    unique_key='id',
    when_matched=[{'condition': 't.v >>> s.v', 'action': 'update'}],
) }}
select 1 as id, 2 as v
"""


class TestClauseSqlErrors:
    @pytest.fixture(scope="class")
    def models(self):
        return {"bad_sql.sql": BAD_SQL}

    def test_bad_sql_in_a_clause_names_the_key_and_the_place_before_anything_runs(self, project):
        result = run_dbt(["run"], expect_pass=False).results[0]
        msg = result.message
        assert "model 'bad_sql'" in msg
        assert "when_matched[0].condition = 't.v >>> s.v': not valid SQL: the expression is incomplete" in msg
        assert "after 't.v >>>'" in msg and "/*" not in msg
        tables = [r[1] for r in project.run_sql(f"show tables in {project.test_schema}", fetch="all")]
        assert "bad_sql" not in tables


MISSING_COLUMN = """
{{ config(materialized=var('materialized'), unique_key='id') }}
select id, no_such_column from (select 1 as id, 2 as v)
"""


class TestSparkErrorsAreShort:
    @pytest.fixture(scope="class")
    def models(self):
        return {"missing_column.sql": MISSING_COLUMN}

    @pytest.mark.parametrize("materialized", ["merge_tablets", "table", "view"])
    def test_sparks_error_in_a_line_without_its_plan(self, project, materialized):
        result = run_dbt(["run", "--vars", f"materialized: {materialized}"], expect_pass=False).results[0]
        msg = result.message
        assert "UNRESOLVED_COLUMN" in msg and "no_such_column" in msg, msg
        assert len([ln for ln in msg.strip().splitlines() if not ln.strip().startswith("Help:")]) <= 2, msg
        assert "+- " not in msg and "Project [" not in msg and "JVM stacktrace" not in msg, msg
        assert "__tablets_" not in msg, msg


TAKEN_OVER = """
{{ config(materialized=var('materialized', 'table'), unique_key='id') }}
{% if var('dupes', false) %} select * from values (1, 'a'), (1, 'b') as v(id, v)
{% else %} select * from values (1, 'a'), (2, '{{ var("v", "b") }}') as v(id, v) {% endif %}
"""


class TestMergeTabletsTakesOverATable:
    @pytest.fixture(scope="class")
    def models(self):
        return {"taken.sql": TAKEN_OVER, "taken_dupes.sql": TAKEN_OVER.replace("var('dupes', false)", "true")}

    def _props(self, project, name):
        rows = project.run_sql(f"show tblproperties {project.test_schema}.{name}", fetch="all")
        return {r[0]: r[1] for r in rows}

    def test_the_unique_key_becomes_the_tables_key_once_its_rows_are_checked(self, project):
        run_dbt(["run"])  # plain `table` models: no key
        assert "key_columns" not in self._props(project, "taken")
        results = run_dbt(["run", "--vars", "{materialized: merge_tablets, v: c}"], expect_pass=False).results
        by = {r.node.name: r for r in results}
        assert by["taken"].status == "success" and "updated 1" in by["taken"].adapter_response["_message"]
        assert self._props(project, "taken")["key_columns"] == "id"
        bad = by["taken_dupes"]
        assert bad.status == "error" and "the unique_key of taken_dupes" in bad.message, bad.message
        assert "repeat a key of (id): (1) x 2; nothing was changed" in bad.message, bad.message
        assert "key_columns" not in self._props(project, "taken_dupes")
