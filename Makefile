# The two set-up commands of the README: `make main` and `make test`.
# Both create .venv (Python 3.11) on first use and check for Java 17.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
STAMP := $(VENV)/.installed
TEST_WORKERS ?= 3

.PHONY: main test lint bench java clean

java:
	@bash scripts/check-java.sh

$(STAMP): pyproject.toml
	@bash scripts/check-java.sh
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[test]'
	@touch $(STAMP)

main: java $(STAMP)
	bash scripts/main.sh

# three processes, one Spark session each, a file at a time (pytest-xdist): on 2 cores each
# waits part of its time on py4j, dbt's parsing or a child process's start-up, which the
# third fills (bench/RESULTS.md: the suite's wall time with 2 and 3)
test: java $(STAMP)
	$(VENV)/bin/python -m pytest -n $(TEST_WORKERS) --dist loadfile

lint: $(STAMP)
	$(VENV)/bin/ruff check adapter dbt tests bench
	$(VENV)/bin/ruff format --check adapter dbt tests bench
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) .tablets integration_tests/target integration_tests/logs
