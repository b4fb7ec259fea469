"""Positions of findings' nodes, laid out statement by statement, equal the whole file's layout."""

from __future__ import annotations

import os
from pathlib import Path

import libcst as cst
import pytest

from devlint.positions import every_range, ranges_of
from devlint.traversal import descendants

from .helpers import FIXTURES


def assert_same_ranges(source: str, every: int = 1) -> None:
    module = cst.parse_module(source)
    expected = every_range(module)
    nodes = [node for node in descendants(module) if node is not module][::every]
    for start in range(0, len(nodes), 7):  # a few nodes at a time, as findings ask
        wanted = nodes[start : start + 7]
        found = ranges_of(module, source, wanted)
        for node in wanted:
            assert found[node] == expected[node], (type(node).__name__, start)


@pytest.mark.parametrize(
    "source",
    [
        "import torch\nx = torch.zeros(3).cuda()\n",
        "# header\n\n'''doc'''\nimport a\n\n\n# c1\n\n@dec\n# c2\n@dec2(\n    1)\n\ndef f():\n"
        "    return 1\n# tail\n",
        "x = (1,\n     2); y = 3\nif a:\n    b\nelif c:\n    d\nelse:\n    e\n",
        "class A:\n    @property\n    def p(self):\n        return self.x.cuda()\n",
        "async def f():\n    async with a as b:\n        await b.to(d)\n",
        "x = 1\r\nif y:\r\n    z = 2\r\n",  # CRLF
        "x = 1\n\x0c\ny = 2\n",  # a form feed CPython does not count as a line break
        "try:\n    pass\nexcept E:\n    pass\nfinally:\n    x = 1\n",
        "@\\\ndec\ndef f():\n    pass\nx = 1\n",  # a continued decorator: laid out whole instead
        "s = '''a\nb\nc'''\nt = x.cuda()",  # no newline at the end
        "match x:\n    case 1:\n        y.cuda()\n",
        # Bodies cut down to the statement holding the nodes, at several depths.
        "class A:\n    '''doc'''\n    x = 1; y = 2\n\n    # c\n    @dec\n    def f(self):\n"
        "        for i in r:\n            if a:\n                pass\n            else:\n"
        "                return self.x.cuda(\n                    1)\n    z = 3\n",
        "def f():\n    try:\n        a = (1,\n             2)\n    except E:\n        b\n"
        "    with c as d:\n        while e:\n            d.to(\\\n                'cuda')\n",
    ],
)
def test_ranges_equal_the_whole_layout(source: str) -> None:
    assert_same_ranges(source)


def test_the_module_itself_is_laid_out_whole() -> None:
    module = cst.parse_module("x = 1\n")
    assert ranges_of(module, "x = 1\n", [module])[module] == every_range(module)[module]


PARSEABLE_FIXTURES = [path for path in sorted(FIXTURES.rglob("*.py")) if "broken" not in path.name]


@pytest.mark.parametrize("path", PARSEABLE_FIXTURES, ids=lambda path: path.name)
def test_fixtures(path: Path) -> None:
    assert_same_ranges(path.read_text(encoding="utf-8"))


@pytest.mark.slow
def test_a_sample_of_pytorch_and_the_standard_library() -> None:
    torch = pytest.importorskip("torch")
    roots = [Path(os.path.dirname(torch.__file__)), Path(os.path.dirname(os.__file__))]
    for root in roots:
        files = sorted(root.rglob("*.py"))
        for path in files[:: max(1, len(files) // 40)]:
            source = path.read_text(encoding="utf-8", errors="replace")
            if len(source) < 200_000 and "\x00" not in source:
                try:
                    assert_same_ranges(source, every=97)
                except cst.ParserSyntaxError:
                    continue  # test data with syntax errors on purpose (lib2to3's, say)
