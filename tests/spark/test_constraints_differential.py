"""Two implementations, one answer: the driver plan checks constraints in Arrow
(``engine.constraints.arrow_labels``), Spark's plan with one SQL column (``violation_sql``).
For generated rows (NULLs included) and CHECK expressions of the Arrow subset, both name the
same constraint for every row: SQL's three-valued logic (a NULL CHECK passes) in both."""

import random

import pyarrow as pa
import pytest
from tablets.engine.constraints import arrow_labels, violation_sql
from tablets.storage.actions import Metadata

pytestmark = pytest.mark.spark

CHECKS = [
    "v > 0",
    "v % 3 <> 1",
    "v BETWEEN -2 AND 5",
    "s IN ('a', 'b')",
    "v IS NULL OR v < 4",
    "NOT (v = 2)",
    "s = 'a' AND v >= 0",
    "s <> 'c' OR v > 1",
    "w * 2 > v",
    "flag",
    "flag IS NOT TRUE OR v > 0",
]


def _rows(rng, n):
    def pick(values):
        return [rng.choice(values) for _ in range(n)]

    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "v": pa.array(pick([None, -3, -1, 0, 1, 2, 3, 4, 6, 7]), pa.int32()),
            "w": pa.array(pick([None, -1, 0, 2, 5]), pa.int64()),
            "s": pa.array(pick([None, "a", "b", "c", ""]), pa.string()),
            "flag": pa.array(pick([None, True, False]), pa.bool_()),
        }
    )


@pytest.mark.parametrize("seed", range(6))
def test_arrow_and_spark_name_the_same_constraint_for_every_row(spark, seed):
    rng = random.Random(seed)
    picked = rng.sample(CHECKS, 3)
    schema = (("id", "bigint", True), ("v", "int", rng.random() < 0.5), ("w", "bigint", True), ("s", "string", True),
              ("flag", "boolean", True))  # fmt: skip
    props = tuple(sorted((f"delta.constraints.c{i}", e) for i, e in enumerate(picked)))
    meta = Metadata("t", schema, properties=props)
    rows = _rows(rng, 60)
    ours = arrow_labels(meta, rows)
    assert ours is not None, picked  # every expression here is in Arrow's subset
    frame = spark.createDataFrame(
        [tuple(r.values()) for r in rows.to_pylist()], "id bigint, v int, w bigint, s string, flag boolean"
    )
    sql = violation_sql(meta, {n: n for n in meta.column_names})
    theirs = {r["id"]: r["label"] for r in frame.selectExpr("id", f"{sql} AS label").collect()}
    assert [theirs[i] for i in range(rows.num_rows)] == ours.to_pylist(), picked
