"""A ``CREATE TABLE ... AS SELECT`` of a new table killed (SIGKILL, with its JVM and Python
workers) part-way: afterwards the table has no name, or it has its name and all its rows, never a
name over an empty or partial table. What a kill leaves behind (the new store's files, with no
name) is refused by ``CREATE TABLE`` with a clear error and replaced by ``CREATE OR REPLACE``.

Victims are real Spark processes (local[1]) on one warehouse with its embedded Derby metastore,
one after another (Derby admits one process at a time): victim k first reports what the kill of
victim k-1 left (as a user would find it: the catalog, the rows, CREATE TABLE, then CREATE OR
REPLACE), says READY with the new table's location, runs its CTAS when told and is killed. The
test polls the new store's files and kills:

- default: at the new store's first staged tablet (its rows being written);
- ``TABLETS_SLOW=1``: also when the store's rows are committed (its version 1: the rows written,
  the name not given yet), and at 8 random points up to 2 s after the first staged tablet
  (before or after the name).
"""

from __future__ import annotations

import json
import os
import random
import sys
import time

import pytest
from support.victims import Victim, reaped, spawn

pytestmark = pytest.mark.spark

SLOW = bool(os.environ.get("TABLETS_SLOW"))
JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"  # short-lived JVMs: C1 only
ROWS = 5000
CTAS = f"CREATE TABLE d.{{name}} USING tablets AS SELECT id, id * 2 AS v FROM range(0, {ROWS})"

VICTIM = """
import json, sys
import tablets
from tablets.exceptions import TabletsError
from tablets.spark import catalog
from tablets.spark.session import build_session

cfg = json.loads(sys.argv[1])
spark = build_session(cfg["warehouse"], master="local[1]", shuffle_partitions=1,
                      conf={"spark.driver.extraJavaOptions": cfg["java_options"]})
db = tablets.connect(spark=spark, retries=0)
spark.sql("CREATE DATABASE IF NOT EXISTS d")


def state(name):
    qualified = f"d.{name}"
    out = {"named": spark.catalog.tableExists(qualified), "listed": qualified in dict(catalog.list_tables(spark, "d"))}
    if out["named"]:
        out["rows"], out["sum"] = spark.sql(f"SELECT count(*), sum(v) FROM {qualified}").first()
        out["history"] = [h.commit.operation for h in db.table_of(qualified).history()]
    try:
        db.sql(cfg["ctas"].format(name=name))
        out["create"] = "created"
    except TabletsError as e:
        out["create"] = type(e).__name__ + ": " + str(e)
    db.sql(cfg["ctas"].format(name=name).replace("CREATE TABLE", "CREATE OR REPLACE TABLE"))
    out["replaced"] = spark.sql(f"SELECT count(*), sum(v) FROM {qualified}").first()[:]
    return out


if cfg["check"]:
    print("STATE", json.dumps(state(cfg["check"])), flush=True)
if cfg["table"]:
    print("READY", catalog.default_location(spark, "d", cfg["table"]), flush=True)
    sys.stdin.readline()
    db.sql(cfg["ctas"].format(name=cfg["table"]))
    print("DONE", flush=True)
    sys.stdin.readline()
"""


def _spawn(tmp, k: int, check: str | None, table: str | None) -> Victim:
    cfg = {
        "warehouse": str(tmp / "warehouse"),
        "ctas": CTAS,
        "check": check,
        "table": table,
        "java_options": JAVA_OPTIONS,
    }
    return spawn(VICTIM, cfg, tmp, tmp / f"victim{k}.log")


def _staged(root: str) -> bool:
    try:
        return any(True for _ in os.scandir(os.path.join(root, "tablets")))
    except FileNotFoundError:
        return False


def _committed(root: str) -> bool:
    return os.path.exists(os.path.join(root, "_delta_log", f"{1:020d}.json"))


def _wait_for(victim: Victim, cond, timeout: float = 300) -> None:
    """Poll every millisecond until ``cond()``; the victim must not finish first."""
    deadline = time.time() + timeout
    while not cond():
        assert victim.proc.poll() is None, f"the victim ended before the kill: {victim.tail()}"
        assert time.time() < deadline, f"no kill point in {timeout} s: {victim.tail()}"
        time.sleep(0.001)


def _check(state: dict, what: str) -> str:
    """No name, or the name and all the rows; either way CREATE OR REPLACE gives the new rows."""
    whole = [ROWS, ROWS * (ROWS - 1)]
    assert state["replaced"] == whole, f"{what}: {state}"
    if state["named"]:
        assert [state["rows"], state["sum"]] == whole, f"{what}: a named table without all its rows: {state}"
        assert state["history"] == ["CREATE TABLE", "CREATE TABLE AS SELECT"], f"{what}: {state}"
        assert state["create"].startswith("TableAlreadyExists"), f"{what}: {state}"
        return f"{what}: named, all {ROWS} rows"
    # what the kill left has no name: listed by neither the catalog nor the registry; CREATE
    # TABLE names the leftover files (or, where none were made, creates the table)
    assert not state["listed"], f"{what}: {state}"
    assert state["create"] == "created" or (
        state["create"].startswith("TableAlreadyExists") and "CREATE OR REPLACE" in state["create"]
    ), f"{what}: {state}"
    return f"{what}: no name ({state['create'][:40]})"


def _kills() -> list[tuple[str, float | None]]:
    points = [("first staged tablet", 0.0)]
    if SLOW:
        rng = random.Random(11)
        points += [("rows committed", None)] + [("first staged tablet", rng.uniform(0, 2)) for _ in range(8)]
    return points


def _crash(tmp, points: list[tuple[str, float | None]]) -> list[str]:
    """Kill a CTAS victim at each point; one line per kill, as the next victim found it."""
    lines, what = [], ""
    victim = _spawn(tmp, 0, None, "t0")
    for k, (point, delay) in enumerate(points):
        line = victim.readline(300)
        if k:
            assert line.startswith("STATE "), victim.tail()
            lines.append(_check(json.loads(line[6:]), what))
            line = victim.readline(300)
        assert line.startswith("READY "), victim.tail()
        root = line.split(" ", 1)[1]
        victim.send("GO")
        _wait_for(victim, (lambda r=root: _committed(r)) if delay is None else (lambda r=root: _staged(r)))
        if delay:
            time.sleep(delay)
        victim.kill()
        what = f"kill {k} (at {point}{f' +{delay:.2f} s' if delay else ''})"
        nxt = f"t{k + 1}" if k + 1 < len(points) else None
        victim = _spawn(tmp, k + 1, f"t{k}", nxt)
    line = victim.readline(300)
    assert line.startswith("STATE "), victim.tail()
    lines.append(_check(json.loads(line[6:]), what))
    victim.proc.wait(60)
    return lines


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="kills process groups")
def test_ctas_killed_leaves_no_name_or_every_row(tmp_path):
    start, points = time.time(), _kills()
    with reaped():
        lines = _crash(tmp_path, points)
    print("\n".join(lines), f"\n{len(points)} kills in {time.time() - start:.0f} s")
