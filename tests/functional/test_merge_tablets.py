"""merge_tablets end to end: every config option, on real dbt runs.

One dbt project holds a model per option. The first ``dbt run`` creates every tablet table; the
second (``--vars 'phase: 2'``) merges the changed inputs into them; each test then checks one
table's rows (and the run's message), not SQL text."""

from __future__ import annotations

import glob
import json
import os
import re

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

P2 = "{% if var('phase', 1) == 1 %}"


def phased(config: str, first: str, second: str) -> str:
    return f"{{{{ config({config}) }}}}\n{P2}\n{first}\n{{% else %}}\n{second}\n{{% endif %}}\n"


def values(cols: str, rows: str) -> str:
    return f"select * from values {rows} as v({cols})"


MODELS = {
    "upsert.sql": phased(
        "unique_key='id'",
        values("id, name", "(1, 'a'), (2, 'b'), (3, 'c')"),
        values("id, name", "(2, 'B'), (3, 'c'), (4, 'd')"),
    ),
    "null_safe.sql": phased(
        "unique_key=['k1', 'k2'], null_safe_keys=true",
        values("k1, k2, v", "(1, cast(null as string), 'x'), (2, 'b', 'y')"),
        values("k1, k2, v", "(1, cast(null as string), 'X'), (3, cast(null as string), 'z')"),
    ),
    "stock.sql": """
{{ config(
    unique_key='item',
    when_matched=[
        {'condition': 't.qty_on_hand - s.qty_sold = 0', 'action': 'delete'},
        {'action': 'update', 'set': {'qty_on_hand': 't.qty_on_hand - s.qty_sold'}},
    ],
    when_not_matched=[{'action': 'insert', 'values': {'item': 's.item', 'qty_on_hand': 's.qty_sold'}}],
) }}
{% if is_incremental() %}
select * from values ('A', 4), ('B', 5), ('D', 2) as v(item, qty_sold)
{% else %}
select * from values ('A', 10), ('B', 5), ('C', 3) as v(item, qty_on_hand)
{% endif %}
""",
    "firebolt.sql": phased(
        """unique_key='a',
    when_not_matched=[
        {'condition': 's.b % 2 = 0', 'action': 'do_nothing'},
        {'condition': 's.b < 11', 'action': 'insert', 'values': ['s.a', '100 * s.b']},
        {'action': 'insert', 'values': ['s.a', '1 + s.b']},
    ]""",
        values("a, b", "(1, 1), (2, 2)"),
        values("a, b", "(3, 4), (5, 5), (7, 13), (1, 9)"),
    ),
    "full_sync.sql": phased(
        """unique_key='id',
    when_matched=[{'action': 'update', 'set': {'name': 's.name'}}],
    when_not_matched=[{'action': 'insert'}],
    when_not_matched_by_source=[{'action': 'delete'}]""",
        values("id, name", "(1, 'a'), (2, 'b'), (3, 'c')"),
        values("id, name", "(2, 'B'), (4, 'd')"),
    ),
    "soft_delete.sql": phased(
        """unique_key='id',
    when_matched=[{'action': 'update', 'set': {'name': 's.name'}}],
    when_not_matched=[{'action': 'insert'}],
    when_not_matched_by_source=[{'condition': 'not t.is_deleted', 'action': 'update', 'set': {'is_deleted': true}}]""",
        values("id, name, is_deleted", "(1, 'a', false), (2, 'b', false)"),
        values("id, name, is_deleted", "(1, 'A', false)"),
    ),
    "windowed.sql": phased(
        """unique_key='id', incremental_predicates=['t.day >= 10'],
    when_matched=[{'action': 'update'}],
    when_not_matched=[{'action': 'insert'}],
    when_not_matched_by_source=[{'action': 'delete'}]""",
        values("id, day, v", "(1, 5, 'old'), (2, 10, 'x'), (3, 11, 'y')"),
        values("id, day, v", "(3, 11, 'Y'), (4, 12, 'z')"),
    ),
    "conflict_nothing.sql": phased(
        "unique_key='id', on_conflict='do_nothing'",
        values("id, value", "(1, 'a')"),
        values("id, value", "(1, 'A'), (2, 'b')"),
    ),
    "conflict_update.sql": phased(
        "unique_key='id', on_conflict='do_update'",
        values("id, value", "(1, 'a')"),
        values("id, value", "(1, 'A'), (2, 'b')"),
    ),
    "conflict_update_set.sql": phased(
        "unique_key='id', on_conflict={'action': 'do_update', 'set': {'value': \"concat(excluded.value, '!')\"}}",
        values("id, value", "(1, 'a')"),
        values("id, value", "(1, 'A'), (2, 'b')"),
    ),
    "update_columns.sql": phased(
        "unique_key='id', merge_update_columns=['b']",
        values("id, a, b", "(1, 'a1', 'b1')"),
        values("id, a, b", "(1, 'a2', 'b2'), (2, 'a3', 'b3')"),
    ),
    "exclude_columns.sql": phased(
        "unique_key='id', merge_exclude_columns=['a']",
        values("id, a, b", "(1, 'a1', 'b1')"),
        values("id, a, b", "(1, 'a2', 'b2'), (2, 'a3', 'b3')"),
    ),
    "aliases.sql": phased(
        """unique_key='id', source_alias='src', target_alias='tgt',
    when_matched=[{'condition': 'src.v > tgt.v', 'action': 'update'}],
    when_not_matched=[{'action': 'insert'}]""",
        values("id, v", "(1, 5), (2, 5)"),
        values("id, v", "(1, 7), (2, 3)"),
    ),
    "unchanged.sql": phased(
        "unique_key='id'",
        values("id, v", "(1, 'a'), (2, 'b'), (3, 'c')"),
        values("id, v", "(1, 'a'), (2, 'b'), (3, 'C')"),
    ),
    "rewrite.sql": phased(
        "unique_key='id', skip_unchanged=false",
        values("id, v", "(1, 'a'), (2, 'b'), (3, 'c')"),
        values("id, v", "(1, 'a'), (2, 'b'), (3, 'C')"),
    ),
    "evolve_append.sql": phased(
        "unique_key='id', on_schema_change='append_new_columns'",
        values("id, v", "(1, 'a')"),
        values("id, v, loud", "(2, 'b', 'B')"),
    ),
    "evolve_sync.sql": phased(
        "unique_key='id', on_schema_change='sync_all_columns'",
        values("id, a, b", "(1, 'a', 'b')"),
        values("id, a, c", "(2, 'a2', 'c2')"),
    ),
    # a column dropped (phase 2) and added back (phase 3) reads NULL in older rows
    "evolve_readd.sql": """{{ config(unique_key='id', on_schema_change='sync_all_columns') }}
{% if var('phase', 1) == 1 %}
select * from values (1, 'a', 'b') as v(id, a, b)
{% elif var('phase') == 2 %}
select * from values (2, 'a2') as v(id, a)
{% else %}
select * from values (3, 'a3', 'b3') as v(id, a, b)
{% endif %}
""",
    "evolve_ignore.sql": phased(
        "unique_key='id', on_schema_change='ignore'",
        values("id, v", "(1, 'a')"),
        values("id, v, extra", "(2, 'b', 'x')"),
    ),
    "sized.sql": phased(
        "unique_key='id', target_tablet_rows=2, cluster_by='id'",
        "select cast(id as int) as id from range(5)",
        "select cast(id as int) as id from range(5)",
    ),
    "noop.sql": phased(
        "unique_key='id', when_matched=['do_nothing'], when_not_matched=['do_nothing']",
        values("id", "(1)"),
        values("id", "(2)"),
    ),
}

SCHEMA_YML = """
version: 2
models:
  - name: upsert
    columns:
      - name: id
        data_tests: [unique, not_null]
"""


def rows(project, name: str) -> list[tuple]:
    got = project.run_sql(f"select * from {project.test_schema}.{name}", fetch="all")
    return sorted((tuple(r) for r in got), key=lambda r: tuple((x is None, str(x)) for x in r))


class TestMergeTabletsOptions:
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"name": "test", "models": {"+materialized": "merge_tablets"}}

    @pytest.fixture(scope="class")
    def models(self):
        return {**MODELS, "schema.yml": SCHEMA_YML}

    @pytest.fixture(scope="class")
    def seeds(self):
        return {"people.csv": "id,name\n1,O'Brien\n2,\n3,back\\slash\n"}

    @pytest.fixture(scope="class")
    def runs(self, project):
        run_dbt(["seed"])
        first = run_dbt(["run"])
        second = run_dbt(["run", "--vars", "phase: 2"])
        return {r.node.name: r for r in first.results}, {r.node.name: r for r in second.results}

    def message(self, runs, name: str) -> str:
        return runs[1][name].adapter_response["_message"]

    def test_first_run_creates_and_second_run_merges(self, project, runs):
        first, second = runs
        assert set(first) == set(second) == {n[:-4] for n in MODELS}
        assert all(r.adapter_response["code"] == "CREATE TABLE" for r in first.values())
        assert self.message(runs, "upsert") == "MERGE 2 (inserted 1, updated 1, deleted 0, unchanged 1)"
        assert runs[1]["upsert"].adapter_response["rows_affected"] == 2
        assert rows(project, "upsert") == [(1, "a"), (2, "B"), (3, "c"), (4, "d")]

    def test_a_run_with_the_same_input_changes_nothing(self, project, runs):
        """dbt run again with no new data: the table's last MERGE with the same rows, no version."""
        before = {m: self.stats(project, m)["version"] for m in ("upsert", "full_sync")}
        # the tablets are away: a run that read one would fail
        away = [
            p
            for m in before
            for p in glob.glob(os.path.join(self.stats(project, m)["location"], "tablets", "*.parquet"))
        ]
        assert away
        for p in away:
            os.rename(p, p + ".away")
        try:
            again = run_dbt(["run", "--select", "upsert", "full_sync", "--vars", "phase: 2"])
        finally:
            for p in away:
                os.rename(p + ".away", p)
        got = {r.node.name: r.adapter_response["_message"] for r in again.results}
        assert got == {
            "upsert": "MERGE 0 (inserted 0, updated 0, deleted 0, unchanged 3)",
            "full_sync": "MERGE 0 (inserted 0, updated 0, deleted 0, unchanged 2)",
        }
        assert {m: self.stats(project, m)["version"] for m in before} == before
        assert rows(project, "upsert") == [(1, "a"), (2, "B"), (3, "c"), (4, "d")]

    def test_the_merge_is_in_target_run(self, project, runs):
        path = os.path.join(project.project_root, "target", "run", "test", "models", "upsert.sql")
        with open(path) as f:
            sql = f.read()
        assert "MERGE INTO" in sql and "WHEN NOT MATCHED THEN INSERT" in sql

    def test_seed_nulls_and_quotes(self, project, runs):
        # dbt-spark's session method loads empty seed values as the string 'None' (dbt-spark#901)
        assert rows(project, "people") == [(1, "O'Brien"), (2, None), (3, "back\\slash")]

    def test_null_safe_keys(self, project, runs):
        assert rows(project, "null_safe") == [(1, None, "X"), (2, "b", "y"), (3, None, "z")]

    def test_clauses_in_order(self, project, runs):
        assert rows(project, "stock") == [("A", 6), ("C", 3), ("D", 2)]
        assert self.message(runs, "stock") == "MERGE 3 (inserted 1, updated 1, deleted 1, unchanged 0)"

    def test_do_nothing_takes_rows_out_of_later_clauses_and_values_lists(self, project, runs):
        assert rows(project, "firebolt") == [(1, 1), (2, 2), (5, 500), (7, 14)]

    def test_when_not_matched_by_source(self, project, runs):
        assert rows(project, "full_sync") == [(2, "B"), (4, "d")]
        assert rows(project, "soft_delete") == [(1, "A", False), (2, "b", True)]

    def test_incremental_predicates_scope_by_source(self, project, runs):
        # day 5 is outside the window: never deleted; day 10 is inside and gone from the source
        assert rows(project, "windowed") == [(1, 5, "old"), (3, 11, "Y"), (4, 12, "z")]

    def test_on_conflict(self, project, runs):
        assert rows(project, "conflict_nothing") == [(1, "a"), (2, "b")]
        assert rows(project, "conflict_update") == [(1, "A"), (2, "b")]
        assert rows(project, "conflict_update_set") == [(1, "A!"), (2, "b")]

    def test_update_and_exclude_columns(self, project, runs):
        assert rows(project, "update_columns") == [(1, "a1", "b2"), (2, "a3", "b3")]
        assert rows(project, "exclude_columns") == [(1, "a1", "b2"), (2, "a3", "b3")]

    def test_aliases(self, project, runs):
        assert rows(project, "aliases") == [(1, 7), (2, 5)]

    def test_skip_unchanged(self, project, runs):
        assert self.message(runs, "unchanged") == "MERGE 1 (inserted 0, updated 1, deleted 0, unchanged 2)"
        assert self.message(runs, "rewrite") == "MERGE 3 (inserted 0, updated 3, deleted 0, unchanged 0)"
        assert rows(project, "rewrite") == rows(project, "unchanged") == [(1, "a"), (2, "b"), (3, "C")]

    def test_on_schema_change(self, project, runs):
        assert rows(project, "evolve_append") == [(1, "a", None), (2, "b", "B")]
        assert rows(project, "evolve_sync") == [(1, "a", None), (2, "a2", "c2")]
        cols = [c.name for c in self.columns(project, "evolve_sync")]
        assert cols == ["id", "a", "c"]
        assert rows(project, "evolve_ignore") == [(1, "a"), (2, "b")]
        run_dbt(["run", "--select", "evolve_readd", "--vars", "phase: 3"])
        assert rows(project, "evolve_readd") == [(1, "a", None), (2, "a2", None), (3, "a3", "b3")]

    def test_tablet_size(self, project, runs):
        stats = self.stats(project, "sized")
        assert stats["rows"] == 5 and stats["tablets"] == 3

    def test_degenerate_merge_is_a_noop(self, project, runs):
        assert self.message(runs, "noop") == "MERGE 0 (no-op)"
        assert rows(project, "noop") == [(1,)]

    def test_dbt_test_show_and_full_refresh(self, project, runs):
        assert len(run_dbt(["test", "--select", "upsert"])) == 2
        _, out = run_dbt_and_capture(["show", "--inline", f"select * from {project.test_schema}.upsert order by id"])
        assert re.search(r"\|\s*4\s*\|\s*d\s*\|", out), out
        run_dbt(["run", "--select", "upsert", "--full-refresh", "--vars", "phase: 2"])
        assert rows(project, "upsert") == [(2, "B"), (3, "c"), (4, "d")]

    def test_docs_catalog_has_tablet_stats(self, project, runs):
        run_dbt(["docs", "generate"])
        with open(os.path.join(project.project_root, "target", "catalog.json")) as f:
            catalog = json.load(f)
        node = catalog["nodes"]["model.test.stock"]
        assert list(node["columns"]) == ["item", "qty_on_hand"]
        assert node["stats"]["rows"]["value"] == 3
        assert node["stats"]["tablets"]["include"] is True
        assert node["stats"]["deletion_vectors"]["value"] >= 1

    def test_rename_and_drop(self, project, runs):
        adapter = project.adapter
        with adapter.connection_named("__test"):
            src = adapter.Relation.create(schema=project.test_schema, identifier="noop", type="table")
            dst = src.incorporate(path={"identifier": "noop_renamed"})
            adapter.rename_relation(src, dst)
            assert adapter.is_tablet_table(dst) and not adapter.is_tablet_table(src)
        assert rows(project, "noop_renamed") == [(1,)]
        with adapter.connection_named("__test"):
            adapter.drop_relation(dst)
            assert not adapter.is_tablet_table(dst)
            names = {
                r.identifier
                for r in adapter.list_relations_without_caching(adapter.Relation.create(schema=project.test_schema))
            }
        assert "noop_renamed" not in names and "upsert" in names

    def columns(self, project, name):
        adapter = project.adapter
        with adapter.connection_named("__test"):
            rel = adapter.Relation.create(schema=project.test_schema, identifier=name, type="table")
            return adapter.get_columns_in_relation(rel)

    def stats(self, project, name):
        adapter = project.adapter
        with adapter.connection_named("__test"):
            rel = adapter.Relation.create(schema=project.test_schema, identifier=name, type="table")
            return adapter.tablet_stats(rel)
