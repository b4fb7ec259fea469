"""The anatomy every rule shares: code, name, documentation, examples, and reporting."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Optional

if TYPE_CHECKING:
    from devlint.analysis.call_screen import CallFacts
    from devlint.analysis.prefilter import TextTest
    from devlint.analysis.syntax_screen import SyntaxFacts
    from devlint.context import FileContext, FindingCollector, Node, RawFix
    from devlint.flow_context import FlowContext
    from devlint.torch_floor import DeviceStyle


@dataclass(frozen=True)
class Invalid:
    """A snippet the rule must flag once, at ``line`` and ``column`` (both 1-based)."""

    code: str
    line: int
    column: int
    message: str = ""  # a fragment the message must contain
    fixed: Optional[str] = None  # the whole snippet after `--fix --unsafe-fixes`, when it fixes


class Rule:
    """A lint rule. Subclasses define ``visit_<Node>``/``leave_<Node>`` methods.

    One instance serves every file a process lints; per-file state belongs in
    :meth:`begin_file`, which resets it.
    """

    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]  # one line, for `devlint rules`
    default_enabled: ClassVar[bool] = True
    fixable: ClassVar[bool] = False
    # A file none of these strings appear in cannot produce a finding, so it is never parsed.
    trigger_tokens: ClassVar[tuple[str, ...]] = ()
    # Further text tests, every one of which must match for a finding to be possible (a device
    # move, a tensor factory): where one fails the rule is skipped, and so perhaps the parse.
    required_patterns: ClassVar[tuple[TextTest, ...]] = ()
    # The project's torch floor the examples are linted under ("2.0"), for rules that read it.
    example_torch_floor: ClassVar[Optional[str]] = None
    VALID: ClassVar[tuple[str, ...]] = ()
    INVALID: ClassVar[tuple[Invalid, ...]] = ()

    def __init__(self) -> None:
        self._context: Optional[FileContext] = None

    @property
    def context(self) -> FileContext:
        assert self._context is not None, "begin_file() sets the context before any visit"
        return self._context

    def begin_file(self, context: FileContext) -> None:
        self._context = context

    def end_file(self) -> None:
        """Let go of the file, so that its tree is freed as soon as the engine is done with it."""
        self._context = None

    def report(
        self,
        node: Node,
        message: str,
        cited: tuple[Node, ...] = (),
        fix: Optional[RawFix] = None,
        statement: Optional[Node] = None,
    ) -> None:
        """Report ``node``; ``{line0}``, ``{line1}``... in the message become cited nodes' lines.
        ``statement``: the statement holding ``node`` (where `# noqa` goes), if not the one
        being visited."""
        self._collector().report(self.code, self.name, node, message, cited, fix, statement)

    def _collector(self) -> FindingCollector:
        return self.context

    @classmethod
    def may_fire(cls, source: str) -> bool:
        """Cheap text test: False only where the rule cannot fire on ``source``."""
        if cls.trigger_tokens and not any(token in source for token in cls.trigger_tokens):
            return False
        return all(pattern.search(source) for pattern in cls.required_patterns)

    @classmethod
    def may_fire_in_tree(cls, facts: CallFacts, source: str) -> bool:
        """Structural test on CPython's tree, after the text test: False only where the rule
        cannot fire. A LibCST rule that overrides it is skipped where it says False, and a file
        that no LibCST rule is left for is not parsed by LibCST at all."""
        return True

    @classmethod
    def screens_tree(cls) -> bool:
        """Whether the rule has a structural test of its own (see `may_fire_in_tree`)."""
        return cls.may_fire_in_tree.__func__ is not Rule.may_fire_in_tree.__func__  # type: ignore[attr-defined]

    @classmethod
    def applies_under(cls, style: DeviceStyle) -> bool:
        """False where the project's settings leave the rule nothing to check (a rule that
        reads the torch floor, where none is declared): it is not run at all."""
        return True

    @classmethod
    def documentation(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or "")


class FlowRule(Rule):
    """A device-flow rule: its ``visit_<Node>`` hooks take nodes of CPython's tree (``ast``),
    those the interpreter evaluated, and it reads the file through :attr:`analysis` rather
    than :attr:`Rule.context`."""

    def __init__(self) -> None:
        super().__init__()
        self._analysis: Optional[FlowContext] = None

    @property
    def analysis(self) -> FlowContext:
        assert self._analysis is not None, "begin_analysis() sets it before any visit"
        return self._analysis

    @classmethod
    def may_fire_in(cls, facts: SyntaxFacts) -> bool:
        """Structural test on CPython's tree, after the text test: False only where the rule
        cannot fire. Where every flow rule is False, the interpreter does not run."""
        return True

    def begin_analysis(self, analysis: FlowContext) -> None:
        self._analysis = analysis

    def end_file(self) -> None:
        self._analysis = None

    def _collector(self) -> FindingCollector:
        return self.analysis
