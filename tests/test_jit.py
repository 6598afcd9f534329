"""Variables and capture/replay."""

from __future__ import annotations

import numpy as np
import pytest

import tolk
import tolk.schedule as sched
from tolk import Context, Tensor, Variable
from tolk.engine.realize import capturing
from tolk.errors import JitError
from tolk.schedule import schedule_cache_clear, schedule_cache_info
from tolk.uop import Ops


def rnd(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_variable_bounds_are_checked():
    v = Variable("n", 1, 5)
    assert v.bind(1).value == 1 and v.bind(5).value == 5
    for bad in (0, 6):
        with pytest.raises(ValueError, match="outside"):
            v.bind(bad)
    with pytest.raises(ValueError, match="min"):
        Variable("m", 3, 2)
    with pytest.raises(TypeError):
        v.bind(2.5)


def test_bound_variable_is_a_scalar_in_tensor_math():
    v = Variable("k", 0, 10)
    x = Tensor(rnd(3, 4))
    for k in (0, 3, 10):
        np.testing.assert_allclose((x * v.bind(k) + v.bind(k)).numpy(), rnd(3, 4) * k + k,
                                   rtol=1e-6)
        np.testing.assert_allclose((v.bind(k) * x).numpy(), rnd(3, 4) * k, rtol=1e-6)


def test_realizes_differing_only_in_a_variable_share_one_schedule():
    schedule_cache_clear()
    v = Variable("k", 0, 10)
    x = Tensor(rnd(3))
    for k in range(4):
        (x * v.bind(k)).realize()
    info = schedule_cache_info()
    assert info.misses == 1 and info.hits == 3


def test_var_vals_contain_only_variables_kernels_read():
    a, b = Variable("a", 0, 9), Variable("b", 0, 9)
    x = Tensor(rnd(3))
    y = x * a.bind(2)
    _, var_vals = y.linear_with_vars()
    assert var_vals == {"a": 2}
    z = x + 0 * b.bind(3)
    assert z.linear_with_vars()[1] == {"b": 3}


def step_fn(x, w, n):
    return ((x @ w).relu() * n + 1).softmax(-1), (x.sum(0) * 2)


def reference(xa, wa, n):
    r = np.maximum(xa @ wa, 0) * n + 1
    e = np.exp(r - r.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True), xa.sum(0) * 2


def test_replay_equals_eager_for_changing_inputs_and_variables():
    f = tolk.jit(step_fn)
    wa = rnd(8, 4, seed=99)
    w = Tensor(wa)
    v = Variable("n", 0, 100)
    for i in range(20):
        xa = rnd(3, 8, seed=i)
        got = f(Tensor(xa), w, v.bind(i))
        want = reference(xa, wa, i)
        np.testing.assert_allclose(got[0].numpy(), want[0], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got[1].numpy(), want[1], rtol=1e-5)


def test_replay_runs_no_scheduling():
    f = tolk.jit(step_fn)
    w, v = Tensor(rnd(8, 4)), Variable("n", 0, 100)
    for i in range(2):
        f(Tensor(rnd(3, 8, seed=i)), w, v.bind(i))
    x = Tensor(rnd(3, 8, seed=5)).realize()
    before = sched.create_schedule_calls[0]
    f(x, w, v.bind(7))
    assert sched.create_schedule_calls[0] == before


def test_replay_outputs_are_fresh_tensors():
    f = tolk.jit(lambda x: x * 2)
    outs = [f(Tensor(rnd(4, seed=i))) for i in range(4)]
    for i, o in enumerate(outs):
        np.testing.assert_allclose(o.numpy(), rnd(4, seed=i) * 2, rtol=1e-6)


def test_shape_dtype_or_device_change_raises_jit_error():
    f = tolk.jit(lambda x: x + 1)
    for _ in range(2):
        f(Tensor(rnd(4)))
    with pytest.raises(JitError, match=r"\(5,\)"):
        f(Tensor(rnd(5)))
    with pytest.raises(JitError, match="int32"):
        f(Tensor(np.arange(4, dtype=np.int32)))
    with pytest.raises(JitError, match="CPU:1"):
        f(Tensor(rnd(4), device="CPU:1"))


def test_reading_data_during_capture_raises():
    def leaky(x):
        _ = x.sum().item()
        return x * 2

    f = tolk.jit(leaky)
    f(Tensor(rnd(4)))
    with pytest.raises(JitError, match="captured"):
        f(Tensor(rnd(4)))
    assert capturing == []


def test_a_jitted_function_called_inside_a_capture_runs_as_part_of_it():
    inner = tolk.jit(lambda x: x + 1)

    def outer(x):
        return inner(x) * 2

    f = tolk.jit(outer)
    inner(Tensor(rnd(4)))  # inner's next call would capture
    for i in range(4):  # run, capture (inner runs as plain code inside it), replay
        np.testing.assert_allclose(f(Tensor(rnd(4, seed=i))).numpy(), (rnd(4, seed=i) + 1) * 2,
                                   rtol=1e-6)
    assert capturing == [] and f.calls == 2
    for i in range(3):  # inner still captures and replays on its own
        np.testing.assert_allclose(inner(Tensor(rnd(4, seed=i))).numpy(), rnd(4, seed=i) + 1,
                                   rtol=1e-6)


def test_captured_plan_holds_inputs_and_outputs_and_beats_per_step_plans():
    def fn(x):
        h = (x * 2).contiguous()
        h = (h + 1).contiguous().realize()
        return (h.exp() * 3).contiguous() + 1

    f = tolk.jit(fn)
    xs = [Tensor(rnd(64, 64, seed=i)) for i in range(2)]
    f(xs[0])
    out = f(xs[1])
    lin = f.linear
    in_buf = xs[1].uop.src[0]
    args = [a for c in lin.src for a in c.src[1:]]
    assert in_buf in args and out.uop.op in (Ops.RESHAPE, Ops.BUFFER)
    assert all(a.op is not Ops.SLICE or a.src[0].slot < 0 for a in args)
    from tolk.schedule import linear_stats

    per_step = sum(linear_stats(t.schedule_linear()).arena_total for t in
                   [(Tensor(rnd(64, 64)) * 2).contiguous() + 1,
                    (Tensor(rnd(64, 64)).exp() * 3).contiguous() + 1])
    assert linear_stats(lin).arena_total <= per_step
    np.testing.assert_allclose(out.numpy(), np.exp(rnd(64, 64, seed=1) * 2 + 1) * 3 + 1, rtol=1e-5)


def test_jit_updates_an_input_in_place_every_replay():
    cache = Tensor(np.zeros(4, np.float32)).contiguous().realize()

    @tolk.jit
    def step(c, x):
        c.assign(c + x)
        return c

    for i in range(5):
        step(cache, Tensor(np.full(4, 1.0, np.float32)))
    np.testing.assert_array_equal(cache.numpy(), [5.0] * 4)


def test_a_lazy_input_is_realized_in_place_and_keeps_following_its_writes():
    g = tolk.jit(lambda a: a * 2)
    for _ in range(3):  # run, capture, replay
        y = Tensor(np.arange(4, dtype=np.float32)) + 1
        assert g(y).numpy().tolist() == [2, 4, 6, 8]
        y[1] = 100.0
        assert y.numpy().tolist() == [1, 100, 3, 4]


def test_a_view_of_part_of_a_buffer_is_refused_as_an_input():
    f = tolk.jit(lambda a: a + 1)
    base = Tensor(np.arange(4, dtype=np.float32)).realize()
    v = base[::2]
    with pytest.raises(JitError, match="contiguous"):
        f(v)
    base[0] = 100.0
    assert v.numpy().tolist() == [100, 2]  # still a view of base
    assert f(v.contiguous()).numpy().tolist() == [101, 3]


def test_assigns_no_output_reads_are_captured_and_replayed():
    w = Tensor(np.ones(3, np.float32)).contiguous().realize()
    state = Tensor(np.zeros(3, np.float32)).contiguous().realize()

    @tolk.jit
    def step(x, s):
        loss = (x * w).sum()
        w.assign(w - 0.5 * x)  # a weight update: nothing returned reads it
        s.assign(s + x)  # an input updated in place, not returned
        return loss

    want_w = np.ones(3, np.float32)
    for i in range(5):
        x = rnd(3, seed=i)
        loss = step(Tensor(x), state)
        np.testing.assert_allclose(loss.numpy(), (x * want_w).sum(), rtol=1e-5)
        want_w = want_w - 0.5 * x
        np.testing.assert_allclose(w.numpy(), want_w, rtol=1e-5)
    np.testing.assert_allclose(state.numpy(), sum(rnd(3, seed=i) for i in range(5)), rtol=1e-5)


def test_pending_assigns_made_before_a_call_run_first_and_are_not_replayed():
    w = Tensor(np.ones(3, np.float32)).contiguous().realize()
    f = tolk.jit(lambda x: x + w)
    ref = np.ones(3, np.float32)
    for i in range(5):  # run, capture, replays: each call sees w as assigned just before
        w.assign(w * 2)
        w[i % 3] = float(i + 10)
        ref = ref * 2
        ref[i % 3] = i + 10
        np.testing.assert_array_equal(f(Tensor(np.zeros(3, np.float32))).numpy(), ref)
        np.testing.assert_array_equal(w.numpy(), ref)


def test_inputs_captured_as_one_tensor_must_stay_one_and_written_inputs_may_not_alias():
    f = tolk.jit(lambda a, b: a * 2 + b)
    for _ in range(3):
        t = Tensor(rnd(4))
        f(t, t)
    with pytest.raises(JitError, match="inputs 0 and 1 the same"):
        f(Tensor(rnd(4)), Tensor(rnd(4, seed=1)))
    g = tolk.jit(lambda a, b: a * 2 + b)  # captured distinct: one tensor for both is fine
    for i in range(3):
        g(Tensor(rnd(4, seed=i)), Tensor(rnd(4, seed=i + 1)))
    t = Tensor(rnd(4, seed=7))
    np.testing.assert_allclose(g(t, t).numpy(), rnd(4, seed=7) * 3, rtol=1e-6)

    @tolk.jit
    def h(a, b):
        a.assign(a + 1)
        return b * 2

    for i in range(3):
        h(Tensor(rnd(4, seed=i)), Tensor(rnd(4, seed=i)))
    t = Tensor(rnd(4))
    with pytest.raises(JitError, match="which it writes"):
        h(t, t)


def test_a_variable_with_an_offset_passes_its_bound_value():
    n = Variable("n", 1, 8)
    f = tolk.jit(lambda a, v: a + v)
    g = tolk.jit(lambda a, v: a[:, :v] * 2)
    x = rnd(3, 9)
    for i in range(4):
        assert f(Tensor(np.zeros(2, np.float32)), n.bind(i + 1) + 1).numpy().tolist() == \
            [i + 2] * 2
        np.testing.assert_allclose(g(Tensor(x), n.bind(i + 1) + 1).numpy(), x[:, :i + 2] * 2,
                                   rtol=1e-6)


def test_a_variable_of_another_range_is_refused_on_replay():
    f = tolk.jit(lambda a, v: a[:v].sum())
    for i in range(3):
        f(Tensor(rnd(8)), Variable("n", 1, 8).bind(i + 2))
    with pytest.raises(JitError, match="captured with"):
        f(Tensor(rnd(8)), Variable("n", 1, 64).bind(40))


def test_sharded_inputs_and_outputs_are_replayed():
    from tolk.multi import MultiTensor

    devs = ("CPU:1", "CPU:2")
    f = tolk.jit(lambda a, b: a * 2 + b)
    for i in range(4):
        x, y = rnd(4, 3, seed=i), rnd(4, 3, seed=i + 9)
        out = f(Tensor(x).shard(devs, 0), Tensor(y).shard(devs, 0))
        assert isinstance(out, MultiTensor) and out.axis == 0
        np.testing.assert_allclose(out.numpy(), x * 2 + y, rtol=1e-6)


def test_capturing_off_runs_the_function_every_call():
    with Context(CAPTURING=0):
        f = tolk.jit(lambda a: a * 2)
        for i in range(4):
            np.testing.assert_allclose(f(Tensor(rnd(3, seed=i))).numpy(), rnd(3, seed=i) * 2)
        assert f.plan is None
    for i in range(3):  # on again: it captures and replays as usual
        np.testing.assert_allclose(f(Tensor(rnd(3, seed=i))).numpy(), rnd(3, seed=i) * 2)
    assert f.plan is not None


def test_a_capture_that_raises_runs_what_it_realized_and_captures_again_next_call():
    keep = {}

    @tolk.jit
    def g(a, fail=False):
        a.assign(a + 1)
        a.realize()
        y = a * 3
        y.realize()
        keep["y"] = y
        if fail:
            raise ValueError("bad input")
        return y

    g(Tensor(np.zeros(2, np.float32)))
    t = Tensor(np.zeros(2, np.float32))
    with pytest.raises(ValueError, match="bad input"):
        g(t, fail=True)
    assert t.numpy().tolist() == [1, 1] and keep["y"].numpy().tolist() == [3, 3]
    assert capturing == [] and g.calls == 1
    for i in range(3):
        t = Tensor(np.full(2, float(i), np.float32))
        assert g(t).numpy().tolist() == [3 * (i + 1)] * 2 and t.numpy().tolist() == [i + 1] * 2


def test_an_output_made_from_host_data_is_a_fresh_copy_each_call():
    f = tolk.jit(lambda a: (a + 1, Tensor(np.array([1.0, 2.0, 3.0], np.float32))))
    outs = [f(Tensor(np.zeros(3, np.float32))) for _ in range(4)]
    outs[3][1][0] = 100.0
    outs[2][1][1] = 50.0
    assert outs[3][1].numpy().tolist() == [100, 2, 3]
    assert outs[2][1].numpy().tolist() == [1, 50, 3]
    assert outs[1][1].numpy().tolist() == [1, 2, 3] == f(Tensor(rnd(3)))[1].numpy().tolist()


def test_arguments_and_outputs_nested_past_the_recursion_limit():
    @tolk.jit
    def g(a, nest):
        o = a + 1
        for _ in range(3000):
            o = [o]
        return o, {"b": a * 2, "a": (a, [a - 1])}

    deep = 1
    for _ in range(3000):
        deep = [deep]
    a = Tensor(np.ones((2, 2), np.float32)).realize()
    for _ in range(3):  # run, capture, replay
        o, d = g(a, deep)
        for _ in range(3000):
            o = o[0]
        assert o.numpy().tolist() == [[2, 2]] * 2 and list(d) == ["b", "a"]
        assert d["b"].numpy()[0, 0] == 2 and d["a"][1][0].numpy()[0, 0] == 0


def test_a_container_returned_twice_and_closure_tensors_returned_are_replayed():
    @tolk.jit
    def f(a):
        shared = [a * 2]
        return shared, shared, a + 1

    for i in range(4):  # the third call raised StopIteration
        x = np.arange(3, dtype=np.float32) + i
        s1, s2, b = f(Tensor(x))
        assert s1[0].numpy().tolist() == s2[0].numpy().tolist() == (x * 2).tolist()
        assert b.numpy().tolist() == (x + 1).tolist()
    w = Tensor(np.zeros(3, np.float32)).contiguous().realize()
    g = tolk.jit(lambda a: (a + 1, w, w[1:]))
    for i in range(4):  # a returned closure tensor is that tensor's buffer, not a copy
        _, o, ov = g(Tensor(np.zeros(3, np.float32)))
        o[0] = 10.0 + i
        w[2] = 100.0 + i
        assert w.numpy().tolist() == o.numpy().tolist() == [10 + i, 0, 100 + i]
        assert ov.numpy().tolist() == [0, 100 + i]
    with pytest.raises(JitError, match="holds itself"):
        loop = [Tensor(np.zeros(1, np.float32))]
        loop.append(loop)
        tolk.jit(lambda a: a)(loop)


def test_a_closure_tensor_assigned_and_returned_is_updated_in_place_every_replay():
    w = Tensor(np.zeros(4, np.float32)).contiguous().realize()

    @tolk.jit
    def f(x):
        w.assign(w + x)
        return w, w[1:3]

    for i in range(4):
        o, ov = f(Tensor(np.ones(4, np.float32)))
        assert w.numpy().tolist() == o.numpy().tolist() == [i + 1] * 4
        assert ov.numpy().tolist() == [i + 1] * 2


def test_a_variable_offset_is_part_of_the_capture_and_an_input_may_not_be_a_written_closure():
    n = Variable("n", 0, 8)
    f = tolk.jit(lambda a, v: a + v)
    for i in range(3):
        f(Tensor(np.zeros(2, np.float32)), n.bind(i) + 1)
    assert f(Tensor(np.zeros(2, np.float32)), n.bind(5) + 1).numpy().tolist() == [6, 6]
    with pytest.raises(JitError, match="offset"):
        f(Tensor(np.zeros(2, np.float32)), n.bind(4))
    v = Tensor(np.zeros(3, np.float32)).contiguous().realize()

    @tolk.jit
    def g(a):
        a.assign(a + 1)
        return v * 10

    for _ in range(3):
        g(Tensor(np.ones(3, np.float32)))
    with pytest.raises(JitError, match="closure"):
        g(v)
    assert v.numpy().tolist() == [0, 0, 0]


def test_another_threads_pending_assign_runs_before_a_capture_and_a_replay_reads_it():
    import threading

    w = Tensor(np.ones(3, np.float32)).contiguous().realize()
    f = tolk.jit(lambda x: x + w)
    for i in range(5):  # run, capture, replays: another thread doubles w before each call
        t = threading.Thread(target=lambda: w.assign(w * 2))
        t.start()
        t.join()
        assert f(Tensor(np.zeros(3, np.float32))).numpy().tolist() == [2.0 ** (i + 1)] * 3
        assert w.numpy().tolist() == [2.0 ** (i + 1)] * 3


def test_dict_arguments_keep_their_values_apart_whatever_their_keys():
    class Key:  # a repr with an address: no order from call to call
        pass

    k1, k2 = Key(), Key()
    f = tolk.jit(lambda d: d[k1] - d[k2])
    g = tolk.jit(lambda **kw: kw["a"] - kw["b"])
    for i in range(5):
        a, b = Tensor(np.full(2, 10.0 + i, np.float32)), Tensor(np.full(2, float(i), np.float32))
        assert f({k1: a, k2: b}).numpy().tolist() == [10, 10]
        assert (g(a=a, b=b) if i % 2 else g(b=b, a=a)).numpy().tolist() == [10, 10]


def test_a_closure_written_by_a_kernel_with_a_variable_is_known_as_written():
    n = Variable("n", 0, 7)
    cache = Tensor(np.zeros(8, np.float32)).contiguous().realize()

    @tolk.jit
    def step(v, src):
        cache[v] = src[v]
        return cache.sum()

    src = np.arange(8, dtype=np.float32) + 1
    for i in range(4):
        step(n.bind(i), Tensor(src))
    assert cache.numpy().tolist() == [1, 2, 3, 4, 0, 0, 0, 0]
    with pytest.raises(JitError, match="closure"):
        step(n.bind(5), cache)  # the input is the closure tensor the plan writes


def test_a_parameter_is_one_input_whether_passed_by_position_or_by_keyword():
    @tolk.jit
    def f(b, a, *rest, scale=1.0, **extra):
        return (b - a) * scale + sum(extra.values(), Tensor.zeros(3))

    x, y = Tensor(np.full(3, 10, np.float32)), Tensor(np.full(3, 1, np.float32))
    z = Tensor(np.full(3, 100, np.float32))
    for call in (lambda: f(x, y, q=z), lambda: f(b=x, a=y, q=z), lambda: f(x, a=y, q=z),
                 lambda: f(a=y, q=z, b=x)):
        assert call().numpy().tolist() == [109] * 3


def test_a_sharded_input_must_keep_its_axis_and_shape():
    devs = ("CPU:1", "CPU:2")

    @tolk.jit
    def f(m):
        return m.sum(0)

    a = np.arange(16, dtype=np.float32)
    for _ in range(3):
        assert f(Tensor(a.reshape(4, 4)).shard(devs, 0)).numpy().tolist() == \
            a.reshape(4, 4).sum(0).tolist()
    with pytest.raises(JitError, match="sharded"):
        f(Tensor(a.reshape(2, 8)).shard(devs, 1))  # the same shard shapes, another layout


def test_host_data_made_inside_and_written_starts_from_that_data_each_replay():
    @tolk.jit
    def f(x):
        t = Tensor(np.ones(4, np.float32))
        t[0] = x.sum()
        return t

    @tolk.jit
    def g(x):
        t = Tensor(np.ones(3, np.float32))
        t.assign(t + x)
        return t.sum()

    for i in range(4):
        x = Tensor(np.full(3, float(i), np.float32))
        assert f(x).numpy().tolist() == [3 * i, 1, 1, 1]
        assert g(x).item() == 3 + 3 * i


def test_a_lazy_global_read_by_the_function_keeps_its_value_after_its_source_is_assigned():
    c = Tensor(np.ones(3, np.float32)).realize()
    scale = c * 2

    @tolk.jit
    def f(x):
        return x + scale

    @tolk.jit
    def g(x):
        return [x + s for s in [scale]][0]  # read inside a comprehension

    x = Tensor(np.zeros(3, np.float32))
    f(x), f(x), g(x), g(x)
    c.assign(c + 10).realize()
    assert f(x).numpy().tolist() == (x + scale).numpy().tolist() == [2, 2, 2]
    assert g(x).numpy().tolist() == [2, 2, 2]


def test_named_tuples_and_dict_subclasses_come_back_as_their_type():
    import collections

    pair = collections.namedtuple("pair", "a b")

    class Plain(dict):  # a subclass that keeps dict's copy()
        pass

    @tolk.jit
    def f(x):
        return pair(x + 1, collections.OrderedDict(z=x * 2, y=x * 3)), Plain(a=x)

    x = Tensor(np.ones(2, np.float32))
    for _ in range(3):
        out, plain = f(x)
        assert type(plain) is Plain and plain["a"].numpy().tolist() == [1, 1]
        assert type(out) is pair and type(out.b) is collections.OrderedDict
        assert list(out.b) == ["z", "y"] and out.b["y"].numpy().tolist() == [3, 3]
        assert out.a.numpy().tolist() == [2, 2]


def test_in_place_operators_are_assigns_that_replays_make_again():
    class Lin:
        def __init__(self):
            self.w = Tensor(np.ones(3, np.float32))

        def step(self, x):
            loss = (self.w * x).sum()
            self.w -= 0.1 * x
            return loss

    x = Tensor(np.ones(3, np.float32))
    eager, jitted = Lin(), Lin()
    f = tolk.jit(jitted.step)
    want = [round(eager.step(x).item(), 4) for _ in range(6)]
    assert [round(f(x).item(), 4) for _ in range(6)] == want == [3.0, 2.7, 2.4, 2.1, 1.8, 1.5]
    np.testing.assert_allclose(jitted.w.numpy(), eager.w.numpy())
    y = Tensor(np.arange(4, dtype=np.float32)).realize()
    v = y[1:]
    v += 1  # through a view, as numpy
    v *= 2
    assert y.numpy().tolist() == [0, 4, 6, 8]
    i = Tensor(np.arange(3, dtype=np.int32)).realize()
    with pytest.raises(TypeError, match="dtype"):
        i += 1.5  # numpy: cannot cast float64 into int32


def test_drawing_random_numbers_inside_a_jitted_function_is_refused_after_the_call_runs():
    def dropout(x):
        return (x * (Tensor.rand(*x.shape) > 0.5)).sum()

    f = tolk.jit(dropout)
    x = Tensor(np.ones(100, np.float32))
    f(x)
    with pytest.raises(JitError, match="random numbers"):
        f(x)
    g = tolk.jit(lambda x, mask: (x * mask).sum())  # drawn outside, passed in: fine
    for _ in range(3):
        m = Tensor.rand(100) > 0.5
        assert g(x, m).item() == m.numpy().sum()


def test_replay_refuses_calls_shaped_otherwise_than_the_capture():
    @tolk.jit
    def f(a, b, c=None):
        return (a - b).sum()

    a, b = Tensor(np.ones(2, np.float32)), Tensor(np.full(2, 5, np.float32))
    for _ in range(3):
        assert f(a, b).numpy() == -8
    with pytest.raises(TypeError, match=r"f\(\): missing a required argument: 'b'"):
        f(a, c=b)
    with pytest.raises(TypeError, match="missing"):
        f([a, b])
    with pytest.raises(JitError, match="the constant 7, captured with the parameter.s default"):
        f(a, b, 7)
    with pytest.raises(JitError, match="a dict of keys"):
        f({"x": a}, b)
    assert f(a, b, None).numpy() == f(b=b, a=a).numpy() == -8  # the default, passed or not

    @tolk.jit
    def g(a, s):
        return a * s

    for _ in range(3):
        np.testing.assert_array_equal(g(a, 2.0).numpy(), [2, 2])
    with pytest.raises(JitError, match="the constant 3.0, captured with the constant 2.0"):
        g(a, 3.0)  # the capture baked 2.0 in: a replay would silently multiply by it
    np.testing.assert_array_equal(g(a, 2.0).numpy(), [2, 2])

    @tolk.jit
    def h(a, arr):
        return a.sum() + 1

    for _ in range(3):
        assert h(a, np.arange(3.0)).numpy() == 3  # equal arrays: the same constant
    with pytest.raises(JitError, match="constant"):
        h(a, np.arange(4.0))


def test_replay_constants_compare_by_value_and_bits_and_wrappers_bind_their_own_way():
    import functools

    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*a, verbose=False, **k):
            return fn(*a, **k)
        return wrapper

    @tolk.jit
    @deco
    def f(x):
        return (x * 2).contiguous()

    x = Tensor([1.0, 2.0])
    for _ in range(3):  # the inner signature refuses `verbose`: the wrapper's own takes it
        np.testing.assert_array_equal(f(x, verbose=True).numpy(), [2, 4])

    @tolk.jit
    def h(x, arr, s):
        return x + 1

    arr = np.ones(3)
    for _ in range(3):
        h(x, arr, -0.0)
    arr[:] = 5  # the captured array is a copy: this one is another constant now
    with pytest.raises(JitError, match="constant"):
        h(x, arr, -0.0)
    with pytest.raises(JitError, match="the constant 0.0, captured with the constant -0.0"):
        h(x, np.ones(3), 0.0)

    @tolk.jit
    def g(x, s):
        return x + 1

    for _ in range(4):  # a NaN constant is the same NaN each call
        g(x, np.float32("nan"))


def test_defaults_are_the_functions_own_tensor_defaults_and_mutable_ones_too():
    def f(x, b=Tensor.ones(3)):
        return x + b

    jf = tolk.jit(f)  # (comparing signatures compared the Tensor default: no truth value)
    for _ in range(3):
        np.testing.assert_array_equal(jf(Tensor([1.0, 2.0, 3.0])).numpy(), [2, 3, 4])

    def g(x, _stats={}):  # noqa: B006 - a default the function updates, on purpose
        _stats["calls"] = _stats.get("calls", 0) + 1
        return x * 2

    jg = tolk.jit(g)
    for _ in range(4):
        np.testing.assert_array_equal(jg(Tensor([1.0])).numpy(), [2])


def test_a_schedule_hook_that_raises_is_not_retried_around():
    from tolk import Variable

    x = Tensor(np.arange(8, dtype=np.float32)).realize()
    q = Variable("hookq", 1, 4)
    bad = x[:q.bind(2)].sum() + x[:q.bind(3)].sum()  # noqa: F841 - taken along by x's realize
    x[0] = 5.0
    seen = []

    def hook(linear, var_vals, seconds, stats):
        seen.append(len(linear.src))
        raise RuntimeError("hook")

    tolk.callify.schedule_hooks.append(hook)
    try:
        with pytest.raises(Exception):  # the taken-along tensor's error or the hook's: once
            x.numpy()
    finally:
        tolk.callify.schedule_hooks.remove(hook)
    assert len(seen) <= 1
    assert x.numpy()[0] == 5


_jit_test_lr = 0.5


def test_replay_refuses_a_changed_number_the_function_reads_as_a_global_or_closure():
    global _jit_test_lr
    w = Tensor(np.zeros(2, np.float32)).realize()
    g = Tensor(np.ones(2, np.float32)).realize()

    @tolk.jit
    def step(w, g):
        w -= _jit_test_lr * g
        return w

    step(w, g)
    step(w, g)  # captured with 0.5
    _jit_test_lr = 0.25  # a decayed learning rate: the capture baked 0.5 in
    try:
        with pytest.raises(JitError, match="reads '_jit_test_lr', now 0.25, captured as 0.5"):
            step(w, g)
    finally:
        _jit_test_lr = 0.5
    step(w, g)  # the value the capture holds again: replays
    np.testing.assert_array_equal(w.numpy(), [-1.5, -1.5])
    scale = 2.0

    @tolk.jit
    def f(x):
        return x * scale

    for _ in range(3):
        np.testing.assert_array_equal(f(Tensor([1.0])).numpy(), [2])
    scale = 3.0  # noqa: F841 - read through the closure
    with pytest.raises(JitError, match="reads 'scale'"):
        f(Tensor([1.0]))


_jit_calls = 0


def test_numbers_the_function_writes_itself_are_no_baked_constants():
    x = Tensor([1.0])

    @tolk.jit
    def counted(x):
        global _jit_calls
        _jit_calls += 1  # a counter the function keeps: it changes, and that is no error
        return x * 2

    def make():
        n = 0

        @tolk.jit
        def f(x):
            nonlocal n
            n += 1
            return x * 3
        return f

    f = make()
    for _ in range(4):
        np.testing.assert_array_equal(counted(x).numpy(), [2])
        np.testing.assert_array_equal(f(x).numpy(), [3])


def test_lazy_tensors_made_before_a_capture_or_a_replay_keep_their_values():
    @tolk.jit
    def f(a):
        a += 1

    x = Tensor(np.zeros(3, np.float32))
    f(x)
    before_capture = x * 1  # 1
    f(x)  # the capture: x = 2
    before_replay = x * 1  # 2
    f(x)
    f(x)  # replays: x = 4
    assert before_capture.numpy().tolist() == [1, 1, 1]
    assert before_replay.numpy().tolist() == [2, 2, 2] and x.numpy().tolist() == [4, 4, 4]
    w = Tensor(np.zeros(2, np.float32))

    @tolk.jit
    def g(a):
        w.assign(w + a)  # a closure tensor written by the plan
        return w * 2

    one = Tensor(np.ones(2, np.float32))
    g(one)
    g(one)
    r = w * 1
    out = g(one)
    assert r.numpy().tolist() == [2, 2] and out.numpy().tolist() == [6, 6]


def test_a_lazy_reader_that_fails_does_not_block_the_replays_that_overwrite_what_it_reads():
    @tolk.jit
    def f(a):
        a += 1

    x = Tensor(np.array([1, 2, 3], np.int32))
    f(x)
    f(x)
    bad = x ** Tensor(np.array([-1, 1, 1], np.int32))  # fails whenever it is computed
    for _ in range(3):
        f(x)
    assert x.numpy().tolist() == [6, 7, 8]
    with pytest.raises(ValueError, match="negative integer powers"):
        bad.realize()


def test_a_variable_named_like_a_kernel_value_is_no_value_name():
    v = Variable("v3", 1, 8)
    t = Tensor(np.arange(8, dtype=np.float32))
    np.testing.assert_allclose(t[:v.bind(3)].exp().sum().numpy(), np.exp(np.arange(3)).sum(),
                               rtol=1e-6)


def test_a_jitted_method_captures_once_per_instance():
    class Lin:
        def __init__(self, w):
            self.w = Tensor(w).realize()

        @tolk.jit
        def __call__(self, x):
            return (x @ self.w).relu()

        @tolk.jit
        def step(self, g):
            self.w.assign(self.w - 0.5 * g)

    rng = np.random.default_rng(0)
    w1, w2 = (rng.standard_normal((4, 3)).astype(np.float32) for _ in range(2))
    a, b = Lin(w1), Lin(w2)
    for _ in range(4):  # plain call, capture, replays: each instance its own weights
        x = rng.standard_normal((2, 4)).astype(np.float32)
        np.testing.assert_allclose(a(Tensor(x)).numpy(), np.maximum(x @ w1, 0), rtol=1e-5)
        np.testing.assert_allclose(b(Tensor(x)).numpy(), np.maximum(x @ w2, 0), rtol=1e-5)
        a.step(Tensor(np.ones((4, 3), np.float32)))
        w1 = w1 - 0.5
    np.testing.assert_allclose(a.w.numpy(), w1, rtol=1e-5)
    assert a.__call__ is a.__call__ and a.__call__ is not b.__call__ and a.__call__.calls == 2
    import copy

    c = copy.copy(a)  # its dict holds a's capture: it gets its own
    c.w = Tensor(w2).realize()
    x = np.ones((2, 4), np.float32)
    np.testing.assert_allclose(c(Tensor(x)).numpy(), np.maximum(x @ w2, 0), rtol=1e-5)
    np.testing.assert_allclose(a(Tensor(x)).numpy(), np.maximum(x @ w1, 0), rtol=1e-5)

    class Slotted:
        __slots__ = ("w",)

        @tolk.jit
        def f(self, x):
            return x

    with pytest.raises(JitError, match="__dict__"):
        Slotted().f(Tensor([1.0]))
    import gc
    import pickle
    import weakref

    n1, n2 = _Net(2.0), _Net(3.0)
    for _ in range(3):  # equal instances still capture apart
        assert n1.f(Tensor([1.0])).item() == 2.0 and n2.f(Tensor([1.0])).item() == 3.0
        assert _Net.twice(Tensor([1.0])).item() == 2.0 and n1.twice(Tensor([2.0])).item() == 4.0
        assert n2.thrice(Tensor([1.0])).item() == 3.0
    clone = pickle.loads(pickle.dumps(n1))  # (the capture is left behind: captured anew)
    for _ in range(3):
        assert clone.f(Tensor([1.0])).item() == 2.0 and copy.deepcopy(n1).k == 2.0
    assert _Net(5.0).f(Tensor([1.0])).item() == 5.0  # a temporary instance lives through it
    gone = weakref.ref(n1)
    del n1
    gc.collect()
    assert gone() is None  # an instance and its capture die together
    box = _Net(1.0)
    seen = []

    def lookup(k):
        seen.append(box.f)

    from test_threads import run_threads

    assert run_threads(lookup) == [] and all(f is seen[0] for f in seen)
    varargs = _Net(2.0).scaled(Tensor([1.0]), 3.0)
    assert varargs.item() == 6.0


class _Net:  # (module level: instances pickle)
    def __init__(self, k):
        self.k = k

    def __eq__(self, other):
        return True

    __hash__ = None

    @tolk.jit
    def f(self, x):
        return x * self.k

    @staticmethod
    @tolk.jit
    def twice(x):
        return x * 2

    @tolk.jit
    @staticmethod
    def thrice(x):
        return x * 3

    @tolk.jit
    def scaled(*args):  # (self among *args)
        return args[1] * args[0].k * args[2]


_SRC = Tensor(np.ones(2, np.float32)).realize()
_LAZY = _SRC * 2  # a lazy global a jitted method reads
_GV = Variable("jitgv", 1, 8).bind(3)


class _Reader:
    @tolk.jit
    def f(self, x):
        return x + _LAZY

    @tolk.jit
    def head(self, x):
        return x[:_GV].sum()


def test_a_jitted_method_reads_lazy_globals_and_bound_variables_as_a_function_does():
    r = _Reader()
    for i in range(4):
        if i == 2:  # the global's value was fixed when it was made
            _SRC.assign(Tensor(np.full(2, 10, np.float32))).realize()
        assert r.f(Tensor(np.zeros(2, np.float32))).tolist() == [2.0, 2.0]
        assert r.head(Tensor(np.arange(8, dtype=np.float32))).item() == 3.0


def test_a_tensor_realized_inside_and_kept_outside_shows_the_latest_replay():
    """Documented: such a tensor lives in memory every replay writes again (as a captured
    graph's intermediates do elsewhere), so one kept on an object follows the replays."""
    class Model:
        last = None

    m = Model()

    @tolk.jit
    def f(a):
        m.last = (a * 2).realize()
        return m.last + 1

    for i in range(4):
        assert f(Tensor(np.full(2, float(i), np.float32))).numpy().tolist() == [2.0 * i + 1] * 2
        assert m.last.numpy().tolist() == [2.0 * i] * 2


def test_a_closure_tensor_bound_to_another_is_refused_on_replay():
    w = Tensor([1.0])

    @tolk.jit
    def step(a):
        return a * w

    step(Tensor([1.0]))
    step(Tensor([1.0]))
    w.assign(Tensor([3.0]))  # assigned: the same tensor, its new value read
    assert step(Tensor([2.0])).item() == 6.0
    w = Tensor([10.0])  # noqa: F841 (rebound: the closure cell now holds another tensor)
    with pytest.raises(JitError, match="'w', now another tensor"):
        step(Tensor([2.0]))


def test_a_closure_tensor_in_a_list_or_dict_rebound_is_refused_and_named():
    params = [Tensor([1.0])]
    state = {"b": Tensor([0.5])}

    @tolk.jit
    def f(x):
        return x * params[0] + state["b"]

    for _ in range(3):
        assert f(Tensor([2.0])).item() == 2.5
    params[0] = Tensor([5.0])
    with pytest.raises(JitError, match=r"'params\[0\]'"):
        f(Tensor([2.0]))
    params[0].assign(Tensor([5.0]))  # (still another tensor than the captured one)
    f.reset()
    f(Tensor([2.0]))
    f(Tensor([2.0]))
    state["b"] = Tensor([1.5])
    with pytest.raises(JitError, match=r"\"state\['b'\]\""):
        f(Tensor([2.0]))


def test_threads_replaying_one_jitted_function_get_their_own_results():
    from test_threads import run_threads

    rng = np.random.default_rng(3)
    w = Tensor(rng.standard_normal((16, 16)).astype(np.float32))

    @tolk.jit
    def f(x):
        return (x @ w).softmax(-1) * 2

    data = [rng.standard_normal((8, 16)).astype(np.float32) for _ in range(4)]
    f(Tensor(data[0]))
    f(Tensor(data[0]))  # the capture
    want = [f(Tensor(d)).numpy() for d in data]
    bad = []

    def worker(k: int) -> None:
        for _ in range(25):
            got = f(Tensor(data[k])).numpy()
            if not np.allclose(got, want[k], rtol=1e-6):
                bad.append(k)

    assert run_threads(worker) == [] and not bad


def test_the_jit_keeps_no_output_of_the_capture_alive():
    import gc
    import weakref

    @tolk.jit
    def h(a):
        return {"y": a * 2, "z": [a + 1]}

    refs = []
    for _ in range(4):
        out = h(Tensor(np.ones(3, np.float32)))
        assert out["y"].numpy().tolist() == [2.0] * 3 and out["z"][0].numpy().tolist() == [2.0] * 3
        refs.append(weakref.ref(out["y"]))
        del out
        gc.collect()
    assert not any(r() is not None for r in refs)


def test_a_functional_update_of_a_closure_tensor_is_refused_on_replay():
    st = {"w": Tensor([1.0])}

    @tolk.jit
    def f(x):
        st["w"] = st["w"] + x  # rebinds a tensor whose buffer it reads: replays cannot
        return st["w"]

    f(Tensor([1.0]))
    f(Tensor([1.0]))
    with pytest.raises(JitError, match="st\\['w'\\]"):
        f(Tensor([1.0]))


def test_a_global_only_looked_at_may_be_rebound():
    box = [Tensor(np.zeros((3, 2), np.float32))]

    @tolk.jit
    def f(x):
        return x.reshape(box[0].shape[0], -1) * 2  # its shape only, no buffer read

    for i in range(3):
        assert f(Tensor(np.ones(6, np.float32))).shape == (3, 2)
        box[0] = Tensor(np.zeros((3, 2), np.float32))


def test_threads_replaying_a_function_that_writes_host_data_it_made_agree():
    from test_threads import run_threads

    @tolk.jit
    def f(x):
        t = Tensor(np.arange(64, dtype=np.float64))
        t[0] = x.sum()
        return (t * 1.0).sum()

    data = [np.full(4, float(k + 1)) for k in range(4)]
    f(Tensor(data[0]))
    f(Tensor(data[0]))
    want = [float(np.arange(64).sum() + d.sum()) for d in data]
    bad = []

    def worker(k: int) -> None:
        for _ in range(30):
            if f(Tensor(data[k])).item() != want[k]:
                bad.append(k)

    assert run_threads(worker) == [] and not bad


def test_closure_tensors_of_wrapped_functions_are_checked_under_their_own_names():
    import functools

    w = Tensor(np.ones(3, np.float32)) * 2  # lazy: realized before the capture

    def inner(x):
        return x * w

    @tolk.jit
    @functools.wraps(inner)
    def outer(x):
        return inner(x)

    for _ in range(3):
        assert outer(Tensor(np.ones(3, np.float32))).numpy().tolist() == [2.0] * 3
    w = Tensor(np.full(3, 7.0, np.float32))  # noqa: F841 (inner's closure cell rebound)
    with pytest.raises(JitError, match="'w of "):
        outer(Tensor(np.ones(3, np.float32)))


def test_a_new_equal_view_of_a_closure_tensor_is_the_same_tensor_to_a_replay():
    w = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    cache = {}

    @tolk.jit
    def f(x):
        cache["wT"] = w.T  # a new tensor each call, the same view of the same buffer
        return (x @ cache["wT"]).realize()

    for _ in range(4):
        got = f(Tensor(np.ones((1, 3), np.float32)))
        assert got.numpy().tolist() == (np.ones((1, 3)) @ np.arange(6).reshape(2, 3).T).tolist()


def test_a_tensor_only_looked_at_that_changes_shape_is_refused():
    tmpl = Tensor(np.zeros((2, 3), np.float32))

    @tolk.jit
    def f(x):
        return x.reshape(tmpl.shape) + 1

    for _ in range(3):
        assert f(Tensor(np.zeros(6, np.float32))).shape == (2, 3)
    tmpl = Tensor(np.zeros((2, 3), np.float32))  # another tensor, the same shape: fine
    assert f(Tensor(np.zeros(6, np.float32))).shape == (2, 3)
    tmpl = Tensor(np.zeros((3, 2), np.float32))  # noqa: F841 (another shape: refused)
    with pytest.raises(JitError, match="'tmpl'"):
        f(Tensor(np.zeros(6, np.float32)))


def test_a_tensor_in_a_global_dict_the_plan_does_not_read_may_change_shape():
    model = {"w": Tensor(np.ones((3, 2), np.float32)), "kv": Tensor(np.zeros((1, 2), np.float32))}

    @tolk.jit
    def head(x):
        return (x @ model["w"]).sum()

    for i in range(4):
        assert head(Tensor(np.full((2, 3), 2.0, np.float32))).item() == 24.0
        model["kv"] = Tensor(np.zeros((i + 2, 2), np.float32))  # grows: not read by the plan


def test_a_closure_tensor_captured_as_the_input_too_is_refused_with_another_input():
    w = Tensor(np.full(3, 10.0, np.float32))

    @tolk.jit
    def f(x):
        return x + w

    f(w)
    f(w)  # the capture: input 0 and w are one buffer, which the plan cannot tell apart
    with pytest.raises(JitError, match="also reads as 'w'"):
        f(Tensor(np.ones(3, np.float32)))


def test_a_closure_tensor_that_was_the_input_at_capture_is_still_checked_by_name():
    w = Tensor(np.full(3, 10.0, np.float32))
    w0 = w

    @tolk.jit
    def f(x):
        return x + w

    f(w0)
    f(w0)
    assert f(w0).numpy().tolist() == [20.0] * 3
    w = Tensor(np.ones(3, np.float32))  # noqa: F841 (rebound: the replay must not read w0)
    with pytest.raises(JitError, match="'w'"):
        f(w0)
    cfg = {"w": Tensor(np.ones(3, np.float32))}

    @tolk.jit
    def g(x):
        return x * cfg["w"]

    g(Tensor(np.ones(3, np.float32)))
    g(Tensor(np.ones(3, np.float32)))
    cfg = [Tensor(np.ones(3, np.float32))]  # noqa: F841 (another kind of container)
    with pytest.raises(JitError, match="cfg\\['w'\\]"):
        g(Tensor(np.ones(3, np.float32)))


def test_a_recursive_jitted_function_captures_its_top_level_call():
    # its nested calls during the first, plain call counted as calls of their own: the one
    # with n=1 was captured and every later top-level call with n=2 refused
    from tolk import jit

    @jit
    def f(a, n):
        return a if n == 0 else f(a * 2 + 1, n - 1)

    for x in (0.0, 1.0, 5.0, -2.0):  # plain, capture, replays
        assert f(Tensor([x]), 2).numpy().tolist() == [(x * 2 + 1) * 2 + 1]
    assert f.calls == 2
    with pytest.raises(JitError, match="captured with"):
        f(Tensor([0.0]), 3)


_w_global = None  # (a global the next test's jitted step writes in place)
_n_global = None


def test_review_fixes_outputs_in_objects_returned_variables_and_written_globals():
    import dataclasses

    @dataclasses.dataclass
    class Out:
        y: Tensor

    boxed = tolk.jit(lambda x: Out(x * 2))
    boxed(Tensor(np.zeros(2, np.float32)))
    with pytest.raises(JitError, match="inside an object of type Out"):
        boxed(Tensor(np.ones(2, np.float32)))  # (its replays returned the capture's tensor)
    plain = tolk.jit(lambda x: (x * 2, "label", Out))  # (objects holding no tensor: constants)
    for i in range(3):
        y, label, kind = plain(Tensor(np.full(2, float(i), np.float32)))
        assert y.numpy().tolist() == [2.0 * i] * 2 and label == "label" and kind is Out
    v = Variable("n", 1, 10)
    sliced = tolk.jit(lambda x, n: {"s": x[:n].sum(), "n": n, "next": n + 1})
    x = Tensor(np.arange(10, dtype=np.float32))
    for k in (2, 3, 4, 5):  # (the returned variable is the call's, not the capture's)
        r = sliced(x, v.bind(k))
        assert r["s"].item() == sum(range(k)) and r["n"].value == k and r["next"].value == k + 1
    global _w_global, _n_global
    _w_global = Tensor(np.ones(3, np.float32))

    @tolk.jit
    def step(g):
        global _w_global
        _w_global -= 0.5 * g  # (an assign: the same tensor stays bound)
        return _w_global.sum()

    g = Tensor(np.ones(3, np.float32))
    assert [step(g).item() for _ in range(3)] == [1.5, 0.0, -1.5]
    _w_global = Tensor(np.zeros(3, np.float32))
    with pytest.raises(JitError, match="'_w_global', now another tensor"):
        step(g)  # (it updated the old tensor's buffer)

    @tolk.jit
    def rebinding(g):
        global _w_global
        _w_global = _w_global - g  # (another tensor each call: a replay cannot follow it)
        return _w_global.sum()

    _w_global = Tensor(np.full(3, 10.0, np.float32))
    assert [rebinding(g).item() for _ in range(2)] == [27.0, 24.0]
    with pytest.raises(JitError, match="now another tensor"):
        rebinding(g)
    _n_global = v.bind(2)
    head = tolk.jit(lambda x: x[:_n_global].sum())
    assert [head(x).item() for _ in range(3)] == [1.0] * 3
    _n_global = v.bind(4)
    with pytest.raises(JitError, match="reads '_n_global', now"):
        head(x)  # (a bound variable read as a global is baked in, as a number is)


_prev_input = None


def test_no_false_jit_errors_for_objects_from_before_or_globals_only_stored():
    from tolk.optim import SGD

    class Model:
        def __init__(self):
            self.w = Tensor(np.array([[1.0], [2.0]], np.float32)).realize()
            self.opt = SGD([self.w], lr=0.1)

        @tolk.jit
        def step(self, x):
            self.opt.zero_grad()
            loss = (x.reshape(1, 2) @ self.w).sum()
            loss.backward()
            self.opt.step()
            return loss, self  # (an object from before, holding its own weights)

    m = Model()
    x = Tensor(np.ones(2, np.float32))
    np.testing.assert_allclose([m.step(x)[0].item() for _ in range(4)], [3.0, 2.8, 2.6, 2.4],
                               rtol=1e-6)

    @tolk.jit
    def remember(x):
        global _prev_input
        _prev_input = x  # (stored, never read: no closure tensor of the plan)
        return x * 2

    a, b = Tensor(np.array([1.0, 2.0], np.float32)), Tensor(np.array([3.0, 4.0], np.float32))
    remember(a)
    remember(a)
    assert remember(b).numpy().tolist() == [6.0, 8.0]
