"""What names and ``self`` attributes are bound to, in the scope being visited.

Bindings are recorded in source order during the single traversal, so a rule
asking about a name sees its latest assignment above the current line (in the
current function, then the module). ``self.x`` attributes are recorded per
class, across all of its methods.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Union

import libcst as cst

from devlint.analysis.names import ImportMap, dotted_name
from devlint.traversal import visit


@dataclass(frozen=True)
class Binding:
    """The latest value (or annotation, for a parameter) bound to a name."""

    value: Optional[cst.BaseExpression] = None
    annotation: Optional[cst.BaseExpression] = None


@dataclass
class ClassInfo:
    name: str
    bases: tuple[str, ...]  # qualified where imported, else as written
    attributes: dict[str, Binding] = field(default_factory=dict)


@dataclass
class _Scope:
    node: Union[cst.Module, cst.FunctionDef, cst.ClassDef, cst.Lambda]
    bindings: dict[str, Binding] = field(default_factory=dict)


# The node types `ScopeTracker.enter` and `leave` react to (LibCST's classes are final).
_SCOPE_TYPES = frozenset(
    {cst.Module, cst.ClassDef, cst.FunctionDef, cst.Lambda, cst.Assign, cst.AnnAssign}
)


class ScopeTracker:
    def __init__(self, names: ImportMap) -> None:
        self._names = names
        self._scopes: list[_Scope] = []
        self._classes: list[ClassInfo] = []
        self.classes_by_name: dict[str, ClassInfo] = {}
        self._local_names: dict[int, set[str]] = {}

    def enter(self, node: cst.CSTNode) -> None:
        if type(node) not in _SCOPE_TYPES:
            return  # most nodes: skip the chain of (slow, ABCMeta) isinstance checks
        if isinstance(node, cst.Module):
            self._scopes.append(_Scope(node))
            # Classes are known before their first use, wherever a module-level one is defined.
            for statement in node.body:
                if isinstance(statement, cst.ClassDef):
                    self._class_info(statement)
        elif isinstance(node, cst.ClassDef):
            self._classes.append(self._class_info(node))
            self._scopes.append(_Scope(node))
        elif isinstance(node, (cst.FunctionDef, cst.Lambda)):
            scope = _Scope(node)
            for param in _parameters(node.params):
                annotation = param.annotation.annotation if param.annotation else None
                scope.bindings[param.name.value] = Binding(param.default, annotation)
            self._scopes.append(scope)

    def leave(self, node: cst.CSTNode) -> None:
        if type(node) not in _SCOPE_TYPES:
            return
        if isinstance(node, (cst.Module, cst.FunctionDef, cst.Lambda)):
            self._scopes.pop()
        elif isinstance(node, cst.ClassDef):
            self._scopes.pop()
            self._classes.pop()
        elif isinstance(node, cst.Assign):
            for target in node.targets:
                self._bind(target.target, Binding(node.value))
        elif isinstance(node, cst.AnnAssign):
            self._bind(node.target, Binding(node.value, node.annotation.annotation))

    def _class_info(self, node: cst.ClassDef) -> ClassInfo:
        info = self.classes_by_name.get(node.name.value)
        if info is None:
            info = ClassInfo(node.name.value, self._base_names(node))
            self.classes_by_name[info.name] = info
        return info

    def _base_names(self, node: cst.ClassDef) -> tuple[str, ...]:
        names: list[str] = []
        for base in node.bases:
            qualified = self._names.qualified_name(base.value) or dotted_name(base.value)
            if qualified is not None:
                names.append(qualified)
        return tuple(names)

    def _bind(self, target: cst.BaseExpression, binding: Binding) -> None:
        if isinstance(target, cst.Name):
            self._scopes[-1].bindings[target.value] = binding
            return
        dotted = dotted_name(target)
        if dotted is not None and dotted.startswith("self.") and self._classes:
            self._classes[-1].attributes[dotted[len("self.") :]] = binding
        elif dotted is not None:
            self._scopes[-1].bindings[dotted] = binding

    def lookup(self, expression: cst.BaseExpression) -> Optional[Binding]:
        """The binding of a name or ``self.attr`` seen so far, innermost scope first."""
        dotted = dotted_name(expression)
        if dotted is None:
            return None
        if dotted.startswith("self.") and self._classes:
            return self._classes[-1].attributes.get(dotted[len("self.") :])
        innermost, outermost = self._scopes[-1], self._scopes[0]
        return innermost.bindings.get(dotted) or outermost.bindings.get(dotted)

    def current_function(self) -> Optional[cst.FunctionDef]:
        for scope in reversed(self._scopes):
            if isinstance(scope.node, cst.FunctionDef):
                return scope.node
            if isinstance(scope.node, cst.ClassDef):
                return None
        return None

    def in_function(self) -> bool:
        return self.current_function() is not None

    def current_parameters(self) -> list[str]:
        function = self.current_function()
        return [] if function is None else [p.name.value for p in _parameters(function.params)]

    def binds_locally(self, name: str) -> bool:
        """Whether the current function binds ``name`` anywhere (then it is local throughout)."""
        function = self.current_function()
        if function is None:
            return False
        key = id(function)
        if key not in self._local_names:
            collector = _StoredNames()
            visit(function.body, collector)
            self._local_names[key] = collector.names
        return name in self._local_names[key] or name in self.current_parameters()

    def rebinds(self, name: str) -> bool:
        """Whether the current function (or, outside one, the module) binds ``name`` other than
        by a plain `name = value` (a loop or `with` target, an unpacking, `:=`, a `global`), or a
        function of the module rebinds it with `global`: its latest plain assignment above may
        not be what it holds."""
        module = self._scopes[0].node
        function = self.current_function()
        for owner in (function, module) if function is not None else (module,):
            key = -id(owner)
            if key not in self._local_names:
                collector = _StoredNames(plain=False)
                visit(owner, collector)
                self._local_names[key] = collector.names
            if name in self._local_names[key]:
                return True
        return False

    def current_class_sets(self, attribute: str) -> bool:
        """Whether the enclosing class assigns ``self.<attribute>`` or inherits Lightning's."""
        if not self._classes:
            return False
        info = self._classes[-1]
        return attribute in info.attributes or any("LightningModule" in b for b in info.bases)

    def current_class(self) -> Optional[ClassInfo]:
        """The innermost class around the node, if any (methods' nested functions included)."""
        return self._classes[-1] if self._classes else None

    def current_class_attribute(self, attribute: str) -> Optional[Binding]:
        """The value the enclosing class last assigned to ``self.<attribute>``, if seen yet."""
        return self._classes[-1].attributes.get(attribute) if self._classes else None

    def is_subclass_of(self, class_name: str, qualified_bases: frozenset[str]) -> bool:
        """Whether a class of this file derives from one of the bases (directly or not)."""
        seen: set[str] = set()
        pending = [class_name]
        while pending:
            info = self.classes_by_name.get(pending.pop())
            if info is None or info.name in seen:
                continue
            seen.add(info.name)
            for base in info.bases:
                if base in qualified_bases:
                    return True
                pending.append(base)
        return False


def _parameters(params: cst.Parameters) -> list[cst.Param]:
    collected = [*params.posonly_params, *params.params, *params.kwonly_params]
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            collected.append(star)
    return collected


class _StoredNames(cst.CSTVisitor):
    """Names a function body binds: assignments, loop and `with` targets, imports, defs; with
    ``plain`` False, all but plain `name = value` assignments, and the names of `global`."""

    def __init__(self, plain: bool = True) -> None:
        self.names: set[str] = set()
        self.plain = plain

    def _store(self, target: cst.CSTNode) -> None:
        if isinstance(target, cst.Name):
            self.names.add(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._store(element.value)
        elif isinstance(target, cst.StarredElement):
            self._store(target.value)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        if self.plain or not isinstance(node.target, cst.Name):
            self._store(node.target)

    def visit_Global(self, node: cst.Global) -> None:
        if not self.plain:
            self.names.update(item.name.value for item in node.names)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._store(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._store(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._store(node.target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._store(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._store(node.name)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._store(node.target)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.names.add(node.name.value)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.names.add(node.name.value)

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        if node.asname is None:
            self.names.add((dotted_name(node.name) or "").split(".")[0])
