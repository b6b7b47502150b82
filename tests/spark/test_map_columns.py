"""Tables with MAP columns take every statement. Spark orders no map, so its ``<=>`` refuses one:
an UPDATE's unchanged check compares a map by its entries sorted (``pairs_sql.same_sql``), skips
the columns an image keeps, and counts a row whose map sits deeper (in a struct) as changed;
nothing else hashes or compares a map's value. Each statement runs on the driver plan and on
Spark's plan (``driverScanBytes=0``), with the same rows and counts."""

from __future__ import annotations

import pytest
from support.conf import settings
from support.differential import PLANS
from tablets.engine import streams
from tablets.engine.route import DRIVER_WRITE_CONF

pytestmark = pytest.mark.spark


DATABASE = "maps"  # created by the conftest's db fixture


@pytest.fixture(params=list(PLANS))
def plan(request, spark):
    """The statement's plan: the session's default (the driver's, for these few rows) or Spark's."""
    with settings(spark, PLANS[request.param]):
        yield request.param


def _rows(db, t):
    return sorted(
        (r.id, r.v, sorted((r.m or {}).items()), r.st.a, sorted(r.st.n.items()))
        for r in db.sql(f"SELECT * FROM {t}").collect()
    )


def _table(db, name: str, keyed: bool = True) -> str:
    t = f"maps.{name}"
    db.sql(f"DROP TABLE IF EXISTS {t}")
    props = " TBLPROPERTIES ('key_columns' = 'id')" if keyed else ""
    db.sql(
        f"CREATE TABLE {t} (id BIGINT, v STRING, m MAP<STRING, BIGINT>, st STRUCT<a: BIGINT, n: MAP<STRING, INT>>) "
        f"USING tablets{props}"
    )
    db.sql(
        f"INSERT INTO {t} SELECT id, 'a', MAP('k', id, 'j', -id), NAMED_STRUCT('a', id, 'n', MAP('x', 1)) FROM RANGE(10)"
    )
    return t


def test_update_and_merge_a_table_with_maps(db, plan):
    t = _table(db, f"upd_{plan}")
    # the UPDATE keeps the maps: they are not compared
    assert db.sql(f"UPDATE {t} SET v = 'b' WHERE id = 1").message.startswith("UPDATE 1 (inserted 0, updated 1,")
    assert "updated 1," in db.sql(f"UPDATE {t} SET m = MAP('z', 1L) WHERE id = 2").message
    # a map of the same entries, in another order: unchanged
    same = db.sql(
        f"MERGE INTO {t} t USING (SELECT 3L AS id, MAP('j', -3L, 'k', 3L) AS m) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET m = s.m"
    )
    assert "updated 0, deleted 0, unchanged 1" in same.message
    other = db.sql(
        f"MERGE INTO {t} t USING (SELECT 4L AS id, MAP('j', -4L, 'k', 5L) AS m) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET m = s.m"
    )
    assert "updated 1, deleted 0, unchanged 0" in other.message
    # a map inside a struct: the row counts as changed, and is written as it was
    deep = db.sql(
        f"MERGE INTO {t} t USING (SELECT * FROM {t} WHERE id = 5) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET *"
    )
    assert "updated 1, deleted 0, unchanged 0" in deep.message
    up = db.sql(
        f"MERGE INTO {t} t USING (SELECT 6L AS id, 'u' AS v, MAP('q', 6L) AS m, NAMED_STRUCT('a', 60L, 'n', MAP('y', 2)) AS st "
        "UNION ALL SELECT 20L, 'new', NULL, NAMED_STRUCT('a', 20L, 'n', MAP('y', 3))) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    assert "(inserted 1, updated 1, deleted 0, unchanged 0)" in up.message
    assert db.sql(f"DELETE FROM {t} WHERE m['k'] = 7").message.startswith("DELETE 1")
    rows = {r[0]: r for r in _rows(db, t)}
    assert rows[1][1] == "b" and rows[2][2] == [("z", 1)] and rows[3][2] == [("j", -3), ("k", 3)]
    assert rows[4][2] == [("j", -4), ("k", 5)] and rows[5] == (5, "a", [("j", -5), ("k", 5)], 5, [("x", 1)])
    assert rows[6] == (6, "u", [("q", 6)], 60, [("y", 2)]) and rows[20] == (20, "new", [], 20, [("y", 3)])
    assert 7 not in rows and len(rows) == 10


def test_many_inserts_into_an_unkeyed_table_with_maps(db, plan, spark, monkeypatch):
    """Inserted rows spread over tasks by a hash of their values (no key columns), the maps'
    as JSON text: Spark hashes no map."""
    t = _table(db, f"ins_{plan}", keyed=False)
    monkeypatch.setattr(streams, "TASK_ROWS", 4)  # (the inserts do not fit one task)
    db.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('target_tablet_rows' = '4')")
    with settings(spark, {DRIVER_WRITE_CONF: "0"}):  # (nor are they written here)
        got = db.sql(
            f"MERGE INTO {t} t USING (SELECT id, 'n' AS v, MAP('k', id) AS m, NAMED_STRUCT('a', id, 'n', MAP('x', 1)) AS st "
            "FROM RANGE(100, 130)) s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *"
        )
    assert got.message.startswith("MERGE 30 (inserted 30,")
    rows = _rows(db, t)
    assert len(rows) == 40 and [r for r in rows if r[0] == 129] == [(129, "n", [("k", 129)], 129, [("x", 1)])]


def test_same_rows_again_is_unchanged(db, plan):
    t = _table(db, f"again_{plan}")
    src = "SELECT id, 'a' AS v, MAP('j', -id, 'k', id) AS m FROM RANGE(10)"
    stmt = f"MERGE INTO {t} t USING ({src}) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v, m = s.m"
    first = db.sql(stmt)
    assert "updated 0, deleted 0, unchanged 10" in first.message, first.message
    assert db.table_of(t).version == 1  # nothing written
