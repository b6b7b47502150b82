"""A failed Spark job's error as the engine's own (``tablets.exceptions``), with a Help line that
fits the failure, and Spark's messages without the engine's internal names."""

from __future__ import annotations

import re

from tablets import exceptions
from tablets.exceptions import (
    ExecutionError,
    TabletsError,
)
from tablets.storage.tablet import damaged


def job_failed(what: str, e: Exception) -> TabletsError:
    """The error of a failed Spark job (a PySparkException, or py4j's for a job the JVM aborted),
    with a Help line that fits the failure: a tablets error raised in a Python worker (a damaged
    tablet's FormatError) comes back as itself, message and help intact; a tablet that Spark's
    Parquet reader found damaged is a FormatError naming it; else the environment (a Spark API
    missing on Spark Connect, a package missing in the executors' Python) or the statement."""

    text = str(e)
    # a worker's traceback ends with "tablets.exceptions.<Class>: <message>\nHelp: <help>"
    own = list(re.finditer(r"^tablets\.exceptions\.(\w+): (.*)\n(?:Help: (.*))?", text + "\n", re.MULTILINE))
    kind = getattr(exceptions, own[-1].group(1), None) if own else None
    if own and isinstance(kind, type) and issubclass(kind, TabletsError):
        return kind(own[-1].group(2), help=own[-1].group(3))
    # the native scan's: "[FAILED_READ_FILE...] Encountered error while reading file <uri>. ..."
    read = re.search(r"Encountered error while reading file (\S+?)\.?\s", text)
    if read is not None:
        causes = re.findall(r"Caused by: [\w.$]+: (.+)", text)
        why = causes[-1].strip() if causes else "unreadable"
        path = re.sub(r"^file:(//)?", "", read.group(1))
        if re.search(r"/tablets/[0-9a-f]{32}\.parquet$", path):
            return damaged(path, why)
        return ExecutionError(f"{what} failed reading {path}: {why}")
    cls = (getattr(e, "getCondition", None) or (lambda: None))() or ""
    if cls in ("NOT_IMPLEMENTED", "JVM_ATTRIBUTE_NOT_SUPPORTED") or isinstance(e, NotImplementedError):
        return ExecutionError(
            f"{what} failed: the engine used an operation this Spark session (e.g. Spark Connect) does not offer: "
            f"{first_line(e)}",
            help="This is a limitation of dbt-tablets on this kind of session, not a problem with the statement or "
            "its data; the table is unchanged. Please report it, with the message above.",
        )
    missing = re.search(r"No module named '([\w.]+)'", text)
    if missing is not None:
        module = missing.group(1)
        fix = (
            "the tablets package is shipped with every session (tablets.spark.ship): check the log for a "
            "warning that shipping failed, or install dbt-tablets there"
            if module.split(".")[0] == "tablets"
            else "install the `worker` extra's packages there (pip install 'dbt-tablets[worker]')"
        )
        return ExecutionError(
            f"{what} failed: Spark's Python workers cannot import {module}",
            help=f"The executors' Python (spark.pyspark.python) lacks {module}: {fix}. The table is unchanged.",
        )
    # a Python function's error (a UDF of a Python model): its exception and where, not the first line
    if "An exception was thrown from the Python worker" in text:
        body = text.split("JVM stacktrace:", 1)[0]
        raised = re.findall(r"^([A-Za-z_][\w.]*: .*)$", body, re.MULTILINE)
        where = re.findall(r'File "([^"]+)", line (\d+), in (\S+)', body)
        at = f" ({where[-1][0]}, line {where[-1][1]}, in {where[-1][2]})" if where else ""
        if raised:
            return ExecutionError(f"{what} failed: a Python function raised {raised[-1][:500]}{at}")
    lines = _message_lines(text)
    return ExecutionError(f"{what} failed while running: {lines[0][:500] if lines else type(e).__name__}")


def _message_lines(text: str) -> list[str]:
    """The lines of a Spark error's message: without py4j's first line ("An error occurred while
    calling o123.x", the JVM's message follows) and the JVM stack trace (Spark Connect's)."""
    return [
        ln.lstrip(": ")
        for ln in text.split("JVM stacktrace:", 1)[0].splitlines()
        if ln.strip() and not ln.startswith("An error occurred while calling")
    ]


_SUGGESTIONS = re.compile(r"\s*Did you mean one of the following\?\s*\[[^\]]*\]\.?")
# Spark's position in the text it analysed: the engine's rewrite of a statement's part, never a
# place in the statement the user wrote
_POSITION = re.compile(r"\s*\(line \d+, pos \d+\)|;?\s*\bline \d+,? pos \d+;?")


_INTERNAL = re.compile(r"`?(?:\w+\.)?`?__tablets_\w+`?")


def spark_message(e: Exception) -> str:
    """The first line of a Spark error, without the engine's internal column names (Spark's
    suggestions list them), the SQLSTATE tail and the position in the text Spark analysed."""
    text = _POSITION.sub("", _SUGGESTIONS.sub("", first_line(e)))
    text = re.sub(r"\s*SQLSTATE: \w+\.?$", "", text)
    return _INTERNAL.sub("(an internal column)", text)


def short_error(e: BaseException) -> str:
    """A Spark error as a user reads it: its message's first line, without the analysed plan that
    follows it or the JVM's stack trace, and with the engine's internal columns unnamed. A
    ``TabletsError`` is the engine's own message, whole (its Help line included)."""
    if isinstance(e, exceptions.TabletsError):
        return str(e).strip()
    lines = _message_lines(str(e).strip())
    line = re.sub(r";\s*$", "", lines[0].strip()) if lines else type(e).__name__  # "... line 1 pos 7;" then the plan
    return _INTERNAL.sub("(an internal column)", line)[:1000]


def first_line(e: Exception) -> str:
    text = str(e).strip()
    return text.splitlines()[0][:500] if text else type(e).__name__
