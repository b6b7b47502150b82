"""Generated cases for the differential harness (tests/spark/test_differential_generated.py):
a tiny table of random column types and a sequence of statements, each rendered for Spark
SQL (the product's ``db.sql``) and for DuckDB (the oracle).

A case is plain data (``Case``: columns, keys, properties, session zone, ``Step`` list) made
before anything runs, so that one seed always gives one case and the minimiser
(support.differential) can drop steps, rows and clauses and run what is left again.

Value columns are now and then nested (``NESTED``: an array, a struct, a map), taken by every
statement as the product must take them, but only copied, set from literals or NULL and tested
for NULL (Spark compares no map, and orders arrays and structs otherwise than DuckDB).

Where DuckDB's semantics differ from Spark's, the harness follows Spark's: ``SPARK_SEMANTICS``
below is the one list of those differences and of what the generator or the normaliser does
about each.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field, replace

SPARK_SEMANTICS = {
    "NaN": "Spark: NaN = NaN is true and NaN sorts above +Infinity; DuckDB agrees (checked), so NaN is "
    "generated freely, in keys too; the normaliser compares NaN equal to NaN.",
    "-0.0": "Spark's joins and grouping take -0.0 = 0.0; DuckDB's comparisons too; the normaliser maps "
    "-0.0 to 0.0 (a stored -0.0 and 0.0 are one value for a multiset of rows).",
    "integer overflow": "Spark (ANSI, the default in 4.x) fails on overflow, DuckDB too but not always at the "
    "same step: no arithmetic that can overflow is generated (integers only as (c % 7) + 1, "
    "no unary minus on integers; extreme values are only stored and compared).",
    "division": "Spark (ANSI) fails on division by zero, DuckDB gives NULL: the only division is by the "
    "literal 2, of floating columns.",
    "decimal rounding": "Spark's result precision/scale rules for decimal arithmetic differ from DuckDB's: "
    "decimals are only copied, negated, compared and written as literals of the column's type; "
    "not negated at precision 38 (Spark's negation rounds to 34 digits first, so -(10^38 - 1) "
    "fails with NUMERIC_VALUE_OUT_OF_RANGE: Spark's own limit, not the product's).",
    "string comparison": "Spark compares strings by UTF-8 bytes; DuckDB's default collation is the same "
    "(checked: 'é' > 'z'); no upper/lower/collations are generated (Java's and DuckDB's "
    "case mappings differ for e.g. 'ß'). Strings concatenate with || (NULL || x is NULL in "
    "both, where DuckDB's concat() skips NULLs).",
    "timestamp zones": "TIMESTAMP is an instant (DuckDB TIMESTAMPTZ with the same TimeZone setting as "
    "spark.sql.session.timeZone); wall-clock literals are read in the session zone, so they "
    "are generated away from DST changes (noon) and after 1970 (no local mean time); extreme "
    "instants carry an explicit +00:00. TIMESTAMP_NTZ is DuckDB's TIMESTAMP. Values are "
    "compared as microseconds since the epoch (UTC).",
    "floating overflow": "1e308 * 10 is Infinity in both (checked); doubles are only halved, negated or added.",
    "MERGE DO NOTHING": "not Spark syntax but the product's and DuckDB's: the same meaning (the row is left "
    "as it is and later clauses do not see it).",
    "UPDATE SET * / INSERT *": "Spark's (by name); DuckDB is given the column lists spelled out.",
    "ON CONFLICT": "PostgreSQL's, as the product has it: DuckDB has no table constraint here (its unique "
    "checks are over-eager inside one statement), so the harness writes it as the MERGE it "
    "means (DO NOTHING: the first row of each key, in VALUES order; DO UPDATE with a key "
    "given twice: a cardinality error).",
    "key columns": "the product's: no statement may leave two live rows whose key columns are all non-NULL "
    "and equal (NaN = NaN, -0.0 = 0.0): checked on DuckDB's result, which is rolled back and "
    "expected to be refused. A declared key is never SET (the product refuses it by design).",
    "constraints": "a third of the cases declare NOT NULL and CHECK constraints (DuckDB's, the same SQL: a NULL "
    "CHECK passes) and TRUNCATE now and then: a statement that breaks one is refused by both, with nothing "
    "written. A statement that also repeats a key or matches a target row twice may be refused for either "
    "(which one a refusal names first is the engine's choice; DuckDB's is found on a copy without constraints).",
    "counts": "the product counts an UPDATE whose new image equals the old row as unchanged "
    "(skip_unchanged): DuckDB's updated = our updated + unchanged.",
}

SPARK_TO_DUCK = {
    "INT": "INTEGER",
    "STRING": "VARCHAR",
    "TIMESTAMP": "TIMESTAMPTZ",
    "TIMESTAMP_NTZ": "TIMESTAMP",
    "BINARY": "BLOB",
}
DECIMALS = ["DECIMAL(10,2)", "DECIMAL(38,0)", "DECIMAL(38,10)", "DECIMAL(5,5)"]
TYPES = [
    "INT",
    "BIGINT",
    "SMALLINT",
    "TINYINT",
    "BINARY",
    "DOUBLE",
    "FLOAT",
    "STRING",
    "BOOLEAN",
    "DATE",
    "TIMESTAMP",
    "TIMESTAMP_NTZ",
    *DECIMALS,
]
KEY_TYPES = [t for t in TYPES if t != "BOOLEAN"] + ["BOOLEAN"]
# value columns only (no key, no cluster_by): copied, set from literals or NULL, tested for NULL
ARRAY_T, STRUCT_T, MAP_T = "ARRAY<INT>", "STRUCT<a: INT, b: STRING>", "MAP<STRING, INT>"
NESTED = (ARRAY_T, STRUCT_T, MAP_T)
_DUCK_NESTED = {ARRAY_T: "INTEGER[]", STRUCT_T: "STRUCT(a INTEGER, b VARCHAR)", MAP_T: "MAP(VARCHAR, INTEGER)"}
ZONES = ["UTC", "America/Los_Angeles", "Asia/Kolkata", "Pacific/Chatham"]

# value pools: ints as ints, the rest as the text the literal casts from
_DEC = {
    "DECIMAL(10,2)": ["0.00", "1.50", "-2.25", "99999999.99", "-99999999.99", "0.01"],
    "DECIMAL(38,0)": [
        "0",
        "1",
        "-7",
        "99999999999999999999999999999999999999",
        "-99999999999999999999999999999999999999",
    ],
    "DECIMAL(38,10)": ["0", "1.0000000001", "-3.5", "9999999999999999999999999999.9999999999", "0.0000000001"],
    "DECIMAL(5,5)": ["0.00000", "0.99999", "-0.99999", "0.5", "-0.00001"],
}
POOLS: dict[str, list] = {
    "INT": [0, 1, 2, 3, -1, 7, 2147483647, -2147483648],
    "BIGINT": [0, 1, 2, -5, 9223372036854775807, -9223372036854775808, 4294967296],
    "SMALLINT": [0, 1, 2, -3, 32767, -32768],
    "TINYINT": [0, 1, 2, -1, 127, -128],
    "BINARY": [b"", b"\x00", b"a", b"ab", b"\xff", b"\x00\x01"],
    "DOUBLE": ["0.0", "-0.0", "1.5", "-2.25", "NaN", "Infinity", "-Infinity", "1e308", "5e-324", "0.1"],
    "FLOAT": ["0.0", "-0.0", "1.5", "-2.25", "NaN", "Infinity", "-Infinity", "3.4028235e38", "0.1"],
    "STRING": ["", "a", "b", "Z", "é", "日本", "🦆", " a", "a b", "ß"],
    "BOOLEAN": [True, False],
    "DATE": ["2024-01-01", "2024-02-29", "1970-01-01", "0001-01-01", "9999-12-31", "1582-10-10", "1969-12-31"],
    "TIMESTAMP": [
        "2024-01-01 12:00:00",
        "2024-07-04 12:30:00.123456",
        "1999-12-31 12:00:00",
        "1970-01-02 12:00:00",
        "0001-01-01 00:00:00+00:00",
        "9999-12-31 23:59:59.999999+00:00",
        "1900-01-01 00:00:00+00:00",
    ],
    "TIMESTAMP_NTZ": [
        "2024-01-01 00:00:00",
        "2024-03-10 02:30:00",
        "0001-01-01 00:00:00",
        "9999-12-31 23:59:59.999999",
        "1582-10-10 00:00:00",
        "1970-01-01 00:00:00.000001",
    ],
    **_DEC,
    ARRAY_T: [[1, 2], [], [None, 3], [7], [2, 1]],
    STRUCT_T: [{"a": 1, "b": "x"}, {"a": None, "b": "é"}, {"a": -1, "b": None}, {"a": 1, "b": "y"}],
    # maps as entry lists: the same entries in another order is another literal, and alike
    MAP_T: [[("k", 1)], [], [("a", 1), ("b", 2)], [("b", 2), ("a", 1)], [("z", None)]],
}
INTS = {"INT", "BIGINT", "SMALLINT", "TINYINT"}
FLOATS = {"DOUBLE", "FLOAT"}


def duck_type(t: str) -> str:
    return _DUCK_NESTED.get(t) or SPARK_TO_DUCK.get(t, t)


def _nested_lit(t: str, v, duck: bool) -> str:
    """A literal of a nested type: an array of INTs, a struct of (INT, STRING), a map of STRING to INT."""
    if t == ARRAY_T:
        items = ", ".join(lit("INT", x, duck) for x in v)
        return f"CAST([{items}] AS {duck_type(t)})" if duck else f"CAST(ARRAY({items}) AS {t})"
    if t == STRUCT_T:
        a, b = lit("INT", v["a"], duck), lit("STRING", v["b"], duck)
        return f"CAST({{'a': {a}, 'b': {b}}} AS {duck_type(t)})" if duck else f"NAMED_STRUCT('a', {a}, 'b', {b})"
    pairs = [(lit("STRING", k, duck), lit("INT", x, duck)) for k, x in v]
    if duck:
        return f"CAST(MAP {{{', '.join(f'{k}: {x}' for k, x in pairs)}}} AS {duck_type(t)})"
    return f"CAST(MAP({', '.join(f'{k}, {x}' for k, x in pairs)}) AS {t})"


def lit(t: str, v, duck: bool) -> str:
    """A literal of type ``t``, cast explicitly (so VALUES columns and NULLs have the type)."""
    tt = duck_type(t) if duck else t
    if v is None:
        return f"CAST(NULL AS {tt})"
    if t in NESTED:
        return _nested_lit(t, v, duck)
    if t == "BINARY":  # bytes, compared unsigned byte by byte in both
        escaped = "".join(f"\\x{b:02X}" for b in v)
        return f"CAST('{escaped}' AS BLOB)" if duck else f"X'{v.hex().upper()}'"
    if t == "BOOLEAN":
        return "TRUE" if v else "FALSE"
    if t in INTS:
        return f"CAST({v} AS {tt})"
    return f"CAST('{v}' AS {tt})"


def render(text: str, duck: bool, t: str = "t.", s: str = "s.") -> str:
    """An expression template ({t}/{s} qualifiers, {L:i} literals already inlined) in a dialect."""
    out = text.replace("{t}", t).replace("{s}", s)
    return out.replace("<=>", "IS NOT DISTINCT FROM") if duck else out


@dataclass(frozen=True)
class Expr:
    """An expression as both dialects spell it (literal casts differ)."""

    spark: str
    duck: str

    def sql(self, duck: bool, t: str = "t.", s: str = "s.") -> str:
        return render(self.duck if duck else self.spark, duck, t, s)


def L(t: str, v) -> Expr:  # a literal, as the templates use it
    return Expr(lit(t, v, False), lit(t, v, True))


def X(text: str, *parts: Expr) -> Expr:  # a template over parts ({0}, {1} ...)
    return Expr(
        text.format(*[p.spark for p in parts], t="{t}", s="{s}"),
        text.format(*[p.duck for p in parts], t="{t}", s="{s}"),
    )


@dataclass(frozen=True)
class Clause:
    category: str  # MATCHED, NOT MATCHED, NOT MATCHED BY SOURCE
    cond: Expr | None
    action: str  # UPDATE, UPDATE*, DELETE, INSERT, INSERT*, INSERTV, NOTHING
    sets: tuple[tuple[str, Expr], ...] = ()  # UPDATE / INSERT columns and values

    def sql(self, duck: bool, cols: list[str]) -> str:
        cond = f" AND {self.cond.sql(duck)}" if self.cond else ""
        a = self.action
        if a == "UPDATE*" and duck:
            a, sets = "UPDATE", tuple((c, Expr(f"{{s}}{c}", f"{{s}}{c}")) for c in cols)
        elif a == "INSERT*" and duck:
            a, sets = "INSERT", tuple((c, Expr(f"{{s}}{c}", f"{{s}}{c}")) for c in cols)
        else:
            sets = self.sets
        body = {
            "UPDATE*": "UPDATE SET *",
            "INSERT*": "INSERT *",
            "DELETE": "DELETE",
            "NOTHING": "DO NOTHING",
            "UPDATE": "UPDATE SET " + ", ".join(f"{c} = {e.sql(duck)}" for c, e in sets),
            "INSERT": f"INSERT ({', '.join(c for c, _ in sets)}) VALUES ({', '.join(e.sql(duck) for _, e in sets)})",
            "INSERTV": f"INSERT VALUES ({', '.join(e.sql(duck) for _, e in sets)})",
        }[a]
        return f"WHEN {self.category}{cond} THEN {body}"


def values_list(cols: list[tuple[str, str]], rows: list[tuple], duck: bool) -> str:
    return ", ".join("(" + ", ".join(lit(t, v, duck) for (_, t), v in zip(cols, r, strict=True)) + ")" for r in rows)


def values_query(cols: list[tuple[str, str]], rows: list[tuple], duck: bool) -> str:
    names = ", ".join(n for n, _ in cols)
    if not rows:
        return "SELECT " + ", ".join(f"{lit(t, None, duck)} AS {n}" for n, t in cols) + " WHERE 1 = 0"
    vals = values_list(cols, rows, duck)
    return f"SELECT * FROM (VALUES {vals}) AS v({names})" if duck else f"SELECT * FROM VALUES {vals} AS v({names})"


@dataclass(frozen=True)
class Step:
    """One statement. ``kind``: INSERT, BYNAME (INSERT BY NAME), MERGE, EVOLVE (MERGE WITH SCHEMA
    EVOLUTION adding ``column``), UPDATE, DELETE, TRUNCATE, CONFLICT, OPTIMIZE, CLUSTER (ALTER TABLE
    CLUSTER BY ``column``), REPLACE (CREATE OR REPLACE TABLE with the columns it has: empty), RESTORE,
    ADD, DROP (the storage API's set_schema: SQL has no DROP COLUMN here), RERUN (a MERGE
    again with the same source). ``cols``: the table's columns when the step runs."""

    kind: str
    cols: tuple[tuple[str, str], ...]
    rows: tuple[tuple, ...] = ()
    clauses: tuple[Clause, ...] = ()
    on: tuple[tuple[str, bool], ...] = ()  # (key column, null-safe)
    on_extra: Expr | None = None  # a target-only conjunct (dbt's incremental_predicates)
    where: Expr | None = None
    sets: tuple[tuple[str, Expr], ...] = ()  # UPDATE's; CONFLICT's DO UPDATE (None: DO NOTHING)
    keys: tuple[str, ...] = ()  # CONFLICT's
    column: tuple[str, str] | None = None  # ADD / DROP
    to_step: int = -1  # RESTORE: the version after this step (-1: the created table)
    on_order: tuple[int, ...] = ()  # BYNAME: the order the query gives the columns in

    @property
    def names(self) -> list[str]:
        return [n for n, _ in self.cols]

    def shape(self) -> str:
        if self.kind in ("MERGE", "RERUN"):
            n = {
                c: sum(1 for x in self.clauses if x.category == c)
                for c in ("MATCHED", "NOT MATCHED", "NOT MATCHED BY SOURCE")
            }
            return f"{self.kind} M{n['MATCHED']}/N{n['NOT MATCHED']}/B{n['NOT MATCHED BY SOURCE']}"
        if self.kind == "CONFLICT":
            return "ON CONFLICT DO " + ("UPDATE" if self.sets else "NOTHING")
        return self.kind

    def sql(
        self,
        name: str,
        duck: bool = False,
        restore_version: int | None = None,
        source: str | None = None,
        replace_ddl: str = "",
        props: str = "",
    ) -> str:
        """Spark SQL for the product, or DuckDB's (None where the harness does it another way).
        ``source``: a MERGE's source query in place of its VALUES (the same rows); ``replace_ddl``
        and ``props``: a REPLACE's columns and TBLPROPERTIES clause (``Case.replacing``)."""
        k = self.kind
        if k == "INSERT":
            return f"INSERT INTO {name} {values_query(list(self.cols), list(self.rows), duck)}"
        if k in ("MERGE", "RERUN"):
            on = " AND ".join(f"(t.{c} {'<=>' if ns else '='} s.{c})" for c, ns in self.on)
            if self.on_extra is not None:
                on += f" AND {self.on_extra.sql(duck)}"
            on = render(on, duck)
            src = source or values_query(list(self.cols), list(self.rows), duck)
            return f"MERGE INTO {name} t USING ({src}) s ON {on} " + " ".join(
                c.sql(duck, self.names) for c in self.clauses
            )
        if k == "UPDATE":
            sets = ", ".join(f"{c} = {e.sql(duck, t='')}" for c, e in self.sets)
            return f"UPDATE {name} SET {sets}" + (f" WHERE {self.where.sql(duck, t='')}" if self.where else "")
        if k == "DELETE":
            return f"DELETE FROM {name}" + (f" WHERE {self.where.sql(duck, t='')}" if self.where else "")
        if k == "TRUNCATE":
            return f"DELETE FROM {name}" if duck else f"TRUNCATE TABLE {name}"
        if k == "BYNAME":  # the query's columns in another order, taken by name
            order = list(self.on_order or range(len(self.cols)))
            cols = [self.cols[j] for j in order]
            rows = [tuple(r[j] for j in order) for r in self.rows]
            return f"INSERT INTO {name} BY NAME {values_query(cols, rows, duck)}"
        if k == "EVOLVE":  # the source brings a new column (the last of cols): added, then merged
            on = " AND ".join(f"(t.{c} = s.{c})" for c, _ in self.on)
            src = values_query(list(self.cols), list(self.rows), duck)
            body = f"t USING ({src}) s ON {on} " + " ".join(c.sql(duck, self.names) for c in self.clauses)
            if duck:
                n, t = self.column
                return f"ALTER TABLE {name} ADD COLUMN {n} {duck_type(t)}; MERGE INTO {name} {body}"
            return f"MERGE WITH SCHEMA EVOLUTION INTO {name} {body}"
        if k == "CLUSTER" and not duck:
            return f"ALTER TABLE {name} CLUSTER BY ({self.column[0]})"
        if k == "CONFLICT" and not duck:
            vals = "VALUES " + values_list(list(self.cols), list(self.rows), False)
            action = (
                "DO UPDATE SET " + ", ".join(f"{c} = {e.sql(False, s='excluded.')}" for c, e in self.sets)
                if self.sets
                else "DO NOTHING"
            )
            return (
                f"INSERT INTO {name} {vals} ON CONFLICT ({', '.join(self.keys)}) {action}"
                if self.rows
                else f"-- empty ON CONFLICT on {name}"
            )
        if k == "OPTIMIZE" and not duck:
            return f"OPTIMIZE {name}"
        if k == "REPLACE":
            return (
                f"DELETE FROM {name}"
                if duck
                else f"CREATE OR REPLACE TABLE {name} ({replace_ddl}) USING tablets{props}"
            )
        if k == "RESTORE" and not duck:
            return f"RESTORE TABLE {name} TO VERSION AS OF {restore_version}"
        if k == "ADD":
            n, t = self.column
            return (
                f"ALTER TABLE {name} ADD COLUMN {n} {duck_type(t)}"
                if duck
                else f"ALTER TABLE {name} ADD COLUMNS ({n} {t})"
            )
        if k == "DROP":
            return (
                f"ALTER TABLE {name} DROP COLUMN {self.column[0]}"
                if duck
                else f"-- TabletTable.set_schema: drop {self.column[0]} of {name}"
            )
        return ""


@dataclass
class Case:
    seed: int
    cols: tuple[tuple[str, str], ...]  # at CREATE
    keys: tuple[str, ...]  # the ON keys (k1 or k1, k2)
    declared: bool  # TBLPROPERTIES key_columns
    tablet_rows: int | None
    cluster_by: str | None
    zone: str
    steps: list[Step] = field(default_factory=list)
    checks: tuple[Expr, ...] = ()  # CHECK constraints over value columns (CONSTRAINT ck<i>)
    not_null: tuple[str, ...] = ()  # NOT NULL value columns

    def constrained(self) -> set[str]:
        """The columns a constraint names (never dropped: the product refuses it)."""
        return set(self.not_null) | {n for e in self.checks for n, _ in self.cols if n in e.spark}

    def columns_ddl(self, cols, duck: bool, raw_types: bool = False) -> str:
        """Column definitions with their NOT NULL, then the CHECKs (``raw_types``: ``cols`` has
        DuckDB's types already)."""
        off = {unquoted(n) for n in self.not_null}
        defs = [
            f"{n} {t if raw_types or not duck else duck_type(t)}" + (" NOT NULL" if unquoted(n) in off else "")
            for n, t in cols
        ]
        defs += [f"CONSTRAINT ck{i} CHECK ({e.sql(duck, t='')})" for i, e in enumerate(self.checks)]
        return ", ".join(defs)

    def replacing(self, step: Step) -> dict[str, str]:
        """A REPLACE step's columns (the table's now, with the constraints) and properties."""
        return {"replace_ddl": self.columns_ddl(step.cols, False), "props": self.properties_sql()}

    def create(self, name: str, duck: bool = False) -> str:
        cols = self.columns_ddl(self.cols, duck)
        if duck:
            return f"CREATE TABLE {name} ({cols})"
        return f"CREATE TABLE {name} ({cols}) USING tablets{self.properties_sql()}"

    def properties_sql(self) -> str:
        props = {"key_columns": ",".join(unquoted(k) for k in self.keys)} if self.declared else {}
        if self.tablet_rows:
            props["target_tablet_rows"] = str(self.tablet_rows)
        if self.cluster_by:
            props["cluster_by"] = self.cluster_by
        return (
            f" TBLPROPERTIES ({', '.join(f'{chr(39)}{k}{chr(39)} = {chr(39)}{v}{chr(39)}' for k, v in props.items())})"
            if props
            else ""
        )

    def script(self, name: str = "t1") -> str:
        """The case as Spark SQL, for a report."""
        out = [f"SET spark.sql.session.timeZone = {self.zone};", self.create(name) + ";"]
        for st in self.steps:
            extra = self.replacing(st) if st.kind == "REPLACE" else {}
            out.append(
                st.sql(name, restore_version=st.to_step + 1, **extra) + ";"
            )  # (versions if each step commits once)
        return "\n".join(out)


# --- the generator -------------------------------------------------------------------------------


class Gen:
    """Random values, expressions, conditions and statements over one case's columns."""

    def __init__(self, rng: random.Random, keys: dict[str, list], declared: bool = False) -> None:
        self.rng = rng
        self.key_pool = keys  # per key column: the few values its rows take (matches happen)
        self.declared = declared  # a declared key is never SET

    def value(self, name: str, t: str):
        r = self.rng
        if r.random() < 0.15:
            return None
        if name in self.key_pool:
            return r.choice(self.key_pool[name])
        return r.choice(POOLS[t])

    def row(self, cols) -> tuple:
        return tuple(self.value(n, t) for n, t in cols)

    def rows(self, cols, lo: int, hi: int) -> tuple[tuple, ...]:
        return tuple(self.row(cols) for _ in range(self.rng.randint(lo, hi)))

    def pred(self, cols, sides: str, depth: int = 0) -> Expr:
        """A condition over the sides in ``sides`` ("t", "s" or "ts")."""
        r = self.rng
        if depth < 1 and r.random() < 0.25:
            a, b = self.pred(cols, sides, depth + 1), self.pred(cols, sides, depth + 1)
            return r.choice([X("({0} AND {1})", a, b), X("({0} OR {1})", a, b), X("(NOT {0})", a)])
        n, t = r.choice(list(cols))
        pair = ("t", "s") if sides == "ts" and r.random() < 0.7 else (r.choice(sides), r.choice(sides))
        a, b = f"{{{pair[0]}}}{n}", f"{{{pair[1]}}}{n}"
        if t in NESTED:
            return X(f"({a} IS NULL)") if r.random() < 0.5 else X(f"({a} IS NOT NULL)")
        v = L(t, r.choice(POOLS[t]))
        forms = [
            X(f"({a} IS NULL)"),
            X(f"({a} IS NOT NULL)"),
            X(f"({a} = {b})"),
            X(f"({a} <=> {b})"),
            X(f"({a} < {b})"),
            X(f"({a} > {{0}})", v),
            X(f"({a} IN ({{0}}, {{1}}))", v, L(t, None)),
        ]
        if t == "BOOLEAN":
            forms.append(X(f"{a}"))
        if t in INTS:
            forms.append(X(f"({a} % 2 = 0)"))
        return r.choice(forms)

    def value_expr(self, n: str, t: str, sides: str) -> Expr:
        """A new value for column n (of type t) from the sides in ``sides``, Spark-safe."""
        r = self.rng
        a, b = f"{{{r.choice(sides)}}}{n}", f"{{{r.choice(sides)}}}{n}"
        forms = [X(a), X(a), L(t, r.choice(POOLS[t])), L(t, None), X(f"coalesce({a}, {{0}})", L(t, r.choice(POOLS[t])))]
        if t in INTS:
            forms += [X(f"({a} % 7) + 1"), X(f"({a} % 5) - ({b} % 3)")]
        elif t in FLOATS:
            forms += [X(f"{a} / 2"), X(f"-{a}"), X(f"{a} + {b}")]
        elif t.startswith("DECIMAL") and not t.startswith("DECIMAL(38"):
            forms.append(X(f"-{a}"))
        elif t == "STRING":
            forms += [X(f"{a} || 'x'"), X(f"{a} || {b}")]
        elif t == "BOOLEAN":
            forms.append(X(f"NOT {a}"))
        if r.random() < 0.15:
            return X("CASE WHEN {0} THEN {1} ELSE {2} END", self.pred([(n, t)], sides), r.choice(forms), X(a))
        return r.choice(forms)

    def inserted(self, n: str, t: str, keys) -> Expr:
        """An INSERT's value for column n: a declared key column inserts the source's key (the
        product refuses a key computed in the INSERT: it could repeat one of the table's)."""
        return X(f"{{s}}{n}") if self.declared and n in keys else self.value_expr(n, t, "s")

    def clause(self, cat: str, cols, keys, last: bool) -> Clause:
        r = self.rng
        sides = {"MATCHED": "ts", "NOT MATCHED": "s", "NOT MATCHED BY SOURCE": "t"}[cat]
        cond = None if last and r.random() < 0.5 else self.pred(cols, sides)
        values = [c for c in cols if c[0] not in keys]
        if cat == "MATCHED":
            action = r.choice(["UPDATE*", "UPDATE", "UPDATE", "DELETE", "DELETE", "NOTHING"])
        elif cat == "NOT MATCHED":
            action = r.choice(["INSERT*", "INSERT*", "INSERT", "INSERTV", "NOTHING"])
        else:
            action = r.choice(["UPDATE", "DELETE", "DELETE", "NOTHING"])
        sets: tuple = ()
        if action == "UPDATE":
            pick = r.sample(values, r.randint(1, len(values))) if values else []
            if cat == "MATCHED" and not self.declared and r.random() < 0.1:
                pick.append(r.choice([c for c in cols if c[0] in keys]))  # a key changes
            if not pick:
                return Clause(cat, cond, "DELETE")
            sets = tuple((n, self.value_expr(n, t, sides)) for n, t in pick)
        elif action == "INSERT":
            pick = [c for c in cols if c[0] in keys or r.random() < 0.6]
            r.shuffle(pick)
            sets = tuple((n, self.inserted(n, t, keys)) for n, t in pick)
        elif action == "INSERTV":
            sets = tuple((n, self.inserted(n, t, keys)) for n, t in cols)
        return Clause(cat, cond, action, sets)

    def plain(self, cols, keys) -> Step:
        """A MERGE as dbt writes them (upsert, sync, CDC, soft delete): the statements the driver
        plan merges in Arrow itself."""
        r = self.rng
        if r.random() < 0.25:  # dbt's upsert (or sync) exactly: the shape a re-run may skip (engine.rerun)
            clauses = [Clause("MATCHED", None, "UPDATE*"), Clause("NOT MATCHED", None, "INSERT*")]
            if r.random() < 0.3:
                clauses.append(Clause("NOT MATCHED BY SOURCE", None, "DELETE"))
            on = tuple((k, False) for k in keys)
            return Step("MERGE", tuple(cols), rows=self._source(cols, keys), clauses=tuple(clauses), on=on)
        values = [c for c in cols if c[0] not in keys]
        simple = (
            [X(f"({{s}}{n} IS NULL)") for n, _ in values]
            + [X(f"({{t}}{n} IS NOT NULL)") for n, _ in values]
            + [X(f"({{s}}{n} <> {{t}}{n})") for n, t in values if t != MAP_T]  # (Spark compares no map)
            + [X(f"(coalesce({{s}}{n}, {{0}}) > {{0}})", L(t, 0)) for n, t in values if t in INTS]
        )
        copy = tuple((n, X(f"{{s}}{n}")) for n, _ in values)
        clauses = []
        if simple and r.random() < 0.4:  # CDC: a conditional clause first
            clauses.append(Clause("MATCHED", r.choice(simple), r.choice(["DELETE", "UPDATE*"])))
        m = r.choice(["UPDATE*", "UPDATE*", "UPDATE", "DELETE", None])
        if m == "UPDATE" and copy:
            clauses.append(
                Clause(
                    "MATCHED",
                    r.choice([None, None, *simple]) if simple else None,
                    "UPDATE",
                    copy[: r.randint(1, len(copy))],
                )
            )
        elif m in ("UPDATE*", "DELETE"):
            clauses.append(Clause("MATCHED", None, m))
        n = r.choice(["INSERT*", "INSERT*", "INSERT", None])
        if n == "INSERT":
            clauses.append(Clause("NOT MATCHED", None, "INSERT", tuple((c, X(f"{{s}}{c}")) for c, _ in cols)))
        elif n:
            clauses.append(Clause("NOT MATCHED", None, n))
        b = r.choice([None, None, "DELETE", "DELETE", "UPDATE"])
        if b == "UPDATE" and values:
            nn, tt = r.choice(values)
            clauses.append(Clause("NOT MATCHED BY SOURCE", None, "UPDATE", ((nn, L(tt, None)),)))
        elif b == "DELETE":
            clauses.append(
                Clause(
                    "NOT MATCHED BY SOURCE", r.choice([None, None, *simple[len(values) : 2 * len(values)]]), "DELETE"
                )
            )
        if not clauses:
            clauses.append(Clause("NOT MATCHED", None, "INSERT*"))
        return Step(
            "MERGE",
            tuple(cols),
            rows=self._source(cols, keys),
            clauses=tuple(clauses),
            on=tuple((k, False) for k in keys),
        )

    def _source(self, cols, keys) -> tuple[tuple, ...]:
        src = self.rows(cols, 0, 6)
        if self.rng.random() < 0.7:  # mostly one row per key: else every MATCHED update is a cardinality error
            seen, uniq = set(), []
            for row in src:
                key = tuple(row[[n for n, _ in cols].index(k)] for k in keys)
                if key not in seen:
                    seen.add(key)
                    uniq.append(row)
            src = tuple(uniq)
        return src

    def merge(self, cols, keys, kind: str = "MERGE") -> Step:
        r = self.rng
        if r.random() < 0.5:
            return self.plain(cols, keys)
        while True:
            counts = [r.choice([0, 0, 1, 1, 1, 2, 2, 3, 4]) for _ in range(3)]
            if any(counts):
                break
        queues = [
            [self.clause(cat, cols, keys, i == n - 1) for i in range(n)]
            for cat, n in zip(("MATCHED", "NOT MATCHED", "NOT MATCHED BY SOURCE"), counts, strict=True)
        ]
        clauses = []
        while any(queues):  # categories interleaved, each in its own order
            clauses.append(r.choice([q for q in queues if q]).pop(0))
        on = tuple((k, r.random() < 0.2) for k in keys)
        extra = self.pred([c for c in cols], "t") if r.random() < 0.2 else None
        return Step(kind, tuple(cols), rows=self._source(cols, keys), clauses=tuple(clauses), on=on, on_extra=extra)


_VALUE_COLS = [
    "INT",
    "BIGINT",
    "SMALLINT",
    "TINYINT",
    "BINARY",
    "DOUBLE",
    "FLOAT",
    "STRING",
    "BOOLEAN",
    "DATE",
    "TIMESTAMP",
    "TIMESTAMP_NTZ",
    "DECIMAL",
]


def value_type(r: random.Random) -> str:
    """A value column's type: now and then a nested one."""
    if r.random() < 0.12:
        return r.choice(NESTED)
    t = r.choice(_VALUE_COLS)
    return r.choice(DECIMALS) if t == "DECIMAL" else t


# names a value column now and then takes: a space, a dot, a backquote, a reserved word, a letter
# outside ASCII. Such a name is kept quoted (Spark's backquotes) wherever the case writes it into
# SQL; DuckDB is given it in double quotes (``duck_idents``)
ODD_NAMES = ["my key", "Value.x", "a`b", "GROUP", "sélect"]


def quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def unquoted(name: str) -> str:
    """A column's own name (as the table's schema has it) from the case's SQL form."""
    return name[1:-1].replace("``", "`") if name.startswith("`") else name


_BACKQUOTED = re.compile(r"`((?:[^`]|``)*)`")


def duck_idents(sql: str) -> str:
    """Spark's backquoted identifiers as DuckDB's double-quoted ones (no generated string holds a
    backquote)."""
    return _BACKQUOTED.sub(lambda m: '"' + m.group(1).replace("``", "`").replace('"', '""') + '"', sql)


def col_name(t: str, i: int, r: random.Random | None = None) -> str:
    base = f"c{i}_" + t.split("(")[0].split("<")[0].lower()
    if r is not None and r.random() < 0.1:
        return quoted(f"c{i} {r.choice(ODD_NAMES)}")
    return base


def make_case(seed: int, statements: int) -> Case:
    """A case of ``statements`` statements after the CREATE and the first INSERTs."""
    r = random.Random(seed)
    nkeys = 2 if r.random() < 0.35 else 1
    key_types = [r.choice(KEY_TYPES) for _ in range(nkeys)]
    keys = tuple(quoted(f"k{i + 1} {r.choice(ODD_NAMES)}") if r.random() < 0.1 else f"k{i + 1}" for i in range(nkeys))
    pools = {}
    for k, t in zip(keys, key_types, strict=True):
        pools[k] = r.sample(POOLS[t], min(len(POOLS[t]), r.randint(2, 4)))
    n_values = r.randint(1, 4)
    vtypes = [value_type(r) for _ in range(n_values)]
    cols = [(k, t) for k, t in zip(keys, key_types, strict=True)] + [
        (col_name(t, i, r), t) for i, t in enumerate(vtypes)
    ]
    case = Case(
        seed=seed,
        cols=tuple(cols),
        keys=keys,
        declared=r.random() < 0.35,
        tablet_rows=2 if r.random() < 0.7 else None,
        # (no column to cluster by when each is nested or quoted: seed 3000063)
        cluster_by=(
            r.choice(sortable)
            if (sortable := [c[0] for c in cols if c[1] not in NESTED and not c[0].startswith("`")])
            else None
        )
        if r.random() < 0.2
        else None,
        zone=r.choice(ZONES),
    )
    if r.random() < CONSTRAINED_CASES:
        case.checks, case.not_null = _constraints(r, [c for c in cols if c[0] not in keys])
    g = Gen(r, pools, case.declared)
    schemas = [tuple(cols)]  # the columns after each step (schemas[0]: after CREATE)
    cur = list(cols)
    for _ in range(r.randint(1, 3)):  # several INSERTs: many small tablets
        case.steps.append(Step("INSERT", tuple(cur), rows=g.rows(cur, 1, 5)))
        schemas.append(tuple(cur))
    added = 0
    while len(case.steps) < statements:
        step = _statement(r, g, case, cur, schemas, added)
        if step.kind in ("ADD", "EVOLVE"):
            added += 1
            cur = cur + [step.column]
        elif step.kind == "DROP":
            cur = [c for c in cur if c != step.column]
        elif step.kind == "RESTORE":
            cur = list(schemas[step.to_step + 1])
        case.steps.append(step)
        schemas.append(tuple(cur))
    return case


def _evolve(r: random.Random, g: Gen, case: Case, cur, added: int) -> Step:
    """A MERGE WITH SCHEMA EVOLUTION whose source (the keys and a new column) sets the new column
    of the rows it matches and inserts the others: one source row per key and no NOT NULL column
    left empty, so that it is never refused and the generator knows the table's columns after."""
    t = r.choice([x for x in _VALUE_COLS if x != "DECIMAL"])
    column = (f"e{added}_" + t.lower(), t)
    keys = [c for c in cur if c[0] in case.keys]
    cols = (*keys, column)
    seen, rows = set(), []
    for row in g.rows(cols, 0, 5):
        key = tuple(_canon_key(v) for v in row[: len(keys)])
        if None in key or key not in seen:
            seen.add(key)
            rows.append(row)
    clauses = [Clause("MATCHED", None, "UPDATE", ((column[0], X(f"{{s}}{column[0]}")),))]
    if not case.not_null:
        clauses.append(Clause("NOT MATCHED", None, "INSERT", tuple((n, X(f"{{s}}{n}")) for n, _ in cols)))
    return Step("EVOLVE", cols, rows=tuple(rows), clauses=tuple(clauses),
                on=tuple((k, False) for k in case.keys), column=column)  # fmt: skip


def _canon_key(v):
    """A key as Spark's join compares it (NaN = NaN, -0.0 = 0.0, '1.50' = '1.5')."""
    if isinstance(v, str):
        try:
            f = float(v)
        except ValueError:
            return v
        return "NaN" if f != f else (0.0 if f == 0 else f)
    return v


CONSTRAINED_CASES = 0.3  # cases whose table declares NOT NULL or CHECK constraints


def _constraints(r: random.Random, values) -> tuple[tuple[Expr, ...], tuple[str, ...]]:
    """A few constraints over value columns that some generated rows break: a CHECK excludes one
    value of a column's pool (NULL passes, as SQL's CHECK), a NOT NULL refuses NULL."""
    plain = [(n, t) for n, t in values if t not in NESTED and t not in FLOATS and t != "BINARY"]
    checks = []
    for n, t in r.sample(plain, min(len(plain), r.randint(1, 2))):
        v = L(t, r.choice(POOLS[t]))
        forms = [X(f"({{t}}{n} <> {{0}})", v), X(f"({{t}}{n} IS NULL OR {{t}}{n} <> {{0}})", v)]
        if t in INTS:
            forms.append(X(f"(({{t}}{n} % 7) <> 3)"))
        if t == "BOOLEAN":
            forms.append(X(f"{{t}}{n}"))
        checks.append(r.choice(forms))
    not_null = tuple(n for n, _ in r.sample(values, 1)) if values and r.random() < 0.4 else ()
    return tuple(checks), not_null


def _statement(r: random.Random, g: Gen, case: Case, cur, schemas, added: int) -> Step:
    keys, tc = case.keys, tuple(cur)
    roll = r.random()
    last = case.steps[-1]
    # the re-run shortcut (engine.rerun): dbt's upsert or sync is run again most often
    upsert = all(c.cond is None and c.action in ("UPDATE*", "INSERT*", "DELETE") for c in last.clauses)
    if last.kind == "MERGE" and roll < (0.6 if upsert else 0.25) and last.cols == tc:
        return replace(last, kind="RERUN")
    roll = r.random()
    if roll < 0.03:
        return _evolve(r, g, case, cur, added)
    if roll < 0.50:
        return g.merge(cur, keys)
    if roll < 0.60:
        sets = [c for c in cur if c[0] not in keys and r.random() < 0.6] or [
            r.choice(cur if not case.declared else cur[len(keys) :] or cur)
        ]
        if case.declared and sets[0][0] in keys:
            return Step("DELETE", tc, where=g.pred(cur, "t"))
        where = g.pred(cur, "t") if r.random() < 0.85 else None
        return Step("UPDATE", tc, sets=tuple((n, g.value_expr(n, t, "t")) for n, t in sets), where=where)
    if roll < 0.68:
        if r.random() < 0.05:
            return Step("TRUNCATE", tc)
        return Step("DELETE", tc, where=g.pred(cur, "t"))
    if roll < 0.76 and case.declared:
        sets = [c for c in cur if c[0] not in keys and r.random() < 0.7]
        return Step("CONFLICT", tc, rows=g.rows(cur, 1, 4), sets=tuple((n, X(f"{{s}}{n}")) for n, _ in sets), keys=keys)
    if roll < 0.80:
        if r.random() < 0.3:
            return Step("BYNAME", tc, rows=g.rows(cur, 1, 4), on_order=tuple(r.sample(range(len(cur)), len(cur))))
        return Step("INSERT", tc, rows=g.rows(cur, 1, 4))
    if roll < 0.85:
        roll = r.random()
        plain = [c for c in cur if c[1] not in NESTED and not c[0].startswith("`")]
        if roll < 0.25 and plain:
            return Step("CLUSTER", tc, column=r.choice(plain))
        if roll < 0.45:
            return Step("REPLACE", tc)
        return Step("OPTIMIZE", tc)
    if roll < 0.91 and len(case.steps) > 1:
        return Step("RESTORE", tc, to_step=r.randrange(-1, len(case.steps) - 1))
    clustered = {case.cluster_by} | {st.column[0] for st in case.steps if st.kind == "CLUSTER"}
    values = [  # (new tablets sort by cluster_by; a constrained column is never dropped)
        c for c in cur if c[0] not in keys and c[0] not in clustered and c[0] not in case.constrained()
    ]
    if roll < 0.95 and values and len(cur) > 2:
        return Step("DROP", tc, column=r.choice(values))
    dropped = [c for s in schemas for c in s if c not in cur and c[0] not in keys]
    if dropped and r.random() < 0.6:  # a dropped column back: it must come back empty
        return Step("ADD", tc, column=r.choice(dropped))
    t = value_type(r)
    name = f"a{added}_" + t.split("(")[0].split("<")[0].lower()
    return Step("ADD", tc, column=(quoted(f"a{added} {r.choice(ODD_NAMES)}") if r.random() < 0.1 else name, t))
