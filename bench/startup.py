"""dbt start-up benchmark: `dbt run --select <one merge_tablets model>` in a fresh process, and where its seconds go.

    .venv/bin/python bench/startup.py --repeat 3                   # the README's profile (a warm Spark)
    .venv/bin/python bench/startup.py --repeat 1 --results ''      # a quick try
    .venv/bin/python bench/startup.py --repeat 3 --keep-alive 0    # each command its own Spark

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

Beside it, interleaved in the same run, the peer: dbt-duckdb (bench/.venv-dbt_duckdb, made on first
use by bench/peers.py) on the same model (an incremental model on the same unique key, in DuckDB's
SQL), the same three commands from an empty database; the ratios are ours / dbt-duckdb's medians.
`--peers ''` runs ours alone.

The profile keeps a warm Spark between commands by default (`keep_alive`, ``tablets.spark.warm``;
`--keep-alive 0`: each command starts and ends its own): a first command starts it (reported
alone), then each repeat is a `dbt run --full-refresh` (creates) and a `dbt run` (merges), each a
fresh `dbt` process joining it; Spark's event log then belongs to the server, so the parts are dbt's own (WARM_PARTS).
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
PEER_PROJECT = {
    "dbt_project.yml": """name: bench_startup_duckdb
version: "1.0"
profile: bench_startup_duckdb
model-paths: [models]
flags:
  send_anonymous_usage_stats: false
""",
    "models/events.sql": """{{ config(materialized='incremental', unique_key='id') }}
select i as id, cast(i * {{ var('phase', 1) }} as double) as v, 'row-' || cast(i as varchar) as s
from range(1, 101) t(i)
""",
    "profiles.yml": """bench_startup_duckdb:
  target: local
  outputs:
    local:
      type: duckdb
      path: target/bench.duckdb
      threads: 1
""",
}
PEER_PARTS = ["python + import dbt", "dbt: project, parse", "the rest"]

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
    check = next((e for e in sql_start if "tablets/spark/process.py" in e.get("description", "")), sql_start[0])
    first_sql = sql_start[0]["time"] / 1000
    metastore = ends[check["executionId"]]
    marks = [spawned, first_event, opening, app, first_sql, metastore, first_query, model_sql, model_done, ended]
    parts: dict[str, float | str] = {p: round(b - a, 2) for p, a, b in zip(PARTS, marks[:-1], marks[1:], strict=True)}
    return parts | {"engine": engine}


def peer_breakdown(spawned: float, ended: float, dbt_log: str) -> dict[str, float | str]:
    """PEER_PARTS of one dbt-duckdb run, from its JSON log."""
    with open(dbt_log) as f:
        events = [json.loads(line) for line in f]
    first = _ts(events[0]["info"]["ts"])
    opening = next(_ts(e["info"]["ts"]) for e in events if e["info"]["name"] == "NewConnectionOpening")
    marks = [spawned, first, opening, ended]
    return {p: round(b - a, 2) for p, a, b in zip(PEER_PARTS, marks[:-1], marks[1:], strict=True)}


def run_dbt(
    project: str, events: str | None, args: list[str], *, warm: bool = False, dbt: str | None = None
) -> tuple[float, dict[str, float | str], str]:
    """One `dbt run` in a fresh process: wall seconds, breakdown, and the engine's line for the model.
    ``dbt``: another dbt executable (the peer's), whose breakdown is PEER_PARTS."""
    shutil.rmtree(os.path.join(project, "logs"), ignore_errors=True)
    if events is not None:
        shutil.rmtree(events, ignore_errors=True)
        os.makedirs(events)
    peer = dbt is not None
    dbt = dbt or os.path.join(os.path.dirname(sys.executable), "dbt")
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
    log = os.path.join(project, "logs", "dbt.log")
    if peer:
        return ended - spawned, peer_breakdown(spawned, ended, log), ""
    parts = breakdown(spawned, ended, log, None if warm else events)
    return ended - spawned, parts, str(parts.pop("engine"))


def write(root: str, files: dict[str, str]) -> None:
    for name, text in files.items():
        os.makedirs(os.path.dirname(os.path.join(root, name)), exist_ok=True)
        with open(os.path.join(root, name), "w") as f:
            f.write(text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="fresh create + merge pairs; medians are reported")
    ap.add_argument("--memory", default="4g", help="spark.driver.memory")
    ap.add_argument("--work", default="/tmp/tablets-bench/work/startup")
    ap.add_argument("--results", default=report.RESULTS, help="'' to append nowhere")
    ap.add_argument(
        "--keep-alive", type=int, default=None, help="the profile's keep_alive (unset: its default, warm; 0: none)"
    )
    ap.add_argument("--peers", default="dbt_duckdb", help="'' for ours alone")
    args = ap.parse_args()
    warm = args.keep_alive != 0  # unset: the profile's default, a warm Spark
    started, load_at_start = datetime.datetime.now(datetime.UTC), os.getloadavg()
    project, events = os.path.join(args.work, "project"), os.path.join(args.work, "events")
    peer_project = os.path.join(args.work, "project-duckdb")
    shutil.rmtree(args.work, ignore_errors=True)
    profile = PROFILE.format(memory=args.memory, events=events)
    if args.keep_alive is not None:
        profile = profile.replace("      threads: 1\n", f"      threads: 1\n      keep_alive: {args.keep_alive}\n")
    write(project, {**PROJECT, "profiles.yml": profile})
    peer_dbt = None
    if args.peers:
        import peers

        peer_dbt = os.path.join(os.path.dirname(peers.python("dbt_duckdb")), "dbt")
        write(peer_project, PEER_PROJECT)

    phases = ("create", "merge", "again")
    runs: dict[str, list[tuple[float, dict[str, float | str]]]] = {p: [] for p in phases}
    peer_runs: dict[str, list[tuple[float, dict[str, float | str]]]] = {p: [] for p in phases}
    engines: dict[str, str] = {}
    first = ""
    try:
        if warm:  # the command that starts the warm Spark
            wall, parts, result = run_dbt(project, events, [])
            first = f"\n- the first command, which starts the warm Spark: {wall:.1f} s"
            print(f"start: {wall:.1f} s  {result}  {parts}", flush=True)
        for i in range(args.repeat):
            merge = ["--vars", "phase: 2"]
            systems_in_order = ["ours", "peer"] if i % 2 == 0 else ["peer", "ours"]  # a drifting machine
            for system in systems_in_order:
                if system == "peer" and peer_dbt is None:
                    continue
                if system == "peer":
                    shutil.rmtree(os.path.join(peer_project, "target"), ignore_errors=True)
                elif not warm:
                    shutil.rmtree(os.path.join(project, "target"), ignore_errors=True)  # warehouse, metastore
                create = ["--full-refresh"] if warm and system == "ours" else []
                for phase, extra in (("create", create), ("merge", merge), ("again", merge)):
                    if system == "peer":
                        wall, parts, result = run_dbt(peer_project, None, extra, dbt=peer_dbt)
                        peer_runs[phase].append((wall, parts))
                    else:
                        wall, parts, result = run_dbt(project, events, extra, warm=warm)
                        runs[phase].append((wall, parts))
                        engines[phase] = result
                    print(f"run {i + 1} {system} {phase}: {wall:.1f} s  {result}  {parts}", flush=True)
    finally:
        if warm:
            warehouse = os.path.join(project, "target", "tablets-warehouse", "warehouse")
            subprocess.run([sys.executable, "-m", "tablets.spark.warm", "--stop", warehouse], check=False)

    def med(rs: list[tuple[float, dict[str, float | str]]]) -> float:
        return statistics.median(w for w, _ in rs)

    names = WARM_PARTS if warm else PARTS
    rows = [["wall, dbt-tablets", *[cell([w for w, _ in runs[p]]) for p in phases]]]
    if peer_dbt:
        rows.append(["wall, dbt-duckdb", *[cell([w for w, _ in peer_runs[p]]) for p in phases]])
        rows.append(
            ["**ratio** (ours / dbt-duckdb)", *[f"**{med(runs[p]) / med(peer_runs[p]):.2f}x**" for p in phases]]
        )
    rows += [
        [part, *[f"{statistics.median(float(b[part]) for _, b in runs[p]):.2f}" for p in phases]] for part in names
    ]
    if peer_dbt:
        rows += [
            [
                f"dbt-duckdb: {part}",
                *[f"{statistics.median(float(b[part]) for _, b in peer_runs[p]):.2f}" for p in phases],
            ]
            for part in PEER_PARTS
        ]
    alive = "the default" if args.keep_alive is None else args.keep_alive
    how = f", joining a warm Spark (keep_alive: {alive})" if warm else ", each its own Spark (keep_alive: 0)"
    body = (
        f"dbt start-up: `dbt run --select events` (one 100-row model: merge_tablets, and dbt-duckdb's incremental "
        f"on the same key) in a fresh process{how}, interleaved, seconds: median (min-max) of {args.repeat}; "
        "the parts are medians of each part.\n\n"
        + table(["", "first run (creates)", "second run (merges)", "the same again (partial parsing)"], rows)
        + first
        + "".join(f"\n- the engine, last {p} run: {engines[p]}" for p in phases)
    )
    print("\n" + body)
    from importlib.metadata import version

    ours = systems.Ours(args.work, args.work, args.memory).versions()  # dbt-tablets (git rev), pyspark, java
    vers = {"ours": {**ours, "dbt-core": version("dbt-core"), "dbt-spark": version("dbt-spark")}}
    if peer_dbt:
        out = subprocess.run(
            [
                os.path.join(os.path.dirname(peer_dbt), "python"),
                "-c",
                "from importlib.metadata import version as v; print(v('dbt-duckdb'), v('duckdb'))",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        vers["dbt-duckdb"] = {"dbt-duckdb": out[0], "duckdb": out[1]}
    title = f"dbt start-up, repeat {args.repeat}" + (
        f", keep_alive {args.keep_alive}" if args.keep_alive is not None else ""
    )
    report.append(args.results, title, started, load_at_start, vers, [], body)


if __name__ == "__main__":
    main()
