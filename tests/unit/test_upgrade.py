"""A table written by the release before the Delta log was the commit point (format version 1,
``golden/table_v1``: versions in ``_log/``, its Delta log one version short as a crash left it)
opens, reads every version, and is moved to the Delta log by its first write, in one commit
(docs/FORMAT.md, "Tables of version 1")."""

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from support.delta_check import delta_read
from tablets.exceptions import FormatError
from tablets.storage import TabletTable, log

pytestmark = pytest.mark.unit

GOLDEN = Path(__file__).parent / "golden" / "table_v1"
EXPECTED = {int(v): [tuple(r) for r in rows] for v, rows in json.loads((GOLDEN / "expected.json").read_text()).items()}


def rows(t: pa.Table) -> list[tuple]:
    return sorted(zip(t.column("id").to_pylist(), t.column("v").to_pylist(), strict=True))


@pytest.fixture
def table(tmp_path) -> TabletTable:
    shutil.copytree(GOLDEN / "table", tmp_path / "t")
    return TabletTable(str(tmp_path / "t"))


def test_a_version_1_table_reads_every_version(table):
    assert log.is_legacy(table.io, table.root)
    assert table.version == 4
    for v, want in EXPECTED.items():
        assert rows(table.read(v)) == want, v
    assert table.snapshot().metadata.key_columns == ("id",)


def test_its_first_write_moves_it_in_one_commit(table):
    table.append(pa.table({"id": [10], "v": ["v10"], "w": pa.array([3], pa.int32())}))
    assert not log.is_legacy(table.io, table.root)
    moved = json.loads((Path(table.root) / "_log" / f"{5:020d}.json").read_text())
    assert moved == {"moved": {"to": "_delta_log"}}  # an earlier release stops here
    ops = [e.commit.operation for e in table.history()]
    assert ops[5:] == ["UPGRADE", "APPEND"]
    assert table.snapshot().metadata.key_columns == ("id",)  # the key, in the Delta log now
    for v, want in EXPECTED.items():  # the versions before the move, now read from the Delta log
        assert rows(table.read(v)) == want, v
        assert rows(delta_read(table.root, v).select(["id", "v"])) == want, v
    final = [*EXPECTED[4], (10, "v10")]
    assert rows(table.read()) == sorted(final)
    assert rows(delta_read(table.root).select(["id", "v"])) == sorted(final)


def test_two_histories_are_refused_and_nothing_is_written(table):
    """A Delta version of the earlier layout that _log never took in (another writer's, in the
    moment between the two logs): the move names it and writes nothing."""
    delta = Path(table.root) / "_delta_log"
    tablet = sorted((Path(table.root) / "tablets").glob("*.parquet"))[0]
    shutil.copy(tablet, Path(table.root) / "part-00000-other.parquet")
    stats = json.dumps({"numRecords": 8, "minValues": {}, "maxValues": {}, "nullCount": {}})
    add = {
        "path": "part-00000-other.parquet",
        "partitionValues": {},
        "size": tablet.stat().st_size,
        "modificationTime": 0,
        "dataChange": True,
        "stats": stats,
    }
    with open(delta / f"{3:020d}.json", "a") as f:  # another writer's rows, where _log has none
        f.write(json.dumps({"add": add}) + "\n")
    before = sorted(p.name for p in delta.iterdir())
    with pytest.raises(FormatError, match="two histories"):
        table.append(pa.table({"id": [10], "v": ["v10"], "w": pa.array([3], pa.int32())}))
    assert sorted(p.name for p in delta.iterdir()) == before
    assert log.is_legacy(table.io, table.root)
