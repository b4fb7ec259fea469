"""Read-only traversal of LibCST trees, in LibCST's visiting order, without rebuilding nodes.

``CSTNode.visit`` serves transformers too: for every node it calls
``_visit_and_replace_children``, which constructs and validates a fresh copy of
the node even when the visitor only reads. On a real repository that
reconstruction, not the rules, was most of devlint's time. This module walks the
same nodes in the same order, firing the same ``visit_``/``leave_`` and
attribute events, but only reads fields.

Each node type's child fields, in visiting order, are learnt once per process
from LibCST itself (by recording which attributes its
``_visit_and_replace_children`` visits), so the order follows the installed
LibCST rather than a copy of it. Whitespace, comments and punctuation hold no
code, and none of devlint's hooks asks for them: they are skipped.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import fields
from typing import Callable, Optional

import libcst as cst
from libcst._nodes import op as _op
from libcst._nodes import whitespace as _whitespace

NodeHook = Callable[[cst.CSTNode], object]
AttributeHook = Callable[[cst.CSTNode, str], None]

# Tokens without code inside them: whitespace, comments, operators, commas, brackets.
INERT_TYPES: frozenset[type] = frozenset(
    cls
    for module in (_op, _whitespace)
    for cls in vars(module).values()
    if isinstance(cls, type) and issubclass(cls, cst.CSTNode)
) | {
    cst.LeftParen, cst.RightParen, cst.LeftSquareBracket, cst.RightSquareBracket,
    cst.LeftCurlyBrace, cst.RightCurlyBrace, cst.Asynchronous,
}  # fmt: skip

_FIELDS: dict[type, tuple[str, ...]] = {}
# What a field's value is, by the value's class: a node, a sequence of nodes, or neither.
_NODE, _SEQUENCE, _OTHER = 1, 2, 0
_VALUE_KINDS: dict[type, int] = {tuple: _SEQUENCE, list: _SEQUENCE, type(None): _OTHER}


class _FieldRecorder(cst.CSTVisitor):
    """Notes the attributes LibCST visits on one node, without going below them."""

    def __init__(self, parent: cst.CSTNode) -> None:
        self.parent = parent
        self.names: list[str] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        return False

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        if node is self.parent and attribute not in self.names:
            self.names.append(attribute)


def _learn_fields(node: cst.CSTNode) -> tuple[str, ...]:
    recorder = _FieldRecorder(node)
    node._visit_and_replace_children(recorder)
    names = recorder.names
    # A field LibCST skips when it is None on this node (an f-string's format_spec) comes last.
    declared = [field.name for field in fields(node)]  # type: ignore[arg-type]
    names.extend(
        name for name in declared if name not in names and _may_hold_nodes(getattr(node, name))
    )
    learnt = _FIELDS[type(node)] = tuple(names)
    return learnt


def _may_hold_nodes(value: object) -> bool:
    return value is None or isinstance(value, (cst.CSTNode, tuple, list))


def _value_kind(value: object) -> int:
    cls = type(value)
    kind = _VALUE_KINDS.get(cls)
    if kind is None:
        if issubclass(cls, cst.CSTNode):
            kind = _OTHER if cls in INERT_TYPES else _NODE
        elif issubclass(cls, (tuple, list)):
            kind = _SEQUENCE
        else:
            kind = _OTHER  # strings, MaybeSentinel, numbers
        _VALUE_KINDS[cls] = kind
    return kind


def child_nodes(node: cst.CSTNode) -> list[cst.CSTNode]:
    """``node.children`` in order, less whitespace and punctuation, without LibCST's copying."""
    children: list[cst.CSTNode] = []
    names = _FIELDS.get(type(node)) or _learn_fields(node)
    kinds = _VALUE_KINDS
    for name in names:
        value = getattr(node, name)
        kind = kinds.get(type(value))
        if kind is None:
            kind = _value_kind(value)
        if kind == _NODE:
            children.append(value)
        elif kind == _SEQUENCE:
            for child in value:
                if type(child) not in INERT_TYPES:
                    children.append(child)
    return children


def descendants(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``node`` and every node below it, in visiting order (whitespace and punctuation left out)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(child_nodes(current)))


class Walker:
    """Fires hooks on a tree: per node type, a hook on entering, one on leaving, and one around
    each attribute (with ``True`` on the way in, ``False`` on the way out).

    A node type with no hook at all costs a dictionary lookup and the walk below it.
    """

    def __init__(
        self,
        enter: Mapping[type, NodeHook],
        leave: Mapping[type, NodeHook],
        attribute: Optional[Mapping[type, Callable[[cst.CSTNode, str, bool], None]]] = None,
    ) -> None:
        hooked = set(enter) | set(leave) | set(attribute or ())
        # A hook on whitespace or punctuation would need those nodes walked too.
        assert not hooked & INERT_TYPES, "hooks on whitespace or punctuation are not supported"
        self._enter = dict(enter)
        self._leave = dict(leave)
        self._attribute = dict(attribute or {})

    def walk(self, root: cst.CSTNode) -> None:
        enter, leave, around = self._enter, self._leave, self._attribute
        known_fields, kinds, inert = _FIELDS, _VALUE_KINDS, INERT_TYPES

        def visit(node: cst.CSTNode) -> None:
            cls = type(node)
            hook = enter.get(cls)
            if hook is None or hook(node) is not False:
                names = known_fields.get(cls) or _learn_fields(node)
                attribute_hook = around.get(cls)
                for name in names:
                    value = getattr(node, name)
                    if attribute_hook is not None:
                        attribute_hook(node, name, True)
                    kind = kinds.get(type(value))
                    if kind is None:
                        kind = _value_kind(value)
                    if kind == _NODE:
                        visit(value)
                    elif kind == _SEQUENCE:
                        for child in value:
                            if type(child) not in inert:
                                visit(child)
                    if attribute_hook is not None:
                        attribute_hook(node, name, False)
            hook = leave.get(cls)
            if hook is not None:
                hook(node)

        visit(root)


def _node_type(name: str) -> Optional[type]:
    found = getattr(cst, name, None)
    if isinstance(found, type) and issubclass(found, cst.CSTNode) and found not in INERT_TYPES:
        return found
    return None


# Per visitor class: its (node type, method name) pairs for entering and for leaving.
_VISITOR_METHODS: dict[type, tuple[list[tuple[type, str]], list[tuple[type, str]]]] = {}


def _visitor_methods(cls: type) -> tuple[list[tuple[type, str]], list[tuple[type, str]]]:
    known = _VISITOR_METHODS.get(cls)
    if known is None:
        enter: list[tuple[type, str]] = []
        leave: list[tuple[type, str]] = []
        for attribute in dir(cls):
            prefix, _, name = attribute.partition("_")
            node_type = _node_type(name) if prefix in ("visit", "leave") else None
            if node_type is not None:
                (enter if prefix == "visit" else leave).append((node_type, attribute))
        known = _VISITOR_METHODS[cls] = (enter, leave)
    return known


def visit(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """``node.visit(visitor)`` for a read-only visitor whose hooks are ``visit_X``/``leave_X``
    methods on code nodes: the same calls in the same order, at a fraction of the cost.
    ``visit_X`` returning False skips the node's children, as in LibCST."""
    enter, leave = _visitor_methods(type(visitor))
    Walker(
        {node_type: getattr(visitor, name) for node_type, name in enter},
        {node_type: getattr(visitor, name) for node_type, name in leave},
    ).walk(node)
