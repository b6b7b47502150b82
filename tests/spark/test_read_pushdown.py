"""Queries of tablet tables through the front door (and so dbt) on Spark's own Parquet scan
(``tablets.reads``): the same rows as the same data in a plain Parquet table for every kind
of filter, tablets skipped by their statistics (counted in the debug records of ``tablets.reads``), deletion
vectors, columns added later, time travel, tables by path, self-joins, and damaged tablets."""

import datetime as dt
import decimal
import os
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import tablets
from support.damage import add_tablet_with_id, add_tablet_without_row_ids, damage, restore
from tablets import reads
from tablets.exceptions import FormatError
from tablets.spark.read_frames import READ_NATIVE_CONF
from tablets.storage import RowLevelSink
from tablets.storage.tablet import ROW_ID, row_id_tag

pytestmark = pytest.mark.spark

SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("k", pa.int32()),
        ("s", pa.string()),
        ("d", pa.date32()),
        ("m", pa.decimal128(8, 2)),
        ("x", pa.float64()),
        ("f", pa.bool_()),
    ]
)
D0 = dt.date(2021, 1, 1)


def _part(lo: int, hi: int) -> pa.Table:
    ids = list(range(lo, hi))
    return pa.table(
        {
            "id": ids,
            "k": [None if i % 11 == 0 else i % 7 for i in ids],
            "s": [None if i % 13 == 0 else f"{'ab'[i % 2]}{i:04d}" for i in ids],
            "d": [D0 + dt.timedelta(days=i // 10) for i in ids],
            "m": [decimal.Decimal(i) / 4 for i in ids],
            "x": [float("nan") if i % 17 == 0 else i / 8 for i in ids],
            "f": [None if i % 5 == 0 else i % 3 == 0 for i in ids],
        },
        schema=SCHEMA,
    )


@pytest.fixture(scope="module")
def db(spark, tmp_path_factory):
    """``rd.t``: 4 tablets of 100 ids each (0-99, 100-199, ...), rows deleted from two, and a
    column ``c`` added after the first three; ``rd.plain``: its live rows as a Parquet table."""
    d = tablets.connect(spark=spark)
    d.sql("CREATE DATABASE IF NOT EXISTS rd")
    d.sql("DROP TABLE IF EXISTS rd.t")
    d.sql("CREATE TABLE rd.t (id BIGINT, k INT, s STRING, d DATE, m DECIMAL(8,2), x DOUBLE, f BOOLEAN) USING tablets")
    t = d.table_of("rd.t")
    for lo in (0, 100, 200):
        t.append(_part(lo, lo + 100))
    t.add_columns([("c", "int")])
    last = _part(300, 400)
    t.append(last.append_column("c", pa.array([i % 4 for i in range(100)], pa.int32())))
    first, _, third, _ = list(t.snapshot().tablets)
    h = t.begin_delete()
    sink = RowLevelSink(h)
    sink.delete([first] * 3 + [third] * 2, [0, 50, 99, 10, 64])
    t.finish(h, sink.finish())
    plain = tmp_path_factory.mktemp("plain")
    pq.write_table(t.read(), os.path.join(plain, "part-0.parquet"))
    d.sql("DROP TABLE IF EXISTS rd.plain")
    spark.sql(f"CREATE TABLE rd.plain USING parquet LOCATION '{plain}'")
    return d


def rows_of(records):
    """Sorted rows, NaN as "NaN" (it equals nothing, itself included); NULLs last."""
    nan = lambda v: "NaN" if isinstance(v, float) and v != v else v  # noqa: E731
    key = lambda r: tuple((v is None, v == "NaN", 0 if v is None or v == "NaN" else v) for v in r)  # noqa: E731
    return sorted((tuple(nan(v) for v in r) for r in records), key=key)


def rows(df):
    return rows_of(df.collect())


FILTERS = [
    "id BETWEEN 120 AND 130",
    "id >= 395",
    "150 > id",
    "id = 50",
    "id <> 7 AND id < 20",
    "id IN (1, 99, 250, 399)",
    "NOT id IN (1, 2, 3) AND id < 10",
    "id IN (3, NULL)",
    "NOT id IN (3, NULL)",
    "k IS NULL",
    "k <=> 3 AND id < 50",
    "NOT (k = 3)",
    "k = 3 OR s = 'a0100'",
    "s = 'b0201'",
    "s LIKE 'a01%'",
    "s LIKE '%99'",
    "s > 'b0390'",
    "s IS NULL",
    "d >= DATE'2021-01-30' AND d < '2021-02-02'",
    "d BETWEEN '2021-01-11' AND '2021-01-12'",
    "m = 25.25",
    "m > 99",
    "x > 49",
    "x = double('NaN')",
    "NOT f",
    "f IS NULL",
    "c = 3",
    "c IS NULL",
    "NOT (c = 1)",
    "c IN (0, 7)",
]


def test_front_door_rows_equal_plain_parquet(db, spark, native_reads):
    """Every filter kind (NULLs, strings, dates, decimals, NaN, booleans, IN, NOT, OR, LIKE,
    BETWEEN, a column old tablets do not have) reads the rows the plain Parquet copy gives. One
    statement: a UNION ALL of one SELECT per filter, each reference its own view and pruning."""
    cols = "id, k, s, d, m, x, f, c"
    union = " UNION ALL ".join(f"SELECT {i} AS q, {cols} FROM rd.t WHERE {w}" for i, w in enumerate(FILTERS))
    got = rows(db.sql(union))
    read = native_reads()
    assert len(read) == len(FILTERS) and sum(t["tablets_pruned"] for t in read) > 0
    # the reference: each filter's truth per row of the copy, without Parquet filter pushdown
    # (its min/max skipping loses NaN rows: x = double('NaN') reads no row of the copy with it)
    truth = ", ".join(f"coalesce({w}, false) AS q{i}" for i, w in enumerate(FILTERS))
    spark.conf.set("spark.sql.parquet.filterPushdown", "false")
    try:
        copy = spark.sql(f"SELECT {cols}, {truth} FROM rd.plain").collect()
    finally:
        spark.conf.unset("spark.sql.parquet.filterPushdown")
    for i, where in enumerate(FILTERS):
        want = rows_of([r[:8] for r in copy if r[f"q{i}"]])
        assert [r[1:] for r in got if r[0] == i] == want, where
        assert want or where in ("id = 50", "id IN (3, NULL)", "NOT id IN (3, NULL)"), where  # 50: deleted


def test_tablets_skipped_by_their_statistics(db, spark, native_reads):
    def pruned(sql):
        db.sql(sql).collect()
        return [(t["tablets"], t["tablets_pruned"]) for t in native_reads()]

    assert pruned("SELECT * FROM rd.t") == [(4, 0)]
    assert pruned("SELECT * FROM rd.t WHERE id BETWEEN 120 AND 130") == [(4, 3)]
    assert pruned("SELECT count(*) FROM rd.t x WHERE x.id >= 395 AND s LIKE 'a%'") == [(4, 3)]
    assert pruned("SELECT * FROM rd.t WHERE d < '2021-01-11'") == [(4, 3)]  # ids 0-99
    assert pruned("SELECT * FROM rd.t WHERE c = 3") == [(4, 3)]  # old tablets: c is NULL
    assert pruned("SELECT * FROM rd.t WHERE c IS NULL") == [(4, 1)]  # the newest has no NULL c
    assert pruned("SELECT * FROM rd.t WHERE id = 5000") == [(4, 4)]
    assert rows(db.sql("SELECT * FROM rd.t WHERE id = 5000")) == [] and native_reads() == [
        {"table": "rd.t", "version": db.table_of("rd.t").version, "tablets": 4, "tablets_pruned": 4}
    ]
    # a join or an OR: no skipping on that side, rows still right
    assert pruned("SELECT a.id FROM rd.t a JOIN rd.t b ON a.id = b.id + 1 WHERE a.id < 5") == [(4, 0), (4, 0)]
    assert pruned("SELECT * FROM rd.t WHERE id < 5 OR id > 395") == [(4, 0)]


def test_dates_before_the_gregorian_reform_are_found_by_their_filters(db, spark):
    """Spark's Parquet pushdown passed DATE literals as java.sql.Date (the Julian calendar
    before 1582-10-15): DATE'1582-10-10', a day that calendar lacks, matched no row of a tablet
    holding it. Embedded sessions pass them as java.time values (``session_conf``)."""
    db.sql("CREATE TABLE rd.reform (d DATE, v INT) USING tablets")
    db.sql("INSERT INTO rd.reform VALUES (DATE'1582-10-10', 1), (DATE'1500-03-01', 2), (DATE'2020-01-01', 3)")
    for where, want in [
        ("d = DATE'1582-10-10'", [(1,)]),
        ("d = DATE'1500-03-01'", [(2,)]),
        ("d < DATE'1600-01-01'", [(1,), (2,)]),
        ("d BETWEEN DATE'1582-10-05' AND DATE'1582-10-14'", [(1,)]),
    ]:
        assert rows(db.sql(f"SELECT v FROM rd.reform WHERE {where}")) == want, where
        assert rows(spark.sql(f"SELECT v FROM rd.reform WHERE {where}")) == want, where


def test_self_join_with_a_filter_on_one_side(db, spark):
    """Both scans of one table in one query read their own rows, through the front door and
    through plain Spark SQL (the Python source), whose filter pushdown PySpark 4.3 would share
    between the two scans (tablets.spark.datasource)."""
    q = "SELECT a.id, b.id FROM rd.{} a JOIN rd.{} b ON a.id = b.id + 1 WHERE a.id < 5"
    want = [(2, 1), (3, 2), (4, 3)]  # id 0 deleted: no pair for 1
    assert rows(db.sql(q.format("t", "t"))) == want
    assert rows(spark.sql(q.format("t", "t"))) == want
    assert rows(spark.sql(q.format("plain", "plain"))) == want


def test_versions_paths_views_and_the_python_source(db, spark, native_reads):
    t = db.table_of("rd.t")
    version = t.version
    df = db.sql("SELECT count(*) FROM rd.t")
    assert not [v for v in spark.catalog.listTables() if v.name.startswith(reads.VIEW_PREFIX)]  # dropped once analyzed
    live = df.collect()[0][0]
    assert live == t.snapshot().live_rows == 395
    # time travel and a table named by its path, on the same scan
    assert db.sql(f"SELECT count(*) FROM rd.t VERSION AS OF {version - 1} WHERE id < 100").collect()[0][0] == 100
    assert db.sql(f"SELECT count(*) FROM tablets.`{t.root}` p WHERE p.id < 100").collect()[0][0] == 97
    assert native_reads()[-1]["tablets_pruned"] == 3
    # a persistent view over the table reads the newest version each time (not rewritten)
    db.sql("CREATE OR REPLACE VIEW rd.v AS SELECT id FROM rd.t WHERE id >= 390")
    t.append(_part(1000, 1001).append_column("c", pa.array([9], pa.int32())))
    try:
        assert rows(db.sql("SELECT * FROM rd.v")) == [(i,) for i in [*range(390, 400), 1000]]
        assert df.collect()[0][0] == live  # a DataFrame keeps the version it read
        assert db.sql("SELECT count(*) FROM rd.t").collect()[0][0] == live + 1
        # INSERT into another table from a query of this one
        db.sql("CREATE TABLE rd.copy (id BIGINT) USING parquet")
        db.sql("INSERT INTO rd.copy SELECT id FROM rd.t WHERE id > 395")
        assert rows(db.sql("SELECT * FROM rd.copy")) == [(396,), (397,), (398,), (399,), (1000,)]
        # a temporary view of the same name shadows the table
        spark.sql("CREATE OR REPLACE TEMPORARY VIEW t AS SELECT 1 AS id")
        spark.catalog.setCurrentDatabase("rd")
        native_reads()
        assert rows(db.sql("SELECT id FROM t")) == [(1,)] and native_reads() == []
        # the setting off: the Python source, same rows
        spark.conf.set(READ_NATIVE_CONF, "false")
        assert rows(db.sql("SELECT id FROM rd.t WHERE id > 395")) == [(396,), (397,), (398,), (399,), (1000,)]
        assert native_reads() == []
    finally:
        spark.conf.unset(READ_NATIVE_CONF)
        spark.catalog.setCurrentDatabase("default")
        spark.catalog.dropTempView("t")
        db.sql("DROP TABLE IF EXISTS rd.copy")
        db.sql("DROP VIEW IF EXISTS rd.v")
        db.sql("DELETE FROM rd.t WHERE id = 1000")


@pytest.mark.parametrize("case", ["flip30", "truncated"])
def test_damaged_tablet(db, spark, case):
    """A cut tablet is a FormatError before anything runs; a flipped bit fails the query in
    parquet-mr's page CRC check, which ``read_error`` (and so dbt's cursor) names as the tablet."""
    t = db.table_of("rd.t")
    paths = [t.tablet_path(st) for st in t.snapshot().tablets.values()]
    good = damage(t, paths[1], case, paths[0])
    try:
        if case == "truncated":
            with pytest.raises(FormatError, match="is damaged"):
                db.sql("SELECT * FROM rd.t")
            return
        with pytest.raises(FormatError) as err:  # where the job fails (tablets.spark.errors)
            db.sql("SELECT * FROM rd.t").collect()
        clear = reads.read_error(err.value.__cause__)  # Spark's own error, as over Spark Connect
        assert isinstance(clear, FormatError) and str(clear) == str(err.value)
        assert str(clear).startswith(f"tablet {paths[1]} is damaged: ")  # a page CRC or header
        assert "Help: Restore the file from a copy" in str(clear) and "\tat " not in str(clear)
        assert reads.read_error(ValueError("other")) is None
        # dbt's cursor fetches the rows: the same error, as dbt's
        from dbt_common.exceptions import DbtRuntimeError

        from dbt.adapters.tablets.session import TabletsConnection, TabletsCursor

        cursor = TabletsCursor(TabletsConnection(db))
        cursor.execute("SELECT * FROM rd.t")
        with pytest.raises(DbtRuntimeError, match="is damaged") as dbt_err:
            cursor.fetchall()
        assert paths[1] in str(dbt_err.value) and "\tat " not in str(dbt_err.value)
    finally:
        restore(t, paths[1], good)
    assert db.sql("SELECT count(*) FROM rd.t WHERE id BETWEEN 100 AND 199").collect()[0][0] == 100


def _three_copies(db, name: str, add) -> None:
    """``rd.<name>``: three copies of the same 100 rows and 40 of them, each with other deletions."""
    db.sql(f"DROP TABLE IF EXISTS rd.{name}")
    db.sql(
        f"CREATE TABLE rd.{name} (id BIGINT, k INT, s STRING, d DATE, m DECIMAL(8,2), x DOUBLE, f BOOLEAN) USING tablets"
    )
    t = db.table_of(f"rd.{name}")
    for n, part in enumerate((_part(0, 100), _part(0, 100), _part(0, 100), _part(0, 40))):
        add(t, part, n)
    states = list(t.snapshot().tablets.values())
    h = t.begin_delete()
    sink = RowLevelSink(h)
    sink.delete([states[0].tablet_id] * 2 + [states[1].tablet_id] * 3 + [states[3].tablet_id], [0, 7, 1, 7, 99, 3])
    t.finish(h, sink.finish())


def _three_copies_read(db, name: str, native_reads) -> str:
    """The three copies' live rows through the front door and plain Spark SQL; the plan read."""
    want = {i: 3 + (i < 40) - (i in (0, 7)) - (i in (1, 7, 99)) - (i == 3) for i in range(100)}
    want = {i: n for i, n in want.items() if n}
    df = db.sql(f"SELECT id, count(*) FROM rd.{name} GROUP BY id")
    assert {r[0]: r[1] for r in df.collect()} == want
    assert native_reads()
    assert {r[0]: r[1] for r in db.spark.sql(f"SELECT id, count(*) FROM rd.{name} GROUP BY id").collect()} == want
    return df._jdf.queryExecution().optimizedPlan().toString()


def test_deletion_vectors_of_tablets_of_one_size(db, native_reads):
    """Tablets written before row ids: the front door tells tablets with deletions apart by their
    file's size, and by their name too where two are of one size. A tablet's rows after its last
    deleted one are live (they once read the next tablet's bits)."""
    _three_copies(db, "same", lambda t, part, n: add_tablet_without_row_ids(t, part))
    states = list(db.table_of("rd.same").snapshot().tablets.values())
    assert len({st.add.bytes for st in states[:3]}) == 1 and states[3].add.bytes != states[0].add.bytes
    plan = _three_copies_read(db, "same", native_reads)
    assert "_metadata" in plan and ROW_ID not in plan, plan


def test_deletion_vectors_by_the_tablets_row_ids(db, native_reads):
    """Tablets of the current format are told apart and their rows placed by their ``ROW_ID``
    column, with no ``_metadata`` column in the plan. With one tablet of the older format, or two
    tablets of one tag, the read takes ``_metadata`` as before; the rows are the same."""
    _three_copies(db, "ids", lambda t, part, n: t.append(part))
    plan = _three_copies_read(db, "ids", native_reads)
    assert ROW_ID in plan and "_metadata" not in plan, plan

    _three_copies(db, "mixed", lambda t, part, n: add_tablet_without_row_ids(t, part) if n == 1 else t.append(part))
    assert "_metadata" in _three_copies_read(db, "mixed", native_reads)

    alike = ["00000000000015f1edd02c99d2c9e1aa", "000000000000a547d7cac577616b3806"]  # crc32 >> 1 equal
    assert row_id_tag(alike[0]) == row_id_tag(alike[1])
    _three_copies(db, "alike", lambda t, part, n: add_tablet_with_id(t, part, alike[n]) if n < 2 else t.append(part))
    assert "_metadata" in _three_copies_read(db, "alike", native_reads)


@pytest.mark.parametrize("seed", range(6))
def test_front_door_rows_equal_the_tables_own_read_under_random_deletions(db, seed, native_reads):
    """Tablets of random lengths (some the same bytes), rows deleted at random from some: the
    front door's live rows are the storage's, row for row, with and without a filter."""
    import random

    rng = random.Random(seed)
    db.sql("DROP TABLE IF EXISTS rd.rand")
    db.sql(
        "CREATE TABLE rd.rand (id BIGINT, k INT, s STRING, d DATE, m DECIMAL(8,2), x DOUBLE, f BOOLEAN) USING tablets"
    )
    t = db.table_of("rd.rand")
    for _ in range(rng.randint(2, 6)):
        lo = rng.choice([0, 0, rng.randrange(1000)])
        t.append(_part(lo, lo + rng.choice([1, 63, 64, 65, 200, 700])))
    h = t.begin_delete()
    sink = RowLevelSink(h)
    for st in t.snapshot().tablets.values():
        if rng.random() < 0.7:
            rows = sorted(rng.sample(range(st.add.rows), rng.randint(1, max(1, st.add.rows // 5))))
            sink.delete([st.tablet_id] * len(rows), rows)
    t.finish(h, sink.finish())
    want = sorted(t.read().select(["id", "s"]).to_pylist(), key=lambda r: (r["id"], r["s"] or ""))
    got = sorted(
        (r.asDict() for r in db.sql("SELECT id, s FROM rd.rand").collect()), key=lambda r: (r["id"], r["s"] or "")
    )
    assert native_reads()  # (the front door read it, not the Python source)
    assert got == want
    some = sorted(r["id"] for r in want if r["id"] % 3 == 0)
    assert sorted(r[0] for r in db.sql("SELECT id FROM rd.rand WHERE id % 3 = 0").collect()) == some


def test_the_querys_own_conditions_come_before_the_deletion_vectors(db):
    """Spark puts a view's filter before the query's; the front door filters the scan by the
    query's conditions first (not floats: NaN), so a selective query tests few rows' bits."""
    df = db.sql("SELECT id FROM rd.t WHERE k = 3 AND s >= 'a' AND x > 1")
    plan = df._jdf.queryExecution().optimizedPlan().toString()
    dv = plan.index("tablets_live")  # tested in the scan's tasks (tablets.spark.vectors)
    assert plan.index("(k#") < dv and plan.index("(s#") < dv and plan.index("x#") > dv, plan
    assert sorted(r[0] for r in df.collect()) == sorted(
        r[0] for r in db.sql("SELECT id FROM rd.plain WHERE k = 3 AND s >= 'a' AND x > 1").collect()
    )


def test_deleted_rows_never_meet_a_condition_that_could_fail_on_them(db, spark):
    """ANSI Spark casts a string column to a number for ``s = 1``: 'abc' raises. A deleted row
    holding 'abc' must not make the query fail, so such a conjunct is not applied early."""
    db.sql("DROP TABLE IF EXISTS rd.ansi")
    db.sql("CREATE TABLE rd.ansi (id BIGINT, s STRING) USING tablets")
    t = db.table_of("rd.ansi")
    t.append(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "s": ["1", "abc", "3"]}))
    (tid,) = t.snapshot().tablets
    h = t.begin_delete()
    sink = RowLevelSink(h)
    sink.delete([tid], [1])
    t.finish(h, sink.finish())
    before = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", "true")
    try:
        assert db.sql("SELECT id FROM rd.ansi WHERE s = 1 AND id > 0").collect()[0][0] == 1
    finally:
        spark.conf.set("spark.sql.ansi.enabled", before)


def test_the_deletion_vectors_words_are_one_packed_literal(db, spark):
    """``long_array`` lays the words out as Spark's ``UnsafeArrayData`` (one block of bytes in
    every task's plan, not a boxed Long a word): its values read back exactly, at any length,
    and the front door's plan holds it."""
    import numpy as np
    from tablets.spark.read_frames import long_array

    for values in (
        np.array([0, 1, -1, 2**63 - 1, -(2**63), 12345678901234], np.int64),
        np.arange(1, 131, dtype=np.int64) * -(2**40),
        np.array([5], np.int64),
    ):
        row = (
            spark.range(1)
            .select(long_array(spark, values).alias("a"), long_array(spark, values)[len(values) - 1])
            .first()
        )
        assert row[0] == values.tolist() and row[1] == values[-1]
    db.sql("DROP TABLE IF EXISTS rd.packed")
    db.sql(
        "CREATE TABLE rd.packed (id BIGINT, k INT, s STRING, d DATE, m DECIMAL(8,2), x DOUBLE, f BOOLEAN) USING tablets"
    )
    t = db.table_of("rd.packed")
    t.append(_part(0, 300))
    (tid,) = t.snapshot().tablets
    h = t.begin_delete()
    sink = RowLevelSink(h)
    sink.delete([tid] * 3, [0, 64, 299])
    t.finish(h, sink.finish())
    from tablets.spark import vectors

    spark.conf.set(vectors.EXECUTORS_CONF, "false")  # the fallback where the JVM has no tablets classes
    try:
        df = db.sql("SELECT id FROM rd.packed WHERE id > 3")
        plan = df._jdf.queryExecution().optimizedPlan().toString()
        assert "UnsafeArrayData" in plan and "bit_get" in plan
        assert sorted(r[0] for r in df.collect()) == [i for i in range(4, 299) if i != 64]
    finally:
        spark.conf.unset(vectors.EXECUTORS_CONF)


# --- plain Spark SQL: the native-read rule (tablets.spark.native) -----------------------------


def _native(df) -> bool:
    """Whether ``df`` reads its tablet tables natively (the rule's marker, no Python source)."""
    from tablets.spark.native import MARKER

    plan = df._jdf.queryExecution().analyzed().toString()
    return MARKER in plan and "RelationV2" not in plan


def test_plain_spark_sql_reads_natively_and_rows_equal_plain_parquet(db, spark):
    """``spark.sql`` outside the front door: every filter kind reads the rows the plain copy
    gives, through Spark's Parquet scan (column pruning, pushdown), deletion vectors applied."""
    cols = "id, k, s, d, m, x, f"  # (the catalog has no c: added by the table API, not synced)
    for i, where in enumerate(w for w in FILTERS if not re.search(r"\bc\b", w)):
        df = spark.sql(f"SELECT {cols} FROM rd.t WHERE {where}")
        assert _native(df), where
        spark.conf.set("spark.sql.parquet.filterPushdown", "false")  # the copy's NaN rows (see above)
        try:
            want = rows(spark.sql(f"SELECT {cols} FROM rd.plain WHERE {where}"))
        finally:
            spark.conf.unset("spark.sql.parquet.filterPushdown")
        assert rows(df) == want, (i, where)
    # the DataFrame API and a whole-table read
    assert _native(spark.table("rd.t"))
    assert spark.table("rd.t").filter("id < 10").count() == 9  # 0 deleted
    assert rows(spark.table("rd.t").select("id", "s")) == rows(spark.table("rd.plain").select("id", "s"))
    # the plan reads only the columns asked for
    scan = spark.sql("SELECT sum(k) FROM rd.t")._jdf.queryExecution().executedPlan().toString()
    assert "ReadSchema: struct<k:int," in scan and "s:string" not in scan, scan  # (+ the row ids: DVs)


def test_plain_spark_sql_skips_tablets_by_the_querys_where(db, spark):
    """The query's WHERE on the table reaches the planner: tablets it rules out by the log's
    statistics are not read (``inputFiles``), and conditions it cannot judge skip none."""
    every = len(spark.table("rd.t").inputFiles())
    assert every == 4

    def files(sql):
        df = spark.sql(sql)
        assert _native(df), sql
        return len(df.inputFiles())

    assert files("SELECT * FROM rd.t WHERE id BETWEEN 120 AND 130") == 1
    assert files("SELECT count(*) FROM rd.t x WHERE x.id >= 395 AND s LIKE 'a%'") == 1
    assert files("SELECT * FROM rd.t WHERE d < DATE'2021-01-11'") == 1
    assert files("SELECT * FROM rd.t WHERE 120 >= id") == 2
    assert files("SELECT * FROM rd.t WHERE k = 3 AND d >= DATE'2021-01-25'") == 2  # ids 240-399
    assert files("SELECT * FROM rd.t WHERE id IN (5, 250)") == 2
    assert files("SELECT * FROM rd.t WHERE s = 'it''s'") == 4  # a quote: not passed on, rows still right
    assert files("SELECT * FROM rd.t WHERE id < 5 OR id > 395") == 4
    assert files("SELECT * FROM rd.t WHERE id = 5000") == 0
    assert spark.sql("SELECT * FROM rd.t WHERE id = 5000").collect() == []
    assert rows(spark.sql("SELECT id FROM rd.t WHERE id BETWEEN 120 AND 130")) == [(i,) for i in range(120, 131)]


def test_plain_spark_sql_skips_tablets_by_timestamps(db, spark):
    """dbt's microbatch bounds (text with an offset against a TIMESTAMP column) and TIMESTAMP
    literals skip tablets in any session time zone: the rule passes the instant on with its
    offset. One tablet a day; the rows are those of the same filter on the Python source."""
    db.sql("DROP TABLE IF EXISTS rd.ts")
    db.sql("CREATE TABLE rd.ts (id BIGINT, ts TIMESTAMP) USING tablets")
    t = db.table_of("rd.ts")
    day = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
    for n in range(3):
        ids = list(range(n * 24, (n + 1) * 24))
        t.append(
            pa.table(
                {
                    "id": pa.array(ids, pa.int64()),
                    "ts": pa.array([day + dt.timedelta(hours=i) for i in ids], pa.timestamp("us", "UTC")),
                }
            )
        )
    cases = {
        "ts >= '2026-11-02 00:00:00+00:00' AND ts < '2026-11-03 00:00:00+00:00'": 1,
        "ts >= TIMESTAMP'2026-11-02 12:00:00+00:00'": 2,
        "ts BETWEEN '2026-11-01 23:00:00-01:00' AND '2026-11-02 00:30:00+00:00'": 1,
        "ts IN (TIMESTAMP'2026-11-01 05:00:00+00:00', TIMESTAMP'2026-11-03 05:00:00+00:00')": 2,
        "ts > '2026-11-04 00:00:00+00:00'": 0,
    }
    before = spark.conf.get("spark.sql.session.timeZone")
    try:
        for zone in ("UTC", "America/Los_Angeles"):
            spark.conf.set("spark.sql.session.timeZone", zone)
            for where, n in cases.items():
                df = spark.sql(f"SELECT id FROM rd.ts WHERE {where}")
                assert _native(df) and len(df.inputFiles()) == n, (zone, where, df.inputFiles())
                spark.conf.set(READ_NATIVE_CONF, "false")
                try:
                    want = sorted(r[0] for r in spark.sql(f"SELECT id FROM rd.ts WHERE {where}").collect())
                finally:
                    spark.conf.unset(READ_NATIVE_CONF)
                assert sorted(r[0] for r in df.collect()) == want, (zone, where)
            # a literal without an offset is of the session's zone: passed on as the instant it is
            df = spark.sql("SELECT id FROM rd.ts WHERE ts >= TIMESTAMP'2026-11-02 20:00:00'")
            assert len(df.inputFiles()) == (2 if zone == "UTC" else 1)  # 2026-11-03 04:00 UTC
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)


def test_plain_spark_sql_keeps_the_version_it_read_and_the_setting_turns_it_off(db, spark):
    t = db.table_of("rd.t")
    df = spark.sql("SELECT count(*) FROM rd.t")
    live = df.collect()[0][0]
    t.append(_part(1000, 1001).append_column("c", pa.array([9], pa.int32())))
    try:
        assert df.collect()[0][0] == live  # a DataFrame keeps the version it read
        assert spark.sql("SELECT count(*) FROM rd.t").collect()[0][0] == live + 1
        # a persistent view reads the newest version, natively, each time it is queried
        spark.sql("CREATE OR REPLACE VIEW rd.pv AS SELECT id FROM rd.t WHERE id >= 398")
        view = spark.sql("SELECT * FROM rd.pv")
        assert _native(view) and rows(view) == [(398,), (399,), (1000,)]
        spark.conf.set(READ_NATIVE_CONF, "false")
        off = spark.sql("SELECT id FROM rd.t WHERE id > 395")
        assert not _native(off) and rows(off) == [(396,), (397,), (398,), (399,), (1000,)]
    finally:
        spark.conf.unset(READ_NATIVE_CONF)
        spark.sql("DROP VIEW IF EXISTS rd.pv")
        db.sql("DELETE FROM rd.t WHERE id = 1000")


def test_plain_spark_sql_of_a_cut_tablet_is_the_python_sources_error(db, spark):
    """A tablet the log does not describe is not read natively: the Python source reads the
    table and raises its ``FormatError`` (PySpark's ``PythonException`` around it, translated)."""
    t = db.table_of("rd.t")
    paths = [t.tablet_path(st) for st in t.snapshot().tablets.values()]
    good = damage(t, paths[1], "truncated")
    try:
        df = spark.sql("SELECT * FROM rd.t")
        assert not _native(df)
        with pytest.raises(FormatError, match="^tablet .* is damaged"):
            df.collect()
    finally:
        restore(t, paths[1], good)
    assert _native(spark.sql("SELECT * FROM rd.t"))


def test_a_merge_whose_source_reads_its_target_natively_knows_it(db, spark):
    """The engine tells from its source's plan whether the statement reads its target (its
    conflict rules depend on it): a native read names the table's provider."""
    from types import SimpleNamespace

    from tablets.engine.conflicts import reads_target as _reads_target

    db.sql("DROP TABLE IF EXISTS rd.other")
    db.sql("CREATE TABLE rd.other (id BIGINT) USING tablets")
    src = spark.sql("SELECT max(id) + 1 AS id FROM rd.t")
    assert _native(src)
    assert _reads_target(SimpleNamespace(spark=spark, table=db.table_of("rd.t")), src)
    assert not _reads_target(SimpleNamespace(spark=spark, table=db.table_of("rd.other")), src)
    # and the statement, end to end
    db.sql("INSERT INTO rd.other VALUES (1)")
    db.sql(
        "MERGE INTO rd.other o USING (SELECT max(id) AS id FROM rd.t) s ON o.id = s.id "
        "WHEN NOT MATCHED THEN INSERT VALUES (s.id)"
    )
    assert rows(spark.sql("SELECT id FROM rd.other")) == [(1,), (399,)]


def test_plain_spark_sql_from_several_threads(db, spark):
    """dbt's threads: reads planned at once, each served by its own callback into this process."""
    from concurrent.futures import ThreadPoolExecutor

    want = {
        lo: rows(spark.table("rd.plain").filter(f"id BETWEEN {lo} AND {lo + 30}").select("id", "s"))
        for lo in range(0, 400, 40)
    }

    def read(lo):
        df = spark.sql(f"SELECT id, s FROM rd.t WHERE id BETWEEN {lo} AND {lo + 30}")
        return lo, _native(df), rows(df)

    with ThreadPoolExecutor(max_workers=4) as pool:
        got = list(pool.map(read, list(want) * 2))
    assert all(native for _, native, _ in got)
    assert all(r == want[lo] for lo, _, r in got)
