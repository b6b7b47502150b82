"""The tablet store without Spark: log, snapshots, time travel, row-level API, maintenance.
Every test runs on local disk and in a bucket of a real S3-compatible server (``base``)."""

import json
import re
import threading
import time

import pyarrow as pa
import pytest
from tablets.exceptions import (
    FormatError,
    SchemaMismatch,
    TableAlreadyExists,
    TableNotFound,
    VacuumRetentionError,
)
from tablets.storage import RowLevelSink, TabletTable, fileio, log
from tablets.storage.actions import ColumnStats
from tablets.storage.fileio import join
from tablets.storage.table import ROW_NUMBER, ROW_TABLET
from tablets.storage.tablet import ROW_ID

pytestmark = pytest.mark.unit

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def rows(t: pa.Table) -> list[tuple]:
    return sorted(zip(*(c.to_pylist() for c in t.columns), strict=True))


def make(base, n=0) -> TabletTable:
    t = TabletTable.create(join(base, "t"), SCHEMA, key_columns=["id"])
    if n:
        t.append(pa.table({"id": list(range(n)), "v": [f"v{i}" for i in range(n)]}, schema=SCHEMA))
    return t


def settle(t: TabletTable) -> None:
    """Let a second pass in a bucket: the store's timestamps have whole seconds, and VACUUM
    keeps every file of the second its START version was written in (they could be younger)."""
    if not t.io.local:
        time.sleep(1.1)


def delete_where(t: TabletTable, pred) -> int | None:
    """Delete rows matching ``pred(id)`` through the row-level API (begin -> sink -> finish)."""
    snap = t.snapshot()
    h = t.begin_delete()
    sink = RowLevelSink(h)
    for tid in snap.tablets:
        data = t.scan(snap, ["id"], tablet_ids=[tid], row_ids=True)
        for part in data:
            keep = [i for i, x in enumerate(part.column("id").to_pylist()) if pred(x)]
            sink.delete([tid] * len(keep), [part.column(ROW_NUMBER)[i].as_py() for i in keep])
    return t.finish(h, sink.finish())


def test_create_append_read(base):
    t = make(base, 5)
    assert t.version == 1
    assert rows(t.read()) == [(i, f"v{i}") for i in range(5)]
    snap = t.snapshot()
    (state,) = snap.tablets.values()
    assert state.add.rows == 5
    assert state.add.column_stats("id").min == 0 and state.add.column_stats("id").max == 4


def test_create_twice_and_missing(base):
    make(base)
    with pytest.raises(TableAlreadyExists):
        make(base)
    with pytest.raises(TableNotFound):
        TabletTable.open(join(base, "nope"))


def test_reserved_and_bad_keys(base):
    with pytest.raises(SchemaMismatch, match="reserved"):
        TabletTable.create(join(base, "a"), pa.schema([(ROW_TABLET, pa.string())]))
    with pytest.raises(SchemaMismatch, match="key columns"):
        TabletTable.create(join(base, "b"), SCHEMA, key_columns=["nope"])
    t = make(base)
    for bad in (ROW_ID, ROW_ID.upper(), "__Tablets_x"):  # Spark resolves Parquet columns in any case
        with pytest.raises(SchemaMismatch, match="reserved"):
            t.add_columns([(bad, "bigint")])
        with pytest.raises(SchemaMismatch, match="reserved"):
            t.set_schema([*t.snapshot().metadata.schema, (bad, "bigint", True)])
    assert t.snapshot().metadata.column_names == ("id", "v")


def test_key_columns_are_named_in_any_case(base):
    """A key column named in another case than the schema's is that column (Spark resolves
    names in any case), kept in the schema's case; a name of no column is refused."""
    t = TabletTable.create(join(base, "k"), pa.schema([("Id", pa.int64()), ("v", pa.string())]), key_columns=["ID"])
    assert t.snapshot().metadata.key_columns == ("Id",)
    with pytest.raises(SchemaMismatch, match="key columns"):
        TabletTable.create(join(base, "k2"), SCHEMA, key_columns=["nope"])


def test_tablets_carry_their_row_ids(base):
    """Every tablet holds ``ROW_ID`` = (tag << 32) | row number, delta-encoded (a few bytes a
    page), listed in the log's stats; the table's reads never show it. An integer column of
    many values is delta-encoded too; one of few values and nested columns keep their
    dictionaries (the writer's settings go by leaf path)."""
    import numpy as np
    import pyarrow.parquet as pq
    from tablets.storage.tablet import ROW_ID_SHIFT, has_row_ids, row_id_tag

    schema = pa.schema(
        [("id", pa.int64()), ("k", pa.int32()), ("st", pa.struct([("a", pa.int32())])), ("l", pa.list_(pa.string()))]
    )
    t = TabletTable.create(join(base, "n"), schema)
    n = 300_000  # three row groups
    rows = {"id": np.arange(n), "k": np.arange(n) % 5, "st": [{"a": i % 3} for i in range(n)], "l": [["x"]] * n}
    t.append(pa.table(rows, schema=schema))
    (st,) = t.snapshot().tablets.values()
    assert has_row_ids(st.add)
    base_id = row_id_tag(st.tablet_id) << ROW_ID_SHIFT
    assert st.add.column_stats(ROW_ID) == ColumnStats(base_id, base_id + n - 1, 0)
    pf = pq.ParquetFile(t.io.open_input(t.tablet_path(st)))
    assert pf.read(columns=[ROW_ID]).column(0).to_numpy().tolist() == list(range(base_id, base_id + n))
    meta = pf.metadata
    for g in range(meta.num_row_groups):
        by_path = {
            meta.row_group(g).column(i).path_in_schema: meta.row_group(g).column(i) for i in range(meta.num_columns)
        }
        assert "DELTA_BINARY_PACKED" in by_path[ROW_ID].encodings and by_path[ROW_ID].total_compressed_size < 1024
        assert "DELTA_BINARY_PACKED" in by_path["id"].encodings and "RLE_DICTIONARY" not in by_path["id"].encodings
        for leaf in ("k", "st.a", "l.list.element"):
            assert "RLE_DICTIONARY" in by_path[leaf].encodings, leaf
    assert t.read().column_names == ["id", "k", "st", "l"]
    assert ROW_ID not in next(t.scan(t.snapshot(), row_ids=True)).column_names


def test_row_level_delete_writes_one_dv_and_ors_old(base):
    t = make(base, 10)
    assert delete_where(t, lambda x: x % 2 == 0) == 2
    assert rows(t.read()) == [(i, f"v{i}") for i in range(10) if i % 2]
    assert delete_where(t, lambda x: x in (1, 3)) == 3
    snap = t.snapshot()
    (state,) = snap.tablets.values()
    assert state.dv.cardinality == 7  # old DV OR new deletes
    assert [r[0] for r in rows(t.read())] == [5, 7, 9]
    actions = log.read_version(t.io, t.root, 3)
    assert sum(1 for a in actions if type(a).__name__ == "SetDV") == 1


def test_noop_commit_not_written(base):
    t = make(base, 3)
    assert delete_where(t, lambda x: False) is None
    assert t.version == 1
    assert t.append(pa.table({"id": pa.array([], pa.int64()), "v": pa.array([], pa.string())})) is None


def test_time_travel_every_version(base):
    t = make(base)
    expected = {0: []}
    live = []
    for v in range(1, 11):
        if v % 3 == 0:
            delete_where(t, lambda x, v=v: x % v == 1)
            live = [r for r in live if r % v != 1]
        else:
            new = list(range(v * 100, v * 100 + v))
            t.append(pa.table({"id": new, "v": [str(i) for i in new]}, schema=SCHEMA))
            live = live + new
        expected[v] = sorted(live)
    assert t.version == 10
    for v, ids in expected.items():
        assert sorted(t.read(version=v).column("id").to_pylist()) == ids, v
    hist = t.history()
    assert [h.version for h in hist] == list(range(11))
    assert hist[1].commit.operation == "APPEND"
    assert hist[1].commit.metrics_dict()["rows_inserted"] == 1.0


def test_checkpoints_bound_replay(base, monkeypatch):
    t = make(base)
    for i in range(log.CHECKPOINT_INTERVAL + 5):
        t.append(pa.table({"id": [i], "v": ["x"]}, schema=SCHEMA))
    versions, checkpoints = log.list_log(t.io, t.root)
    assert checkpoints == [log.CHECKPOINT_INTERVAL]
    read = []
    real = type(t.io).read
    version_file = re.compile(r"/_delta_log/(\d{20})\.json$")

    def spy(io, path):
        if m := version_file.search(path):
            read.append(int(m.group(1)))
        return real(io, path)

    monkeypatch.setattr(type(t.io), "read", spy)
    snap = t.snapshot()
    assert snap.live_rows == log.CHECKPOINT_INTERVAL + 5
    assert sorted(read) == list(range(log.CHECKPOINT_INTERVAL + 1, versions[-1] + 1))


def test_a_replay_reads_versions_ahead_in_a_bucket_in_order(base, monkeypatch):
    """A log replay in a bucket has several version reads in flight (one round trip each),
    applies them in order, and a missing version is still the error of that version."""
    t = make(base, 2)
    for i in range(30):
        t.append(pa.table({"id": [100 + i], "v": ["x"]}, schema=SCHEMA))
    want = sorted(t.read().column("id").to_pylist())
    flight, most = [0], [0]
    lock = threading.Lock()
    real = type(t.io).read

    def slow_read(io, path):
        with lock:
            flight[0] += 1
            most[0] = max(most[0], flight[0])
        time.sleep(0.01)
        try:
            return real(io, path)
        finally:
            with lock:
                flight[0] -= 1

    monkeypatch.setattr(type(t.io), "read", slow_read)
    assert log.load_snapshot(t.io, t.root).live_rows == len(want)  # no checkpoint yet: the whole log
    newest = t.version
    assert most[0] == (1 if t.io.local else min(fileio.READ_AHEAD, newest + 1)), most
    ahead = list(log.walk(t.io, t.root, range(newest + 1), None))
    assert [v for v, _, _ in ahead] == list(range(newest + 1))  # in order
    states = [None] + [snap for _, _, snap in ahead]
    assert [a for _, a, _ in ahead] == [log.read_version(t.io, t.root, v, states[v]) for v in range(newest + 1)]
    assert states[-1].live_rows == len(want)
    t.io.delete(log.version_path(t.root, 7))
    with pytest.raises(TableNotFound, match="version 7 of"):
        list(log.walk(t.io, t.root, range(newest + 1), None))


def test_truncated_version_is_format_error(base):
    t = make(base, 2)
    path = log.version_path(t.root, 1)
    t.io.write(path, t.io.read(path)[:-5])
    with pytest.raises(FormatError):
        t.snapshot()


def test_schema_evolution_old_tablets_read_null(base):
    t = make(base, 2)
    t.add_columns([("extra", "int")])
    t.append(pa.table({"id": [9], "v": ["z"], "extra": pa.array([7], pa.int32())}))
    assert rows(t.read()) == [(0, "v0", None), (1, "v1", None), (9, "z", 7)]
    with pytest.raises(SchemaMismatch, match="nope"):
        t.append(pa.table({"id": [1], "nope": [1]}))


def test_compact_and_vacuum(base):
    t = make(base)
    for i in range(4):
        t.append(pa.table({"id": [i * 10 + j for j in range(10)], "v": ["x"] * 10}, schema=SCHEMA))
    delete_where(t, lambda x: x % 10 < 6)
    before = sorted(t.read().column("id").to_pylist())
    v = t.compact()
    assert v is not None
    snap = t.snapshot()
    assert len(snap.tablets) == 1 and snap.num_dvs == 0
    assert sorted(t.read().column("id").to_pylist()) == before
    assert t.history()[-1].commit.operation == "COMPACT"
    with pytest.raises(VacuumRetentionError):
        t.vacuum(retention_hours=1)
    assert t.vacuum() == []  # everything is young
    settle(t)
    removed = t.vacuum(retention_hours=0, enforce_retention=False)
    assert len([r for r in removed if r.startswith("tablets/")]) == 4
    assert len([r for r in removed if r.startswith("dv/")]) == 4
    assert sorted(t.read().column("id").to_pylist()) == before


def test_log_lines_are_json_actions(base):
    """A version is a Delta version file (one JSON action a line, its commitInfo first), the
    only copy of it: a new table has no ``_log/``."""
    t = make(base, 1)
    kinds = {}
    for v in (0, 1):
        lines = t.io.read(join(t.root, "_delta_log", log.version_name(v))).decode().splitlines()
        kinds[v] = [next(iter(json.loads(line))) for line in lines]
        info = json.loads(lines[0])["commitInfo"]
        assert info["engineInfo"] == "dbt-tablets" and dict(info["tablets"]["state"])["tablets"] == v
    assert kinds == {0: ["commitInfo", "protocol", "metaData"], 1: ["commitInfo", "add"]}
    (add,) = [json.loads(line)["add"] for line in lines[1:]]
    assert {"tablets.stats", "tablets.txid"} <= set(add["tags"]) and json.loads(add["stats"])["numRecords"] == 1
    assert t.io.list(join(t.root, "_log")) == []


def test_missing_version_is_format_error_not_a_shorter_table(base):
    t = make(base, 2)
    t.append(pa.table({"id": [7], "v": ["x"]}, schema=SCHEMA))
    t.append(pa.table({"id": [8], "v": ["y"]}, schema=SCHEMA))
    t.io.delete(log.version_path(t.root, 2))
    with pytest.raises(FormatError, match="missing version"):
        t.snapshot()
    with pytest.raises(FormatError, match="missing version"):
        t.vacuum(retention_hours=0, enforce_retention=False)
    with pytest.raises(FormatError, match="missing version"):
        t.append(pa.table({"id": [9], "v": ["z"]}, schema=SCHEMA))


def test_missing_first_versions_is_format_error(base):
    t = make(base, 2)
    t.io.delete(log.version_path(t.root, 0))
    with pytest.raises(FormatError, match="missing version"):
        t.snapshot()


def test_checkpoint_hint_lists_from_the_checkpoint(base):
    t = make(base)
    for i in range(log.CHECKPOINT_INTERVAL + 2):
        t.append(pa.table({"id": [i], "v": ["x"]}, schema=SCHEMA))
    versions, checkpoints = log.list_log(t.io, t.root)
    assert versions[0] == log.CHECKPOINT_INTERVAL and checkpoints == [log.CHECKPOINT_INTERVAL]
    # a gap before the checkpoint still spoils time travel to those versions, not the latest
    t.io.delete(log.version_path(t.root, 3))
    assert t.snapshot().live_rows == log.CHECKPOINT_INTERVAL + 2
    with pytest.raises(FormatError, match="missing version"):
        t.read(version=10)


def test_outside_share_is_what_a_range_filter_could_skip():
    import datetime

    from tablets.storage.actions import AddTablet, ColumnStats
    from tablets.storage.pruning import outside_share

    def add(lo, hi, nulls=0):
        return AddTablet("t", "tablets/t.parquet", 10, 100, (("id", ColumnStats(lo, hi, nulls)),))

    assert outside_share(add(5, 9), "id", 0, 10) == 0.0
    assert outside_share(add(0, 10), "id", 0, 10) == 0.0
    assert outside_share(add(0, 100), "id", 0, 10) == 0.9
    assert outside_share(add(0, 100), "id", 90, 200) == 0.9
    assert outside_share(add(0, 10_000_000), "id", 17, 20_000_000) < 0.001  # random keys: no use
    assert outside_share(add(7, 7), "id", 0, 5) == 1.0
    assert outside_share(add(None, None, 10), "id", 0, 10) == 0.0  # only NULLs
    assert outside_share(add("a", "b"), "id", 0, 10) is None  # values that do not compare
    assert outside_share(AddTablet("t", "tablets/t.parquet", 10, 100), "id", 0, 10) is None  # no stats
    assert (
        outside_share(add("2024-01-01", "2024-01-11"), "id", datetime.date(2024, 1, 6), datetime.date(2024, 2, 1))
        == 0.5
    )
    assert outside_share(add("aa", "zz"), "id", "ab", "zy") < 0.01
    assert outside_share(add("aa", "zz"), "id", "m", "n") > 0.9


def test_outside_compares_timestamps_as_instants_and_decimals_as_numbers():
    """The log keeps timestamps and decimals as text (``2023-11-14T22:00:00+00:00``, ``2.50``):
    ``outside`` reads them back as values, so a range that ends exactly at a tablet's smallest
    key keeps the tablet, in any zone; an instant never against a wall time."""
    import datetime
    import decimal

    from tablets.storage.actions import AddTablet, ColumnStats
    from tablets.storage.pruning import outside

    def add(lo, hi):
        return AddTablet("t", "tablets/t.parquet", 10, 100, (("k", ColumnStats(lo, hi, 0)),))

    utc, la = datetime.UTC, datetime.timezone(datetime.timedelta(hours=-8))
    tablet = add("2023-11-14T22:00:00+00:00", "2023-11-15T07:00:00.500000+00:00")
    at = datetime.datetime(2023, 11, 14, 22, tzinfo=utc)
    assert not outside(tablet, [("k", at - datetime.timedelta(hours=5), at)])  # ends at the tablet's min
    assert not outside(tablet, [("k", at.astimezone(la), at.astimezone(la))])  # the same instant elsewhere
    assert outside(tablet, [("k", at - datetime.timedelta(hours=5), at - datetime.timedelta(microseconds=1))])
    end = datetime.datetime(2023, 11, 15, 7, 0, 0, 500000, tzinfo=utc)
    assert not outside(tablet, [("k", end, end + datetime.timedelta(days=1))])  # starts at the max's microseconds
    assert outside(tablet, [("k", end + datetime.timedelta(microseconds=1), end + datetime.timedelta(days=1))])
    naive = datetime.datetime(2023, 11, 14, 22)
    assert not outside(tablet, [("k", naive, naive)])  # a wall time against instants: cannot tell
    assert outside(
        add("2023-11-14T22:00:00", "2023-11-14T23:00:00"),
        [("k", naive + datetime.timedelta(hours=2), naive + datetime.timedelta(hours=3))],
    )
    assert not outside(
        add("2024-01-01", "2024-01-31"), [("k", datetime.datetime(2024, 1, 31, 0, 0), datetime.datetime(2024, 2, 1))]
    )
    d = decimal.Decimal
    assert not outside(add("2.50", "9.75"), [("k", d("0.1"), d("2.5"))])
    assert outside(add("2.50", "9.75"), [("k", d("0.1"), d("2.49999"))])
    assert outside(add("2.50", "9.75"), [("k", d("10"), d("11"))])


def test_version_file_not_utf8_is_a_format_error_naming_it(base):
    t = make(base, 2)
    path = log.version_path(t.root, 1)
    t.io.write(path, b'{"add":\xff}\n')
    with pytest.raises(FormatError, match=rf"log {path}: not UTF-8 text \(byte 7 is b'\\xff'\)"):
        t.snapshot()


def test_rows_inserted_a_batch_at_a_time_make_full_tablets(base):
    """A sink given rows in batches (a streaming task's) writes tablets of target_tablet_rows,
    the remainder carried to the next batch and written last, never a small tablet per batch."""
    t = make(base)
    h = t.begin_delete("INSERT", target_tablet_rows=5)
    sink = RowLevelSink(h)
    for b in range(10):
        sink.insert(pa.table({"id": list(range(b * 7, b * 7 + 7)), "v": ["x"] * 7}, schema=SCHEMA))
    t.finish(h, sink.finish())
    assert sorted(st.add.rows for st in t.snapshot().tablets.values()) == [5] * 14
    assert rows(t.read()) == [(i, "x") for i in range(70)]


def test_a_sink_makes_what_it_wrote_durable_together_before_it_returns(tmp_path, monkeypatch):
    """A task's DVs are created without a sync each (a journal commit per file, waiting on every
    other writer's data); the sink syncs its DVs and tablets together when it finishes, before
    the driver may commit them."""
    created, synced = [], []
    local = fileio.LocalFileIO
    real_create, real_sync = local.create, local.sync
    monkeypatch.setattr(
        local, "create", lambda io, p, d, *, sync=True: created.append((p, sync)) or real_create(io, p, d, sync=sync)
    )
    monkeypatch.setattr(local, "sync", lambda io, paths: synced.append(list(paths)) or real_sync(io, paths))
    t = make(str(tmp_path), 10)
    created.clear(), synced.clear()
    h = t.begin_delete("MERGE")
    sink = RowLevelSink(h)
    (tid,) = t.snapshot().tablets
    sink.delete([tid, tid], [1, 3])
    sink.insert(pa.table({"id": [10], "v": ["x"]}, schema=SCHEMA))
    frags = sink.finish()
    files = {f.dv.path if hasattr(f, "dv") else f.add.path for f in frags if hasattr(f, "dv") or hasattr(f, "add")}
    assert len(files) == 2
    (paths,) = synced
    assert {p[len(t.root) + 1 :] for p in paths} == files
    assert [s for p, s in created if "deletion_vector" in p or "/dv/" in p] == [False]
    t.finish(h, frags)
    assert [r[0] for r in rows(t.read())] == [0, 2, *range(4, 11)]
