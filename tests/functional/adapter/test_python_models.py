"""Python models (``def model(dbt, session)``) on tablet tables: run in the dbt process on the
adapter's Spark session, their DataFrame the source of the SQL materializations (table,
incremental with each strategy, merge_tablets). dbt-tests-adapter's Python suites, and ours for
the MERGE results, the strategies, pandas / pyarrow frames and the refusals."""

from __future__ import annotations

import pytest
from dbt.tests.adapter.python_model import test_spark as spark_models
from dbt.tests.adapter.python_model.test_python_model import (
    BasePythonEmptyTests,
    BasePythonIncrementalTests,
    BasePythonMetaGetTests,
    BasePythonModelTests,
    BasePythonSampleTests,
)
from dbt.tests.adapter.python_model.test_spark import BasePySparkTests
from dbt.tests.util import run_dbt, run_dbt_and_capture


def rows(project, name: str, order: str = "1") -> list[tuple]:
    got = project.run_sql(f"select * from {project.test_schema}.{name} order by {order}", fetch="all")
    return [tuple(r) for r in got]


def stats(project, name: str) -> dict | None:
    adapter = project.adapter
    with adapter.connection_named("__test"):
        rel = adapter.Relation.create(schema=project.test_schema, identifier=name, type="table")
        return adapter.tablet_stats(rel)


def temp_views(project) -> list[str]:
    got = project.run_sql("show views", fetch="all")
    return [r[1] for r in got if str(r[1]).endswith("__dbt_python")]


# --- dbt-tests-adapter's suites -------------------------------------------------------------------


class TestPythonModelTablets(BasePythonModelTests):
    """ref (versioned, two-argument), source (quoted identifier), a SQL model over the Python one."""

    def test_singular_tests(self, project):
        super().test_singular_tests(project)
        assert stats(project, "my_python_model")["rows"] == 2
        assert rows(project, "second_sql_model") == [(1,), (1,)]
        assert temp_views(project) == []


class TestPythonIncrementalTablets(BasePythonIncrementalTests):
    """incremental + unique_key: each later run one MERGE on the tablet table."""


class TestPythonMetaGetTablets(BasePythonMetaGetTests):
    pass


class TestPySparkTablets(BasePySparkTests):
    """A Spark DataFrame (from the global ``spark``, as in a notebook), pandas and pandas-on-Spark.
    Koalas (``databricks.koalas``) exists only on Databricks runtimes: its model is left out."""

    @pytest.fixture(scope="class")
    def models(self):
        return {
            "pandas_df.py": spark_models.PANDAS_MODEL,
            "pyspark_df.py": spark_models.PYSPARK_MODEL,
            "pandas_on_spark_df.py": spark_models.PANDAS_ON_SPARK_MODEL,
        }

    def test_different_dataframes(self, project):
        results = run_dbt(["run"])
        assert len(results) == 3
        for name in ("pandas_df", "pyspark_df", "pandas_on_spark_df"):
            assert rows(project, name, order="City")[0] == ("Bogota", "Colombia", 4.6, -74.08)


class TestPythonEmptyTablets(BasePythonEmptyTests):
    pass


class TestPythonSampleTablets(BasePythonSampleTests):
    pass


# --- merge_tablets: the DataFrame is the MERGE source ------------------------------------------------

moves_csv = """batch,item,qty
1,A,10
1,B,5
1,C,2
"""

# pandas in and out; the latest batch of moves is the source of each run
stock_py = """
def model(dbt, session):
    dbt.config(
        materialized="merge_tablets",
        unique_key="item",
        when_matched=[
            {"condition": "t.qty + s.qty <= 0", "action": "delete"},
            {"action": "update", "set": {"qty": "t.qty + s.qty"}},
        ],
        when_not_matched=[{"action": "insert"}],
    )
    moves = dbt.ref("moves").toPandas()
    latest = moves[moves.batch == moves.batch.max()]
    return latest[["item", "qty"]].reset_index(drop=True)
"""

# a table built after its pre-hook (it reads the hook's view) and before its post-hook
hooked_py = """
def model(dbt, session):
    dbt.config(materialized="table")
    return session.table(f"{dbt.this.schema}.before_hooked")
"""
hooked_yml = """
version: 2
models:
  - name: hooked
    config:
      pre_hook: "create or replace view {{ this.schema }}.before_hooked as select 42 as answer"
      post_hook: "create or replace view {{ this.schema }}.after_hooked as select count(*) as n from {{ this }}"
"""


class TestPythonMergeTablets:
    @pytest.fixture(scope="class")
    def seeds(self):
        return {"moves.csv": moves_csv}

    @pytest.fixture(scope="class")
    def models(self):
        return {"stock.py": stock_py, "hooked.py": hooked_py, "hooked.yml": hooked_yml}

    def test_each_run_merges_the_frame_in_one_commit(self, project):
        run_dbt(["seed"])
        results = run_dbt(["run"])
        assert {r.node.name: r.message for r in results}["stock"].startswith("CREATE TABLE AS SELECT 3")
        assert rows(project, "stock") == [("A", 10), ("B", 5), ("C", 2)]
        assert rows(project, "hooked") == [(42,)] and rows(project, "after_hooked") == [(1,)]
        first = stats(project, "stock")["version"]

        project.run_sql(f"insert into {project.test_schema}.moves values (2, 'A', -4), (2, 'B', -5), (2, 'D', 7)")
        results, log = run_dbt_and_capture(["run", "-s", "stock"])
        assert results[0].message == "MERGE 3 (inserted 1, updated 1, deleted 1, unchanged 0)"
        assert rows(project, "stock") == [("A", 6), ("C", 2), ("D", 7)]
        assert stats(project, "stock")["version"] == first + 1

        project.run_sql(f"insert into {project.test_schema}.moves values (3, 'A', -6), (3, 'C', 3), (3, 'E', 1)")
        results = run_dbt(["run", "-s", "stock"])
        assert results[0].message == "MERGE 3 (inserted 1, updated 1, deleted 1, unchanged 0)"
        assert rows(project, "stock") == [("C", 5), ("D", 7), ("E", 1)]
        assert stats(project, "stock")["version"] == first + 2
        assert temp_views(project) == []


# --- incremental: every strategy but microbatch ---------------------------------------------------------

events_csv = """batch,id,v
1,1,a
1,2,b
"""


def _incremental(config: str, ret: str = "latest") -> str:
    return f"""
def model(dbt, session):
    dbt.config(materialized="incremental", {config})
    events = dbt.ref("events")
    latest = events.where(events.batch == events.agg({{"batch": "max"}}).first()[0])
    return {ret}
"""


class TestPythonIncrementalStrategies:
    @pytest.fixture(scope="class")
    def seeds(self):
        return {"events.csv": events_csv}

    @pytest.fixture(scope="class")
    def models(self):
        return {
            "inc_merge.py": _incremental('incremental_strategy="merge", unique_key="id"'),
            "inc_append.py": _incremental('incremental_strategy="append"', ret="latest.toArrow()"),
            "inc_delete_insert.py": _incremental('incremental_strategy="delete+insert", unique_key="id"'),
            "inc_replace.py": _incremental('incremental_strategy="insert_overwrite", replace_where="id >= 2"'),
        }

    def test_second_run_applies_each_strategy_in_one_commit(self, project):
        run_dbt(["seed"])
        run_dbt(["run"])
        names = ("inc_merge", "inc_append", "inc_delete_insert", "inc_replace")
        before = {n: stats(project, n)["version"] for n in names}
        for n in names:
            assert rows(project, n, order="id") == [(1, 1, "a"), (1, 2, "b")]

        project.run_sql(f"insert into {project.test_schema}.events values (2, 2, 'B'), (2, 3, 'c')")
        results = {r.node.name: r.message for r in run_dbt(["run"])}
        replaced = [(1, 1, "a"), (2, 2, "B"), (2, 3, "c")]
        assert rows(project, "inc_merge", order="id") == replaced
        assert results["inc_merge"] == "MERGE 2 (inserted 1, updated 1, deleted 0, unchanged 0)"
        assert rows(project, "inc_delete_insert", order="id") == replaced
        assert rows(project, "inc_replace", order="id") == replaced
        assert rows(project, "inc_append", order="id, batch") == [(1, 1, "a"), (1, 2, "b"), (2, 2, "B"), (2, 3, "c")]
        for n in names:
            assert stats(project, n)["version"] == before[n] + 1, n


# --- what fails, and how it says so -----------------------------------------------------------------

errors_models = {
    "raises.py": """
def share(total, parts):
    return total / parts

def model(dbt, session):
    dbt.config(materialized="table")
    return session.createDataFrame([(share(1, 0),)], "x double")
""",
    "returns_list.py": """
def model(dbt, session):
    dbt.config(materialized="table")
    return [1, 2, 3]
""",
    "bad_column.py": """
def model(dbt, session):
    dbt.config(materialized="table")
    return session.range(3).select("nope")
""",
    "udf_raises.py": """
from pyspark.sql import functions as F

@F.udf("int")
def checked(x):
    raise ValueError(f"bad row {x}")

def model(dbt, session):
    dbt.config(materialized="table")
    return session.range(1).select(checked("id").alias("x"))
""",
    "as_view.py": """
def model(dbt, session):
    dbt.config(materialized="view")
    return session.range(1)
""",
    "as_ephemeral.py": """
def model(dbt, session):
    dbt.config(materialized="ephemeral")
    return session.range(1)
""",
    "uses_ephemeral.sql": "select * from {{ ref('as_ephemeral') }}",
    "as_parquet.py": """
def model(dbt, session):
    dbt.config(materialized="table", file_format="parquet")
    return session.range(1)
""",
}


class TestPythonModelErrors:
    @pytest.fixture(scope="class")
    def models(self):
        return errors_models

    def test_each_error_names_the_model_and_the_cause(self, project):
        results, log = run_dbt_and_capture(["run"], expect_pass=False)
        got = {r.node.name: r.message for r in results}
        assert len(got) == 7, got
        # a model that refs a failed ephemeral one is skipped; the ephemeral's error is in the log
        assert {r.node.name: str(r.status) for r in results if str(r.status) != "error"} == {
            "uses_ephemeral": "skipped"
        }
        assert "Python model 'as_ephemeral': materialized='ephemeral' is not supported" in log
        assert "java" not in "".join(got.values()).lower()

        assert "Python model 'raises' failed: ZeroDivisionError: division by zero" in got["raises"]
        # dbt reads a model file without its leading blank lines: the line numbers count from there
        assert "models/raises.py, line 6, in model: return session.createDataFrame" in got["raises"]
        assert "models/raises.py, line 2, in share: return total / parts" in got["raises"]
        assert "Python model 'returns_list' returned builtins.list, not a DataFrame." in got["returns_list"]
        assert "UNRESOLVED_COLUMN" in got["bad_column"] and "line 3, in model" in got["bad_column"]
        assert (
            "a Python function raised ValueError: bad row 0 (models/udf_raises.py, line 5, in checked)"
            in got["udf_raises"]
        )
        assert "materialized='view' is not supported for Python models" in got["as_view"]
        assert "file_format = 'parquet' is not supported for Python models" in got["as_parquet"]
        for name in ("returns_list", "as_view", "as_parquet"):
            assert "Help:" in got[name], name
        assert temp_views(project) == []
