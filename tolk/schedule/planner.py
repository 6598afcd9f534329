"""Offset assignment for static memory planning: a pure function over (size, first, last).

Input: one lifetime per buffer, ``first`` and ``last`` the indices of the first and last
call that uses it (both inclusive), ``size`` in bytes. Output: byte offsets such that two
buffers whose lifetimes intersect never intersect in bytes, and the arena size.
"""

from __future__ import annotations

from dataclasses import dataclass

from tolk.helpers import round_up


@dataclass(frozen=True)
class Plan:
    """Offsets per buffer (input order) and the arena size in bytes.

    Invariant: buffers with intersecting lifetimes have disjoint ``[offset, offset+size)``.
    """

    offsets: tuple[int, ...]
    arena: int


def floor_bytes(sizes, firsts, lasts, alignment: int = 1) -> int:
    """The peak of live bytes over time (sizes rounded up to `alignment`): no plan beats it."""
    events: dict[int, int] = {}
    for size, first, last in zip(sizes, firsts, lasts):
        size = round_up(size, alignment)
        events[first] = events.get(first, 0) + size
        events[last + 1] = events.get(last + 1, 0) - size
    live = peak = 0
    for t in sorted(events):
        live += events[t]
        peak = max(peak, live)
    return peak


def assign_offsets(sizes, firsts, lasts, alignment: int = 256) -> Plan:
    """Greedy by size, best fit: place buffers largest first at the lowest offset that fits
    between the already-placed buffers whose lifetimes intersect."""
    n = len(sizes)
    order = sorted(range(n), key=lambda i: (-sizes[i], firsts[i], i))
    placed: list[tuple[int, int, int, int]] = []  # (offset, end, first, last)
    offsets = [0] * n
    arena = 0
    for i in order:
        size = round_up(max(sizes[i], 1), alignment)
        f, l = firsts[i], lasts[i]
        busy = sorted((o, e) for o, e, pf, pl in placed if pf <= l and f <= pl)
        best = None
        cur = 0
        for o, e in busy:
            if o - cur >= size and (best is None or o - cur < best[1]):
                best = (cur, o - cur)
            cur = max(cur, e)
        off = best[0] if best is not None else cur
        offsets[i] = off
        placed.append((off, off + size, f, l))
        arena = max(arena, off + size)
    return Plan(tuple(offsets), arena)
