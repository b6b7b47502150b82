"""The merge task (``tablets.engine.tasks.merge_task``) streams its partition: new rows are
written a tablet at a time while batches still arrive, and what it keeps to the end is row ids,
kinds and keys; its results are those of the whole partition at once."""

import os

import pyarrow as pa
import pytest
from tablets.engine.names import IMAGE_PREFIX, K_DELETE, K_INSERT, K_UPDATE, KIND, ROW, TID
from tablets.engine.tasks import merge_task
from tablets.storage import TabletTable, fragment_from_json
from tablets.storage.tablet import TABLET_DIR

pytestmark = pytest.mark.unit

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
IMAGES = [f"{IMAGE_PREFIX}0", f"{IMAGE_PREFIX}1"]


def _batch(kind: str, ids: range, tid: str | None = None) -> pa.RecordBatch:
    n = len(ids)
    return pa.RecordBatch.from_arrays(
        [
            pa.array([tid] * n, pa.string()),
            pa.array(list(ids) if tid else [None] * n, pa.int64()),
            pa.array(list(ids), pa.int64()),
            pa.array([f"new {i}" for i in ids]),
            pa.array([kind] * n),
        ],
        names=[TID, ROW, *IMAGES, KIND],
    )


def test_new_rows_are_written_while_the_partition_still_arrives(tmp_path):
    t = TabletTable.create(str(tmp_path / "t"), SCHEMA)
    t.append(pa.table({"id": list(range(20)), "v": ["old"] * 20}, schema=SCHEMA))
    (tid,) = t.snapshot().tablets
    handle = t.begin_delete("MERGE", target_tablet_rows=5)
    tablets_dir = os.path.join(t.root, TABLET_DIR)
    written_before_the_end = []

    def batches():
        yield _batch(K_UPDATE, range(0, 10), tid)  # ten updates: their old rows' ids, new images
        yield _batch(K_INSERT, range(100, 112))
        yield _batch(K_DELETE, range(10, 13), tid)
        written_before_the_end.append(len(os.listdir(tablets_dir)) - 1)  # (the table's own tablet)
        yield _batch(K_INSERT, range(200, 208))

    (result,) = list(merge_task(handle, ["id", "v"], IMAGES)(batches()))
    out = result.to_pylist()
    assert written_before_the_end == [4]  # 22 new rows so far: four full tablets of 5
    first = out[0]
    assert (first["n_delete"], first["n_update"], first["n_insert"], first["duplicates"]) == (3, 10, 20, 0)
    frags = [fragment_from_json(r["fragment"]) for r in out if r["fragment"]]
    t.finish(handle, frags)
    live = t.read()
    assert live.num_rows == 20 - 3 + 20
    assert sorted(st.add.rows for st in t.snapshot().tablets.values()) == [5] * 6 + [20]  # (the old one, its DV)


def test_a_row_modified_twice_is_reported_after_the_whole_partition(tmp_path):
    t = TabletTable.create(str(tmp_path / "t"), SCHEMA)
    t.append(pa.table({"id": list(range(5)), "v": ["old"] * 5}, schema=SCHEMA))
    (tid,) = t.snapshot().tablets
    handle = t.begin_delete("MERGE", target_tablet_rows=5)
    run = merge_task(handle, ["id", "v"], IMAGES)
    (result,) = list(run(iter([_batch(K_UPDATE, range(0, 3), tid), _batch(K_DELETE, range(2, 4), tid)])))
    assert result.to_pylist()[0]["duplicates"] == 1  # row 2: updated and deleted (the driver discards)


def test_rows_spark_left_to_compare_become_updates_or_unchanged_by_their_old_values(tmp_path, monkeypatch):
    """K_COMPARE rows (alike in the columns Spark's scan read): the task reads the left-out
    column for them, across batches and at the end, and writes only those that differ."""
    from tablets.engine import tasks
    from tablets.engine.names import K_COMPARE
    from tablets.engine.tasks import Deferred

    t = TabletTable.create(str(tmp_path / "t"), SCHEMA)
    t.append(pa.table({"id": list(range(6)), "v": ["new 0", "old", "new 2", None, "new 4", "old"]}, schema=SCHEMA))
    (tid,) = t.snapshot().tablets
    handle = t.begin_delete("MERGE", target_tablet_rows=100)
    monkeypatch.setattr(tasks, "COMPARE_BYTES", 1)  # every batch is read at once
    compare = Deferred((("v", IMAGES[1]),), (), {tid: t.snapshot().tablets[tid].add}, SCHEMA)
    run = merge_task(handle, ["id", "v"], IMAGES, compare=compare)
    # Spark's kind column may be NOT NULL (every CASE branch gives one): the tasks keep its field
    not_null = pa.schema([f.with_nullable(f.name != KIND) for f in _batch(K_INSERT, range(1)).schema])
    batches = [
        _batch(K_COMPARE, range(0, 3), tid).cast(not_null),
        _batch(K_INSERT, range(10, 12)).cast(not_null),
        _batch(K_COMPARE, range(3, 6), tid).cast(not_null),
    ]
    (result,) = list(run(iter(batches)))
    out = result.to_pylist()[0]
    # 0, 2, 4: alike ("new i"); 1, 5: "old" differs; 3: NULL differs from "new 3"
    assert (out["n_update"], out["n_unchanged"], out["n_insert"], out["n_delete"]) == (3, 3, 2, 0)
    t.finish(handle, [fragment_from_json(r["fragment"]) for r in result.to_pylist() if r["fragment"]])
    after = dict(zip(*t.read().sort_by("id").to_pydict().values(), strict=True))
    assert after == {0: "new 0", 1: "new 1", 2: "new 2", 3: "new 3", 4: "new 4", 5: "new 5", 10: "new 10", 11: "new 11"}


def test_updated_rows_get_the_columns_spark_left_out_from_their_old_rows(tmp_path, monkeypatch):
    """Late materialisation: an UPDATE that keeps ``v`` reaches the task with ``v``'s image NULL
    (Spark's scan did not read it); the task reads it for the updated rows alone, by row id,
    across batches, and an insert's ``v`` stays the source's."""
    from tablets.engine import tasks
    from tablets.engine.tasks import Deferred

    t = TabletTable.create(str(tmp_path / "t"), SCHEMA)
    t.append(pa.table({"id": list(range(6)), "v": [f"old {i}" if i != 3 else None for i in range(6)]}, schema=SCHEMA))
    (tid,) = t.snapshot().tablets
    handle = t.begin_delete("MERGE", target_tablet_rows=100)
    monkeypatch.setattr(tasks, "COMPARE_BYTES", 1)
    kept = Deferred((), (("v", IMAGES[1]),), {tid: t.snapshot().tablets[tid].add}, SCHEMA)

    def left_out(batch: pa.RecordBatch) -> pa.RecordBatch:
        return batch.set_column(3, IMAGES[1], pa.nulls(batch.num_rows, pa.string()))

    # ids 10..: the new key of each updated row (its image of id), so the rows tell apart
    moved = [left_out(_batch(K_UPDATE, range(4, 6), tid)), left_out(_batch(K_UPDATE, range(1, 4), tid))]
    moved = [b.set_column(2, IMAGES[0], pa.array([10 + r for r in b.column(1).to_pylist()], pa.int64())) for b in moved]
    batches = [moved[0], _batch(K_INSERT, range(20, 22)), moved[1]]
    (result,) = list(merge_task(handle, ["id", "v"], IMAGES, compare=kept)(iter(batches)))
    out = result.to_pylist()[0]
    assert (out["n_update"], out["n_insert"]) == (5, 2)
    t.finish(handle, [fragment_from_json(r["fragment"]) for r in result.to_pylist() if r["fragment"]])
    after = dict(zip(*t.read().sort_by("id").to_pydict().values(), strict=True))
    assert after == {
        0: "old 0",
        **{10 + i: (f"old {i}" if i != 3 else None) for i in range(1, 6)},
        20: "new 20",
        21: "new 21",
    }
