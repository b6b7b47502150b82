"""DESCRIBE HISTORY, RESTORE, VACUUM, OPTIMIZE and AS OF -> specs; the auto-compaction policy."""

import pytest
import sqlglot
from sqlglot import exp
from tablets.exceptions import StatementParseError, TableNotFound
from tablets.spec import AsOf, HistorySpec, OptimizeSpec, RestoreSpec, VacuumSpec
from tablets.sql.maintenance import as_of, maintenance_target, may_time_travel, parse_maintenance
from tablets.sql.parse import statement_target
from tablets.storage.actions import AddTablet, Metadata, RemoveTablet, SetDV
from tablets.storage.maintenance import AutoCompactPolicy, restore_actions, version_at
from tablets.storage.snapshot import Snapshot, TabletState

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("DESCRIBE HISTORY db.t", HistorySpec("db.t")),
        ("describe history `db`.t LIMIT 3;", HistorySpec("`db`.t", 3)),
        ("-- why\nDESCRIBE HISTORY tablets.`/data/t`", HistorySpec("tablets.`/data/t`")),
        ("RESTORE TABLE t TO VERSION AS OF 3", RestoreSpec("t", AsOf(version=3))),
        ("RESTORE t VERSION AS OF 0", RestoreSpec("t", AsOf(version=0))),
        (
            "RESTORE TABLE db.t TO TIMESTAMP AS OF current_timestamp() - INTERVAL 1 HOUR",
            RestoreSpec("db.t", AsOf(timestamp="current_timestamp() - INTERVAL 1 HOUR")),
        ),
        ("RESTORE t TO TIMESTAMP AS OF '2024-05-01'", RestoreSpec("t", AsOf(timestamp="'2024-05-01'"))),
        ("VACUUM t", VacuumSpec("t")),
        ("VACUUM db.t RETAIN 200 HOURS", VacuumSpec("db.t", 200.0)),
        ("vacuum t retain 0.5 hours dry run", VacuumSpec("t", 0.5, dry_run=True)),
        ("VACUUM t DRY RUN", VacuumSpec("t", None, dry_run=True)),
        ("OPTIMIZE db.t", OptimizeSpec("db.t")),
        ("OPTIMIZE history", OptimizeSpec("history")),
    ],
)
def test_specs(text, spec):
    assert parse_maintenance(text) == spec
    assert maintenance_target(text) == (
        text.split("\n")[-1].split()[0].upper().replace("DESCRIBE", "DESCRIBE HISTORY"),
        spec.target,
    )
    assert statement_target(text) is None  # not a write: the front door's write routing leaves it alone


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("VACUUM", "VACUUM: a table name is missing"),
        ("VACUUM t RETAIN 5", r"VACUUM t: RETAIN needs a number of hours >= 0 \(RETAIN 168 HOURS\), not 'RETAIN 5'"),
        ("VACUUM t RETAIN -1 HOURS", "VACUUM t: RETAIN needs a number of hours"),
        ("VACUUM t FULL", "VACUUM t: unexpected 'FULL'"),
        ("DESCRIBE HISTORY t LIMIT x", "DESCRIBE HISTORY t: expected LIMIT <number of versions>"),
        ("RESTORE TABLE t", "RESTORE t: expected VERSION AS OF <version> or TIMESTAMP AS OF"),
        ("RESTORE TABLE t TO VERSION AS OF 1.5", r"RESTORE t: VERSION AS OF '1.5': a version is a whole number"),
        ("RESTORE TABLE t TO VERSION AS OF", "RESTORE t: VERSION AS OF needs a value"),
        ("OPTIMIZE t WHERE day = 1", r"OPTIMIZE t: OPTIMIZE \.\.\. WHERE is not supported"),
        ("OPTIMIZE t ZORDER BY (a)", r"OPTIMIZE t: OPTIMIZE \.\.\. ZORDER BY is not supported"),
    ],
)
def test_errors_name_the_part(text, message):
    with pytest.raises(StatementParseError, match=message):
        parse_maintenance(text)


def test_not_maintenance():
    assert maintenance_target("SELECT 1") is None
    assert maintenance_target("DESCRIBE TABLE t") is None
    assert maintenance_target("OPTIMIZER_HINTS") is None


def _version(sql):
    return sqlglot.parse_one(sql, read="spark").find(exp.Table).args["version"]


def test_as_of():
    assert may_time_travel("SELECT * FROM t VERSION AS OF 1") and not may_time_travel("SELECT version FROM t")
    assert as_of(_version("SELECT * FROM t VERSION AS OF 7")) == AsOf(version=7)
    assert as_of(_version("SELECT * FROM t FOR VERSION AS OF 7")) == AsOf(version=7)
    assert as_of(_version("SELECT * FROM t TIMESTAMP AS OF '2024-01-01' x")) == AsOf(timestamp="'2024-01-01'")
    with pytest.raises(StatementParseError, match=r"VERSION AS OF 'x': a version is a whole number"):
        as_of(_version("SELECT * FROM t VERSION AS OF 'x'"))


def test_version_at():
    commits = [(0, 100), (1, 200), (2, 200), (3, 300)]
    assert version_at(commits, 250, "TIMESTAMP AS OF x") == 2
    assert version_at(commits, 10_000, "TIMESTAMP AS OF x") == 3
    with pytest.raises(TableNotFound, match="TIMESTAMP AS OF x: the table did not exist yet"):
        version_at(commits, 99, "TIMESTAMP AS OF x")


META = Metadata("id", (("id", "bigint", True),))


def _add(t, rows=10):
    return AddTablet(t, f"tablets/{t}.parquet", rows, 100)


def _dv(t, n):
    return SetDV(t, f"dv/{t}-{n}.bin", n, 10, "0")


def _snap(*states):
    return Snapshot(1, META, {s.add.tablet_id: s for s in states})


def test_policy():
    p = AutoCompactPolicy.of(
        Metadata(
            "id",
            (),
            properties=(("auto_compact", "true"), ("target_tablet_rows", "100"), ("auto_compact_min_tablets", "3")),
        )
    )
    assert p.enabled and p.target_tablet_rows == 100
    assert p.pick(_snap(TabletState(_add("a", 10)), TabletState(_add("b", 10)))) == []  # 2 small < 3
    assert p.pick(_snap(*(TabletState(_add(t, 10)) for t in "abc"))) == ["a", "b", "c"]
    big = TabletState(_add("big", 100), _dv("big", 60))  # 60% deleted: heavy
    assert p.pick(_snap(big, TabletState(_add("full", 100)))) == ["big"]
    assert not AutoCompactPolicy.of(META).enabled


def test_restore_actions():
    a, b, c = TabletState(_add("a")), TabletState(_add("b"), _dv("b", 1)), TabletState(_add("c"))
    old = _snap(a, b)
    now = _snap(TabletState(_add("a"), _dv("a", 2)), TabletState(_add("b"), _dv("b", 3)), c)
    acts = restore_actions(now, old)
    assert acts == [RemoveTablet("c"), RemoveTablet("a"), _add("a"), _dv("b", 1)]
    assert restore_actions(old, old) == []
