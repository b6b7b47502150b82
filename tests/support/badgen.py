"""Generated bad input for the front door (tests/spark/test_bad_input_generated.py): statements
drawn from Spark's DDL and DML grammar over a few fixed tables, with valid and invalid clauses,
table properties and values, names that need quoting, reserved names, and views, a Parquet
table and a missing table where a tablet table is expected.

One seed is one list of ``Stmt`` (``statements(seed, n)``), made before anything runs, from the
fixtures' definitions (``SETUP``) rather than their live state: the harness puts the fixtures
back before each seed, so a seed always runs the same statements on the same tables.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

DB = "badgen"
T = "badgen.t"  # a tablet table with a key, NOT NULL, a CHECK, a cluster_by and a column comment
U = "badgen.u"  # a tablet table whose columns' names need quoting, its key too
PQ = "badgen.pq"
VW = "badgen.vw"
TMP = "tmp_badgen"
MISSING = "badgen.nope"
TABLETS = (T, U)
OTHERS = (PQ, VW, TMP, MISSING)

SETUP = {
    T: [
        f"CREATE TABLE {T} (id INT NOT NULL, v INT COMMENT 'the value', s STRING, CONSTRAINT pos CHECK (v >= 0)) "
        "USING tablets TBLPROPERTIES ('key_columns' = 'id', 'cluster_by' = 'v')",
        f"INSERT INTO {T} VALUES (1, 10, 'a'), (2, 20, 'b'), (3, 30, NULL)",
    ],
    U: [
        f"CREATE TABLE {U} (`my key` BIGINT, `Value.x` STRING, `sélect` DOUBLE, `GROUP` INT) USING tablets "
        "TBLPROPERTIES ('key_columns' = 'my key')",
        f"INSERT INTO {U} VALUES (1, 'x', 1.5, 1), (2, NULL, NULL, 2)",
    ],
    PQ: [f"CREATE TABLE {PQ} (id INT, v INT, s STRING) USING parquet", f"INSERT INTO {PQ} VALUES (1, 10, 'a')"],
    VW: [f"CREATE OR REPLACE VIEW {VW} AS SELECT * FROM {T}"],
    TMP: [f"CREATE OR REPLACE TEMP VIEW {TMP} AS SELECT * FROM VALUES (1, 11, 'p'), (4, 40, 'q') AS v(id, v, s)"],
}
LAST_VERSION = {T: 1, U: 1}  # the tablet fixtures' version after SETUP

# (name as written, type); T's shape is also PQ's, VW's, TMP's and MISSING's
COLUMNS = {
    T: [("id", "INT"), ("v", "INT"), ("s", "STRING")],
    U: [("`my key`", "BIGINT"), ("`Value.x`", "STRING"), ("`sélect`", "DOUBLE"), ("`GROUP`", "INT")],
}
# names a new column may take: plain, needing quotes, reserved by tablets, repeated, invalid
NEW_NAMES = [
    "w", "w2", "`a b`", "`a.b`", "`a``b`", "`select`", "select", "`ünï`", "ünï", "`GROUP`", "`1st`",
    "_tablet_id", "`_ROW_NUMBER`", "__tablets_x", "`__TABLETS_row_id`", "``", "id", "V", "`x y z`",
]  # fmt: skip
TYPES = ["INT", "BIGINT", "STRING", "DOUBLE", "DECIMAL(10,2)", "DATE", "TIMESTAMP", "BOOLEAN", "ARRAY<INT>",
         "MAP<STRING, INT>", "STRUCT<a: INT, `b c`: STRING>", "VARCHAR(3)", "CHAR(2)", "BINARY", "TIMESTAMP_NTZ"]  # fmt: skip
BAD_TYPES = ["INTEGERR", "DECIMAL(40,2)", "DECIMAL(5,7)", "VOID", "INTERVAL DAY", "ARRAY<>", "VARCHAR(0)", ""]
VALUES = {
    "INT": (["0", "1", "7", "42", "NULL", "-0"], ["2147483648", "-2147483649", "'abc'", "1e10", "CAST('x' AS INT)",
            "99999999999999999999999", "-1", "1/0", "ARRAY(1)"]),
    "BIGINT": (["5", "9223372036854775807", "NULL"], ["9223372036854775808", "'x'", "1/0"]),
    "STRING": (["'z'", "''", "'ü'", "'it''s'", "NULL", "'`'"], ["ARRAY('a')", "X'00'"]),
    "DOUBLE": (["1.5", "CAST('NaN' AS DOUBLE)", "1e308", "-0.0", "NULL"], ["'x'", "1e309", "ARRAY(1.0)"]),
}  # fmt: skip

# property -> (values to accept, values to refuse)
PROPERTIES = {
    "target_tablet_rows": (["1", "100", "2147483647", " 10 "],
                           ["0", "-1", "2147483648", "1e3", "10.0", "1.5", "abc", "", "NaN", "inf",
                            "99999999999999999999999"]),
    "deleted_file_retention_hours": (["0", "168", "0.5", "1e6"], ["-1", "NaN", "inf", "x", "", "1e400"]),
    "auto_compact": (["true", "false", "TRUE", "on", "0"], ["maybe", "", "2"]),
    "auto_compact_small_fraction": (["0.25", "1", "1e-3"], ["0", "-0.1", "1.01", "NaN", "x", ""]),
    "auto_compact_max_deleted_fraction": (["0.5", "1"], ["0", "2", "inf", "y"]),
    "auto_compact_min_tablets": (["2", "16", "100"], ["1", "0", "-3", "2.5", "2.0", "x", "1e9"]),
    "key_columns": (["id"], ["nope", "id,id", "", "id,,v", "ID"]),
    "cluster_by": (["v", "id,v", "", "S"], ["nope", "v,v", "id,,v", "`v`"]),
    "delta.appendOnly": (["false"], ["true"]),
    "delta.enableChangeDataFeed": (["false"], ["true"]),
    "delta.enableDeletionVectors": (["true"], ["false", "maybe"]),
    "delta.columnMapping.mode": (["name"], ["id", "nope"]),
    "delta.enableRowTracking": (["false"], ["true"]),
    "delta.constraints.sneaky": ([], ["v > 0"]),
    # (kept as plain properties: tablets writes the protocol itself, and no reader takes them)
    "delta.minReaderVersion": (["1", "99"], []),
    "delta.feature.appendOnly": (["supported"], []),
    "delta.logRetentionDuration": (["interval 30 days"], []),
    "target_tablet_row": ([], ["10"]),
    "tablets.target_tablet_rows": ([], ["10"]),
    "Target_Tablet_Rows": ([], ["10"]),
    "comment": (["a comment", "it''s"], []),
    "owner": (["me"], []),
    "team": (["crm", "ünï", ""], []),
    "a b": (["x"], []),
}  # fmt: skip
CHECKS = (["v > 0", "v IS NULL OR v < 1000", "length(s) <= 10", "id > 0 AND v >= 0"],
          ["nope > 0", "v", "rand() > 0.5", "v > (SELECT 1)", "max(v) > 0", "", "v >", "v > 15", "s IS NOT NULL",
           "'x'", "__tablets_row_id > 0"])  # fmt: skip
CONDITIONS = (["id = 1", "v > 15", "s IS NULL", "TRUE", "id IN (SELECT id FROM tmp_badgen)", "s LIKE 'a%'"],
              ["nope = 1", "v > 'x'", "1/0 = 1", "v =", "id = 1 AND", "rand() > 2 AND", "max(v) > 1",
               "_tablet_id IS NOT NULL", "__tablets_row_id = 0", "CAST(s AS INT) > 0"])  # fmt: skip
U_CONDITIONS = ["`my key` = 1", "`GROUP` > 1", "`Value.x` IS NULL", "`sélect` > 1.0", "TRUE"]
KEYS = {T: "id", U: "`my key`"}
# a source row of the target's shape, one with a column more, one repeating a key, one of the wrong type
SOURCES = {
    T: ["(SELECT 1 AS id, 12 AS v, 'm' AS s)", "(SELECT 8 AS id, 80 AS v, 'e' AS s, 9 AS w)",
        "(SELECT 1 AS id, 2 AS v, 'a' AS s UNION ALL SELECT 1, 3, 'b')", "(SELECT 2 AS id, 'notanint' AS v, 's' AS s)",
        "(SELECT 5 AS id, -5 AS v, 'neg' AS s)", "(SELECT 7 AS id, 1 AS v, 'x' AS s, 3 AS _tablet_id)",
        "(SELECT 1 AS id, 1 AS v, 'x' AS s, 4 AS `a b`)"],
    U: ["(SELECT 1 AS `my key`, 'm' AS `Value.x`, 2.5 AS `sélect`, 3 AS `GROUP`)",
        "(SELECT 9 AS `my key`, 'n' AS `Value.x`, 0.5 AS `sélect`, 4 AS `GROUP`, 'new' AS `a.b`)",
        "(SELECT 2 AS `my key`, NULL AS `Value.x`, NULL AS `sélect`, 'x' AS `GROUP`)"],
}  # fmt: skip
VERSIONS = ["0", "1", "2", "99", "-1", "1.5", "'1'", "99999999999999999999", "x", ""]
TIMESTAMPS = ["'2000-01-01'", "current_timestamp()", "'not a time'", "'9999-12-31 23:59:59'", "NULL", "1",
              "'2100-01-01 00:00:00'"]  # fmt: skip
HOURS = ["0", "168", "200", "1e6", "-1", "1.5", "NaN", "1e400", "'abc'", "9999999999999999999999", "inf"]

TABLET_KINDS = {  # statements only tablets runs: on any other table they are refused by name
    "merge", "update", "delete", "insert_conflict", "optimize", "vacuum", "restore", "history", "clone",
    "table_changes",
}  # fmt: skip
QUERY_KINDS = {"select_asof", "table_changes"}  # queries: Spark resolves their columns, as for any table


@dataclass(frozen=True)
class Stmt:
    kind: str
    sql: str
    watch: tuple[str, ...]  # the target first, then the tables it reads; a failure leaves them as they were
    front_door: bool  # tablets runs it: a tablet table is its target, USING tablets, or only tablets has it
    refuse: str = ""  # a value it holds that must be refused (an out-of-range property, RETAIN NaN ...)


class Gen:
    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)
        self.seed = seed
        self.made = 0
        self.bad = ""  # the statement being made holds this value that must be refused

    def flag(self, what: str) -> str:
        self.bad = self.bad or what
        return what

    # --- pieces ------------------------------------------------------------------------------

    def pick(self, xs):
        return self.r.choice(xs)

    def maybe(self, p: float = 0.5) -> bool:
        return self.r.random() < p

    def new_name(self) -> str:
        self.made += 1
        n = f"{self.seed}_{self.made}"
        return self.pick([f"{DB}.n{n}"] * 5 + [f"{DB}.`n {n}`", f"{DB}.`n.{n}`", f"{DB}.`sélect_{n}`",
                          f"{DB}.`n``{n}`", f"{DB}.__tablets_{n}", f"`{DB}`.`select_{n}`", f"{DB}.`TABLE_{n}`"])  # fmt: skip

    def target(self) -> str:
        return self.pick([T] * 9 + [U] * 4 + [PQ, PQ, VW, TMP, MISSING, MISSING])

    def columns(self, table: str) -> list[tuple[str, str]]:
        return COLUMNS[U] if table == U else COLUMNS[T]

    def column(self, table: str, bad: float = 0.08) -> str:
        if self.maybe(bad):
            return self.pick(["nope", "t.nope", "`v `", "ID", "_tablet_id", "__tablets_row_id", "s.v"])
        return self.pick(self.columns(table))[0]

    def value(self, typ: str, bad: float = 0.05) -> str:
        good, worse = VALUES.get(typ, VALUES["INT"])
        return self.pick(worse) if worse and self.maybe(bad) else self.pick(good)

    def row(self, table: str, n: int | None = None) -> str:
        cols = self.columns(table)
        vals = [self.value(t) for _, t in cols]
        if table != U and vals[0] == "NULL" and self.maybe(0.7):
            vals[0] = str(self.r.randint(1, 9))  # mostly a key; now and then a NULL key
        if n is not None:
            vals = (vals + ["1"] * n)[:n]
        elif self.maybe(0.05):
            vals = vals[:-1] if self.maybe() else [*vals, "1"]
        return "(" + ", ".join(vals) + ")"

    def props(self, k: int | None = None, bad: float = 0.35) -> str:
        if self.maybe(0.04):
            return "()"
        if self.maybe(0.03):
            return "('team')"  # a key without a value
        items = []
        for _ in range(k if k is not None else self.r.randint(1, 3)):
            key = self.pick(list(PROPERTIES))
            good, worse = PROPERTIES[key]
            value = self.pick(worse) if worse and (not good or self.maybe(bad)) else self.pick(good)
            if value in worse and key not in ("key_columns", "cluster_by"):  # (those depend on the table)
                self.flag(f"{key} = {value!r}")
            bare = key.replace(".", "").replace("_", "").isalnum() and self.maybe(0.1)
            written = f"{key if bare else repr(key)} = "
            plain = value.replace(".", "", 1).isdigit() or value in ("true", "false")
            items.append(written + (value if plain and self.maybe(0.2) else "'" + value + "'"))
        return "(" + ", ".join(items) + ")"

    def cond(self, bad: float = 0.2, table: str = T) -> str:
        good, worse = CONDITIONS
        return self.pick(worse) if self.maybe(bad) else self.pick(U_CONDITIONS if table == U else good)

    def check(self, bad: float = 0.4) -> str:
        good, worse = CHECKS
        return self.pick(worse) if self.maybe(bad) else self.pick(good)

    def col_def(self) -> str:
        name = self.pick(NEW_NAMES) if self.maybe(0.7) else "w"
        typ = self.pick(BAD_TYPES) if self.maybe(0.08) else self.pick(TYPES)
        extra = self.pick(["", "", "", " NOT NULL", " COMMENT 'c'", " COMMENT 'it''s'", " DEFAULT 5", " PRIMARY KEY"])
        return f"{name} {typ}{extra}".replace("  ", " ")

    def column_list(self) -> str:
        defs = ["id INT" + (" NOT NULL" if self.maybe() else ""), "v INT" + (" COMMENT 'v'" if self.maybe() else "")]
        for _ in range(self.r.randint(0, 2)):
            defs.append(self.col_def())
        if self.maybe(0.3):
            defs.append(f"CONSTRAINT {self.pick(['c1', '`odd name`', 'pos', 'select'])} CHECK ({self.check()})")
        if self.maybe(0.05):
            defs.append("PRIMARY KEY (id)")
        self.r.shuffle(defs) if self.maybe(0.1) else None
        if self.maybe(0.03):
            return "()"
        return "(" + ", ".join(defs) + (", " if self.maybe(0.03) else "") + ")"

    def as_of(self) -> str:
        if self.maybe(0.75):
            v = self.pick(VERSIONS)
            if v not in ("0", "1", "2"):  # (2 may exist: a statement of the seed committed it)
                self.flag(f"VERSION AS OF {v}")
            return f"VERSION AS OF {v}"
        ts = self.pick(TIMESTAMPS)
        if ts in ("'2000-01-01'", "'not a time'", "NULL", "1"):
            self.flag(f"TIMESTAMP AS OF {ts}")
        return f"TIMESTAMP AS OF {ts}"

    def source(self) -> tuple[str, str | None]:
        """A query's source, and the fixture it reads (if any)."""
        choice = self.r.randint(0, 9)
        if choice <= 2:
            return TMP, None
        if choice == 3:
            return f"{T} {self.as_of()}", T
        if choice == 4:
            start = self.pick(["0", "1", "1", "99", "-1"])
            if start in ("99", "-1"):
                self.flag(f"table_changes from {start}")
            return f"table_changes('{T}', {start})", T
        if choice == 5:
            return PQ, None
        if choice == 6:
            return self.pick([T, U]), None
        if choice == 7:
            return MISSING, None
        return "(SELECT 1 AS id, 5 AS v, 'n' AS s)", None

    # --- statements --------------------------------------------------------------------------

    def stmt(self, kind: str, sql: str, watch: tuple[str, ...], front_door: bool, checked: bool = True) -> Stmt:
        """``checked``: the statement's values are tablets' to check (a tablet table's, a new one's)."""
        return Stmt(kind, sql, tuple(dict.fromkeys(watch)), front_door, self.bad if checked else "")

    def create(self) -> Stmt:
        name = self.new_name() if self.maybe(0.75) else self.pick([T, U, PQ, VW])
        head = self.pick(["CREATE TABLE", "CREATE TABLE", "CREATE OR REPLACE TABLE", "CREATE TABLE IF NOT EXISTS",
                          "CREATE OR REPLACE TABLE IF NOT EXISTS", "CREATE TEMPORARY TABLE"])  # fmt: skip
        if "TEMPORARY" in head or "REPLACE TABLE IF" in head:
            self.flag(head)  # Spark: a temporary table is a view; OR REPLACE or IF NOT EXISTS
        cols = self.column_list() if self.maybe(0.95) else ""
        clauses = []
        if self.maybe(0.3):
            clauses.append(self.pick(["COMMENT 'a table'", "COMMENT 'it''s'", "COMMENT ''", "COMMENT NULL"]))
        if self.maybe(0.25):
            clauses.append(f"CLUSTER BY ({', '.join(self.column(T, 0.3) for _ in range(self.r.randint(0, 2)))})")
        if self.maybe(0.6):
            clauses.append(f"{self.pick(['TBLPROPERTIES'] * 5 + ['OPTIONS'])} {self.props()}")
        if self.maybe(0.08):
            clauses.append(self.pick(["PARTITIONED BY (v)", "CLUSTERED BY (id) INTO 4 BUCKETS", "STORED AS PARQUET",
                                      "ROW FORMAT DELIMITED", "TBLPROPERTIES ('team' = 'x')", "COMMENT 'twice'"]))  # fmt: skip
        self.r.shuffle(clauses)
        using = "USING tablets" if self.maybe(0.95) else "USING TABLETS"
        checked = "IF NOT EXISTS" not in head or name not in (T, U, PQ, VW)
        return self.stmt("create", f"{head} {name} {cols} {using} {' '.join(clauses)}".strip(), (name,), True, checked)

    def create_like(self) -> Stmt:
        name = self.new_name() if self.maybe(0.85) else self.pick([T, PQ])
        src = self.pick([T, T, U, PQ, VW, TMP, MISSING])
        exists = self.maybe(0.2)
        text = f"CREATE TABLE {'IF NOT EXISTS ' if exists else ''}{name} LIKE {src}"
        using = self.pick(["", "", "tablets", "tablets", "parquet", "json"])
        text += f" USING {using}" if using else ""
        if self.maybe(0.3):
            text += f" TBLPROPERTIES {self.props()}"
        tablets = using == "tablets" or (not using and src in TABLETS)
        checked = tablets and name not in (T, PQ)
        return self.stmt("create_like", text, (name, src), tablets or src in TABLETS or name in TABLETS, checked)

    def ctas(self) -> Stmt:
        name = self.new_name() if self.maybe(0.8) else self.pick([T, U, PQ])
        head = self.pick(["CREATE TABLE", "CREATE OR REPLACE TABLE", "CREATE TABLE IF NOT EXISTS"])
        src, read = self.source()
        cols = self.pick(["*", "*", "*", "id, v", "id AS `a b`, v", "id AS _tablet_id", "1 AS __tablets_x",
                          "v / 0 AS w", "id, id", "nope", "CAST(NULL AS INT) AS id"])  # fmt: skip
        props = f" TBLPROPERTIES {self.props()}" if self.maybe(0.4) else ""
        text = f"{head} {name} USING tablets{props} AS SELECT {cols} FROM {src}"
        checked = "IF NOT EXISTS" not in head or name not in (T, U, PQ)
        return self.stmt("ctas", text, (name, *([read] if read else [])), True, checked)

    def replace_table(self) -> Stmt:
        name = self.pick([T, U, PQ, VW, MISSING, self.new_name()])
        if self.maybe():
            text = f"REPLACE TABLE {name} {self.column_list()} USING tablets"
        else:
            text = f"REPLACE TABLE {name} USING tablets AS SELECT * FROM {self.source()[0]}"
        if self.maybe(0.3):
            text += f" TBLPROPERTIES {self.props()}"
        return self.stmt("replace", text, (name,), True)

    def clone(self) -> Stmt:
        name = self.new_name() if self.maybe(0.8) else self.pick([T, U, PQ, VW])
        src = self.pick([T, T, U, PQ, VW, TMP, MISSING, self.new_name()])
        head = self.pick(["CREATE TABLE", "CREATE OR REPLACE TABLE", "CREATE TABLE IF NOT EXISTS"])
        text = f"{head} {name} {'DEEP' if self.maybe(0.05) else 'SHALLOW'} CLONE {src}"
        if self.maybe(0.5):
            text += f" {self.as_of()}"
        if self.maybe(0.3):
            text += f" TBLPROPERTIES {self.props()}"
        checked = src in TABLETS and ("IF NOT EXISTS" not in head or name not in (T, U, PQ, VW))
        return self.stmt("clone", text, (name, src), True, checked)

    def alter(self) -> Stmt:
        x = self.target()
        c = self.column(x)
        form = self.r.randint(0, 13)
        kind = "alter_columns"
        if form <= 1:
            defs = [self.col_def() for _ in range(self.r.randint(1, 2))]
            body = f"ADD COLUMN {defs[0]}" if len(defs) == 1 and self.maybe() else f"ADD COLUMNS ({', '.join(defs)})"
            body += self.pick(["", "", "", "", " FIRST", " AFTER id"])
        elif form == 2:
            body = f"RENAME COLUMN {c} TO {self.pick(NEW_NAMES)}"
        elif form == 3:
            many = ", ".join(self.column(x) for _ in range(self.r.randint(1, 3)))
            body = self.pick(
                [f"DROP COLUMN {c}", f"DROP COLUMN IF EXISTS {c}", f"DROP COLUMNS ({many})", f"DROP COLUMNS {many}"]
            )
        elif form <= 6:
            kind = "alter_properties"
            if self.maybe(0.7):
                body = f"SET TBLPROPERTIES {self.props()}"
            else:
                keys = ", ".join(f"'{self.pick(list(PROPERTIES))}'" for _ in range(self.r.randint(1, 2)))
                body = f"UNSET TBLPROPERTIES {'IF EXISTS ' if self.maybe() else ''}({keys})"
        elif form <= 8:
            kind = "alter_constraint"
            name = self.pick(["c1", "pos", "`odd name`", "select", "`__tablets_c`", "nope"])
            if self.maybe(0.6):
                body = f"ADD CONSTRAINT {name} CHECK ({self.check()})"
            else:
                body = f"DROP CONSTRAINT {'IF EXISTS ' if self.maybe() else ''}{name}"
        elif form == 9:
            kind = "alter_constraint"
            body = f"ALTER COLUMN {c} {self.pick(['SET NOT NULL', 'DROP NOT NULL'])}"
        elif form <= 11:
            kind = "alter_comment"
            typ = self.pick(["INT", "BIGINT", "STRING"])
            body = self.pick([f"ALTER COLUMN {c} COMMENT 'note'", f"ALTER COLUMN {c} COMMENT 'it''s'",
                              f"CHANGE COLUMN {c} {c} {typ} COMMENT 'n'", f"CHANGE {c} {c} {typ}",
                              f"ALTER COLUMN {c} TYPE BIGINT", f"ALTER COLUMN {c} COMMENT NULL"])  # fmt: skip
        else:
            kind = "alter_cluster"
            cols = ", ".join(self.column(x, 0.3) for _ in range(self.r.randint(0, 2)))
            body = self.pick([f"CLUSTER BY ({cols})", f"CLUSTER BY ({cols})", "CLUSTER BY NONE", "CLUSTER BY"])
        return self.stmt(kind, f"ALTER TABLE {x} {body}", (x,), x in TABLETS or kind in TABLET_KINDS, x in TABLETS)

    def insert(self) -> Stmt:
        x = self.target()
        head = self.pick(
            ["INSERT INTO", "INSERT INTO", "INSERT INTO TABLE", "INSERT OVERWRITE", "INSERT OVERWRITE TABLE"]
        )
        names = [n for n, _ in self.columns(x)]
        cols = ""
        if self.maybe(0.3):
            chosen = self.r.sample(names, self.r.randint(1, len(names)))
            if self.maybe(0.15):
                chosen.append(self.pick(["nope", chosen[0]]))
            cols = " (" + ", ".join(chosen) + ")"
        by_name = " BY NAME" if self.maybe(0.15) else ""
        if self.maybe(0.04):
            cols += self.pick([" PARTITION (v = 1)", " REPLACE WHERE id = 1"])
        read = None
        if self.maybe(0.6):
            n = len(cols.split(",")) if cols.startswith(" (") else None
            body = "VALUES " + ", ".join(self.row(x, n) for _ in range(self.r.randint(1, 3)))
        else:
            src, read = self.source()
            body = self.pick([f"SELECT * FROM {src}", f"SELECT id, v, s FROM {src}", f"TABLE {TMP}",
                              f"SELECT v AS s, s AS v, id FROM {src}", f"SELECT * FROM {src} WHERE {self.cond()}"])  # fmt: skip
        watch = (x, *([read] if read else []))
        return self.stmt("insert", f"{head} {x}{cols}{by_name} {body}", watch, x in TABLETS)

    def insert_conflict(self) -> Stmt:
        x = self.target()
        key = KEYS.get(x, "id")
        rows = ", ".join(self.row(x) for _ in range(self.r.randint(1, 3)))
        keys = self.pick([f"({key})"] * 4 + ["(v)", "(nope)", "", "(id, v)", "(`my key`)"])
        c = self.column(x)
        action = self.pick(["DO NOTHING", "DO NOTHING", f"DO UPDATE SET {c} = excluded.{c}", f"DO UPDATE SET {c} = excluded.{c}",
                            f"DO UPDATE SET {c} = NULL", f"DO UPDATE SET {c} = excluded.nope", f"DO UPDATE SET {key} = excluded.{key}",
                            f"DO UPDATE SET {c} = excluded.{c} WHERE {self.cond(table=x)}", "DO"])  # fmt: skip
        return self.stmt("insert_conflict", f"INSERT INTO {x} VALUES {rows} ON CONFLICT {keys} {action}", (x,), True)

    def assignment(self, x: str, prefix: str = "") -> str:
        c = self.column(x)
        typ = dict(self.columns(x)).get(c, "INT")
        value = self.pick(
            [self.value(typ, 0.2), self.value(typ, 0.2), c, "NULL", f"(SELECT max(v) FROM {TMP})", "nope + 1"]
        )
        return f"{prefix}{c} = {value}"

    def update(self) -> Stmt:
        x = self.target()
        alias = self.pick(["", "", " t", " AS t"])
        sets = ", ".join(
            self.assignment(x, "t." if alias and self.maybe(0.3) else "") for _ in range(self.r.randint(1, 2))
        )
        where = f" WHERE {self.cond(table=x)}" if self.maybe(0.7) else ""
        return self.stmt("update", f"UPDATE {x}{alias} SET {sets}{where}", (x,), True)

    def delete(self) -> Stmt:
        x = self.target()
        where = f" WHERE {self.cond(table=x)}" if self.maybe(0.8) else ""
        return self.stmt("delete", f"DELETE FROM {x}{self.pick(['', ' t'])}{where}", (x,), True)

    def truncate(self) -> Stmt:
        x = self.target()
        part = " PARTITION (v = 1)" if self.maybe(0.15) else ""
        return self.stmt("truncate", f"TRUNCATE TABLE {x}{part}", (x,), x in TABLETS)

    def merge(self) -> Stmt:
        x = self.target()
        shape = U if x == U else T
        key, c = KEYS[shape], self.column(x)
        src = self.pick(
            [*SOURCES[shape], *SOURCES[shape][:1] * 3, TMP, "AS OF", f"table_changes('{T}', 1)", PQ, MISSING]
        )
        src = f"{T} {self.as_of()}" if src == "AS OF" else src  # (its value flagged only when picked)
        on = self.pick([f"t.{key} = s.{key}"] * 5 + [f"t.nope = s.{key}", f"s.{key} = t.{key} AND t.{c} IS NOT NULL",
                                                      "TRUE", "FALSE", f"t.{key} = s.nope", f"t.{key}"])  # fmt: skip
        clauses = []
        for _ in range(self.r.randint(0 if self.maybe(0.05) else 1, 3)):
            when = self.pick(["WHEN MATCHED", "WHEN MATCHED", "WHEN NOT MATCHED", "WHEN NOT MATCHED BY TARGET",
                              "WHEN NOT MATCHED BY SOURCE"])  # fmt: skip
            cond = f" AND {self.pick([f's.{c} IS NOT NULL', f't.{c} IS NULL', 's.nope = 1', 'rand() > 2'])}"
            cond = cond if self.maybe(0.2) else ""
            if "BY SOURCE" in when:
                action = self.pick(
                    ["DELETE", "DELETE", f"UPDATE SET {c} = NULL", f"UPDATE SET {c} = s.{c}", "INSERT *"]
                )
            elif when == "WHEN MATCHED":
                action = self.pick(["UPDATE SET *", "UPDATE SET *", f"UPDATE SET {c} = s.{c}", "DELETE",
                                    f"UPDATE SET t.{c} = s.{c}", "UPDATE SET v = -1", f"UPDATE SET {key} = s.{key}",
                                    "INSERT *"])  # fmt: skip
            else:
                action = self.pick(["INSERT *", "INSERT *", "INSERT *", f"INSERT ({key}) VALUES (s.{key})",
                                    f"INSERT ({key}, {c}) VALUES (s.{key}, s.{c})", f"INSERT ({c}) VALUES (s.{c})",
                                    "INSERT (w) VALUES (s.w)", "DELETE"])  # fmt: skip
            clauses.append(f"{when}{cond} THEN {action}")
        evo = " WITH SCHEMA EVOLUTION" if self.maybe(0.3) else ""
        text = f"MERGE{evo} INTO {x} {self.pick(['t', 'AS t'])} USING {src} s ON {on} {' '.join(clauses)}"
        return self.stmt("merge", text.strip(), (x,), True)

    def optimize(self) -> Stmt:
        x = self.target()
        tail = self.pick(["", "", "", " WHERE v > 1", " ZORDER BY (v)", " FULL"])
        return self.stmt("optimize", f"OPTIMIZE {x}{tail}", (x,), True)

    def vacuum(self) -> Stmt:
        x = self.target()
        text = f"VACUUM {x}"
        if self.maybe(0.7):
            hours, unit = self.pick(HOURS), "HOURS" if self.maybe(0.9) else "DAYS"
            if hours in ("-1", "NaN", "'abc'", "inf") or unit == "DAYS":
                self.flag(f"RETAIN {hours} {unit}")
            text += f" RETAIN {hours} {unit}"
        if self.maybe(0.5):
            text += " DRY RUN"
        return self.stmt("vacuum", text, (x,), True, x in TABLETS)

    def restore(self) -> Stmt:
        x = self.target()
        head = self.pick(["RESTORE TABLE", "RESTORE"])
        to = self.pick([" TO", " TO", ""])
        return self.stmt("restore", f"{head} {x}{to} {self.as_of()}", (x,), True, x in TABLETS)

    def history(self) -> Stmt:
        x = self.target()
        tail = ""
        if self.maybe(0.4):
            n = self.pick(["1", "0", "-1", "x", "99999999999999999999"])
            tail = f" LIMIT {self.flag(n) if n in ('-1', 'x') else n}"
        return self.stmt("history", f"DESCRIBE HISTORY {x}{tail}", (x,), True, x in TABLETS)

    def show_create(self) -> Stmt:
        x = self.target()
        text = f"SHOW CREATE TABLE {x}{' AS SERDE' if self.maybe(0.1) else ''}"
        return self.stmt("show_create", text, (x,), x in TABLETS, False)

    def select_asof(self) -> Stmt:
        x = self.target()
        cols = self.pick(["*", "*", "count(*)", "id, v", "nope", "`my key`", "_tablet_id"])
        text = f"SELECT {cols} FROM {x} {'FOR ' if self.maybe(0.2) else ''}{self.as_of()}"
        if self.maybe(0.3):
            text += f" WHERE {self.cond(0.2, x)}"
        return self.stmt("select_asof", text, (x,), x in TABLETS, x in TABLETS)

    def table_changes(self) -> Stmt:
        x = self.target()
        name = self.pick([x, x, x, x, f"{DB}.`u`", "badgen.T", self.flag(""), self.flag("badgen.t VERSION AS OF 1")])
        if name not in ("", "badgen.t VERSION AS OF 1"):
            self.bad = ""  # (the name was not the one picked)
        a = self.pick(["0", "1", "1", "2", "99", "-1", "'2000-01-01'", "NULL", "'x'", "1.5", "current_timestamp()"])
        b = self.pick(["", "", "", "1", "0", "5", "NULL", "-2", "'x'"])
        if (
            a in ("99", "-1", "NULL", "'x'", "1.5")
            or b in ("-2", "'x'")
            or (b.isdigit() and a.isdigit() and int(b) < int(a))
        ):
            self.flag(f"table_changes({a}, {b})")
        cols = self.pick(["*", "id, _change_type", "count(*)"])
        text = f"SELECT {cols} FROM table_changes('{name}', {a}{', ' + b if b else ''})"
        return self.stmt("table_changes", text, (x,), True, x in TABLETS)


KINDS: dict[str, tuple[float, Callable[[Gen], Stmt]]] = {
    "create": (3, Gen.create),
    "create_like": (1.5, Gen.create_like),
    "ctas": (1.5, Gen.ctas),
    "replace": (1, Gen.replace_table),
    "clone": (1.5, Gen.clone),
    "alter": (5, Gen.alter),
    "insert": (3, Gen.insert),
    "insert_conflict": (1.5, Gen.insert_conflict),
    "update": (2, Gen.update),
    "delete": (1.5, Gen.delete),
    "truncate": (0.7, Gen.truncate),
    "merge": (2.5, Gen.merge),
    "optimize": (0.8, Gen.optimize),
    "vacuum": (1.2, Gen.vacuum),
    "restore": (1, Gen.restore),
    "history": (0.7, Gen.history),
    "show_create": (0.6, Gen.show_create),
    "select_asof": (1.2, Gen.select_asof),
    "table_changes": (1, Gen.table_changes),
}


def statements(seed: int, n: int) -> list[Stmt]:
    """One seed's statements: the same list every time."""
    gen = Gen(seed)
    names = list(KINDS)
    weights = [KINDS[k][0] for k in names]
    out = []
    for _ in range(n):
        gen.bad = ""
        out.append(KINDS[gen.r.choices(names, weights)[0]][1](gen))
    return out
