"""The main job: the integration_tests dbt project on embedded Spark.

dbt seed -> dbt run (phase 1: creates every table) -> dbt snapshot (phase 1: first versions,
after dropping older history) -> dbt run (phase 2: merges the changed inputs) -> dbt snapshot
(phase 2: new versions, merged) -> dbt run of a model whose rows break its contract (must fail,
naming the constraint; the test step checks the table unchanged) -> dbt test -> dbt clone (shallow clones in other schemas, then
checked against their originals). All run in this one process through dbt's
programmatic runner, so the embedded Spark session (and its JVM) starts once.

``python scripts/main.py [PROJECT_DIR [PROFILES_DIR]]`` runs it on a copy of the project or with
another profile (the tests use this for a warehouse in an object store, a cluster, Spark Connect).
"""

from __future__ import annotations

import os
import sys

from dbt.cli.main import dbtRunner

PROJECT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "integration_tests")

STEPS = [
    ("seed", ["seed", "--full-refresh"]),
    ("run (phase 1: create)", ["run", "--full-refresh", "--vars", "phase: 1"]),
    ("test (phase 1: the changes read, the created tables)",
     ["test", "--select", "orders_changes_exact", "schema_evolution_exact", "--vars", "phase: 1"]),
    ("drop older snapshot history", ["run-operation", "drop_snapshots"]),
    ("snapshot (phase 1: first versions)", ["snapshot", "--vars", "phase: 1"]),
    ("run (phase 2: merge)", ["run", "--vars", "phase: 2"]),
    ("snapshot (phase 2: new versions)", ["snapshot", "--vars", "phase: 2"]),
    # a run whose rows break a model's enforced contract fails, naming the constraint; the table
    # is unchanged (the test step's contracted_prices_unchanged)
    ("run (a contract broken: fails, writes nothing)",
     ["run", "--select", "contracted_prices", "--vars", "{phase: 2, break_contract: true}"]),
    ("test", ["test", "--vars", "phase: 2"]),
    # zero-copy copies of everything in other schemas (the state: this run's manifest)
    ("clone (phase 2: shallow clones)", ["clone", "--state", "target", "--target", "clones", "--target-path", "target/clones",
                                         "--full-refresh", "--vars", "phase: 2"]),
    ("check the clones", ["run-operation", "check_clones", "--target", "clones", "--target-path", "target/clones",
                          "--args", "{source_schema: integration}", "--vars", "phase: 2"]),
]

# steps that must fail, and what their error must name
MUST_FAIL = {"run (a contract broken: fails, writes nothing)": "CHECK constraint positive_price (price > 0)"}


def main(argv: list[str]) -> int:
    project = os.path.abspath(argv[0]) if argv else PROJECT
    profiles = os.path.abspath(argv[1]) if len(argv) > 1 else project
    os.chdir(project)
    runner = dbtRunner()
    common = ["--project-dir", project, "--profiles-dir", profiles]
    for title, args in STEPS:
        if "clones" in args and not _has_target(profiles, "clones"):
            continue  # another profile (a cluster, an object store): no clones target in it
        print(f"\n=== dbt {title} ===", flush=True)
        res = runner.invoke([*args, *common])
        if res.result is not None and hasattr(res.result, "results"):
            for r in res.result.results:
                msg = getattr(r, "adapter_response", {}).get("_message") or r.message or ""
                name = r.node.name if hasattr(r, "node") else r.unique_id  # run-operation: no node
                print(f"  {r.status!s:>7}  {name:<45} {msg}")
        if title in MUST_FAIL:
            if res.success or not _failed_with(res, MUST_FAIL[title]):
                print(f"dbt {title}: expected a failure naming {MUST_FAIL[title]!r}", file=sys.stderr)
                return 1
            continue
        if not res.success:
            print(f"dbt {title} failed", file=sys.stderr)
            if res.exception is not None:
                print(res.exception, file=sys.stderr)
            return 1
    print("\nmain job passed: seeds loaded, tables created, merged, snapshotted, and tested")
    return 0


def _failed_with(res: object, text: str) -> bool:
    results = getattr(getattr(res, "result", None), "results", None) or ()
    return any(str(r.status) == "error" and text in (r.message or "") for r in results)


def _has_target(profiles: str, name: str) -> bool:
    import yaml

    with open(os.path.join(profiles, "profiles.yml")) as f:
        outputs = (yaml.safe_load(f) or {}).get("integration_tests", {}).get("outputs", {})
    return name in outputs


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
