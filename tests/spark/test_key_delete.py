"""A MERGE that only deletes the rows whose key the source holds, by the source's key set in the
tasks that own the tablets (``engine.key_delete``): each statement runs by the key set and the
long way (``spark.tablets.merge.keyDelete=false``, Spark's join), on Spark's plan with the pairs
written by Spark's tasks, and must give the same rows and counts; the metric says which ran."""

import pytest
from support.conf import settings
from tablets.engine.route import DRIVER_SCAN_CONF, DRIVER_WRITE_CONF, KEY_DELETE_CONF
from tablets.exceptions import CardinalityViolation

pytestmark = pytest.mark.spark

DATABASE = "kd"
TASKS = {DRIVER_SCAN_CONF: "0", DRIVER_WRITE_CONF: "0"}
PERSISTED = {**TASKS, "spark.sql.autoBroadcastJoinThreshold": "-1"}  # the source persisted, not collected
CREATE = "CREATE TABLE {t} (id BIGINT, name STRING, v DOUBLE) USING tablets TBLPROPERTIES ('target_tablet_rows'='4')"
FILL = [
    "INSERT INTO {t} SELECT id, concat('n', id), id / 2 FROM range(0, 40)",
    "INSERT INTO {t} VALUES (NULL, 'null key', 0.0), (7, 'seven again', 7.0)",
    "DELETE FROM {t} WHERE id % 10 = 3",  # deletion vectors before the statement
]


def rows(db, name):
    return sorted((tuple(r) for r in db.sql(f"SELECT * FROM {name}").collect()), key=str)


def both(db, conf, statement, fill=FILL, create=CREATE):
    """``statement`` ({t}: the table) on two copies under ``conf``, by the key set and the long
    way: (metrics of each, rows) once both agree."""
    out = {}
    for name, on in (("kd.by_keys", "true"), ("kd.joined", "false")):
        db.sql(f"DROP TABLE IF EXISTS {name}")
        db.sql(create.format(t=name))
        for s in fill:
            db.sql(s.format(t=name))
        with settings(db.spark, {**conf, KEY_DELETE_CONF: on}):
            m = db.sql(statement.format(t=name)).metrics
        out[on] = (m, rows(db, name))
    (m_on, rows_on), (m_off, rows_off) = out["true"], out["false"]
    assert rows_on == rows_off
    assert m_on.message() == m_off.message()
    assert not m_off.deleted_by_key_set
    return m_on, m_off, rows_on


@pytest.mark.parametrize("conf", [TASKS, PERSISTED], ids=["collected", "persisted"])
def test_a_key_delete_runs_in_the_tablets_tasks(db, conf):
    statement = (
        "MERGE INTO {t} t USING (SELECT * FROM VALUES (1L), (7L), (13L), (25L), (NULL), (99L) AS s(id)) s "
        "ON t.id = s.id WHEN MATCHED THEN DELETE"
    )
    m, joined, after = both(db, conf, statement)
    assert m.deleted_by_key_set
    assert m.rows_deleted == 4  # 1, 25 and both rows of 7; 13 was deleted before, NULL pairs nothing
    assert (m.dvs_written, m.tablets_added) == (joined.dvs_written, 0)
    assert {r[0] for r in after}.isdisjoint({1, 7, 25})
    assert len(after) == 42 - 4 - 4


def test_string_keys_and_an_int_source_of_a_bigint_key(db):
    statement = (
        "MERGE INTO {t} t USING (SELECT CAST(id AS INT) AS id FROM range(0, 40, 6)) s "
        "ON t.id = s.id WHEN MATCHED THEN DELETE"
    )
    m, _, _ = both(db, PERSISTED, statement)
    assert m.deleted_by_key_set and m.rows_deleted == 7  # 0, 6, ..., 36
    by_name = "MERGE INTO {t} t USING (SELECT 'n5' AS name UNION ALL SELECT 'null key') s ON t.name = s.name WHEN MATCHED THEN DELETE"
    m, _, _ = both(db, PERSISTED, by_name)
    assert m.deleted_by_key_set and m.rows_deleted == 2


def test_a_key_renamed_and_one_added_after_the_first_tablets(db):
    fill = [
        *FILL,
        "ALTER TABLE {t} RENAME COLUMN id TO key",
        "ALTER TABLE {t} ADD COLUMNS (code INT)",
        "INSERT INTO {t} VALUES (100, 'late', 1.0, 5)",
    ]
    m, _, _ = both(
        db,
        PERSISTED,
        "MERGE INTO {t} t USING (SELECT 2L AS key UNION ALL SELECT 100L) s ON t.key = s.key WHEN MATCHED THEN DELETE",
        fill,
    )
    assert m.deleted_by_key_set and m.rows_deleted == 2
    m, _, _ = both(
        db, PERSISTED, "MERGE INTO {t} t USING (SELECT 5 AS code) s ON t.code = s.code WHEN MATCHED THEN DELETE", fill
    )
    assert m.deleted_by_key_set and m.rows_deleted == 1  # the old tablets hold no code: NULL


def test_a_key_twice_in_the_source_is_the_joins_to_report(db):
    statement = "MERGE INTO {t} t USING (SELECT 5L AS id UNION ALL SELECT 5L) s ON t.id = s.id WHEN MATCHED THEN DELETE"
    for on in ("true", "false"):
        db.sql("DROP TABLE IF EXISTS kd.twice")
        db.sql(CREATE.format(t="kd.twice"))
        for s in FILL:
            db.sql(s.format(t="kd.twice"))
        with settings(db.spark, {**PERSISTED, KEY_DELETE_CONF: on}), pytest.raises(CardinalityViolation):
            db.sql(statement.format(t="kd.twice"))
        assert len(rows(db, "kd.twice")) == 38  # nothing written
    unmatched = (
        "MERGE INTO {t} t USING (SELECT 500L AS id UNION ALL SELECT 500L) s ON t.id = s.id WHEN MATCHED THEN DELETE"
    )
    m, _, _ = both(db, PERSISTED, unmatched)
    assert not m.deleted_by_key_set and m.rows_deleted == 0


@pytest.mark.parametrize(
    "statement",
    [
        "MERGE INTO {t} t USING (SELECT 5L AS id) s ON t.id = s.id WHEN MATCHED AND t.v > 1 THEN DELETE",
        "MERGE INTO {t} t USING (SELECT 5L AS id) s ON t.id = s.id AND t.v > 1 WHEN MATCHED THEN DELETE",
        "MERGE INTO {t} t USING (SELECT 5L AS id, 'n5' AS name) s ON t.id = s.id AND t.name = s.name WHEN MATCHED THEN DELETE",
        "MERGE INTO {t} t USING (SELECT 5L AS id) s ON t.id = s.id + 0 WHEN MATCHED THEN DELETE",
        "MERGE INTO {t} t USING (SELECT 5.0D AS id) s ON t.id = s.id WHEN MATCHED THEN DELETE",
        "MERGE INTO {t} t USING (SELECT 5L AS id) s ON t.id = s.id WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT (id) VALUES (s.id)",
    ],
    ids=["condition", "on-rest", "two-keys", "expression", "double", "insert"],
)
def test_other_statements_join(db, statement):
    m, _, _ = both(db, PERSISTED, statement)
    assert not m.deleted_by_key_set


def test_explain_says_a_delete_by_one_key_runs_by_its_keys(db):
    db.sql("DROP TABLE IF EXISTS kd.explained")
    db.sql(CREATE.format(t="kd.explained"))
    statement = "MERGE INTO kd.explained t USING (SELECT 5L AS id) s ON t.id = s.id WHEN MATCHED THEN DELETE"
    with settings(db.spark, TASKS):
        assert "a delete by one key" in db.explain(statement)
    with settings(db.spark, {**TASKS, KEY_DELETE_CONF: "false"}):
        assert "a delete by one key" not in db.explain(statement)


@pytest.mark.parametrize("seed", range(6))
def test_generated_key_deletes_agree_with_the_join(db, seed):
    """Random tables (a key of several types, NULL keys, tablets of random sizes, deletion vectors,
    a column renamed) and random sources of distinct keys, some absent, some NULL: the key set
    deletes exactly the join's rows."""
    import random

    r = random.Random(seed)
    kind = r.choice(["BIGINT", "INT", "SMALLINT", "STRING", "DATE"])
    value = {
        "BIGINT": lambda i: str(i * 7919 % 1000 - 500),
        "INT": lambda i: str(i),
        "SMALLINT": lambda i: str(i % 300),
        "STRING": lambda i: f"'k{i}'",
        "DATE": lambda i: f"DATE'2020-01-01' + {i}",
    }[kind]
    n = r.randint(20, 120)
    target = ", ".join(f"({'NULL' if r.random() < 0.05 else value(r.randrange(n))}, {i})" for i in range(n))
    keys = {value(r.randrange(2 * n)) for _ in range(r.randint(1, n))}
    source = " UNION ALL ".join(f"SELECT CAST({k} AS {kind}) AS key" for k in [*keys, "NULL"])
    create = f"CREATE TABLE {{t}} (key {kind}, v INT) USING tablets TBLPROPERTIES ('target_tablet_rows'='{r.randint(3, 40)}')"
    fill = [f"INSERT INTO {{t}} VALUES {target}", f"DELETE FROM {{t}} WHERE v % {r.randint(2, 9)} = 0"]
    if r.random() < 0.5:
        fill += ["ALTER TABLE {t} RENAME COLUMN key TO key2", "ALTER TABLE {t} RENAME COLUMN key2 TO key"]
    statement = f"MERGE INTO {{t}} t USING ({source}) s ON t.key = s.key WHEN MATCHED THEN DELETE"
    m, _, _ = both(db, PERSISTED if seed % 2 else TASKS, statement, fill, create)
    assert m.deleted_by_key_set


def test_the_switch_is_an_on_off_setting(db):
    db.sql("DROP TABLE IF EXISTS kd.switch")
    db.sql(CREATE.format(t="kd.switch"))
    statement = "MERGE INTO kd.switch t USING (SELECT 1L AS id) s ON t.id = s.id WHEN MATCHED THEN DELETE"
    with settings(db.spark, {**TASKS, KEY_DELETE_CONF: "sometimes"}), pytest.raises(Exception, match=KEY_DELETE_CONF):
        db.sql(statement)
