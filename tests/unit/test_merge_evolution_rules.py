"""MERGE WITH SCHEMA EVOLUTION without a JVM: the statement parses (sqlglot does not know the
words), the metadata it makes (new columns, widened types, refused type changes), the record of
a widening in the log and in the published Delta schema."""

import json

import pytest
from tablets.engine.evolution import evolved_metadata, widening
from tablets.exceptions import MergeSpecError
from tablets.sql.parse import parse_statement, statement_target
from tablets.storage.actions import Metadata, action_from_json, action_to_json
from tablets.storage.delta_log import protocol
from tablets.storage.delta_schema import from_delta, to_delta

META = Metadata("t1", (("id", "bigint", True), ("c", "int", True), ("v", "string", True)), key_columns=("id",))
STAR = "MERGE WITH SCHEMA EVOLUTION INTO db.t t USING src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"


def test_the_statement_parses_with_and_without_the_words():
    assert statement_target(STAR) == ("MERGE", "db.t")
    assert statement_target(
        "-- a comment\nmerge with schema evolution into db.t using s on t.id = s.id when matched then delete"
    ) == ("MERGE", "db.t")
    assert parse_statement(STAR).schema_evolution
    assert not parse_statement(STAR.replace(" WITH SCHEMA EVOLUTION", "")).schema_evolution


@pytest.mark.parametrize(
    ("old", "new", "widens"),
    [
        ("int", "bigint", True),
        ("tinyint", "int", True),
        ("smallint", "bigint", True),
        ("INTEGER", "long", True),
        ("bigint", "int", False),
        ("float", "double", True),
        ("double", "float", False),
        ("decimal(10,2)", "decimal(12,4)", True),
        ("decimal(10,2)", "decimal(12,1)", False),  # the scale may not shrink
        ("decimal(10,2)", "decimal(11,4)", False),  # nor the integer digits
        ("int", "double", False),  # Delta does this only when asked (ALTER COLUMN TYPE)
        ("date", "timestamp_ntz", True),
        ("string", "int", False),
    ],
)
def test_widening_is_deltas(old, new, widens):
    assert widening(old, new) is widens


def test_star_adds_source_columns_in_source_order_and_widens():
    spec = parse_statement(STAR)
    out = evolved_metadata(spec, META, [("ID", "bigint"), ("z", "double"), ("C", "bigint"), ("a", "struct<x:int>")])
    assert out is not None
    assert out.schema == (
        ("id", "bigint", True),
        ("c", "bigint", True),
        ("v", "string", True),
        ("z", "double", True),
        ("a", "struct<x:int>", True),
    )
    assert out.physical_names[:3] == META.physical_names  # kept columns keep their place in the tablets
    assert len(set(out.physical_names)) == 5 and out.max_column_id == 5
    assert out.type_changes == ((META.physical_names[1], "int", "bigint"),)
    assert out.key_columns == ("id",)


def test_nothing_new_is_no_change_and_narrower_types_fit():
    assert evolved_metadata(parse_statement(STAR), META, [("id", "int"), ("c", "smallint"), ("v", "string")]) is None
    assert evolved_metadata(parse_statement(STAR), META, [("id", "bigint"), ("c", "void"), ("v", "int")]) is None


@pytest.mark.parametrize(
    ("source", "column", "ok"),
    [
        ("int", "double", True),
        ("bigint", "decimal(20,0)", True),
        ("bigint", "decimal(19,0)", False),
        ("double", "int", False),
        ("string", "int", False),
        ("date", "timestamp", True),
        ("struct<x:int,y:int>", "struct<x:int>", False),
        ("struct<`x`:int>", "struct<x: int>", True),
    ],
)
def test_what_a_column_holds_without_a_type_change(source, column, ok):
    from tablets.engine.evolution import fits

    assert fits(source, column) is ok


def test_named_lists_add_the_source_columns_they_name():
    spec = parse_statement(
        "MERGE WITH SCHEMA EVOLUTION INTO db.t t USING src s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET t.note = s.note WHEN NOT MATCHED THEN INSERT (id, extra) VALUES (s.id, 1)"
    )
    out = evolved_metadata(spec, META, [("id", "bigint"), ("note", "string"), ("extra", "date"), ("other", "int")])
    assert out is not None and out.column_names == ("id", "c", "v", "note", "extra")


def test_a_type_change_that_is_no_widening_names_the_column_and_both_types():
    with pytest.raises(MergeSpecError) as e:
        evolved_metadata(parse_statement(STAR), META, [("id", "bigint"), ("c", "string")])
    assert "c is int" in str(e.value) and "c is string" in str(e.value) and "CAST(s.c AS int)" in e.value.help


def test_a_null_typed_new_column_is_refused():
    with pytest.raises(MergeSpecError, match="CAST"):
        evolved_metadata(parse_statement(STAR), META, [("id", "bigint"), ("n", "void")])


def test_a_widening_is_recorded_in_the_log_and_published_as_deltas_type_widening():
    out = META.widened("c", "bigint")
    assert action_from_json(action_to_json(out)) == out
    assert "type_changes" not in action_to_json(META)  # older logs and readers stay as they were
    ds = to_delta(out)
    assert "typeWidening" in protocol(ds)["readerFeatures"]
    field = json.loads(ds.schema_string)["fields"][1]
    assert field["type"] == "long"
    assert field["metadata"]["delta.typeChanges"] == [{"fromType": "integer", "toType": "long"}]
    # and a Delta table that says so is read back with the same history
    assert from_delta(ds.schema_string, "none").type_changes == (("c", "int", "bigint"),)
    assert out.with_schema(out.schema[:1] + out.schema[2:]).type_changes == ()  # a dropped column's history goes
