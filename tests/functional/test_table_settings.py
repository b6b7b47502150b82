"""Table settings in real dbt runs: tblproperties shown by SHOW TBLPROPERTIES and DESCRIBE
EXTENDED, dbt-databricks' liquid_clustered_by honoured as cluster_by (also on the table
materialization), and the dbt-databricks keys a tablet table cannot honour named in one warning
per model (a microbatch model's batches included)."""

from __future__ import annotations

import pytest
from dbt.tests.adapter.incremental.test_incremental_microbatch import _input_model_sql
from dbt.tests.util import patch_microbatch_end_time, run_dbt_and_capture

ORDERS = """
{{ config(
    materialized='merge_tablets',
    unique_key='id',
    liquid_clustered_by=['day'],
    zorder=['id'],
    databricks_tags={'team': 'crm'},
    tblproperties={'team': 'crm', 'purpose': "orders' daily"},
) }}
select 1 as id, date'2024-01-02' as day union all select 2 as id, date'2024-01-01' as day
"""
DAILY = """
{{ config(materialized='table', file_format='tablets', liquid_clustered_by='day', target_tablet_rows=1) }}
select id, date_add(date'2024-01-01', 3 - id) as day from values (1), (2), (3) as v(id)
"""
EVENTS = """
{{ config(materialized='incremental', file_format='tablets', incremental_strategy='microbatch',
          event_time='event_time', batch_size='day', begin=modules.datetime.datetime(2020, 1, 1),
          unique_tmp_table_suffix=true) }}
select * from {{ ref('input_model') }}
"""


class TestTableSettings:
    @pytest.fixture(scope="class")
    def models(self):
        return {"orders.sql": ORDERS, "daily.sql": DAILY, "events.sql": EVENTS, "input_model.sql": _input_model_sql}

    def props(self, project, name):
        return dict(project.run_sql(f"show tblproperties {project.test_schema}.{name}", fetch="all"))

    def test_properties_and_warnings(self, project):
        with patch_microbatch_end_time("2020-01-03 13:57:00"):
            _, out = run_dbt_and_capture(["run"])
        assert self.props(project, "orders") == {
            "auto_compact": "true",
            "cluster_by": "day",
            "key_columns": "id",
            "purpose": "orders' daily",
            "team": "crm",
        }
        described = project.run_sql(f"describe extended {project.test_schema}.orders", fetch="all")
        assert {r[0]: r[1] for r in described}["Table Properties"] == (
            "[auto_compact=true, cluster_by=day, key_columns=id, purpose=orders' daily, team=crm]"
        )
        assert self.props(project, "daily") == {"cluster_by": "day", "target_tablet_rows": "1"}
        # the CREATE ran with the model's options: one row per tablet
        history = project.run_sql(f"describe history {project.test_schema}.daily", fetch="all")
        assert history[0][4]["tablets_added"] == "3"
        assert history[0][3]["dbt_model"] == "daily" and history[0][3]["dbt_materialization"] == "table"

        assert (
            out.count("Model 'orders': liquid_clustered_by = ['day'] (Databricks' liquid clustering) is cluster_by")
            == 1
        )
        assert out.count("Model 'orders': ignored, as a tablet table cannot honour these dbt-databricks settings:") == 1
        assert "  - zorder = ['id']: Z-ordering is Delta's OPTIMIZE ... ZORDER BY" in out
        assert "  - databricks_tags = {'team': 'crm'}: they are Unity Catalog tags" in out
        assert out.count("Model 'daily': liquid_clustered_by = 'day'") == 1
        # three batches, one warning
        assert out.count("Model 'events': ignored, as a tablet table cannot honour these dbt-databricks settings:") == 1
        assert "  - unique_tmp_table_suffix = True: the new rows are a temporary view" in out
        assert len(project.run_sql(f"select * from {project.test_schema}.events", fetch="all")) == 3
        # each later batch's window replace reads only its day's tablets: the earlier days' are
        # ruled out by their event_time statistics against the batch bounds
        history = project.run_sql(f"describe history {project.test_schema}.events", fetch="all")
        pruned = sorted(int(float(h[4]["tablets_pruned"])) for h in history if h[2] == "MERGE")
        assert pruned and pruned[-1] >= 1, history

    def test_warn_error_makes_them_errors(self, project):
        _, out = run_dbt_and_capture(["--warn-error", "run", "--select", "orders"], expect_pass=False)
        assert "Error in model orders" in out and "Model 'orders': liquid_clustered_by = ['day']" in out
        assert "ERROR=1" in out


CLUSTERED = """
{{ config(materialized='merge_tablets', unique_key='id', cluster_by=['day'], target_tablet_rows=1) }}
select id, date_add(date'2024-01-01', 3 - id) as day from values (1), (2), (3) as v(id)
"""
CONTRACT = """
models:
  - name: clustered
    config:
      contract: {enforced: true}
    columns:
      - name: id
        data_type: int
      - name: day
        data_type: date
"""


class TestContractKeepsTheTableOptions:
    """A contract's column check is a query of its own, run while the CREATE is rendered: the
    model's write options (cluster_by) must still reach the CREATE's write."""

    @pytest.fixture(scope="class")
    def models(self):
        return {"clustered.sql": CLUSTERED, "schema.yml": CONTRACT}

    def test_first_load_is_clustered(self, project):
        from dbt.tests.util import run_dbt
        from tablets.storage import TabletTable

        run_dbt(["run"])
        described = project.run_sql(f"describe extended {project.test_schema}.clustered", fetch="all")
        t = TabletTable({r[0]: r[1] for r in described}["Location"])
        snap = t.snapshot()
        days = [next(t.scan(snap, tablet_ids=[tid])).column("day")[0].as_py().day for tid in snap.tablets]
        assert days == [1, 2, 3]  # tablets written in cluster_by order (the rows come in day 3, 2, 1)
