# The two set-up commands of the README: `make main` and `make test`.
# Both create .venv (Python 3.11) on first use and check for Java 17.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
STAMP := $(VENV)/.installed
TEST_WORKERS ?= 2

.PHONY: main test lint bench java clean

java:
	@bash scripts/check-java.sh

$(STAMP): pyproject.toml scripts/duckdb-delta-env.sh
	@bash scripts/check-java.sh
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[test]'
	bash scripts/duckdb-delta-env.sh $(PYTHON) $(VENV)/duckdb-delta
	@touch $(STAMP)

main: java $(STAMP)
	bash scripts/main.sh

# two processes, one Spark session each, a file at a time (pytest-xdist): on 2 cores one runs
# while the other waits on py4j, dbt's parsing or a child process (three were slower:
# bench/RESULTS.md). Files go out in the order tests/conftest.py gives, the longest first
# (xdist would otherwise send the files of most tests first, and the one-test generated
# harness last, alone)
test: java $(STAMP)
	$(VENV)/bin/python -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

lint: $(STAMP)
	$(VENV)/bin/ruff check adapter dbt tests bench
	$(VENV)/bin/ruff format --check adapter dbt tests bench
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) .tablets integration_tests/target integration_tests/logs
