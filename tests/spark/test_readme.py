"""The README is a test: each of its code blocks is either run here as printed (its Python and SQL
examples, in order, in one fresh process, as a reader pastes them; tests/support/readme.py) or
named below with the test that runs it or why it is not run. A new block that is neither fails."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from support import readme

pytestmark = pytest.mark.spark

# the blocks run in order, by their first line
RUN = [
    "import tablets\n\ndb = tablets.connect",  # the Python API: stock, MERGE, EXPLAIN, the builder
    'import tablets\ndb = tablets.connect(warehouse="/tmp/wh")\ndb.spark.conf.set',  # Spark's plan from here
    "DESCRIBE HISTORY stock LIMIT 5",
    'import tablets\ndb = tablets.connect(warehouse="/tmp/wh")\ndb.sql("CREATE TABLE t (id INT',  # the change feed
    "CREATE TABLE stock_dev SHALLOW CLONE stock",
    "DESCRIBE EXTENDED stock",
    "ALTER TABLE stock ADD COLUMNS",
    "MERGE WITH SCHEMA EVOLUTION INTO stock",
    "CREATE TABLE orders (id BIGINT NOT NULL",
    'db = tablets.connect(warehouse="s3://lake/warehouse",',  # on the tests' S3 server (its bucket: lake)
    "from deltalake import DeltaTable, QueryBuilder",
    "CREATE TABLE events USING tablets LOCATION '/data/delta/events'",  # the Delta tables: written first, below
    'db.sql("CREATE TABLE tablets.`/data/stock`',
]

# the others: where they run, or why not here
ELSEWHERE = {
    "make main": "the README's two commands: CI runs `make test`; `make main` is the main job",
    "# profiles.yml": "tests/functional/test_warm_default.py (the same keys), integration_tests/profiles.yml",
    "-- models/stock.sql": "tests/functional/test_dbt_conventions.py::TestReadmeExamples (run twice, as printed)",
    "# models/stock_py.py": "tests/functional/test_dbt_conventions.py::TestReadmeExamples",
    "MERGE INTO analytics.stock AS t": "the SQL the stock model renders (test_dbt_conventions reads target/run)",
    "models:": "tests/functional/test_readme_config.py (run as printed: every model it configures, run twice)",
    "python -m tablets.spark.metastore": "tests/spark/test_metastore.py serves a metastore on a free port",
    'db = tablets.connect(warehouse="/data/wh", metastore_uri=': "tests/spark/test_metastore.py",
    "scripts/test-cluster.sh": "the opt-in suites themselves",
    "macros/            the Jinja": "the layout, not code: tests/unit/test_layers.py holds it",
}


def _kind(block: readme.Block) -> tuple[str, str]:
    run = [r for r in RUN if block.text.startswith(r)]
    other = [k for k in ELSEWHERE if block.text.startswith(k)]
    assert len(run) + len(other) == 1, f"README.md:{block.line} ({block.first!r}): list it once in RUN or ELSEWHERE"
    return ("run", run[0]) if run else ("elsewhere", other[0])


def test_every_readme_block_is_run_here_or_named():
    kinds = [_kind(b) for b in readme.blocks()]
    assert [k for kind, k in kinds if kind == "run"] == RUN  # in the README's order
    assert {k for kind, k in kinds if kind == "elsewhere"} == set(ELSEWHERE)


def _delta_tables(work) -> None:
    """The adoption example's premise: Delta tables another engine (delta-rs) wrote."""
    import pyarrow as pa
    from deltalake import write_deltalake

    for name in ("events", "clicks"):
        write_deltalake(str(work / "data" / "delta" / name), pa.table({"id": [1, 2], "v": ["a", "b"]}))


def test_the_readme_examples_run_as_printed(tmp_path, s3_server):
    lines = [b.line for b in readme.blocks() if _kind(b)[0] == "run"]
    _delta_tables(tmp_path)
    out = subprocess.run(
        [sys.executable, "-m", "support.readme", str(tmp_path), *map(str, lines)],
        cwd=tmp_path,  # (a warehouse on an object store keeps Spark's own files under ./.tablets)
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-6000:]
    done = [json.loads(ln) for ln in out.stdout.splitlines() if ln.startswith('{"block"')]
    assert [d["block"] for d in done] == lines
    assert "res.metrics.rows_updated == 1" in done[0]["checked"]  # the README's stated result
    assert any(k.startswith("warehouse/readings/_delta_log/") for k in s3_server.keys("warehouse/readings"))
