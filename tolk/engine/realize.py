"""Running linear schedules, and the capture hook the schedule module hands schedules to."""

from __future__ import annotations

import threading
import time

import numpy as np

from tolk.errors import ScheduleError
from tolk.helpers import DEBUG
from tolk.runtime.cpu import get_kernel
from tolk.runtime.device import typed_view
from tolk.uop.ops import Ops, UOp


class ThreadList(threading.local):
    """A list whose items belong to the calling thread (each thread sees only its own):
    ``append``, ``remove``, indexing, ``len``, truth, iteration, ``==`` with a list."""

    def __init__(self) -> None:
        self.items: list = []

    def append(self, item) -> None:
        self.items.append(item)

    def remove(self, item) -> None:
        self.items.remove(item)

    def __getitem__(self, i):
        return self.items[i]

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self):
        return iter(self.items)

    def __eq__(self, other: object) -> bool:
        return self.items == (other.items if isinstance(other, ThreadList) else other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self.items)


# Objects with an ``add_linear(linear, var_vals)`` method. While one is registered (and the
# CAPTURING flag is on), `tolk.schedule.create_linear_with_vars` hands every schedule to
# ``capturing[0]`` unplanned and returns an empty LINEAR instead of a schedule to run. Per
# thread, like the flags: a capture (`tolk.jit`) records the schedules of the thread that runs
# it, never another thread's realizes, and captures in two threads do not see each other.
capturing = ThreadList()

kernel_runs = [0]
# called after each call a schedule runs, ``hook(ast, args)``, while tensors are marked for
# gradients (`tolk.gradient` sets it: which marked values each written buffer came from)
after_call: list = []


def _device_of(arg: UOp) -> str:
    return arg.src[0].device if arg.op is Ops.SLICE else arg.device


def run_linear(linear: UOp, var_vals: dict[str, int] | None = None) -> None:
    """Execute the calls of a LINEAR in order.

    Buffer arguments are BUFFERs or SLICEs of arena BUFFERs (storage is allocated on first
    use); BIND arguments are skipped (kernels read variables from `var_vals`). A COPY call
    copies its second argument's bytes into its first. An error a kernel raises goes up with
    a note naming the kernel, `calls_done` (how many calls ran before it) and `call_failed`
    set on it; an exception between two calls (an interrupt) gets `calls_done` only.
    """
    if linear.op is not Ops.LINEAR:
        raise ScheduleError(f"run_linear needs a LINEAR, got {linear.short()}")
    var_vals = var_vals or {}
    with np.errstate(all="ignore"):  # numpy semantics: inf/nan results, no warnings
        _run_calls(linear, var_vals, DEBUG.value >= 2)


def _run_calls(linear: UOp, var_vals: dict[str, int], verbose: bool) -> None:
    # every buffer is bound (allocated) before the first kernel runs: an allocation failure
    # then leaves every buffer as it was, so the tensors keep their pending work
    bound = []
    for call in linear.src:
        args = [a for a in call.src[1:] if a.op is not Ops.BIND]
        for a in args:
            if a.op in (Ops.MSTACK, Ops.MSELECT, Ops.PARAM):
                raise ScheduleError(f"run_linear cannot bind {a.short()}: resolve it first")
        bound.append((call.src[0], args, [typed_view(a) for a in args]))
    done = 0  # calls that ran: set on any exception that leaves here, an interrupt between
    try:  # two calls too (what ran is then settled, not run again)
        for i, (ast, args, bufs) in enumerate(bound):
            start = time.perf_counter() if verbose else 0.0
            try:
                if ast.op is Ops.COPY:
                    dst, src = bufs
                    np.copyto(dst, src.view(dst.dtype))
                else:
                    get_kernel(ast, _device_of(args[0])).run(bufs, var_vals)
            except BaseException as e:
                name = getattr(ast.arg, "name", ast.op.name)
                e.add_note(f"raised by kernel {name!r}, call {i + 1} of {len(bound)} in its "
                           "schedule (the calls before it ran)")
                if isinstance(e, Exception):  # the kernel failed (an interrupt inside it, or
                    try:  # between two calls, fails none: that call stays pending)
                        e.call_failed = True
                    except AttributeError:
                        pass
                raise
            done = i + 1
            if after_call:
                after_call[0](ast, args)
            kernel_runs[0] += 1  # a statistic: an occasional lost count under threads is fine
            if verbose:
                name = getattr(ast.arg, "name", ast.op.name)
                nbytes = sum(a.arg[1] if a.op is Ops.SLICE else a.nbytes for a in args)
                print(f"  {name:<24s} args={len(args)} bytes={nbytes:>10d} "
                      f"{(time.perf_counter() - start) * 1e6:9.1f} us")
    except BaseException as e:
        try:
            e.calls_done = done
        except AttributeError:  # an exception type without attributes: not settled
            pass
        raise
