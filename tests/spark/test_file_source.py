"""A source that is only Parquet files on this disk is read by Arrow (``spark.file_source``),
with exactly the rows and types ``DataFrame.toArrow`` gives, and left to Spark wherever Arrow's
read could differ."""

import datetime
import decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from tablets.spark.file_source import local_parquet_rows

pytestmark = pytest.mark.spark

ROWS = pa.table(
    {
        "id": pa.array([3, 1, None, 2], pa.int64()),
        "k": pa.array([1, 2, 3, None], pa.int32()),
        "v": pa.array([0.5, float("nan"), -0.0, None], pa.float64()),
        "s": pa.array(["a", "", None, "é"], pa.string()),
        "d": pa.array([datetime.date(2020, 1, 2), None, datetime.date(1582, 10, 15), datetime.date(9999, 12, 31)]),
        "m": pa.array(
            [decimal.Decimal("1.25"), None, decimal.Decimal("-3.50"), decimal.Decimal("0.00")], pa.decimal128(9, 2)
        ),
        "b": pa.array([True, None, False, True]),
        "raw": pa.array([b"\x00", None, b"", b"xy"], pa.binary()),
    }
)


def files(tmp_path, *tables, name="src"):
    """``tables`` as Parquet files of one directory (as another engine would write them)."""
    d = tmp_path / name
    d.mkdir()
    for i, t in enumerate(tables):
        pq.write_table(t, d / f"part-{i}.parquet")
    return str(d)


def same_as_spark(frame: DataFrame) -> pa.Table:
    got = local_parquet_rows(frame)
    assert got is not None
    want = frame.toArrow()
    assert got.schema == want.schema
    assert _rows(got) == _rows(want)  # (the files in another order: a source's rows have none)
    return got


def _rows(t: pa.Table) -> list[str]:
    return sorted(repr(r) for r in t.to_pylist())  # NaN != NaN, but prints alike


def test_files_read_by_arrow_give_sparks_rows_and_types(spark, tmp_path):
    where = files(tmp_path, ROWS, ROWS.slice(1, 2))
    got = same_as_spark(spark.read.parquet(where))
    assert got.num_rows == 6
    same_as_spark(spark.read.parquet(where).select("s", "id"))  # a projection of its columns
    ddl = "id BIGINT, k INT, v DOUBLE, s STRING, d DATE, m DECIMAL(9,2), b BOOLEAN, raw BINARY"
    same_as_spark(spark.read.schema(ddl).parquet(where))
    spark.read.parquet(where).createOrReplaceTempView("file_source_view")
    same_as_spark(spark.table("file_source_view"))


def test_large_var_types_as_spark_gives_them(spark, tmp_path):
    where = files(tmp_path, ROWS)
    key = "spark.sql.execution.arrow.useLargeVarTypes"
    before = spark.conf.get(key, "false")
    try:
        for large in ("true", "false"):
            spark.conf.set(key, large)
            same_as_spark(spark.read.parquet(where))
    finally:
        spark.conf.set(key, before)


@pytest.mark.parametrize(
    "case",
    [
        "filtered",
        "computed",
        "a column twice",
        "timestamp",
        "before the reform",
        "missing column",
        "other type",
        "unsigned",
        "names alike but for case",
        "partitioned",
        "json",
        "nested",
    ],
)
def test_spark_reads_what_arrow_could_read_otherwise(spark, tmp_path, case):
    """Each of these is left to Spark (None): its rows or its errors are Spark's to give."""
    plain = files(tmp_path, ROWS)
    frame = {
        "filtered": lambda: spark.read.parquet(plain).filter(F.col("id") > 1),
        "computed": lambda: spark.read.parquet(plain).select((F.col("id") + 1).alias("id")),
        "a column twice": lambda: spark.read.parquet(plain).select("id", "id"),
        "timestamp": lambda: spark.read.parquet(
            files(
                tmp_path,
                pa.table({"t": pa.array([datetime.datetime(2020, 1, 1)], pa.timestamp("us", "UTC"))}),
                name="ts",
            )
        ),
        "before the reform": lambda: spark.read.parquet(
            files(tmp_path, pa.table({"d": pa.array([datetime.date(1500, 1, 1)])}), name="old")
        ),
        "missing column": lambda: spark.read.schema("id BIGINT, absent STRING").parquet(plain),
        "other type": lambda: spark.read.schema("k BIGINT").parquet(plain),  # int32 in the file
        "unsigned": lambda: spark.read.parquet(files(tmp_path, pa.table({"u": pa.array([1], pa.uint32())}), name="u")),
        "names alike but for case": lambda: spark.read.schema("id BIGINT").parquet(
            files(tmp_path, pa.table({"id": [1], "ID": [2]}), name="case")
        ),
        "partitioned": lambda: _partitioned(spark, tmp_path),
        "json": lambda: spark.read.json(_json(tmp_path)),
        "nested": lambda: spark.read.parquet(
            files(tmp_path, pa.table({"n": pa.array([{"a": 1}], pa.struct([("a", pa.int64())]))}), name="nested")
        ),
    }[case]()
    assert local_parquet_rows(frame) is None


def test_columns_matched_by_field_id_are_sparks_to_read(spark, tmp_path):
    frame = spark.read.parquet(files(tmp_path, ROWS))
    key = "spark.sql.parquet.fieldId.read.enabled"
    spark.conf.set(key, "true")
    try:
        assert local_parquet_rows(frame) is None
    finally:
        spark.conf.unset(key)
    assert local_parquet_rows(frame) is not None


def _partitioned(spark, tmp_path):
    d = tmp_path / "parted"
    (d / "p=1").mkdir(parents=True)
    pq.write_table(ROWS, d / "p=1" / "part-0.parquet")
    return spark.read.parquet(str(d))


def _json(tmp_path):
    p = tmp_path / "rows.json"
    p.write_text('{"id": 1}\n')
    return str(p)


def test_a_merge_of_a_parquet_file_source_reads_it_without_a_spark_job(spark, tmp_path, monkeypatch):
    """The driver plan's source read by Arrow: the MERGE never asks Spark to collect it, and its
    result is the one Spark's read of the same files gives."""
    import tablets

    db = tablets.connect(spark=spark)
    db.sql("CREATE DATABASE IF NOT EXISTS fs")
    db.sql("DROP TABLE IF EXISTS fs.t")
    db.sql("CREATE TABLE fs.t (id BIGINT, s STRING, d DATE) USING tablets")
    db.sql("INSERT INTO fs.t VALUES (1, 'one', DATE'2020-01-01'), (2, 'two', NULL)")
    src = pa.table({"id": pa.array([2, 3], pa.int64()), "s": ["TWO", "three"], "d": [None, datetime.date(2021, 5, 6)]})
    spark.read.parquet(files(tmp_path, src)).createOrReplaceTempView("fs_src")
    collected = []
    real = DataFrame.toArrow
    monkeypatch.setattr(DataFrame, "toArrow", lambda self: collected.append(self) or real(self))
    m = db.sql(
        "MERGE INTO fs.t t USING fs_src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    ).metrics
    monkeypatch.undo()
    assert collected == [] and m.source_by_arrow
    rows = sorted(tuple(r) for r in db.sql("SELECT id, s, d FROM fs.t").collect())
    assert rows == [(1, "one", datetime.date(2020, 1, 1)), (2, "TWO", None), (3, "three", datetime.date(2021, 5, 6))]
