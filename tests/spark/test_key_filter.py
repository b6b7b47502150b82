"""The target's scan before a shuffle join keeps only rows a bloom filter of the source's keys may
hold (engine.key_filter): each statement here runs with the filter and without it
(``spark.tablets.merge.keyFilter=false``), on Spark's plan with the source shuffled, and must
give the same rows and counts; the metric says where the filter was used."""

import pytest
from support.conf import settings
from tablets.engine import key_filter
from tablets.engine.route import DRIVER_SCAN_CONF, DRIVER_WRITE_CONF, KEY_FILTER_CONF

pytestmark = pytest.mark.spark

SHUFFLED = {DRIVER_SCAN_CONF: "0", DRIVER_WRITE_CONF: "0", "spark.sql.autoBroadcastJoinThreshold": "-1"}


DATABASE = "kf"  # created by the conftest's db fixture


def rows(db, name):
    return sorted((tuple(r) for r in db.sql(f"SELECT * FROM {name}").collect()), key=str)


def both(db, spark, create, fill, statement):
    """``statement`` ({t}: the table) on two copies, with the filter and without; (metrics with,
    rows) once both agree."""
    out = {}
    for name, on in (("kf.with_filter", "true"), ("kf.without", "false")):
        db.sql(f"DROP TABLE IF EXISTS {name}")
        db.sql(create.format(t=name))
        db.sql(fill.format(t=name))
        with settings(spark, {**SHUFFLED, KEY_FILTER_CONF: on}):
            m = db.sql(statement.format(t=name)).metrics
        out[on] = (m, rows(db, name))
    (m_on, rows_on), (m_off, rows_off) = out["true"], out["false"]
    assert rows_on == rows_off
    assert m_on.message() == m_off.message()
    assert not m_off.key_filtered
    return m_on, rows_on


CREATE = "CREATE TABLE {t} (id BIGINT, k INT, name STRING, v DOUBLE) USING tablets TBLPROPERTIES ('target_tablet_rows'='500')"
FILL = "INSERT INTO {t} SELECT id, CAST(id % 7 AS INT), concat('n', id % 13), id / 4 FROM range(0, 2000)"


def test_an_upsert_filters_the_target_and_changes_what_it_did_before(db, spark):
    m, got = both(
        db,
        spark,
        CREATE,
        FILL,
        "MERGE INTO {t} t USING (SELECT id * 7 AS id, 1 AS k, 'x' AS name, 0.5D AS v FROM range(0, 400)) s "
        "ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *",
    )
    assert m.key_filtered
    assert (m.rows_updated, m.rows_inserted) == (286, 114)
    assert len(got) == 2114


def test_composite_keys_of_mixed_integer_types_and_a_string(db, spark):
    # t.k is INT and s.k BIGINT: equal values are cast to BIGINT alike on both sides
    m, _ = both(
        db,
        spark,
        CREATE,
        FILL,
        "MERGE INTO {t} t USING (SELECT id, id % 7 AS k, concat('n', id % 13) AS name FROM range(0, 3000, 9)) s "
        "ON t.id = s.id AND t.k = s.k AND t.name = s.name "
        "WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT (id, k, name) VALUES (s.id, CAST(s.k AS INT), s.name)",
    )
    assert m.key_filtered
    assert (m.rows_deleted, m.rows_inserted) == (223, 111)


def test_a_conditional_by_source_clause_keeps_the_rows_it_acts_on(db, spark):
    m, _ = both(
        db,
        spark,
        CREATE,
        FILL,
        "MERGE INTO {t} t USING (SELECT id * 5 AS id, 2.0D AS v FROM range(0, 300)) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v "
        "WHEN NOT MATCHED BY SOURCE AND t.id % 100 = 3 THEN DELETE "
        "WHEN NOT MATCHED BY SOURCE AND t.name = 'n4' THEN UPDATE SET v = -1",
    )
    assert m.key_filtered
    assert m.rows_deleted == 20 and m.rows_updated > 300


@pytest.mark.parametrize(
    "clauses, why",
    [
        ("WHEN NOT MATCHED BY SOURCE THEN DELETE", "every row without a pair is acted on"),
        ("WHEN NOT MATCHED BY SOURCE AND rand() < 0.5 THEN DELETE", "a condition Spark evaluates once a row"),
    ],
)
def test_no_filter_where_every_row_or_a_random_one_matters(db, spark, clauses, why):
    statement = f"MERGE INTO {{t}} t USING (SELECT id FROM range(0, 100)) s ON t.id = s.id {clauses}"
    if "rand" in clauses:  # two tables would delete different rows: one table, the metric alone
        db.sql("DROP TABLE IF EXISTS kf.random")
        db.sql(CREATE.format(t="kf.random"))
        db.sql(FILL.format(t="kf.random"))
        with settings(spark, SHUFFLED):
            m = db.sql(statement.format(t="kf.random")).metrics
    else:
        m, got = both(db, spark, CREATE, FILL, statement)
        assert len(got) == 100
    assert not m.key_filtered, why


def test_only_keys_whose_equal_values_hash_alike(spark):
    target = spark.sql("SELECT 1L AS id, 1 AS k, 'a' AS name, 0.5D AS v, DATE'2024-01-01' AS d").alias("t")
    source = spark.sql(
        "SELECT 1 AS id, 1L AS k, 'A' AS name, 0.5D AS v, 1.0 AS dec, DATE'2024-01-01' AS d, '2024-01-01' AS ds"
    ).alias("s")
    keys = {
        ("id", "s.id"): True,  # BIGINT = INT: both cast to BIGINT
        ("k", "s.k"): True,
        ("name", "s.name"): True,
        ("d", "s.d"): True,
        ("v", "s.v"): False,  # DOUBLE: NaN and -0.0 compare equal to values that hash apart
        ("id", "s.v"): False,  # BIGINT = DOUBLE: compared as doubles
        ("id", "s.dec"): False,  # BIGINT = DECIMAL: compared as decimals
        ("name", "s.name COLLATE UTF8_LCASE"): False,  # equal under the collation, not as bytes
        ("d", "s.ds"): False,  # DATE = STRING: Spark casts the text
    }
    got = {(c, e) for c, e in keys if key_filter._hashable_keys(target, source, [(c, e)], "`t`")}
    assert got == {k for k, usable in keys.items() if usable}


def test_an_empty_source_with_a_by_source_clause(db, spark):
    # harness seed 4: Spark's DataFrame bloomFilter of no rows failed (NullPointerException); an empty
    # source now takes no filter
    m, got = both(
        db,
        spark,
        CREATE,
        FILL,
        "MERGE INTO {t} t USING (SELECT CAST(NULL AS BIGINT) AS id WHERE 1 = 0) s ON t.id = s.id "
        "WHEN NOT MATCHED BY SOURCE AND t.id % 10 = 0 THEN DELETE",
    )
    assert not m.key_filtered and len(got) == 1800


def test_a_source_as_big_as_the_target_is_not_filtered_by(db, spark):
    m, _ = both(
        db,
        spark,
        CREATE,
        FILL,
        "MERGE INTO {t} t USING (SELECT id FROM range(0, 1000)) s ON t.id = s.id WHEN MATCHED THEN DELETE",
    )
    assert not m.key_filtered and m.rows_deleted == 1000


def test_the_switch_is_an_on_off_setting(db, spark):
    db.sql("DROP TABLE IF EXISTS kf.switch")
    db.sql(CREATE.format(t="kf.switch"))
    with settings(spark, {**SHUFFLED, KEY_FILTER_CONF: "sometimes"}), pytest.raises(Exception, match=KEY_FILTER_CONF):
        # (a condition: the join runs, not the key-set delete, and asks the key filter)
        db.sql("MERGE INTO kf.switch t USING (SELECT 1L AS id) s ON t.id = s.id WHEN MATCHED AND t.id > 0 THEN DELETE")
