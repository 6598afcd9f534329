"""verify_linear: prove that a planned LINEAR is safe to run, or say which call breaks it.

Takes a LINEAR of ``CALL(ast, *args)`` as `memory_plan_rewrite` gives it back (buffer args are
BUFFERs, ``SLICE(arena BUFFER, arg=(byte_offset, nbytes))`` views, MSTACK/MSELECT of them,
or BINDs) and checks, without running anything:

(a) Memory plan. Every SLICE lies inside its arena, and two views of one arena whose byte
    ranges intersect have disjoint lifetimes (a view lives from the first to the last call
    that names it, both inclusive): no call reads bytes that another view overwrote while
    the first was live. An arena named directly as an argument is a view of all its bytes.
(b) Order. A call reads only internal storage (negative-slot BUFFERs that are not held, and
    SLICE views) that an earlier call wrote. BUFFERs with slot >= 0 and held buffers are
    external: their contents come from outside the LINEAR.

What a call writes and reads comes from its AST: for ``COPY`` argument 0 is written and
argument 1 read; for a kernel AST (a SINK of STOREs) the PARAMs under STORE targets are
written (argument 0 when no STORE names a PARAM) and every other argument is read, as is a
written argument the kernel also LOADs. PARAM i is the i-th non-BIND argument, as
`tolk.engine.realize.run_linear` binds them.

Hash-consing makes two planned buffers of equal dtype, offset and size one SLICE node; the
verifier then sees one view whose lifetime spans both, which is exactly what runs.

Cost: O(calls * args + AST nodes) for the walk, plus O(v log v) per arena for the sweep
over its v views (a sorted list of live byte ranges, checked against neighbours only).
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, insort
from collections.abc import Iterable
from dataclasses import dataclass

from tolk.errors import ScheduleError
from tolk.uop.ops import GroupOp, Ops, UOp

__all__ = ["verify_linear"]


@dataclass
class _Life:
    """Invariant: first <= last, both call indices (inclusive)."""

    first: int
    last: int


def _leaves(arg: UOp) -> list[UOp]:
    """The storage an argument names (BUFFERs and SLICEs), through MSTACK/MSELECT."""
    if arg.op in (Ops.BUFFER, Ops.SLICE):
        return [arg]
    if arg.op in (Ops.MSTACK, Ops.MSELECT):
        return [b for s in arg.src for b in _leaves(s)]
    return []


def _call_name(i: int, call: UOp) -> str:
    ast = call.src[0] if call.src else call
    name = getattr(ast.arg, "name", None) or ast.op.name
    return f"call {i} ({name!r})"


def _describe(v: UOp) -> str:
    if v.op is Ops.SLICE:
        off, nbytes = v.arg
        arena = v.src[0]
        slot = arena.arg[0] if arena.op is Ops.BUFFER else "?"
        return f"SLICE {v.dtype.name} bytes [{off}, {off + nbytes}) of arena slot {slot}"
    return f"BUFFER {v.dtype.name} slot {v.arg[0]} on {v.arg[1]} ({v.nbytes} bytes)"


def _param_of(target: UOp) -> UOp | None:
    """The PARAM under a chain of view ops, or None."""
    while target.op in GroupOp.Movement:
        target = target.src[0]
    return target if target.op is Ops.PARAM else None


def _access(ast: UOp, memo: dict[UOp, tuple[frozenset[int], frozenset[int] | None]]):
    """``(written param indices, loaded param indices or None for "all but written")``."""
    if ast in memo:
        return memo[ast]
    if ast.op is Ops.COPY:
        out = (frozenset({0}), frozenset({1}))
    elif ast.op is Ops.SINK:
        written, loaded = set(), set()
        for n in ast.toposort():
            if n.op is Ops.STORE and (p := _param_of(n.src[0])) is not None:
                written.add(p.arg[0])
            elif n.op is Ops.LOAD and n.src and (p := _param_of(n.src[0])) is not None:
                loaded.add(p.arg[0])
        # an opaque AST (no STORE into a PARAM) follows the convention: arg 0 is written
        out = (frozenset(written), frozenset(loaded)) if written else (frozenset({0}), None)
    else:
        out = (frozenset({0}), None)
    memo[ast] = out
    return out


def _check_slice(i: int, call: UOp, v: UOp) -> None:
    arena = v.src[0] if v.src else None
    if arena is None or arena.op is not Ops.BUFFER:
        raise ScheduleError(f"{_call_name(i, call)}: {v.short()} is not a view of an arena BUFFER")
    off, nbytes = v.arg
    if off < 0 or nbytes < 0 or off + nbytes > arena.nbytes:
        raise ScheduleError(
            f"{_call_name(i, call)}: {_describe(v)} lies outside its arena of {arena.nbytes} bytes"
        )
    if nbytes % max(v.dtype.itemsize, 1):
        raise ScheduleError(
            f"{_call_name(i, call)}: {_describe(v)} is not a whole number of {v.dtype.name} items"
        )


def verify_linear(linear: UOp, held: Iterable[UOp] = ()) -> None:
    """Prove that a (planned) LINEAR is safe to run; see the module docstring for the rules.

    `held` are buffers whose contents come from outside the schedule (as passed to
    `memory_plan_rewrite`). Returns None; raises `ScheduleError` (a `ValueError`) naming the
    call index and the buffers at fault.
    """
    if linear.op is not Ops.LINEAR:
        raise ScheduleError(f"verify_linear needs a LINEAR, got {linear.short()}")
    held_set = set(held)
    life: dict[UOp, _Life] = {}
    written: set[UOp] = set()
    memo: dict = {}
    arenas: dict[UOp, None] = {}
    for i, call in enumerate(linear.src):
        if call.op is not Ops.CALL or not call.src:
            raise ScheduleError(f"call {i}: a LINEAR may only hold CALLs, got {call.short()}")
        args = [a for a in call.src[1:] if a.op is not Ops.BIND]
        writes, loads = _access(call.src[0], memo)
        bad = [p for p in writes | (loads or frozenset()) if p >= len(args)]
        if bad:
            raise ScheduleError(f"{_call_name(i, call)}: its AST names PARAM {min(bad)} but the "
                                f"call passes {len(args)} buffer arguments")
        reads_now: list[UOp] = []
        for j, a in enumerate(args):
            views = _leaves(a)
            for v in views:
                if v.op is Ops.SLICE:
                    _check_slice(i, call, v)
                    arenas[v.src[0]] = None
                if v in life:
                    life[v].last = i
                else:
                    life[v] = _Life(i, i)
            if j not in writes or (loads is not None and j in loads):
                reads_now.extend(views)
        for v in reads_now:
            if v in written or v in held_set or (v.op is Ops.BUFFER and v.arg[0] >= 0):
                continue
            if v.op is Ops.BUFFER and v in arenas:
                continue  # an arena named whole: its views' writes are checked one by one
            raise ScheduleError(f"{_call_name(i, call)}: reads {_describe(v)}, which no earlier "
                                f"call writes")
        for j in writes:
            written.update(_leaves(args[j]))
    _check_arenas(linear, life, arenas)


def _check_arenas(linear: UOp, life: dict[UOp, _Life], arenas: dict[UOp, None]) -> None:
    """(a): per arena, a sweep over call indices keeps the live byte ranges sorted by offset;
    a view born into them must miss both its neighbours (live ranges are pairwise disjoint
    until the first violation, which raises)."""
    per_arena: dict[UOp, list[tuple[int, int, int, int, UOp]]] = {a: [] for a in arenas}
    for v, lt in life.items():
        if v.op is Ops.SLICE:
            off, nbytes = v.arg
            arena = v.src[0]
        elif v in arenas:
            off, nbytes, arena = 0, v.nbytes, v
        else:
            continue
        if nbytes:
            per_arena[arena].append((lt.first, lt.last, off, off + nbytes, v))
    for views in per_arena.values():
        views.sort(key=lambda t: (t[0], t[2], t[3]))
        live: list[tuple[int, int, int]] = []  # (start, end, index into views), sorted
        dying: list[tuple[int, int]] = []  # heap of (last, index)
        for k, (first, last, start, end, v) in enumerate(views):
            while dying and dying[0][0] < first:
                _, d = heapq.heappop(dying)
                live.pop(bisect_left(live, (views[d][2], views[d][3], d)))
            key = (start, end, k)
            pos = bisect_left(live, key)
            for nb in (pos - 1, pos):
                if 0 <= nb < len(live) and live[nb][0] < end and start < live[nb][1]:
                    o_first, o_last, _, _, other = views[live[nb][2]]
                    i = max(first, o_first)
                    raise ScheduleError(
                        f"{_call_name(i, linear.src[i])}: {_describe(v)} (live in calls "
                        f"{first}..{last}) overlaps {_describe(other)} (live in calls "
                        f"{o_first}..{o_last}): one overwrites the other while both are live"
                    )
            insort(live, key)
            heapq.heappush(dying, (last, k))
