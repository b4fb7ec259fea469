"""Auto-fix: exact output for every fixable pattern, byte preservation, and the CLI contract."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from devlint.diagnostics import PARSE_ERROR_CODE, Applicability, Edit, Fix, Position
from devlint.engine import RuleSet
from devlint.fixing import apply_fixes, fix_source, write_atomically
from devlint.rules import ALL_RULES
from tests.helpers import run_cli, write

ALL_CODES = {rule.code for rule in ALL_RULES} | {PARSE_ERROR_CODE}
GUARDED = 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")'


def fixed(source: str, unsafe: bool = True) -> str:
    outcome = fix_source("example.py", source.encode(), RuleSet(ALL_CODES), unsafe)
    assert outcome.error is None
    return outcome.fixed


def fixed_bytes(data: bytes, unsafe: bool = True) -> bytes:
    outcome = fix_source("example.py", data, RuleSet(ALL_CODES), unsafe)
    assert outcome.error is None
    encoding = "utf-8-sig" if data.startswith(b"\xef\xbb\xbf") else "utf-8"
    return outcome.fixed.encode(encoding)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param(
            "import torch as t\nmodel = Net().cuda()\n",
            'import torch as t\n\ndevice = t.device("cuda" if t.cuda.is_available() else "cpu")\n'
            "model = Net().to(device)\n",
            id="alias-kept",
        ),
        pytest.param(
            "import torch\nx = model(x.cuda()).cuda()\n",
            f"import torch\n\n{GUARDED}\nx = model(x.to(device)).to(device)\n",
            id="nested-calls",
        ),
        pytest.param(
            "import torch\na, b = a.cuda(), b.cuda()  # both\n",
            f"import torch\n\n{GUARDED}\na, b = a.to(device), b.to(device)  # both\n",
            id="several-on-one-line-with-comment",
        ),
        pytest.param(
            "import torch\nif True:\n\tx = x.cuda()  # tabs\n",
            f"import torch\n\n{GUARDED}\nif True:\n\tx = x.to(device)  # tabs\n",
            id="tabs",
        ),
        pytest.param(
            "import torch\nx = x.cuda(  # keep me\n)\n",
            f"import torch\n\n{GUARDED}\nx = x.to(device)\n",
            id="comment-inside-the-call-goes-with-it",
        ),
        pytest.param(
            '"""Doc."""\nimport os\nimport torch\n\nx = torch.zeros(2, device="cuda")\n',
            f'"""Doc."""\nimport os\nimport torch\n\n{GUARDED}\n\nx = torch.zeros(2, device=device)\n',
            id="after-the-imports",
        ),
        pytest.param(
            f"import torch\n{GUARDED}\ndef f(x):\n    return x.cuda()\n",
            f"import torch\n{GUARDED}\ndef f(x):\n    return x.to(device)\n",
            id="module-device-reused",
        ),
        pytest.param(
            "import torch\ndevice = 'gpu0'\ndef f(x):\n    return x.cuda()\n",
            f"import torch\n\n{GUARDED.replace('device =', 'torch_device =')}\n"
            "device = 'gpu0'\ndef f(x):\n    return x.to(torch_device)\n",
            id="a-string-that-is-no-device-is-not-reused",
        ),
        pytest.param(
            "import torch\ndevice = torch.device('cuda')\nx = x.cuda()\n",
            "import torch\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
            "x = x.to(device)\n",
            id="module-cuda-device-guarded-where-defined",
        ),
        pytest.param(
            "import torch\nfor device in devices:\n    x = x.cuda()\n",
            "import torch\n\n"
            'torch_device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "for device in devices:\n    x = x.to(torch_device)\n",
            id="no-clash-with-an-existing-name",
        ),
        pytest.param(
            "import torch\nclass T:\n    def __init__(self, device):\n        self.device = device\n"
            "    def step(self, x):\n        return x.cuda()\n",
            "import torch\nclass T:\n    def __init__(self, device):\n        self.device = device\n"
            "    def step(self, x):\n        return x.to(self.device)\n",
            id="self-device-reused",
        ),
        pytest.param(
            "x = x.cuda()\n",
            f"import torch\n\n{GUARDED}\nx = x.to(device)\n",
            id="import-torch-added",
        ),
        pytest.param(
            "import torch\nprint(torch.cuda.memory_cached(), torch.cuda.max_memory_cached())\n",
            "import torch\nprint(torch.cuda.memory_reserved(), torch.cuda.max_memory_reserved())\n",
            id="renames-on-one-line",
        ),
        pytest.param(
            "from torch.cuda import memory_cached\nprint(memory_cached())\n",
            "from torch.cuda import memory_reserved\nprint(memory_reserved())\n",
            id="plain-import-renamed-with-its-uses",
        ),
        pytest.param(
            "import torch\nmodel.cuda()  # noqa: DEV001\n",
            "import torch\nmodel.cuda()  # noqa: DEV001\n",
            id="suppressed-never-fixed",
        ),
    ],
)
def test_fix_output(source: str, expected: str) -> None:
    assert fixed(source) == expected
    assert fixed(expected) == expected


def test_safe_fixes_only_leave_the_definition_to_unsafe_fixes() -> None:
    source = "import torch\nmodel = Net().cuda()\nd = torch.device('cuda')\n"
    safe = fixed(source, unsafe=False)
    assert safe == (
        "import torch\nmodel = Net().cuda()\n"
        "d = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
    )


def test_crlf_file_keeps_its_line_endings() -> None:
    data = b"import torch\r\nx = x.cuda()\r\ny = 1\r\n"
    assert fixed_bytes(data) == (
        b"import torch\r\n\r\n" + GUARDED.encode() + b"\r\nx = x.to(device)\r\ny = 1\r\n"
    )


def test_bom_is_kept() -> None:
    data = b"\xef\xbb\xbfimport torch\nx = torch.cuda.memory_cached()\n"
    assert fixed_bytes(data) == b"\xef\xbb\xbfimport torch\nx = torch.cuda.memory_reserved()\n"


def test_last_line_without_newline() -> None:
    assert fixed("import torch\nx = x.cuda()") == f"import torch\n\n{GUARDED}\nx = x.to(device)"
    assert fixed("import torch") == "import torch"


def test_overlapping_fixes_wait_for_the_next_pass() -> None:
    text = "abcdef"
    outer = Fix(Applicability.SAFE, "", (Edit(Position(1, 1), Position(1, 5), "X"),))
    inner = Fix(Applicability.SAFE, "", (Edit(Position(1, 2), Position(1, 3), "Y"),))
    assert apply_fixes(text, [outer, inner]) == ("Xef", 1)


def test_identical_insertions_are_applied_once() -> None:
    insertion = Edit(Position(2, 1), Position(2, 1), "device = 1\n")
    first = Fix(Applicability.UNSAFE, "", (insertion, Edit(Position(2, 1), Position(2, 2), "y")))
    second = Fix(Applicability.UNSAFE, "", (insertion, Edit(Position(2, 3), Position(2, 4), "z")))
    assert apply_fixes("a\nx=x\n", [first, second]) == ("a\ndevice = 1\ny=z\n", 2)


def test_a_file_changed_on_disk_is_not_overwritten(tmp_path: Path) -> None:
    target = tmp_path / "a.py"
    target.write_bytes(b"new contents\n")
    problem = write_atomically(target, b"old contents\n", b"fixed\n")
    assert problem is not None and "changed on disk" in problem
    assert target.read_bytes() == b"new contents\n"
    assert [p.name for p in tmp_path.iterdir()] == ["a.py"]  # no temporary left behind


def test_a_fix_that_does_not_parse_is_not_written(monkeypatch: pytest.MonkeyPatch) -> None:
    import devlint.fixing as fixing

    def broken(text: str, fixes: object) -> tuple[str, int]:
        return text + "\ndef (:\n", 1

    monkeypatch.setattr(fixing, "apply_fixes", broken)
    outcome = fixing.fix_source("a.py", b"import torch\nx = x.cuda()\n", RuleSet(ALL_CODES), True)
    assert outcome.error is not None and "does not parse" in outcome.error
    assert not outcome.changed


# -- the command line -------------------------------------------------------------------------


def test_fix_exit_codes_and_idempotence(tmp_path: Path) -> None:
    write(tmp_path, {"a.py": "import torch\nprint(torch.cuda.memory_cached())\nm = Net().cuda()\n"})
    target = tmp_path / "a.py"
    os.chmod(target, 0o751)
    first = run_cli("--fix", "a.py", cwd=tmp_path)
    assert first.returncode == 1  # DEV001 remains: inserting a definition is unsafe
    assert "Fixed 1 problem, 1 remaining." in first.stdout
    assert "torch.cuda.memory_reserved()" in target.read_text()
    assert stat.S_IMODE(target.stat().st_mode) == 0o751
    unsafe = run_cli("--fix", "--unsafe-fixes", "a.py", cwd=tmp_path)
    assert unsafe.returncode == 0 and "Fixed 1 problem, 0 remaining." in unsafe.stdout
    once = target.read_bytes()
    again = run_cli("--fix", "--unsafe-fixes", "--exit-non-zero-on-fix", "a.py", cwd=tmp_path)
    assert again.returncode == 0 and target.read_bytes() == once


def test_exit_non_zero_on_fix(tmp_path: Path) -> None:
    write(tmp_path, {"a.py": "import torch\nprint(torch.cuda.memory_cached())\n"})
    result = run_cli("--fix", "--exit-non-zero-on-fix", "a.py", cwd=tmp_path)
    assert result.returncode == 1
    assert "memory_reserved" in (tmp_path / "a.py").read_text()


def test_diff_writes_nothing(tmp_path: Path) -> None:
    source = "import torch\nprint(torch.cuda.memory_cached())\n"
    write(tmp_path, {"a.py": source})
    result = run_cli("--diff", "a.py", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.splitlines()[:2] == ["--- a/a.py", "+++ b/a.py"]
    assert "+print(torch.cuda.memory_reserved())" in result.stdout
    assert "Would fix 1 problem." in result.stderr
    assert (tmp_path / "a.py").read_text() == source
    clean = run_cli("--diff", "a.py", cwd=tmp_path, stdin=None)
    assert clean.returncode == 1  # still the same diff: nothing was written
    write(tmp_path, {"b.py": "x = 1\n"})
    assert run_cli("--diff", "b.py", cwd=tmp_path).returncode == 0


def test_fix_from_standard_input(tmp_path: Path) -> None:
    source = "import torch\nprint(torch.cuda.memory_cached())\n"
    result = run_cli("--fix", "-", "--stdin-filename", "a.py", cwd=tmp_path, stdin=source)
    assert result.stdout == "import torch\nprint(torch.cuda.memory_reserved())\n"
    assert result.returncode == 0


def test_json_carries_the_fix_like_ruff(tmp_path: Path) -> None:
    write(tmp_path, {"a.py": "import torch\nx = torch.load('net.pt')\n"})
    [finding] = json.loads(run_cli("--format", "json", "a.py", cwd=tmp_path).stdout)
    assert finding["fix"] == {
        "applicability": "unsafe",
        "message": 'Add `map_location="cpu"`: tensors then load on the CPU',
        "edits": [
            {
                "content": ', map_location="cpu"',
                "location": {"row": 2, "column": 24},
                "end_location": {"row": 2, "column": 24},
            }
        ],
    }


def test_fix_honours_the_baseline(tmp_path: Path) -> None:
    write(tmp_path, {"a.py": "import torch\noptimizer.to(device)\n"})
    assert run_cli("--write-baseline", "base.json", "a.py", cwd=tmp_path).returncode == 0
    write(
        tmp_path,
        {"a.py": "import torch\noptimizer.to(device)\nprint(torch.cuda.memory_cached())\n"},
    )
    result = run_cli("--fix", "--baseline", "base.json", "a.py", cwd=tmp_path)
    assert result.returncode == 0, result.stdout  # the recorded DEV003 stays silent
    assert "memory_reserved" in (tmp_path / "a.py").read_text()
