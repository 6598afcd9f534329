"""take_along_axis, gather(dim, index), scatter_add and interpolate against numpy (and direct
loops written from PyTorch's definitions), on random shapes, indices and values (hypothesis;
TOLK_THOROUGH=1 for many more examples)."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tensor_strategies import ALL, arrays, cases, shapes
from tolk.errors import ShapeError
from tolk.tensor import Tensor


@st.composite
def along_case(draw):
    """An array, an axis, and indices broadcasting against it off the axis (some negative)."""
    dt = draw(st.sampled_from(ALL))
    shape = draw(shapes(min_dims=1, max_dims=3, min_side=1))
    a = draw(arrays(dt, shape))
    axis = draw(st.integers(-a.ndim, a.ndim - 1))
    n = shape[axis]
    ishape = tuple(draw(st.integers(0, 4)) if d == axis % a.ndim else
                   draw(st.sampled_from([1, s])) for d, s in enumerate(shape))
    a = a[tuple(slice(0, 1) if draw(st.booleans()) and ishape[d] == s and d != axis % a.ndim
                else slice(None) for d, s in enumerate(shape))]  # (the array broadcasts too)
    idx = draw(arrays(np.int64, ishape).map(lambda r: r % (2 * n) - n))
    return a, idx, axis


@cases()
@given(along_case(), st.booleans())
def test_take_along_axis_is_numpys(case, reverse):
    a, idx, axis = case
    if reverse:
        a = a[::-1]
    got = Tensor(a).take_along_axis(Tensor(idx), axis)
    want = np.take_along_axis(a, idx, axis)
    assert got.dtype.np == a.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want)


@cases()
@given(along_case())
def test_gather_with_a_dim_is_pytorchs(case):
    a, idx, axis = case
    idx = idx % a.shape[axis]  # (PyTorch's indices: in range, no broadcasting)
    size = tuple(min(i, s) if d != axis % a.ndim else i
                 for d, (i, s) in enumerate(zip(idx.shape, a.shape)))
    idx = idx[tuple(slice(0, s) for s in size)]
    want = np.empty(idx.shape, a.dtype)
    for pos in np.ndindex(*idx.shape):
        src = list(pos)
        src[axis % a.ndim] = idx[pos]
        want[pos] = a[tuple(src)]
    np.testing.assert_array_equal(Tensor(a).gather(axis, Tensor(idx)).numpy(), want)
    np.testing.assert_array_equal(Tensor(a).gather(dim=axis, index=Tensor(idx)).numpy(), want)


def test_indices_out_of_range_raise_and_bad_shapes_are_refused():
    a = Tensor(np.arange(12.0).reshape(3, 4))
    for bad in (4, -5):
        with pytest.raises(IndexError):
            a.take_along_axis(Tensor(np.array([[0, bad]])), 1).numpy()
    with pytest.raises(IndexError):
        a.scatter_add(0, Tensor(np.array([[3]])), Tensor(np.ones((1, 1)))).numpy()
    with pytest.raises(ShapeError, match="with the tensor's axes"):
        a.take_along_axis(Tensor(np.array([0, 1])), 1)
    with pytest.raises(ShapeError, match="do not broadcast"):
        a.take_along_axis(Tensor(np.zeros((2, 1), np.int64)), 1)
    with pytest.raises(ShapeError, match="none longer off dim 1"):
        a.gather(1, Tensor(np.zeros((4, 1), np.int64)))
    with pytest.raises(TypeError, match="integer indices"):
        a.gather(1, Tensor(np.zeros((1, 1), np.float32)))
    np.testing.assert_array_equal(a.take_along_axis([5, -1], None).numpy(), [5.0, 11.0])


@cases()
@given(st.data(), st.sampled_from([np.float32, np.float64, np.int32]))
def test_scatter_add_matches_a_loop(data, dt):
    shape = data.draw(shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    dim = data.draw(st.integers(0, len(shape) - 1))
    ishape = tuple(data.draw(st.integers(0, 5 if d == dim else s)) for d, s in enumerate(shape))
    sshape = tuple(i + data.draw(st.integers(0, 2)) for i in ishape)
    base = data.draw(arrays(dt, shape, small=True))
    src = data.draw(arrays(dt, sshape, small=True))
    idx = data.draw(arrays(np.int64, ishape).map(lambda r: r % shape[dim]))
    want = base.copy()
    for pos in np.ndindex(*ishape):
        dst = list(pos)
        dst[dim] = idx[pos]
        want[tuple(dst)] += src[pos]
    got = Tensor(base).scatter_add(dim, Tensor(idx), Tensor(src))
    assert got.dtype.np == dt
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)


def ref_interpolate(x, out_sizes, mode, align_corners, factors):
    """PyTorch's interpolate, one output element at a time, axis by axis."""
    for k, out in enumerate(out_sizes):
        a = 2 + k
        n = x.shape[a]
        res = np.empty(x.shape[:a] + (out,) + x.shape[a + 1:])
        for i in range(out):
            if mode.startswith("nearest"):
                half = Fraction(1, 2) if mode == "nearest-exact" else 0
                scale = Fraction(n, out) if factors is None else 1 / factors[k]  # (exact)
                j = min(math.floor((i + half) * scale), n - 1)
                res[(slice(None),) * a + (i,)] = x[(slice(None),) * a + (j,)]
                continue
            if align_corners:
                src = i * (n - 1) / (out - 1) if out > 1 else 0.0
            else:
                scale = n / out if factors is None else 1 / factors[k]
                src = max((i + 0.5) * scale - 0.5, 0.0)
            lo = min(math.floor(src), n - 1)
            hi = min(lo + 1, n - 1)
            t = src - lo
            res[(slice(None),) * a + (i,)] = (x[(slice(None),) * a + (lo,)] * (1 - t)
                                              + x[(slice(None),) * a + (hi,)] * t)
        x = res
    return x


@cases()
@given(st.data())
def test_interpolate_matches_pytorchs_definitions(data):
    axes = data.draw(st.integers(1, 3))
    mode = data.draw(st.sampled_from(["nearest", "nearest-exact",
                                      ["linear", "bilinear", "trilinear"][axes - 1]]))
    ins = tuple(data.draw(st.integers(1, 5)) for _ in range(axes))
    x = data.draw(arrays(np.float64, (2, 1) + ins, small=True))
    align = data.draw(st.sampled_from([None, False, True])) if "linear" in mode else None
    if data.draw(st.booleans()):
        outs = tuple(data.draw(st.integers(1, 7)) for _ in range(axes))
        factors = None
        got = Tensor(x).interpolate(size=outs, mode=mode, align_corners=align)
    else:
        factors = tuple(data.draw(st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.0]))
                        for _ in range(axes))
        outs = tuple(math.floor(n * f) for n, f in zip(ins, factors))
        if min(outs) < 1:
            with pytest.raises(ValueError, match="leaves none"):
                Tensor(x).interpolate(scale_factor=factors, mode=mode, align_corners=align)
            return
        got = Tensor(x).interpolate(scale_factor=factors, mode=mode, align_corners=align)
    want = ref_interpolate(x, outs, mode, bool(align), factors)
    assert got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)


def test_interpolate_known_values_and_arguments():
    x = Tensor(np.arange(4.0).reshape(1, 1, 4))
    np.testing.assert_allclose(x.interpolate(size=8, mode="linear").numpy()[0, 0],
                               [0, 0.25, 0.75, 1.25, 1.75, 2.25, 2.75, 3])
    np.testing.assert_array_equal(x.interpolate(scale_factor=2).numpy()[0, 0],
                                  np.repeat(np.arange(4.0), 2))
    img = Tensor(np.arange(6, dtype=np.uint8).reshape(1, 1, 2, 3))
    assert img.interpolate(size=(4, 6)).dtype.np == np.uint8  # (nearest keeps the dtype)
    cases_ = [(lambda: x.interpolate(size=3, mode="bilinear"), ShapeError, "2 more axes"),
              (lambda: x.interpolate(size=3, mode="cubic"), ValueError, "mode must be"),
              (lambda: x.interpolate(size=3, align_corners=True), ValueError, "linear modes"),
              (lambda: x.interpolate(), ValueError, "one of them"),
              (lambda: x.interpolate(size=(2, 2)), TypeError, "or 1 of them"),
              (lambda: x.interpolate(size=0), ValueError, ">= 1"),
              (lambda: x.interpolate(scale_factor=-1.0), ValueError, "> 0")]
    for call, err, msg in cases_:
        with pytest.raises(err, match=msg):
            call()


def test_interpolate_16_bit_blends_in_float32_and_gather_forms_are_checked():
    a = np.array([0.0, 1000.0], np.float16).reshape(1, 1, 2)
    got = Tensor(a).interpolate(size=200, mode="linear", align_corners=True).numpy()
    want = (np.linspace(0, 1000, 200)).astype(np.float16)  # (the exact blend, rounded once)
    np.testing.assert_array_equal(got[0, 0], want)
    with pytest.raises(ValueError, match="empty spatial axis"):
        Tensor(np.zeros((1, 1, 0))).interpolate(size=3)
    x, i = Tensor(np.ones((2, 3))), Tensor(np.zeros((1, 1), np.int64))
    with pytest.raises(TypeError, match="dim twice"):
        x.gather(1, i, dim=0)
    with pytest.raises(TypeError, match="takes the dim first"):
        x.gather(i, 0)


def test_nearest_interpolate_to_a_size_picks_its_source_exactly():
    """``floor(i * n / size)`` in floats lands just below a whole number for some sizes
    (11 * (30 / 22) = 14.999...): every (n, size) pair up to 32 and 69 where it does."""
    pairs = [(n, out) for n in range(1, 33) for out in range(1, 70)
             if any(math.floor(i * (n / out)) != i * n // out
                    or math.floor((i + 0.5) * (n / out)) != (2 * i + 1) * n // (2 * out)
                    for i in range(out))]
    assert len(pairs) >= 10
    for n, out in pairs + [(5, 3), (3, 5)]:
        x = np.arange(n, dtype=np.float32).reshape(1, 1, n)
        i = np.arange(out)
        np.testing.assert_array_equal(Tensor(x).interpolate(size=out).numpy()[0, 0],
                                      np.minimum(i * n // out, n - 1))
        np.testing.assert_array_equal(
            Tensor(x).interpolate(size=out, mode="nearest-exact").numpy()[0, 0],
            np.minimum((2 * i + 1) * n // (2 * out), n - 1))
