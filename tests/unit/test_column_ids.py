"""Columns have an identity of their own: a field id and a physical name, the name
of the column inside the tablets. A column dropped and added back under its old name, or
renamed, never reads another column's values from older tablets. The store only, no Spark."""

import json
import os
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tablets.exceptions import MetadataChanged, SchemaMismatch
from tablets.storage import RowLevelSink, TabletTable, delta_codec, delta_log, log
from tablets.storage.actions import Metadata, action_from_json, action_to_json
from tablets.storage.columns import FIELD_ID, PHYSICAL_PREFIX
from tablets.storage.delta_schema import to_delta
from tablets.storage.metadata import MetadataChange
from tablets.storage.pruning import Pred, prune
from tablets.storage.select import KeySet, select_rows
from tablets.storage.types import schema_to_arrow

pytestmark = pytest.mark.unit

SCHEMA = pa.schema([("id", pa.int64()), ("c", pa.int32())])


@pytest.fixture
def table(tmp_path):
    t = TabletTable.create(str(tmp_path / "t"), SCHEMA, key_columns=["id"])
    t.append(pa.table({"id": [1, 2], "c": pa.array([10, 20], pa.int32())}, schema=SCHEMA))
    return t


def rows(t: TabletTable, version: int | None = None) -> list[dict]:
    return sorted(t.read(version).to_pylist(), key=lambda r: r["id"])


def test_a_dropped_column_added_back_reads_null_in_older_tablets(table):
    table.set_schema([("id", "bigint", True)])  # dbt's on_schema_change: sync_all_columns
    table.add_columns([("c", "int")])
    assert table.read().column("c").to_pylist() == [None, None]
    table.append(pa.table({"id": [3], "c": pa.array([30], pa.int32())}))
    assert rows(table) == [{"id": 1, "c": None}, {"id": 2, "c": None}, {"id": 3, "c": 30}]
    assert rows(table, 1) == [{"id": 1, "c": 10}, {"id": 2, "c": 20}]  # each version its own columns


def test_ids_and_physical_names(table):
    meta = table.snapshot().metadata
    assert meta.column_ids == (1, 2) and meta.physical_names == ("id", "c") and meta.max_column_id == 2
    table.drop_columns(["c"])
    table.add_columns([("c", "int"), ("d", "string")])
    meta = table.snapshot().metadata
    assert meta.column_ids == (1, 3, 4) and meta.max_column_id == 4
    assert meta.physical_names[0] == "id" and all(p.startswith(PHYSICAL_PREFIX) for p in meta.physical_names[1:])
    assert len(set(meta.physical_names)) == 3
    # the tablets written from now on keep the columns under those names, with the ids
    table.append(pa.table({"id": [3], "c": pa.array([30], pa.int32()), "d": ["x"]}))
    newest = list(table.snapshot().tablets.values())[-1]
    schema = pq.read_schema(table.tablet_path(newest))
    assert schema.names[:3] == list(meta.physical_names)
    assert [int(schema.field(p).metadata[FIELD_ID]) for p in meta.physical_names] == [1, 3, 4]
    assert [n for n, _ in newest.add.stats][:3] == list(meta.physical_names)  # stats by physical name


def test_metadata_json_round_trip_and_logs_without_ids():
    plain = Metadata("x", (("id", "bigint", True), ("c", "int", True)))
    body = json.loads(action_to_json(plain))["metadata"]
    assert body["schema"] == [["id", "bigint", True], ["c", "int", True]]  # no physical name where it is the name
    assert body["column_ids"] == [1, 2] and body["max_column_id"] == 2
    mapped = plain.with_schema(plain.schema[:1]).with_schema(plain.schema)
    body = json.loads(action_to_json(mapped))["metadata"]
    assert body["schema"][1][:3] == ["c", "int", True] and body["schema"][1][3].startswith(PHYSICAL_PREFIX)
    assert body["column_ids"] == [1, 3] and body["max_column_id"] == 3
    assert action_from_json(action_to_json(mapped)) == mapped
    # a reader from before column mapping, which unpacks three fields, fails on such an entry
    with pytest.raises(ValueError):
        [(n, t, nl) for n, t, nl in body["schema"]]
    # a log written before ids: 1..n, physical name = name
    old = action_from_json('{"metadata":{"table_id":"x","schema":[["a","int",true],["b","string",false]]}}')
    assert old.column_ids == (1, 2) and old.physical_names == ("a", "b") and old.max_column_id == 2
    # the Delta version file: ids in tablets' configuration without column mapping, in the fields with it
    md = delta_log.metadata(plain, to_delta(plain))
    assert json.loads(md["configuration"]["tablets.columnIds"]) == [1, 2]
    assert md["configuration"]["tablets.maxColumnId"] == "2" and "delta.columnMapping.mode" not in md["configuration"]
    assert delta_codec.decode_metadata(md, None) == plain
    md = delta_log.metadata(mapped, to_delta(mapped))
    fields = json.loads(md["schemaString"])["fields"]
    assert [f["metadata"]["delta.columnMapping.id"] for f in fields] == [1, 3]
    assert fields[1]["metadata"]["delta.columnMapping.physicalName"] == mapped.physical_names[1]
    assert md["configuration"]["tablets.maxColumnId"] == "3"
    assert delta_codec.decode_metadata(md, None) == mapped
    # a Delta log without ids (another Delta writer's, or one an earlier release derived): 1..n, made up
    md = delta_log.metadata(plain, to_delta(plain))
    del md["configuration"]["tablets.columnIds"]
    made_up = delta_codec.decode_metadata(md, None)
    assert made_up.column_ids == (1, 2) and made_up.physical_names == ("id", "c") and not made_up.ids_in_log


def test_rename_then_add_the_old_name(table):
    files = {st.add.path for st in table.snapshot().tablets.values()}
    version = table.rename_column("c", "n")
    snap = table.snapshot()
    assert version == 2 and {st.add.path for st in snap.tablets.values()} == files  # no tablet rewritten
    assert [type(a).__name__ for a in log.read_version(table.io, table.root, version)] == ["Metadata", "CommitInfo"]
    assert snap.metadata.column_names == ("id", "n") and snap.metadata.physical_names == ("id", "c")
    assert rows(table) == [{"id": 1, "n": 10}, {"id": 2, "n": 20}]
    (tid,) = snap.tablets
    named = snap.named_stats(tid)  # the statistics follow the column to its new name
    assert (named.column_stats("n").min, named.column_stats("n").max) == (10, 20) and named.column_stats("c") is None
    assert prune([Pred("gt", "n", 20)], named, {"n": "int"}) and not prune([Pred("is_null", "c")], named, {"c": "int"})
    table.add_columns([("c", "string")])
    assert rows(table) == [{"id": 1, "n": 10, "c": None}, {"id": 2, "n": 20, "c": None}]
    assert rows(table, 1) == [{"id": 1, "c": 10}, {"id": 2, "c": 20}]


def test_refused_renames_and_drops(table):
    with pytest.raises(SchemaMismatch, match="RENAME COLUMN of .*: id is a key column") as e:
        table.rename_column("id", "key")
    assert "--full-refresh" in str(e.value)
    with pytest.raises(SchemaMismatch, match="already has a column id"):
        table.rename_column("c", "ID")
    with pytest.raises(SchemaMismatch, match="id is a key column"):
        table.drop_columns(["id"])
    with pytest.raises(SchemaMismatch, match="nope is not a column of the table"):
        table.drop_columns(["nope"])
    with pytest.raises(SchemaMismatch, match="reserved"):
        table.rename_column("c", "_tablet_id")
    assert table.drop_columns(["nope"], if_exists=True) is None  # nothing to drop: no commit
    assert table.version == 1


def test_rename_carries_comments_and_cluster_by(table):
    change = MetadataChange(set_properties=(("cluster_by", "C, id"),), column_comments=(("c", "count"),))
    table.alter_metadata(change, "SET")
    table.rename_column("c", "n")
    meta = table.snapshot().metadata
    assert meta.column_comments == (("n", "count"),) and meta.property("cluster_by") == "n,id"
    with pytest.raises(SchemaMismatch, match="sorted by n") as e:
        table.drop_columns(["n"])
    assert "cluster_by" in str(e.value)


def test_compaction_after_a_rename_and_a_readd(table):
    table.append(pa.table({"id": [3], "c": pa.array([30], pa.int32())}))
    table.rename_column("c", "n")
    table.add_columns([("c", "int")])
    table.append(pa.table({"id": [4], "n": pa.array([40], pa.int32()), "c": pa.array([4], pa.int32())}))
    before = rows(table)
    assert table.compact() is not None and len(table.snapshot().tablets) == 1
    assert (
        rows(table)
        == before
        == [
            {"id": 1, "n": 10, "c": None},
            {"id": 2, "n": 20, "c": None},
            {"id": 3, "n": 30, "c": None},
            {"id": 4, "n": 40, "c": 4},
        ]
    )
    (st,) = table.snapshot().tablets.values()
    assert pq.read_schema(table.tablet_path(st)).names[:3] == list(table.snapshot().metadata.physical_names)


def test_restore_brings_the_columns_back_and_ids_never_go_back(table):
    table.drop_columns(["c"])
    table.add_columns([("c", "int")])  # id 3
    table.restore(1)
    meta = table.snapshot().metadata
    assert rows(table) == [{"id": 1, "c": 10}, {"id": 2, "c": 20}]  # the old column, with its values
    assert meta.column_ids == (1, 2) and meta.max_column_id == 3
    table.add_columns([("d", "int")])
    assert table.snapshot().metadata.column_ids == (1, 2, 4)


def test_replace_keeps_ids_growing(table):
    from tablets.storage.metadata import replacement

    table.drop_columns(["c"])
    meta = replacement(table.snapshot().metadata, [("id", "bigint", True), ("c", "string", True)], ["id"])
    assert meta.column_ids == (3, 4) and meta.physical_names == ("id", "c")  # no old tablet stays


def test_pruning_reads_statistics_by_physical_name(table):
    table.drop_columns(["c"])
    table.add_columns([("c", "int")])
    snap = table.snapshot()
    (tid,) = snap.tablets
    kinds = {"id": "int", "c": "int"}
    named = snap.named_stats(tid)
    # the old tablet's c (10..20, no NULLs) is another column: the new c is NULL in every row
    assert not prune([Pred("is_null", "c")], named, kinds)
    assert prune([Pred("eq", "c", 20)], named, kinds)
    assert prune([Pred("eq", "id", 5)], named, kinds) and not prune([Pred("eq", "id", 2)], named, kinds)
    table.rename_column("c", "n")  # the re-added c, renamed: its statistics (none here) follow it
    named = table.snapshot().named_stats(tid)
    assert named.column_stats("n") is None and named.column_stats("c") is None
    assert prune([Pred("is_null", "n")], named, {"n": "int"}) is False


def test_select_rows_by_physical_name(table):
    table.rename_column("c", "n")
    table.add_columns([("c", "int")])
    snap = table.snapshot()
    (st,) = snap.tablets.values()
    schema = schema_to_arrow(snap.metadata.schema)
    mapping = snap.metadata.mapping
    got = select_rows(
        table.io,
        table.root,
        st.add,
        st.dv,
        schema,
        ["id", "n", "c"],
        {"n": KeySet(pa.array([20], pa.int32()))},
        mapping=mapping,
    )
    assert got.rows.to_pylist() == [{"id": 2, "n": 20, "c": None}] and got.positions.to_pylist() == [1]
    # a key the tablet predates (the new c: its old namesake is another column) holds no value
    got = select_rows(
        table.io, table.root, st.add, st.dv, schema, ["id", "c"], {"c": pa.array([10, 20], pa.int32())}, mapping=mapping
    )
    assert got.rows.num_rows == 0


def test_a_statement_that_read_the_old_columns_conflicts_with_a_rename(table):
    handle = table.begin_write("APPEND")
    sink = RowLevelSink(handle)
    sink.insert(pa.table({"id": [3], "c": pa.array([30], pa.int32())}))
    fragments = sink.finish()
    table.rename_column("c", "n")
    with pytest.raises(MetadataChanged):
        table.finish(handle, fragments)
    assert rows(table) == [{"id": 1, "n": 10}, {"id": 2, "n": 20}]


GOLDEN = os.path.join(os.path.dirname(__file__), "golden", "table_before_ids", "table")


@pytest.fixture
def golden(tmp_path):
    """A table written by the code before column ids (golden/table_before_ids/make_golden.py):
    ``v`` dropped at version 4, its values still in the tablets."""
    root = str(tmp_path / "old")
    shutil.copytree(GOLDEN, root)
    return TabletTable(root)


def test_a_table_of_the_earlier_layout_reads_every_version_and_its_first_write_moves_it(golden):
    """The golden table keeps the earlier layout (versions in ``_log/``, no Delta log): it opens
    and reads every version as it is, and its first write moves it to the Delta log in one
    commit (``UPGRADE`` from ``_log``) before its own; ``_log`` ends with a version saying so."""
    root = golden.root
    assert not os.path.exists(os.path.join(root, "_delta_log"))
    assert [h.commit.operation for h in golden.history()] == [
        "CREATE TABLE",
        "APPEND",
        "APPEND",
        "DELETE",
        "SET SCHEMA",
    ]
    expected = [
        [],
        [{"id": 1, "c": 10, "v": "a"}, {"id": 2, "c": 20, "v": "b"}],
        [{"id": 1, "c": 10, "v": "a"}, {"id": 2, "c": 20, "v": "b"}, {"id": 3, "c": 30, "v": "c"}],
        [{"id": 1, "c": 10, "v": "a"}, {"id": 3, "c": 30, "v": "c"}],
        [{"id": 1, "c": 10}, {"id": 3, "c": 30}],
    ]
    assert [rows(golden, v) for v in range(5)] == expected
    assert not os.path.exists(os.path.join(root, "_delta_log"))  # reading wrote nothing
    assert golden.append(pa.table({"id": [4], "c": pa.array([40], pa.int32())})) == 6
    history = golden.history()
    assert [h.version for h in history] == list(range(7))
    assert [h.commit.operation for h in history[4:]] == ["SET SCHEMA", "UPGRADE", "APPEND"]  # the move: one commit
    assert dict(history[5].commit.parameters)["from"] == "_log"
    assert log.list_log(golden.io, root, complete=True)[0] == list(range(7))
    assert os.path.exists(log.version_path(root, 6))  # the Delta log is the commit point now
    with open(os.path.join(root, "_log", "00000000000000000005.json")) as f:
        assert "moved" in json.loads(f.readline())  # _log ends: a writer of the earlier release stops there
    assert not os.path.exists(os.path.join(root, "_log", "00000000000000000006.json"))
    assert [rows(golden, v) for v in range(5)] == expected  # the history reads alike from the Delta log
    assert rows(golden, 5) == expected[4]
    assert rows(golden) == [*expected[4][:2], {"id": 4, "c": 40}]
    reopened = TabletTable(root)
    assert reopened.version == 6 and rows(reopened) == rows(golden)


def test_a_log_written_before_ids_reads_writes_and_evolves(golden):
    with open(os.path.join(GOLDEN, "_log", "00000000000000000004.json")) as f:
        assert "column_ids" not in f.read()
    assert rows(golden) == [{"id": 1, "c": 10}, {"id": 3, "c": 30}]
    assert rows(golden, 3) == [{"id": 1, "c": 10, "v": "a"}, {"id": 3, "c": 30, "v": "c"}]
    meta = golden.snapshot().metadata
    assert meta.column_ids == (1, 2) and meta.physical_names == ("id", "c") and meta.max_column_id == 2
    golden.append(pa.table({"id": [4], "c": pa.array([40], pa.int32())}))
    golden.add_columns([("v", "string")])  # the dropped v, added back: not its old values
    assert rows(golden) == [{"id": 1, "c": 10, "v": None}, {"id": 3, "c": 30, "v": None}, {"id": 4, "c": 40, "v": None}]
    meta = golden.snapshot().metadata
    assert meta.column_ids == (1, 2, 3) and meta.physical_names[2].startswith(PHYSICAL_PREFIX)
    golden.rename_column("c", "n")
    assert golden.compact() is not None
    assert rows(golden) == [{"id": 1, "n": 10, "v": None}, {"id": 3, "n": 30, "v": None}, {"id": 4, "n": 40, "v": None}]
    golden.restore(3)  # the columns of version 3, read from the same (old) tablets
    assert rows(golden) == [{"id": 1, "c": 10, "v": "a"}, {"id": 3, "c": 30, "v": "c"}]
    # version 3's ids were made up on reading (1, 2, 3); 3 went to the re-added v since, so the
    # old v gets a fresh one; c (renamed n since: the same physical column) keeps its 2
    meta = golden.snapshot().metadata
    assert meta.column_ids == (1, 2, 4) and meta.max_column_id == 4
    golden.add_columns([("w", "int")])
    assert golden.snapshot().metadata.column_ids == (1, 2, 4, 5)
