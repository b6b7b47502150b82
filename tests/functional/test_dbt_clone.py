"""dbt clone on tablet tables (dbt-tests-adapter's clone suite): tablet tables become SHALLOW
CLONEs, anything else a view of the deferred relation."""

from __future__ import annotations

import pytest
from dbt.tests.adapter.dbt_clone import fixtures
from dbt.tests.adapter.dbt_clone.test_dbt_clone import (
    BaseCloneNotPossible,
    BaseClonePossible,
    BaseCloneSameSourceAndTarget,
)
from dbt.tests.util import run_dbt, run_dbt_and_capture

TABLETS = {"+file_format": "tablets"}


class TestTabletsClonePossible(BaseClonePossible):
    # seeds, table models and snapshots as tablet tables: the three tables are shallow clones
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"seeds": {"test": {"quote_columns": False, **TABLETS}}, "models": TABLETS, "snapshots": TABLETS}

    def test_clones_read_the_rows_and_share_no_writes(self, project, unique_schema, other_schema):
        project.create_test_schema(other_schema)
        self.run_and_save_state(project.project_root, with_snapshot=True)
        run_dbt(["clone", "--state", "state", "--target", "otherschema"])
        src, dst = f"{unique_schema}.table_model", f"{other_schema}.table_model"
        history = project.run_sql(f"describe history {dst}", fetch="all")
        assert {r[2] for r in history} == {"CLONE"}  # (the class's other test cloned it before)
        assert sorted(project.run_sql(f"select * from {dst}", fetch="all")) == sorted(
            project.run_sql(f"select * from {src}", fetch="all")
        )
        project.run_sql(f"delete from {dst} where id = 1")
        assert len(project.run_sql(f"select * from {src}", fetch="all")) == 2
        assert len(project.run_sql(f"select * from {dst}", fetch="all")) == 1


class TestTabletsCloneNotPossible(BaseCloneNotPossible):
    pass


class TestTabletsCloneOfParquetTablesMakesViews(BaseClonePossible):
    # models and seeds in dbt-spark's parquet: no such table can be cloned, all views
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"models": {"+file_format": "parquet"}, "seeds": {"+file_format": "parquet"}}

    def test_can_clone_true(self, project, unique_schema, other_schema):
        project.create_test_schema(other_schema)
        self.run_and_save_state(project.project_root, with_snapshot=True)
        results = run_dbt(["clone", "--state", "state", "--target", "otherschema"])
        assert len(results) == 4
        relations = project.adapter.list_relations(database=project.database, schema=other_schema)
        tablets = {r.identifier for r in relations if r.type == "table"}
        assert tablets == {"my_cool_snapshot"}  # snapshots are tablet tables by default
        assert {r.identifier for r in relations if r.type == "view"} == {"seed", "table_model", "view_model"}

    def test_clone_no_state(self):
        pass  # in TestTabletsClonePossible


class TestTabletsCloneSameSourceAndTarget(BaseCloneSameSourceAndTarget):
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "source_based_model.sql": fixtures.source_based_model_sql,
            "source_schema.yml": fixtures.source_schema_yml,
        }

    @pytest.fixture(scope="class")
    def snapshots(self):
        return {"snapshot_model.sql": fixtures.source_based_model_snapshot_sql}

    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"models": TABLETS}

    def test_clone_same_source_and_target(self, project, unique_schema):
        # the base test names tables database.schema.table: Spark has no database level
        project.run_sql(f"DROP TABLE IF EXISTS {unique_schema}.source_table")
        project.run_sql(
            f"CREATE TABLE {unique_schema}.source_table USING tablets AS SELECT 1 AS id, 'test_data' AS name"
        )
        run_dbt(["seed"])
        run_dbt(["run"])
        self.copy_state(project.project_root)
        _, output = run_dbt_and_capture(["clone", "--state", "state", "--full-refresh", "--log-level", "debug"])
        assert "skipping clone for relation" in output
