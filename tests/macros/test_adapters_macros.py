"""The tablets__ overrides of dbt-spark macros: tablet tables take the engine's path, everything
else stays dbt-spark's."""

import pytest

from dbt.adapters.tablets.config import parse_table_config
from tests.macros.base import MacroTestBase, Relation

pytestmark = pytest.mark.macros


class TestCreateTableAs(MacroTestBase):
    def setup_method(self) -> None:
        super().setup_method()
        self.adapter.table_config.side_effect = parse_table_config  # the real validation

    def test_tablets_format_is_create_or_replace_using_tablets(self):
        self.config.update(file_format="tablets", unique_key=["id", "day"], tblproperties={"owner": "o'k"})
        sql = self.run_macro("tablets__create_table_as", False, Relation("m"), "select 1 as id")
        assert sql == (
            "create or replace table analytics.m using tablets tblproperties ('owner' = 'o\\'k') as select 1 as id"
        )
        assert not self.called("spark__create_table_as")

    def test_table_options_are_the_models(self):
        self.config.update(file_format="tablets", liquid_clustered_by="day", target_tablet_rows=10)
        sql = self.run_macro("tablets__create_table_as", False, Relation("m"), "select 1 as day")
        assert "tblproperties ('target_tablet_rows' = '10', 'cluster_by' = 'day')" in sql
        self.adapter.run_statement.assert_not_called()  # the materialization runs it, with its options

    def test_tablets_is_the_default_file_format(self):
        sql = self.run_macro("tablets__create_table_as", False, Relation("m"), "select 1")
        assert sql == "create or replace table analytics.m using tablets as select 1"
        assert not self.called("spark__create_table_as")

    @pytest.mark.parametrize(("temporary", "file_format"), [(True, "tablets"), (True, None), (False, "parquet")])
    def test_everything_else_is_dbt_spark(self, temporary, file_format):
        self.config.update(file_format=file_format)
        assert (
            self.run_macro("tablets__create_table_as", temporary, Relation("m"), "select 1")
            == "<spark create_table_as>"
        )
        assert len(self.called("spark__create_table_as")) == 1

    def test_python_models_are_dbt_spark(self):
        self.config.update(file_format="tablets")
        self.run_macro("tablets__create_table_as", False, Relation("m"), "def model(dbt, s): ...", "python")
        assert self.called("spark__create_table_as")

    def test_contract_checks_columns_first(self):
        self.config.update(file_format="tablets", contract=type("C", (), {"enforced": True})())
        self.context["get_select_subquery"] = self._recorder(
            "get_select_subquery", lambda sql: f"select * from ({sql})"
        )
        self.adapter.contract_ddl.return_value = ("(id int not null)", {})  # the contract's column list
        sql = self.run_macro("tablets__create_table_as", False, Relation("m"), "select 1 as id")
        assert [n for n, _ in self.calls][:2] == ["get_assert_columns_equivalent", "get_select_subquery"]
        assert sql.endswith("as select * from (select 1 as id)"), sql

    def test_no_properties_no_clause(self):
        sql = self.run_macro("tablets_create_table_as_sql", Relation("m"), "select 1", {})
        assert sql == "create or replace table analytics.m using tablets as select 1"


class TestRenameRelation(MacroTestBase):
    def test_tablet_table_is_renamed_by_the_engine(self):
        self.adapter.is_tablet_table.return_value = True
        a, b = Relation("a"), Relation("b")
        self.run_macro("tablets__rename_relation", a, b)
        self.adapter.rename_tablet_table.assert_called_once_with(a, b)
        assert not self.called("spark__rename_relation")

    def test_other_relations_are_dbt_spark(self):
        self.adapter.is_tablet_table.return_value = False
        assert self.run_macro("tablets__rename_relation", Relation("a"), Relation("b")) == "<spark rename>"
        self.adapter.rename_tablet_table.assert_not_called()


class TestAlterColumns(MacroTestBase):
    def test_tablet_table_evolves_its_schema_in_the_store(self):
        self.adapter.is_tablet_table.return_value = True
        rel = Relation("m")
        self.run_macro("tablets__alter_relation_add_remove_columns", rel, ["c1"], ["c2"])
        self.adapter.alter_tablet_columns.assert_called_once_with(rel, ["c1"], ["c2"])
        self.run_macro("tablets__alter_column_type", rel, "c", "bigint")
        self.adapter.alter_tablet_column_type.assert_called_once_with(rel, "c", "bigint")
        assert not self.called("spark__alter_relation_add_remove_columns") and not self.called(
            "spark__alter_column_type"
        )

    def test_other_tables_are_dbt_spark(self):
        self.adapter.is_tablet_table.return_value = False
        self.run_macro("tablets__alter_relation_add_remove_columns", Relation("m"), ["c1"], None)
        assert self.called("spark__alter_relation_add_remove_columns")
        assert self.run_macro("tablets__alter_column_type", Relation("m"), "c", "int") == "<spark alter type>"
        self.adapter.alter_tablet_columns.assert_not_called()


class TestDropSchema(MacroTestBase):
    def test_tablet_tables_are_dropped_before_the_schema(self):
        order = []
        self.adapter.drop_tablet_tables_in_schema.side_effect = lambda rel: order.append("tablets") or ""
        self.context["spark__drop_schema"] = lambda rel: order.append("spark") or ""
        self.run_macro("tablets__drop_schema", Relation("s", None))
        assert order == ["tablets", "spark"]
