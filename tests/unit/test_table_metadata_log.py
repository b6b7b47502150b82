"""Properties and comments in the table's log (no Spark): one metadata commit per change, kept
across schema changes, restore and checkpoints, written only when set (the version files and
checkpoints of tables without comments are as they were)."""

import json

import pyarrow as pa
import pytest
from tablets.exceptions import SchemaMismatch
from tablets.storage import TabletTable, log
from tablets.storage.actions import Metadata, action_from_json, action_to_json
from tablets.storage.metadata import MetadataChange

pytestmark = pytest.mark.unit

SCHEMA = pa.schema([("Id", pa.int64()), ("v", pa.string())])


@pytest.fixture
def table(tmp_path):
    t = TabletTable.create(str(tmp_path / "t"), SCHEMA, key_columns=["Id"], properties={"team": "crm"})
    t.append(pa.table({"Id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    return t


def test_comments_and_properties_are_one_commit_each(table):
    change = MetadataChange(
        set_properties=(("owner", "data"), ("team", "sales")),
        comment="Orders\nper day",
        column_comments=(("id", "the key"), ("V", "it's a value")),
    )
    version = table.alter_metadata(change, "SET COMMENTS", {"dbt_model": "orders"})
    meta = table.snapshot().metadata
    assert version == 2
    assert meta.comment == "Orders\nper day"
    assert meta.column_comments == (("Id", "the key"), ("v", "it's a value"))  # the table's names
    assert dict(meta.properties) == {"owner": "data", "team": "sales"}
    info = table.history()[-1].commit
    assert info.operation == "SET COMMENTS" and dict(info.parameters) == {"dbt_model": "orders"}
    assert table.read().num_rows == 2  # no data changed
    # the same change again writes nothing
    assert table.alter_metadata(change, "SET COMMENTS") is None
    assert table.version == 2


def test_unset_and_clear(table):
    table.alter_metadata(MetadataChange(comment="c", column_comments=(("v", "x"),)), "COMMENT")
    table.alter_metadata(
        MetadataChange(unset_properties=("team", "absent"), clear_comment=True, column_comments=(("v", None),)),
        "UNSET TBLPROPERTIES",
    )
    meta = table.snapshot().metadata
    assert meta.properties == () and meta.comment is None and meta.column_comments == ()


def test_unknown_column_is_refused(table):
    with pytest.raises(SchemaMismatch, match="nope is not a column of the table \\(columns: Id, v\\)"):
        table.alter_metadata(MetadataChange(column_comments=(("nope", "x"),)), "CHANGE COLUMN")
    assert table.version == 1


def test_comments_follow_schema_changes_and_restore(table):
    table.alter_metadata(MetadataChange(comment="t", column_comments=(("Id", "k"), ("v", "val"))), "COMMENT")
    table.add_columns([("w", "string")])
    assert table.snapshot().metadata.column_comments == (("Id", "k"), ("v", "val"))
    table.set_schema([("Id", "bigint", True), ("w", "string", True)])  # v dropped
    assert table.snapshot().metadata.column_comments == (("Id", "k"),)
    table.restore(3)  # the schema with v again; the comments are the current ones
    meta = table.snapshot().metadata
    assert meta.column_names == ("Id", "v", "w") and meta.column_comments == (("Id", "k"),)
    assert meta.comment == "t"


def test_concurrent_metadata_commit_is_applied_on_top(table, monkeypatch):
    """A property set by another writer between this change's read and its commit stays."""
    other = TabletTable(table.root)
    real = TabletTable.snapshot
    calls = []

    def snapshot_then_race(self, version=None):
        snap = real(self, version)
        if self is table and not calls:
            calls.append(1)
            other.alter_metadata(MetadataChange(set_properties=(("b", "2"),)), "SET TBLPROPERTIES")
        return snap

    monkeypatch.setattr(TabletTable, "snapshot", snapshot_then_race)
    table.alter_metadata(MetadataChange(set_properties=(("a", "1"),)), "SET TBLPROPERTIES")
    monkeypatch.undo()
    props = dict(table.snapshot().metadata.properties)
    assert props["a"] == "1" and props["b"] == "2"
    assert [h.commit.operation for h in table.history()][-2:] == ["SET TBLPROPERTIES", "SET TBLPROPERTIES"]


def _delta_metadata(t: TabletTable, version: int) -> tuple[dict, list[dict]]:
    """The ``metaData`` of a Delta version file, and its schema's fields."""
    md = next(line["metaData"] for line in log.read_lines(t.io, t.root, version) if "metaData" in line)
    return md, json.loads(md["schemaString"])["fields"]


def test_json_writes_comments_only_when_set(table):
    md, fields = _delta_metadata(table, 0)  # the version files of tables without comments have none
    assert "description" not in md and all("comment" not in f["metadata"] for f in fields)
    version = table.alter_metadata(MetadataChange(comment="c\n'\"", column_comments=(("Id", "k"),)), "COMMENT")
    md, fields = _delta_metadata(table, version)
    assert md["description"] == "c\n'\""  # Delta's table comment
    assert fields[0]["metadata"]["comment"] == "k" and "comment" not in fields[1]["metadata"]  # Delta's column comments
    meta = TabletTable(table.root).snapshot().metadata  # read back from the version file
    assert meta.comment == "c\n'\"" and meta.column_comments == (("Id", "k"),)
    # checkpoints keep tablets' own JSON of the metadata: comments there only when set too
    plain = Metadata("x", (("id", "bigint", True),), created_ms=5)
    assert "comment" not in action_to_json(plain)
    assert action_from_json(action_to_json(plain)) == plain
    full = Metadata("x", (("id", "bigint", True),), comment="c\n'\"", column_comments=(("id", "k"),))
    body = json.loads(action_to_json(full))["metadata"]
    assert body["comment"] == "c\n'\"" and body["column_comments"] == [["id", "k"]]
    assert action_from_json(action_to_json(full)) == full


def test_checkpoint_keeps_comments(table):
    table.alter_metadata(MetadataChange(comment="kept", column_comments=(("v", "x"),)), "COMMENT")
    log.write_checkpoint(table.io, table.root, table.snapshot())
    snap = log.read_checkpoint(table.io, table.root, table.version)
    assert snap.verified and snap.metadata.comment == "kept" and snap.metadata.column_comments == (("v", "x"),)
