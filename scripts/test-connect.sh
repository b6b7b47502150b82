#!/usr/bin/env bash
# The opt-in Spark Connect suite (tests/connect): a real Spark Connect server on 127.0.0.1 (from
# the installed PySpark, its Python workers without tablets); every statement kind through a
# Connect session, and the integration project's main job through `remote: sc://...`. Its own
# pytest process: a Connect session switches PySpark into Connect mode for the process. About
# 3 minutes on 2 cores. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
# the Connect client's packages (the `connect` extra), once
.venv/bin/python -c "import grpc, grpc_status, zstandard" 2>/dev/null || .venv/bin/pip install --quiet -e '.[connect]'
TABLETS_CONNECT=1 exec nice .venv/bin/python -m pytest tests/connect -ra "$@"
