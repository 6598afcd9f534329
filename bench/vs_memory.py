"""Memory of a planned schedule, for bench/vs_tinygrad.py: arena, floor and all buffer bytes.

The floor (peak of live bytes, sizes rounded to 256) is computed by tolk's `floor_bytes` for both
libraries, from the LINEAR before memory planning: tolk's under ``NO_MEMORY_PLANNER=1``,
tinygrad's as its `memory_plan_rewrite` receives it (buffers it may plan, per `_can_plan`).
"""

from __future__ import annotations

from tolk import schedule as tks
from tolk.helpers import Context as TolkContext
from tolk.schedule.planner import floor_bytes
from tolk.uop.ops import Ops

ALIGN = 256


def tolk_total(linear) -> int:
    """Bytes of every distinct buffer the planned schedule names (an arena once, whole)."""
    bufs = {}
    for call in linear.src:
        for a in call.src[1:]:
            b = a.src[0] if a.op is Ops.SLICE else a
            if b.op is Ops.BUFFER:
                bufs[b] = b.nbytes
    return sum(bufs.values())


def tg_total(linear) -> int:
    from tinygrad.uop.ops import Ops as TgOps

    bufs = {}
    for call in linear.src:
        for a in call.src[1:]:
            while a.op in (TgOps.BITCAST, TgOps.SHRINK):
                a = a.src[0]
            if a.op is TgOps.BUFFER:
                bufs[a] = a.max_numel() * a.dtype.itemsize
    return sum(bufs.values())


def tolk_memory(build) -> tuple[int, int]:
    """(arena bytes of the planned schedule, floor of the unplanned one)."""
    planned = build().schedule_linear()
    with TolkContext(SCACHE=0, NO_MEMORY_PLANNER=1):
        unplanned = build().schedule_linear()
    return tks.linear_stats(planned).arena_total, tks.linear_stats(unplanned).floor_bytes


def tg_memory(build) -> tuple[int, int]:
    """Arena and floor from the LINEAR tinygrad's memory planner receives and returns."""
    import tinygrad.schedule as tgs
    from tinygrad.schedule.memory import _can_plan, _collect_bufs
    from tinygrad.uop.ops import Ops as TgOps

    seen = {}
    orig = tgs.memory_plan_rewrite

    def spy(linear, held_bufs=None):
        seen["in"], seen["held"] = linear, held_bufs or set()
        seen["out"] = out = orig(linear, held_bufs)
        return out

    tgs.memory_plan_rewrite = spy
    try:
        build().schedule_linear()
    finally:
        tgs.memory_plan_rewrite = orig
    arenas = {}
    for call in seen["out"].src:
        for a in call.src[1:]:
            while a.op in (TgOps.BITCAST, TgOps.SHRINK):
                a = a.src[0]
            if a.op is TgOps.BUFFER and a.dtype.itemsize == 1 and a not in seen["held"]:
                arenas[a] = a.max_numel()
    first, last, lane = {}, {}, {}
    for i, call in enumerate(seen["in"].src):
        for a in call.src[1:]:
            for b in _collect_bufs(a):
                if _can_plan(b, seen["held"]):
                    first.setdefault(b, i)
                    last[b] = i
                    lane.setdefault(b, (str(b.device), call.src[0].op is TgOps.COPY))
    floor = 0
    for key in set(lane.values()):
        bs = [b for b in first if lane[b] == key]
        floor += floor_bytes([b.max_numel() * b.dtype.itemsize for b in bs],
                             [first[b] for b in bs], [last[b] for b in bs], alignment=ALIGN)
    return sum(arenas.values()), floor
