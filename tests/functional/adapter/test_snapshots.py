"""dbt-tests-adapter's snapshot suites on tablet tables, the default file_format of snapshots.

The suites' test methods run as they are (two are extended or made order-free, as noted).
Their set-up SQL is PostgreSQL's, run through ``project.run_sql``; :class:`OnTablets` translates
it into Spark SQL on tablet tables (the tables the suites create, update and delete from are
tablet tables, so those statements run on the engine as they would on Delta), and the snapshot
definitions lose their ``target.database`` (Spark has none). The snapshot tables themselves are
made by the snapshot materialization.

Timings on 2 shared cores at load ~11: the default classes ~4 min in all (Spark's start
included); ``TABLETS_SLOW=1`` adds the other ten classes, ~8 min more.
"""

from __future__ import annotations

import datetime
import hashlib
import os
import re

import pytest
from dbt.tests.adapter.simple_snapshot import fixtures as various
from dbt.tests.adapter.simple_snapshot import new_record_dbt_valid_to_current as nr_current
from dbt.tests.adapter.simple_snapshot import new_record_timestamp_mode as nr_timestamp
from dbt.tests.adapter.simple_snapshot.new_record_check_mode import BaseSnapshotNewRecordCheckMode
from dbt.tests.adapter.simple_snapshot.new_record_dbt_valid_to_current import (
    BaseSnapshotNewRecordDbtValidToCurrent,
)
from dbt.tests.adapter.simple_snapshot.new_record_timestamp_mode import (
    BaseSnapshotNewRecordTimestampMode,
)
from dbt.tests.adapter.simple_snapshot.test_ephemeral_snapshot_hard_deletes import (
    BaseSnapshotEphemeralHardDeletes,
    BaseSnapshotNewColumnSpecificCheckCols,
    BaseSnapshotNewColumnTimestampStrategy,
    BaseSnapshotNewColumnWithDeletes,
)
from dbt.tests.adapter.simple_snapshot.test_snapshot import BaseSimpleSnapshot, BaseSnapshotCheck
from dbt.tests.adapter.simple_snapshot.test_various_configs import (
    BaseSnapshotColumnNames,
    BaseSnapshotColumnNamesFromDbtProject,
    BaseSnapshotDbtValidToCurrent,
    BaseSnapshotInvalidColumnNames,
    BaseSnapshotMultiUniqueKey,
)
from dbt.tests.util import (
    check_relations_equal,
    get_connection,
    relation_from_name,
    run_dbt,
    run_dbt_and_capture,
    run_sql_with_adapter,
)

slow = pytest.mark.skipif(not os.environ.get("TABLETS_SLOW"), reason="opt-in (TABLETS_SLOW=1): more snapshot suites")

# --- the suites' PostgreSQL, as Spark SQL on tablet tables ------------------------------------

_CREATE_COLUMNS = re.compile(r"^(\s*create\s+table\s+[\w.{}`]+\s*\(.*\))\s*$", re.I | re.S)
_CREATE_AS = re.compile(r"^(\s*create\s+table\s+[\w.{}`]+)\s+as\b", re.I)
_ADD_COLUMN = re.compile(
    r"^\s*alter\s+table\s+(?P<table>[\w.`]+)\s+add\s+column\s+(?P<col>\w+)\s+(?P<type>\w+(?:\(\d+\))?)"
    r"(?:\s+default\s+(?P<default>.+?))?\s*$",
    re.I | re.S,
)


def spark_statements(sql: str) -> list[str]:
    """One PostgreSQL script of the suites as Spark SQL statements on tablet tables."""
    sql = sql.replace("{database}.", "")
    sql = re.sub(r"\bNone\.(?=\w)", "", sql)  # Spark has no database: `project.database` is None
    sql = re.sub(r"\b(?:TEXT|VARCHAR\(\d+\))", "STRING", sql, flags=re.I)
    sql = re.sub(r"\s+WITHOUT TIME ZONE", "", sql, flags=re.I)
    out: list[str] = []
    for part in sql.split(";"):
        body = "\n".join(ln for ln in part.splitlines() if not ln.strip().startswith("--")).strip()
        if not body:
            continue
        add = _ADD_COLUMN.match(body)
        if add:  # PostgreSQL fills the new column with its DEFAULT
            out.append(f"alter table {add['table']} add columns ({add['col']} {add['type']})")
            default = (add["default"] or "null").strip()
            if default.lower() != "null":
                out.append(f"update {add['table']} set {add['col']} = {default}")
            continue
        body = _CREATE_COLUMNS.sub(r"\1 using tablets", body)
        body = _CREATE_AS.sub(r"\1 using tablets as", body)
        out.append(body)
    return out


def no_database(text: str) -> str:
    return text.replace("{{target.database}}.", "")


class OnTablets:
    """The suites' tables are tablet tables and their SQL is Spark's."""

    @pytest.fixture(scope="class", autouse=True)
    def _spark_sql(self, project):
        run = project.run_sql

        def run_translated(sql, fetch=None):
            result = None
            for statement in spark_statements(sql):
                result = run(statement, fetch=fetch)
            return result

        project.run_sql = run_translated


def is_tablet_table(project, name: str) -> bool:
    with get_connection(project.adapter):
        return project.adapter.is_tablet_table(relation_from_name(project.adapter, name))


# --- default suite: the check and timestamp strategies, snapshot_meta_column_names,
# dbt_valid_to_current, hard_deletes new_record ----------------------------------------------


class TestSnapshotCheckTablets(OnTablets, BaseSnapshotCheck):
    def test_column_selection_is_reflected_in_snapshot(self, project):
        super().test_column_selection_is_reflected_in_snapshot(project)
        assert is_tablet_table(project, "snapshot")
        versions = self.get_snapshot_records(
            "id, email, dbt_valid_from, dbt_valid_to",
            "id between 6 and 15 order by id, dbt_valid_from",
        )
        assert len(versions) == 20
        for (i, old, _, closed_at), (j, new, opened_at, still_open) in zip(versions[::2], versions[1::2], strict=True):
            assert (i, old[:3], still_open) == (j, new, None)
            assert closed_at == opened_at  # one snapshot time: the MERGE read its source once


class TestSnapshotDbtValidToCurrentTablets(OnTablets, BaseSnapshotDbtValidToCurrent):
    @pytest.fixture(scope="class")
    def snapshots(self):
        return {"snapshot.sql": no_database(various.snapshot_actual_sql)}

    def test_valid_to_current(self, project):
        """The base test's checks, with rows found by their scd id: it reads them by position
        from a SELECT without ORDER BY (PostgreSQL's heap order), and a MERGE writes the new
        versions to new tablets."""
        current, closed = (
            datetime.datetime(2099, 12, 31),
            datetime.datetime(2016, 8, 20, 16, 44, 49),
        )
        old_10 = scd_id("10-Rachel|2016-08-20 15:44:49")
        new_10 = scd_id("10-Rachel|2016-08-20 16:44:49")
        for sql in (
            various.create_seed_sql,
            various.create_snapshot_expected_sql,
            various.seed_insert_sql,
            various.populate_snapshot_expected_valid_to_current_sql,
        ):
            project.run_sql(sql)
        assert len(run_dbt(["snapshot"])) == 1
        before = valid_to_by_scd_id(project)
        assert len(before) == 20 and set(before.values()) == {current}
        assert old_10 in before

        project.run_sql(various.invalidate_sql)
        project.run_sql(various.update_with_current_sql)
        assert len(run_dbt(["snapshot"])) == 1
        after = valid_to_by_scd_id(project)
        assert (after[old_10], after[new_10]) == (closed, current)
        assert sorted(after.values()).count(current) == 20  # 9 unchanged + 11 new versions
        check_relations_equal(project.adapter, ["snapshot_actual", "snapshot_expected"])


def scd_id(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()


def valid_to_by_scd_id(project) -> dict:
    sql = "select test_scd_id, test_valid_to from {schema}.snapshot_actual"
    return dict(run_sql_with_adapter(project.adapter, sql, "all"))


class TestSnapshotNewRecordDbtValidToCurrentTablets(OnTablets, BaseSnapshotNewRecordDbtValidToCurrent):
    @pytest.fixture(scope="class")
    def snapshots(self):
        return {"snapshot.sql": no_database(nr_current._snapshot_actual_sql)}


# --- opt-in: the rest of the suites ----------------------------------------------------------------


@slow
class TestSnapshotTablets(OnTablets, BaseSimpleSnapshot):
    pass


@slow
class TestSnapshotColumnNamesTablets(OnTablets, BaseSnapshotColumnNames):
    @pytest.fixture(scope="class")
    def snapshots(self):
        return {"snapshot.sql": no_database(various.snapshot_actual_sql)}


@slow
class TestSnapshotColumnNamesFromDbtProjectTablets(OnTablets, BaseSnapshotColumnNamesFromDbtProject):
    @pytest.fixture(scope="class")
    def snapshots(self):
        return {"snapshot.sql": no_database(various.snapshot_actual_sql)}


@slow
class TestSnapshotInvalidColumnNamesTablets(OnTablets, BaseSnapshotInvalidColumnNames):
    @pytest.fixture(scope="class")
    def snapshots(self):
        return {"snapshot.sql": no_database(various.snapshot_actual_sql)}


@slow
class TestSnapshotMultiUniqueKeyTablets(OnTablets, BaseSnapshotMultiUniqueKey):
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "seed.sql": no_database(various.model_seed_sql),
            "snapshots.yml": various.snapshots_multi_key_yml,
            "ref_snapshot.sql": various.ref_snapshot_sql,
        }


@slow
class TestSnapshotNewRecordTimestampModeTablets(OnTablets, BaseSnapshotNewRecordTimestampMode):
    @pytest.fixture(scope="class")
    def snapshots(self):
        return {"snapshot.sql": no_database(nr_timestamp._snapshot_actual_sql)}


@slow
class TestSnapshotNewRecordCheckModeTablets(OnTablets, BaseSnapshotNewRecordCheckMode):
    @pytest.fixture(scope="class")
    def snapshots(self):
        return {"snapshot.sql": no_database(nr_timestamp._snapshot_actual_sql)}


@slow
class TestSnapshotEphemeralHardDeletesTablets(OnTablets, BaseSnapshotEphemeralHardDeletes):
    pass


@slow
class TestSnapshotNewColumnTimestampStrategyTablets(OnTablets, BaseSnapshotNewColumnTimestampStrategy):
    pass


@slow
class TestSnapshotNewColumnSpecificCheckColsTablets(OnTablets, BaseSnapshotNewColumnSpecificCheckCols):
    pass


@slow
class TestSnapshotNewColumnWithDeletesTablets(OnTablets, BaseSnapshotNewColumnWithDeletes):
    pass


# --- what tablet tables add or refuse ----------------------------------------------------------

SNAPSHOT = """
{{% snapshot {name} %}}
{{{{ config(unique_key='id', strategy='check', check_cols='all'{extra}) }}}}
select * from values (3), (1), (2) as v(id)
{{% endsnapshot %}}
"""


class TestSnapshotConfigTablets:
    @pytest.fixture(scope="class")
    def snapshots(self):
        return {
            "bad.sql": SNAPSHOT.format(name="bad", extra=", partition_by='id', tblproperties={'key_columns': 'id'}"),
            "kept.sql": SNAPSHOT.format(name="kept", extra=""),
            "parquet.sql": SNAPSHOT.format(name="parquet", extra=", file_format='parquet'"),
            "sized.sql": SNAPSHOT.format(
                name="sized",
                extra=", target_tablet_rows=1, cluster_by='id', tblproperties={'owner': 'crm'}",
            ),
        }

    def test_table_options(self, project):
        _, log = run_dbt_and_capture(["snapshot", "--select", "sized"])
        assert "CREATE TABLE AS SELECT 3 (inserted 3" in log
        adapter = project.adapter
        with get_connection(adapter):
            stats = adapter.tablet_stats(relation_from_name(adapter, "sized"))
            metadata = adapter._database().table_of(f"{project.test_schema}.sized").snapshot().metadata
        assert (stats["rows"], stats["tablets"]) == (3, 3)  # one row per tablet
        assert dict(metadata.properties) == {"owner": "crm", "target_tablet_rows": "1"}
        assert not metadata.key_columns

    def test_every_problem_at_once_before_any_sql(self, project):
        _, log = run_dbt_and_capture(["snapshot", "--select", "bad"], expect_pass=False)
        assert "The snapshot config of model 'bad' has 2 problems (nothing was run)" in log
        assert "partition_by = 'id': tablet tables are not partitioned" in log
        assert "tblproperties.key_columns = 'id': a snapshot keeps several rows" in log
        tables = project.run_sql("show tables in {schema} like 'bad'", fetch="all")
        assert tables == [] and not is_tablet_table(project, "bad")

    def test_an_existing_table_of_another_format_is_kept(self, project):
        kept = relation_from_name(project.adapter, "kept")
        project.run_sql(f"create table {kept} using parquet as select 7 as id")
        _, log = run_dbt_and_capture(["snapshot", "--select", "kept"], expect_pass=False)
        assert "the existing table" in log and "is not a tablet table" in log
        assert project.run_sql(f"select id from {kept}", fetch="all") == [(7,)]

    def test_other_file_formats_are_dbt_sparks(self, project):
        _, log = run_dbt_and_capture(["snapshot", "--select", "parquet"], expect_pass=False)
        assert "Snapshot functionality requires file_format be set to" in log
