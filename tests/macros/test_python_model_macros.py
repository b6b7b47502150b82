"""The Python branch of the table, incremental and merge_tablets materializations, rendered for
real: the model runs first as a 'python' statement of the materialization itself, the SQL path
then reads the view it fills, and the view is dropped; what Python models cannot do is refused
before anything runs."""

import json

import pytest

from dbt.adapters.tablets.config import parse_merge_config, parse_table_config
from dbt.adapters.tablets.render import render_merge
from tests.macros.base import MacroTestBase, Relation, squash

pytestmark = pytest.mark.macros

VIEW = "`m__dbt_python`"


class Column:
    def __init__(self, name):
        self.name = name


class PythonTest(MacroTestBase):
    def setup_method(self):
        super().setup_method()
        self.languages: list[str] = []
        self.context["model"]["language"] = "python"
        self.context["compiled_code"] = "def model(dbt, session):\n    return dbt.ref('x')\n"
        self.context["tojson"] = json.dumps
        self.adapter.quote.side_effect = lambda name: f"`{name}`"
        self.adapter.merge_config.side_effect = parse_merge_config
        self.adapter.table_config.side_effect = parse_table_config
        self.adapter.render_merge.side_effect = lambda cfg, t, s, tc, sc: render_merge(
            cfg, str(t), str(s), [c.name for c in tc], [c.name for c in sc]
        )
        self.adapter.get_columns_in_relation.side_effect = lambda rel: [Column("id"), Column("v")]
        self.adapter.is_tablet_table.return_value = True
        self.script = None

    def delegates(self):
        return {
            **super().delegates(),
            "materialization_table_spark": {"relations": ["<spark table>"]},
            "materialization_view_spark": {"relations": ["<spark view>"]},
        }

    def _statement(self, name=None, *args, caller=None, language="sql", **kwargs):
        text = caller()
        self.languages.append(language)
        if language == "python":
            self.script = text
        self.statements.append((name, squash(text)))
        return ""

    def existing(self, relation):
        self.context["load_cached_relation"] = lambda rel: relation

    def names(self):
        return [n for n, _ in self.statements]


class TestScript(PythonTest):
    def test_the_code_submitted_is_the_model_then_the_view_it_fills(self):
        self.run_macro("materialization_table_tablets")
        assert self.languages[0] == "python"
        # the user's code first and unchanged: its line numbers are the file's
        assert self.script.startswith(self.context["compiled_code"])
        assert self.script.rstrip().endswith(f"dbt_tablets_view = {json.dumps(VIEW)}")


class TestTable(PythonTest):
    def test_bad_table_options_fail_before_the_python_code_runs(self):
        self.config.update(partition_by="day")
        with pytest.raises(RuntimeError, match="partition_by"):
            self.run_macro("materialization_table_tablets")
        assert self.statements == [] and not self.called("run_hooks")

    def test_python_table_is_create_or_replace_from_the_view(self):
        self.config.update(target_tablet_rows=100, cluster_by="id")
        result = self.run_macro("materialization_table_tablets")
        assert [str(r) for r in result["relations"]] == ["analytics.m"]
        assert self.names() == ["python_model", "main", "drop_python_view"]
        assert self.statements[1][1] == (
            "create or replace table analytics.m using tablets tblproperties "
            f"('target_tablet_rows' = '100', 'cluster_by' = 'id') as select * from {VIEW}"
        )
        options = self.adapter.run_statement.call_args.args[0]
        assert options.target_tablet_rows == 100 and options.cluster_by == ("id",)
        assert self.statements[2][1] == f"drop view if exists {VIEW}"
        self.adapter.drop_relation.assert_not_called()

    def test_a_view_of_that_name_is_dropped_first(self):
        old = Relation("m", type="view")
        self.existing(old)
        self.adapter.is_tablet_table.return_value = False
        self.run_macro("materialization_table_tablets")
        self.adapter.drop_relation.assert_called_once_with(old)

    def test_sql_models_of_another_file_format_are_dbt_spark_table(self):
        self.context["model"]["language"] = "sql"
        self.config.update(file_format="parquet")  # tablets, the default, is tablets_table_sql
        assert self.run_macro("materialization_table_tablets") == {"relations": ["<spark table>"]}
        assert self.statements == []


class TestIncremental(PythonTest):
    def test_later_run_merges_the_view(self):
        self.config.update(unique_key="id")
        self.existing(Relation("m"))
        self.run_macro("materialization_incremental_tablets")
        assert self.names() == ["python_model", "create_tmp_relation", "main", "drop_tmp_relation", "drop_python_view"]
        assert self.languages == ["python", "sql", "sql", "sql"]  # (main: adapter.run_statement)
        assert self.statements[1][1] == f"create or replace temporary view m__dbt_tmp as select * from {VIEW}"
        assert self.statements[2][1].startswith(
            "MERGE INTO analytics.m AS DBT_INTERNAL_DEST USING m__dbt_tmp AS DBT_INTERNAL_SOURCE"
        )
        # hooks once each, around the Python code and the statement
        assert len(self.called("run_hooks")) == 2

    def test_python_writes_tablet_tables_without_file_format(self):
        self.run_macro("materialization_incremental_tablets")
        assert self.names() == ["python_model", "main", "drop_python_view"]
        assert self.statements[1][1].startswith("create or replace table analytics.m using tablets")

    @pytest.mark.parametrize(
        ("config", "needle"),
        [
            ({"file_format": "parquet"}, "file_format = 'parquet' is not supported for Python models"),
            (
                {"incremental_strategy": "microbatch", "event_time": "t"},
                "'microbatch' is not supported for Python models",
            ),
        ],
    )
    def test_refused_before_anything_runs(self, config, needle):
        self.config.update(config)
        with pytest.raises(RuntimeError, match=needle) as info:
            self.run_macro("materialization_incremental_tablets")
        assert "Python model 'm'" in str(info.value) and "Help:" in str(info.value)
        assert self.statements == [] and not self.called("run_hooks")

    def test_bad_config_fails_before_the_python_code_runs(self):
        self.config.update(unique_key="id", on_schema_change="whatever")
        with pytest.raises(RuntimeError, match="on_schema_change"):
            self.run_macro("materialization_incremental_tablets")
        assert self.statements == []


class TestMergeTablets(PythonTest):
    def test_first_run_creates_then_merges(self):
        self.config.update(unique_key="id")
        self.run_macro("materialization_merge_tablets_tablets")
        assert self.names() == ["python_model", "main", "drop_python_view"]
        assert "'key_columns' = 'id'" in self.statements[1][1]
        assert self.statements[1][1].endswith(f"as select * from {VIEW}")


class TestRefusals(PythonTest):
    def test_view(self):
        with pytest.raises(RuntimeError, match="materialized='view' is not supported for Python models"):
            self.run_macro("materialization_view_tablets")
        assert self.statements == []

    def test_sql_views_are_dbt_spark_view(self):
        self.context["model"]["language"] = "sql"
        assert self.run_macro("materialization_view_tablets") == {"relations": ["<spark view>"]}

    def test_ephemeral_is_refused_where_its_code_is_compiled(self):
        self.config.update(materialized="ephemeral")
        with pytest.raises(RuntimeError, match="materialized='ephemeral' is not supported"):
            self.run_macro("py_script_comment")

    def test_the_postfix_hint_otherwise(self):
        assert "pyspark shell" in self.run_macro("py_script_comment")
