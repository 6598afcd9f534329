"""Memory planning of a LINEAR: internal BUFFERs -> SLICEs of one arena per device and lane.

Takes a LINEAR whose calls name BUFFERs (directly or inside MSTACK/MSELECT) and gives back
the same LINEAR where every planned buffer is ``SLICE(arena, arg=(byte_offset, nbytes))``.
Offsets come from the pure function `tolk.schedule.planner.assign_offsets`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field

from tolk.dtype import dtypes
from tolk.helpers import NO_MEMORY_PLANNER
from tolk.schedule.planner import Plan, assign_offsets, floor_bytes
from tolk.uop.ops import Ops, UOp, fresh_internal_buffer_slot

ALIGNMENT = 256


def _buffers_of(arg: UOp, op: Ops = Ops.BUFFER) -> list[UOp]:
    """The BUFFERs (or the nodes of another `op`: SLICEs) an argument names, looking through
    MSTACK/MSELECT."""
    if arg.op is op:
        return [arg]
    if arg.op in (Ops.MSTACK, Ops.MSELECT):
        return [b for s in arg.src for b in _buffers_of(s, op)]
    return []


@dataclass
class _Lifetimes:
    """Invariant: first[b] <= last[b]; both are call indices (inclusive)."""

    first: dict[UOp, int] = field(default_factory=dict)
    last: dict[UOp, int] = field(default_factory=dict)
    # (device, 1 in the copy lane else 0); linear_stats adds planned SLICEs as (arena,)
    lane: dict[UOp, tuple] = field(default_factory=dict)


def _lifetimes(linear: UOp, held: set[UOp]) -> _Lifetimes:
    """The lifetime and lane of every internal BUFFER of `linear` not in `held`."""
    lt = _Lifetimes()
    first, last = lt.first, lt.last
    copy_bufs: set[UOp] = set()
    BUFFER = Ops.BUFFER
    for i, call in enumerate(linear.src):
        is_copy = call.src[0].op is Ops.COPY
        for a in call.src[1:]:
            for b in (a,) if a.op is BUFFER else _buffers_of(a):
                if b.arg[0] < 0 and b not in held:
                    if b not in first:
                        first[b] = i
                    last[b] = i
                    if is_copy:
                        copy_bufs.add(b)
    # copies and compute get separate arenas (lanes) so neither waits on the other
    for b in first:
        lt.lane[b] = (b.device, 1 if b in copy_bufs else 0)
    return lt


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


def _rebuild(linear: UOp, mapping: dict[UOp, UOp]) -> UOp:
    """The LINEAR with buffer args (also inside MSTACK/MSELECT) replaced; kernel ASTs untouched."""

    def sub(a: UOp) -> UOp:
        if a in mapping:
            return mapping[a]
        if a.op in (Ops.MSTACK, Ops.MSELECT):
            return a.replace(src=tuple(sub(s) for s in a.src))
        return a

    get, MSTACK, MSELECT = mapping.get, Ops.MSTACK, Ops.MSELECT
    calls = []
    for call in linear.src:
        src = call.src
        new = None  # the call's sources once one of them changes
        for j in range(1, len(src)):
            a = src[j]
            b = sub(a) if a.op is MSTACK or a.op is MSELECT else get(a, a)
            if b is not a:
                if new is None:
                    new = list(src)
                new[j] = b
        calls.append(call if new is None else UOp(call.op, call.dtype, tuple(new), call.arg))
    return UOp(linear.op, linear.dtype, tuple(calls), linear.arg)


def memory_plan_rewrite(
    linear: UOp, held_bufs: Iterable[UOp] = (), *, enabled: bool | None = None
) -> UOp:
    """Replace the internal, non-held BUFFERs of `linear` with SLICEs of per-device arenas.

    A buffer lives from the first to the last call that names it; buffers whose lifetimes
    intersect never share bytes. Buffers used by COPY calls get their own arena per device.
    Held buffers (compared by identity) keep their identity and allocation: hold any buffer
    that outlives the schedule. Returns `linear` unchanged when NO_MEMORY_PLANNER is set
    (`enabled` overrides the flag) or nothing is plannable.
    """
    if not (not NO_MEMORY_PLANNER.value if enabled is None else enabled):
        return linear
    if linear.op is not Ops.LINEAR:
        raise ValueError(f"memory_plan_rewrite needs a LINEAR, got {linear.short()}")
    held = set(held_bufs)
    lt = _lifetimes(linear, held)
    if not lt.first:
        return linear
    lanes: dict[tuple[str, int], list[UOp]] = {}
    for b in lt.first:
        lanes.setdefault(lt.lane[b], []).append(b)
    mapping: dict[UOp, UOp] = {}
    for (device, _), bufs in lanes.items():
        plan = _plan(tuple(b.nbytes for b in bufs), tuple(lt.first[b] for b in bufs),
                     tuple(lt.last[b] for b in bufs))
        arena = UOp(Ops.BUFFER, dtypes.uint8, (),
                    (fresh_internal_buffer_slot(), device, plan.arena))
        for b, off in zip(bufs, plan.offsets):
            mapping[b] = UOp(Ops.SLICE, b.dtype, (arena,), (off, b.nbytes))
    return _rebuild(linear, mapping)


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
    def ratio(self) -> float:
        """Arena over floor (1.0 is perfect; 0 buffers gives 1.0)."""
        return self.arena_total / self.floor_bytes if self.floor_bytes else 1.0


def linear_stats(linear: UOp, held_bufs: Iterable[UOp] = ()) -> LinearStats:
    """Calls, planned arena bytes per device, bytes without planning, and the floor."""
    lt = _lifetimes(linear, set(held_bufs))  # buffers still to plan, in the planner's lanes
    first, last, lane = lt.first, lt.last, lt.lane
    arenas: dict[UOp, None] = {}
    for i, call in enumerate(linear.src):  # views already planned: a lane per arena
        for a in call.src[1:]:
            for v in _buffers_of(a, Ops.SLICE):
                arenas[v.src[0]] = None
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
