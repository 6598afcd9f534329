"""verify_linear: prove that a planned LINEAR is safe to run, or say which call breaks it.

Takes a LINEAR of ``CALL(ast, *args)`` as `memory_plan_rewrite` gives it back (buffer args are
BUFFERs, ``SLICE(arena BUFFER, arg=(byte_offset, nbytes))`` views, MSTACK/MSELECT of them,
or BINDs) and checks, without running anything:

(a) Memory plan. Every SLICE lies inside its arena, and no call reads arena bytes through
    one view that another view overwrote while the first view's value was still live. A
    view's value is live from a call that writes it to the last call that names it before
    its next full overwrite (a *segment*; without full overwrites, the segment runs from the
    first to the last call naming the view). Two views of one arena whose byte ranges
    intersect must have no intersecting segments. An arena named directly as an argument is
    a view of all its bytes.
(b) Order. A call reads only internal storage (negative-slot BUFFERs that are not held, and
    SLICE views) that an earlier call wrote. BUFFERs with slot >= 0 and held buffers are
    external: their contents come from outside the LINEAR.

What a call writes and reads comes from its AST: for ``COPY`` argument 0 is written and
argument 1 read; for a kernel AST (a SINK of STOREs) the PARAMs under STORE targets are
written (argument 0 when no STORE names a PARAM) and every other argument is read, as is a
written argument the kernel also LOADs. A write is a full overwrite when the argument is not
read and some STORE covers it whole (its target is the PARAM under RESHAPE, PERMUTE and FLIP
only); COPY and opaque ASTs overwrite argument 0 whole. PARAM i is the i-th non-BIND
argument, as `tolk.engine.realize.run_linear` binds them.

Why segments and not one first..last lifetime per view: hash-consing makes two planned
buffers of equal dtype, offset and size one SLICE node. A plan that reuses bytes [0, 16) for
buffer A (calls 3..5), then B at [0, 4) (calls 16..25), then C at [0, 16) again (calls
28..36) is correct, but A and C are one node whose first..last (3..36) contains B's.

Cost: O(calls * args + AST nodes) for the walk, plus a sweep per arena over its s segments:
O(s log s) comparisons (a sorted list of live byte ranges, each newcomer checked against its
two neighbours only, never all pairs).
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, insort
from collections.abc import Iterable
from dataclasses import dataclass

from tolk.errors import ScheduleError
from tolk.schedule.memory import buffers_of
from tolk.uop.ops import GroupOp, Ops, UOp

__all__ = ["verify_linear"]

# Store-target view ops that visit every element of the buffer exactly once.
_BIJECTIVE = frozenset({Ops.RESHAPE, Ops.PERMUTE, Ops.FLIP})


@dataclass(frozen=True)
class _Access:
    """What a call does to its non-BIND arguments, by position.

    `loads` is None when every argument that is not written counts as read (opaque ASTs).
    Invariant: full <= writes."""

    writes: frozenset[int]
    full: frozenset[int]
    loads: frozenset[int] | None

    def reads(self, j: int) -> bool:
        return j not in self.writes or (self.loads is not None and j in self.loads)


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


def _param_under(target: UOp, ops: frozenset[Ops]) -> tuple[UOp | None, bool]:
    """(the PARAM under a chain of view ops or None, whether every op of the chain is in `ops`)."""
    only = True
    while target.op in GroupOp.Movement:
        only = only and target.op in ops
        target = target.src[0]
    return (target if target.op is Ops.PARAM else None), only


def _access(ast: UOp, memo: dict[UOp, _Access]) -> _Access:
    if ast in memo:
        return memo[ast]
    out = _Access(frozenset({0}), frozenset({0}), None)  # COPY and opaque ASTs
    if ast.op is Ops.SINK:
        written, full, loaded = set(), set(), set()
        for n in ast.toposort():
            if n.op is Ops.STORE:
                p, whole = _param_under(n.src[0], _BIJECTIVE)
                if p is not None:
                    written.add(p.arg[0])
                    if whole:
                        full.add(p.arg[0])
            elif n.op is Ops.LOAD and n.src:
                p, _ = _param_under(n.src[0], GroupOp.Movement)
                if p is not None:
                    loaded.add(p.arg[0])
        if written:
            out = _Access(frozenset(written), frozenset(full - loaded), frozenset(loaded))
    elif ast.op is Ops.COPY:
        out = _Access(frozenset({0}), frozenset({0}), frozenset({1}))
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


def _is_external(v: UOp, held: set[UOp]) -> bool:
    return v in held or (v.op is Ops.BUFFER and v.arg[0] >= 0)


def verify_linear(linear: UOp, held: Iterable[UOp] = ()) -> None:
    """Prove that a (planned) LINEAR is safe to run; see the module docstring for the rules.

    `held` are buffers whose contents come from outside the schedule (as passed to
    `memory_plan_rewrite`). Returns None; raises `ScheduleError` (a `ValueError`) naming the
    call index and the buffers at fault.
    """
    if linear.op is not Ops.LINEAR:
        raise ScheduleError(f"verify_linear needs a LINEAR, got {linear.short()}")
    held_set = set(held)
    segments: dict[UOp, list[list[int]]] = {}  # internal view -> [[first, last], ...]
    written: set[UOp] = set()
    memo: dict[UOp, _Access] = {}
    arenas: dict[UOp, None] = {}
    for i, call in enumerate(linear.src):
        if call.op is not Ops.CALL or not call.src:
            raise ScheduleError(f"call {i}: a LINEAR may only hold CALLs, got {call.short()}")
        args = [a for a in call.src[1:] if a.op is not Ops.BIND]
        acc = _access(call.src[0], memo)
        bad = [p for p in acc.writes | (acc.loads or frozenset()) if p >= len(args)]
        if bad:
            raise ScheduleError(f"{_call_name(i, call)}: its AST names PARAM {min(bad)} but the "
                                f"call passes {len(args)} buffer arguments")
        reads: dict[UOp, None] = {}
        writes: dict[UOp, bool] = {}  # view -> whether this call overwrites it whole
        for j, a in enumerate(args):
            for v in buffers_of(a, (Ops.BUFFER, Ops.SLICE)):
                if v.op is Ops.SLICE:
                    _check_slice(i, call, v)
                    arenas[v.src[0]] = None
                if acc.reads(j):
                    reads[v] = None
                if j in acc.writes:
                    writes[v] = writes.get(v, False) or j in acc.full
        for v in reads:
            if v not in written and not _is_external(v, held_set) and v not in arenas:
                raise ScheduleError(f"{_call_name(i, call)}: reads {_describe(v)}, which no "
                                    f"earlier call writes")
        for v in (*reads, *writes):
            if _is_external(v, held_set):
                continue
            segs = segments.setdefault(v, [])
            if (writes.get(v) and v not in reads) or not segs:
                segs.append([i, i])  # a full overwrite: the old value is dead
            else:
                segs[-1][1] = i
        written.update(writes)
    _check_arenas(linear, segments, arenas)


def _check_arenas(linear: UOp, segments: dict[UOp, list[list[int]]],
                  arenas: dict[UOp, None]) -> None:
    """(a): per arena, a sweep over call indices keeps the live byte ranges sorted by offset;
    a segment born into them must miss both its neighbours (live ranges are pairwise disjoint
    until the first violation, which raises)."""
    per_arena: dict[UOp, list[tuple[int, int, int, int, UOp]]] = {a: [] for a in arenas}
    for v, segs in segments.items():
        if v.op is Ops.SLICE:
            off, nbytes = v.arg
            arena = v.src[0]
        elif v in arenas:
            off, nbytes, arena = 0, v.nbytes, v
        else:
            continue
        if nbytes:
            per_arena[arena].extend((f, last, off, off + nbytes, v) for f, last in segs)
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
