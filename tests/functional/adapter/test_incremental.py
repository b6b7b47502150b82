"""dbt-tests-adapter's incremental suites on tablet tables: materialized='incremental',
incremental_strategy='merge', file_format='tablets' runs every merge on the engine."""

import re

import pytest
from dbt.tests.adapter.incremental import test_incremental_unique_id as unique_id
from dbt.tests.adapter.incremental.test_incremental_merge_exclude_columns import (
    BaseMergeExcludeColumns,
)
from dbt.tests.adapter.incremental.test_incremental_on_schema_change import (
    BaseIncrementalOnSchemaChange,
)
from dbt.tests.adapter.incremental.test_incremental_predicates import BaseIncrementalPredicates
from dbt.tests.adapter.incremental.test_incremental_unique_id import BaseIncrementalUniqueKey

MERGE_ON_TABLETS = {"+file_format": "tablets", "+incremental_strategy": "merge"}


def _typed_dates(sql: str) -> str:
    """Spark 4's ANSI store assignment refuses '2022-02-01' into a DATE column (with or without
    dbt-tablets: the seed is an ordinary table); a DATE literal goes in."""
    return re.sub(r"'(\d{4}-\d{2}-\d{2})'\)", r"DATE'\1')", sql)


class TestIncrementalUniqueKeyTablets(BaseIncrementalUniqueKey):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"models": MERGE_ON_TABLETS}

    @pytest.fixture(scope="class")
    def seeds(self):
        return {
            "duplicate_insert.sql": _typed_dates(unique_id.seeds__duplicate_insert_sql),
            "seed.csv": unique_id.seeds__seed_csv,
            "add_new_rows.sql": _typed_dates(unique_id.seeds__add_new_rows_sql),
        }


class TestMergeExcludeColumnsTablets(BaseMergeExcludeColumns):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"models": MERGE_ON_TABLETS}


class TestIncrementalPredicatesTablets(BaseIncrementalPredicates):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"models": {**MERGE_ON_TABLETS, "+incremental_predicates": ["DBT_INTERNAL_DEST.id != 2"]}}


class TestIncrementalOnSchemaChangeTablets(BaseIncrementalOnSchemaChange):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"models": MERGE_ON_TABLETS}
