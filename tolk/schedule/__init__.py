"""Tensor schedule linearization: tensor-level SINK graphs in, LINEAR schedules out.

    create_linear_with_vars(big_sink)
       lower_sink_to_linear(sink)         every tensor-level SINK, cached by key (SCACHE)
          get_kernel_graph(sink)          fusion: tensor graph -> kernel graph of AFTERs
          create_schedule(kernel graph)   dependencies -> FIFO topological order -> LINEAR
       resolve                            PARAM slots <- call args; nested LINEARs flattened
       var_vals                           the binds that scheduled kernels actually read
       capture, or memory_plan_rewrite    internal BUFFERs -> SLICEs of per-device arenas

    create_linear_for_program(key, ...)   a realize: the same for a SINK over concrete
                                          buffers, cached whole by a program_key (the SINK is
                                          built on a miss only); a hit binds the cached
                                          planned LINEAR to the buffers
    program_form(*roots)                  a realize's key without a walk of its graph: the
                                          nodes' forms (tolk.uop.form) and leaf links

This module is the Python implementation of the `tolk.schedule` API reference
(spec/tolk-schedule.txt); every public function documents its part of that contract.
"""

from __future__ import annotations

import operator
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from tolk.dtype import dtypes
from tolk.engine import realize as _realize  # its `capturing`, read at each call
from tolk.errors import CycleError, ScheduleError
from tolk.helpers import CAPTURING, DEBUG, NO_MEMORY_PLANNER, SCACHE
from tolk.schedule.memory import (
    LinearStats, buffers_of, check_buffer, linear_stats, map_join_leaves, memory_plan_rewrite,
    planned_stats,
)
from tolk.uop.form import AFTER, form_of, leaves
from tolk.uop.ops import (
    GroupOp, KernelInfo, Ops, UOp, fresh_internal_buffer_slot, node_cache, scratch_pass,
)
from tolk.uop.shape import syms_in

__all__ = [
    "fresh_internal_buffer_slot", "create_schedule", "lower_sink_to_linear",
    "memory_plan_rewrite", "create_linear_with_vars", "schedule_cache_clear",
    "schedule_cache_info", "ScheduleCacheInfo", "create_linear_for_sink",
    "create_linear_for_program", "program_key", "program_form", "program_by_form",
    "remember_program_form",
    "ProgramKey", "program_body", "program_params", "linear_stats", "LinearStats",
    "planned_stats", "program_stats", "ScheduleError",
]

# Nodes a kernel argument may be wrapped in; they change how a buffer is viewed, not which.
_WRAPPERS = GroupOp.Movement | {Ops.CAST, Ops.BITCAST}
_STATE_OPS = frozenset({Ops.AFTER, Ops.BUFFER, Ops.PARAM})
_JOIN_OPS = frozenset({Ops.MSELECT, Ops.MSTACK})
_ARG_OPS = _STATE_OPS | _JOIN_OPS | {Ops.BIND}


def _is_kernel_ast(u: UOp) -> bool:
    return u.op is Ops.SINK and isinstance(u.arg, KernelInfo)


def _enter_kernel_graph(u: UOp) -> bool:
    """Gate for walks of a kernel graph: never descend into kernel ASTs or LINEAR bodies."""
    return not (u.op is Ops.LINEAR or _is_kernel_ast(u))


def _unwrap(s: UOp) -> UOp:
    """What a kernel argument really is, under view and cast wrappers."""
    while s.op in _WRAPPERS:
        s = _wrapped(s)
    if s.op not in _ARG_OPS:
        raise ScheduleError(
            "a kernel argument must resolve to AFTER, BUFFER, PARAM, MSELECT, MSTACK or BIND, "
            f"got {s.short()}"
        )
    return s


def _wrapped(s: UOp) -> UOp:
    """The node a view or cast wrapper wraps (its src[0]); ScheduleError when it has none."""
    if not s.src:
        raise ScheduleError(f"a {s.op.name} wraps nothing (no source): {s.short()}")
    return s.src[0]


def _after_state(after: UOp) -> UOp:
    """The state an AFTER supersedes (its src[0]) under view and cast wrappers: a state or a
    join of states, else a ScheduleError naming the AFTER."""
    s = after.src[0]
    while s.op in _WRAPPERS:
        s = _wrapped(s)
    if s.op not in _STATE_OPS and s.op not in _JOIN_OPS:
        raise ScheduleError(f"the state an AFTER supersedes (its first source) must resolve to "
                            f"AFTER, BUFFER, PARAM, MSELECT or MSTACK, got {s.short()} in "
                            f"{after.short()}")
    return s


def _kernel_arg(fn: Callable[..., Any], arg: UOp, kernel: UOp, *rest: Any) -> Any:
    """``fn(arg, *rest)`` for an argument (or an END's ordering source) of `kernel`: a
    ScheduleError it raises names the kernel too."""
    try:
        return fn(arg, *rest)
    except ScheduleError as e:
        where = "an ordering source" if kernel.op is Ops.END and arg in kernel.src[1:] \
            else "an argument"
        raise ScheduleError(f"{e}, as {where} of {describe_kernel(kernel)}") from None


def _states(arg: UOp) -> list[UOp]:
    """The buffer states (AFTER | BUFFER | PARAM) an argument reads, each once; MSTACK/MSELECT
    join them (a BIND, also under a wrapper, is a value, no state). A node met again is not
    walked again (joins sharing their parts stay linear)."""
    if arg.op in _STATE_OPS:  # the common case: the argument is a state already
        return [arg]
    out: dict[UOp, None] = {}
    seen: set[UOp] = set()
    todo = [arg]
    while todo:
        s = todo.pop()
        if s in seen:
            continue
        seen.add(s)
        s = _unwrap(s)
        if s.op in (Ops.MSELECT, Ops.MSTACK):
            todo.extend(reversed(s.src))
        elif s.op is not Ops.BIND:
            out[s] = None
    return list(out)


def _split_after(after: UOp) -> tuple[list[UOp], list[UOp]]:
    """An AFTER's children past src[0]: (kernels writing the new state, ordering deps)."""
    kernels, deps = [], []
    for c in after.src[1:]:
        if c.op in (Ops.CALL, Ops.END):
            kernels.append(c)
        elif c.op is Ops.AFTER:
            deps.append(c)
        elif c.op is not Ops.STORE:
            raise ScheduleError(
                f"an AFTER's children must be CALL, END, AFTER or STORE, got {c.short()} "
                f"under AFTER of {after.src[0].short()}"
            )
    return kernels, deps


def _storage(arg: UOp, base: list[UOp | None]) -> UOp:
    """The storage a kernel argument lives in: BUFFER, PARAM, or MSTACK/MSELECT of them.

    Every AFTER it reaches has been met by the running `create_schedule` pass, which numbered
    the AFTER's state in its scratch and keeps the state's storage in `base` by that number
    (`_schedule_pass`); joins are rebuilt over the storage of their parts, bottom up without
    recursion."""
    s = _unwrap(arg)
    if s.op is Ops.AFTER:
        return base[s._scratch]
    if s.op is not Ops.MSTACK and s.op is not Ops.MSELECT:
        return s
    out: dict[UOp, UOp] = {}
    for n in s.toposort(enter=lambda n: n.op in _JOIN_OPS or n.op in _WRAPPERS):
        if n.op in _JOIN_OPS:
            out[n] = n.replace(src=tuple(out[x] for x in n.src))
        elif n.op in _WRAPPERS:
            out[n] = out[_wrapped(n)]
        elif n.op is Ops.AFTER:
            out[n] = base[n._scratch]
        else:
            out[n] = _unwrap(n)  # a state, or an argument of the wrong kind: raises
    return out[s]


def describe_kernel(k: UOp) -> str:
    """A kernel (CALL or END) named for an error message: its AST's name and its arguments."""
    call = k.src[0] if k.op is Ops.END and k.src else k
    body = call.src[0] if call.src else call
    name = body.arg.name if isinstance(body.arg, KernelInfo) else body.op.name
    return f"kernel {name!r} ({k.op.name} with {len(call.src) - 1} args)"


def _kernel_call(k: UOp) -> UOp:
    if k.op is Ops.END:
        if not k.src or k.src[0].op is not Ops.CALL:
            raise ScheduleError(f"END must wrap a CALL kernel, got {k.short()}")
        return k.src[0]
    return k


create_schedule_calls = [0]  # how many times create_schedule ran in this process


def create_schedule(sched_sink: UOp) -> UOp:
    """Order the kernels of a kernel graph into a LINEAR.

    `sched_sink` is the output of a `get_kernel_graph` pass: a SINK leading to AFTER nodes.
    For each reachable AFTER, children past src[0] are partitioned: CALL and END are kernels
    writing the new state, AFTER are ordering dependencies, STORE are ignored.
    Edges: read-after-write (a kernel runs after the producers of every state it reads or
    joins, and of its AFTER's ordering dependencies) and write-after-read (a reader of
    state S runs before the other kernels that write the state superseding S; kernels of a
    join already present in S are ordering, not writes). Ready kernels are emitted first
    come, first served (Kahn's algorithm with a FIFO queue), so the order is deterministic.

    Returns ``LINEAR(CALL(ast, *args), ...)`` with each buffer argument unwrapped to its
    storage (BUFFER, PARAM, or MSTACK/MSELECT of them); BIND arguments are kept.
    Raises `ScheduleError` (a `ValueError`) for an AFTER child or kernel argument of the
    wrong kind and for a dependency cycle, naming the node at fault. Callable from several
    threads at once (the passes take turns: see `tolk.uop.ops.scratch_pass`).
    """
    create_schedule_calls[0] += 1
    if not isinstance(sched_sink, UOp) or sched_sink.op not in (Ops.SINK, Ops.AFTER):
        got = sched_sink.short() if isinstance(sched_sink, UOp) else type(sched_sink).__name__
        raise ScheduleError(f"create_schedule needs a SINK of AFTERs (a kernel graph), got {got}")
    return scratch_pass(_schedule_pass, sched_sink)


def _schedule_pass(tok: object, sched_sink: UOp) -> UOp:
    """`create_schedule`'s pass, its scratch on the nodes (`scratch_pass`): on each node the
    walk enters, None; on a kernel, its number (first come, first numbered); on an AFTER, and
    on a BUFFER or PARAM read or overwritten, its state number. Kernels and states are numbered
    so what the pass keeps of them lives in dense lists, in walk order; a set of kernel numbers
    is None, one number, or a list of several (one kernel is the common case: no container)."""
    AFTER, BIND, BUFFER, CALL, PARAM = Ops.AFTER, Ops.BIND, Ops.BUFFER, Ops.CALL, Ops.PARAM
    LINEAR, SINK = Ops.LINEAR, Ops.SINK
    calls: list[UOp] = []  # by kernel number: the CALL the LINEAR emits for the kernel
    in_degree: list[int] = []
    children: list[int | list[int] | None] = []  # by kernel number: the kernels waiting for it
    # by state number (AFTERs, and BUFFERs and PARAMs read or overwritten):
    supersede: list[int | list[int] | None] = []  # the AFTERs superseding it
    writers: list[int | list[int] | None] = []  # an AFTER's new writers
    kernels: list[int | list[int] | None] = []  # an AFTER's kernels
    base: list[UOp | None] = []  # an AFTER's storage
    # (AFTER's state, kernel, a state it reads) per read, flat: no container per kernel
    reads: list[int] = []
    # by state number, for an AFTER with no kernel whose readers wait for more than the
    # kernels of the state it wraps (its AFTER dependencies'): those kernels
    waits: dict[int, list[int]] = {}
    # by state number, for an AFTER that writes nothing new (no kernel, or a join's kernels
    # only): the state(s) it supersedes, whose content it holds
    wraps: dict[int, int | list[int]] = {}
    # Every AFTER once, after everything it reaches: an iterative depth-first walk that does not
    # enter kernel ASTs or LINEAR bodies (nothing under them is a state of this graph); the
    # gate is `_enter_kernel_graph`, spelled out here because it runs once per node.
    sched_sink._mark, sched_sink._scratch = tok, None
    stack = [sched_sink]
    frames = [iter(sched_sink.src)]
    while frames:
        for s in frames[-1]:
            if s.src and s._mark is not tok:
                op = s.op
                if op is LINEAR or op is SINK and isinstance(s.arg, KernelInfo):
                    continue
                s._mark, s._scratch = tok, None
                stack.append(s)
                frames.append(iter(s.src))
                break
        else:
            frames.pop()
            u = stack.pop()
            if u.op is not AFTER:
                continue
            src = u.src
            if len(src) == 2 and src[1].op is CALL:  # the common case: one kernel, no deps
                ks, deps = (src[1],), None
            else:
                ks, deps = _split_after(u)
            nums: int | list[int] = []
            for k in ks:
                i = k._scratch
                if i is None:
                    i = k._scratch = len(in_degree)
                    in_degree.append(0)
                    children.append(None)
                nums.append(i)
            if len(nums) == 1:
                nums = nums[0]
            # the state this AFTER supersedes, and which of its kernels are new writers
            prev = src[0]
            if prev.op is not AFTER and prev.op is not BUFFER and prev.op is not PARAM:
                prev = _after_state(u)
            if prev.op is AFTER:
                p = prev._scratch
                new_writers = _new_writers(nums, kernels[p])
                storage = base[p]
            elif prev.op is BUFFER or prev.op is PARAM:
                new_writers, storage = nums, prev
                p = _state_number(prev, tok, supersede, writers, kernels, base)
            else:  # a join (MSTACK/MSELECT): the new state supersedes each state it holds
                p, new_writers = _join_superseded(prev, nums, tok, supersede, writers, kernels,
                                                  base)
                storage = _storage(prev, base)
            if not ks and not deps and p.__class__ is int:  # STORE children only: the
                u._scratch = p  # state it wraps, one state to its readers and overwriters
                if base[p] is None:
                    base[p] = storage
                continue
            me = u._scratch = len(supersede)
            if not ks:  # no kernel writes it: it holds what the state it wraps holds, after
                nums = _kernelless(p, deps, me, kernels, waits)  # its dependencies
            if new_writers.__class__ is list and not new_writers:
                wraps[me] = p
            supersede.append(None)
            writers.append(new_writers)
            kernels.append(nums)
            base.append(storage)
            if p.__class__ is int:  # one superseded state: the common case
                _add_number(supersede, p, me)
            else:
                for q in p:
                    _add_number(supersede, q, me)
            dep_states = [st for d in deps for st in _states(d)] if deps else None
            for k in ks:
                i = k._scratch
                call = k if k.op is CALL else _kernel_call(k)
                if not call.src:
                    raise ScheduleError(f"kernel {call.short()} of {u.short()} has no AST: a "
                                        f"kernel is CALL(ast, *args)")
                args: list[UOp] = []  # the call's arguments unwrapped to their storage
                after: list[UOp] = []  # the AFTERs among the states it reads
                unwrapped = False  # whether an argument is not its own storage
                for a in call.src[1:]:
                    op = a.op
                    if op is AFTER:
                        st = a._scratch
                        reads += (me, i, st)
                        args.append(base[st])
                        after.append(a)
                        unwrapped = True
                    elif op is BUFFER or op is PARAM:
                        reads += (me, i, _state_number(a, tok, supersede, writers, kernels, base))
                        args.append(a)
                    elif op is BIND:
                        args.append(a)
                    else:
                        for st in _kernel_arg(_states, a, k):
                            if st.op is AFTER:
                                reads += (me, i, st._scratch)
                                after.append(st)
                            else:
                                reads += (me, i, _state_number(st, tok, supersede, writers,
                                                               kernels, base))
                        storage = _kernel_arg(_storage, a, k, base)
                        args.append(storage)
                        unwrapped = unwrapped or storage is not a
                if i == len(calls):  # built once, here, while its nodes are at hand; a call
                    # whose arguments are all storage already is the node it would build
                    calls.append(UOp(CALL, call.dtype, (call.src[0], *args), call.arg)
                                 if unwrapped else call)
                if dep_states:
                    after += dep_states
                if k.op is not CALL:  # END: its extra sources are ordering too
                    after += [st for x in k.src[1:] for st in _kernel_arg(_states, x, k)]
                n = 0
                for st in after:
                    if st.op is AFTER:  # read-after-write
                        ts = kernels[st._scratch]
                        if ts.__class__ is int:
                            _add_number(children, ts, i)
                            n += 1
                        elif ts is not None:  # (None: a buffer's own state, under a wrapper)
                            for t in ts:
                                _add_number(children, t, i)
                            n += len(ts)
                        if waits and st._scratch in waits:
                            for t in waits[st._scratch]:
                                _add_number(children, t, i)
                            n += len(waits[st._scratch])
                in_degree[i] += n
    it = iter(reads)
    for me, i, s in zip(it, it, it):  # write-after-read
        sup = supersede[s]
        if sup is None or sup == me:
            continue
        for a in (sup,) if sup.__class__ is int else sup:
            if a == me:
                continue
            ws = writers[a]
            if ws.__class__ is list and not ws:  # it writes nothing new (no kernel, or only
                ws = _next_writers(a, me, supersede, writers)  # the join's): what does next
            for t in (ws,) if ws.__class__ is int else ws:
                if t != i:
                    _add_number(children, i, t)
                    in_degree[t] += 1
    if wraps:  # a reader of an AFTER that writes nothing new reads what that AFTER holds
        _war_through_wrappers(reads, wraps, waits, supersede, writers, children, in_degree)
    order = _linearize(children, in_degree)
    if len(order) < len(calls):
        k = calls[_on_cycle(children, in_degree)]
        raise CycleError(f"dependency cycle in the kernel graph through {describe_kernel(k)}")
    return UOp(Ops.LINEAR, src=tuple(map(calls.__getitem__, order)))


def _kernelless(p: int | list[int], deps: list[UOp] | None, me: int, kernels: list,
                waits: dict[int, list[int]]) -> list[int]:
    """For an AFTER with no kernel superseding state(s) `p` (a join, or one state with AFTER
    dependencies; one with STORE children only is the state it wraps): its kernels, those of
    the states it wraps (what a reader of it waits for); the kernels of its AFTER dependencies
    (and what those wait for) go to ``waits[me]``."""
    held: list[int] = []
    for q in (p,) if p.__class__ is int else p:
        ks = kernels[q]
        if ks is not None:
            held += (ks,) if ks.__class__ is int else ks
        held += waits.get(q, ())
    wait: list[int] = []
    for st in [st for d in deps for st in _states(d)] if deps else ():
        if st.op is Ops.AFTER:
            ks = kernels[st._scratch]
            if ks is not None:  # (None: a buffer's own state under a STORE-only AFTER)
                wait += (ks,) if ks.__class__ is int else ks
            wait += waits.get(st._scratch, ())
    if wait:
        waits[me] = wait
    return held


def _war_through_wrappers(reads: list[int], wraps: dict[int, int | list[int]],
                          waits: dict[int, list[int]], supersede: list, writers: list,
                          children: list, in_degree: list) -> None:
    """Write-after-read edges for the readers of AFTERs that write nothing new (no kernel, or
    a join's kernels only): such an AFTER holds the states it supersedes, so its readers run
    before the other kernels that overwrite those (the ones it waits for left out: they run
    first), through chains of such AFTERs."""
    it = iter(reads)
    for me, i, s in zip(it, it, it):
        if s not in wraps:
            continue
        todo, seen = [(s, frozenset(waits.get(s, ())))], {s}
        while todo:
            x, skip = todo.pop()
            held = wraps[x]
            for q in (held,) if held.__class__ is int else held:
                if q in wraps and q not in seen:
                    seen.add(q)
                    todo.append((q, skip | frozenset(waits.get(q, ()))))
                sup = supersede[q]
                for a in () if sup is None else (sup,) if sup.__class__ is int else sup:
                    if a == me or a == x:
                        continue
                    ws = writers[a]
                    if ws.__class__ is list and not ws:
                        ws = _next_writers(a, me, supersede, writers)
                    for t in (ws,) if ws.__class__ is int else ws:
                        if t != i and t not in skip:
                            _add_number(children, i, t)
                            in_degree[t] += 1


def _next_writers(a: int, me: int, supersede: list, writers: list) -> list[int]:
    """The kernels that next overwrite what state `a` holds, `a` writing nothing new itself:
    the new writers of the states superseding it, through any others that write nothing new
    either (the reader's own state `me` left out)."""
    out: list[int] = []
    todo, seen = [a], {a}
    while todo:
        sup = supersede[todo.pop()]
        for b in () if sup is None else (sup,) if sup.__class__ is int else sup:
            if b == me or b in seen:
                continue
            seen.add(b)
            ws = writers[b]
            if ws.__class__ is list and not ws:
                todo.append(b)
            else:
                out += (ws,) if ws.__class__ is int else ws
    return out


def _new_writers(nums: int | list[int], before: int | list[int]) -> int | list[int]:
    """The kernels of a join (`nums`) that were not already writers of the state it supersedes
    (`before`: that AFTER's kernels): those are ordering, not writes."""
    if before is None:  # (a buffer's own state, under a kernel-less wrapper: no writers)
        return nums
    old = (before,) if before.__class__ is int else before
    if nums.__class__ is int:
        return [] if nums in old else nums
    if any(w in old for w in nums):
        return [w for w in nums if w not in old]
    return nums


def _add_number(slots: list, at: int, n: int) -> None:
    """Add `n` to ``slots[at]``, which holds None, one number, or a list of several (a list of
    one for each of many kernels and states costs memory the pass then has to free)."""
    have = slots[at]
    if have is None:
        slots[at] = n
    elif have.__class__ is int:
        slots[at] = [have, n]
    else:
        have.append(n)


def _state_number(s: UOp, tok: object, supersede: list, writers: list, kernels: list,
                  base: list) -> int:
    """The number of BUFFER or PARAM state `s` in `create_schedule`'s pass `tok`, given (with
    a slot in each of the pass's lists by state) when first asked for."""
    if s._mark is not tok:
        s._mark, s._scratch = tok, None
    if s._scratch is None:
        s._scratch = len(supersede)
        supersede.append(None)
        writers.append(None)
        kernels.append(None)
        base.append(None)
    return s._scratch


def _join_superseded(join: UOp, nums: int | list[int], tok: object, supersede: list,
                     writers: list, kernels: list, base: list
                     ) -> tuple[list[int], int | list[int]]:
    """For an AFTER whose state is a join: the numbers of the states the join holds (each
    superseded by the AFTER) and which of the AFTER's kernels are new writers (those already
    among the kernels of an AFTER it holds are ordering)."""
    numbers, before = [], []
    for st in _states(join):
        if st.op is Ops.AFTER:
            numbers.append(st._scratch)
            ks = kernels[st._scratch]
            if ks is not None:
                before += (ks,) if ks.__class__ is int else ks
        else:
            numbers.append(_state_number(st, tok, supersede, writers, kernels, base))
    return numbers, _new_writers(nums, before) if before else nums


def _linearize(children: list[int | list[int] | None], in_degree: list[int]) -> list[int]:
    """Kahn's algorithm, FIFO among ready kernels: the kernel numbers in schedule order. The
    in-degrees are consumed: those left above zero are on or behind a cycle."""
    queue = deque(i for i, d in enumerate(in_degree) if d == 0)
    remaining = in_degree
    out: list[int] = []
    while queue:
        i = queue.popleft()
        out.append(i)
        c = children[i]
        if c is None:
            continue
        if c.__class__ is int:
            remaining[c] -= 1
            if remaining[c] == 0:
                queue.append(c)
            continue
        for j in c:
            remaining[j] -= 1
            if remaining[j] == 0:
                queue.append(j)
    return out


def _on_cycle(children: list[int | list[int] | None], remaining: list[int]) -> int:
    """A kernel on a cycle: follow unscheduled parents back until one repeats."""
    parents: dict[int, int] = {}
    for p, cs in enumerate(children):
        if remaining[p] > 0 and cs is not None:
            for c in (cs,) if cs.__class__ is int else cs:
                parents.setdefault(c, p)
    k = next(k for k, d in enumerate(remaining) if d > 0)
    seen: set[int] = set()
    while k not in seen:
        seen.add(k)
        k = parents[k]
    return k


# ---------------------------------------------------------------------------------------------
# lowering with the schedule cache


@dataclass(frozen=True)
class ScheduleCacheInfo:
    """Counters of the schedule cache since the last clear."""

    hits: int
    misses: int
    size: int


SCHEDULE_CACHE_SIZE = 4096  # schedules kept; the least recently used one goes first
# nodes the cached programs' schedules hold in all (kernel ASTs and calls; some 1 KB a node
# with what they keep alive): past it the least recently used programs go too, so many
# distinct big programs (a model at many input sizes) do not keep gigabytes
SCHEDULE_CACHE_NODES = 1 << 18
_programs_nodes = [0]
_by_form_nodes = [0]
# value: (LINEAR, the sink it came from). Holding the sink keeps its nodes, and so their cached
# keys, alive: the next realize of the same program rebuilds the same (interned) nodes and
# finds their keys already computed.
_cache: OrderedDict[tuple[bytes, object], tuple[UOp, UOp]] = OrderedDict()
# the same for whole programs (`create_linear_for_sink`): program_key -> bindable schedule
_programs: OrderedDict[ProgramKey, _Program] = OrderedDict()
# a realize's form key (`program_form`) -> what its caller found for that program the slow way
_by_form: OrderedDict[tuple, Any] = OrderedDict()
_cache_lock = threading.Lock()
_cache_counts = [0, 0]  # hits, misses


def schedule_cache_clear() -> None:
    """Drop every cached schedule and reset the hit/miss counters."""
    with _cache_lock:
        _cache.clear()
        _programs.clear()
        _programs_nodes[0] = 0
        _by_form.clear()
        _by_form_nodes[0] = 0
        _cache_counts[:] = [0, 0]


def schedule_cache_info() -> ScheduleCacheInfo:
    with _cache_lock:
        return ScheduleCacheInfo(_cache_counts[0], _cache_counts[1], len(_cache) + len(_programs))


def _default_kernel_graph(sink: UOp) -> UOp:
    from tolk.schedule.kernelize import get_kernel_graph

    return get_kernel_graph(sink)


def lower_sink_to_linear(
    sink: UOp, get_kernel_graph: Callable[[UOp], UOp] | None = None, *,
    use_cache: bool | None = None,
) -> UOp | None:
    """``create_schedule(get_kernel_graph(sink))``, or None when `sink` is not a tensor-level SINK.

    A SINK carrying `KernelInfo` is a kernel AST, not a tensor graph: None. Results are cached
    by ``sink.key`` (and the pass used) while SCACHE is on; `use_cache` overrides the flag. A
    pass that cannot be hashed (an instance of a dataclass, say) lowers without the cache.
    Cached LINEARs are shared: callers must give their internal buffers fresh slots before
    executing them (`create_linear_with_vars` does).
    """
    if not isinstance(sink, UOp):
        raise TypeError(f"lower_sink_to_linear needs a UOp, got {type(sink).__name__}")
    if sink.op is not Ops.SINK or isinstance(sink.arg, KernelInfo):
        return None
    kernel_graph = get_kernel_graph or _default_kernel_graph
    if not (SCACHE.value if use_cache is None else use_cache) or not _hashable(get_kernel_graph):
        return create_schedule(_kernel_graph(kernel_graph, sink))  # (an unhashable pass: no key)
    ck = (sink.key, get_kernel_graph)
    with _cache_lock:
        entry = _cache.get(ck)
        _cache_counts[0 if entry is not None else 1] += 1
        if entry is not None:
            _cache.move_to_end(ck)
    if entry is None:
        entry = (create_schedule(_kernel_graph(kernel_graph, sink)), sink)
        with _cache_lock:
            entry = _cache.setdefault(ck, entry)
            while len(_cache) > SCHEDULE_CACHE_SIZE:
                _cache.popitem(last=False)
    return entry[0]


def _hashable(x) -> bool:
    try:
        hash(x)
    except TypeError:
        return False
    return True


def _kernel_graph(kernel_graph: Callable[[UOp], UOp], sink: UOp) -> UOp:
    """``kernel_graph(sink)``, checked: a kernel graph is a SINK (ScheduleError else)."""
    graph = kernel_graph(sink)
    if not isinstance(graph, UOp) or graph.op is not Ops.SINK:
        got = graph.short() if isinstance(graph, UOp) else type(graph).__name__
        raise ScheduleError(f"get_kernel_graph must return a SINK (the kernel graph), got {got}")
    return graph


# ---------------------------------------------------------------------------------------------
# resolution: CALL(LINEAR, *args) -> one flat LINEAR of concrete buffers


def _tensor_sinks(node: UOp) -> list[UOp]:
    """The tensor-level SINKs under `node`, children first; remembered on the node (a cached
    program's body stays alive, so its next realize skips this walk)."""
    sinks = node._cache.get("tensor_sinks")
    if sinks is None:
        node_cache(node)["tensor_sinks"] = sinks = [
            n for n in node.toposort(enter=_enter_kernel_graph)
            if n.op is Ops.SINK and not isinstance(n.arg, KernelInfo)]
    return sinks


def _lower_all(root: UOp, get_kernel_graph, use_cache: bool) -> UOp:
    """Replace every tensor-level SINK under `root` by its LINEAR, innermost first."""
    parts = (root.src[0], *root.src[1:]) if root.op is Ops.CALL else (root,)
    sinks = list({s: None for p in parts for s in _tensor_sinks(p)})
    if not sinks:
        return root
    if len(sinks) == 1 and sinks[0] is root:
        return lower_sink_to_linear(root, get_kernel_graph, use_cache=use_cache)
    mapping: dict[UOp, UOp] = {}
    for s in sinks:  # children first, so an outer sink sees its inner calls already lowered
        s2 = s.substitute(mapping) if mapping else s
        mapping[s] = lower_sink_to_linear(s2, get_kernel_graph, use_cache=use_cache)
    return root.substitute(mapping)


def _resolve(linear: UOp, params: tuple[UOp, ...], binds: list[UOp] | None = None,
             keep: frozenset[UOp] | set[UOp] = frozenset()) -> list[UOp]:
    """The calls of `linear` with PARAM slots bound to `params` and nested LINEAR calls
    flattened (each a scope whose params shadow the outer ones). Internal BUFFERs are renamed
    fresh per resolution of the scope that owns them, so two calls of one cached LINEAR never
    share intermediates: a buffer belongs to the outermost scope whose own calls name it (one
    an outer body names and a nested body names too is one buffer throughout). Buffers in
    `keep` (the call's arguments) keep their identity. The BIND arguments of the nested calls
    (their kernels read those variables) go to `binds`."""
    out: list[UOp] = []
    # per scope: its calls, its params, its renamed buffers, its body, the internal buffers
    # its own calls name (made when a nested scope asks)
    stack: list[list[Any]] = [[iter(linear.src), params, {}, linear, None]]

    def renamed(b: UOp) -> UOp:
        fresh = stack[-1][2]
        for scope in stack[:-1]:  # outermost first: the owner is the first that names it
            if scope[4] is None:
                scope[4] = {x for c in scope[3].src for a in c.src[1:]
                            for x in buffers_of(a)}
            if b in scope[4]:
                fresh = scope[2]
                break
        got = fresh.get(b)
        if got is None:
            got = fresh[b] = UOp.internal_buffer(b.dtype, b.size, b.device)
        return got

    while stack:
        calls, scope = stack[-1][0], stack[-1][1]
        call = next(calls, None)
        if call is None:
            stack.pop()
            continue
        if call.op is not Ops.CALL or not call.src:
            raise ScheduleError(f"a LINEAR may only hold CALLs of a kernel, got {call.short()}")
        args = tuple(_bind_arg(a, scope, renamed, keep) for a in call.src[1:])
        body = call.src[0]
        if body.op is Ops.LINEAR:
            if binds is not None:
                binds += [a for a in args if a.op is Ops.BIND]
            stack.append([iter(body.src), args, {}, body, None])
        else:
            out.append(call if args == call.src[1:] else call.replace(src=(body, *args)))
    return out


def _bind_arg(a: UOp, scope: tuple[UOp, ...], renamed: Callable[[UOp], UOp],
              keep: frozenset[UOp] | set[UOp]) -> UOp:
    if a.op is Ops.PARAM:
        arg = a.arg
        if type(arg) is not tuple or not arg or type(arg[0]) is not int or arg[0] < 0:
            raise ScheduleError(f"a PARAM's arg must be (slot: int >= 0, device, size), got "
                                f"{arg!r} in {a.short()}"[:300])
        if arg[0] >= len(scope):
            raise ScheduleError(f"{a.short()} has no argument: the call passes {len(scope)}")
        return scope[arg[0]]
    if a.op is Ops.BUFFER and check_buffer(a).arg[0] < 0 and a not in keep:
        return renamed(a)
    if a.op in _JOIN_OPS:
        return map_join_leaves(a, lambda s: _bind_arg(s, scope, renamed, keep))
    return a


def _kernel_vars(ast: UOp) -> frozenset[str]:
    """Names of the variables a kernel AST reads (cached on the node)."""
    names = ast._cache.get("vars")
    if names is None:  # DEFINE_VARs, and symbolic sizes in movement args (read from var_vals)
        nodes = ast.toposort()
        for n in nodes:
            if n.op is Ops.DEFINE_VAR and not (type(n.arg) is tuple and n.arg
                                               and type(n.arg[0]) is str):
                raise ScheduleError(f"a DEFINE_VAR's arg is (name, min, max), got {n.arg!r} "
                                    f"in {n.short()}"[:300])
        node_cache(ast)["vars"] = names = frozenset(
            [n.arg[0] for n in nodes if n.op is Ops.DEFINE_VAR]
            + [d.name for n in nodes if n.op in GroupOp.Movement for d in syms_in(n.arg)])
    return names


def _collect_var_vals(binds: Iterable[UOp], used: set[str]) -> dict[str, int]:
    """The values of the variables in `used`; binds of one variable that disagree raise,
    used or not."""
    var_vals: dict[str, int] = {}
    for b in binds:
        name, val = _bind_name(b), b.src[1].arg
        if var_vals.get(name, val) != val:
            raise ScheduleError(f"variable {name!r} is bound to both {var_vals[name]} and {val}")
        var_vals[name] = val
    unbound = sorted(set(used) - set(var_vals))
    if unbound:  # a symbolic size made without a bound value (Tensor.full of one alone)
        raise ScheduleError(f"kernels read variable(s) {unbound}, bound nowhere in the "
                            "program: make a symbolic-size tensor from one that carries the "
                            "value (full_like, a bound slice)")
    return {name: val for name, val in var_vals.items() if name in used}


def _bind_name(b: UOp) -> str:
    """The variable a BIND binds; ScheduleError unless it is ``BIND(DEFINE_VAR, CONST int)``
    with the value in the variable's range (buffers are sized for its maximum)."""
    if not (len(b.src) == 2 and b.src[0].op is Ops.DEFINE_VAR and b.src[1].op is Ops.CONST
            and type(b.src[1].arg) is int):
        raise ScheduleError(f"a BIND must bind a DEFINE_VAR to an int CONST, got {b.short()} "
                            f"over {[s.op.name for s in b.src]}")
    var, val = b.src[0].arg, b.src[1].arg
    if not (type(var) is tuple and len(var) == 3 and type(var[0]) is str
            and type(var[1]) is int and type(var[2]) is int):
        raise ScheduleError(f"a DEFINE_VAR's arg is (name, min, max), got {var!r}")
    if not var[1] <= val <= var[2]:
        raise ScheduleError(f"variable {var[0]!r} is bound to {val}, outside its range "
                            f"[{var[1]}, {var[2]}]")
    return var[0]


def create_linear_with_vars(
    big_sink: UOp, get_kernel_graph: Callable[[UOp], UOp] | None = None
) -> tuple[UOp, dict[str, int]]:
    """Run the whole schedule pipeline: ``(planned LINEAR, {variable name: value})``.

    `big_sink` is a tensor-level SINK or ``CALL(body, *args)``. Every tensor-level SINK is
    lowered (`lower_sink_to_linear`), then CALLs of LINEARs are resolved: PARAM slots take
    the call's arguments and nested schedules are flattened. Only binds of variables that a
    scheduled kernel reads are returned. While ``tolk.engine.realize.capturing`` is non-empty
    (it is per thread) and CAPTURING is on, the unplanned schedule goes to
    ``capturing[0].add_linear`` and an empty LINEAR is returned; otherwise the schedule is
    memory-planned holding the call's own BUFFER arguments (also those inside MSTACK/MSELECT).
    The call's arguments keep their identity throughout; every other internal (negative-slot)
    BUFFER is the schedule's own: it is renamed fresh for each call of the LINEAR body that
    owns it (the outermost that names it), so a raw SINK's internal buffers are intermediates
    too (pass a buffer the caller reads afterwards as a call argument, or give it a user slot).

    Raises `ScheduleError` (a `ValueError`) when binds of one variable disagree (the call's,
    nested calls' or kernels', whether or not a kernel reads it), a BIND is malformed, or the
    result is not a LINEAR of kernel CALLs.
    """
    start = time.perf_counter()
    use_cache = bool(SCACHE.value)
    before = _cache_counts[0]
    if not isinstance(big_sink, UOp):
        raise TypeError(f"create_linear_with_vars needs a SINK or a CALL, got "
                        f"{type(big_sink).__name__}")
    if big_sink.op is Ops.CALL and not big_sink.src:
        raise ScheduleError(f"create_linear_with_vars needs CALL(body, *args), got "
                            f"{big_sink.short()}")
    lowered = _lower_all(big_sink, get_kernel_graph, use_cache)
    top_args: tuple[UOp, ...] = ()
    if lowered.op is Ops.CALL:
        top_args = lowered.src[1:]
        lowered = lowered.src[0]
    if lowered.op is not Ops.LINEAR:
        raise ScheduleError(f"the schedule pipeline must give a LINEAR, got {lowered.short()}")
    nested_binds: list[UOp] = []
    held = [b for a in top_args for b in buffers_of(a)]  # also inside MSTACK/MSELECT
    calls = _resolve(lowered, top_args, nested_binds, set(held))
    linear = UOp(Ops.LINEAR, src=tuple(calls))

    used, call_binds = _variables_of(calls)
    var_vals = _collect_var_vals(
        [*(a for a in top_args if a.op is Ops.BIND), *nested_binds, *call_binds], used)

    capturing = _realize.capturing
    if capturing and CAPTURING.value:
        capturing[0].add_linear(linear, var_vals)
        return UOp(Ops.LINEAR, src=()), var_vals
    planned = memory_plan_rewrite(linear, held)
    if DEBUG.value:
        _check_and_report(planned, held, start, _cache_counts[0] > before,
                          lambda: planned_stats(planned, linear, held))
    return planned, var_vals


def _variables_of(calls: list[UOp]) -> tuple[set[str], list[UOp]]:
    """The names of the variables resolved `calls` read in their kernel bodies (a BIND
    argument alone is no read: the spec returns binds of variables kernel bodies reference),
    and their BIND args in order."""
    used: set[str] = set()
    binds: list[UOp] = []
    for c in calls:
        if c.src[0].op is Ops.SINK:
            used |= _kernel_vars(c.src[0])
        binds += [a for a in c.src[1:] if a.op is Ops.BIND]
    return used, binds


def _check_and_report(planned: UOp, held: list[UOp], start: float, hit: bool,
                      stats: Callable[[], LinearStats]) -> None:
    """Under DEBUG: verify the planned schedule (>= 3) and print a line about it (>= 1)."""
    debug = DEBUG.value
    if debug >= 3:  # prove the planned schedule valid before anything runs it
        from tolk.schedule.verify import verify_linear

        verify_linear(planned, held)
    if debug >= 1:
        st = stats()
        print(f"schedule: {len(planned.src):5d} kernels in "
              f"{(time.perf_counter() - start) * 1e3:8.2f} ms | cache {'hit' if hit else 'miss'}"
              f" | memory {st.unplanned_bytes / 1e6:.2f} MB -> {st.used_bytes / 1e6:.2f} MB"
              f"{'' if st.arena_bytes else ' (not planned)'} (floor {st.floor_bytes / 1e6:.2f} MB)")


# ---------------------------------------------------------------------------------------------
# programs: a tensor graph over concrete buffers, cached by its structure


_HASH_SAMPLE = 64  # entries of a long part that a ProgramKey's hash reads


class ProgramKey:
    """A `program_key`: its parts, with their hash taken once (the parts are one tuple entry
    per node, and a dict would hash them all again on every lookup).

    The hash reads a part of more than `_HASH_SAMPLE` entries at evenly spaced positions (and
    its length) only: equal keys still hash equal, and a lookup that finds an equal hash
    compares the parts whole, so a key only ever equals the same program's. A miss costs a
    compare only against a key of equal hash, which stops at the first entry that differs."""

    __slots__ = ("_hash", "parts")

    def __init__(self, parts: tuple) -> None:
        self.parts = parts
        self._hash = hash(tuple([p if type(p) is not tuple or len(p) <= _HASH_SAMPLE
                                 else (len(p), p[::len(p) // _HASH_SAMPLE]) for p in parts]))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return (type(other) is ProgramKey and self._hash == other._hash
                and self.parts == other.parts)


def program_key(
    *roots: UOp, tag: Any = None,
) -> tuple[ProgramKey, list[UOp], list[UOp], dict[UOp, Any]]:
    """``(key, buffers, binds, nodes)`` of the tensor graph under `roots`, in one walk.

    `nodes` holds every node under `roots` as a dict's keys, in ``UOp.sink(*roots).toposort()``
    order (the SINK left out); `buffers` are the graph's BUFFERs and `binds` its BINDs, in that
    order. The key describes the graph with the i-th buffer standing for ``PARAM(i)`` of its
    dtype, device and size and every BIND for its variable: two graphs have equal keys only if
    `program_body` gives them one body, so the same computation on other buffers or at other
    values of its variables has the key of the first, while one buffer read twice and two
    buffers read once each do not. Keys of another `tag` never equal these (a caller that
    derives the program from the graph in its own way keeps its programs apart). Builds no
    node: a subgraph with no BUFFER or BIND below it is interned, so its root stands for the
    whole of it.
    """
    # node -> its part of the key: the node itself, a buffer tuple, a variable, or the index
    # of its record; its keys are the walk's output, children first
    ref: dict[UOp, Any] = {}
    flat: list = []  # per described node: op, dtype, arg key, number of sources, their refs
    bufs: list[UOp] = []
    binds: list[UOp] = []
    count = 0  # nodes described so far: the index the next one gets
    get, extend, buffer_op, bind_op = ref.get, flat.extend, Ops.BUFFER, Ops.BIND

    def leaf(s: UOp) -> Any:
        if s.op is buffer_op:
            r = ref[s] = (s.dtype, len(bufs), s.arg[1], s.arg[2])
            bufs.append(s)
            return r
        ref[s] = s
        return s

    # the hot loop of a cache hit, an iterative DFS: the node on top of the stack pushes its
    # first source not walked yet (one at a time, so no node is ever pushed twice) and is
    # described once all are, when it comes back on top; sources of one and two spelled out,
    # those of a wider node read through an iterator kept in `wide` while it is on the stack
    wide: dict[UOp, Any] = {}
    for root in roots:
        if root in ref:
            continue
        if not root.src:
            leaf(root)
            continue
        stack = [root]
        push, pop = stack.append, stack.pop
        while stack:
            n = stack[-1]
            src = n.src
            k = len(src)
            if k == 1 or k == 2:
                s0 = src[0]
                r0 = get(s0)
                if r0 is None:
                    if s0.src:
                        push(s0)
                        continue
                    r0 = leaf(s0)
                if k == 1:
                    pop()
                    if r0 is s0:  # nothing to replace below: the node stands for itself
                        ref[n] = n
                        continue
                    extend((n.op, n.dtype, n.arg_key, 1, r0))
                else:
                    s1 = src[1]
                    if (r1 := get(s1)) is None:
                        if s1.src:  # walked after all of s0's graph: the order stays post-order
                            push(s1)
                            continue
                        r1 = leaf(s1)
                    pop()
                    if n.op is bind_op:  # the variable, without its value
                        ref[n] = s0
                        binds.append(n)
                        continue
                    if r0 is s0 and r1 is s1:
                        ref[n] = n
                        continue
                    extend((n.op, n.dtype, n.arg_key, 2, r0, r1))
            else:  # three or more: resumed where the node left off, or a wide node is quadratic
                it = wide.get(n)
                if it is None:
                    it = wide[n] = iter(src)
                for s in it:
                    if s not in ref:
                        if s.src:
                            push(s)
                            break
                        leaf(s)
                else:
                    del wide[n]
                    pop()
                    refs = [ref[s] for s in src]
                    if all(map(operator.is_, refs, src)):
                        ref[n] = n
                        continue
                    extend((n.op, n.dtype, n.arg_key, len(src)))
                    extend(refs)
                    ref[n] = count
                    count += 1
                continue
            ref[n] = count
            count += 1
    parts = (tuple(flat), tuple([ref[r] for r in roots]))
    return ProgramKey(parts if tag is None else (tag, *parts)), bufs, binds, ref


def program_form(*roots: UOp, tag: Any = None) -> tuple[tuple, list[UOp], list[UOp]] | None:
    """``(form key, buffers, binds)`` of the tensor graph under `roots`, read off the nodes'
    forms (`tolk.uop.form`): a walk of the leaf links only (and of the nodes that have no
    form yet, if some were not built by tensor ops).

    `buffers` and `binds` are those of ``program_key(*roots, tag=tag)``, in its order. Two
    graphs have equal form keys only if they have equal program keys (equal root forms: one
    structure with buffers and bind values left open; equal leaf descriptions: the same
    buffer at the same places), so a caller may keep what it learned about a program under
    its form key (`remember_program_form`) and find it again for a new graph of the same
    program (`program_by_form`) without `program_key`. None when a root has no form or the
    graph holds an AFTER (a pending write: a realize of it needs the whole graph)."""
    forms = []
    for r in roots:
        f = form_of(r)
        if f is None or (f is not r and f.flags & AFTER):
            return None
        forms.append(f)
    desc, found = leaves(roots)
    bufs = [x for x in found if x.op is Ops.BUFFER]
    binds = [x for x in found if x.op is not Ops.BUFFER] if len(bufs) < len(found) else []
    return (tag, *forms, desc), bufs, binds


def program_by_form(form_key: tuple) -> Any:
    """What `remember_program_form` stored under `form_key` (None if nothing, or if SCACHE is
    off); kept with the schedule cache (`schedule_cache_clear` drops it)."""
    if not SCACHE.value:
        return None
    with _cache_lock:
        found = _by_form.get(form_key)
        if found is not None:
            _by_form.move_to_end(form_key)
            return found[0]
        return None


def remember_program_form(form_key: tuple, value: Any) -> None:
    """Keep `value` (not None) under `form_key`; the least recently used entries go first."""
    if not SCACHE.value:
        return
    weight = _key_weight(value)
    with _cache_lock:
        old = _by_form.pop(form_key, None)
        if old is not None:
            _by_form_nodes[0] -= old[1]
        _by_form[form_key] = (value, weight)
        _by_form_nodes[0] += weight
        while len(_by_form) > SCHEDULE_CACHE_SIZE or (
                _by_form_nodes[0] > SCHEDULE_CACHE_NODES and len(_by_form) > 1):
            _by_form_nodes[0] -= _by_form.popitem(last=False)[1][1]


def _key_weight(value: Any) -> int:
    """The nodes a remembered value's program key describes (it keeps their graph alive)."""
    key = value[0] if isinstance(value, tuple) and value else value
    if not isinstance(key, ProgramKey):
        return 1
    return sum(len(p) if isinstance(p, tuple) else 1 for p in key.parts)


def program_params(bufs: list[UOp]) -> tuple[UOp, ...]:
    """``PARAM(i)`` for each ``bufs[i]``: same dtype, device and size."""
    return tuple(UOp.param(i, b.dtype, b.size, b.device) for i, b in enumerate(bufs))


def program_body(root: UOp, bufs: list[UOp], binds: list[UOp]) -> UOp:
    """`root` with ``bufs[i]`` replaced by ``PARAM(i)`` and every BIND by its variable: the
    same node for every graph of one `program_key`."""
    mapping: dict[UOp, UOp] = dict(zip(bufs, program_params(bufs)))
    mapping.update((b, b.src[0]) for b in binds)
    return root.substitute(mapping)


@dataclass(frozen=True)
class _Template:
    """A program's LINEAR over PARAMs, with what binding it to buffers must replace.

    Invariant: `params` are the PARAM args and `slots` their slots, `fresh` the internal
    BUFFERs (negative slot) among the args and their sources, and `rebuilt` the args and
    sources with a PARAM or a fresh BUFFER below them (SLICE of an arena, MSTACK, MSELECT),
    sources before the nodes above.
    """

    linear: UOp
    params: tuple[UOp, ...]
    slots: tuple[int, ...]
    fresh: tuple[UOp, ...]
    rebuilt: tuple[UOp, ...]


def _template(linear: UOp) -> _Template:
    args = {a: None for c in linear.src for a in c.src[1:]}
    params, fresh, rebuilt = [], [], []
    replaced: set[UOp] = set()
    for n in UOp.sink(*args).toposort():
        if n.op is Ops.PARAM:
            params.append(n)
        elif n.op is Ops.BUFFER and n.arg[0] < 0:
            fresh.append(n)
        elif n.op is not Ops.SINK and any(s in replaced for s in n.src):
            rebuilt.append(n)
        else:
            continue
        replaced.add(n)
    return _Template(linear, tuple(params), tuple(p.arg[0] for p in params), tuple(fresh),
                     tuple(rebuilt))


@dataclass
class _Program:
    """A cached schedule of a tensor graph, bound anew to each realize's buffers.

    Invariant: the calls of `resolved` (flattened, unplanned) and of `planned` (memory-planned,
    made on first use) take PARAMs whose slot indexes the graph's buffers, BINDs, BUFFERs,
    SLICEs, MSTACKs and MSELECTs; internal BUFFERs stand for the fresh ones each bind makes.
    `used` names the variables the kernels read, `binds` are the BIND args of the calls.
    `key` is the program's cache key.
    """

    key: ProgramKey
    resolved: _Template
    used: frozenset[str]
    binds: tuple[UOp, ...]
    planned: _Template | None = None
    _stats: dict[bool, LinearStats] = field(default_factory=dict)
    nodes: int = 0  # in the resolved schedule (its weight in the cache)

    def template(self, plan: bool) -> _Template:
        if not plan:
            return self.resolved
        if self.planned is None:  # no buffer is held: the PARAMs are not plannable
            self.planned = _template(memory_plan_rewrite(self.resolved.linear, (), enabled=True))
        return self.planned

    def stats(self, plan: bool) -> LinearStats:
        """`linear_stats` of the schedule as bound (planned when `plan`), its unplanned bytes
        and floor from the unplanned one (made once)."""
        if plan not in self._stats:
            self._stats[plan] = planned_stats(self.template(plan).linear, self.resolved.linear)
        return self._stats[plan]


def program_stats(key: ProgramKey, plan: bool | None = None) -> LinearStats | None:
    """The `planned_stats` of the schedule cached under `key` (planned unless NO_MEMORY_PLANNER,
    or as `plan` says), None when none is cached."""
    with _cache_lock:
        prog = _programs.get(key)
    if prog is None:
        return None
    return prog.stats(not NO_MEMORY_PLANNER.value if plan is None else plan)


def _retrying_cycles(schedule: Callable[[UOp], Any], sink: UOp,
                     on_cycle: Callable[[UOp], UOp] | None) -> Any:
    """``schedule(sink)``; when its kernel graph has a cycle, ``schedule(on_cycle(sink))`` if
    `on_cycle` is given (else the `CycleError` stands)."""
    try:
        return schedule(sink)
    except CycleError:
        if on_cycle is None:
            raise
        return schedule(on_cycle(sink))


def _lower_program(sink: UOp, binds: list[UOp], on_cycle: Callable[[UOp], UOp] | None) -> UOp:
    """`sink` lowered uncached, its variables taken out first (each BIND becomes its
    variable, so no kernel keeps this call's values); a kernel graph with a cycle is lowered
    again as ``on_cycle(graph)`` when given."""
    graph = sink.substitute({b: b.src[0] for b in binds}) if binds else sink
    return _retrying_cycles(lambda g: _lower_all(g, None, use_cache=False), graph, on_cycle)


def _new_program(key: ProgramKey, sink: UOp, bufs: list[UOp], binds: list[UOp],
                 on_cycle: Callable[[UOp], UOp] | None = None) -> _Program:
    """Lower `sink` (uncached: the program is the cache entry) and make its schedule the
    program's: ``bufs[i]`` becomes ``PARAM(i)`` in the calls' arguments.

    The same schedule as lowering ``program_body(sink, bufs, binds)``, for less: fusion reads no
    buffer's identity (a BUFFER and a PARAM are both base states to it), so only the arguments
    of the few calls are renamed, not every node above a buffer."""
    lowered = _lower_program(sink, binds, on_cycle)
    if lowered.op is not Ops.LINEAR:
        raise ScheduleError(f"the schedule pipeline must give a LINEAR, got {lowered.short()}")
    params = program_params(bufs)
    calls = _resolve(lowered, params, keep=set(bufs))
    to_param = dict(zip(bufs, params))
    calls = [c if not any(a in to_param or a.op in _JOIN_OPS for a in c.src[1:]) else
             c.replace(src=(c.src[0], *(a.substitute(to_param) for a in c.src[1:])))
             for c in calls]
    used, call_binds = _variables_of(calls)
    linear = UOp(Ops.LINEAR, src=tuple(calls))
    resolved = _template(linear)
    return _Program(key, resolved, frozenset(used), tuple(call_binds),
                    nodes=len(linear.toposort()))


def _bind(t: _Template, bufs: list[UOp]) -> UOp:
    """`t`'s LINEAR with ``PARAM(i)`` -> ``bufs[i]`` and each internal BUFFER -> a fresh one,
    also inside SLICE, MSTACK and MSELECT args; kernel ASTs untouched."""
    bound = dict(zip(t.params, map(bufs.__getitem__, t.slots)))
    for b in t.fresh:
        bound[b] = UOp.internal_buffer(b.dtype, b.arg[2], b.arg[1])
    get = bound.get  # get(x, x): x bound, or x itself (a kernel AST, a buffer kept as is)
    for x in t.rebuilt:
        bound[x] = UOp(x.op, x.dtype, tuple(map(get, x.src, x.src)), x.arg)
    call = Ops.CALL
    return UOp(Ops.LINEAR, src=tuple([UOp(call, c.dtype, tuple(map(get, c.src, c.src)), c.arg)
                                      for c in t.linear.src]))


def create_linear_for_program(
    key: ProgramKey, bufs: list[UOp], binds: list[UOp], make_sink: Callable[[], UOp],
    on_cycle: Callable[[UOp], UOp] | None = None,
) -> tuple[UOp, dict[str, int]]:
    """``create_linear_with_vars(CALL(program_body(make_sink(), bufs, binds), *bufs, *binds))``,
    cached by `key`.

    `make_sink()` gives the tensor-level SINK over concrete BUFFERs that `key` describes, with
    `bufs` its BUFFERs and `binds` its BINDs (`program_key` gives all three for a sink; a
    caller may derive key and sink from another graph, under a tag of its own). With SCACHE on,
    `make_sink` is called only on a miss: a hit binds the cached planned schedule to `bufs`,
    with fresh arenas and internal buffers. A sink whose kernel graph has a cycle is scheduled
    as ``on_cycle(sink)`` when given (`CycleError` otherwise). Same results as
    `create_linear_with_vars` (kernels, order, offsets, var_vals), the same capture under
    CAPTURING, and the same `ScheduleError`s.
    """
    debug = DEBUG.value
    start = time.perf_counter() if debug else 0.0
    if not SCACHE.value:

        def uncached(s: UOp) -> tuple[UOp, dict[str, int]]:
            body = program_body(s, bufs, binds)
            return create_linear_with_vars(UOp(Ops.CALL, dtypes.void, (body, *bufs, *binds)))

        return _retrying_cycles(uncached, make_sink(), on_cycle)
    with _cache_lock:
        prog = _programs.get(key)
        hit = prog is not None
        _cache_counts[0 if hit else 1] += 1
        if hit:  # by the stored key: found by identity, not compared part by part again
            _programs.move_to_end(prog.key)
    if prog is None:
        prog = _new_program(key, make_sink(), bufs, binds, on_cycle)
        with _cache_lock:
            kept = _programs.setdefault(key, prog)
            if kept is prog:
                _programs_nodes[0] += prog.nodes
            prog = kept
            while len(_programs) > SCHEDULE_CACHE_SIZE or (
                    _programs_nodes[0] > SCHEDULE_CACHE_NODES and len(_programs) > 1):
                _programs_nodes[0] -= _programs.popitem(last=False)[1].nodes
    var_vals = (_collect_var_vals((*binds, *prog.binds), prog.used)
                if binds or prog.binds or prog.used else {})

    capturing = _realize.capturing
    if capturing and CAPTURING.value:
        capturing[0].add_linear(_bind(prog.resolved, bufs), var_vals)
        return UOp(Ops.LINEAR, src=()), var_vals
    plan = not NO_MEMORY_PLANNER.value
    planned = _bind(prog.template(plan), bufs)
    if debug:
        _check_and_report(planned, bufs, start, hit, lambda: prog.stats(plan))
    return planned, var_vals


def create_linear_for_sink(sink: UOp) -> tuple[UOp, dict[str, int]]:
    """``create_linear_with_vars(CALL(program_body(sink, ...), *buffers, *binds))``.

    `sink` is a tensor-level SINK over concrete BUFFERs. With SCACHE on, the schedule is
    cached by `program_key` (the structure of `sink`, buffers by position, variables without
    their values): see `create_linear_for_program`.
    """
    key, bufs, binds, _ = program_key(sink)
    return create_linear_for_program(key, bufs, binds, lambda: sink)
