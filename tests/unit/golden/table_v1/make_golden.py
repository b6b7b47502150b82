"""Makes ``table/``: a tablet table of format version 1 (versions in ``_log/``, the Delta log a
derived copy), written by the release before the Delta log became the commit point (run with
that release's package on the path: ``git worktree add /tmp/v1 15ea98e`` and
``PYTHONPATH=/tmp/v1/adapter python make_golden.py``). Its Delta log lacks the newest version,
as a crash between the two logs left it. ``expected.json``: each version's rows."""

import json
import os
import shutil

import pyarrow as pa
from tablets.storage import RowLevelSink, TabletTable

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.join(here, "table")
shutil.rmtree(root, ignore_errors=True)
schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
t = TabletTable.create(root, schema, key_columns=["id"])
t.append(pa.table({"id": list(range(8)), "v": [f"v{i}" for i in range(8)]}, schema=schema))
snap = t.snapshot()
h = t.begin_delete()
sink = RowLevelSink(h)
(tid,) = snap.tablets
sink.delete([tid, tid], [1, 2])
t.finish(h, sink.finish())
t.add_columns([("w", "int")])
t.append(pa.table({"id": [8, 9], "v": ["v8", "v9"], "w": pa.array([1, 2], pa.int32())}))
expected = {
    v: sorted([r["id"], r["v"]] for r in t.read(v).select(["id", "v"]).to_pylist()) for v in range(t.version + 1)
}
os.remove(os.path.join(root, "_delta_log", f"{t.version:020d}.json"))  # a crash between the two logs
with open(os.path.join(here, "expected.json"), "w") as f:
    json.dump(expected, f, indent=1)
