"""DEV100: a `# noqa: DEV...` that silences nothing (Ruff's RUF100, for devlint's codes)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Optional

from devlint.diagnostics import Applicability, Edit, Finding, Fix, Position
from devlint.rules.base import Invalid, Rule
from devlint.suppression import Directive, Suppressions, split_lines

UNUSED_NOQA_CODE = "DEV100"


class UnusedNoqa(Rule):
    """
    ## What it does
    Reports a `# noqa: DEV...` directive that names a devlint rule which is
    enabled but found nothing on that line, as Ruff's RUF100 does.

    Only devlint's own codes are judged: `# noqa: E501` belongs to another
    tool, and a blanket `# noqa` may be for any tool. A code that is not
    enabled for the file (not selected, ignored, or in `per-file-ignores`) is
    left alone too: the rule cannot tell whether it would fire (Ruff reports
    such codes as "non-enabled"; devlint, precise first, stays silent).

    ## Why is this bad?
    A suppression outlives the bug it silenced: once the code is guarded, the
    comment stays and will hide the next real bug on that line.

    ## Example
    ```python
    if torch.cuda.is_available():
        model.cuda()  # noqa: DEV001
    ```

    ## Use instead
    ```python
    if torch.cuda.is_available():
        model.cuda()
    ```

    ## Fix safety
    Safe: the fix removes the unused codes from the directive, or the whole
    directive when none remains; the code itself does not change.
    """

    code = UNUSED_NOQA_CODE
    name = "unused-noqa"
    summary = "a `# noqa: DEV...` that silences no finding"
    default_enabled = False  # as Ruff's RUF100, opt-in: `extend-select = ["DEV100"]`
    fixable = True
    # The engine runs this rule itself, after suppression; it has no visit hooks.
    trigger_tokens = ("noqa", "NOQA", "Noqa")

    VALID = (
        "x = 1  # noqa: E501",  # another tool's code
        "x = 1  # noqa",  # blanket: may be for any tool
        "x = 1  # noqa: DEV001",  # DEV001 is not enabled here
        "x = 1  # noqa: DEV999",  # no such rule
        "def f(:  # noqa: DEV000\n    pass",  # used: the parse error is on this line
    )
    INVALID = (
        Invalid(
            "x = 1  # noqa: DEV000\n",
            1,
            8,
            "Unused `noqa` directive (unused: `DEV000`)",
            fixed="x = 1\n",
        ),
        Invalid(
            "x = 1  # noqa: DEV000, E501\n", 1, 8, "unused: `DEV000`", fixed="x = 1  # noqa: E501\n"
        ),
        Invalid("x = 1  # noqa: DEV000  # keep me\n", 1, 8, "DEV000", fixed="x = 1  # keep me\n"),
        Invalid(
            "x = 1  # why: legacy  # noqa: DEV000\n",
            1,
            23,
            "DEV000",
            fixed="x = 1  # why: legacy\n",
        ),
    )

    @classmethod
    def check(
        cls,
        path: str,
        source: str,
        used: Sequence[tuple[str, Sequence[int]]],
        enabled: Collection[str],
        suppressions: Optional[Suppressions] = None,
    ) -> list[Finding]:
        """Findings for the directives of ``source``; ``used`` holds every finding's code and
        the rows where a noqa silences it, before suppression."""
        suppressions = suppressions or Suppressions.scan(source)
        lines = split_lines(source)
        found: list[Finding] = []
        for directive in suppressions.directives():
            unused = [
                code
                for code in directive.codes
                if code.upper() in enabled
                and code.upper() != UNUSED_NOQA_CODE
                and not suppressions.file_suppresses(code.upper())
                and not any(c == code.upper() and directive.row in rows for c, rows in used)
            ]
            if not unused or suppressions.suppresses(UNUSED_NOQA_CODE, [directive.row]):
                continue
            listed = ", ".join(f"`{code}`" for code in unused)
            start = Position(directive.row, directive.start + 1)
            found.append(
                Finding(
                    path,
                    cls.code,
                    cls.name,
                    f"Unused `noqa` directive (unused: {listed})",
                    start,
                    Position(directive.row, directive.end + 1),
                    directive.row,
                    _fix(lines[directive.row - 1], directive, unused),
                )
            )
        return found


def _fix(line: str, directive: Directive, unused: Sequence[str]) -> Fix:
    """Remove the unused codes; where none is left, the directive, with the space before it
    (or, where a comment follows it on the line, the space after it)."""
    row = directive.row
    kept = [code for code in directive.codes if code not in unused]
    if kept:
        edit = Edit(Position(row, directive.codes_start + 1), Position(row, directive.codes_end + 1),
                    ", ".join(kept))  # fmt: skip
        return Fix(Applicability.SAFE, "Remove unused `noqa` codes", (edit,))
    before = line[: directive.start]
    after = line[directive.end :]
    start, end = directive.start, directive.end
    if after.strip():
        end = len(line) - len(after.lstrip())  # a note after the directive stays
    else:
        start = len(before.rstrip())  # the directive and the space before it go
    edit = Edit(Position(row, start + 1), Position(row, end + 1), "")
    return Fix(Applicability.SAFE, "Remove unused `noqa` directive", (edit,))
