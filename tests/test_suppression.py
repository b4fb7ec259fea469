"""`# noqa` comments: per line, per statement, per file."""

from __future__ import annotations

import pytest

from devlint.engine import RuleSet, lint_source
from devlint.suppression import Suppressions
from tests.helpers import lint_snippet

CODES = {"DEV001", "DEV002", "DEV003", "DEV008"}


def found(source: str) -> list[tuple[str, int, int]]:
    return [(f.code, f.start.row, f.start.column) for f in lint_snippet(source, CODES)]


def test_the_snippets_below_have_findings_without_comments() -> None:
    assert found("x = x.cuda()\n") == [("DEV001", 1, 5)]
    assert found("optimizer.cuda()\n") == [("DEV001", 1, 1), ("DEV003", 1, 1)]


@pytest.mark.parametrize(
    "comment",
    [
        "# noqa",
        "#noqa",
        "# NOQA",
        "# noqa: DEV001",
        "# noqa:DEV001",
        "# noqa: dev001",
        "# noqa:DEV001,DEV003",
        "# noqa: DEV003, DEV001",
        "# noqa: DEV003 DEV001",
        "# noqa: DEV001 -- the benchmark needs a GPU",
        "# type: ignore  # noqa: DEV001",
    ],
)
def test_comments_that_silence_dev001(comment: str) -> None:
    assert found(f"x = x.cuda()  {comment}\n") == []


@pytest.mark.parametrize(
    "comment",
    [
        "# noqa: DEV002",
        "# noqa:DEV003,DEV008",
        "# noqa: DEV0",  # a prefix is not a code
        "# noqa: DEV0011",
        "# no qa",
        "# devlint: noqa",  # the file-level form only counts on a line of its own
    ],
)
def test_comments_that_do_not_silence_dev001(comment: str) -> None:
    assert found(f"x = x.cuda()  {comment}\n") == [("DEV001", 1, 5)]


def test_codes_silence_only_their_own_rule_on_a_shared_line() -> None:
    assert found("optimizer.cuda()  # noqa: DEV003\n") == [("DEV001", 1, 1)]
    assert found("optimizer.cuda()  # noqa: DEV001\n") == [("DEV003", 1, 1)]
    assert found("optimizer.cuda()  # noqa: DEV001, DEV003\n") == []
    assert found("optimizer.cuda()  # noqa\n") == []


def test_a_comment_silences_its_own_line_only() -> None:
    source = """\
        a = a.cuda()  # noqa
        b = b.cuda()
        # noqa
        c = c.cuda()
    """
    assert found(source) == [("DEV001", 2, 5), ("DEV001", 4, 5)]


MULTI_LINE = """\
    import torch
    state = torch.load(  {first}
        "checkpoint.pt",
        weights_only=True,
    )  {last}
"""


@pytest.mark.parametrize(
    ("first", "last", "silenced"),
    [
        ("", "", False),
        ("# noqa", "", True),
        ("", "# noqa", True),
        ("# noqa: DEV008", "", True),
        ("", "# noqa:DEV008", True),
        ("# noqa: DEV001", "# noqa: DEV002", False),
    ],
)
def test_multi_line_statements(first: str, last: str, silenced: bool) -> None:
    findings = found(MULTI_LINE.format(first=first, last=last))
    assert findings == ([] if silenced else [("DEV008", 2, 9)])


def test_finding_in_the_middle_of_a_statement() -> None:
    source = """\
        model = build(
            layers,
            device="cuda",
        )  # noqa: DEV001
        other = build(
            layers,
            device="cuda",
        )
    """
    assert found(source) == [("DEV001", 7, 5)]
    assert [f.noqa_row for f in lint_snippet(source, CODES)] == [8]


def test_the_line_of_the_finding_in_a_statement_counts_too() -> None:
    source = 'model = build(\n    layers,\n    device="cuda",  # noqa\n    seed=0,\n)\n'
    assert found(source) == []
    assert found(source.replace("  # noqa", "")) == [("DEV001", 3, 5)]


def test_each_statement_of_a_line_shares_its_comment() -> None:
    assert found("a = a.cuda(); b = b.cuda()  # noqa: DEV001\n") == []


def test_file_level_suppression_of_every_rule() -> None:
    source = """\
        # devlint: noqa
        import torch
        x = x.cuda()
        torch.cuda.memory_cached()
    """
    assert found(source) == []


def test_file_level_suppression_anywhere_in_the_file() -> None:
    assert found("x = x.cuda()\n\n# devlint: noqa\n") == []
    assert found("x = x.cuda()\n\n#devlint:noqa\n") == []


def test_file_level_suppression_of_some_codes() -> None:
    source = """\
        # devlint: noqa: DEV001
        import torch
        x = x.cuda()
        torch.cuda.memory_cached()
        optimizer.to(device)
    """
    assert found(source) == [("DEV002", 4, 1), ("DEV003", 5, 1)]
    two = source.replace("noqa: DEV001", "noqa: DEV001, DEV003")
    assert found(two) == [("DEV002", 4, 1)]


@pytest.mark.parametrize(
    "line",
    [
        "# devlint: noqa: DEV002",  # another rule
        "# devlint: noqa DEV001",  # no colon: not the directive
        "x = 1  # devlint: noqa",  # not on a line of its own
    ],
)
def test_file_level_lines_that_do_not_silence_dev001(line: str) -> None:
    assert found(f"{line}\nx = x.cuda()\n") == [("DEV001", 2, 5)]


def test_file_level_directive_inside_a_string_is_not_a_comment() -> None:
    # BUG (devlint/suppression.py _FILE_NOQA): the file-level regex runs over the raw text, so a
    # docstring that shows the directive on a line of its own silences the whole file.
    source = '"""Usage notes.\n\n# devlint: noqa\n"""\nx = x.cuda()\n'
    assert found(source) == [("DEV001", 5, 5)]


def test_noqa_silences_a_syntax_error_on_its_line() -> None:
    assert [f.code for f in lint_snippet("print 'x'\n", set())] == ["DEV000"]
    assert lint_snippet("print 'x'  # noqa: DEV000\n", set()) == []
    assert [f.code for f in lint_snippet("print 'x'  # noqa: DEV001\n", set())] == ["DEV000"]


def test_crlf_source() -> None:
    data = b"a = a.cuda()  # noqa\r\nb = b.cuda()\r\nc = f(\r\n    c.cuda(),\r\n)  # noqa\r\n"
    result = lint_source("crlf.py", data, RuleSet({"DEV001"}))
    assert [(f.start.row, f.start.column) for f in result.findings] == [(2, 5)]


def test_suppressions_scan_directly() -> None:
    scanned = Suppressions.scan("a = 1  # noqa: DEV001\nb = 2\nc = 3  # NOQA\n")
    assert scanned.suppresses("DEV001", [1])
    assert not scanned.suppresses("DEV002", [1])
    assert not scanned.suppresses("DEV001", [2])
    assert scanned.suppresses("DEV008", [2, 3])
    assert not scanned.suppresses("DEV001", [0, 4, 99])  # rows outside the file
    assert Suppressions.scan("# devlint: noqa: DEV002\n").suppresses("DEV002", [])
