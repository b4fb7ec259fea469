"""What devlint says about its rules: `devlint explain`, `devlint rules` and SARIF's rule table.

One place turns a rule class into text for a terminal, JSON for scripts, and the help SARIF
viewers show, so the three never drift apart.
"""

from __future__ import annotations

import re
from typing import Any

import click

from devlint.rules import Rule

_HEADING = re.compile(r"^(#{1,6}) (.*)$")
_FENCE = "```"


def rule_to_json(rule: type[Rule]) -> dict[str, Any]:
    """A rule's metadata and documentation (Markdown), for `--format json` and SARIF."""
    return {
        "code": rule.code,
        "name": rule.name,
        "summary": rule.summary,
        "default_enabled": rule.default_enabled,
        "fixable": rule.fixable,
        "documentation": rule.documentation(),
    }


def first_paragraph(rule: type[Rule]) -> str:
    """The "What it does" paragraph as one line: SARIF's full description of the rule."""
    lines: list[str] = []
    for line in rule.documentation().splitlines():
        if _HEADING.match(line):
            if lines:
                break
            continue
        if not line.strip():
            if lines:
                break
            continue
        lines.append(line.strip())
    return " ".join(lines) or rule.summary


def explanation(rule: type[Rule]) -> str:
    """The Markdown `devlint explain` prints: a title, the rule's state, its documentation."""
    fix = "can fix" if rule.fixable else "no automatic fix"
    default = "on by default" if rule.default_enabled else "off by default"
    header = f"# {rule.code} ({rule.name})\n\n{rule.summary}: {default}, {fix}.\n\n"
    return header + rule.documentation() + "\n"


def style_markdown(text: str) -> str:
    """Markdown made readable on a colour terminal: bold headings, code set off and indented.

    Piped output stays plain Markdown (a documentation generator or a pager may read it).
    """
    styled: list[str] = []
    in_code = False
    for line in text.splitlines():
        if line.startswith(_FENCE):
            in_code = not in_code
            continue
        heading = _HEADING.match(line)
        if in_code:
            styled.append("    " + click.style(line, fg="cyan"))
        elif heading:
            underline = True if len(heading[1]) == 1 else None  # False would emit a code too
            styled.append(click.style(heading[2], bold=True, underline=underline))
        else:
            line = re.sub(r"\*\*([^*]+)\*\*", lambda m: click.style(m[1], bold=True), line)
            styled.append(re.sub(r"`([^`]+)`", lambda m: click.style(m[1], fg="cyan"), line))
    return "\n".join(styled) + "\n"


def rules_table(rules: tuple[type[Rule], ...], color: bool) -> str:
    """`devlint rules`: one aligned row per rule; the header in bold on a colour terminal."""
    width = max(len(rule.name) for rule in rules)
    header = f"{'code':<7} {'name':<{width}}  {'default':<7}  {'fix':<3}  summary"
    lines = [click.style(header, bold=True) if color else header]
    for rule in rules:
        default = "on" if rule.default_enabled else "off"
        fix = "yes" if rule.fixable else "no"
        lines.append(f"{rule.code:<7} {rule.name:<{width}}  {default:<7}  {fix:<3}  {rule.summary}")
    return "\n".join(lines) + "\n"
