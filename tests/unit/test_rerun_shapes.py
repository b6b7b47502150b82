"""A MERGE run again with the same rows (engine.rerun): which statements are idempotent by their
shape, and the digest of a source's rows."""

import pyarrow as pa
import pytest
from support.exprs import Clause, MergeSpec
from tablets.engine.plan import plan_merge
from tablets.engine.rerun import digest, idempotent, unique_keys
from tablets.spec import ActionKind, Category, Source

pytestmark = pytest.mark.unit

TARGET = [("id", "bigint"), ("v", "int"), ("s", "string")]
SOURCE = {"id": "bigint", "v": "int", "s": "string"}
M, NM, NMS = Category.MATCHED, Category.NOT_MATCHED, Category.NOT_MATCHED_BY_SOURCE
U, D, INS, N = ActionKind.UPDATE, ActionKind.DELETE, ActionKind.INSERT, ActionKind.DO_NOTHING
UPDATE_ALL = Clause(M, U, star=True)
INSERT_ALL = Clause(NM, INS, star=True)


def plan(*clauses, on="t.id = s.id", target=TARGET, source=SOURCE, keys=()):
    spec = MergeSpec("db.tgt", "t", Source(table="src"), "s", on, tuple(clauses))
    return plan_merge(spec, target, list(source), keys)


def check(*clauses, source=SOURCE, **kw):
    return idempotent(plan(*clauses, source=source, **kw), source)


@pytest.mark.parametrize(
    "clauses",
    [
        (UPDATE_ALL, INSERT_ALL),
        (UPDATE_ALL,),
        (INSERT_ALL,),
        (Clause(M, N), INSERT_ALL),
        (UPDATE_ALL, INSERT_ALL, Clause(NMS, D)),
        (
            Clause(M, U, assignments=(("v", "s.v"),)),
            Clause(NM, INS, insert_columns=("id", "v"), insert_values=("s.id", "s.v")),
        ),
        (Clause(M, U, assignments=(("s", "NULL"),)), Clause(NM, INS, insert_columns=("id",), insert_values=("s.id",))),
        (Clause(M, U, assignments=(("v", "t.v"),)),),
        (Clause(M, U, assignments=(("v", "s.v"),)), INSERT_ALL),  # an UPDATE that keeps what INSERT wrote
    ],
    ids=["upsert", "update", "insert", "insert-new", "sync", "some-columns", "nulls", "own-value", "keeps-inserted"],
)
def test_idempotent_shapes(clauses):
    assert check(*clauses) == {"id": "id"}


@pytest.mark.parametrize(
    "clauses, on",
    [
        ((Clause(M, U, "s.v > t.v", star=True), INSERT_ALL), "t.id = s.id"),  # a condition on values that change
        ((Clause(M, U, assignments=(("v", "t.v + s.v"),)),), "t.id = s.id"),  # adds again
        ((Clause(M, U, assignments=(("v", "CAST(s.s AS INT)"),)),), "t.id = s.id"),  # an expression
        ((Clause(M, U, assignments=(("s", "NULL"),)), INSERT_ALL), "t.id = s.id"),  # the inserted value, then NULL
        ((Clause(M, U, assignments=(("s", "t.v"),)),), "t.id = s.id"),  # another column's value
        ((Clause(M, D), INSERT_ALL), "t.id = s.id"),  # deletes, then inserts it again
        ((UPDATE_ALL, INSERT_ALL, Clause(NMS, U, assignments=(("v", "0"),))), "t.id = s.id"),
        ((UPDATE_ALL, INSERT_ALL, Clause(NMS, D, "t.v > 1")), "t.id = s.id"),
        (
            (Clause(NM, INS, insert_columns=("v",), insert_values=("s.v",)),),
            "t.id = s.id",
        ),  # NULL key: inserted every time
        ((Clause(M, U, assignments=(("id", "s.id + 1"),)),), "t.id = s.id"),  # moves the key away
        ((UPDATE_ALL, INSERT_ALL), "t.id = s.id AND t.v > 0"),  # ON reads more than keys
        ((UPDATE_ALL, INSERT_ALL), "t.id = s.id + 1"),  # a key that is an expression
        ((UPDATE_ALL, INSERT_ALL), "t.id <=> s.id"),
    ],
    ids=[
        "condition",
        "accumulate",
        "expression",
        "update-nulls-what-insert-sets",
        "swap",
        "matched-delete",
        "by-source-update",
        "by-source-condition",
        "null-key",
        "moved-key",
        "on-more",
        "key-expression",
        "null-safe",
    ],
)
def test_not_idempotent(clauses, on):
    assert check(*clauses, on=on) is None


def test_types_must_match_the_target():
    assert check(UPDATE_ALL, INSERT_ALL, source={**SOURCE, "v": "bigint"}) is None  # a cast: not a copy
    assert check(UPDATE_ALL, INSERT_ALL, source={**SOURCE, "id": "int"}) is None
    floats = [("id", "double"), ("v", "int"), ("s", "string")]
    assert (
        check(UPDATE_ALL, INSERT_ALL, target=floats, source={**SOURCE, "id": "double"}) is None
    )  # -0.0 = 0.0 in a join
    decimals = [("id", "decimal(10,2)"), ("v", "int"), ("s", "string")]
    assert check(UPDATE_ALL, INSERT_ALL, target=decimals, source={**SOURCE, "id": "decimal(10,2)"}) == {"id": "id"}


def test_keyed_tables():
    """A keyed table's MERGE with more than the key in ON refuses (a key violation) a source row
    whose key exists but fails the rest: raised again, not a no-op."""
    assert check(UPDATE_ALL, INSERT_ALL, keys=("id",)) == {"id": "id"}
    assert check(UPDATE_ALL, INSERT_ALL, on="t.id = s.id AND t.v > 0", keys=("id",)) is None


def test_composite_keys_and_source_names():
    source = {"ID": "bigint", "v": "int", "s": "string"}
    p = plan(UPDATE_ALL, INSERT_ALL, on="t.id = s.ID AND s.s = t.s", source=source)
    assert idempotent(p, source) == {"id": "ID", "s": "s"}


ROWS = pa.table({"id": [3, 1, 2], "v": [30, None, 20], "s": ["c", "a", None]})


def test_digest_is_of_the_rows_not_their_order_or_chunks():
    p = plan(UPDATE_ALL, INSERT_ALL)
    keys = {"id": "id"}
    one = digest(p, ROWS, "t", keys)
    shuffled = pa.Table.from_batches([ROWS.slice(2).to_batches()[0], ROWS.slice(0, 2).to_batches()[0]])
    assert digest(p, shuffled, "t", keys) == one and len(one) == 64
    changed = ROWS.set_column(1, "v", pa.array([30, 0, 20], pa.int64()))
    assert digest(p, changed, "t", keys) != one
    assert digest(p, ROWS, "u", keys) != one  # another source type
    assert digest(plan(UPDATE_ALL), ROWS, "t", keys) != one  # another statement


def test_unique_keys():
    assert unique_keys(ROWS, {"id": "id"})
    assert not unique_keys(pa.table({"id": [1, None]}), {"id": "id"})
    assert not unique_keys(pa.table({"id": [1, 1]}), {"id": "id"})
    pairs = pa.table({"a": [1, 1, 2], "b": ["x", "y", "x"]})
    assert unique_keys(pairs, {"a": "a", "b": "b"})
    assert not unique_keys(pa.concat_tables([pairs, pairs.slice(0, 1)]), {"a": "a", "b": "b"})
