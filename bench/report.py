"""What every bench script prints and appends to bench/RESULTS.md: tables, the machine and its load."""

from __future__ import annotations

import datetime
import os
import platform
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "RESULTS.md")


def cell(times: list[float] | None) -> str:
    """median (min-max) of the runs, seconds."""
    if not times:
        return "-"
    med = statistics.median(times)
    return f"{med:.2f}" if len(times) == 1 else f"{med:.2f} ({min(times):.2f}-{max(times):.2f})"


def mib(n: int | None) -> str:
    return "-" if n is None else f"{n / 2**20:.2f}"


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def machine(load_at_start: tuple[float, float, float]) -> str:
    """Cores, CPU, memory, the load average when the run started and now, Python and its data libraries."""
    with open("/proc/cpuinfo") as f:
        cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "?")
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    libs = []
    for mod in ("numpy", "pyarrow"):
        if mod in sys.modules:
            libs.append(f"{mod} {sys.modules[mod].__version__}")
    now = os.getloadavg()
    return (
        f"{os.cpu_count()} cores ({cpu}), {mem:.0f} GiB, load average at start {load_at_start[0]:.1f} "
        f"(1 min) / {load_at_start[1]:.1f} (5 min), at the end {now[0]:.1f} / {now[1]:.1f}; "
        f"Python {platform.python_version()}" + "".join(f", {x}" for x in libs)
    )


def append(
    path: str,
    title: str,
    started: datetime.datetime,
    load_at_start: tuple[float, float, float],
    versions: dict[str, dict[str, str]],
    lines: list[str],
    body: str,
) -> None:
    """One dated section: machine, versions of every system, the command, notes, then the tables."""
    if not path:
        return
    vers = "; ".join(f"{n}: " + ", ".join(f"{k} {v}" for k, v in v_.items()) for n, v_ in versions.items())
    script = os.path.relpath(os.path.abspath(sys.argv[0]), os.path.dirname(HERE))
    with open(path, "a") as f:
        f.write(
            f"\n## {started:%Y-%m-%d %H:%M} UTC: {title}\n\n"
            f"- machine: {machine(load_at_start)}\n- versions: {vers}\n"
            f"- command: `{' '.join([script, *sys.argv[1:]])}`\n"
            + "".join(f"- {line}\n" for line in lines)
            + "\n"
            + body.rstrip("\n")
            + "\n"
        )
    print(f"\nappended to {path}")
