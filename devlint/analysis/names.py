"""Which names in a file refer to which torch APIs.

Resolution follows imports and their aliases (``import torch as t``,
``from torch import cuda``, ``from torch.cuda import memory_cached as mc``).
It is purely syntactic, so it is cheap and deterministic: a dictionary filled
in source order, never a set iterated for output.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import Optional, Union

import libcst as cst

from devlint.analysis import syntax


def dotted_name(node: cst.BaseExpression) -> Optional[str]:
    """``a.b.c`` for a chain of names and attributes, else None."""
    parts: list[str] = []
    current: cst.BaseExpression = node
    # Exact types: LibCST's classes are final, and `isinstance` on them is slow (ABCMeta).
    while type(current) is cst.Attribute:
        parts.append(current.attr.value)
        current = current.value
    if type(current) is not cst.Name:
        return None
    parts.append(current.value)
    return ".".join(reversed(parts))


def _module_path(node: Union[cst.Attribute, cst.Name]) -> str:
    name = dotted_name(node)
    assert name is not None  # import targets are always dotted names
    return name


def names_imported_from(node: cst.ImportFrom) -> list[tuple[cst.ImportAlias, str]]:
    """Each name of an absolute `from module import a, b as c`, with its qualified name
    (`module.a`); none for a relative or a star import, which name no module of their own."""
    if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
        return []
    module = _module_path(node.module)
    return [(alias, f"{module}.{_module_path(alias.name)}") for alias in node.names]


class ImportMap:
    """Local names bound by imports, mapped to the fully qualified names they stand for."""

    def __init__(self) -> None:
        self._bindings: dict[str, str] = {}
        self._star_imported = False

    def add_import(self, node: cst.Import) -> None:
        for alias in node.names:
            module = _module_path(alias.name)
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self._bindings[alias.asname.name.value] = module
            else:
                top = module.split(".", 1)[0]
                self._bindings[top] = top

    def add_import_from(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            self._add_star_import()
        for alias, qualified in names_imported_from(node):
            local = _module_path(alias.name)
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            self._bindings[local] = qualified

    def _add_star_import(self) -> None:
        # `from models.common import *` where that module imports torch: code of this file
        # that writes `torch.load(...)` can only mean the torch package. Read, never written
        # by a fix: where the file itself never writes `torch`, that module may not export it.
        self._star_imported = True

    def add_statements(self, body: Iterable[cst.CSTNode]) -> None:
        """Record the imports among module-level statements, looking inside if/try/with."""
        for statement in body:
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    if isinstance(small, cst.Import):
                        self.add_import(small)
                    elif isinstance(small, cst.ImportFrom):
                        self.add_import_from(small)
            elif isinstance(statement, (cst.If, cst.Try, cst.With)):
                self.add_statements(_nested_statements(statement))

    def add_syntax_import(self, node: Union[ast.Import, ast.ImportFrom]) -> None:
        """The same, from CPython's tree."""
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname is not None:
                    self._bindings[alias.asname] = alias.name
                else:
                    top = alias.name.split(".", 1)[0]
                    self._bindings[top] = top
        elif any(alias.name == "*" for alias in node.names):
            self._add_star_import()
        elif not node.level and node.module is not None:
            for alias in node.names:
                if alias.name != "*":
                    self._bindings[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    def add_syntax_statements(self, body: Iterable[ast.stmt]) -> None:
        """Module-level imports in CPython's tree, looking inside if/try/with."""
        for statement in body:
            if isinstance(statement, (ast.Import, ast.ImportFrom)):
                self.add_syntax_import(statement)
            elif isinstance(statement, ast.If):
                self.add_syntax_statements([*statement.body, *statement.orelse])
            elif isinstance(statement, ast.Try):
                handlers = [inner for handler in statement.handlers for inner in handler.body]
                self.add_syntax_statements([*statement.body, *handlers, *statement.orelse])
            elif isinstance(statement, ast.With):
                self.add_syntax_statements(statement.body)

    def qualified_name(self, node: cst.BaseExpression) -> Optional[str]:
        """The qualified name ``node`` refers to, when it starts from an imported name."""
        return self.resolve(dotted_name(node))

    def qualified_syntax_name(self, node: ast.AST) -> Optional[str]:
        """The same for a node of CPython's tree."""
        return self.resolve(syntax.dotted_name(node))

    def resolve(self, dotted: Optional[str]) -> Optional[str]:
        """The qualified name a dotted name stands for, when it starts from an imported name."""
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        bound = self._bindings.get(head)
        if bound is None and head == "torch" and self._star_imported:
            bound = "torch"
        if bound is None:
            return None
        return f"{bound}.{rest}" if rest else bound

    def local_name_for(self, qualified: str) -> Optional[str]:
        """The local name bound to exactly ``qualified``, if an import binds one."""
        for local, bound in self._bindings.items():
            if bound == qualified:
                return local
        return None


def _nested_statements(statement: cst.BaseCompoundStatement) -> list[cst.CSTNode]:
    blocks: list[cst.BaseSuite] = [statement.body]
    if isinstance(statement, cst.If) and isinstance(statement.orelse, cst.Else):
        blocks.append(statement.orelse.body)
    if isinstance(statement, cst.Try):
        blocks.extend(handler.body for handler in statement.handlers)
        if statement.orelse is not None:
            blocks.append(statement.orelse.body)
    statements: list[cst.CSTNode] = []
    for block in blocks:
        if isinstance(block, cst.IndentedBlock):
            statements.extend(block.body)
        elif isinstance(block, cst.SimpleStatementSuite):
            statements.append(cst.SimpleStatementLine(body=block.body))
    if isinstance(statement, cst.If) and isinstance(statement.orelse, cst.If):
        statements.append(statement.orelse)
    return statements
