"""Writes the golden table of a log from before column ids (docs/FORMAT.md, "Column mapping"),
with the code of that time: run it once against a checkout of commit 5e3b89c's ``adapter``
(``git archive 5e3b89c adapter | tar -x -C /tmp/old``) as ``python make_golden.py /tmp/old/adapter``.

The table: ``id BIGINT`` (key), ``c INT``, ``v STRING``; version 1 appends ids 1, 2; version 2
appends id 3; version 3 deletes id 2 (a deletion vector); version 4 drops ``v`` (dbt's
sync_all_columns, ``set_schema``). Its tablets keep ``v``'s values, which the code of that time
would have shown again for a ``v`` added back."""

import os
import shutil
import sys

if __name__ == "__main__":
    sys.path.insert(0, sys.argv[1])
    import pyarrow as pa
    from tablets.storage import RowLevelSink, TabletTable

    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "table")
    shutil.rmtree(here, ignore_errors=True)
    schema = pa.schema([("id", pa.int64()), ("c", pa.int32()), ("v", pa.string())])
    t = TabletTable.create(here, schema, key_columns=["id"])
    t.append(pa.table({"id": [1, 2], "c": pa.array([10, 20], pa.int32()), "v": ["a", "b"]}, schema=schema))
    t.append(pa.table({"id": [3], "c": pa.array([30], pa.int32()), "v": ["c"]}, schema=schema))
    first = next(iter(t.snapshot().tablets))
    h = t.begin_delete()
    sink = RowLevelSink(h)
    sink.delete([first], [1])
    t.finish(h, sink.finish())
    t.set_schema([("id", "bigint", True), ("c", "int", True)])
