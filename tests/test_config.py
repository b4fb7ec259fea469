"""`[tool.devlint]` in a project's pyproject.toml, file discovery and odd files, through the CLI."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers import codes_of, findings_of, run_cli, write

# DEV001 at 2:5, DEV002 at 3:1, DEV008 at 4:9.
BUGGY = "import torch\nx = x.cuda()\ntorch.cuda.memory_cached()\nstate = torch.load('a.pt')\n"
CUDA_BUG = "x = x.cuda()\n"  # DEV001 at 1:5


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git checkout (a `.git` folder is all discovery looks for) with an empty config."""
    (tmp_path / ".git").mkdir()
    write(tmp_path, {"pyproject.toml": "[tool.devlint]\n"})
    return tmp_path


def configure(root: Path, table: str) -> None:
    write(root, {"pyproject.toml": f"[tool.devlint]\n{table}\n"})


def files_of(stdout: str) -> set[str]:
    return {path for path, _, _, _ in findings_of(stdout)}


@pytest.mark.parametrize(
    ("table", "codes"),
    [
        ("", {"DEV001", "DEV002", "DEV008"}),
        ('select = ["DEV001"]', {"DEV001"}),
        ('ignore = ["DEV002"]', {"DEV001", "DEV008"}),
        ('select = ["DEV002"]\nextend-select = ["DEV008"]', {"DEV002", "DEV008"}),
        ('select = ["ALL"]\nignore = ["DEV00"]', set()),
        ('extend-select = ["DEV00"]\nignore = ["DEV001", "DEV008"]', {"DEV002"}),
    ],
)
def test_rule_selection_in_config(project: Path, table: str, codes: set[str]) -> None:
    configure(project, table)
    write(project, {"a.py": BUGGY})
    result = run_cli("a.py", cwd=project)
    assert codes_of(result.stdout) == codes
    assert result.returncode == (1 if codes else 0)


def test_per_file_ignores_with_glob_patterns(project: Path) -> None:
    configure(project, """
[tool.devlint.per-file-ignores]
"tests/*" = ["DEV001"]
"*_legacy.py" = ["DEV008", "DEV002"]
"**/scripts/*.py" = ["ALL"]
""")  # fmt: skip
    names = ["tests/test_a.py", "pkg/old_legacy.py", "pkg/tools/scripts/run.py", "pkg/a.py"]
    write(project, dict.fromkeys(names, BUGGY))
    found = findings_of(run_cli(".", cwd=project).stdout)
    by_file = {name: {code for path, _, _, code in found if path == name} for name in names}
    assert by_file == {
        "tests/test_a.py": {"DEV002", "DEV008"},
        "pkg/old_legacy.py": {"DEV001"},
        "pkg/tools/scripts/run.py": set(),
        "pkg/a.py": {"DEV001", "DEV002", "DEV008"},
    }


def test_default_excludes(project: Path) -> None:
    names = ["src/a.py", ".venv/lib/x.py", "build/lib/y.py", "node_modules/z.py", "src/dist/d.py"]
    write(project, dict.fromkeys(names, CUDA_BUG))
    result = run_cli(".", cwd=project)
    assert files_of(result.stdout) == {"src/a.py"}
    assert "(1 file checked)" in result.stdout


def test_extend_exclude_keeps_the_defaults(project: Path) -> None:
    configure(project, 'extend-exclude = ["generated", "*_pb2.py"]')
    names = ["src/a.py", "src/msg_pb2.py", "generated/g.py", "build/b.py"]
    write(project, dict.fromkeys(names, CUDA_BUG))
    assert files_of(run_cli(".", cwd=project).stdout) == {"src/a.py"}


def test_exclude_replaces_the_defaults(project: Path) -> None:
    configure(project, 'exclude = ["generated"]')
    names = ["src/a.py", "generated/g.py", "build/b.py", ".venv/v.py"]
    write(project, dict.fromkeys(names, CUDA_BUG))
    assert files_of(run_cli(".", cwd=project).stdout) == {"src/a.py", "build/b.py", ".venv/v.py"}


def test_excluded_paths_named_on_the_command_line(project: Path) -> None:
    configure(project, 'extend-exclude = ["generated"]')
    write(project, {"generated/g.py": CUDA_BUG, "build/b.py": CUDA_BUG})
    named = run_cli("generated", "build/b.py", cwd=project)
    assert files_of(named.stdout) == {"generated/g.py", "build/b.py"}
    forced = run_cli("--force-exclude", "generated", "build/b.py", cwd=project)
    assert (forced.returncode, forced.stdout) == (0, "All checks passed! (0 files checked)\n")


def test_nearest_pyproject_above_each_path_wins(project: Path) -> None:
    configure(project, 'select = ["DEV001"]')
    write(project, {
        "top.py": BUGGY,
        "sub/pyproject.toml": '[tool.devlint]\nselect = ["DEV002"]\n',
        "sub/deeper/s.py": BUGGY,
        "plain/pyproject.toml": "[project]\nname = 'plain'\n",  # no table: keep looking up
        "plain/p.py": BUGGY,
    })  # fmt: skip
    found = findings_of(run_cli(".", cwd=project).stdout)
    assert sorted((path, code) for path, _, _, code in found) == [
        ("plain/p.py", "DEV001"), ("sub/deeper/s.py", "DEV002"), ("top.py", "DEV001"),
    ]  # fmt: skip
    inside = run_cli("deeper/s.py", cwd=project / "sub")
    assert codes_of(inside.stdout) == {"DEV002"}


def test_config_of_the_current_folder_does_not_leak_into_dot_dot_paths(tmp_path: Path) -> None:
    # BUG (devlint/config.py ConfigResolver.settings_for/_nearest): `path.absolute()` keeps `..`,
    # so the lexical "parents" of `../b/f.py` include the current folder `a`, whose
    # [tool.devlint] (select DEV002 only) is wrongly applied to b/f.py.
    write(tmp_path, {"a/pyproject.toml": '[tool.devlint]\nselect = ["DEV002"]\n',
                     "b/f.py": CUDA_BUG})  # fmt: skip
    from_a = run_cli("../b/f.py", cwd=tmp_path / "a")
    assert codes_of(from_a.stdout) == {"DEV001"}


@pytest.mark.parametrize(
    ("table", "named"),
    [
        ('selct = ["DEV001"]', "unknown key `selct`"),
        ('select = ["DEV999"]', "'DEV999'"),
        ('extend-select = ["dev008"]', "unknown rule code or prefix 'dev008'"),
        ('unfixable = ["dev001"]', "'dev001'"),
        ("respect-gitignore = 1", "`respect-gitignore`"),
        ('output-format = "xml"', "`output-format`"),
        ('extend-select = ["FOO1"]', "'FOO1'"),
        ('[tool.devlint.per-file-ignores]\n"tests/*" = ["DEV42"]', "'DEV42'"),
        ('exclude = "build"', "`exclude`"),
        ('per-file-ignores = ["tests/*"]', "`per-file-ignores`"),
    ],
)
def test_config_errors_exit_2_naming_the_problem(project: Path, table: str, named: str) -> None:
    configure(project, table)
    write(project, {"a.py": BUGGY})
    result = run_cli("a.py", cwd=project)
    assert (result.returncode, result.stdout) == (2, "")
    assert named in result.stderr and str(project / "pyproject.toml") in result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr


def test_an_error_in_a_nested_config_stops_the_run(project: Path) -> None:
    write(project, {"a.py": BUGGY, "sub/pyproject.toml": "[tool.devlint]\nbogus = 1\n",
                    "sub/b.py": BUGGY})  # fmt: skip
    result = run_cli(".", cwd=project)
    assert result.returncode == 2 and "unknown key `bogus`" in result.stderr


@pytest.mark.parametrize(
    ("table", "flags", "codes"),
    [
        ('ignore = ["DEV002"]', ("--extend-select", "DEV002"), {"DEV001", "DEV002", "DEV008"}),
        ('select = ["DEV002"]', ("--select", "DEV001"), {"DEV001"}),
        ('select = ["DEV002"]', ("--extend-select", "DEV008"), {"DEV002", "DEV008"}),
        ('select = ["DEV001", "DEV008"]', ("--ignore", "DEV001"), {"DEV008"}),
        ('extend-select = ["ALL"]', ("--ignore", "DEV00"), set()),
    ],
)
def test_command_line_flags_are_layered_over_the_config(
    project: Path, table: str, flags: tuple[str, ...], codes: set[str]
) -> None:
    configure(project, table)
    write(project, {"a.py": BUGGY})
    assert codes_of(run_cli(*flags, "a.py", cwd=project).stdout) == codes


def test_per_file_ignores_survive_a_command_line_select(project: Path) -> None:
    configure(project, '[tool.devlint.per-file-ignores]\n"tests/*" = ["DEV001"]')
    write(project, {"tests/t.py": BUGGY, "src/s.py": BUGGY})
    result = run_cli("--select", "DEV001", ".", cwd=project)
    assert findings_of(result.stdout) == [("src/s.py", 2, 5, "DEV001")]


def test_gitignore_is_honoured_while_walking_but_not_for_named_files(project: Path) -> None:
    write(project, {
        ".gitignore": "ignored.py\nout/\n*_tmp.py\n",
        "pkg/.gitignore": "local.py\n",
        "ignored.py": CUDA_BUG, "out/o.py": CUDA_BUG, "pkg/x_tmp.py": CUDA_BUG,
        "pkg/local.py": CUDA_BUG, "pkg/kept.py": CUDA_BUG,
    })  # fmt: skip
    assert files_of(run_cli(".", cwd=project).stdout) == {"pkg/kept.py"}
    assert files_of(run_cli("pkg", cwd=project).stdout) == {"pkg/kept.py"}  # root .gitignore too
    named = run_cli("ignored.py", "pkg/x_tmp.py", "pkg/local.py", cwd=project)
    assert files_of(named.stdout) == {"ignored.py", "pkg/x_tmp.py", "pkg/local.py"}
    assert named.returncode == 1


def test_a_gitignored_folder_named_on_the_command_line_is_linted(project: Path) -> None:
    # As a folder excluded in the settings is when named (test_excluded_paths_named_...).
    write(project, {".gitignore": "out/\n", "out/o.py": CUDA_BUG, "out/deep/d.py": CUDA_BUG})
    assert files_of(run_cli(".", cwd=project).stdout) == set()
    assert files_of(run_cli("out", cwd=project).stdout) == {"out/o.py", "out/deep/d.py"}


def test_a_folder_named_like_a_python_file_is_walked(project: Path) -> None:
    write(project, {"x.py/inner.py": CUDA_BUG, "x.py/notes.txt": "x.cuda()\n"})
    result = run_cli(".", cwd=project)
    assert findings_of(result.stdout) == [("x.py/inner.py", 1, 5, "DEV001")]
    assert "(1 file checked)" in result.stdout
    assert findings_of(run_cli("x.py", cwd=project).stdout) == [("x.py/inner.py", 1, 5, "DEV001")]


def test_a_broken_symlink_cannot_be_read(project: Path) -> None:
    os.symlink(project / "nowhere.py", project / "dangling.py")
    for args in ((".",), ("dangling.py",)):
        result = run_cli(*args, cwd=project)
        assert result.stdout.splitlines()[0] == (
            "dangling.py:1:1: DEV000 cannot read: No such file or directory"
        )
        assert result.returncode == 1


def test_non_utf8_bytes_are_a_parse_error_at_the_byte(project: Path) -> None:
    write(project, {"latin.py": b"import torch\n\nname = 'caf\xe9'\nx = x.cuda()\n"})
    result = run_cli("latin.py", cwd=project)
    assert result.stdout.splitlines()[0] == (
        "latin.py:3:12: DEV000 not valid utf-8: byte 0xe9 cannot be decoded"
    )
    assert result.returncode == 1


def test_non_utf8_bytes_on_the_first_line_are_reported_at_the_byte(project: Path) -> None:
    # BUG (devlint/engine.py decode): tokenize.detect_encoding fails first on lines 1-2 and the
    # report becomes "cannot decode: invalid or missing encoding declaration" at 1:1.
    write(project, {"latin.py": b"name = 'caf\xe9'\nx = x.cuda()\n"})
    [line, _] = run_cli("latin.py", cwd=project).stdout.splitlines()
    assert line == "latin.py:1:12: DEV000 not valid utf-8: byte 0xe9 cannot be decoded"


def test_ignoring_dev000_silences_unreadable_and_undecodable_files(project: Path) -> None:
    # BUG (devlint/api.py _unreadable, devlint/engine.py lint_source): these DEV000 findings are
    # added without looking at the enabled codes, unlike syntax errors.
    os.symlink(project / "nowhere.py", project / "dangling.py")
    write(project, {"latin.py": b"import torch\n\nname = 'caf\xe9'\n", "syntax.py": "def f(:\n"})
    result = run_cli("--ignore", "DEV000", ".", cwd=project)
    assert (result.returncode, result.stdout) == (0, "All checks passed! (3 files checked)\n")


def test_a_latin1_coding_cookie_is_honoured(project: Path) -> None:
    write(project, {"cookie.py": b"# -*- coding: latin-1 -*-\nname = 'caf\xe9'\nx = x.cuda()\n"})
    result = run_cli("cookie.py", cwd=project)
    assert findings_of(result.stdout) == [("cookie.py", 3, 5, "DEV001")]


def test_a_byte_order_mark_does_not_shift_columns(project: Path) -> None:
    write(project, {"bom.py": b"\xef\xbb\xbfx = x.cuda()\ny = (1,\n     z.cuda())\n"})
    result = run_cli("bom.py", cwd=project)
    assert findings_of(result.stdout) == [("bom.py", 1, 5, "DEV001"), ("bom.py", 3, 6, "DEV001")]


def test_crlf_line_endings(project: Path) -> None:
    source = (
        b"import torch\r\n\r\nx = x.cuda()\r\ny = y.cuda()  # noqa: DEV001\r\n"
        b"z = f(\r\n    z.cuda(),\r\n)  # noqa\r\nw = torch.load('weights.pt')\r\n"
    )
    write(project, {"crlf.py": source})
    result = run_cli("crlf.py", cwd=project)
    assert findings_of(result.stdout) == [("crlf.py", 3, 5, "DEV001"), ("crlf.py", 8, 5, "DEV008")]
    piped = run_cli("-", "--stdin-filename", "crlf.py", cwd=project, stdin=source)
    assert findings_of(piped.stdout) == findings_of(result.stdout)
