"""ON beyond the key equalities on the driver plan (dbt's ``incremental_predicates`` add
conjuncts such as ``t.d > ...``): the driver keeps the key-equal pairs the rest of ON accepts
(``driver_plan.driver_on_rest``), a rejected pair is no pair (its source row is NOT MATCHED, its
target row NOT MATCHED BY SOURCE), and a rest Arrow cannot evaluate as Spark does goes to Spark.
And the one-shuffle plan with a source of more rows than a tablet holds. Each on both plans."""

import pytest
from support.both_plans import check, on_both_plans
from tablets.exceptions import KeyViolation

pytestmark = pytest.mark.spark

SETUP = [
    "CREATE TABLE {t} (k INT, v STRING, d DOUBLE) USING tablets TBLPROPERTIES ('target_tablet_rows'='3')",
    "INSERT INTO {t} VALUES " + ",".join(f"({i},'x{i}',{i}.5D)" for i in range(8)),
]


def kept(i: int, v: str | None = None, d: float | None = None) -> tuple:
    return (i, v if v is not None else f"x{i}", d if d is not None else i + 0.5)


def test_a_target_conjunct_rejects_pairs_on_the_driver(reg_db):
    """k = 1 fails ``t.d > 2``: its source row is inserted, its target row is deleted by BY SOURCE."""
    statement = (
        "MERGE INTO {t} t USING (SELECT * FROM VALUES (1,'a',1.0D),(3,'b',2.0D),(99,'z',0.0D) AS v(k,v,d)) s "
        "ON t.k = s.k AND t.d > 2 WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT * "
        "WHEN NOT MATCHED BY SOURCE AND t.k < 3 THEN DELETE"
    )
    results = on_both_plans(reg_db, "rest_target", SETUP, statement)
    rows = [kept(3, "b"), *(kept(i) for i in range(4, 8)), (1, "a", 1.0), (99, "z", 0.0)]
    check(results, rows, (2, 1, 3))
    assert reg_db.sql(statement.replace("{t}", "reg.rest_target_driver").replace("'b'", "'c'")).metrics.merged_on_driver


def test_a_null_in_a_source_conjunct_is_no_pair(reg_db):
    results = on_both_plans(
        reg_db,
        "rest_null",
        SETUP,
        "MERGE INTO {t} t USING (SELECT * FROM VALUES (2,'a',1.0D),(4,CAST(NULL AS STRING),2.0D) AS v(k,v,d)) s "
        "ON t.k = s.k AND s.v IS NOT NULL AND s.d < t.d WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT *",
    )
    rows = [kept(i) for i in range(8) if i != 2] + [(4, None, 2.0)]
    check(results, rows, (1, 0, 1))


def test_a_conjunct_arrow_cannot_evaluate_goes_to_spark(reg_db):
    statement = (
        "MERGE INTO {t} t USING (SELECT * FROM VALUES (5,'a',1.0D),(6,'b',2.0D) AS v(k,v,d)) s "
        "ON t.k = s.k AND reverse(t.v) = 'x5' WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    results = on_both_plans(reg_db, "rest_spark", SETUP, statement)
    rows = [kept(i) for i in range(8)] + [(5, "a", 1.0), (6, "b", 2.0)]
    check(results, rows, (2, 0, 0))


def test_a_source_of_more_rows_than_a_tablet_merges_in_one_shuffle(reg_db):
    """Inserts of a broadcast source go to one task whatever the tablet size; there every
    candidate meets the markers of its pairs (``tasks._resolve_candidates``)."""
    source = ",".join(f"({i},'n{i}',0.0D)" for i in range(4, 12))
    results = on_both_plans(
        reg_db,
        "one_shuffle",
        SETUP,
        f"MERGE INTO {{t}} t USING (SELECT * FROM VALUES {source} AS v(k,v,d)) s ON t.k = s.k "
        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *",
    )
    rows = [kept(i) for i in range(4)] + [kept(i, f"n{i}") for i in range(4, 8)]
    rows += [(i, f"n{i}", 0.0) for i in range(8, 12)]
    check(results, rows, (4, 4, 0))


def test_duplicate_inserted_keys_beyond_a_tablet_are_refused(reg_db):
    setup = [
        "CREATE TABLE {t} (k INT, v STRING) USING tablets TBLPROPERTIES ('target_tablet_rows'='2', 'key_columns'='k')",
        "INSERT INTO {t} VALUES (1,'a'),(2,'b'),(3,'c')",
    ]
    source = ",".join(f"({i % 4 + 10},'n{i}')" for i in range(8))  # each new key twice
    results = on_both_plans(
        reg_db,
        "one_shuffle_keys",
        setup,
        f"MERGE INTO {{t}} t USING (SELECT * FROM VALUES {source} AS v(k,v)) s ON t.k = s.k "
        "WHEN NOT MATCHED THEN INSERT *",
    )
    assert all(r.startswith(KeyViolation.__name__) for r in results.values()), results
