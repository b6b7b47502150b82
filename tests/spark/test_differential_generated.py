"""The generated differential harness (issue 25): random tiny tables and statement sequences
(support.sqlgen), each statement run on two tables of the product and on DuckDB, compared after
every statement (support.differential): the first table with the session's defaults (the driver
plan where it applies), the second, by the case's seed, on Spark's plan
(``spark.tablets.merge.driverScanBytes=0``; half the cases: with its source persisted in a sixth,
its pairs written by Spark's tasks in another), with every shortcut off (the long way), or on
the driver plan with Arrow evaluation or pruning off (``differential.SECOND``).

Why a seeded generator with its own minimiser rather than Hypothesis: a statement costs
0.1-2 s of Spark, so Hypothesis's shrinking (hundreds of re-runs of whole sequences, guided by
a byte stream that knows nothing of what a SQL case is) would take many minutes per failure,
and its example database makes CI runs differ from one another. Here one seed is one case,
the default run is the same every time (a fixed budget of statements), and a failing case is
minimised by what makes a SQL case smaller (steps, columns, rows, clauses, conditions, table
properties) within a time budget, then printed as the SQL that reproduces it.

Default: at least ``STATEMENTS`` (500) statements, each on both plans and DuckDB: about 504
in 36 cases (its time on this machine: bench/RESULTS.md); a tenth of it is the VERSION AS OF
reads; a tenth as many again with Spark's ANSI mode off. ``TABLETS_SLOW=1``: a soak of 20,000, from seeds of its own.
``TABLETS_GEN_STATEMENTS=n`` runs n, ``TABLETS_GEN_SEED=n`` starts at seed n,
``TABLETS_GEN_MINIMISE=s`` gives each distinct failure s seconds of minimising (0: none);
``-s`` shows each case and the summary (also written to differential.txt in the test's tmp dir).
``TABLETS_GEN_TALLY=file`` rewrites the running tally to ``file`` as JSON after each case, so a
soak stopped part-way and run on in chunks still counts its shapes and plans
(``Tally.total`` adds the chunks up).
"""

import json
import os
import time
from pathlib import Path

import pytest
from support.differential import Tally, minimise, repro, run_case, sessions
from support.sqlgen import make_case
from tablets.engine import key_filter

pytestmark = pytest.mark.spark
ANSI = "spark.sql.ansi.enabled"

SLOW = bool(os.environ.get("TABLETS_SLOW"))
STATEMENTS = int(os.environ.get("TABLETS_GEN_STATEMENTS", "20000" if SLOW else "500"))
SEED = int(os.environ.get("TABLETS_GEN_SEED", "1000000" if SLOW else "0"))
CASE_STATEMENTS = 14  # statements per case after the CREATE (the first INSERTs included)
TALLY_FILE = os.environ.get("TABLETS_GEN_TALLY")
MINIMISE_SECONDS = float(os.environ.get("TABLETS_GEN_MINIMISE", "150"))  # per distinct failure


@pytest.fixture(scope="module")
def dbs(spark):
    out = sessions(spark)
    out["driver"].sql("CREATE DATABASE IF NOT EXISTS gen")
    # the key filter of a shuffle join ("spark, tasks") on every statement it can take, not
    # only where the target has 4 rows per source row: tiny tables seldom do
    before, key_filter.MIN_TARGET_PER_SOURCE = key_filter.MIN_TARGET_PER_SOURCE, 0
    yield out
    key_filter.MIN_TARGET_PER_SOURCE = before


def test_generated_statements_agree_on_both_plans_and_with_duckdb(dbs, tmp_path):
    _run(dbs, tmp_path, SEED, STATEMENTS)


@pytest.fixture
def legacy(dbs):
    """Both plans' sessions with Spark's ANSI mode off (dbt-spark's, where a profile opts out)."""
    sessions = [db.spark for db in dbs.values()]
    before = [s.conf.get(ANSI) for s in sessions]
    for s in sessions:
        s.conf.set(ANSI, "false")
    yield dbs
    for s, b in zip(sessions, before, strict=True):
        s.conf.set(ANSI, b)


def test_generated_statements_agree_with_ansi_off(legacy, tmp_path):
    """The harness in the other mode: a tenth of the budget, from seeds of its own (the generator's
    values fit their columns, so DuckDB's answers hold in both modes; test_ansi_modes.py holds
    what differs)."""
    _run(legacy, tmp_path, SEED + 500_000, max(STATEMENTS // 10, CASE_STATEMENTS))


def _run(dbs, tmp_path, first_seed: int, statements: int) -> None:
    tally, found, failed = Tally(), {}, []
    start, seed = time.monotonic(), first_seed
    while tally.statements < statements:
        case = make_case(seed, CASE_STATEMENTS)
        seed += 1
        tally.cases += 1
        t0 = time.monotonic()
        failure, scripts = run_case(dbs, case, tally)
        print(f"seed {seed - 1}: {time.monotonic() - t0:.1f} s, {failure or 'ok'}", flush=True)
        if failure is not None:
            failed.append(seed - 1)
        if TALLY_FILE:
            seeds = {"first_seed": first_seed, "last_seed": seed - 1, "failed_seeds": failed}
            Path(TALLY_FILE).write_text(json.dumps({**seeds, "tally": tally.to_json()}))
        if failure is None or failure.signature() in found:
            continue
        small, fail, small_scripts = minimise(dbs, case, failure, MINIMISE_SECONDS)
        found[failure.signature()] = repro(small, fail, small_scripts)
    elapsed = time.monotonic() - start
    report = tally.summary() + f"\n{elapsed:.0f} s"
    (tmp_path / "differential.txt").write_text(report + "\n\n" + "\n\n".join(found.values()))
    print("\n" + report)
    assert not found, "the plans or DuckDB disagree:\n\n" + "\n\n".join(found.values())
