"""`devlint explain` and `devlint rules`: Markdown or styled text for people, JSON for scripts."""

from __future__ import annotations

import json
from pathlib import Path

import click

from devlint.rule_info import explanation, first_paragraph, rules_table, style_markdown
from devlint.rules import ALL_RULES, RULES_BY_CODE
from tests.helpers import run_cli


def test_rules_as_json(tmp_path: Path) -> None:
    result = run_cli("rules", "--format", "json", cwd=tmp_path)
    assert result.returncode == 0
    listed = json.loads(result.stdout)
    assert [rule["code"] for rule in listed] == [rule.code for rule in ALL_RULES]
    first = listed[1]
    assert set(first) == {"code", "name", "summary", "default_enabled", "fixable", "documentation"}
    assert first["name"] == "unguarded-cuda" and first["default_enabled"] is True


def test_explain_as_json(tmp_path: Path) -> None:
    result = run_cli("explain", "dev008", "--format", "json", cwd=tmp_path)
    assert result.returncode == 0
    described = json.loads(result.stdout)
    rule = RULES_BY_CODE["DEV008"]
    assert (described["code"], described["name"]) == ("DEV008", "load-without-map-location")
    assert described["documentation"] == rule.documentation()
    assert described["fixable"] is rule.fixable


def test_explain_piped_is_plain_markdown(tmp_path: Path) -> None:
    result = run_cli("explain", "DEV002", cwd=tmp_path)
    assert result.stdout == explanation(RULES_BY_CODE["DEV002"])
    assert "\x1b[" not in result.stdout and "```python" in result.stdout


def test_on_a_terminal_headings_are_bold_and_code_is_indented() -> None:
    styled = style_markdown(explanation(RULES_BY_CODE["DEV001"]))
    plain = click.unstyle(styled)
    assert "```" not in plain and "## " not in plain and "**" not in plain
    assert click.style("What it does", bold=True) in styled
    assert "\n    model = Net().cuda()\n" in plain
    assert plain.startswith("DEV001 (unguarded-cuda)\n")


def test_rules_table_is_aligned_and_styled_only_in_colour() -> None:
    plain = rules_table(ALL_RULES, color=False)
    rows = plain.splitlines()
    assert len(rows) == len(ALL_RULES) + 1
    assert len({row.index("  on  ") for row in rows[1:] if "  on  " in row}) == 1
    assert "\x1b[" not in plain
    assert click.unstyle(rules_table(ALL_RULES, color=True)) == plain
    assert rules_table(ALL_RULES, color=True) != plain


def test_first_paragraph_is_what_it_does() -> None:
    assert first_paragraph(RULES_BY_CODE["DEV000"]).startswith("Reports a file devlint cannot")
    assert "\n" not in first_paragraph(RULES_BY_CODE["DEV000"])
