"""Python models on the session method: ``def model(dbt, session)`` runs inside the dbt process,
on the adapter's own SparkSession (the way dbt-duckdb runs Python models locally), and the
frame it returns becomes a temporary view that the SQL materializations read.

dbt-core hands the adapter the compiled code (``adapter.submit_python_job``): the model file,
dbt's ``py_script_postfix`` (``ref``, ``source``, ``config``, ``this``, ``dbtObj``,
``is_incremental``) and the trailer of ``macros/materializations/python_model.sql``, which
names the view (``dbt_tablets_view = "<alias>__dbt_python"``). Here the code runs as a module
whose globals also hold ``spark`` (the session, as in a Databricks notebook); then::

    dbt = dbtObj(<load>)        # dbt.ref / dbt.source: SELECT * FROM <relation> through the
                                # engine's front door (tablet tables on Spark's Parquet scan)
    frame = model(dbt, session) # a Spark DataFrame, a pandas DataFrame, a pandas-on-Spark
                                # DataFrame or a pyarrow Table (converted by the same session)
    frame.createOrReplaceTempView(dbt_tablets_view)

The materialization then runs ``select * from <view>`` through its SQL path (CREATE TABLE AS,
MERGE, INSERT) and drops the view. A failure of the user's code is one dbt error naming the
model, the Python exception and the model file's lines in the traceback.
"""

from __future__ import annotations

import linecache
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dbt.adapters.base import PythonJobHelper
from dbt.adapters.contracts.connection import AdapterResponse
from dbt_common.exceptions import DbtRuntimeError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from tablets.db import Database

SUBMISSION_METHOD = "session"
VIEW_VARIABLE = "dbt_tablets_view"
MAX_MESSAGE = 2000

_lock = threading.Lock()
_views: dict[int, set[str]] = {}  # thread -> the views its Python models registered


@dataclass(frozen=True)
class PythonModelRun:
    """What one run of a Python model produced: the view holding its frame."""

    model: str
    view: str
    columns: tuple[str, ...]
    seconds: float

    def response(self) -> AdapterResponse:
        return AdapterResponse(
            _message=f"PYTHON {self.model}: {len(self.columns)} columns as view {self.view}",
            code="PYTHON",
        )


class PythonModelError(DbtRuntimeError):
    """The user's Python code (or what it returned) failed; the message names the model."""


class SessionPythonJobHelper(PythonJobHelper):
    """dbt's job helper of the ``session`` submission method: the job is the model itself, run
    on the session of ``database`` (the adapter passes its thread connection's)."""

    def __init__(self, parsed_model: dict[str, Any], credentials: Any, database: Database | None = None) -> None:
        if database is None:
            raise DbtRuntimeError("the session submission method needs the adapter's Database")
        self.parsed_model = parsed_model
        self.credentials = credentials
        self.database = database

    def submit(self, compiled_code: str) -> PythonModelRun:
        return run_python_model(self.database, self.parsed_model, compiled_code)


def submission_method(parsed_model: Mapping[str, Any]) -> str:
    """The model's ``submission_method``: only ``session``. dbt-spark's (Databricks job and
    all-purpose clusters) have no meaning here: the code runs on the adapter's session."""
    method = (parsed_model.get("config") or {}).get("submission_method") or SUBMISSION_METHOD
    if method != SUBMISSION_METHOD:
        raise PythonModelError(
            f"Python model '{parsed_model.get('name')}': submission_method = {method!r} is not "
            f"supported by dbt-tablets (allowed: {SUBMISSION_METHOD!r}).\n"
            "Help: remove submission_method from the model's config; dbt-tablets runs Python "
            "models in the dbt process, on the Spark session of the profile."
        )
    return method


def run_python_model(db: Database, parsed_model: Mapping[str, Any], compiled_code: str) -> PythonModelRun:
    """Run the compiled model on ``db.spark`` and register its frame as the view the trailer names."""
    name = str(parsed_model.get("name") or parsed_model.get("alias") or "python model")
    filename = str(parsed_model.get("original_file_path") or f"{name}.py")
    start = time.monotonic()
    namespace = _execute(compiled_code, name, filename, db.spark)
    view = namespace.get(VIEW_VARIABLE)
    missing = [n for n in ("model", "dbtObj") if not callable(namespace.get(n))]
    if not isinstance(view, str) or missing:
        what = f"no function {' or '.join(missing)}" if missing else f"no {VIEW_VARIABLE}"
        raise PythonModelError(
            f"Python model '{name}' ({filename}): the compiled code has {what}.\n"
            "Help: define `def model(dbt, session):` returning a DataFrame, and use a "
            "materialization that runs Python models (table, incremental, merge_tablets)."
        )
    dbt = namespace["dbtObj"](_loader(db))
    result = _call(lambda: namespace["model"](dbt, db.spark), name, filename)
    frame = as_spark_frame(result, db.spark, name)
    _call(lambda: frame.createOrReplaceTempView(view), name, filename)
    with _lock:
        _views.setdefault(threading.get_ident(), set()).add(view)
    return PythonModelRun(name, view, tuple(frame.columns), time.monotonic() - start)


def drop_views(database: Callable[[], Database]) -> None:
    """Drop the views this thread's Python models registered: the materialization drops its own,
    except when its SQL failed (dbt's post_model_hook calls this after every model)."""
    with _lock:
        views = _views.pop(threading.get_ident(), set())
    for view in sorted(views):
        database().spark.sql(f"DROP VIEW IF EXISTS {view}")


def as_spark_frame(result: Any, spark: SparkSession, model: str) -> DataFrame:
    """The model's return value as a Spark DataFrame of ``spark``."""
    from pyspark.sql import DataFrame  # here: dbt loads the plugin (parse, --version) without pyspark

    if isinstance(result, DataFrame):
        return result
    kind = f"{type(result).__module__}.{type(result).__qualname__}"
    if kind.startswith("pyspark.pandas.") and hasattr(result, "to_spark"):
        with warnings.catch_warnings():  # its index is dropped, as pandas' is below
            warnings.simplefilter("ignore")
            return result.to_spark()
    if _is_pandas(result) or _is_arrow_table(result):
        try:
            if _is_arrow_table(result):  # PySpark drops every record batch after an empty one
                result = type(result).from_batches([b for b in result.to_batches() if b.num_rows], schema=result.schema)
            return spark.createDataFrame(result)
        except Exception as e:  # noqa: BLE001 - Spark's conversion errors, reported with the model
            raise PythonModelError(
                f"Python model '{model}' returned a {kind} that Spark cannot convert: {_describe(e)}\n"
                "Help: give its columns types Spark knows (no mixed-type object columns), or "
                "return session.createDataFrame(rows, schema) instead."
            ) from None
    raise PythonModelError(
        f"Python model '{model}' returned {kind}, not a DataFrame.\n"
        "Help: return a Spark DataFrame (dbt.ref(...), session.createDataFrame(...)), a pandas "
        "DataFrame or a pyarrow Table from model(dbt, session)."
    )


# --- running the user's code ------------------------------------------------------------------


def _execute(code: str, name: str, filename: str, spark: SparkSession) -> dict[str, Any]:
    # tracebacks show the compiled lines under the model's own path (the user's code comes first,
    # unrendered, so its line numbers are the file's)
    linecache.cache[filename] = (len(code), None, code.splitlines(keepends=True), filename)
    namespace: dict[str, Any] = {"__name__": f"dbt_python_model_{name}", "__file__": filename, "spark": spark}
    try:
        compiled = compile(code, filename, "exec")
    except SyntaxError as e:
        raise PythonModelError(
            f"Python model '{name}' ({filename}) does not compile: {e.msg} (line {e.lineno})\n"
            f"  {(e.text or '').strip()}"
        ) from None
    _call(lambda: exec(compiled, namespace), name, filename)
    return namespace


def _call(fn: Callable[[], Any], name: str, filename: str) -> Any:
    try:
        return fn()
    except DbtRuntimeError:
        raise
    except Exception as e:  # noqa: BLE001 - any error of the user's code becomes one dbt error
        lines = _model_frames(e, filename)
        where = ("\n" + "\n".join(lines)) if lines else ""
        raise PythonModelError(f"Python model '{name}' failed: {_describe(e)}{where}") from None


def _model_frames(exc: BaseException, filename: str) -> list[str]:
    out = []
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == filename:
            out.append(f"  {filename}, line {frame.lineno}, in {frame.name}: {(frame.line or '').strip()}")
    return out


def _describe(exc: BaseException) -> str:
    """``Type: message``, without the JVM stack trace or the logical plan Spark appends."""
    text = str(exc).strip()
    for cut in ("\nJVM stacktrace:", "\n\nJVM stacktrace:", ";\n"):
        if cut in text:
            text = text.split(cut, 1)[0]
    if len(text) > MAX_MESSAGE:
        text = text[: MAX_MESSAGE - 3] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _loader(db: Database) -> Callable[[str], DataFrame]:
    def load(relation: str) -> DataFrame:
        return db.sql(f"SELECT * FROM {relation}")  # type: ignore[return-value] - a query

    return load


def _is_pandas(value: Any) -> bool:
    try:
        import pandas  # here: only a model that returns one needs it
    except ImportError:
        return False
    return isinstance(value, pandas.DataFrame)


def _is_arrow_table(value: Any) -> bool:
    try:
        import pyarrow  # here: only a model that returns one needs it
    except ImportError:
        return False
    return isinstance(value, pyarrow.Table)
