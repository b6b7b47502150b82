"""Generated bad input (issue #59): statements from Spark's DDL and DML grammar over tablet
tables (support.badgen), valid and invalid, each held to one rule: it runs, or it is refused with
a ``TabletsError`` in the user's words, and a statement that fails leaves every table it names
as it was (a tablet table's version and rows; a new name still absent). A statement that holds a
value tablets must refuse (``Stmt.refuse``: target_tablet_rows 1e3, RETAIN NaN HOURS, VERSION AS
OF 99, CREATE TEMPORARY TABLE) may not run; one that ran must leave its tables readable.

A ``TabletsError``'s message may not be a raw error: no ``py4j``, ``java.``, ``org.apache``,
``Traceback`` or JVM stack, no Python error text (``'NoneType' object ...``, ``invalid literal
for int()``), no error class (``AnalysisException``, ``[UNRESOLVED_COLUMN]``) at its start, no
internal name (``__tablets_*``, the views ``tablets_asof_*`` / ``tablets_changes_*`` /
``tablets_path_*``, a provider ``tablets_<digest>``, a physical column ``col-<uuid>``) that the
statement does not itself hold, no MERGE clause in a statement that has none (an UPDATE runs as a
MERGE), no Spark position past the statement's end (a position in a rewrite of it).

Spark's own errors (``pyspark.errors``) are Spark's rule, not a tablets defect, where Spark gives
the same answer for the same text on any table (``spark_rule``):

- a parse error of the statement as written (the ``== SQL ==`` Spark shows is the user's text),
  except for a statement Spark has no grammar for (OPTIMIZE, VACUUM, RESTORE, DESCRIBE HISTORY,
  SHALLOW CLONE: its "syntax error at VACUUM" would mislead) and a row write to a tablet table
  (tests/spark/test_bad_input.py: the front door parses those and answers);
- an analysis or runtime error of a query (``SELECT ... AS OF``, ``table_changes``): Spark
  resolving the query's columns and values, as for a Delta table (unless table_changes itself
  was not read: UNRESOLVED_ROUTINE);
- the session catalog's rules on names (``SPARK_RULES``: a name it cannot take, or one taken),
  and a missing table that is indeed missing (TABLE_OR_VIEW_NOT_FOUND of a name no fixture has);
- any error of a statement tablets does not run (``Stmt.front_door`` false: no tablet table is
  its target, no USING tablets, not one of ``badgen.TABLET_KINDS``): an INSERT into a Parquet
  table, an ALTER TABLE of a view.

Anything else is a defect: a Spark error on a statement tablets runs, a ``Py4JJavaError``, a
Python error (``ValueError``, ``KeyError``, ...), a table changed by a statement that failed, a
table that cannot be read after a statement that ran, a value it must refuse taken. ``KNOWN``
lists the defects found and not yet fixed (counted, not failed; ``TABLETS_BADGEN_STRICT=1`` fails them).

Default: ``STATEMENTS`` (300) statements in seeds of ``PER_SEED`` (~50 s); ``TABLETS_SLOW=1`` a
soak of 5,000 from seeds of their own; ``TABLETS_BADGEN_STATEMENTS=n`` and ``TABLETS_BADGEN_SEED=n``
set them. ``-s`` prints the tally per kind; badgen.txt in the test's tmp dir holds it, the
defects and every statement with what it did.
"""

from __future__ import annotations

import collections
import contextlib
import os
import re
import time

import pytest
from pyspark.errors import ParseException, PySparkException
from support import badgen
from support.badgen import QUERY_KINDS, SETUP, TABLETS, Stmt
from tablets.exceptions import TabletsError

pytestmark = pytest.mark.spark

DATABASE = badgen.DB  # created by the conftest's db fixture
SLOW = bool(os.environ.get("TABLETS_SLOW"))
STATEMENTS = int(os.environ.get("TABLETS_BADGEN_STATEMENTS", "5000" if SLOW else "300"))
SEED = int(os.environ.get("TABLETS_BADGEN_SEED", "100000" if SLOW else "0"))
PER_SEED = 25
STRICT = bool(os.environ.get("TABLETS_BADGEN_STRICT"))  # KNOWN defects fail the test too

# Defects found and not yet fixed: (kinds or (), a
# pattern over "<error type>: <its first line> | <the defect> | <the statement>", what to fix).
# Each is counted (``-s``), not failed, unless TABLETS_BADGEN_STRICT=1; remove an entry when fixed.
KNOWN: dict[str, tuple[set[str], str, str]] = {}

RAW = re.compile(r"py4j|\bjava\.|org\.apache|Traceback|JVM stacktrace|\n\s+at [\w$.]+\(")
RAW_START = re.compile(r"^\s*(?:pyspark\.|[\w.]*(?:Exception|Error)\b|\[[A-Z][A-Z0-9_.]+\])")
PYTHON = re.compile(
    r"object has no attribute|index out of range|invalid literal for|could not convert|unsupported operand|"
    r"'NoneType'|positional argument|not subscriptable|unhashable type|object is not iterable|"
    r"referenced before assignment|math domain error|cannot convert float"
)
INTERNAL = re.compile(
    r"__tablets\w*|\btablets_(?:asof|changes|path|read)_\w+|\btablets_[0-9a-f]{12}\b|_tablets_registry|\bcol-[0-9a-f]{8}-"
)
# Spark's rules that hold on every path: the session catalog's names (a name it cannot take, one taken)
SPARK_RULES = {"INVALID_SCHEMA_OR_RELATION_NAME", "INVALID_ATTRIBUTE_NAME_SYNTAX", "TABLE_OR_VIEW_ALREADY_EXISTS"}
ROW_WRITES = {"insert", "insert_conflict", "update", "delete", "merge", "truncate"}
OWN_GRAMMAR = {"optimize", "vacuum", "restore", "history", "clone"}  # Spark (without Delta) parses none
CLAUSE = re.compile(r"\bWHEN (?:NOT )?MATCHED\b|\bclause #\d")  # the engine's words for a MERGE's parts
NAMES_A_TABLET = re.compile(r"\bbadgen\.(`?)[tu]\1(?![\w`])", re.IGNORECASE)


def first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [""])[0][:300]


def leaked(text: str, stmt: Stmt) -> list[str]:
    return sorted({m for m in INTERNAL.findall(text) if m.lower() not in stmt.sql.lower()})


def spark_rule(stmt: Stmt, e: PySparkException) -> bool:
    """Whether Spark's own error is Spark's answer to the statement (the docstring's cases)."""
    target = stmt.watch[0]
    if isinstance(e, ParseException):
        text = str(e)
        parsed = text.split("== SQL ==", 1)[1].strip().splitlines()[0] if "== SQL ==" in text else None
        if parsed is not None and parsed.strip() != stmt.sql.strip().splitlines()[0].strip():
            return False  # a rewrite of the statement
        return stmt.kind not in OWN_GRAMMAR and not (target in TABLETS and stmt.kind in ROW_WRITES)
    condition = e.getCondition() or ""
    if condition.startswith("UNRESOLVED_ROUTINE"):
        return False  # table_changes, not read
    if stmt.kind in QUERY_KINDS or condition in SPARK_RULES:
        return True
    if condition.startswith("TABLE_OR_VIEW_NOT_FOUND") and stmt.kind not in OWN_GRAMMAR:
        missing = ".".join(re.findall(r"`([^`]*)`", str(e).split("cannot be found", 1)[0]))
        return missing.lower() not in TABLETS  # Spark's answer, unless the "missing" table is there
    return not stmt.front_door


def judge(stmt: Stmt, e: BaseException) -> tuple[str, str | None]:
    """(outcome, the defect or None): outcome is "refused" (a TabletsError), "spark" (Spark's own
    error, allowed) or "defect"."""
    text = str(e)
    if isinstance(e, TabletsError):
        why = []
        if RAW.search(text) or RAW_START.match(text):
            why.append("a raw error")
        if PYTHON.search(text):
            why.append("a Python error's text")
        if leaked(text, stmt):
            why.append(f"internal names {leaked(text, stmt)}")
        # (the first line: a Help may suggest a MERGE)
        if CLAUSE.search(e.detail) and not re.search(r"\bWHEN\b", stmt.sql, re.IGNORECASE):
            why.append("a MERGE clause the statement does not have")
        position = re.search(r"\bline 1 pos (\d+)", text)
        if position and int(position.group(1)) > len(stmt.sql):
            why.append("a position past the statement's end (a rewrite's)")
        return ("defect", "its message names " + " and ".join(why)) if why else ("refused", None)
    if not isinstance(e, PySparkException):
        return "defect", "not a TabletsError"
    head = text.split("SQLSTATE", 1)[0]  # Spark's message, without the plan after it
    if leaked(head, stmt):
        return "defect", f"Spark's error names internal {leaked(head, stmt)}"
    if spark_rule(stmt, e):
        return "spark", None
    return "defect", "Spark's error where tablets runs the statement (it should answer in its words)"


def known(stmt: Stmt, e: BaseException | None, defect: str) -> str | None:
    """The KNOWN defect this is, if any: a table changed by a failed statement only where the
    entry says so."""
    said = "" if e is None else f"{type(e).__name__}: {first_line(e)}"
    for name, (kinds, pattern, _) in KNOWN.items():
        if "changed a table" in defect and "changed a table" not in pattern:
            continue
        if (not kinds or stmt.kind in kinds) and re.search(pattern, f"{said} | {defect} | {stmt.sql}"):
            return name
    return None


class Tables:
    """The watched tables' states: (kind, root, version, rows) of a tablet table, (kind, rows)
    of another, None when there is none. A tablet table's rows are read again only when its
    version moved, except after a failure (``fresh``)."""

    def __init__(self, db):
        self.db, self.spark = db, db.spark
        self.rows: dict[tuple[str, int], list] = {}
        self.other: dict[str, tuple] = {}

    def read(self, name: str) -> list:
        return sorted(repr(tuple(r)) for r in self.db.sql(f"SELECT * FROM {name}").collect())  # (NaN: one text)

    def state(self, name: str, fresh: bool = False) -> tuple | None:
        root = self.db.root_of(name)
        if root is not None:
            version = self.db.table_at(root).version
            if fresh or (root, version) not in self.rows:
                self.rows[(root, version)] = self.read(name)
            return ("tablets", root, version, self.rows[(root, version)])
        if not fresh and name in self.other:
            return self.other[name]
        state = ("other", self.read(name)) if _exists(self, name) else None
        self.other[name] = state
        return state

    def forget(self) -> None:
        self.other.clear()


def _exists(tables: Tables, name: str) -> bool:
    try:
        tables.spark.table(name)
    except PySparkException:
        return False
    return True


def reset(db, tables: Tables, baseline: dict) -> None:
    """Put back the fixtures that a statement changed (their definition, version and rows)."""
    for name in SETUP:
        try:
            same = signature(db, tables, name) == baseline.get(name)
        except Exception:  # noqa: BLE001 - unreadable: put it back
            same = False
        if same:
            continue
        for drop in ("DROP TABLE IF EXISTS", "DROP VIEW IF EXISTS"):
            with contextlib.suppress(Exception):  # the other kind of object
                db.sql(f"{drop} {name}")
        for s in SETUP[name]:
            db.sql(s)
        tables.rows.clear()  # a table made again has its old root, and its versions again
        tables.other.clear()
        baseline[name] = signature(db, tables, name)


def signature(db, tables: Tables, name: str) -> tuple:
    root = db.root_of(name)
    if root is None:
        return ("other", tables.state(name, fresh=True), db.spark.table(name).schema.simpleString())
    meta = db.table_at(root).snapshot().metadata
    state = tables.state(name)
    return state[2], state[3], meta.schema, meta.key_columns, meta.properties, meta.comment, meta.column_comments


def run(db, stmt: Stmt):
    result = db.sql(stmt.sql)
    if hasattr(result, "collect"):
        result.limit(50).collect()  # a query fails when it runs


def describe(state) -> str:
    if state is None:
        return "absent"
    if isinstance(state, str):
        return state
    if state[0] == "tablets":
        return f"version {state[2]}, {len(state[3])} rows"
    return f"{len(state[1])} rows"


class Run:
    def __init__(self, db):
        self.db, self.tables, self.baseline = db, Tables(db), {}
        self.tally: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        self.problems: list[str] = []
        self.known: collections.Counter = collections.Counter()
        self.log: list[str] = []  # every statement and what it did (badgen.txt)

    def report(self, stmt: Stmt, where: str, e: BaseException | None, defect: str, changed: list[str]) -> None:
        said = "ran" if e is None else f"{type(e).__module__}.{type(e).__name__}: {first_line(e)}"
        name = known(stmt, e, defect)
        if name is not None and not STRICT:
            self.known[name] += 1
            self.tally[stmt.kind]["known"] += 1
            return
        self.tally[stmt.kind]["defect"] += 1
        self.problems.append(
            f"{where}\n    -> {said}\n    {defect}; table changed: {'; '.join(changed) if changed else 'no'}"
        )

    def statement(self, seed: int, i: int, stmt: Stmt) -> None:
        where, tables = f"seed {seed} #{i} [{stmt.kind}] {stmt.sql}", self.tables
        self.tally[stmt.kind]["generated"] += 1
        try:
            before = {n: tables.state(n) for n in stmt.watch}
        except Exception as e:  # noqa: BLE001 - a table a statement before this one broke
            self.report(stmt, where, e, "a table it names cannot be read before it", [])
            reset(self.db, tables, self.baseline)
            return
        try:
            run(self.db, stmt)
        except Exception as e:  # noqa: BLE001 - what the rule judges
            outcome, defect = judge(stmt, e)
            self.log.append(f"{where}\n    {outcome}: {type(e).__name__}: {first_line(e)}")
            after = {}
            for n in stmt.watch:
                try:
                    after[n] = tables.state(n, fresh=True)
                except Exception as read_error:  # noqa: BLE001
                    after[n] = f"unreadable ({type(read_error).__name__}: {first_line(read_error)[:120]})"
            changed = [
                f"{n}: {describe(before[n])} -> {describe(after[n])}" for n in stmt.watch if before[n] != after[n]
            ]
            if changed:
                defect = "; ".join(filter(None, [defect, "the failed statement changed a table"]))
            if defect:
                self.report(stmt, where, e, defect, changed)
                if changed:
                    reset(self.db, tables, self.baseline)
            else:
                self.tally[stmt.kind][outcome] += 1
            return
        tables.forget()  # a view reads a table this statement may have written
        try:
            for n in stmt.watch:
                tables.state(n)
        except Exception as e:  # noqa: BLE001
            self.report(stmt, where, e, "it ran, then a table it names cannot be read", [])
            reset(self.db, tables, self.baseline)
            return
        self.log.append(f"{where}\n    ran")
        if stmt.refuse:
            self.report(stmt, where, None, f"it ran, but {stmt.refuse} must be refused", [])
            return
        self.tally[stmt.kind]["ran"] += 1

    def summary(self, seeds: str, seconds: float) -> str:
        total = collections.Counter()
        for c in self.tally.values():
            total.update(c)
        lines = [f"{total['generated']} statements from seeds {seeds} in {seconds:.0f} s: {dict(total)}"]
        lines += [f"  {k:<17} {dict(c)}" for k, c in sorted(self.tally.items())]
        lines += [f"  known: {name} x{n}" for name, n in sorted(self.known.items())]
        return "\n".join(lines)


def test_generated_bad_input_is_refused_cleanly(db, tmp_path):
    state = Run(db)
    start, seed, done = time.perf_counter(), SEED, 0
    while done < STATEMENTS:
        reset(db, state.tables, state.baseline)
        for i, stmt in enumerate(badgen.statements(seed, min(PER_SEED, STATEMENTS - done))):
            state.statement(seed, i, stmt)
            done += 1
        seed += 1
    summary = state.summary(f"{SEED}..{seed - 1}", time.perf_counter() - start)
    (tmp_path / "badgen.txt").write_text("\n\n".join([summary, "\n".join(state.problems), "\n".join(state.log)]))
    print(summary)
    problems = state.problems
    shown = problems[:80] + ([f"... and {len(problems) - 80} more"] if len(problems) > 80 else [])
    assert not problems, f"{len(problems)} statement(s) broke the rule:\n" + "\n".join(shown) + "\n\n" + summary
