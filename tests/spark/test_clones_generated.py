"""Shallow clones under generated statements (issue #59): a case's table (support.sqlgen) runs
its first statements, is cloned, and the statements after it run on the source or the clone at
random, each held to a DuckDB mirror of its own table (the clone's a copy of the source's rows
when it was made), with now and then a VACUUM RETAIN 0 HOURS of the source between them. At the
end the source is dropped: the clone still reads its own rows, at every version, in tablets and
in the Delta readers (delta-rs, Polars, DuckDB's delta extension where they read a clone).

Only statements that keep the columns run after the clone (a column added on one side alone
would leave the case's later statements naming a column the other lacks): the clone phase ends
at the first ADD, DROP, EVOLVE, REPLACE or RESTORE. Each case on one plan, the plans in turn.

``TABLETS_CLONE_CASES=n`` runs n cases (default 8, from seed 0).
"""

import os
import random

import pytest
from support.conf import settings
from support.delta_check import assert_delta_agrees
from support.differential import PLANS, Mirror, PlanRun, canon, sessions
from support.sqlgen import make_case
from tablets.statements import maintenance

pytestmark = pytest.mark.spark

CASES = int(os.environ.get("TABLETS_CLONE_CASES", "8"))
KEEPS_COLUMNS = {
    "INSERT",
    "BYNAME",
    "MERGE",
    "RERUN",
    "UPDATE",
    "DELETE",
    "TRUNCATE",
    "CONFLICT",
    "OPTIMIZE",
    "CLUSTER",
}


@pytest.fixture(scope="module")
def dbs(spark):
    out = sessions(spark)
    out["driver"].sql("CREATE DATABASE IF NOT EXISTS gen")
    for db in out.values():
        db.spark.conf.set(maintenance.RETENTION_CHECK_CONF, "false")  # VACUUM RETAIN 0 HOURS
    yield out
    for db in out.values():
        db.spark.conf.unset(maintenance.RETENTION_CHECK_CONF)


def _same(run: PlanRun, mirror: Mirror, i: int, step, out, want) -> str | None:
    """The product's outcome of a statement against DuckDB's: refused alike, the same rows."""
    if want.error and want.error.startswith("oracle"):
        return None  # DuckDB has no answer; the mirror takes the product's rows below
    agree = out.error == want.error or (out.error and out.error in (want.error or "").split("/"))
    if not agree:
        return (
            f"{run.name} statement {i} ({step.kind}): expected {want.error or 'success'}, got {out.error or 'success'}"
        )
    if out.rows != want.rows:
        return f"{run.name} statement {i} ({step.kind}): {dict(out.rows - want.rows)} too many, {dict(want.rows - out.rows)} missing"
    return None


@pytest.mark.parametrize("seed", range(CASES))
def test_a_clone_and_its_source_written_on_both_sides(dbs, seed):
    r = random.Random(seed)
    case = make_case(10_000 + seed, 16)
    plan = list(PLANS)[seed % len(PLANS)]
    db = dbs[plan]
    cut = next((i for i, st in enumerate(case.steps) if i >= 2 and r.random() < 0.3), 3)
    source, mirror = PlanRun(db, case, plan), Mirror(case)
    problems = []
    for i, step in enumerate(case.steps[:cut]):
        problems.append(_same(source, mirror, i, step, source.run(i, step), mirror.run(i, step)))
    clone = PlanRun(db, case, plan, clone_of=source.name)
    tables = {"source": (source, mirror), "clone": (clone, mirror.copy())}
    assert canon(db.table_of(clone.name).read()) == canon(db.table_of(source.name).read())
    for i, step in enumerate(case.steps[cut:], start=cut):
        if step.kind not in KEEPS_COLUMNS:
            break
        run, mir = tables[r.choice(["source", "clone"])]
        out, want = run.run(i, step), mir.run(i, step)
        problems.append(_same(run, mir, i, step, out, want))
        if want.error and want.error.startswith("oracle"):
            mir.resync(i, db.table_of(run.name).read())
        if r.random() < 0.25:
            with settings(db.spark, run.conf):
                db.sql(f"VACUUM {source.name} RETAIN 0 HOURS")
    problems = [p for p in problems if p]
    assert not problems, "\n".join(problems) + "\n\n" + case.script()
    # the source dropped: the clone reads its rows as before, in tablets and in the Delta readers
    want = canon(db.table_of(clone.name).read())
    db.sql(f"DROP TABLE {source.name}")
    assert canon(db.table_of(clone.name).read()) == want == tables["clone"][1].rows()
    assert not db.spark.catalog.tableExists(source.name)
    assert_delta_agrees(db.table_of(clone.name))
