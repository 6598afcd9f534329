"""numpy's and PyTorch's names that tolk added later: trigonometric and hyperbolic functions,
arctan2/hypot/fmod, isnan/isinf/isfinite, round, logical ops, masked_fill, lerp, swapaxes,
moveaxis, ravel, tile, roll, outer, isclose/allclose and linspace, against numpy on random
shapes, values and dtypes (hypothesis; TOLK_THOROUGH=1 for many more examples)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tensor_strategies import (ALL, FLOATS, INTS, array_and_dtype, arrays, assert_matches,
                               cases, float_result, shapes)
from tolk.dtype import dtypes
from tolk.errors import ShapeError
from tolk.tensor import Tensor


@pytest.fixture(autouse=True)
def _quiet_numpy():
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


SPECIAL = np.array([0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 1.5, 2.5, -2.5, 1e4, -1e4, np.inf, -np.inf,
                    np.nan], np.float64)

UNARY = {"tan": np.tan, "sinh": np.sinh, "cosh": np.cosh, "arcsin": np.arcsin,
         "arccos": np.arccos, "arctan": np.arctan, "arcsinh": np.arcsinh, "arccosh": np.arccosh,
         "arctanh": np.arctanh}


@cases()
@given(st.sampled_from(sorted(UNARY)), array_and_dtype(dtype_strategy=st.sampled_from(ALL)))
def test_float_unary_ops_are_numpys_ufuncs_in_the_float_dtype(name, a):
    rd = float_result(a.dtype)  # (ints and bools in float32, as every float op of tolk)
    got = getattr(Tensor(a), name)()
    assert got.dtype.np == rd
    np.testing.assert_array_equal(got.numpy(), UNARY[name](a.astype(rd)))


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_float_unary_ops_at_special_values(name, dt):
    a = SPECIAL.astype(dt)
    np.testing.assert_array_equal(getattr(Tensor(a), name)().numpy(), UNARY[name](a))


def test_pytorch_spellings_are_the_same_ops():
    a = np.linspace(-0.9, 0.9, 7).astype(np.float32)
    t = Tensor(a)
    for torch_name, np_name in (("asin", "arcsin"), ("acos", "arccos"), ("atan", "arctan"),
                                ("asinh", "arcsinh"), ("atanh", "arctanh")):
        np.testing.assert_array_equal(getattr(t, torch_name)().numpy(),
                                      getattr(t, np_name)().numpy())
    np.testing.assert_array_equal((t + 2).acosh().numpy(), np.arccosh(a + np.float32(2)))
    np.testing.assert_array_equal(t.atan2(t[::-1]).numpy(), np.arctan2(a, a[::-1]))
    np.testing.assert_array_equal(t.remainder(0.25).numpy(), np.remainder(a, np.float32(0.25)))
    x = Tensor(np.arange(24).reshape(2, 3, 4))
    assert x.swapdims(0, 2).shape == x.swapaxes(0, 2).shape == (4, 3, 2)
    assert x.movedim(0, -1).shape == (3, 4, 2)


def _pair(dt_strategy):
    return st.tuples(dt_strategy, dt_strategy, shapes(max_dims=3), shapes(max_dims=3)).filter(
        lambda p: _broadcastable(p[2], p[3]))


def _broadcastable(s1, s2):
    return all(a == b or a == 1 or b == 1 for a, b in zip(s1[::-1], s2[::-1]))


@cases()
@given(st.sampled_from(["arctan2", "hypot"]), _pair(st.sampled_from(ALL)), st.data())
def test_arctan2_and_hypot_broadcast_and_match_numpy(name, p, data):
    d1, d2, s1, s2 = p
    a, b = data.draw(arrays(d1, s1)), data.draw(arrays(d2, s2))
    got = getattr(Tensor(a), name)(Tensor(b))
    rd = float_result(got.dtype.np)  # the promoted dtype (ints: float32)
    want = getattr(np, name)(a.astype(rd), b.astype(rd))
    assert got.dtype.np == rd
    np.testing.assert_array_equal(got.numpy(), want)


def test_arctan2_at_signed_zeros_and_infinities_is_numpys():
    y = np.array([0.0, -0.0, 0.0, -0.0, np.inf, -np.inf, np.inf, 1.0, np.nan], np.float32)
    x = np.array([0.0, 0.0, -0.0, -0.0, np.inf, np.inf, -np.inf, -np.inf, 1.0], np.float32)
    np.testing.assert_array_equal(Tensor(y).arctan2(Tensor(x)).numpy(), np.arctan2(y, x))
    np.testing.assert_array_equal(Tensor(y).arctan2(-0.0).numpy(), np.arctan2(y, np.float32(-0.0)))
    big = np.array([3e38, 1e-45], np.float32)
    np.testing.assert_array_equal(Tensor(big).hypot(Tensor(big)).numpy(), np.hypot(big, big))


@cases()
@given(_pair(st.sampled_from(FLOATS + INTS)), st.data())
def test_fmod_takes_the_sign_of_the_dividend_as_numpy(p, data):
    d1, d2, s1, s2 = p
    a, b = data.draw(arrays(d1, s1)), data.draw(arrays(d2, s2))
    got = Tensor(a).fmod(Tensor(b))
    want = np.fmod(a, b)
    assert_matches(got.numpy(), want)


def test_fmod_of_ints_by_zero_is_zero_and_bools_are_int8_as_numpy():
    a = np.array([5, -5, 7, -7], np.int32)
    assert_matches(Tensor(a).fmod(0).numpy(), np.fmod(a, np.int32(0)))
    assert_matches(Tensor(a).fmod(-3).numpy(), np.fmod(a, np.int32(-3)))
    b = np.array([True, True])
    assert_matches(Tensor(b).fmod(Tensor(b)).numpy(), np.fmod(b.astype(np.int8), b.astype(np.int8)))


# ---------------------------------------------------------------------------------------------
# predicates and rounding


@cases()
@given(array_and_dtype(dtype_strategy=st.sampled_from(ALL)), st.data())
def test_isnan_isinf_isfinite_match_numpy(a, data):
    if a.dtype.kind == "f" and a.size:  # plant some specials
        flat = a.reshape(-1).copy()
        for i in data.draw(st.lists(st.integers(0, a.size - 1), max_size=4)):
            flat[i] = data.draw(st.sampled_from([np.nan, np.inf, -np.inf, -0.0]))
        a = flat.reshape(a.shape)
    t = Tensor(a)
    for name in ("isnan", "isinf", "isfinite"):
        assert_matches(getattr(t, name)().numpy(), getattr(np, name)(a))


@cases()
@given(array_and_dtype(dtype_strategy=st.sampled_from(FLOATS)), st.integers(-3, 3))
def test_round_of_floats_is_numpys_halves_to_even(a, decimals):
    want = np.round(a, decimals)
    got = Tensor(a).round(decimals).numpy()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    assert (np.signbit(got) == np.signbit(want)).all()  # (-0.0 stays -0.0, as numpy's)


def test_round_at_halves_special_values_and_large_values():
    for dt in FLOATS:
        a = np.concatenate([SPECIAL, [0.49999997, 3.5, 4.5, -3.5, 2**52 + 1.0, 1e30]]).astype(dt)
        for d in (0, 1, -1, 2, 5, 308, -308, 400, -400):  # (10.0**400: inf, as numpy's)
            np.testing.assert_array_equal(Tensor(a).round(d).numpy(), np.round(a, d))
    assert Tensor(np.float32(2.675)).round(2).item() == np.round(np.float32(2.675), 2)


def _round_int(a: np.ndarray, decimals: int) -> np.ndarray:
    """Exact integer rounding, halves to even, wrapping into the dtype (Python ints)."""
    if decimals >= 0:
        return a.copy()
    f = 10 ** -decimals
    info = np.iinfo(a.dtype)
    out = []
    for x in a.reshape(-1).tolist():
        q, r = divmod(x, f)
        v = (q + (2 * r > f or (2 * r == f and q % 2 == 1))) * f
        out.append((v - int(info.min)) % (1 << (8 * a.dtype.itemsize)) + int(info.min))
    return np.array(out, dtype=a.dtype).reshape(a.shape)


@cases()
@given(array_and_dtype(dtype_strategy=st.sampled_from(INTS + (np.dtype(np.int64),))),
       st.integers(-3, 2))
def test_round_of_ints_is_exact_and_keeps_the_dtype(a, decimals):
    if decimals < 0 and 10 ** -decimals > np.iinfo(a.dtype).max:
        with pytest.raises(ValueError, match="does not fit"):
            Tensor(a).round(decimals)
        return
    got = Tensor(a).round(decimals).numpy()
    assert_matches(got, _round_int(a, decimals))
    fine = np.abs(a.astype(np.float64)) < 2.0 ** 53  # numpy rounds through float64
    if a.dtype != np.int64:  # (and where the result wraps it wraps the same way)
        fine &= (np.abs(a.astype(np.float64)) + 10.0 ** -decimals < np.iinfo(a.dtype).max)
    assert_matches(got[fine], np.round(a, decimals)[fine])


def test_round_of_ints_halves_and_bad_arguments():
    a = np.array([15, 25, -15, -25, 125, 5, -5, 0, 127, -128], np.int8)
    assert_matches(Tensor(a).round(-1).numpy(), _round_int(a, -1))
    assert Tensor(a).round(-1).numpy().tolist()[:8] == np.round(a, -1).tolist()[:8]
    big = np.array([123456789012345675, 36028797018963966, -(2**63), 2**63 - 1], np.int64)
    got = Tensor(big).round(-1).numpy().tolist()  # exact, where numpy goes through float64
    assert got == [123456789012345680, 36028797018963970, 2**63 - 2, -(2**63) + 2]  # (wrapped)
    with pytest.raises(TypeError, match="bool"):
        Tensor([True]).round()
    with pytest.raises(TypeError, match="decimals"):
        Tensor([1.0]).round(1.5)
    with pytest.raises(ValueError, match="10\\*\\*3 does not fit int8"):
        Tensor(a).round(-3)


@cases()
@given(st.sampled_from(["logical_and", "logical_or", "logical_xor"]),
       _pair(st.sampled_from(ALL)), st.data())
def test_logical_ops_take_truth_values_and_broadcast(name, p, data):
    d1, d2, s1, s2 = p
    a, b = data.draw(arrays(d1, s1)), data.draw(arrays(d2, s2))
    if a.dtype.kind == "f" and a.size:
        a = a.copy()
        a.reshape(-1)[0] = np.nan  # (true, as numpy's truth of nan)
    assert_matches(getattr(Tensor(a), name)(Tensor(b)).numpy(), getattr(np, name)(a, b))
    for s in (0, 2.5, True, float("nan")):
        assert_matches(getattr(Tensor(a), name)(s).numpy(), getattr(np, name)(a, s))


def test_logical_ops_refuse_what_is_no_scalar_or_tensor():
    with pytest.raises(TypeError, match="logical ops take"):
        Tensor([1]).logical_and([1])


# ---------------------------------------------------------------------------------------------
# masked_fill, lerp


@cases()
@given(array_and_dtype(dtype_strategy=st.sampled_from(ALL)), st.data())
def test_masked_fill_is_where_in_selfs_dtype(a, data):
    mshape = data.draw(st.sampled_from([a.shape, a.shape[1:], (1,) * a.ndim]))
    m = data.draw(arrays(np.bool_, mshape))
    value = data.draw(st.sampled_from([0, 1, True, 3]))
    want = np.where(m, np.asarray(value).astype(a.dtype), a)
    assert_matches(Tensor(a).masked_fill(Tensor(m), value).numpy(), want)
    vt = data.draw(arrays(a.dtype, ()))
    assert_matches(Tensor(a).masked_fill(Tensor(m), Tensor(vt)).numpy(), np.where(m, vt, a))


def test_masked_fill_truncates_a_float_into_ints_and_broadcasts_the_mask_up():
    got = Tensor(np.array([1, 2, 3], np.int32)).masked_fill(Tensor([True, False, True]), 2.5)
    assert_matches(got.numpy(), np.array([2, 2, 2], np.int32))
    got = Tensor(np.array([1.0, 2.0], np.float32)).masked_fill(Tensor([[True], [False]]), -1)
    assert_matches(got.numpy(), np.array([[-1, -1], [1, 2]], np.float32))
    with pytest.raises(TypeError, match="mask must be a Tensor"):
        Tensor([1.0]).masked_fill([True], 0)
    with pytest.raises(TypeError, match="value must be"):
        Tensor([1.0]).masked_fill(Tensor([True]), "x")
    with pytest.raises(ShapeError):
        Tensor([1.0, 2.0]).masked_fill(Tensor([True, False, True]), 0)


@cases()
@given(_pair(st.sampled_from(FLOATS)), st.floats(-2, 2, width=32), st.data())
def test_lerp_is_start_plus_weight_times_the_difference(p, w, data):
    d1, d2, s1, s2 = p
    a, b = data.draw(arrays(d1, s1)), data.draw(arrays(d2, s2))
    got = Tensor(a).lerp(Tensor(b), w)
    rd = np.result_type(a, b)
    wide = np.dtype(np.float32) if rd.itemsize == 2 else rd  # (16 bits: rounded once)
    with np.errstate(all="ignore"):
        want = (a.astype(wide) + (b.astype(wide) - a.astype(wide)) * wide.type(w)).astype(rd)
    np.testing.assert_array_equal(got.numpy(), want)
    wt = data.draw(arrays(np.float32, s1))
    got = Tensor(a).lerp(Tensor(b), Tensor(wt))
    want = Tensor(a) + (Tensor(b) - Tensor(a)) * Tensor(wt)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


# ---------------------------------------------------------------------------------------------
# movement: swapaxes, moveaxis, ravel, tile, roll, outer


@cases()
@given(array_and_dtype(shape_strategy=shapes(min_dims=1, max_dims=4)), st.data())
def test_swapaxes_moveaxis_and_ravel_match_numpy(a, data):
    n = a.ndim
    i, j = data.draw(st.integers(-n, n - 1)), data.draw(st.integers(-n, n - 1))
    assert_matches(Tensor(a).swapaxes(i, j).numpy(), np.swapaxes(a, i, j))
    k = data.draw(st.integers(0, n))
    src = data.draw(st.permutations(range(n)))[:k]
    dst = data.draw(st.permutations(range(-n, 0)))[:k]
    assert_matches(Tensor(a).moveaxis(src, dst).numpy(), np.moveaxis(a, src, dst))
    assert_matches(Tensor(a).moveaxis(i, j).numpy(), np.moveaxis(a, i, j))
    assert_matches(Tensor(a)[..., ::-1].ravel().numpy(), np.ravel(a[..., ::-1]))


def test_moveaxis_errors_name_the_problem():
    x = Tensor(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="repeated axis in source"):
        x.moveaxis((0, 0), (0, 1))
    with pytest.raises(ValueError, match="2 source axes but 1"):
        x.moveaxis((0, 1), 0)
    with pytest.raises(ShapeError, match="out of range"):
        x.moveaxis(2, 0)
    with pytest.raises(ShapeError, match="0-d"):
        Tensor(1.0).moveaxis(0, 0)


@cases()
@given(array_and_dtype(shape_strategy=shapes(max_dims=3, max_side=3)),
       st.lists(st.integers(0, 3), max_size=4))
def test_tile_matches_numpy(a, reps):
    assert_matches(Tensor(a).tile(tuple(reps)).numpy(), np.tile(a, tuple(reps)))
    if reps:
        assert_matches(Tensor(a).tile(reps[0]).numpy(), np.tile(a, reps[0]))


def test_tile_refuses_negative_and_non_int_reps():
    with pytest.raises(ValueError, match="negative"):
        Tensor([1]).tile(-1)
    with pytest.raises(TypeError, match="ints"):
        Tensor([1]).tile(1.5)


@cases()
@given(array_and_dtype(shape_strategy=shapes(min_dims=1, max_dims=3)), st.data())
def test_roll_matches_numpy(a, data):
    n = a.ndim
    s = data.draw(st.integers(-12, 12))
    assert_matches(Tensor(a).roll(s).numpy(), np.roll(a, s))
    ax = data.draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=3))
    sh = data.draw(st.lists(st.integers(-7, 7), min_size=len(ax), max_size=len(ax)))
    assert_matches(Tensor(a).roll(tuple(sh), tuple(ax)).numpy(), np.roll(a, sh, ax))
    assert_matches(Tensor(a).roll(s, axis=tuple(ax)).numpy(), np.roll(a, s, axis=tuple(ax)))
    assert_matches(Tensor(a).roll(tuple(sh), ax[0]).numpy(), np.roll(a, sh, ax[0]))


def test_roll_gives_a_new_tensor_and_refuses_what_numpy_refuses():
    x = Tensor(np.arange(4.0)).realize()
    y = x.roll(4)
    y[0] = 9.0
    assert x.numpy().tolist() == [0, 1, 2, 3]
    assert_matches(Tensor(np.float32(2)).roll(3).numpy(), np.roll(np.float32(2), 3))
    with pytest.raises(ShapeError, match="0-d"):
        Tensor(np.float32(2)).roll(1, 0)
    with pytest.raises(ValueError, match="2 shifts for 3 axes"):
        Tensor(np.zeros((2, 2, 2))).roll((1, 2), (0, 1, 2))
    with pytest.raises(TypeError, match="both dims and axis"):
        x.roll(1, 0, axis=0)
    with pytest.raises(TypeError, match="shifts must be ints"):
        x.roll(1.5, 0)


@cases()
@given(array_and_dtype(shape_strategy=shapes(max_dims=2, max_side=4)),
       array_and_dtype(shape_strategy=shapes(max_dims=2, max_side=4)))
def test_outer_flattens_both_as_numpy(a, b):
    got = Tensor(a).outer(Tensor(b))
    want = np.outer(a, b)
    if want.dtype == np.bool_:  # (numpy multiplies bools as logical and)
        want = want.astype(np.bool_)
    assert got.shape == want.shape
    assert_matches(got.numpy().astype(want.dtype), want, tol_dtype=got.dtype.np)
    with pytest.raises(TypeError, match="outer takes Tensors"):
        Tensor(a).outer(b)


# ---------------------------------------------------------------------------------------------
# isclose, allclose, linspace


@cases()
@given(_pair(st.sampled_from(ALL)), st.data(), st.booleans())
def test_isclose_is_numpys(p, data, equal_nan):
    d1, d2, s1, s2 = p
    a, b = data.draw(arrays(d1, s1)), data.draw(arrays(d2, s2))
    if a.dtype.kind == "f" and b.dtype.kind == "f" and a.size and b.size:
        a, b = a.copy(), b.copy()
        for arr in (a, b):
            for i in data.draw(st.lists(st.integers(0, arr.size - 1), max_size=3)):
                arr.reshape(-1)[i] = data.draw(st.sampled_from([np.nan, np.inf, -np.inf]))
        near = data.draw(st.booleans())  # values within the tolerance of the other
        if near and a.shape == b.shape:
            a = (b * (1 + np.asarray(1e-6, b.dtype))).astype(a.dtype)
    rtol, atol = data.draw(st.sampled_from([(1e-5, 1e-8), (1e-2, 0.0), (0.0, 0.5)]))
    got = Tensor(a).isclose(Tensor(b), rtol, atol, equal_nan)
    assert_matches(got.numpy(), np.isclose(a, b, rtol, atol, equal_nan))
    s = data.draw(st.sampled_from([0, 1, 2.5, np.inf, np.nan, True]))
    assert_matches(Tensor(a).isclose(s, rtol, atol, equal_nan).numpy(),
                   np.isclose(a, s, rtol, atol, equal_nan))
    assert Tensor(a).allclose(Tensor(b), rtol, atol, equal_nan) == \
        bool(np.allclose(a, b, rtol, atol, equal_nan))


def test_isclose_refuses_what_is_no_scalar_or_tensor():
    with pytest.raises(TypeError, match="isclose takes"):
        Tensor([1.0]).isclose([1.0])


@pytest.mark.parametrize("args, kwargs", [
    ((0, 1), {}), ((0, 1, 5), {}), ((1, 0, 4), {"endpoint": False}), ((-3.5, 2.25, 1), {}),
    ((0, 1, 0), {}), ((0, 10, 7), {"dtype": "int32"}), ((-5, 5, 6), {"dtype": "int8"}),
    ((0, 1, 3), {"dtype": "float64"}), ((0, 1, 3), {"dtype": "float16"}),
    ((0, 1, 3), {"dtype": "bool"}), ((2, 2, 3), {})])
def test_linspace_matches_numpy(args, kwargs):
    d = kwargs.get("dtype")
    want = np.linspace(*args, endpoint=kwargs.get("endpoint", True),
                       dtype=np.float32 if d is None else np.dtype(d))
    assert_matches(Tensor.linspace(*args, **kwargs).numpy(), want)


def test_linspace_in_bfloat16_rounds_once_and_bad_arguments_raise():
    got = Tensor.linspace(0, 1, 7, dtype=dtypes.bfloat16)
    assert got.dtype is dtypes.bfloat16
    want = Tensor(np.linspace(0, 1, 7, dtype=np.float32), dtype=dtypes.bfloat16)
    np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())
    with pytest.raises(ValueError, match="must not be negative"):
        Tensor.linspace(0, 1, -1)
    with pytest.raises(TypeError, match="num must be an int"):
        Tensor.linspace(0, 1, 2.0)
    with pytest.raises(TypeError, match="bounds"):
        Tensor.linspace(np.zeros(2), 1, 2)


# ---------------------------------------------------------------------------------------------
# sort, argsort, topk


def _descending_order(a: np.ndarray, axis: int) -> np.ndarray:
    """Stable descending positions along `axis`, nan first (a plain Python sort per row)."""
    moved = np.moveaxis(a, axis, -1)
    out = np.empty(moved.shape, np.int64)
    for idx in np.ndindex(moved.shape[:-1]):
        row = moved[idx].tolist()
        key = [(0, 0) if v != v else (1, -v) for v in row]  # (Python numbers: exact)
        out[idx] = sorted(range(len(row)), key=key.__getitem__)
    return np.moveaxis(out, -1, axis)


def _with_ties_and_nans(a: np.ndarray, data) -> np.ndarray:
    if not a.size:
        return a
    a = a.copy()
    flat = a.reshape(-1)
    for i in data.draw(st.lists(st.integers(0, a.size - 1), max_size=4)):
        flat[i] = flat[data.draw(st.integers(0, a.size - 1))]  # a tie
    if a.dtype.kind == "f":
        for i in data.draw(st.lists(st.integers(0, a.size - 1), max_size=2)):
            flat[i] = data.draw(st.sampled_from([np.nan, np.inf, -np.inf, -0.0]))
    return a


@cases()
@given(array_and_dtype(dtype_strategy=st.sampled_from(ALL + (np.dtype(np.int64),)),
                       shape_strategy=shapes(min_dims=1, max_dims=3)), st.data())
def test_sort_and_argsort_are_numpys_stable_sort_both_ways(a, data):
    a = _with_ties_and_nans(a, data)
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    values, indices = Tensor(a).sort(axis)
    want = np.argsort(a, axis=axis, kind="stable")
    assert_matches(indices.numpy(), want.astype(np.int64))
    assert_matches(values.numpy(), np.take_along_axis(a, want, axis))
    assert_matches(Tensor(a).argsort(axis=axis).numpy(), want.astype(np.int64))
    down = _descending_order(a, axis)
    values, indices = Tensor(a).sort(dim=axis, descending=True)
    assert_matches(indices.numpy(), down)
    assert_matches(values.numpy(), np.take_along_axis(a, down, axis))


@cases()
@given(array_and_dtype(dtype_strategy=st.sampled_from(FLOATS + INTS),
                       shape_strategy=shapes(min_dims=1, max_dims=3)), st.data())
def test_topk_is_the_first_k_of_the_sort(a, data):
    a = _with_ties_and_nans(a, data)
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    k = data.draw(st.integers(0, a.shape[axis]))
    largest = data.draw(st.booleans())
    values, indices = Tensor(a).topk(k, axis, largest=largest)
    order = _descending_order(a, axis) if largest else np.argsort(a, axis=axis, kind="stable")
    order = np.take(order, range(k), axis=axis)
    assert_matches(indices.numpy(), order.astype(np.int64))
    assert_matches(values.numpy(), np.take_along_axis(a, order, axis))


def test_sort_fuses_with_elementwise_ops_and_is_computed_once_for_two_readers():
    a = np.random.default_rng(0).standard_normal((6, 5)).astype(np.float32)
    s = (Tensor(a) * 2).sort(0)[0]
    want = np.sort(a * 2, 0)
    got = (s + s.sum(0)) * s[::-1]  # (two kernels read the sort: it is realized once)
    np.testing.assert_allclose(got.numpy(), (want + want.sum(0)) * want[::-1], rtol=1e-6)
    b = Tensor(a.astype(np.float32)).cast("bfloat16")
    got = b.sort(1, descending=True)[0].float().numpy()
    np.testing.assert_array_equal(got, -np.sort(-b.float().numpy(), 1))


def test_sort_of_a_0d_tensor_and_bad_arguments():
    v, i = Tensor(np.float32(2.5)).sort()
    assert v.item() == 2.5 and i.item() == 0 and i.dtype is dtypes.int64
    v, i = Tensor(np.float32(2.5)).topk(1)
    assert v.item() == 2.5 and i.item() == 0
    with pytest.raises(ShapeError, match="0-d"):
        Tensor(np.float32(2.5)).sort(1)
    with pytest.raises(ShapeError, match="out of range"):
        Tensor([1.0, 2.0]).sort(1)
    with pytest.raises(ValueError, match="k must be in \\[0, 2\\]"):
        Tensor([1.0, 2.0]).topk(3)
    with pytest.raises(TypeError, match="k must be an int"):
        Tensor([1.0, 2.0]).topk(1.0)


# ---------------------------------------------------------------------------------------------
# copysign, logaddexp, deg2rad, nan_to_num, count_nonzero, unflatten, diagonal, trace, diff,
# meshgrid


@cases()
@given(_pair(st.sampled_from(FLOATS)), st.data())
def test_copysign_and_logaddexp_match_numpy(p, data):
    d1, d2, s1, s2 = p
    a = _with_ties_and_nans(data.draw(arrays(d1, s1)), data)
    b = _with_ties_and_nans(data.draw(arrays(d2, s2)), data)
    got = Tensor(a).copysign(Tensor(b))
    np.testing.assert_array_equal(got.numpy(), np.copysign(a, b))
    assert (np.signbit(got.numpy()) == np.signbit(np.copysign(a, b))).all()
    got = Tensor(a).logaddexp(Tensor(b)).numpy()
    want = np.logaddexp(a, b)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, equal_nan=True, **_tol(want.dtype))


def _tol(dt):
    return {"rtol": 2e-3, "atol": 2e-3} if dt == np.float16 else {"rtol": 1e-6, "atol": 1e-7}


@cases()
@given(array_and_dtype(dtype_strategy=st.sampled_from(ALL)), st.data())
def test_deg2rad_rad2deg_nan_to_num_and_count_nonzero_match_numpy(a, data):
    a = _with_ties_and_nans(a, data)
    rd = float_result(a.dtype)
    np.testing.assert_array_equal(Tensor(a).deg2rad().numpy(), np.deg2rad(a.astype(rd)))
    np.testing.assert_array_equal(Tensor(a).rad2deg().numpy(), np.rad2deg(a.astype(rd)))
    assert_matches(Tensor(a).nan_to_num().numpy(), np.nan_to_num(a))
    if a.dtype.kind == "f":
        assert_matches(Tensor(a).nan_to_num(1.5, 7.0, -2.0).numpy(),
                       np.nan_to_num(a, nan=1.5, posinf=7.0, neginf=-2.0))
    axis = data.draw(st.none() | st.integers(-max(a.ndim, 1), max(a.ndim, 1) - 1)) \
        if a.ndim else None
    want = np.count_nonzero(a, axis=axis)
    assert_matches(Tensor(a).count_nonzero(axis).numpy(), np.asarray(want, np.int64))


def test_nan_to_num_in_bfloat16_uses_its_largest_value():
    x = Tensor(np.array([np.inf, -np.inf, np.nan, 1.0], np.float32)).cast("bfloat16")
    got = x.nan_to_num().float().numpy()
    big = Tensor(np.float32(3.3895313892515355e38)).cast("bfloat16").float().item()
    assert got.tolist() == [big, -big, 0.0, 1.0] and np.isfinite(big)


def test_unflatten_splits_one_axis():
    a = np.arange(24).reshape(2, 12)
    assert_matches(Tensor(a).unflatten(1, (3, 4)).numpy(), a.reshape(2, 3, 4))
    assert_matches(Tensor(a).unflatten(-1, (2, -1, 3)).numpy(), a.reshape(2, 2, 2, 3))
    assert_matches(Tensor(a).unflatten(0, [2]).numpy(), a)
    for bad in ((5, -1), (3, 5), (-1, -1), ()):
        with pytest.raises(ShapeError):
            Tensor(a).unflatten(1, bad)
    with pytest.raises(ShapeError, match="0-d"):
        Tensor(1.0).unflatten(0, (1,))


@cases()
@given(array_and_dtype(shape_strategy=shapes(min_dims=2, max_dims=4)), st.data())
def test_diagonal_and_trace_match_numpy(a, data):
    n = a.ndim
    a1 = data.draw(st.integers(-n, n - 1))
    a2 = data.draw(st.integers(-n, n - 1).filter(lambda v: v % n != a1 % n))
    off = data.draw(st.integers(-6, 6))
    assert_matches(Tensor(a).diagonal(off, a1, a2).numpy(), np.diagonal(a, off, a1, a2))
    if a.dtype != np.bool_:
        got = Tensor(a).trace(off, a1, a2)
        want = Tensor(np.ascontiguousarray(np.diagonal(a, off, a1, a2))).sum(-1)
        assert got.dtype is want.dtype
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        if a.dtype.kind in "iu":  # (int64, or uint64 for unsigned ints, as numpy's sums)
            assert_matches(got.numpy(), np.trace(a, off, a1, a2))


def test_diagonal_is_a_new_tensor_and_refuses_bad_axes():
    x = Tensor(np.eye(3, dtype=np.float32)).realize()
    d = x.diagonal()
    d[0] = 5.0
    assert x.numpy()[0, 0] == 1.0
    with pytest.raises(ValueError, match="same axis"):
        x.diagonal(0, 1, -1)
    with pytest.raises(ShapeError, match="at least 2 axes"):
        Tensor([1.0]).diagonal()
    with pytest.raises(TypeError, match="offset must be an int"):
        x.diagonal(1.0)


@cases()
@given(array_and_dtype(shape_strategy=shapes(min_dims=1, max_dims=3)), st.data())
def test_diff_matches_numpy(a, data):
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    n = data.draw(st.integers(0, 3))
    if a.dtype == np.bool_ or data.draw(st.booleans()):
        assert_matches(Tensor(a).diff(n, axis).numpy(), np.diff(a, n, axis))
        return
    pre = data.draw(st.sampled_from([None, 0, 1]))
    side = list(a.shape)
    side[axis] = 2
    app = data.draw(arrays(a.dtype, tuple(side)))
    got = Tensor(a).diff(n, axis, prepend=pre, append=Tensor(app)).numpy()
    want = np.diff(a, n, axis, prepend=np.asarray(pre, a.dtype), append=app) \
        if pre is not None else np.diff(a, n, axis, append=app)  # (a scalar is weak)
    assert_matches(got, want)


def test_diff_bad_arguments():
    with pytest.raises(ValueError, match="must not be negative"):
        Tensor([1, 2]).diff(-1)
    with pytest.raises(ShapeError, match="0-d"):
        Tensor(1).diff()


@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("sizes", [(), (3,), (3, 2), (2, 0, 4), (1, 3, 2, 2)])
def test_meshgrid_matches_numpy(indexing, sizes):
    xs = [np.arange(n, dtype=np.float32) + 10 * i for i, n in enumerate(sizes)]
    got = Tensor.meshgrid(*(Tensor(x) for x in xs), indexing=indexing)
    want = np.meshgrid(*xs, indexing=indexing)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert_matches(g.numpy(), w)
    with pytest.raises(ValueError, match="indexing"):
        Tensor.meshgrid(Tensor([1]), indexing="ji")


def test_review_cases_of_the_new_ops():
    a, b = np.float16([-4.11, 3.0, -0.5]), np.float16([-0.01746, 3.0, 2.0])
    np.testing.assert_array_equal(Tensor(a).logaddexp(Tensor(b)).numpy(), np.logaddexp(a, b))
    x = Tensor(np.array([-0.0, 0.0, 1.0, np.nan, -np.nan], np.float32))
    for desc in (False, True):
        v, i = x.sort(descending=desc)  # (the values are what the positions name, bit for bit)
        assert (np.signbit(v.numpy()) == np.signbit(x.numpy()[i.numpy()])).all()
    v, i = x.topk(3)
    assert (np.signbit(v.numpy()) == np.signbit(x.numpy()[i.numpy()])).all()
    assert Tensor(np.float32(2.5)).topk(0)[0].shape == (0,)
    got = Tensor(np.int32([1, 2, 3])).diff(prepend=0.5)
    assert_matches(got.numpy(), np.diff(np.float32([1, 2, 3]), prepend=np.float32(0.5)))
    assert_matches(Tensor(np.float32([[1, 0], [0, 0]])).count_nonzero(0, keepdims=True).numpy(),
                   np.array([[1, 0]], np.int64))
    with pytest.raises(TypeError, match="sizes must be ints"):
        Tensor(np.zeros(3)).unflatten(0, None)
    assert_matches(Tensor(np.arange(4)).roll((1, 2)).numpy(), np.roll(np.arange(4), (1, 2)))
    assert_matches(Tensor(np.arange(6).reshape(2, 3)).roll([]).numpy(),
                   np.arange(6).reshape(2, 3))
    assert_matches(Tensor(np.int8([-128, 100])).lerp(Tensor(np.int8([0, -100])), 0.5).numpy(),
                   np.float32([-64, 0]))
    with pytest.raises(ValueError, match="does not fit int64"):
        Tensor(np.int64([5])).round(-10**30)  # (at once: no power of ten that size)


@pytest.mark.parametrize("name", ["isclose", "logical_and", "logaddexp", "arctan2", "hypot"])
def test_binary_ops_with_a_sharded_operand_say_to_gather_it(name):
    m = Tensor(np.ones(4, np.float32)).shard(("CPU:1", "CPU:2"), axis=0)
    with pytest.raises(TypeError, match="sharded tensor: gather it"):
        getattr(Tensor(np.ones(4, np.float32)), name)(m)


@cases()
@given(array_and_dtype(dtype_strategy=st.sampled_from(ALL)), st.data(), st.booleans())
def test_median_matches_numpy(a, data, keepdim):
    a = _with_ties_and_nans(a, data)
    axis = data.draw(st.none() | st.integers(-a.ndim, a.ndim - 1)) if a.ndim else None
    rd = float_result(a.dtype)  # (ints and bools: float32, numpy's float64 from float32 data)
    got = Tensor(a).median(axis, keepdims=keepdim)
    want = np.median(a.astype(rd), axis=axis, keepdims=keepdim)
    assert got.dtype.np == rd and got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want, equal_nan=True, **_tol(rd))


def test_median_of_nothing_is_nan_and_bad_axes_raise():
    assert np.isnan(Tensor(np.zeros(0, np.float32)).median().item())
    assert Tensor(np.zeros((2, 0), np.float32)).median(1).numpy().shape == (2,)
    with pytest.raises(ShapeError, match="out of range"):
        Tensor([1.0, 2.0]).median(1)


def test_order_statistics_of_big_ints_round_once_and_a_bool_axis_is_refused():
    v = np.array([2**24 + 1, 2**24 + 2, 2**40 + 3], np.int64)
    for got, want in ((Tensor(v[:2]).median(), np.median(v[:2])),
                      (Tensor(v).quantile([0.3, 0.7]), np.quantile(v, [0.3, 0.7])),
                      (Tensor(v).percentile(25.0, method="midpoint"),
                       np.percentile(v, 25.0, method="midpoint"))):
        assert got.dtype == dtypes.float32
        np.testing.assert_array_equal(got.numpy(), np.float32(want))
    for ax in (False, np.bool_(False)):
        with pytest.raises(TypeError, match="an axis must be an int"):
            Tensor(3.0).argmax(ax)
    assert Tensor(3.0).argmax(0).item() == 0 == Tensor(3.0).argmin(-1).item()


@cases()
@given(array_and_dtype(dtype_strategy=st.sampled_from(ALL)), st.data(), st.booleans())
def test_norm_matches_numpys_vector_norms(a, data, keepdim):
    rd = float_result(a.dtype)
    x = a.astype(rd)
    ords = [None, 2, 1, np.inf, 0, 3, 0.5]
    if a.ndim == 0:
        ords = [None]
    if a.size and a.ndim:
        ords += [-np.inf, -1]
    o = data.draw(st.sampled_from(ords))
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1)) if a.ndim else None
    if o is None or a.ndim <= 1:
        axis = data.draw(st.sampled_from([None, axis]))
    if a.size and o in (-np.inf, -1) and axis is not None and 0 in a.shape:
        return  # (numpy: the minimum of nothing)
    got = Tensor(a).norm(o, axis, keepdims=keepdim)
    wide = np.float32 if rd == np.float16 else rd  # (16 bits in float32, rounded once)
    want = np.asarray(np.linalg.norm(x.astype(wide), o, axis, keepdim)).astype(rd)
    assert got.dtype.np == rd and got.shape == np.shape(want)
    tol = {"rtol": 5e-3, "atol": 1e-2} if rd == np.float16 else {"rtol": 1e-5, "atol": 1e-6}
    np.testing.assert_allclose(got.numpy(), want, equal_nan=True, **tol)


def test_norm_refuses_singular_value_norms_and_bad_orders():
    x = Tensor(np.ones((2, 3), np.float32))
    for o in (2, -2, "nuc"):
        with pytest.raises(ValueError, match="need singular values"):
            x.norm(o)
    with pytest.raises(ValueError, match="'fro' is a matrix norm"):
        x.norm("fro", 0)
    with pytest.raises(ValueError, match="ord must be a number"):
        x.norm([1], 0)
    with pytest.raises(ValueError, match="one axis twice"):
        x.norm(1, (1, -1))
    with pytest.raises(ValueError, match="one axis or two"):
        Tensor(np.ones((2, 2, 2))).norm(1, (0, 1, 2))
    with pytest.raises(ValueError, match="tensor of 3 axes"):
        Tensor(np.ones((2, 2, 2))).norm(1)
    with pytest.raises(ValueError, match="0-d"):
        Tensor(1.0).norm(1)
    assert x.norm().item() == pytest.approx(np.sqrt(6))
    assert x.norm(dim=1).shape == (2,)


def test_norm_of_big_ints_squares_them_in_float64():
    a = np.array([[2 ** 63 - 1, -(2 ** 63)] * 2, [3, 4, 0, 0]], np.int64)
    for o, ax in ((None, None), (None, 1), (3, 1), ("fro", (0, 1)), (1, (0, 1))):
        got = Tensor(a).norm(o, ax)
        assert got.dtype == dtypes.float32
        np.testing.assert_allclose(got.numpy(), np.linalg.norm(a, o, ax).astype(np.float32),
                                   rtol=1e-6)
        assert np.isfinite(got.numpy()).all()


@cases()
@given(array_and_dtype(dtype_strategy=st.sampled_from(ALL),
                       shape_strategy=shapes(min_dims=2, max_dims=3)), st.data(), st.booleans())
def test_norm_matches_numpys_matrix_norms(a, data, keepdim):
    rd = float_result(a.dtype)
    o = data.draw(st.sampled_from([None, "fro", 1, -1, np.inf, -np.inf]))
    axes = tuple(data.draw(st.permutations(range(-a.ndim, 0)))[:2])
    wide = np.float32 if rd == np.float16 else rd  # (16 bits in float32, rounded once)
    try:
        want = np.asarray(np.linalg.norm(a.astype(wide), o, axes, keepdim)).astype(rd)
    except ValueError:  # (numpy's smallest of no sums)
        with pytest.raises(ValueError, match="zero-size"):
            Tensor(a).norm(o, axes, keepdim).numpy()
        return
    got = Tensor(a).norm(o, axes, keepdims=keepdim)
    assert got.dtype.np == rd and got.shape == np.shape(want)
    tol = {"rtol": 5e-3, "atol": 1e-2} if rd == np.float16 else {"rtol": 1e-5, "atol": 1e-6}
    np.testing.assert_allclose(got.numpy(), want, equal_nan=True, **tol)
    if a.ndim == 2 and o is not None:  # (a 2-d tensor with an ord: its matrix norm)
        try:
            want = np.linalg.norm(a.astype(wide), o).astype(rd)
        except ValueError:  # (the smallest of no sums again, over the other axis)
            with pytest.raises(ValueError, match="zero-size"):
                Tensor(a).norm(o).numpy()
            return
        np.testing.assert_allclose(Tensor(a).norm(o).numpy(), want, **tol)


_METHODS = ["linear", "lower", "higher", "nearest", "midpoint"]


@cases()
@given(array_and_dtype(dtype_strategy=st.sampled_from(ALL)), st.data(), st.booleans(),
       st.sampled_from(_METHODS))
def test_quantile_matches_numpy(a, data, keepdim, method):
    a = _with_ties_and_nans(a, data)
    if a.dtype.kind == "f":  # (infinities: test_quantile_at_infinities)
        a[np.isinf(a)] = np.copysign(1000, a[np.isinf(a)])
    axis = data.draw(st.none() | st.integers(-a.ndim, a.ndim - 1)) if a.ndim else None
    if (a.size if axis is None else a.shape[axis]) == 0:
        with pytest.raises(ShapeError, match="empty axis"):
            Tensor(a).quantile(0.5, axis)
        return
    level = st.floats(0, 1) | st.sampled_from([0.0, 0.25, 0.5, 1.0])
    q = data.draw(level | st.lists(level, max_size=3))
    rd = float_result(a.dtype)  # (ints and bools: float32, numpy's float64)
    got = Tensor(a).quantile(q, axis, keepdims=keepdim, method=method)
    want = np.quantile(a.astype(rd), q, axis=axis, keepdims=keepdim, method=method)
    assert got.dtype.np == rd and got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want, equal_nan=True, **_tol(rd))
    if np.ndim(q) == 0 and rd != np.float16:  # (numpy's own float: the same bits)
        np.testing.assert_array_equal(got.numpy(), want)
    pct = Tensor(a).percentile(np.multiply(q, 100), axis, keepdims=keepdim, method=method)
    np.testing.assert_allclose(pct.numpy(), want, equal_nan=True, **_tol(rd))


def test_quantile_at_infinities():
    a = np.array([-np.inf, 1.0, 2.0, np.inf], np.float32)
    got = Tensor(a).quantile([0.0, 0.2, 0.5, 0.9, 1.0]).numpy()
    np.testing.assert_array_equal(got, [-np.inf, -np.inf, 1.5, np.nan, np.inf])
    want = np.quantile(a, [0.0, 0.2, 0.5, 0.9, 1.0])  # (numpy's lerp: nan on an infinity,
    np.testing.assert_array_equal(want, [np.nan, -np.inf, 1.5, np.nan, np.nan])  # as 0.9's)
    both = Tensor(np.array([np.inf, np.inf], np.float32)).quantile(0.5).item()
    assert np.isnan(both) and np.isnan(np.quantile([np.inf, np.inf], 0.5))  # (inf - inf)


def test_quantile_arguments_are_checked():
    x = Tensor(np.arange(6, dtype=np.float32))
    with pytest.raises(ValueError, match=r"levels must be in \[0, 1\]"):
        x.quantile(1.5)
    with pytest.raises(ValueError, match=r"levels must be in \[0, 100\]"):
        x.percentile([50, 101])
    with pytest.raises(ValueError, match="method must be"):
        x.quantile(0.5, method="weibull")
    with pytest.raises(ValueError, match="1-d sequence"):
        x.quantile([[0.5]])
    with pytest.raises(TypeError, match="not Tensor"):
        x.quantile(Tensor(0.5))
    assert x.quantile(np.float64(0.5)).item() == 2.5
    assert x.quantile([]).shape == (0,)
    assert x.reshape(2, 3).quantile([], 1, keepdim=True).shape == (0, 2, 1)


@cases()
@given(array_and_dtype(dtype_strategy=st.sampled_from(ALL)), st.booleans())
def test_sort_and_argsort_without_an_axis_sort_the_flattened_tensor(a, descending):
    values, positions = Tensor(a).sort(None, descending)
    flat = a.reshape(-1)
    order = np.argsort(flat[::-1], kind="stable")[::-1] if descending else \
        np.argsort(flat, kind="stable")
    if descending:
        order = flat.size - 1 - order
    np.testing.assert_array_equal(positions.numpy(), order)
    np.testing.assert_array_equal(values.numpy(), flat[order])
    np.testing.assert_array_equal(Tensor(a).argsort(None, descending).numpy(), order)


@st.composite
def _einsum_case(draw):
    sizes = {c: draw(st.integers(1, 3)) for c in "abcd"}
    n = draw(st.integers(1, 3))
    inputs = [draw(st.lists(st.sampled_from("abcd"), max_size=3)) for _ in range(n)]
    used = sorted({c for p in inputs for c in p})
    explicit = draw(st.booleans())
    out = draw(st.permutations(used))[:draw(st.integers(0, len(used)))] if explicit else None
    dt = draw(st.sampled_from([np.float32, np.float64, np.int32, np.int8, np.bool_]))
    ops = []
    for p in inputs:
        shape = tuple(sizes[c] if not draw(st.booleans()) or sizes[c] == 1 else 1
                      if p.count(c) == 1 else sizes[c] for c in p)
        ops.append(draw(arrays(dt, shape, small=True)))
    spec = ",".join("".join(p) for p in inputs) + ("->" + "".join(out) if explicit else "")
    return spec, ops


@cases()
@given(_einsum_case())
def test_einsum_matches_numpy(case):
    spec, ops = case
    want = np.einsum(spec, *ops)
    got = Tensor.einsum(spec, *(Tensor(o) for o in ops)).numpy()
    assert got.shape == np.shape(want)
    assert_matches(got, np.asarray(want))


def test_einsum_ellipsis_broadcast_and_errors():
    rng = np.random.default_rng(1)
    for spec, dims in [("...ij,j->...i", [(2, 3, 4), (4,)]), ("i...,i", [(3, 2, 5), (3,)]),
                         ("...,...", [(2, 1), (3,)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
                         ("iij->j", [(2, 2, 3)]), ("", [()])]:
        ops = [rng.standard_normal(s).astype(np.float32) for s in dims]
        np.testing.assert_allclose(Tensor.einsum(spec, *map(Tensor, ops)).numpy(),
                                   np.einsum(spec, *ops), rtol=1e-5, atol=1e-6)
    for spec, dims, msg in [("ij,jk", [(2, 3), (4, 4)], "sizes 3 and 4"),
                              ("ij", [(2,)], "names 2 axes"), ("i1", [(2,)], "letters"),
                              ("ij->ii", [(2, 2)], "repeats a letter"),
                              ("ii", [(2, 3)], "sizes 2 and 3"), ("i,i", [(2,)], "names 2"),
                              ("...i->i", [(2, 3)], "need a '...' in the output")]:
        with pytest.raises(ValueError, match=msg):
            Tensor.einsum(spec, *(Tensor(np.ones(s)) for s in dims))
    with pytest.raises(TypeError, match="einsum takes Tensors"):
        Tensor.einsum("i", [1.0])


def test_pytorchs_dim_follows_other_positional_arguments():
    t = Tensor(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(t.quantile(0.5, dim=1).numpy(), [1.0, 4.0])
    np.testing.assert_array_equal(t.percentile(50, dim=1).numpy(), [1.0, 4.0])
    np.testing.assert_allclose(t.norm(2, dim=1).numpy(), np.linalg.norm(np.arange(6.0)
                                                                        .reshape(2, 3), axis=1))
    np.testing.assert_array_equal(t.topk(1, dim=1)[0].numpy(), [[2.0], [5.0]])
    np.testing.assert_allclose(t.norm("fro", dim=(0, 1)).item(), np.sqrt(55))
    with pytest.raises(TypeError, match="got both axis and dim"):
        t.sum(1, dim=1)
    with pytest.raises(TypeError, match="got both axis and dim"):
        t.quantile(0.5, 1, dim=1)
    with pytest.raises(TypeError, match="not str"):
        t.quantile("0.5")


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_16_bit_formulas_are_computed_in_float32_and_rounded_once(dt):
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(4000).astype(np.float32) for _ in range(3))
    a, b, c = (Tensor(v).cast(dt) for v in (a, b, c))
    w = [v.cast("float32") for v in (a, b, c)]  # (the 16-bit values, exactly)
    x = a.abs() + 0.01
    for got, want in (
            (a.lerp(b, 0.3), w[0] + (w[1] - w[0]) * 0.3),  # (close values cancelled to 0)
            (a.addcmul(b, c, value=0.7), w[0] + w[1] * w[2] * 0.7),
            (a.addcdiv(b, c), w[0] + w[1] / w[2]),
            (x.rsqrt(), 1 / x.cast("float32").sqrt())):
        assert got.dtype.name == dt
        np.testing.assert_array_equal(got.cast("float32").numpy(),
                                      want.cast(dt).cast("float32").numpy())
    one = Tensor(np.array([0.4724], np.float16)).cast(dt)
    got = one.lerp(Tensor(np.array([-1.102], np.float16)).cast(dt), 0.3)
    assert got.cast("float32").item() > 0  # (PyTorch's sign; step by step gave 0 or -0.002)
