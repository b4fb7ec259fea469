"""Time devlint against its peers on the same files, and print figures and ratios.

    python bench/bench.py [FOLDER ...] [--no-torch] [--jobs N] [--torchfix PATH]

For PyTorch's installed source and each FOLDER (a real repository, say), on the same list of
`*.py` files, in one run:

- devlint cold (an empty cache) and warm (nothing changed since), with ``--jobs`` processes;
- a bare ``libcst.parse_module`` of every file, in one process: the floor any LibCST linter
  that parses everything stands on;
- ``ruff check --select ALL --no-cache``, and ruff warm (its cache filled by a first run);
- TorchFix, where installed (``--torchfix`` names its executable; it needs LibCST < 1.6, so a
  virtual environment of its own is the usual place).

Each figure is a wall-clock time (and the CPU time of the process and its children, and the
largest resident set of any one of them). The ratios compare wall-clock times of one run:
cold devlint over the bare parse (goal below 1.0), cold devlint over ruff (goal 5 or less),
warm devlint over warm ruff (goal 2 or less), and devlint's throughput over TorchFix's (goal 20
or more). Nothing here is a test: the figures depend on the machine and on its load.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

# Runs a command and reports, as JSON, its resource use (its own and its children's).
_MEASURE = textwrap.dedent(
    """
    import json, resource, subprocess, sys, time
    out, command = sys.argv[1], sys.argv[2:]
    start = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    code = done.returncode
    if code != 0:
        sys.stderr.write(done.stderr.decode(errors="replace")[-2000:])
    wall = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(out, "w") as stream:
        json.dump({"wall": wall, "cpu": usage.ru_utime + usage.ru_stime,
                   "rss_mb": usage.ru_maxrss / 1024, "code": code}, stream)
    """
)
# Parses every file named in a list with LibCST, in this one process.
_BARE_PARSE = textwrap.dedent(
    """
    import sys, libcst
    failed = 0
    for path in open(sys.argv[1], encoding="utf-8").read().splitlines():
        try:
            libcst.parse_module(open(path, "rb").read())
        except Exception:
            failed += 1
    print(failed, "files did not parse", file=sys.stderr)
    """
)


@dataclass(frozen=True)
class Timing:
    wall: float
    cpu: float
    rss_mb: float
    code: int


@dataclass(frozen=True)
class Corpus:
    name: str
    files: list[str]
    lines: int

    def sample(self, count: int) -> Corpus:
        """About ``count`` files spread evenly over the corpus (all of them when 0)."""
        if count <= 0 or count >= len(self.files):
            return self
        files = self.files[:: max(1, len(self.files) // count)]
        return Corpus(self.name, files, _lines(files))


def corpus(folder: Path, name: str) -> Corpus:
    files: list[str] = []
    for root, folders, names in os.walk(folder):
        folders[:] = sorted(f for f in folders if not f.startswith(".") and f != "__pycache__")
        files.extend(os.path.join(root, n) for n in sorted(names) if n.endswith(".py"))
    return Corpus(name, files, _lines(files))


def _lines(files: Sequence[str]) -> int:
    lines = 0
    for path in files:
        with open(path, "rb") as stream:
            lines += stream.read().count(b"\n")
    return lines


def measure(command: Sequence[str], env: Optional[dict[str, str]] = None) -> Timing:
    with tempfile.TemporaryDirectory() as scratch:
        report = os.path.join(scratch, "timing.json")
        # The scratch folder as working directory: no pyproject.toml of ours is picked up.
        subprocess.run(
            [sys.executable, "-c", _MEASURE, report, *command],
            cwd=scratch,
            env={**os.environ, **(env or {})},
            check=True,
        )
        with open(report, encoding="utf-8") as stream:
            return Timing(**json.load(stream))


def _ruff() -> Optional[list[str]]:
    found = shutil.which("ruff")
    return [found] if found else None


def run_corpus(
    target: Corpus, jobs: int, torchfix: Optional[str], torchfix_sample: int
) -> dict[str, Timing]:
    timings: dict[str, Timing] = {}
    with tempfile.TemporaryDirectory() as scratch:
        listing = os.path.join(scratch, "files.txt")
        Path(listing).write_text("\n".join(target.files), encoding="utf-8")
        devlint = [sys.executable, "-m", "devlint.cli", "check", "--exit-zero", "--no-progress"]
        devlint += ["--jobs", str(jobs), *target.files]
        cache = {"DEVLINT_CACHE_DIR": os.path.join(scratch, "devlint-cache")}
        print(f"  devlint cold ({jobs} jobs)...", file=sys.stderr)
        timings["devlint cold"] = measure(devlint, cache)
        print("  devlint warm...", file=sys.stderr)
        timings["devlint warm"] = measure(devlint, cache)
        print("  bare LibCST parse...", file=sys.stderr)
        timings["bare LibCST parse"] = measure([sys.executable, "-c", _BARE_PARSE, listing])
        ruff = _ruff()
        if ruff is not None:
            base = [*ruff, "check", "--isolated", "--select", "ALL", "--exit-zero"]
            print("  ruff --no-cache...", file=sys.stderr)
            timings["ruff"] = measure([*base, "--no-cache", *target.files])
            warm = [*base, "--cache-dir", os.path.join(scratch, "ruff-cache"), *target.files]
            measure(warm)  # fills ruff's cache
            print("  ruff warm...", file=sys.stderr)
            timings["ruff warm"] = measure(warm)
        if torchfix is not None:
            sample = target.sample(torchfix_sample)
            print(f"  TorchFix on {len(sample.files)} files...", file=sys.stderr)
            timing = measure([torchfix, *sample.files])
            # On a sample, scale to the whole corpus by lines: throughput is what is compared.
            scale = target.lines / sample.lines if sample.lines else 1.0
            timings["TorchFix"] = Timing(
                timing.wall * scale, timing.cpu * scale, timing.rss_mb, timing.code
            )
    return timings


def _ratio(numerator: Optional[Timing], denominator: Optional[Timing]) -> str:
    if numerator is None or denominator is None or denominator.wall == 0:
        return "n/a"
    return f"{numerator.wall / denominator.wall:.2f}"


def report(target: Corpus, timings: dict[str, Timing], jobs: int) -> str:
    rows = [
        f"### {target.name}: {len(target.files)} files, {target.lines:,} lines",
        "",
        "| run | wall s | CPU s | files/s | max RSS MB |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, timing in timings.items():
        shown = f"{label} ({jobs} jobs)" if label.startswith("devlint") else label
        rate = len(target.files) / timing.wall if timing.wall else float("inf")
        rows.append(
            f"| {shown} | {timing.wall:.2f} | {timing.cpu:.2f} | {rate:,.0f} "
            f"| {timing.rss_mb:.0f} |"
        )
    cold, warm = timings.get("devlint cold"), timings.get("devlint warm")
    torchfix = timings.get("TorchFix")
    throughput = _ratio(torchfix, cold)  # TorchFix's time over devlint's: devlint's speed-up
    rows += [
        "",
        "| ratio (wall clock) | measured | goal |",
        "|---|---:|---:|",
        f"| cold devlint / bare LibCST parse | {_ratio(cold, timings.get('bare LibCST parse'))}"
        " | < 1.0 |",
        f"| cold devlint / ruff --no-cache | {_ratio(cold, timings.get('ruff'))} | ≤ 5 |",
        f"| warm devlint / warm ruff | {_ratio(warm, timings.get('ruff warm'))} | ≤ 2 |",
        f"| devlint throughput / TorchFix's | {throughput} | ≥ 20 |",
    ]
    return "\n".join(rows)


def _torch_source() -> Optional[Path]:
    try:
        import torch
    except ImportError:
        return None
    return Path(os.path.dirname(torch.__file__))


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="*", type=Path, help="more folders to time")
    parser.add_argument("--no-torch", action="store_true", help="skip PyTorch's own source")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="devlint's --jobs")
    parser.add_argument("--torchfix", help="the torchfix executable (default: on PATH)")
    parser.add_argument(
        "--torchfix-sample",
        type=int,
        default=0,
        metavar="N",
        help="time TorchFix on about N files, scaled to the corpus by lines (default: all)",
    )
    args = parser.parse_args(argv)
    torchfix = args.torchfix or shutil.which("torchfix")
    targets: list[Corpus] = []
    source = None if args.no_torch else _torch_source()
    if source is not None:
        targets.append(corpus(source, "PyTorch's installed source"))
    targets += [corpus(folder, folder.name) for folder in args.folders]
    ruff = " ".join(_ruff() or ["absent"])
    print(f"{os.cpu_count()} CPUs; devlint --jobs {args.jobs}; ruff: {ruff}; ", end="")
    print(f"TorchFix: {torchfix or 'absent'}\n")
    for target in targets:
        print(f"{target.name}...", file=sys.stderr)
        timings = run_corpus(target, args.jobs, torchfix, args.torchfix_sample)
        print(report(target, timings, args.jobs), "\n", flush=True)


if __name__ == "__main__":
    main()
