"""Loops to a fixpoint: the state at a loop's head is the join of the state on entry and the
state at the end of every iteration, so a value moved at the end of one iteration is seen at the
start of the next.

The body is run without recording until the head's state is stable (or a bound is reached, at
which point what still changes becomes unknown), then once more, recording, from that state.
A name bound only inside the body holds, at the head, what the body's end leaves in it: the first
iteration cannot read it without a `NameError`, so every read at the head is a later iteration's.

The head's state joins every iteration, so where a name read in the body holds the head's value,
the first iteration read the value from before the loop: a CPU accumulator (`total =
torch.zeros(3)`, then `total = total + p` in the loop) meets the device there, even though from
the second iteration on it is on the device too. The operand rules read such a name as the
first iteration does (`first_values`). Conversely, a sum on the device that a branch of the body
resets with a tensor made on the CPU is on the CPU where the next iteration reads it
(`later_values`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from devlint.analysis.values import UNKNOWN, Value, join

if TYPE_CHECKING:
    from devlint.analysis.flow import DeviceFlow
    from devlint.analysis.units import Env

# Rounds without recording before the head's state is widened; nested loops get fewer, so a
# nest of loops stays linear in practice (a loop inside two others runs its body once).
_ROUNDS = (3, 2, 1)


@dataclass(frozen=True)
class PathCounts:
    """How far the analysis is from straight-line code: the branches it is inside (of an `if`,
    a conditional expression, an `except`), and how many branches so far left their block
    early (`continue`, `break`, `return`, `raise`). Equal counts mean the same straight path."""

    branches: int = 0
    exits: int = 0


@dataclass(frozen=True)
class LoopFrame:
    """A loop whose body is being run, recording, from its head's state."""

    head: Env
    entry: Env  # the state on entry: what the first iteration starts from
    start: PathCounts  # where the body started


def first_iteration_value(
    frames: list[LoopFrame], name: str, value: Value, now: PathCounts
) -> Optional[Value]:
    """What a read of ``name`` gives on the first iteration of the loops around it, where that
    is not the head's ``value``: `total = torch.zeros(3)` then `total = total + p` in a loop is
    on the CPU where the first iteration reads it, whatever later ones read. None where the name
    was assigned in the body before the read, was not bound before the loop, or where the first
    iteration may not reach the read (it is in a branch, or follows one that may leave)."""
    first = value
    for frame in reversed(frames):
        if now != frame.start or name not in frame.entry or frame.head.get(name) is not first:
            break
        first = frame.entry[name]
    return None if first is value else first


def later_iteration_value(
    frames: list[LoopFrame], name: str, value: Value, now: PathCounts
) -> Optional[Value]:
    """What a read of ``name`` gives on an iteration that follows one resetting it on the CPU
    (`total = torch.zeros(1)` in a branch of the body, after `total += loss` on the device
    began the body): the reset tensor. None where the read is not on the body's straight path
    from its start, the body assigned the name before it, or the reset comes from before the
    loop (a path that merely met the loop's entry, which no later iteration repeats). Known
    limit: the branch's condition is not weighed, so a reset that only a last iteration runs
    (`if step == steps - 1:`), or that a later branch with the same condition moves back,
    reads the same."""
    if not frames:
        return None
    frame = frames[-1]
    if now != frame.start or frame.head.get(name) is not value or value.reset is None:
        return None
    entered = frame.entry.get(name)
    if entered is None or entered.reset is value.reset or entered is value.reset:
        return None
    return value.reset


def loop_head(entry: Env, end: Optional[Env]) -> Env:
    """The state at the head of a loop: what holds on entry joined with what an iteration leaves."""
    if end is None:
        return dict(entry)
    head: Env = {}
    for key, value in entry.items():
        other = end.get(key)
        head[key] = value if value is other else UNKNOWN if other is None else join(value, other)
    for key in end.keys() - entry.keys():
        # An attribute may hold a value set where the analysis does not see; a name may not.
        head[key] = end[key] if "." not in key else UNKNOWN
    return head


def _widened(previous: Env, head: Env) -> Env:
    """After the last round: what still changes is unknown."""
    return {key: value if previous.get(key) == value else UNKNOWN for key, value in head.items()}


def run_to_fixpoint(flow: DeviceFlow, entry: Env, iteration: Callable[[Env], Optional[Env]]) -> Env:
    """The loop head's state. ``iteration`` runs the body once from a head state, in place, and
    returns the state at its end (None when no iteration reaches it)."""
    depth = flow.loop_depth
    rounds = _ROUNDS[min(depth, len(_ROUNDS) - 1)]
    recording, statement = flow.recording, flow.statement
    flow.recording = False
    flow.loop_depth += 1
    head = previous = dict(entry)
    try:
        for _ in range(rounds):
            body = dict(head)
            following = loop_head(entry, iteration(body))
            if following == head:
                return head
            previous, head = head, following
        return _widened(previous, head)
    finally:
        flow.recording, flow.statement = recording, statement
        flow.loop_depth -= 1
