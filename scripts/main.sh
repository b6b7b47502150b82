#!/usr/bin/env bash
# The README's main job: the integration_tests dbt project on embedded Spark.
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python scripts/main.py
