"""Print mined cases with their surroundings, to read them before they count.

    python bench/realbugs/show.py [--mirrors DIR] [--repo OWNER/NAME] [--unread] [--context N]

For each case: its number, category and commit subject, then the fixed line's surroundings in
the parent (``-`` marks the removed line) and in the commit (``+`` the added line), read from the
mirror with ``git show``. Verdicts are recorded with ``verify.py``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mine import DEFAULT_OUT, Case, read_cases

DEFAULT_MIRRORS = Path("/work/.mirror")


def mirror_of(mirrors: Path, repo: str) -> Path:
    return mirrors / repo.replace("/", "+", 1) / "repo"


def file_at(mirror: Path, commit: str, path: str) -> list[str]:
    shown = subprocess.run(
        ["git", "-C", str(mirror), "show", f"{commit}:{path}"], capture_output=True, check=False
    )
    return shown.stdout.decode("utf-8", "replace").splitlines()


def surroundings(lines: list[str], line: int, context: int, marker: str) -> str:
    start, end = max(1, line - context), min(len(lines), line + context)
    return "\n".join(
        f"{marker if number == line else ' '}{number:6} {lines[number - 1]}"
        for number in range(start, end + 1)
    )


def render(number: int, case: Case, mirrors: Path, context: int) -> str:
    mirror = mirror_of(mirrors, case.repo)
    head = (
        f"=== case {number}: {case.category} {case.repo} {case.commit[:10]} {case.path}\n"
        f"subject: {case.subject}\nverified: {case.verified} {case.note}"
    )
    parent = surroundings(file_at(mirror, case.parent, case.path), case.line_before, context, "-")
    fixed = surroundings(file_at(mirror, case.commit, case.path), case.line_after, 2, "+")
    return f"{head}\n--- parent\n{parent}\n+++ commit\n{fixed}\n"


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--mirrors", type=Path, default=DEFAULT_MIRRORS)
    parser.add_argument("--repo", action="append", default=[])
    parser.add_argument("--unread", action="store_true", help="only cases not yet verified")
    parser.add_argument("--context", type=int, default=12)
    parser.add_argument("numbers", nargs="*", type=int, help="case numbers (default: all)")
    options = parser.parse_args(argv)
    cases = read_cases(options.cases)
    for number, case in enumerate(cases):
        if options.numbers and number not in options.numbers:
            continue
        if options.repo and case.repo not in options.repo:
            continue
        if options.unread and case.verified is not None:
            continue
        print(render(number, case, options.mirrors, options.context))
    return 0


if __name__ == "__main__":
    sys.exit(main())
