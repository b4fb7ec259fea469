"""The flake8 plugin, run by the real flake8 in a subprocess: devlint's codes and positions."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from devlint.flake8_plugin import DevlintChecker, _source_bytes
from tests.helpers import FIXTURES, findings_of, run_cli, write

pytest.importorskip("flake8")


def _flake8(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # --isolated: no user or project configuration; DEV selected explicitly.
    return subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select", "DEV", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_plugin_is_registered() -> None:
    [entry] = entry_points(group="flake8.extension").select(name="DEV")
    assert entry.load() is DevlintChecker


def test_same_findings_as_devlint_on_the_fixtures() -> None:
    flake8 = _flake8(".", cwd=FIXTURES)
    assert flake8.returncode == 1, flake8.stderr
    reported = {(Path(p).name, row, col, code) for p, row, col, code in findings_of(flake8.stdout)}
    devlint = run_cli("-q", ".", cwd=FIXTURES)
    expected = {(Path(p).name, row, col, code) for p, row, col, code in findings_of(devlint.stdout)}
    # flake8 reports its own E999 for a file Python cannot parse, and skips plugins there.
    # flake8 reads no notebooks.
    expected = {f for f in expected if f[3] != "DEV000" and ".ipynb" not in f[0]}
    assert reported == expected
    assert len(reported) > 10
    assert "gpu_chapter.py:7:5: DEV001 `x.cuda(0)` fails on a machine without CUDA" in flake8.stdout


def test_noqa_is_honoured(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "train.py": """\
                model = Net().cuda()  # noqa: DEV001
                other = Net().cuda()  # noqa: E501
                third = Net().cuda()
            """
        },
    )
    result = _flake8("train.py", cwd=tmp_path)
    rows = [row for _, row, _, _ in findings_of(result.stdout)]
    assert rows == [2, 3]
    assert result.stdout.splitlines()[0].startswith("train.py:2:9: DEV001")


def test_flake8_selection_applies(tmp_path: Path) -> None:
    write(tmp_path, {"train.py": "import torch\nmodel = Net().cuda()\nx = torch.load(ckpt)\n"})
    result = _flake8("--extend-ignore", "DEV001", "train.py", cwd=tmp_path)
    assert [code for _, _, _, code in findings_of(result.stdout)] == ["DEV008"]


def test_columns_count_characters_after_non_ascii_text(tmp_path: Path) -> None:
    # A Latin-1 file with a coding cookie: devlint must see the text flake8 decoded.
    source = "# -*- coding: latin-1 -*-\nname = 'café'; model = Net().cuda()\n"
    (tmp_path / "latin.py").write_bytes(source.encode("latin-1"))
    result = _flake8("latin.py", cwd=tmp_path)
    assert findings_of(result.stdout) == [("latin.py", 2, 24, "DEV001")]
    assert findings_of(run_cli("-q", "latin.py", cwd=tmp_path).stdout) == [
        ("latin.py", 2, 24, "DEV001")
    ]


def test_source_bytes_round_trip_the_coding_cookie() -> None:
    lines = ["# coding: latin-1\n", "x = 'é'\n"]
    assert _source_bytes(lines) == "".join(lines).encode("latin-1")
    assert _source_bytes(["x = 'é'\n"]) == "x = 'é'\n".encode()
