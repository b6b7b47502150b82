"""dbt-databricks keys on tablet tables (no JVM): liquid_clustered_by is cluster_by; the keys a
tablet table cannot honour make one warning per model naming each, why, and what to do."""

import pytest

from dbt.adapters.tablets.config import (
    DATABRICKS_IGNORED,
    MergeConfigError,
    config_warnings,
    parse_merge_config,
    parse_table_config,
)
from dbt.adapters.tablets.snapshot import parse_snapshot_config

pytestmark = pytest.mark.unit


def test_liquid_clustered_by_is_cluster_by():
    cfg = parse_merge_config({"unique_key": "id", "liquid_clustered_by": ["day", "id"]}, "orders")
    assert cfg.cluster_by == ("day", "id")
    assert cfg.table_properties()["cluster_by"] == "day,id"
    assert parse_snapshot_config({"liquid_clustered_by": "id"}, "snap").cluster_by == ("id",)
    assert parse_table_config({"liquid_clustered_by": "id"}, "t").table_properties() == {"cluster_by": "id"}
    (warning,) = config_warnings({"liquid_clustered_by": ["day", "id"]}, "orders")
    assert warning.startswith(
        "Model 'orders': liquid_clustered_by = ['day', 'id'] (Databricks' liquid clustering) is cluster_by"
    )
    assert "Help: name the key cluster_by" in warning


def test_liquid_clustered_by_with_cluster_by_is_an_error():
    with pytest.raises(MergeConfigError) as e:
        parse_merge_config({"unique_key": "id", "liquid_clustered_by": "a", "cluster_by": "b"}, "orders")
    assert "liquid_clustered_by = 'a': cluster_by is set too" in str(e.value)
    assert config_warnings({"liquid_clustered_by": "a", "cluster_by": "b"}, "orders") == []


def test_ignored_keys_make_one_warning_naming_each():
    config = {"zorder": ["id"], "databricks_tags": {"team": "crm"}, "auto_liquid_cluster": False, "unique_key": "id"}
    (warning,) = config_warnings(config, "orders")
    assert warning.splitlines() == [
        "Model 'orders': ignored, as a tablet table cannot honour these dbt-databricks settings:",
        "  - zorder = ['id']: Z-ordering is Delta's OPTIMIZE ... ZORDER BY",
        "      fix: set cluster_by: new tablets are sorted by it and merges skip tablets by its ranges",
        "  - databricks_tags = {'team': 'crm'}: they are Unity Catalog tags, which Spark's catalog does not have",
        "      fix: record them as tblproperties",
    ]
    # the model still runs: they are known keys, not typos
    assert parse_merge_config(config, "orders").unique_key == ("id",)


@pytest.mark.parametrize("key", sorted(DATABRICKS_IGNORED))
def test_every_ignored_key_is_named(key):
    (warning,) = config_warnings({key: True}, "m")
    assert f"  - {key} = True: " in warning


def test_nothing_to_say_without_them():
    assert config_warnings({"unique_key": "id", "cluster_by": "id", "auto_liquid_cluster": False}, "m") == []
