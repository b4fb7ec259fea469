"""What linting a notebook costs against the same code as a ``.py`` file.

    python bench/notebook_cost.py SOURCE_FOLDER [--files N] [--runs N] [--output-kb K]
    python bench/notebook_cost.py NOTEBOOK_FOLDER --notebooks [--files N] [--runs N]

Takes the first N Python files under SOURCE_FOLDER (default 100) and writes each twice in a
temporary folder: as the ``.py`` file it is, and as a notebook (nbformat 4, indent 1, as Jupyter
writes it) whose code cells are the file's top-level statements, with a Markdown cell between
every two and K kilobytes of stream output per code cell (default 2: outputs are part of what a
notebook's JSON holds and what devlint must read past). Then devlint lints each folder with every
rule, ``--jobs 1 --no-cache``, alternating, N runs each (default 5), and prints the median CPU
time of each and their ratio. Nothing here is a test: the figures depend on the machine and its
load.

With ``--notebooks``, the first N real notebooks under the folder (tutorial repositories) are
copied as they are, and each one's code cells are exported as a ``.py`` file: the program devlint
reads (IPython syntax masked, as ``jupyter nbconvert --to script`` would turn it into calls), so
the two folders hold the same code.
"""

from __future__ import annotations

import argparse
import ast
import json
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any


def cpu_seconds(folder: Path) -> float:
    command = [
        sys.executable, "-m", "devlint.cli", "check", "--jobs", "1", "--no-cache",
        "--exit-zero", "--select", "ALL", str(folder),
    ]  # fmt: skip
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def as_notebook(source: str, output_kb: int) -> str:
    """The file's top-level statements as code cells, a Markdown cell between each two."""
    lines = source.splitlines(keepends=True)
    try:
        starts = [node.lineno - 1 for node in ast.parse(source).body]
    except SyntaxError:
        starts = [0]
    starts = sorted({0, *starts})
    cells: list[dict[str, Any]] = []
    output = ["x" * 99 + "\n"] * (output_kb * 1024 // 100)
    for number, (start, end) in enumerate(zip(starts, [*starts[1:], len(lines)]), start=1):
        cells.append({"cell_type": "markdown", "metadata": {}, "source": [f"Step {number}\n"]})
        stream = {"name": "stdout", "output_type": "stream", "text": output}
        cells.append(
            {
                "cell_type": "code",
                "execution_count": number,
                "metadata": {},
                "outputs": [stream],
                "source": lines[start:end],
            }
        )
    document = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(document, indent=1, ensure_ascii=False) + "\n"


def export(notebook: Path, target: Path) -> int:
    """Write a notebook's code cells as one ``.py`` file; how many bytes of code it holds."""
    from devlint.notebook import program_of

    program = program_of(notebook.read_bytes())
    source = program.source if program is not None else ""
    target.write_text(source, encoding="utf-8")
    return len(source.encode())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--output-kb", type=int, default=2)
    parser.add_argument("--notebooks", action="store_true", help="export real notebooks")
    options = parser.parse_args()
    pattern = "*.ipynb" if options.notebooks else "*.py"
    files = sorted(options.source.rglob(pattern))[: options.files]
    with tempfile.TemporaryDirectory() as temporary:
        plain, notebooks = Path(temporary, "py"), Path(temporary, "ipynb")
        plain.mkdir()
        notebooks.mkdir()
        code_bytes = 0
        for index, path in enumerate(files):
            if options.notebooks:
                code_bytes += export(path, plain / f"f{index:03}.py")
                (notebooks / f"f{index:03}.ipynb").write_bytes(path.read_bytes())
                continue
            source = path.read_text(encoding="utf-8", errors="replace")
            code_bytes += len(source.encode())
            (plain / f"f{index:03}.py").write_text(source, encoding="utf-8")
            notebook = as_notebook(source, options.output_kb)
            (notebooks / f"f{index:03}.ipynb").write_text(notebook, encoding="utf-8")
        json_bytes = sum(path.stat().st_size for path in notebooks.iterdir())
        times: dict[str, list[float]] = {"py": [], "ipynb": []}
        for _ in range(options.runs):
            times["py"].append(cpu_seconds(plain))
            times["ipynb"].append(cpu_seconds(notebooks))
    py, nb = statistics.median(times["py"]), statistics.median(times["ipynb"])
    sizes = f"{code_bytes / 1e6:.2f} MB of code, notebooks {json_bytes / 1e6:.2f} MB"
    print(f"{len(files)} files, {sizes}")
    print(f"as .py:    {py:.2f} CPU s (median of {options.runs})")
    print(f"as .ipynb: {nb:.2f} CPU s (median of {options.runs})")
    print(f"ratio:     {nb / py:.2f}")


if __name__ == "__main__":
    main()
