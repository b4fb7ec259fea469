"""Ruff's user contract, through the real command line: the fixable marker and hints, the
reporting and one-shot options, the settings Ruff reads, and git's exclude files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from devlint.config import Settings
from tests.helpers import codes_of, findings_of, run_cli, write

SAFE_FIX = "import torch\nx = torch.cuda.memory_cached()\n"  # DEV002 at 2:5, a safe fix
UNSAFE_FIX = "import torch\nx = torch.zeros(2).cuda()\n"  # DEV001 at 2:5, an unsafe fix
NO_FIX = "import torch\nopt = torch.optim.SGD([], lr=0.1)\nopt.to(device)\n"  # DEV003, no fix


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    write(tmp_path, {"pyproject.toml": "[tool.devlint]\n"})
    return tmp_path


def test_fixable_findings_are_marked_and_the_summary_says_how_many(project: Path) -> None:
    write(project, {"safe.py": SAFE_FIX, "unsafe.py": UNSAFE_FIX, "none.py": NO_FIX})
    lines = run_cli(".", cwd=project).stdout.splitlines()
    assert "safe.py:2:5: DEV002 [*] `torch.cuda.memory_cached` is deprecated" in "\n".join(lines)
    assert any(line.startswith("unsafe.py:2:5: DEV001 `torch.zeros(2).cuda()`") for line in lines)
    assert any(line.startswith("none.py:3:1: DEV003 `opt`") for line in lines)
    assert lines[-1] == (
        "[*] 1 fixable with the `--fix` option "
        "(1 hidden fix can be enabled with the `--unsafe-fixes` option)."
    )
    # Enabled, the unsafe fix is marked and counted; refused, the hint goes.
    unsafe = run_cli("--unsafe-fixes", ".", cwd=project).stdout.splitlines()
    assert any(line.startswith("unsafe.py:2:5: DEV001 [*] ") for line in unsafe)
    assert unsafe[-1] == "[*] 2 fixable with the `--fix` option."
    refused = run_cli("--no-unsafe-fixes", ".", cwd=project).stdout.splitlines()
    assert refused[-1] == "[*] 1 fixable with the `--fix` option."


def test_only_unsafe_fixes_says_none_are_available(project: Path) -> None:
    write(project, {"unsafe.py": UNSAFE_FIX})
    result = run_cli("--fix", "unsafe.py", cwd=project)
    assert result.stdout.splitlines()[-1] == (
        "No fixes available (1 hidden fix can be enabled with the `--unsafe-fixes` option)."
    )
    assert (project / "unsafe.py").read_text() == UNSAFE_FIX


def test_output_format_option_alias_and_setting(project: Path) -> None:
    write(project, {"safe.py": SAFE_FIX})
    long = json.loads(run_cli("--output-format", "json", "safe.py", cwd=project).stdout)
    short = json.loads(run_cli("--format", "json", "safe.py", cwd=project).stdout)
    assert long == short and long[0]["code"] == "DEV002"
    write(project, {"pyproject.toml": '[tool.devlint]\noutput-format = "json"\n'})
    assert json.loads(run_cli("safe.py", cwd=project).stdout) == long
    assert run_cli("--output-format", "text", "safe.py", cwd=project).stdout.startswith("safe.py")


def test_show_fixes_lists_what_was_fixed_per_file_and_rule(project: Path) -> None:
    write(project, {"safe.py": SAFE_FIX + "y = torch.cuda.max_memory_cached()\n"})
    result = run_cli("--fix", "--show-fixes", ".", cwd=project)
    assert result.stdout.splitlines() == [
        "",
        "Fixed 2 problems:",
        "- safe.py:",
        "    2 × DEV002 (deprecated-cuda-api)",  # noqa: RUF001 (Ruff's own layout)
        "",
        "Fixed 2 problems, 0 remaining.",
        "All checks passed! (1 file checked)",
    ]
    assert result.returncode == 0


def test_fix_only_fixes_and_neither_reports_nor_fails_on_the_rest(project: Path) -> None:
    write(project, {"safe.py": SAFE_FIX, "none.py": NO_FIX})
    result = run_cli("--fix-only", ".", cwd=project)
    assert (result.returncode, result.stdout) == (0, "Fixed 1 problem.\n")
    assert "memory_reserved" in (project / "safe.py").read_text()
    again = run_cli("--fix-only", "--exit-non-zero-on-fix", ".", cwd=project)
    assert (again.returncode, again.stdout) == (0, "")  # nothing fixed, nothing said
    write(project, {"more.py": SAFE_FIX})
    assert run_cli("--fix-only", "--exit-non-zero-on-fix", ".", cwd=project).returncode == 1


ADD_NOQA_SOURCE = '''\
import torch
x = torch.zeros(2).cuda()
y = torch.load("a_ckpt.pt")  # noqa: DEV001
z = torch.load("b_ckpt.pt")  # a note
doc = torch.load("""model
x.cuda()
"""); w = torch.zeros(1).cuda()
print(torch.cuda.memory_cached())  # noqa
'''
ADD_NOQA_RESULT = '''\
import torch
x = torch.zeros(2).cuda()  # noqa: DEV001
y = torch.load("a_ckpt.pt")  # noqa: DEV001, DEV008
z = torch.load("b_ckpt.pt")  # a note  # noqa: DEV008
doc = torch.load("""model
x.cuda()
"""); w = torch.zeros(1).cuda()  # noqa: DEV001, DEV008
print(torch.cuda.memory_cached())  # noqa
'''


def test_add_noqa_merges_with_existing_comments_and_keeps_strings(project: Path) -> None:
    write(project, {"a.py": ADD_NOQA_SOURCE})
    result = run_cli("--add-noqa", ".", cwd=project)
    assert (result.returncode, result.stderr) == (0, "Added 4 noqa directives.\n")
    assert (project / "a.py").read_text() == ADD_NOQA_RESULT
    after = run_cli(".", cwd=project)
    assert (after.returncode, findings_of(after.stdout)) == (0, [])
    again = run_cli("--add-noqa", ".", cwd=project)
    assert (again.stderr, (project / "a.py").read_text()) == ("", ADD_NOQA_RESULT)


def test_show_files_lists_what_would_be_linted(project: Path) -> None:
    write(project, {"b.py": "", "a/c.pyi": "", "build/d.py": "", "notes.txt": ""})
    result = run_cli("--show-files", ".", cwd=project)
    assert result.stdout.splitlines() == [str(project / "a/c.pyi"), str(project / "b.py")]
    assert result.returncode == 0


def test_show_settings_prints_every_resolved_setting_and_its_file(project: Path) -> None:
    write(project, {"pyproject.toml": '[tool.devlint]\nselect = ["DEV001"]\n', "a.py": ""})
    result = run_cli("--show-settings", ".", cwd=project)
    lines = result.stdout.splitlines()
    assert lines[:2] == [
        f'Resolved settings for: "{project / "a.py"}"',
        f'Settings path: "{project / "pyproject.toml"}"',
    ]
    shown = {line.split(" = ")[0] for line in lines[3:]}
    assert shown == {field.replace("_", "-") for field in Settings.__dataclass_fields__}
    assert 'enabled = ["DEV000", "DEV001"]' in lines


def test_verbose_logs_configuration_discovery_and_cache(project: Path) -> None:
    write(project, {".gitignore": "skipped/\n", "skipped/s.py": "", "a.py": ""})
    result = run_cli("-v", ".", cwd=project)
    assert f"settings from {project / 'pyproject.toml'}" in result.stderr
    assert "skipped skipped: ignored by git" in result.stderr
    assert "cache " in result.stderr and "0 of 1 files unchanged" in result.stderr
    assert run_cli(".", cwd=project).stderr == ""


UNUSED = """\
import torch
if torch.cuda.is_available():
    model = torch.nn.Linear(2, 2).cuda()  # noqa: DEV001
x = torch.zeros(1).cuda()  # noqa: DEV001, DEV008
y = 1  # noqa: E501
z = 2  # noqa: DEV010
"""


def test_unused_noqa_is_reported_and_removed(project: Path) -> None:
    write(project, {"a.py": UNUSED})
    result = run_cli("--extend-select", "DEV100", "a.py", cwd=project)
    assert [(row, col, code) for _, row, col, code in findings_of(result.stdout)] == [
        (3, 43, "DEV100"), (4, 28, "DEV100"), (6, 8, "DEV100"),
    ]  # fmt: skip
    assert "DEV100 [*] Unused `noqa` directive (unused: `DEV001`)" in result.stdout
    assert "DEV100 [*] Unused `noqa` directive (unused: `DEV008`)" in result.stdout
    fixed = run_cli("--extend-select", "DEV100", "--fix", "a.py", cwd=project)
    assert fixed.returncode == 0, fixed.stdout
    expected = UNUSED.replace("  # noqa: DEV001\n", "\n", 1).replace("DEV001, DEV008", "DEV001")
    assert (project / "a.py").read_text() == expected.replace("z = 2  # noqa: DEV010", "z = 2")


def test_unused_noqa_leaves_codes_that_are_not_enabled(project: Path) -> None:
    write(project, {"a.py": UNUSED})
    # DEV010 ignored, DEV001 off in this file: neither is judged; E501 never is.
    write(
        project,
        {
            "pyproject.toml": '[tool.devlint]\nextend-select = ["DEV100"]\n'
            'ignore = ["DEV010"]\n[tool.devlint.per-file-ignores]\n"a.py" = ["DEV001"]\n'
        },
    )
    result = run_cli("a.py", cwd=project)
    assert [(row, code) for _, row, _, code in findings_of(result.stdout)] == [(4, "DEV100")]
    assert "(unused: `DEV008`)" in result.stdout
    assert codes_of(run_cli("--select", "DEV001", "a.py", cwd=project).stdout) == set()


@pytest.mark.parametrize(
    ("names", "used"),
    [
        ((".devlint.toml", "devlint.toml", "pyproject.toml"), ".devlint.toml"),
        (("devlint.toml", "pyproject.toml"), "devlint.toml"),
        (("pyproject.toml",), "pyproject.toml"),
    ],
)
def test_devlint_toml_is_found_like_ruff_toml(
    tmp_path: Path, names: tuple[str, ...], used: str
) -> None:
    tables = {
        ".devlint.toml": 'select = ["DEV001"]\n',
        "devlint.toml": 'select = ["DEV002"]\n',
        "pyproject.toml": '[tool.devlint]\nselect = ["DEV008"]\n',
    }
    write(tmp_path, {f"sub/{name}": tables[name] for name in names})
    write(tmp_path, {"sub/deep/a.py": "import torch\nx.cuda()\ntorch.cuda.memory_cached()\n"
                     "torch.load('model.pt')\n"})  # fmt: skip
    expected = {".devlint.toml": {"DEV001"}, "devlint.toml": {"DEV002"},
                "pyproject.toml": {"DEV008"}}[used]  # fmt: skip
    assert codes_of(run_cli("sub", cwd=tmp_path).stdout) == expected
    shown = run_cli("--show-settings", "sub", cwd=tmp_path).stdout.splitlines()[1]
    assert shown == f'Settings path: "{tmp_path / "sub" / used}"'


def test_unfixable_rules_offer_no_fix(project: Path) -> None:
    unfixable = '[tool.devlint]\nunfixable = ["DEV002"]\n'
    write(project, {"safe.py": SAFE_FIX, "pyproject.toml": unfixable})
    result = run_cli("--fix", "safe.py", cwd=project)
    assert "DEV002 `torch" in result.stdout and "[*]" not in result.stdout
    assert (project / "safe.py").read_text() == SAFE_FIX
    write(project, {"pyproject.toml": '[tool.devlint]\nfixable = ["DEV001"]\n'})
    assert json.loads(run_cli("--format", "json", "safe.py", cwd=project).stdout)[0]["fix"] is None
    # The command line's --fixable and --unfixable are applied over the settings.
    flags = run_cli("--fixable", "DEV002", "--format", "json", "safe.py", cwd=project)
    assert json.loads(flags.stdout)[0]["fix"]["applicability"] == "safe"
    write(project, {"pyproject.toml": "[tool.devlint]\n"})
    assert "[*]" not in run_cli("--unfixable", "DEV00", "safe.py", cwd=project).stdout


def test_cache_dir_setting(project: Path) -> None:
    write(project, {"a.py": SAFE_FIX, "pyproject.toml": '[tool.devlint]\ncache-dir = "here"\n'})
    run_cli("a.py", cwd=project)
    assert (project / "here").is_dir() and not (project / ".devlint_cache").exists()
    run_cli("--cache-dir", "there", "a.py", cwd=project)
    assert (project / "there").is_dir()


def test_respect_gitignore_false_lints_ignored_files(project: Path) -> None:
    write(project, {".gitignore": "gen/\n", "gen/g.py": SAFE_FIX, "a.py": ""})
    assert "2 files checked" not in run_cli(".", cwd=project).stdout
    write(project, {"pyproject.toml": "[tool.devlint]\nrespect-gitignore = false\n"})
    assert codes_of(run_cli(".", cwd=project).stdout) == {"DEV002"}


def test_git_info_exclude_and_the_global_excludes_file_are_honoured(
    project: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    write(project, {"a.py": SAFE_FIX, "local/l.py": SAFE_FIX, "global/g.py": SAFE_FIX,
                    "custom/c.py": SAFE_FIX, ".git/info/exclude": "local/\n"})  # fmt: skip
    write(home, {".config/git/ignore": "global/\n"})
    files = {path for path, *_ in findings_of(run_cli(".", cwd=project).stdout)}
    assert files == {"a.py", "custom/c.py"}
    # core.excludesFile replaces the default global file.
    write(home, {".gitconfig": '[user]\n\tname = x\n[core]\n\texcludesFile = "~/my-ignores"\n',
                 "my-ignores": "custom/\n"})  # fmt: skip
    files = {path for path, *_ in findings_of(run_cli(".", cwd=project).stdout)}
    assert files == {"a.py", "global/g.py"}
