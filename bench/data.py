"""Deterministic benchmark data (BENCH.md): the target, the sources, and reference answers.

Needs only numpy and pyarrow, so both the project's .venv and bench/.venv-peers import it.
Files are written once per (rows, seed) under the cache dir and reused by later runs.

    target/part-NNNNN.parquet  id BIGINT (0..N-1 shuffled across files), k INT, v DOUBLE, s STRING, d DATE
    upsert.parquet             1% of N: half updates of existing ids (new v, s), half new ids
    upsert-small.parquet       0.1% of N: the first tenth of upsert.parquet's rows (a broadcast source)
    delete.parquet             10% of N, existing ids
    insert.parquet             1% of N, all new ids

The scale workload's data (`clustered=True`, directory N-clustered) is sorted instead: file i
holds the next ids in order, so each file (and each tablet or data file a system writes from them
in id order) covers one id range. Its only source, upsert.parquet, has SCALE_SOURCE_ROWS rows
whatever N: half updates of ids among the newest SCALE_WINDOW, half new ids after N (an incremental
model's usual change: recent rows revised, new rows appended), so a system whose MERGE reads only
what the source can touch takes the same time at any N.

`v` is a multiple of 1/64 below 2**14, so every sum of it is exact in float64 whatever the
order: sum(v) compares exactly across systems.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

DEFAULT_CACHE = "/tmp/tablets-bench/data"
ROWS_PER_FILE = 250_000  # and at least 4 files, so small targets are shuffled across files too
SCHEMA = pa.schema([("id", pa.int64()), ("k", pa.int32()), ("v", pa.float64()), ("s", pa.string()), ("d", pa.date32())])
COLUMNS = SCHEMA.names
# the same schema for Spark's readers: given, a Parquet read is planned without Spark's job that
# infers the schema from a footer (~25-40 ms), as a catalog table's read is
SPARK_DDL = "id BIGINT, k INT, v DOUBLE, s STRING, d DATE"
SCALE_SOURCE_ROWS = 10_000
SCALE_WINDOW = 50_000
SOURCES = {
    "scale": "upsert",
    "upsert": "upsert",
    "upsert-small": "upsert-small",
    "sync": "upsert",
    "delete-heavy": "delete",
    "insert-only": "insert",
    "no-op": "upsert",
    "degenerate": "upsert",
}


def _rows(rng: np.random.Generator, ids: np.ndarray) -> pa.Table:
    """Random k, v, s, d for the given ids."""
    n = len(ids)
    letters = rng.integers(ord("a"), ord("z") + 1, size=n * 20, dtype=np.uint8)
    offsets = pa.py_buffer(np.arange(0, 20 * n + 1, 20, dtype=np.int32))
    s = pa.StringArray.from_buffers(n, offsets, pa.py_buffer(letters))
    d = pa.array(rng.integers(18262, 18262 + 1461, size=n, dtype=np.int32), pa.int32()).cast(pa.date32())  # 2020-2023
    return pa.table(
        [
            pa.array(ids, pa.int64()),
            pa.array(rng.integers(0, 1000, size=n, dtype=np.int32)),
            pa.array(rng.integers(0, 2**20, size=n) / 64.0),
            s,
            d,
        ],
        schema=SCHEMA,
    )


def write_parts(table: pa.Table, directory: str) -> None:
    """``table`` as at least 4 Parquet files of at most ROWS_PER_FILE rows (the target's layout)."""
    os.makedirs(directory, exist_ok=True)
    per_file = min(ROWS_PER_FILE, -(-table.num_rows // 4))
    for i, start in enumerate(range(0, table.num_rows, per_file)):
        pq.write_table(table.slice(start, per_file), os.path.join(directory, f"part-{i:05d}.parquet"))


def generate(rows: int, seed: int = 42, cache: str = DEFAULT_CACHE, clustered: bool = False) -> str:
    """Write the data set for `rows` (once) and return its directory."""
    out = os.path.join(cache, f"{rows}" + ("-clustered" if clustered else "") + ("" if seed == 42 else f"-s{seed}"))
    if os.path.exists(os.path.join(out, "_SUCCESS")):
        _small_upsert(out)
        return out
    os.makedirs(os.path.join(out, "target"), exist_ok=True)
    rng = np.random.default_rng(seed)
    if clustered:
        _generate_clustered(rng, rows, out)
        open(os.path.join(out, "CLUSTERED"), "w").close()
        open(os.path.join(out, "_SUCCESS"), "w").close()
        return out
    target = _rows(rng, rng.permutation(rows).astype(np.int64))
    write_parts(target, os.path.join(out, "target"))
    m = max(2, rows // 100)
    updates = rng.choice(rows, m // 2, replace=False).astype(np.int64)
    upsert_ids = np.concatenate([updates, np.arange(rows, rows + m - m // 2, dtype=np.int64)])
    sources = {
        "upsert": rng.permutation(upsert_ids),
        "delete": rng.choice(rows, max(1, rows // 10), replace=False).astype(np.int64),
        "insert": np.arange(rows, rows + m, dtype=np.int64),
    }
    for name, ids in sources.items():
        pq.write_table(_rows(rng, ids), os.path.join(out, f"{name}.parquet"))
    _small_upsert(out)
    open(os.path.join(out, "_SUCCESS"), "w").close()
    return out


def _small_upsert(out: str) -> None:
    """upsert-small.parquet: the first tenth of upsert.parquet, made from it (no draw of the
    generator), so data sets cached before it existed get the same file as new ones."""
    small = os.path.join(out, "upsert-small.parquet")
    upsert = os.path.join(out, "upsert.parquet")
    if os.path.exists(small) or not os.path.exists(upsert):
        return
    t = pq.read_table(upsert)
    pq.write_table(t.slice(0, max(1, t.num_rows // 10)), small + ".tmp")
    os.replace(small + ".tmp", small)


def _generate_clustered(rng: np.random.Generator, rows: int, out: str) -> None:
    """The target in id order, one file at a time (100M rows never sit in memory at once)."""
    per_file = min(ROWS_PER_FILE, -(-rows // 4))
    for i, start in enumerate(range(0, rows, per_file)):
        ids = np.arange(start, min(rows, start + per_file), dtype=np.int64)
        pq.write_table(_rows(rng, ids), os.path.join(out, "target", f"part-{i:05d}.parquet"))
    m = min(SCALE_SOURCE_ROWS, rows)
    window = min(SCALE_WINDOW, rows)
    updates = rows - window + rng.choice(window, m // 2, replace=False).astype(np.int64)
    ids = np.concatenate([updates, np.arange(rows, rows + m - m // 2, dtype=np.int64)])
    pq.write_table(_rows(rng, rng.permutation(ids)), os.path.join(out, "upsert.parquet"))


def is_clustered(data_dir: str) -> bool:
    """The target was written in id order (the scale workload's data): systems load it in that order."""
    return os.path.exists(os.path.join(data_dir, "CLUSTERED"))


def paths(data_dir: str, workload: str) -> tuple[str, str]:
    """(target directory, source file) of a workload."""
    return os.path.join(data_dir, "target"), os.path.join(data_dir, f"{SOURCES[workload]}.parquet")


def normalize(table: pa.Table) -> pa.Table:
    """The table's columns in SCHEMA order and types (systems hand back large_string, timestamps...)."""
    return pa.table([table.column(c).cast(SCHEMA.field(c).type) for c in COLUMNS], schema=SCHEMA)


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MASK = (1 << 64) - 1
_SLICE = 1_000_000  # rows hashed at a time: a 100M-row table never sits in memory at once


def _mix(z: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer, elementwise on uint64 (wrapping arithmetic)."""
    z = z + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _string_hash(col: pa.Array) -> np.ndarray:
    """A 64-bit hash of each string: its bytes weighted by their position, and its length."""
    col = col.cast(pa.large_string())
    offsets = np.frombuffer(col.buffers()[1], dtype=np.int64)[col.offset : col.offset + len(col) + 1]
    buf = col.buffers()[2]
    raw = np.frombuffer(buf, dtype=np.uint8)[offsets[0] : offsets[-1]] if buf is not None else np.zeros(0, np.uint8)
    starts, lengths = offsets[:-1] - offsets[0], np.diff(offsets)
    position = np.arange(len(raw), dtype=np.int64) - np.repeat(starts, lengths)
    weighted = np.append(raw.astype(np.uint64) * _mix(position.astype(np.uint64)), np.uint64(0))
    sums = np.where(lengths > 0, np.add.reduceat(weighted, np.minimum(starts, len(raw))), np.uint64(0))
    return _mix(sums ^ lengths.astype(np.uint64))


def _column_hash(col: pa.Array) -> np.ndarray:
    """A 64-bit hash of each value of one SCHEMA column (NULL hashes to a constant)."""
    if pa.types.is_string(col.type):
        h = _string_hash(col)
    else:
        numeric = col.view(pa.int32()) if pa.types.is_date32(col.type) else col
        numeric = numeric.cast(pa.int64()) if pa.types.is_int32(numeric.type) else numeric
        h = _mix(numeric.fill_null(0).to_numpy(zero_copy_only=False).view(np.uint64))
    valid = col.is_valid().to_numpy(zero_copy_only=False)
    return np.where(valid, h, np.uint64(0x5BD1E995))


def _signed(x: int) -> int:
    return x - (1 << 64) if x >> 63 else x


class Fingerprint:
    """rows, sum(v), an order-free checksum of the ids, and an order-free digest of every row
    (a sum of 64-bit row hashes): fed in any order, in pieces, and merged across processes."""

    def __init__(self) -> None:
        self.rows, self.sum_v, self.id_sum, self.row_sum = 0, 0.0, 0, 0  # the sums modulo 2**64

    def add(self, table: pa.Table | pa.RecordBatch) -> Fingerprint:
        t = table if isinstance(table, pa.Table) else pa.Table.from_batches([table])
        t = normalize(t)
        for start in range(0, t.num_rows, _SLICE):
            part = t.slice(start, _SLICE).combine_chunks()
            cols = [
                part.column(c).chunk(0) if part.column(c).num_chunks else pa.array([], SCHEMA.field(c).type)
                for c in COLUMNS
            ]
            row = np.zeros(part.num_rows, dtype=np.uint64)
            for i, col in enumerate(cols):  # each column's hash mixed in at its own place
                row = _mix(row * np.uint64(31) + _column_hash(col) + np.uint64(i))
            self.rows += part.num_rows
            self.sum_v += float(pc.sum(part.column("v")).as_py() or 0.0)
            ids = _mix(cols[0].fill_null(0).to_numpy(zero_copy_only=False).view(np.uint64))
            self.id_sum = (self.id_sum + int(ids.sum(dtype=np.uint64))) & _MASK
            self.row_sum = (self.row_sum + int(row.sum(dtype=np.uint64))) & _MASK
        return self

    def partial(self) -> dict[str, int | float]:
        """The state, for merge() in another process (uint64s as signed int64s: Spark's LongType)."""
        return {
            "rows": self.rows,
            "sum_v": self.sum_v,
            "id_sum": _signed(self.id_sum),
            "row_sum": _signed(self.row_sum),
        }

    def merge(self, part: dict[str, int | float]) -> Fingerprint:
        self.rows += int(part["rows"])
        self.sum_v += float(part["sum_v"])
        self.id_sum = (self.id_sum + int(part["id_sum"])) & _MASK
        self.row_sum = (self.row_sum + int(part["row_sum"])) & _MASK
        return self

    def result(self) -> dict[str, object]:
        return {
            "rows": self.rows,
            "sum_v": self.sum_v,
            "id_sum": f"{self.id_sum:016x}",
            "digest": f"{self.row_sum:016x}",
        }


def fingerprint(tables: pa.Table | Iterable[pa.Table]) -> dict[str, object]:
    """The Fingerprint result of a table, or of the pieces of one (``expected_parts``)."""
    fp = Fingerprint()
    for t in [tables] if isinstance(tables, pa.Table) else tables:
        fp.add(t)
    return fp.result()


def expected_parts(data_dir: str, workload: str) -> Iterator[pa.Table]:
    """The final table after the workload's MERGE, computed one target file at a time (the source
    is at most 10% of the target and stays in memory, its ids sorted once and looked up by binary
    search: a hash join per file rebuilt the source's table 400 times at 100M): the reference answer."""
    tpath, spath = paths(data_dir, workload)
    s = pq.read_table(spath)
    order = np.argsort(s.column("id").to_numpy(), kind="stable")
    sorted_ids = s.column("id").to_numpy()[order]
    seen = np.zeros(s.num_rows, dtype=bool)  # source rows with a pair
    for name in sorted(os.listdir(tpath)):
        if not name.endswith(".parquet"):
            continue
        t = pq.read_table(os.path.join(tpath, name), schema=SCHEMA)
        if workload == "degenerate":
            yield t
            continue
        ids = t.column("id").to_numpy()
        pos = np.minimum(np.searchsorted(sorted_ids, ids), max(len(sorted_ids) - 1, 0))
        hit = (sorted_ids[pos] == ids) if len(sorted_ids) else np.zeros(len(ids), dtype=bool)
        kept = t.filter(pa.array(~hit))
        if workload == "sync":  # WHEN NOT MATCHED BY SOURCE AND t.id % 100 = 0 THEN DELETE
            kept = kept.filter(pa.array(kept.column("id").to_numpy() % 100 != 0))
        yield normalize(kept)
        if workload != "delete-heavy":
            rows = order[pos[hit]]  # the source row of each matched target row
            seen[rows] = True
            src = s.take(pa.array(rows))
            old = t.filter(pa.array(hit))
            cols = {"id": old, "k": old, "v": src, "s": src, "d": old}  # UPDATE SET v = s.v, s = s.s
            yield normalize(pa.table({c: side.column(c) for c, side in cols.items()}))
    if workload not in ("degenerate", "delete-heavy"):
        yield normalize(s.filter(pa.array(~seen)))


def reference(data_dir: str, workload: str) -> dict[str, object]:
    """``fingerprint(expected_parts(...))``, kept in the data set's directory once computed: at
    100M rows it takes minutes, and the data never changes."""
    path = os.path.join(data_dir, f"reference-{workload}.json")
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    fp = fingerprint(expected_parts(data_dir, workload))
    with open(path + ".tmp", "w") as f:
        json.dump(fp, f)
    os.replace(path + ".tmp", path)
    return fp


def expected(data_dir: str, workload: str) -> pa.Table:
    """``expected_parts`` as one table (small targets)."""
    return pa.concat_tables(list(expected_parts(data_dir, workload)))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--cache", default=DEFAULT_CACHE)
    ap.add_argument("--clustered", action="store_true", help="the scale workload's data: target in id order")
    args = ap.parse_args()
    print(generate(args.rows, args.seed, args.cache, args.clustered))
