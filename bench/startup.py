"""dbt start-up benchmark: `dbt run --select <one merge_tablets model>` in a fresh process, and where its seconds go.

    .venv/bin/python bench/startup.py --repeat 3
    .venv/bin/python bench/startup.py --repeat 1 --results ''      # a quick try
    .venv/bin/python bench/startup.py --repeat 3 --keep-alive 600    # joining a warm Spark

Writes a tiny dbt project into the work dir (a session-method profile like integration_tests', one
merge_tablets model of 100 rows), then --repeat times from an empty warehouse: `dbt run` (creates
the table), `dbt run` again with other vars (merges into it), and the same once more (vars
unchanged: dbt's partial parsing applies, as in the loop of a user editing a model), each a
fresh `dbt` process. Reports the median wall
time of each and its breakdown, from dbt's JSON log (`--log-format-file json`: each event's time)
and Spark's event log (`spark.eventLog.*` through the profile's server_side_parameters):

    python + import dbt       process start -> dbt's first event
    dbt: project, parse       -> the first connection opens (adapter registered, manifest built)
    JVM + SparkContext        -> Spark's ApplicationStart
    session set-up            -> Spark's first SQL execution (package shipped, tablets sources registered)
    metastore (Derby)         -> the end of the connect check's SHOW DATABASES (its first catalog use)
    dbt's first query         -> list_schemas done (what dbt runs before anything else)
    dbt's other queries       -> the model's SQL starts (create schema, list relations, compile)
    the model                 -> its SQL done (dbt's SQLQueryStatus)
    exit                      -> the process ends (results, JVM shutdown)

With --keep-alive the profile keeps a warm Spark between commands (`keep_alive`,
``tablets.spark.warm``): a first command starts it (reported alone), then each repeat is a
`dbt run --full-refresh` (creates) and a `dbt run` (merges), each a fresh `dbt` process joining
it; Spark's event log then belongs to the server, so the parts are dbt's own (WARM_PARTS).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

import report
import systems
from report import cell, table

PROJECT = {
    "dbt_project.yml": """name: bench_startup
version: "1.0"
profile: bench_startup
model-paths: [models]
flags:
  send_anonymous_usage_stats: false
""",
    "models/events.sql": """{{ config(materialized='merge_tablets', unique_key='id') }}
select id, cast(id * {{ var('phase', 1) }} as double) as v, concat('row-', cast(id as string)) as s
from (select explode(sequence(1, 100)) as id)
""",
}
PROFILE = """bench_startup:
  target: embedded
  outputs:
    embedded:
      type: tablets
      method: session
      schema: bench
      threads: 1
      server_side_parameters:
        spark.driver.memory: "{memory}"
        spark.eventLog.enabled: "true"
        spark.eventLog.dir: "{events}"
        spark.eventLog.compress: "false"
        spark.eventLog.rolling.enabled: "false"
"""
PARTS = [
    "python + import dbt",
    "dbt: project, parse",
    "JVM + SparkContext",
    "session set-up",
    "metastore (Derby)",
    "dbt's first query",
    "dbt's other queries",
    "the model",
    "exit",
]

WARM_PARTS = [
    "python + import dbt",
    "dbt: project, parse",
    "join the warm Spark, first query",
    "dbt's other queries",
    "the model",
    "exit",
]


def _ts(iso: str) -> float:
    return datetime.datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def breakdown(spawned: float, ended: float, dbt_log: str, events_dir: str | None) -> dict[str, float | str]:
    """Seconds per PARTS entry of one run, from dbt's JSON log and Spark's event log, and the engine's
    own line for the model's statement (its phase timings)."""
    dbt, engine = [], ""
    with open(dbt_log) as f:
        for line in f:
            e = json.loads(line)
            dbt.append((_ts(e["info"]["ts"]), e["info"]["name"], e.get("data", {})))
            if e["info"].get("msg", "").startswith("Tablets adapter: tablets: "):  # the engine's phase timings
                engine = e["info"]["msg"].split("tablets: ", 1)[1]
    first_event = dbt[0][0]
    opening = next(t for t, n, _ in dbt if n == "NewConnectionOpening")
    statuses = [(t, d) for t, n, d in dbt if n == "SQLQueryStatus"]
    first_query = statuses[0][0]
    model_sql = next(t for t, n, d in dbt if n == "SQLQuery" and d.get("node_info", {}).get("unique_id"))
    model_done = statuses[-1][0]
    if events_dir is None:  # a warm Spark's events are the server's
        marks = [spawned, first_event, opening, first_query, model_sql, model_done, ended]
        parts = {p: round(b - a, 2) for p, a, b in zip(WARM_PARTS, marks[:-1], marks[1:], strict=True)}
        return parts | {"engine": engine}
    spark: list[dict] = []
    for path in glob.glob(os.path.join(events_dir, "*")):
        with open(path) as f:
            for line in f:
                with contextlib.suppress(json.JSONDecodeError):  # a line still being written
                    spark.append(json.loads(line))
    app = next(e["Timestamp"] / 1000 for e in spark if e["Event"].endswith("ApplicationStart"))
    sql_start = [e for e in spark if e["Event"].endswith("SQLExecutionStart")]
    ends = {e["executionId"]: e["time"] / 1000 for e in spark if e["Event"].endswith("SQLExecutionEnd")}
    check = next((e for e in sql_start if "dbt/adapters/tablets/session.py" in e.get("description", "")), sql_start[0])
    first_sql = sql_start[0]["time"] / 1000
    metastore = ends[check["executionId"]]
    marks = [spawned, first_event, opening, app, first_sql, metastore, first_query, model_sql, model_done, ended]
    parts: dict[str, float | str] = {p: round(b - a, 2) for p, a, b in zip(PARTS, marks[:-1], marks[1:], strict=True)}
    return parts | {"engine": engine}


def run_dbt(
    project: str, events: str, args: list[str], *, warm: bool = False
) -> tuple[float, dict[str, float | str], str]:
    """One `dbt run` in a fresh process: wall seconds, breakdown, and the engine's line for the model."""
    shutil.rmtree(os.path.join(project, "logs"), ignore_errors=True)
    shutil.rmtree(events, ignore_errors=True)
    os.makedirs(events)
    dbt = os.path.join(os.path.dirname(sys.executable), "dbt")
    cmd = [
        dbt,
        "run",
        "--select",
        "events",
        "--project-dir",
        project,
        "--profiles-dir",
        project,
        "--log-format-file",
        "json",
        "--log-level-file",
        "debug",
        *args,
    ]
    env = {**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"}
    spawned = time.time()
    proc = subprocess.run(cmd, cwd=project, env=env, capture_output=True, text=True)
    ended = time.time()
    with open(os.path.join(project, "logs", "stdout.txt"), "w") as f:
        f.write(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        raise SystemExit(f"dbt run failed ({proc.returncode}); see {project}/logs:\n{proc.stdout[-3000:]}")
    parts = breakdown(spawned, ended, os.path.join(project, "logs", "dbt.log"), None if warm else events)
    return ended - spawned, parts, str(parts.pop("engine"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="fresh create + merge pairs; medians are reported")
    ap.add_argument("--memory", default="4g", help="spark.driver.memory")
    ap.add_argument("--work", default="/tmp/tablets-bench/work/startup")
    ap.add_argument("--results", default=report.RESULTS, help="'' to append nowhere")
    ap.add_argument("--keep-alive", type=int, default=0, help="the profile's keep_alive: join a warm Spark")
    args = ap.parse_args()
    warm = args.keep_alive > 0
    started, load_at_start = datetime.datetime.now(datetime.UTC), os.getloadavg()
    project, events = os.path.join(args.work, "project"), os.path.join(args.work, "events")
    shutil.rmtree(args.work, ignore_errors=True)
    profile = PROFILE.format(memory=args.memory, events=events)
    if warm:
        profile = profile.replace("      threads: 1\n", f"      threads: 1\n      keep_alive: {args.keep_alive}\n")
    for name, text in {**PROJECT, "profiles.yml": profile}.items():
        os.makedirs(os.path.dirname(os.path.join(project, name)), exist_ok=True)
        with open(os.path.join(project, name), "w") as f:
            f.write(text)

    runs: dict[str, list[tuple[float, dict[str, float | str]]]] = {"create": [], "merge": [], "again": []}
    engines: dict[str, str] = {}
    first = ""
    try:
        if warm:  # the command that starts the warm Spark
            wall, parts, result = run_dbt(project, events, [])
            first = f"\n- the first command, which starts the warm Spark: {wall:.1f} s"
            print(f"start: {wall:.1f} s  {result}  {parts}", flush=True)
        for i in range(args.repeat):
            if not warm:
                shutil.rmtree(os.path.join(project, "target"), ignore_errors=True)  # warehouse and metastore too
            create = ["--full-refresh"] if warm else []
            merge = ["--vars", "phase: 2"]
            for phase, extra in (("create", create), ("merge", merge), ("again", merge)):
                wall, parts, result = run_dbt(project, events, extra, warm=warm)
                runs[phase].append((wall, parts))
                engines[phase] = result
                print(f"run {i + 1} {phase}: {wall:.1f} s  {result}  {parts}", flush=True)
    finally:
        if warm:
            warehouse = os.path.join(project, "target", "tablets-warehouse", "warehouse")
            subprocess.run([sys.executable, "-m", "tablets.spark.warm", "--stop", warehouse], check=False)

    names = WARM_PARTS if warm else PARTS
    rows = [["wall", *[cell([w for w, _ in runs[p]]) for p in runs]]]
    rows += [[part, *[f"{statistics.median(float(b[part]) for _, b in runs[p]):.2f}" for p in runs]] for part in names]
    how = f", joining a warm Spark (keep_alive: {args.keep_alive})" if warm else ""
    body = (
        f"dbt start-up: `dbt run --select events` (one merge_tablets model, 100 rows) in a fresh process{how}, "
        f"seconds: median (min-max) of {args.repeat}; the parts are medians of each part.\n\n"
        + table(["", "first run (creates)", "second run (merges)", "the same again (partial parsing)"], rows)
        + first
        + "".join(f"\n- the engine, last {p} run: {engines[p]}" for p in runs)
    )
    print("\n" + body)
    from importlib.metadata import version

    ours = systems.Ours(args.work, args.work, args.memory).versions()  # dbt-tablets (git rev), pyspark, java
    vers = {"ours": {**ours, "dbt-core": version("dbt-core"), "dbt-spark": version("dbt-spark")}}
    title = f"dbt start-up, repeat {args.repeat}" + (f", keep_alive {args.keep_alive}" if warm else "")
    report.append(args.results, title, started, load_at_start, vers, [], body)


if __name__ == "__main__":
    main()
