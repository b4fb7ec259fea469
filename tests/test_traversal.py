"""The fast traversal fires exactly the events LibCST's own visitor fires, in the same order."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Iterator
from pathlib import Path

import libcst as cst
import pytest

from devlint.analysis.guards import GuardTracker
from devlint.traversal import INERT_TYPES, Walker, child_nodes, descendants, visit

from .helpers import FIXTURES, REPO_ROOT

Event = tuple[str, str, int]

# Syntax LibCST knows, in the shapes that exercise optional and conditional fields.
SYNTAX = textwrap.dedent(
    '''
    """Docstring."""
    from __future__ import annotations
    import os.path as osp, sys
    from . import sibling
    from ..pkg import (a as b, c)
    from torch import *
    x: int = 1; y = z = [1, *rest]
    x += 2
    del x[0], y
    global_ = {"k": v for k, v in items if k} | {**other}
    s = f"{x!r:>{width}} {y=} {'nested' + f'{z:{w}}'}" "implicit" 'concat'
    b = rb"bytes" + b'more'
    @decorator(arg)
    @other.attr
    async def coroutine(a, /, b: int = 2, *args, c, d=3, **kwargs) -> list[int]:
        global g
        nonlocal_ = lambda p, *q, r=1: p if q else r
        async with ctx() as (m, n), other:
            await thing
        async for i in aiter():
            yield i
        return (yield from gen())
    class C(Base, metaclass=Meta):
        attr = 1
        def method(self):
            while cond:
                if a and not b or c:
                    continue
                elif (d := e) is not None:
                    break
                else:
                    pass
            else:
                raise ValueError("x") from None
            try:
                pass
            except (TypeError, KeyError) as error:
                pass
            except Exception:
                pass
            else:
                pass
            finally:
                pass
            assert x, "message"
            print(*args, sep="", **kwargs)[1:2, ::3, ...]
            return -x ** 2 @ y // z % w << 1 >> 2 & 3 | 4 ^ ~5
    match command:
        case [x, *rest] if x > 0:
            pass
        case {"key": value, **others}:
            pass
        case Point(x=0, y=yy) | None:
            pass
        case _:
            pass
    '''
)


def _corpus() -> Iterator[Path]:
    for folder in (REPO_ROOT / "devlint", FIXTURES):
        yield from sorted(folder.rglob("*.py"))
    try:
        import torch
    except ImportError:
        return
    nn = Path(os.path.dirname(torch.__file__)) / "nn" / "modules"
    yield from sorted(nn.glob("*.py"))[:12]


def _libcst_events(module: cst.Module) -> list[Event]:
    events: list[Event] = []
    announced = GuardTracker.ATTRIBUTES

    class Recorder(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if type(node) not in INERT_TYPES:
                events.append(("enter", type(node).__name__, id(node)))
            return True

        def on_leave(self, original_node: cst.CSTNode) -> None:
            if type(original_node) not in INERT_TYPES:
                events.append(("leave", type(original_node).__name__, id(original_node)))

        def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
            if attribute in announced.get(type(node), ()):
                events.append((f"enter {attribute}", type(node).__name__, id(node)))

        def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
            if attribute in announced.get(type(original_node), ()):
                name = type(original_node).__name__
                events.append((f"leave {attribute}", name, id(original_node)))

    module.visit(Recorder())
    return events


def _walker_events(module: cst.Module) -> list[Event]:
    events: list[Event] = []
    every_type = {
        cls
        for cls in vars(cst).values()
        if isinstance(cls, type) and issubclass(cls, cst.CSTNode) and cls not in INERT_TYPES
    }

    def enter(node: cst.CSTNode) -> None:
        events.append(("enter", type(node).__name__, id(node)))

    def leave(node: cst.CSTNode) -> None:
        events.append(("leave", type(node).__name__, id(node)))

    def around(node: cst.CSTNode, attribute: str, entering: bool) -> None:
        side = "enter" if entering else "leave"
        events.append((f"{side} {attribute}", type(node).__name__, id(node)))

    attributes = {cls: (names, around) for cls, names in GuardTracker.ATTRIBUTES.items()}
    Walker(dict.fromkeys(every_type, enter), dict.fromkeys(every_type, leave), attributes).walk(
        module
    )
    return events


@pytest.mark.parametrize("source", [SYNTAX], ids=["syntax"])
def test_events_match_libcst_on_every_syntax(source: str) -> None:
    module = cst.parse_module(source)
    assert _walker_events(module) == _libcst_events(module)


def test_events_match_libcst_on_real_code() -> None:
    checked = 0
    for path in _corpus():
        try:
            module = cst.parse_module(path.read_bytes())
        except cst.ParserSyntaxError:
            continue  # fixtures with syntax errors on purpose
        assert _walker_events(module) == _libcst_events(module), path
        checked += 1
    assert checked > 20


def test_child_nodes_are_libcst_children_without_whitespace() -> None:
    module = cst.parse_module(SYNTAX)
    for node in descendants(module):
        expected = [child for child in node.children if type(child) not in INERT_TYPES]
        assert child_nodes(node) == expected, type(node).__name__


def test_visit_calls_a_visitors_methods_in_order_and_honours_false() -> None:
    module = cst.parse_module("def f():\n    g(h(1))\nclass C:\n    def m(self):\n        k()\n")
    calls: list[str] = []

    class Names(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            calls.append(f"call {cst.Module([]).code_for_node(node.func)}")

        def leave_Call(self, original_node: cst.Call) -> None:
            calls.append("leave call")

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            return False  # nothing inside a class

    expected: list[str] = []

    class Reference(Names):
        def visit_Call(self, node: cst.Call) -> None:
            expected.append(f"call {cst.Module([]).code_for_node(node.func)}")

        def leave_Call(self, original_node: cst.Call) -> None:
            expected.append("leave call")

    visit(module, Names())
    module.visit(Reference())
    assert calls == expected == ["call g", "call h", "leave call", "leave call"]
