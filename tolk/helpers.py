"""Flags read once from the environment, overridable in code, and small shared utilities.

Flags are read at the pipeline's edges (``SCACHE.value`` at the call site of a pass) and
passed inward; passes themselves never look at the environment.

    with Context(NO_MEMORY_PLANNER=1, DEBUG=2):
        t.realize()
"""

from __future__ import annotations

import contextlib
import operator
import gc
import os
import threading
from collections.abc import Iterator

import numpy as np


def getenv(name: str, default: int = 0) -> int:
    """The integer value of environment variable `name`, or `default` when unset or empty."""
    raw = os.environ.get(name, "")
    if raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"environment variable {name}={raw!r} is not an integer") from None


class _Overrides(threading.local):
    """A flag's `Context` overrides in this thread, innermost last (none: the class's ``()``)."""

    stack: list[int] | tuple[()] = ()


class Flag:
    """A named integer setting: environment value at import, then `Context` overrides.

    Invariant: `value` is the innermost active override of this thread, else the global value.
    """

    registry: dict[str, Flag] = {}

    def __init__(self, name: str, default: int, when_set: bool = False):
        """`when_set`: the flag is 1 when the environment variable is set at all (any value,
        0 and empty too), else `default`; otherwise its integer value."""
        self.name = name
        self.default = default
        self.global_value = (1 if name in os.environ else default) if when_set \
            else getenv(name, default)
        self._local = _Overrides()
        Flag.registry[name] = self

    @property
    def value(self) -> int:
        stack = self._local.stack
        return stack[-1] if stack else self.global_value

    def __bool__(self) -> bool:
        return bool(self.value)

    def __int__(self) -> int:
        return self.value

    def __repr__(self) -> str:
        return f"{self.name}={self.value}"


DEBUG = Flag("DEBUG", 0)
SCACHE = Flag("SCACHE", 1)
NO_MEMORY_PLANNER = Flag("NO_MEMORY_PLANNER", 0, when_set=True)  # (the spec: "when ... set")
CAPTURING = Flag("CAPTURING", 1)


@contextlib.contextmanager
def Context(**overrides: int) -> Iterator[None]:
    """Override flags for the duration of a `with` block, in this thread only."""
    flags = []
    for name, val in overrides.items():
        if name not in Flag.registry:
            raise ValueError(f"unknown flag {name!r}; known flags: {sorted(Flag.registry)}")
        try:  # an int, or its digits (as the environment spells it)
            value = int(val.strip()) if isinstance(val, str) else operator.index(val)
        except (TypeError, ValueError):
            raise TypeError(f"flag {name} takes an int, got {val!r}") from None
        flags.append((Flag.registry[name], value))
    for flag, val in flags:
        if not flag._local.stack:  # this thread's first override: a list of its own
            flag._local.stack = []
        flag._local.stack.append(val)
    try:
        yield
    finally:
        for flag, _ in flags:
            flag._local.stack.pop()


def prod(xs) -> int:
    """Product of an iterable of ints (1 for empty)."""
    out = 1
    for x in xs:
        out *= x
    return out


def sequence_depth(value) -> int:
    """How many axes numpy would give a nested list or tuple (read along its first entries,
    an array at the bottom adding its own); 0 for anything else but an array (its ndim)."""
    depth = 0
    while isinstance(value, (list, tuple)):
        depth += 1
        if not value:
            return depth
        value = value[0]
    return depth + value.ndim if hasattr(value, "ndim") and hasattr(value, "shape") else depth


def int_arg(value, what: str) -> int:
    """`value` as a Python int (numpy's integers too; bools refused, as numpy refuses them
    where it wants a count), else a TypeError naming `what`."""
    try:
        if isinstance(value, (bool, np.bool_)):
            raise TypeError
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an int, got {value!r}") from None


def real_arg(value, what: str, above_zero: bool = False) -> float:
    """`value` (a real number, not a bool) as a float that is >= 0 (> 0 with `above_zero`;
    nan fails both), else a TypeError or ValueError naming `what`."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer,
                                                                     np.floating)):
        raise TypeError(f"{what} must be a number, got {value!r}"[:200])
    value = float(value)
    if not (value > 0 if above_zero else value >= 0):
        raise ValueError(f"{what} must be {'> 0' if above_zero else '>= 0'}, got {value!r}")
    return value


def round_up(x: int, align: int) -> int:
    """`x` rounded up to a multiple of `align` (align ≥ 1)."""
    return (x + align - 1) // align * align


_gc_lock = threading.Lock()
_gc_paused = [0, False]  # [active pauses, whether the first pause turned the collector off]


class gc_paused:
    """Pause Python's cycle collector for a block: ``with gc_paused(): ...`` (nested and
    thread-safe).

    Scheduling allocates many small acyclic objects (UOps, tuples, dicts); each full pass of
    the cycle collector scans every live object, the whole graph included, so with it on the
    time to schedule grows faster than the graph. Garbage made meanwhile is collected after.
    (A class rather than a generator: it is entered on every realize, cache hits included.)"""

    __slots__ = ()

    def __enter__(self) -> None:
        with _gc_lock:
            if _gc_paused[0] == 0:
                _gc_paused[1] = gc.isenabled()
                gc.disable()
            _gc_paused[0] += 1

    def __exit__(self, *exc) -> None:
        with _gc_lock:
            _gc_paused[0] -= 1
            if _gc_paused[0] == 0 and _gc_paused[1]:
                gc.enable()
