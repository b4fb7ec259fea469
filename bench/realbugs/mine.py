"""Mine the git history of PyTorch repositories for commits that fixed a device bug.

    python bench/realbugs/mine.py MIRROR [MIRROR ...] [--out bench/realbugs/cases.jsonl]

Each MIRROR is a bare git mirror (see README.md here for how to bring them back). The miner
reads every non-merge commit's one-to-one line replacements in ``*.py`` files (``git log -p
-U0``) and keeps the pairs that ``matching.classify`` recognises as a device fix. A case is a
reference only: repository, commit, parent, path, line numbers, the two lines, the category and
the commit subject; never a repository's files.

Cases already in the output keep their ``verified`` verdict and ``note`` when the miner runs
again, so reading them is never lost; cases the tightened filters no longer find are dropped.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
from matching import CATEGORY_CODES, classify, is_test_path

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "cases.jsonl"
# A hunk that replaces more lines than this is a rewrite, not a one-line fix.
MAX_PAIRED_LINES = 3
# A commit touching more Python files than this is a refactor or a mass rename: its line
# pairs are mostly not bug fixes (an API migration applied everywhere, a formatter run).
MAX_FILES_PER_COMMIT = 25
_HUNK = re.compile(r"^@@ -(?P<old>\d+)(?:,(?P<old_count>\d+))? \+(?P<new>\d+)(?:,\d+)? @@")
_SKIPPED_PATHS = re.compile(r"(^|/)(docs?|third_party|vendor(ed)?|_vendor)/")
# `def test_x(self, device):` where the parent had `def test_x(self):`.
_DEF = re.compile(r"^\s*(?:async\s+)?def\s+(\w+)\s*\((.*)")


@dataclass
class Case:
    repo: str
    commit: str
    parent: str
    path: str
    line_before: int
    line_after: int
    category: str
    codes: list[str]
    before: str
    after: str
    subject: str
    verified: Optional[bool] = None
    note: str = ""

    @property
    def key(self) -> tuple[str, str, str, int]:
        return (self.repo, self.commit, self.path, self.line_before)


@dataclass
class _Commit:
    sha: str
    parent: str
    subject: str
    files: int = 0
    # Test files whose functions gained a device parameter in this commit: a test that ran on
    # the CPU alone is being parametrised over devices, so its `.cpu()` and `device=` are no fix.
    parametrised_tests: set[str] = field(default_factory=set)


def gains_device_parameter(removed: list[tuple[int, str]], added: list[tuple[int, str]]) -> bool:
    """Whether a hunk adds a device parameter to a function it keeps (same name)."""
    before = {m[1]: m[2] for _, line in removed if (m := _DEF.match(line))}
    for _, line in added:
        signature = _DEF.match(line)
        if (
            signature
            and signature[1] in before
            and "device" not in before[signature[1]]
            and "device" in signature[2]
        ):
            return True
    return False


def repo_name(mirror: Path) -> str:
    """``owner/name`` of a mirror brought by fetch (``.../owner+name/repo``)."""
    folder = mirror.parent.name if mirror.name == "repo" else mirror.name
    return folder.replace("+", "/", 1)


def git_log(mirror: Path) -> Iterator[str]:
    command = [
        "git", "-C", str(mirror), "log", "--no-merges", "--no-renames", "--no-color",
        "--no-ext-diff", "-U0", "-p", "--diff-filter=M", "--format=%x1e%H%x1f%P%x1f%s",
        "HEAD", "--", "*.py",
    ]  # fmt: skip
    with subprocess.Popen(command, stdout=subprocess.PIPE) as process:
        assert process.stdout is not None
        for raw in process.stdout:
            yield raw.decode("utf-8", "replace").rstrip("\n")


def mine(mirror: Path) -> list[Case]:
    """Every device-fix line pair in the history of one mirror."""
    repo = repo_name(mirror)
    cases: list[Case] = []
    commit_cases: list[Case] = []
    commit: Optional[_Commit] = None
    path = ""
    removed: list[tuple[int, str]] = []
    added: list[tuple[int, str]] = []

    def close_hunk() -> None:
        if commit and is_test_path(path) and gains_device_parameter(removed, added):
            commit.parametrised_tests.add(path)
        if commit and removed and len(removed) == len(added) <= MAX_PAIRED_LINES:
            for (old_line, old), (new_line, new) in zip(removed, added):
                match = classify(old, new, commit.subject, path)
                if match and not _SKIPPED_PATHS.search(path):
                    commit_cases.append(
                        Case(
                            repo,
                            commit.sha,
                            commit.parent,
                            path,
                            old_line,
                            new_line,
                            match.category,
                            list(CATEGORY_CODES[match.category]),
                            old.strip(),
                            new.strip(),
                            commit.subject,
                        )
                    )
        removed.clear()
        added.clear()

    def close_commit() -> None:
        close_hunk()
        if commit and commit.files <= MAX_FILES_PER_COMMIT:
            cases.extend(c for c in commit_cases if c.path not in commit.parametrised_tests)
        commit_cases.clear()

    old_line = new_line = 0
    for line in git_log(mirror):
        if line.startswith("\x1e"):
            close_commit()
            sha, parents, subject = [*line[1:].split("\x1f"), "", ""][:3]
            commit = _Commit(sha, parents.split(" ")[0], subject) if parents else None
        elif line.startswith("diff --git "):
            close_hunk()
            path = line.split(" b/", 1)[-1]
            if commit:
                commit.files += 1
        elif line.startswith("@@"):
            close_hunk()
            hunk = _HUNK.match(line)
            if hunk:
                old_line, new_line = int(hunk["old"]), int(hunk["new"])
        elif line.startswith("-") and not line.startswith("---"):
            removed.append((old_line + len(removed), line[1:]))
        elif line.startswith("+") and not line.startswith("+++"):
            added.append((new_line + len(added), line[1:]))
    close_commit()
    return cases


def read_cases(path: Path) -> list[Case]:
    if not path.exists():
        return []
    with path.open(encoding="utf-8") as stream:
        return [Case(**json.loads(line)) for line in stream if line.strip()]


def write_cases(path: Path, cases: list[Case]) -> None:
    temporary = path.with_suffix(".tmp")
    with temporary.open("w", encoding="utf-8") as stream:
        for case in cases:
            stream.write(json.dumps(asdict(case), ensure_ascii=False) + "\n")
    temporary.replace(path)


def merge(old: list[Case], new: list[Case], mined_repos: set[str]) -> list[Case]:
    """The new cases with the old ones' readings; repositories not mined now stay as they were."""
    readings = {case.key: case for case in old}
    kept = [case for case in old if case.repo not in mined_repos]
    for case in new:
        previous = readings.get(case.key)
        if previous is not None:
            case.verified, case.note = previous.verified, previous.note
        kept.append(case)
    return sorted(kept, key=lambda case: (case.repo, case.commit, case.path, case.line_before))


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mirrors", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    options = parser.parse_args(argv)
    mined: list[Case] = []
    names = set()
    for mirror in options.mirrors:
        found = mine(mirror)
        names.add(repo_name(mirror))
        print(f"{repo_name(mirror)}: {len(found)} cases", file=sys.stderr)
        mined.extend(found)
    cases = merge(read_cases(options.out), mined, names)
    write_cases(options.out, cases)
    print(f"{len(cases)} cases in {options.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
