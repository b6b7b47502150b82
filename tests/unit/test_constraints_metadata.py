"""Constraints in a table's metadata (no JVM): kept as Delta keeps them, in the Delta log's
metaData with the checkConstraints writer feature, and a constraint's commit conflicts with rows
appended after the version whose rows were checked."""

import json
import os

import pyarrow as pa
import pytest
from tablets.exceptions import CommitConflict, SchemaMismatch
from tablets.storage import TabletTable
from tablets.storage.constraints import add_check, checks, drop_check, not_null, set_not_null
from tablets.storage.delta_codec import check_metadata
from tablets.storage.transaction import begin, commit


def _table(tmp_path):
    t = TabletTable.create(str(tmp_path / "t"), [("id", "bigint", True), ("v", "int", True)])
    t.append(pa.table({"id": pa.array([1], pa.int64()), "v": pa.array([5], pa.int32())}))
    return t


def _constrain(t, snap):
    meta = set_not_null(add_check(snap.metadata, "Positive", "v > 0", "ALTER TABLE t"), "ID", True, "ALTER TABLE t")
    handle = begin(snap, t.root, "ADD CONSTRAINT", delete_from=(), read_tablets=snap.tablets.keys(),
                   reads_appends=True, io=t.io)  # fmt: skip
    return commit(handle, [], extra_actions=[meta])


def test_constraints_are_kept_in_the_delta_log_as_delta_does(tmp_path):
    t = _table(tmp_path)
    _constrain(t, t.snapshot())
    meta = t.snapshot().metadata
    assert checks(meta) == (("positive", "v > 0"),) and not_null(meta) == ("id",)
    log = os.path.join(t.root, "_delta_log")
    with open(os.path.join(log, sorted(f for f in os.listdir(log) if f.endswith(".json"))[-1])) as f:
        lines = [json.loads(x) for x in f]
    proto = next(x["protocol"] for x in lines if "protocol" in x)
    md = next(x["metaData"] for x in lines if "metaData" in x)
    assert "checkConstraints" in proto["writerFeatures"] and "checkConstraints" not in proto["readerFeatures"]
    assert md["configuration"]["delta.constraints.positive"] == "v > 0"
    assert json.loads(md["schemaString"])["fields"][0]["nullable"] is False
    dropped = drop_check(meta, "POSITIVE", False, "ALTER TABLE t")
    assert checks(dropped) == () and drop_check(dropped, "positive", True, "x") == dropped
    with pytest.raises(SchemaMismatch, match="no constraint positive"):
        drop_check(dropped, "positive", False, "ALTER TABLE t")
    with pytest.raises(SchemaMismatch, match="already has a constraint positive"):
        add_check(meta, "positive", "v > 1", "ALTER TABLE t")


def test_a_constraint_commit_conflicts_with_rows_appended_after_its_check(tmp_path):
    t = _table(tmp_path)
    checked = t.snapshot()
    t.append(pa.table({"id": pa.array([2], pa.int64()), "v": pa.array([-1], pa.int32())}))  # not checked
    with pytest.raises(CommitConflict):
        _constrain(t, checked)
    assert checks(t.snapshot().metadata) == ()


def test_adoption_takes_check_constraints_that_parse(tmp_path):
    schema = json.dumps(
        {"type": "struct", "fields": [{"name": "v", "type": "integer", "nullable": True, "metadata": {}}]}
    )
    check_metadata("/x", {"schemaString": schema, "configuration": {"delta.constraints.pos": "v > 0"}})
    with pytest.raises(Exception, match="delta.constraints.bad"):
        check_metadata("/x", {"schemaString": schema, "configuration": {"delta.constraints.bad": "v >"}})


def test_a_column_a_check_reads_is_neither_dropped_nor_renamed(tmp_path):
    from tablets.storage.metadata import MetadataChange

    t = _table(tmp_path)
    _constrain(t, t.snapshot())
    for change in (MetadataChange(drop_columns=("V",)), MetadataChange(rename_column=("v", "w"))):
        with pytest.raises(SchemaMismatch, match="read by the table's CHECK constraint positive"):
            t.alter_metadata(change, "ALTER TABLE t")
    with pytest.raises(SchemaMismatch, match="DROP CONSTRAINT positive"):
        t.set_schema([("id", "bigint", False)], operation="CHANGE COLUMNS")
