"""numpy's and PyTorch's other spellings and small compositions (shifts, amax, nansum, nanmean,
var_mean, expand_dims, mm, addmm, logit, xlogy, sinc, signbit, heaviside, rot90, atleast_nd,
cross, kron, tensordot, inner, cdist, repeat_interleave, float_power, ...) against numpy on
random shapes and values (hypothesis; TOLK_THOROUGH=1 for many more examples)."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tensor_strategies import (ALL, FLOATS, INTS, array_and_dtype, arrays, assert_matches, cases,
                               shapes)
from tolk.errors import ShapeError
from tolk.tensor import Tensor


@pytest.fixture(autouse=True)
def _quiet_numpy():
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


SHIFT_INTS = INTS + (np.dtype(np.int64), np.dtype(np.uint16))


@cases()
@given(st.sampled_from(SHIFT_INTS), shapes(max_dims=2), st.data())
def test_shifts_are_numpys(dt, shape, data):
    a = data.draw(arrays(dt, shape))
    b = data.draw(arrays(dt, shape).map(lambda r: r % (8 * r.itemsize + 3)))  # (past the width)
    np.testing.assert_array_equal((Tensor(a) << Tensor(b)).numpy(), np.left_shift(a, b))
    np.testing.assert_array_equal((Tensor(a) >> Tensor(b)).numpy(), np.right_shift(a, b))
    np.testing.assert_array_equal(Tensor(a).left_shift(3).numpy(), np.left_shift(a, dt.type(3)))
    np.testing.assert_array_equal((2 >> Tensor(b)).numpy(), np.right_shift(dt.type(2), b))
    t = Tensor(a.copy()).realize()
    t >>= 1
    np.testing.assert_array_equal(t.numpy(), np.right_shift(a, dt.type(1)))


def test_shifts_refuse_floats():
    with pytest.raises(TypeError, match="shift needs integer tensors, got float32"):
        Tensor(np.ones(2, np.float32)) << 1
    assert (Tensor(np.array([True, False])) << 1).numpy().tolist() == [2, 0]


@cases()
@given(array_and_dtype(dtype_strategy=st.sampled_from(FLOATS)), st.data(), st.booleans())
def test_nan_reductions_and_pairs(a, data, keepdim):
    a = a.copy()
    if a.size:
        a.reshape(-1)[data.draw(st.lists(st.integers(0, a.size - 1), max_size=3))] = np.nan
    axis = data.draw(st.none() | st.integers(-a.ndim, a.ndim - 1)) if a.ndim else None
    t = Tensor(a)
    wide = np.float32 if a.dtype == np.float16 else a.dtype
    assert_matches(t.nansum(axis, keepdims=keepdim).numpy(),
                   np.nansum(a.astype(wide), axis, keepdims=keepdim).astype(a.dtype))
    assert_matches(t.nanmean(axis, keepdim=keepdim).numpy(),
                   np.nanmean(a.astype(wide), axis, keepdims=keepdim).astype(a.dtype))
    if a.size and (axis is None or a.shape[axis]):
        mn, mx = t.aminmax(dim=axis, keepdim=keepdim)
        assert_matches(mn.numpy(), np.amin(a, axis, keepdims=keepdim))
        assert_matches(mx.numpy(), np.amax(a, axis, keepdims=keepdim))
        assert_matches(t.amax(axis, keepdim).numpy(), np.amax(a, axis, keepdims=keepdim))
        v, m = t.var_mean(axis, keepdim, correction=0)
        assert_matches(v.numpy(), np.var(a.astype(wide), axis, keepdims=keepdim).astype(a.dtype))
        assert_matches(m.numpy(), np.mean(a.astype(wide), axis, keepdims=keepdim).astype(a.dtype))


@cases()
@given(array_and_dtype(dtype_strategy=st.sampled_from(FLOATS)), st.data())
def test_elementwise_compositions(a, data):
    rd = a.dtype
    wide = a.astype(np.float64)
    t = Tensor(a)
    with np.errstate(all="ignore"):
        refs = {
            "logit": np.log(np.clip(wide, 0.1, 0.9) / (1 - np.clip(wide, 0.1, 0.9))),
            "sinc": np.sinc(wide),
            "frac": wide - np.trunc(wide),
            "heaviside": np.heaviside(wide, 0.5),
        }
    got = {"logit": t.logit(eps=0.1), "sinc": t.sinc(), "frac": t.frac(),
           "heaviside": t.heaviside(0.5)}
    for name, want in refs.items():
        assert_matches(got[name].numpy(), want.astype(rd))
    np.testing.assert_array_equal(t.signbit().numpy(), np.signbit(a))
    y = data.draw(arrays(rd, a.shape))
    with np.errstate(all="ignore"):
        want = np.where((wide == 0) & ~np.isnan(y), 0, wide * np.log(y.astype(np.float64)))
    assert_matches(t.xlogy(Tensor(y)).numpy(), want.astype(rd))
    assert_matches(t.float_power(2).numpy(), np.float_power(a, 2))


def test_signbit_and_xlogy_at_special_values():
    a = np.array([0.0, -0.0, np.nan, -np.nan, -1.0, np.inf], np.float32)
    np.testing.assert_array_equal(Tensor(a).signbit().numpy(), np.signbit(a))
    np.testing.assert_array_equal(Tensor(np.array([-3, 0, 2], np.int8)).signbit().numpy(),
                                  [True, False, False])
    x = Tensor(np.array([0.0, 0.0, 2.0], np.float32))
    got = x.xlogy(Tensor(np.array([0.0, np.nan, 0.0], np.float32))).numpy()
    np.testing.assert_array_equal(got, [0.0, np.nan, -np.inf])


@cases()
@given(array_and_dtype(dtype_strategy=st.sampled_from(ALL), shape_strategy=shapes(max_dims=4)),
       st.data())
def test_shape_spellings(a, data):
    t = Tensor(a)
    np.testing.assert_array_equal(t.atleast_1d().numpy(), np.atleast_1d(a))
    np.testing.assert_array_equal(t.atleast_2d().numpy(), np.atleast_2d(a))
    np.testing.assert_array_equal(t.atleast_3d().numpy(), np.atleast_3d(a))
    k = data.draw(st.integers(-5, 5))
    if a.ndim >= 2:
        axes = tuple(data.draw(st.permutations(range(a.ndim)))[:2])
        np.testing.assert_array_equal(t.rot90(k, axes).numpy(), np.rot90(a, k, axes))
        np.testing.assert_array_equal(t.fliplr().numpy(), np.fliplr(a))
    if a.ndim >= 1:
        np.testing.assert_array_equal(t.flipud().numpy(), np.flipud(a))
    new = data.draw(st.lists(st.integers(-a.ndim - 2, a.ndim + 1), min_size=1, max_size=2,
                             unique_by=lambda i: i % (a.ndim + 2)))
    try:
        want = np.expand_dims(a, tuple(new))
    except (ValueError, np.exceptions.AxisError):
        with pytest.raises((ValueError, ShapeError)):
            t.expand_dims(tuple(new))
        return
    np.testing.assert_array_equal(t.expand_dims(tuple(new)).numpy(), want)
    assert t.size() == a.shape and t.nbytes == a.nbytes and t.itemsize == a.itemsize
    np.testing.assert_array_equal(t.broadcast_to((2,) + a.shape).numpy(),
                                  np.broadcast_to(a, (2,) + a.shape))


@cases()
@given(st.data(), st.sampled_from([np.float32, np.float64, np.int32]))
def test_products(data, dt):
    n, m, p, b = (data.draw(st.integers(1, 4)) for _ in range(4))
    x, y = data.draw(arrays(dt, (n, m), small=True)), data.draw(arrays(dt, (m, p), small=True))
    c = data.draw(arrays(dt, (n, p), small=True))
    tol = {"rtol": 1e-5, "atol": 1e-5}
    np.testing.assert_allclose(Tensor(x).mm(Tensor(y)).numpy(), x @ y, **tol)
    np.testing.assert_allclose(Tensor(x).mv(Tensor(y[:, 0])).numpy(), x @ y[:, 0], **tol)
    np.testing.assert_allclose(Tensor(c).addmm(Tensor(x), Tensor(y), beta=2, alpha=3).numpy(),
                               2 * c + 3 * (x @ y), **tol)
    bx = data.draw(arrays(dt, (b, n, m), small=True))
    by = data.draw(arrays(dt, (b, m, p), small=True))
    np.testing.assert_allclose(Tensor(bx).bmm(Tensor(by)).numpy(), bx @ by, **tol)
    u = data.draw(arrays(dt, (n, 3), small=True))
    v = data.draw(arrays(dt, (3,), small=True))
    np.testing.assert_allclose(Tensor(u).cross(Tensor(v)).numpy(), np.cross(u, v), **tol)
    np.testing.assert_allclose(Tensor(u.T.copy()).cross(Tensor(v[:, None]), axis=0).numpy(),
                               np.cross(u.T, v[:, None], axis=0), **tol)
    np.testing.assert_allclose(Tensor(x).kron(Tensor(y)).numpy(), np.kron(x, y), **tol)
    np.testing.assert_allclose(Tensor(x).kron(Tensor(v)).numpy(), np.kron(x, v), **tol)
    np.testing.assert_allclose(Tensor(bx).tensordot(Tensor(y), 1).numpy(),
                               np.tensordot(bx, y, 1), **tol)
    np.testing.assert_allclose(Tensor(bx).tensordot(Tensor(by), ([0, 2], [0, 1])).numpy(),
                               np.tensordot(bx, by, ([0, 2], [0, 1])), **tol)
    np.testing.assert_allclose(Tensor(x).inner(Tensor(bx)).numpy(), np.inner(x, bx), **tol)
    t1, t2 = data.draw(arrays(dt, (n, m), small=True)), data.draw(arrays(dt, (m,), small=True))
    if dt != np.int32:
        np.testing.assert_allclose(Tensor(x).addcmul(Tensor(t1), Tensor(t2), value=0.5).numpy(),
                                   x + 0.5 * t1 * t2, **tol)
        den = np.where(t2 == 0, 1, t2)
        np.testing.assert_allclose(Tensor(x).addcdiv(Tensor(t1), Tensor(den), value=2).numpy(),
                                   x + 2 * (t1 / den), **tol)


@cases()
@given(st.data(), st.sampled_from([2.0, 1.0, 0.0, 3.0, math.inf]))
def test_cdist_matches_a_loop(data, p):
    rows, cols, m = (data.draw(st.integers(1, 4)) for _ in range(3))
    x = data.draw(arrays(np.float64, (2, rows, m), small=True))
    y = data.draw(arrays(np.float64, (2, cols, m), small=True))
    d = x[:, :, None, :] - y[:, None, :, :]
    want = np.linalg.norm(d, p, axis=-1)
    np.testing.assert_allclose(Tensor(x).cdist(Tensor(y), p).numpy(), want, rtol=1e-10,
                               atol=1e-10)


@cases()
@given(array_and_dtype(dtype_strategy=st.sampled_from(ALL), shape_strategy=shapes(max_dims=3)),
       st.data())
def test_repeat_interleave_is_numpys_repeat(a, data):
    axis = data.draw(st.none() | st.integers(-a.ndim, a.ndim - 1)) if a.ndim else None
    n = a.size if axis is None else a.shape[axis]
    reps = data.draw(st.integers(0, 3) | st.lists(st.integers(0, 3), min_size=n, max_size=n))
    got = Tensor(a).repeat_interleave(reps, axis)
    np.testing.assert_array_equal(got.numpy(), np.repeat(a, reps, axis))


def test_spelling_arguments_are_checked():
    x = Tensor(np.ones((2, 3), np.float32))
    cases_ = [(lambda: x.mm(Tensor(np.ones(3))), ShapeError, "2 and 2 axes"),
              (lambda: Tensor(np.ones((2, 2, 3))).bmm(Tensor(np.ones((3, 3, 1)))), ShapeError,
               "batches 2 and 3"),
              (lambda: x.T.cross(x.T), ShapeError, "vectors of 3"),
              (lambda: x.tensordot(x, 3), ShapeError, "tensordot over 3 axes"),
              (lambda: x.tensordot(x, ([0], [1])), ShapeError, "equal in size"),
              (lambda: x.cdist(Tensor(np.ones((2, 4)))), ShapeError, r"\(\.\.\., P, M\)"),
              (lambda: x.cdist(x, -1), ValueError, "p must be >= 0"),
              (lambda: x.repeat_interleave([1, 2], 1), ValueError, "an int or 3 ints"),
              (lambda: x.repeat_interleave(-1), ValueError, ">= 0"),
              (lambda: x.rot90(1, (0, 0)), ShapeError, "must differ"),
              (lambda: Tensor(np.ones(3)).fliplr(), ShapeError, "at least 2 axes"),
              (lambda: x.expand_dims((0, 0)), ValueError, "twice")]
    for call, err, msg in cases_:
        with pytest.raises(err, match=msg):
            call()
    assert x.detach() is not x and x.clone() is not x
    assert x.size(1) == 3 and x.element_size() == 4
    assert x.eq(1).numpy().all() and not x.ne(1).numpy().any()


def test_review_fixes_addmm_logit_dim_and_rot90():
    c = Tensor(np.zeros((7, 7)))
    with pytest.raises(ShapeError):
        c.addmm(Tensor(np.ones((3, 4), np.float32)), Tensor(np.ones((4, 5), np.float32)), beta=0)
    out = Tensor(np.zeros((3, 5))).addmm(Tensor(np.ones((3, 4), np.float32)),
                                         Tensor(np.ones((4, 5), np.float32)), beta=0)
    assert out.dtype.np == np.float64 and out.shape == (3, 5)
    assert np.isfinite(Tensor(np.array([1.0], np.float16)).logit(1e-4).numpy()).all()
    a = np.arange(6).reshape(2, 3)
    np.testing.assert_array_equal(Tensor(a).repeat_interleave(2, dim=1).numpy(),
                                  np.repeat(a, 2, 1))
    v = np.arange(6.0).reshape(3, 2)
    np.testing.assert_array_equal(Tensor(v).cross(Tensor(v[::-1].copy()), dim=0).numpy(),
                                  np.cross(v, v[::-1], axis=0))
    with pytest.raises(TypeError, match="two axes"):
        Tensor(a).rot90(1, 0)


def test_second_review_fixes():
    s = Tensor(3.0)  # a 0-d tensor and axis 0: a ShapeError, or numpy's answer
    for call in (lambda: s.size(0), lambda: s.norm(axis=0), lambda: s.cross(s, axis=0)):
        with pytest.raises(ShapeError, match="0-d tensor"):
            call()
    np.testing.assert_array_equal(s.repeat_interleave(2, 0).numpy(), np.repeat(3.0, 2, axis=0))
    a = np.array([[300, 300]], np.float16)  # einsum of 16-bit floats: float32 inside
    b = np.array([[300], [-300]], np.float16)
    np.testing.assert_array_equal(Tensor.einsum("ij,jk->ik", Tensor(a), Tensor(b)).numpy(),
                                  np.einsum("ij,jk->ik", a, b))
    x, y = np.array([300, 1], np.float16), np.array([0.001, 1], np.float16)
    np.testing.assert_array_equal(Tensor.einsum("i,i,i->", Tensor(x), Tensor(x), Tensor(y))
                                  .numpy(), np.einsum("i,i,i->", x, x, y))
    mixed = [np.array(1, np.int16), np.array(1, np.uint16), np.array(1, np.float16)]
    assert Tensor.einsum(",,->", *map(Tensor, mixed)).dtype.np == np.einsum(",,->", *mixed).dtype
    got = Tensor(np.array([1.0])).xlogy(Tensor(np.array([3.0], np.float16)))  # promoted first
    np.testing.assert_allclose(got.numpy(), [np.log(np.float16(3.0).astype(np.float64))],
                               rtol=1e-15)
    got = Tensor(np.array([1.0])).xlogy(Tensor(np.array([16777217], np.int64)))
    np.testing.assert_allclose(got.numpy(), [np.log(16777217.0)], rtol=1e-15)
    m = Tensor(np.array([[1, 2]]))  # addmm with beta 0: the dtype and values of beta 1's
    m1, m2 = Tensor(np.array([[1, 2], [3, 4]])), Tensor(np.array([[1, 0], [0, 1]]))
    r0, r1 = m.addmm(m1, m2, beta=0, alpha=0.5), m.addmm(m1, m2, beta=1, alpha=0.5)
    assert r0.dtype is r1.dtype
    np.testing.assert_array_equal(r0.numpy(), [[0.5, 1.0], [1.5, 2.0]])
    grown = Tensor(np.zeros((1, 3))).addmm(Tensor(np.ones((2, 2))), Tensor(np.ones((2, 3))),
                                           beta=0)
    grown += 1  # (a tensor of its own, not a broadcast view)
    np.testing.assert_array_equal(grown.numpy(), np.full((2, 3), 3.0))
    np.testing.assert_array_equal(Tensor(np.array([1.0, 2.0])).float_power([2, 3]).numpy(),
                                  np.float_power([1.0, 2.0], [2, 3]))
    t = Tensor(np.ones((3, 4), np.float32))
    for call, what in ((lambda: t.float_power("a"), "float_power's exponent"),
                       (lambda: t.addmm([[1.0]], [[1.0]]), "addmm takes Tensors"),
                       (lambda: t.view_as([1, 2]), "takes Tensors"),
                       (lambda: t.expand_as([1, 2]), "expand_as takes Tensors"),
                       (lambda: t.type_as([1, 2]), "type_as takes Tensors"),
                       (lambda: t.logit("a"), "logit's eps"),
                       (lambda: t.cdist(t, "a"), "cdist's p")):
        with pytest.raises(TypeError, match=what):
            call()
    v = np.array([0.1, 3.0, 1e25, 123.456, 2.5])  # numpy's powers of ten (1e23 is not 10.**23)
    for d in (23, 25, 26, 27, 30, 31, 32, -23, -25, 310):
        np.testing.assert_array_equal(Tensor(v).round(d).numpy(), np.round(v, d))
    r = Tensor(np.arange(4.0).reshape(2, 2))
    q = r.rot90(0)
    q += 1  # (a view for every k, as numpy's)
    np.testing.assert_array_equal(r.numpy(), np.arange(4.0).reshape(2, 2) + 1)
