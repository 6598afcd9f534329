"""Offset assignment: validity, optimality where the floor is attainable, determinism."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tolk.errors import ScheduleError
from tolk.schedule.planner import Plan, assign_offsets, find_overlaps, floor_bytes


def _round(size: int, alignment: int) -> int:
    return -(-size // alignment) * alignment


def assert_valid(sizes, firsts, lasts, alignment: int, plan: Plan) -> None:
    """No two buffers live at a common call share a byte; offsets aligned; arena is the top."""
    n = len(sizes)
    spans = [(plan.offsets[i], plan.offsets[i] + _round(sizes[i], alignment)) for i in range(n)]
    for i, j in itertools.combinations(range(n), 2):
        if firsts[i] <= lasts[j] and firsts[j] <= lasts[i]:
            (a0, a1), (b0, b1) = spans[i], spans[j]
            assert a1 <= b0 or b1 <= a0, f"buffers {i} and {j} overlap"
    assert all(o >= 0 and o % alignment == 0 for o in plan.offsets)
    assert plan.arena == max((hi for _, hi in spans), default=0)
    assert plan.arena >= floor_bytes(sizes, firsts, lasts, alignment)


@st.composite
def lifetimes(draw, max_buffers: int = 40, max_size: int = 5000):
    n = draw(st.integers(0, max_buffers))
    sizes = draw(st.lists(st.integers(0, max_size), min_size=n, max_size=n))
    firsts = draw(st.lists(st.integers(0, 60), min_size=n, max_size=n))
    lengths = draw(st.lists(st.integers(0, 25), min_size=n, max_size=n))
    return sizes, firsts, [f + d for f, d in zip(firsts, lengths)]


@st.composite
def nested_lifetimes(draw):
    """A laminar family: any two lifetimes are disjoint or one contains the other."""
    sizes, firsts, lasts = [], [], []
    todo = [(0, draw(st.integers(0, 80)))]
    while todo and len(sizes) < 30:
        lo, hi = todo.pop()
        sizes.append(draw(st.sampled_from([1, 3, 100, 256, 1000, 4096])))
        firsts.append(lo)
        lasts.append(hi)
        cuts = sorted(draw(st.lists(st.integers(lo, hi), max_size=4, unique=True)))
        todo += [(a, b) for a, b in zip(cuts[::2], cuts[1::2])]
    return sizes, firsts, lasts


@settings(max_examples=150, deadline=None)
@given(lifetimes(), st.sampled_from([1, 8, 256]))
def test_buffers_live_at_the_same_call_never_share_bytes(inst, alignment):
    sizes, firsts, lasts = inst
    assert_valid(sizes, firsts, lasts, alignment, assign_offsets(sizes, firsts, lasts, alignment))


@settings(max_examples=40, deadline=None)
@given(lifetimes(max_buffers=300, max_size=1 << 20))
def test_larger_random_instances_are_valid_and_agree_with_find_overlaps(inst):
    sizes, firsts, lasts = inst
    plan = assign_offsets(sizes, firsts, lasts, alignment=1)
    assert_valid(sizes, firsts, lasts, 1, plan)
    assert find_overlaps(sizes, firsts, lasts, plan.offsets) == []


@settings(max_examples=60, deadline=None)
@given(nested_lifetimes())
def test_nested_lifetimes_reach_the_floor(inst):
    sizes, firsts, lasts = inst
    plan = assign_offsets(sizes, firsts, lasts, alignment=1)
    assert_valid(sizes, firsts, lasts, 1, plan)
    assert plan.arena == floor_bytes(sizes, firsts, lasts)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 200), st.integers(0, 30)), max_size=200))
def test_equal_sizes_reach_the_floor(spans):
    firsts = [f for f, _ in spans]
    lasts = [f + d for f, d in spans]
    sizes = [512] * len(spans)
    plan = assign_offsets(sizes, firsts, lasts, alignment=256)
    assert_valid(sizes, firsts, lasts, 256, plan)
    assert plan.arena == floor_bytes(sizes, firsts, lasts, 256)


def test_disjoint_lifetimes_all_start_at_offset_zero():
    sizes = [300, 5000, 17, 4096]
    plan = assign_offsets(sizes, [0, 2, 5, 6], [1, 4, 5, 9], alignment=1)
    assert plan.offsets == (0, 0, 0, 0)
    assert plan.arena == 5000


def _brute_force_optimum(sizes, firsts, lasts) -> int:
    """Best arena over every order of first-fit placement (which reaches the optimum)."""
    best = None
    for order in itertools.permutations(range(len(sizes))):
        offsets: dict[int, int] = {}
        for i in order:
            busy = sorted(
                (offsets[j], offsets[j] + sizes[j])
                for j in offsets
                if firsts[i] <= lasts[j] and firsts[j] <= lasts[i]
            )
            cur = 0
            for lo, hi in busy:
                if lo - cur >= sizes[i]:
                    break
                cur = max(cur, hi)
            offsets[i] = cur
        top = max((offsets[i] + sizes[i] for i in offsets), default=0)
        best = top if best is None else min(best, top)
    return best or 0


@settings(max_examples=80, deadline=None)
@given(lifetimes(max_buffers=6, max_size=9))
def test_tiny_instances_get_an_optimal_plan(inst):
    sizes, firsts, lasts = inst
    plan = assign_offsets(sizes, firsts, lasts, alignment=1)
    assert_valid(sizes, firsts, lasts, 1, plan)
    assert plan.arena == _brute_force_optimum(sizes, firsts, lasts)


def test_equal_inputs_give_equal_plans_whatever_their_container():
    rng = random.Random(7)
    sizes = [rng.randrange(1, 1 << 16) for _ in range(2000)]
    firsts = [rng.randrange(1000) for _ in range(2000)]
    lasts = [f + int(rng.expovariate(1 / 15)) for f in firsts]
    a = assign_offsets(sizes, firsts, lasts)
    b = assign_offsets(tuple(sizes), np.array(firsts), iter(lasts))
    assert a == b
    assert a == assign_offsets(sizes, firsts, lasts)


def test_zero_size_buffers_take_no_bytes():
    plan = assign_offsets([0, 100, 0], [0, 0, 0], [5, 5, 5], alignment=64)
    assert plan.offsets[0] == plan.offsets[2] == 0
    assert plan.arena == 128
    assert assign_offsets([0, 0], [0, 1], [3, 3]) == Plan((0, 0), 0)


def test_no_buffers_give_an_empty_arena():
    assert assign_offsets([], [], []) == Plan((), 0)
    assert floor_bytes([], [], []) == 0


def test_sizes_round_up_to_the_alignment():
    plan = assign_offsets([1, 1], [0, 0], [0, 0], alignment=256)
    assert sorted(plan.offsets) == [0, 256]
    assert plan.arena == 512 == floor_bytes([1, 1], [0, 0], [0, 0], alignment=256)


def test_a_buffer_ending_at_a_call_is_disjoint_from_one_starting_after_it():
    assert floor_bytes([10, 20], [0, 4], [3, 9]) == 20
    assert floor_bytes([10, 20], [0, 3], [3, 9]) == 30
    assert assign_offsets([10, 20], [0, 4], [3, 9], alignment=1).arena == 20


@pytest.mark.parametrize(
    "sizes, firsts, lasts, alignment",
    [([-1], [0], [0], 1), ([1], [3], [2], 1), ([1, 2], [0], [0], 1), ([1], [0], [0], 0)],
    ids=["negative size", "first after last", "mismatched lengths", "zero alignment"],
)
def test_invalid_lifetimes_raise_schedule_error(sizes, firsts, lasts, alignment):
    with pytest.raises(ScheduleError):
        assign_offsets(sizes, firsts, lasts, alignment)


def test_find_overlaps_names_the_pair_that_overlaps():
    sizes, firsts, lasts = [100, 100, 100], [0, 2, 4], [3, 5, 8]
    assert find_overlaps(sizes, firsts, lasts, [0, 100, 0]) == []
    assert find_overlaps(sizes, firsts, lasts, [0, 50, 150]) == [(0, 1)]
    assert find_overlaps(sizes, firsts, lasts, [0, 100, 150]) == [(1, 2)]


def training_like(layers: int, seed: int = 0) -> tuple[list[int], list[int], list[int]]:
    """A forward pass that saves activations and a backward pass that consumes them in
    reverse, with short-lived temporaries and per-weight gradient updates."""
    rng = random.Random(seed)
    sizes: list[int] = []
    firsts: list[int] = []
    lasts: list[int] = []

    def new(size: int, t: int) -> int:
        sizes.append(size)
        firsts.append(t)
        lasts.append(t)
        return len(sizes) - 1

    t, act, saved = 0, 4 << 20, []
    x = new(act, t)
    for _ in range(layers):
        layer = [x]
        for width in (1, 3, 16, 16, 1, 1, 4, 4, 1):
            t += 1
            layer.append(new(act * width, t))
            lasts[layer[-2]] = t
        saved.append(layer)
        x = layer[-1]
    for layer in reversed(saved):
        for b in reversed(layer):
            t += 1
            lasts[b] = t
            grad = new(sizes[b], t)
            t += 1
            lasts[grad] = t
            new(rng.choice([1, 3, 4]) << 21, t)
    return sizes, firsts, lasts


def test_training_like_schedule_reaches_the_floor():
    sizes, firsts, lasts = training_like(layers=24)
    plan = assign_offsets(sizes, firsts, lasts)
    assert_valid(sizes, firsts, lasts, 256, plan)
    assert plan.arena <= 1.02 * floor_bytes(sizes, firsts, lasts, 256)


def test_hard_random_lifetimes_stay_within_ten_percent_of_the_floor():
    rng = random.Random(3)
    n = 3000
    firsts = [rng.randrange(n // 2) for _ in range(n)]
    lasts = [f + int(rng.expovariate(1 / 20)) for f in firsts]
    sizes = [int(np.exp(rng.uniform(np.log(64), np.log(1 << 20)))) for _ in range(n)]
    plan = assign_offsets(sizes, firsts, lasts)
    assert find_overlaps([_round(s, 256) for s in sizes], firsts, lasts, plan.offsets) == []
    assert plan.arena <= 1.10 * floor_bytes(sizes, firsts, lasts, 256)


def test_growing_sizes_that_defeat_online_allocators_reach_the_floor():
    n = 2000
    sizes = [4096 * (1 + i % 50) for i in range(n)]
    firsts = list(range(n))
    lasts = [i + 1 + i % 3 for i in range(n)]
    assert assign_offsets(sizes, firsts, lasts).arena == floor_bytes(sizes, firsts, lasts, 256)


def test_a_very_long_chain_of_buffers_plans_without_recursion():
    n = 30_000
    plan = assign_offsets([256] * n, list(range(n)), [i + 1 for i in range(n)])
    assert plan.arena == 512


def test_long_skyline_views_pick_what_a_plain_scan_picks():
    # views longer than _BLOCKED_VIEW answer scans whose candidates all fit through per-block
    # maxima: the same buffer as a scan of every position, as buffers are placed
    from tolk.schedule import planner as P

    rng = np.random.default_rng(7)
    n, steps = 6 * P._BLOCKED_VIEW // 5, 400
    first = np.sort(rng.integers(0, steps, n))
    other = first + rng.integers(0, 60, n)
    score = rng.integers(0, 50, n).astype(np.float64)  # small integers: many ties
    placed = bytearray(n)
    values, code = P._values(max(n, int(other.max())) + 2, score)
    view = P._View(np.arange(n), first, other, score, code, steps, placed, values)
    assert view.blocked
    plain = score.copy()
    for _ in range(400):
        lo = int(rng.integers(0, n - 4 * P._BLOCK - 2))
        hi = int(rng.integers(lo + 4 * P._BLOCK + 1, n + 1))
        at_most = bool(rng.integers(0, 2))
        window = other[lo:hi]
        bound = int(window.max() if at_most else window.min())  # every candidate fits
        if rng.integers(0, 4) == 0:
            bound += -1 if at_most else 1  # some do not: the plain scan decides
        ok = window <= bound if at_most else window >= bound
        w = np.where(ok, plain[lo:hi], -1.0)
        want = lo + int(w.argmax()) if w.max() >= 0 else -1
        got = P._scan(view, lo, hi, bound, at_most)
        assert got == want
        if got >= 0:
            placed[got] = 1
            view.remove(got)
            plain[got] = -1.0
        if view.dead == 0:  # rebuilt without the placed buffers: positions moved
            break


@pytest.mark.parametrize("n", [60, 3000])
def test_whole_view_queries_pick_what_a_plain_scan_picks_through_rebuilds(n):
    # a query of a whole view whose candidates all fit is answered, after _RANK_AFTER of them,
    # from a ranking made once: the highest score, the lowest position among equals, as a scan
    # of every position gives, while buffers are placed and the view is rebuilt without them
    from tolk.schedule import planner as P

    rng = np.random.default_rng(n)
    steps = n // 3
    first = np.sort(rng.integers(0, steps, n))
    other = first + rng.integers(0, 20, n)
    score = rng.integers(0, 30, n).astype(np.float64)  # many ties
    placed = bytearray(n)
    values, code = P._values(max(n, int(other.max())) + 2, score)
    view = P._View(np.arange(n), first, other, score, code, steps, placed, values)  # order = id
    plain = score.copy()
    rebuilds = ranked = 0
    for _ in range(n):
        got = P._scan(view, 0, len(view.ids_l), steps + 20, True)
        want = int(plain.argmax()) if plain.max() >= 0 else -1
        assert got == want
        if got < 0:
            break
        ranked += view.ranked is not None
        placed[got] = 1
        view.remove(got)
        plain[got] = -1.0
        rebuilds += view.dead == 0
    assert plain.max() < 0 and rebuilds >= 2 and ranked >= n - P._RANK_AFTER - 1


def test_plans_with_and_without_ranked_views_are_equal(monkeypatch):
    from tolk.schedule import planner as P

    rng = random.Random(5)
    for n, fan in [(3 * P._BLOCKED_VIEW, 32), (500, 8), (200, 3)]:
        sizes = [256 * rng.randint(1, 9) for _ in range(n)]
        firsts = list(range(n))
        lasts = [n + i // fan if i % 3 else i + rng.randrange(40) for i in range(n)]
        monkeypatch.setattr(P, "_RANK_AFTER", 0)
        ranked = assign_offsets(sizes, firsts, lasts)
        monkeypatch.setattr(P, "_RANK_AFTER", 10 * n)
        assert assign_offsets(sizes, firsts, lasts) == ranked


def test_plans_with_and_without_block_maxima_are_equal(monkeypatch):
    from tolk.schedule import planner as P

    rng = random.Random(3)
    n = 3 * P._BLOCKED_VIEW
    sizes = [256 * rng.randint(1, 9) for _ in range(n)]
    firsts = list(range(n))
    lasts = [n + i // 32 if i % 3 else i + rng.randrange(40) for i in range(n)]  # wide fan-in
    blocked = assign_offsets(sizes, firsts, lasts)
    monkeypatch.setattr(P, "_BLOCKED_VIEW", 10 * n)
    assert assign_offsets(sizes, firsts, lasts) == blocked


def test_a_skyline_rebuilds_its_views_a_number_of_times_bounded_by_buffers_over_steps(monkeypatch):
    # a rebuild costs time in the view's buffers and in the time steps: each one after a view's
    # first waits for a quarter of both to be placed, so a view of n buffers over `steps` time
    # steps is rebuilt at most 16 n / steps + 1 times, and a run's rebuilds cost linear time
    from tolk.schedule import planner as P

    rebuilds = []
    real = P._View._rebuild
    monkeypatch.setattr(P._View, "_rebuild",
                        lambda self, *a: rebuilds.append(1) or real(self, *a))
    n = 20_000
    firsts, lasts = list(range(n)), [i + 1 for i in range(n)]
    prob = P._Problem.build([1 + i % 7 for i in range(n)], firsts, lasts)
    offsets, _ = P._skyline(prob, [float(s * l) for s, l in zip(prob.sizes, prob.length)])
    assert find_overlaps(prob.sizes, prob.first, prob.last, offsets) == []
    assert len(rebuilds) <= 2 * (16 * n // prob.steps + 1)


def test_the_skyline_never_sets_a_segment_below_the_level_it_fills(monkeypatch):
    # the skyline keeps its segments in levels (one sorted list per height, taken lowest
    # first): right only while no segment is set lower than the height being filled
    from tolk.schedule import planner as P

    original = P._Sky._set
    seen = []

    def checked(self, s, e, h):
        assert h >= self.level, (s, e, h, self.level)
        seen.append(h > self.level)
        return original(self, s, e, h)

    monkeypatch.setattr(P._Sky, "_set", checked)
    rng = random.Random(11)
    for _ in range(300):
        n = rng.randint(1, 80)
        steps = rng.randint(1, 2 * n)
        firsts = [rng.randrange(steps) for _ in range(n)]
        lasts = [f + rng.choice([0, 1, rng.randrange(steps)]) for f in firsts]
        sizes = [256 * rng.randint(1, 12) for _ in range(n)]
        plan = assign_offsets(sizes, firsts, lasts)
        assert not find_overlaps([-(-s // 256) * 256 for s in sizes], firsts, lasts, plan.offsets)
    assert any(seen) and not all(seen)  # both kinds of segment were set


def test_the_skyline_lists_share_one_object_per_value(monkeypatch):
    # a skyline run's lists hold shared objects (one int per value, one float per distinct
    # score), not an object per entry: what keeps a 100k-buffer run's tables in the caches
    from tolk.schedule import planner as P

    monkeypatch.setattr(P, "_shared_ints", (np.empty(0, dtype=object), []))
    monkeypatch.setattr(P, "_SHARED_INTS_MAX", 5000)
    rng = random.Random(3)
    n = 3000
    firsts = [rng.randrange(1000) for _ in range(n)]
    lasts = [f + rng.randrange(40) for f in firsts]
    prob = P._Problem.build([1 + rng.randrange(9) for _ in range(n)], firsts, lasts)
    cand = P._Candidates(prob, [float(s * ln) for s, ln in zip(prob.sizes, prob.length)])
    ints, floats = cand.values.ints_l, cand.values.floats
    assert ints == list(range(len(ints))) and cand.values.ints[7] is ints[7]
    for view in (cand.by_first, cand.by_last):
        for seq in (view.ids_l, view.other_l, view.pos, view.start):
            assert all(x is ints[x] for x in seq)
        distinct = {id(x) for x in view.score_l}
        assert len(distinct) == len(floats) == len(set(view.score_l))
    kept = P._shared_ints[1]
    assert len(kept) >= n and P._int_table(10)[1] is kept  # kept between runs, reused
    big = P._int_table(6000)[1]
    assert len(big) == 6000 and P._shared_ints[1] is kept  # past the bound: not kept
    plan = P.assign_offsets([256] * 4, [0, 0, 1, 2], [0, 1, 2, 3])
    assert plan.arena == 512 and P._shared_ints[1] is kept


@pytest.mark.parametrize("bad, error", [
    (lambda: find_overlaps([1, 2], [0], [1, 1], [0, 0]), "one entry per buffer"),
    (lambda: find_overlaps([4, 4], [5, 0], [1, 3], [0, 0]), "after last call"),
    (lambda: find_overlaps([4, 4], [0, 0], [1, 3], [0]), "offsets must have"),
    (lambda: floor_bytes([1, 2], [0], [0]), "one entry per buffer"),
    (lambda: floor_bytes([-5], [0], [1]), "negative size"),
    (lambda: floor_bytes([5], [3], [1]), "after last call"),
    (lambda: floor_bytes([5], [0], [1], alignment=0), "at least 1"),
    (lambda: assign_offsets([1], [0], [10**309], alignment=1), "below 2\\*\\*63"),
    (lambda: assign_offsets([10**309], [0], [1]), "size 2\\*\\*1026\\+"),
    (lambda: floor_bytes([1], [-(2**63) - 1], [0]), "below 2\\*\\*63"),
    (lambda: find_overlaps([8, 8], [0, 0], [0, 0], [0, 0], limit=0), "at least 1 pair"),
    (lambda: find_overlaps([8, 8], [0, 0], [0, 0], [0, 0], limit=-1), "at least 1 pair"),
])
def test_floor_and_overlap_checks_refuse_what_assign_offsets_refuses(bad, error):
    with pytest.raises(ScheduleError, match=error):
        bad()


def test_numpy_int_inputs_are_python_ints_in_every_planner_function():
    big = np.array([2**31 - 1, 4], np.int32)  # int32 sums would wrap
    assert find_overlaps(big, [0, 0], [0, 0], np.array([5, 10], np.int32)) == [(0, 1)]
    assert floor_bytes(np.array([2**31 - 1] * 2, np.int32), [0, 0], [0, 0]) == 2 * (2**31 - 1)
    plan = assign_offsets([2**40] * 2, [0, 0], [0, 0], alignment=np.int32(256))
    assert plan.arena == 2**41 and all(type(o) is int for o in plan.offsets)
    with pytest.raises(TypeError, match="alignment must be an int"):
        assign_offsets([5], [0], [0], alignment=2.5)
    with pytest.raises(TypeError, match="bool"):
        assign_offsets([True], [0], [0])
    with pytest.raises(TypeError, match="bool"):
        floor_bytes([4], [np.bool_(False)], [0])


def _first_fit(sizes, firsts, lasts, order) -> int:
    """A plain reference: each buffer in `order` at the lowest offset free of the placed
    buffers it overlaps in time; the arena."""
    offs: dict[int, int] = {}
    for i in order:
        cur = 0
        for lo, hi in sorted((offs[j], offs[j] + sizes[j]) for j in offs
                             if firsts[i] <= lasts[j] and firsts[j] <= lasts[i]):
            if lo - cur >= sizes[i]:
                break
            cur = max(cur, hi)
        offs[i] = cur
    return max((offs[i] + sizes[i] for i in offs), default=0)


def test_never_worse_than_an_online_first_fit_allocator():
    # a staircase of sizes (an online allocator in call order, tinygrad's too, gets 9728)
    sizes = [256 * (i % 5 + 1) for i in range(100)]
    firsts, lasts = list(range(100)), [i + 10 for i in range(100)]
    assert assign_offsets(sizes, firsts, lasts).arena <= 9728
    # first fit by lifetime, longest first, reaches the floor here
    sizes = [1792, 1536, 1280, 2304, 1792, 1280, 2048, 2048, 2304, 2048, 1536, 2048, 2048, 2048]
    firsts = [2, 6, 7, 15, 9, 13, 7, 2, 0, 5, 1, 10, 1, 11]
    lasts = [7, 10, 8, 16, 18, 16, 9, 11, 2, 28, 4, 16, 2, 11]
    assert assign_offsets(sizes, firsts, lasts).arena == floor_bytes(sizes, firsts, lasts, 256)
    rng = random.Random(3)
    for _ in range(300):
        n = rng.randint(5, 60)
        sizes = [rng.randint(1, 100) for _ in range(n)]
        firsts = [rng.randint(0, 30) for _ in range(n)]
        lasts = [f + int(rng.expovariate(1 / rng.choice([1, 3, 10]))) for f in firsts]
        arena = assign_offsets(sizes, firsts, lasts, alignment=1).arena
        online = _first_fit(sizes, firsts, lasts, sorted(range(n), key=lambda i: (firsts[i], i)))
        assert arena <= online, (sizes, firsts, lasts)


def test_bools_are_refused_from_iterators_and_as_alignment():
    with pytest.raises(TypeError, match="bool"):
        assign_offsets(iter([True, 5]), iter([0, 0]), iter([0, 1]))
    with pytest.raises(TypeError, match="bool"):
        floor_bytes((x for x in [True]), [0], [0])
    with pytest.raises(TypeError, match="alignment"):
        assign_offsets([4], [0], [0], alignment=True)
    assert assign_offsets(iter([4, 5]), iter([0, 0]), iter([0, 1]), alignment=1).arena == 9


def test_dense_instances_are_never_worse_than_online_first_fit_either():
    from tolk.schedule.planner import _Problem, _sweep_first_fit

    rng = random.Random(11)
    for _ in range(40):
        n, horizon = rng.randint(100, 250), rng.randint(10, 60)
        sizes = [rng.choice([rng.randint(1, 10), rng.randint(50, 200), rng.randint(1, 1000)])
                 for _ in range(n)]
        firsts = [rng.randint(0, horizon) for _ in range(n)]
        lasts = [f + rng.choice([0, 1, 2, rng.randint(3, 60)]) for f in firsts]
        online = _first_fit(sizes, firsts, lasts, sorted(range(n), key=lambda i: (firsts[i], i)))
        offsets = _sweep_first_fit(_Problem.build(sizes, firsts, lasts))
        assert find_overlaps(sizes, firsts, lasts, offsets) == []
        assert max(o + s for o, s in zip(offsets, sizes)) == online  # the replay is that one
        assert assign_offsets(sizes, firsts, lasts, alignment=1).arena <= online
