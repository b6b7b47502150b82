"""The driver's selection of a tablet's rows by key values (storage.select.select_rows): the
same rows a filter of the live rows gives, with their positions, row groups skipped by their
statistics, NULL keys never selected, tablets verified."""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from tablets.exceptions import FormatError
from tablets.storage import RowLevelSink, TabletTable, tablet
from tablets.storage.select import KeySet, select_rows

pytestmark = pytest.mark.unit

SCHEMA = pa.schema([("id", pa.int64()), ("k", pa.int32()), ("s", pa.string())])


@pytest.fixture
def table(tmp_path, monkeypatch):
    monkeypatch.setattr(tablet, "ROW_GROUP_ROWS", 100)  # ten row groups
    t = TabletTable.create(str(tmp_path / "t"), SCHEMA)
    ids = list(range(1000))
    t.append(
        pa.table(
            {
                "id": pa.array([None if i % 97 == 0 else i for i in ids], pa.int64()),
                "k": pa.array([i % 10 for i in ids], pa.int32()),
                "s": pa.array([f"s{i}" for i in ids]),
            }
        )
    )
    (tid,) = t.snapshot().tablets
    handle = t.begin_delete()
    sink = RowLevelSink(handle)
    sink.delete([tid] * 100, list(range(0, 1000, 10)))  # every tenth row deleted
    t.finish(handle, sink.finish())
    return t


def select(t, values, columns=("id", "k", "s")):
    (st,) = t.snapshot().tablets.values()
    return select_rows(t.io, t.root, st.add, st.dv, SCHEMA, list(columns), values)


def test_selects_the_live_rows_holding_the_values_with_their_positions(table):
    wanted = [5, 10, 97, 194, 333, 999, 5000]  # 10 deleted, 97 and 194 NULL ids, 5000 absent
    rows, positions, _ = select(table, {"id": pa.array(wanted, pa.int64())})
    assert rows.column("id").to_pylist() == [5, 333, 999]
    assert positions.to_pylist() == [5, 333, 999]
    assert rows.column("s").to_pylist() == ["s5", "s333", "s999"]


def test_two_key_columns_and_integers_of_other_widths(table):
    rows, positions, _ = select(table, {"id": pa.array([11, 12, 13], pa.int8()), "k": pa.array([2, 3], pa.int64())})
    assert positions.to_pylist() == [12, 13]


def test_null_values_select_nothing(table):
    rows, _, _ = select(table, {"id": pa.array([None], pa.int64())})
    assert rows.num_rows == 0 and rows.schema == SCHEMA


def test_row_groups_outside_the_values_are_not_read(table, monkeypatch):
    read = []
    real = tablet.pq.ParquetFile.read_row_group

    def spy(self, i, *args, **kwargs):
        read.append(i)
        return real(self, i, *args, **kwargs)

    monkeypatch.setattr(tablet.pq.ParquetFile, "read_row_group", spy)
    rows, positions, _ = select(table, {"id": pa.array([431, 455], pa.int64())})
    assert positions.to_pylist() == [431, 455]
    assert set(read) == {4}
    read.clear()  # values far apart: only the row groups that can hold one of them, not those between
    rows, positions, _ = select(table, {"id": pa.array([105, 871], pa.int64())})
    assert positions.to_pylist() == [105, 871]
    assert set(read) == {1, 8}


def test_others_selects_the_live_rows_without_a_value_it_holds_for(table):
    # every row group is read: rows of any group may hold for ``others``; NULL ids are unpaired
    seen = []

    def others(group):
        seen.append(group.column_names)
        return pc.fill_null(pc.equal(pc.bit_wise_and(group.column("k"), 1), 1), False)  # odd k

    (st,) = table.snapshot().tablets.values()
    got = select_rows(
        table.io, table.root, st.add, st.dv, SCHEMA, ["id"], {"id": pa.array([5, 6, 333], pa.int64())}, others, ["k"]
    )
    live = [i for i in range(1000) if i % 10]
    want = sorted({i for i in live if i % 2} | {5, 6, 333})
    assert got.positions.to_pylist() == want
    assert got.rows.column_names == ["id"]
    assert got.rows.column("id").to_pylist() == [None if i % 97 == 0 else i for i in want]
    assert [p for p, by in zip(want, got.by_values.to_pylist(), strict=True) if by] == [5, 6, 333]
    assert len(seen) == 10 and seen[0] == ["id", "k"]


def test_parts_of_a_tablet_select_its_rows_between_them(table):
    (st,) = table.snapshot().tablets.values()
    values = {"id": pa.array(range(0, 1000, 3), pa.int64())}
    whole = select_rows(table.io, table.root, st.add, st.dv, SCHEMA, ["id", "s"], values)
    parts = [
        select_rows(table.io, table.root, st.add, st.dv, SCHEMA, ["id", "s"], values, part=(i, 3)) for i in range(3)
    ]
    assert all(p.positions.to_pylist() for p in parts)  # ten row groups: each part has some
    got = sorted(
        zip(
            pa.concat_arrays([p.positions for p in parts]).to_pylist(),
            pa.concat_tables([p.rows for p in parts]).column("s").to_pylist(),
            strict=True,
        )
    )
    assert got == list(zip(whole.positions.to_pylist(), whole.rows.column("s").to_pylist(), strict=True))


def test_a_damaged_tablet_is_a_format_error(table):
    (st,) = table.snapshot().tablets.values()
    path = table.tablet_path(st)
    with open(path, "r+b") as f:
        f.seek(200)
        b = f.read(1)
        f.seek(200)
        f.write(bytes([b[0] ^ 0xFF]))
    with pytest.raises(FormatError, match="damaged"):
        select(table, {"id": pa.array(np.arange(1000), pa.int64())})


def test_a_key_column_the_tablet_predates_holds_no_value(table):
    table.add_columns([("late", "bigint")])
    schema = SCHEMA.append(pa.field("late", pa.int64()))
    (st,) = table.snapshot().tablets.values()
    rows, _, _ = select_rows(
        table.io, table.root, st.add, st.dv, schema, ["id", "late"], {"late": pa.array([1], pa.int64())}
    )
    assert rows.num_rows == 0
    rows, _, _ = select_rows(
        table.io, table.root, st.add, st.dv, schema, ["id", "late"], {"id": pa.array([1], pa.int64())}
    )
    assert rows.to_pylist() == [{"id": 1, "late": None}]


@pytest.mark.parametrize(
    "values",
    [
        [5, -3, 12, 7],  # a narrow span: the bitmap
        [-4, 0, 6, 7, 11, 13],  # bits on both sides of a byte's edge
        [-(2**63), -(2**63) + 3],  # a narrow span at int64's ends: the bitmap
        [2**63 - 3, 2**63 - 1],
        [-(2**63), 2**63 - 1, 0, 12],  # the whole int64 range: is_in
    ],
)
@pytest.mark.parametrize("column_type", [pa.int8(), pa.int32(), pa.int64()])
def test_key_sets_agree_with_is_in(values, column_type):
    info = np.iinfo(column_type.to_pandas_dtype())
    column = pa.array([None, -4, -3, 0, 5, 6, 7, 11, 12, 13, int(info.min), int(info.max), None], column_type)
    ks = KeySet(pa.array(values + [None], pa.int64()))
    want = pc.fill_null(pc.is_in(column.cast(pa.int64()), value_set=pa.array(values, pa.int64())), False)
    assert ks.hits(column).to_pylist() == want.to_pylist()
    assert (ks.lo, ks.hi) == (min(values), max(values))


def test_a_key_set_answers_columns_of_any_length_in_turn_and_from_threads():
    """``hits`` keeps its buffers between calls (per thread): columns longer and shorter than the
    last, from several threads at once, each get their own answer."""
    rng = np.random.default_rng(7)
    values = pa.array(rng.choice(50_000, 5_000, replace=False), pa.int64())
    ks = KeySet(values)
    columns = [pa.array(rng.integers(-10, 60_000, n), pa.int64()) for n in (1000, 70_000, 10, 0, 30_000, 70_001)]

    def want(c):
        return pc.fill_null(pc.is_in(c, value_set=values), False).to_pylist()

    assert [ks.hits(c).to_pylist() for c in columns] == [want(c) for c in columns]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda c: ks.hits(c).to_pylist(), columns * 4))
    assert got == [want(c) for c in columns * 4]


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_a_key_set_shipped_to_tasks_answers_as_it_did(sparse, monkeypatch):
    """Pickled (``engine.key_delete``: the set rides with Spark's tasks) it answers alike; a set of
    more values than ``_HASHED_VALUES`` over a span too wide for a bitmap searches its sorted values."""
    import pickle

    from tablets.storage import select

    monkeypatch.setattr(select, "_HASHED_VALUES", 8)
    rng = np.random.default_rng(3)
    spread = 1 << 40 if sparse else 1000
    values = pa.array([*rng.choice(spread, 50, replace=False).tolist(), None], pa.int64())
    column = pa.array([*values.to_pylist()[::3], *rng.integers(-5, spread, 200).tolist(), None, -(2**63)], pa.int64())
    want = pc.fill_null(pc.is_in(column, value_set=values.drop_null()), False).to_pylist()
    ks = KeySet(values)
    shipped = pickle.loads(pickle.dumps(ks))
    assert ks.hits(column).to_pylist() == shipped.hits(column).to_pylist() == want
    assert (shipped._bits is None) is sparse
    lo, hi = sorted(values.drop_null().to_pylist())[:2]
    assert shipped.may_hold(lo + 1, hi - 1) is False and shipped.may_hold(lo, lo) is True
    assert pickle.loads(pickle.dumps(KeySet(pa.array(["b", "a"])))).hits(pa.array(["a", "c"])).to_pylist() == [
        True,
        False,
    ]


def test_a_dense_key_set_may_hold_by_its_bitmap_as_by_its_values():
    rng = np.random.default_rng(5)
    values = sorted(set(rng.integers(-40, 300, 25).tolist()))
    ks = KeySet(pa.array(values, pa.int64()))
    assert ks._bits is not None and ks._values is None
    for lo, hi in rng.integers(-60, 320, (400, 2)).tolist():
        assert ks.may_hold(lo, hi) is any(lo <= v <= hi for v in values), (lo, hi)


def test_key_sets_of_strings_and_no_values():
    ks = KeySet(pa.array(["b", "a", None]))
    assert ks.hits(pa.chunked_array([["a", None], ["c", "b"]])).to_pylist() == [True, False, False, True]
    empty = KeySet(pa.array([], pa.int64()))
    assert (empty.lo, empty.hi) == (None, None)
    assert empty.hits(pa.array([1, None], pa.int64())).to_pylist() == [False, False]


def test_a_key_set_may_hold_only_what_lies_between_its_values():
    ks = KeySet(pa.array([7, 550, 551, 900, None], pa.int64()))
    assert [ks.may_hold(lo, hi) for lo, hi in [(0, 99), (100, 549), (552, 899), (900, 2000), (901, 2000)]] == [
        True,
        False,
        False,
        True,
        False,
    ]
    assert ks.may_hold(-5, 6) is False and ks.may_hold(551, 551) is True
    assert ks.may_hold(None, None) is False  # no values there
    assert ks.may_hold(1.5, 7.5) is True  # bounds of another kind: the span only
    strings = KeySet(pa.array(["b", "x"]))
    assert strings.may_hold("c", "d") is True and strings.may_hold("y", "z") is False  # the span only
    assert KeySet(pa.array([], pa.int64())).may_hold(1, 2) is False


def test_read_positions_reads_the_rows_asked_across_row_groups(table):
    """``read_positions``: the columns of the rows at the positions given (a position twice, a
    row group skipped, the last row), a column the tablet lacks as NULL."""
    (st,) = table.snapshot().tablets.values()
    schema = SCHEMA.append(pa.field("later", pa.float64()))
    positions = np.array([3, 3, 150, 999], dtype=np.int64)
    got = tablet.read_positions(table.io, table.root, st.add, schema, ["s", "later"], positions)
    assert got.column("s").to_pylist() == ["s3", "s3", "s150", "s999"]
    assert got.column("later").to_pylist() == [None] * 4 and got.schema.field("later").type == pa.float64()
    assert tablet.read_positions(table.io, table.root, st.add, schema, ["s"], positions[:0]).num_rows == 0


def test_read_rows_at_gives_the_rows_in_the_order_asked(table):
    """``read_rows_at``: rows of several tablets (here one tablet named twice), interleaved and
    repeated, in the order asked, in one thread or several."""
    (st,) = table.snapshot().tablets.values()
    which = np.array([1, 0, 1, 0, 1], dtype=np.int64)
    positions = np.array([999, 3, 150, 3, 0], dtype=np.int64)
    for threads in (1, 2):
        got = tablet.read_rows_at(
            table.io, table.root, [st.add, st.add], which, positions, SCHEMA, ["s"], threads=threads
        )
        assert got.column("s").to_pylist() == ["s999", "s3", "s150", "s3", "s0"]
    # one tablet of ten row groups, more threads than tablets: read in runs side by side
    positions = np.array([999, 3, 450, 150, 3, 0, 451, 998], dtype=np.int64)
    for threads in (1, 3, 16):
        got = tablet.read_rows_at(
            table.io,
            table.root,
            [st.add],
            np.zeros(len(positions), np.int64),
            positions,
            SCHEMA,
            ["s"],
            threads=threads,
        )
        assert got.column("s").to_pylist() == [f"s{p}" for p in positions]
    assert tablet.read_rows_at(table.io, table.root, [st.add], which[:0], positions[:0], SCHEMA, ["s"]).num_rows == 0
