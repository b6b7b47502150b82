#!/usr/bin/env bash
# The opt-in cluster suite (tests/cluster): a real standalone Spark cluster (a master and two
# one-core workers on 127.0.0.1, from the installed PySpark) whose executors run a venv with only
# the `worker` extra; the differential MERGE cases, deletion vectors written by executors, and
# the integration project's main job through `master: spark://...`, and a MERGE, DELETE and
# OPTIMIZE of a 10M-row table on Spark's plan, checked against local mode
# (TABLETS_CLUSTER_SCALE_ROWS to change its size). Its own pytest process: a driver process
# holds one SparkContext. About 5 minutes on 2 cores (the worker venv is built
# once, ~20 s, and cached under the temp directory). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
TABLETS_CLUSTER=1 exec nice .venv/bin/python -m pytest tests/cluster -ra "$@"
