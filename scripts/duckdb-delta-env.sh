#!/usr/bin/env bash
# The tests' third Delta reader: DuckDB's delta extension. Its pip package is built for one DuckDB
# release (1.4.4), older than the DuckDB the differential harness compares with, so it lives in an
# interpreter of its own under .venv; tests/support/duckdb_delta.py talks to it over a pipe.
set -euo pipefail
PYTHON="${1:?usage: duckdb-delta-env.sh PYTHON DIR}"
DIR="${2:?usage: duckdb-delta-env.sh PYTHON DIR}"
rm -rf "$DIR"
"$PYTHON" -m venv "$DIR"
"$DIR/bin/pip" install --quiet --upgrade pip
"$DIR/bin/pip" install --quiet 'duckdb==1.4.4' 'duckdb-ext==0.1.2' 'duckdb-ext-delta==1.4.4.20260205' 'duckdb-ext-httpfs==1.4.4.20260205' 'pyarrow>=18'
