"""The first line of Spark's error as the engine quotes it (``tablets.engine.errors.spark_message``)."""

import pytest
from tablets.engine.errors import spark_message

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    "raw, said",
    [
        (
            "[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column, variable, or function parameter with name `x` cannot be "
            "resolved. Did you mean one of the following? [`s`.`__tablets_row_id`, `s`.`id`]. SQLSTATE: 42703; "
            "line 1 pos 135;\n'Project [...]",
            "[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column, variable, or function parameter with name `x` cannot be "
            "resolved.",
        ),
        (
            "[PARSE_SYNTAX_ERROR] Syntax error at or near ')'. SQLSTATE: 42601 (line 1, pos 7)",
            "[PARSE_SYNTAX_ERROR] Syntax error at or near ')'.",
        ),
        ("[DIVIDE_BY_ZERO] Division by zero. SQLSTATE: 22012", "[DIVIDE_BY_ZERO] Division by zero."),
    ],
)
def test_a_position_in_the_engines_rewrite_is_not_quoted(raw, said):
    """Regression (the bad-input suite's KNOWN "a rewrite's position", 8 in its 5,000-statement soak):
    Spark's ``line 1 pos N`` counts in the text Spark analysed, the engine's rewrite of a part of
    the statement, which the user never wrote; a position past the statement's end said so."""
    assert spark_message(Exception(raw)) == said
