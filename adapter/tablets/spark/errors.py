"""Spark's failures in the product's words, whichever call meets them.

A query's failure surfaces where its job runs: at ``collect()``, ``toPandas()`` or ``show()`` of a
DataFrame that ``db.sql`` or plain ``spark.sql`` returned, long after the product's own code has
returned. PySpark turns each Java exception into a Python one at its py4j boundary
(``pyspark.errors.exceptions.captured``); ``install`` adds one step to that boundary, so that the
failures the product can name become ``TabletsError``s for every DataFrame, derived ones too:

- a damaged tablet read by Spark's Parquet scan (parquet-mr's page CRC check: ``FAILED_READ_FILE``
  naming a tablet) or by the Python data source (a worker's ``FormatError``): the ``FormatError``
  naming the tablet;
- a damaged deletion vector met by a scan's task (``tablets.spark.vectors``): the ``FormatError``
  naming the vector, as ``tablets.storage.dv.read_dv`` words it;
- the metastore server lost under a session (its Thrift connection refused or reset): one line
  naming the server and what to do, not Hive's retries and stack.

Any other failure passes through unchanged, and so does every error over Spark Connect (no py4j).
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable
from typing import Any

import py4j.java_gateway
from pyspark.errors.exceptions import captured

from tablets.exceptions import FormatError, TabletsError
from tablets.storage.tablet import damaged

_READ_FAILED = re.compile(r"Encountered error while reading file (\S+?)\.?\s")
_CAUSE = re.compile(r"Caused by: [\w.$]+: (.+)")
_WORKER = re.compile(r"^tablets\.exceptions\.FormatError: (.*)\n(?:Help: (.*))?", re.MULTILINE)
_TABLET = re.compile(r"/tablets/[0-9a-f]{32}\.parquet$")
_VECTOR = re.compile(r"tablets: deletion vector (\S+): ([^\n]+)")  # DeletionVectors.java's failures


def read_error(error: BaseException) -> FormatError | None:
    """The ``FormatError`` of a query that failed reading a damaged tablet with Spark's Parquet
    scan (parquet-mr's page CRC check), naming the tablet, or that the Python source raised (a
    log it cannot read: Spark's error holds the worker's traceback); None for any other error."""
    text = str(error)
    own = list(_WORKER.finditer(text + "\n"))
    if own:
        return FormatError(own[-1].group(1), help=own[-1].group(2))
    vector = _VECTOR.search(text)
    if vector is not None:
        return FormatError(f"deletion vector {re.sub(r'^file:(//)?', '', vector.group(1))}: {vector.group(2).strip()}")
    m = _READ_FAILED.search(text)
    if m is None:
        return None
    path = re.sub(r"^file:(//)?", "", m.group(1))
    if not _TABLET.search(path):
        return None
    causes = _CAUSE.findall(text)
    return damaged(path, causes[-1].strip() if causes else "unreadable")


class MetastoreUnavailable(TabletsError):
    """The session's metastore server stopped answering."""


_THRIFT_LOST = re.compile(
    r"TTransportException|Could not connect to meta ?store|java\.net\.ConnectException: Connection refused"
    r"|SocketException: (?:Connection reset|Broken pipe)",
    re.IGNORECASE,
)


def metastore_error(error: BaseException, uris: str | None) -> MetastoreUnavailable | None:
    """The clear error of a catalog call that lost the session's metastore server (``uris``:
    ``spark.hadoop.hive.metastore.uris``; None or empty: an embedded metastore, no server)."""
    if not uris or not _THRIFT_LOST.search(str(error)):
        return None
    port = uris.rsplit(":", 1)[-1]
    return MetastoreUnavailable(
        f"the metastore server {uris} stopped answering, so the catalog could not be read or changed",
        help=f"Start it again (`python -m tablets.spark.metastore --warehouse <warehouse> --port {port}`) and run the "
        "statement again; a table whose catalog entry was not written is not in SHOW TABLES (CREATE it again).",
    )


_lock = threading.Lock()
_uris: dict[int, str] = {}  # by py4j gateway client: the sessions' metastore servers


def _wrap(call: Callable[..., Any]) -> Callable[..., Any]:
    if getattr(call, "_tablets", False):
        return call

    @functools.wraps(call)
    def translating(answer: Any, gateway_client: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return call(answer, gateway_client, *args, **kwargs)
        except TabletsError:
            raise
        except Exception as e:
            clear = read_error(e) or metastore_error(e, _uris.get(id(gateway_client)))
            if clear is None:
                raise
            raise clear from e

    translating._tablets = True  # type: ignore[attr-defined]  # noqa: SLF001 - our mark on PySpark's hook
    return translating


def install(spark: Any) -> None:
    """Translate the failures above for every py4j call of ``spark``'s process (a no-op over
    Spark Connect). PySpark reinstalls its own handler whenever a session is made; it is wrapped
    too, so a later ``newSession()`` keeps the translation."""
    sc = getattr(spark, "_sc", None)
    if sc is None:
        return

    uris = sc.getConf().get("spark.hadoop.hive.metastore.uris", "") or ""
    with _lock:
        _uris[id(sc._gateway._gateway_client)] = uris  # noqa: SLF001
        capture = captured.capture_sql_exception
        if not getattr(capture, "_tablets", False):

            def capture_translated(f: Callable[..., Any]) -> Callable[..., Any]:
                return _wrap(capture(f))

            capture_translated._tablets = True  # type: ignore[attr-defined]  # noqa: SLF001 - our mark on PySpark's hook
            captured.capture_sql_exception = capture_translated
        py4j.java_gateway.get_return_value = _wrap(py4j.java_gateway.get_return_value)
