"""The docs catalog of a schema while the session holds temporary views (dbt's ``__dbt_tmp``
views and a Python model's linger in the one Spark session a process shares): they belong to
no schema, and dbt's catalog must leave them out instead of failing on them."""

from __future__ import annotations

import pytest
from dbt.tests.util import run_dbt
from pyspark.sql import SparkSession

MODEL = "{{ config(materialized='table') }} select 1 as id"


class TestCatalogWithTempViews:
    @pytest.fixture(scope="class")
    def models(self):
        return {"plain.sql": MODEL}

    def test_docs_generate_leaves_the_sessions_temp_views_out(self, project):
        run_dbt(["run"])
        spark = SparkSession.getActiveSession()
        assert spark is not None
        spark.sql("CREATE OR REPLACE TEMPORARY VIEW stray__dbt_tmp AS SELECT 1 AS x")
        try:
            catalog = run_dbt(["docs", "generate", "--no-compile"])
        finally:
            spark.sql("DROP VIEW IF EXISTS stray__dbt_tmp")
        names = {n.split(".")[-1] for n in catalog.nodes}
        assert "plain" in names and not any("stray" in n for n in catalog.nodes)
