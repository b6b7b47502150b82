"""DESCRIBE, SHOW TBLPROPERTIES, SET/UNSET TBLPROPERTIES, COMMENT ON TABLE and ALTER COLUMN ...
COMMENT as Spark SQL writes them -> specs (no JVM): which statements are ours, Spark's string
literal rules, and the errors."""

import pytest
from tablets.exceptions import StatementParseError
from tablets.sql.metadata import (
    AlterMetadataSpec,
    DescribeSpec,
    ShowPropertiesSpec,
    metadata_target,
    parse_metadata,
)
from tablets.storage.metadata import MetadataChange

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("DESCRIBE db.t", ("DESCRIBE", "db.t")),
        ("desc table extended `db`.`t x`", ("DESCRIBE", "`db`.`t x`")),
        ("/* dbt */ describe formatted t col", ("DESCRIBE", "t")),
        ("SHOW TBLPROPERTIES t ('a')", ("SHOW TBLPROPERTIES", "t")),
        ("ALTER TABLE t SET TBLPROPERTIES ('a' = 'b')", ("ALTER TABLE SET TBLPROPERTIES", "t")),
        ("alter table t unset tblproperties ('a')", ("ALTER TABLE UNSET TBLPROPERTIES", "t")),
        ("ALTER TABLE t ALTER COLUMN c COMMENT 'x'", ("ALTER TABLE ALTER COLUMN", "t")),
        ("COMMENT ON TABLE t IS NULL", ("COMMENT ON TABLE", "t")),
        ("DESCRIBE tablets.`/data/t`", ("DESCRIBE", "tablets.`/data/t`")),
        # not ours: other statements, other DESCRIBEs, other ALTER TABLEs
        ("DESCRIBE HISTORY t", None),
        ("DESCRIBE FUNCTION upper", None),
        ("DESCRIBE QUERY SELECT 1", None),
        ("DESCRIBE SELECT 1", None),
        ("DESCRIBE DATABASE db", None),
        ("ALTER TABLE t ADD COLUMNS (c INT)", None),
        ("ALTER TABLE t ALTER COLUMN c TYPE bigint", None),
        ("ALTER TABLE t RENAME TO u", None),
        ("SELECT * FROM t", None),
        ("SHOW TABLES", None),
    ],
)
def test_which_statements_are_ours(text, found):
    assert metadata_target(text) == found


def test_describe_forms():
    assert parse_metadata("DESCRIBE t") == DescribeSpec("t")
    assert parse_metadata("DESC TABLE EXTENDED db.t;") == DescribeSpec("db.t", extended=True)
    assert parse_metadata("DESCRIBE FORMATTED db.t `Id`") == DescribeSpec("db.t", extended=True, column="Id")


def test_show_properties():
    assert parse_metadata("SHOW TBLPROPERTIES db.t") == ShowPropertiesSpec("db.t")
    assert parse_metadata("SHOW TBLPROPERTIES db.t (delta.appendOnly)") == ShowPropertiesSpec(
        "db.t", "delta.appendOnly"
    )
    assert parse_metadata("SHOW TBLPROPERTIES db.t ('a.b')") == ShowPropertiesSpec("db.t", "a.b")


def test_set_and_unset_properties():
    spec = parse_metadata("ALTER TABLE t SET TBLPROPERTIES ('a' = 'x', b.c 'y', 'n' = 5, 'f' = TRUE, 'comment' = 'hi')")
    assert spec == AlterMetadataSpec(
        "t",
        "SET TBLPROPERTIES",
        MetadataChange(set_properties=(("a", "x"), ("b.c", "y"), ("n", "5"), ("f", "true")), comment="hi"),
    )
    spec = parse_metadata("ALTER TABLE t UNSET TBLPROPERTIES IF EXISTS ('a', 'comment')")
    assert spec.change == MetadataChange(unset_properties=("a",), clear_comment=True)


def test_comments_use_sparks_string_rules():
    # what dbt-spark's macros emit: \' for a quote, newlines inside, a closing semicolon
    text = "alter table db.t change column `2id` comment 'it\\'s \"quoted\"\n-- not a comment\n/* nor this */';"
    spec = parse_metadata(text)
    assert spec.operation == "CHANGE COLUMN"
    assert spec.change.column_comments == (("2id", 'it\'s "quoted"\n-- not a comment\n/* nor this */'),)
    assert parse_metadata("COMMENT ON TABLE t IS 'a' 'b\\nc'").change.comment == "ab\nc"  # adjacent literals join
    assert parse_metadata("COMMENT ON TABLE t IS NULL").change == MetadataChange(clear_comment=True)
    hive = parse_metadata("ALTER TABLE t CHANGE COLUMN v v decimal(10, 2) COMMENT 'x'")
    assert hive.column_type == ("v", "decimal(10, 2)")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("COMMENT ON TABLE t IS 5", "COMMENT ON TABLE t: the comment must be a string literal, not '5'"),
        ("COMMENT ON TABLE t 'x'", "COMMENT ON TABLE t: expected IS"),
        ("SHOW TBLPROPERTIES t ('a'", "SHOW TBLPROPERTIES t: expected ')' after the key"),
        ("ALTER TABLE t SET TBLPROPERTIES 'a' = 'b'", "expected '(' and the properties"),
        ("ALTER TABLE t SET TBLPROPERTIES ('a' = )", "the value of a must be a string, number or boolean"),
        ("ALTER TABLE t ALTER COLUMN c COMMENT 'x' extra", "unexpected text at the end, not 'extra'"),
        (
            "ALTER TABLE t CHANGE COLUMN c d int COMMENT 'x'",
            "only the column's comment can be changed on a tablet table",
        ),
        ("DESCRIBE t a b", "DESCRIBE t: unexpected text at the end"),
    ],
)
def test_errors_name_the_statement(text, message):
    with pytest.raises(StatementParseError, match=message.replace("(", r"\(").replace(")", r"\)")) as e:
        parse_metadata(text)
    assert "Write " in e.value.help
