"""Tablet pruning for queries, without Spark: the table references and predicates of a query
(``tablets.sql.reads``) and what the log's statistics rule out (``tablets.storage.pruning``),
checked against the rows themselves."""

import datetime as dt
import decimal
import random

import pyarrow as pa
import pytest
from tablets.spec.conditions import Cond, condition, typed
from tablets.spec.expr import Expr
from tablets.sql.reads import references
from tablets.storage.actions import AddTablet
from tablets.storage.pruning import Pred, kind_of, prune
from tablets.storage.tablet import column_stats

pytestmark = pytest.mark.unit


def refs(text):
    return [(r.name, text[r.start : r.end + 1], r.aliased, r.conds) for r in references(text)]


def test_references_name_spans_and_aliases():
    q = "SELECT count(*) FROM  `default`.tab  t WHERE t.id BETWEEN 1 AND 5 UNION ALL SELECT 1 FROM other"
    assert refs(q) == [
        ("default.tab", "`default`.tab", True, (Cond("between", "id", (("int", 1), ("int", 5))),)),
        ("other", "other", False, ()),
    ]
    assert refs("INSERT INTO out SELECT * FROM tab WHERE id < 5") == [
        ("tab", "tab", False, (Cond("lt", "id", ("int", 5)),))
    ]
    assert [r[0] for r in refs("CREATE TABLE out USING parquet AS SELECT * FROM a.tab")] == ["a.tab"]
    assert refs("SELECT * FROM tablets.`/data/t` WHERE id = 1")[0][:2] == ("tablets./data/t", "tablets.`/data/t`")


@pytest.mark.parametrize(
    "text",
    [
        "CREATE VIEW v AS SELECT * FROM tab",  # a view reads the newest version each time
        "CREATE TEMPORARY VIEW v AS SELECT * FROM tab",
        "SELECT default.tab.id FROM default.tab",  # db-qualified columns would not resolve
        "SELECT 1; SELECT 2",
        "DESCRIBE TABLE tab",
        "EXPLAIN SELECT * FROM tab",
    ],
)
def test_statements_left_alone(text):
    assert not references(text)


def test_ctes_samples_and_time_travel_are_not_references():
    assert refs("WITH tab AS (SELECT 1 AS id) SELECT * FROM tab") == []
    assert refs("SELECT * FROM tab TABLESAMPLE (10 PERCENT)") == []
    assert refs("SELECT * FROM tab VERSION AS OF 3") == []


def test_predicates_only_where_they_cannot_drop_a_needed_row():
    conds = lambda q: [r[3] for r in refs(q)]  # noqa: E731
    # a join: a WHERE on one side may be about NULL-extended rows
    assert conds("SELECT * FROM a LEFT JOIN b ON a.x = b.x WHERE b.y IS NULL") == [(), ()]
    # the outer WHERE is not the inner SELECT's
    assert conds("SELECT * FROM (SELECT * FROM tab) q WHERE id = 2") == [()]
    # qualified by another name: an outer reference
    assert conds("SELECT * FROM tab t WHERE other.id = 1 AND t.id = 2") == [(Cond("eq", "id", ("int", 2)),)]
    # ORs, functions and column-to-column comparisons are not taken; the rest of the AND is
    got = conds(
        "SELECT * FROM tab WHERE (id = 1 OR id = 2) AND abs(k) = 3 AND k = j AND (s LIKE 'ab%') AND NOT d IS NULL"
    )
    assert got == [(Cond("starts_with", "s", ("str", "ab")), Cond("not_null", "d"))]
    got = conds("SELECT * FROM tab WHERE 5 > id AND id <> 7 AND NOT (k IN (1, -2)) AND x <=> 1.5 AND n IS NULL")
    assert got == [
        (
            Cond("lt", "id", ("int", 5)),
            Cond("not", value=Cond("eq", "id", ("int", 7))),
            Cond("not", value=Cond("in", "k", (("int", 1), ("int", -2)))),
            Cond("eq_null_safe", "x", ("dec", decimal.Decimal("1.5"))),
            Cond("is_null", "n"),
        )
    ]


def test_predicates_as_sql_on_the_bare_columns():
    """``Cond.sql``: the conjunct as written, unqualified (the front door filters the table's own
    scan by it before the deletion vectors); none where a backslash might unescape otherwise."""
    (ref,) = references(
        "SELECT * FROM db.tab t WHERE t.k = 7 AND t.s LIKE 'a%' AND d >= DATE'2021-01-01' "
        "AND NOT (t.`id` IN (1, 2)) AND t.s <> 'a\\%' AND (t.k + 1 = 2 OR t.k IS NULL)"
    )
    assert [c.sql for c in ref.conds] == [
        "k = 7",
        "s LIKE 'a%'",
        "d >= CAST('2021-01-01' AS DATE)",
        "NOT (`id` IN (1, 2))",
        "",
    ]


def test_typed_keeps_literals_that_compare_as_spark_compares_them():
    [ref] = references(
        "SELECT * FROM t WHERE id BETWEEN 1 AND 5 AND s = 'a' AND d >= '2021-06-01' AND d < DATE'2022-01-01' "
        "AND k = 2.5 AND s = 5 AND d = '2021-6-1' AND x > 1 AND k IN (1, 2) AND id = 1e3"
    )
    kinds = {"id": "int", "k": "int", "s": "str", "d": "date"}  # x: a double, no kind
    got = typed(ref.conds, kinds, {c: c for c in [*kinds, "x"]})
    assert got == [
        Pred("ge", "id", 1),
        Pred("le", "id", 5),
        Pred("eq", "s", "a"),
        Pred("ge", "d", dt.date(2021, 6, 1)),
        Pred("lt", "d", dt.date(2022, 1, 1)),
        Pred("eq", "k", decimal.Decimal("2.5")),
        Pred("in", "k", (1, 2)),
    ]  # s = 5, d = '2021-6-1', x > 1 and 1e3 (a double in Spark) are dropped


def test_timestamps_with_an_offset_are_instants_and_conditions_read_alone():
    """A TIMESTAMP column against text with an offset (dbt's microbatch bounds) compares as that
    instant in every session zone; without an offset the session zone decides: dropped. A
    condition alone (a DELETE's WHERE, a BY SOURCE clause's) gives the conjuncts on its table's
    columns, qualified by its alias or not."""
    kinds = {"ts": "ts_tz", "id": "int"}
    names = {c: c for c in kinds}
    got = typed(
        condition(
            Expr.parse(
                "t.ts >= '2024-01-01 00:00:00+00:00' AND ts < '2024-01-01T01:30:00.5-02:00' "
                "AND ts > '2024-01-01 00:00:00' AND s.id = 1 AND id IN (1, 2) AND (id = 3 OR id = 4)"
            ),
            "t",
        ),
        kinds,
        names,
    )
    utc = dt.UTC
    assert got == [
        Pred("ge", "ts", dt.datetime(2024, 1, 1, tzinfo=utc)),
        Pred("lt", "ts", dt.datetime(2024, 1, 1, 3, 30, 0, 500000, tzinfo=utc)),
        Pred("in", "id", (1, 2)),
    ]
    assert condition(Expr.parse("not sql ("), "t") == []


# --- pruning against the rows ------------------------------------------------------------------

SCHEMA = pa.schema([("i", pa.int64()), ("s", pa.string()), ("d", pa.date32()), ("m", pa.decimal128(6, 2))])


def _sql_value(pred, row):
    """SQL's three-valued answer of ``pred`` on one row (None: NULL)."""
    if pred.op == "not":
        v = _sql_value(pred.value, row)
        return None if v is None else not v
    x = row[pred.column]
    if pred.op == "is_null":
        return x is None
    if pred.op == "not_null":
        return x is not None
    if pred.op == "eq_null_safe":
        return x == pred.value if x is not None and pred.value is not None else x is pred.value
    if x is None:
        return None
    if pred.op == "in":
        if x in [v for v in pred.value if v is not None]:
            return True
        return None if None in pred.value else False
    if pred.op == "starts_with":
        return x.startswith(pred.value)
    return {
        "eq": x == pred.value,
        "lt": x < pred.value,
        "le": x <= pred.value,
        "gt": x > pred.value,
        "ge": x >= pred.value,
    }[pred.op]


def _random_value(rng, col):
    if rng.random() < 0.15:
        return None
    if col == "i":
        return rng.randint(-5, 25)
    if col == "s":
        return rng.choice(["", "a", "ab", "abc", "b", "ba", "zz", "é", "a" * 70])
    if col == "d":
        return dt.date(2021, 1, 1) + dt.timedelta(days=rng.randint(0, 30))
    return decimal.Decimal(rng.randint(-300, 300)) / 100


def _random_pred(rng):
    col = rng.choice(["i", "s", "d", "m"])
    op = rng.choice(
        ["eq", "lt", "le", "gt", "ge", "in", "is_null", "not_null", "eq_null_safe", "not_eq", "not_in", "starts_with"]
    )
    v = _random_value(rng, col)
    if op in ("is_null", "not_null"):
        return Pred(op, col)
    if op == "starts_with":
        return Pred(op, "s", rng.choice(["", "a", "ab", "b", "c", "é"]))
    if op in ("in", "not_in"):
        vals = tuple(_random_value(rng, col) for _ in range(rng.randint(1, 3)))
        return Pred("in", col, vals) if op == "in" else Pred("not", value=Pred("in", col, vals))
    if v is None and op != "eq_null_safe":
        v = _random_value(random.Random(0), col) or 1
    return Pred("not", value=Pred("eq", col, v)) if op == "not_eq" else Pred(op, col, v)


def test_prune_never_skips_a_tablet_with_a_matching_row():
    """Random tablets (NULLs, constant columns, long strings, a column the tablet lacks) and
    random predicates: a pruned tablet has no row where the predicate is TRUE; and pruning does
    skip tablets (it is not vacuous)."""
    rng = random.Random(7)
    kinds = {f.name: kind_of(f.type) for f in SCHEMA}
    pruned = 0
    for _ in range(300):
        n = rng.randint(1, 6)
        cols = {c: [_random_value(rng, c) for _ in range(n)] for c in SCHEMA.names}
        if rng.random() < 0.2:  # a constant column
            cols["i"] = [cols["i"][0]] * n
        data = pa.table(cols, schema=SCHEMA)
        if rng.random() < 0.2:  # written before column m was added: it reads as NULL
            data = data.drop_columns(["m"])
            cols["m"] = [None] * n
        add = AddTablet("t", "tablets/t.parquet", n, 1, column_stats(data))
        rows = [{c: cols[c][r] for c in cols} for r in range(n)]
        for _ in range(10):
            pred = _random_pred(rng)
            if prune([pred], add, kinds):
                pruned += 1
                assert not any(_sql_value(pred, row) is True for row in rows), (pred, rows)
    assert pruned > 300
