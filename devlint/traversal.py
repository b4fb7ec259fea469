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
LibCST rather than a copy of it. Fields whose declared type admits no code
(whitespace, comments, punctuation) are left out, and so are nodes with nothing
below them (names, literals) unless a hook asks for their type.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from dataclasses import fields
from typing import Callable, Optional, cast, get_args, get_origin, get_type_hints

import libcst as cst
from libcst._nodes import op as _op
from libcst._nodes import whitespace as _whitespace

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
_CONTAINER_KINDS: dict[type, int] = {tuple: _SEQUENCE, list: _SEQUENCE, type(None): _OTHER}
_VALUE_KINDS = dict(_CONTAINER_KINDS)


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


def _fields_of(node: cst.CSTNode) -> tuple[str, ...]:
    """The fields of ``node``'s type that can hold code, in LibCST's visiting order."""
    known = _FIELDS.get(type(node))
    if known is None:
        known = _FIELDS[type(node)] = _learn_fields(node)
    return known


def _learn_fields(node: cst.CSTNode) -> tuple[str, ...]:
    recorder = _FieldRecorder(node)
    node._visit_and_replace_children(recorder)
    names = recorder.names
    # A field LibCST skips when it is None on this node (an f-string's format_spec) comes last.
    names.extend(field.name for field in fields(node) if field.name not in names)
    code = _code_fields(type(node))
    return tuple(name for name in names if code is None or name in code)


def _code_fields(cls: type) -> Optional[frozenset[str]]:
    """Fields whose declared type admits a code node; None when the annotations do not resolve."""
    try:
        hints = get_type_hints(cls)
    except Exception:
        return None
    return frozenset(name for name, hint in hints.items() if any(map(_holds_code, _classes(hint))))


def _classes(hint: object) -> Iterator[object]:
    arguments = get_args(hint)
    if get_origin(hint) is None or not arguments:
        yield hint
    for argument in arguments:
        yield from _classes(argument)


def _holds_code(hint: object) -> bool:
    if isinstance(hint, type):
        return issubclass(hint, cst.CSTNode) and hint not in INERT_TYPES
    return not isinstance(hint, str)  # a Literal's value is no node; anything unexpected may be


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
    kinds = _VALUE_KINDS
    for name in _fields_of(node):
        value = getattr(node, name)
        kind = kinds.get(type(value))
        if kind is None:
            kind = _value_kind(value)
        if kind == _NODE:
            children.append(value)
        elif kind == _SEQUENCE:
            children.extend(child for child in value if type(child) not in INERT_TYPES)
    return children


def descendants(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``node`` and every node below it, in visiting order (whitespace and punctuation left out)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(child_nodes(current)))


NodeHook = Callable[[cst.CSTNode], object]
AttributeHook = Callable[[cst.CSTNode, str, bool], None]
# Per set of hooked types, what a walk does with a value of each class.
_WALK_KINDS: dict[frozenset[type], dict[type, int]] = {}


class Walker:
    """Fires hooks on a tree, in LibCST's order: per node type, one on entering (returning False
    skips the children) and one on leaving; and around chosen attributes of chosen types, one
    called with ``True`` on the way in and ``False`` on the way out.

    Nodes below which no code can hold (names, literals) are not even entered unless hooked.
    """

    def __init__(
        self,
        enter: Mapping[type, NodeHook],
        leave: Mapping[type, NodeHook],
        attributes: Optional[Mapping[type, tuple[Collection[str], AttributeHook]]] = None,
    ) -> None:
        hooked = set(enter) | set(leave) | set(attributes or ())
        # A hook on whitespace or punctuation would need those nodes walked too.
        assert not hooked & INERT_TYPES, "hooks on whitespace or punctuation are not supported"
        self._enter = dict(enter)
        self._leave = dict(leave)
        self._attributes = dict(attributes or {})
        self._hooked = frozenset(hooked)
        # What to do with a value of each class, for these hooks: shared by walkers alike.
        self._kinds = _WALK_KINDS.setdefault(self._hooked, dict(_CONTAINER_KINDS))

    def _kind(self, value: object) -> int:
        """Like `_value_kind`, but a node below which no code can hold is not worth entering
        unless a hook wants it."""
        kind = _value_kind(value)
        cls = type(value)
        if kind == _NODE and cls not in self._hooked and not _fields_of(cast(cst.CSTNode, value)):
            kind = _OTHER  # a name or a literal, say: nothing below it to visit
        self._kinds[cls] = kind
        return kind

    def walk(self, root: cst.CSTNode) -> None:
        enter, leave, attributes, kinds = self._enter, self._leave, self._attributes, self._kinds
        known_fields, kind_of = _FIELDS, self._kind

        def visit(node: cst.CSTNode) -> None:
            cls = type(node)
            hook = enter.get(cls)
            if hook is None or hook(node) is not False:
                names = known_fields.get(cls)
                if names is None:
                    names = _fields_of(node)
                around = attributes.get(cls)
                for name in names:
                    value = getattr(node, name)
                    announced = around is not None and name in around[0]
                    if announced:
                        around[1](node, name, True)  # type: ignore[index]
                    kind = kinds.get(type(value))
                    if kind is None:
                        kind = kind_of(value)
                    if kind == _NODE:
                        visit(value)
                    elif kind == _SEQUENCE:
                        for child in value:
                            child_kind = kinds.get(type(child))
                            if child_kind is None:
                                child_kind = kind_of(child)
                            if child_kind == _NODE:
                                visit(child)
                    if announced:
                        around[1](node, name, False)  # type: ignore[index]
            hook = leave.get(cls)
            if hook is not None:
                hook(node)

        try:
            visit(root)
        finally:
            # `visit` refers to itself: without this the cycle would keep every hook, and through
            # them the file's tree, alive until the cyclic garbage collector came round.
            visit = None  # type: ignore[assignment]


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
            # CSTVisitor defines a do-nothing hook for every type: only overrides count.
            inherited = getattr(cst.CSTVisitor, attribute, None) is getattr(cls, attribute)
            if node_type is not None and not inherited:
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
