"""Defects the generated differential harness (test_differential_generated.py) found, each
reduced to its smallest SQL and run on both plans: the driver plan (the session's defaults)
and the Spark plan (``spark.tablets.merge.driverScanBytes=0``). Each must give the SQL
standard's rows and counts (DuckDB's MERGE INTO, Spark's semantics where they differ)."""

import datetime

import pytest
import tablets
from support.both_plans import check, on_both_plans
from support.conf import LOS_ANGELES, settings
from tablets.spark import catalog

pytestmark = pytest.mark.spark


def test_composite_key_by_source_deletes_every_unmatched_row(reg_db):
    """The driver plan kept (1,'q') and (2,'p'): the rows without a pair of a composite key."""
    results = on_both_plans(
        reg_db,
        "composite",
        [
            "CREATE TABLE {t} (k1 INT, k2 STRING, v INT) USING tablets",
            "INSERT INTO {t} VALUES (1,'p',10),(1,'q',20),(2,'q',30),(2,'p',40)",
        ],
        "MERGE INTO {t} t USING (SELECT * FROM VALUES (1,'p',11),(2,'q',31) AS v(k1,k2,v)) s "
        "ON t.k1 = s.k1 AND t.k2 = s.k2 WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED BY SOURCE THEN DELETE",
    )
    check(results, [(1, "p", 11), (2, "q", 31)], (0, 2, 2))


def test_rows_after_a_tablet_with_no_selected_row_are_kept(reg_db):
    """The driver plan's selected rows went to Spark as Arrow with an empty record batch, and
    ``createDataFrame`` dropped the batches after it: k=5 matched nothing and was inserted again."""
    results = on_both_plans(
        reg_db,
        "empty_batch",
        [
            "CREATE TABLE {t} (k INT, v INT) USING tablets TBLPROPERTIES ('target_tablet_rows'='2')",
            "INSERT INTO {t} VALUES (1,1),(2,2),(3,3),(4,4),(5,5),(6,6)",
        ],
        "MERGE INTO {t} t USING (SELECT * FROM VALUES (1,10),(5,50),(9,90) AS v(k,v)) s ON t.k = s.k "
        "WHEN MATCHED AND coalesce(s.v,0) > 0 THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *",
    )
    check(results, [(1, 10), (2, 2), (3, 3), (4, 4), (5, 50), (6, 6), (9, 90)], (1, 2, 0))


def test_a_nan_key_is_not_pruned_by_tablet_statistics(reg_db):
    """Parquet's min/max leave NaN out: the tablet holding NaN (and 1.0) was pruned by the
    source's key range (5.0), so the driver plan inserted NaN a second time."""
    results = on_both_plans(
        reg_db,
        "nan_key",
        [
            "CREATE TABLE {t} (k DOUBLE, v INT) USING tablets",
            "INSERT INTO {t} VALUES (CAST('NaN' AS DOUBLE), 1), (1.0, 1)",
            "INSERT INTO {t} VALUES (5.0, 2)",
        ],
        "MERGE INTO {t} t USING (SELECT * FROM VALUES (CAST('NaN' AS DOUBLE), 5), (5.0, 6) AS v(k, v)) s ON t.k = s.k "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
    )
    check(results, [("NaN", 5), (1.0, 1), (5.0, 6)], (0, 2, 0))


def test_a_dropped_column_added_back_is_empty(reg_db):
    """``set_schema`` dropped w, ALTER TABLE ADD COLUMNS added it back: the old tablets' w
    came back with it, where a new column is NULL in every existing row."""

    def drop_w(t):
        table = reg_db.table_of(t)
        table.set_schema([c for c in table.snapshot().metadata.schema if c[0] != "w"])
        catalog.sync_schema(reg_db.spark, t)

    results = on_both_plans(
        reg_db,
        "readd",
        [
            "CREATE TABLE {t} (k INT, v INT, w INT) USING tablets",
            "INSERT INTO {t} VALUES (1, 1, 1), (2, 2, 2)",
            drop_w,
            "ALTER TABLE {t} ADD COLUMNS (w INT)",
        ],
        "MERGE INTO {t} t USING (SELECT * FROM VALUES (1, 10, CAST(NULL AS INT)) AS v(k, v, w)) s ON t.k = s.k "
        "WHEN MATCHED THEN UPDATE SET v = s.v",
    )
    check(results, [(1, 10, None), (2, 2, None)], (0, 1, 0))


def test_a_clause_after_an_always_true_condition_is_not_refused(reg_db):
    """The planner folded ``t.v IS NULL OR t.v IS NOT NULL`` to TRUE and refused the next BY
    SOURCE clause as unreachable; Spark and DuckDB run the statement (the second clause acts
    on no row)."""
    results = on_both_plans(
        reg_db,
        "tautology",
        [
            "CREATE TABLE {t} (k INT, v INT) USING tablets",
            "INSERT INTO {t} VALUES (1, NULL), (2, 20)",
        ],
        "MERGE INTO {t} t USING (SELECT * FROM VALUES (3, 30) AS v(k, v)) s ON t.k = s.k "
        "WHEN NOT MATCHED BY SOURCE AND (t.v IS NULL OR t.v IS NOT NULL) THEN UPDATE SET v = 0 "
        "WHEN NOT MATCHED BY SOURCE AND t.v IS NULL THEN DELETE",
    )
    check(results, [(1, 0), (2, 0)], (0, 2, 0))


def test_a_merge_on_a_date_key_of_year_one_runs_on_the_spark_plan(reg_db):
    """The Spark plan failed with a bare IllegalArgumentException when a DATE key '0001-01-01'
    matched (the driver plan ran it; year 1000 ran on both)."""
    results = on_both_plans(
        reg_db,
        "year_one",
        [
            "CREATE TABLE {t} (k DATE, v INT) USING tablets",
            "INSERT INTO {t} VALUES (DATE'0001-01-01', 2), (DATE'2024-02-29', 3)",
        ],
        "MERGE INTO {t} t USING (SELECT * FROM VALUES (DATE'0001-01-01', 2) AS v(k, v)) s ON t.k = s.k "
        "WHEN MATCHED THEN DELETE",
    )
    check(results, [(19782, 3)], (0, 0, 1))  # (canon's dates: days since 1970-01-01)


def test_a_keyed_merge_checks_the_inserted_key_not_the_source_key(reg_db):
    """On a table with key columns an inserting MERGE was checked on the source's key columns,
    not on the key of the row it inserts: INSERT (k, v) VALUES (s.k - 10, s.v) added a second
    row of key 1 (silently, on both plans). A key computed in the INSERT is refused now, on
    both plans, before anything runs."""
    results = on_both_plans(
        reg_db,
        "computed_key",
        [
            "CREATE TABLE {t} (k INT, v INT) USING tablets TBLPROPERTIES ('key_columns'='k')",
            "INSERT INTO {t} VALUES (1, 1)",
        ],
        "MERGE INTO {t} t USING (SELECT * FROM VALUES (11, 5) AS v(k, v)) s ON t.k = s.k "
        "WHEN NOT MATCHED THEN INSERT (k, v) VALUES (s.k - 10, s.v)",
    )
    assert all(
        isinstance(r, str) and r.startswith("MergeSpecError") and "computes key column 'k'" in r
        for r in results.values()
    ), results


def test_a_keyed_merge_inserting_a_new_key_is_not_refused(reg_db):
    """... and a row whose own key is new was refused because the source's key (1) exists,
    with a KeyViolation naming a key it did not insert: now the computed key is what the
    refusal names, and the statement written with the key computed in the source runs."""
    results = on_both_plans(
        reg_db,
        "new_key",
        [
            "CREATE TABLE {t} (k INT, v INT) USING tablets TBLPROPERTIES ('key_columns'='k')",
            "INSERT INTO {t} VALUES (1, 1)",
        ],
        "MERGE INTO {t} t USING (SELECT * FROM VALUES (1, 5) AS v(k, v)) s ON t.k = s.k AND t.v > 100 "
        "WHEN NOT MATCHED THEN INSERT (k, v) VALUES (s.k + 10, s.v)",
    )
    assert all(
        isinstance(r, str) and r.startswith("MergeSpecError") and "computes key column 'k'" in r
        for r in results.values()
    ), results
    results = on_both_plans(
        reg_db,
        "new_key_source",
        [
            "CREATE TABLE {t} (k INT, v INT) USING tablets TBLPROPERTIES ('key_columns'='k')",
            "INSERT INTO {t} VALUES (1, 1)",
        ],
        "MERGE INTO {t} t USING (SELECT k + 10 AS k, v FROM VALUES (1, 5) AS v(k, v)) s ON t.k = s.k AND t.v > 100 "
        "WHEN NOT MATCHED THEN INSERT (k, v) VALUES (s.k, s.v)",
    )
    check(results, [(1, 1), (11, 5)], (1, 0, 0))


def test_a_second_session_of_the_context_can_connect(spark):
    """``tablets.connect(spark=spark.newSession())`` failed with DATA_SOURCE_ALREADY_EXISTS:
    Spark keeps registered data sources per context, the product remembered them per session
    (the harness runs its two plans on two sessions of one context)."""
    other = tablets.connect(spark=spark.newSession())
    other.sql("CREATE DATABASE IF NOT EXISTS reg")
    other.sql("DROP TABLE IF EXISTS reg.second_session")
    other.sql("CREATE TABLE reg.second_session (k INT) USING tablets")
    assert other.sql("INSERT INTO reg.second_session VALUES (1)").metrics.rows_inserted == 1


def test_a_row_matched_twice_is_reported_before_a_repeated_inserted_key(reg_db):
    """Soak seed 1000004: two source rows match one target row and two others insert one new
    key. The MERGE itself is invalid (a cardinality violation, as DuckDB and Delta report it)
    before the key its inserts would repeat; both plans reported the key."""
    results = on_both_plans(
        reg_db,
        "twice_and_key",
        [
            "CREATE TABLE {t} (k SMALLINT, v STRING) USING tablets TBLPROPERTIES ('key_columns' = 'k')",
            "INSERT INTO {t} VALUES (2, 'a')",
        ],
        "MERGE INTO {t} t USING (SELECT * FROM VALUES (CAST(2 AS SMALLINT), 'p'), (CAST(2 AS SMALLINT), 'q'), "
        "(CAST(0 AS SMALLINT), 'r'), (CAST(0 AS SMALLINT), 's') AS v(k, v)) s ON t.k = s.k "
        "WHEN NOT MATCHED THEN INSERT * WHEN MATCHED THEN UPDATE SET v = s.v",
    )
    assert all(r.startswith("CardinalityViolation") for r in results.values()), results


def test_timestamp_literals_with_and_without_an_offset_in_one_condition(reg_db):
    """Soak seed 1000021: the planner's constant folding (sqlglot) compared a TIMESTAMP literal
    with an offset and one without (only the session's zone orders them) and raised TypeError."""
    results = on_both_plans(
        reg_db,
        "offsets",
        [
            "CREATE TABLE {t} (k TIMESTAMP, v INT) USING tablets",
            "INSERT INTO {t} VALUES (TIMESTAMP'2001-01-01 00:00:00', 1), (TIMESTAMP'1950-01-01 00:00:00', 2)",
        ],
        "UPDATE {t} SET v = 0 WHERE k > CAST('1999-12-31 12:00:00' AS TIMESTAMP) "
        "AND k > CAST('1900-01-01 00:00:00+00:00' AS TIMESTAMP)",
    )
    check(results, [(978307200000000, 0), (-631152000000000, 2)], (0, 1, 0))


def test_an_update_the_driver_selects_but_cannot_compute_goes_to_spark_whole(reg_db):
    """Harness seed 2: the driver selected the rows of an UPDATE whose value it does not compute
    exactly (SMALLINT arithmetic is INT), and Spark's plan then took that selection (with the
    driver's own bookkeeping column) for the tablets' scan."""
    results = on_both_plans(
        reg_db,
        "update_aside",
        [
            "CREATE TABLE {t} (k BOOLEAN, c SMALLINT) USING tablets",
            "INSERT INTO {t} VALUES (NULL, CAST(-32768 AS SMALLINT)), (TRUE, CAST(7 AS SMALLINT))",
        ],
        "UPDATE {t} SET c = (c % 5) - (c % 3)",
    )
    check(results, [(None, -1), (True, 1)], (0, 2, 0))


def test_a_key_deleted_by_source_and_inserted_again_in_one_merge(reg_db):
    """Soak seed 1000036: the rest of ON rejects the key pair, so the source row is inserted
    and the old row of that key deleted by BY SOURCE; one live row of the key remains. The
    driver plan raised a key violation."""
    results = on_both_plans(
        reg_db,
        "key_reinserted",
        [
            "CREATE TABLE {t} (k BIGINT, v DOUBLE) USING tablets TBLPROPERTIES ('key_columns'='k')",
            "INSERT INTO {t} VALUES (1, 0.1), (2, 0.2)",
        ],
        "MERGE INTO {t} t USING (SELECT * FROM VALUES (CAST(1 AS BIGINT), 9.5) AS v(k, v)) s "
        "ON t.k = s.k AND t.v < t.v WHEN NOT MATCHED THEN INSERT * "
        "WHEN NOT MATCHED BY SOURCE AND t.k = 1 THEN DELETE",
    )
    check(results, [(1, 9.5), (2, 0.2)], (1, 0, 1))


def test_by_source_clauses_in_order_decide_which_keys_are_inserted_again(reg_db):
    """Each target row the rest of ON rejects takes the first BY SOURCE clause that holds; only
    a source row a NOT MATCHED clause inserts is inserted."""
    results = on_both_plans(
        reg_db,
        "key_reinserted_order",
        [
            "CREATE TABLE {t} (k BIGINT, v DOUBLE) USING tablets TBLPROPERTIES ('key_columns'='k')",
            "INSERT INTO {t} VALUES (1, 0.1), (2, 0.2), (3, 0.3)",
        ],
        "MERGE INTO {t} t USING (SELECT * FROM VALUES (CAST(1 AS BIGINT), 9.5), (CAST(2 AS BIGINT), 8.5) AS v(k, v)) s "
        "ON t.k = s.k AND t.v < 0 WHEN NOT MATCHED AND s.v > 9 THEN INSERT * "
        "WHEN NOT MATCHED BY SOURCE AND t.k = 3 THEN DO NOTHING WHEN NOT MATCHED BY SOURCE THEN DELETE",
    )
    check(results, [(1, 9.5), (3, 0.3)], (1, 0, 2))


def test_a_key_inserted_again_while_its_row_stays_is_a_key_violation(reg_db):
    """The BY SOURCE clause updates the old row of the key the source row inserts: two live rows
    of one key, refused on both plans."""
    results = on_both_plans(
        reg_db,
        "key_reinserted_kept",
        [
            "CREATE TABLE {t} (k BIGINT, v DOUBLE) USING tablets TBLPROPERTIES ('key_columns'='k')",
            "INSERT INTO {t} VALUES (1, 0.1)",
        ],
        "MERGE INTO {t} t USING (SELECT * FROM VALUES (CAST(1 AS BIGINT), 9.5) AS v(k, v)) s "
        "ON t.k = s.k AND t.v < 0 WHEN NOT MATCHED THEN INSERT * WHEN NOT MATCHED BY SOURCE THEN UPDATE SET v = 0",
    )
    assert all(isinstance(r, str) and r.startswith("KeyViolation") and "k=1" in r for r in results.values()), results


def test_a_timestamp_key_past_year_9999_in_utc(reg_db, spark):
    """Soak seed 1000072: TIMESTAMP '9999-12-31 23:59:59' in Los Angeles is in year 10000 in UTC,
    where Python's datetime ends. Writing its tablet's statistics, the source's key range and the
    key violation's example took it into Python and failed with OverflowError; now the column
    has no bounds there (pruning keeps its tablets) and the example is Arrow's text."""
    edge = "TIMESTAMP '9999-12-31 23:59:59'"
    setup = [
        "CREATE TABLE {t} (k TIMESTAMP, v INT) USING tablets TBLPROPERTIES ('key_columns'='k')",
        f"INSERT INTO {{t}} VALUES ({edge}, 1), (TIMESTAMP '2024-01-01 00:00:00', 2)",
    ]
    with settings(spark, LOS_ANGELES):
        results = on_both_plans(reg_db, "ts_edge", setup, f"INSERT INTO {{t}} VALUES ({edge}, 3)")
        assert all(r.startswith("KeyViolation") and "k=" in r for r in results.values()), results
        merged = on_both_plans(
            reg_db,
            "ts_edge",
            setup,
            f"MERGE INTO {{t}} t USING (SELECT {edge} AS k, 4 AS v) s ON t.k = s.k "
            "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *",
        )
    assert {plan: r[1] for plan, r in merged.items()} == {plan: (0, 1, 0) for plan in merged}, merged
    assert all(sorted(r[0].values()) == [1, 1] and len(r[0]) == 2 for r in merged.values()), merged


def test_minus_zero_and_zero_are_one_key(reg_db):
    """Soak seed 1000073: (0.0, -5) and (-0.0, -5) are one key, as Spark groups and joins them
    (and NaN one value); the driver plan's check of inserted keys took them for two."""
    for values in (
        "(CAST('0.0' AS FLOAT), -5), (CAST('-0.0' AS FLOAT), -5)",
        "(CAST('NaN' AS FLOAT), 1), (CAST('NaN' AS FLOAT), 1)",
    ):
        results = on_both_plans(
            reg_db,
            "float_key",
            ["CREATE TABLE {t} (k1 FLOAT, k2 BIGINT) USING tablets TBLPROPERTIES ('key_columns' = 'k1,k2')"],
            f"INSERT INTO {{t}} SELECT * FROM VALUES {values} AS v(k1, k2)",
        )
        assert all(r.startswith("KeyViolation") for r in results.values()), results


def test_a_null_safe_key_with_more_of_on_pairs_null_keys(reg_db):
    """Seed 22 (of a 20-statement run): a keyed table's MERGE whose ON is ``t.k <=> s.k AND
    <more>`` was rewritten to pair on ``t.k = s.k``, which never pairs NULL keys, so the NULL-key
    row was inserted a second time on both plans."""
    results = on_both_plans(
        reg_db,
        "null_safe_key",
        [
            "CREATE TABLE {t} (k1 SMALLINT, d DATE) USING tablets TBLPROPERTIES ('key_columns' = 'k1')",
            "INSERT INTO {t} VALUES (NULL, DATE'1969-12-31'), (1, DATE'2000-01-01')",
        ],
        "MERGE INTO {t} t USING (SELECT * FROM VALUES (CAST(NULL AS SMALLINT), DATE'1970-01-01'), "
        "(CAST(1 AS SMALLINT), DATE'2001-01-01'), (CAST(2 AS SMALLINT), DATE'2002-01-01') AS v(k1, d)) s "
        "ON (t.k1 <=> s.k1) AND (t.d <=> t.d) WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
    )
    check(results, [(None, 0), (1, 11323), (2, 11688)], (1, 2, 0))


def test_null_keys_outside_the_rest_of_on_are_each_not_matched(reg_db):
    """Soak seed 1000069: ON ``t.k <=> s.k AND <rest>`` on a keyed table, two source rows and a
    target row all with a NULL key, the rest false: SQL pairs none of them, so both source rows
    are inserted (NULL keys never collide) and the target row takes its BY SOURCE DELETE once.
    Pairing on the key alone paired the target row twice: a cardinality error on both plans."""
    results = on_both_plans(
        reg_db,
        "null_keys_outside",
        [
            "CREATE TABLE {t} (k1 DOUBLE, b BIGINT, s STRING) USING tablets TBLPROPERTIES ('key_columns' = 'k1')",
            "INSERT INTO {t} VALUES (NULL, 0, 'Z'), (1.0, 2, 'one')",
        ],
        "MERGE INTO {t} t USING (SELECT * FROM VALUES (CAST(NULL AS DOUBLE), 0L, 'a'), (CAST(NULL AS DOUBLE), 5L, 'b'), "
        "(1.0D, 3L, 'c') AS v(k1, b, s)) s ON (t.k1 <=> s.k1) AND (t.b IS NULL OR t.b > 1) "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED BY SOURCE AND (t.b % 2 = 0) THEN DELETE "
        "WHEN NOT MATCHED THEN INSERT *",
    )
    check(results, [(None, 0, "a"), (None, 5, "b"), (1.0, 3, "c")], (2, 1, 1))


def test_a_row_outside_the_rest_of_on_for_two_source_rows_takes_its_by_source_action_once(reg_db):
    """Soak seed 1000350, followed up: a keyed table, ON ``t.k = s.k AND <target-only rest>``,
    two source rows of the row's key, the rest false for it: SQL pairs neither, so the row is
    NOT MATCHED BY SOURCE once (deleted) and each source row is NOT MATCHED (one inserted, one
    not). Pairing on the key alone acted on the row once per source row: a cardinality error."""
    results = on_both_plans(
        reg_db,
        "outside_twice",
        [
            "CREATE TABLE {t} (k INT, c INT) USING tablets TBLPROPERTIES ('key_columns' = 'k')",
            "INSERT INTO {t} VALUES (1, 0), (2, 5)",
        ],
        "MERGE INTO {t} t USING (SELECT * FROM VALUES (1, 10), (1, 11), (2, 12) AS v(k, c)) s "
        "ON t.k = s.k AND t.c > 2 "
        "WHEN MATCHED THEN UPDATE SET c = s.c "
        "WHEN NOT MATCHED AND s.c = 10 THEN INSERT * WHEN NOT MATCHED BY SOURCE THEN DELETE",
    )
    check(results, [(1, 10), (2, 12)], (1, 1, 1))


def test_two_source_rows_inserted_beside_a_row_outside_the_rest_of_on_repeat_a_key(reg_db):
    """Soak seed 1000350 itself: both source rows of the key inserted (the row they would pair
    with deleted by BY SOURCE): SQL's answer is a key violation, not a cardinality error."""
    results = on_both_plans(
        reg_db,
        "outside_twice_inserted",
        [
            "CREATE TABLE {t} (k INT, c INT) USING tablets TBLPROPERTIES ('key_columns' = 'k')",
            "INSERT INTO {t} VALUES (1, 0)",
        ],
        "MERGE INTO {t} t USING (SELECT * FROM VALUES (1, 10), (1, 11) AS v(k, c)) s ON t.k = s.k AND t.c > 2 "
        "WHEN NOT MATCHED THEN INSERT * WHEN NOT MATCHED BY SOURCE THEN DELETE",
    )
    assert all(r.startswith("KeyViolation") for r in results.values()), results


def test_a_date_key_before_the_gregorian_reform_pairs_when_the_source_stays_in_spark(reg_db, spark):
    """Soak seed 1000096: a source kept in Spark (no broadcast) narrows the target scan to its
    key range; Spark's Parquet pushdown of DATE'1582-10-10' misses the row that holds it, so
    the matched row was not updated. Dates before 1582-10-15 are not pushed."""
    with settings(spark, {"spark.sql.autoBroadcastJoinThreshold": "-1"}):
        results = on_both_plans(
            reg_db,
            "reform_date",
            [
                "CREATE TABLE {t} (k1 DOUBLE, k2 DATE, c SMALLINT) USING tablets",
                "INSERT INTO {t} VALUES (1e308D, DATE'0001-01-01', 0), (1e308D, DATE'1582-10-10', -32768)",
            ],
            "MERGE INTO {t} t USING (SELECT * FROM VALUES (1e308D, DATE'1582-10-10', CAST(1 AS SMALLINT)) AS v(k1, k2, c)) s "
            "ON t.k1 = s.k1 AND t.k2 = s.k2 WHEN MATCHED THEN UPDATE SET c = s.c",
        )
    epoch = datetime.date(1970, 1, 1)  # (the rows compare dates as days since it)
    old, reform = (datetime.date(1, 1, 1) - epoch).days, (datetime.date(1582, 10, 10) - epoch).days
    check(results, [(1e308, old, 0), (1e308, reform, 1)], (0, 1, 0))
