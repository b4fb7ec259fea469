"""Small helpers shared by the tests."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable

from devlint.diagnostics import PARSE_ERROR_CODE, Finding
from devlint.engine import RuleSet, lint_source


def lint_snippet(source: str, codes: Iterable[str], path: str = "example.py") -> list[Finding]:
    """Findings for a snippet with the given rules (and parse errors) enabled."""
    rules = RuleSet({*codes, PARSE_ERROR_CODE})
    result = lint_source(path, textwrap.dedent(source).encode(), rules)
    assert not result.errors, result.errors
    return result.findings
