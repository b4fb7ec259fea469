"""Score devlint's recall on real device bugs mined from public history.

    python bench/realbugs/score.py [--mirrors DIR] [--scope dir|imports|file] [--repo NAME ...]

For every case in ``cases.jsonl`` the scorer extracts, from the bare mirrors, the parent's and
the commit's version of the fixed file together with its package (the other ``*.py`` files of its
folder, where the evidence of a cross-file bug usually lives: the model moved in one module, the
tensor made in another; with ``--scope imports``, also the project files the fixed file imports
and those they import in turn, the ``__init__.py`` files above them and the project's root
markers, so that devlint's cross-file summaries see what a whole checkout would show), lints
each of the two trees in one devlint run, and prints:

- recall: the parent's file has a finding of the category's code on the fixed line's statement;
- recall (any code): a finding of any device rule there;
- false alarms: the commit's (fixed) file still has a finding of the category's code on the fixed
  line's statement;
- at or citing: recall counting also a finding of the category's code elsewhere that cites the
  fixed statement as its evidence (a tensor made on the CPU there, reported where it meets a
  tensor on a device: the message points the reader at the line to fix);

per category and overall, for all cases and for the verified ones, then the misses. Figures are
measurements, not assertions: the test suite checks the arithmetic, never the numbers.
"""

from __future__ import annotations

import argparse
import ast
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path, PurePosixPath
from typing import Any, Optional
from urllib.parse import unquote, urljoin, urlparse

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mine import DEFAULT_OUT, Case, read_cases
from show import DEFAULT_MIRRORS, mirror_of

REPO_ROOT = Path(__file__).resolve().parents[2]
# A folder with more modules than this is linted as the fixed file alone (vendored op
# collections, generated code): the cost would grow with the folder, the evidence would not.
MAX_PACKAGE_FILES = 80
# At most this many files a fixed file imports are extracted with it (`--scope imports`).
MAX_IMPORTED_FILES = 60
_ROOT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg")
# Findings of these codes say nothing about a device (a file devlint could not parse).
NOT_DEVICE_CODES = frozenset({"DEV000"})


@dataclass(frozen=True)
class Span:
    first: int
    last: int

    def overlaps(self, first: int, last: int) -> bool:
        return first <= self.last and last >= self.first


@dataclass
class Outcome:
    """What devlint said about one case, before and after the fix."""

    case: Case
    codes_before: set[str] = field(default_factory=set)
    codes_after: set[str] = field(default_factory=set)
    missing_file: bool = False
    # Codes of the parent's findings elsewhere that cite the fixed statement as their evidence.
    codes_citing_before: set[str] = field(default_factory=set)

    @property
    def hit(self) -> bool:
        return bool(self.codes_before & set(self.case.codes))

    @property
    def hit_or_cited(self) -> bool:
        return self.hit or bool(self.codes_citing_before & set(self.case.codes))

    @property
    def hit_any(self) -> bool:
        return bool(self.codes_before - NOT_DEVICE_CODES)

    @property
    def false_alarm(self) -> bool:
        return bool(self.codes_after & set(self.case.codes))


@dataclass
class Tally:
    cases: int = 0
    hits: int = 0
    hits_any: int = 0
    false_alarms: int = 0
    hits_or_cited: int = 0

    def add(self, outcome: Outcome) -> None:
        self.cases += 1
        self.hits += outcome.hit
        self.hits_or_cited += outcome.hit_or_cited
        self.hits_any += outcome.hit_any
        self.false_alarms += outcome.false_alarm


def rate(part: int, whole: int) -> str:
    return f"{100 * part / whole:5.1f}%" if whole else "    -"


def tally(outcomes: Iterable[Outcome]) -> dict[str, Tally]:
    """Counts per category, with the overall row under ``"all"``."""
    tallies: dict[str, Tally] = defaultdict(Tally)
    for outcome in outcomes:
        tallies[outcome.case.category].add(outcome)
        tallies["all"].add(outcome)
    return tallies


def table(title: str, tallies: dict[str, Tally]) -> str:
    rows = [
        f"{title}",
        f"  {'category':16} {'cases':>6} {'recall':>8} {'any code':>9} {'false alarms':>13}"
        f" {'at or citing':>13}",
    ]
    for name in sorted(tallies, key=lambda name: (name == "all", name)):
        counts = tallies[name]
        recall, any_code = rate(counts.hits, counts.cases), rate(counts.hits_any, counts.cases)
        alarms = rate(counts.false_alarms, counts.cases)
        citing = rate(counts.hits_or_cited, counts.cases)
        rows.append(
            f"  {name:16} {counts.cases:6} {recall:>8} {any_code:>9} {alarms:>13} {citing:>13}"
        )
    return "\n".join(rows)


def statement_span(source: str, line: int) -> Span:
    """The lines of the innermost statement holding ``line`` (a compound one's header only)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return Span(line, line)
    return _span_in(tree.body, line) or Span(line, line)


def _span_in(statements: Sequence[ast.stmt], line: int) -> Optional[Span]:
    for statement in statements:
        last = statement.end_lineno or statement.lineno
        first = min([statement.lineno, *(d.lineno for d in _decorators(statement))])
        if not first <= line <= last:
            continue
        blocks = list(_blocks(statement))
        for block in blocks:
            inner = _span_in(block, line)
            if inner:
                return inner
        body_starts = [block[0].lineno for block in blocks if block]
        header_end = min(body_starts) - 1 if body_starts else last
        return Span(first, max(first, header_end if line <= header_end else line))
    return None


def _decorators(statement: ast.stmt) -> list[ast.expr]:
    return list(getattr(statement, "decorator_list", []))


def _blocks(statement: ast.stmt) -> Iterable[Sequence[ast.stmt]]:
    for name in ("body", "orelse", "finalbody"):
        block = getattr(statement, name, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            yield block
    for handler in getattr(statement, "handlers", []):
        yield handler.body
    for case in getattr(statement, "cases", []):
        yield case.body


class Extractor:
    """Reads files of one mirror at given commits through one ``git cat-file --batch``."""

    def __init__(self, mirror: Path) -> None:
        self.mirror = mirror
        self._listings: dict[str, frozenset[str]] = {}
        self.process = subprocess.Popen(
            ["git", "-C", str(mirror), "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )

    def read(self, commit: str, path: str) -> Optional[bytes]:
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write(f"{commit}:{path}\n".encode())
        self.process.stdin.flush()
        header = self.process.stdout.readline().decode().split()
        if len(header) != 3:
            return None
        data = self.process.stdout.read(int(header[2]))
        self.process.stdout.read(1)
        return data if header[1] == "blob" else None

    def package_of(self, commit: str, path: str) -> list[str]:
        folder = str(PurePosixPath(path).parent)
        listing = subprocess.run(
            ["git", "-C", str(self.mirror), "ls-tree", "--name-only", commit,
             f"{folder}/" if folder != "." else ""],
            capture_output=True, text=True, check=False,
        ).stdout.split()  # fmt: skip
        modules = [name for name in listing if name.endswith(".py")]
        if path not in modules or len(modules) > MAX_PACKAGE_FILES:
            return [path]
        return modules + self._enclosing_packages(commit, folder)

    def _enclosing_packages(self, commit: str, folder: str) -> list[str]:
        """The `__init__.py` of each package above ``folder``: a checkout has them, and they
        name the folder's modules (`speechbrain.processing.signal_processing`)."""
        tree = self.listing(commit)
        found = []
        for parent in PurePosixPath(folder).parents:
            marker = f"{parent}/__init__.py"
            if str(parent) == "." or marker not in tree:
                break
            found.append(marker)
        return found

    def listing(self, commit: str) -> frozenset[str]:
        """Every file of the commit's tree (memoised: one case's two sides share a commit)."""
        if commit not in self._listings:
            self._listings[commit] = frozenset(
                subprocess.run(
                    ["git", "-C", str(self.mirror), "ls-tree", "-r", "--name-only", commit],
                    capture_output=True, text=True, check=False,
                ).stdout.splitlines()
            )  # fmt: skip
        return self._listings[commit]

    def close(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        self.process.wait()


def imported_files(files: frozenset[str], path: str, source: bytes) -> list[str]:
    """The files of ``files`` (a tree's listing) that the module at ``path`` imports, the
    ``__init__.py`` files of the folders above it and them, and the root's project markers."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    folder = PurePosixPath(path).parent
    modules: set[PurePosixPath] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                modules.update(_module_paths(folder, 0, alias.name))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            for alias in node.names:
                dotted = f"{base}.{alias.name}" if base else alias.name
                modules.update(_module_paths(folder, node.level, dotted))
            if base:
                modules.update(_module_paths(folder, node.level, base))
    found = sorted(
        str(file)
        for module in modules
        for file in (module.with_suffix(".py"), module / "__init__.py")
        if str(file) in files
    )[:MAX_IMPORTED_FILES]
    wanted = set(found) | {marker for marker in _ROOT_MARKERS if marker in files}
    for file in (path, *found):
        for parent in PurePosixPath(file).parents:
            init = str(parent / "__init__.py") if str(parent) != "." else "__init__.py"
            if init in files:
                wanted.add(init)
    wanted.discard(path)
    return sorted(wanted)


def import_closure(
    files: frozenset[str], path: str, read: Callable[[str], Optional[bytes]]
) -> list[str]:
    """The files ``path`` imports, the files those import, and so on (at most
    ``MAX_IMPORTED_FILES`` files, markers included): a base class two modules away is what a
    whole checkout shows the cross-file summaries."""
    wanted: set[str] = set()
    pending = [path]
    while pending:
        current = pending.pop()
        for found in imported_files(files, current, read(current) or b""):
            if len(wanted) == MAX_IMPORTED_FILES:
                return sorted(wanted)
            if found not in wanted and found != path:
                wanted.add(found)
                if found.endswith(".py"):
                    pending.append(found)
    return sorted(wanted)


def _module_paths(folder: PurePosixPath, level: int, dotted: str) -> list[PurePosixPath]:
    """Where a module may live: from the importing file's package (relative imports), or from
    the file's folder, the tree's root and its ``src/`` (absolute ones)."""
    parts = PurePosixPath(*dotted.split("."))
    if level:
        base = folder
        for _ in range(level - 1):
            base = base.parent
        return [base / parts]
    return [folder / parts, parts, PurePosixPath("src") / parts]


def tree_folder(root: Path, case: Case, side: str) -> Path:
    commit = case.parent if side == "before" else case.commit
    return root / side / case.repo.replace("/", "+") / commit[:12]


def extract(cases: Sequence[Case], mirrors: Path, root: Path, scope: str) -> None:
    """Write each case's file (and its package) at the parent and at the commit under ``root``."""
    by_repo: dict[str, list[Case]] = defaultdict(list)
    for case in cases:
        by_repo[case.repo].append(case)
    for repo, repo_cases in by_repo.items():
        extractor = Extractor(mirror_of(mirrors, repo))
        done: set[tuple[str, str]] = set()
        try:
            for case in repo_cases:
                for side, commit in (("before", case.parent), ("after", case.commit)):
                    paths = (
                        extractor.package_of(commit, case.path) if scope != "file" else [case.path]
                    )
                    if scope == "imports":
                        paths += import_closure(
                            extractor.listing(commit), case.path, partial(extractor.read, commit)
                        )
                    for path in paths:
                        if (commit, path) in done:
                            continue
                        done.add((commit, path))
                        data = extractor.read(commit, path)
                        if data is not None:
                            target = tree_folder(root, case, side) / path
                            target.parent.mkdir(parents=True, exist_ok=True)
                            target.write_bytes(data)
        finally:
            extractor.close()


def lint(tree: Path, jobs: Optional[int]) -> dict[Path, list[dict[str, object]]]:
    """devlint's findings for a whole tree, in one run, keyed by resolved file path: read from
    its SARIF report, which also carries the lines each finding cites as evidence."""
    command = [
        sys.executable, "-m", "devlint.cli", "check", str(tree), "--output-format", "sarif",
        "--no-cache", "--exit-zero", "--no-progress", "--select", "ALL",
    ]  # fmt: skip
    if jobs:
        command += ["--jobs", str(jobs)]
    completed = subprocess.run(command, capture_output=True, text=True, cwd=REPO_ROOT)
    if completed.returncode != 0:
        raise SystemExit(f"devlint failed on {tree}: {completed.stderr.strip()}")
    findings: dict[Path, list[dict[str, object]]] = defaultdict(list)
    for run in json.loads(completed.stdout)["runs"]:
        bases = {name: base["uri"] for name, base in run.get("originalUriBaseIds", {}).items()}
        for result in run["results"]:
            path, finding = sarif_finding(result, bases)
            findings[path].append(finding)
    return findings


def sarif_finding(result: dict[str, Any], bases: dict[str, str]) -> tuple[Path, dict[str, object]]:
    """One SARIF result as the scorer reads a finding: its code, its rows, the rows it cites."""
    physical = result["locations"][0]["physicalLocation"]
    artifact = physical["artifactLocation"]
    uri = urljoin(bases.get(artifact.get("uriBaseId", ""), ""), artifact["uri"])
    region = physical.get("region", {})
    start = int(region.get("startLine", 0))
    finding: dict[str, object] = {
        "code": result["ruleId"],
        "location": {"row": start},
        "end_location": {"row": int(region.get("endLine", start))},
        "cited": [
            int(related["physicalLocation"]["region"]["startLine"])
            for related in result.get("relatedLocations", ())
        ],
    }
    return Path(unquote(urlparse(uri).path)).resolve(), finding


def codes_at(findings: list[dict[str, object]], span: Span) -> set[str]:
    codes = set()
    for finding in findings:
        start = finding["location"]
        end = finding.get("end_location") or start
        assert isinstance(start, dict) and isinstance(end, dict)
        if span.overlaps(int(start["row"]), int(end["row"])):
            codes.add(str(finding["code"]))
    return codes


def codes_citing(findings: list[dict[str, object]], span: Span) -> set[str]:
    """Codes of findings that cite a line of the statement as their evidence: `x` made on the
    CPU at that line, reported where it meets a tensor on a device."""
    codes = set()
    for finding in findings:
        cited = finding.get("cited") or []
        assert isinstance(cited, list)
        if any(span.overlaps(int(row), int(row)) for row in cited):
            codes.add(str(finding["code"]))
    return codes


def score(cases: Sequence[Case], root: Path, jobs: Optional[int]) -> list[Outcome]:
    findings = {side: lint(root / side, jobs) for side in ("before", "after")}
    outcomes = []
    for case in cases:
        outcome = Outcome(case)
        for side, line in (("before", case.line_before), ("after", case.line_after)):
            path = (tree_folder(root, case, side) / case.path).resolve()
            if not path.exists():
                outcome.missing_file = True
                continue
            span = statement_span(path.read_text(encoding="utf-8", errors="replace"), line)
            codes = codes_at(findings[side].get(path, []), span)
            if side == "before":
                outcome.codes_before = codes
                outcome.codes_citing_before = codes_citing(findings[side].get(path, []), span)
            else:
                outcome.codes_after = codes
        outcomes.append(outcome)
    return outcomes


def report(outcomes: Sequence[Outcome], misses: int) -> str:
    verified = [outcome for outcome in outcomes if outcome.case.verified]
    read = sum(outcome.case.verified is not None for outcome in outcomes)
    repos = len({outcome.case.repo for outcome in outcomes})
    parts = [
        f"{len(outcomes)} cases from {repos} repositories; {read} read, {len(verified)} verified",
        table("All cases", tally(outcomes)),
        table("Verified cases", tally(verified)),
    ]
    missed = [outcome for outcome in (verified or outcomes) if not outcome.hit]
    parts.append(
        f"Misses ({'verified' if verified else 'all'} cases, {len(missed)}; first {misses}):"
    )
    for outcome in missed[:misses]:
        case = outcome.case
        also = (
            f" [other codes: {','.join(sorted(outcome.codes_before))}]" if outcome.hit_any else ""
        )
        parts.append(
            f"  {case.category:15} {case.repo} {case.commit[:10]} {case.path}:{case.line_before}"
            f"{also}\n      - {case.before}\n      + {case.after}"
        )
    return "\n".join(parts)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--mirrors", type=Path, default=DEFAULT_MIRRORS)
    parser.add_argument("--repo", action="append", default=[])
    parser.add_argument("--scope", choices=("dir", "imports", "file"), default="dir")
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--misses", type=int, default=60, help="how many misses to list")
    parser.add_argument("--json", type=Path, help="also write each case's outcome here")
    parser.add_argument("--keep", type=Path, help="extract into this folder and keep it")
    options = parser.parse_args(argv)
    cases = [
        case for case in read_cases(options.cases) if not options.repo or case.repo in options.repo
    ]
    cases = [case for case in cases if mirror_of(options.mirrors, case.repo).exists()]
    root = options.keep or Path(tempfile.mkdtemp(prefix="realbugs-"))
    started = time.perf_counter()
    try:
        extract(cases, options.mirrors, root, options.scope)
        extracted = time.perf_counter()
        outcomes = score(cases, root, options.jobs)
    finally:
        if not options.keep:
            shutil.rmtree(root, ignore_errors=True)
    print(report(outcomes, options.misses))
    print(
        f"extracted in {extracted - started:.0f} s, linted and scored in "
        f"{time.perf_counter() - extracted:.0f} s"
    )
    if options.json:
        options.json.write_text(
            json.dumps(
                [
                    {**{k: getattr(o.case, k) for k in ("repo", "commit", "path", "line_before")},
                     "category": o.case.category, "hit": o.hit, "hit_any": o.hit_any,
                     "false_alarm": o.false_alarm}
                    for o in outcomes
                ],
                indent=1,
            )
        )  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
