"""What Spark's plan scans of a target: the columns of each tablet scan a statement builds."""

from tablets.engine import pairs_sql


def record_scans(monkeypatch) -> list[list[str]]:
    """The columns of every ``pairs_sql.tablet_scan`` from now on (for this test), in order."""
    scanned: list[list[str]] = []
    tablet_scan = getattr(pairs_sql.tablet_scan, "spied", pairs_sql.tablet_scan)  # (one spy at a time)

    def spy(spark, table, snapshot, columns, **kw):
        scanned.append(list(columns))
        return tablet_scan(spark, table, snapshot, columns, **kw)

    spy.spied = tablet_scan  # type: ignore[attr-defined]
    monkeypatch.setattr(pairs_sql, "tablet_scan", spy)
    return scanned
