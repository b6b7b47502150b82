"""The planner without Spark: join type, classification, no-op detection, column needs, errors."""

import pytest
from support.exprs import Clause, MergeSpec
from tablets.engine.explain import explain
from tablets.engine.plan import plan_merge
from tablets.exceptions import MergeSpecError
from tablets.spec import ActionKind, Category, Source

pytestmark = pytest.mark.unit

TARGET = [("a", "int"), ("b", "int"), ("c", "string")]
SOURCE = ["a", "b", "d"]
M, NM, NMS = Category.MATCHED, Category.NOT_MATCHED, Category.NOT_MATCHED_BY_SOURCE
U, D, INS, N = ActionKind.UPDATE, ActionKind.DELETE, ActionKind.INSERT, ActionKind.DO_NOTHING


SRC = Source(table="src")


def spec(*clauses, on="t.a = s.a", source=SRC):
    return MergeSpec("db.tgt", "t", source, "s", on if source else None, tuple(clauses))


@pytest.mark.parametrize(
    ("cats", "join"),
    [((M,), "inner"), ((NM,), "left"), ((NMS,), "right"), ((M, NM), "left"), ((M, NMS), "right"), ((NM, NMS), "full")],
)
def test_strictest_join(cats, join):
    action = {M: D, NM: INS, NMS: D}
    clauses = [Clause(c, action[c], star=c is NM) for c in cats]
    assert plan_merge(spec(*clauses), TARGET, SOURCE).join == join


def test_classification_case_in_statement_order():
    p = plan_merge(
        spec(
            Clause(NM, N, "s.b % 2 = 0"),
            Clause(NM, INS, "s.b < 11", insert_values=("s.a", "100 * s.b")),
            Clause(M, U, assignments=(("b", "s.b"),)),
        ),
        TARGET,
        SOURCE,
    )
    assert [(b.index, p.guard(b)) for b in p.branches] == [
        (0, "__tablets_t IS NULL AND (s.b % 2 = 0)"),
        (1, "__tablets_t IS NULL AND (s.b < 11)"),
        (2, "__tablets_s IS NOT NULL AND __tablets_t IS NOT NULL"),
    ]
    assert dict(p.branches[1].image) == {
        "a": "CAST(s.a AS int)",
        "b": "CAST(100 * s.b AS int)",
        "c": "CAST(NULL AS string)",
    }
    assert dict(p.branches[2].image)["c"] == "CAST(t.`c` AS string)"  # unassigned: kept


@pytest.mark.parametrize(
    "clauses",
    [
        (),
        (Clause(M, N),),
        (Clause(NMS, N, "t.b IN (1, 2)"), Clause(NM, N, "s.b = 4"), Clause(NM, N, "s.a > 10")),
        (Clause(NMS, D, "7 < 5"),),
        (Clause(M, D, "1 = 0"), Clause(NM, N)),
    ],
)
def test_degenerate_noop(clauses):
    p = plan_merge(spec(*clauses), TARGET, SOURCE)
    assert p.noop
    assert "degenerate: no-op" in explain(p)


def test_not_noop_with_one_real_action():
    assert not plan_merge(spec(Clause(M, N, "s.b = 1"), Clause(M, D)), TARGET, SOURCE).noop


def test_unqualified_columns_resolve_by_side():
    p = plan_merge(
        spec(Clause(NM, INS, insert_values=("a", "d")), Clause(M, U, "d > 1", (("c", "d"),))), TARGET, SOURCE
    )
    assert dict(p.branches[0].image)["a"] == "CAST(s.a AS int)"
    assert str(p.branches[1].condition) == "s.d > 1"


def test_ambiguous_unqualified_column():
    with pytest.raises(MergeSpecError, match="ambiguous"):
        plan_merge(spec(Clause(M, U, "b > 1", (("c", "'x'"),))), TARGET, SOURCE)


def test_by_source_may_not_read_source():
    with pytest.raises(MergeSpecError, match="no source row"):
        plan_merge(spec(Clause(NMS, U, None, (("b", "s.b"),))), TARGET, SOURCE)


def test_not_matched_may_not_read_target():
    with pytest.raises(MergeSpecError, match="no target row"):
        plan_merge(spec(Clause(NM, INS, "t.b > 1", star=True)), TARGET, SOURCE)


def test_unreachable_clause():
    with pytest.raises(MergeSpecError, match="unreachable"):
        plan_merge(spec(Clause(M, D), Clause(M, U, "s.b > 1", (("b", "1"),))), TARGET, SOURCE)


def test_unknown_assignment_and_insert_arity():
    with pytest.raises(MergeSpecError, match="nope"):
        plan_merge(spec(Clause(M, U, None, (("nope", "1"),))), TARGET, SOURCE)
    with pytest.raises(MergeSpecError, match="4 values"):
        plan_merge(spec(Clause(NM, INS, insert_values=("1", "2", "3", "4"))), TARGET, SOURCE)


def test_columns_read_per_action():
    delete_only = plan_merge(spec(Clause(M, D, "t.b > 1")), TARGET, SOURCE)
    assert delete_only.target_columns == ("a", "b") and delete_only.needs_row_ids
    insert_only = plan_merge(spec(Clause(NM, INS, star=True)), TARGET, SOURCE)
    assert insert_only.target_columns == ("a",) and not insert_only.needs_row_ids
    update = plan_merge(spec(Clause(M, U, None, (("b", "s.b"),))), TARGET, SOURCE)
    assert update.target_columns == ("a", "b", "c")


def test_an_update_without_skip_unchanged_reads_only_the_columns_it_keeps_or_names():
    """Without the comparison with the old row, an UPDATE reads the target columns its image
    keeps (unassigned, or set to themselves) and those its conditions and values name: an
    upsert that sets every column from the source reads the key alone."""

    def cols(*clauses, source=("a", "b", "c"), target=TARGET):
        return plan_merge(spec(*clauses), target, list(source), skip_unchanged=False).target_columns

    assert cols(Clause(M, U, star=True), Clause(NM, INS, star=True)) == ("a",)
    assert cols(Clause(M, U, None, (("b", "s.b"),))) == ("a", "c")  # c is kept
    assert cols(Clause(M, U, None, (("b", "t.c"), ("c", "s.c")))) == ("a", "c")
    assert cols(Clause(M, U, None, (("b", "s.b"), ("c", "t.c")))) == ("a", "c")  # SET c = t.c keeps c
    assert cols(Clause(M, U, "t.b > s.b", (("b", "s.b"), ("c", "s.c")))) == ("a", "b")
    assert cols(Clause(M, U, star=True), source=("a", "b")) == ("a", "c")  # SET * keeps what the source lacks
    by_source = cols(Clause(M, U, star=True), Clause(NMS, U, None, (("b", "0"),)))
    assert by_source == ("a", "c")
    assert plan_merge(spec(Clause(M, U, star=True)), TARGET, ["a", "b", "c"]).target_columns == ("a", "b", "c")


def test_pruning_keys_only_without_by_source_and_not_null_safe():
    p = plan_merge(spec(Clause(M, D), on="t.a = s.a AND t.b > s.b"), TARGET, SOURCE)
    assert p.prune_keys == (("a", "s.a"),)
    by_source = plan_merge(spec(Clause(M, D), Clause(NMS, D)), TARGET, SOURCE)
    assert by_source.prune_keys == () and by_source.join_keys == (("a", "s.a"),) and by_source.on_is_keys
    assert plan_merge(spec(Clause(M, D), on="t.a <=> s.a"), TARGET, SOURCE).prune_keys == ()


@pytest.mark.parametrize("on", ["(t.a = s.a)", "(s.a = t.a) AND ((t.b = s.b))", "((t.a = s.a AND t.b = s.b))"])
def test_key_equalities_in_parentheses_as_dbt_writes_them(on):
    p = plan_merge(spec(Clause(M, D), on=on), TARGET, SOURCE)
    assert p.on_is_keys and {k for k, _ in p.join_keys} == ({"a", "b"} if "b" in on else {"a"})


def test_update_without_source_is_target_only():
    p = plan_merge(spec(Clause(NMS, U, "t.a > 3", (("b", "t.b + 1"),)), source=None), TARGET, None)
    assert p.join is None
    assert [(b.index, p.guard(b)) for b in p.branches] == [(0, "(t.a > 3)")]


def test_explain_shows_streams():
    text = explain(
        plan_merge(
            spec(Clause(M, U, None, (("b", "s.b"),)), Clause(NM, INS, star=True), Clause(NMS, D)), TARGET, SOURCE
        )
    )
    assert "[Join] FULL OUTER ON t.a = s.a" in text
    assert (
        "[Delete stream] row ids <- __tablets_clause = 0 (UPDATE old image) UNION ALL __tablets_clause = 2 (DELETE)"
        in text
    )
    assert (
        "[Insert stream] new tablets <- __tablets_clause = 0 (UPDATE new image) UNION ALL __tablets_clause = 1 (INSERT)"
        in text
    )


@pytest.mark.parametrize(
    "clauses, plain",
    [
        ((Clause(M, U, None, (("b", "s.b"),)), Clause(NM, INS, star=True)), True),  # SET b = s.b, INSERT *
        ((Clause(M, U, None, (("b", "s.b + 1"),)), Clause(NM, INS, star=True)), False),  # an expression
        ((Clause(M, U, "s.b > 1", (("b", "s.b"),)), Clause(NM, INS, star=True)), False),  # a condition
        ((Clause(M, D), Clause(NMS, D)), True),  # BY SOURCE, unconditional
        ((Clause(M, D), Clause(NMS, D, "t.b % 10 = 0 OR t.c IS NULL")), True),  # a condition Arrow evaluates
        ((Clause(M, D), Clause(NMS, U, "t.b > 1", (("c", "NULL"),))), True),  # a soft delete
        ((Clause(M, D), Clause(NMS, D, "t.c = 1")), False),  # a string compared with a number: Spark's cast
        ((Clause(M, D), Clause(NMS, D, "upper(t.c) = 'X'")), False),  # a function
        ((Clause(M, D), Clause(NMS, U, None, (("b", "t.b + 1"),))), True),  # an expression Arrow evaluates
        ((Clause(M, D), Clause(NMS, U, None, (("c", "upper(t.c)"),))), False),  # a function in the image
    ],
)
def test_plain_statements_are_the_drivers_to_merge(clauses, plain):
    p = plan_merge(spec(*clauses), TARGET, SOURCE)
    assert p.plain is plain
    assert ("driver merge:" in explain(p)) is plain


# --- the source columns the statement reads (Plan.source_reads) ------------------------------------

WIDE = ["a", "b", "d", "st"]


@pytest.mark.parametrize(
    ("clauses", "on", "reads"),
    [
        ((Clause(M, D),), "t.a = s.a", ("a",)),  # a key-only delete holds its keys alone
        ((Clause(M, D, "d > 1"),), "t.a = s.a", ("a", "d")),  # unqualified: the source's
        ((Clause(M, U, assignments=(("b", "s.b + 1"),)),), "t.a = s.a", ("a", "b")),
        ((Clause(M, U, star=True),), "t.a = s.a", ("a", "b")),  # SET *: the target's names
        ((Clause(NM, INS, star=True),), "t.a = s.a", ("a", "b")),  # INSERT *: the target's names
        ((Clause(NM, INS, insert_values=("s.a", "s.st.f")),), "t.a = s.a", ("a", "st")),  # a struct's field
        ((Clause(M, D, "s.a IN (SELECT 1)"),), "t.a = s.a", None),  # a subquery may read any of them
        ((Clause(NM, INS, insert_values=("s.a", "to_json(struct(*))")),), "t.a = s.a", None),  # a star
        ((Clause(NMS, D, "t.b > 1"),), "t.a = s.a", ("a",)),  # BY SOURCE reads no source column
    ],
)
def test_source_reads_are_the_columns_the_statement_names(clauses, on, reads):
    assert plan_merge(spec(*clauses, on=on), TARGET, WIDE).source_reads == reads


def test_source_reads_are_unknown_without_the_source_columns():
    assert plan_merge(spec(Clause(M, D)), TARGET, None).source_reads is None


def test_source_reads_tell_an_alias_from_a_column_of_its_name():
    names = [*WIDE, "s", "t"]
    assert plan_merge(spec(Clause(M, D)), TARGET, names).source_reads == ("a",)
    assert plan_merge(spec(Clause(M, D, "s.s = 'x' AND t.c = 'y'")), TARGET, names).source_reads == ("a", "s")


def test_explain_names_the_source_columns_read():
    assert "[Scan] source src AS s: a, __tablets_s" in explain(plan_merge(spec(Clause(M, D)), TARGET, WIDE))
    assert "[Scan] source src AS s: every column" in explain(plan_merge(spec(Clause(M, D)), TARGET, None))


@pytest.mark.parametrize(
    ("clauses", "on", "by_key"),
    [
        ((Clause(M, D),), "t.a = s.a", ("a", "a")),
        ((Clause(M, D),), "s.b = t.a", ("a", "b")),
        ((Clause(M, D, "s.b > 1"),), "t.a = s.a", None),  # a condition
        ((Clause(M, D),), "t.a = s.a AND t.b = s.b", None),  # two keys
        ((Clause(M, D),), "t.a = s.a AND t.b > 1", None),  # ON with more than the key
        ((Clause(M, D),), "t.a = s.a + 1", None),  # an expression of the source
        ((Clause(M, D),), "t.a <=> s.a", None),  # NULL pairs NULL
        ((Clause(M, U, assignments=(("b", "s.b"),)),), "t.a = s.a", None),
        ((Clause(M, D), Clause(NM, INS, star=True)), "t.a = s.a", None),
        ((Clause(M, D), Clause(NMS, D)), "t.a = s.a", None),
    ],
)
def test_deletes_by_key_is_a_matched_delete_by_one_plain_key(clauses, on, by_key):
    assert plan_merge(spec(*clauses, on=on), TARGET, WIDE).deletes_by_key == by_key
