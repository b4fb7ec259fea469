"""What the device-flow rules add to the lint time of the core rules, on the same files.

    python bench/flow_cost.py FOLDER [FOLDER ...] [--runs N]

For each FOLDER, devlint runs with the core rules (DEV001-DEV003, DEV008) and with every rule,
one after the other, N times each (default 5), with ``--jobs 1 --no-cache``. Each figure is
the CPU time (user and system) of the process, which the load of other processes disturbs
less than the wall-clock time. It prints the median of each, the extra of the medians, and the
median and range of the extras of the runs paired one by one. The goal is at most +30%.
Nothing here is a test: the figures depend on the machine and on its load.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Optional

CORE = ("DEV001", "DEV002", "DEV003", "DEV008")
EVERY = (*CORE, "DEV004", "DEV005", "DEV006", "DEV007", "DEV009", "DEV010")


def cpu_seconds(command: Sequence[str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def devlint(codes: Sequence[str], folder: Path) -> list[str]:
    return [
        sys.executable, "-m", "devlint.cli", "check", "--jobs", "1", "--no-cache",
        "--exit-zero", "--select", ",".join(codes), str(folder),
    ]  # fmt: skip


def percent(ratio: float) -> str:
    return f"{100 * (ratio - 1):+.0f}%"


def measure(folder: Path, runs: int) -> str:
    core: list[float] = []
    every: list[float] = []
    for _ in range(runs):  # alternated, so that a slow spell of the machine hits both
        core.append(cpu_seconds(devlint(CORE, folder)))
        every.append(cpu_seconds(devlint(EVERY, folder)))
    paired = [rules / alone for rules, alone in zip(every, core)]
    files = sum(1 for _ in folder.rglob("*.py"))
    median_core, median_every = statistics.median(core), statistics.median(every)
    return (
        f"{folder.name} ({files} files): core {median_core:.2f} s, all {median_every:.2f} s, "
        f"extra {percent(median_every / median_core)} (paired: median "
        f"{percent(statistics.median(paired))}, {percent(min(paired))} to {percent(max(paired))})"
    )


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path, help="folders of Python code")
    parser.add_argument("--runs", type=int, default=5, help="runs of each (default 5)")
    options = parser.parse_args(argv)
    for folder in options.folders:
        print(measure(folder, options.runs), flush=True)


if __name__ == "__main__":
    main()
