"""Jupyter notebooks end to end: cells as one program, positions naming cells, byte-stable fixes,
bad notebooks, configuration, cache and baseline."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from devlint.notebook import parse_notebook

from .helpers import FIXTURES, run_cli, without_fix_hint, write

FIXTURE = "gpu_tutorial.ipynb"
EXPECTED_TEXT = [
    "nb/gpu_tutorial.ipynb:cell 3:2:1: DEV001 `model.cuda()` fails on a machine without CUDA",
    "nb/gpu_tutorial.ipynb:cell 6:3:13: DEV005 `batch` is on the CPU (created on the CPU by "
    "`torch.randn(...)` at line 2 of cell 6) but `model` was moved with `.cuda()` to `cuda` "
    "at line 2 of cell 3",
    'nb/gpu_tutorial.ipynb:cell 7:1:14: DEV008 `torch.load("weights.pt")` has no `map_location`',
]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.devlint]\n", encoding="utf-8")
    (tmp_path / "nb").mkdir()
    shutil.copy(FIXTURES / FIXTURE, tmp_path / "nb" / FIXTURE)
    return tmp_path


def _notebook(*cells: object, nbformat: int = 4) -> str:
    built = []
    for cell in cells:
        kind, source = cell if isinstance(cell, tuple) else ("code", cell)
        entry: dict[str, object] = {"cell_type": kind, "metadata": {}, "source": source}
        if kind == "code":
            entry |= {"execution_count": None, "outputs": []}
        built.append(entry)
    document = {"cells": built, "metadata": {}, "nbformat": nbformat, "nbformat_minor": 5}
    return json.dumps(document, indent=1) + "\n"


def test_findings_in_three_cells_name_cell_row_and_column(work: Path) -> None:
    result = run_cli("nb", "--no-cache", cwd=work)
    lines = without_fix_hint(result.stdout)
    assert len(lines) == 4, result.stdout
    for line, expected in zip(lines, EXPECTED_TEXT):
        assert line.startswith(expected), line
    assert lines[-1] == "Found 3 problems in 1 file (1 file checked)."
    assert result.returncode == 1


def test_json_fills_the_cell_field(work: Path) -> None:
    result = run_cli("nb/gpu_tutorial.ipynb", "--format", "json", "--no-cache", cwd=work)
    found = json.loads(result.stdout)
    assert [
        (f["cell"], f["location"]["row"], f["location"]["column"], f["code"]) for f in found
    ] == [(3, 2, 1, "DEV001"), (6, 3, 13, "DEV005"), (7, 1, 14, "DEV008")]
    assert [(f["end_location"]["row"], f["noqa_row"]) for f in found] == [(2, 2), (3, 3), (1, 1)]
    load = found[2]["fix"]["edits"][0]
    assert (load["location"], load["content"]) == ({"row": 1, "column": 37}, ', map_location="cpu"')


def _outside_sources(data: bytes) -> str:
    """The notebook's text with every code cell's `source` value cut out."""
    notebook = parse_notebook(data)
    text, kept, position = notebook.text, [], 0
    for cell in notebook.cells:
        start, end = notebook.source_span(cell)
        kept.append(text[position:start])
        position = end
    return "".join(kept) + text[position:]


def test_fix_changes_only_the_edited_cell_sources_and_is_idempotent(work: Path) -> None:
    path = work / "nb" / FIXTURE
    before = path.read_bytes()
    result = run_cli("nb", "--fix", "--unsafe-fixes", "--no-cache", cwd=work)
    after = path.read_bytes()
    assert "Fixed 2 problems, 1 remaining." in result.stdout, result.stdout
    assert _outside_sources(after) == _outside_sources(before)  # every byte outside the sources
    old, new = json.loads(before), json.loads(after)
    changed = [n for n, (a, b) in enumerate(zip(old["cells"], new["cells"]), 1) if a != b]
    assert changed == [2, 3, 7]
    assert new["cells"][1]["source"][-1] == (
        'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")'
    )  # after the imports, in the imports' cell; the last line keeps its missing newline
    assert new["cells"][1]["source"][-3:-1] == ["import torch.nn as nn\n", "\n"]
    assert new["cells"][2]["source"] == ["model = nn.Linear(4, 2)\n", "model.to(device)"]
    assert new["cells"][6]["source"][0] == (
        'checkpoint = torch.load("weights.pt", map_location="cpu")\n'
    )
    # Cells that did not change keep their exact JSON, outputs and the non-ASCII text included.
    assert "naïve" in after.decode("utf-8") and after.endswith(b"}\n")
    again = run_cli("nb", "--fix", "--unsafe-fixes", "--no-cache", cwd=work)
    assert path.read_bytes() == after
    assert "Fixed" not in again.stdout and again.returncode == 1  # DEV005 remains


def test_diff_shows_each_changed_cell_and_writes_nothing(work: Path) -> None:
    path = work / "nb" / FIXTURE
    before = path.read_bytes()
    result = run_cli("nb", "--diff", "--unsafe-fixes", "--no-cache", cwd=work)
    assert path.read_bytes() == before
    assert "--- a/nb/gpu_tutorial.ipynb:cell 7\n+++ b/nb/gpu_tutorial.ipynb:cell 7\n" in (
        result.stdout
    )
    assert '+checkpoint = torch.load("weights.pt", map_location="cpu")' in result.stdout
    assert result.returncode == 1


def test_magics_shell_escapes_and_help_are_not_syntax_errors(tmp_path: Path) -> None:
    cells = [
        ["%load_ext autoreload\n", "!pip install torch\n", "import torch\n"],
        ["files = !ls\n", "pip install numpy\n", "torch.nn.Linear?\n", "x = torch.ones(2)\n"],
        # a command whose arguments start like an operator, where the line is no Python
        ["ls /content/checkpoints/\n", "rm -rf ~/runs\n", "cd ..\n"],
        ["for i in range(2):\n", "    !echo {i}\n", "    %time y = x + i\n"],
        ["%%bash\n", "for f in *; do echo $f; done\n"],
        ["%%timeit\n", "z = x.cuda()\n"],
        # Python, not IPython: a modulo continuing a line, a `%` and a `!` inside a string.
        [
            's = ("%d items"\n',
            "     % 2)\n",
            'doc = """\n',
            "%not a magic\n",
            "!nor this\n",
            '"""\n',
            # an automagic's name, a Python name here, before a bracket the next line closes
            "time = 3.0\n",
            "time -= (time\n",
            "         - 1.0)\n",
        ],
    ]
    write(tmp_path, {"magic.ipynb": _notebook(*cells)})
    result = run_cli("magic.ipynb", "--no-cache", cwd=tmp_path)
    first = result.stdout.splitlines()[0]
    assert first.startswith("magic.ipynb:cell 6:2:5: DEV001 "), result.stdout
    assert "DEV000" not in result.stdout and result.returncode == 1
    assert "(1 file checked)" in result.stdout


def test_a_notebook_without_a_version_key_is_read_as_nbformat_4(tmp_path: Path) -> None:
    document = json.loads(_notebook("import torch\nw = torch.load('weights.pt')\n"))
    del document["nbformat"], document["nbformat_minor"]
    write(tmp_path, {"v.ipynb": json.dumps(document)})
    result = run_cli("v.ipynb", "--no-cache", cwd=tmp_path)
    assert result.stdout.startswith("v.ipynb:cell 1:2:5: DEV008 "), result.stdout


def test_a_string_source_is_read_and_written_back_as_a_string(tmp_path: Path) -> None:
    # nbformat allows a string source, and Ruff reads it: so does devlint.
    text = _notebook("import torch\nw = torch.load('weights.pt')\n", ("markdown", "text"))
    write(tmp_path, {"s.ipynb": text})
    result = run_cli("s.ipynb", "--no-cache", cwd=tmp_path)
    assert result.stdout.startswith("s.ipynb:cell 1:2:5: DEV008 "), result.stdout
    run_cli("s.ipynb", "--fix", "--unsafe-fixes", "--no-cache", cwd=tmp_path)
    fixed = json.loads((tmp_path / "s.ipynb").read_text(encoding="utf-8"))
    assert fixed["cells"][0]["source"] == (
        "import torch\nw = torch.load('weights.pt', map_location=\"cpu\")\n"
    )


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'{"cells": [{"cell_type": "code", "sou', "1:34: DEV000 not a notebook: invalid JSON"),
        (_notebook(nbformat=3).encode(), "1:1: DEV000 nbformat 3 is not supported"),
        (_notebook(7).encode(), "1:1: DEV000 cell 1: `source` must be a string or a list"),
        (_notebook(["x = 1\n", 2]).encode(), "1:1: DEV000 cell 1: `source` must be a string"),
        (
            _notebook("s = '\u00e9'").encode().replace(b"\\u00e9", b"\xe9"),
            "DEV000 not valid UTF-8: byte 0xe9 cannot be decoded",
        ),
        (b"[1, 2]", "1:1: DEV000 not a notebook: no list of `cells`"),
    ],
    ids=["truncated", "nbformat-3", "number-source", "list-of-non-strings", "latin-1", "array"],
)
def test_a_bad_notebook_is_one_dev000_and_never_written(
    tmp_path: Path, data: bytes, message: str
) -> None:
    write(tmp_path, {"pyproject.toml": "[tool.devlint]\n"})
    (tmp_path / "bad.ipynb").write_bytes(data)
    for flags in ((), ("--fix", "--unsafe-fixes")):
        result = run_cli("bad.ipynb", "--no-cache", *flags, cwd=tmp_path)
        lines = result.stdout.splitlines()
        assert len(lines) == 2 and message in lines[0], result.stdout
        assert lines[0].startswith("bad.ipynb:") and "cell " not in lines[0].split(":")[1]
        assert (result.returncode, result.stderr) == (1, "")
        assert (tmp_path / "bad.ipynb").read_bytes() == data


def test_noqa_works_per_line_in_a_cell(work: Path) -> None:
    result = run_cli("nb", "--select", "DEV008", "--no-cache", cwd=work)
    # Cell 7's second line loads without map_location too, under a noqa comment for DEV008.
    assert [line.split(" DEV")[0] for line in without_fix_hint(result.stdout)[:-1]] == [
        "nb/gpu_tutorial.ipynb:cell 7:1:14:"
    ]


def test_include_and_exclude_treat_notebooks_like_files(work: Path) -> None:
    write(work, {"nb/plain.py": "import torch\ntorch.load('weights.pt')\n"})
    assert "gpu_tutorial.ipynb:cell 3" in run_cli("nb", "--no-cache", cwd=work).stdout
    write(work, {"pyproject.toml": '[tool.devlint]\nextend-exclude = ["*.ipynb"]\n'})
    result = run_cli("nb", "--no-cache", cwd=work)
    assert "ipynb" not in result.stdout and "(1 file checked)" in result.stdout
    write(work, {"pyproject.toml": '[tool.devlint]\ninclude = ["*.py"]\n'})
    result = run_cli("nb", "--no-cache", cwd=work)
    assert "ipynb" not in result.stdout and "(1 file checked)" in result.stdout
    named = run_cli("nb/gpu_tutorial.ipynb", "--no-cache", cwd=work)  # named files always are
    assert "(1 file checked)" in named.stdout and named.returncode == 1
    write(work, {"pyproject.toml": '[tool.devlint]\ninclude = ["nb/*.ipynb"]\n'})
    result = run_cli(".", "--no-cache", cwd=work)
    assert "(1 file checked)" in result.stdout and "gpu_tutorial.ipynb:cell 3" in result.stdout
    write(
        work,
        {"pyproject.toml": '[tool.devlint]\ninclude = ["*.py"]\nextend-include = ["*.ipynb"]\n'},
    )
    result = run_cli("nb", "--no-cache", cwd=work)
    assert "(2 files checked)" in result.stdout and "gpu_tutorial.ipynb:cell 3" in result.stdout
    # pre-commit names the notebook; --force-exclude applies a path pattern to it.
    write(work, {"pyproject.toml": '[tool.devlint]\nextend-exclude = ["nb/gpu_*.ipynb"]\n'})
    forced = run_cli("nb/gpu_tutorial.ipynb", "--force-exclude", "--no-cache", cwd=work)
    assert (forced.stdout, forced.returncode) == ("All checks passed! (0 files checked)\n", 0)
    write(work, {"pyproject.toml": '[tool.devlint.per-file-ignores]\n"*.ipynb" = ["DEV001"]\n'})
    result = run_cli("nb/gpu_tutorial.ipynb", "--no-cache", cwd=work)
    assert "DEV001" not in result.stdout and "Found 2 problems" in result.stdout


def test_the_cache_keeps_cells(work: Path) -> None:
    first = run_cli("nb", cwd=work)
    assert list((work / ".devlint_cache").rglob("results-*.json"))
    second = run_cli("nb", cwd=work)
    assert second.stdout == first.stdout and "cell 6:3:13" in second.stdout


def test_a_baseline_records_notebook_findings(work: Path) -> None:
    assert run_cli("nb", "--write-baseline", "base.json", cwd=work).returncode == 0
    assert run_cli("nb", "--baseline", "base.json", cwd=work).returncode == 0
    path = work / "nb" / FIXTURE
    document = json.loads(path.read_text(encoding="utf-8"))
    document["cells"][4]["source"] = ["extra = torch.ones(1).cuda()\n"]  # cell 5, was `?` help
    path.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    result = run_cli("nb", "--baseline", "base.json", cwd=work)
    assert [line.split(" DEV")[0] for line in without_fix_hint(result.stdout)[:-1]] == [
        "nb/gpu_tutorial.ipynb:cell 5:1:9:"
    ]


def _json_row(work: Path, fragment: str) -> int:
    lines = (work / "nb" / FIXTURE).read_text(encoding="utf-8").splitlines()
    return next(row for row, line in enumerate(lines, 1) if fragment in line)


def test_github_and_sarif_point_at_the_line_of_the_notebook_file(work: Path) -> None:
    github = run_cli("nb", "--format", "github", "--no-cache", cwd=work).stdout.splitlines()
    row = _json_row(work, '"batch = torch.randn(8, 4)')
    assert github[1].startswith(
        f"::error file=nb/gpu_tutorial.ipynb,line={row + 1},title=DEV005 (cell 6%3A3%3A13)"
        "::DEV005 cell 6:3:13: `batch` is on the CPU"
    )
    sarif = json.loads(run_cli("nb", "--format", "sarif", "--no-cache", cwd=work).stdout)
    results = sarif["runs"][0]["results"]
    location = results[0]["locations"][0]["physicalLocation"]
    assert location["region"] == {"startLine": _json_row(work, '"model.cuda()"')}
    assert location["artifactLocation"]["uri"] == "nb/gpu_tutorial.ipynb"
    assert results[0]["message"]["text"].startswith("cell 3:2:1: `model.cuda()`")
    assert results[2]["properties"] == {"cell": 7, "row": 1, "column": 14}
    assert all("fixes" not in result for result in results)  # cell edits do not apply to JSON


def test_confirm_runs_the_code_cells_in_order_and_points_at_cells(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    cells = [
        ["%matplotlib inline\n", "import torch\n", "from torch import nn\n"],
        ["model = nn.Linear(3, 2)\n"],
        ["!nvidia-smi\n", "model.cuda()\n"],
        ["state = torch.load('weights.pt')\n"],
    ]
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'demo'\n", "explore.ipynb":
                     _notebook(*cells)})  # fmt: skip
    result = run_cli("confirm", "-q", "explore.ipynb", cwd=tmp_path, timeout=600)
    lines = result.stdout.splitlines()
    assert lines[0].startswith("explore.ipynb:cell 3:2:1: DEV001 `model.cuda()`"), result.stdout
    assert lines[1].startswith("  -> confirmed under cpu-host (explore.ipynb)"), result.stdout
    assert lines[2].startswith("explore.ipynb:cell 4:1:9: DEV008 "), result.stdout
    # Re-run past the confirmed `.cuda()`, the run reaches cell 4 and fails there.
    assert "line 1 of cell 4 ran, then the run failed: FileNotFoundError" in lines[3], result.stdout
    runtime = [line for line in lines if " DEV900 " in line]
    assert runtime and runtime[0].startswith("explore.ipynb:cell 4:1:1: DEV900 "), result.stdout
    assert result.returncode == 1


def test_a_cell_that_is_not_python_is_one_dev000_and_the_others_are_linted(
    tmp_path: Path,
) -> None:
    cells = [["import torch\n"], ["print 'hello'\n"], ["w = torch.load('weights.pt')\n"]]
    write(tmp_path, {"old.ipynb": _notebook(*cells)})
    result = run_cli("old.ipynb", "--no-cache", cwd=tmp_path)
    assert [line.split(": ")[0] for line in without_fix_hint(result.stdout)[:-1]] == [
        "old.ipynb:cell 2:1:1",
        "old.ipynb:cell 3:1:5",
    ]
    assert "DEV000 syntax error: Missing parentheses in call to 'print'" in result.stdout
    run_cli("old.ipynb", "--fix", "--unsafe-fixes", "--no-cache", cwd=tmp_path)
    fixed = json.loads((tmp_path / "old.ipynb").read_text(encoding="utf-8"))["cells"]
    assert fixed[1]["source"] == ["print 'hello'\n"]
    assert fixed[2]["source"] == ["w = torch.load('weights.pt', map_location=\"cpu\")\n"]


def test_a_notebook_of_another_language_has_nothing_to_lint(tmp_path: Path) -> None:
    text = json.loads(_notebook(["library(torch)\n", "x <- torch_randn(2)$cuda()\n"]))
    text["metadata"] = {"kernelspec": {"language": "R", "name": "ir"}}
    write(tmp_path, {"r.ipynb": json.dumps(text)})
    result = run_cli("r.ipynb", "--no-cache", cwd=tmp_path)
    assert (result.stdout, result.returncode) == ("All checks passed! (1 file checked)\n", 0)


def test_the_progress_bar_counts_notebooks(work: Path) -> None:
    from devlint.api import lint_paths
    from devlint.config import ConfigResolver, RuleSelection

    write(work, {"nb/plain.py": "x = 1\n"})
    calls: list[tuple[int, int]] = []
    summary = lint_paths(
        [work / "nb"], ConfigResolver(RuleSelection()), False, lambda *call: calls.append(call)
    )
    assert calls == [(1, 2), (2, 2)] and summary.files_checked == 2


def test_standard_input_named_as_a_notebook(work: Path) -> None:
    data = (work / "nb" / FIXTURE).read_bytes()
    result = run_cli("-", "--stdin-filename", "x.ipynb", stdin=data, cwd=work)
    assert result.stdout.startswith("x.ipynb:cell 3:2:1: DEV001 "), result.stdout
    fixed = run_cli("-", "--stdin-filename", "x.ipynb", "--fix", stdin=data, cwd=work)
    assert json.loads(fixed.stdout)["cells"][1] == json.loads(data)["cells"][1]  # unsafe: kept
    unsafe = run_cli("-", "--stdin-filename", "x.ipynb", "--fix", "--unsafe-fixes", stdin=data,
                     cwd=work)  # fmt: skip
    assert _outside_sources(unsafe.stdout.encode()) == _outside_sources(data)
    assert "model.to(device)" in unsafe.stdout


def test_an_indented_cell_is_dedented_as_ipython_does(tmp_path: Path) -> None:
    # IPython cuts the first line's indentation from every line that starts with it, so a cell
    # pasted with a leading space runs; CPython alone would call it an unexpected indent.
    cells = [
        ["\n", " # Setup\n", " import torch\n", " w = torch.load('weights.pt')\n", "x = 1\n"],
        ["\tcount = 85,800,963\n", "\tcount\n"],
    ]
    write(tmp_path, {"indented.ipynb": _notebook(*cells)})
    result = run_cli("indented.ipynb", "--no-cache", "--format", "json", cwd=tmp_path)
    found = json.loads(result.stdout)
    assert [(f["code"], f["cell"], f["location"], f["end_location"]) for f in found] == [
        ("DEV008", 1, {"row": 4, "column": 6}, {"row": 4, "column": 30})
    ]
    edit = found[0]["fix"]["edits"][0]
    assert (edit["location"], edit["content"]) == ({"row": 4, "column": 29}, ', map_location="cpu"')
    run_cli("indented.ipynb", "--fix", "--unsafe-fixes", "--no-cache", cwd=tmp_path)
    fixed = json.loads((tmp_path / "indented.ipynb").read_text(encoding="utf-8"))["cells"]
    assert fixed[0]["source"][3] == " w = torch.load('weights.pt', map_location=\"cpu\")\n"


def test_a_syntax_error_in_an_indented_cell_is_at_the_cells_own_column(tmp_path: Path) -> None:
    write(tmp_path, {"blank.ipynb": _notebook(["  import torch\n", "  model = \n"])})
    result = run_cli("blank.ipynb", "--no-cache", cwd=tmp_path)
    assert result.stdout.startswith("blank.ipynb:cell 1:2:11: DEV000 syntax error"), result.stdout


def test_a_new_line_a_fix_adds_to_an_indented_cell_keeps_its_indentation(tmp_path: Path) -> None:
    write(tmp_path, {"gpu.ipynb": _notebook(["  import torch\n", "  m = torch.nn.Linear(2, 2)\n",
                                             "  m.cuda()\n"])})  # fmt: skip
    run_cli("gpu.ipynb", "--fix", "--unsafe-fixes", "--no-cache", cwd=tmp_path)
    fixed = json.loads((tmp_path / "gpu.ipynb").read_text(encoding="utf-8"))["cells"][0]
    assert fixed["source"] == [
        "  import torch\n",
        "\n",  # a blank line after the imports, with no trailing whitespace
        '  device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n',
        "  m = torch.nn.Linear(2, 2)\n",
        "  m.to(device)\n",
    ]


def test_a_cells_last_expression_is_shown_not_thrown_away(tmp_path: Path) -> None:
    cells = [
        ["import torch\n", "y = torch.ones(2)\n", "y.cpu()  # Jupyter shows the copy\n"],
        ["y.cpu();\n"],  # a semicolon hides it: thrown away
        ["y.cpu()\n", "z = 1\n"],  # not the last statement: thrown away
        ["y.to(\n", "    torch.float16\n", ")\n"],  # shown, over three rows
    ]
    write(tmp_path, {"shown.ipynb": _notebook(*cells)})
    result = run_cli("shown.ipynb", "--select", "DEV004", "--no-cache", cwd=tmp_path)
    assert [line.split(" DEV")[0] for line in without_fix_hint(result.stdout)[:-1]] == [
        "shown.ipynb:cell 2:1:1:",
        "shown.ipynb:cell 3:1:1:",
    ]


def test_pasted_prompts_are_cut_as_ipython_cuts_them(tmp_path: Path) -> None:
    cells = [
        [
            ">>> import torch\n",
            ">>> for i in range(2):\n",
            "...     w = torch.load('weights.pt')\n",
        ],
        ["In [3]: m = torch.nn.Linear(2, 2)\n", "   ...: m.cuda()\n"],
        ["x = 1\n", "y = 2\n", ">>> 3\n"],  # no prompt on row 1 or 2: Python, and not valid
    ]
    write(tmp_path, {"pasted.ipynb": _notebook(*cells)})
    result = run_cli("pasted.ipynb", "--no-cache", cwd=tmp_path)
    assert [line.split(" `")[0] for line in without_fix_hint(result.stdout)[:-1]] == [
        "pasted.ipynb:cell 1:3:13: DEV008",
        "pasted.ipynb:cell 2:2:9: DEV001",
        "pasted.ipynb:cell 3:3:1: DEV000 syntax error: invalid syntax",
    ], result.stdout
    run_cli("pasted.ipynb", "--fix", "--unsafe-fixes", "--no-cache", cwd=tmp_path)
    fixed = json.loads((tmp_path / "pasted.ipynb").read_text(encoding="utf-8"))["cells"]
    assert fixed[0]["source"] == [
        ">>> import torch\n",
        "\n",
        '>>> device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n',
        ">>> for i in range(2):\n",
        "...     w = torch.load('weights.pt', map_location=\"cpu\")\n",
    ]
    assert fixed[1]["source"] == ["In [3]: m = torch.nn.Linear(2, 2)\n", "   ...: m.to(device)\n"]
