"""Messages quote code without comments and advise only with names that exist (#16)."""

from __future__ import annotations

from pathlib import Path

import pytest

from devlint.analysis.syntax import quoted_code
from tests.helpers import lint_snippet, run_cli, write


@pytest.mark.parametrize(
    ("code", "quoted"),
    [
        ('torch.load(\n    "x.pt",  # noqa: DEV008\n)', 'torch.load("x.pt")'),
        ("x.cuda(  # keep me\n)", "x.cuda()"),
        ("foo(a,  # first\n    b)", "foo(a, b)"),
        ("(1,)", "(1,)"),  # a tuple keeps its comma
        ('f"a{b} # not a comment"', 'f"a{b} # not a comment"'),
        ('"# a string"', '"# a string"'),
        ("x[ 1 ]  +  y", "x[1] + y"),
        ("torch.randn(" + "1, " * 40 + "1)", "torch.randn(" + "1, " * 15 + "..."),
    ],
)
def test_quoted_code(code: str, quoted: str) -> None:
    assert quoted_code(code) == quoted


def test_a_message_never_pastes_a_comment(tmp_path: Path) -> None:
    write(tmp_path, {"a.py": 'import torch\nckpt = torch.load(\n    "x.pt",  # weights\n)\n'})
    result = run_cli("a.py", "--no-cache", cwd=tmp_path)
    assert '`torch.load("x.pt")` has no `map_location`' in result.stdout, result.stdout
    assert "#" not in result.stdout


LOSS = """\
import torch
from torch import nn
from torch.utils.data import DataLoader

model = nn.Linear(3, 2).cuda()
criterion = nn.CrossEntropyLoss()
for x, labels in DataLoader(ds):
    out = model(x.cuda())
    loss = criterion(out, labels)
    again = criterion(model(x.cuda()), labels)


def train(device):
    net = nn.Linear(3, 2).to(device)
    for x, labels in DataLoader(ds):
        loss = criterion(net(x.to(device)), labels)


def evaluate():
    for x, labels in DataLoader(ds):
        loss = criterion(net(x.to(device)), labels)
"""


def test_move_advice_names_only_variables_in_scope() -> None:
    messages = [finding.message for finding in lint_snippet(LOSS, {"DEV005"})]
    assert [message.rsplit(": ", 1)[-1] for message in messages] == [
        "move it with `.to(out.device)`",  # `.cuda()` put it on CUDA: no `cuda` variable exists
        "move it to the device of `model(x.cuda())`",
        "move it with `.to(device)`",  # the parameter, in this function
    ]
    assert all(".to(cuda)" not in message for message in messages)
