"""The language server's incremental parse gives exactly the tree a fresh parse gives."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from devlint.diagnostics import PARSE_ERROR_CODE
from devlint.engine import RuleSet, lint_source
from devlint.rules import ALL_RULES
from devlint.server.incremental import IncrementalParser
from devlint.server.session import LintSession, ServerSettings
from devlint.trusted_parse import parse_fresh
from tests.helpers import FIXTURES

_TYPED = [
    "x = torch.zeros(2).cuda()\n", "    y = x.to(device)\n", "else:\n", "# a comment\n",
    "    # an indented comment\n", "\n", "@torch.no_grad()\n", "def f(:\n", "import os\n",
    "if torch.cuda.is_available():\n", "    pass\n", "class A(nn.Module):\n",
]  # fmt: skip
_CHARACTERS = ["a", " ", "(", ")", ".cuda()", "", ":", "\t"]


def _edit(text: str, rng: random.Random) -> str:
    """One keystroke-sized edit: a line typed, a line deleted, or characters changed."""
    lines = text.splitlines(keepends=True)
    row = rng.randrange(len(lines) + 1)
    choice = rng.random()
    if choice < 0.4 or not lines:
        lines.insert(row, rng.choice(_TYPED))
    elif choice < 0.6:
        del lines[min(row, len(lines) - 1)]
    else:
        row = min(row, len(lines) - 1)
        line = lines[row]
        column = rng.randrange(len(line)) if line else 0
        lines[row] = line[:column] + rng.choice(_CHARACTERS) + line[column + 1 :]
    return "".join(lines)


def _parses(text: str) -> bool:
    try:
        parse_fresh(text)
    except Exception:
        return False
    return True


@pytest.mark.parametrize("seed", range(3))
def test_incremental_parses_equal_fresh_parses(seed: int) -> None:
    rng = random.Random(seed)
    texts = [path.read_text(encoding="utf-8") for path in sorted(FIXTURES.glob("*.py"))]
    sources = [text for text in texts if _parses(text)]
    checked = 0
    parser = IncrementalParser()
    for number, source in enumerate(sources):
        name = f"file{number}.py"
        text = source
        parser.parse(name, text)
        for _ in range(80):
            new = _edit(text, rng)
            if not _parses(new):
                with pytest.raises(Exception):  # noqa: B017 (whatever LibCST raises, it raises)
                    parser.parse(name, new)
                continue
            assert parser.parse(name, new).deep_equals(parse_fresh(new)), new
            checked += 1
            if rng.random() < 0.7:
                text = new  # most edits stay, as typing goes on
    assert checked > 100
    assert parser.reused > checked // 2  # most parses reused the statements around the edit


def test_an_edited_file_lints_as_the_cli_lints_it(tmp_path: Path) -> None:
    session = LintSession(ServerSettings(), tmp_path)
    path = tmp_path / "train.py"
    source = (FIXTURES / "training_guide.py").read_text(encoding="utf-8")
    rules = RuleSet({rule.code for rule in ALL_RULES if rule.default_enabled} | {PARSE_ERROR_CODE})
    rng = random.Random(7)
    text = source
    session.lint(path, text)
    compared = 0
    for _ in range(25):
        text = _edit(text, rng)
        got = session.lint(path, text).findings
        fresh = lint_source(str(path), text.encode(), rules).findings
        assert [(f.code, f.start, f.end, f.message, f.fix) for f in got] == [
            (f.code, f.start, f.end, f.message, f.fix) for f in fresh
        ]
        compared += len(fresh)
    assert compared > 25 and session.parser.reused > 0
