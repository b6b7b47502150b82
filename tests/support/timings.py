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
