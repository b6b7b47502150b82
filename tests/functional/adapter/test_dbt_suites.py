"""The rest of dbt-tests-adapter's adapter-neutral suites, on tablet tables (this adapter's default
file_format): singular, generic and unit tests, ephemeral models, ``--empty`` and sample mode,
``dbt show``, aliases, relation type changes, schema drops, concurrency, stored test failures,
hooks given twice, seeds enabled by config and an empty seed.

Left out, as dbt-spark leaves them out: the suites whose fixtures are Postgres SQL (the seed
suites' ``TEXT`` columns, the ephemeral suites that compare compiled SQL with Postgres' quoting,
``information_schema`` in simple_copy, Postgres' error text in dbt show) and the caching suites
(they read ``relation.database``, which Spark's relations do not have).
Seeds are covered by ``tests/functional/test_seed_load.py``."""

import pytest
from dbt.tests.adapter.aliases import fixtures as alias_fixtures
from dbt.tests.adapter.aliases.test_aliases import BaseAliases, BaseSameAliasDifferentSchemas
from dbt.tests.adapter.basic.test_adapter_methods import BaseAdapterMethod
from dbt.tests.adapter.basic.test_empty import BaseEmpty
from dbt.tests.adapter.basic.test_ephemeral import BaseEphemeral
from dbt.tests.adapter.basic.test_generic_tests import BaseGenericTests
from dbt.tests.adapter.basic.test_incremental import BaseIncrementalNotSchemaChange
from dbt.tests.adapter.basic.test_singular_tests import BaseSingularTests
from dbt.tests.adapter.basic.test_singular_tests_ephemeral import BaseSingularTestsEphemeral
from dbt.tests.adapter.basic.test_snapshot_check_cols import BaseSnapshotCheckCols
from dbt.tests.adapter.basic.test_snapshot_timestamp import BaseSnapshotTimestamp
from dbt.tests.adapter.basic.test_table_materialization import BaseTableMaterialization
from dbt.tests.adapter.basic.test_validate_connection import BaseValidateConnection
from dbt.tests.adapter.concurrency.test_concurrency import BaseConcurrency
from dbt.tests.adapter.dbt_show.test_dbt_show import BaseShowLimit, BaseShowSqlHeader
from dbt.tests.adapter.empty.test_empty import BaseTestEmpty, BaseTestEmptyInlineSourceRef
from dbt.tests.adapter.hooks.test_model_hooks import BaseDuplicateHooksInConfigs
from dbt.tests.adapter.relations.test_changing_relation_type import BaseChangeRelationTypeValidator
from dbt.tests.adapter.relations.test_dropping_schema_named import BaseDropSchemaNamed
from dbt.tests.adapter.sample_mode.test_sample_mode import BaseSampleModeTest
from dbt.tests.adapter.simple_seed.test_seed import BaseSimpleSeedEnabledViaConfig, BaseTestEmptySeed
from dbt.tests.adapter.store_test_failures_tests.test_store_test_failures import BaseStoreTestFailures
from dbt.tests.adapter.unit_testing import test_quoted_reserved_word_column_names as reserved
from dbt.tests.adapter.unit_testing.test_case_insensitivity import BaseUnitTestCaseInsensivity
from dbt.tests.adapter.unit_testing.test_invalid_input import BaseUnitTestInvalidInput
from dbt.tests.adapter.unit_testing.test_quoted_reserved_word_column_names import (
    BaseUnitTestQuotedReservedWordColumnNames,
)
from dbt.tests.adapter.unit_testing.test_types import BaseUnitTestingTypes

# the suite's string_literal is Postgres' '...'::text; Spark's cast, for the 'test' namespace
SPARK_CAST_SQL = (
    alias_fixtures.MACROS__CAST_SQL + "\n{% macro spark__string_literal(s) %}cast('{{ s }}' as string){% endmacro %}\n"
)


class _SparkCast:
    @pytest.fixture(scope="class")
    def macros(self):
        return {"cast.sql": SPARK_CAST_SQL, "expect_value.sql": alias_fixtures.MACROS__EXPECT_VALUE_SQL}


class TestAliasesTablets(_SparkCast, BaseAliases):
    pass


class TestSameAliasDifferentSchemasTablets(_SparkCast, BaseSameAliasDifferentSchemas):
    pass


class TestSingularTestsTablets(BaseSingularTests):
    pass


class TestSingularTestsEphemeralTablets(BaseSingularTestsEphemeral):
    pass


class TestGenericTestsTablets(BaseGenericTests):
    pass


class TestEmptyTablets(BaseEmpty):
    pass


class TestEphemeralTablets(BaseEphemeral):
    pass


class TestSnapshotCheckColsTablets(BaseSnapshotCheckCols):
    pass


class TestSnapshotTimestampTablets(BaseSnapshotTimestamp):
    pass


class TestTableMaterializationTablets(BaseTableMaterialization):
    pass


class TestIncrementalNotSchemaChangeTablets(BaseIncrementalNotSchemaChange):
    pass


class TestAdapterMethodTablets(BaseAdapterMethod):
    pass


class TestValidateConnectionTablets(BaseValidateConnection):
    pass


class TestRunWithEmptyTablets(BaseTestEmpty):
    pass


class TestSampleModeTablets(BaseSampleModeTest):
    pass


class TestShowLimitTablets(BaseShowLimit):
    pass


class TestShowSqlHeaderTablets(BaseShowSqlHeader):
    pass


class TestChangeRelationTypeTablets(BaseChangeRelationTypeValidator):
    pass


class TestDropSchemaNamedTablets(BaseDropSchemaNamed):
    pass


class TestConcurrencyTablets(BaseConcurrency):
    pass


class TestStoreTestFailuresTablets(BaseStoreTestFailures):
    pass


class TestUnitTestCaseInsensitivityTablets(BaseUnitTestCaseInsensivity):
    pass


class TestUnitTestInvalidInputTablets(BaseUnitTestInvalidInput):
    pass


class TestUnitTestingTypesTablets(BaseUnitTestingTypes):
    @pytest.fixture
    def data_types(self):
        # (sql_value, yaml_value): Spark's literals for the suite's Postgres ones
        return [
            ["1", "1"],
            ["2.0", "2.0"],
            ["'12345'", "12345"],
            ["'string'", "string"],
            ["true", "true"],
            ["date '2011-11-11'", "2011-11-11"],
            ["timestamp '2013-11-03 00:00:00-0'", "2013-11-03 00:00:00-0"],
            ["cast(1.25 as decimal(10, 2))", "1.25"],
        ]


class TestUnitTestQuotedReservedWordTablets(BaseUnitTestQuotedReservedWordColumnNames):
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "my_model.sql": reserved.my_model_sql,
            "my_upstream_model.sql": "select 1 as `GROUP`",  # Spark's quotes, not Postgres' "GROUP"
            "unit_tests.yml": reserved.test_my_model_csv_fixtures_yml,
        }


class TestRunWithEmptyInlineSourceRefTablets(BaseTestEmptyInlineSourceRef):
    pass


class TestDuplicateHooksInConfigsTablets(BaseDuplicateHooksInConfigs):
    pass


class TestSeedEnabledViaConfigTablets(BaseSimpleSeedEnabledViaConfig):
    pass


class TestEmptySeedTablets(BaseTestEmptySeed):
    pass
