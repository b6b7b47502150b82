"""dbt-tests-adapter's docs generate suites: the catalog of a project with seeds, views, an
ephemeral model, a table and a snapshot, with Spark's types and owner (dbt-spark's own
expectations: ``long``, ``string``, ``timestamp``, the Spark user), no statistics for Spark's
tables and views (Spark 4.3 records none), the tablet statistics of the seed (a tablet table,
this adapter's default for seeds too), no comments where none were persisted, column indexes
from 1; and the same references project with its table a tablet table as well."""

from __future__ import annotations

import pytest
from dbt.tests.adapter.basic import expected_catalog
from dbt.tests.adapter.basic.test_docs_generate import BaseDocsGenerate, BaseDocsGenReferences
from dbt.tests.util import AnyInteger


def spark_user():
    from pyspark.sql import SparkSession

    session = SparkSession.getActiveSession()
    assert session is not None, "the functional tests' Spark session is not running"
    return session.sparkContext.sparkUser()


def tablet_stats(rows):
    """The tablet statistics of a table of ``rows`` live rows written in one tablet."""

    def stat(key, label, value, description):
        return {"id": key, "label": label, "value": value, "description": description, "include": True}

    return {
        "rows": stat("rows", "Row Count", rows, "Live rows (deletion vectors applied)"),
        "bytes": stat("bytes", "Approximate Size", AnyInteger(), "Bytes of the live tablets' Parquet files"),
        "tablets": stat("tablets", "Tablets", 1, "Immutable Parquet tablets of the current version"),
        "deletion_vectors": stat("deletion_vectors", "Deletion Vectors", 0, "Tablets with a deletion vector"),
        "deleted_rows": stat(
            "deleted_rows", "Deleted Rows", 0, "Rows masked by deletion vectors (compaction reclaims them)"
        ),
        "version": stat("version", "Version", 1, "The table's latest committed version"),
        "has_stats": {
            "id": "has_stats",
            "label": "Has Stats?",
            "value": True,
            "description": "Indicates whether there are statistics for this table",
            "include": False,
        },
    }


SPARK_TYPES = {"id_type": "long", "text_type": "string", "time_type": "timestamp"}


class TestDocsGenerateTablets(BaseDocsGenerate):
    @pytest.fixture(scope="class")
    def expected_catalog(self, project):
        expected = expected_catalog.base_expected_catalog(
            project,
            role=spark_user(),
            view_type="view",
            table_type="table",
            model_stats=expected_catalog.no_stats(),
            **SPARK_TYPES,
        )
        expected["nodes"]["seed.test.seed"]["stats"] = tablet_stats(rows=1)
        expected["sources"]["source.test.my_source.my_table"]["stats"] = tablet_stats(rows=1)  # the seed
        return expected


class TestDocsGenReferencesTablets(BaseDocsGenReferences):
    """The references project with ``ephemeral_summary`` (a table model) a tablet table."""

    @pytest.fixture(scope="class")
    def project_config_update(self, unique_schema):
        return {  # BaseGenerateProject's, and the models' file_format
            "asset-paths": ["assets", "invalid-asset-paths"],
            "vars": {"test_schema": unique_schema, "alternate_schema": unique_schema + "_test"},
            "seeds": {"quote_columns": True},
            "models": {"+file_format": "tablets"},
        }

    @pytest.fixture(scope="class")
    def expected_catalog(self, project):
        expected = expected_catalog.expected_references_catalog(
            project,
            role=spark_user(),
            bigint_type="long",
            view_type="view",
            table_type="table",
            model_stats=expected_catalog.no_stats(),
            **SPARK_TYPES,
        )
        expected["nodes"]["model.test.ephemeral_summary"]["stats"] = tablet_stats(rows=1)
        expected["nodes"]["seed.test.seed"]["stats"] = tablet_stats(rows=1)
        expected["sources"]["source.test.my_source.my_table"]["stats"] = tablet_stats(rows=1)  # the seed
        return expected
