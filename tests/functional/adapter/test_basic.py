"""dbt-tests-adapter's basic suites: dbt-spark's session method keeps working (ordinary tables,
views, incremental, seeds), and the same on tablet tables (file_format='tablets')."""

import pytest
from dbt.tests.adapter.basic.test_base import BaseSimpleMaterializations
from dbt.tests.adapter.basic.test_incremental import BaseIncremental

TABLETS = {"+file_format": "tablets"}


class TestSimpleMaterializations(BaseSimpleMaterializations):
    pass


class TestSimpleMaterializationsTablets(BaseSimpleMaterializations):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"name": "base", "models": TABLETS}


class TestIncrementalTablets(BaseIncremental):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"name": "incremental", "models": TABLETS}
