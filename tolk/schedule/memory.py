"""Memory planning of a LINEAR: internal BUFFERs -> SLICEs of one arena per device and lane.

Takes a LINEAR whose calls name BUFFERs (directly or inside MSTACK/MSELECT) and gives back
the same LINEAR where every planned buffer is ``SLICE(arena, arg=(byte_offset, nbytes))``.
Offsets come from the pure function `tolk.schedule.planner.assign_offsets`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from tolk.dtype import dtypes
from tolk.errors import ScheduleError
from tolk.helpers import NO_MEMORY_PLANNER
from tolk.schedule.planner import Plan, assign_offsets, floor_bytes
from tolk.uop.ops import Ops, UOp, fresh_internal_buffer_slot, scratch_pass

ALIGNMENT = 256


def buffers_of(arg: UOp, op: Ops | tuple[Ops, ...] = Ops.BUFFER) -> list[UOp]:
    """The BUFFERs (or the nodes of another `op`, or of any of a tuple of ops: SLICEs) an
    argument names, looking through MSTACK/MSELECT (nested to any depth, without recursion),
    each once, in order (left to right, depth first). A join met again is not walked again:
    joins that share their parts (``m = MSTACK(m, m)``, 40 times) are linear, not exponential."""
    ops = op if isinstance(op, tuple) else (op,)
    if arg.op in ops:
        return [arg]
    if arg.op is not Ops.MSTACK and arg.op is not Ops.MSELECT:
        return []
    out: list[UOp] = []
    seen: set[UOp] = set()
    todo = [arg]
    while todo:
        s = todo.pop()
        if s in seen:
            continue
        seen.add(s)
        if s.op in ops:
            out.append(s)
        elif s.op is Ops.MSTACK or s.op is Ops.MSELECT:
            todo.extend(reversed(s.src))
    return out


def map_join_leaves(join: UOp, leaf: Callable[[UOp], UOp]) -> UOp:
    """`join` (MSTACK/MSELECT, nested to any depth) rebuilt with each other node under it
    replaced by ``leaf(node)``, without recursion; the same node when nothing changes."""
    done: dict[UOp, UOp] = {}
    for n in join.toposort(enter=lambda n: n.op is Ops.MSTACK or n.op is Ops.MSELECT):
        if n.op is Ops.MSTACK or n.op is Ops.MSELECT:
            src = tuple(done[s] for s in n.src)
            done[n] = n if src == n.src else n.replace(src=src)
        else:
            done[n] = leaf(n)
    return done[join]


_plans: OrderedDict[tuple, Plan] = OrderedDict()
_plans_lock = threading.Lock()
PLAN_CACHE_SIZE = 1024


def _plan(sizes: tuple[int, ...], firsts: tuple[int, ...], lasts: tuple[int, ...]) -> Plan:
    """`assign_offsets`, remembered: a cached schedule run again has the same lifetimes."""
    key = (sizes, firsts, lasts)
    with _plans_lock:
        plan = _plans.get(key)
        if plan is not None:
            _plans.move_to_end(key)
            return plan
    plan = assign_offsets(sizes, firsts, lasts, alignment=ALIGNMENT)
    with _plans_lock:
        _plans[key] = plan
        while len(_plans) > PLAN_CACHE_SIZE:
            _plans.popitem(last=False)
    return plan


def plan_cache_clear() -> None:
    """Forget the remembered offset assignments: the next `memory_plan_rewrite` of any schedule
    runs the planner (benchmarks of the planner itself clear it before each run)."""
    with _plans_lock:
        _plans.clear()


def memory_plan_rewrite(
    linear: UOp, held_bufs: Iterable[UOp] = (), *, enabled: bool | None = None
) -> UOp:
    """Replace the internal, non-held BUFFERs of `linear` with SLICEs of per-device arenas.

    A buffer lives from the first to the last call that names it; buffers whose lifetimes
    intersect never share bytes. Buffers used by COPY calls get their own arena per device.
    Held buffers (compared by identity) keep their identity and allocation: hold any buffer
    that outlives the schedule (an MSTACK/MSELECT among them holds each buffer it names; an
    item that is no UOp is a TypeError). Returns `linear` unchanged when NO_MEMORY_PLANNER is set
    (`enabled` overrides the flag) or nothing is plannable.
    """
    if not isinstance(linear, UOp):
        raise TypeError(f"memory_plan_rewrite needs a LINEAR, got {type(linear).__name__}")
    held = _held(held_bufs)
    if not (not NO_MEMORY_PLANNER.value if enabled is None else enabled):
        return linear
    if linear.op is not Ops.LINEAR:
        raise ValueError(f"memory_plan_rewrite needs a LINEAR, got {linear.short()}")
    # two passes, the planning between them: a long plan never holds up another thread's pass
    bufs, first, last, copy = scratch_pass(_planned, linear, held)
    if not bufs:
        return linear
    return scratch_pass(_rewrite, linear, bufs, _slices(bufs, first, last, copy))


def _held(held_bufs: Iterable[UOp], what: str = "memory_plan_rewrite") -> set[UOp]:
    """The held buffers as a set; a join among them holds each buffer it names."""
    try:
        items = list(held_bufs)
    except TypeError:
        raise TypeError(f"{what}'s held_bufs must be an iterable of buffers, "
                        f"got {type(held_bufs).__name__}") from None
    held: set[UOp] = set()
    for b in items:
        if not isinstance(b, UOp):
            raise TypeError(f"{what}'s held_bufs must hold BUFFER nodes, got "
                            f"{type(b).__name__} {b!r}"[:200])
        held.add(b)
        if b.op is Ops.MSTACK or b.op is Ops.MSELECT:
            held.update(buffers_of(b))
    return held


def _planned(tok: object, linear: UOp, held: set[UOp]
             ) -> tuple[list[UOp], list[int], list[int], list[bool]]:
    """The buffers `linear` plans (internal, not in `held`) in order of first use, with the
    first and last call naming each and whether a COPY names it (the copy lane), in a pass
    that keeps its scratch on the buffers (`scratch_pass`): a buffer met holds its number
    among those, or -1 (held, or a user buffer)."""
    bufs: list[UOp] = []
    first: list[int] = []
    last: list[int] = []
    copy: list[bool] = []
    BUFFER, MSTACK, MSELECT, COPY, CALL = Ops.BUFFER, Ops.MSTACK, Ops.MSELECT, Ops.COPY, Ops.CALL
    for i, call in enumerate(linear.src):
        src = call.src
        if call.op is not CALL or not src:
            raise ScheduleError(f"a LINEAR may only hold CALLs of a kernel, got {call.short()}")
        is_copy = src[0].op is COPY
        for j in range(1, len(src)):
            a = src[j]
            if a.op is BUFFER:
                named: tuple[UOp, ...] | list[UOp] = (a,)
            elif a.op is MSTACK or a.op is MSELECT:
                named = buffers_of(a)
            else:
                continue
            for b in named:
                if b._mark is tok:
                    k = b._scratch
                    if k >= 0:
                        last[k] = i
                        if is_copy:
                            copy[k] = True
                    continue
                b._mark = tok
                arg = b.arg
                if type(arg) is not tuple or len(arg) != 3 or type(arg[0]) is not int \
                        or type(arg[1]) is not str or type(arg[2]) is not int or arg[2] < 0:
                    bad_buffer(b)
                if arg[0] < 0 and b not in held:
                    b._scratch = len(bufs)
                    bufs.append(b)
                    first.append(i)
                    last.append(i)
                    copy.append(is_copy)
                else:
                    b._scratch = -1
    return bufs, first, last, copy


def check_buffer(b: UOp) -> UOp:
    """`b`, a BUFFER whose arg is (slot: int, device: str, size: int >= 0); ScheduleError
    naming it otherwise."""
    arg = b.arg
    if type(arg) is not tuple or len(arg) != 3 or type(arg[0]) is not int \
            or type(arg[1]) is not str or type(arg[2]) is not int or arg[2] < 0:
        bad_buffer(b)
    return b


def bad_buffer(b: UOp) -> None:
    raise ScheduleError(f"a BUFFER's arg must be (slot: int, device: str, size: int >= 0), got "
                        f"{b.arg!r} in {b.short()}"[:300])


def _slices(bufs: list[UOp], first: list[int], last: list[int], copy: list[bool]) -> list[UOp]:
    """The SLICE each of `_planned`'s buffers becomes: one arena per device and lane."""
    # copies and compute get separate arenas (lanes) so neither waits on the other
    lanes: dict[tuple[str, bool], list[int]] = {}
    for k, b in enumerate(bufs):
        lanes.setdefault((b.arg[1], copy[k]), []).append(k)
    slices: list[UOp] = bufs[:]  # each replaced below: every buffer is in a lane
    for (device, _), ks in lanes.items():
        nbytes = [bufs[k].arg[2] * bufs[k].dtype.itemsize for k in ks]
        plan = _plan(tuple(nbytes), tuple(first[k] for k in ks), tuple(last[k] for k in ks))
        arena = UOp(Ops.BUFFER, dtypes.uint8, (),
                    (fresh_internal_buffer_slot(), device, plan.arena))
        arena_src = (arena,)
        for k, nb, off in zip(ks, nbytes, plan.offsets):
            slices[k] = UOp(Ops.SLICE, bufs[k].dtype, arena_src, (off, nb))
    return slices


def _rewrite(tok: object, linear: UOp, bufs: list[UOp], slices: list[UOp]) -> UOp:
    """`linear` with ``bufs[k]`` replaced by ``slices[k]`` (also inside MSTACK and MSELECT),
    in a pass that marks each of `bufs` with its number (`scratch_pass`): an unmarked buffer
    stays. Kernel ASTs are untouched."""
    for k, b in enumerate(bufs):
        b._mark, b._scratch = tok, k
    BUFFER, MSTACK, MSELECT = Ops.BUFFER, Ops.MSTACK, Ops.MSELECT

    def leaf(a: UOp) -> UOp:
        return slices[a._scratch] if a.op is BUFFER and a._mark is tok else a

    calls = []
    for call in linear.src:
        src = call.src
        new = None  # the call's sources once one of them changes
        for j in range(1, len(src)):
            a = src[j]
            if a.op is BUFFER:
                if a._mark is not tok:
                    continue
                b = slices[a._scratch]
            elif a.op is MSTACK or a.op is MSELECT:
                b = map_join_leaves(a, leaf)
                if b is a:
                    continue
            else:
                continue
            if new is None:
                new = list(src)
            new[j] = b
        calls.append(call if new is None else UOp(call.op, call.dtype, tuple(new), call.arg))
    return UOp(linear.op, linear.dtype, tuple(calls), linear.arg)


@dataclass(frozen=True)
class LinearStats:
    """What a LINEAR costs in memory. Bytes of planned views and internal buffers only.

    `floor_bytes` is the peak of live bytes per device lane (sizes rounded up to the planner's
    alignment), summed over lanes: no plan can use less.
    """

    calls: int
    arena_bytes: dict[str, int]
    unplanned_bytes: int
    floor_bytes: int

    @property
    def arena_total(self) -> int:
        return sum(self.arena_bytes.values())

    @property
    def used_bytes(self) -> int:
        """The bytes the schedule takes: its arenas', or when nothing is planned the bytes of
        its buffers (NO_MEMORY_PLANNER)."""
        return self.arena_total if self.arena_bytes else self.unplanned_bytes

    @property
    def ratio(self) -> float:
        """Arena over floor (1.0 is perfect; 0 buffers gives 1.0)."""
        return self.arena_total / self.floor_bytes if self.floor_bytes else 1.0


def linear_stats(linear: UOp, held_bufs: Iterable[UOp] = ()) -> LinearStats:
    """Calls, planned arena bytes per device, bytes without planning, and the floor.

    Exact on a LINEAR before planning. On a planned one, the buffers are its SLICEs, and two
    buffers the plan put at one offset with one size and dtype (at different times) are one
    SLICE node: counted once, living from the first's first call to the second's last, so
    unplanned bytes and floor are those of the views, not of the buffers (the floor can then
    exceed the arena). `planned_stats` takes both LINEARs and is exact."""
    if not isinstance(linear, UOp) or linear.op is not Ops.LINEAR:
        got = linear.short() if isinstance(linear, UOp) else type(linear).__name__
        raise ScheduleError(f"linear_stats needs a LINEAR, got {got}")
    bufs, firsts, lasts, copy = scratch_pass(_planned, linear, _held(held_bufs, "linear_stats"))
    # buffers still to plan, in the planner's lanes; planned views get a lane per arena
    first: dict[UOp, int] = dict(zip(bufs, firsts))
    last: dict[UOp, int] = dict(zip(bufs, lasts))
    lane: dict[UOp, tuple] = {b: (b.device, c) for b, c in zip(bufs, copy)}
    arenas: dict[UOp, None] = {}
    for i, call in enumerate(linear.src):  # views already planned: a lane per arena
        for a in call.src[1:]:
            for v in buffers_of(a, Ops.SLICE):
                if len(v.src) != 1 or v.src[0].op is not Ops.BUFFER or type(v.arg) is not tuple \
                        or len(v.arg) != 2 or not all(type(x) is int for x in v.arg):
                    raise ScheduleError(f"a SLICE is SLICE(arena BUFFER) with arg (offset, "
                                        f"bytes), got {v.short()} over "
                                        f"{[x.op.name for x in v.src]}"[:300])
                arenas[check_buffer(v.src[0])] = None
                first.setdefault(v, i)
                last[v] = i
                lane[v] = (v.src[0],)
    arena_bytes: dict[str, int] = {}
    for ar in arenas:
        arena_bytes[ar.device] = arena_bytes.get(ar.device, 0) + ar.size
    by_lane: dict[tuple, list[UOp]] = {}
    for b, key in lane.items():
        by_lane.setdefault(key, []).append(b)
    floor = sum(
        floor_bytes([_nbytes(b) for b in bs], [first[b] for b in bs], [last[b] for b in bs],
                    alignment=ALIGNMENT)
        for bs in by_lane.values()
    )
    unplanned = sum(_nbytes(b) for b in first)
    return LinearStats(len(linear.src), arena_bytes, unplanned, floor)


def _nbytes(b: UOp) -> int:
    return b.arg[1] if b.op is Ops.SLICE else b.nbytes


def planned_stats(planned: UOp, unplanned: UOp, held_bufs: Iterable[UOp] = ()) -> LinearStats:
    """`linear_stats` of a schedule from both its forms: the calls and arenas of `planned`,
    the unplanned bytes and floor of `unplanned` (the LINEAR `memory_plan_rewrite` was given:
    its buffers are each their own node, where planned ones may share a SLICE node)."""
    st, raw = linear_stats(planned, held_bufs), linear_stats(unplanned, held_bufs)
    return LinearStats(st.calls, st.arena_bytes, raw.unplanned_bytes, raw.floor_bytes)
