"""The real-bug benchmark's miner matching and scorer arithmetic (never its figures)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "bench" / "realbugs"))
import score
from matching import classify, insertions
from mine import Case, merge, mine, read_cases, write_cases
from score import (
    Outcome,
    Span,
    codes_at,
    codes_citing,
    import_closure,
    imported_files,
    sarif_finding,
    statement_span,
    table,
    tally,
)


@pytest.mark.parametrize(
    ("before", "after", "category"),
    [
        ("idx = torch.arange(n)", "idx = torch.arange(n, device=x.device)", "factory-device"),
        (
            "m = torch.zeros(b, k) + x",
            "m = torch.zeros(b, k, device=x.device) + x",
            "factory-device",
        ),
        (
            "t = torch.tensor([1.0], dtype=d)",
            "t = torch.tensor([1.0], device=dev, dtype=d)",
            "factory-device",
        ),
        ("loss = crit(out, y)", "loss = crit(out, y.to(device))", "missing-move"),
        ("z = a + b", "z = a + b.type_as(a)", "missing-move"),
        ("z = a + b", "z = a + b.cuda()", "missing-move"),
        ("mask = m[idx]", "mask = m[idx.to(m.device)]", "missing-move"),
        ("x.to(device)", "x = x.to(device)", "discarded-move"),
        ("batch.cuda()", "batch = batch.cuda()", "discarded-move"),
        ("self.mask = torch.ones(3)", 'self.register_buffer("mask", torch.ones(3))', "buffer"),
        ("self.mask = m", "self.register_buffer('mask', m, persistent=False)", "buffer"),
        ("ckpt = torch.load(p)", "ckpt = torch.load(p, map_location='cpu')", "map-location"),
        ("a = x.numpy()", "a = x.cpu().numpy()", "numpy-cpu"),
        ("a = x.detach().numpy()", "a = x.detach().cpu().numpy()", "numpy-cpu"),
        ("a = np.mean(x)", "a = np.mean(x.cpu())", "numpy-cpu"),
        ("model = Net().cuda()", "model = Net().to(device)", "unguarded-cuda"),
        ("x = x.cuda()", "x = x.cuda() if torch.cuda.is_available() else x", "unguarded-cuda"),
        ("m = torch.cuda.memory_cached()", "m = torch.cuda.memory_reserved()", "deprecated-api"),
        ("with torch.cuda.amp.autocast():", "with torch.amp.autocast():", "deprecated-api"),
        ('x = x.to("cuda:1")', "x = x.to(device)", "ordinal"),
        ("x = x.cuda(1)", "x = x.cuda()", "ordinal"),
    ],
)
def test_device_fixes_are_recognised(before: str, after: str, category: str) -> None:
    match = classify(before, after)
    assert match is not None and match.category == category


@pytest.mark.parametrize(
    ("before", "after"),
    [
        # dtype conversions and renames are no device fixes
        ("y = x", "y = x.to(torch.float32)"),
        ("y = x", "y = x.to(x.dtype)"),
        ("y = f(x)", "y = g(x)"),
        # a factory made explicitly on the CPU is not a move to the device
        ("t = torch.zeros(3)", "t = torch.zeros(3, device='cpu')"),
        ("t = torch.zeros(3)", 't = torch.zeros(3, device=torch.device("cpu"))'),
        # `device=` added to a call that is no tensor factory
        ("m = build(cfg)", "m = build(cfg, device=dev)"),
        # comments and docstring lines
        ("# x = torch.zeros(3)", "# x = torch.zeros(3, device=d)"),
        (">>> x.numpy()", ">>> x.cpu().numpy()"),
        # a discarded move whose fix assigns to another name
        ("x.to(device)", "y = x.to(device)"),
        # a whitespace-only change
        ("x = torch.zeros( 3 )", "x = torch.zeros(3)"),
        # a move together with a new argument is two changes, not a one-line device fix
        ("y = f(x)", "y = f(x.to(device), z)"),
        # a buffer under another name
        ("self.a = t", "self.register_buffer('b', t)"),
        # an ordinal moved to another ordinal is no fix
        ('x = x.to("cuda:1")', 'x = x.to("cuda:2")'),
    ],
)
def test_near_misses_are_rejected(before: str, after: str) -> None:
    assert classify(before, after) is None


@pytest.mark.parametrize(
    ("before", "after", "subject", "path"),
    [
        # a test limited to CUDA, ported to another accelerator
        ("m = Net().cuda()", "m = Net().to(torch_device)", "Enable tests on XPU", "tests/t.py"),
        # GPU 0 is no hard-coded ordinal, and 1 to 2 is still one
        ('d = torch.device("cuda:0")', "d = torch.device(device)", "", "a.py"),
        ('x = x.to("cuda:1")', 'x = x.to("cuda:2")', "", "a.py"),
        # devices threaded through constructors, `*_like`, parameters and buffers
        ("w = torch.ones(3)", "w = torch.ones(3, device=device)", "dd factory kwargs", "m.py"),
        ("m = torch.empty_like(x)", "m = torch.empty_like(x, device=x.device)", "", "m.py"),
        (
            "self.g = nn.Parameter(torch.ones(3))",
            "self.g = nn.Parameter(torch.ones(3, device=d))",
            "",
            "m.py",
        ),
        ("x = torch.zeros(3)", "x = torch.zeros(3, device=available_device)", "", "tests/t.py"),
        ("r = c.numpy()", "r = c.cpu().numpy()", "add available_device", "tests/t.py"),
        ("m = m.cuda()", "m = m.to(self.device)", "TST Make tests device-agnostic", "tests/t.py"),
        # a loss without weights, a test model moved with its inputs
        (
            "criterion = nn.CrossEntropyLoss()",
            "criterion = nn.CrossEntropyLoss().cuda()",
            "",
            "a.py",
        ),
        (
            "m = Model.from_pretrained(p)",
            "m = Model.from_pretrained(p).to(torch_device)",
            "",
            "tests/test_m.py",
        ),
        # `.to()` works in place on pipelines and modules
        ("pipe.to(torch_device)", "pipe = pipe.to(torch_device)", "", "tests/test_p.py"),
        # deprecated names in strings, docstrings and mock targets
        (
            'scaler: Optional["torch.cuda.amp.GradScaler"] = None,',
            'scaler: Optional["torch.amp.GradScaler"] = None,',
            "",
            "a.py",
        ),
        (
            "scaler (torch.cuda.amp.GradScaler): the scaler",
            "scaler (torch.amp.GradScaler): the scaler",
            "",
            "a.py",
        ),
    ],
)
def test_shapes_reading_found_no_fix_are_rejected(
    before: str, after: str, subject: str, path: str
) -> None:
    assert classify(before, after, subject, path) is None


def test_the_same_shapes_stay_cases_elsewhere() -> None:
    assert classify("m = Net().cuda()", "m = Net().to(device)", "Fix CPU runs", "train.py")
    assert classify('x = x.to("cuda:1")', 'x = x.to("cuda:0")', "", "a.py")
    assert classify("x = torch.zeros(3)", "x = torch.zeros(3, device=x.device)", "", "tests/t.py")


def test_insertions_lists_every_placement() -> None:
    assert insertions("x.numpy()", "x.cpu().numpy()") == [(1, ".cpu()"), (2, "cpu().")]
    assert insertions("abc", "abc") == []


def _commit_file(repo: Path, text: str, message: str) -> None:
    (repo / "train.py").write_text(text)
    subprocess.run(["git", "add", "train.py"], cwd=repo, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message],
        cwd=repo,
        check=True,
    )


def test_miner_reads_history_and_keeps_readings(tmp_path: Path) -> None:
    repo = tmp_path / "owner+name" / "repo"
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    _commit_file(repo, "import torch\nx = torch.zeros(3)\ny = x.numpy()\n", "first")
    _commit_file(repo, "import torch\nx = torch.zeros(3)\ny = x.cpu().numpy()\n", "fix numpy")
    cases = mine(repo)
    assert [(c.repo, c.category, c.line_before, c.line_after, c.subject) for c in cases] == [
        ("owner/name", "numpy-cpu", 3, 3, "fix numpy")
    ]
    assert cases[0].codes == ["DEV007"] and cases[0].before == "y = x.numpy()"

    store = tmp_path / "cases.jsonl"
    cases[0].verified, cases[0].note = True, "read"
    write_cases(store, cases)
    again = merge(read_cases(store), mine(repo), {"owner/name"})
    assert (again[0].verified, again[0].note) == (True, "read")


def _commit_files(repo: Path, files: dict[str, str], message: str) -> None:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    subprocess.run(["git", "add", "."], cwd=repo, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message],
        cwd=repo,
        check=True,
    )


def test_miner_drops_tests_that_gain_a_device_parameter(tmp_path: Path) -> None:
    """A CPU-only test parametrised over devices: its `.cpu()` fixes nothing (reading found 110)."""
    repo = tmp_path / "owner+name" / "repo"
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    test = "import torch\n\ndef test_cm({}):\n    x = torch.zeros(3)\n    y = x{}.numpy()\n"
    library = "import torch\n\ndef f(x):\n    return x{}.numpy()\n"
    _commit_files(
        repo, {"tests/test_cm.py": test.format("", ""), "lib.py": library.format("")}, "first"
    )
    _commit_files(
        repo,
        {"tests/test_cm.py": test.format("device", ".cpu()"), "lib.py": library.format(".cpu()")},
        "run the metric tests on every device",
    )
    assert [(c.path, c.category) for c in mine(repo)] == [("lib.py", "numpy-cpu")]


def _case(category: str, codes: list[str], verified: bool | None = True) -> Case:
    return Case("o/r", "c" * 40, "p" * 40, "a.py", 3, 3, category, codes, "b", "a", "s", verified)


def test_scorer_counts_hits_any_code_and_false_alarms() -> None:
    outcomes = [
        Outcome(_case("numpy-cpu", ["DEV007"]), {"DEV007"}, set()),
        Outcome(_case("numpy-cpu", ["DEV007"]), {"DEV005"}, {"DEV007"}),
        Outcome(_case("buffer", ["DEV009"]), {"DEV000"}, set()),
        Outcome(_case("buffer", ["DEV009"]), set(), set()),
    ]
    tallies = tally(outcomes)
    assert (tallies["numpy-cpu"].hits, tallies["numpy-cpu"].hits_any) == (1, 2)
    assert tallies["numpy-cpu"].false_alarms == 1
    assert (tallies["buffer"].cases, tallies["buffer"].hits_any) == (2, 0)
    assert (tallies["all"].cases, tallies["all"].hits, tallies["all"].hits_any) == (4, 1, 2)
    printed = table("t", tallies)
    assert "numpy-cpu             2    50.0%    100.0%         50.0%" in printed
    assert printed.splitlines()[-1].split()[:3] == ["all", "4", "25.0%"]


def test_statement_span_covers_continuations_and_compound_headers() -> None:
    source = textwrap.dedent(
        """\
        def f(x):
            y = g(
                x,
            )
            if y.numpy(
            ):
                return y
        """
    )
    assert statement_span(source, 3) == Span(2, 4)
    assert statement_span(source, 5) == Span(5, 6)
    assert statement_span(source, 7) == Span(7, 7)
    assert statement_span("x = (", 1) == Span(1, 1)


def test_findings_count_where_they_overlap_the_statement() -> None:
    findings: list[dict[str, object]] = [
        {
            "code": "DEV005",
            "location": {"row": 2, "column": 1},
            "end_location": {"row": 4, "column": 2},
        },
        {
            "code": "DEV001",
            "location": {"row": 9, "column": 1},
            "end_location": {"row": 9, "column": 9},
        },
    ]
    assert codes_at(findings, Span(4, 6)) == {"DEV005"}
    assert codes_at(findings, Span(5, 8)) == set()


def test_a_finding_citing_the_fixed_statement_counts_as_at_or_citing() -> None:
    cited = Outcome(_case("factory-device", ["DEV005"]), set(), set(), False, {"DEV005"})
    other_code = Outcome(_case("factory-device", ["DEV005"]), set(), set(), False, {"DEV007"})
    assert cited.hit_or_cited and not cited.hit
    assert not other_code.hit_or_cited
    tallies = tally([cited, other_code])
    assert (tallies["all"].hits, tallies["all"].hits_or_cited) == (0, 1)
    assert table("t", tallies).splitlines()[-1].split()[-1] == "50.0%"


def test_sarif_results_read_as_findings_with_their_cited_rows(tmp_path: Path) -> None:
    result = {
        "ruleId": "DEV005",
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": "pkg/a%20b.py", "uriBaseId": "%SRCROOT%"},
                    "region": {"startLine": 8, "startColumn": 3, "endLine": 9},
                }
            }
        ],
        "relatedLocations": [{"physicalLocation": {"region": {"startLine": 7}}}],
    }
    path, finding = sarif_finding(result, {"%SRCROOT%": tmp_path.as_uri() + "/"})
    assert path == (tmp_path / "pkg" / "a b.py").resolve()
    assert codes_at([finding], Span(9, 9)) == {"DEV005"}
    assert codes_citing([finding], Span(7, 7)) == {"DEV005"}
    assert codes_citing([finding], Span(8, 9)) == set()


def test_the_imports_scope_extracts_the_project_files_a_module_imports() -> None:
    files = frozenset(
        [
            "pyproject.toml",
            "pkg/__init__.py",
            "pkg/a.py",
            "pkg/sub/__init__.py",
            "pkg/sub/b.py",
            "pkg/sub/c.py",
            "src/lib/__init__.py",
            "src/lib/d.py",
            "other.py",
            "unused.py",
        ]
    )
    source = (
        b"from . import c\nfrom ..a import thing\nimport pkg.sub.b as again\n"
        b"from lib.d import f\nimport numpy\nfrom other import z\n"
    )
    assert imported_files(files, "pkg/sub/b.py", source) == [
        "other.py",
        "pkg/__init__.py",
        "pkg/a.py",
        "pkg/sub/__init__.py",
        "pkg/sub/c.py",
        "pyproject.toml",
        "src/lib/__init__.py",
        "src/lib/d.py",
    ]
    assert imported_files(files, "pkg/sub/b.py", b"def broken(:\n") == []


def test_the_import_closure_follows_imports_of_imports() -> None:
    files = frozenset(["pkg/__init__.py", "pkg/a.py", "pkg/b.py", "pkg/c.py", "pkg/d.py"])
    sources = {
        "pkg/a.py": b"from .b import B\n",
        "pkg/b.py": b"from pkg.c import C\n",
        "pkg/c.py": b"from . import a\n",  # a cycle back to the fixed file
        "pkg/d.py": b"",
    }
    assert import_closure(files, "pkg/a.py", sources.get) == [
        "pkg/__init__.py",
        "pkg/b.py",
        "pkg/c.py",
    ]


def test_the_import_closure_stops_at_its_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(score, "MAX_IMPORTED_FILES", 2)
    files = frozenset(["a.py", "b.py", "c.py", "d.py"])
    sources = {"a.py": b"import b\nimport c\nimport d\n"}
    assert len(import_closure(files, "a.py", sources.get)) == 2


def test_a_package_comes_with_the_init_files_of_the_packages_above_it(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    files = {
        "pkg/__init__.py": "",
        "pkg/audio/__init__.py": "",
        "pkg/audio/augment.py": "from pkg.audio.signal import convolve\n",
        "pkg/audio/signal.py": "def convolve(a, b):\n    return a * b\n",
        "tools/__init__.py": "",
        "tools/run.py": "",
    }
    _commit_files(repo, files, "first")
    extractor = score.Extractor(repo)
    try:
        package = extractor.package_of("HEAD", "pkg/audio/augment.py")
        loose = extractor.package_of("HEAD", "tools/run.py")
    finally:
        extractor.close()
    assert sorted(package) == [
        "pkg/__init__.py",
        "pkg/audio/__init__.py",
        "pkg/audio/augment.py",
        "pkg/audio/signal.py",
    ]
    assert sorted(loose) == ["tools/__init__.py", "tools/run.py"]
