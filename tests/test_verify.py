"""tolk.schedule.verify: planned schedules that are safe pass, each kind of hazard is caught."""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tolk
from tolk import Context, Tensor
from tolk.dtype import dtypes
from tolk.errors import ScheduleError
from tolk.schedule import memory_plan_rewrite
from tolk.schedule.verify import verify_linear
from tolk.uop import KernelInfo, Ops, UOp, fresh_internal_buffer_slot

F32 = dtypes.float32


def param(i: int, size: int = 4) -> UOp:
    return UOp(Ops.PARAM, F32, (), (i, "CPU", size))


def kernel_ast(writes, reads, name: str = "k", size: int = 4) -> UOp:
    """A kernel storing into PARAMs `writes`; each store loads every PARAM in `reads`."""
    value = UOp.const(F32, 0.0)
    for r in reads:
        value = UOp(Ops.ADD, F32, (value, UOp(Ops.LOAD, F32, (param(r, size),))))
    stores = [UOp(Ops.STORE, dtypes.void, (param(w, size), value)) for w in writes]
    return UOp(Ops.SINK, dtypes.void, tuple(stores), KernelInfo(name))


def call(ast: UOp, *args: UOp) -> UOp:
    return UOp(Ops.CALL, dtypes.void, (ast, *args))


def linear(*calls: UOp) -> UOp:
    return UOp(Ops.LINEAR, dtypes.void, tuple(calls))


def arena(nbytes: int = 1024) -> UOp:
    return UOp(Ops.BUFFER, dtypes.uint8, (), (fresh_internal_buffer_slot(), "CPU", nbytes))


def view(ar: UOp, offset: int, nbytes: int = 16) -> UOp:
    return UOp(Ops.SLICE, F32, (ar,), (offset, nbytes))


def ext(size: int = 4) -> UOp:
    return UOp.buffer(F32, size)


def internal(size: int = 4) -> UOp:
    return UOp.internal_buffer(F32, size)


def write(dst: UOp, *srcs: UOp, name: str = "k") -> UOp:
    """A call writing `dst` (argument 0) from `srcs`."""
    return call(kernel_ast([0], range(1, len(srcs) + 1), name), dst, *srcs)


# -- schedules tolk makes ---------------------------------------------------------------------


def rnd(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def programs():
    a, b = Tensor(rnd(8, 8)), Tensor(rnd(8, seed=1))
    yield ((a @ a).relu() + b).softmax(-1).sum(0), (a * 2).exp().max(1)
    x = Tensor(rnd(6, 4))
    yield ((x - x.mean(0)) * (x - x.mean(0))).sum(1).sqrt(), x.T.contiguous() + 1
    m = Tensor(rnd(6, 4)).shard(("CPU:1", "CPU:2"), axis=0)
    yield (((m * 2).exp() + 1).sum(1),)
    y = Tensor(rnd(5, 5))
    y[1:3] = y[2:4] * 2
    yield (y, y.sum(0))


@pytest.mark.parametrize("flags", [{}, {"NO_MEMORY_PLANNER": 1}, {"SCACHE": 0}])
def test_schedules_tolk_plans_verify(flags):
    with Context(**flags):
        for outs in programs():
            ts = [s for o in outs for s in (o.shards if hasattr(o, "shards") else [o])]
            lin = ts[0].schedule_linear(*ts[1:])
            assert len(lin.src) > 0
            verify_linear(lin)


def test_a_jit_capture_verifies():
    f = tolk.jit(lambda x, w: ((x @ w).relu().sum(1), (x * 3).exp()))
    w = Tensor(rnd(4, 3, seed=3))
    for i in range(3):
        f(Tensor(rnd(5, 4, seed=i)), w)
    verify_linear(f.linear, [*f.in_index, *f.out_bufs])


def test_a_plan_with_reused_bytes_verifies():
    bufs = [internal(64) for _ in range(6)]
    out = ext(64)
    calls = [write(bufs[0], ext(64))] + [write(bufs[i + 1], bufs[i]) for i in range(5)]
    planned = memory_plan_rewrite(linear(*calls, write(out, bufs[5])), enabled=True)
    offsets = {a.arg[0] for c in planned.src for a in c.src[1:] if a.op is Ops.SLICE}
    assert len(offsets) < 6  # the planner reused bytes
    verify_linear(planned)


# -- memory hazards ---------------------------------------------------------------------------


def test_overlapping_views_live_at_once_are_rejected():
    ar = arena()
    a, b = view(ar, 0, 64), view(ar, 32, 64)
    lin = linear(write(a, ext()), write(b, ext()), write(ext(), a, b))
    with pytest.raises(ScheduleError, match=r"call 1 .*bytes \[32, 96\).*bytes \[0, 64\)"):
        verify_linear(lin)


def test_overlapping_views_with_disjoint_lifetimes_pass():
    ar = arena()
    a, b = view(ar, 0, 64), view(ar, 32, 64)
    verify_linear(linear(write(a, ext()), write(ext(), a), write(b, ext()), write(ext(), b)))


def test_adjacent_views_live_at_once_pass():
    ar = arena()
    a, b = view(ar, 0, 32), view(ar, 32, 32)
    verify_linear(linear(write(a, ext()), write(b, a), write(ext(), a, b)))


def test_a_view_read_after_another_view_overwrote_it_is_rejected():
    ar = arena()
    a, b = view(ar, 0, 16), UOp(Ops.SLICE, dtypes.int32, (ar,), (0, 16))
    lin = linear(write(a, ext()), write(b, ext()), write(ext(), b), write(ext(), a))
    with pytest.raises(ScheduleError, match="call 1"):
        verify_linear(lin)


def test_one_slice_node_for_two_buffers_with_another_in_between_passes():
    # hash-consing makes the planned A (calls 0..1) and C (calls 4..5) one SLICE node
    ar = arena()
    ac, b = view(ar, 0, 16), view(ar, 0, 4)
    lin = linear(write(ac, ext()), write(ext(), ac), write(b, ext()), write(ext(), b),
                 write(ac, ext()), write(ext(), ac))
    verify_linear(lin)


def test_a_slice_outside_its_arena_is_rejected():
    ar = arena(256)
    with pytest.raises(ScheduleError, match="outside its arena of 256 bytes"):
        verify_linear(linear(write(view(ar, 250, 16), ext())))
    with pytest.raises(ScheduleError, match="outside"):
        verify_linear(linear(write(view(ar, -16, 16), ext())))


def test_a_slice_that_is_not_whole_items_is_rejected():
    with pytest.raises(ScheduleError, match="whole number"):
        verify_linear(linear(write(view(arena(), 0, 6), ext())))


def test_an_arena_named_whole_overlaps_its_views():
    ar = arena(64)
    v = view(ar, 0, 16)
    with pytest.raises(ScheduleError, match="overlaps"):
        verify_linear(linear(write(v, ext()), write(ar, ext()), write(ext(), v)))


# -- ordering hazards -------------------------------------------------------------------------


def test_reading_an_internal_buffer_nobody_wrote_is_rejected():
    t = internal()
    with pytest.raises(ScheduleError, match=rf"call 0 .*slot {t.arg[0]}.*no earlier call"):
        verify_linear(linear(write(ext(), t)))


def test_reading_a_view_before_its_producer_is_rejected():
    v = view(arena(), 0)
    with pytest.raises(ScheduleError, match=r"call 0 \('consumer'\).*SLICE"):
        verify_linear(linear(write(ext(), v, name="consumer"), write(v, ext(), name="producer")))


def test_external_and_held_buffers_need_no_producer():
    held = internal()
    verify_linear(linear(write(ext(), ext(), held)), held=[held])


def test_a_kernel_that_loads_the_buffer_it_writes_reads_it():
    t = internal()
    rmw = call(kernel_ast([0], [0]), t)
    with pytest.raises(ScheduleError, match="no earlier call"):
        verify_linear(linear(rmw))
    verify_linear(linear(write(t, ext()), rmw, write(ext(), t)))


def test_copy_writes_its_first_argument_and_reads_its_second():
    a, b = internal(), internal()
    copy = UOp(Ops.COPY, F32, (), "CPU:1")
    verify_linear(linear(write(a, ext()), call(copy, b, a), write(ext(), b)))
    with pytest.raises(ScheduleError, match="call 0 \\('COPY'\\)"):
        verify_linear(linear(call(copy, b, a)))


def test_bind_arguments_do_not_count_as_params():
    v = UOp(Ops.DEFINE_VAR, dtypes.int32, (), ("n", 0, 9))
    bind = UOp(Ops.BIND, dtypes.int32, (v, UOp.const(dtypes.int32, 3)))
    t = internal()
    verify_linear(linear(call(kernel_ast([0], [1]), t, bind, ext()), write(ext(), t)))


def test_an_ast_naming_a_param_the_call_lacks_is_rejected():
    with pytest.raises(ScheduleError, match="PARAM 2"):
        verify_linear(linear(call(kernel_ast([0], [2]), ext(), ext())))


def test_opaque_kernels_write_their_first_argument():
    t = internal()
    opaque = UOp(Ops.SINK, dtypes.void, (), KernelInfo("opaque"))
    verify_linear(linear(call(opaque, t, ext()), call(opaque, ext(), t)))


def test_only_linears_are_verified():
    with pytest.raises(ScheduleError, match="LINEAR"):
        verify_linear(UOp.sink())
    assert issubclass(ScheduleError, ValueError)


# -- the sweep against brute force --------------------------------------------------------------


@st.composite
def plans(draw):
    """Views of one arena (distinct (offset, size), so no two are one node) with lifetimes."""
    n = draw(st.integers(1, 12))
    spots = draw(st.lists(st.tuples(st.integers(0, 12), st.integers(0, 4)), min_size=n,
                          max_size=n, unique=True))
    lives = [sorted(draw(st.tuples(st.integers(0, 9), st.integers(0, 9)))) for _ in range(n)]
    return [(off * 4, size * 4, first, last) for (off, size), (first, last) in zip(spots, lives)]


def build(plan) -> UOp:
    """One call per step: it writes the views born then and reads those that die then."""
    ar = arena(16 * 4 + 64)
    views = [view(ar, off, nb) for off, nb, _, _ in plan]
    calls = []
    for t in range(10):
        born = [v for v, (_, _, f, _) in zip(views, plan) if f == t]
        dying = [v for v, (_, _, f, last) in zip(views, plan) if last == t and f != t]
        args = [ext(), *born, *dying]
        ast = kernel_ast(range(len(born) + 1), range(len(born) + 1, len(args)), size=16)
        calls.append(call(ast, *args))
    return linear(*calls)


def brute_force_conflict(plan) -> bool:
    for i, (o1, n1, f1, l1) in enumerate(plan):
        for o2, n2, f2, l2 in plan[i + 1:]:
            if n1 and n2 and o1 < o2 + n2 and o2 < o1 + n1 and f1 <= l2 and f2 <= l1:
                return True
    return False


@settings(max_examples=200, deadline=None)
@given(plans())
def test_the_sweep_finds_a_conflict_exactly_when_brute_force_does(plan):
    lin = build(plan)
    if brute_force_conflict(plan):
        with pytest.raises(ScheduleError, match="overlaps"):
            verify_linear(lin)
    else:
        verify_linear(lin)


def test_verify_is_fast_on_a_long_schedule_reusing_the_same_bytes():
    # 10,000 buffers, all at offset 0 one after another: a pairwise check would be 5e7 pairs
    ar, out = arena(64), ext()
    kinds = [dtypes.float32, dtypes.int32]
    calls = []
    for i in range(10_000):
        v = UOp(Ops.SLICE, kinds[i % 2], (ar,), (0, 16 + 4 * (i % 3)))
        calls += [write(v, out), write(out, v)]
    lin = linear(*calls)
    start = time.perf_counter()
    verify_linear(lin)
    assert time.perf_counter() - start < 2.0
