"""One file in, findings out: decode, prefilter, parse, one visit of every enabled rule.

Most rules read LibCST's tree; the device-flow rules read CPython's, which is several times
cheaper to build and which the syntax check of every file builds anyway. Each tree is parsed at
most once per file, and only where a rule that reads it may fire.
"""

from __future__ import annotations

import ast
import gc
import io
import sys
import tokenize
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, Optional, Union, cast

import libcst as cst
from libcst.metadata import CodeRange

from devlint.analysis.call_screen import call_facts
from devlint.analysis.guards import GuardTracker
from devlint.analysis.imported import with_imported_cpu_sources
from devlint.analysis.project import ProjectView, take_dependencies
from devlint.analysis.syntax import SourceText
from devlint.analysis.syntax_screen import SyntaxFacts, syntax_facts
from devlint.complexity import parse_quietly, too_complex, too_large
from devlint.context import TRACKED_TYPES, FileContext, Node, RawFinding, RawFix
from devlint.diagnostics import (
    PARSE_ERROR_CODE,
    Edit,
    FileResult,
    Finding,
    Fix,
    InternalError,
    Position,
)
from devlint.documents import extract, is_document, on_page
from devlint.flow_context import FlowContext, SyntaxHook
from devlint.notebook import (
    NOTEBOOK_SUFFIX,
    Notebook,
    NotebookError,
    Program,
    displayed_rows,
    parse_notebook,
    syntax_errors,
)
from devlint.positions import ranges_of
from devlint.rules import ALL_RULES, RULES_BY_CODE, FlowRule, Rule
from devlint.rules.discarded_device_move import DiscardedDeviceMove
from devlint.rules.unused_noqa import UNUSED_NOQA_CODE, UnusedNoqa
from devlint.suppression import Suppressions
from devlint.torch_floor import DEFAULT_STYLE, DeviceStyle
from devlint.traversal import Walker
from devlint.trusted_parse import parse_module

# Codes the engine reports itself rather than through a rule's visit hooks.
_ENGINE_CODES = frozenset({PARSE_ERROR_CODE, UNUSED_NOQA_CODE})
_Hook = Callable[[cst.CSTNode], None]
_RuleHooks = dict[type, list[tuple[Rule, _Hook]]]
_FlowHooks = dict[type, list[tuple[Rule, SyntaxHook]]]


def _node_type(name: str, flow: bool) -> Optional[type]:
    """The class a ``visit_<name>`` hook is for, in LibCST or, for a flow rule, in CPython's tree
    (both dispatch on the exact class)."""
    found = getattr(ast if flow else cst, name, None)
    base = ast.AST if flow else cst.CSTNode
    return found if isinstance(found, type) and issubclass(found, base) else None


class RuleSet:
    """The enabled rules, built once per process and reused for every file."""

    def __init__(
        self,
        codes: Iterable[str],
        fixable: Optional[frozenset[str]] = None,
        style: DeviceStyle = DEFAULT_STYLE,
    ) -> None:
        selected = frozenset(codes)
        self.codes = selected
        self.fixable = fixable  # None: every rule's fixes are offered
        self.style = style  # how fixes write a device (the project's torch floor)
        self.rules: list[Rule] = [
            cls()
            for cls in ALL_RULES
            if cls.code in selected and cls.code not in _ENGINE_CODES and cls.applies_under(style)
        ]
        # The LibCST rules with a structural test on CPython's tree (see `Rule.may_fire_in_tree`).
        self.screening = frozenset(rule for rule in self.rules if rule.screens_tree())
        self._visit: _RuleHooks = {}
        self._leave: _RuleHooks = {}
        self._flow_visit: _FlowHooks = {}
        for rule in self.rules:
            flow = isinstance(rule, FlowRule)
            for attribute in sorted(dir(type(rule))):
                prefix, _, name = attribute.partition("_")
                node_type = _node_type(name, flow) if prefix in ("visit", "leave") else None
                if node_type is None:
                    continue
                assert not (flow and prefix == "leave"), "flow rules have visit hooks only"
                table: dict[type, list[tuple[Rule, Any]]] = (
                    self._flow_visit if flow else self._visit if prefix == "visit" else self._leave
                )
                table.setdefault(node_type, []).append((rule, getattr(rule, attribute)))

    def active(self, source: str) -> list[Rule]:
        """The rules whose cheap text test says they can fire on this source."""
        return [rule for rule in self.rules if rule.may_fire(source)]

    def may_fire(self, source: str) -> bool:
        """Cheap text test: can any enabled rule fire on this source at all?"""
        return any(rule.may_fire(source) for rule in self.rules)

    def screen(self, tree: ast.Module, source: str) -> Optional[SyntaxFacts]:
        """The structural facts that let the flow rules skip files and functions where they
        cannot fire; None runs them everywhere."""
        return syntax_facts(tree, source)

    def flow_hooks(
        self, context: FlowContext, active: Sequence[FlowRule], errors: list[InternalError]
    ) -> dict[type, SyntaxHook]:
        """The active flow rules' hooks, one call by node class of CPython's tree, guarded."""
        for rule in active:
            rule.begin_analysis(context)
        broken: set[str] = set()
        crashed = _crash_recorder(context.path, broken, errors)
        visit = _hooks_of(self._flow_visit, active)
        return {
            node_type: _chain(None, hooks, None, broken, crashed)
            for node_type, hooks in visit.items()
        }

    def walker(
        self, context: FileContext, active: Sequence[Rule], errors: list[InternalError]
    ) -> Walker:
        """One traversal running the shared analysis, then the active rules' hooks, per node."""
        for rule in active:
            rule.begin_file(context)
        broken: set[str] = set()
        crashed = _crash_recorder(context.path, broken, errors)
        visit, leave = _hooks_of(self._visit, active), _hooks_of(self._leave, active)
        enter_hooks: dict[type, _Hook] = {}
        leave_hooks: dict[type, _Hook] = {}
        # The analysis sees a node before the rules do, and leaves it after them.
        for node_type in TRACKED_TYPES | visit.keys():
            tracked = context.enter if node_type in TRACKED_TYPES else None
            hooks = visit.get(node_type, [])
            enter_hooks[node_type] = _chain(tracked, hooks, None, broken, crashed)
        for node_type in TRACKED_TYPES | leave.keys():
            tracked = context.leave if node_type in TRACKED_TYPES else None
            hooks = leave.get(node_type, [])
            leave_hooks[node_type] = _chain(None, hooks, tracked, broken, crashed)

        def around(node: cst.CSTNode, attribute: str, entering: bool) -> None:
            if entering:
                context.enter_attribute(node, attribute)
            else:
                context.leave_attribute(node, attribute)

        attributes = {
            node_type: (names, around) for node_type, names in GuardTracker.ATTRIBUTES.items()
        }
        return Walker(enter_hooks, leave_hooks, attributes)


def _hooks_of(
    table: dict[type, list[tuple[Rule, Any]]], active: Sequence[Rule]
) -> dict[type, list[tuple[Rule, Any]]]:
    """The hooks of the ``active`` rules only."""
    chosen = set(map(id, active))
    picked = {
        node_type: [(rule, hook) for rule, hook in hooks if id(rule) in chosen]
        for node_type, hooks in table.items()
    }
    return {node_type: hooks for node_type, hooks in picked.items() if hooks}


def _crash_recorder(
    path: str, broken: set[str], errors: list[InternalError]
) -> Callable[[Rule, Exception], None]:
    def crashed(rule: Rule, error: Exception) -> None:
        # A crash in one rule disables that rule for this file; the others go on.
        broken.add(rule.code)
        errors.append(InternalError(path, f"{rule.code} crashed: {_describe(error)}"))

    return crashed


def _chain(
    before: Optional[_Hook],
    hooks: list[tuple[Rule, Any]],
    after: Optional[_Hook],
    broken: set[str],
    crashed: Callable[[Rule, Exception], None],
) -> Any:
    """The analysis update and the rules' hooks for one node type, as one call."""
    if not hooks:
        only = before or after
        assert only is not None
        return only

    def run(node: Any) -> None:
        if before is not None:
            before(node)
        for rule, hook in hooks:
            if rule.code in broken:
                continue
            try:
                hook(node)
            except Exception as error:
                crashed(rule, error)
        if after is not None:
            after(node)

    return run


def _describe(error: BaseException) -> str:
    frame = traceback.extract_tb(error.__traceback__)[-1] if error.__traceback__ else None
    where = f" at {frame.filename}:{frame.lineno}" if frame else ""
    return f"{type(error).__name__}: {error}{where}"


@dataclass(frozen=True)
class Unreadable:
    message: str
    row: int = 1
    column: int = 1


def decode(data: bytes) -> Union[str, Unreadable]:
    """Source text, honouring a coding cookie and a BOM, or why it cannot be decoded."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        # Without a cookie, a bad byte on the first two lines fails here; decoding names the byte.
        problem = _decoding_problem(data, "utf-8")
        return problem or Unreadable(f"cannot decode: {error.msg}", error.lineno or 1)
    return _decoding_problem(data, encoding) or data.decode(encoding)


def _decoding_problem(data: bytes, encoding: str) -> Optional[Unreadable]:
    try:
        data.decode(encoding)
    except UnicodeDecodeError as error:
        row = data.count(b"\n", 0, error.start) + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        return Unreadable(
            f"not valid {encoding}: byte 0x{data[error.start]:02x} cannot be decoded", row, column
        )
    except LookupError:
        return Unreadable(f"unknown encoding {encoding!r} in the coding cookie")
    return None


def _parse(source: str) -> Union[cst.Module, Unreadable]:
    refusal = too_complex(source)
    if refusal is not None:
        return Unreadable(refusal.message, refusal.row, refusal.column)
    try:
        return parse_module(source)
    except cst.ParserSyntaxError as error:
        # CPython's parser names the problem and its place better when it rejects the file too.
        return _check_syntax(source) or Unreadable(
            f"syntax error: {error.message}", error.raw_line, error.raw_column + 1
        )
    except RecursionError:
        return Unreadable("cannot parse: expressions nested too deeply")
    except Exception as error:
        # The native parser has a few raw failure modes (NUL bytes among them).
        return Unreadable(f"cannot parse: {' '.join(str(error).split())[:200]}")


def _syntax_tree(source: str) -> Optional[ast.Module]:
    """CPython's tree of the source; None where CPython cannot parse it."""
    try:
        return parse_quietly(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _check_syntax(source: str) -> Optional[Unreadable]:
    """CPython's verdict on a source LibCST rejects: it names the problem and its place better."""
    try:
        parse_quietly(source)
    except SyntaxError as error:
        return Unreadable(f"syntax error: {error.msg}", error.lineno or 1, error.offset or 1)
    except (ValueError, RecursionError, MemoryError) as error:
        return Unreadable(f"cannot parse: {error}")
    return None


def _parse_error_finding(path: str, problem: Unreadable) -> Finding:
    rule = RULES_BY_CODE[PARSE_ERROR_CODE]
    start = Position(problem.row, problem.column)
    return Finding(path, rule.code, rule.name, problem.message, start, start, problem.row)


def unreadable_result(path: str, problem: Unreadable, rules: RuleSet) -> FileResult:
    """A file that cannot be read or decoded: one DEV000, unless it is not selected."""
    findings = [_parse_error_finding(path, problem)] if PARSE_ERROR_CODE in rules.codes else []
    return FileResult(path, findings)


def lint_source(path: str, data: bytes, rules: RuleSet) -> FileResult:
    """Lint one file's bytes with the enabled rules; never raises for bad input. A ``.ipynb``
    path is read as a Jupyter notebook. Rules left out of ``rules.fixable`` offer no fix. The
    result names the project files whose summaries the lint read (see
    :mod:`devlint.analysis.project`)."""
    result = _lint_any(path, data, rules)
    result.dependencies = take_dependencies(path)
    if rules.fixable is not None:
        result.findings = without_fixes(result.findings, rules.fixable)
    return result


def without_fixes(findings: list[Finding], fixable: frozenset[str]) -> list[Finding]:
    """The findings with the fixes of rules not in ``fixable`` taken away (Ruff's `unfixable`):
    never shown as fixable, never applied."""
    return [f if f.fix is None or f.code in fixable else replace(f, fix=None) for f in findings]


def _lint_any(path: str, data: bytes, rules: RuleSet) -> FileResult:
    if path.endswith(NOTEBOOK_SUFFIX):
        try:
            notebook = parse_notebook(data)
        except NotebookError as error:
            problem = Unreadable(error.message, error.row, error.column)
            return unreadable_result(path, problem, rules)
        return lint_notebook(path, notebook, rules)
    if is_document(path):
        return _lint_document(path, data, rules)
    with _collector_paused():
        return _lint_source(path, data, rules)


def _lint_document(path: str, data: bytes, rules: RuleSet) -> FileResult:
    """Lint the Python code blocks of a Markdown or reST page; positions are the page's own."""
    text = decode(data)
    if isinstance(text, Unreadable):
        return unreadable_result(path, text, rules)
    program = extract(text, path)
    with _collector_paused():
        result = _lint_text(path, program.source, rules)
    result.findings = [on_page(finding, program) for finding in result.findings]
    return result


# Rules that report a value thrown away: a cell's last expression is shown, not thrown away.
_THROWN_AWAY = frozenset({DiscardedDeviceMove.code})


def lint_notebook(path: str, notebook: Notebook, rules: RuleSet) -> FileResult:
    """Lint a notebook's code cells as one program; each finding names its cell. Where the
    program does not parse, each cell that is not Python on its own is one DEV000, and the
    others are linted without it (a tutorial's Python 2 `print` must not hide the rest)."""
    program = notebook.program()
    with _collector_paused():
        # CPython's parse, which the flow rules read anyway, says cheaply whether any cell is
        # broken; only then is each cell parsed alone.
        tree = _syntax_tree(program.source)
        broken = syntax_errors(notebook) if tree is None else {}
        if broken:
            program = notebook.program(frozenset(broken))
            tree = _syntax_tree(program.source)
        result = _lint_text(path, program.source, rules, program.cite, tree)
    shown = displayed_rows(program, tree) if tree is not None and result.findings else frozenset()
    result.findings = [
        program.in_cell(finding)
        for finding in result.findings
        if not (finding.code in _THROWN_AWAY and finding.start.row in shown)
    ]
    if broken and PARSE_ERROR_CODE in rules.codes:
        result.findings += [_cell_error(path, program, n, e) for n, e in broken.items()]
        result.findings.sort(key=Finding.sort_key)
    return result


def _cell_error(path: str, program: Program, number: int, error: SyntaxError) -> Finding:
    span = next(span for span in program.spans if span.number == number)
    row = span.first + (error.lineno or 1) - 1
    column = program.column(Position(row, error.offset or 1)).column
    problem = Unreadable(f"syntax error: {error.msg}", row, column)
    return replace(_parse_error_finding(path, problem), cell=number, cell_first_row=span.first)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """A parse allocates a million objects, and Python's cyclic collector would scan the growing
    tree again and again although none of it is garbage (trees are freed by reference counting,
    file by file): a sixth of the time. Paused for one file; it catches up after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _lint_source(path: str, data: bytes, rules: RuleSet) -> FileResult:
    oversized = too_large(data)
    if oversized is not None:
        return unreadable_result(path, Unreadable(oversized.message), rules)
    source = decode(data)
    if isinstance(source, Unreadable):
        return unreadable_result(path, source, rules)
    return _lint_text(path, source, rules)


def _lint_text(
    path: str,
    source: str,
    rules: RuleSet,
    cite: Callable[[int], str] = str,
    parsed: Optional[ast.Module] = None,
) -> FileResult:
    """Lint decoded source; ``cite`` words a row that a message names (a cell's row in a
    notebook); ``parsed`` is CPython's tree of the source where the caller has it."""
    result = FileResult(path)
    oversized = too_large(source.encode("utf-8")) if path.endswith(NOTEBOOK_SUFFIX) else None
    if oversized is not None:
        return unreadable_result(path, Unreadable(oversized.message), rules)
    active = rules.active(source)
    flow_rules = [rule for rule in active if isinstance(rule, FlowRule)]
    libcst_rules = [rule for rule in active if not isinstance(rule, FlowRule)]
    # CPython's tree serves the flow rules, the syntax check of files no other rule parses, and
    # the structural tests that may spare LibCST a file (where each LibCST rule has one).
    screening = any(rule in rules.screening for rule in libcst_rules)
    screened = bool(libcst_rules) and all(rule in rules.screening for rule in libcst_rules)
    wanted = flow_rules or not libcst_rules or screened
    syntax_tree = parsed or (_syntax_tree(source) if wanted else None)
    if syntax_tree is not None and screening:
        calls = call_facts(syntax_tree)
        libcst_rules = [rule for rule in libcst_rules if rule.may_fire_in_tree(calls, source)]
    facts = rules.screen(syntax_tree, source) if syntax_tree is not None and flow_rules else None
    # The project files the file imports, read once for the screen and the flow.
    project = (
        ProjectView.of(path, syntax_tree) if facts is not None and syntax_tree is not None else None
    )
    if facts is not None:
        facts = with_imported_cpu_sources(project, facts)
        flow_rules = [rule for rule in flow_rules if rule.may_fire_in(facts)]
    located: list[tuple[Finding, tuple[int, ...]]] = []
    if libcst_rules or syntax_tree is None:
        # LibCST parses what the other rules read, and decides where CPython objects (it may
        # know newer grammar than the running CPython).
        module = _parse(source)
        if isinstance(module, Unreadable):
            located.append((_parse_error_finding(path, module), (module.row,)))
            flow_rules = []
        elif libcst_rules:
            located = _run_rules(
                path, module, source, rules, libcst_rules, result.errors, syntax_tree, cite
            )
    if syntax_tree is not None and flow_rules:
        located += _run_flow_rules(
            path, syntax_tree, facts, project, source, rules, flow_rules, result.errors, cite
        )
    suppressions: Optional[Suppressions] = None  # the file's comments are tokenized once
    if UNUSED_NOQA_CODE in rules.codes and UnusedNoqa.may_fire(source):
        # After every rule ran, before suppression: which directive silenced something. Not
        # where the file did not parse or a rule crashed, since findings may be missing then.
        parsed_whole = not any(finding.code == PARSE_ERROR_CODE for finding, _ in located)
        if parsed_whole and not result.errors:
            used = [(finding.code, rows) for finding, rows in located]
            suppressions = Suppressions.scan(source)
            unused = UnusedNoqa.check(path, source, used, rules.codes, suppressions)
            located += [(finding, (finding.start.row,)) for finding in unused]
    if located:
        suppressions = suppressions or Suppressions.scan(source)
        result.findings = sorted(
            (
                finding
                for finding, rows in located
                if finding.code in rules.codes and not suppressions.suppresses(finding.code, rows)
            ),
            key=Finding.sort_key,
        )
    return result


# LibCST nests implicitly concatenated strings one level per piece, and visits recursively; files
# with thousands of pieces (pydoc's topics.py) are valid Python and must be linted.
_VISIT_RECURSION_LIMIT = 30_000


@contextmanager
def _deep_recursion() -> Iterator[None]:
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(max(previous, _VISIT_RECURSION_LIMIT))
    try:
        yield
    finally:
        sys.setrecursionlimit(previous)


def _run_rules(
    path: str,
    module: cst.Module,
    source: str,
    rules: RuleSet,
    active: Sequence[Rule],
    errors: list[InternalError],
    syntax_tree: Optional[ast.Module],
    cite: Callable[[int], str],
) -> list[tuple[Finding, tuple[int, ...]]]:
    """Findings of the ``active`` rules, each with the rows where a `# noqa` comment silences it
    (``syntax_tree``: CPython's parse of the source, where there is one already)."""
    context = FileContext(path, module, rules.style, source)
    try:
        with _deep_recursion():
            rules.walker(context, active, errors).walk(module)
            if not context.findings:
                return []
            wanted = [node for node in _nodes_of(context.findings) if isinstance(node, cst.CSTNode)]
            ranges = cast(Mapping[Node, CodeRange], ranges_of(module, source, wanted, syntax_tree))
    except RecursionError:
        errors.append(InternalError(path, "expressions nested too deeply to analyse"))
        return []
    finally:
        for rule in active:
            rule.end_file()  # the tree is then freed by reference counting, file by file
    return [_locate(path, raw, ranges, cite) for raw in context.findings]


def _run_flow_rules(
    path: str,
    tree: ast.Module,
    facts: Optional[SyntaxFacts],
    project: Optional[ProjectView],
    source: str,
    rules: RuleSet,
    active: Sequence[FlowRule],
    errors: list[InternalError],
    cite: Callable[[int], str],
) -> list[tuple[Finding, tuple[int, ...]]]:
    """Findings of the device-flow rules, which read CPython's tree."""
    text = SourceText(source)
    context = FlowContext(path, tree, text, facts, project)
    try:
        with _deep_recursion():
            context.run(rules.flow_hooks(context, active, errors))
    except RecursionError:
        errors.append(InternalError(path, "expressions nested too deeply to analyse"))
        return []
    finally:
        for rule in active:
            rule.end_file()
    ranges: dict[Node, CodeRange] = {
        node: text.range_of(node)
        for node in _nodes_of(context.findings)
        if isinstance(node, ast.AST)
    }
    return [_locate(path, raw, ranges, cite) for raw in context.findings]


def _nodes_of(findings: Sequence[RawFinding]) -> set[Node]:
    """Every node whose position the findings need."""
    nodes: set[Node] = set()
    for raw in findings:
        nodes.add(raw.node)
        nodes.update(raw.cited)
        if raw.statement is not None:
            nodes.add(raw.statement)
        for edit in raw.fix.edits if raw.fix is not None else ():
            nodes.update((edit.start, edit.end))
    return nodes


def _locate_fix(fix: RawFix, ranges: Mapping[Node, CodeRange]) -> Fix:
    edits: list[Edit] = []
    for edit in fix.edits:
        if edit.next_line:
            line = ranges[edit.start].end.line + 1
            edits.append(Edit(Position(line, 1), Position(line, 1), edit.content))
            continue
        first, last = ranges[edit.start], ranges[edit.end]
        start = first.start if edit.start_side == "start" else first.end
        end = last.start if edit.end_side == "start" else last.end
        edits.append(
            Edit(
                Position(start.line, start.column + 1),
                Position(end.line, end.column + 1),
                edit.content,
            )
        )
    return Fix(fix.applicability, fix.message, tuple(edits))


def _locate(
    path: str, raw: RawFinding, ranges: Mapping[Node, CodeRange], cite: Callable[[int], str]
) -> tuple[Finding, tuple[int, ...]]:
    where = ranges[raw.node]
    statement = ranges[raw.statement] if raw.statement is not None else where
    message = raw.message
    for index, cited in enumerate(raw.cited):
        message = message.replace(f"{{line{index}}}", cite(ranges[cited].start.line))
    finding = Finding(
        path=path,
        code=raw.code,
        name=raw.name,
        message=message,
        start=Position(where.start.line, where.start.column + 1),
        end=Position(where.end.line, where.end.column + 1),
        noqa_row=statement.end.line,
        fix=_locate_fix(raw.fix, ranges) if raw.fix is not None else None,
        cited=tuple(
            Position(ranges[node].start.line, ranges[node].start.column + 1) for node in raw.cited
        ),
    )
    # On a statement over several lines, a noqa comment on its first or last line counts too.
    rows = (where.start.line, where.end.line, statement.start.line, statement.end.line)
    return finding, rows
