"""One file in, findings out: decode, prefilter, parse once, one visit of every enabled rule."""

from __future__ import annotations

import ast
import io
import sys
import tokenize
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Optional, Union

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from devlint.context import FileContext, RawFinding, RawFix
from devlint.diagnostics import (
    PARSE_ERROR_CODE,
    Edit,
    FileResult,
    Finding,
    Fix,
    InternalError,
    Position,
)
from devlint.rules import ALL_RULES, RULES_BY_CODE, Rule
from devlint.suppression import Suppressions

_Hook = Callable[[cst.CSTNode], None]


class RuleSet:
    """The enabled rules, built once per process and reused for every file."""

    def __init__(self, codes: Iterable[str]) -> None:
        selected = frozenset(codes)
        self.codes = selected
        self.rules: list[Rule] = [
            cls() for cls in ALL_RULES if cls.code in selected and cls.code != PARSE_ERROR_CODE
        ]
        self._visit: dict[str, list[tuple[Rule, _Hook]]] = {}
        self._leave: dict[str, list[tuple[Rule, _Hook]]] = {}
        for rule in self.rules:
            for attribute in sorted(dir(type(rule))):
                if attribute.startswith("visit_"):
                    table, node_type = self._visit, attribute[len("visit_") :]
                elif attribute.startswith("leave_"):
                    table, node_type = self._leave, attribute[len("leave_") :]
                else:
                    continue
                table.setdefault(node_type, []).append((rule, getattr(rule, attribute)))
        self._tokens = tuple(sorted({t for rule in self.rules for t in rule.trigger_tokens}))
        self._always_parse = any(not rule.trigger_tokens for rule in self.rules)

    def may_fire(self, source: str) -> bool:
        """Cheap text test: can any enabled rule fire on this source at all?"""
        return self._always_parse or any(token in source for token in self._tokens)

    def visitor(self, context: FileContext, errors: list[InternalError]) -> _BatchedVisitor:
        for rule in self.rules:
            rule.begin_file(context)
        return _BatchedVisitor(context, self._visit, self._leave, errors)


class _BatchedVisitor(cst.CSTVisitor):
    """Runs the shared analysis and then every rule's hooks, node by node, in one traversal."""

    def __init__(
        self,
        context: FileContext,
        visit: dict[str, list[tuple[Rule, _Hook]]],
        leave: dict[str, list[tuple[Rule, _Hook]]],
        errors: list[InternalError],
    ) -> None:
        self._context = context
        self._visit = visit
        self._leave = leave
        self._errors = errors
        self._broken: set[str] = set()

    def _dispatch(self, hooks: list[tuple[Rule, _Hook]], node: cst.CSTNode) -> None:
        for rule, hook in hooks:
            if rule.code in self._broken:
                continue
            try:
                hook(node)
            except Exception as error:
                # A crash in one rule disables that rule for this file; the others go on.
                self._broken.add(rule.code)
                self._errors.append(
                    InternalError(self._context.path, f"{rule.code} crashed: {_describe(error)}")
                )

    def on_visit(self, node: cst.CSTNode) -> bool:
        self._context.enter(node)
        hooks = self._visit.get(type(node).__name__)
        if hooks:
            self._dispatch(hooks, node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        hooks = self._leave.get(type(original_node).__name__)
        if hooks:
            self._dispatch(hooks, original_node)
        self._context.leave(original_node)

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        self._context.enter_attribute(node, attribute)

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        self._context.leave_attribute(original_node, attribute)


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
    try:
        return cst.parse_module(source)
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


def _check_syntax(source: str) -> Optional[Unreadable]:
    """Syntax check for files no rule needs to parse: CPython's parser, cheaper than LibCST's."""
    try:
        ast.parse(source)
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
    """Lint one file's bytes with the enabled rules; never raises for bad input."""
    result = FileResult(path)
    source = decode(data)
    if isinstance(source, Unreadable):
        return unreadable_result(path, source, rules)
    located: list[tuple[Finding, tuple[int, ...]]] = []
    if not rules.may_fire(source):
        # LibCST knows newer grammar than the running CPython: it decides when CPython objects.
        if _check_syntax(source) is not None:
            module = _parse(source)
            if isinstance(module, Unreadable):
                located.append((_parse_error_finding(path, module), (module.row,)))
    else:
        module = _parse(source)
        if isinstance(module, Unreadable):
            located.append((_parse_error_finding(path, module), (module.row,)))
        else:
            located = _run_rules(path, module, source, rules, result.errors)
    if located:
        suppressions = Suppressions.scan(source)
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
    path: str, module: cst.Module, source: str, rules: RuleSet, errors: list[InternalError]
) -> list[tuple[Finding, tuple[int, ...]]]:
    """Findings, each with the rows where a `# noqa` comment silences it."""
    context = FileContext(path, module, source)
    try:
        with _deep_recursion():
            module.visit(rules.visitor(context, errors))
            if not context.findings:
                return []
            ranges = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    except RecursionError:
        errors.append(InternalError(path, "expressions nested too deeply to analyse"))
        return []
    return [_locate(path, raw, ranges) for raw in context.findings]


def _locate_fix(fix: RawFix, ranges: Mapping[cst.CSTNode, CodeRange]) -> Fix:
    edits: list[Edit] = []
    for edit in fix.edits:
        where = ranges[edit.node]
        start = Position(where.start.line, where.start.column + 1)
        end = Position(where.end.line, where.end.column + 1)
        if edit.mode == "after":
            start = end
        elif edit.mode == "before":
            end = start
        edits.append(Edit(start, end, edit.content))
    return Fix(fix.applicability, fix.message, tuple(edits))


def _locate(
    path: str, raw: RawFinding, ranges: Mapping[cst.CSTNode, CodeRange]
) -> tuple[Finding, tuple[int, ...]]:
    where = ranges[raw.node]
    statement = ranges[raw.statement] if raw.statement is not None else where
    message = raw.message
    for index, cited in enumerate(raw.cited):
        message = message.replace(f"{{line{index}}}", str(ranges[cited].start.line))
    finding = Finding(
        path=path,
        code=raw.code,
        name=raw.name,
        message=message,
        start=Position(where.start.line, where.start.column + 1),
        end=Position(where.end.line, where.end.column + 1),
        noqa_row=statement.end.line,
        fix=_locate_fix(raw.fix, ranges) if raw.fix is not None else None,
    )
    # On a statement over several lines, a noqa comment on its first or last line counts too.
    rows = (where.start.line, where.end.line, statement.start.line, statement.end.line)
    return finding, rows
