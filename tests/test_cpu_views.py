"""The CPU backend's composed views: a chain of movement ops that repeats an axis and cuts it
again (how `Tensor._unfold` writes sliding windows) runs as one strided numpy view of the value
under it, so a convolution is one contraction and nothing is copied to make its windows.

Oracle tests: each view is compared with the same chain of numpy ops."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from tensor_strategies import FEW, cases
from tolk.dtype import dtypes
from tolk.runtime import cpu
from tolk.tensor import Tensor
from tolk.uop.ops import GroupOp, Ops, UOp
from tolk.uop.shape import shape_of


def chain_of(t: Tensor):
    """(base node, movement chain from the base up to t) of a lazy tensor."""
    chain, u = [], t.uop
    while u.op in GroupOp.Movement:
        chain.append(u)
        u = u.src[0]
    return u, chain[::-1]


def apply_numpy(x: np.ndarray, chain) -> np.ndarray:
    """The chain's view of `x` computed with plain numpy ops (copying where numpy must)."""
    for m in chain:
        if m.op is Ops.RESHAPE:
            x = x.reshape(m.arg)
        elif m.op is Ops.PERMUTE:
            x = x.transpose(m.arg)
        elif m.op is Ops.EXPAND:
            x = np.broadcast_to(x, m.arg)
        elif m.op is Ops.SHRINK:
            x = x[tuple(slice(b, e) for b, e in m.arg)]
        elif m.op is Ops.FLIP:
            x = np.flip(x, m.arg)
        else:
            raise AssertionError(f"no numpy twin for {m.op}")
    return x


def composed(x: np.ndarray, t: Tensor) -> np.ndarray | None:
    """The chain under `t` over `x` as one strided view, or None if it is not one."""
    base, chain = chain_of(t)
    if not chain:
        return x
    view = cpu.strided_view_of(shape_of(base), chain)
    if view is None:
        return None
    start, coeffs = view
    base_shape = shape_of(base)
    return cpu.strided_view(x.reshape(base_shape), base_shape, start, shape_of(chain[-1]), coeffs)


@cases(FEW * 5)
@given(st.lists(st.tuples(st.integers(1, 12), st.integers(1, 5), st.integers(1, 4),
                          st.integers(1, 3)),
                min_size=1, max_size=2), st.integers(0, 2))
def test_unfolded_axes_are_one_strided_view_of_every_window(axes, lead):
    sizes, ks, strides, dilations = zip(*axes)
    assume(all(d * (k - 1) + 1 <= n for n, k, d in zip(sizes, ks, dilations)))
    shape = (2, 3)[:lead] + sizes
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    t = Tensor(x)._unfold(ks, strides, dilations)
    got = composed(x, t)
    assert got is not None
    want = x
    for j, (k, stride, dilation) in enumerate(zip(ks, strides, dilations)):
        axis = lead + 2 * j  # the axes before it are (k, out) pairs by now
        w = np.lib.stride_tricks.sliding_window_view(want, dilation * (k - 1) + 1, axis=axis)
        w = w[(slice(None),) * axis + (slice(None, None, stride),)][..., ::dilation]
        want = np.moveaxis(w, -1, axis)  # (..., k, out, ...)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(apply_numpy(x, chain_of(t)[1]), want)


@st.composite
def movement_chains(draw):
    """A base shape and up to 8 random movement steps on a Tensor of it, with expand-then-
    reshape steps (an axis repeated and merged into its neighbour) among them."""
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    t = Tensor(x)
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["repeat", "merge", "split", "permute", "shrink", "flip"]))
        nd = t.ndim
        ax = draw(st.integers(0, nd - 1))
        if kind == "repeat":
            reps = draw(st.integers(2, 3))
            t = t.reshape(t.shape[:ax] + (1,) + t.shape[ax:])
            t = t.expand(t.shape[:ax] + (reps,) + t.shape[ax + 1:])
            t = t.reshape(t.shape[:ax] + (reps * t.shape[ax + 1],) + t.shape[ax + 2:])
        elif kind == "merge" and ax + 1 < nd:
            t = t.reshape(t.shape[:ax] + (t.shape[ax] * t.shape[ax + 1],) + t.shape[ax + 2:])
        elif kind == "split":
            n = t.shape[ax]
            f = draw(st.sampled_from([d for d in range(1, n + 1) if n % d == 0]))
            t = t.reshape(t.shape[:ax] + (f, n // f) + t.shape[ax + 1:])
        elif kind == "permute":
            t = t.permute(draw(st.permutations(range(nd))))
        elif kind == "shrink":
            n = t.shape[ax]
            b = draw(st.integers(0, n - 1))
            e = draw(st.integers(b + 1, n))
            t = t.shrink(tuple((b, e) if i == ax else None for i in range(nd)))
        elif kind == "flip":
            t = t.flip(ax)
    return x, t


@cases(FEW * 10)
@given(movement_chains())
def test_a_composed_chain_is_the_view_numpy_ops_give(case):
    x, t = case
    _, chain = chain_of(t)
    want = apply_numpy(x, chain)
    got = composed(x, t)
    if got is not None:
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(t.numpy(), want)  # and the kernel, composed or not


def test_window_view_of_a_value_that_is_not_contiguous():
    # the sum of a transposed input comes out of numpy in Fortran order: the view is made
    # from its actual strides
    x = np.random.default_rng(0).standard_normal((9, 7)).astype(np.float32)
    t = (Tensor(x).T + 1)._unfold((3,), (2,), (2,)).sum(1)
    want = np.lib.stride_tricks.sliding_window_view(x.T + 1, 5, axis=1)[:, ::2, ::2].sum(-1)
    np.testing.assert_allclose(t.numpy(), want, rtol=1e-6)


@pytest.fixture
def count_contractions(monkeypatch):
    """Kernels compiled in the test count their contractions (a fresh compile cache)."""
    calls = []

    def counting(spec, a, b):
        calls.append((a.shape, b.shape))
        return cpu.contract(spec, a, b)

    monkeypatch.setattr(cpu, "_compiled", {})
    monkeypatch.setattr(cpu, "_functions", {})
    monkeypatch.setattr(cpu, "_compiled_chars", [0])
    monkeypatch.setitem(cpu._GLOBALS, "contract", counting)
    return calls


@pytest.mark.parametrize("k, stride, padding, groups", [(7, 2, 3, 1), (3, 1, 1, 1), (1, 2, 0, 1),
                                                         (3, 2, 1, 2)])
def test_conv2d_runs_as_one_contraction(count_contractions, k, stride, padding, groups):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 4, 13, 11)).astype(np.float32)
    w = rng.standard_normal((6, 4 // groups, k, k)).astype(np.float32)
    got = Tensor(x).conv2d(Tensor(w), stride=stride, padding=padding, groups=groups).numpy()
    assert len(count_contractions) == 1
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(2, 3))
    win = win[:, :, ::stride, ::stride]
    win = win.reshape(2, groups, 4 // groups, *win.shape[2:])
    want = np.einsum("ngchwij,gocij->ngohw", win, w.reshape(groups, 6 // groups, 4 // groups, k, k))
    np.testing.assert_allclose(got, want.reshape(got.shape), rtol=1e-4, atol=1e-4)


def test_a_long_window_chain_composes_without_recursion():
    limit = sys.getrecursionlimit()
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = Tensor(x)._unfold((2,), (1,), (1,))  # (3, 2, 3)
    for _ in range(2000):
        t = t.reshape(6, 3).reshape(3, 2, 3)
    sys.setrecursionlimit(1000)
    try:
        got = composed(x, t)
        assert got is not None
        np.testing.assert_array_equal(got, np.stack([x[:, :3], x[:, 1:]], axis=1))
    finally:
        sys.setrecursionlimit(limit)


def test_a_window_chain_too_large_to_check_runs_op_by_op(monkeypatch):
    monkeypatch.setattr(cpu, "MAX_INDEX_ARRAY", 8)
    monkeypatch.setattr(cpu, "_compiled", {})
    monkeypatch.setattr(cpu, "_functions", {})
    monkeypatch.setattr(cpu, "_compiled_chars", [0])
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 11, 10)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    assert composed(x, Tensor(x)._unfold((3, 3), (2, 2), (1, 1))) is None
    got = Tensor(x).conv2d(Tensor(w), stride=2).numpy()
    win = np.lib.stride_tricks.sliding_window_view(x, (3, 3), axis=(2, 3))[:, :, ::2, ::2]
    np.testing.assert_allclose(got, np.einsum("nchwij,ocij->nohw", win, w), rtol=1e-4, atol=1e-4)


def test_a_contraction_that_meets_inf_or_nan_gives_the_product_then_the_sum(count_contractions):
    a = np.array([[np.inf, 1e38], [1, 1]], np.float32)
    b = np.array([[1, 1], [-10, 1]], np.float32)
    x, y = Tensor(a).reshape(2, 2, 1), Tensor(b).reshape(1, 2, 2)
    with np.errstate(all="ignore"):
        want = (a[:, :, None] * b[None]).sum(1)  # inf - inf: nan (matmul's fused adds: inf)
    np.testing.assert_array_equal((x * y).sum(1).numpy(), want)
    np.testing.assert_array_equal((x * y).realize().sum(1).numpy(), want)
    assert len(count_contractions) == 1  # the first ran as a contraction, then as written


def test_16_bit_products_are_rounded_and_matmul_runs_in_float32(count_contractions):
    c, d = np.array([300, -300], np.float16), np.array([300, 300], np.float16)
    with np.errstate(all="ignore"):
        want = (c * d).sum()  # each product overflows float16: inf - inf
    assert np.isnan(want) and np.isnan((Tensor(c) * Tensor(d)).sum().item())
    assert not count_contractions
    rng = np.random.default_rng(2)
    a, b = rng.random((4, 8)).astype(np.float16), rng.random((8, 3)).astype(np.float16)
    got = Tensor(a) @ Tensor(b)
    assert got.dtype.np == np.float16 and len(count_contractions) == 0
    np.testing.assert_array_equal(got.numpy(), (a @ b))  # numpy's: float32 inside, rounded once
    assert len(count_contractions) == 1


def test_a_product_broadcast_in_both_operands_along_a_kept_axis_is_summed():
    x = Tensor(np.array([[1.0, 2.0, 3.0]], np.float32))
    w = Tensor(np.ones(3, np.float32))
    assert (x.expand(4, 3) * w).sum(1).numpy().tolist() == [6, 6, 6, 6]
    assert (x.expand(4, 3) * w.reshape(1, 3)).sum(0).numpy().tolist() == [4, 8, 12]


def test_sums_of_pads_keep_the_order_and_rounding_of_the_adds_as_written():
    def bf(v):
        return Tensor(np.array(v, np.float32), dtype="bfloat16")

    x, y, z, w = bf([1.0, 1.0]), bf([2.0**-8, 0.0]), bf([2.0**-8]), bf([0.0])
    assert (x + y + z.cat(w)).numpy().tolist() == [1, 1]  # each add rounded to bfloat16
    p = Tensor(np.array([1e8], np.float32)) * 1
    q = Tensor(np.array([-1e8], np.float32)) * 1
    t = Tensor(np.array([1.0, 0.0], np.float32))
    assert (p.pad(((0, 1),)) + t + q.pad(((0, 1),))).numpy().tolist() == [0, 0]  # (1e8 + 1) - 1e8
    a, b = np.arange(4, dtype=np.float32), np.arange(3, dtype=np.float32)
    want = np.concatenate([a * 2, b + 1, a])
    assert Tensor.cat(Tensor(a) * 2, Tensor(b) + 1, Tensor(a)).numpy().tolist() == want.tolist()


def test_a_sum_of_pads_grouped_otherwise_than_a_chain_adds_as_written():
    a, e = np.ones(2, np.float32), np.full(4, 2**-24, np.float32)
    x, y, z = Tensor(a), Tensor(e), Tensor(e)
    want = np.concatenate([a, a]) + (e + e)
    assert ((x * 1).cat(x * 1) + (y + z)).numpy().tolist() == want.tolist()

    def p(v):
        return (Tensor(np.array([v], np.float32)) * 1).pad(((1, 0),))

    assert (p(1.0) + (p(2**-24) + p(2**-24))).numpy().tolist() == [0, np.float32(1 + 2**-23)]


def test_float_sums_and_float_to_int_casts_do_not_depend_on_the_layout_a_kernel_sees():
    a = np.random.default_rng(0).random((100000, 2)).astype(np.float32)
    fused = Tensor(a).T.sum(1).numpy()
    assert fused.tolist() == Tensor(a).T.contiguous().sum(1).numpy().tolist()
    assert fused.tolist() == np.ascontiguousarray(a.T).sum(1).tolist()
    assert Tensor(a).sum(0).numpy().tolist() == a.sum(0).tolist()  # contiguous: as numpy
    assert Tensor(a.T.copy()).T.sum(0).numpy().tolist() == a.sum(0).tolist()  # a strided view
    v = np.array([-1.0, 1e10, -1e10, np.inf], np.float32)
    viewed = Tensor(v).expand(2, 4).cast("uint32").numpy()[0]
    assert viewed.tolist() == Tensor(v).expand(2, 4).contiguous().cast("uint32").numpy()[0].tolist()


def test_float64_and_wide_ints_round_to_bfloat16_once():
    v = 1 + 2**-8 + 2**-30  # above the midpoint of 1.0 and 1.0078125: float32 makes it the tie
    assert Tensor(np.array([v])).cast("bfloat16").cast("float64").item() == 1.0078125
    assert Tensor(np.array([v]), dtype="bfloat16").item() == 1.0078125
    big = 2**24 + 2**16 + 1
    assert Tensor(np.array([big], np.int32)).cast("bfloat16").cast("float64").item() == 16908288
    tiny = 136.3 * 2.0**-137  # a bfloat16 subnormal: steps of 2**-133
    assert Tensor(np.array([tiny]), dtype="bfloat16").item() == 9 * 2.0**-133
    huge = 2**62 + 2**54 + 1  # past 2**53: float64 would round first
    assert Tensor(np.array([huge], np.int64)).cast("bfloat16").cast("float64").item() == \
        2**62 + 2**55
    got = Tensor(np.array([np.nan, np.inf, -np.inf, 3.4e38, -0.0, 1e-300])).cast("bfloat16")
    assert np.array_equal(got.numpy(), np.array([np.nan, np.inf, -np.inf, np.inf, -0.0, 0.0],
                                                np.float32), equal_nan=True)


def test_a_contraction_with_a_nan_fixes_only_the_elements_it_reaches():
    n = 1024  # the whole product would be 4 GB
    a, b = np.ones((n, n), np.float32), np.ones((n, n), np.float32)
    a[3, 5] = np.nan
    got = (Tensor(a) @ Tensor(b)).numpy()
    assert np.isnan(got[3]).all() and np.isnan(got).sum() == n and (got[4] == n).all()


def test_the_compiled_kernel_cache_is_bounded(monkeypatch):
    monkeypatch.setattr(cpu, "_compiled", {})
    monkeypatch.setattr(cpu, "_functions", {})
    monkeypatch.setattr(cpu, "_compiled_chars", [0])
    monkeypatch.setattr(cpu, "KERNEL_CACHE_SIZE", 8)
    a = Tensor(np.arange(4, dtype=np.float32)).realize()
    for i in range(30):  # a new scalar each time: a new kernel each time
        assert (a * float(i) + 1).numpy().tolist() == (np.arange(4) * i + 1).tolist()
    assert len(cpu._compiled) <= 8
    monkeypatch.setattr(cpu, "KERNEL_CACHE_SIZE", 4096)
    monkeypatch.setattr(cpu, "KERNEL_CACHE_CHARS", 3000)  # bounded by source size as well
    for i in range(30):
        x = a + float(i)
        for _ in range(10):
            x = (x * 1.5).relu()
        x.numpy()
    assert 1 <= len(cpu._compiled) < 30 and cpu._compiled_chars[0] == sum(
        len(k.source) for k in cpu._compiled.values())
    assert cpu._compiled_chars[0] <= 3000 or len(cpu._compiled) == 1


def _function_counts():
    counts: dict[tuple[str, str], int] = {}
    for k in cpu._compiled.values():
        counts[k.name, k.source] = counts.get((k.name, k.source), 0) + 1
    return counts


def test_kernels_that_differ_in_constants_only_share_one_compiled_function(monkeypatch):
    monkeypatch.setattr(cpu, "_compiled", {})
    monkeypatch.setattr(cpu, "_functions", {})
    monkeypatch.setattr(cpu, "_compiled_chars", [0])
    monkeypatch.setattr(cpu, "KERNEL_CACHE_SIZE", 5)
    a = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3)).realize()
    for i in range(12):  # a kernel per scalar, one source: the values are its arguments
        want = np.arange(6, dtype=np.float32).reshape(2, 3) * np.float32(i + 0.5) + np.float32(-i)
        assert (a * (i + 0.5) + -i).numpy().tolist() == want.tolist()
        assert (a ** 2).numpy().tolist() == (np.arange(6).reshape(2, 3) ** 2).tolist()
        assert len(cpu._functions) <= len(cpu._compiled) <= 5
        assert {s: n for s, (_, n) in cpu._functions.items()} == _function_counts()
        kernels = list(cpu._compiled.values())
        assert all(k._fn is cpu._functions[k.name, k.source][0] for k in kernels)
    assert len({id(k._fn) for k in cpu._compiled.values()}) < len(cpu._compiled)
    monkeypatch.setattr(cpu, "KERNEL_CACHE_SIZE", 1)
    (a - 1).numpy()  # the others leave, and with them every function only they used
    last = next(iter(cpu._compiled.values()))
    assert len(cpu._compiled) == 1 and list(cpu._functions) == [(last.name, last.source)]


def test_kernels_that_differ_in_where_their_windows_start_share_one_function(monkeypatch):
    monkeypatch.setattr(cpu, "_compiled", {})
    monkeypatch.setattr(cpu, "_functions", {})
    monkeypatch.setattr(cpu, "_compiled_chars", [0])
    ref = np.arange(40, dtype=np.float32).reshape(10, 4)
    x = Tensor(ref.copy()).realize()
    for i in range(8):  # a row written at step i, windows read from i, forwards and back
        x[i] = Tensor(np.full(4, -i, np.float32)) * 2
        ref[i] = -2 * i
        assert x.numpy().tolist() == ref.tolist()
        assert (x[i:i + 2] * 3).numpy().tolist() == (ref[i:i + 2] * 3).tolist()
        assert (x[i + 2:i:-1, ::-2] + 1).numpy().tolist() == (ref[i + 2:i:-1, ::-2] + 1).tolist()
        widths = ((i, 7 - i), (1, 0))
        assert (x + 1).pad(widths).numpy().tolist() == np.pad(ref + 1, widths).tolist()
    assert len(cpu._compiled) >= 32  # a kernel per window: one function for each kind
    assert len(cpu._functions) <= 5


def test_the_schedule_caches_are_bounded_by_the_nodes_they_hold(monkeypatch):
    import tolk.schedule as sched

    sched.schedule_cache_clear()
    monkeypatch.setattr(sched, "SCHEDULE_CACHE_NODES", 400)
    for n in range(1, 40):  # a new program per input length
        x = Tensor(np.ones(n, np.float32))
        for _ in range(10):
            x = (x * 1.01 + 0.5).relu()
        assert x.sum().item() > 0
    assert 1 <= len(sched._programs) < 39 and len(sched._by_form) < 39
    assert sched._programs_nodes[0] == sum(p.nodes for p in sched._programs.values()) <= 400
    assert sched._by_form_nodes[0] == sum(w for _, w in sched._by_form.values()) <= 400
    sched.schedule_cache_clear()
    assert sched._programs_nodes[0] == sched._by_form_nodes[0] == 0


def test_an_elementwise_result_is_written_into_its_buffer_with_overlapping_inputs_handled():
    x = Tensor(np.arange(6, dtype=np.float32))
    y = x + 1
    linear = y.schedule_linear()
    assert "ufunc_into(np.add" in cpu.get_kernel(linear.src[0].src[0], "CPU").source
    assert y.numpy().tolist() == (np.arange(6) + 1).tolist()
    z = Tensor(np.arange(6, dtype=np.float32)).realize()
    z[1:] = z[:-1] * 2  # reads what it writes, shifted by one
    z[::-1] = z + 1  # reversed
    want = np.arange(6, dtype=np.float32)
    want[1:] = want[:-1] * 2
    want[::-1] = want + 1
    assert z.numpy().tolist() == want.tolist()
    i = Tensor(np.array([250, 3], np.uint8)).realize()
    i.assign(i + np.uint8(10))  # wraps as numpy's uint8
    assert i.numpy().tolist() == [4, 13]


def test_argmax_and_argmin_are_one_reduction_with_numpys_answers():
    a = np.array([[1, np.nan, 3, np.nan], [2, 2, 1, 0]], np.float32)
    t = Tensor(a)
    got = t.argmax(1)
    assert [c.src[0].arg.name for c in got.schedule_linear().src] == ["r_argmax_2"]
    for name in ("argmax", "argmin"):
        for axis, keep in ((0, False), (1, True), (None, False)):
            want = getattr(a, name)(axis=axis, keepdims=keep)
            np.testing.assert_array_equal(getattr(t, name)(axis, keepdim=keep).numpy(), want)


def test_a_zero_d_target_stored_from_an_elementwise_value_of_one_element():
    a = Tensor(np.float32(2.0)).realize()
    b = a.relu()  # a reader of the value before the assign, taken along
    a.assign(Tensor(np.float32(-1.0)))
    c = a.cast("int32").abs()
    c.assign(Tensor(np.int32(0)) + 7)
    assert (b.item(), a.item(), c.item()) == (2.0, -1.0, 7)


def test_zero_d_values_stay_zero_d_through_float_to_int_casts_and_float_sums():
    x = Tensor(np.arange(3, dtype=np.int32)).realize()
    x[0] = Tensor(np.float32(2.7)).cast("int32")  # a 0-d cast stored into one element
    y = Tensor(np.float32(1.5)).realize()
    assert x.numpy().tolist() == [2, 1, 2] and y.sum().shape == () and y.sum().item() == 1.5
    z = Tensor(np.ones(3, np.float32)).realize()
    z[1] = Tensor(np.float32(-0.0)).sum()  # a 0-d float sum stored
    assert z.numpy().tolist() == [1, 0, 1]


def test_writes_through_views_of_a_dropped_lazy_tensor_land_as_numpys():
    x = Tensor(np.arange(4, dtype=np.float32)) + 1
    v = x.pad(((1, 1),))[0:3]  # the padded tensor is dropped: only its views live
    v[0] = 9.0
    np.testing.assert_array_equal(v.numpy(), [9, 1, 2])
    v = x.pad(((1, 1),))[0:3]
    w = v[1:]
    v[:] = 9.0
    np.testing.assert_array_equal(v.numpy(), [9, 9, 9])
    np.testing.assert_array_equal(w.numpy(), [9, 9])
    z = Tensor.zeros(3, 4).T
    z[0] = 1.0  # zeros is a tensor of its own, writable as numpy's
    np.testing.assert_array_equal(z.numpy(), np.vstack([np.ones(3), np.zeros((3, 3))]))
    o = Tensor.ones(3, 4).reshape(12)
    o[0] = 5.0
    assert o.numpy().tolist() == [5.0] + [1.0] * 11
    r = (Tensor(np.arange(3, dtype=np.float32)) + 1).repeat(2)[1:]
    r[0] = 9.0
    assert r.numpy().tolist() == [9, 3, 1, 2, 3]
    s = Tensor(np.arange(3, dtype=np.float32)) + 0
    c = Tensor(s.expand(2, 3))
    first, second = c[0], c[1]
    del c
    first[0] = 9.0
    assert first.numpy().tolist() == [9, 1, 2] and second.numpy().tolist() == [0, 1, 2]


def test_freed_device_memory_is_reused_for_the_same_size_only_when_no_view_remains():
    import gc

    from tolk.runtime import device

    dev = device.Device("CPU:7")
    n = device.POOL_MIN_BYTES * 2
    a = dev.alloc(n)
    addr = a.ctypes.data
    a[:] = 7
    view = a[8:].view(np.float32)  # a view keeps the bytes in use
    del a
    gc.collect()
    b = dev.alloc(n)
    assert b.ctypes.data != addr and dev.allocated_bytes == 2 * n
    del view
    gc.collect()
    assert dev.pooled_bytes == n and dev.allocated_bytes == n
    c = dev.alloc(n)  # the same bytes again, zeroed as asked
    assert c.ctypes.data == addr and not c.any() and dev.pooled_bytes == 0
    c[:] = 5
    del c
    d = dev.alloc(n, zeroed=False)
    assert d.ctypes.data == addr
    small = dev.alloc(16)  # small ones are not kept
    del small, d, b
    gc.collect()
    assert dev.allocated_bytes == 0 and dev.pooled_bytes == 2 * n
    dev.release_pool()
    assert dev.pooled_bytes == 0 and dev.alloc(n).ctypes.data not in (None, 0)


def test_kept_memory_is_bounded_and_released_before_an_allocation_fails(monkeypatch):
    import gc

    from tolk.runtime import device

    dev = device.Device("CPU:8")
    n = device.POOL_MIN_BYTES
    monkeypatch.setattr(device, "POOL_BYTES", 2 * n)
    xs = [dev.alloc(n) for _ in range(4)]
    del xs
    gc.collect()
    assert dev.pooled_bytes == 2 * n  # the rest went back to the system
    real, calls = np.empty, []

    def failing_once(*a, **k):
        calls.append(dev.pooled_bytes)
        if len(calls) == 1:
            raise MemoryError("simulated")
        return real(*a, **k)

    monkeypatch.setattr(device.np, "empty", failing_once)
    dev.alloc(3 * n, zeroed=False)  # fails once, frees what is kept, then succeeds
    assert calls == [2 * n, 0] and dev.pooled_bytes == 0


def test_kernels_free_each_temporary_after_its_last_read():
    from tolk.runtime.cpu import CompiledKernel

    x = Tensor(np.arange(4, dtype=np.float32)).realize()
    y = ((x * 2 + 1).exp() - x).sqrt()
    [call] = [k for k in y.schedule_linear().src if k.op is Ops.CALL]
    src = CompiledKernel(call.src[0]).source
    assert src.count("del ") >= 2 and "pass" not in src
    np.testing.assert_allclose(y.numpy(), np.sqrt(np.exp(np.arange(4) * 2 + 1) - np.arange(4)),
                               rtol=1e-6)


def test_pads_with_a_value_floor_ceil_and_squares_run_as_numpys_own():
    from tolk.runtime.cpu import CompiledKernel

    def source(t):
        [call] = [k for k in t.schedule_linear().src if k.op is Ops.CALL]
        return CompiledKernel(call.src[0]).source

    a = np.array([[np.nan, -np.inf, -2.5], [-0.5, -0.0, 1.5]], np.float32)
    x = Tensor(a).realize()
    for dt, v in ((np.int8, 7.5), (np.float16, -0.0), (np.float64, np.nan), (np.bool_, True)):
        h = (np.arange(24).reshape(2, 3, 4) % 5).astype(dt)
        got = Tensor(h).pad(((0, 1), (2, 0), (1, 1)), value=v).numpy()
        want = np.pad(h, ((0, 1), (2, 0), (1, 1)), constant_values=v)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got.astype(float)), np.signbit(want.astype(float)))
    assert "pad_fill" in source(x.pad(((1, 0), (0, 2)), value=-np.inf))
    for name in ("floor", "ceil"):
        t = getattr(x, name)()
        assert f"np.{name}" in source(t) and "where" not in source(t)
        got, want = t.numpy(), getattr(np, name)(a)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    assert "np.square" in source(x ** 2)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal((x ** 2).numpy(), a ** 2)
    m = Tensor(np.array([[True, False], [False, False]])).realize()
    assert "not_equal" not in source(m.any(1)) and m.any(1).tolist() == [True, False]
    assert m.all(0).tolist() == [False, False]


def test_disjoint_pads_are_found_by_one_sort_and_overlaps_still_seen():
    from tolk.runtime.cpu import _disjoint

    base = UOp(Ops.CONST, dtypes.float32, (), 1.0)
    src = UOp(Ops.EXPAND, dtypes.float32, (UOp(Ops.RESHAPE, dtypes.float32, (base,), (1, 1)),),
              (2, 3))

    def pad(b0, b1):  # a (2, 3) block placed at (b0, b1) in a (6, 9) array
        return UOp(Ops.PAD, dtypes.float32, (src,), ((b0, 4 - b0), (b1, 6 - b1)))

    assert _disjoint([pad(0, 6), pad(0, 0), pad(0, 3)])  # apart along axis 1, in any order
    assert _disjoint([pad(0, 0), pad(2, 1), pad(4, 2)])  # apart along axis 0
    assert not _disjoint([pad(0, 0), pad(1, 2)])  # they meet at (1, 2)
    assert _disjoint([pad(0, 0), pad(2, 2), pad(0, 3)])  # pair by pair apart, on either axis
    parts = [np.full((1, 2), i, np.float32) for i in range(300)]
    got = Tensor.stack(*[Tensor(p) for p in parts]).numpy()
    np.testing.assert_array_equal(got, np.stack(parts))
