"""dbt-databricks' ``merge_with_schema_evolution`` parsed and rendered: the statement is
``MERGE WITH SCHEMA EVOLUTION`` whose default upsert names the model's new columns; a strategy
whose statement is no merge says so (the key, the value, what to do)."""

from __future__ import annotations

import pytest

from dbt.adapters.tablets.config import INCREMENTAL, MergeConfigError, parse_merge_config
from dbt.adapters.tablets.render import render_merge

pytestmark = pytest.mark.unit

T, S = "db.orders", "orders__dbt_tmp"


def test_the_upsert_becomes_merge_with_schema_evolution_naming_the_new_columns():
    cfg = parse_merge_config({"unique_key": "id", "merge_with_schema_evolution": True}, "orders")
    assert cfg.merge_with_schema_evolution
    sql = render_merge(cfg, T, S, ["id", "v"], ["id", "v", "Extra"])
    assert sql.startswith(f"MERGE WITH SCHEMA EVOLUTION INTO {T} AS t")
    assert "UPDATE SET `v` = s.`v`, `Extra` = s.`Extra`" in sql
    assert "INSERT (`id`, `v`, `Extra`) VALUES (s.`id`, s.`v`, s.`Extra`)" in sql


def test_off_by_default_and_the_new_column_left_out():
    cfg = parse_merge_config({"unique_key": "id"}, "orders", INCREMENTAL)
    sql = render_merge(cfg, T, S, ["id", "v"], ["id", "v", "extra"])
    assert sql.startswith(f"MERGE INTO {T}") and "extra" not in sql


@pytest.mark.parametrize(
    ("config", "statement"),
    [
        ({"incremental_strategy": "append"}, "append"),
        ({"incremental_strategy": "delete+insert", "unique_key": "id"}, "delete+insert"),
        ({"unique_key": "id", "on_conflict": "do_nothing"}, "INSERT ... ON CONFLICT"),
    ],
)
def test_other_statements_are_refused_with_the_fix(config, statement):
    with pytest.raises(MergeConfigError) as e:
        parse_merge_config({**config, "merge_with_schema_evolution": True}, "orders", INCREMENTAL)
    text = str(e.value)
    assert (
        "merge_with_schema_evolution" in text and statement in text and "on_schema_change: append_new_columns" in text
    )


def test_not_a_boolean():
    with pytest.raises(MergeConfigError, match="not a boolean"):
        parse_merge_config({"unique_key": "id", "merge_with_schema_evolution": "yes"}, "orders")
