"""The merge_tablets config: parsing, validation (every problem at once) and statement rendering.

Pure Python: no Spark, no dbt project. The statements rendered here are the ones the
materializations run (and write to target/run/)."""

from __future__ import annotations

import doctest
from types import SimpleNamespace

import pytest
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.tablets import config as config_module
from dbt.adapters.tablets import render as render_module
from dbt.adapters.tablets.config import INCREMENTAL, MergeConfigError, parse_merge_config
from dbt.adapters.tablets.render import render_merge

pytestmark = pytest.mark.unit

T = "analytics.m"
S = "m__dbt_tmp"


def render(config, tcols, scols=None, materialization="merge_tablets"):
    cfg = parse_merge_config(config, "m", materialization)
    return render_merge(cfg, T, S, tcols, scols if scols is not None else tcols)


def problems(config, materialization="merge_tablets"):
    with pytest.raises(MergeConfigError) as info:
        parse_merge_config(config, "m", materialization)
    return info.value


@pytest.mark.parametrize("module", [config_module, render_module])
def test_docstring_examples_run(module):
    result = doctest.testmod(module)
    assert result.attempted and not result.failed


# --- rendering ----------------------------------------------------------------------------------


def header(sql):
    """MERGE INTO / USING / ON."""
    return sql.splitlines()[:3]


def clauses(sql):
    """The WHEN clauses."""
    return sql.splitlines()[3:]


def test_unique_key_alone_is_the_classic_upsert():
    assert render({"unique_key": "id"}, ["id", "name", "qty"]) == (
        "MERGE INTO analytics.m AS t\n"
        "USING m__dbt_tmp AS s\n"
        "ON t.`id` = s.`id`\n"
        "WHEN MATCHED THEN UPDATE SET `name` = s.`name`, `qty` = s.`qty`\n"
        "WHEN NOT MATCHED THEN INSERT (`id`, `name`, `qty`) VALUES (s.`id`, s.`name`, s.`qty`)"
    )


def test_composite_and_null_safe_keys():
    sql = render({"unique_key": ["id", "day"], "null_safe_keys": True}, ["id", "day", "v"])
    assert "ON t.`id` <=> s.`id` AND t.`day` <=> s.`day`" in sql
    assert "UPDATE SET `v` = s.`v`" in sql


def test_key_only_table_upsert_has_no_update_clause():
    sql = render({"unique_key": "id"}, ["id"])
    assert "WHEN MATCHED" not in sql
    assert "WHEN NOT MATCHED THEN INSERT (`id`) VALUES (s.`id`)" in sql


def test_stock_example_from_the_seed_renders_each_clause_in_order():
    sql = render(
        {
            "unique_key": "item",
            "when_matched": [
                {"condition": "t.qty_on_hand - s.qty_sold = 0", "action": "delete"},
                {"action": "update", "set": {"qty_on_hand": "t.qty_on_hand - s.qty_sold"}},
            ],
            "when_not_matched": [{"action": "insert", "values": {"item": "s.item", "qty_on_hand": "s.qty_sold"}}],
        },
        ["item", "qty_on_hand"],
        ["item", "qty_sold"],
    )
    assert clauses(sql) == [
        "WHEN MATCHED AND (t.qty_on_hand - s.qty_sold = 0) THEN DELETE",
        "WHEN MATCHED THEN UPDATE SET `qty_on_hand` = t.qty_on_hand - s.qty_sold",
        "WHEN NOT MATCHED THEN INSERT (`item`, `qty_on_hand`) VALUES (s.item, s.qty_sold)",
    ]


def test_values_as_a_list_fill_columns_in_table_order():
    sql = render(
        {
            "unique_key": "a",
            "when_not_matched": [{"condition": "s.b < 11", "action": "insert", "values": ["s.a", "100 * s.b"]}],
        },
        ["a", "b"],
    )
    assert clauses(sql) == ["WHEN NOT MATCHED AND (s.b < 11) THEN INSERT (`a`, `b`) VALUES (s.a, 100 * s.b)"]


def test_insert_without_values_inserts_the_columns_the_source_has():
    sql = render(
        {"unique_key": "id", "when_not_matched": [{"action": "insert"}]},
        ["id", "name", "added"],
        ["id", "name", "extra"],
    )
    assert sql.endswith("WHEN NOT MATCHED THEN INSERT (`id`, `name`) VALUES (s.`id`, s.`name`)")


def test_do_nothing_clause_and_string_shorthand():
    sql = render(
        {
            "unique_key": "id",
            "when_matched": ["do_nothing"],
            "when_not_matched": [{"action": "do nothing"}],
        },
        ["id", "v"],
    )
    assert clauses(sql) == [
        "WHEN MATCHED THEN DO NOTHING",
        "WHEN NOT MATCHED THEN DO NOTHING",
    ]


def test_scalar_set_values_become_sql_literals():
    sql = render(
        {
            "unique_key": "id",
            "when_not_matched_by_source": [{"action": "update", "set": {"is_deleted": True, "note": None, "n": 3}}],
        },
        ["id", "is_deleted", "note", "n"],
    )
    assert sql.endswith("WHEN NOT MATCHED BY SOURCE THEN UPDATE SET `is_deleted` = true, `note` = NULL, `n` = 3")


def test_incremental_predicates_narrow_on_and_scope_by_source_clauses():
    sql = render(
        {
            "unique_key": "id",
            "incremental_predicates": ["t.day >= '2024-01-01'"],
            "when_matched": [{"action": "update"}],
            "when_not_matched_by_source": [{"condition": "not t.is_deleted", "action": "delete"}],
        },
        ["id", "day", "is_deleted"],
    )
    lines = sql.splitlines()
    assert lines[2] == "ON t.`id` = s.`id` AND (t.day >= '2024-01-01')"
    assert lines[4] == "WHEN NOT MATCHED BY SOURCE AND (t.day >= '2024-01-01') AND (not t.is_deleted) THEN DELETE"


def test_merge_update_columns_and_merge_exclude_columns():
    cols = ["id", "a", "b", "c"]
    assert "UPDATE SET `b` = s.`b`\n" in render({"unique_key": "id", "merge_update_columns": ["b"]}, cols)
    assert "UPDATE SET `a` = s.`a`, `c` = s.`c`\n" in render({"unique_key": "id", "merge_exclude_columns": "b"}, cols)


def test_update_with_no_columns_left_is_do_nothing():
    sql = render(
        {
            "unique_key": "id",
            "when_matched": [{"action": "update"}],
            "merge_exclude_columns": ["v"],
        },
        ["id", "v"],
    )
    assert "WHEN MATCHED THEN DO NOTHING" in sql


def test_custom_aliases():
    sql = render({"unique_key": "id", "source_alias": "src", "target_alias": "tgt"}, ["id", "v"])
    assert header(sql) == [
        "MERGE INTO analytics.m AS tgt",
        "USING m__dbt_tmp AS src",
        "ON tgt.`id` = src.`id`",
    ]


def test_columns_match_case_insensitively_and_keep_the_table_spelling():
    sql = render({"unique_key": "ID", "merge_update_columns": ["NAME"]}, ["Id", "Name"], ["id", "name"])
    assert "ON t.`Id` = s.`Id`" in sql
    assert "UPDATE SET `Name` = s.`name`" in sql


def test_on_conflict_do_nothing_and_do_update():
    cols = ["id", "value"]
    assert render({"unique_key": "id", "on_conflict": "do_nothing"}, cols) == (
        "INSERT INTO analytics.m (`id`, `value`)\nSELECT `id`, `value` FROM m__dbt_tmp\nON CONFLICT (`id`) DO NOTHING"
    )
    assert render({"unique_key": "id", "on_conflict": "do_update"}, cols).endswith(
        "ON CONFLICT (`id`) DO UPDATE SET `value` = excluded.`value`"
    )
    custom = {
        "unique_key": "id",
        "on_conflict": {"action": "do_update", "set": {"value": "excluded.value || '!'"}},
    }
    assert render(custom, cols).endswith("ON CONFLICT (`id`) DO UPDATE SET `value` = excluded.value || '!'")
    newer = {
        "unique_key": "id",
        "on_conflict": {"action": "do_update", "condition": "excluded.value > value"},
    }
    assert render(newer, cols).endswith("DO UPDATE SET `value` = excluded.`value` WHERE excluded.value > value")


def test_incremental_uses_dbt_aliases_and_standard_keys():
    sql = render(
        {
            "unique_key": ["id"],
            "incremental_strategy": "merge",
            "incremental_predicates": ["DBT_INTERNAL_DEST.id != 2"],
        },
        ["id", "msg"],
        materialization=INCREMENTAL,
    )
    assert header(sql) == [
        "MERGE INTO analytics.m AS DBT_INTERNAL_DEST",
        "USING m__dbt_tmp AS DBT_INTERNAL_SOURCE",
        "ON DBT_INTERNAL_DEST.`id` = DBT_INTERNAL_SOURCE.`id` AND (DBT_INTERNAL_DEST.id != 2)",
    ]


def test_dbt_databricks_merge_keys_shape_the_upsert():
    sql = render(
        {
            "unique_key": "id",
            "matched_condition": "s.ts > t.ts",
            "skip_not_matched_step": True,
            "not_matched_by_source_action": "update",
            "not_matched_by_source_condition": "not t.gone",
            "not_matched_by_source_set": {"gone": True},
        },
        ["id", "ts", "gone"],
        ["id", "ts"],
    )
    assert clauses(sql) == [
        "WHEN MATCHED AND (s.ts > t.ts) THEN UPDATE SET `ts` = s.`ts`",
        "WHEN NOT MATCHED BY SOURCE AND (not t.gone) THEN UPDATE SET `gone` = true",
    ]
    sql = render(
        {"unique_key": "id", "not_matched_by_source_action": "delete"},
        ["id", "v"],
        materialization=INCREMENTAL,
    )
    assert sql.endswith("WHEN NOT MATCHED BY SOURCE THEN DELETE")
    assert "WHEN MATCHED THEN UPDATE SET `v` = DBT_INTERNAL_SOURCE.`v`" in sql


@pytest.mark.parametrize("key", [None, "", []])
def test_incremental_without_a_key_appends(key):
    sql = render(
        {"unique_key": key, "incremental_strategy": "merge"},
        ["id", "v"],
        ["v", "id", "new"],
        materialization=INCREMENTAL,
    )
    assert sql == "INSERT INTO analytics.m (`id`, `v`)\nSELECT `id`, `v` FROM m__dbt_tmp"


def test_incremental_strategies_default_and_overwrite():
    assert parse_merge_config({"unique_key": "id"}, "m", INCREMENTAL).incremental_strategy == "merge"
    assert parse_merge_config({}, "m", INCREMENTAL).incremental_strategy == "append"
    sql = render({"incremental_strategy": "insert_overwrite"}, ["id"], materialization=INCREMENTAL)
    assert sql.startswith("INSERT OVERWRITE TABLE analytics.m (`id`)")


def test_duplicate_keys_are_deduplicated():
    assert parse_merge_config({"unique_key": ["id", "id"]}, "m").unique_key == ("id",)


def test_engine_options_and_table_properties():
    cfg = parse_merge_config(
        {
            "unique_key": ["id", "day"],
            "skip_unchanged": False,
            "target_tablet_rows": 5000,
            "cluster_by": "day",
            "prune_tablets": False,
            "tblproperties": {"owner": "data"},
        },
        "m",
    )
    opts = cfg.statement_options()
    assert (
        opts["skip_unchanged"],
        opts["target_tablet_rows"],
        opts["cluster_by"],
        opts["prune"],
    ) == (False, 5000, ("day",), False)
    assert ("dbt_model", "m") in opts["parameters"]
    assert cfg.table_properties() == {
        "owner": "data",
        "key_columns": "id,day",
        "target_tablet_rows": "5000",
        "cluster_by": "day",
        "auto_compact": "true",
    }
    # auto-compaction is on for merge_tablets unless the model's tblproperties say otherwise
    off = parse_merge_config({"unique_key": "id", "tblproperties": {"auto_compact": "false"}}, "m")
    assert off.table_properties()["auto_compact"] == "false"
    # dbt's incremental contract: a bad unique_key fails on the first merge, not on the create
    assert "key_columns" not in parse_merge_config({"unique_key": "id"}, "m", INCREMENTAL).table_properties()
    assert "auto_compact" not in parse_merge_config({"unique_key": "id"}, "m", INCREMENTAL).table_properties()


def test_defaults():
    cfg = parse_merge_config({"unique_key": "id"}, "m")
    assert (
        cfg.source_alias,
        cfg.target_alias,
        cfg.skip_unchanged,
        cfg.on_schema_change,
        cfg.null_safe_keys,
    ) == (
        "s",
        "t",
        True,
        "ignore",
        False,
    )
    assert cfg.default_upsert and not cfg.clauses


def test_config_is_frozen():
    cfg = parse_merge_config({"unique_key": "id"}, "m")
    with pytest.raises(AttributeError):
        cfg.unique_key = ("x",)  # type: ignore[misc]


# --- validation: every problem at once ------------------------------------------------------------


def test_every_problem_is_reported_at_once_with_key_value_allowed_and_fix():
    err = problems(
        {
            "unique_key": 42,
            "when_matched": [{"action": "upsert"}],
            "when_not_matched": [{"action": "insert", "values": 7}],
            "on_schema_change": "evolve",
            "skip_unchanged": "yes",
            "merge_update_columns": ["a"],
            "merge_exclude_columns": ["b"],
            "target_tablet_rows": 0,
        }
    )
    assert isinstance(err, DbtRuntimeError)
    keys = [p.key for p in err.problems]
    assert keys == [
        "unique_key",
        "when_matched[0].action",
        "when_not_matched[0].values",
        "merge_update_columns",
        "skip_unchanged",
        "on_schema_change",
        "target_tablet_rows",
    ]
    text = str(err)
    assert "model 'm' has 7 problems" in text
    assert "when_matched[0].action = 'upsert': not an action of WHEN MATCHED" in text
    assert "allowed: update, delete, do_nothing" in text
    assert (
        "on_schema_change = 'evolve'" in text and "allowed: ignore, fail, append_new_columns, sync_all_columns" in text
    )
    assert text.count("fix: ") == 7


@pytest.mark.parametrize(
    ("config", "key", "fragment"),
    [
        ({}, "unique_key", "needs the key"),
        ({"unique_key": ""}, "unique_key", "is empty"),
        ({"unique_key": ["id", 3]}, "unique_key", "not a column name"),
        (
            {"unique_key": "id", "when_matched": "explode"},
            "when_matched[0].action",
            "not an action of WHEN MATCHED",
        ),
        (
            {"unique_key": "id", "when_matched": [{"set": {"a": "1"}}]},
            "when_matched[0].action",
            "missing",
        ),
        (
            {"unique_key": "id", "when_not_matched": [{"action": "update"}]},
            "when_not_matched[0].action",
            "not an action of WHEN NOT MATCHED",
        ),
        (
            {"unique_key": "id", "when_not_matched_by_source": [{"action": "insert"}]},
            "when_not_matched_by_source[0].action",
            "not an action",
        ),
        (
            {"unique_key": "id", "when_not_matched_by_source": [{"action": "update"}]},
            "when_not_matched_by_source[0].set",
            "needs `set`",
        ),
        (
            {"unique_key": "id", "when_matched": [{"action": "delete", "set": {"a": "1"}}]},
            "when_matched[0].set",
            "goes with action update",
        ),
        (
            {"unique_key": "id", "when_matched": [{"action": "update", "values": ["1"]}]},
            "when_matched[0].values",
            "goes with action insert",
        ),
        (
            {"unique_key": "id", "when_matched": [{"action": "update", "set": {}}]},
            "when_matched[0].set",
            "not a map",
        ),
        (
            {"unique_key": "id", "when_matched": [{"action": "update", "set": {"a": ""}}]},
            "when_matched[0].set.a",
            "not a column name mapped",
        ),
        (
            {"unique_key": "id", "when_matched": [{"action": "delete", "condition": ""}]},
            "when_matched[0].condition",
            "not a SQL boolean",
        ),
        (
            {"unique_key": "id", "when_matched": [{"action": "delete", "conditon": "x"}]},
            "when_matched[0].conditon",
            "not a clause key",
        ),
        (
            {"unique_key": "id", "when_matched": [{"action": "delete"}, {"action": "update"}]},
            "when_matched[1]",
            "unreachable",
        ),
        ({"unique_key": "id", "when_matched": 5}, "when_matched", "not a list of clauses"),
        (
            {
                "unique_key": "id",
                "when_matched": [],
            },
            "when_matched",
            "not a list of clauses",
        ),
        (
            {"unique_key": "id", "when_not_matched": [{"action": "insert", "values": []}]},
            "when_not_matched[0].values",
            "one SQL expression per target column",
        ),
        ({"unique_key": "id", "on_conflict": "merge"}, "on_conflict", "not an ON CONFLICT action"),
        (
            {"unique_key": "id", "on_conflict": {"action": "do_nothing", "set": {"a": "1"}}},
            "on_conflict.set",
            "goes with do_update",
        ),
        (
            {"unique_key": "id", "on_conflict": {"action": "do_update", "where": "x"}},
            "on_conflict.where",
            "not an on_conflict key",
        ),
        (
            {"unique_key": "id", "on_conflict": {"action": "do_nothing", "condition": "x"}},
            "on_conflict.condition",
            "goes with do_update",
        ),
        (
            {"unique_key": "id", "on_conflict": {"action": "do_update", "condition": 5}},
            "on_conflict.condition",
            "not a SQL boolean",
        ),
        (
            {"unique_key": "id", "on_conflict": "do_nothing", "when_matched": ["delete"]},
            "on_conflict",
            "pick one",
        ),
        (
            {
                "unique_key": "id",
                "on_conflict": "do_nothing",
                "incremental_predicates": ["t.a > 1"],
            },
            "incremental_predicates",
            "no ON condition",
        ),
        (
            {"unique_key": "id", "on_conflict": "do_nothing", "null_safe_keys": True},
            "null_safe_keys",
            "matches keys by equality",
        ),
        (
            {"unique_key": "id", "merge_update_columns": ["a"], "merge_exclude_columns": ["b"]},
            "merge_update_columns",
            "mutually exclusive",
        ),
        (
            {"unique_key": "id", "merge_update_columns": 3},
            "merge_update_columns",
            "not a column name",
        ),
        ({"unique_key": "id", "source_alias": "1s"}, "source_alias", "not a plain SQL identifier"),
        (
            {"unique_key": "id", "target_alias": "excluded"},
            "target_alias",
            "not a plain SQL identifier",
        ),
        (
            {"unique_key": "id", "source_alias": "x", "target_alias": "X"},
            "source_alias",
            "are the same",
        ),
        ({"unique_key": "id", "skip_unchanged": "false"}, "skip_unchanged", "not a boolean"),
        ({"unique_key": "id", "null_safe_keys": 1}, "null_safe_keys", "not a boolean"),
        ({"unique_key": "id", "prune_tablets": "no"}, "prune_tablets", "not a boolean"),
        (
            {"unique_key": "id", "incremental_predicates": [""]},
            "incremental_predicates",
            "not a SQL predicate",
        ),
        (
            {"unique_key": "id", "incremental_predicates": ["a"], "predicates": ["b"]},
            "predicates",
            "given twice",
        ),
        (
            {"unique_key": "id", "on_schema_change": "append"},
            "on_schema_change",
            "not an on_schema_change",
        ),
        (
            {"unique_key": "id", "target_tablet_rows": "big"},
            "target_tablet_rows",
            "positive whole number",
        ),
        (
            {"unique_key": "id", "target_tablet_rows": True},
            "target_tablet_rows",
            "positive whole number",
        ),
        ({"unique_key": "id", "cluster_by": [1]}, "cluster_by", "not a column name"),
        (
            {"unique_key": "id", "file_format": "delta"},
            "file_format",
            "always stores a tablet table",
        ),
        ({"unique_key": "id", "partition_by": "day"}, "partition_by", "not partitioned"),
        ({"unique_key": "id", "tblproperties": ["a"]}, "tblproperties", "not a map"),
        (
            {"unique_key": "id", "when_match": ["delete"]},
            "when_match",
            "did you mean `when_matched`",
        ),
        (
            {"unique_key": "id", "merge_exclude_column": ["a"]},
            "merge_exclude_column",
            "did you mean `merge_exclude_columns`",
        ),
        ({"unique_key": "id", "when_deleted": []}, "when_deleted", "not a dbt-tablets config key"),
        (
            {"unique_key": "id", "not_matched_by_source_action": "insert"},
            "not_matched_by_source_action",
            "not an action",
        ),
        (
            {"unique_key": "id", "not_matched_by_source_action": "update"},
            "not_matched_by_source_set",
            "not a map",
        ),
        (
            {"unique_key": "id", "skip_matched_step": True, "skip_not_matched_step": True},
            "skip_matched_step",
            "no clause",
        ),
        ({"unique_key": "id", "skip_matched_step": "yes"}, "skip_matched_step", "not a boolean"),
        ({"unique_key": "id", "matched_condition": ""}, "matched_condition", "not a SQL boolean"),
        (
            {"unique_key": "id", "when_not_matched": ["insert"], "skip_matched_step": True},
            "when_not_matched",
            "same statement twice",
        ),
    ],
)
def test_each_validation_error(config, key, fragment):
    err = problems(config)
    found = [p for p in err.problems if p.key == key]
    assert found, f"no problem for {key}: {err}"
    text = found[0].render()
    assert fragment in text
    assert "allowed: " in text and "fix: " in text


def test_incremental_validation():
    err = problems({"incremental_strategy": "upsert", "on_conflict": "do_nothing"}, INCREMENTAL)
    assert [p.key for p in err.problems] == ["incremental_strategy", "on_conflict"]
    assert "allowed: merge, append, insert_overwrite, replace_where, delete+insert, microbatch" in str(err)
    # file_format is the switch of the incremental materialization, not a problem there
    assert parse_merge_config({"unique_key": "id", "file_format": "tablets"}, "m", INCREMENTAL).unique_key == ("id",)


def test_unrelated_config_keys_are_not_reported():
    cfg = parse_merge_config(
        {
            "unique_key": "id",
            "materialized": "merge_tablets",
            "tags": [],
            "meta": {},
            "post-hook": [],
            "my_team_owner": "x",
            "on_configuration_change": "apply",
            "persist_docs": {},
            "grants": {},
            "contract": {"enforced": False},
        },
        "m",
    )
    assert cfg.unique_key == ("id",)


# --- validation against the columns -----------------------------------------------------------


def column_problems(config, tcols, scols=None):
    cfg = parse_merge_config(config, "m", "merge_tablets")
    with pytest.raises(MergeConfigError) as info:
        render_merge(cfg, T, S, tcols, scols if scols is not None else tcols)
    return info.value


def test_a_key_missing_from_the_columns_names_the_column():
    err = column_problems({"unique_key": ["state", "thisisnotacolumn"]}, ["state", "city"])
    assert "thisisnotacolumn is not a column of the existing table" in str(err)
    assert "allowed: state, city" in str(err)


def test_column_problems_are_reported_at_once():
    err = column_problems(
        {
            "unique_key": "id",
            "merge_update_columns": ["nope"],
            "cluster_by": ["zone"],
            "when_matched": [{"action": "update", "set": {"ghost": "1"}}],
            "when_not_matched": [{"action": "insert", "values": ["1", "2", "3"]}],
        },
        ["id", "v"],
    )
    assert [p.key for p in err.problems] == [
        "merge_update_columns",
        "cluster_by",
        "merge_update_columns",
        "when_matched[0].set",
        "when_not_matched[0].values",
    ]


def test_source_without_any_target_column():
    err = column_problems({"unique_key": "id"}, ["id", "v"], ["other"])
    assert any(p.key == "(model SQL)" for p in err.problems)


# --- delete+insert, microbatch, insert_overwrite with replace_where: one MERGE each ---------------


def test_delete_insert_is_one_merge_deleting_each_key_and_inserting_every_row():
    sql = render(
        {"incremental_strategy": "delete+insert", "unique_key": ["id", "day"]},
        ["id", "day", "v"],
        ["v", "day", "id", "extra"],
        materialization=INCREMENTAL,
    )
    assert sql == (
        "MERGE INTO analytics.m AS DBT_INTERNAL_DEST\n"
        "USING (SELECT `id`, `day`, `v`, TRUE AS `dbt_tablets_new_row` FROM m__dbt_tmp\n"
        "  UNION ALL SELECT DISTINCT `id`, `day`, NULL AS `v`, FALSE AS `dbt_tablets_new_row`"
        " FROM m__dbt_tmp) AS DBT_INTERNAL_SOURCE\n"
        "ON DBT_INTERNAL_DEST.`id` = DBT_INTERNAL_SOURCE.`id`"
        " AND DBT_INTERNAL_DEST.`day` = DBT_INTERNAL_SOURCE.`day`"
        " AND NOT DBT_INTERNAL_SOURCE.`dbt_tablets_new_row`\n"
        "WHEN MATCHED THEN DELETE\n"
        "WHEN NOT MATCHED AND DBT_INTERNAL_SOURCE.`dbt_tablets_new_row` THEN INSERT"
        " (`id`, `day`, `v`) VALUES (DBT_INTERNAL_SOURCE.`id`, DBT_INTERNAL_SOURCE.`day`,"
        " DBT_INTERNAL_SOURCE.`v`)"
    )


def test_delete_insert_predicates_narrow_the_delete_on_the_target_side():
    sql = render(
        {
            "incremental_strategy": "delete+insert",
            "unique_key": "id",
            "incremental_predicates": ["id != 2", "DBT_INTERNAL_DEST.v > (select 1)"],
        },
        ["id", "v"],
        materialization=INCREMENTAL,
    )
    on = sql.splitlines()[3]
    assert on.endswith("(DBT_INTERNAL_DEST.id <> 2) AND (DBT_INTERNAL_DEST.v > (SELECT 1))")


def test_delete_insert_without_a_key_appends_as_in_dbt_core():
    sql = render({"incremental_strategy": "delete+insert"}, ["id"], materialization=INCREMENTAL)
    assert sql == "INSERT INTO analytics.m (`id`)\nSELECT `id` FROM m__dbt_tmp"


def test_delete_insert_refuses_its_reserved_column():
    cfg = parse_merge_config({"incremental_strategy": "delete+insert", "unique_key": "id"}, "m", INCREMENTAL)
    with pytest.raises(MergeConfigError, match="dbt_tablets_new_row is reserved"):
        render_merge(cfg, T, S, ["id", "dbt_tablets_new_row"], ["id", "dbt_tablets_new_row"])


def test_replace_where_is_one_merge_on_false():
    sql = render(
        {"incremental_strategy": "insert_overwrite", "replace_where": "day >= '2024-01-02'"},
        ["id", "day"],
        materialization=INCREMENTAL,
    )
    assert sql.splitlines() == [
        "MERGE INTO analytics.m AS DBT_INTERNAL_DEST",
        "USING m__dbt_tmp AS DBT_INTERNAL_SOURCE",
        "ON FALSE",
        "WHEN NOT MATCHED BY SOURCE AND (day >= '2024-01-02') THEN DELETE",
        "WHEN NOT MATCHED AND NOT COALESCE((day >= '2024-01-02'), FALSE) THEN INSERT (`id`)"
        " VALUES (raise_error('dbt-tablets: model m: a new row is outside replace_where"
        ' (day >= "2024-01-02")\'))',
        "WHEN NOT MATCHED THEN INSERT (`id`, `day`) VALUES (DBT_INTERNAL_SOURCE.`id`, DBT_INTERNAL_SOURCE.`day`)",
    ]


def test_dbt_databricks_replace_where_strategy_is_insert_overwrite_with_its_predicates():
    config = {"incremental_strategy": "replace_where", "incremental_predicates": ["day >= '2024-01-02'", "k = 1"]}
    cfg = parse_merge_config(config, "m", INCREMENTAL)
    assert (cfg.incremental_strategy, cfg.replace_where) == ("insert_overwrite", "(day >= '2024-01-02') AND (k = 1)")
    assert cfg.incremental_predicates == ()
    sql = render(config, ["id", "day", "k"], materialization=INCREMENTAL)
    assert "WHEN NOT MATCHED BY SOURCE AND ((day >= '2024-01-02') AND (k = 1)) THEN DELETE" in sql
    with pytest.raises(MergeConfigError, match="replace_where replaces the rows these predicates hold for"):
        parse_merge_config({"incremental_strategy": "replace_where"}, "m", INCREMENTAL)
    with pytest.raises(MergeConfigError, match="takes its predicate from incremental_predicates"):
        parse_merge_config({**config, "replace_where": "x > 1"}, "m", INCREMENTAL)


def test_microbatch_replaces_the_batch_window_dbt_core_filters_inputs_with():
    from datetime import UTC, datetime

    config = {
        "incremental_strategy": "microbatch",
        "unique_key": "id",  # dbt-tests-adapter sets it; the window, not the key, is replaced
        "event_time": "event_time",
        "batch_size": "day",
        "begin": datetime(2020, 1, 1),
        "__dbt_internal_microbatch_event_time_start": datetime(2020, 1, 2, tzinfo=UTC),
        "__dbt_internal_microbatch_event_time_end": "2020-01-03T00:00:00+00:00",
    }
    cfg = parse_merge_config(config, "m", INCREMENTAL)
    window = "event_time >= '2020-01-02 00:00:00+00:00' AND event_time < '2020-01-03 00:00:00+00:00'"
    assert cfg.replace_where == window
    sql = render_merge(cfg, T, S, ["id", "event_time"], ["id", "event_time"])
    assert f"WHEN NOT MATCHED BY SOURCE AND ({window}) THEN DELETE" in sql
    assert "a new row is outside the batch event_time window" in sql
    # before dbt sets a batch (parsing, the first batch that creates the table): no window
    del config["__dbt_internal_microbatch_event_time_end"]
    cfg = parse_merge_config(config, "m", INCREMENTAL)
    assert cfg.replace_where is None
    with pytest.raises(MergeConfigError, match="no batch window"):
        render_merge(cfg, T, S, ["id", "event_time"], ["id", "event_time"])


@pytest.mark.parametrize(
    ("config", "key", "fragment"),
    [
        ({"incremental_strategy": "microbatch"}, "event_time", "needs the column"),
        (
            {"incremental_strategy": "merge", "unique_key": "id", "replace_where": "x > 1"},
            "replace_where",
            "replace_where narrows insert_overwrite, not merge",
        ),
        (
            {"incremental_strategy": "insert_overwrite", "replace_where": " "},
            "replace_where",
            "not a SQL predicate",
        ),
        (
            {
                "incremental_strategy": "delete+insert",
                "unique_key": "id",
                "when_matched": [{"action": "delete"}],
            },
            "when_matched",
            "delete+insert does not read them",
        ),
        (
            {
                "incremental_strategy": "microbatch",
                "event_time": "ts",
                "__dbt_internal_microbatch_event_time_start": "yesterday",
                "__dbt_internal_microbatch_event_time_end": "2020-01-03",
            },
            "__dbt_internal_microbatch_event_time_start",
            "not a timestamp",
        ),
    ],
)
def test_strategy_validation_errors(config, key, fragment):
    err = problems(config, INCREMENTAL)
    found = [p for p in err.problems if p.key == key]
    assert found, f"no problem for {key}: {err}"
    assert fragment in found[0].render()


def test_a_models_statement_options_are_a_value_in_the_place_of_dbts_bindings():
    """A model's statement runs with its options handed over as a value (``run_statement``
    through dbt's ``add_query``): the engine's options, the ANSI mode beside them, the SQL as
    written; anything else bound is dbt-spark's."""
    from dbt.adapters.tablets.impl import statement_options
    from dbt.adapters.tablets.session import StatementOptions, TabletsConnectionWrapper

    cfg = parse_merge_config({"unique_key": "id", "skip_unchanged": False, "ansi": False}, "m")
    options = statement_options(cfg)
    engine = dict(options.engine)
    assert options.ansi is False and "ansi" not in engine and engine["skip_unchanged"] is False
    assert options.parameters == (("dbt_model", "m"), ("dbt_materialization", "merge_tablets"))

    ran = []

    class Cursor:
        def run(self, sql, opts):
            ran.append((sql, opts))

        def execute(self, sql, *bindings):
            ran.append((sql, bindings))

    wrapper = TabletsConnectionWrapper(SimpleNamespace(cursor=Cursor))
    wrapper.cursor().execute("/* dbt */ MERGE INTO t USING s ON t.id = s.id;", options)
    wrapper.execute("INSERT INTO t VALUES (%s)", [None])
    assert ran == [("/* dbt */ MERGE INTO t USING s ON t.id = s.id", options), ("INSERT INTO t VALUES (%s)", ("NULL",))]
    assert StatementOptions().parameters == ()


def test_only_commands_that_query_start_the_session_early():
    from types import SimpleNamespace

    from dbt.adapters.tablets.connections import _connects

    for which in ("run", "build", "seed", "snapshot", "test", "show", "compile", "generate", "retry", "debug"):
        assert _connects(SimpleNamespace(WHICH=which)), which
    for which in ("parse", "list", "ls", "deps", "serve", "clean", "init", None):
        assert not _connects(SimpleNamespace(WHICH=which)), which
