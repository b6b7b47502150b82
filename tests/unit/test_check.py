"""``TabletTable.check`` (``CHECK TABLE t [REPAIR]``): every damage of the log, of the files
derived from it and of the files it references is reported, naming the file and the fix; a
healthy table reports nothing; ``repair`` rebuilds only what is derived from the log."""

import os

import pyarrow as pa
import pytest
from support.delta_check import delta_read
from tablets.storage import TabletTable, delta_checkpoint, log
from tablets.storage.fileio import join

pytestmark = pytest.mark.unit

SCHEMA = pa.schema([("id", pa.int64())])


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> str:
    """51 versions: checkpoints (tablets' and Delta's) at 50."""
    t = TabletTable.create(str(tmp_path_factory.mktemp("check") / "t"), SCHEMA)
    for i in range(51):
        t.append(pa.table({"id": [i]}, schema=SCHEMA))
    return t.root


@pytest.fixture
def table(pristine, tmp_path) -> TabletTable:
    for d, _, files in os.walk(pristine):
        for f in files:
            src = os.path.join(d, f)
            dst = os.path.join(tmp_path / "t", os.path.relpath(src, pristine))
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            with open(src, "rb") as a, open(dst, "wb") as b:
                b.write(a.read())
    return TabletTable(str(tmp_path / "t"))


def test_a_healthy_table_has_no_problems(table):
    assert table.check() == []
    assert table.check(repair=True) == []


def test_a_damaged_checkpoint_of_tablets_is_reported_and_rebuilt(table):
    path = log.checkpoint_path(table.root, 50)
    table.io.write(path, table.io.read(path)[:-10])
    (p,) = table.check()
    assert p.path == path and "not the state of version 50" in p.problem and not p.repaired
    (p,) = table.check(repair=True)
    assert p.repaired
    assert table.check() == []


def test_a_damaged_delta_checkpoint_is_reported_and_rebuilt(table):
    path = join(log.log_dir(table.root), delta_checkpoint.name(50))
    table.io.write(path, b"PAR1 not a checkpoint")
    (p,) = table.check()
    assert p.path == path and "Delta readers read it wrong" in p.problem
    table.check(repair=True)
    assert table.check() == []
    assert sorted(delta_read(table.root).column("id").to_pylist()) == list(range(51))


@pytest.mark.parametrize("damage", ["emptied", "garbled", "deleted"])
def test_damage_to_a_version_names_the_file(table, damage):
    path = log.version_path(table.root, 20)
    if damage == "emptied":
        table.io.write(path, b"")
    elif damage == "garbled":
        table.io.write(path, table.io.read(path)[:40] + b"\xff" + table.io.read(path)[41:])
    else:
        table.io.delete(path)
    problems = table.check(repair=True)
    assert len(problems) == 1 and not problems[0].repaired
    assert (f"{20:020d}.json" in problems[0].path) or ("version(s) 20" in problems[0].problem), problems
    assert table.io.exists(path) == (damage != "deleted")  # the log is never rewritten


def test_missing_and_changed_files_are_reported(table):
    snap = table.snapshot()
    a, b = list(snap.tablets.values())[:2]
    table.io.delete(join(table.root, a.add.path))
    table.io.write(join(table.root, b.add.path), b"short")
    problems = {p.path: p.problem for p in table.check()}
    assert "missing" in problems[join(table.root, a.add.path)]
    assert "5 bytes" in problems[join(table.root, b.add.path)]
