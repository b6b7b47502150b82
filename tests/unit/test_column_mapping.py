"""Columns have an identity of their own (issue 25): a column dropped and added back under its
old name, or renamed, never reads another column's values from older tablets. The store only,
no Spark."""

import pyarrow as pa
import pytest
from tablets.storage import TabletTable

pytestmark = pytest.mark.unit

SCHEMA = pa.schema([("id", pa.int64()), ("c", pa.int32())])


@pytest.fixture
def table(tmp_path):
    t = TabletTable.create(str(tmp_path / "t"), SCHEMA, key_columns=["id"])
    t.append(pa.table({"id": [1, 2], "c": pa.array([10, 20], pa.int32())}, schema=SCHEMA))
    return t


def test_a_dropped_column_added_back_reads_null_in_older_tablets(table):
    table.set_schema([("id", "bigint", True)])  # dbt's on_schema_change: sync_all_columns
    table.add_columns([("c", "int")])
    assert table.read().column("c").to_pylist() == [None, None]
