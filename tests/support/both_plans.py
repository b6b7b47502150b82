"""One statement on a fresh table per plan (``differential.PLANS``: the session's defaults, and
Spark's plan), for regression tests that name a defect the harness found."""

from collections import Counter

from support.conf import settings
from support.differential import PLANS, canon


def on_both_plans(db, name, setup, statement):
    """``setup`` then ``statement`` ({t}: the table) on a fresh table per plan: for each plan,
    the rows after it (NaN as "NaN", canon's) and the counts (inserted, updated, deleted), or
    the error it raised."""
    out = {}
    for plan, conf in PLANS.items():
        t = f"reg.{name}_{plan}"
        db.sql(f"DROP TABLE IF EXISTS {t}")
        with settings(db.spark, conf):
            for s in setup:
                s(t) if callable(s) else db.sql(s.replace("{t}", t))
            try:
                m = db.sql(statement.replace("{t}", t)).metrics
            except Exception as e:  # noqa: BLE001 - shown for each plan, below
                out[plan] = f"{type(e).__name__}: {e}"
                continue
        out[plan] = (canon(db.table_of(t).read())[1], (m.rows_inserted, m.rows_updated, m.rows_deleted))
    return out


def check(results, rows, counts):
    """Every plan gave ``rows`` and ``counts`` (all plans shown when one did not)."""
    assert results == {plan: (Counter(rows), counts) for plan in PLANS}
