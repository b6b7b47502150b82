"""A tablet table read as a Delta table by the real readers that prove it opens for other engines
(docs/FORMAT.md, "A Delta table at its root"): delta-rs (``deltalake``), Polars and DuckDB's delta
extension (``duckdb_delta``).

``assert_delta_agrees(db_or_path, table)`` reads every version (or the ones given) with the
tablets store and with each reader (delta-rs through its DataFusion query engine, which applies
deletion vectors), and compares the live rows as multisets; it also compares the versions that
delta-rs' ``history()`` lists with ours. Other suites call it on any
table they made; on an object store it passes delta-rs the ``AWS_*`` variables the tests' S3
server set.
"""

from __future__ import annotations

import os
from collections import Counter

import pyarrow as pa

from support.differential import canon
from support.duckdb_delta import duckdb_read

_S3_KEYS = ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_ALLOW_HTTP")


def storage_options(root: str) -> dict[str, str] | None:
    """delta-rs' options to reach ``root`` (None on local disk)."""
    if not root.startswith("s3://"):
        return None
    opts = {k: os.environ[k] for k in _S3_KEYS if k in os.environ}
    opts.setdefault("AWS_ALLOW_HTTP", "true")
    return opts


def delta_read(root: str, version: int | None = None) -> pa.Table:
    """The live rows of ``root`` at ``version`` as delta-rs reads them (``to_pyarrow_table``
    refuses deletion vectors; the query engine applies them)."""
    from deltalake import DeltaTable, QueryBuilder

    dt = DeltaTable(root, version=version, storage_options=storage_options(root))
    got = QueryBuilder().register("t", dt).execute("SELECT * FROM t").read_all()
    # delta-rs gives string views (nested ones too); compare values, not layouts
    return _plain_table(pa.table(got))


def polars_read(root: str, version: int | None = None) -> pa.Table:
    """The live rows of ``root`` at ``version`` as Polars' Delta reader reads them."""
    import polars as pl

    return _plain_table(pl.read_delta(root, version=version, storage_options=storage_options(root)).to_arrow())


def polars_reads(store, version: int) -> bool:
    """Whether Polars can read ``version``: not a column-mapped table (Polars refuses them), not
    a shallow clone (``names_files_elsewhere``), and every file with a deletion vector one
    tablets wrote (a vector on a file whose ``add`` has no ``numRecords``, as the tests'
    hand-made versions of other writers, is refused by Polars' planner)."""
    snap = store.snapshot(version)
    return (
        snap.metadata.mapping.identity
        and not names_files_elsewhere(store, version)
        and all(st.add.txid for st in snap.tablets.values() if st.dv is not None)
    )


def names_files_elsewhere(store, version: int) -> bool:
    """Whether ``version`` names a file outside the table by an absolute URI (a shallow clone):
    delta-rs' ``file_uris()`` (which Polars reads through, delta-io/delta-rs#865) and DuckDB 1.4's
    delta extension join such a URI under the table root, so neither reads a clone yet
    (``test_delta.py`` holds both limits)."""
    return any("://" in st.add.path or st.add.path.startswith("/") for st in store.snapshot(version).tablets.values())


def _plain_table(table: pa.Table) -> pa.Table:
    return table.cast(pa.schema([f.with_type(_plain(f.type)) for f in table.schema]))


def _plain(t: pa.DataType) -> pa.DataType:
    if pa.types.is_string_view(t) or pa.types.is_large_string(t):
        return pa.string()
    if pa.types.is_binary_view(t) or pa.types.is_large_binary(t):
        return pa.binary()
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t):
        return pa.list_(t.value_field.with_type(_plain(t.value_type)))
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_plain(f.type)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(_plain(t.key_type), _plain(t.item_type))
    return t


def _root_and_store(db_or_path, table: str | None):
    from tablets.storage import TabletTable

    if isinstance(db_or_path, str) and table is None:
        store = TabletTable(db_or_path)
    elif isinstance(db_or_path, TabletTable):
        store = db_or_path
    else:
        store = db_or_path.table_of(table)
    return store.root, store


def _rows(table: pa.Table) -> tuple[tuple[str, ...], Counter]:
    if table.num_columns == 0:
        return (), Counter()
    return canon(table)


def assert_delta_agrees(db_or_path, table: str | None = None, versions=None) -> None:
    """delta-rs, Polars and DuckDB read the same live rows as tablets at every version of the table
    (``db``, a ``tablets.Database``, with a table name; or a table root; or a ``TabletTable``),
    and delta-rs' ``history()`` lists the same versions. (Polars where it reads the version:
    ``polars_reads``; DuckDB where it is not a clone's: ``names_files_elsewhere``.)"""
    from deltalake import DeltaTable

    root, store = _root_and_store(db_or_path, table)
    history = [h.version for h in store.history()]
    theirs = sorted(h["version"] for h in DeltaTable(root, storage_options=storage_options(root)).history())
    assert theirs == history, f"delta-rs history {theirs} != tablets history {history}"
    for v in history if versions is None else versions:
        ours = _rows(store.read(v))
        got = _rows(delta_read(root, v))
        assert got[0] == ours[0], f"version {v}: delta-rs columns {got[0]}, tablets {ours[0]}"
        assert got[1] == ours[1], (
            f"version {v}: delta-rs rows {sorted(got[1].items(), key=repr)[:10]} != tablets {sorted(ours[1].items(), key=repr)[:10]}"
        )
        if polars_reads(store, v):
            pl_rows = _rows(polars_read(root, v))
            assert pl_rows == ours, f"version {v}: Polars rows {sorted(pl_rows[1].items(), key=repr)[:10]} != tablets'"
        if not names_files_elsewhere(store, v):
            dd_rows = _rows(_plain_table(duckdb_read(root, v, storage_options(root))))
            assert dd_rows == ours, (
                f"version {v}: DuckDB columns {dd_rows[0]} rows {sorted(dd_rows[1].items(), key=repr)[:10]} != tablets' {ours[0]} {sorted(ours[1].items(), key=repr)[:10]}"
            )


def delta_rs_append(root: str, data: pa.Table) -> None:
    """``write_deltalake(root, data, mode='append')`` in a process of its own, as another engine
    would append to the table (its rows passed as an Arrow IPC stream on stdin)."""
    import json
    import subprocess
    import sys

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, data.schema) as w:
        w.write_table(data)
    code = (
        "import json, sys, pyarrow as pa\n"
        "from deltalake import write_deltalake\n"
        "data = pa.ipc.open_stream(sys.stdin.buffer.read()).read_all()\n"
        "write_deltalake(sys.argv[1], data, mode='append', storage_options=json.loads(sys.argv[2]) or None)\n"
    )
    opts = json.dumps(storage_options(root) or {})
    subprocess.run(
        [sys.executable, "-c", code, root, opts], input=sink.getvalue().to_pybytes(), check=True, timeout=120
    )
