"""Tablets open in the Parquet readers of Spark 3.5, the Spark most lakehouses run today
(docs/FORMAT.md, "Tablets and row numbers": writers use only the encodings its vectorized reader
decodes). A table of every column type the engine writes, with the encodings the writer picks
(dictionaries, plain pages after a dictionary's fallback, ``DELTA_BINARY_PACKED``), inserted and
merged into, then each live tablet read by a real PySpark 3.5 process with its vectorized reader
and its row reader: the same values, column by column, as this Spark reads from the same files.

Opt-in (``TABLETS_SLOW=1``): the PySpark 3.5 venv is built on first use (~1 min, cached under
the temp directory)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
import tablets
from pyspark.sql.types import MapType, StructType

pytestmark = [
    pytest.mark.spark,
    pytest.mark.skipif(
        not os.environ.get("TABLETS_SLOW"),
        reason="opt-in (TABLETS_SLOW=1): a PySpark 3.5 venv (~1 min to build once) reads the tablets",
    ),
]

COLUMNS = (
    "id BIGINT, b BOOLEAN, i8 TINYINT, i16 SMALLINT, i32 INT, f FLOAT, v DOUBLE, few DOUBLE, "
    "dec DECIMAL(12,2), dec38 DECIMAL(38,10), s STRING, bin BINARY, d DATE, ts TIMESTAMP, "
    "tsn TIMESTAMP_NTZ, arr ARRAY<BIGINT>, st STRUCT<a: BIGINT, c: STRING>, m MAP<STRING, BIGINT>"
)
# 300k rows: three row groups; columns of many values get their own encodings, `few` a dictionary
ROWS = """
SELECT id, id % 3 = 0, CAST(id % 100 AS TINYINT), CAST(id % 30000 AS SMALLINT), CAST(id * 7919 % 2000000000 AS INT),
       CAST(id / 7.0 AS FLOAT), id / 64.0, CAST(id % 4 AS DOUBLE),
       CAST(id * 1.25 AS DECIMAL(12,2)), CAST(id * 1.0000000001 AS DECIMAL(38,10)), CONCAT('s', id),
       CAST(CONCAT('b', id % 50) AS BINARY), DATE_ADD(DATE'2000-01-01', CAST(id % 9000 AS INT)),
       TIMESTAMP_MICROS(id * 1000003), CAST(TIMESTAMP_MICROS(id * 999983) AS TIMESTAMP_NTZ),
       ARRAY(id, id + 1), NAMED_STRUCT('a', id, 'c', CONCAT('c', id % 7)), MAP(CONCAT('k', id % 5), id)
FROM RANGE(300000)
"""

# run by PySpark 3.5: for each file and each reader, the rows and one sum of hashes per column
READER = r"""
import json, sys
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.sql.session.timeZone", "UTC").getOrCreate())
out = {"version": spark.version}
for vectorized in ("true", "false"):
    spark.conf.set("spark.sql.parquet.enableVectorizedReader", vectorized)
    out[vectorized] = {p: spark.read.parquet(p).selectExpr(*json.loads(sys.argv[2])).first()[0:]
                       for p in json.loads(sys.argv[1])}
print(json.dumps(out, default=str))
"""


def fingerprint(schema: StructType) -> list[str]:
    """``count(*)`` and ``sum(hash(c))`` per column (a map by its entries: Spark hashes no maps)."""
    cols = [f"map_entries(`{f.name}`)" if isinstance(f.dataType, MapType) else f"`{f.name}`" for f in schema.fields]
    return ["count(*)", *[f"sum(hash({c}))" for c in cols]]


def _env() -> dict[str, str]:
    """PySpark 3.5's own Spark: none of this process's Spark settings or package path."""
    drop = ("PYSPARK_", "SPARK_")
    return {k: v for k, v in os.environ.items() if not k.startswith(drop) and k != "PYTHONPATH"}


def test_tablets_open_in_spark_35_readers(spark, tmp_path):
    from support.spark_servers import older_spark_python

    python = older_spark_python()
    db = tablets.connect(spark=spark)
    db.sql("CREATE DATABASE IF NOT EXISTS older")
    t = "older.every_type"
    db.sql(f"DROP TABLE IF EXISTS {t}")
    db.sql(f"CREATE TABLE {t} ({COLUMNS}) USING tablets")
    db.sql(f"INSERT INTO {t} {ROWS}")
    db.sql(  # new tablets and deletion vectors
        f"MERGE INTO {t} t USING (SELECT * FROM {t} WHERE id % 1000 = 0) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v + 0.5, s = CONCAT(s.s, '!')"
    )
    table = db.table_of(t)
    snap = table.snapshot()
    paths = [table.tablet_path(st) for st in snap.tablets.values()]
    assert len(paths) >= 2 and any(st.dv is not None for st in snap.tablets.values())
    exprs = fingerprint(spark.read.parquet(*paths).schema)  # the files' own (physical) names
    ours = {p: list(spark.read.parquet(p).selectExpr(*exprs).first()) for p in paths}

    got = subprocess.run(
        [python, "-c", READER, json.dumps(paths), json.dumps(exprs)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=600,
    )
    assert got.returncode == 0, got.stderr[-3000:]
    theirs = json.loads(got.stdout.strip().splitlines()[-1])
    assert theirs["version"].startswith("3.5")
    for vectorized in ("true", "false"):
        for p in paths:
            assert [str(x) for x in theirs[vectorized][p]] == [str(x) for x in ours[p]], (vectorized, p)
