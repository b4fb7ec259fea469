"""Every rule's own VALID and INVALID examples, turned into test cases."""

from __future__ import annotations

import re

import pytest

from devlint.rules import ALL_RULES, Invalid, Rule
from tests.helpers import lint_snippet

VALID_CASES = [
    pytest.param(rule, snippet, id=f"{rule.code}-valid-{index}")
    for rule in ALL_RULES
    for index, snippet in enumerate(rule.VALID)
]
INVALID_CASES = [
    pytest.param(rule, example, id=f"{rule.code}-invalid-{index}")
    for rule in ALL_RULES
    for index, example in enumerate(rule.INVALID)
]


@pytest.mark.parametrize(("rule", "snippet"), VALID_CASES)
def test_valid_example_is_silent(rule: type[Rule], snippet: str) -> None:
    assert lint_snippet(snippet, {rule.code}) == []


@pytest.mark.parametrize(("rule", "example"), INVALID_CASES)
def test_invalid_example_fires_once_at_its_position(rule: type[Rule], example: Invalid) -> None:
    findings = lint_snippet(example.code, {rule.code})
    assert [(f.code, f.start.row, f.start.column) for f in findings] == [
        (rule.code, example.line, example.column)
    ]
    assert example.message in findings[0].message


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda rule: rule.code)
def test_rule_anatomy(rule: type[Rule]) -> None:
    assert re.fullmatch(r"DEV\d{3}", rule.code)
    assert re.fullmatch(r"[a-z]+(-[a-z]+)*", rule.name)
    assert rule.summary and "\n" not in rule.summary
    documentation = rule.documentation()
    for section in ("## What it does", "## Why is this bad?", "## Example", "## Use instead",
                    "## Fix safety"):  # fmt: skip
        assert section in documentation, f"{rule.code} lacks {section!r}"
    assert rule.VALID, f"{rule.code} has no VALID examples"
    assert rule.INVALID, f"{rule.code} has no INVALID examples"


def test_codes_and_names_are_unique() -> None:
    assert len({rule.code for rule in ALL_RULES}) == len(ALL_RULES)
    assert len({rule.name for rule in ALL_RULES}) == len(ALL_RULES)
