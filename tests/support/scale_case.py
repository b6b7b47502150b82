"""A MERGE, a DELETE and an OPTIMIZE on a table of many rows, all on Spark's plan, and what they
leave: the statements' counts and a digest of the rows after each. The cluster suite runs it
on the standalone cluster and, in a child process, on an embedded ``local[2]`` session
(``python -m support.scale_case WAREHOUSE ROWS``), and asks for the same answer from both.

The rows are a formula of their id, so that no data is shipped: ``big`` holds ``rows`` ids; the
source holds ``rows / 50`` ids spread over twice the table's id range (about half pair with a
target row, half are new), and one in seven of the pairs deletes its row. The DELETE then
takes 40% of every tablet's rows, which makes every tablet one OPTIMIZE rewrites.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from tablets.engine.rewrite import REWRITE_CONF
from tablets.engine.route import DRIVER_SCAN_CONF, DRIVER_WRITE_CONF

from support.conf import settings

SPARK_PLAN = {DRIVER_SCAN_CONF: "0", DRIVER_WRITE_CONF: "0", REWRITE_CONF: "0"}
STEP = 7919  # a prime: ``i * STEP % (2 * rows)`` takes distinct values for i < 2 * rows


def _digest(db) -> dict[str, Any]:
    """The live rows' count and an order-free digest of their values (Spark's xxhash64 is the
    same in every session)."""
    row = db.sql(
        "SELECT count(*) AS n, CAST(sum(CAST(xxhash64(id, k, v, s) AS DECIMAL(38, 0))) AS STRING) AS h, "
        "CAST(sum(v) AS STRING) AS v FROM big"
    ).collect()[0]
    return {"rows": row.n, "hash": row.h, "sum_v": row.v}


def _counts(result) -> list[int]:
    m = result.metrics
    return [m.rows_inserted, m.rows_updated, m.rows_deleted]


def run(db, rows: int) -> dict[str, Any]:
    """The statements on ``db``'s session (Spark's plan forced), with their counts and digests."""
    out: dict[str, Any] = {}
    with settings(db.spark, SPARK_PLAN):
        db.sql("DROP TABLE IF EXISTS big")
        db.sql("CREATE TABLE big (id BIGINT, k INT, v DOUBLE, s STRING) USING tablets")
        db.sql(
            "INSERT INTO big SELECT id, CAST(id % 997 AS INT), id / 4.0, concat('r', CAST(id AS STRING)) "
            f"FROM range({rows})"
        )
        out["insert"] = _digest(db)
        db.spark.sql(
            f"SELECT id * {STEP} % {2 * rows} AS id, CAST(id % 7 AS INT) AS k, -1.0 * id AS v, "
            f"concat('m', CAST(id AS STRING)) AS s FROM range({rows // 50})"
        ).createOrReplaceTempView("big_changes")
        merged = db.sql(
            "MERGE INTO big t USING big_changes c ON t.id = c.id "
            "WHEN MATCHED AND c.k = 0 THEN DELETE "
            "WHEN MATCHED THEN UPDATE SET v = c.v, s = c.s "
            "WHEN NOT MATCHED THEN INSERT *"
        )
        out["merge"] = {"counts": _counts(merged), "on_driver": merged.metrics.merged_on_driver, **_digest(db)}
        deleted = db.sql("DELETE FROM big WHERE id % 5 < 2")
        out["delete"] = {"counts": _counts(deleted), **_digest(db)}
        optimized = db.sql("OPTIMIZE big").collect()[0]
        snap = db.table_of("big").snapshot()
        out["optimize"] = {
            "removed": optimized.numFilesRemoved,
            "dvs_left": sum(1 for st in snap.tablets.values() if st.dv is not None),
            **_digest(db),
        }
    return out


if __name__ == "__main__":  # the same statements on an embedded local[2] session, as JSON
    import tablets

    warehouse, rows = sys.argv[1], int(sys.argv[2])
    local = tablets.connect(warehouse=warehouse, master="local[2]")
    print(json.dumps(run(local, rows)))
