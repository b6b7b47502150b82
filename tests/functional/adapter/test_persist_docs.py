"""dbt-tests-adapter's persist_docs suites on tablet tables (models with file_format='tablets';
the suites' views and seeds are dbt-spark's), and persist_docs on a merge_tablets model over
its runs: the comments live in the table's log, DESCRIBE EXTENDED and catalog.json show them.

dbt-spark runs none of these suites: its catalog has no comments, and it persists column
comments only on Delta, Hudi and Iceberg tables."""

from __future__ import annotations

import json
import os

import pytest
from dbt.tests.adapter.persist_docs.test_persist_docs import (
    BasePersistDocs,
    BasePersistDocsAllColumnsMissing,
    BasePersistDocsColumnMissing,
    BasePersistDocsCommentOnQuotedColumn,
    BasePersistDocsQuotedColumnCaseSensitive,
    BasePersistDocsQuotedDescriptionNotAppliedOnMismatch,
)
from dbt.tests.util import run_dbt

slow = pytest.mark.skipif(
    not os.environ.get("TABLETS_SLOW"), reason="opt-in (TABLETS_SLOW=1): the quoted-name suites, ~6 s each"
)
TABLETS_DOCS = {"+file_format": "tablets", "+persist_docs": {"relation": True, "columns": True}}
COLUMNS_ONLY = {"+file_format": "tablets", "+persist_docs": {"columns": True}}


class TestPersistDocsTablets(BasePersistDocs):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"models": {"test": TABLETS_DOCS}}

    def test_table_model_is_a_tablet_table_with_its_comments(self, project):
        described = project.run_sql(f"describe extended {project.test_schema}.table_model", fetch="all")
        info = {r[0]: r[1] for r in described}
        assert info["Provider"] == "tablets"
        assert info["Comment"].startswith("Table model description")
        comments = {r[0]: r[2] for r in described[:2]}
        assert comments["id"].startswith("id Column description") and "--\n" in comments["id"]
        assert comments["name"].startswith("Some stuff here and then a call to")


class TestPersistDocsColumnMissingTablets(BasePersistDocsColumnMissing):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"models": {"test": COLUMNS_ONLY}}


class TestPersistDocsAllColumnsMissingTablets(BasePersistDocsAllColumnsMissing):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"models": {"test": COLUMNS_ONLY}}


@pytest.mark.slow
@slow
class TestPersistDocsQuotedColumnCaseSensitiveTablets(BasePersistDocsQuotedColumnCaseSensitive):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"models": {"test": COLUMNS_ONLY}}


@pytest.mark.slow
@slow
class TestPersistDocsQuotedDescriptionNotAppliedOnMismatchTablets(BasePersistDocsQuotedDescriptionNotAppliedOnMismatch):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"models": {"test": COLUMNS_ONLY}}


class TestPersistDocsCommentOnQuotedColumnTablets(BasePersistDocsCommentOnQuotedColumn):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"models": {"test": {"materialized": "table", **TABLETS_DOCS}}}


MERGED = """
{{ config(materialized='merge_tablets', unique_key='id') }}
select {{ var('phase', 1) }} as id, 'v{{ var("phase", 1) }}' as v
"""
MERGED_YML = """
version: 2
models:
  - name: merged
    description: "Merged {{ var('doc', 'daily') }}"
    columns:
      - name: id
        description: "The key"
      - name: v
        description: "The value's text"
      - name: not_there
        description: "no such column"
"""


class TestPersistDocsMergeTablets:
    """Every run persists the docs after its MERGE: one SET COMMENTS commit when they change,
    none when they do not."""

    @pytest.fixture(scope="class")
    def models(self):
        return {"merged.sql": MERGED, "schema.yml": MERGED_YML}

    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"models": {"+persist_docs": {"relation": True, "columns": True}}}

    def operations(self, project):
        rows = project.run_sql(f"describe history {project.test_schema}.merged", fetch="all")
        return [r[2] for r in rows]

    def test_comments_over_runs(self, project):
        run_dbt(["run"])
        assert self.operations(project) == ["SET COMMENTS", "CREATE TABLE AS SELECT", "CREATE TABLE"]
        run_dbt(["run", "--vars", "phase: 2"])  # a MERGE, the same docs: no docs commit
        assert self.operations(project)[:2] == ["MERGE", "SET COMMENTS"]
        run_dbt(["run", "--vars", "{phase: 3, doc: weekly}"])
        assert self.operations(project)[:2] == ["SET COMMENTS", "MERGE"]
        described = project.run_sql(f"describe extended {project.test_schema}.merged", fetch="all")
        assert [tuple(r) for r in described[:2]] == [("id", "int", "The key"), ("v", "string", "The value's text")]
        assert {r[0]: r[1] for r in described}["Comment"] == "Merged weekly"
        run_dbt(["docs", "generate"])
        with open(os.path.join(project.project_root, "target", "catalog.json")) as f:
            node = json.load(f)["nodes"]["model.test.merged"]
        assert node["metadata"]["comment"] == "Merged weekly"
        assert {c: node["columns"][c]["comment"] for c in ("id", "v")} == {"id": "The key", "v": "The value's text"}
        assert [node["columns"][c]["index"] for c in ("id", "v")] == [1, 2]
