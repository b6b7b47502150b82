"""The README's "Every option in YAML" block, run as printed: its ``models: my_project:`` mapping is
this test project's ``models:`` config (the project is named ``test``: that rename is the only
change), with a model file for every model it configures. ``dbt run`` twice: the first run
creates every table (the microbatch model one batch per month since its ``begin``), the second
(``--vars 'phase: 2'``) merges changed upstream rows; each test checks one model's rows against
what the README's config says.

Dates the config compares with ``current_date()`` (customers' 30-day window, daily_totals' last
week) are written relative to it, and read back as ``datediff(current_date(), ...)``; the
microbatch model's months are computed from today's date, as dbt computes its batches."""

from __future__ import annotations

import datetime

import pytest
import yaml
from dbt.tests.util import run_dbt, run_dbt_and_capture
from support import readme

P2 = "{% if var('phase', 1) == 1 %}"


def readme_models() -> dict:
    """The ``my_project`` mapping of the README's block that starts with ``models:``, as printed."""
    found = [b for b in readme.blocks() if b.text.startswith("models:")]
    assert len(found) == 1, [b.line for b in found]
    parsed = yaml.safe_load(found[0].text)
    assert list(parsed) == ["models"] and list(parsed["models"]) == ["my_project"]
    return parsed["models"]["my_project"]


def phased(first: str, second: str, config: str = "") -> str:
    head = f"{{{{ config({config}) }}}}\n" if config else ""
    return f"{head}{P2}\n{first}\n{{% else %}}\n{second}\n{{% endif %}}\n"


def values(cols: str, rows: str) -> str:
    return f"select * from values {rows} as v({cols})"


def ago(days: int) -> str:
    return f"cast(date_sub(current_date(), {days}) as timestamp)"


# --- the microbatch model's months (UTC, as dbt's MicrobatchBuilder) ------------------------------


def month_start(d: datetime.date, offset: int = 0) -> datetime.date:
    m = d.year * 12 + d.month - 1 + offset
    return datetime.date(m // 12, m % 12 + 1, 1)


TODAY = datetime.datetime.now(datetime.UTC).date()
BEGIN = datetime.date(2026, 10, 1)
THIS_MONTH = month_start(TODAY)
PREVIOUS_MONTH = month_start(TODAY, -1)
# the first run: one batch per month from begin to this month; a later run: dbt's lookback (1)
FIRST_RUN_BATCHES = (THIS_MONTH.year * 12 + THIS_MONTH.month) - (BEGIN.year * 12 + BEGIN.month) + 1
RERUN_MONTHS = {PREVIOUS_MONTH, THIS_MONTH}


def ts(d: datetime.date, day: int = 1) -> str:
    return f"timestamp'{d.replace(day=day).isoformat()} 00:00:00'"


def at(d: datetime.date, day: int = 1) -> datetime.datetime:
    return datetime.datetime(d.year, d.month, day)


# --- a model per model the README configures -------------------------------------------------------

CUSTOMER_COLS = "customer_id, name, email, updated_at, is_deleted, created_at"
MODELS = {
    # 1-3, 5 inside the 30-day window of incremental_predicates, 4 outside it
    "customers.sql": phased(
        values(
            CUSTOMER_COLS,
            ", ".join(
                f"({i}, '{n}', '{n.lower()}@x', {ago(u)}, false, {ago(100)})"
                for i, n, u in [(1, "Ann", 10), (2, "Bob", 10), (3, "Cy", 10), (4, "Dee", 60), (5, "Eve", 10)]
            ),
        ),
        # 1 newer (updated, but not its created_at), 2 older (kept), 3 the same (kept), 4 and 5
        # gone (5 soft-deleted, 4 outside the window), 6 new; a new column (append_new_columns)
        values(
            CUSTOMER_COLS + ", tier",
            f"(1, 'Ann2', 'ann2@x', {ago(2)}, false, {ago(1)}, 'gold'), "
            f"(2, 'Bob2', 'bob2@x', {ago(20)}, false, {ago(1)}, 'gold'), "
            f"(3, 'Cy', 'cy@x', {ago(10)}, false, {ago(100)}, cast(null as string)), "
            f"(6, 'Fay', 'fay@x', {ago(1)}, false, {ago(1)}, 'silver')",
        ),
    ),
    "kv_first_seen.sql": phased(
        values("id, value", "(1, 'a'), (2, 'b')"),
        values("id, value", "(1, 'A'), (3, 'c')"),
    ),
    "kv_latest.sql": phased(
        values(
            "id, value, updated_at",
            "(1, 'a', timestamp'2026-11-10 00:00:00'), (2, 'b', timestamp'2026-11-10 00:00:00')",
        ),
        # 1 newer: its value taken; 2 older: kept; 3 new
        values(
            "id, value, updated_at",
            "(1, 'A', timestamp'2026-11-20 00:00:00'), (2, 'B', timestamp'2026-11-05 00:00:00'), "
            "(3, 'c', timestamp'2026-11-01 00:00:00')",
        ),
    ),
    # the later run's new rows only (dbt's incremental pattern): a row outside the predicate's
    # window would not match its target row and be inserted again
    "orders.sql": phased(
        values(
            "id, status, amount, day",
            "(1, 'new', 10, date'2024-02-01'), (2, 'new', 20, date'2024-03-01'), (3, 'new', 30, date'2023-12-01')",
        ),
        values("id, status, amount, day", "(1, 'shipped', 99, date'2024-02-01'), (4, 'new', 40, date'2024-04-01')"),
    ),
    # the upstream of page_views, with its own event_time: dbt filters it to each batch
    "raw_page_views.sql": phased(
        values(
            "view_id, page, viewed_at",
            f"(1, '/before-begin', timestamp'2026-09-20 00:00:00'), (2, '/b', {ts(BEGIN, 5)}), "
            f"(3, '/c', {ts(PREVIOUS_MONTH, 10)}), (4, '/d', {ts(THIS_MONTH)})",
        ),
        values(
            "view_id, page, viewed_at",
            f"(1, '/before-begin', timestamp'2026-09-20 00:00:00'), (2, '/b2', {ts(BEGIN, 5)}), "
            f"(3, '/c2', {ts(PREVIOUS_MONTH, 10)}), (5, '/e', {ts(THIS_MONTH, 2)})",
        ),
        config="materialized='table', event_time='viewed_at'",
    ),
    "page_views.sql": "select view_id, page, viewed_at from {{ ref('raw_page_views') }}\n",
    # the later runs select only the last week's rows, as the README's comment says
    "daily_totals.sql": """{% set rows = {
    1: [(20, 100), (10, 50), (5, 10), (1, 20)],
    2: [(5, 11), (0, 30)],
    3: [(5, 11), (0, 30), (8, 99)],
}[var('phase', 1)] %}
select * from values
{%- for ago, total in rows %} (date_sub(current_date(), {{ ago }}), {{ total }}){{ ',' if not loop.last }}{% endfor %}
as v(day, total)
""",
}


class TestReadmeConfig:
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"models": {"test": readme_models()}}

    @pytest.fixture(scope="class")
    def models(self):
        return MODELS

    @pytest.fixture(scope="class")
    def runs(self, project):
        first = {r.node.name: r for r in run_dbt(["run"]).results}
        after_first = {m: self.rows(project, m) for m in ("page_views", "customers")}
        versions = {m: self.version(project, m) for m in ("page_views",)}
        second = {r.node.name: r for r in run_dbt(["run", "--vars", "phase: 2"]).results}
        return first, second, after_first, versions

    # --- helpers ---

    def rows(self, project, name: str, columns: str = "*") -> list[tuple]:
        got = project.run_sql(f"select {columns} from {project.test_schema}.{name}", fetch="all")
        return sorted((tuple(r) for r in got), key=lambda r: tuple((x is None, str(x)) for x in r))

    def relation(self, project, name):
        return project.adapter.Relation.create(schema=project.test_schema, identifier=name, type="table")

    def version(self, project, name) -> int:
        with project.adapter.connection_named("__test"):
            return project.adapter.tablet_stats(self.relation(project, name))["version"]

    def operations(self, project, name) -> list[str]:
        """The table's commits, oldest first."""
        history = project.run_sql(f"describe history {project.test_schema}.{name}", fetch="all")
        return [h.operation for h in sorted(history, key=lambda h: h.version)]

    def props(self, project, name) -> dict:
        return dict(project.run_sql(f"show tblproperties {project.test_schema}.{name}", fetch="all"))

    # --- the tests ---

    def test_the_block_is_the_project_config(self, project, runs):
        first, second, _, _ = runs
        configured = set(readme_models())
        assert configured == {"customers", "kv_first_seen", "kv_latest", "orders", "page_views", "daily_totals"}
        assert configured <= set(first) and configured <= set(second)
        for name in ("customers", "kv_first_seen", "kv_latest", "orders", "daily_totals"):
            assert first[name].adapter_response["code"] == "CREATE TABLE", (name, first[name].adapter_response)
            assert first[name].status == "success" and second[name].status == "success", name
        with project.adapter.connection_named("__test"):
            for name in configured:
                assert project.adapter.is_tablet_table(self.relation(project, name)), name

    def test_customers(self, project, runs):
        _, second, after_first, _ = runs
        assert [r[:3] for r in after_first["customers"]] == [
            (1, "Ann", "ann@x"),
            (2, "Bob", "bob@x"),
            (3, "Cy", "cy@x"),
            (4, "Dee", "dee@x"),
            (5, "Eve", "eve@x"),
        ]
        cols = "customer_id, name, email, datediff(current_date(), updated_at), is_deleted, "
        cols += "datediff(current_date(), created_at), tier"
        assert self.rows(project, "customers", cols) == [
            (1, "Ann2", "ann2@x", 2, False, 100, "gold"),  # s.updated_at > t.updated_at; created_at excluded
            (2, "Bob", "bob@x", 10, False, 100, None),  # an older source row: not updated
            (3, "Cy", "cy@x", 10, False, 100, None),
            (4, "Dee", "dee@x", 60, False, 100, None),  # gone, but outside the 30-day window
            (5, "Eve", "eve@x", 10, True, 100, None),  # gone: soft-deleted
            (6, "Fay", "fay@x", 1, False, 1, "silver"),
        ]
        # 2 and 3 matched no clause (their condition is false): neither updated nor unchanged
        assert (
            second["customers"].adapter_response["_message"]
            == "MERGE 3 (inserted 1, updated 2, deleted 0, unchanged 0)"
        )

    def test_customers_table_settings(self, project, runs):
        props = self.props(project, "customers")
        assert props["owner"] == "crm-team"
        assert props["cluster_by"] == "customer_id"
        assert props["key_columns"] == "customer_id"
        assert props["target_tablet_rows"] == "1000000"
        columns = [c[0] for c in project.run_sql(f"describe {project.test_schema}.customers", fetch="all")]
        assert columns[:7] == ["customer_id", "name", "email", "updated_at", "is_deleted", "created_at", "tier"]

    def test_kv_first_seen_keeps_the_first_value(self, project, runs):
        assert self.rows(project, "kv_first_seen") == [(1, "a"), (2, "b"), (3, "c")]

    def test_kv_latest_takes_the_newer_value(self, project, runs):
        got = [(i, v, str(u)) for i, v, u in self.rows(project, "kv_latest")]
        # set: {value: ...} assigns the value alone: the row keeps its updated_at
        assert got == [
            (1, "A", "2026-11-20 00:00:00"),
            (2, "b", "2026-11-10 00:00:00"),
            (3, "c", "2026-11-01 00:00:00"),
        ]

    def test_orders_updates_only_status(self, project, runs):
        got = [(i, s, a, str(d)) for i, s, a, d in self.rows(project, "orders")]
        assert got == [
            (1, "shipped", 10, "2024-02-01"),
            (2, "new", 20, "2024-03-01"),
            (3, "new", 30, "2023-12-01"),
            (4, "new", 40, "2024-04-01"),
        ]
        path = f"{project.project_root}/target/run/test/models/orders.sql"
        with open(path) as f:
            sql = f.read()
        assert "DBT_INTERNAL_DEST.day >= '2024-01-01'" in sql, sql

    def test_page_views_one_batch_per_month(self, project, runs):
        first, second, after_first, versions = runs
        assert len(first["page_views"].batch_results.successful) == FIRST_RUN_BATCHES
        assert not first["page_views"].batch_results.failed
        # one commit per batch: the first writes the new table's rows (after its empty version 0,
        # as every new tablet table), each later one is a MERGE
        assert self.operations(project, "page_views")[: FIRST_RUN_BATCHES + 1] == [
            "CREATE TABLE",
            "CREATE TABLE AS SELECT",
            *["MERGE"] * (FIRST_RUN_BATCHES - 1),
        ]
        assert versions["page_views"] == FIRST_RUN_BATCHES
        assert after_first["page_views"] == [
            (2, "/b", at(BEGIN, 5)),
            (3, "/c", at(PREVIOUS_MONTH, 10)),
            (4, "/d", at(THIS_MONTH)),
        ]
        # the later run: the months of dbt's lookback, each replaced; the earlier ones kept
        assert len(second["page_views"].batch_results.successful) == len(RERUN_MONTHS)
        assert self.version(project, "page_views") == versions["page_views"] + len(RERUN_MONTHS)
        assert self.operations(project, "page_views")[FIRST_RUN_BATCHES + 1 :] == ["MERGE"] * len(RERUN_MONTHS)
        oct_page = "/b2" if BEGIN in RERUN_MONTHS else "/b"
        assert self.rows(project, "page_views") == [
            (2, oct_page, at(BEGIN, 5)),
            (3, "/c2", at(PREVIOUS_MONTH, 10)),
            (5, "/e", at(THIS_MONTH, 2)),
        ]

    def test_daily_totals_replaces_the_last_week(self, project, runs):
        cols = "datediff(current_date(), day), total"
        assert sorted(self.rows(project, "daily_totals", cols)) == [(0, 30), (5, 11), (10, 50), (20, 100)]
        # a new row outside the window fails the run, and nothing is written
        version = self.version(project, "daily_totals")
        _, out = run_dbt_and_capture(["run", "--select", "daily_totals", "--vars", "phase: 3"], expect_pass=False)
        assert "outside replace_where" in out, out[-3000:]
        assert sorted(self.rows(project, "daily_totals", cols)) == [(0, 30), (5, 11), (10, 50), (20, 100)]
        assert self.version(project, "daily_totals") == version
