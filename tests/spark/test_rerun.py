"""A MERGE run again with the same rows into the table it produced (engine.rerun): recognised
from the log without reading a tablet, and only where running it again cannot change anything."""

import os
from contextlib import contextmanager

import pytest
import tablets
from support.conf import settings
from support.jobs import spark_jobs
from tablets.engine import executor, intake, rerun
from tablets.engine.executor import execute
from tablets.engine.route import DRIVER_SCAN_CONF, RERUN_CONF
from tablets.exceptions import CardinalityViolation
from tablets.storage import log

pytestmark = pytest.mark.spark

UPSERT = "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"


DATABASE = "rerun"  # created by the conftest's db fixture


def rows(db, name):
    return sorted((tuple(r) for r in db.sql(f"SELECT * FROM {name}").collect()), key=str)


def fresh(db, name, n=1000):
    db.sql(f"DROP TABLE IF EXISTS {name}")
    db.sql(f"CREATE TABLE {name} (id BIGINT, v BIGINT, s STRING) USING tablets")
    db.sql(f"INSERT INTO {name} SELECT id, id * 10, CAST(id AS STRING) FROM range(0, {n})")


def merge(db, name, source, clauses=UPSERT):
    return db.sql(f"MERGE INTO {name} t USING ({source}) s ON t.id = s.id {clauses}").metrics


@contextmanager
def tablets_away(table):
    """The table's tablets are not there: a statement that read one would fail."""
    paths = [table.tablet_path(st) for st in table.snapshot().tablets.values()]
    for p in paths:
        os.rename(p, p + ".away")
    try:
        yield
    finally:
        for p in paths:
            os.rename(p + ".away", p)


SOURCE = "SELECT id, id * 10 + 1 AS v, IF(id % 7 = 0, NULL, 'new') AS s FROM range(950, 1050)"  # 50 updates, 50 inserts


def test_the_same_rows_again_read_no_tablet(db, spark):
    fresh(db, "rerun.same")
    first = merge(db, "rerun.same", SOURCE)
    assert (first.rows_updated, first.rows_inserted, first.same_source) == (50, 50, False)
    after = rows(db, "rerun.same")
    table = db.table_of("rerun.same")
    version = table.version
    with tablets_away(table):
        results = []
        for i in range(2):
            jobs = spark_jobs(spark, lambda: results.append(merge(db, "rerun.same", SOURCE)))
            m = results[i]
            assert m.same_source and (m.version, m.rows_unchanged, m.rows_affected, m.bytes_written) == (
                None,
                100,
                0,
                0,
            )
            assert m.tablets_scanned == 0 and "same_source" in m.timings_ms
            assert len(jobs) <= 2, jobs  # the source's own
    assert table.version == version and rows(db, "rerun.same") == after


@pytest.mark.parametrize(
    "clauses, source, expected, affected",
    [
        ("WHEN MATCHED THEN UPDATE SET v = t.v + s.v", "SELECT 5L AS id, 1L AS v", [(5, 52, "5")], 1),
        (
            "WHEN MATCHED AND s.v > t.v THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
            "SELECT 5L AS id, 100L AS v, 'x' AS s",
            [(5, 100, "x")],
            0,
        ),
        (
            "WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT *",
            "SELECT 5L AS id, 7L AS v, 'x' AS s",
            [(5, 7, "x")],
            1,
        ),
    ],
    ids=["accumulates", "conditional", "deletes-then-inserts"],
)
def test_statements_not_idempotent_run_again(db, clauses, source, expected, affected):
    fresh(db, "rerun.again", 10)
    merge(db, "rerun.again", source, clauses)
    second = merge(db, "rerun.again", source, clauses)
    assert (second.same_source, second.rows_affected) == (False, affected)
    assert [r for r in rows(db, "rerun.again") if r[0] == 5] == expected


def test_a_null_key_is_inserted_again(db):
    fresh(db, "rerun.null_key", 3)
    src = "SELECT CAST(NULL AS BIGINT) AS id, 1L AS v, 'n' AS s"
    merge(db, "rerun.null_key", src)
    m = merge(db, "rerun.null_key", src)
    assert (m.same_source, m.rows_inserted) == (False, 1)
    assert [r for r in rows(db, "rerun.null_key") if r[0] is None] == [(None, 1, "n")] * 2


def test_repeated_source_keys_fail_the_second_run_as_before(db):
    fresh(db, "rerun.dups", 3)
    src = "SELECT 7L AS id, 1L AS v, 'a' AS s UNION ALL SELECT 7L, 1L, 'a'"
    assert merge(db, "rerun.dups", src).rows_inserted == 2  # no target row: two inserts
    with pytest.raises(CardinalityViolation):
        merge(db, "rerun.dups", src)


def test_a_commit_in_between_is_read(db):
    fresh(db, "rerun.interleaved")
    merge(db, "rerun.interleaved", SOURCE)
    db.sql("UPDATE rerun.interleaved SET v = -1 WHERE id = 960")
    m = merge(db, "rerun.interleaved", SOURCE)
    assert (m.same_source, m.rows_updated, m.rows_unchanged) == (False, 1, 99)
    assert [r for r in rows(db, "rerun.interleaved") if r[0] == 960] == [(960, 9601, "new")]


def test_a_rebased_commit_is_not_taken_for_the_table(db, spark):
    """A MERGE that committed over a concurrent commit made a table its statement alone did not:
    the next run with the same rows reads the target."""
    fresh(db, "rerun.rebased")
    table = db.table_of("rerun.rebased")
    before = table.snapshot()
    db.sql("INSERT INTO rerun.rebased VALUES (5000, 1, 'far')")  # outside the source's keys: no conflict
    builder = tablets.table(db, "rerun.rebased").merge(spark.sql(SOURCE), on="t.id = s.id")
    spec = builder.when_matched_update().when_not_matched_insert().spec
    first = execute(spark, table, spec, spark.sql(SOURCE), snapshot=before)
    assert first.version == before.version + 2
    m = merge(db, "rerun.rebased", SOURCE)
    assert (m.same_source, m.rows_affected, m.rows_unchanged) == (False, 0, 100)


def test_a_checkpointed_version_still_knows_its_commit(db):
    fresh(db, "rerun.checkpoint", 10)
    table = db.table_of("rerun.checkpoint")
    while (table.version + 1) % log.CHECKPOINT_INTERVAL:
        db.sql("INSERT INTO rerun.checkpoint VALUES (-1, 0, 'pad')")
    src = "SELECT id, id AS v, 'c' AS s FROM range(5, 15)"
    assert merge(db, "rerun.checkpoint", src).version % log.CHECKPOINT_INTERVAL == 0
    assert table.snapshot().commit is None  # read from the checkpoint
    m = merge(db, "rerun.checkpoint", src)
    assert (m.same_source, m.rows_unchanged) == (True, 10)


def test_it_can_be_turned_off(db, spark):
    fresh(db, "rerun.off")
    merge(db, "rerun.off", SOURCE)
    spark.conf.set(RERUN_CONF, "false")
    try:
        m = merge(db, "rerun.off", SOURCE)
    finally:
        spark.conf.unset(RERUN_CONF)
    assert (m.same_source, m.rows_unchanged, m.version) == (False, 100, None) and "unchanged" in m.timings_ms


# a source too big to collect, as on a cluster: Spark's plan, the source kept in Spark and
# digested by the aggregate that counts it (rerun.row_hashes); or, small enough to broadcast,
# collected once to count it and digested in Arrow (intake.counted_source)
KEPT = {DRIVER_SCAN_CONF: "0", "spark.sql.autoBroadcastJoinThreshold": "-1"}


@pytest.fixture(params=["aggregate", "counted here"])
def kept(request, spark, monkeypatch):
    """The settings of a source kept in Spark, counted by Spark's aggregate or collected here
    (no source is taken as a local relation: ``intake.local_limit`` 0)."""
    if request.param == "aggregate":
        yield KEPT
        return
    counted = []

    def not_here(run, source):
        raise AssertionError("counted by Spark's aggregate")

    def counted_source(run, source):
        counted.append(source)
        return intake.counted_source(run, source)

    monkeypatch.setattr(intake, "local_limit", lambda spark: 0)
    monkeypatch.setattr(intake, "count_and_ranges", not_here)
    monkeypatch.setattr(executor, "counted_source", counted_source)
    yield {DRIVER_SCAN_CONF: "0"}
    assert counted  # (the statements took that path)


def test_the_same_rows_kept_in_spark_again_read_no_tablet(db, spark, kept):
    fresh(db, "rerun.kept")
    with settings(spark, kept):
        first = merge(db, "rerun.kept", SOURCE)
        assert (first.rows_updated, first.rows_inserted, first.same_source) == (50, 50, False)
        assert not first.merged_on_driver
        after = rows(db, "rerun.kept")
        table = db.table_of("rerun.kept")
        version = table.version
        with tablets_away(table):
            m = merge(db, "rerun.kept", SOURCE)
        assert m.same_source and (m.version, m.rows_unchanged, m.rows_affected, m.tablets_scanned) == (None, 100, 0, 0)
        # rows that differ in one value only: not the same rows
        changed = SOURCE.replace("'new'", "IF(id = 1049, 'new ', 'new')")
        m = merge(db, "rerun.kept", changed)
        assert (m.same_source, m.rows_updated, m.rows_unchanged) == (False, 1, 99)
    assert table.version == version + 1 and (1049, 10491, "new ") in rows(db, "rerun.kept")
    assert [r for r in after if r[0] != 1049] == [r for r in rows(db, "rerun.kept") if r[0] != 1049]


@pytest.mark.parametrize(
    "source, error",
    [
        ("SELECT 7L AS id, 1L AS v, 'a' AS s UNION ALL SELECT 7L, 1L, 'a'", CardinalityViolation),
        ("SELECT CAST(NULL AS BIGINT) AS id, 1L AS v, 'n' AS s", None),
    ],
    ids=["repeated key", "null key"],
)
def test_keys_kept_in_spark_must_be_unique_and_not_null(db, spark, source, error, kept):
    fresh(db, "rerun.kept_keys", 3)
    with settings(spark, kept):
        merge(db, "rerun.kept_keys", source)
        if error is not None:
            with pytest.raises(error):
                merge(db, "rerun.kept_keys", source)
        else:
            m = merge(db, "rerun.kept_keys", source)
            assert (m.same_source, m.rows_inserted) == (False, 1)


def test_a_kept_source_joined_on_an_expression_takes_its_ranges_in_spark(db, spark, kept):
    """ON ``t.id = s.id + 0``: Arrow cannot take the key's range (an expression), Spark does; the
    counts and rows are those of the plain key."""
    fresh(db, "rerun.kept_expr")
    with settings(spark, kept):
        m = db.sql(f"MERGE INTO rerun.kept_expr t USING ({SOURCE}) s ON t.id = s.id + 0 {UPSERT}").metrics
    assert (m.rows_updated, m.rows_inserted, m.tablets_scanned) == (50, 50, 1)
    assert len(rows(db, "rerun.kept_expr")) == 1050


def test_rows_spark_digests_differ_where_their_values_do(spark):
    """Rows one value apart (a sign of zero, a NULL moved to another column or against its text or
    an empty string, text split at another place, a microsecond, a day before the Gregorian
    reform) hash apart."""
    fields = [
        ("a", "string"),
        ("b", "string"),
        ("d", "double"),
        ("t", "timestamp"),
        ("n", "timestamp_ntz"),
        ("x", "date"),
        ("f", "float"),
        ("m", "decimal(5,2)"),
        ("y", "binary"),
    ]
    base = [
        "'ab'",
        "'c'",
        "0.0D",
        "TIMESTAMP'2020-01-01 00:00:00'",
        "TIMESTAMP_NTZ'2020-01-01 00:00:00'",
        "DATE'2020-01-01'",
        "CAST(1.5 AS FLOAT)",
        "1.50BD",
        "X'00'",
    ]
    variants = {
        0: ["'a'", "NULL", "'N'", "''", "'abc'"],
        1: ["'bc'", "NULL", "''"],
        2: ["-0.0D", "CAST('NaN' AS DOUBLE)", "1e-300D", "NULL", "5e-324D"],
        3: ["TIMESTAMP'2020-01-01 00:00:00.000001'", "NULL"],
        4: ["TIMESTAMP_NTZ'2020-01-01 00:00:00.000001'", "TIMESTAMP_NTZ'+10000-01-01 00:00:00'"],
        5: ["DATE'1582-10-04'", "DATE'1582-10-15'", "NULL"],
        6: ["CAST(-0.0D AS FLOAT)", "CAST(0.0D AS FLOAT)", "CAST(1.5000001 AS FLOAT)"],
        7: ["1.51BD", "NULL"],
        8: ["X''", "X'0000'", "NULL"],
    }
    rows_sql = [base] + [base[:i] + [v] + base[i + 1 :] for i, vs in variants.items() for v in vs]
    rows_sql.append(["'a'", "'bc'"] + base[2:])  # ('ab','c') against ('a','bc')
    rows_sql.append(["NULL", "'ab'"] + base[2:])  # against ('ab', NULL): a NULL moved
    quoted = [(f"`{n}`", t) for n, t in fields]
    h1, h2 = rerun.row_hashes(quoted)
    selects = " UNION ALL ".join(
        "SELECT " + ", ".join(f"CAST({v} AS {t}) AS `{n}`" for v, (n, t) in zip(r, fields, strict=True))
        for r in rows_sql
    )
    with settings(spark, {"spark.sql.session.timeZone": "America/Los_Angeles"}):
        hashes = [tuple(r) for r in spark.sql(f"SELECT {h1}, {h2} FROM ({selects})").collect()]
    assert len(hashes) == len(rows_sql) and len(set(hashes)) == len(hashes)
    assert len({h for h, _ in hashes}) == len({h for _, h in hashes}) == len(hashes)
    assert rerun.row_hashes([("`c`", "array<int>")]) is None
