"""Offset assignment for static memory planning: a pure function over (size, first, last).

Input: one lifetime per buffer, ``first`` and ``last`` the indices of the first and last
call that uses it (both inclusive), ``size`` in bytes. Output: byte offsets such that two
buffers whose lifetimes intersect never intersect in bytes, and the arena size.

The floor (the peak of live bytes) bounds every plan from below. `assign_offsets` runs a
small deterministic portfolio, cheapest first, and stops as soon as a plan reaches the floor:

1. skyline best fit (Sekiyama et al. 2018, "Profile-guided memory optimization for deep
   neural networks"): place the largest-area buffer that fits the lowest skyline segment;
   the workhorse, at the floor on model-like schedules and best on dense random ones;
2. sweep best fit: an online best-fit allocator replayed over the known lifetimes (larger
   buffers first among those born together); optimal when all sizes are equal, where the
   skyline is not;
3. greedy by size, best fit (Pisarchyk & Lee 2020), only while few lifetimes overlap (its
   cost is the number of overlapping pairs): it fills the narrow gaps the skyline must
   give up when lifetimes are short and sizes keep changing; then, under the same bound,
   greedy first fit (each buffer at the lowest offset free of the placed buffers it
   overlaps in time), longest lifetime first and largest area first. Before them, always,
   an online first-fit allocator replayed in order of first use (the lowest free block that
   fits), the plan a static planner must never lose to;
4. the skyline again, placing the longest-lived fitting buffer first;
5. for tiny instances, exact branch and bound over canonical first-fit sequences (the
   canonical solutions of Moffitt 2023, "MiniMalloc");
6. squeaky-wheel optimization (Joslin & Clements 1999) for small instances: buffers that
   ended above the floor get a higher skyline score and the skyline reruns.

Work is bounded by counts derived from the input, never by a clock, so a plan depends only
on its input.
"""

from __future__ import annotations

import heapq
import operator
from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from tolk.errors import ScheduleError
from tolk.helpers import int_arg

# Work limits: counts, never clocks, so that a plan depends on its input only.
EXACT_MAX_BUFFERS = 8  # exact search up to this many buffers (its cost is factorial)
EXACT_NODE_BUDGET = 20_000
GREEDY_PAIRS = 16  # greedy by size runs while overlapping pairs <= this times n
SKYLINE_RERUN_BUFFERS = 50_000  # skyline reruns only for up to this many buffers
SKYLINE_RERUN_SCANS = 300_000_000  # and only if the first run scanned fewer candidates
SQUEAKY_WORK = 8_000  # buffers placed by all squeaky-wheel rounds together, at most
SQUEAKY_MAX_ROUNDS = 24
SQUEAKY_BOOST = 2.0
_NUMPY_SCAN = 40  # candidate scans longer than this use numpy
_REBUILD_DEAD = 4  # a skyline view is rebuilt when over 1/_REBUILD_DEAD of it is placed
_BLOCK = 256  # views longer than _BLOCKED_VIEW keep a score bound per block of this many positions
_BLOCKED_VIEW = 8 * _BLOCK
_RANK_AFTER = 8  # a view ranks its buffers (`_View.best`) after this many whole-view queries


@dataclass(frozen=True)
class Plan:
    """Offsets per buffer (input order) and the arena size in bytes.

    Invariant: buffers with intersecting lifetimes have disjoint ``[offset, offset+size)``.
    """

    offsets: tuple[int, ...]
    arena: int


def floor_bytes(sizes, firsts, lasts, alignment: int = 1) -> int:
    """The peak of live bytes over time (sizes rounded up to `alignment`): no plan beats it.
    Raises `ScheduleError` for the inputs `assign_offsets` refuses."""
    sizes, firsts, lasts = _ints(sizes), _ints(firsts), _ints(lasts)
    alignment = int_arg(alignment, "alignment")
    _check(sizes, firsts, lasts, alignment)
    return _floor(sizes, firsts, lasts, alignment)


def _floor(sizes: list[int], firsts: list[int], lasts: list[int], alignment: int = 1) -> int:
    events: dict[int, int] = {}
    for size, first, last in zip(sizes, firsts, lasts):
        size = -(-size // alignment) * alignment
        events[first] = events.get(first, 0) + size
        events[last + 1] = events.get(last + 1, 0) - size
    live = peak = 0
    for t in sorted(events):
        live += events[t]
        peak = max(peak, live)
    return peak


def assign_offsets(sizes, firsts, lasts, alignment: int = 256) -> Plan:
    """Byte offsets for buffers live from call `firsts[i]` to `lasts[i]` (inclusive).

    Sizes are rounded up to `alignment`; offsets are multiples of it. A buffer of size 0
    takes no bytes and gets offset 0. Deterministic: equal inputs give equal plans.
    Raises `ScheduleError` (a `ValueError`) for mismatched lengths, a negative size, a
    lifetime with first > last, or an alignment below 1.
    """
    sizes, firsts, lasts = _ints(sizes), _ints(firsts), _ints(lasts)
    alignment = int_arg(alignment, "alignment")
    _check(sizes, firsts, lasts, alignment)
    units = [-(-s // alignment) for s in sizes]
    keep = [i for i, u in enumerate(units) if u > 0]
    offsets = [0] * len(sizes)
    if keep:
        prob = _Problem.build(
            [units[i] for i in keep], [firsts[i] for i in keep], [lasts[i] for i in keep]
        )
        for i, off in zip(keep, _solve(prob)):
            offsets[i] = off * alignment
    arena = max((o + u * alignment for o, u in zip(offsets, units)), default=0)
    return Plan(tuple(offsets), arena)


def find_overlaps(sizes, firsts, lasts, offsets, limit: int = 100) -> list[tuple[int, int]]:
    """Pairs ``(i, j)``, i < j, of buffers live at a common call whose bytes intersect.

    Empty exactly when the plan is valid: a sweep over time keeps the live buffers sorted by
    offset and checks each new one against its neighbours, so the first overlap is always
    found; once the live set overlaps, later pairs may be missed. Stops at `limit` pairs.
    Raises `ScheduleError` for the inputs `assign_offsets` refuses or an offset list of
    another length.
    """
    if type(limit) is not int or limit < 1:
        raise ScheduleError(f"find_overlaps needs a limit of at least 1 pair, got {limit!r} "
                            "(an empty answer must mean a valid plan)")
    sizes, firsts, lasts, offsets = _ints(sizes), _ints(firsts), _ints(lasts), _ints(offsets)
    _check(sizes, firsts, lasts, 1)
    if len(offsets) != len(sizes):
        raise ScheduleError(f"offsets must have one entry per buffer: {len(offsets)} offsets "
                            f"for {len(sizes)} buffers")
    n = len(sizes)
    frees = [(lasts[i] + 1, 0, i) for i in range(n)]  # at a shared step frees go first
    events = sorted(frees + [(firsts[i], 1, i) for i in range(n)])
    active: list[tuple[int, int, int]] = []  # (offset, end, index), sorted
    found: list[tuple[int, int]] = []
    for _, is_alloc, i in events:
        if sizes[i] <= 0:
            continue
        item = (offsets[i], offsets[i] + sizes[i], i)
        if not is_alloc:
            del active[bisect_left(active, item)]
            continue
        k = bisect_left(active, item)
        for j in range(k - 1, -1, -1):  # lower offsets: while all is disjoint, one check
            if active[j][1] <= item[0]:
                break
            found.append((min(i, active[j][2]), max(i, active[j][2])))
        for j in range(k, len(active)):  # equal or higher offsets, up to the new end
            if active[j][0] >= item[1]:
                break
            found.append((min(i, active[j][2]), max(i, active[j][2])))
        if len(found) >= limit:
            return found[:limit]
        active.insert(k, item)
    return found


_LIMIT = 1 << 63  # sizes and call numbers are below it (64-bit; the scores stay finite)


def _ints(values) -> list[int]:
    """Python ints (numpy integers are accepted; floats and bools raise TypeError)."""
    out = []
    for v in values:  # (one pass: `values` may be an iterator)
        if v is True or v is False or isinstance(v, np.bool_):
            raise TypeError("sizes, calls and offsets must be ints, got a bool")
        out.append(operator.index(v))
    return out


def _check(sizes: list, firsts: list, lasts: list, alignment: int) -> None:
    if not len(sizes) == len(firsts) == len(lasts):
        raise ScheduleError(
            f"sizes, firsts and lasts must have one entry per buffer, got lengths "
            f"{len(sizes)}, {len(firsts)}, {len(lasts)}"
        )
    if alignment < 1:
        raise ScheduleError(f"alignment must be at least 1, got {alignment}")
    for i, (s, f, l) in enumerate(zip(sizes, firsts, lasts)):
        if s < 0:
            raise ScheduleError(f"buffer {i} has negative size {s}")
        if f > l:
            raise ScheduleError(f"buffer {i} has first call {f} after last call {l}")
        if s >= _LIMIT or not -_LIMIT <= f <= l < _LIMIT:
            def show(v: int) -> str:
                sign = "-" if v < 0 else ""
                return str(v) if abs(v) < _LIMIT else f"{sign}2**{abs(v).bit_length() - 1}+"
            raise ScheduleError(f"buffer {i}: size {show(s)}, calls {show(f)}..{show(l)}: each "
                                "must be below 2**63 in magnitude")


@dataclass(frozen=True)
class _Problem:
    """Buffers in alignment units with lifetimes compressed to dense time steps.

    Invariant: sizes >= 1; 0 <= first[i] <= last[i] < steps; two lifetimes intersect after
    compression exactly when they did before. `length` keeps the uncompressed lifetimes.
    """

    sizes: list[int]
    first: list[int]
    last: list[int]
    length: list[int]
    steps: int
    floor: int

    @staticmethod
    def build(sizes: list[int], firsts: list[int], lasts: list[int]) -> _Problem:
        points = sorted(set(firsts).union(l + 1 for l in lasts))
        rank = {t: k for k, t in enumerate(points)}
        first = [rank[f] for f in firsts]
        last = [rank[l + 1] - 1 for l in lasts]
        length = [l + 1 - f for f, l in zip(firsts, lasts)]
        return _Problem(
            sizes, first, last, length, len(points) - 1, _floor(sizes, first, last)
        )


class _Best:
    """The lowest-arena plan offered so far; ties keep the earlier one."""

    def __init__(self, prob: _Problem):
        self.prob = prob
        self.offsets: list[int] = []
        self.arena = -1

    def offer(self, offsets: list[int]) -> None:
        arena = max(o + s for o, s in zip(offsets, self.prob.sizes))
        if self.arena < 0 or arena < self.arena:
            self.offsets, self.arena = offsets, arena

    @property
    def done(self) -> bool:
        return self.arena == self.prob.floor


def _solve(prob: _Problem) -> list[int]:
    """Offsets in units for `prob`: the portfolio of the module docstring, cheapest first."""
    n = len(prob.sizes)
    best = _Best(prob)
    area = [s * l for s, l in zip(prob.sizes, prob.length)]
    first_sky, scanned = _skyline(prob, area)
    best.offer(first_sky)
    affordable = n <= SKYLINE_RERUN_BUFFERS and scanned <= SKYLINE_RERUN_SCANS
    few_pairs: list[bool] = []  # whether the greedy passes are affordable: asked once
    neighbours: list[list[list[int]]] = []  # made once, for every greedy pass

    def greedy(order: Callable[[int], tuple], best_fit: bool) -> list[int] | None:
        if not few_pairs:
            few_pairs.append(_overlap_pairs(prob) <= GREEDY_PAIRS * n)
        if not few_pairs[0]:
            return None
        if not neighbours:
            neighbours.append(_neighbours(prob))
        return _greedy(prob, neighbours[0], sorted(range(n), key=order), best_fit)

    sizes, first, length = prob.sizes, prob.first, prob.length
    steps = [
        lambda: _sweep_best_fit(prob),
        lambda: _sweep_first_fit(prob),  # an online first-fit allocator's plan: the bar
        lambda: greedy(lambda i: (-sizes[i], first[i], i), True),  # greedy by size
        lambda: greedy(lambda i: (-length[i], first[i], i), False),
        lambda: greedy(lambda i: (-sizes[i] * length[i], first[i], i), False),
        lambda: _skyline(prob, _lexicographic(prob.length, prob.sizes))[0] if affordable else None,
        lambda: _exact(prob, best.arena) if n <= EXACT_MAX_BUFFERS else None,
    ]
    for step in steps:
        if best.done:
            return best.offsets
        offsets = step()
        if offsets is not None:
            best.offer(offsets)
    rounds = min(SQUEAKY_MAX_ROUNDS, SQUEAKY_WORK // n) if affordable else 0
    _squeaky_wheel(prob, best, area, first_sky, rounds)
    return best.offsets


def _lexicographic(major: list[int], minor: list[int]) -> list[float]:
    """Scores ordering by `major`, then `minor`, exactly representable as floats."""
    ranks = {v: r for r, v in enumerate(sorted(set(minor)))}
    return [float(a * len(ranks) + ranks[b]) for a, b in zip(major, minor)]


def _squeaky_wheel(
    prob: _Problem, best: _Best, base: list[int], offsets: list[int], rounds: int
) -> None:
    """Squeaky-wheel rounds: raise the skyline score of each buffer that ended above the
    floor, in proportion to how far above, and rerun the skyline from those scores."""
    sizes = np.asarray(prob.sizes, dtype=np.float64)
    score = np.asarray(base, dtype=np.float64)
    for _ in range(rounds):
        if best.done:
            return
        top = np.asarray(offsets, dtype=np.float64) + sizes
        over = np.maximum(top - prob.floor, 0.0)
        score = score * (1.0 + SQUEAKY_BOOST * over / (top.max() - prob.floor + 1.0))
        offsets = _skyline(prob, score.tolist())[0]
        best.offer(offsets)


# ---------------------------------------------------------------------------------------------
# skyline best fit


class _Values(NamedTuple):
    """The Python objects the skyline's lists hold, one per value and shared by every list of
    a run: the ints 0..n (positions, buffer numbers, time steps) as an object array to index with
    numpy and as a list, and the distinct scores, indexed by a code per buffer. A list made by
    ``tolist()`` would make an object per entry, some ten per buffer: at 100k buffers tens of MB
    that no CPU cache holds, read once per level of the skyline; shared, they are a compact table
    (the same plans; 100k-buffer plans 7-34% faster, smaller ones within a few percent)."""

    ints: np.ndarray
    ints_l: list[int]
    floats: np.ndarray


_SHARED_INTS_MAX = 1 << 17  # the table of int objects kept between runs, at most this long
_shared_ints: tuple[np.ndarray, list[int]] = (np.empty(0, dtype=object), [])


def _values(count: int, score: np.ndarray) -> tuple[_Values, np.ndarray]:
    """The shared objects of a run whose ints are below `count`, and the code of each score."""
    uniq, code = np.unique(score, return_inverse=True)
    return _Values(*_int_table(count), np.array(uniq.tolist(), dtype=object)), code


def _int_table(n: int) -> tuple[np.ndarray, list[int]]:
    """The ints 0..n-1 as one object each (an object array and a list), from the table kept
    between runs when it is long enough (grown up to `_SHARED_INTS_MAX`)."""
    global _shared_ints
    table = _shared_ints
    if len(table[1]) >= n:
        return table
    table_l = list(range(n if n > _SHARED_INTS_MAX else max(n, min(2 * len(table[1]),
                                                                    _SHARED_INTS_MAX))))
    table = np.array(table_l, dtype=object), table_l
    if len(table_l) <= _SHARED_INTS_MAX:
        _shared_ints = table  # one assignment: a thread reads the old table or the new one
    return table


class _View:
    """Unplaced buffers sorted by one end of their lifetime (`key`), ties by index.

    `start[t]` is the first position whose key is >= t. Placed buffers keep their position
    with score -1 until they outnumber 1/_REBUILD_DEAD of the view and of the time steps, then
    it is rebuilt (a rebuild costs time in both, so the rebuilds of one run cost time linear
    in both). Which view a query scans decides ties (the lowest position in it), so the
    rebuilds are part of what makes a plan: equal inputs, equal rebuilds, equal plans.
    A long view (over _BLOCKED_VIEW positions) also keeps, per block of _BLOCK positions, a
    bound on its highest score (`block_score`: exact when built, and made exact again by the
    scan that finds it too high) and the lowest and highest other end (`block_other_min`,
    `block_other_max`, placed buffers included), so that a scan whose every candidate fits
    reads one entry per whole block (`_scan_blocks`). Every view keeps the extremes of the
    other end over all its positions (`other_min`, `other_max`): a scan whose bound lies
    beyond them knows without a look that every position fits.
    """

    def __init__(self, ids: np.ndarray, key: np.ndarray, other: np.ndarray, score: np.ndarray,
                 code: np.ndarray, steps: int, placed: bytearray, values: _Values):
        self.steps = steps
        self.values = values  # the objects every list holds (`_Values`); `code`: of the scores
        pos = np.zeros(len(ids), dtype=np.int64)
        pos[ids] = np.arange(len(ids))
        self.pos = values.ints[pos].tolist()  # by buffer: its position (kept once placed)
        self.placed = placed  # by buffer: 1 once placed (shared by the views of one run)
        self.ranked: list[int] | None = None  # see `best`
        self.top = 0
        self.whole = 0  # queries of the whole view in which every position fits
        self._rebuild(ids, key, other, score, code)

    def _rebuild(self, ids, key, other, score, code) -> None:
        self.ids, self.key, self.other, self.score, self.code = ids, key, other, score, code
        ints = self.values.ints
        counts = np.bincount(key, minlength=self.steps + 1)[:self.steps]
        self.start = [0, *ints[np.cumsum(counts)].tolist()]
        self.ids_l, self.other_l = ints[ids].tolist(), ints[other].tolist()
        self.score_l = self.values.floats[code].tolist()
        pos = self.pos
        for p, i in zip(self.values.ints_l, self.ids_l):
            pos[i] = p
        self.dead = 0
        self.other_min = int(other.min()) if len(ids) else 0
        self.other_max = int(other.max()) if len(ids) else 0
        self.blocked = len(ids) > _BLOCKED_VIEW
        if self.blocked:
            pad = -len(ids) % _BLOCK
            shape = (-1, _BLOCK)
            self.block_score = np.pad(score, (0, pad), constant_values=-1.0).reshape(shape).max(1)
            other_pad = np.pad(other, (0, pad), mode="edge").reshape(shape)
            self.block_other_min, self.block_other_max = other_pad.min(1), other_pad.max(1)

    def best(self) -> int:
        """The highest-score unplaced buffer of the whole view, the lowest position among
        equals; -1 when none. Scores only change when a buffer is placed, so the buffers are
        ranked once, on the first call (positions keep their order through rebuilds), and a
        cursor passes the placed ones."""
        ranked = self.ranked
        if ranked is None:
            live = np.flatnonzero(self.score >= 0)
            order = self.ids[live[np.lexsort((live, -self.score[live]))]]
            ranked = self.ranked = self.values.ints[order].tolist()
        placed, t = self.placed, self.top
        while t < len(ranked) and placed[ranked[t]]:
            t += 1
        self.top = t
        return ranked[t] if t < len(ranked) else -1

    def remove(self, i: int) -> None:
        p = self.pos[i]
        self.score[p] = -1.0
        self.score_l[p] = -1.0
        self.dead += 1
        if self.dead * _REBUILD_DEAD > len(self.ids_l) + (self.steps >> 2) + 64:
            live = self.score >= 0
            self._rebuild(self.ids[live], self.key[live], self.other[live], self.score[live],
                          self.code[live])


class _Candidates:
    """Which unplaced buffer to put on skyline segment [s, e]: among those that fit
    (s <= first and last <= e) the highest score, ties to the lowest position.

    Two views: by first (scan firsts in [s, e], keep last <= e) and by last (scan lasts in
    [s, e], keep first >= s); each query scans the shorter range.
    """

    def __init__(self, prob: _Problem, score: list[float]):
        n = len(prob.sizes)
        sc = np.asarray(score, dtype=np.float64)
        first = np.asarray(prob.first, dtype=np.int64)
        last = np.asarray(prob.last, dtype=np.int64)
        by_first = np.lexsort((np.arange(n), first))
        by_last = np.lexsort((np.arange(n), last))
        self.placed = bytearray(n)
        self.values, code = _values(max(n, prob.steps) + 2, sc)
        self.by_first = _View(by_first, first[by_first], last[by_first], sc[by_first],
                              code[by_first], prob.steps, self.placed, self.values)
        self.by_last = _View(by_last, last[by_last], first[by_last], sc[by_last], code[by_last],
                             prob.steps, self.placed, self.values)
        self.scanned = 0

    def pick(self, s: int, e: int) -> int:
        """The buffer to place on [s, e], or -1 when none fits."""
        vf, vl = self.by_first, self.by_last
        a0, a1 = vf.start[s], vf.start[e + 1]
        b0, b1 = vl.start[s], vl.start[e + 1]
        if a1 - a0 <= b1 - b0:
            self.scanned += a1 - a0
            return _scan(vf, a0, a1, e, True)
        self.scanned += b1 - b0
        return _scan(vl, b0, b1, s, False)

    def remove(self, i: int) -> None:
        self.placed[i] = 1
        self.by_first.remove(i)
        self.by_last.remove(i)


def _scan(v: _View, lo: int, hi: int, bound: int, at_most: bool) -> int:
    """Highest-score buffer in positions [lo, hi) whose other end is <= bound (at_most) or
    >= bound, the lowest position among equals; -1 when none."""
    if hi - lo > _NUMPY_SCAN:
        every = bound >= v.other_max if at_most else bound <= v.other_min  # fits, no look
        if every and hi - lo == len(v.ids_l):  # the whole view: its best, once it is ranked
            v.whole += 1
            if v.whole > _RANK_AFTER:
                return v.best()
        if hi - lo > 4 * _BLOCK and v.blocked:  # long enough for whole blocks between the ends
            found = _scan_blocks(v, lo, hi, bound, at_most, every)
            if found is not None:
                return found
        if every:
            k = lo + int(v.score[lo:hi].argmax())
            return v.ids_l[k] if v.score_l[k] >= 0 else -1
        other = v.other[lo:hi]
        ok = other <= bound if at_most else other >= bound
        w = np.where(ok, v.score[lo:hi], -1.0)
        k = int(w.argmax())
        return v.ids_l[lo + k] if w[k] >= 0 else -1
    best, j = -1.0, -1
    other, score = v.other_l, v.score_l
    for p in range(lo, hi):
        if score[p] > best and (other[p] <= bound if at_most else other[p] >= bound):
            best, j = score[p], p
    return v.ids_l[j] if j >= 0 else -1


def _scan_blocks(v: _View, lo: int, hi: int, bound: int, at_most: bool,
                 every: bool) -> int | None:
    """`_scan` of a long range (whole blocks between its ends) in a blocked view when every
    position in it fits `bound` (None when some may not): the partial blocks at both ends are
    scanned, and of the whole blocks between only the first of the highest bound, once that
    bound is its true maximum. The same answer as the scan: the highest score, the lowest
    position among equals. `every`: the view's own extremes say every position fits."""
    b0, b1 = -(-lo // _BLOCK), hi // _BLOCK  # the whole blocks [b0, b1)
    mid0, mid1 = b0 * _BLOCK, b1 * _BLOCK
    other = v.other
    if at_most:
        fits = every or (
            v.block_other_max[b0:b1].max() <= bound
            and (lo == mid0 or other[lo:mid0].max() <= bound)
            and (mid1 == hi or other[mid1:hi].max() <= bound))
    else:
        fits = every or (
            v.block_other_min[b0:b1].min() >= bound
            and (lo == mid0 or other[lo:mid0].min() >= bound)
            and (mid1 == hi or other[mid1:hi].min() >= bound))
    if not fits:
        return None
    score, score_l = v.score, v.score_l  # the array for whole ranges, the list for one entry
    best, at = -1.0, -1
    if lo < mid0:
        at = lo + int(score[lo:mid0].argmax())
        best = score_l[at]
    bound_of = v.block_score
    while True:  # the first block of the highest bound, until that bound is its true maximum
        kb = b0 + int(bound_of[b0:b1].argmax())
        start = kb * _BLOCK
        k = start + int(score[start:start + _BLOCK].argmax())
        top = score_l[k]
        if not top < float(bound_of[kb]):  # exact (a NaN could never be corrected: stop too)
            break
        bound_of[kb] = top
    if top > best:
        best, at = top, k
    if mid1 < hi:
        k = mid1 + int(score[mid1:hi].argmax())
        if score_l[k] > best:
            best, at = score_l[k], k
    return v.ids_l[at] if best >= 0 else -1


def _skyline(prob: _Problem, score: list[float]) -> tuple[list[int], int]:
    """Skyline best fit (Sekiyama et al. 2018): (offsets, candidate positions scanned).

    The skyline splits time into segments with a height each, at or above every placed
    buffer. Repeatedly take the lowest segment (leftmost on ties); place on it the
    best-scoring unplaced buffer whose lifetime lies within the segment, or, when none
    fits, raise the segment to its lower neighbour and merge them.
    """
    cand = _Candidates(prob, score)
    sky = _Sky(prob.steps, cand.values.ints_l)
    sizes, first, last = prob.sizes, prob.first, prob.last
    offsets = [0] * len(sizes)
    left = len(sizes)
    # the next segment: the lower of the level's sorted starts (cur, from ci) and its extra ones
    cur, ci, extra, pending, heights = [0], 0, sky.extra, sky.pending, sky.heights
    heappop = heapq.heappop
    while left:
        if ci < len(cur):
            s = cur[ci]
            if extra and extra[0] < s:
                s = heappop(extra)
            else:
                ci += 1
        elif extra:
            s = heappop(extra)
        else:  # the next level up
            sky.level = heappop(heights)
            cur, ci = pending.pop(sky.level), 0
            cur.sort()
            continue
        h = sky.level
        e = sky.end[s]
        if e < 0 or sky.height[s] != h:
            continue  # stale entry
        i = cand.pick(s, e)
        if i < 0:
            sky.lift(s, e)
            continue
        cand.remove(i)
        offsets[i] = h
        left -= 1
        sky.place(s, e, first[i], last[i], h + sizes[i])
    return offsets, cand.scanned


class _Sky:
    """Skyline segments over time steps [0, steps).

    Invariant: segments partition the steps; `end[s]` is the last step of the segment
    starting at s (-1 when s starts none), `height[s]` its height, `start_of[e]` the start
    of the segment ending at e; neighbours differ in height.

    The skyline takes segments lowest first, leftmost among equals, and no segment set after
    one is taken is lower than it (a placement leaves segments of the height taken, at starts
    not left of it, and every other segment it makes is higher; a lift raises a segment to a
    neighbour, higher than the lowest). So the segments wait in levels, not one heap: the
    starts set at the height being filled (`level`) in a small heap (`extra`), those of each
    higher height in a list (`pending`) sorted when its level comes (`heights`: a heap of the
    pending heights). Every segment is in one of them, with stale entries beside.
    """

    def __init__(self, steps: int, ints: list[int]):
        self.steps = steps
        self.ints = ints  # the shared int objects (`_Values`): what the tables hold
        self.end = [-1] * (steps + 1)
        self.height = [0] * (steps + 1)
        self.start_of = [-1] * (steps + 1)
        self.end[0], self.start_of[steps - 1] = steps - 1, 0
        self.level = 0  # the height being filled: no segment is lower
        self.extra: list[int] = []  # starts set at that height while filling it, a heap
        self.pending: dict[int, list[int]] = {}  # starts of higher segments, by height
        self.heights: list[int] = []  # the keys of `pending`, a heap

    def _set(self, s: int, e: int, h: int) -> None:
        ints = self.ints
        self.end[s], self.start_of[e], self.height[s] = ints[e], ints[s], h
        if h == self.level:
            heapq.heappush(self.extra, s)
            return
        starts = self.pending.get(h)
        if starts is None:
            self.pending[h] = [s]
            heapq.heappush(self.heights, h)
        else:
            starts.append(s)

    def place(self, s: int, e: int, f: int, l: int, top: int) -> None:
        """Cover steps [f, l] of segment [s, e] with a buffer reaching height `top`."""
        h = self.height[s]
        if f > s:
            self._set(s, f - 1, h)
        if l < e:
            self._set(l + 1, e, h)
        self._merge(f, l, top)

    def lift(self, s: int, e: int) -> None:
        """Raise segment [s, e] to its lower neighbour: nothing fits below that."""
        hl = self.height[self.start_of[s - 1]] if s > 0 else None
        hr = self.height[e + 1] if e + 1 < self.steps else None
        assert hl is not None or hr is not None, "a lone segment always fits a buffer"
        h = hl if hr is None or (hl is not None and hl < hr) else hr
        self._merge(s, e, h)

    def _merge(self, s: int, e: int, h: int) -> None:
        """Make [s, e] a segment of height h, absorbing neighbours of the same height."""
        if s > 0:
            ps = self.start_of[s - 1]
            if self.height[ps] == h:
                self.end[s] = -1
                s = ps
        if e + 1 < self.steps and self.height[e + 1] == h and self.end[e + 1] >= 0:
            ne = self.end[e + 1]
            self.end[e + 1] = -1
            e = ne
        self._set(s, e, h)


# ---------------------------------------------------------------------------------------------
# sweep best fit


def _sweep_best_fit(prob: _Problem) -> list[int]:
    """Replay the lifetimes through a best-fit allocator with coalescing free blocks.

    At each step, frees come before allocations and larger buffers allocate first. A
    request takes the smallest free block that fits (lowest address on ties), else grows
    the arena from the free block touching its top, else from the top.
    """
    steps, sizes = prob.steps, prob.sizes
    born: list[list[int]] = [[] for _ in range(steps + 1)]
    dies: list[list[int]] = [[] for _ in range(steps + 1)]
    for i in sorted(range(len(sizes)), key=lambda i: (-sizes[i], i)):
        born[prob.first[i]].append(i)
        dies[prob.last[i] + 1].append(i)
    blocks = _FreeBlocks()
    offsets = [0] * len(sizes)
    for t in range(steps):
        for i in dies[t]:
            blocks.free(offsets[i], sizes[i])
        for i in born[t]:
            offsets[i] = blocks.alloc(sizes[i])
    return offsets


SWEEP_FIRST_FIT_WORK = 64  # free blocks the first-fit replay may scan, per buffer (plus 1M)


def _sweep_first_fit(prob: _Problem) -> list[int] | None:
    """Replay the lifetimes through an online first-fit allocator: at each step frees come
    first, then each buffer born there (in index order) takes the lowest free block that
    fits, else grows the arena from the free block touching its top, else from the top.
    None past `SWEEP_FIRST_FIT_WORK` scanned blocks per buffer (a count, never a clock)."""
    steps, sizes = prob.steps, prob.sizes
    born: list[list[int]] = [[] for _ in range(steps + 1)]
    dies: list[list[int]] = [[] for _ in range(steps + 1)]
    for i in range(len(sizes)):
        born[prob.first[i]].append(i)
        dies[prob.last[i] + 1].append(i)
    starts: list[int] = []  # free blocks below `top`, by start; none touch
    size_at: dict[int, int] = {}
    top, budget = 0, SWEEP_FIRST_FIT_WORK * len(sizes) + 1_000_000
    offsets = [0] * len(sizes)
    for t in range(steps):
        for i in dies[t]:
            start, end = offsets[i], offsets[i] + sizes[i]
            k = bisect_left(starts, start)
            if k < len(starts) and starts[k] == end:  # merge with the block after it
                end += size_at.pop(end)
                del starts[k]
            if k > 0 and starts[k - 1] + size_at[starts[k - 1]] == start:  # and before it
                k -= 1
                start = starts[k]
                del starts[k]
            if end == top:  # a free block at the top is no block: the arena's end moves down
                top = start
                size_at.pop(start, None)
            else:
                starts.insert(k, start)
                size_at[start] = end - start
        for i in born[t]:
            need = sizes[i]
            for k, start in enumerate(starts):
                if size_at[start] >= need:
                    rest = size_at.pop(start) - need
                    if rest:
                        starts[k] = start + need
                        size_at[start + need] = rest
                    else:
                        del starts[k]
                    offsets[i] = start
                    break
            else:
                k = len(starts)
                offsets[i] = top
                top += need
            budget -= k + 1
            if budget < 0:
                return None
    return offsets


class _FreeBlocks:
    """Free blocks below `top`, coalesced.

    Invariant: `by_start` and `by_end` map each free block's start to its size and end to
    its start; `blocks` holds (size, start) of each, sorted; no two free blocks touch.
    """

    def __init__(self) -> None:
        self.by_start: dict[int, int] = {}
        self.by_end: dict[int, int] = {}
        self.blocks: list[tuple[int, int]] = []
        self.top = 0

    def _take(self, start: int, size: int) -> None:
        del self.by_start[start], self.by_end[start + size]
        del self.blocks[bisect_left(self.blocks, (size, start))]

    def _put(self, start: int, size: int) -> None:
        self.by_start[start], self.by_end[start + size] = size, start
        insort(self.blocks, (size, start))

    def alloc(self, size: int) -> int:
        k = bisect_left(self.blocks, (size, -1))
        if k < len(self.blocks):
            bsize, start = self.blocks[k]
            self._take(start, bsize)
            if bsize > size:
                self._put(start + size, bsize - size)
            return start
        start = self.by_end.get(self.top, self.top)
        if start != self.top:
            self._take(start, self.top - start)
        self.top = start + size
        return start

    def free(self, start: int, size: int) -> None:
        end = start + size
        left = self.by_end.get(start)
        if left is not None:
            self._take(left, start - left)
            start = left
        right = self.by_start.get(end)
        if right is not None:
            self._take(end, right)
            end += right
        self._put(start, end - start)


# ---------------------------------------------------------------------------------------------
# greedy by size


def _overlap_pairs(prob: _Problem) -> int:
    """How many pairs of buffers overlap in time."""
    first = np.asarray(prob.first, dtype=np.int64)
    last = np.asarray(prob.last, dtype=np.int64)
    starts_by = np.searchsorted(np.sort(first), last, side="right")  # j with first_j <= last_i
    ended_before = np.searchsorted(np.sort(last), first, side="left")  # j with last_j < first_i
    return int((starts_by - ended_before - 1).sum()) // 2


def _neighbours(prob: _Problem) -> list[list[int]]:
    """For each buffer, the buffers whose lifetimes intersect its own."""
    n = len(prob.sizes)
    first, last = prob.first, prob.last
    order = sorted(range(n), key=lambda i: (first[i], i))
    firsts = [first[i] for i in order]
    out: list[list[int]] = [[] for _ in range(n)]
    for p, i in enumerate(order):
        for q in range(p + 1, bisect_right(firsts, last[i])):
            j = order[q]
            out[i].append(j)
            out[j].append(i)
    return out


def _greedy(prob: _Problem, neighbours: list[list[int]], order: list[int],
            best_fit: bool) -> list[int]:
    """Buffers placed one by one in `order`, each into a gap between the placed buffers it
    overlaps in time (`neighbours`): the smallest that fits (`best_fit`: greedy by size,
    Pisarchyk & Lee 2020, with the largest first) or the lowest; else on top of them."""
    sizes = prob.sizes
    offsets = [-1] * len(sizes)
    for i in order:
        busy = sorted((offsets[j], offsets[j] + sizes[j]) for j in neighbours[i] if offsets[j] >= 0)
        best, best_gap, cur = -1, 0, 0
        for lo, hi in busy:
            gap = lo - cur
            if gap >= sizes[i] and (best < 0 or gap < best_gap):
                best, best_gap = cur, gap
                if not best_fit:
                    break
            cur = max(cur, hi)
        offsets[i] = best if best >= 0 else cur
    return offsets


# ---------------------------------------------------------------------------------------------
# exact search for tiny instances


def _exact(prob: _Problem, upper: int) -> list[int] | None:
    """The best plan below `upper` among canonical first-fit sequences, or None.

    Placing buffers one by one, each at the lowest offset free of the placed buffers it
    overlaps in time, reaches an optimal plan for some order; some optimal plan is a fixed
    point of that decoding in order of offset, so the search only extends a sequence with
    a buffer landing at or above the last offset (ties in index order). Stops early at the
    floor or after EXACT_NODE_BUDGET nodes.
    """
    n = len(prob.sizes)
    sizes, first, last = prob.sizes, prob.first, prob.last
    conflicts = [
        [j for j in range(n) if j != i and first[i] <= last[j] and first[j] <= last[i]]
        for i in range(n)
    ]
    offsets = [-1] * n
    state = {"best": upper, "plan": None, "nodes": 0}

    def lowest(i: int) -> int:
        cur = 0
        for o, e in sorted(
            (offsets[j], offsets[j] + sizes[j]) for j in conflicts[i] if offsets[j] >= 0
        ):
            if o - cur >= sizes[i]:
                break
            cur = max(cur, e)
        return cur

    def search(placed: int, last_key: tuple[int, int], top: int) -> None:
        if placed == n:
            state["best"], state["plan"] = top, list(offsets)
            return
        for i in range(n):
            if state["best"] == prob.floor or state["nodes"] >= EXACT_NODE_BUDGET:
                return
            if offsets[i] >= 0:
                continue
            o = lowest(i)
            if (o, i) < last_key or max(top, o + sizes[i]) >= state["best"]:
                continue
            state["nodes"] += 1
            offsets[i] = o
            search(placed + 1, (o, i), max(top, o + sizes[i]))
            offsets[i] = -1

    search(0, (-1, -1), 0)
    return state["plan"]
