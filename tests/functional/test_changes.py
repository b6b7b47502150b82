"""tablets_changes(ref(...)): an incremental model reads its upstream's changes since the version
its own last commit recorded, each change exactly once: after a run that failed before its
commit (a pre-hook) and after one that failed after it (a post-hook), ``dbt retry`` takes each
change once."""

from __future__ import annotations

import pytest
from dbt.tests.util import run_dbt, write_file

ORDERS = """
{{ config(materialized='merge_tablets', unique_key='id') }}
select * from values %s as v(id, status)
"""
CONSUMER = """
{{ config(
    materialized='incremental', incremental_strategy='append', file_format='tablets',
    pre_hook="select * from {{ this.schema }}.pre_gate",
    post_hook="select * from {{ this.schema }}.post_gate",
) }}
select id, status, _change_type from {{ tablets_changes(ref('orders')) }}
"""


class TestChangesExactlyOnce:
    @pytest.fixture(scope="class")
    def models(self):
        return {"orders.sql": ORDERS % "(1, 'new'), (2, 'new')", "order_changes.sql": CONSUMER}

    def rows(self, project):
        return sorted(
            tuple(r) for r in project.run_sql(f"select * from {project.test_schema}.order_changes", fetch="all")
        )

    def gate(self, project, name, up):
        project.run_sql(f"drop table if exists {project.test_schema}.{name}")
        if up:
            project.run_sql(f"create table {project.test_schema}.{name} (x int) using parquet")

    def test_each_change_once_across_failures_and_retries(self, project):
        self.gate(project, "pre_gate", True)
        self.gate(project, "post_gate", True)
        run_dbt(["run"])
        first = [(1, "new", "insert"), (2, "new", "insert")]
        assert self.rows(project) == first

        # a run with nothing new appends nothing (and records it: the next run starts after it)
        run_dbt(["run", "--select", "order_changes"])
        assert self.rows(project) == first

        # the upstream changes; the consumer commits, then its post-hook fails; the retry reads nothing again
        write_file(ORDERS % "(2, 'shipped'), (3, 'new')", project.project_root, "models", "orders.sql")
        run_dbt(["run", "--select", "orders"])
        self.gate(project, "post_gate", False)
        run_dbt(["run", "--select", "order_changes"], expect_pass=False)
        second = [(2, "new", "update_preimage"), (2, "shipped", "update_postimage"), (3, "new", "insert")]
        assert self.rows(project) == sorted(first + second)
        self.gate(project, "post_gate", True)
        run_dbt(["retry"])
        assert self.rows(project) == sorted(first + second)

        # the consumer fails before its commit (a pre-hook): the retry reads the change once
        write_file(ORDERS % "(3, 'shipped')", project.project_root, "models", "orders.sql")
        run_dbt(["run", "--select", "orders"])
        self.gate(project, "pre_gate", False)
        run_dbt(["run", "--select", "order_changes"], expect_pass=False)
        assert self.rows(project) == sorted(first + second)
        self.gate(project, "pre_gate", True)
        run_dbt(["retry"])
        third = [(3, "new", "update_preimage"), (3, "shipped", "update_postimage")]
        assert self.rows(project) == sorted(first + second + third)

        # --full-refresh reads the whole upstream again, as inserts
        run_dbt(["run", "--select", "order_changes", "--full-refresh"])
        assert self.rows(project) == [(1, "new", "insert"), (2, "shipped", "insert"), (3, "shipped", "insert")]
