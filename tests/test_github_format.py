"""`--format github`: one workflow command per finding, which GitHub turns into an annotation."""

from __future__ import annotations

import re
from pathlib import Path

from tests.helpers import run_cli, write

# GitHub's syntax: `::error file={name},line={line},col={col},...,title={title}::{message}`.
ANNOTATION = re.compile(
    r"^::error file=(?P<file>[^,]+),line=(?P<line>\d+),col=(?P<col>\d+)"
    r",endLine=\d+,endColumn=\d+,title=(?P<title>DEV\d{3})::(?P<message>.+)$"
)


def test_each_finding_is_an_error_annotation(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "src/train.py": "import torch\n\nmodel = Net().cuda()\n",
            "src/ok.py": "x = 1\n",
        },
    )
    result = run_cli("--format", "github", "src", cwd=tmp_path)
    assert result.returncode == 1
    [line] = result.stdout.splitlines()
    match = ANNOTATION.match(line)
    assert match, line
    assert (match["file"], match["line"], match["col"], match["title"]) == (
        "src/train.py", "3", "9", "DEV001",
    )  # fmt: skip
    assert match["message"].startswith("DEV001 `Net().cuda()` fails on a machine without CUDA")


def test_properties_and_message_are_escaped(tmp_path: Path) -> None:
    # A comma or colon in a property, or a newline or % in the message, would cut the command.
    write(tmp_path, {"a,b:c.py": "def f(:\n"})
    result = run_cli("--format", "github", "a,b:c.py", cwd=tmp_path)
    [line] = result.stdout.splitlines()
    assert line.startswith("::error file=a%2Cb%3Ac.py,line=1,col=7,")
    assert line.split("::", 2)[2].startswith("DEV000 syntax error")


def test_no_finding_no_output(tmp_path: Path) -> None:
    write(tmp_path, {"ok.py": "x = 1\n"})
    result = run_cli("--format", "github", "ok.py", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, "")
