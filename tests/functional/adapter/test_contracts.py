"""dbt-tests-adapter's constraint classes on tablet tables (``+file_format: tablets``): a model's
enforced contract puts its not_null and check constraints in the table (declared in the CREATE,
checked in the commit that writes the rows), its primary_key is the table's key, and a run
whose rows break one fails and leaves the table as it was.

The fixtures are Postgres'; as dbt-spark does, their types are Spark's here (``text`` is
``string``, a quoted column is quoted with backticks), and the expected DDL is this adapter's."""

import hashlib

import pytest
from dbt.tests.adapter.constraints import fixtures
from dbt.tests.adapter.constraints.test_constraints import (
    BaseConstraintQuotedColumn,
    BaseConstraintsRollback,
    BaseConstraintsRuntimeDdlEnforcement,
    BaseIncrementalConstraintsColumnsEqual,
    BaseIncrementalConstraintsRollback,
    BaseIncrementalConstraintsRuntimeDdlEnforcement,
    BaseIncrementalContractSqlHeader,
    BaseIncrementalForeignKeyConstraint,
    BaseModelConstraintsRuntimeEnforcement,
    BaseTableConstraintsColumnsEqual,
    BaseTableContractSqlHeader,
)

TABLETS = {"models": {"+file_format": "tablets"}}


def spark_types(yml: str) -> str:
    return yml.replace("data_type: text", "data_type: string")


class TabletsProject:
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return TABLETS


class SparkTypes(TabletsProject):
    """Spark's type names, as the session cursor reports them (``simpleString``)."""

    @pytest.fixture
    def string_type(self):
        return "string"

    @pytest.fixture
    def int_type(self):
        return "int"

    @pytest.fixture
    def data_types(self, schema_int_type, int_type, string_type):
        # sql_column_value, schema_data_type, error_data_type
        return [
            ["1", schema_int_type, int_type],
            ["'1'", string_type, string_type],
            ["true", "boolean", "boolean"],
            ["array('a','b','c')", "array<string>", "array<string>"],
            ["array(1,2,3)", "array<int>", "array<int>"],
            ["cast('2019-01-01' as date)", "date", "date"],
            ["cast('2019-01-01' as timestamp)", "timestamp", "timestamp"],
            ["cast(1.5 as decimal(10,2))", "decimal(10,2)", "decimal(10,2)"],
        ]


class TestTabletsTableConstraintsColumnsEqual(SparkTypes, BaseTableConstraintsColumnsEqual):
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "my_model_wrong_order.sql": fixtures.my_model_wrong_order_sql,
            "my_model_wrong_name.sql": fixtures.my_model_wrong_name_sql,
            "constraints_schema.yml": spark_types(fixtures.model_schema_yml),
        }


class TestTabletsIncrementalConstraintsColumnsEqual(SparkTypes, BaseIncrementalConstraintsColumnsEqual):
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "my_model_wrong_order.sql": fixtures.my_model_incremental_wrong_order_sql,
            "my_model_wrong_name.sql": fixtures.my_model_incremental_wrong_name_sql,
            "constraints_schema.yml": spark_types(fixtures.model_schema_yml),
        }


_DDL = """
create or replace table <model_identifier> (
    `id` integer not null,
    `color` string,
    `date_day` string,
    {checks}
) using tablets {props}
as
select id, color, date_day from (
    -- depends_on: <foreign_key_model_identifier>
    select 'blue' as color, 1 as id, '2019-01-01' as date_day
) as model_subq
"""


def _md5(expression: str) -> str:
    """The name a check without one is given (contracts.py): stable across runs."""
    return hashlib.md5(expression.encode(), usedforsecurity=False).hexdigest()[:8]


CHECKS = f"constraint id_check_3_{_md5('(id > 0)')} check ((id > 0)), constraint id_check_4_{_md5('id >= 1')} check (id >= 1)"


def _expected(checks: str, props: str = "tblproperties ('key_columns' = 'id')") -> str:
    return _DDL.format(checks=checks, props=props)


def _without_options(sql: str) -> str:
    """The statement as written to target/run, without the engine options' leading comment."""
    return sql.split("*/", 1)[1] if sql.lstrip().startswith("/*") else sql


class DdlFromRunFile:
    """The base class compares target/run's statement; ours starts with the options comment."""

    @pytest.fixture(autouse=True)
    def _strip_options(self, monkeypatch):
        import dbt.tests.adapter.constraints.test_constraints as base

        original = base.read_file

        def read(*path):
            text = original(*path)
            return _without_options(text) if path[:2] == ("target", "run") else text

        monkeypatch.setattr(base, "read_file", read)


class TestTabletsTableConstraintsRuntimeDdlEnforcement(
    DdlFromRunFile, TabletsProject, BaseConstraintsRuntimeDdlEnforcement
):
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "my_model.sql": fixtures.my_model_wrong_order_depends_on_fk_sql,
            "foreign_key_model.sql": fixtures.foreign_key_model_sql,
            "constraints_schema.yml": spark_types(fixtures.model_fk_constraint_schema_yml),
        }

    @pytest.fixture(scope="class")
    def expected_sql(self):
        return _expected(CHECKS)


class TestTabletsIncrementalConstraintsRuntimeDdlEnforcement(
    DdlFromRunFile, TabletsProject, BaseIncrementalConstraintsRuntimeDdlEnforcement
):
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "my_model.sql": fixtures.my_model_incremental_wrong_order_depends_on_fk_sql,
            "foreign_key_model.sql": fixtures.foreign_key_model_sql,
            "constraints_schema.yml": spark_types(fixtures.model_fk_constraint_schema_yml),
        }

    @pytest.fixture(scope="class")
    def expected_sql(self):
        return _expected(CHECKS)


class TestTabletsModelConstraintsRuntimeEnforcement(
    DdlFromRunFile, TabletsProject, BaseModelConstraintsRuntimeEnforcement
):
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "my_model.sql": fixtures.my_model_wrong_order_depends_on_fk_sql,
            "foreign_key_model.sql": fixtures.foreign_key_model_sql,
            "constraints_schema.yml": spark_types(fixtures.constrained_model_schema_yml),
        }

    @pytest.fixture(scope="class")
    def expected_sql(self):
        return _expected(
            f"constraint check_1_{_md5('(id > 0)')} check ((id > 0)), constraint check_2_{_md5('id >= 1')} check (id >= 1)"
        )


class TestTabletsConstraintQuotedColumn(DdlFromRunFile, TabletsProject, BaseConstraintQuotedColumn):
    @pytest.fixture(scope="class")
    def models(self):
        yml = spark_types(fixtures.model_quoted_column_schema_yml)
        return {
            "my_model.sql": fixtures.my_model_with_quoted_column_name_sql,
            "constraints_schema.yml": yml.replace("(\"from\" = 'blue')", "(`from` = 'blue')").replace(
                "'\"from\"'", "'`from`'"
            ),
        }

    @pytest.fixture(scope="class")
    def expected_sql(self):
        return (
            """
create or replace table <model_identifier> (
    `id` integer not null, `from` string not null, `date_day` string,
    constraint check_1_"""
            + _md5("(`from` = 'blue')")
            + """ check ((`from` = 'blue'))
) using tablets
as
select id, `from`, date_day from (
    select 'blue' as `from`, 1 as id, '2019-01-01' as date_day
) as model_subq
"""
        )


class RollbackMessages:
    @pytest.fixture(scope="class")
    def expected_error_messages(self):
        return ["column id is NOT NULL", "nothing was written"]

    @pytest.fixture(scope="class")
    def models(self):
        return {
            "my_model.sql": fixtures.my_model_sql,
            "constraints_schema.yml": spark_types(fixtures.model_schema_yml),
        }


class TestTabletsTableConstraintsRollback(RollbackMessages, TabletsProject, BaseConstraintsRollback):
    pass


class TestTabletsIncrementalConstraintsRollback(RollbackMessages, TabletsProject, BaseIncrementalConstraintsRollback):
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "my_model.sql": fixtures.my_incremental_model_sql,
            "constraints_schema.yml": spark_types(fixtures.model_schema_yml),
        }


class TestTabletsIncrementalForeignKeyConstraint(TabletsProject, BaseIncrementalForeignKeyConstraint):
    """A foreign key is not enforced (a warning); the runs pass."""

    @pytest.fixture(scope="class")
    def macros(self):
        return {"create_table.sql": "{% macro create_table_macro() %}select 1{% endmacro %}"}


# dbt-tests-adapter's header models speak PostgreSQL (``set session time zone``,
# ``current_setting``); the same models in Spark SQL, as dbt-databricks rewrites them
SQL_HEADER_MODEL = """
{{{{ config(materialized = "{materialized}", on_schema_change = "append_new_columns") }}}}

{{% call set_sql_header(config) %}}
SET TIME ZONE 'Asia/Kolkata';
{{%- endcall %}}
select current_timezone() as column_name
"""


class SqlHeaderModels(TabletsProject):
    materialized = "table"

    @pytest.fixture(scope="class", autouse=True)
    def session_zone_kept(self):
        """The header sets the session's time zone, and the process's other tests share the
        session: their zone back afterwards."""
        from pyspark.sql import SparkSession

        spark = SparkSession.getActiveSession()
        zone = spark.conf.get("spark.sql.session.timeZone") if spark is not None else None
        yield
        spark = SparkSession.getActiveSession()
        if spark is not None and zone is not None:
            spark.conf.set("spark.sql.session.timeZone", zone)

    @pytest.fixture(scope="class")
    def models(self):
        return {
            "my_model_contract_sql_header.sql": SQL_HEADER_MODEL.format(materialized=self.materialized),
            "constraints_schema.yml": spark_types(fixtures.model_contract_header_schema_yml),
        }

    def test_the_header_ran_before_the_model(self, project):
        from dbt.tests.util import run_dbt

        run_dbt(["run", "-s", "my_model_contract_sql_header"])
        if self.materialized == "incremental":
            run_dbt(["run", "-s", "my_model_contract_sql_header"])  # the incremental branch too
        got = project.run_sql(
            f"select column_name from {project.test_schema}.my_model_contract_sql_header", fetch="all"
        )
        assert {tuple(r) for r in got} == {("Asia/Kolkata",)}


class TestTabletsTableContractSqlHeader(SqlHeaderModels, BaseTableContractSqlHeader):
    pass


class TestTabletsIncrementalContractSqlHeader(SqlHeaderModels, BaseIncrementalContractSqlHeader):
    materialized = "incremental"
