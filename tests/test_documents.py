"""Code in documentation: Markdown fences and reST blocks linted at the page's own rows/columns."""

from __future__ import annotations

from pathlib import Path

import pytest

from devlint.documents import extract

from .helpers import findings_of, run_cli, without_fix_hint, write

MARKDOWN = """\
# Tutorial

```python
import torch
import torch.nn as nn
```

Some text, then a block in a list item:

  ```py
  model = nn.Linear(4, 2)
  model.cuda()
  ```

```python
this is a sketch, not Python
```

```bash
python train.py --cuda
```

```pycon
>>> batch = torch.randn(8, 4)
>>> out = model(batch)
tensor(...)
>>> w = torch.load("weights.pt")  # noqa: DEV008
>>> v = torch.load("vae_weights.pt")
```
"""

RST = """\
Tutorial
========

.. code-block:: python
   :caption: setup

   import torch
   model = torch.nn.Linear(4, 2).cuda()

A literal block::

    state = torch.load("weights.pt")

.. code-block:: bash

   pip install torch.cuda

.. doctest::

   >>> x = torch.ones(2).cuda()
   >>> x
   tensor([1., 1.], device='cuda:0')
"""


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    write(tmp_path, {"pyproject.toml": "[tool.devlint]\n", "docs/page.md": MARKDOWN,
                     "docs/page.rst": RST, "docs/train.py": "x = 1\n"})  # fmt: skip
    return tmp_path


def test_folders_skip_pages_unless_asked(docs: Path) -> None:
    plain = run_cli("docs", "--no-cache", cwd=docs)
    assert plain.stdout == "All checks passed! (1 file checked)\n"
    asked = run_cli("docs", "--include-docs", "--no-cache", cwd=docs)
    assert findings_of(asked.stdout) == [
        ("docs/page.md", 12, 3, "DEV001"),  # a block indented in a list item
        ("docs/page.md", 25, 17, "DEV005"),  # three blocks later: one program per page
        ("docs/page.md", 28, 9, "DEV008"),  # prompt cut; the line above has a noqa comment
        ("docs/page.rst", 8, 12, "DEV001"),
        ("docs/page.rst", 12, 13, "DEV008"),  # a `::` literal block
        ("docs/page.rst", 20, 12, "DEV001"),  # a Sphinx doctest
    ]
    assert "`torch.randn(...)` at line 24" in asked.stdout and asked.returncode == 1
    configured = '[tool.devlint]\nextend-include = ["*.md", "*.rst"]\n'
    write(docs, {"pyproject.toml": configured})
    assert run_cli("docs", "--no-cache", cwd=docs).stdout == asked.stdout


def test_a_named_page_is_linted(docs: Path) -> None:
    result = run_cli("docs/page.rst", "--no-cache", cwd=docs)
    assert [code for *_, code in findings_of(result.stdout)] == ["DEV001", "DEV008", "DEV001"]


def test_fixes_rewrite_inside_the_blocks_only(docs: Path) -> None:
    run_cli("docs", "--include-docs", "--fix", "--unsafe-fixes", "--no-cache", cwd=docs)
    page = (docs / "docs/page.md").read_text(encoding="utf-8")
    assert page == MARKDOWN.replace(
        "import torch.nn as nn\n```",
        'import torch.nn as nn\n\ndevice = torch.device("cuda" if torch.cuda.is_available() '
        'else "cpu")\n```',
    ).replace("  model.cuda()", "  model.to(device)").replace(
        '>>> v = torch.load("vae_weights.pt")',
        '>>> v = torch.load("vae_weights.pt", map_location="cpu")',
    )
    rst = (docs / "docs/page.rst").read_text(encoding="utf-8")
    assert rst == RST.replace(
        "   model = torch.nn.Linear(4, 2).cuda()",
        '\n   device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
        "   model = torch.nn.Linear(4, 2).to(device)",
    ).replace('torch.load("weights.pt")', 'torch.load("weights.pt", map_location="cpu")').replace(
        ">>> x = torch.ones(2).cuda()", ">>> x = torch.ones(2).to(device)"
    )
    again = run_cli("docs", "--include-docs", "--fix", "--unsafe-fixes", "--no-cache", cwd=docs)
    assert "Fixed" not in again.stdout
    assert (docs / "docs/page.md").read_text(encoding="utf-8") == page


def test_rows_outside_blocks_are_blank_and_columns_shift_back() -> None:
    program = extract(MARKDOWN, "page.md")
    rows = program.source.split("\n")
    assert len(rows) == len(MARKDOWN.split("\n"))
    assert rows[11] == "model.cuda()" and program.prefixes[11] == "  "
    assert rows[14] == "" and rows[18] == ""  # the sketch and the bash block are left out
    assert rows[25] == "" and not program.code[25]  # a doctest's output
    assert program.prefixes[23] == ">>> "


def test_a_notebook_exported_to_markdown_has_its_ipython_lines_masked(tmp_path: Path) -> None:
    page = (
        "```python\n!pip install torch\nimport torch\n```\n\n"
        "```python\n%%time\nw = torch.load('weights.pt')\n```\n\n"
        '```py title="setup.py"\n%%writefile setup.py\nx = torch.ones(2).cuda()\n```\n\n'
        "```python\n%%time\nthis is a sketch\n```\n"
    )
    write(tmp_path, {"exported.md": page})
    result = run_cli("exported.md", "--no-cache", cwd=tmp_path)
    # `%%writefile` writes a file rather than running its cell: hidden, as in a notebook.
    assert [line.split(" `")[0] for line in without_fix_hint(result.stdout)[:-1]] == [
        "exported.md:8:5: DEV008"
    ], result.stdout
    fixed = run_cli("exported.md", "--fix", "--unsafe-fixes", "--no-cache", cwd=tmp_path)
    assert "Fixed 1 problem" in fixed.stdout
    text = (tmp_path / "exported.md").read_text(encoding="utf-8")
    assert text == page.replace("load('weights.pt')", "load('weights.pt', map_location=\"cpu\")")
