"""dbt-databricks' conventions and the README's examples in real dbt runs (issue #30, items 3 and
5): ``merge_with_schema_evolution`` on merge_tablets and incremental (the second run's new
column added by the MERGE's own commit), ``incremental_strategy: replace_where`` with
``incremental_predicates``, ``file_format`` defaulting to ``tablets`` for table, incremental and
snapshot models and seeds, and the README's ``stock`` models run as printed, twice."""

from __future__ import annotations

import os
import re

import pytest
from dbt.tests.util import run_dbt

P2 = "{% if var('phase', 1) == 1 %}"
README = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")


def phased(config: str, first: str, second: str) -> str:
    return f"{{{{ config({config}) }}}}\n{P2}\n{first}\n{{% else %}}\n{second}\n{{% endif %}}\n"


def readme_block(first_line: str) -> str:
    """The README's code block that starts with ``first_line``, as printed."""
    with open(README, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"```\w*\n(" + re.escape(first_line) + r"\n.*?)```", text, re.DOTALL)
    assert m, f"no README block starts with {first_line!r}"
    return m.group(1)


MODELS = {
    "evolving.sql": phased(
        "materialized='merge_tablets', unique_key='id', merge_with_schema_evolution=true",
        "select * from values (1, 'a'), (2, 'b') as v(id, v)",
        "select * from values (2, 'B', 20), (3, 'c', 30) as v(id, v, extra)",
    ),
    # no file_format: tablets is the default, and the merge strategy needs no delta
    "inc_evolving.sql": phased(
        "materialized='incremental', unique_key='id', merge_with_schema_evolution=true",
        "select * from values (1, 'a'), (2, 'b') as v(id, v)",
        "select * from values (2, 'B', 20), (3, 'c', 30) as v(id, v, extra)",
    ),
    "inc_plain.sql": phased(
        "materialized='incremental', unique_key='id'",
        "select * from values (1, 'a'), (2, 'b') as v(id, v)",
        "select * from values (2, 'B', 20), (3, 'c', 30) as v(id, v, extra)",
    ),
    "replaced.sql": phased(
        "materialized='incremental', incremental_strategy='replace_where', "
        "incremental_predicates=[\"day >= date'2024-01-02'\"]",
        "select * from values (1, date'2024-01-01'), (2, date'2024-01-02'), (3, date'2024-01-03') as v(id, day)",
        "select * from values (20, date'2024-01-02'), (40, date'2024-01-04') as v(id, day)",
    ),
    "plain_table.sql": "{{ config(materialized='table') }}\nselect 1 as id",
    "parquet_table.sql": "{{ config(materialized='table', file_format='parquet') }}\nselect 1 as id",
}


def rows(project, name: str) -> list[tuple]:
    got = project.run_sql(f"select * from {project.test_schema}.{name}", fetch="all")
    return sorted((tuple(r) for r in got), key=lambda r: tuple((x is None, str(x)) for x in r))


class TestDbtConventions:
    @pytest.fixture(scope="class")
    def models(self):
        return MODELS

    @pytest.fixture(scope="class")
    def seeds(self):
        return {"plain_seed.csv": "id,v\n1,a\n2,b\n", "parquet_seed.csv": "id\n1\n"}

    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"seeds": {"test": {"parquet_seed": {"+file_format": "parquet"}}}}

    @pytest.fixture(scope="class")
    def runs(self, project):
        first = run_dbt(["run"])
        created = {m: self.version(project, m) for m in ("evolving", "inc_evolving")}
        second = run_dbt(["run", "--vars", "phase: 2"])
        return {r.node.name: r for r in first.results}, {r.node.name: r for r in second.results}, created

    def version(self, project, name) -> int:
        with project.adapter.connection_named("__test"):
            return project.adapter.tablet_stats(self.relation(project, name))["version"]

    def relation(self, project, name):
        return project.adapter.Relation.create(schema=project.test_schema, identifier=name, type="table")

    def columns(self, project, name):
        with project.adapter.connection_named("__test"):
            return [c.name for c in project.adapter.get_columns_in_relation(self.relation(project, name))]

    def is_tablet_table(self, project, name) -> bool:
        with project.adapter.connection_named("__test"):
            return project.adapter.is_tablet_table(self.relation(project, name))

    @pytest.mark.parametrize("model", ["evolving", "inc_evolving"])
    def test_merge_with_schema_evolution_adds_the_new_column_in_the_merge(self, project, runs, model):
        assert runs[1][model].adapter_response["_message"].startswith("MERGE 2 (inserted 1, updated 1")
        assert self.columns(project, model) == ["id", "v", "extra"]
        assert rows(project, model) == [(1, "a", None), (2, "B", 20), (3, "c", 30)]
        # one commit: the MERGE that carried the new column and its rows
        assert self.version(project, model) == runs[2][model] + 1
        history = project.run_sql(f"describe history {project.test_schema}.{model}", fetch="all")
        assert history[0][2] == "MERGE"

    def test_without_it_the_new_column_is_not_written(self, project, runs):
        assert self.columns(project, "inc_plain") == ["id", "v"]
        assert rows(project, "inc_plain") == [(1, "a"), (2, "B"), (3, "c")]

    def test_replace_where_replaces_the_rows_its_predicates_hold_for(self, project, runs):
        got = [(i, str(d)) for i, d in rows(project, "replaced")]
        assert got == [(1, "2024-01-01"), (20, "2024-01-02"), (40, "2024-01-04")]

    def test_file_format_defaults_to_tablets(self, project, runs):
        for name in ("inc_evolving", "inc_plain", "replaced", "plain_table"):
            assert self.is_tablet_table(project, name), name
        assert not self.is_tablet_table(project, "parquet_table")
        assert rows(project, "parquet_table") == [(1,)]

    def test_seeds_are_tablet_tables_by_default_and_load_again(self, project, runs):
        run_dbt(["seed"])
        assert self.is_tablet_table(project, "plain_seed")
        assert not self.is_tablet_table(project, "parquet_seed")
        seeds = os.path.join(project.project_root, "seeds")
        with open(os.path.join(seeds, "plain_seed.csv"), "w") as f:
            f.write("id,v\n3,c\n")
        run_dbt(["seed"])  # loaded again in one commit (test_seed_load.py)
        assert rows(project, "plain_seed") == [(3, "c")]
        run_dbt(["seed", "--full-refresh"])
        assert self.is_tablet_table(project, "plain_seed") and rows(project, "plain_seed") == [(3, "c")]

    def test_evolution_with_another_strategy_is_a_config_error(self, project, runs):
        project_dir = project.project_root
        with open(os.path.join(project_dir, "models", "bad_evolution.sql"), "w") as f:
            f.write(
                "{{ config(materialized='incremental', incremental_strategy='append', "
                "merge_with_schema_evolution=true) }}\nselect 1 as id"
            )
        try:
            result = run_dbt(["run", "--select", "bad_evolution"], expect_pass=False)
            message = result.results[0].message
            assert "merge_with_schema_evolution" in message and "append" in message
            assert "on_schema_change: append_new_columns" in message
        finally:
            os.remove(os.path.join(project_dir, "models", "bad_evolution.sql"))


class TestReadmeExamples:
    """The README's dbt models, as printed, run twice: created, then merged."""

    @pytest.fixture(scope="class")
    def models(self):
        return {
            "stock.sql": readme_block("-- models/stock.sql"),
            "stock_py.py": readme_block("# models/stock_py.py"),
        }

    @pytest.fixture(scope="class")
    def seeds(self):
        return {
            "stock_initial.csv": "item,qty_on_hand\nA,10\nB,5\nC,3\n",
            "daily_sales.csv": "item,qty_sold\nA,4\nB,5\nD,2\n",
        }

    def test_twice(self, project):
        run_dbt(["seed"])
        first = {r.node.name: r for r in run_dbt(["run"]).results}
        assert first["stock"].adapter_response["code"] == "CREATE TABLE"
        second = {r.node.name: r for r in run_dbt(["run"]).results}
        # the README's words: "The run log says MERGE 3 (inserted 1, updated 1, deleted 1, unchanged 0)"
        assert second["stock"].adapter_response["_message"] == "MERGE 3 (inserted 1, updated 1, deleted 1, unchanged 0)"
        assert rows(project, "stock") == [("A", 6), ("C", 3), ("D", 2)]
        assert rows(project, "stock_py") == [("A", 4), ("B", 5), ("D", 2)]
