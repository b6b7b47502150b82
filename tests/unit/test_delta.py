"""Every tablet table is a Delta table at its root (docs/FORMAT.md, "A Delta table at its root"):
its Delta log is its one commit log. delta-rs reads the live rows tablets reads at every version,
on local disk and in the bucket; a version delta-rs commits to a tablet table is a version like
any other's; Delta tables written by delta-rs are adopted (one commit) and written by tablets, and
delta-rs reads the result; tables using features tablets does not maintain are refused by name."""

import datetime
import json
import os
import re
import shutil

import pyarrow as pa
import pytest
from support.delta_check import assert_delta_agrees, delta_read, storage_options
from support.duckdb_delta import DuckDBDeltaError, duckdb_read
from tablets.exceptions import ConcurrentAppend, ConcurrentDeleteDelete, FormatError
from tablets.storage import TabletTable, delta_log, log
from tablets.storage.delta_adopt import adopt
from tablets.storage.delta_schema import delta_type, spark_type
from tablets.storage.fileio import join
from tablets.storage.sink import RowLevelSink
from tablets.storage.transaction import commit
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


def test_a_version_missing_from_the_delta_log_is_an_error_not_a_shorter_table(tmp_path):
    """The Delta log is the one commit log: a version file lost between two others is a
    ``FormatError`` naming it for readers and writers, and nothing is written over the gap."""
    t = TabletTable.create(str(tmp_path / "t"), pa.schema([("id", pa.int64())]))
    t.append(pa.table({"id": _ids(0, 3)}))
    t.append(pa.table({"id": _ids(3, 5)}))
    os.remove(os.path.join(t.root, "_delta_log", "00000000000000000001.json"))
    for step in (t.read, lambda: t.append(pa.table({"id": _ids(5, 6)}))):
        with pytest.raises(FormatError, match=r"missing version\(s\) 1 \(the next one present is 2\)"):
            step()
    assert sorted(f for f in os.listdir(os.path.join(t.root, "_delta_log")) if f.endswith(".json")) == [
        "00000000000000000000.json",
        "00000000000000000002.json",
    ]


GOLDEN_BEFORE_DELTA = os.path.join(os.path.dirname(__file__), "golden", "table_before_ids", "table")


def test_a_table_from_before_delta_publishing_is_a_delta_table_after_its_first_write(tmp_path):
    """A table of the earlier layout written before tablets kept a Delta log at all (the golden
    table of test_column_ids: ``_log/`` only, a deletion vector at version 3): its first write
    moves it, writing the Delta log of every version, and delta-rs reads each of them."""
    root = str(tmp_path / "t")
    shutil.copytree(GOLDEN_BEFORE_DELTA, root)
    assert not os.path.exists(os.path.join(root, "_delta_log"))
    t = TabletTable(root)
    assert t.append(pa.table({"id": _ids(4, 5), "c": pa.array([40], pa.int32())})) == 6  # 5: the move
    assert [h.commit.operation for h in t.history()][4:] == ["SET SCHEMA", "UPGRADE", "APPEND"]
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
    assert log.list_log(t.io, root, complete=True)[0] == [0, 1, 2, 3]  # delta-rs' versions
    assert adopt(t.io, root) == 4  # one commit on top of them
    assert log.list_log(t.io, root, complete=True)[0] == [0, 1, 2, 3, 4]
    history = t.history()
    assert all(delta_log.ADOPTED in dict(h.commit.parameters) for h in history[:4])  # delta-rs' own
    assert history[4].commit.operation == "UPGRADE" and dict(history[4].commit.parameters)["from"] == "delta"
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
    assert adopt(t.io, root) == 4
    _delete(t)
    assert_delta_agrees(t, versions=[2, 3, 4, 5])
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
    before = sorted(os.listdir(root)), sorted(os.listdir(os.path.join(root, "_delta_log")))
    t = TabletTable(root)
    with pytest.raises(FormatError, match=named.replace("(", r"\(").replace(")", r"\)")):
        adopt(t.io, root)
    assert (sorted(os.listdir(root)), sorted(os.listdir(os.path.join(root, "_delta_log")))) == before  # nothing written


def _staged_delete(t: TabletTable, tid: str, rows: list[int], operation: str = "DELETE", **kwargs):
    """A statement that read the current version and staged the delete of ``rows`` of ``tid``."""
    h = t.begin_delete(operation, track_rows=True, **kwargs)
    sink = RowLevelSink(h)
    sink.delete([tid] * len(rows), rows)
    return h, sink.finish()


def test_a_delta_rs_append_to_a_tablet_table_is_a_version_like_any_other(base):
    """delta-rs appends to tables with deletion vectors: its commit is the table's next version,
    whose rows tablets reads at once; delta-rs reads the rows tablets commits after it; and a
    tablets statement that read the version before it meets it as a concurrent commit
    (docs/CONCURRENCY.md): a DELETE commits on top of it, a MERGE that should have read its
    rows conflicts, and so does a DELETE from a file delta-rs rewrote since."""
    t = TabletTable.create(join(base, "t"), pa.schema([("id", pa.int64()), ("v", pa.string())]))
    t.append(pa.table({"id": _ids(0, 3), "v": ["a", "b", "c"]}))
    _delete(t)
    (tid,) = t.snapshot().tablets
    delete = _staged_delete(t, tid, [1])  # both read version 2
    merge = _staged_delete(t, tid, [2], "MERGE", reads_appends=True)
    opts = storage_options(t.root)
    deltalake.write_deltalake(
        t.root, pa.table({"id": _ids(10, 12), "v": ["x", "y"]}), mode="append", storage_options=opts
    )
    assert t.version == 3
    info = t.history()[3].commit
    assert info.operation == "WRITE" and dict(info.parameters)[delta_log.ADOPTED].startswith("delta-rs")
    assert sorted(t.read().column("id").to_pylist()) == [1, 2, 10, 11]
    assert t.finish(*delete) == 4  # a DELETE that read version 2: delta-rs' append is no conflict
    with pytest.raises(ConcurrentAppend, match="version 3 added rows that this MERGE should have read"):
        t.finish(*merge)
    assert t.append(pa.table({"id": _ids(20, 21), "v": ["z"]})) == 5
    assert sorted(delta_read(t.root).column("id").to_pylist()) == [2, 10, 11, 20]  # tablets' rows, for delta-rs
    theirs = next(k for k, st in t.snapshot().tablets.items() if st.add.rows == 2)  # the file delta-rs wrote
    delete = _staged_delete(t, theirs, [1])  # id 11
    deltalake.DeltaTable(t.root, storage_options=opts).delete("id = 11")  # rewrites that file: version 6
    with pytest.raises(ConcurrentDeleteDelete, match=f"version 6 removed tablet {theirs}"):
        t.finish(*delete)
    assert t.version == 6 and sorted(t.read().column("id").to_pylist()) == [2, 10, 20]
    assert_delta_agrees(t)


def test_another_writers_version_file_is_read_as_delta_writes_it(tmp_path):
    """Delta writers need not end a version file's last line with a newline: such a version
    reads; an empty version file, or a line that is no JSON action, is a ``FormatError`` naming
    the file (never a version read half-way, or skipped)."""
    t = TabletTable.create(str(tmp_path / "t"), pa.schema([("id", pa.int64())]))
    t.append(pa.table({"id": _ids(0, 2)}))
    deltalake.write_deltalake(t.root, pa.table({"id": _ids(5, 7)}), mode="append")
    path = log.version_path(t.root, 2)
    with open(path, "rb") as f:
        body = f.read().rstrip(b"\n")
    with open(path, "wb") as f:
        f.write(body)
    assert sorted(TabletTable(t.root).read().column("id").to_pylist()) == [0, 1, 5, 6]
    nxt = log.version_path(t.root, 3)
    for data, why in ((b"", "an empty version file"), (b'{"commitInfo":{}}\n{"add": {"pa', "unreadable action line")):
        with open(nxt, "wb") as f:
            f.write(data)
        with pytest.raises(FormatError, match=re.escape(f"log {nxt}: {why}")):
            TabletTable(t.root).read()
    assert sorted(TabletTable(t.root).read(2).column("id").to_pylist()) == [0, 1, 5, 6]


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


def test_adopt_reads_deletion_vectors_another_delta_writer_made(tmp_path):
    """A Delta version with a deletion vector in Delta's own layout (a file under a random
    prefix, storage type 'u'), as Delta Spark writes one: adopted, the vector read where it is;
    tablets' next delete on that file writes a vector of its own with both deletes."""
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
    assert st.dv is not None and st.dv.path == f"ab/deletion_vector_{uid}.bin"  # theirs, in place
    assert st.dv.cardinality == 3 and st.live_rows == 7
    assert_delta_agrees(t)
    _delete(t)  # row 0: a vector of tablets' own, the union
    st = next(iter(t.snapshot().tablets.values()))
    assert st.dv.path.startswith("dv/") and st.dv.cardinality == 4
    assert sorted(t.read().column("id").to_pylist()) == [2, 3, 6, 7, 8, 9]
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
    while t.version < log.CHECKPOINT_INTERVAL:  # past stream-2's version (a concurrent append), then checkpoints
        t.append(pa.table({"id": _ids(t.version * 10, t.version * 10 + 1), "v": ["x"]}))
    assert os.path.exists(os.path.join(root, "_delta_log", f"{log.CHECKPOINT_INTERVAL:020d}.checkpoint.parquet"))
    d = deltalake.DeltaTable(root)
    assert (d.transaction_version("stream-1"), d.transaction_version("stream-2")) == (7, 3)
    assert_delta_agrees(t, versions=[t.version])


def _source_and_clone(tmp_path) -> tuple[TabletTable, TabletTable]:
    """A tablet table with a deletion vector (id 0 deleted), and a shallow clone of it."""
    from tablets.storage.clone import shallow_clone

    src = TabletTable.create(str(tmp_path / "src"), pa.schema([("id", pa.int64()), ("v", pa.string())]))
    src.append(pa.table({"id": _ids(0, 4), "v": ["a", "b", "c", "d"]}))
    _delete(src)
    shallow_clone(src, str(tmp_path / "c"))
    return src, TabletTable(str(tmp_path / "c"))


def test_a_shallow_clones_delta_log_names_its_sources_files_by_file_uri(tmp_path):
    """A clone's version 0 names the source's tablets and deletion vectors where they are: in
    its Delta log (the clone's one log) as absolute ``file://`` URIs, which Delta allows for a
    path and for a vector of storage type 'p'; delta-rs reads the clone, and what it writes after."""
    import pathlib

    src, c = _source_and_clone(tmp_path)
    where = pathlib.Path(src.root).as_uri()
    adds = [line["add"] for line in log.read_lines(c.io, c.root, 0) if "add" in line]
    assert len(adds) == 1 and adds[0]["path"].startswith(where + "/tablets/")
    dv = adds[0]["deletionVector"]
    assert dv["storageType"] == "p" and dv["pathOrInlineDv"].startswith(where + "/dv/")
    assert sorted(delta_read(c.root).column("id").to_pylist()) == [1, 2, 3]
    _delete(c, 2)  # the clone's own vector on the source's tablet: row 1 too
    c.append(pa.table({"id": _ids(10, 11), "v": ["x"]}))
    assert sorted(delta_read(c.root).column("id").to_pylist()) == [2, 3, 10]
    assert_delta_agrees(c)
    polars = pytest.importorskip("polars")
    assert sorted(polars.read_delta(src.root)["id"].to_list()) == [1, 2, 3]  # the source, its vector applied


def test_polars_does_not_read_a_shallow_clone_until_delta_rs_joins_absolute_uris(tmp_path):
    """A known limit of the readers, held here so that its fix is noticed: delta-rs 1.6's
    ``DeltaTable.file_uris()``, which Polars' scan reads, joins the table root onto an absolute
    ``add.path`` (delta-io/delta-rs#865), so Polars looks for the clone's files under the clone;
    delta-rs' own query engine reads the clone (``test_one_truth.py``).
    When this starts reading the rows, turn it into the assertion that it does."""
    import polars

    _, c = _source_and_clone(tmp_path)
    with pytest.raises(FileNotFoundError):
        polars.read_delta(c.root)


def test_duckdb_does_not_read_a_shallow_clone_until_its_delta_extension_takes_absolute_uris(tmp_path):
    """The same limit in DuckDB 1.4's delta extension: it opens ``<root>/file:///...`` for an
    absolute ``add.path``. When this starts reading the rows, turn it into the assertion that it does."""
    src, c = _source_and_clone(tmp_path)
    assert sorted(duckdb_read(src.root).column("id").to_pylist()) == [1, 2, 3]
    with pytest.raises(DuckDBDeltaError, match="No such file"):
        duckdb_read(c.root)


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
