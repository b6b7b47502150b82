"""The store's table_changes and shallow clones, without Spark."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest
from tablets.exceptions import ChangesUnavailable, TableAlreadyExists, TabletsError
from tablets.storage import RowLevelSink, TabletTable
from tablets.storage.changes import changes, last_consumed, record_consumed, version_range
from tablets.storage.clone import CREATING_MS, clones, shallow_clone
from tablets.storage.fileio import join

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def table(path, keys=("id",)):
    t = TabletTable.create(str(path), SCHEMA, key_columns=list(keys))
    t.append(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}))  # v1
    return t


def row_ids(t):
    return {r["id"]: (r["_tablet_id"], r["_row_number"]) for p in t.scan(row_ids=True) for r in p.to_pylist()}


def update(t, key, value):
    tid, row = row_ids(t)[key]
    h = t.begin_delete("UPDATE")
    sink = RowLevelSink(h)
    sink.delete([tid], [row])
    sink.insert(pa.table({"id": [key], "v": [value]}))
    return t.finish(h, sink.finish())


def delete(t, key):
    tid, row = row_ids(t)[key]
    h = t.begin_delete()
    sink = RowLevelSink(h)
    sink.delete([tid], [row])
    return t.finish(h, sink.finish())


def kinds(feed):
    return sorted((r["id"], r["v"], r["_change_type"], r["_commit_version"]) for r in feed.to_pylist())


def test_changes_pair_updates_by_key_and_skip_compactions(tmp_path):
    t = table(tmp_path / "t")
    update(t, 2, "B")  # v2
    delete(t, 1)  # v3
    assert t.compact(min_tablet_rows=100) == 4  # v4: rows move, none change
    assert kinds(changes(t, 2)) == [
        (1, "a", "delete", 3),
        (2, "B", "update_postimage", 2),
        (2, "b", "update_preimage", 2),
    ]
    assert changes(t, 4).num_rows == 0
    feed = changes(t, 0, 1)
    assert feed.column_names == ["id", "v", "_change_type", "_commit_version", "_commit_timestamp"]
    assert str(feed.schema.field("_commit_timestamp").type) == "timestamp[us, tz=UTC]"
    t.restore(1)  # v5: across the compaction: only what differs
    assert kinds(changes(t, 5)) == [
        (1, "a", "insert", 5),
        (2, "B", "update_preimage", 5),
        (2, "b", "update_postimage", 5),
    ]


def test_keyless_changes_and_added_columns(tmp_path):
    t = table(tmp_path / "t", keys=())
    update(t, 2, "B")
    t.add_columns([("x", "int")])
    t.append(pa.table({"id": [4], "v": ["d"], "x": [40]}))
    feed = changes(t, 1)
    assert [(r["id"], r["x"], r["_change_type"]) for r in feed.to_pylist() if r["_commit_version"] == 2] == [
        (2, None, "delete"),
        (2, None, "insert"),
    ]
    assert (4, 40, "insert") in [(r["id"], r["x"], r["_change_type"]) for r in feed.to_pylist()]


def test_ranges(tmp_path):
    commits = [(0, 100), (1, 200), (2, 300)]
    assert version_range(commits, 1, None, "w") == (1, 2)
    assert version_range(commits, 0, 99, "w") == (0, 2)  # an end past the newest: the newest
    assert version_range(commits, None, None, "w", start_ms=150, end_ms=250) == (1, 1)
    for bad, match in [((3, None), "after the newest"), ((2, 1), "before start"), ((-1, None), "negative")]:
        with pytest.raises(ChangesUnavailable, match=match):
            version_range(commits, *bad, "w")
    with pytest.raises(ChangesUnavailable, match="no version was committed at or after"):
        version_range(commits, None, None, "w", start_ms=400)


def test_consumption_records(tmp_path):
    t = table(tmp_path / "t")
    assert last_consumed(t) == {}
    assert record_consumed(t, {"up": 3}) is not None
    assert record_consumed(t, {"up": 3}) is None  # already recorded: no version
    assert last_consumed(t) == {"up": 3}
    assert t.snapshot().metadata.property("tablets.consumed") == '{"up": 3}'


def files(root):
    return {
        f"{sub}/{f}"
        for sub in ("tablets", "dv")
        if os.path.isdir(os.path.join(root, sub))
        for f in os.listdir(os.path.join(root, sub))
    }


def test_clone_references_writes_vacuums_and_drops(tmp_path):
    src = table(tmp_path / "src")
    delete(src, 3)
    before = files(src.root)
    assert shallow_clone(src, str(tmp_path / "c")) == 0
    c = TabletTable.open(str(tmp_path / "c"))
    assert files(c.root) == set()
    assert all(st.add.path.startswith(src.root) for st in c.snapshot().tablets.values())
    assert sorted(c.read().column("id").to_pylist()) == [1, 2]
    update(c, 2, "B")  # the source tablet's new vector: in the clone's root
    assert files(src.root) == before and files(c.root)
    src.overwrite(pa.table({"id": [9], "v": ["z"]}))
    src.vacuum(0, enforce_retention=False)
    assert sorted(c.read().to_pylist(), key=str) == sorted([{"id": 1, "v": "a"}, {"id": 2, "v": "B"}], key=str)
    c.vacuum(0, enforce_retention=False)
    assert src.read().column("id").to_pylist() == [9]

    with pytest.raises(TableAlreadyExists):
        shallow_clone(src, c.root)
    with pytest.raises(TabletsError, match="inside its source's root"):
        shallow_clone(src, join(src.root, "sub"))

    src.drop()  # keeps what the clone reads
    assert not any(os.path.exists(os.path.join(src.root, sub)) for sub in ("_delta_log", "_tablets"))
    assert sorted(c.read().column("id").to_pylist()) == [1, 2]
    c.drop()  # the last clone: the source's leftovers go too
    assert not os.path.exists(src.root) and not os.path.exists(c.root)


def test_clone_of_a_clone_registers_with_both_and_replace(tmp_path):
    src = table(tmp_path / "src")
    shallow_clone(src, str(tmp_path / "a"))
    a = TabletTable.open(str(tmp_path / "a"))
    update(a, 1, "A")
    shallow_clone(a, str(tmp_path / "b"))
    b = TabletTable.open(str(tmp_path / "b"))
    assert len(clones(src.io, src.root)) == 2 and len(clones(a.io, a.root)) == 1
    a.drop()
    src.overwrite(pa.table({"id": [9], "v": ["z"]}))
    src.vacuum(0, enforce_retention=False)
    assert sorted(b.read().to_pylist(), key=str) == sorted(
        [{"id": 1, "v": "A"}, {"id": 2, "v": "b"}, {"id": 3, "v": "c"}], key=str
    )
    # replace: one new version of b, its history kept
    v = shallow_clone(src, b.root, replace_table=True)
    assert v == 1 and b.read().column("id").to_pylist() == [9]
    assert sorted(b.read(0).column("id").to_pylist()) == [1, 2, 3]


def test_markers_of_dropped_clones_go(tmp_path, monkeypatch):
    src = table(tmp_path / "src")
    shallow_clone(src, str(tmp_path / "c"))
    TabletTable(str(tmp_path / "c")).io.delete_tree(str(tmp_path / "c"))  # gone without DROP
    import tablets.storage.clone as clone

    monkeypatch.setattr(clone, "CREATING_MS", -1.0)
    src.vacuum(0, enforce_retention=False)
    assert clones(src.io, src.root) == [] and CREATING_MS > 0


def test_clone_on_local_disk_and_in_a_bucket(base):
    # full locations in a clone's actions: paths on disk, s3:// URIs in a bucket
    src = TabletTable.create(join(base, "src"), SCHEMA, key_columns=["id"])
    src.append(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    shallow_clone(src, join(base, "c"))
    c = TabletTable.open(join(base, "c"))
    assert all(st.add.path.startswith(src.root) for st in c.snapshot().tablets.values())
    update(c, 1, "A")
    src.overwrite(pa.table({"id": [9], "v": ["z"]}))
    src.vacuum(0, enforce_retention=False)
    src.drop()
    assert sorted(c.read().to_pylist(), key=str) == sorted([{"id": 1, "v": "A"}, {"id": 2, "v": "b"}], key=str)
    assert kinds(changes(c, 0)) == [
        (1, "A", "update_postimage", 1),
        (1, "a", "insert", 0),
        (1, "a", "update_preimage", 1),
        (2, "b", "insert", 0),
    ]
    c.drop()
    assert not src.io.list(join(src.root, "tablets")) and not c.io.list(join(c.root, "tablets"))


def test_a_clone_being_made_keeps_its_files(tmp_path):
    # a marker whose clone has no log yet (the clone commits after writing it): the source's
    # VACUUM keeps what the clone's source version references
    src = table(tmp_path / "src")
    shallow_clone(src, str(tmp_path / "a"))
    a = TabletTable.open(str(tmp_path / "a"))
    update(a, 1, "A")
    shallow_clone(a, str(tmp_path / "b"))
    b = str(tmp_path / "b")
    TabletTable(b).io.delete_tree(os.path.join(b, "_delta_log"))  # "not committed yet"
    a.overwrite(pa.table({"id": [7], "v": ["q"]}))  # a no longer reads src's tablet: only b's version does
    before = files(src.root)
    src.overwrite(pa.table({"id": [9], "v": ["z"]}))
    src.vacuum(0, enforce_retention=False)
    assert before <= files(src.root)  # the old tablet (and vectors) are the being-made clone's


def test_clone_statements_parse():
    from tablets.exceptions import StatementParseError
    from tablets.sql.clone import is_clone, parse_clone

    s = parse_clone(
        "CREATE OR REPLACE TABLE `db`.c SHALLOW CLONE db.t VERSION AS OF 3 LOCATION '/x' TBLPROPERTIES ('a' = 'b')"
    )
    assert (s.target, s.source, s.replace, s.as_of.version, s.location, s.properties) == (
        "`db`.c",
        "db.t",
        True,
        3,
        "/x",
        (("a", "b"),),
    )
    s = parse_clone("create table if not exists c shallow clone t timestamp as of '2024-01-01 00:00:00';")
    assert s.if_not_exists and s.as_of.timestamp == "'2024-01-01 00:00:00'"
    assert not parse_clone("CREATE TABLE c DEEP CLONE t").shallow and not parse_clone("CREATE TABLE c CLONE t").shallow
    assert is_clone("CREATE TABLE c SHALLOW CLONE t") and not is_clone("CREATE TABLE clone (id INT)")
    assert not is_clone("SELECT * FROM clone")
    for bad, why in [
        ("CREATE TABLE c SHALLOW CLONE t VERSION AS OF x", "VERSION AS OF takes a version number"),
        ("CREATE TABLE c SHALLOW CLONE t WHERE 1", "unexpected 'WHERE'"),
        ("CREATE OR REPLACE TABLE IF NOT EXISTS c SHALLOW CLONE t", "cannot go together"),
    ]:
        with pytest.raises(StatementParseError, match=why):
            parse_clone(bad)


def test_a_clone_is_a_delta_table_too(tmp_path):
    """A clone's version 0 names its source's tablets and deletion vectors by full location:
    delta-rs reads it (Delta allows absolute paths in ``add`` and the ``p`` vector storage), and
    every version the clone makes after. On disk only: delta-rs 1.6 resolves every data file under
    the table's own prefix in a bucket, so it cannot read a shallow clone's absolute ``s3://``
    paths (delta-io/delta-rs#1748, Databricks' clones too; Delta Kernel reads them)."""
    from support.delta_check import assert_delta_agrees

    base = str(tmp_path)

    src = TabletTable.create(join(base, "dsrc"), SCHEMA, key_columns=["id"])
    src.append(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}))
    delete(src, 2)  # a deletion vector of the source's
    shallow_clone(src, join(base, "dc"))
    c = TabletTable.open(join(base, "dc"))
    update(c, 1, "A")  # the clone's own vector on the source's tablet
    c.append(pa.table({"id": [4], "v": ["d"]}))
    assert_delta_agrees(c)
    assert sorted(r["id"] for r in c.read().to_pylist()) == [1, 3, 4]
