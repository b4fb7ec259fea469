"""Every rule's own VALID and INVALID examples, turned into test cases."""

from __future__ import annotations

import re

import pytest

from devlint.diagnostics import PARSE_ERROR_CODE
from devlint.engine import RuleSet
from devlint.fixing import fix_source
from devlint.rules import ALL_RULES, Invalid, Rule
from tests.helpers import lint_snippet, style_for

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
    assert lint_snippet(snippet, {rule.code}, torch_floor=rule.example_torch_floor) == []


@pytest.mark.parametrize(("rule", "example"), INVALID_CASES)
def test_invalid_example_fires_once_at_its_position(rule: type[Rule], example: Invalid) -> None:
    findings = lint_snippet(example.code, {rule.code}, torch_floor=rule.example_torch_floor)
    assert [(f.code, f.start.row, f.start.column) for f in findings] == [
        (rule.code, example.line, example.column)
    ]
    assert example.message in findings[0].message


FIX_CASES = [
    pytest.param(rule, example, id=f"{rule.code}-fix-{index}")
    for rule in ALL_RULES
    for index, example in enumerate(rule.INVALID)
    if example.fixed is not None
]


@pytest.mark.parametrize(("rule", "example"), FIX_CASES)
def test_fix_gives_the_exact_expected_code_once_and_for_all(
    rule: type[Rule], example: Invalid
) -> None:
    rules = RuleSet({rule.code, PARSE_ERROR_CODE}, style=style_for(rule.example_torch_floor))
    first = fix_source("example.py", example.code.encode(), rules, unsafe=True)
    assert first.error is None
    assert first.fixed == example.fixed
    again = fix_source("example.py", first.fixed.encode(), rules, unsafe=True)
    assert again.fixed == first.fixed  # a second --fix changes nothing


def test_every_fixable_rule_shows_a_fix() -> None:
    for rule in ALL_RULES:
        has_fixed_example = any(example.fixed is not None for example in rule.INVALID)
        assert has_fixed_example == rule.fixable, rule.code


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
