"""dbt's other incremental strategies on tablet tables (file_format='tablets'): delete+insert,
microbatch, and insert_overwrite with replace_where. Each run of each is ONE MERGE on the engine,
so one commit: dbt-tests-adapter's classes, and ours for what they do not check (several new
rows per key, the window, the row outside it, the table's version)."""

from __future__ import annotations

import pytest
from dbt.tests.adapter.incremental import test_incremental_microbatch as microbatch
from dbt.tests.adapter.incremental import test_incremental_unique_id as unique_id
from dbt.tests.adapter.incremental.test_incremental_microbatch import BaseMicrobatch
from dbt.tests.adapter.incremental.test_incremental_predicates import BaseIncrementalPredicates
from dbt.tests.adapter.incremental.test_incremental_unique_id import BaseIncrementalUniqueKey
from dbt.tests.util import run_dbt, run_dbt_and_capture

from tests.functional.adapter.test_incremental import _typed_dates

TABLETS = {"+file_format": "tablets"}
DELETE_INSERT = {**TABLETS, "+incremental_strategy": "delete+insert"}


def rows(project, name: str) -> list[tuple]:
    got = project.run_sql(f"select * from {project.test_schema}.{name}", fetch="all")
    return sorted((tuple(r) for r in got), key=lambda r: tuple((x is None, str(x)) for x in r))


def stats(project, name: str) -> dict:
    adapter = project.adapter
    with adapter.connection_named("__test"):
        rel = adapter.Relation.create(schema=project.test_schema, identifier=name, type="table")
        return adapter.tablet_stats(rel)


# --- microbatch ---------------------------------------------------------------------------------


class TestMicrobatchTablets(BaseMicrobatch):
    """Every batch replaces its day of event_time in one commit (the input model is an ordinary
    table, as dbt-tests-adapter's insert statement needs)."""

    @pytest.fixture(scope="class")
    def microbatch_model_sql(self) -> str:
        return "{{ config(file_format='tablets') }}\n" + microbatch._microbatch_model_sql


# --- delete+insert ------------------------------------------------------------------------------


class TestIncrementalPredicatesDeleteInsertTablets(BaseIncrementalPredicates):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"models": {**DELETE_INSERT, "+incremental_predicates": ["id != 2"]}}


class TestPredicatesDeleteInsertTablets(BaseIncrementalPredicates):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"models": {**DELETE_INSERT, "+predicates": ["id != 2"]}}


class TestIncrementalUniqueKeyDeleteInsertTablets(BaseIncrementalUniqueKey):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"models": DELETE_INSERT}

    @pytest.fixture(scope="class")
    def seeds(self):
        return {
            "duplicate_insert.sql": _typed_dates(unique_id.seeds__duplicate_insert_sql),
            "seed.csv": unique_id.seeds__seed_csv,
            "add_new_rows.sql": _typed_dates(unique_id.seeds__add_new_rows_sql),
        }


DELETE_INSERT_MODEL = """
{{ config(materialized='incremental', incremental_strategy='delete+insert', unique_key=['k']) }}
{% if not is_incremental() %}
select 1 as k, 'a' as v union all select 2, 'b' union all select 2, 'b2'
union all select cast(null as int), 'null key' union all select 3, 'c'
{% else %}
select 2 as k, 'B1' as v union all select 2, 'B2' union all select 2, 'B3'
union all select 4, 'd' union all select cast(null as int), 'null again'
{% endif %}
"""

REPLACE_WHERE_MODEL = """
{{ config(materialized='incremental', incremental_strategy='insert_overwrite',
          replace_where="day >= date'2024-01-02'") }}
{% if not is_incremental() %}
select 1 as id, date'2024-01-01' as day, 'a' as v
union all select 2, date'2024-01-02', 'b'
union all select 3, date'2024-01-03', 'c'
{% elif var('outside', false) %}
select 9 as id, date'2023-12-31' as day, 'outside' as v
union all select 10, date'2024-01-05', 'inside'
{% else %}
select 20 as id, date'2024-01-02' as day, 'B' as v
union all select 30, date'2024-01-03', 'C'
union all select 31, date'2024-01-03', 'C2'
{% endif %}
"""

# dbt-databricks' spelling of the same statement
DATABRICKS_REPLACE_WHERE_MODEL = REPLACE_WHERE_MODEL.replace(
    "incremental_strategy='insert_overwrite',\n          replace_where=\"day >= date'2024-01-02'\"",
    "incremental_strategy='replace_where',\n          incremental_predicates=[\"day >= date'2024-01-02'\"]",
)
assert DATABRICKS_REPLACE_WHERE_MODEL != REPLACE_WHERE_MODEL

OVERWRITE_MODEL = """
{{ config(materialized='incremental', incremental_strategy='insert_overwrite') }}
{% if not is_incremental() %}
select 1 as id union all select 2
{% else %}
select 3 as id
{% endif %}
"""


class TestStrategiesOneCommit:
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"name": "test", "models": TABLETS}

    @pytest.fixture(scope="class")
    def models(self):
        return {
            "delete_insert.sql": DELETE_INSERT_MODEL,
            "replace_where.sql": REPLACE_WHERE_MODEL,
            "replace_where_databricks.sql": DATABRICKS_REPLACE_WHERE_MODEL,
            "overwrite.sql": OVERWRITE_MODEL,
        }

    @pytest.fixture(scope="class")
    def runs(self, project):
        run_dbt(["run"])
        versions = {m: stats(project, m)["version"] for m in ("delete_insert", "replace_where")}
        second = run_dbt(["run"])
        return versions, {r.node.name: r for r in second.results}

    def test_delete_insert_replaces_every_row_of_each_key_in_one_commit(self, project, runs):
        versions, second = runs
        # key 2's two rows go, its three new rows all go in; NULL keys match nothing (dbt-core's
        # `where (k) in (select k ...)`), so both NULL-key rows stay
        assert rows(project, "delete_insert") == [
            (1, "a"),
            (2, "B1"),
            (2, "B2"),
            (2, "B3"),
            (3, "c"),
            (4, "d"),
            (None, "null again"),
            (None, "null key"),
        ]
        message = second["delete_insert"].adapter_response["_message"]
        assert message == "MERGE 7 (inserted 5, updated 0, deleted 2, unchanged 0)"
        assert stats(project, "delete_insert")["version"] == versions["delete_insert"] + 1

    def test_replace_where_replaces_only_the_matching_rows(self, project, runs):
        versions, second = runs
        assert [(i, str(day), v) for i, day, v in rows(project, "replace_where")] == [
            (1, "2024-01-01", "a"),
            (20, "2024-01-02", "B"),
            (30, "2024-01-03", "C"),
            (31, "2024-01-03", "C2"),
        ]
        message = second["replace_where"].adapter_response["_message"]
        assert message == "MERGE 5 (inserted 3, updated 0, deleted 2, unchanged 0)"
        assert rows(project, "replace_where_databricks") == rows(project, "replace_where")
        assert second["replace_where_databricks"].adapter_response["_message"] == message
        assert stats(project, "replace_where")["version"] == versions["replace_where"] + 1

    def test_a_new_row_outside_replace_where_fails_and_changes_nothing(self, project, runs):
        before = rows(project, "replace_where")
        version = stats(project, "replace_where")["version"]
        result, out = run_dbt_and_capture(
            ["run", "--select", "replace_where", "--vars", "outside: true"], expect_pass=False
        )
        assert "a new row is outside replace_where" in out
        assert rows(project, "replace_where") == before
        assert stats(project, "replace_where")["version"] == version

    def test_insert_overwrite_without_a_predicate_replaces_the_table(self, project, runs):
        assert rows(project, "overwrite") == [(3,)]
