"""The write streams' partitions follow the rows that enter them (docs/SCALE.md, "Work sized to
the data"): Spark's setting is the floor, and no task is given more than ``TASK_ROWS`` on average."""

from __future__ import annotations

from types import SimpleNamespace

from tablets.engine.streams import TASK_ROWS, stream_partitions, stream_rows


class _Conf:
    def __init__(self, parts: str | None) -> None:
        self.parts = parts

    def get(self, key: str, default: str | None = None) -> str | None:
        assert key == "spark.sql.shuffle.partitions"
        return self.parts if self.parts is not None else default


def _spark(parts: str | None = "4") -> SimpleNamespace:
    return SimpleNamespace(conf=_Conf(parts))


def test_small_statements_keep_sparks_setting():
    assert stream_partitions(_spark("4"), 0) == 4
    assert stream_partitions(_spark("4"), 4 * TASK_ROWS) == 4
    assert stream_partitions(_spark(None), 10) == 4


def test_big_statements_get_a_task_per_task_rows():
    assert stream_partitions(_spark("4"), 4 * TASK_ROWS + 1) == 5
    # a 10% delete at 1B rows: 100M row ids -> 96 tasks of at most 2^20 on average
    assert stream_partitions(_spark("4"), 100_000_000) == 96
    assert stream_partitions(_spark("200"), 100_000_000) == 200


def test_the_bound_counts_every_live_target_row_under_by_source():
    def run(join: str | None) -> SimpleNamespace:
        return SimpleNamespace(
            intake=SimpleNamespace(rows=1000),
            plan=SimpleNamespace(join=join),
            snapshot=SimpleNamespace(live_rows=10**8),
        )

    assert stream_rows(run("inner")) == 1000
    assert stream_rows(run("left")) == 1000
    assert stream_rows(run("right")) == 1000 + 10**8
    assert stream_rows(run("full")) == 1000 + 10**8
