"""Wall times the opt-in server suites record, printed in pytest's terminal summary."""

from __future__ import annotations

TIMES: dict[str, list[float]] = {}


def record(what: str, seconds: float) -> None:
    TIMES.setdefault(what, []).append(seconds)


def summary() -> list[str]:
    lines = []
    for what, times in TIMES.items():
        t = sorted(times)
        if len(t) == 1:
            lines.append(f"{what}: {t[0]:.1f} s")
        else:
            lines.append(f"{what}: n={len(t)} median {t[len(t) // 2]:.2f} s, min {t[0]:.2f} s, max {t[-1]:.2f} s")
    return lines


def mark_opt_in(items, here: str, variable: str, marker, script: str) -> None:
    """Mark the tests under ``here`` with ``marker`` and skip them unless ``variable`` is 1: the
    opt-in server suites, each run in a pytest process of its own."""
    import os

    import pytest

    skip = pytest.mark.skip(reason=f"opt-in: {variable}=1 ({script}), in its own pytest process")
    enabled = os.environ.get(variable) == "1"
    for item in items:
        if str(item.fspath).startswith(here + os.sep):
            item.add_marker(marker)
            if not enabled:
                item.add_marker(skip)


def print_summary(terminalreporter) -> None:
    for line in summary():
        terminalreporter.write_line(line)
