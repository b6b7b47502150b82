"""The merge_tablets and incremental materializations, rendered for real with a fake dbt context:
the order of the steps (validate first, then create or merge) and the statements they run."""

import pytest
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.tablets.config import MergeConfigError, parse_merge_config
from dbt.adapters.tablets.render import render_merge
from tests.macros.base import MacroTestBase, Relation

pytestmark = pytest.mark.macros


class Column:
    def __init__(self, name):
        self.name = name


class MaterializationTest(MacroTestBase):
    def setup_method(self):
        super().setup_method()
        self.adapter.merge_config.side_effect = parse_merge_config
        self.adapter.render_merge.side_effect = lambda cfg, t, s, tc, sc: render_merge(
            cfg, str(t), str(s), [c.name for c in tc], [c.name for c in sc]
        )
        self.columns = {"analytics.m": ["id", "v"], "m__dbt_tmp": ["id", "v"]}
        self.adapter.get_columns_in_relation.side_effect = lambda rel: [Column(c) for c in self.columns[str(rel)]]
        self.adapter.is_tablet_table.return_value = True

    def existing(self, relation):
        self.context["load_cached_relation"] = lambda rel: relation


class TestMergeTablets(MaterializationTest):
    def test_first_run_creates_the_tablet_table(self):
        self.config.update(unique_key="id", target_tablet_rows=100)
        result = self.run_macro("materialization_merge_tablets_tablets")
        assert [str(r) for r in result["relations"]] == ["analytics.m"]
        assert self.statements == [
            (
                "main",
                "create or replace table analytics.m using tablets tblproperties "
                "('key_columns' = 'id', 'target_tablet_rows' = '100', 'auto_compact' = 'true') as select 1 as id",
            )
        ]
        options = self.adapter.run_statement.call_args.args[0]
        assert options.target_tablet_rows == 100

    def test_later_run_merges_from_a_temporary_view(self):
        self.config.update(unique_key="id", on_schema_change="append_new_columns")
        self.existing(Relation("m"))
        self.run_macro("materialization_merge_tablets_tablets")
        names = [n for n, _ in self.statements]
        assert names == ["create_tmp_relation", "main", "drop_tmp_relation"]
        assert self.statements[0][1] == "create or replace temporary view m__dbt_tmp as select 1 as id"
        assert self.statements[1][1] == (
            "MERGE INTO analytics.m AS t USING m__dbt_tmp AS s ON t.`id` = s.`id` "
            "WHEN MATCHED THEN UPDATE SET `v` = s.`v` "
            "WHEN NOT MATCHED THEN INSERT (`id`, `v`) VALUES (s.`id`, s.`v`)"
        )
        assert self.statements[2][1] == "drop view if exists m__dbt_tmp"
        (args,) = self.called("process_schema_changes")
        assert args[0] == "append_new_columns" and str(args[1]) == "m__dbt_tmp"

    def test_full_refresh_recreates(self):
        self.config.update(unique_key="id")
        self.existing(Relation("m"))
        self.context["should_full_refresh"] = lambda: True
        self.run_macro("materialization_merge_tablets_tablets")
        assert [n for n, _ in self.statements] == ["main"]
        assert self.statements[0][1].startswith("create or replace table analytics.m using tablets")
        self.adapter.drop_relation.assert_not_called()

    def test_a_view_or_ordinary_table_is_replaced_by_a_tablet_table(self):
        self.config.update(unique_key="id")
        old = Relation("m", type="view")
        self.existing(old)
        self.adapter.is_tablet_table.return_value = False
        self.run_macro("materialization_merge_tablets_tablets")
        self.adapter.drop_relation.assert_called_once_with(old)
        assert self.statements[0][1].startswith("create or replace table")

    def test_bad_config_fails_before_any_sql(self):
        self.config.update(unique_key="id", when_matched=[{"action": "explode"}], on_schema_change="whatever")
        self.existing(Relation("m"))
        with pytest.raises(MergeConfigError) as info:
            self.run_macro("materialization_merge_tablets_tablets")
        assert isinstance(info.value, DbtRuntimeError)
        assert "model 'm' has 2 problems" in str(info.value)
        assert self.statements == [] and not self.called("run_hooks")

    def test_config_is_read_from_the_model_config(self):
        self.config.update(unique_key="id")
        self.run_macro("materialization_merge_tablets_tablets")
        self.adapter.merge_config.assert_called_once_with(self.config, "m", "merge_tablets")


class TestIncremental(MaterializationTest):
    def test_other_file_formats_are_dbt_spark(self):
        self.config.update(file_format="parquet", unique_key="id")
        assert self.run_macro("materialization_incremental_tablets") == {"relations": ["<spark incremental>"]}
        assert self.statements == []

    def test_tablets_file_format_merges_with_dbt_aliases(self):
        self.config.update(file_format="tablets", unique_key="id", incremental_strategy="merge")
        self.existing(Relation("m"))
        self.run_macro("materialization_incremental_tablets")
        main = dict(self.statements)["main"]
        assert main.startswith("MERGE INTO analytics.m AS DBT_INTERNAL_DEST USING m__dbt_tmp AS DBT_INTERNAL_SOURCE")
        self.adapter.merge_config.assert_called_once_with(self.config, "m", "incremental")

    def test_tablets_is_the_default_file_format(self):
        self.config.update(unique_key="id", incremental_strategy="merge")  # no delta needed for merge
        self.existing(Relation("m"))
        self.run_macro("materialization_incremental_tablets")
        assert dict(self.statements)["main"].startswith("MERGE INTO analytics.m AS DBT_INTERNAL_DEST")
        assert not self.called("materialization_incremental_spark")

    def test_tablets_without_key_appends(self):
        self.config.update(file_format="tablets")
        self.existing(Relation("m"))
        self.run_macro("materialization_incremental_tablets")
        assert dict(self.statements)["main"] == "INSERT INTO analytics.m (`id`, `v`) SELECT `id`, `v` FROM m__dbt_tmp"


class TestIsIncremental(MacroTestBase):
    @pytest.mark.parametrize(
        ("materialized", "is_tablets", "expected"),
        [
            ("incremental", False, True),
            ("merge_tablets", True, True),
            ("merge_tablets", False, False),
            ("table", True, False),
        ],
    )
    def test_is_incremental(self, materialized, is_tablets, expected):
        self.config.update(materialized=materialized)
        self.adapter.get_relation.return_value = Relation("m")
        self.adapter.is_tablet_table.return_value = is_tablets
        assert self.run_macro("is_incremental") is expected

    def test_false_when_parsing(self):
        self.config.update(materialized="merge_tablets")
        self.adapter.get_relation.return_value = Relation("m")
        self.adapter.is_tablet_table.return_value = True
        self.context["execute"] = False
        assert self.run_macro("is_incremental") is False

    def test_false_on_full_refresh(self):
        self.config.update(materialized="merge_tablets")
        self.adapter.get_relation.return_value = Relation("m")
        self.adapter.is_tablet_table.return_value = True
        self.context["should_full_refresh"] = lambda: True
        assert self.run_macro("is_incremental") is False
