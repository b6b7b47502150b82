"""Statement text -> spec with sqlglot: every supported form and the errors that name the part."""

import pytest
from support.exprs import Clause
from tablets.exceptions import MergeSpecError, StatementParseError
from tablets.spec import (
    ActionKind,
    AddColumnsSpec,
    AppendSpec,
    Category,
    CreateSpec,
    DropColumnsSpec,
    DropSpec,
    RenameColumnSpec,
    Source,
)
from tablets.sql import create_provider, parse_statement, statement_target

pytestmark = pytest.mark.unit

M, NM, NMS = Category.MATCHED, Category.NOT_MATCHED, Category.NOT_MATCHED_BY_SOURCE
U, D, INS, N = ActionKind.UPDATE, ActionKind.DELETE, ActionKind.INSERT, ActionKind.DO_NOTHING


def test_stock_daily_sales():
    spec = parse_statement(
        "MERGE INTO Stock S USING DailySales DS ON S.Item = DS.Item "
        "WHEN MATCHED AND (QtyOnHand - QtySold = 0) THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET QtyOnHand = QtyOnHand - QtySold "
        "WHEN NOT MATCHED THEN INSERT VALUES (Item, QtySold)"
    )
    assert (spec.target, spec.target_alias, spec.source, spec.source_alias) == (
        "Stock",
        "S",
        Source(table="DailySales"),
        "DS",
    )
    assert str(spec.on) == "S.Item = DS.Item"
    assert spec.clauses == (
        Clause(M, D, "(QtyOnHand - QtySold = 0)"),
        Clause(M, U, None, (("QtyOnHand", "QtyOnHand - QtySold"),)),
        Clause(NM, INS, None, insert_values=("Item", "QtySold")),
    )


def test_all_categories_and_forms():
    spec = parse_statement(
        "MERGE INTO db.t USING (SELECT a, b FROM db.s WHERE b > 0) AS src ON t.a <=> src.a "
        "WHEN NOT MATCHED BY SOURCE AND t.b > 1 THEN DELETE WHEN MATCHED THEN UPDATE SET * "
        "WHEN NOT MATCHED BY TARGET THEN INSERT * WHEN NOT MATCHED AND src.a == 2 THEN DO NOTHING"
    )
    assert spec.target == "db.t" and spec.target_alias == "t"
    assert spec.source == Source(query="SELECT a, b FROM db.s WHERE b > 0") and spec.source_alias == "src"
    assert spec.null_safe
    assert [(c.category, c.action, c.star) for c in spec.clauses] == [
        (NMS, D, False),
        (M, U, True),
        (NM, INS, True),
        (NM, N, False),
    ]
    assert str(spec.clauses[3].condition) == "src.a = 2"


def test_insert_with_columns_and_values_source():
    spec = parse_statement(
        "MERGE INTO target t USING (VALUES (1, 2)) AS v(a, b) ON t.a = v.a "
        "WHEN NOT MATCHED THEN INSERT (a, b) VALUES (v.a, 100 * v.b)"
    )
    assert spec.source == Source(query="SELECT * FROM VALUES (1, 2) AS v(a, b)") and spec.source_alias == "v"
    assert spec.clauses[0] == Clause(NM, INS, None, insert_columns=("a", "b"), insert_values=("v.a", "100 * v.b"))


def test_on_conflict_do_update_is_a_merge():
    spec = parse_statement(
        "INSERT INTO target (id, value) VALUES (1, 'retro') ON CONFLICT (id) DO UPDATE SET value = EXCLUDED.value"
    )
    assert spec.operation == "INSERT" and spec.source_alias == "excluded"
    assert str(spec.on) == "`target`.`id` = excluded.`id`"
    assert spec.source.query.endswith("AS excluded(`id`, `value`)")
    assert spec.clauses == (
        Clause(M, U, None, (("value", "excluded.value"),)),
        Clause(NM, INS, None, insert_columns=("id", "value"), insert_values=("excluded.`id`", "excluded.`value`")),
    )


def test_on_conflict_do_nothing():
    spec = parse_statement("INSERT INTO db.t SELECT * FROM s ON CONFLICT (a, b) DO NOTHING")
    assert str(spec.on) == "`t`.`a` = excluded.`a` AND `t`.`b` = excluded.`b`"
    assert spec.clauses == (Clause(NM, INS, star=True),)


def test_update_and_delete_are_target_only_specs():
    up = parse_statement("UPDATE db.t SET b = b + 1 WHERE a > 3")
    assert (up.operation, up.source, up.clauses) == ("UPDATE", None, (Clause(NMS, U, "a > 3", (("b", "b + 1"),)),))
    de = parse_statement("DELETE FROM db.t")
    assert (de.operation, de.clauses) == ("DELETE", (Clause(NMS, D),))


def test_ddl_and_appends():
    assert parse_statement(
        "CREATE OR REPLACE TABLE db.t USING tablets TBLPROPERTIES ('key_columns'='a') AS SELECT 1 AS a"
    ) == CreateSpec("db.t", None, "SELECT 1 AS a", replace=True, properties=(("key_columns", "a"),))
    create = parse_statement("CREATE TABLE IF NOT EXISTS db.t (a INT, b STRING) USING tablets LOCATION '/x'")
    assert (create.columns_ddl, create.if_not_exists, create.location) == ("`a` INT, `b` STRING", True, "/x")
    assert parse_statement("DROP TABLE IF EXISTS db.t") == DropSpec("db.t", if_exists=True)
    assert parse_statement("INSERT INTO db.t (a) VALUES (1)") == AppendSpec("db.t", "SELECT * FROM VALUES (1)", ("a",))
    assert parse_statement("INSERT OVERWRITE TABLE db.t SELECT * FROM s").overwrite
    assert parse_statement("ALTER TABLE db.t ADD COLUMNS (c INT)") == AddColumnsSpec("db.t", (("c", "int"),))


def test_rename_and_drop_columns():
    assert parse_statement("ALTER TABLE db.t RENAME COLUMN a TO `b c`") == RenameColumnSpec("db.t", "a", "b c")
    assert parse_statement("ALTER TABLE t DROP COLUMN c") == DropColumnsSpec("t", ("c",))
    assert parse_statement("alter table t drop columns if exists (c, `d`)") == DropColumnsSpec(
        "t", ("c", "d"), if_exists=True
    )
    assert statement_target("ALTER TABLE db.t RENAME COLUMN a TO b") == ("ALTER", "db.t")
    with pytest.raises(StatementParseError, match="fields of struct columns cannot be renamed or dropped"):
        parse_statement("ALTER TABLE t RENAME COLUMN s.x TO y")
    with pytest.raises(
        StatementParseError, match="ALTER COLUMN c TYPE BIGINT' is not supported on tablet tables \(one of: ADD"
    ):
        parse_statement("ALTER TABLE t ALTER COLUMN c TYPE BIGINT")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("MERGE INTO db.t USING s ON t.a = s.a WHEN MATCHED THEN DELETE", ("MERGE", "db.t")),
        ("  insert into t values (1)", ("INSERT", "t")),
        ("UPDATE t SET a = 1", ("UPDATE", "t")),
        ("DELETE FROM x.y WHERE a = 1", ("DELETE", "x.y")),
        ("CREATE TABLE t (a INT) USING tablets", ("CREATE", "t")),
        ("DROP TABLE t", ("DROP", "t")),
        ("SELECT 1", None),
        ("WITH x AS (SELECT 1) SELECT * FROM x", None),
        ("create or replace temporary view v as select 1", None),
        ("CREATE VIEW v AS SELECT 1", None),
        ("SHOW TABLES", None),
        ("DESCRIBE db.t", None),
        ("garbage !!", None),
    ],
)
def test_statement_target(text, expected):
    assert statement_target(text) == expected


def test_create_provider():
    assert create_provider("CREATE TABLE db.t (a INT) USING tablets") == "tablets"
    assert create_provider("CREATE TABLE db.t (a INT) USING parquet") == "parquet"
    assert create_provider("CREATE TABLE db.t (a INT)") is None


@pytest.mark.parametrize(
    ("text", "error", "match"),
    [
        (
            "MERGE INTO t USING s ON t.a = s.a WHEN MATCHED THEN INSERT *",
            MergeSpecError,
            "WHEN MATCHED clause #1.*INSERT is not allowed",
        ),
        (
            "MERGE INTO t USING s ON t.a = s.a WHEN NOT MATCHED THEN UPDATE SET a = 1",
            MergeSpecError,
            "UPDATE is not allowed under WHEN NOT MATCHED",
        ),
        ("MERGE INTO t USING s ON t.a = s.a WHEN MATCHED THEN UPDATE SET s.a = 1", MergeSpecError, "not of the target"),
        (
            "MERGE INTO t USING s ON t.a = s.a WHEN MATCHED THEN UPDATE SET a = 1, a = 2",
            MergeSpecError,
            "more than once",
        ),
        (
            "MERGE INTO t USING s ON t.a = s.a WHEN NOT MATCHED THEN INSERT (a, b) VALUES (1)",
            MergeSpecError,
            "2 columns but gives 1",
        ),
        ("MERGE INTO t USING s ON WHEN", StatementParseError, "ON needs a condition"),
        ("SELECT 1", StatementParseError, "not a statement that writes"),
    ],
)
def test_errors_name_the_part(text, error, match):
    with pytest.raises(error, match=match):
        parse_statement(text)


def test_char_and_varchar_columns_are_strings_and_defaults_are_refused():
    create = parse_statement("CREATE TABLE db.t (a CHAR(3), b VARCHAR(5) NOT NULL, c INT) USING tablets")
    assert create.columns_ddl == "`a` STRING, `b` STRING, `c` INT"
    assert parse_statement("ALTER TABLE db.t ADD COLUMNS (c varchar(200))").columns == (("c", "string"),)
    with pytest.raises(StatementParseError, match="column c: DEFAULT 'x' is not supported"):
        parse_statement("ALTER TABLE db.t ADD COLUMN c varchar(200) DEFAULT 'x'")
    with pytest.raises(StatementParseError, match="column k: COLLATE UTF8_LCASE is not supported") as info:
        parse_statement("CREATE TABLE db.t (k STRING COLLATE UTF8_LCASE) USING tablets")
    assert "byte by byte" in info.value.help


def test_a_file_read_by_path_as_the_source_keeps_its_quotes():
    spec = parse_statement("MERGE INTO t USING parquet.`/data/a.b/src` s ON t.id = s.id WHEN MATCHED THEN DELETE")
    assert (spec.source, spec.source_alias) == (Source(query="SELECT * FROM parquet.`/data/a.b/src`"), "s")
    spec = parse_statement("MERGE INTO t USING parquet.`/data/src/` ON t.id = src.id WHEN MATCHED THEN DELETE")
    assert (spec.source, spec.source_alias) == (Source(query="SELECT * FROM parquet.`/data/src/`"), "src")
    spec = parse_statement("MERGE INTO t USING tablets.`/data/x` s ON t.id = s.id WHEN MATCHED THEN DELETE")
    assert spec.source == Source(table="tablets./data/x")  # a tablet table by path: the catalog resolves it


def test_statements_sqlglot_keeps_as_a_command_log_no_warning(caplog):
    """dbt runs ``show databases`` on every connection: routing it must not log sqlglot's
    "unsupported syntax" warning each time."""
    from tablets.sql.reads import references

    with caplog.at_level("WARNING"):
        assert statement_target("show databases") is None
        references("show databases")
    assert not [r for r in caplog.records if "Falling back" in r.getMessage()]


def test_split_statements_at_the_semicolons_between_them():
    from tablets.sql import split_statements

    assert split_statements("SET TIME ZONE 'Asia/Kolkata';\nselect 1") == ["SET TIME ZONE 'Asia/Kolkata'", "\nselect 1"]
    # semicolons in literals, identifiers and comments stay; empty pieces go
    text = "select ';' as a; -- c;\n select `x;y` from t /* ; */;  ;"
    assert split_statements(text) == ["select ';' as a", " -- c;\n select `x;y` from t /* ; */"]
    assert split_statements("select 1") == ["select 1"]
    assert split_statements("select 'unclosed;") == ["select 'unclosed;"]  # its parse reports it
