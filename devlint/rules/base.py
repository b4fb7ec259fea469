"""The anatomy every rule shares: code, name, documentation, examples, and reporting."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Optional

import libcst as cst

if TYPE_CHECKING:
    from devlint.context import FileContext, RawFix


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

    def report(
        self,
        node: cst.CSTNode,
        message: str,
        cited: tuple[cst.CSTNode, ...] = (),
        fix: Optional[RawFix] = None,
    ) -> None:
        """Report ``node``; ``{line0}``, ``{line1}``... in the message become cited nodes' lines."""
        self.context.report(self.code, self.name, node, message, cited, fix)

    @classmethod
    def documentation(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or "")
