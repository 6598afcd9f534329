"""Realizing from several threads at once: the schedule cache, the buffer slot counters, the
intern table and the tensor registries are shared, and every thread still gets its values."""

from __future__ import annotations

import contextlib
import sys
import threading

import numpy as np
import pytest

from tolk import Context, Tensor
from tolk.dtype import dtypes
from tolk.schedule import schedule_cache_info
from tolk.uop import Ops, UOp

THREADS = 4
ROUNDS = 12


def rnd(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def program(k: int, r: int):
    """Thread k's round r: (tolk outputs, numpy expectations). Same structure in every thread
    (schedule cache hits across threads) plus a part whose shape depends on the thread."""
    a, b = rnd(8, 8, seed=100 * k + r), rnd(8, seed=7 + k)
    x, y = Tensor(a), Tensor(b)
    h = (x @ x).relu() + y
    s = h.softmax(-1).sum(0)
    c = Tensor(rnd(3 + k, 4, seed=r))
    m = (c * 2 - 1).exp().max(1)
    z = Tensor(a.copy())
    z[1:3] = z[2:4] * 2 + 1
    outs = [h, s, m, z]
    e = np.exp(np.maximum(a @ a, 0) + b - (np.maximum(a @ a, 0) + b).max(-1, keepdims=True))
    za = a.copy()
    za[1:3] = za[2:4] * 2 + 1
    want = [np.maximum(a @ a, 0) + b, (e / e.sum(-1, keepdims=True)).sum(0),
            np.exp(rnd(3 + k, 4, seed=r) * 2 - 1).max(1), za]
    return outs, want


def run_threads(work) -> list[BaseException]:
    errors: list[BaseException] = []
    barrier = threading.Barrier(THREADS)

    def body(k):
        try:
            barrier.wait()
            work(k)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            errors.append(e)

    threads = [threading.Thread(target=body, args=(k,)) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    return errors


@pytest.mark.parametrize("flags", [{}, {"NO_MEMORY_PLANNER": 1}, {"SCACHE": 0}])
def test_realizes_from_four_threads_give_each_its_values(flags):
    before = schedule_cache_info()

    def work(k):
        with Context(**flags):
            for r in range(ROUNDS):
                outs, want = program(k, r)
                order = outs[k % len(outs):] + outs[:k % len(outs)]
                Tensor.realize(*order)
                for t, w in zip(outs, want):
                    np.testing.assert_allclose(t.numpy(), w, rtol=1e-4, atol=1e-5)

    errors = run_threads(work)
    assert not errors, errors[0]
    if not flags:
        assert schedule_cache_info().hits > before.hits


def test_threads_with_different_flags_do_not_see_each_others_flags():
    seen: dict[int, int] = {}

    def work(k):
        from tolk.helpers import NO_MEMORY_PLANNER

        with Context(NO_MEMORY_PLANNER=k % 2):
            for r in range(ROUNDS):
                x = Tensor(rnd(16, 16, seed=k * 1000 + r))
                lin = ((x @ x).exp().contiguous() * 2).sum(0).schedule_linear()
                planned = any(a.op is Ops.SLICE for c in lin.src for a in c.src[1:])
                assert NO_MEMORY_PLANNER.value == k % 2
                assert planned == (k % 2 == 0)
            seen[k] = k % 2

    errors = run_threads(work)
    assert not errors, errors[0]
    assert len(seen) == THREADS


def test_jitted_functions_in_separate_threads():
    import tolk

    def work(k):
        f = tolk.jit(lambda x, w: (x @ w).relu().sum(1))
        w = Tensor(rnd(6, 3, seed=k))
        for r in range(6):
            a = rnd(4, 6, seed=10 * k + r)
            got = f(Tensor(a), w).numpy()
            np.testing.assert_allclose(got, np.maximum(a @ rnd(6, 3, seed=k), 0).sum(1),
                                       rtol=1e-5, atol=1e-6)

    errors = run_threads(work)
    assert not errors, errors[0]


def test_hash_consing_holds_across_threads():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often so a race shows in a short test
    try:
        for trial in range(10):
            roots: list = [None] * THREADS

            def work(k, trial=trial, roots=roots):
                n = UOp.const(dtypes.float32, float(trial))
                for i in range(20_000):
                    n = UOp(Ops.ADD, dtypes.float32, (n, UOp.const(dtypes.float32, float(i % 7))))
                roots[k] = n

            assert not run_threads(work)
            assert all(r is roots[0] for r in roots), f"trial {trial}: equal graphs, distinct nodes"
    finally:
        sys.setswitchinterval(old)


def test_interning_stays_exact_while_nodes_die_and_are_built_again_across_threads():
    import gc

    from tolk.uop.ops import intern_table_size

    f32 = dtypes.float32
    gc.collect()
    before = intern_table_size()
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    kept: list = [[] for _ in range(THREADS)]
    try:
        def work(k):
            one = UOp.const(f32, 1.0)
            for i in range(4000):
                c = UOp.const(f32, float(i % 5))
                dying = UOp(Ops.MUL, f32, (one, c))  # built and dropped by every thread, often
                assert UOp(Ops.MUL, f32, (one, c)) is dying  # while it lives, it is the node
                del dying
                kept[k].append(UOp(Ops.ADD, f32, (one, c)))

        assert not run_threads(work)
        for i in range(4000):  # nodes alive at once in different threads are one node
            assert all(kept[k][i] is kept[0][i] for k in range(THREADS))
    finally:
        sys.setswitchinterval(old)
    kept.clear()
    gc.collect()
    assert intern_table_size() <= before  # every entry of a dead node left the table


def test_node_caches_filled_from_many_threads_at_once_keep_every_value():
    from tolk.schedule import _tensor_sinks
    from tolk.uop.shape import device_of, shape_of

    f32 = dtypes.float32
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for trial in range(10):
            # a fresh graph per trial (its nodes have empty caches), filled by four threads
            x = UOp(Ops.RESHAPE, f32, (UOp.buffer(f32, 64, "CPU"),), (8, 8))
            for i in range(2000):
                x = UOp(Ops.ADD, f32,
                        (x, UOp(Ops.RESHAPE, f32, (UOp.buffer(f32, 64, "CPU"),), (8, 8))))
            sink = UOp.sink(x)
            got: list = [None] * THREADS

            def work(k, sink=sink, x=x, got=got):
                got[k] = (shape_of(x), device_of(x), len(_tensor_sinks(sink)))

            assert not run_threads(work)
            assert got == [((8, 8), "CPU", 1)] * THREADS, f"trial {trial}"
    finally:
        sys.setswitchinterval(old)


def test_assigns_and_views_from_four_threads_with_frequent_switches():
    # every realize with an assign walks the registry of views and rewrites live lazy tensors;
    # with the interpreter switching threads every few bytecodes, a walk of the registry while
    # another thread registers a view raised, and a rewrite of another thread's tensor could
    # undo that thread's realize of it
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        def work(k):
            for r in range(40):
                a = rnd(4, 4, seed=10 * k + r)
                z = Tensor(a)
                rows = [z[i] for i in range(4)]  # views registered under z's state
                z[1:3] = z[2:4] * 2 + 1
                lazy = (z * 2).contiguous()  # a lazy reader of z's new state
                want = a.copy()
                want[1:3] = want[2:4] * 2 + 1
                np.testing.assert_allclose(rows[1].numpy(), want[1])
                np.testing.assert_allclose(lazy.numpy(), want * 2)

        errors = run_threads(work)
    finally:
        sys.setswitchinterval(interval)
    assert not errors, errors[0]


def test_a_capture_in_one_thread_records_none_of_another_threads_realizes():
    # `capturing` is per thread: while one thread captures a jitted function, the others'
    # realizes run (they were handed to the capture, which returned them an empty schedule),
    # and two threads may capture at once
    import tolk
    from tolk.engine.realize import capturing

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        def work(k):
            w = Tensor(rnd(6, 3, seed=k))
            f = tolk.jit(lambda x, w: (x @ w).relu().sum(1))
            for r in range(8):
                a = rnd(4, 6, seed=10 * k + r)
                want = np.maximum(a @ rnd(6, 3, seed=k), 0).sum(1)
                got = f(Tensor(a), w) if k % 2 else (Tensor(a) @ w).relu().sum(1)
                np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
            assert capturing == []

        errors = run_threads(work)
    finally:
        sys.setswitchinterval(interval)
    assert not errors, errors[0]


def test_schedules_of_one_graph_from_many_threads_match_one_thread():
    # create_schedule keeps its scratch on the nodes (tolk.uop.ops.scratch_pass): threads that
    # schedule graphs sharing nodes must not see each other's scratch
    sys.path.insert(0, "tests")
    from schedule_helpers import buf, write

    from tolk.schedule import create_schedule

    current, states = [buf(1), buf(2)], []
    for i in range(300):  # assigns, readers of states later overwritten, diamonds
        reads = current[:] if i % 4 else current[:1]
        if i % 3:  # overwrite x or y in place
            current[i % 2] = write(current[i % 2], f"k{i}", *reads)
            states.append(current[i % 2])
        else:
            states.append(write(buf(100 + i), f"k{i}", *reads))
    sinks = [UOp.sink(*states[j:j + 60:7], *current) for j in range(0, 300, 50)]
    want = [create_schedule(s) for s in sinks]  # kept: equal results are these very nodes
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        got: list = [[] for _ in range(THREADS)]

        def work(k):
            for r in range(6):
                order = sinks[k % len(sinks):] + sinks[:k % len(sinks)]
                got[k].extend((s, create_schedule(s)) for s in order)

        assert not run_threads(work)
    finally:
        sys.setswitchinterval(old)
    expect = dict(zip(sinks, want))
    assert all(lin is expect[s] for results in got for s, lin in results)


def test_a_jitted_function_shared_by_threads_captures_once_and_each_call_gets_its_result():
    import tolk

    f = tolk.jit(lambda a, b: (a * b).sum(1) + 1)
    errors, rng = [], np.random.default_rng(0)
    data = [(rng.random((4, 5)).astype(np.float32), rng.random((4, 5)).astype(np.float32))
            for _ in range(20)]

    def work(k):
        try:
            for a, b in data[k::2]:
                got = f(Tensor(a), Tensor(b)).numpy()
                if not np.allclose(got, (a * b).sum(1) + 1, rtol=1e-5):
                    errors.append((k, got))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert not errors


def test_rand_in_threads_draws_distinct_streams_and_a_failed_run_keeps_others_graphs():
    outs = []

    def draw():
        outs.extend(Tensor.rand(4).numpy().tobytes() for _ in range(100))

    threads = [threading.Thread(target=draw) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(outs)) == len(outs)
    u = Tensor.full((3,), 2, dtype="int32") * 3  # the same graph as t below, kept lazy
    t = Tensor.full((3,), 2, dtype="int32") * 3
    bad = Tensor(np.array([2, 3], np.int32)) ** Tensor(np.array([-1, 1], np.int32))
    with pytest.raises(ValueError, match="negative integer powers"):
        Tensor.realize(t, bad)
    t[0] = 100
    t.realize()
    assert u.numpy().tolist() == [6, 6, 6] and t.numpy().tolist() == [100, 6, 6]


def test_threads_writing_their_own_rows_of_one_tensor_under_a_lock_lose_no_update():
    base = Tensor(np.zeros((THREADS, 8), np.float32)).realize()
    lock = threading.Lock()  # (one buffer's states are one chain: its writers take turns)

    def work(k):
        for _ in range(60):
            with lock:
                v = base[k]
                v.assign(v + 1)
                v.realize()

    with switching_every(1e-5):
        assert run_threads(work) == []
    assert base.numpy().tolist() == [[60.0] * 8] * THREADS


def test_threads_reading_their_own_slices_of_one_lazy_tensor_read_its_values():
    with switching_every(1e-6):
        for r in range(40):
            a = rnd(THREADS, 8, seed=r)
            lazy = Tensor(a) + 1
            got: list = [None] * THREADS

            def work(k):
                v = lazy[k]
                (v.reshape(2, 4) * 3).numpy()
                got[k] = v.numpy()

            assert run_threads(work) == []
            for k in range(THREADS):
                np.testing.assert_array_equal(got[k], a[k] + 1)


@contextlib.contextmanager
def switching_every(seconds: float):
    """The interpreter switching threads every `seconds` (races show in a short test)."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(seconds)
    try:
        yield
    finally:
        sys.setswitchinterval(old)
