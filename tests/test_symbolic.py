"""Symbolic shapes: bound Variables as slice bounds."""

from __future__ import annotations

import numpy as np
import pytest

import tolk
from tolk import Tensor, Variable
from tolk.dtype import dtypes
from tolk.errors import JitError, ShapeError
from tolk.schedule import schedule_cache_clear, schedule_cache_info

A = np.arange(2 * 12, dtype=np.float32).reshape(2, 12) / 7


def test_symbolic_slice_matches_numpy_for_every_value_in_range():
    v = Variable("n", 0, 12)
    x = Tensor(A)
    for n in range(0, 13):
        y = x[:, : v.bind(n)]
        np.testing.assert_allclose((y * 2 + 1).numpy(), A[:, :n] * 2 + 1, rtol=1e-6)
        np.testing.assert_allclose(y.sum(1).numpy(), A[:, :n].sum(1), rtol=1e-5)


def test_symbolic_slice_on_the_first_axis_and_with_shrink():
    v = Variable("n", 1, 2)
    x = Tensor(A)
    for n in (1, 2):
        np.testing.assert_allclose(x.shrink(((0, v.bind(n)), None)).numpy(), A[:n])
        np.testing.assert_allclose(x[v.bind(n) - 1].numpy(), A[n - 1])


def test_reductions_and_softmax_over_a_symbolic_axis():
    v = Variable("n", 1, 12)
    x = Tensor(A)
    for n in (1, 5, 12):
        y = x[:, 2 - 2 : v.bind(n)]
        np.testing.assert_allclose(y.mean(1).numpy(), A[:, :n].mean(1), rtol=1e-6)
        np.testing.assert_allclose(y.max(1).numpy(), A[:, :n].max(1))
        e = np.exp(A[:, :n] - A[:, :n].max(1, keepdims=True))
        np.testing.assert_allclose(y.softmax(-1).numpy(), e / e.sum(1, keepdims=True), rtol=1e-5)


def test_matmul_contracting_a_symbolic_axis():
    v = Variable("n", 1, 12)
    w = np.linspace(-1, 1, 12 * 3, dtype=np.float32).reshape(12, 3)
    x, wt = Tensor(A), Tensor(w)
    for n in (1, 7, 12):
        got = (x[:, : v.bind(n)] @ wt[: v.bind(n)]).numpy()
        np.testing.assert_allclose(got, A[:, :n] @ w[:n], rtol=1e-5, atol=1e-6)


def test_values_of_one_variable_share_one_cached_schedule():
    schedule_cache_clear()
    v = Variable("n", 1, 12)
    x = Tensor(A)
    for n in range(1, 13):
        (x[:, : v.bind(n)] * 3).realize()
    info = schedule_cache_info()
    assert info.misses == 1 and info.hits == 11


def test_buffers_are_sized_at_the_variables_max():
    v = Variable("n", 1, 12)
    y = (Tensor(A)[:, : v.bind(3)] * 2)
    lin = y.schedule_linear()
    out = lin.src[-1].src[1]
    assert out.size == 2 * 12


def test_assign_at_a_variable_position():
    v = Variable("p", 0, 3)
    x = Tensor(np.zeros((4, 2), np.float32)).contiguous().realize()
    for p in range(4):
        x[v.bind(p)] = Tensor(np.full(2, p + 1, np.float32))
    np.testing.assert_array_equal(x.numpy(),
                                  np.repeat(np.arange(1, 5, dtype=np.float32), 2).reshape(4, 2))


def test_a_slice_past_the_end_at_the_variables_max_is_rejected():
    v = Variable("n", 0, 20)
    with pytest.raises(ShapeError, match="out of bounds"):
        Tensor(A)[:, : v.bind(3)]


def test_a_variable_start_with_an_end_of_another_kind_is_rejected_at_build_time():
    # the size (end - start) would shrink as the variable grows: no shape holds it
    v, w = Variable("n", 1, 4), Variable("m", 1, 4)
    for build in (lambda: Tensor(A)[v.bind(2):], lambda: Tensor(A).shrink(((v.bind(2), 6), None)),
                  lambda: Tensor(A).shrink(((v.bind(2), w.bind(3)), None))):
        with pytest.raises(ShapeError, match="variable start n"):
            build()
    y = Tensor(A)[:, v.bind(2) : v.bind(2) + 3]  # start and end of one variable: size 3
    np.testing.assert_allclose(y.numpy(), A[:, 2:5])


def test_reshape_must_keep_symbolic_dimensions():
    v = Variable("n", 1, 12)
    y = Tensor(A)[:, : v.bind(4)]
    assert y.reshape(2, 1, y.shape[1]).shape[1] == 1
    with pytest.raises(ShapeError, match="symbolic"):
        y.reshape(8)


def test_jitted_decode_step_with_a_growing_symbolic_slice():
    L, D = 8, 3
    pos = Variable("pos", 0, L - 1)
    cache = Tensor(np.zeros((L, D), np.float32)).contiguous().realize()
    ref = np.zeros((L, D), np.float32)

    @tolk.jit
    def step(c, x, p):
        c[p] = x
        return c[: p + 1].sum(0)

    for p in range(L):
        xa = np.linspace(0, 1, D, dtype=np.float32) + p
        out = step(cache, Tensor(xa), pos.bind(p))
        ref[p] = xa
        np.testing.assert_allclose(out.numpy(), ref[: p + 1].sum(0), rtol=1e-6)


def test_a_cached_program_keeps_no_buffer_or_value_of_the_realize_that_made_it():
    """The schedule a realize caches is reused on other buffers and variable values: its kernels
    name neither the buffers nor the values of the realize that made it."""
    rng = np.random.default_rng(3)
    v = Variable("n", 1, 6)

    def program(a, w, img, k, tok, n):
        x, y = Tensor(a), Tensor(img)
        x[1:3] = x[1:3] * 2  # an assign through a view
        h = (x @ Tensor(w)).relu()[:, : v.bind(n)].sum(1)
        c = y.conv2d(Tensor(k), padding=1).max_pool2d()
        e = Tensor(tok).embedding(Tensor(w))
        return h, c.flatten().cat(e.flatten()).to("CPU:1"), x[:, : v.bind(n)] * 3

    def inputs():
        return (rng.standard_normal((4, 6)).astype(np.float32),
                rng.standard_normal((6, 8)).astype(np.float32),
                rng.standard_normal((1, 2, 6, 6)).astype(np.float32),
                rng.standard_normal((3, 2, 3, 3)).astype(np.float32),
                np.array([0, 5, 2], np.int32))

    def reference(a, w, img, k, tok, n):
        a = a.copy()
        a[1:3] *= 2
        h = np.maximum(a @ w, 0)[:, :n].sum(1)
        pad = np.pad(img, ((0, 0), (0, 0), (1, 1), (1, 1)))
        conv = np.einsum("nchwij,ocij->nohw", np.lib.stride_tricks.sliding_window_view(
            pad, (3, 3), axis=(2, 3)), k)
        pool = conv.reshape(1, 3, 3, 2, 3, 2).max((3, 5))
        return h, np.concatenate([pool.ravel(), w[tok].ravel()]), a[:, :n] * 3

    schedule_cache_clear()
    first = inputs()
    outs = program(*first, n=3)
    Tensor.realize(*outs)
    for o, want in zip(outs, reference(*first, n=3)):
        np.testing.assert_allclose(o.numpy(), want, rtol=1e-4, atol=1e-5)
    second = inputs()
    outs = program(*second, n=6)
    linear = outs[0].schedule_linear(*outs[1:])
    for call in linear.src:
        assert all(n.op is not tolk.uop.Ops.BUFFER and n.op is not tolk.uop.Ops.BIND
                   for n in call.src[0].toposort()), call.src[0].arg
    hits = schedule_cache_info().hits
    Tensor.realize(*outs)
    assert schedule_cache_info().hits > hits
    for o, want in zip(outs, reference(*second, n=6)):
        np.testing.assert_allclose(o.numpy(), want, rtol=1e-4, atol=1e-5)


def test_a_constant_output_next_to_a_bind_of_its_value_keeps_its_buffer_on_a_cache_hit():
    # the walk meets the constant 3 inside BIND(n, 3) when n is 3, and only as an output when
    # n is 4: the two realizes share one program, and each output keeps its own buffer
    from tolk.uop.ops import UOp

    v = Variable("n", 1, 12)
    for n in (3, 4, 3):
        y = Tensor(A)[:, : v.bind(n)] * 2
        c = Tensor(UOp.const(dtypes.int32, 3))
        Tensor.realize(y, c)
        np.testing.assert_array_equal(y.numpy(), A[:, :n] * 2)
        assert c.item() == 3


def test_ops_that_need_a_static_size_name_the_symbolic_axis():
    n = Variable("n", 1, 5)
    x = Tensor(np.arange(20, dtype=np.float32).reshape(4, 5))[:, :n.bind(3)]
    for bad in (lambda: x.argmax(1), lambda: x.flip(1), lambda: x[:, 0], lambda: x[:, -1],
                lambda: x.cat(x, dim=1), lambda: len(x.T), lambda: x.repeat(2, 1)):
        with pytest.raises(ShapeError, match="symbolic"):
            bad()
    assert x.argmax(0).shape == x[0].shape and len(x) == 4
    np.testing.assert_array_equal(x.flip(0).numpy(), np.arange(20).reshape(4, 5)[::-1, :3])


def test_a_bound_variable_in_tensor_math_is_a_weakly_typed_int():
    n = Variable("n", 0, 10)
    x = Tensor(np.ones(2, np.float32))
    for got in (x * n.bind(3), n.bind(3) * x, x / n.bind(4), n.bind(3) - x, (n.bind(3) + 1) + x):
        assert got.dtype is dtypes.float32
    assert (n.bind(3) - x).numpy().tolist() == [2, 2]
    assert (x / n.bind(4)).numpy().tolist() == [0.25, 0.25]
    small = Tensor(np.ones(2, np.int8))
    assert (small + n.bind(5)).dtype is dtypes.int8
    assert (small + n.bind(5)).numpy().tolist() == [6, 6]
    with pytest.raises(ValueError, match="beyond int8"):
        small + Variable("m", 0, 1000).bind(5)
    assert (Tensor([True, False]) + n.bind(2)).dtype is dtypes.int32


def test_a_symbolic_size_refuses_products_and_ops_that_need_a_static_size_name_it():
    n = Variable("n", 1, 6)
    v = Tensor(np.ones((4, 6), np.float32))[:, :n.bind(3)]
    s = v.shape[1]
    for product in (lambda: 4 * s, lambda: s * 4):  # a tuple's repetition before
        with pytest.raises(TypeError, match="Sym"):
            product()
    with pytest.raises(ShapeError, match="flatten needs a static size on axis 1"):
        v.flatten()
    with pytest.raises(TypeError, match="symbolic size"):
        Tensor.arange(s)
    assert v.flatten(1, 1).shape == (4, s) and float(v.sum().numpy()) == 12.0


def test_a_slice_end_past_the_symbolic_size_for_some_value_is_refused_when_built():
    x = Tensor(np.arange(40, dtype=np.float32).reshape(4, 10))
    n, m = Variable("n", 0, 7), Variable("m", 1, 7)
    with pytest.raises(ShapeError, match="some value"):
        x[:, :n.bind(1)][:, :3]  # numpy would give (4, 1): past n's value
    with pytest.raises(ShapeError, match="some value"):
        x[:, :n.bind(3)][:, :m.bind(6)]
    assert x[:, :n.bind(5) + 2][:, :n.bind(5)].shape[1].name == "n"  # n <= n + 2: fine


def test_one_dimensional_symbolic_targets_and_like_tensors_take_their_variables_values():
    a = np.arange(32, dtype=np.float32).reshape(4, 8)
    n = Variable("n", 0, 8)
    y = Tensor(a)[:, :n.bind(3)]
    assert y.full_like(2.0).sum(1).numpy().tolist() == [6] * 4
    assert y.ones_like().sum(1).numpy().tolist() == [3] * 4
    assert y.zeros_like().numpy().shape == (4, 3)
    x = Tensor(np.zeros(8, np.float32)).realize()
    x[:n.bind(3)] = 1.0
    assert x.numpy().tolist() == [1, 1, 1, 0, 0, 0, 0, 0]
    t = x[:n.bind(4)]
    assert t.reshape(t.shape[0]).numpy().tolist() == [1, 1, 1, 0]
    with pytest.raises(ValueError, match="no bound value"):
        Tensor.full((t.shape[0],), 1.0).numpy()  # a bare symbolic size has no value


def test_variables_fit_int32_and_max_over_an_axis_bound_to_zero_gives_the_identity():
    with pytest.raises(ValueError, match="int32"):
        Variable("big", 0, 2**40)
    with pytest.raises(ValueError, match="past int32"):
        Variable("n", 0, 2**31 - 1).bind(5) + 1
    x = Tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    n = Variable("n", 0, 4)
    assert x[:, :n.bind(0)].softmax(1).numpy().shape == (3, 0)  # as on a static empty axis
    assert x[:, :n.bind(0)].max(1).numpy().tolist() == [-np.inf] * 3
    assert x[:, :n.bind(2)].max(1).numpy().tolist() == [1, 5, 9]


def test_jit_refuses_one_variable_bound_to_two_values_and_bakes_in_a_closure_variable():
    a = np.arange(32, dtype=np.float32).reshape(4, 8)
    x = Tensor(a)
    n = Variable("n", 1, 8)

    @tolk.jit
    def f(t, p, q):
        return t[:, :p].sum(1).realize(), t[:, :q].sum(1).realize()

    f(x, n.bind(2), n.bind(3))
    with pytest.raises(tolk.errors.JitError, match="bound to 4 and to 5"):
        f(x, n.bind(4), n.bind(5))
    bound = Variable("k", 1, 8).bind(5)

    @tolk.jit
    def g(t):
        return t[:, :bound].sum(1)

    for _ in range(3):
        assert g(x).numpy().tolist() == a[:, :5].sum(1).tolist()


def test_a_realize_whose_parts_bind_a_variable_to_two_values_runs_them_apart():
    n = Variable("n", 0, 6)
    a = np.arange(18, dtype=np.float32).reshape(6, 3)
    x = Tensor(a.copy()).realize()
    x[:n.bind(2)] = 1.0  # pending, with n = 2
    assert x[:n.bind(3)].sum(0).numpy().tolist() == [8, 9, 10]
    y = Tensor(a.copy()).realize()
    s = y[:n.bind(2)].sum()  # a lazy reader of the values before the assign
    y[:n.bind(4)] = 0.0
    want = a.copy()
    want[:4] = 0
    assert y.numpy().tolist() == want.tolist() and s.item() == 15
    with pytest.raises(ValueError, match="bound to both"):  # within one expression: refused
        (x[:n.bind(2)].sum() + x[:n.bind(3)].sum()).numpy()


def test_a_part_run_apart_that_reads_a_pending_assign_of_another_value_runs_apart_too():
    n = Variable("n", 1, 3)
    x, y = Tensor(np.arange(4.0)).realize(), Tensor(np.zeros(4)).realize()
    old = x * 1  # a lazy reader of x's value now
    y.assign(y + n.bind(2))  # pending, n = 2
    z = old + y + n.bind(3)  # n = 3 itself, reads y's pending state (n = 2)
    x.assign(z)
    x.realize()  # z, taken along, is a part run apart: y's assign runs before it
    assert x.numpy().tolist() == [5, 6, 7, 8] and y.numpy().tolist() == [2] * 4
    assert z.numpy().tolist() == [5, 6, 7, 8]


def test_a_tensor_over_a_lazy_tensor_of_another_value_reads_that_tensor_computed_first():
    m = Variable("m", 1, 3)
    b = Tensor(np.arange(4.0)).realize()
    l1 = b + m.bind(1)
    l2 = l1 + m.bind(3)  # m = 1 through l1, m = 3 itself: two statements, one value each
    assert l2.numpy().tolist() == [4, 5, 6, 7] and l1.numpy().tolist() == [1, 2, 3, 4]
    c = Tensor(np.arange(4.0)).realize()
    with pytest.raises(ValueError, match="bound to both"):  # within one expression: refused
        ((c + m.bind(1)) + m.bind(3)).numpy()


def test_negative_slice_bounds_count_from_the_end_of_a_symbolic_axis():
    a = np.arange(40, dtype=np.float32).reshape(4, 10)
    n = Variable("n", 2, 7)
    y = Tensor(a)[:, :n.bind(4) + 3]  # (4, n + 3), 7 columns now
    assert y[:, :-1].numpy().tolist() == a[:, :7][:, :-1].tolist()
    assert y[:, -2:].numpy().tolist() == a[:, :7][:, -2:].tolist()
    m = Variable("m", 7, 10)
    assert Tensor(a)[:, -3:m.bind(9)].numpy().tolist() == a[:, -3:9].tolist()


def test_pending_assigns_and_readers_with_different_values_of_a_variable_run_one_by_one():
    n = Variable("n", 0, 6)
    a = np.arange(18, dtype=np.float32).reshape(6, 3)
    x, y = Tensor(a.copy()).realize(), Tensor(a.copy()).realize()
    x[:n.bind(2)] = 1.0
    y[:n.bind(3)] = 2.0  # another buffer, another value
    wx, wy = a.copy(), a.copy()
    wx[:2], wy[:3] = 1, 2
    assert (x + y).numpy().tolist() == (wx + wy).tolist()
    z = Tensor(a.copy()).realize()
    s1, s2 = z[:n.bind(2)].sum(), z[:n.bind(3)].sum()  # two readers, two values
    z.assign(z * 0)
    assert z.numpy().sum() == 0 and (s1.item(), s2.item()) == (15, 36)
    sym = Tensor(a)[:n.bind(3)]
    assert (sym + Tensor.ones(sym.shape)).numpy().tolist() == (a[:3] + 1).tolist()
    p = Variable("p", 2, 6)
    assert Tensor(a)[:p.bind(4)][np.int64(-2):].numpy().tolist() == a[2:4].tolist()


def test_jit_refuses_a_variable_bound_inside_from_an_argument_after_running_the_call():
    a = np.arange(32, dtype=np.float32).reshape(4, 8)
    x = Tensor(a)
    m = Variable("m", 1, 8)

    @tolk.jit
    def g(t, k):
        return t[:, :m.bind(k)].sum(1)

    assert g(x, 2).numpy().tolist() == a[:, :2].sum(1).tolist()
    with pytest.raises(tolk.errors.JitError, match="bound inside the jitted function"):
        g(x, 3)


def test_a_kernel_reading_a_variable_bound_nowhere_is_a_clear_error():
    n = Variable("n", 0, 8)
    t = Tensor(np.zeros(8, np.float32))[:n.bind(4)]
    with pytest.raises(ValueError, match="bound nowhere"):
        Tensor.full((4, t.shape[0]), 2.0).sum(1).numpy()  # a KeyError inside a kernel before


def test_full_zeros_and_ones_take_bound_variables_as_sizes():
    v = Variable("fz", 0, 8)
    schedule_cache_clear()
    for val in (3, 5, 0, 8):
        x = Tensor(np.arange(16, dtype=np.float32).reshape(2, 8))
        out = x[:, :v.bind(val)] + Tensor.full((2, v.bind(val)), 1.5) + Tensor.ones(2, v.bind(val))
        np.testing.assert_array_equal(out.numpy(), np.arange(16).reshape(2, 8)[:, :val] + 2.5)
        assert Tensor.zeros(v.bind(val), dtype="int32").numpy().tolist() == [0] * val
    assert schedule_cache_info().misses == 2  # one schedule per program, for every value
    np.testing.assert_array_equal(Tensor.ones(v.bind(2), v.bind(2)).numpy(), np.ones((2, 2)))
    with pytest.raises(ValueError, match="bound to two values"):
        Tensor.ones(v.bind(2), v.bind(3))
    with pytest.raises(ShapeError, match="may be negative"):
        Tensor.zeros(Variable("neg", -2, 4).bind(2))


def test_stores_through_symbolic_views_numpy_cannot_express_take_the_index_path():
    n = Variable("pn", 1, 8)
    base = np.arange(32, dtype=np.float32).reshape(2, 8, 2)
    vals = -np.arange(1, 33, dtype=np.float32).reshape(8, 4)
    static = Tensor(base.copy()).realize()
    static.permute(1, 0, 2)[:3].reshape(3, 4).assign(Tensor(vals[:3]))
    for k in (3, 1, 8):
        b = Tensor(base.copy()).realize()
        v = b.permute(1, 0, 2)[:n.bind(k)]  # merges permuted axes: no numpy view
        v.reshape(v.shape[0], 4).assign(Tensor(vals)[:n.bind(k)])
        want = base.copy().transpose(1, 0, 2)
        want[:k] = vals[:k].reshape(k, 2, 2)
        np.testing.assert_array_equal(b.numpy(), want.transpose(1, 0, 2))
    np.testing.assert_array_equal(static.numpy()[0, :3], [[-1, -2], [-5, -6], [-9, -10]])


def test_bound_variables_compare_equal_by_value():
    pos = Variable("eqpos", 0, 8).bind(3)
    assert bool(pos == 3) and not bool(pos != 3) and bool(pos == pos.var.bind(3))
    assert (Tensor([3, 4]) == pos).numpy().tolist() == [True, False]
    assert (pos != Tensor([3, 4])).numpy().tolist() == [False, True]
    assert {pos: 1}[pos] == 1
    with pytest.raises(TypeError):
        np.ones(2) + pos


def test_assign_refuses_a_target_and_value_binding_one_variable_twice_and_eq_with_others():
    from tolk.errors import ScheduleError

    q = Variable("tvq", 1, 4)
    z = Tensor(np.zeros(4, np.float32)).realize()
    x = Tensor(np.ones(4, np.float32)).realize()
    with pytest.raises(ScheduleError, match="both 3 and 2"):
        z[:q.bind(3)].assign(x[:q.bind(2)] + 1)
    z += 1
    assert z.numpy().tolist() == [1] * 4
    v = q.bind(3)
    assert (v == None) is False and (v == "a") is False and v not in [None, "a"]  # noqa: E711


def test_reshape_infers_minus_one_as_the_symbolic_dimension_left_out():
    n = Variable("rsn", 1, 10).bind(4)
    x = Tensor(np.arange(10, dtype=np.float32))[:n]
    col = x.reshape(-1, 1)
    assert str(col.shape) == "(rsn, 1)" and col.numpy().ravel().tolist() == [0, 1, 2, 3]
    y = Tensor(np.ones((10, 3), np.float32))[:n]
    assert y.reshape(-1, 1, 3).numpy().shape == (4, 1, 3)
    with pytest.raises(ShapeError, match="symbolic dimensions must stay"):
        y.reshape(-1)  # n * 3: no symbolic size of a product


def test_norms_over_a_symbolic_axis_bound_to_zero_are_zero_as_numpys():
    v = Variable("n", 0, 12)
    a = A.copy()
    a[1, 1] = np.nan
    for n in (0, 1, 3, 12):
        y = Tensor(a)[:, : v.bind(n)]
        for o in (None, 1, 3, np.inf, 0):
            np.testing.assert_allclose(y.norm(o, axis=1).numpy(),
                                       np.linalg.norm(a[:, :n], o, axis=1), rtol=1e-6)
        for o in (None, 1, np.inf):
            np.testing.assert_allclose(y.norm(o, axis=(0, 1)).numpy(),
                                       np.linalg.norm(a[:, :n], o, axis=(0, 1)), rtol=1e-6)


def test_library_functions_under_jit_keep_symbolic_sizes_symbolic():
    n = Variable("n", 0, 8)
    a = np.full((2, 8), 1000.0, np.float32)

    @tolk.jit
    def lse(x, k):
        return x[:, :k].logsumexp(1)

    for v in (1, 0, 3, 0, 8):  # (captured at 0: the empty path was baked in)
        with np.errstate(divide="ignore"):  # (log of an empty sum: -inf)
            want = np.log(np.exp(a[:, :v].astype(np.float64) - 1000).sum(1)) + 1000
        np.testing.assert_allclose(lse(Tensor(a), n.bind(v)).numpy(), want, rtol=1e-6)
    x = np.random.default_rng(0).standard_normal((8, 3)).astype(np.float32)
    b = Variable("b", 2, 8)
    rm, rv = Tensor(np.zeros(3, np.float32)).realize(), Tensor(np.ones(3, np.float32)).realize()

    @tolk.jit
    def bn(t, k):
        return t[:k].batch_norm(rm, rv, training=True, momentum=1.0)

    for v in (2, 3, 5, 8):  # (the unbiased factor n / (n - 1) of each batch)
        got = bn(Tensor(x), b.bind(v)).numpy()
        np.testing.assert_allclose(rv.numpy(), x[:v].var(0, ddof=1), rtol=1e-5)
        np.testing.assert_allclose(got, (x[:v] - x[:v].mean(0)) / np.sqrt(x[:v].var(0) + 1e-5),
                                   rtol=1e-4, atol=1e-5)


def test_a_concrete_size_read_inside_a_capture_is_a_jit_error():
    m = Variable("m", 1, 8)
    b = np.arange(32, dtype=np.float32).reshape(4, 8)

    @tolk.jit
    def mean(x, k):
        y = x[:, :k]
        return y.sum() / y.numel()

    assert mean(Tensor(b), m.bind(2)).item() == b[:, :2].mean()  # (the first call runs plain)
    with pytest.raises(JitError, match="bake the variables' values"):
        mean(Tensor(b), m.bind(3))
    y = Tensor(b)[:, : m.bind(5)]
    assert y.numel() == 20 and y.concrete_shape == (4, 5)  # (outside a capture: the values)
