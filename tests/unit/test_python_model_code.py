"""Python models, the parts without a JVM: the submission method, how a Python exception is
reported (the user's, and a UDF's coming back from a Spark job)."""

import pytest
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.tablets.python_models import _describe, submission_method

pytestmark = pytest.mark.unit


def test_only_the_session_submission_method():
    assert submission_method({"name": "m", "config": {}}) == "session"
    assert submission_method({"name": "m", "config": {"submission_method": "session"}}) == "session"
    with pytest.raises(DbtRuntimeError) as info:
        submission_method({"name": "m", "config": {"submission_method": "all_purpose_cluster"}})
    text = str(info.value)
    assert "Python model 'm'" in text and "'all_purpose_cluster'" in text and "Help:" in text


def test_a_spark_error_is_its_message_without_plan_or_jvm_trace():
    from pyspark.errors import PySparkException

    e = PySparkException(message="[UNRESOLVED_COLUMN] `nope` cannot be resolved.;\n'Project ['nope]\n+- Range")
    assert _describe(e) == "PySparkException: [UNRESOLVED_COLUMN] `nope` cannot be resolved."
    assert _describe(ZeroDivisionError("division by zero")) == "ZeroDivisionError: division by zero"
    assert _describe(KeyError()) == "KeyError"


def test_a_udf_error_names_the_python_exception_and_the_model_line():
    from pyspark.errors import PythonException
    from tablets.engine.errors import job_failed as _failed

    e = PythonException(
        message="An exception was thrown from the Python worker:\nTraceback (most recent call last):\n"
        '  File "/site/pyspark/worker.py", line 1, in main\n    process()\n'
        '  File "models/m.py", line 5, in boom\n    raise ValueError(f"bad row {x}")\n'
        "ValueError: bad row 1\n\nJVM stacktrace:\norg.apache.spark.api.python.PythonException: x: y\n"
    )
    text = str(_failed("CREATE TABLE AS SELECT s.m", e))
    assert text.startswith(
        "CREATE TABLE AS SELECT s.m failed: a Python function raised ValueError: bad row 1 "
        "(models/m.py, line 5, in boom)"
    )
    assert "Help:" in text and "JVM" not in text
