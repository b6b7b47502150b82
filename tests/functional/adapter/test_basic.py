"""dbt-tests-adapter's basic suites: on tablet tables, this adapter's default file_format (no
file_format set), and dbt-spark's session method keeps working for ordinary tables
(file_format='parquet': tables, views, incremental, seeds)."""

import pytest
from dbt.tests.adapter.basic.test_base import BaseSimpleMaterializations
from dbt.tests.adapter.basic.test_incremental import BaseIncremental


class TestSimpleMaterializationsParquet(BaseSimpleMaterializations):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"name": "base", "models": {"+file_format": "parquet"}}


class TestSimpleMaterializationsTablets(BaseSimpleMaterializations):
    pass


class TestIncrementalTablets(BaseIncremental):
    pass
