"""Every tablet table is a Delta table at its root (docs/FORMAT.md, "A Delta table at its root"):
delta-rs reads the live rows tablets reads at every version, on local disk and in the bucket;
Delta tables written by delta-rs are adopted and written by tablets, and delta-rs reads the
result; tables using features tablets does not maintain are refused by name."""

import datetime
import json
import os

import pyarrow as pa
import pytest
from support.delta_check import assert_delta_agrees, delta_read, storage_options
from tablets.exceptions import FormatError
from tablets.storage import TabletTable, delta_log
from tablets.storage.delta_adopt import adopt
from tablets.storage.delta_schema import delta_type, spark_type
from tablets.storage.fileio import join
from tablets.storage.transaction import RowLevelSink, commit
from tablets.storage.types import from_arrow, to_arrow

deltalake = pytest.importorskip("deltalake")
pytestmark = pytest.mark.unit


def _delete(t: TabletTable, n: int = 1) -> None:
    """Delete the first ``n`` rows of the first tablet (a deletion vector)."""
    tid = next(iter(t.snapshot().tablets))
    h = t.begin_delete()
    sink = RowLevelSink(h)
    sink.delete([tid] * n, list(range(n)))
    commit(h, sink.finish())


def _ids(a, b):
    return pa.array(range(a, b), pa.int64())


def test_z85_is_zeromq_z85():
    assert delta_log.z85_encode(bytes.fromhex("864FD26FB559F75B")) == "HelloWorld"
    raw = os.urandom(16)
    assert delta_log.z85_decode(delta_log.z85_encode(raw)) == raw


def test_store_operations_read_the_same_in_delta(base):
    t = TabletTable.create(join(base, "t"), pa.schema([("id", pa.int64()), ("v", pa.string())]), key_columns=["id"])
    t.append(pa.table({"id": _ids(0, 10), "v": [f"s{i}" for i in range(10)]}))
    _delete(t, 2)
    _delete(t, 3)  # a second DV on the same tablet: Delta's remove + add with the new vector
    t.add_columns([("w", "double")])  # a physical name col-<uuid>: column mapping
    t.append(pa.table({"id": _ids(20, 23), "v": ["x", "y", None], "w": [1.5, None, float("nan")]}))
    t.rename_column("v", "vv")
    t.compact(min_tablet_rows=10**6)
    t.restore(5)  # (before the rename)
    t.drop_columns(["w"])  # every column's physical name is its name again: no column mapping
    assert_delta_agrees(t)
    assert deltalake.DeltaTable(t.root, storage_options=storage_options(t.root)).protocol().reader_features == [
        "deletionVectors"
    ]
    assert t.vacuum(retention_hours=0, enforce_retention=False)  # the files of versions before it go
    assert_delta_agrees(t, versions=[t.version])
    dt = deltalake.DeltaTable(t.root, version=7, storage_options=storage_options(t.root))
    assert "__tablets_row_id" not in [f.name for f in dt.schema().fields]  # the hidden row-id column
    assert set(dt.protocol().reader_features) == {"deletionVectors", "columnMapping"}
    assert dt.metadata().configuration["delta.columnMapping.mode"] == "name"


def test_timestamps_and_comments(tmp_path):
    t = TabletTable.create(
        str(tmp_path / "t"),
        [
            ("id", "bigint", False),
            ("at", "timestamp_ntz", True),
            ("z", "timestamp", True),
            ("d", "decimal(10,2)", True),
        ],
    )
    import decimal

    t.append(
        pa.table(
            {
                "id": _ids(0, 2),
                "at": pa.array([datetime.datetime(2020, 1, 1), None], pa.timestamp("us")),
                "z": pa.array([datetime.datetime(2021, 5, 1, tzinfo=datetime.UTC), None], pa.timestamp("us", "UTC")),
                "d": pa.array([decimal.Decimal("1.25"), None], pa.decimal128(10, 2)),
            }
        )
    )
    assert_delta_agrees(t)
    dt = deltalake.DeltaTable(t.root)
    assert "timestampNtz" in dt.protocol().reader_features


def test_checkpoint_is_a_delta_checkpoint(tmp_path):
    t = TabletTable.create(str(tmp_path / "t"), pa.schema([("id", pa.int64())]))
    for i in range(50):
        t.append(pa.table({"id": _ids(i, i + 1)}))
    _delete(t)
    log = os.path.join(t.root, "_delta_log")
    assert os.path.exists(os.path.join(log, "00000000000000000050.checkpoint.parquet"))
    with open(os.path.join(log, "_last_checkpoint")) as f:
        assert json.load(f)["version"] == 50
    for v in range(0, 50):  # delta-rs must open it from the checkpoint alone
        os.remove(os.path.join(log, f"{v:020d}.json"))
    got = delta_read(t.root)
    assert sorted(got.column("id").to_pylist()) == list(range(1, 50))


def test_a_missing_delta_version_is_written_by_the_next_commit(tmp_path):
    t = TabletTable.create(str(tmp_path / "t"), pa.schema([("id", pa.int64())]))
    t.append(pa.table({"id": _ids(0, 3)}))
    os.remove(os.path.join(t.root, "_delta_log", "00000000000000000001.json"))  # a crash between the two logs
    t.append(pa.table({"id": _ids(3, 5)}))
    assert_delta_agrees(t)


def test_a_table_from_before_delta_publishing_is_caught_up(tmp_path):
    t = TabletTable.create(str(tmp_path / "t"), pa.schema([("id", pa.int64())]))
    t.append(pa.table({"id": _ids(0, 3)}))
    _delete(t)
    import shutil

    shutil.rmtree(os.path.join(t.root, "_delta_log"))
    assert delta_log.catch_up(t.io, t.root) == 2
    assert_delta_agrees(t)


def _delta_rs_table(root: str) -> None:
    """A table written by delta-rs: appends, a delete and an overwrite (files rewritten and
    removed), a checkpoint, and one more version after it."""
    opts = storage_options(root)
    w = deltalake.write_deltalake
    w(root, pa.table({"id": _ids(1, 4), "v": ["a", "b", "c"]}), storage_options=opts)
    w(root, pa.table({"id": _ids(4, 6), "v": ["d", "e"]}), mode="append", storage_options=opts)
    deltalake.DeltaTable(root, storage_options=opts).delete("id = 2")
    deltalake.DeltaTable(root, storage_options=opts).create_checkpoint()
    w(root, pa.table({"id": _ids(6, 7), "v": ["f"]}), mode="append", storage_options=opts)


def test_adopt_a_delta_rs_table_and_write_it(base):
    root = join(base, "d")
    _delta_rs_table(root)
    t = TabletTable(root)
    assert adopt(t.io, root) == 3
    assert_delta_agrees(t)  # the adopted versions read alike
    _delete(t)  # our deletion vector on a delta-rs file
    t.append(pa.table({"id": _ids(10, 12), "v": ["x", "y"]}))
    t.add_columns([("w", "bigint")])
    _delete(t, 2)  # one more row of the same file: its vector replaced
    t.compact(min_tablet_rows=10**6)
    assert_delta_agrees(t)
    assert [h["operation"] for h in deltalake.DeltaTable(root, storage_options=storage_options(root)).history()][
        :2
    ] == ["COMPACT", "DELETE"]


def test_adopt_starts_at_a_delta_checkpoint(tmp_path):
    root = str(tmp_path / "d")
    _delta_rs_table(root)
    for v in (0, 1):
        os.remove(os.path.join(root, "_delta_log", f"{v:020d}.json"))
    t = TabletTable(root)
    adopt(t.io, root)
    _delete(t)
    assert_delta_agrees(t, versions=[2, 3, 4])
    assert sorted(t.read().column("id").to_pylist()) == sorted(delta_read(root).column("id").to_pylist())


@pytest.mark.parametrize(
    ("how", "named"),
    [
        ({"partition_by": ["p"]}, "partition columns (p)"),
        ({"configuration": {"delta.enableChangeDataFeed": "true"}}, "changeDataFeed"),
        ({"configuration": {"delta.appendOnly": "true"}}, "appendOnly"),
    ],
)
def test_adopt_refuses_features_it_does_not_write(tmp_path, how, named):
    root = str(tmp_path / "d")
    deltalake.write_deltalake(root, pa.table({"id": _ids(0, 2), "p": ["x", "y"]}), **how)
    t = TabletTable(root)
    with pytest.raises(FormatError, match=named.replace("(", r"\(").replace(")", r"\)")):
        adopt(t.io, root)
    assert not os.path.exists(os.path.join(root, "_log"))  # never half-written


def test_a_delta_rs_append_to_a_tablet_table_is_taken_in(base):
    """delta-rs appends to tables with deletion vectors: the next commit of tablets takes that
    version into _log first (it is a concurrent append to it), so the logs never diverge."""
    t = TabletTable.create(join(base, "t"), pa.schema([("id", pa.int64()), ("v", pa.string())]))
    t.append(pa.table({"id": _ids(0, 3), "v": ["a", "b", "c"]}))
    _delete(t)
    deltalake.write_deltalake(
        t.root, pa.table({"id": _ids(10, 12), "v": ["x", "y"]}), mode="append", storage_options=storage_options(t.root)
    )
    t.append(pa.table({"id": _ids(20, 21), "v": ["z"]}))  # takes in version 3, commits 4
    assert t.version == 4
    assert sorted(t.read().column("id").to_pylist()) == [1, 2, 10, 11, 20]
    assert_delta_agrees(t)


def test_nested_columns_under_column_mapping(tmp_path):
    """Under column mapping every field, nested ones too, carries an id and a physical name."""
    t = TabletTable.create(
        str(tmp_path / "t"),
        [("id", "bigint", False), ("s", "struct<a:int,b:string>", True), ("l", "array<struct<x:double>>", True)],
    )
    t.append(
        pa.table(
            {"id": _ids(0, 2), "s": [{"a": 1, "b": "x"}, None], "l": [[{"x": 1.0}], []]},
            schema=pa.schema(
                [
                    ("id", pa.int64()),
                    ("s", pa.struct([("a", pa.int32()), ("b", pa.string())])),
                    ("l", pa.list_(pa.struct([("x", pa.float64())]))),
                ]
            ),
        )
    )
    t.add_columns([("w", "int")])
    got = delta_read(t.root).sort_by("id")
    assert got.column("s").to_pylist() == [{"a": 1, "b": "x"}, None]
    assert got.column("l").to_pylist() == [[{"x": 1.0}], []]
    assert got.column("w").to_pylist() == [None, None]
    with open(os.path.join(t.root, "_delta_log", "00000000000000000002.json")) as f:
        meta = next(json.loads(line)["metaData"] for line in f if '"metaData"' in line)
    fields = json.loads(meta["schemaString"])["fields"]
    nested = fields[1]["type"]["fields"] + fields[2]["type"]["elementType"]["fields"]
    ids = [f["metadata"]["delta.columnMapping.id"] for f in fields + nested]
    assert len(set(ids)) == len(ids) and max(ids) == int(meta["configuration"]["delta.columnMapping.maxColumnId"])


def test_adopt_copies_deletion_vectors_another_delta_writer_made(tmp_path):
    """A Delta version with a deletion vector in Delta's own layout (a file under a random
    prefix, storage type 'u'), as Delta Spark writes one: adopted, the vector copied into ours."""
    import uuid

    from pyroaring import BitMap64
    from tablets.storage.dv import encode

    root = str(tmp_path / "d")
    deltalake.write_deltalake(root, pa.table({"id": _ids(0, 10)}))
    add = pa.table(deltalake.DeltaTable(root).get_add_actions(flatten=True)).to_pylist()[0]
    path, size = add["path"], add["size_bytes"]
    blob = encode(BitMap64([1, 4, 5]))
    uid = uuid.uuid4()
    os.makedirs(os.path.join(root, "ab"))
    with open(os.path.join(root, "ab", f"deletion_vector_{uid}.bin"), "wb") as f:
        f.write(blob)
    dv = {
        "storageType": "u",
        "pathOrInlineDv": "ab" + delta_log.z85_encode(uid.bytes),
        "offset": 1,
        "sizeInBytes": len(blob) - 9,
        "cardinality": 3,
    }
    lines = [
        {
            "protocol": {
                "minReaderVersion": 3,
                "minWriterVersion": 7,
                "readerFeatures": ["deletionVectors"],
                "writerFeatures": ["deletionVectors"],
            }
        },
        {"remove": {"path": path, "deletionTimestamp": 1, "dataChange": True, "size": size}},
        {
            "add": {
                "path": path,
                "partitionValues": {},
                "size": size,
                "modificationTime": 1,
                "dataChange": True,
                "deletionVector": dv,
            }
        },
        {"commitInfo": {"timestamp": 2, "operation": "DELETE", "engineInfo": "Apache-Spark/4.0.0 Delta-Lake/4.0.0"}},
    ]
    with open(os.path.join(root, "_delta_log", "00000000000000000001.json"), "w") as f:
        f.write("".join(json.dumps(x) + "\n" for x in lines))
    assert sorted(delta_read(root).column("id").to_pylist()) == [0, 2, 3, 6, 7, 8, 9]
    t = TabletTable(root)
    adopt(t.io, root)
    st = next(iter(t.snapshot().tablets.values()))
    assert st.dv is not None and st.dv.path.startswith("dv/deletion_vector_")  # ours, a copy
    assert_delta_agrees(t)


def test_adopt_if_delta_adopts_once(tmp_path):
    from tablets.storage.delta_adopt import adopt_if_delta

    root = str(tmp_path / "d")
    _delta_rs_table(root)
    t = TabletTable(root)
    assert adopt_if_delta(t.io, root) is True
    assert adopt_if_delta(t.io, root) is False  # a tablet table now
    assert adopt_if_delta(t.io, str(tmp_path / "nothing")) is False


def test_a_delta_writers_app_transactions_survive_our_checkpoint(tmp_path):
    """A Delta writer's app transaction (``txn``: an idempotent or streaming writer's last
    batch) stays the table's after tablets writes on and checkpoints the Delta log: else that
    writer would write its batch again."""
    root = str(tmp_path / "d")
    _delta_rs_table(root)
    props = deltalake.CommitProperties(app_transactions=[deltalake.Transaction("stream-1", 7)])
    deltalake.write_deltalake(root, pa.table({"id": _ids(90, 91), "v": ["s"]}), mode="append", commit_properties=props)
    t = TabletTable(root)
    adopt(t.io, root)
    props = deltalake.CommitProperties(app_transactions=[deltalake.Transaction("stream-2", 3)])
    deltalake.write_deltalake(root, pa.table({"id": _ids(95, 96), "v": ["s"]}), mode="append", commit_properties=props)
    while t.version < delta_log.CHECKPOINT_INTERVAL:  # takes in stream-2's version, then checkpoints
        t.append(pa.table({"id": _ids(t.version * 10, t.version * 10 + 1), "v": ["x"]}))
    assert os.path.exists(os.path.join(root, "_delta_log", f"{delta_log.CHECKPOINT_INTERVAL:020d}.checkpoint.parquet"))
    d = deltalake.DeltaTable(root)
    assert (d.transaction_version("stream-1"), d.transaction_version("stream-2")) == (7, 3)
    assert_delta_agrees(t, versions=[t.version])


@pytest.mark.parametrize(
    "text",
    [
        "struct<p:int,`q r`:string,`a:b`:array<struct<`x,y`:int>>>",
        "struct<`a``b`:map<string,struct<`<>`:int>>>",
        "struct<a:decimal(10,2),b:struct<c:int>>",
    ],
)
def test_struct_field_names_round_trip_through_arrow_and_delta(text):
    assert from_arrow(to_arrow(text)) == text
    assert spark_type(delta_type(text)) == text


def test_struct_types_written_before_quoting_and_in_spark_ddl_still_parse():
    assert to_arrow("struct<p:int,q r:string>") == pa.struct([("p", pa.int32()), ("q r", pa.string())])
    assert to_arrow("STRUCT<a INT, `b c` STRING>") == pa.struct([("a", pa.int32()), ("b c", pa.string())])
    nested = to_arrow("STRUCT<a STRUCT<b: INT>, c ARRAY<STRUCT<d: INT>>>")
    assert nested == pa.struct([("a", pa.struct([("b", pa.int32())])), ("c", pa.list_(pa.struct([("d", pa.int32())])))])
