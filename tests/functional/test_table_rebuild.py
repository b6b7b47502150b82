"""A SQL `table` model of tablet tables rebuilds its table in one commit (CREATE OR REPLACE TABLE
... AS): a run whose query fails leaves the table, its rows and its history as they were, and
the rows of every run stay readable by time travel."""

from __future__ import annotations

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture, write_file

GOOD = """
{{ config(materialized='table', file_format='tablets') }}
select * from values (1, 'a'), (2, 'b'), (3, 'c') as v(id, name)
"""
GOOD_AGAIN = """
{{ config(materialized='table', file_format='tablets') }}
select * from values (1, 'a'), (2, 'B') as v(id, name)
"""
BAD = """
{{ config(materialized='table', file_format='tablets') }}
select id, name, no_such_column from values (1, 'a') as v(id, name)
"""


class TestTableRebuild:
    @pytest.fixture(scope="class")
    def models(self):
        return {"people.sql": GOOD}

    def rows(self, project, suffix=""):
        return sorted(
            tuple(r) for r in project.run_sql(f"select * from {project.test_schema}.people{suffix}", fetch="all")
        )

    def history(self, project):
        return [(r[0], r[2]) for r in project.run_sql(f"describe history {project.test_schema}.people", fetch="all")]

    def test_a_failed_run_leaves_the_table_as_it_was(self, project):
        run_dbt(["run"])
        assert self.rows(project) == [(1, "a"), (2, "b"), (3, "c")]
        write_file(GOOD_AGAIN, project.project_root, "models", "people.sql")
        run_dbt(["run"])
        assert self.rows(project) == [(1, "a"), (2, "B")]
        before = self.history(project)
        assert [op for _, op in before][:1] == ["CREATE OR REPLACE TABLE AS SELECT"] and len(before) >= 2
        # the first run's rows: the rebuild was a new version of the same table
        assert self.rows(project, " version as of 0") + self.rows(project, " version as of 1") != []

        write_file(BAD, project.project_root, "models", "people.sql")
        _, out = run_dbt_and_capture(["run"], expect_pass=False)
        assert "no_such_column" in out
        assert "DROP TABLE" not in out
        assert self.rows(project) == [(1, "a"), (2, "B")]
        assert self.history(project) == before
