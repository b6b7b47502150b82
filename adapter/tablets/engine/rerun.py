"""A MERGE run again with the same rows: recognised without reading the target.

dbt runs a model again with unchanged input (a retry, a schedule with no new data, ``dbt build``
twice): the same statement merges the same rows into the table it just produced. For a
statement that is idempotent by its shape, that run changes nothing, whatever the target holds.
The content check (``driver_plan.changes_nothing``) finds that out too, but only by reading every
target row that pairs; on a big target that is a scan of it.

So a MERGE's commit records a digest of the statement and its source rows (``SOURCE_DIGEST`` in
its parameters). A later MERGE writes nothing and reads no tablet when all of these hold:
- its statement is idempotent by its shape (``idempotent``, below);
- its digest (SHA-256 of the plan, the source's type and its rows in key order, Arrow IPC; of a
  source too big to collect, the row count and sums of each row's hashes, taken by Spark:
  ``row_hashes``) equals the one the table's latest commit recorded, and that commit was made on
  the version before it (not rebased over a concurrent commit), so the table is exactly what that
  statement produced;
- the source's keys are non-NULL and unique (checked on its rows; by Spark, for a source it keeps).

Why that is a no-op. ON is only ``t.k = s.k`` equalities and the source's keys are unique and
non-NULL. After the first run, the target rows whose key is in the source are the ones it matched
(updated to ``f(s, t)`` or left alone) and the ones it inserted (``g(s)``). In the second run each
pairs with the same ``s`` again, as the key columns copy ``s.k`` or keep ``t.k``. Every value is a
copy of a source column of the same type, the row's own value or NULL, and an UPDATE copies a
column as the INSERT does, so ``f(s, f(s, t)) = f(s, t)`` and ``f(s, g(s)) = g(s)``. A source row
left without a pair had no INSERT to act on it, and still has none. The only BY SOURCE action is
DELETE: the first run deleted every row without a pair, and every row left has one. No clause has
a condition, so nothing depends on values that change. Identical bytes hashed mean identical rows
(up to a SHA-256 collision; for Spark's digest, up to a collision of the sums of two 64-bit hashes
of every row); other rows only miss the shortcut, and the content check runs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from tablets.engine.plan import Plan, source_column
from tablets.spec import ActionKind, Category

SOURCE_DIGEST = "source_digest"  # the commit parameter
# key types whose equality in Spark's join is the bytes' equality that Arrow's group-by tests
# (floats: -0.0 = 0.0 and NaN = NaN in a join; collated strings: not byte equality)
_KEY_TYPES = (
    "tinyint",
    "smallint",
    "int",
    "bigint",
    "string",
    "date",
    "timestamp",
    "timestamp_ntz",
    "boolean",
    "binary",
)


def _key_type(spark: str) -> bool:
    return spark in _KEY_TYPES or spark.startswith("decimal(")


def idempotent(plan: Plan, source_types: Mapping[str, str]) -> dict[str, str] | None:
    """The source column of each join key (by target column) when the statement run twice with
    the same source changes nothing the second time (the module's argument); else None.
    ``source_types``: the source's columns and their Spark types."""
    if not plan.on_is_keys or plan.join is None:
        return None
    types = {c: t.lower() for c, t in plan.column_types}
    stypes = {c: t.lower() for c, t in source_types.items()}
    names = {c.lower(): c for c in source_types}
    keys: dict[str, str] = {}
    for col, expr in plan.join_keys:
        name = names.get((source_column(plan.spec, expr) or "").lower())
        if name is None or not _key_type(types[col]) or stypes[name] != types[col]:
            return None
        keys[col] = name
    update = insert = None
    for b in plan.branches:
        action, category = b.clause.action, b.clause.category
        if b.condition is not None:
            return None
        if action is ActionKind.DO_NOTHING:
            continue
        if category is Category.MATCHED and action is ActionKind.UPDATE:
            update = b.copies
        elif category is Category.NOT_MATCHED and action is ActionKind.INSERT:
            insert = b.copies
        elif not (category is Category.NOT_MATCHED_BY_SOURCE and action is ActionKind.DELETE):
            return None  # a matched DELETE, a REFUSE (a key violation the run must raise), BY SOURCE UPDATE
    for i, (col, spark) in enumerate(plan.column_types):
        u = update[i] if update is not None else None
        g = insert[i] if insert is not None else None
        for value in (u, g):
            if value is None:
                continue
            side, name = value
            if side == "expr" or (side == "t" and name != col) or (side == "s" and stypes.get(name) != spark.lower()):
                return None
        if col in keys:  # the row pairs with its source row again
            if (u is not None and u not in (("t", col), ("s", keys[col]))) or (g is not None and g != ("s", keys[col])):
                return None
        elif u is not None and g is not None and u != ("t", col) and u != g:
            return None
    return keys


def digest(plan: Plan, data: pa.Table, source_type: str, keys: Mapping[str, str]) -> str | None:
    """SHA-256 of the statement's plan, the source's Spark type and its rows ordered by the join
    keys' source columns (``idempotent``'s); None where Arrow cannot order them."""
    names = sorted(set(keys.values()))
    try:
        ordered = data.sort_by([(n, "ascending") for n in names]).combine_chunks()
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, KeyError):
        return None
    h = hashlib.sha256()
    h.update(_statement(plan, source_type))
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, ordered.schema) as writer:
        writer.write_table(ordered)
    h.update(sink.getvalue())
    return h.hexdigest()


# A source kept in Spark (too big to collect) is digested where it is read: each row hashed twice
# in Spark (``row_hashes``: two 64-bit xxHash64 chains over its values, from two starts), and the
# hashes summed in 21-bit parts by the aggregate that already counts the source (``intake``). The
# sums do not depend on the rows' order, and are exact in a BIGINT up to 2^41 rows. (SHA-256 of each
# row's exact text, tried first, made the upsert's source phase twice as long: docs/SCALE.md.)
HASH_PARTS = 6
_PART_BITS = 21
_HASHED = frozenset(
    {
        "tinyint",
        "smallint",
        "int",
        "bigint",
        "boolean",
        "float",
        "double",
        "string",
        "binary",
        "date",
        "timestamp",
        "timestamp_ntz",
    }
)


def row_hashes(fields: Sequence[tuple[str, str]]) -> tuple[str, str] | None:
    """Two Spark SQL hashes of a row of ``fields`` ((quoted column, Spark type)) that differ for
    different rows (up to a collision of both): each value with a flag of its NULL (Spark's hash
    skips a NULL), and of a float's -0.0 (Spark hashes it as 0.0). Instants and wall times hash
    as their microseconds, whatever the session's zone. None for a type not listed here
    (an array, say: Spark's hash skips its NULL elements)."""
    args = []
    for column, spark in fields:
        spark = spark.lower()
        if spark not in _HASHED and not spark.startswith("decimal("):
            return None
        args += [f"{column} IS NULL", column]
        if spark in ("float", "double"):  # a zero's sign (Spark's arithmetic would normalise it)
            args.append(f"({column} = 0 AND startswith(CAST({column} AS STRING), '-'))")
    if not args:
        return None
    values = ", ".join(args)
    return f"xxhash64({values})", f"xxhash64('tablets', {values})"


def hash_parts(hashes: Sequence[str]) -> list[str]:
    """Spark SQL aggregates of the rows' hashes (``row_hashes``'s columns), in 21-bit parts."""
    mask = (1 << _PART_BITS) - 1
    out = []
    for h in hashes:
        out += [
            f"coalesce(sum({h} & {mask}), 0)",
            f"coalesce(sum(shiftright({h}, {_PART_BITS}) & {mask}), 0)",
            f"coalesce(sum(shiftrightunsigned({h}, {2 * _PART_BITS})), 0)",
        ]
    return out


def spark_digest(plan: Plan, source_type: str, rows: int, sums: Sequence[object]) -> str:
    """The digest of a source digested in Spark: the statement's plan, the source's type, its row
    count and its hashes' sums (``hash_parts``), SHA-256'd. Not comparable with ``digest``'s: a re-run
    whose source crosses the size the driver collects misses the shortcut, and reads the target."""
    h = hashlib.sha256(b"spark-rows\n")
    h.update(_statement(plan, source_type))
    h.update(repr((rows, [str(s) for s in sums])).encode())
    return h.hexdigest()


def _statement(plan: Plan, source_type: str) -> bytes:
    return repr(
        (plan.on, plan.branches, plan.column_types, plan.key_columns, plan.spec.conflict_keys, source_type)
    ).encode()


def unique_keys(data: pa.Table, keys: Mapping[str, str]) -> bool:
    """No source key is NULL and no two source rows share one."""
    names = sorted(set(keys.values()))
    if any(data.column(n).null_count for n in names):
        return False
    if len(names) == 1:
        return pc.count_distinct(data.column(names[0])).as_py() == data.num_rows
    return data.group_by(names).aggregate([]).num_rows == data.num_rows
