"""tolk.schedule: one test per sentence of the spec, and then some."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedule_helpers import F32, after, ast, bind, buf, kernel, names, param, var, write
from tolk.dtype import dtypes
from tolk.engine.realize import capturing
from tolk.helpers import Context
from tolk.schedule.verify import verify_linear
from tolk.schedule import (
    ProgramKey,
    ScheduleError,
    create_linear_for_sink,
    create_linear_with_vars,
    create_schedule,
    fresh_internal_buffer_slot,
    linear_stats,
    planned_stats,
    lower_sink_to_linear,
    memory_plan_rewrite,
    program_body,
    program_form,
    program_key,
    schedule_cache_clear,
    schedule_cache_info,
)
from tolk.uop import Ops, UOp


def identity_pass(sink: UOp) -> UOp:
    """A get_kernel_graph for tests: the 'tensor' sinks here are kernel graphs already."""
    return sink


def test_fresh_internal_slots_are_negative_and_strictly_decreasing():
    a, b, c = (fresh_internal_buffer_slot() for _ in range(3))
    assert a < 0 and b < a and c < b


def test_fresh_internal_slots_are_unique_across_threads():
    import threading

    got: list[int] = []
    lock = threading.Lock()

    def draw():
        mine = [fresh_internal_buffer_slot() for _ in range(2000)]
        with lock:
            got.extend(mine)

    threads = [threading.Thread(target=draw) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(got)) == len(got) == 8000


def test_reader_runs_after_the_kernel_that_produced_its_input():
    a = write(buf(1), "produce")
    b = write(buf(2), "consume", a)
    assert names(create_schedule(UOp.sink(b))) == ["produce", "consume"]


def test_reader_runs_before_overwriting_assign():
    x = buf(1)
    read = write(buf(2), "read_old_x", x)
    overwrite = write(x, "overwrite_x")
    # FIFO alone would run the overwrite first: it comes first in the sink
    lin = create_schedule(UOp.sink(overwrite, read))
    assert names(lin) == ["read_old_x", "overwrite_x"]


def test_chain_of_assigns_orders_readers_between_writers():
    x = buf(1)
    s1 = write(x, "w1", x)
    s2 = write(s1, "w2", s1)
    s3 = write(s2, "w3", s2)
    r1 = write(buf(2), "reads_s1", s1)
    r2 = write(buf(3), "reads_s2", s2)
    order = names(create_schedule(UOp.sink(s3, r2, r1)))
    assert order.index("w1") < order.index("reads_s1") < order.index("w2")
    assert order.index("w2") < order.index("reads_s2") < order.index("w3")


def test_emitted_calls_name_storage_not_states():
    x = buf(1)
    s1 = write(x, "w1")
    view = UOp(Ops.RESHAPE, F32, (s1,), (4, 4))
    r = write(buf(2), "r", UOp(Ops.CAST, dtypes.float64, (view,)))
    lin = create_schedule(UOp.sink(r))
    assert lin.src[1].src[1:] == (buf(2), x)
    assert all(c.op is Ops.CALL for c in lin.src)


def test_a_call_whose_arguments_are_storage_already_is_emitted_as_it_is():
    x, y = buf(1), buf(2)
    first = kernel("first", x)  # writes x, reads nothing
    second = kernel("second", y, x)  # reads x before `first` writes it
    third = kernel("third", buf(3), after(x, first))  # reads x after: the state, unwrapped
    lin = create_schedule(UOp.sink(after(y, second), after(buf(3), third)))
    assert names(lin) == ["second", "first", "third"]
    assert lin.src[0] is second and lin.src[1] is first
    assert lin.src[2] is not third and lin.src[2].src[1:] == (buf(3), x)


def test_join_through_mstack_and_mselect_waits_for_every_device():
    a0, a1 = buf(1, device="CPU:1"), buf(2, device="CPU:2")
    s0, s1 = write(a0, "k0"), write(a1, "k1")
    stacked = UOp(Ops.MSTACK, F32, (s0, s1))
    r = write(buf(3), "reads_both", stacked)
    sel = write(buf(4), "reads_one", UOp(Ops.MSELECT, F32, (stacked,), 1))
    lin = create_schedule(UOp.sink(sel, r))
    order = names(lin)
    assert order.index("reads_both") > max(order.index("k0"), order.index("k1"))
    assert order.index("reads_one") > max(order.index("k0"), order.index("k1"))
    by_name = {c.src[0].arg.name: c for c in lin.src}
    assert by_name["reads_both"].src[2] is UOp(Ops.MSTACK, F32, (a0, a1))
    assert by_name["reads_one"].src[2] is UOp(Ops.MSELECT, F32,
                                              (UOp(Ops.MSTACK, F32, (a0, a1)),), 1)


def test_joins_that_share_their_parts_are_walked_once_per_node():
    # m = MSTACK(m, m) forty times names one buffer through 2**40 paths: every walk of a join
    # (create_schedule's reads, the planner's buffers, held joins, linear_stats) visits each
    # node once (it took exponential time before)
    tmp, out, user = buf(-7), buf(-8), buf(9)
    m = written = write(tmp, "w")
    for _ in range(40):
        m = UOp(Ops.MSTACK, F32, (m, m))
    lin = create_schedule(UOp.sink(write(out, "r", m), write(user, "u", written)))
    assert names(lin) == ["w", "r", "u"] or names(lin) == ["w", "u", "r"]
    reader = next(c for c in lin.src if c.src[0].arg.name == "r")
    assert reader.src[2].toposort()[0] is tmp  # the join rebuilt over the storage
    planned = memory_plan_rewrite(lin)
    slices = {c.src[0].arg.name: c.src[1:] for c in planned.src}
    assert slices["w"][0].op is Ops.SLICE and slices["r"][0].op is Ops.SLICE
    views = [n for n in slices["r"][1].toposort() if n.op is Ops.SLICE]
    assert views == [slices["w"][0]]  # one SLICE through every path
    assert linear_stats(lin).unplanned_bytes == 2 * tmp.nbytes
    assert memory_plan_rewrite(lin, held_bufs=[reader.src[2], out]) is lin


def test_multi_device_assign_join_orders_readers_before_writers():
    # a sharded buffer updated in place on each device: the new state joins both writes
    a0, a1 = buf(1, device="CPU:1"), buf(2, device="CPU:2")
    old = UOp(Ops.MSTACK, F32, (a0, a1))
    reader = write(buf(3), "read_old", old)
    new = UOp(Ops.MSTACK, F32, (write(a0, "w0"), write(a1, "w1")))
    order = names(create_schedule(UOp.sink(new, reader)))
    assert order.index("read_old") < min(order.index("w0"), order.index("w1"))


def test_join_kernels_already_in_the_prior_state_are_ordering_not_writes():
    x = buf(1)
    k1 = kernel("k1", x)
    s1 = after(x, k1)
    k2 = kernel("k2", s1)  # a kernel's output argument is the state it supersedes
    s2 = after(s1, k1, k2)  # joins k1 (already in s1) with k2
    r = write(buf(2), "reads_s1", s1)
    order = names(create_schedule(UOp.sink(s2, r)))
    assert order.index("k1") < order.index("reads_s1") < order.index("k2")


def test_end_kernel_is_scheduled_and_its_extra_sources_order_it():
    other = write(buf(3), "first")
    call = kernel("ended", buf(1))
    s = after(buf(1), UOp(Ops.END, dtypes.void, (call, other)))
    lin = create_schedule(UOp.sink(s))
    assert names(lin) == ["first", "ended"]
    assert lin.src[1].op is Ops.CALL


def test_end_must_wrap_a_call():
    bad = UOp(Ops.END, dtypes.void, (buf(2),))
    with pytest.raises(ScheduleError, match="END"):
        create_schedule(UOp.sink(after(buf(1), bad)))


def test_store_children_of_an_after_are_ignored():
    x = buf(1)
    store = UOp(Ops.STORE, dtypes.void, (x, UOp.const(F32, 1.0)))
    s = after(x, kernel("k", x), store)
    assert names(create_schedule(UOp.sink(s))) == ["k"]


def test_after_dependencies_order_kernels():
    first = write(buf(1), "first")
    second = after(buf(2), kernel("second", buf(2)), first)
    assert names(create_schedule(UOp.sink(second, first))) == ["first", "second"]


def test_a_bad_after_child_raises_naming_the_node():
    s = after(buf(1), kernel("k", buf(1)), UOp.const(F32, 7.5))
    with pytest.raises(ScheduleError, match=r"CONST float32 arg=7\.5"):
        create_schedule(UOp.sink(s))


@pytest.mark.parametrize("bad", [UOp.const(F32, 3.25), UOp(Ops.NEG, F32, (buf(9),))])
def test_a_bad_kernel_argument_raises_naming_the_node(bad):
    s = write(buf(1), "k", bad)
    with pytest.raises(ScheduleError, match=bad.op.name):
        create_schedule(UOp.sink(s))


def test_bind_arguments_are_kept():
    b = bind(var("n"), 3)
    s = after(buf(1), kernel("k", buf(1), b))
    assert create_schedule(UOp.sink(s)).src[0].src[2] is b


def test_a_cycle_raises_naming_a_kernel_on_it():
    x = buf(1)
    overwrite = write(x, "overwrite")
    derived = write(buf(2), "derived", overwrite)
    # reads the old x and something derived from the new x: no order can satisfy both
    both = write(buf(3), "reads_old_and_new", x, derived)
    with pytest.raises(ScheduleError, match="cycle.*(overwrite|derived|reads_old_and_new)"):
        create_schedule(UOp.sink(both, overwrite))


def test_ready_kernels_run_first_come_first_served():
    outs = [write(buf(i), f"k{i}") for i in range(1, 6)]
    assert names(create_schedule(UOp.sink(*outs))) == [f"k{i}" for i in range(1, 6)]


def diamond_graph():
    x = write(buf(1), "src")
    left = write(buf(2), "left", x)
    right = write(buf(3), "right", x)
    return UOp.sink(write(buf(4), "join", left, right))


def test_same_graph_gives_the_identical_linear_every_time():
    assert create_schedule(diamond_graph()) is create_schedule(diamond_graph())


def test_schedule_key_is_the_same_across_processes():
    code = ("import sys; sys.path.insert(0, 'tests'); from test_schedule import diamond_graph; "
            "from tolk.schedule import create_schedule; "
            "print(create_schedule(diamond_graph()).key.hex())")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, env={"PYTHONHASHSEED": s, "PATH": ""}).stdout.strip()
            for s in ("3", "4")}
    assert outs == {create_schedule(diamond_graph()).key.hex()}


def assigns_and_readers(n: int = 40) -> UOp:
    """x updated in place n times, with a reader of every state and a diamond now and then."""
    x, outs = buf(1), []
    for i in range(n):
        outs.append(write(buf(100 + i), f"read{i}", x))
        x = write(x, f"update{i}", x, *outs[-2:] if i % 5 == 0 else ())
    return UOp.sink(x, *outs)


def test_a_schedule_run_inside_another_leaves_the_outer_one_right(monkeypatch):
    # create_schedule keeps its scratch on the nodes; one run inside it on the same thread (a
    # finalizer the garbage collector runs, say) overwrites that scratch: the outer pass runs
    # again and gives what it gives alone
    import tolk.schedule as schedule
    from tolk.uop.ops import _scratch_passes

    sink = assigns_and_readers()
    want = create_schedule(sink)
    inner: list = []
    original = schedule._state_number

    def state_number(*args):
        if not inner:
            inner.append(None)
            inner[0] = create_schedule(sink)  # the very same nodes
        return original(*args)

    monkeypatch.setattr(schedule, "_state_number", state_number)
    before = _scratch_passes[0]
    assert create_schedule(sink) is want
    assert inner == [want] and _scratch_passes[0] - before == 3  # outer, inner, outer again


def test_a_schedule_leaves_no_reference_that_outlives_its_graph():
    import gc
    import weakref

    x = buf(1)  # a user buffer lives on; what the schedule wrote on it must not hold the graph
    sink = assigns_and_readers()
    first_after = weakref.ref(sink.src[0])
    lin = create_schedule(sink)
    gc.disable()
    try:
        del sink, lin
        assert first_after() is None  # freed by reference counts alone: no cycle was made
    finally:
        gc.enable()
    assert x.op is Ops.BUFFER


def test_very_deep_assign_chain_schedules_without_recursion(low_recursion_limit):
    state = buf(1)
    for i in range(30_000):
        state = write(state, f"w{i}", state)
    lin = create_schedule(UOp.sink(state))
    assert len(lin.src) == 30_000 and names(lin)[:2] == ["w0", "w1"]


# --- lower_sink_to_linear ---------------------------------------------------------------------


class CountingPass:
    def __init__(self):
        self.calls = 0

    def __call__(self, sink):
        self.calls += 1
        return sink


def test_lower_returns_none_for_a_kernel_sink():
    assert lower_sink_to_linear(ast("k"), identity_pass) is None


def test_lower_hits_the_cache_for_an_equal_sink():
    schedule_cache_clear()
    p = CountingPass()
    first = lower_sink_to_linear(diamond_graph(), p)
    second = lower_sink_to_linear(diamond_graph(), p)
    assert first is second and p.calls == 1
    info = schedule_cache_info()
    assert (info.hits, info.misses, info.size) == (1, 1, 1)
    schedule_cache_clear()
    assert schedule_cache_info().size == 0


def test_lower_recomputes_every_time_with_scache_off():
    p = CountingPass()
    with Context(SCACHE=0):
        lower_sink_to_linear(diamond_graph(), p)
        lower_sink_to_linear(diamond_graph(), p)
    assert p.calls == 2


# --- create_linear_with_vars ------------------------------------------------------------------


TMP = UOp.internal_buffer(F32, 16)


def tensor_call(*args: UOp, name: str = "f") -> UOp:
    """CALL(body, *args): body computes into PARAM 1 from PARAM 0 through an internal buffer."""
    tmp = TMP
    t = write(tmp, f"{name}_tmp", param(0))
    out = write(param(1), f"{name}_out", t)
    return UOp(Ops.CALL, dtypes.void, (UOp.sink(out), *args))


def test_call_params_are_bound_to_the_call_arguments():
    x, y = buf(10), buf(11)
    with Context(NO_MEMORY_PLANNER=1):
        lin, var_vals = create_linear_with_vars(tensor_call(x, y), identity_pass)
    assert var_vals == {}
    assert lin.src[0].src[2] is x and lin.src[1].src[1] is y
    assert not [n for n in lin.toposort() if n.op is Ops.PARAM and n.slot >= 0 and
                n in {a for c in lin.src for a in c.src[1:]}]


def test_each_resolution_of_a_cached_schedule_gets_fresh_intermediates():
    schedule_cache_clear()
    with Context(NO_MEMORY_PLANNER=1):
        l1, _ = create_linear_with_vars(tensor_call(buf(10), buf(11)), identity_pass)
        l2, _ = create_linear_with_vars(tensor_call(buf(12), buf(13)), identity_pass)
    assert schedule_cache_info().hits >= 1
    t1, t2 = l1.src[0].src[1], l2.src[0].src[1]
    assert t1.op is t2.op is Ops.BUFFER and t1.slot < 0 and t2.slot < 0 and t1 is not t2


def test_nested_linear_calls_resolve_and_flatten_two_levels_deep():
    inner = create_schedule(UOp.sink(write(param(1), "inner", param(0))))
    # middle scope: PARAM 0 of the middle call is passed on as the inner call's PARAM 1
    middle_body = UOp(Ops.LINEAR, src=(
        UOp(Ops.CALL, dtypes.void, (inner, param(1), param(0))),
        kernel("middle", param(0)),
    ))
    outer = UOp(Ops.LINEAR, src=(
        UOp(Ops.CALL, dtypes.void, (middle_body, param(1), param(0))),
        kernel("outer", param(1)),
    ))
    big = UOp(Ops.CALL, dtypes.void, (outer, buf(20), buf(21)))
    with Context(NO_MEMORY_PLANNER=1):
        lin, _ = create_linear_with_vars(big, identity_pass)
    assert names(lin) == ["inner", "middle", "outer"]
    # outer P0=b20,P1=b21 -> middle P0=b21,P1=b20 -> inner P0=b20,P1=b21
    assert lin.src[0].src[1:] == (buf(21), buf(20))
    assert lin.src[1].src[1:] == (buf(21),)
    assert lin.src[2].src[1:] == (buf(21),)


def test_nested_tensor_sinks_are_lowered_innermost_first():
    inner = UOp(Ops.CALL, dtypes.void, (UOp.sink(write(param(0), "inner")), param(1)))
    outer_body = UOp.sink(after(param(0), inner), write(param(1), "outer"))
    big = UOp(Ops.CALL, dtypes.void, (outer_body, buf(30), buf(31)))
    with Context(NO_MEMORY_PLANNER=1):
        lin, _ = create_linear_with_vars(big, identity_pass)
    assert sorted(names(lin)) == ["inner", "outer"]
    assert {c.src[0].arg.name: c.src[1] for c in lin.src} == {"inner": buf(31), "outer": buf(31)}


def test_only_binds_of_variables_kernels_read_are_returned():
    n, m = var("n"), var("m")
    body = UOp.sink(after(param(0), kernel("k", param(0), ast_src=(n,))))
    big = UOp(Ops.CALL, dtypes.void, (body, buf(40), bind(n, 4), bind(m, 5)))
    _, var_vals = create_linear_with_vars(big, identity_pass)
    assert var_vals == {"n": 4}


def test_a_bind_argument_alone_is_no_read_of_its_variable():
    # (the spec: only binds for variables referenced by scheduled kernel bodies)
    n = var("n")
    body = UOp.sink(after(param(0), kernel("k", param(0), bind(n, 2))))
    _, var_vals = create_linear_with_vars(UOp(Ops.CALL, dtypes.void, (body, buf(41))),
                                          identity_pass)
    assert var_vals == {}
    body = UOp.sink(after(param(0), kernel("k", param(0), bind(n, 2), ast_src=(n,))))
    _, var_vals = create_linear_with_vars(UOp(Ops.CALL, dtypes.void, (body, buf(41))),
                                          identity_pass)
    assert var_vals == {"n": 2}


def test_conflicting_binds_raise():
    n = var("n")
    body = UOp.sink(after(param(0), kernel("k", param(0), ast_src=(n,))))
    big = UOp(Ops.CALL, dtypes.void, (body, buf(42), bind(n, 1), bind(n, 2)))
    with pytest.raises(ScheduleError, match="'n'.*1.*2"):
        create_linear_with_vars(big, identity_pass)


def test_a_result_that_is_not_a_linear_raises():
    with pytest.raises(ScheduleError, match="LINEAR"):
        create_linear_with_vars(UOp(Ops.CALL, dtypes.void, (buf(1),)), identity_pass)


class Recorder:
    def __init__(self):
        self.got = []

    def add_linear(self, linear, var_vals):
        self.got.append((linear, var_vals))


def test_capture_hands_the_unplanned_schedule_over_and_returns_an_empty_linear():
    rec = Recorder()
    capturing.append(rec)
    try:
        lin, _ = create_linear_with_vars(tensor_call(buf(50), buf(51)), identity_pass)
    finally:
        capturing.remove(rec)
    assert lin is UOp(Ops.LINEAR, src=()) and len(rec.got) == 1
    captured = rec.got[0][0]
    assert len(captured.src) == 2 and not any(n.op is Ops.SLICE for n in captured.toposort())


def test_capture_is_skipped_with_capturing_off():
    rec = Recorder()
    capturing.append(rec)
    try:
        with Context(CAPTURING=0):
            lin, _ = create_linear_with_vars(tensor_call(buf(52), buf(53)), identity_pass)
    finally:
        capturing.remove(rec)
    assert rec.got == [] and len(lin.src) == 2


def test_planned_schedule_keeps_call_buffers_and_slices_intermediates():
    x, y = buf(54), buf(55)
    lin, _ = create_linear_with_vars(tensor_call(x, y), identity_pass)
    tmp = lin.src[0].src[1]
    assert tmp.op is Ops.SLICE and tmp.src[0].op is Ops.BUFFER and tmp.src[0].slot < 0
    assert lin.src[0].src[2] is x and lin.src[1].src[1] is y


# --- memory_plan_rewrite ----------------------------------------------------------------------


def chain_linear(n: int, size: int = 64):
    bufs = [UOp.internal_buffer(F32, size) for _ in range(n)]
    calls = [kernel(f"k{i}", bufs[i], bufs[i - 1]) if i else kernel("k0", bufs[0])
             for i in range(n)]
    return UOp(Ops.LINEAR, src=tuple(calls)), bufs


def test_held_buffers_keep_their_identity():
    lin, bufs = chain_linear(5)
    planned = memory_plan_rewrite(lin, held_bufs=[bufs[2]])
    args = [a for c in planned.src for a in c.src[1:]]
    assert bufs[2] in args
    assert all(a.op is Ops.SLICE for a in args if a is not bufs[2])


def test_held_items_that_are_no_uops_are_refused_and_a_held_join_holds_its_buffers():
    lin, bufs = chain_linear(5)
    for bad, what in (([[bufs[1]]], "list"), ([3], "int"), (None, "NoneType"), (5, "int")):
        with pytest.raises(TypeError, match=what):
            memory_plan_rewrite(lin, bad)
    with pytest.raises(TypeError, match="LINEAR"):
        memory_plan_rewrite([lin])
    join = UOp(Ops.MSTACK, bufs[1].dtype, (bufs[1], bufs[3]))
    planned = memory_plan_rewrite(lin, held_bufs=[join])
    args = [a for c in planned.src for a in c.src[1:]]
    assert bufs[1] in args and bufs[3] in args
    assert all(a.op is Ops.SLICE for a in args if a is not bufs[1] and a is not bufs[3])


def test_no_memory_planner_leaves_the_linear_unchanged():
    lin, _ = chain_linear(5)
    with Context(NO_MEMORY_PLANNER=1):
        assert memory_plan_rewrite(lin) is lin


def test_chain_reuses_memory_down_to_two_buffers():
    lin, _ = chain_linear(10, size=1024)
    planned = memory_plan_rewrite(lin)
    st = linear_stats(planned)
    assert st.arena_total == 2 * 1024 * 4 == st.floor_bytes
    assert linear_stats(lin).unplanned_bytes == 10 * 1024 * 4


def test_planned_stats_count_each_buffer_where_planned_views_share_a_slice_node():
    out = buf(0, 64)
    a, d, b = buf(-101, 64), buf(-102, 128), buf(-103, 64)  # a: calls 0-1, d: 2-3, b: 4-5
    lin = UOp(Ops.LINEAR, dtypes.void, (kernel("k0", a), kernel("k1", out, a), kernel("k2", d),
                                        kernel("k3", out, d), kernel("k4", b),
                                        kernel("k5", out, b)))
    planned = memory_plan_rewrite(lin, [out])
    raw, st = linear_stats(lin), planned_stats(planned, lin, [out])
    assert (st.calls, st.unplanned_bytes) == (6, raw.unplanned_bytes)
    assert st.floor_bytes == raw.floor_bytes and st.arena_bytes == linear_stats(planned).arena_bytes
    assert st.floor_bytes <= st.arena_total < st.unplanned_bytes
    assert st.used_bytes == st.arena_total
    # a and b share one SLICE node: counted once there, over calls 0-5 (hence planned_stats)
    assert linear_stats(planned).unplanned_bytes < raw.unplanned_bytes
    assert raw.used_bytes == raw.unplanned_bytes and not raw.arena_bytes


def test_offsets_are_remembered_per_lifetimes_until_the_plan_cache_is_cleared(monkeypatch):
    import tolk.schedule.memory as memory

    calls = []
    real = memory.assign_offsets
    monkeypatch.setattr(memory, "assign_offsets", lambda *a, **k: calls.append(1) or real(*a, **k))
    memory.plan_cache_clear()
    lin, _ = chain_linear(7, size=96)
    first = memory_plan_rewrite(lin)
    again = memory_plan_rewrite(chain_linear(7, size=96)[0])  # other buffers, same lifetimes
    assert len(calls) == 1
    memory.plan_cache_clear()
    third = memory_plan_rewrite(lin)
    assert len(calls) == 2
    offsets = [[a.arg[0] for a in c.src[1:]] for c in first.src]
    assert [[a.arg[0] for a in c.src[1:]] for c in again.src] == offsets
    assert [[a.arg[0] for a in c.src[1:]] for c in third.src] == offsets


def test_copy_buffers_get_their_own_lane():
    a, b, c = (UOp.internal_buffer(F32, 64, "CPU") for _ in range(3))
    copy_call = UOp(Ops.CALL, dtypes.void, (UOp(Ops.COPY, dtypes.void, (), "CPU"), b, a))
    lin = UOp(Ops.LINEAR, src=(kernel("compute_only", c), kernel("make", a, c), copy_call,
                               kernel("use", buf(60), b)))
    planned = memory_plan_rewrite(lin)
    arg_arena = [[x.src[0] for x in call.src[1:] if x.op is Ops.SLICE] for call in planned.src]
    assert arg_arena[0][0] is not arg_arena[2][0]  # c (compute) vs b (copy)
    assert arg_arena[2][0] is arg_arena[2][1]  # both ends of the copy share the copy lane


def _slices(planned: UOp) -> list[list]:
    """Each call's args with a SLICE as (arena size, offset, bytes), also inside MSTACK and
    MSELECT: a plan, arena slots aside."""
    def arg(a: UOp):
        if a.op is Ops.SLICE:
            return (a.src[0].size, *a.arg)
        if a.op in (Ops.MSTACK, Ops.MSELECT):
            return (a.op, a.arg, *map(arg, a.src))
        return a
    return [[arg(a) for a in c.src[1:]] for c in planned.src]


def mixed_linear():
    """Internal buffers named directly, through MSTACK and MSELECT, by a COPY, beside held and
    user buffers."""
    t = [UOp.internal_buffer(F32, 32 * (i + 1)) for i in range(6)]
    stack = UOp(Ops.MSTACK, F32, (t[1], t[2]))
    copy_call = UOp(Ops.CALL, dtypes.void, (UOp(Ops.COPY, dtypes.void, (), "CPU"), t[4], t[3]))
    lin = UOp(Ops.LINEAR, src=(
        kernel("a", t[0], buf(70)), kernel("b", stack, t[0]), kernel("c", t[3], stack),
        copy_call, kernel("d", t[5], UOp(Ops.MSELECT, F32, (stack,), 1), t[4]),
        kernel("e", buf(71), t[5], t[0])))
    return lin, t


@pytest.mark.parametrize("hook", ["buffers_of", "replace"])
def test_a_plan_made_inside_another_leaves_the_outer_one_right(monkeypatch, hook):
    # memory_plan_rewrite keeps each buffer's number on the node in two passes (lifetimes, then
    # the rewrite); a plan of the same schedule made inside either (by a finalizer, say)
    # overwrites those numbers: that pass runs again
    import tolk.schedule.memory as memory
    from tolk.uop.ops import _scratch_passes

    lin, t = mixed_linear()
    want = _slices(memory_plan_rewrite(lin, held_bufs=[t[2]]))
    inner: list = []
    owner = memory if hook == "buffers_of" else UOp  # met in the first pass, or the second
    original = getattr(owner, hook)

    def hooked(*args, **kwargs):
        if not inner:
            inner.append(None)
            inner[0] = _slices(memory_plan_rewrite(lin, held_bufs=[t[2]]))
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, hook, hooked)
    before = _scratch_passes[0]
    got = memory_plan_rewrite(lin, held_bufs=[t[2]])
    assert _slices(got) == want and inner == [want]
    assert _scratch_passes[0] - before == 5  # the outer's two, the inner's two, one again
    assert t[2] in [a for c in got.src for a in c.src[1:] for a in (a, *a.src)]


def test_other_threads_schedule_while_a_plan_is_being_made(monkeypatch):
    # passes that keep scratch on the nodes take turns; the offset assignment runs between
    # memory_plan_rewrite's passes, so a long plan holds up no other thread's schedule
    import threading

    import tolk.schedule.memory as memory

    lin, _ = mixed_linear()
    sink = assigns_and_readers()
    want = create_schedule(sink)
    other: list = []
    original = memory._plan

    def plan(*args):
        th = threading.Thread(target=lambda: other.append(create_schedule(sink)))
        th.start()
        th.join(30)
        return original(*args)

    monkeypatch.setattr(memory, "_plan", plan)
    memory_plan_rewrite(lin)
    assert other and all(x is want for x in other)


def test_plans_from_many_threads_match_one_thread():
    import threading

    lins = [mixed_linear() for _ in range(3)]
    want = [_slices(memory_plan_rewrite(lin, held_bufs=[t[k]])) for k, (lin, t) in enumerate(lins)]
    want_stats = [linear_stats(lin) for lin, _ in lins]
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    errors: list = []

    def work(j):
        try:
            for r in range(40):
                k = (j + r) % 3
                lin, t = lins[k]
                assert _slices(memory_plan_rewrite(lin, held_bufs=[t[k]])) == want[k]
                assert linear_stats(lin) == want_stats[k]
        except BaseException as e:  # noqa: BLE001 (reported by the main thread)
            errors.append(e)

    try:
        threads = [threading.Thread(target=work, args=(j,)) for j in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(60)
    finally:
        sys.setswitchinterval(old)
    assert not errors, errors[0]


def test_the_floor_of_an_unplanned_schedule_counts_lanes_as_the_planner_does():
    # b is made by a kernel, then copied out: the planner gives it the copy lane, apart from c,
    # so no plan takes less than both; in one lane with c the floor would be the larger alone
    b, c = UOp.internal_buffer(F32, 64), UOp.internal_buffer(F32, 128)
    copy_call = UOp(Ops.CALL, dtypes.void, (UOp(Ops.COPY, dtypes.void, (), "CPU"), buf(64), b))
    lin = UOp(Ops.LINEAR, src=(kernel("make", b), copy_call, kernel("other", c),
                               kernel("use", buf(60), c)))
    planned = memory_plan_rewrite(lin)
    assert linear_stats(planned).arena_total == (64 + 128) * 4
    assert linear_stats(lin).floor_bytes == linear_stats(planned).floor_bytes == (64 + 128) * 4


def test_each_device_gets_its_own_arena():
    a = UOp.internal_buffer(F32, 64, "CPU:1")
    b = UOp.internal_buffer(F32, 64, "CPU:2")
    lin = UOp(Ops.LINEAR, src=(kernel("k", UOp(Ops.MSTACK, F32, (a, b))),))
    planned = memory_plan_rewrite(lin)
    (arg,) = planned.src[0].src[1:]
    assert arg.op is Ops.MSTACK and {s.src[0].device for s in arg.src} == {"CPU:1", "CPU:2"}
    assert linear_stats(planned).arena_bytes == {"CPU:1": 256, "CPU:2": 256}


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_planned_live_buffers_never_overlap(data):
    nbufs = data.draw(st.integers(1, 12))
    devices = ["CPU", "CPU:1"]
    bufs = [UOp.internal_buffer(F32, data.draw(st.integers(0, 300)),
                                data.draw(st.sampled_from(devices)))
            for _ in range(nbufs)]
    held = set(data.draw(st.lists(st.sampled_from(bufs), max_size=2)))
    ncalls = data.draw(st.integers(1, 15))
    calls = []
    for i in range(ncalls):
        args = data.draw(st.lists(st.sampled_from(bufs), min_size=1, max_size=4))
        calls.append(kernel(f"k{i}", *args))
    lin = UOp(Ops.LINEAR, src=tuple(calls))
    planned = memory_plan_rewrite(lin, held)
    life: dict[UOp, list[int]] = {}
    view: dict[UOp, UOp] = {}
    for i, (c, p) in enumerate(zip(lin.src, planned.src)):
        for a, b in zip(c.src[1:], p.src[1:]):
            life.setdefault(a, [i, i])[1] = i
            assert view.setdefault(a, b) is b
    for a, b in view.items():
        if a in held:
            assert b is a
        else:
            assert b.op is Ops.SLICE and b.arg[0] % 256 == 0 and b.arg[1] == a.nbytes
            assert b.src[0].device == a.device and b.arg[0] + b.arg[1] <= b.src[0].size
    planned_bufs = [a for a in view if a not in held]
    for i, a in enumerate(planned_bufs):
        for b in planned_bufs[i + 1:]:
            va, vb = view[a], view[b]
            live = life[a][0] <= life[b][1] and life[b][0] <= life[a][1]
            same_arena = va.src[0] is vb.src[0]
            bytes_meet = va.arg[0] < vb.arg[0] + vb.arg[1] and vb.arg[0] < va.arg[0] + va.arg[1]
            assert not (live and same_arena and bytes_meet), (a, b)


# --- program_key and create_linear_for_sink ---------------------------------------------------


def add(a: UOp, b: UOp) -> UOp:
    return UOp(Ops.ADD, a.dtype, (a, b))


def key_of(root: UOp):
    return program_key(root)[0]


def test_program_key_is_the_same_for_the_same_computation_on_other_buffers():
    c = UOp.const(F32, 2.0)
    assert (key_of(UOp.sink(add(add(buf(1), buf(2)), c)))
            == key_of(UOp.sink(add(add(buf(7), buf(8)), c))))
    assert key_of(UOp.sink(add(buf(1), buf(1)))) == key_of(UOp.sink(add(buf(9), buf(9))))


def test_program_key_tells_one_buffer_read_twice_from_two_buffers():
    assert key_of(UOp.sink(add(buf(1), buf(1)))) != key_of(UOp.sink(add(buf(1), buf(2))))
    same, other = add(add(buf(1), buf(2)), buf(1)), add(add(buf(1), buf(2)), buf(3))
    assert key_of(UOp.sink(same)) != key_of(UOp.sink(other))


def test_program_key_tells_apart_buffers_of_another_dtype_size_or_device():
    base = key_of(UOp.sink(add(buf(1), buf(2))))
    for b in (buf(3, dtype=dtypes.float64), buf(3, size=32), buf(3, device="CPU:1")):
        assert key_of(UOp.sink(add(buf(1), b))) != base


def test_program_key_keeps_the_variable_and_drops_its_value():
    n, m = var("n"), var("m")
    k2 = key_of(UOp.sink(add(buf(1), bind(n, 2))))
    assert k2 == key_of(UOp.sink(add(buf(5), bind(n, 7))))
    assert k2 != key_of(UOp.sink(add(buf(1), bind(m, 2))))


def test_program_key_tells_apart_args_python_calls_equal():
    for a, b in ((0.0, -0.0), (1, 1.0), (1, True)):
        x = UOp(Ops.RESHAPE, F32, (buf(1),), a)
        y = UOp(Ops.RESHAPE, F32, (buf(1),), b)
        assert key_of(UOp.sink(x)) != key_of(UOp.sink(y))


def test_program_key_lists_buffers_and_binds_in_toposort_order():
    n = var("n")
    b1, b2, bn = buf(4), buf(2), bind(n, 3)
    root = UOp.sink(add(b1, bn), add(b2, b1))
    _, bufs, binds, nodes = program_key(root)
    assert bufs == [b1, b2] and binds == [bn]
    assert list(nodes) == root.toposort()
    key, bufs, binds, nodes = program_key(*root.src)  # several roots: the graph under them all
    assert bufs == [b1, b2] and binds == [bn] and list(nodes) == root.toposort()[:-1]
    assert key != program_key(root)[0] and key != program_key(root.src[1], root.src[0])[0]


def test_program_key_walks_a_wide_node_in_order_and_renames_its_buffers():
    # a SINK over many computed outputs: its sources are walked once each, left to right
    one = UOp.const(F32, 1.0)
    shared = add(buf(1), one)
    outs = [add(add(buf(100 + i), shared), one) if i % 3 else shared for i in range(300)]
    root = UOp.sink(*outs, buf(2))
    key, bufs, _, nodes = program_key(root)
    assert list(nodes) == root.toposort()
    assert bufs == [buf(1)] + [buf(100 + i) for i in range(300) if i % 3] + [buf(2)]
    renamed = UOp.sink(*[o.substitute({buf(100 + i): buf(1000 + i)}) for i, o in enumerate(outs)],
                       buf(2))
    assert program_key(renamed)[0] == key


def test_program_keys_that_differ_where_their_hash_does_not_look_stay_apart():
    # a long part is hashed at spaced positions only; equality still compares it whole
    flat = tuple(range(1000))
    a, b = ProgramKey((flat, ())), ProgramKey((flat[:1] + (-1,) + flat[2:], ()))
    assert hash(a) == hash(b) and a != b
    assert len({a: 1, b: 2}) == 2 and ProgramKey((flat, ())) == a
    chain = [add(buf(1), buf(2))]
    for i in range(200):
        chain.append(UOp(Ops.MUL if i == 100 else Ops.ADD, F32, (chain[-1], buf(2))))
    other = [add(buf(1), buf(2))]
    for _ in range(200):
        other.append(add(other[-1], buf(2)))
    assert key_of(UOp.sink(chain[-1])) != key_of(UOp.sink(other[-1]))


def test_program_key_of_a_very_deep_graph_needs_no_recursion(low_recursion_limit):
    def chain(b, n):
        x, one = b, UOp.const(F32, 1.0)
        for _ in range(n):
            x = add(x, one)
        return program_key(UOp.sink(x))

    key, bufs, _, _ = chain(buf(1), 100_000)
    assert bufs == [buf(1)]
    assert chain(buf(2), 100_000)[0] == key  # the same program on another buffer
    assert chain(buf(1), 99_999)[0] != key


@st.composite
def renamed_graphs(draw):
    """A random graph over buffers 0..3 and binds of two variables, and the same recipe over
    other buffers (a renaming that may merge two buffers into one) and other bound values. Up
    to 24 ops: long enough for keys whose hash reads only a sample of their entries."""
    leaves = draw(st.lists(st.integers(0, 5), min_size=1, max_size=6))
    ops = draw(st.lists(st.tuples(st.sampled_from([Ops.ADD, Ops.MUL]), st.integers(0, 20),
                                  st.integers(0, 20)), min_size=1, max_size=24))
    rename = draw(st.lists(st.integers(10, 13), min_size=4, max_size=4))
    values = draw(st.lists(st.integers(0, 9), min_size=4, max_size=4))
    n, m = var("n"), var("m")

    def build(slots, vals):
        pool = [buf(slots[i]) if i < 4 else bind((n, m)[i - 4], vals[i - 4]) for i in leaves]
        for op, i, j in ops:
            pool.append(UOp(op, F32, (pool[i % len(pool)], pool[j % len(pool)])))
        return UOp.sink(*pool[-2:])

    return build(range(4), values[:2]), build(rename, values[2:]), len(set(rename)) == 4


@settings(max_examples=200, deadline=None)
@given(renamed_graphs())
def test_equal_program_keys_mean_one_body_and_renamed_buffers_keep_the_key(graphs):
    g, h, one_to_one = graphs
    (kg, bg, vg, ng), (kh, bh, vh, _) = program_key(g), program_key(h)
    assert list(ng) == g.toposort()
    if kg == kh:
        assert program_body(g, bg, vg) is program_body(h, bh, vh)
    if one_to_one:
        assert kg == kh


@settings(max_examples=200, deadline=None)
@given(renamed_graphs())
def test_equal_program_forms_mean_equal_program_keys_and_the_same_leaves(graphs):
    g, h, one_to_one = graphs
    (kg, bg, vg, _), (kh, bh, vh, _) = program_key(g), program_key(h)
    fg, fh = program_form(g), program_form(h)
    assert fg[1:] == (bg, vg) and fh[1:] == (bh, vh)
    if fg[0] == fh[0]:
        assert kg == kh
    if one_to_one:
        assert fg[0] == fh[0]
    for roots in (g.src, g.src[::-1]):  # several roots, in either order
        k, b, v, _ = program_key(*roots)
        assert program_form(*roots)[1:] == (b, v)


def test_a_cache_hit_gives_the_schedule_of_a_miss_on_the_new_buffers():
    from tolk.tensor import Tensor

    def program():
        x, w = Tensor.empty(4, 8), Tensor.empty(8, 8)
        return ((x @ w).softmax(-1) + x.sum(1, keepdim=True)).layernorm()

    schedule_cache_clear()
    miss = program().schedule_linear()
    hit = program().schedule_linear()
    assert schedule_cache_info().hits == 1
    with Context(SCACHE=0):
        uncached = program().schedule_linear()
    for lin in (hit, uncached):
        assert [c.src[0] for c in lin.src] == [c.src[0] for c in miss.src]
        assert [[a.arg if a.op is Ops.SLICE else a.op for a in c.src[1:]] for c in lin.src] == \
            [[a.arg if a.op is Ops.SLICE else a.op for a in c.src[1:]] for c in miss.src]
    args_of_hit, args_of_miss = ({a for c in lin.src for a in c.src[1:]} for lin in (hit, miss))
    assert not args_of_hit & args_of_miss  # new buffers, a fresh arena


def test_create_linear_for_sink_matches_create_linear_with_vars_on_the_body():
    n = var("n")
    x, y = buf(60), buf(61)
    sink = UOp.sink(after(y, kernel("k", y, x, ast_src=(bind(n, 3),))), write(x, "w", x))
    _, bufs, binds, _ = program_key(sink)
    call = UOp(Ops.CALL, dtypes.void, (program_body(sink, bufs, binds), *bufs, *binds))
    for scache in (0, 1):
        with Context(SCACHE=scache, NO_MEMORY_PLANNER=1):
            schedule_cache_clear()
            want = create_linear_with_vars(call, identity_pass)
            schedule_cache_clear()
            with pytest.MonkeyPatch.context() as mp:
                import tolk.schedule as sched

                mp.setattr(sched, "_default_kernel_graph", identity_pass)
                got = [create_linear_for_sink(sink) for _ in range(2)]  # a miss, then a hit
        assert got == [want, want] and want[1] == {"n": 3} and names(want[0]) == ["k", "w"]


# ---------------------------------------------------------------------------------------------
# joins as written states, binds behind wrappers and in nested calls, malformed input


def _mstack(*s: UOp) -> UOp:
    return UOp(Ops.MSTACK, F32, s)


def _late(n: int = 3) -> UOp:
    """A state after a chain of `n` kernels: a kernel reading it becomes ready late."""
    z = buf(90)
    for i in range(n):
        z = write(z, f"z{i}")
    return z


@pytest.mark.parametrize("reads", ["the join", "a part", "a select"])
def test_a_reader_of_a_state_a_join_writer_supersedes_runs_before_that_writer(reads):
    a0, a1 = buf(11, device="CPU:1"), buf(12, device="CPU:2")
    st = _mstack(a0, a1)
    w = after(st, kernel("w_stack", st))
    read = {"the join": st, "a part": a0, "a select": UOp(Ops.MSELECT, F32, (st,), 0)}[reads]
    r = write(buf(3), "read_old", read, _late())
    order = names(create_schedule(UOp.sink(w, r)))
    assert order.index("read_old") < order.index("w_stack"), order


def test_a_reader_of_an_after_inside_a_written_join_runs_before_the_join_writer():
    s0, s1 = write(buf(1), "k0"), write(buf(2), "k1")
    st = _mstack(s0, s1)
    w = after(st, kernel("w_stack", st))
    r = write(buf(3), "read_s0", s0, _late())
    order = names(create_schedule(UOp.sink(w, r)))
    assert order.index("k0") < order.index("read_s0") < order.index("w_stack"), order


def test_a_bind_behind_a_view_or_cast_is_a_bind_argument():
    n = var("n")
    cast = UOp(Ops.CAST, dtypes.int64, (bind(n, 3),))
    lin = create_schedule(UOp.sink(write(buf(1), "k", cast)))
    assert lin.src[0].src[2] is bind(n, 3)  # unwrapped to the BIND, kept


def test_binds_passed_to_nested_calls_are_collected_and_checked():
    n = var("n")
    inner = UOp.sink(after(param(0), kernel("kt", param(0), ast_src=(n,))))
    outer = UOp.sink(after(param(0), UOp(Ops.CALL, dtypes.void, (inner, param(0), bind(n, 6)))))
    call = UOp(Ops.CALL, dtypes.void, (outer, buf(2)))
    assert create_linear_with_vars(call, identity_pass)[1] == {"n": 6}
    clash = UOp(Ops.CALL, dtypes.void, (outer, buf(2), bind(n, 7)))
    with pytest.raises(ScheduleError, match="bound to both"):
        create_linear_with_vars(clash, identity_pass)


def test_disagreeing_binds_raise_even_for_a_variable_no_kernel_reads():
    m = var("m")
    body = UOp.sink(write(param(0), "k"))
    call = UOp(Ops.CALL, dtypes.void, (body, buf(2), bind(m, 1), bind(m, 2)))
    with pytest.raises(ScheduleError, match="bound to both"):
        create_linear_with_vars(call, identity_pass)
    ok = UOp(Ops.CALL, dtypes.void, (body, buf(2), bind(m, 1)))
    assert create_linear_with_vars(ok, identity_pass)[1] == {}  # unused: not returned


def test_buffers_inside_a_join_argument_of_the_big_call_are_held():
    a, b = UOp.internal_buffer(F32, 16, "CPU:1"), UOp.internal_buffer(F32, 16, "CPU:2")
    body = UOp.sink(after(param(0), kernel("k", param(0))))
    lin, _ = create_linear_with_vars(UOp(Ops.CALL, dtypes.void, (body, _mstack(a, b))),
                                     identity_pass)
    assert lin.src[0].src[1].src == (a, b)  # not planned into slices


@pytest.mark.parametrize("bad, words", [
    (lambda: memory_plan_rewrite(UOp(Ops.LINEAR, src=(UOp(Ops.CALL, dtypes.void, ()),))),
     "CALLs of a kernel"),
    (lambda: memory_plan_rewrite(UOp(Ops.LINEAR, src=(buf(1),))), "CALLs of a kernel"),
    (lambda: create_linear_with_vars(UOp(Ops.CALL, dtypes.void, ()), identity_pass),
     "CALL\\(body"),
    (lambda: create_linear_with_vars(UOp(Ops.LINEAR, src=(UOp(Ops.CALL, dtypes.void, ()),))),
     "CALLs of a kernel"),
    (lambda: create_linear_with_vars(UOp.sink(write(buf(1), "k")), lambda s: None), "SINK"),
    (lambda: create_linear_with_vars(UOp.sink(write(buf(1), "k")),
                                     lambda s: UOp.const(F32, 1.0)), "SINK"),
    (lambda: create_schedule(buf(1)), "SINK of AFTERs"),
    (lambda: create_linear_with_vars(UOp(Ops.CALL, dtypes.void, (
        UOp.sink(write(param(0), "k")), buf(2),
        UOp(Ops.BIND, dtypes.int32, (var("n"),)))), identity_pass), "BIND must bind"),
    (lambda: create_linear_with_vars(UOp(Ops.CALL, dtypes.void, (
        UOp.sink(write(param(0), "k")), buf(2), bind(var("n", 0, 10), 30))), identity_pass),
     "'n' is bound to 30, outside its range \\[0, 10\\]"),
    (lambda: create_linear_with_vars(UOp(Ops.CALL, dtypes.void, (
        UOp.sink(write(param(0), "k")), buf(2),
        UOp(Ops.BIND, dtypes.int32, (UOp(Ops.DEFINE_VAR, dtypes.int32, (), "n"),
                                     UOp.const(dtypes.int32, 3))))), identity_pass),
     "DEFINE_VAR's arg is \\(name, min, max\\)"),
    (lambda: create_schedule(UOp.sink(after(buf(1), UOp(Ops.CALL, dtypes.void, ())))),
     "has no AST"),
])
def test_malformed_schedules_raise_schedule_errors_that_name_the_node(bad, words):
    with pytest.raises(ScheduleError, match=words):
        bad()


def test_deeply_nested_joins_plan_and_resolve_without_recursion():
    leaf = UOp.internal_buffer(F32, 16)
    j = leaf
    for i in range(3000):
        j = UOp(Ops.MSELECT, F32, (j,), 0) if i % 2 else _mstack(j)
    lin = UOp(Ops.LINEAR, src=(kernel("k", j),))
    planned = memory_plan_rewrite(lin)
    assert planned.src[0].src[1].op is Ops.MSELECT or planned.src[0].src[1].op is Ops.MSTACK
    assert linear_stats(lin).calls == 1
    verify_linear(planned)  # its walk of the joins recursed
    body = UOp.sink(after(param(0), kernel("k", param(0), j)))
    got, _ = create_linear_with_vars(UOp(Ops.CALL, dtypes.void, (body, buf(5))), identity_pass)
    assert len(got.src) == 1


@pytest.mark.parametrize("fn", [lower_sink_to_linear, create_linear_with_vars])
@pytest.mark.parametrize("bad", [None, 3, "SINK"])
def test_the_pipeline_refuses_what_is_no_uop_with_a_type_error(fn, bad):
    with pytest.raises(TypeError, match=type(bad).__name__):
        fn(bad)


@pytest.mark.parametrize("bad", [None, UOp.sink(), UOp.const(F32, 1.0)])
def test_linear_stats_names_what_is_not_a_linear(bad):
    with pytest.raises(ScheduleError, match="needs a LINEAR"):
        linear_stats(bad)


def test_linear_stats_holds_the_buffers_of_a_held_join_and_refuses_non_nodes():
    a = UOp.internal_buffer(F32, 1024, "CPU:1")
    b = UOp.internal_buffer(F32, 1024, "CPU:2")
    join = UOp(Ops.MSTACK, F32, (a, b))
    lin = UOp(Ops.LINEAR, src=(kernel("k", join),))
    assert memory_plan_rewrite(lin, [join]) is lin
    for held in ([join], [a, b]):
        st = linear_stats(lin, held)
        assert (st.unplanned_bytes, st.floor_bytes) == (0, 0)
    with pytest.raises(TypeError, match="linear_stats's held_bufs must hold BUFFER nodes"):
        linear_stats(lin, [3])


def test_bad_states_and_kernel_sources_name_the_after_or_kernel():
    bad_state = UOp.sink(after(UOp(Ops.CONTIGUOUS, F32, (buf(1),)), kernel("k", buf(1))))
    with pytest.raises(ScheduleError, match="state an AFTER supersedes.*got CONTIGUOUS"):
        create_schedule(bad_state)
    end = UOp(Ops.END, dtypes.void, (kernel("ek", buf(1)), UOp.const(F32, 2.0)))
    with pytest.raises(ScheduleError, match="got CONST.*ordering source of kernel 'ek'"):
        create_schedule(UOp.sink(after(buf(1), end)))
    arg = UOp(Ops.CONTIGUOUS, F32, (buf(2),))
    with pytest.raises(ScheduleError, match="got CONTIGUOUS.*an argument of kernel 'ak'"):
        create_schedule(UOp.sink(after(buf(1), kernel("ak", arg))))


# -- an audit of the spec, sentence by sentence: what it found ---------------------------------


def _store_of(b: UOp) -> UOp:
    return UOp(Ops.STORE, F32, (b, UOp.const(F32, 1.0)))


def test_an_after_without_a_kernel_holds_its_states_writers_for_readers():
    """STORE children are ignored and AFTER children are dependencies: an AFTER with no
    kernel is the state it wraps, after its dependencies (its readers wait for both)."""
    c, d, o = buf(1), buf(2), buf(3)
    kc = write(c, "kc", write(d, "z"))
    assert names(create_schedule(UOp.sink(write(o, "r", after(kc, _store_of(c)))))) == \
        ["z", "kc", "r"]
    assert names(create_schedule(UOp.sink(write(o, "r", after(kc, write(buf(0), "w")))))) == \
        ["z", "w", "kc", "r"]
    # two wrappers deep, the dependency's own wait carried along
    deep = after(after(kc, write(buf(0), "w")), _store_of(c))
    order = names(create_schedule(UOp.sink(write(o, "r", deep))))
    assert order.index("r") > max(order.index("kc"), order.index("w"))


def test_readers_of_a_state_run_before_the_next_real_overwrite_through_a_wrapper():
    c, d, o = buf(1), buf(2), buf(3)
    s0 = write(c, "kc0")
    s2 = write(after(s0, _store_of(c)), "kc2")  # kc2 overwrites c after a kernel-less AFTER
    late = write(write(d, "z0"), "z1")
    order = names(create_schedule(UOp.sink(s2, write(o, "r", s0, late))))
    assert order.index("r") < order.index("kc2")


def test_random_programs_with_kernelless_wrappers_keep_every_read_in_order():
    import random

    for seed in range(150):
        rnd = random.Random(seed)
        bufs = [buf(100 + i) for i in range(rnd.randint(1, 4))]
        state, version = {b: b for b in bufs}, {b: 0 for b in bufs}
        want, roots = {}, []
        for i in range(rnd.randint(1, 8)):
            out, reads = rnd.choice(bufs), rnd.sample(bufs, rnd.randint(0, len(bufs)))
            name = f"k{i}"
            want[name] = {out: version[out], **{r: version[r] for r in reads}}
            a = after(state[out], kernel(name, state[out],
                                         *[state[r] for r in reads if r is not out]))
            version[out] += 1
            if rnd.random() < 0.4:
                a = after(a, _store_of(out))
            state[out] = a
            if rnd.random() < 0.3:
                roots.append(a)
        roots += [s for s in state.values() if s.op is Ops.AFTER]
        seen = {b: 0 for b in bufs}
        lin = create_schedule(UOp.sink(*roots))
        for call in lin.src:
            nm = call.src[0].arg.name
            assert all(seen[b] == v for b, v in want[nm].items()), (seed, names(lin))
            seen[call.src[1]] += 1
        assert len(lin.src) == len(want)


def test_resolution_keeps_the_callers_buffers_one_buffer():
    lin = lambda *c: UOp(Ops.LINEAR, src=c)  # noqa: E731
    call = lambda body, *a: UOp(Ops.CALL, dtypes.void, (body, *a))  # noqa: E731
    b = UOp.internal_buffer(F32, 16)
    # an argument the body also names directly: one buffer, held (not planned into an arena)
    out, _ = create_linear_with_vars(call(lin(kernel("w", param(0)), kernel("r", buf(0), b)), b))
    assert out.src[0].src[1] is b and out.src[1].src[2] is b
    # an outer body's buffer named inside a nested body: one buffer in both
    t = UOp.internal_buffer(F32, 16)
    with Context(NO_MEMORY_PLANNER=1):
        out, _ = create_linear_with_vars(
            call(lin(kernel("k1", t), call(lin(kernel("k2", param(0), t)), param(0))), buf(0)))
    assert out.src[0].src[1] is out.src[1].src[2]
    # ... named by the nested body first
    with Context(NO_MEMORY_PLANNER=1):
        out, _ = create_linear_with_vars(
            call(lin(call(lin(kernel("k2", param(0), t)), param(0)), kernel("k1", t)), buf(0)))
    assert out.src[0].src[2] is out.src[1].src[1]


@pytest.mark.parametrize("arg", [(-1, "CPU", 16), None, ("x", "CPU", 16), (1.0, "CPU", 16)])
def test_a_param_with_a_bad_slot_is_named(arg):
    body = UOp(Ops.LINEAR, src=(kernel("k", UOp(Ops.PARAM, F32, (), arg)),))
    with pytest.raises(ScheduleError, match="PARAM"):
        create_linear_with_vars(UOp(Ops.CALL, dtypes.void, (body, buf(7), buf(8))))


def test_malformed_wrappers_buffers_vars_and_slices_are_named():
    b = buf(1)
    bare = UOp(Ops.RESHAPE, F32, (), (1,))
    for sink in (UOp.sink(after(b, kernel("k", b, bare))),
                 UOp.sink(after(b, kernel("k", b, UOp(Ops.CAST, F32, ())))),
                 UOp.sink(after(bare, kernel("k", b))),
                 UOp.sink(after(b, UOp(Ops.END, dtypes.void, (kernel("k", b), bare)))),
                 UOp.sink(after(b, kernel("k", b, UOp(Ops.MSTACK, F32, (bare,)))))):
        with pytest.raises(ScheduleError, match="wraps nothing"):
            create_schedule(sink)
    with pytest.raises(ScheduleError, match="BUFFER's arg"):
        create_linear_with_vars(UOp(Ops.LINEAR, src=(
            kernel("k", UOp(Ops.BUFFER, F32, (), None)),)))
    with pytest.raises(ScheduleError, match="DEFINE_VAR"):
        create_linear_with_vars(UOp(Ops.LINEAR, src=(UOp(Ops.CALL, dtypes.void, (
            ast("k", UOp(Ops.DEFINE_VAR, dtypes.int32, (), None)),)),)))
    arena = UOp(Ops.BUFFER, dtypes.uint8, (), (-99, "CPU", 64))
    for bad in (UOp(Ops.SLICE, F32, (), (0, 4)), UOp(Ops.SLICE, F32, (arena,), None)):
        with pytest.raises(ScheduleError, match="SLICE"):
            linear_stats(UOp(Ops.LINEAR, src=(kernel("k", bad),)))


def test_a_reader_of_a_wrapper_runs_before_a_sibling_overwrite_of_the_wrapped_state():
    b, o = buf(1), buf(2)
    x = after(b, _store_of(b))  # b's state, wrapped
    assert names(create_schedule(UOp.sink(write(b, "w1"), write(o, "r", x)))) == ["r", "w1"]
    s0 = write(b, "w0")
    x = after(s0, _store_of(b))
    order = names(create_schedule(UOp.sink(write(s0, "w1"), write(o, "r", x))))
    assert order == ["w0", "r", "w1"]
    x = after(s0, write(buf(3), "dep"))  # with a dependency: the same, after it
    order = names(create_schedule(UOp.sink(write(s0, "w1"), write(o, "r", x))))
    assert order.index("r") < order.index("w1") and order.index("dep") < order.index("r")


def test_a_reader_of_an_ordering_join_runs_before_an_overwrite_of_a_part():
    a, c, o = buf(1), buf(2), buf(3)
    k = kernel("k", a, c)
    sa, sc = after(a, k), after(c, k)
    joined = after(UOp(Ops.MSTACK, F32, (sa, sc)), k)  # k already wrote both: ordering only
    order = names(create_schedule(UOp.sink(write(sc, "w"), write(o, "r", joined))))
    assert order == ["k", "r", "w"]



def test_an_unhashable_kernel_graph_pass_lowers_without_the_cache():
    class Unhashable:  # (as a dataclass instance: __hash__ is None)
        __hash__ = None

        def __call__(self, sink):
            return sink

    sink = UOp.sink(write(buf(1), "k"))
    for _ in range(2):
        linear = lower_sink_to_linear(sink, Unhashable())
        assert linear.op is Ops.LINEAR and [c.src[0].arg.name for c in linear.src] == ["k"]
        linear, var_vals = create_linear_with_vars(sink, Unhashable())
        assert linear.op is Ops.LINEAR and len(linear.src) == 1 and var_vals == {}


def test_empty_inputs_give_empty_linears():
    empty = UOp(Ops.LINEAR, src=())
    for got in (create_schedule(UOp.sink()), lower_sink_to_linear(UOp.sink(), identity_pass),
                memory_plan_rewrite(empty, [])):
        assert got.op is Ops.LINEAR and got.src == ()
    for big in (UOp.sink(), UOp(Ops.CALL, dtypes.void, (UOp.sink(),)),
                UOp(Ops.CALL, dtypes.void, (empty,))):
        linear, var_vals = create_linear_with_vars(big, identity_pass)
        assert linear.op is Ops.LINEAR and linear.src == () and var_vals == {}
