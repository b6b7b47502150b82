"""Differential tests: our MERGE against DuckDB's MERGE INTO on randomized tables and
statements (all categories, actions, conditions; NULLs and duplicate keys). The final tables
must be equal as multisets, and when DuckDB refuses (a target row modified twice) we refuse too.

Sources are local relations (as a small model's rows are); every third case turns broadcasting
off, which takes the cached source path. Every case runs on local disk (Spark's native Parquet
scan) on both plans, the driver's (which selects, and where it can merges, the target rows on
the driver) and Spark's (``spark.tablets.merge.driverScanBytes=0``); and in a bucket of a real
S3-compatible server, which Spark here cannot read (no hadoop-aws), so the engine scans the
tablets with its own Arrow reader in Python tasks: a third of the cases (each with
TABLETS_SLOW=1), half of those on each plan. The generated harness
(test_differential_generated.py) covers what these fixed shapes do not.

TABLETS_DIFF_CASES=2000 runs more cases (opt-in).
"""

import datetime
import decimal
import os
import random
from collections import Counter

import duckdb
import pyarrow as pa
import pytest
from support.conf import LOS_ANGELES, settings
from tablets.engine.executor import MergeOptions, execute
from tablets.engine.route import DRIVER_SCAN_CONF
from tablets.exceptions import CardinalityViolation
from tablets.sql import parse_statement
from tablets.storage import RowLevelSink, TabletTable

pytestmark = pytest.mark.spark

CASES = int(os.environ.get("TABLETS_DIFF_CASES", "120"))
IN_BUCKET_SHARE = 1 / 3  # the bucket's reader is one path for every shape: a third of the cases there


def places(cases: range) -> list[tuple[int, str]]:
    """Every case on local disk; a third of them also in the bucket, drawn by a seed of their own
    (every residue of the cases' ``case % n`` choices is among them), all with TABLETS_SLOW=1."""
    share = 1.0 if os.environ.get("TABLETS_SLOW") else IN_BUCKET_SHARE
    drawn = [c for c in cases if random.Random(f"bucket {cases.stop} {c}").random() < share]
    return [(c, "local") for c in cases] + [(c, "s3") for c in drawn]


SCHEMA = pa.schema([("k", pa.int32()), ("a", pa.int32()), ("b", pa.string())])

COND = {
    "MATCHED": [
        "s.a > 3",
        "t.a < 5",
        "t.b IS NULL",
        "s.b = 'x'",
        "(s.a + t.a) % 2 = 0",
        "t.a = s.a",
        "s.a IS NOT NULL",
    ],
    "NOT MATCHED": ["s.a > 3", "s.b IS NULL", "s.b <> 'y'", "s.a % 2 = 1", "s.k IS NULL"],
    "NOT MATCHED BY SOURCE": ["t.a > 4", "t.b = 'x'", "t.b IS NULL", "t.a % 3 = 0"],
}
ACTIONS = {
    "MATCHED": [
        "UPDATE SET a = s.a + 1",
        "UPDATE SET b = s.b, a = t.a",
        "UPDATE SET a = t.a * 2, b = concat(t.b, s.b)",
        "DELETE",
        "DO NOTHING",
        "UPDATE SET a = s.a, b = s.b",
    ],
    "NOT MATCHED": [
        "INSERT VALUES (s.k, s.a, s.b)",
        "INSERT (k, a) VALUES (s.k, s.a * 10)",
        "INSERT (b, k) VALUES ('new', s.k)",
        "DO NOTHING",
    ],
    "NOT MATCHED BY SOURCE": ["UPDATE SET a = t.a - 1", "UPDATE SET b = 'gone'", "DELETE", "DO NOTHING"],
}


def _rows(rng: random.Random, n: int, keys: int) -> list[tuple]:
    def maybe(v):
        return None if rng.random() < 0.15 else v

    return [(maybe(rng.randrange(keys)), maybe(rng.randrange(10)), maybe(rng.choice("xyz"))) for _ in range(n)]


def _statement(rng: random.Random, on: str | None = None) -> str:
    cats = [c for c in COND if rng.random() < 0.6] or ["MATCHED"]
    queues = []
    for cat in cats:
        n = rng.randint(1, 3)
        clauses = []
        for i in range(n):
            unconditional = i == n - 1 and rng.random() < 0.4  # only the last may lack a condition
            cond = "" if unconditional else f" AND {rng.choice(COND[cat])}"
            clauses.append(f"WHEN {cat}{cond} THEN {rng.choice(ACTIONS[cat])}")
        queues.append(clauses)
    ordered = []  # interleave categories at random, keeping the order within each
    while any(queues):
        q = rng.choice([q for q in queues if q])
        ordered.append(q.pop(0))
    on = on or rng.choice(["t.k = s.k", "t.k = s.k", "t.k = s.k AND t.b = s.b", "t.k <=> s.k"])
    return f"MERGE INTO target t USING source s ON {on} " + " ".join(ordered)


def _duckdb(target, source, stmt):
    con = duckdb.connect()
    con.execute("CREATE TABLE target (k INTEGER, a INTEGER, b VARCHAR)")
    con.execute("CREATE TABLE source (k INTEGER, a INTEGER, b VARCHAR)")
    if target:
        con.executemany("INSERT INTO target VALUES (?, ?, ?)", target)
    if source:
        con.executemany("INSERT INTO source VALUES (?, ?, ?)", source)
    duck_stmt = stmt.replace("<=>", "IS NOT DISTINCT FROM").replace("concat(t.b, s.b)", "t.b || s.b")
    try:
        con.execute(duck_stmt)
    except duckdb.Error as e:
        if "more than once" in str(e):
            return "cardinality"
        raise
    return Counter(con.execute("SELECT k, a, b FROM target").fetchall())


def _ours(spark, root, target, ghosts, source, stmt, skip_unchanged, metrics=None, schema=SCHEMA):
    table = TabletTable.create(root, schema)
    half, g = len(target) // 2, len(ghosts) // 2
    dead_rows = []  # (tablet id, row numbers) of the ghosts: the last rows of their tablets
    for chunk, dead in ((target[:half], ghosts[:g]), (target[half:], ghosts[g:])):  # two tablets
        if chunk or dead:
            before = set(table.snapshot().tablets)
            rows = [dict(zip(schema.names, r, strict=True)) for r in chunk + dead]
            table.append(pa.Table.from_pylist(rows, schema=schema))
            (tid,) = set(table.snapshot().tablets) - before
            dead_rows.append((tid, list(range(len(chunk), len(chunk) + len(dead)))))
    if ghosts:  # delete them: the merge reads a target with deletion vectors
        handle = table.begin_delete()
        sink = RowLevelSink(handle)
        for tid, positions in dead_rows:
            sink.delete([tid] * len(positions), positions)
        table.finish(handle, sink.finish())
    # from Arrow: a local relation, as a small model's rows are (a Python list is an RDD of
    # unknown size, which always takes the cached path)
    src = (
        None
        if source is None
        else spark.createDataFrame(
            pa.Table.from_pylist([dict(zip(schema.names, r, strict=True)) for r in source], schema=schema)
        )
    )
    before = table.version
    try:
        m = execute(spark, table, parse_statement(stmt), src, MergeOptions(skip_unchanged=skip_unchanged))
        if metrics is not None:
            metrics.append(m)
    except CardinalityViolation:
        assert table.version == before  # nothing committed
        return "cardinality"
    return Counter(tuple(r.values()) for r in table.read().to_pylist())


@pytest.mark.parametrize(("case", "where"), places(range(CASES)))
def test_merge_matches_duckdb(spark, tmp_path, request, case, where):
    rng = random.Random(case)
    target = _rows(rng, rng.randint(0, 9), 6)
    source = _rows(rng, rng.randint(0, 7), 6)
    stmt = _statement(rng)
    ghosts = _rows(rng, rng.randint(0, 3), 6)  # deleted before the merge: they must never match
    expected = _duckdb(target, source, stmt)
    # every third case without broadcasting the source: the shuffle join plan
    conf = {"spark.sql.autoBroadcastJoinThreshold": "-1"} if case % 3 == 1 else {}
    # on local disk each case on both plans (the driver's, and Spark's even where the driver
    # could select the target rows); in the bucket half the cases on each
    plans = ["driver", "spark"] if where == "local" else [("driver", "spark")[(case // 2) % 2]]
    for plan in plans:
        with settings(spark, {**conf, **({DRIVER_SCAN_CONF: "0"} if plan == "spark" else {})}):
            root = str(tmp_path / f"t_{plan}") if where == "local" else request.getfixturevalue("s3_server").location()
            got = _ours(spark, root, target, ghosts, source, stmt, skip_unchanged=case % 2 == 0)
        assert got == expected, f"{plan} plan: {stmt}\ntarget={target}\nghosts={ghosts}\nsource={source}"


@pytest.mark.parametrize(("case", "where"), places(range(CASES // 6)))
def test_merge_on_false_matches_duckdb(spark, tmp_path, request, case, where):
    """ON FALSE (dbt's microbatch and replace_where): every row unmatched, planned without a join."""
    rng = random.Random(10_000 + case)
    target = _rows(rng, rng.randint(0, 9), 6)
    source = _rows(rng, rng.randint(0, 7), 6)
    stmt = _statement(rng, on=rng.choice(["FALSE", "1 = 0"]))
    ghosts = _rows(rng, rng.randint(0, 3), 6)
    expected = _duckdb(target, source, stmt)
    if case % 2 == 1:
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    try:
        root = str(tmp_path / "t") if where == "local" else request.getfixturevalue("s3_server").location()
        got = _ours(spark, root, target, ghosts, source, stmt, skip_unchanged=case % 3 == 0)
    finally:
        spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")
    assert got == expected, f"{stmt}\ntarget={target}\nghosts={ghosts}\nsource={source}"


PLAIN = {  # unconditional clauses of plain column copies: the driver classifies and writes them
    "MATCHED": [
        "UPDATE SET a = s.a, b = s.b",
        "UPDATE SET b = s.b, a = t.a",
        "UPDATE SET *",
        "UPDATE SET a = NULL",
        "DELETE",
        None,
    ],
    "NOT MATCHED": ["INSERT *", "INSERT (k, a) VALUES (s.k, s.a)", "INSERT VALUES (s.k, s.a, s.b)", None],
}


@pytest.mark.parametrize(("case", "where"), places(range(CASES // 3)))
def test_plain_merges_on_the_driver_match_duckdb(spark, tmp_path, request, case, where):
    """Statements the driver runs alone (``driver_plan.classify_on_driver``): ON the key, unconditional
    clauses that copy columns; duplicate and NULL keys on both sides, deleted target rows."""
    rng = random.Random(20_000 + case)
    target = _rows(rng, rng.randint(0, 9), 6)
    source = _rows(rng, rng.randint(0, 7), 6)
    clauses = [f"WHEN {cat} THEN {a}" for cat, actions in PLAIN.items() if (a := rng.choice(actions))]
    stmt = "MERGE INTO target t USING source s ON t.k = s.k " + " ".join(clauses or ["WHEN MATCHED THEN DELETE"])
    metrics = _driver_matches_duckdb(spark, tmp_path, request, rng, target, source, stmt, where, case)
    assert all(m.merged_on_driver or m.source_rows == 0 for m in metrics), stmt


def _driver_matches_duckdb(spark, tmp_path, request, rng, target, source, stmt, where, case):
    """Our result of ``stmt`` is DuckDB's (``UPDATE SET *`` spelled out for it); our metrics."""
    ghosts = _rows(rng, rng.randint(0, 3), 6)
    expected = _duckdb(target, source, stmt.replace("UPDATE SET *", "UPDATE SET k = s.k, a = s.a, b = s.b"))
    root = str(tmp_path / "t") if where == "local" else request.getfixturevalue("s3_server").location()
    metrics = []
    got = _ours(spark, root, target, ghosts, source, stmt, skip_unchanged=case % 2 == 0, metrics=metrics)
    assert got == expected, f"{stmt}\ntarget={target}\nghosts={ghosts}\nsource={source}"
    return metrics


BY_SOURCE = {  # conditions the driver evaluates in Arrow (engine.arrow_eval), and actions it applies
    "cond": [
        "t.a > 4",
        "t.b = 'x'",
        "t.b IS NULL",
        "t.a % 3 = 0",
        "t.a IN (1, 2, NULL)",
        "NOT (t.a BETWEEN 2 AND 5)",
        "t.k + t.a > 6 OR t.b <> 'y'",
        "t.a <=> t.k",
        "t.a * -2 < -4 AND t.b IS NOT NULL",
        "t.k IS NULL",
        None,
    ],
    "action": ["DELETE", "DELETE", "DO NOTHING", "UPDATE SET a = NULL", "UPDATE SET a = t.k, b = t.b"],
}


@pytest.mark.parametrize(("case", "where"), places(range(CASES // 3)))
def test_by_source_merges_on_the_driver_match_duckdb(spark, tmp_path, request, case, where):
    """Plain statements with BY SOURCE clauses (dbt's sync, a soft delete): the driver reads the
    key and condition columns of every tablet and classifies the rows without a pair itself."""
    rng = random.Random(30_000 + case)
    target = _rows(rng, rng.randint(0, 9), 6)
    source = _rows(rng, rng.randint(0, 7), 6)
    clauses = [f"WHEN {cat} THEN {a}" for cat, actions in PLAIN.items() if (a := rng.choice(actions))]
    for i in range(n := rng.randint(1, 3)):
        cond = rng.choice(BY_SOURCE["cond"][:-1] if i < n - 1 else BY_SOURCE["cond"])
        clauses.append(
            f"WHEN NOT MATCHED BY SOURCE{f' AND {cond}' if cond else ''} THEN {rng.choice(BY_SOURCE['action'])}"
        )
        if cond is None:
            break
    stmt = "MERGE INTO target t USING source s ON t.k = s.k " + " ".join(clauses)
    metrics = _driver_matches_duckdb(spark, tmp_path, request, rng, target, source, stmt, where, case)
    assert all(m.merged_on_driver for m in metrics), stmt


@pytest.mark.parametrize(("case", "where"), places(range(CASES // 3)))
def test_conditional_merges_on_the_driver_match_duckdb(spark, tmp_path, request, case, where):
    """Clauses with conditions Arrow evaluates as Spark does (dbt's CDC merge: ``WHEN MATCHED AND
    s.op = 'D' THEN DELETE WHEN MATCHED THEN UPDATE SET *``), in every category: the driver
    classifies each row by the first clause whose condition holds."""
    rng = random.Random(40_000 + case)
    target = _rows(rng, rng.randint(0, 9), 6)
    source = _rows(rng, rng.randint(0, 7), 6)
    actions = {**PLAIN, "NOT MATCHED BY SOURCE": BY_SOURCE["action"]}
    queues = []
    for cat, choices in actions.items():
        n = rng.randint(0, 3)
        queues.append(
            [
                f"WHEN {cat}{'' if i == n - 1 and rng.random() < 0.4 else f' AND {rng.choice(COND[cat])}'} "
                f"THEN {rng.choice([a for a in choices if a] + ['DO NOTHING'])}"
                for i in range(n)
            ]
        )
    clauses = []
    while any(queues):
        clauses.append(rng.choice([q for q in queues if q]).pop(0))
    stmt = "MERGE INTO target t USING source s ON t.k = s.k " + " ".join(
        clauses or ["WHEN MATCHED AND s.a > 3 THEN DELETE"]
    )
    metrics = _driver_matches_duckdb(spark, tmp_path, request, rng, target, source, stmt, where, case)
    # (an empty source ends the statement before any read, unless a BY SOURCE clause acts)
    assert all(m.merged_on_driver or m.noop or (m.source_rows == 0 and "BY SOURCE" not in stmt) for m in metrics), stmt


EXPRESSIONS = {  # images with values Arrow computes as Spark does (engine.arrow_eval): no copy
    "MATCHED": [
        "UPDATE SET a = s.a + t.a",
        "UPDATE SET a = t.a * 2 - s.a, b = 'u'",
        "UPDATE SET b = 'x', a = 7",
        "UPDATE SET a = s.a % 3",
        "DELETE",
    ],
    "NOT MATCHED": [
        "INSERT (k, a) VALUES (s.k, s.a * 10)",
        "INSERT (b, k) VALUES ('new', s.k)",
        "INSERT VALUES (s.k, -s.a, 'i')",
    ],
    "NOT MATCHED BY SOURCE": [
        "UPDATE SET a = t.a - 1",
        "UPDATE SET b = 'gone'",
        "UPDATE SET a = t.k + 100, b = NULL",
        "DELETE",
    ],
}


@pytest.mark.parametrize(("case", "where"), places(range(CASES // 3)))
def test_expression_images_on_the_driver_match_duckdb(spark, tmp_path, request, case, where):
    """UPDATE SET / INSERT VALUES of arithmetic and literals (a soft delete's ``SET b = 'gone'``,
    an accumulating ``SET a = s.a + t.a``), with and without conditions: the driver computes
    the new images itself."""
    rng = random.Random(50_000 + case)
    target = _rows(rng, rng.randint(0, 9), 6)
    source = _rows(rng, rng.randint(0, 7), 6)
    clauses = []
    for cat, actions in EXPRESSIONS.items():
        if rng.random() < 0.7:
            cond = f" AND {rng.choice(COND[cat])}" if rng.random() < 0.3 else ""
            clauses.append(f"WHEN {cat}{cond} THEN {rng.choice(actions)}")
    stmt = "MERGE INTO target t USING source s ON t.k = s.k " + " ".join(
        clauses or ["WHEN MATCHED THEN UPDATE SET a = 7"]
    )
    metrics = _driver_matches_duckdb(spark, tmp_path, request, rng, target, source, stmt, where, case)
    assert all(m.merged_on_driver or m.noop or (m.source_rows == 0 and "BY SOURCE" not in stmt) for m in metrics), stmt


_UTC = datetime.UTC
KEY_TYPES = {  # an order-preserving map of the integer keys onto keys of other types
    "timestamp": (
        pa.timestamp("us", tz="UTC"),
        lambda i: datetime.datetime(2023, 11, 14, 22, tzinfo=_UTC) + datetime.timedelta(hours=i),
    ),
    "timestamp_ntz": (
        pa.timestamp("us"),
        lambda i: datetime.datetime(2023, 11, 14, 22) + datetime.timedelta(minutes=i),
    ),
    "date": (pa.date32(), lambda i: datetime.date(2024, 1, 1) + datetime.timedelta(days=i)),
    "decimal": (pa.decimal128(10, 2), lambda i: decimal.Decimal(i) / 4),
    "string": (pa.string(), lambda i: f"key-{i:03d}"),
}


@pytest.mark.parametrize("case", range(CASES // 4))
def test_merges_on_keys_of_other_types_match_duckdb(spark, tmp_path, case):
    """The randomized statements on TIMESTAMP (in a session zone other than UTC), TIMESTAMP_NTZ,
    DATE, DECIMAL and STRING keys, the target's two tablets holding disjoint key ranges, so that
    the source's key range skips tablets (on the driver and in Spark, the source collected or
    cached): the result is DuckDB's on the integers the keys stand for."""
    rng = random.Random(60_000 + case)
    kind = list(KEY_TYPES)[case % len(KEY_TYPES)]
    arrow, key = KEY_TYPES[kind]
    target = sorted(_rows(rng, rng.randint(0, 9), 6), key=lambda r: (r[0] is None, r[0] or 0))
    source = _rows(rng, rng.randint(0, 7), 6)
    stmt = _statement(rng)
    expected = _duckdb(target, source, stmt)

    def typed(rows):
        return [(None if k is None else key(k), a, b) for k, a, b in rows]

    schema = pa.schema([("k", arrow), ("a", pa.int32()), ("b", pa.string())])
    conf = {**LOS_ANGELES, **({"spark.sql.autoBroadcastJoinThreshold": "-1"} if case % 3 == 1 else {})}
    back = {key(i): i for i in range(6)}
    for plan in ("driver", "spark"):
        with settings(spark, {**conf, **({DRIVER_SCAN_CONF: "0"} if plan == "spark" else {})}):
            got = _ours(
                spark,
                str(tmp_path / f"t_{plan}"),
                typed(target),
                [],
                typed(source),
                stmt,
                skip_unchanged=case % 2 == 0,
                schema=schema,
            )
        if got != "cardinality":
            got = Counter({(None if k is None else back[k], a, b): n for (k, a, b), n in got.items()})
        assert got == expected, f"{plan} plan, {kind}: {stmt}\ntarget={target}\nsource={source}"


WHERE = [  # conjuncts the log's statistics can rule a tablet out by, and some they cannot
    "k BETWEEN {lo} AND {hi}",
    "k = {lo}",
    "k IN ({lo}, {hi})",
    "k IS NULL",
    "k IS NOT NULL",
    "k >= {lo}",
    "k < {hi}",
    "NOT (k IN ({lo}))",
    "k <> {lo}",
    "b = 'x'",
    "b IS NULL",
    "a > 3",
    "a % 2 = 0",
    "k > {lo} OR b = 'y'",
    "NOT (k BETWEEN {lo} AND {hi})",
]


@pytest.mark.parametrize("case", range(CASES // 4))
def test_deletes_and_updates_with_where_match_duckdb(spark, tmp_path, case):
    """DELETE / UPDATE ... WHERE on a target of two tablets of disjoint key ranges: the tablets
    no row of which the WHERE can hold are skipped by their statistics (``prune.drop_unacted_tablets``);
    the result is DuckDB's."""
    rng = random.Random(70_000 + case)
    target = sorted(_rows(rng, rng.randint(0, 12), 8), key=lambda r: (r[0] is None, r[0] or 0))
    lo = rng.randrange(8)
    hi = lo + rng.randrange(3)
    where = " AND ".join(rng.choice(WHERE).format(lo=lo, hi=hi) for _ in range(rng.randint(1, 2)))
    stmt = rng.choice([f"DELETE FROM target WHERE {where}", f"UPDATE target SET a = -1, b = 'u' WHERE {where}"])
    expected = _duckdb(target, [], stmt)
    for plan in ("driver", "spark"):
        with settings(spark, {DRIVER_SCAN_CONF: "0"} if plan == "spark" else {}):
            got = _ours(spark, str(tmp_path / f"t_{plan}"), target, [], None, stmt, skip_unchanged=case % 3 == 0)
        assert got == expected, f"{plan} plan: {stmt}\ntarget={target}"
