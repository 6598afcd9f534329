"""A realized tensor's value is reused by the lazy tensors that were built over it.

``z = y + 1`` built before ``y.realize()`` reads y's buffer afterwards instead of computing y
again (`tolk.callify._reuse_outputs`), with aliasing, assigns, views and jit captures as
they were.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import tolk.callify as callify
from tolk import Tensor, dtypes, jit
from tolk.uop.ops import Ops


def _kernels_of(fn):
    """The ASTs of the kernels `fn()` runs (through the schedule hook)."""
    seen = []

    def hook(linear, var_vals, seconds, stats):
        seen.extend(call.src[0] for call in linear.src)

    callify.schedule_hooks.append(hook)
    try:
        fn()
    finally:
        callify.schedule_hooks.remove(hook)
    return seen


def _reduces(asts) -> int:
    return sum(1 for a in asts for n in a.toposort() if n.op is Ops.REDUCE_AXIS)


def _buffer(t: Tensor):
    u = t.uop
    while u.op is not Ops.BUFFER:
        u = u.src[0]
    return u


def _reads(t: Tensor, buf) -> bool:
    return any(n is buf for n in t.uop.toposort())


@pytest.mark.parametrize("shape", [(5, 5), (1, 1), (0, 3)])
def test_a_tensor_built_over_one_realized_later_reads_its_buffer(shape):
    rng = np.random.default_rng(1)
    xn = rng.random(shape, dtype=np.float32)
    x = Tensor(xn)
    y = (x @ x.T).exp()  # a reduce: computing it again would show as a second one
    z = y + 1
    w = z.sum()  # a view of a dropped tensor (the reduce before its reshape)
    y.realize()
    buf = _buffer(y)
    assert _reads(z, buf) and _reads(w, buf)
    ref = np.exp(xn @ xn.T)
    asts = _kernels_of(w.realize)
    assert _reduces(asts) == 1  # the sum only
    np.testing.assert_allclose(w.numpy(), (ref + 1).sum(), rtol=1e-5)
    np.testing.assert_allclose(z.numpy(), ref + 1, rtol=1e-6)
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-6)


def test_a_16_bit_tensor_reused_gives_exactly_the_value_read_back():
    xn = np.linspace(-3, 3, 64, dtype=np.float32).reshape(8, 8)
    x = Tensor(xn).cast(dtypes.float16)
    y = (x * 1.37).exp()
    z = y.cast(dtypes.float32) * 1.0
    y.realize()
    assert np.array_equal(z.numpy(), y.numpy().astype(np.float32))


def test_the_views_of_a_tensor_move_with_it_and_stay_its_views():
    x = Tensor(np.arange(6, dtype=np.float32))
    y = x * 2
    z = y + 1
    zv = z[1:4]  # a lazy view of z: realized through z, it stays a view of z's buffer
    y.realize()
    assert _reads(z, _buffer(y)) and _reads(zv, _buffer(y))
    assert zv.numpy().tolist() == [3, 5, 7]
    zv[...] = 0  # a write through the view reaches z
    assert z.numpy().tolist() == [1, 0, 0, 0, 9, 11]
    assert y.numpy().tolist() == [0, 2, 4, 6, 8, 10]


def test_an_equal_tensor_built_on_its_own_is_no_alias_of_the_realized_one():
    x = Tensor(np.arange(4, dtype=np.float32))
    a = x * 2
    b = x * 2  # the same graph (one node), another tensor
    bv = (x * 2)[1:]  # a view of a dropped tensor of that graph
    a.realize()
    assert b.uop is not a.uop and not _reads(bv, _buffer(a))
    a[...] = 9
    a.assign(a + 1)
    assert a.numpy().tolist() == [10] * 4
    assert b.numpy().tolist() == [0, 2, 4, 6] and bv.numpy().tolist() == [2, 4, 6]
    b[0] = 5  # and b's own buffer is not a's
    assert a.numpy().tolist() == [10] * 4 and b.numpy().tolist() == [5, 2, 4, 6]


def test_a_later_write_into_the_realized_tensor_leaves_the_readers_values():
    x = Tensor(np.arange(4, dtype=np.float32))
    y = x * 3
    z = y + 1
    zz = z * 2
    y.realize()
    assert _reads(z, _buffer(y))
    y.assign(y * 0)  # z and zz read y's old value: realized before it is overwritten
    y[1] = 7
    assert y.numpy().tolist() == [0, 7, 0, 0]
    assert z.numpy().tolist() == [1, 4, 7, 10] and zz.numpy().tolist() == [2, 8, 14, 20]


def test_a_pending_assign_over_the_output_is_left_whole_and_runs_once():
    x = Tensor(np.arange(4, dtype=np.float32))
    y = x + 1
    t = Tensor(np.zeros(4, np.float32)).realize()
    t.assign(y * 2)  # a pending assign whose value computes y
    r = t + y  # reads the pending state (an AFTER, kept whole) and y
    y.realize()
    assert _reads(r, _buffer(y))
    assert r.numpy().tolist() == [3, 6, 9, 12]
    assert t.numpy().tolist() == [2, 4, 6, 8]
    t.assign(t + 1)
    assert t.numpy().tolist() == [3, 5, 7, 9]


def test_tensors_made_before_the_output_are_not_walked():
    x = Tensor(np.ones(4, np.float32))
    before = x * 5 + 3  # made before y: not walked (it holds y's graph, as an equal one)
    y = x * 5
    after = y + 2
    after_old = after.uop
    walked = []
    sub = callify._Substitution

    class Counting(sub):
        def __call__(self, u, keep_root=False):
            if self.left is not None:
                walked.append(u)
            return sub.__call__(self, u, keep_root)

    callify._Substitution = Counting
    try:
        y.realize()
    finally:
        callify._Substitution = sub
    assert any(u is after_old for u in walked) and all(u is not before.uop for u in walked)
    assert before.numpy().tolist() == [8] * 4 and after.numpy().tolist() == [7] * 4
    assert not _reads(before, _buffer(y))


def test_the_walk_stops_at_its_budget_and_what_it_left_still_computes_right():
    x = Tensor(np.full(4, 0.5, np.float32))
    y = x * 2  # a small graph: a small budget (2 * its nodes + 16)
    big = y
    for _ in range(3000):  # a lazy graph over y past the budget
        big = big * 1.0 + 0.0
    near = y + 1  # made after the big one, which takes half the budget and is left: next
    y.realize()
    assert not _reads(big, _buffer(y)) and _reads(near, _buffer(y))
    assert big.numpy().tolist() == [1.0] * 4 and near.numpy().tolist() == [2.0] * 4


def test_results_kept_in_a_chain_and_realized_in_order_are_each_computed_once():
    # ``L.append(L[-1] * a + b)``, then each realized: every one reads the buffer of the one
    # before (the newest were walked first and took the budget: the chain was computed again
    # and again, 69 schedules for 200 realizes, quadratic)
    from tolk.schedule import create_schedule_calls

    b = Tensor(np.ones(4, np.float32)).realize()
    chain, want = [b], [np.ones(4, np.float32)]
    for _ in range(200):
        chain.append(chain[-1] * 1.0001 + 0.1)
        want.append(want[-1] * np.float32(1.0001) + np.float32(0.1))
    views = [t[1:3] for t in chain[::7]]  # views move with their tensors
    before = create_schedule_calls[0]
    for t in chain:
        t.realize()
    assert create_schedule_calls[0] - before <= 16
    for t, w in zip(chain, want):
        assert t.numpy().tolist() == w.tolist()
    for v, w in zip(views, want[::7]):
        assert v.numpy().tolist() == w[1:3].tolist()


def test_a_reader_made_after_many_other_tensors_still_reads_the_buffer():
    # the oldest first alone ran out of budget on the unrelated tensors made in between
    x = Tensor(np.random.default_rng(0).random((8, 8), dtype=np.float32)).realize()
    y = (x @ x).exp()
    others = [Tensor(np.full(4, i, np.float32)) * 3 for i in range(200)]
    z = y + 1
    y.realize()
    assert _reads(z, _buffer(y)) and _reduces(_kernels_of(z.realize)) == 0
    np.testing.assert_allclose(z.numpy(), np.exp(x.numpy() @ x.numpy()) + 1, rtol=1e-5)
    assert others[7].numpy().tolist() == [21.0] * 4


def test_the_registry_of_lazy_tensors_finds_those_made_after_one_oldest_first():
    from tolk.tensor import MadeOrder

    class Thing:
        pass

    reg, things = MadeOrder(), [Thing() for _ in range(300)]
    for t in things:
        reg.add(t)
    reg.add(things[5])  # (no second entry)
    for i in range(0, 300, 3):  # dropped and dead members are passed over
        reg.discard(things[i])
    del things[1::3]
    for t in [Thing() for _ in range(400)]:  # members that die at once
        reg.add(t)
    del t
    extra = Thing()
    reg.add(extra)  # an add past twice the set compacts the order
    alive = [t for t in things if t in reg]
    assert len(alive) == 100 and len(reg._order) <= 2 * len(reg) + 65
    assert [r() for r in reg.after([alive[-1]], 5, lambda r: True)] == [extra]

    def keep(r):
        return True

    assert [r() for r in reg.after([alive[10]], 5, keep)] == alive[11:16]
    assert [r() for r in reg.after([alive[40], alive[20]], 3, keep)] == alive[21:24]
    assert reg.after([Thing()], 5, keep) is None
    assert [r() for r in reg.after([alive[0]], 3, lambda r: id(r()) != id(alive[1]))] == \
        [alive[2], alive[3], alive[4]]


def test_a_jitted_function_that_realizes_a_part_and_uses_it_later():
    leaked = []

    @jit
    def f(x):
        y = (x @ x).exp()
        z = y + 1
        y.realize()
        leaked.append(z)  # a lazy tensor kept past the call, over y's buffer
        return z * 2, y

    rng = np.random.default_rng(0)
    refs = []
    for _ in range(4):
        xn = rng.random((6, 6), dtype=np.float32) * 0.1
        w, y = f(Tensor(xn))
        ref = np.exp(xn @ xn)
        refs.append(ref)
        np.testing.assert_allclose(w.numpy(), (ref + 1) * 2, rtol=1e-5)
        np.testing.assert_allclose(y.numpy(), ref, rtol=1e-5)
    for z, ref in zip(leaked, refs):  # each kept its own call's value
        np.testing.assert_allclose(z.numpy(), ref + 1, rtol=1e-5)


def test_many_lazy_graphs_over_the_same_buffers_cost_a_realize_at_most_its_budget():
    x = Tensor(np.ones((4, 4), np.float32)).realize()
    outs = []
    for i in range(60):  # each reads x through its own chain: none holds another's graph
        h = x
        for _ in range(8):
            h = (h @ x) * 0.25 + i
        outs.append(h)
    subs = []
    sub = callify._Substitution

    class Kept(sub):
        def __init__(self, *a, **k):
            sub.__init__(self, *a, **k)
            if self.left is not None:
                subs.append((self, self.left))

    callify._Substitution = Kept
    try:
        for o in outs[:10]:
            o.realize()
    finally:
        callify._Substitution = sub
    assert len(subs) == 10
    for s, budget in subs:  # each realize's walks took no more than its budget (+1: the stop)
        assert budget < 200 and s.left >= -1
    for i, o in enumerate(outs):
        np.testing.assert_allclose(o.numpy(), np.full((4, 4), 1 + 8 * i), rtol=1e-6)


def test_another_threads_tensors_keep_their_own_graphs():
    w = Tensor(np.linspace(0, 1, 4, dtype=np.float32)).realize()
    y = (w * 2).exp()
    made = []
    t = threading.Thread(target=lambda: made.append((w * 2).exp() + 1))  # y's graph, one node
    t.start()
    t.join()
    mine = (w * 2).exp() + 1
    y.realize()  # another thread's tensor reading y's buffer would race with y's writes
    theirs = made[0]
    assert theirs.uop is not mine.uop and _reads(mine, _buffer(y))
    assert not _reads(theirs, _buffer(y))
    want = np.exp(np.linspace(0, 1, 4, dtype=np.float32) * 2) + 1
    y.assign(y * 0)
    np.testing.assert_allclose(theirs.numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(mine.numpy(), want, rtol=1e-6)


def test_a_capture_leaves_later_tensors_over_its_graphs():
    leaked = []

    @jit
    def f(x):
        y = (x * 3).exp()
        leaked.append(y + 1)  # made after y, before y's realize inside the capture
        y.realize()
        return y

    xs = [np.full(3, v, np.float32) for v in (0.1, 0.2, 0.3)]
    ys = [f(Tensor(xn)) for xn in xs]
    captured = leaked[1]  # the second call captures: y's buffer is written at its end only
    assert not any(n.op is Ops.BUFFER and n is _buffer(ys[1]) for n in captured.uop.toposort())
    for z, xn in zip(leaked, xs):
        np.testing.assert_allclose(z.numpy(), np.exp(xn * 3) + 1, rtol=1e-6)


def test_an_interrupt_inside_the_walk_still_settles_the_assigns_that_ran(monkeypatch):
    def interrupted(*args):
        raise KeyboardInterrupt

    x = Tensor(np.zeros(3, np.float32)).realize()
    x.assign(x + 1)
    y = x * 2
    z = y + 1
    w = x + 0
    monkeypatch.setattr(callify, "_reuse_outputs", interrupted)
    with pytest.raises(KeyboardInterrupt):
        y.realize()
    monkeypatch.undo()
    assert x.numpy().tolist() == [1] * 3 and w.numpy().tolist() == [1] * 3  # run once
    assert z.numpy().tolist() == [3] * 3 and y.numpy().tolist() == [2] * 3


def test_the_views_of_a_later_tensor_are_charged_to_the_budget():
    x = Tensor(np.ones(4, np.float32))
    y = x * 2
    d = y + 1
    views = [d.reshape(4, 1).expand(4, k + 1) for k in range(50)]
    with pytest.raises(callify._OverBudget):
        callify._kin(d, callify._Substitution({}, budget=40))
    assert callify._kin(d, callify._Substitution({}, budget=60))[0] is d
    dv = views[0]
    del d  # views of a dropped tensor: its kin, listed through their families
    with pytest.raises(callify._OverBudget):
        callify._kin(dv, callify._Substitution({}, budget=40))
    assert len(callify._kin(dv, callify._Substitution({}, budget=60))) == 50
    y.realize()  # over budget: the views compute y again, rightly
    assert [v.numpy().tolist() for v in views[:2]] == [[[3]] * 4, [[3, 3]] * 4]


def test_a_budget_without_whole_nodes_substitutes():
    x = Tensor(np.ones(2, np.float32))
    y, z = x * 2, x * 2 + 1
    sub = callify._Substitution({y.uop: x.uop}, budget=100)
    assert sub(z.uop) is (x + 1).uop and 0 < sub.left < 100


def test_a_tensor_over_a_dropped_tensor_whose_views_are_realized_reads_their_buffer():
    xn = np.random.default_rng(2).random((4, 4), dtype=np.float32)
    x = Tensor(xn)
    y = (x @ x.T).exp()
    v1, v2 = y[0], y[1]  # two views: realizing one realizes what both view, a tensor newer
    z = y.sum(axis=0) + 1  # than either (`_root`), but z, made after them, holds its graph
    a = v1 * 3
    del y
    assert _reduces(_kernels_of(v1.realize)) == 1
    assert _reduces(_kernels_of(z.realize)) == 1  # the sum only: y is not computed again
    ref = np.exp(xn @ xn.T)
    np.testing.assert_allclose(z.numpy(), ref.sum(0) + 1, rtol=1e-5)
    np.testing.assert_allclose(a.numpy(), ref[0] * 3, rtol=1e-6)
    np.testing.assert_allclose(v2.numpy(), ref[1], rtol=1e-6)
    v1[1:2] = Tensor(np.zeros(1, np.float32))  # still views of one buffer, as numpy's
    np.testing.assert_allclose(v2.numpy(), ref[1], rtol=1e-6)
    assert v1.numpy()[1] == 0


def test_a_tensor_made_between_two_outputs_reads_the_older_ones_buffer():
    xn = np.random.default_rng(3).random((3, 3), dtype=np.float32)
    x = Tensor(xn)
    a = (x @ x).exp()
    z = a.sum() + 2  # made after a, before b
    b = x + 1
    a.realize(b)
    assert _reduces(_kernels_of(z.realize)) == 1  # the sum only
    np.testing.assert_allclose(z.numpy(), np.exp(xn @ xn).sum() + 2, rtol=1e-5)
    np.testing.assert_allclose(b.numpy(), xn + 1)
