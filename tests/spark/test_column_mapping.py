"""Columns have an identity of their own (issue 25), through the SQL front door and every
reader: a column dropped and added back under its old name reads NULL in the tablets written
before, on Spark's native scan, the Python data source, the driver's Arrow reader and in a
MERGE; RENAME COLUMN and DROP COLUMN are metadata-only commits."""

import pytest
import tablets
from tablets.spark import catalog

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def db(spark):
    d = tablets.connect(spark=spark)
    d.sql("CREATE DATABASE IF NOT EXISTS cm")
    return d


@pytest.fixture
def table(db):
    db.sql("DROP TABLE IF EXISTS cm.t")
    db.sql("CREATE TABLE cm.t (id BIGINT, c INT, v STRING) USING tablets TBLPROPERTIES ('key_columns' = 'id')")
    db.sql("INSERT INTO cm.t VALUES (1, 10, 'a'), (2, 20, 'b')")
    return "cm.t"


def rows(db, sql):
    return sorted(tuple(r) for r in db.sql(sql).collect())


def test_a_dropped_column_added_back_reads_null(db, table):
    t = db.table_of(table)
    t.set_schema([c for c in t.snapshot().metadata.schema if c[0] != "c"])  # dbt's sync_all_columns
    catalog.sync_schema(db.spark, table)
    db.sql("ALTER TABLE cm.t ADD COLUMNS (c INT)")
    assert rows(db, "SELECT id, c FROM cm.t") == [(1, None), (2, None)]
    assert rows(db, "SELECT id FROM cm.t WHERE c IS NULL") == [(1,), (2,)]
