"""A seed of tablet tables loads in one commit (CREATE OR REPLACE TABLE ... AS SELECT of every
row): a seed run again is a new version of the same table (the last load's rows stay readable by
time travel), a load that fails leaves the table, its rows and its history as they were, and a
seed of more rows than dbt's batch size is still one commit. dbt-spark's seeds drop the table
first and insert the rows a batch at a time: a failure then left no table, or part of the rows.
The values travel as data (a view of their text): numbers keep every digit."""

from __future__ import annotations

import os

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

# a batch of two rows: dbt-spark would load the six rows below in three INSERTs
BATCH_OF_TWO = "{% macro tablets__get_batch_size() %}{{ return(2) }}{% endmacro %}"
FIRST = "id,name,amount\n1,a,1.50\n2,b,2.25\n3,c,\n4,d,4.00\n5,'quoted',5.5\n1234567890123456789,big,1e3\n"
SECOND = "id,name,amount\n1,a,1.75\n6,f,6.00\n"


class TestSeedLoad:
    @pytest.fixture(scope="class")
    def seeds(self):
        return {"people.csv": FIRST, "empty.csv": "id,name\n"}

    @pytest.fixture(scope="class")
    def macros(self):
        return {"batch.sql": BATCH_OF_TWO}

    def write(self, project, text: str) -> None:
        with open(os.path.join(project.project_root, "seeds", "people.csv"), "w") as f:
            f.write(text)

    def rows(self, project, suffix: str = "") -> list[tuple]:
        got = project.run_sql(f"select id, name, amount from {project.test_schema}.people{suffix}", fetch="all")
        return sorted((r[0], r[1], None if r[2] is None else float(r[2])) for r in got)

    def history(self, project) -> list[tuple]:
        got = project.run_sql(f"describe history {project.test_schema}.people", fetch="all")
        return [(r[0], r[2]) for r in got]

    def test_a_seed_is_one_commit_and_a_failed_load_keeps_the_table(self, project):
        results = run_dbt(["seed"])
        assert {r.node.name: r.adapter_response.get("rows_affected") for r in results.results}["people"] == 6
        want = [(1, "a", 1.5), (2, "b", 2.25), (3, "c", None), (4, "d", 4.0), (5, "'quoted'", 5.5)]
        # every digit of a 19-digit id (dbt-spark's literal was Python's float of it)
        want.append((1234567890123456789, "big", 1000.0))
        assert self.rows(project) == want
        first = self.history(project)
        assert [op for _, op in first][:1] == ["CREATE TABLE AS SELECT"]  # (after the engine's CREATE)
        assert "INSERT" not in [op for _, op in first]
        got = project.run_sql(f"select * from {project.test_schema}.empty", fetch="all")
        assert got == []

        self.write(project, SECOND)
        run_dbt(["seed"])
        assert self.rows(project) == [(1, "a", 1.75), (6, "f", 6.0)]
        history = self.history(project)
        assert history == [(history[0][0], "CREATE OR REPLACE TABLE AS SELECT"), *first]
        assert self.rows(project, f" version as of {first[0][0]}") == want  # the last load's rows

        # a column type Spark does not know: the load fails, the table stays as it was
        project_yml = os.path.join(project.project_root, "dbt_project.yml")
        with open(project_yml, "a") as f:
            f.write("\nseeds:\n  test:\n    people:\n      +column_types: {amount: no_such_type}\n")
        self.write(project, FIRST)
        _, out = run_dbt_and_capture(["seed"], expect_pass=False)
        assert "no_such_type" in out.lower()  # Spark names the type in capitals
        assert "drop table" not in out.lower()
        assert self.rows(project) == [(1, "a", 1.75), (6, "f", 6.0)]
        assert self.history(project) == history
