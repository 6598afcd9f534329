"""erf, erfc, activations and losses against references written in plain numpy (and Python's
math.erf), on random shapes, values and dtypes (hypothesis; TOLK_THOROUGH=1 for many more
examples), with PyTorch's definitions and arguments."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tensor_strategies import (ALL, FLOATS, array_and_dtype, arrays, assert_matches, cases,
                               float_result, shapes)
from tolk.errors import ShapeError
from tolk.tensor import Tensor


@pytest.fixture(autouse=True)
def _quiet_numpy():
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


SPECIAL = np.array([0.0, -0.0, 1e-300, -1e-10, 0.3, -0.5, 1.0, 2.5, -3.0, 5.9, 6.1, -27.0,
                    30.0, np.inf, -np.inf, np.nan])
_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])


def _in(dt, fn, a):
    """`fn` of `a` computed in float64, rounded once to float dtype `dt`."""
    return np.asarray(fn(a.astype(np.float64))).astype(dt)


# -- erf, erfc, exact gelu --------------------------------------------------------------------

@pytest.mark.parametrize("dt", FLOATS)
def test_erf_and_erfc_are_pythons_math_functions_rounded_once(dt):
    a = SPECIAL.astype(dt)
    np.testing.assert_array_equal(Tensor(a).erf().numpy(), _in(dt, _erf, a))
    np.testing.assert_array_equal(Tensor(a).erfc().numpy(), _in(dt, _erfc, a))
    got = Tensor(a).erf().numpy()
    assert np.signbit(got[1]) and not np.signbit(got[0])  # (erf(-0.0) is -0.0)


@cases()
@given(array_and_dtype(dtype_strategy=st.sampled_from(ALL)))
def test_erf_and_erfc_of_random_arrays_and_views(a):
    rd = float_result(a.dtype)
    for t, ref in ((Tensor(a), a), (Tensor(a)[::-1] if a.ndim else Tensor(a), a[::-1] if a.ndim
                                                                               else a)):
        got = t.erf()
        assert got.dtype.np == rd
        np.testing.assert_array_equal(got.numpy(), _in(rd, _erf, ref))
        np.testing.assert_array_equal(t.erfc().numpy(), _in(rd, _erfc, ref))


def test_erfc_keeps_its_precision_where_erf_is_near_one():
    a = np.array([5.0, 10.0, 26.0])
    got = Tensor(a).erfc().numpy()
    assert (got > 0).all()
    np.testing.assert_allclose(got, [1.5374597944280349e-12, 2.088487583762545e-45,
                                     5.663192408856143e-296], rtol=1e-14)
    np.testing.assert_array_equal((1 - Tensor(a[1:]).erf()).numpy(), [0.0, 0.0])  # (1 - erf)


def test_erf_fuses_with_other_ops_and_writes_through_a_store():
    a = np.linspace(-3, 3, 11, dtype=np.float32)
    got = ((Tensor(a) * 2).erf() + Tensor(a).erfc()).numpy()
    np.testing.assert_array_equal(got, _in(np.float32, _erf, a * np.float32(2))
                                  + _in(np.float32, _erfc, a))
    x = Tensor(np.zeros(11, np.float32)).realize()
    x.assign(Tensor(a).erf())
    np.testing.assert_array_equal(x.realize().numpy(), _in(np.float32, _erf, a))


@pytest.mark.parametrize("dt", FLOATS)
def test_exact_gelu_is_x_times_the_normal_cdf(dt):
    a = np.concatenate([np.linspace(-8, 8, 33), SPECIAL[:-3]]).astype(dt)
    want = _in(dt, lambda v: v * _erfc(-v / math.sqrt(2)) / 2, a)
    assert_matches(Tensor(a).gelu(approximate="none").numpy(), want)
    tanh = Tensor(a).gelu().numpy().astype(np.float64)  # (the default stays the approximation)
    np.testing.assert_allclose(tanh, want.astype(np.float64), atol=2e-3 if dt == np.float16
                               else 1e-3)
    with pytest.raises(ValueError, match="approximate must be 'tanh' or 'none'"):
        Tensor(a).gelu(approximate="exact")


# -- activations ------------------------------------------------------------------------------

def _softplus(v, beta=1.0, threshold=20.0):
    return np.where(v * beta > threshold, v, np.logaddexp(0, v * beta) / beta)


SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
ACTIVATIONS = {
    "leaky_relu": (lambda v: np.where(v > 0, v, v * 0.01), {}),
    "elu": (lambda v: np.where(v > 0, v, np.expm1(v)), {}),
    "celu": (lambda v: np.where(v > 0, v, 0.5 * np.expm1(v / 0.5)), {"alpha": 0.5}),
    "selu": (lambda v: SELU_SCALE * np.where(v > 0, v, SELU_ALPHA * np.expm1(v)), {}),
    "softplus": (lambda v: _softplus(v, 2.0, 10.0), {"beta": 2.0, "threshold": 10.0}),
    "logsigmoid": (lambda v: -np.logaddexp(0, -v), {}),
    "mish": (lambda v: v * np.tanh(_softplus(v)), {}),
    "relu6": (lambda v: np.clip(v, 0, 6), {}),
    "hardtanh": (lambda v: np.clip(v, -2, 0.5), {"min_val": -2, "max_val": 0.5}),
    "hardsigmoid": (lambda v: np.clip(v + 3, 0, 6) / 6, {}),
    "hardswish": (lambda v: v * np.clip(v + 3, 0, 6) / 6, {}),
    "softsign": (lambda v: v / (1 + np.abs(v)), {}),
    "quick_gelu": (lambda v: v / (1 + np.exp(-1.702 * v)), {}),
    "swish": (lambda v: v / (1 + np.exp(-v)), {}),
}


@cases()
@given(st.sampled_from(sorted(ACTIVATIONS)),
       array_and_dtype(dtype_strategy=st.sampled_from(FLOATS)))
def test_activations_match_numpy_definitions(name, a):
    fn, kwargs = ACTIVATIONS[name]
    want = _in(a.dtype, fn, a)
    assert_matches(getattr(Tensor(a), name)(**kwargs).numpy(), want)


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activations_at_special_values_and_of_ints(name):
    fn, kwargs = ACTIVATIONS[name]
    a = np.array([0.0, -0.0, 1e-7, -1e-7, 2.9, -3.0, -3.1, 5.9, 6.1, 25.0, -25.0, 100.0, -100.0,
                  np.inf, -np.inf, np.nan], np.float32)
    assert_matches(getattr(Tensor(a), name)(**kwargs).numpy(), _in(np.float32, fn, a))
    i = np.array([-7, -1, 0, 1, 3, 9], np.int32)
    got = getattr(Tensor(i), name)(**kwargs)
    if name == "relu6":  # (a clip to ints: ints stay ints)
        assert_matches(got.numpy(), fn(i).astype(np.int32))
    elif name == "hardtanh":  # (a clip to float bounds: float32)
        assert_matches(got.numpy(), fn(i).astype(np.float32))
        assert_matches(Tensor(i).hardtanh(-2, 2).numpy(), np.clip(i, -2, 2))
    else:  # (ints in float32, as every float op)
        assert_matches(got.numpy(), _in(np.float32, fn, i))


def test_activation_arguments_that_divide_by_zero_are_refused():
    t = Tensor(np.ones(3, np.float32))
    with pytest.raises(ValueError, match="celu's alpha must not be 0"):
        t.celu(0)
    with pytest.raises(ValueError, match="softplus's beta must not be 0"):
        t.softplus(beta=0)
    with pytest.raises(TypeError, match="hardtanh of a bool tensor"):
        Tensor(np.ones(3, bool)).hardtanh()


# -- losses -----------------------------------------------------------------------------------

def _log_softmax(x, axis):
    m = np.max(x, axis, keepdims=True) if x.shape[axis] else 0
    return x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))


def _reduce(loss, reduction, weights=None):
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / (loss.size if weights is None else weights.sum())


def ref_cross_entropy(x, t, w=None, ignore=-100, reduction="mean", ls=0.0):
    """PyTorch's cross entropy in float64: class axis 1 (0 for 1-d logits)."""
    axis = 1 if x.ndim >= 2 else 0
    lp = np.moveaxis(_log_softmax(x.astype(np.float64), axis), axis, -1)
    classes = lp.shape[-1]
    wc = np.ones(classes) if w is None else w.astype(np.float64)
    if t.dtype.kind == "f":
        p = np.moveaxis(t.astype(np.float64), axis, -1) * (1 - ls) + ls / classes
        return _reduce(-(lp * p * wc).sum(-1), reduction)
    ignored = t == ignore
    safe = np.where(ignored, 0, t)
    picked = np.take_along_axis(lp, safe[..., None], -1)[..., 0]
    weights = np.where(ignored, 0, wc[safe])
    nll = np.where(ignored, 0, -picked * wc[safe])
    smooth = np.where(ignored, 0, -(lp * wc).sum(-1))
    return _reduce((1 - ls) * nll + ls / classes * smooth, reduction, weights)


@st.composite
def classification(draw):
    """Logits (float32 or float64; 1-d, 2-d or with spatial axes; batches of 0 allowed),
    targets of class indices, some ignored, and perhaps per-class weights."""
    dt = draw(st.sampled_from([np.float32, np.float64]))
    classes = draw(st.integers(1, 5))
    kind = draw(st.sampled_from(["1d", "2d", "spatial"]))
    batch = draw(st.integers(0, 4))
    shape = {"1d": (classes,), "2d": (batch, classes),
             "spatial": (batch, classes, draw(st.integers(1, 3)), draw(st.integers(0, 2)))}[kind]
    x = draw(arrays(dt, shape))
    rows = shape[:1] + shape[2:] if len(shape) >= 2 else ()
    ignore = draw(st.sampled_from([-100, -1, 0, 7]))
    t = draw(arrays(np.int64, rows).map(lambda r: r % classes))
    t = np.where(draw(arrays(np.bool_, rows)), ignore, t) if rows else t
    w = draw(st.none() | arrays(dt, (classes,)).map(lambda r: np.abs(r) + 0.5))
    return x, np.asarray(t), w, ignore


@cases()
@given(classification(), st.sampled_from(["mean", "sum", "none"]),
       st.sampled_from([0.0, 0.1, 1.0]))
def test_cross_entropy_with_class_indices_matches_pytorchs_definition(case, reduction, ls):
    x, t, w, ignore = case
    got = Tensor(x).cross_entropy(Tensor(t), None if w is None else Tensor(w), ignore,
                                  reduction, ls)
    want = ref_cross_entropy(x, t, w, ignore, reduction, ls)
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4 if x.dtype == np.float32 else 1e-10,
                               atol=1e-5 if x.dtype == np.float32 else 1e-10, equal_nan=True)


@cases()
@given(classification(), st.sampled_from(["mean", "sum", "none"]))
def test_nll_loss_of_log_softmax_is_the_cross_entropy(case, reduction):
    x, t, w, ignore = case
    axis = 1 if x.ndim >= 2 else 0
    wt = None if w is None else Tensor(w)
    got = Tensor(_log_softmax(x, axis)).nll_loss(Tensor(t), wt, ignore, reduction)
    np.testing.assert_allclose(got.numpy(), ref_cross_entropy(x, t, w, ignore, reduction),
                               rtol=1e-4, atol=1e-5, equal_nan=True)


@cases()
@given(classification(), st.sampled_from(["mean", "sum", "none"]),
       st.sampled_from([0.0, 0.3]))
def test_cross_entropy_with_class_probabilities(case, reduction, ls):
    x, _, w, _ = case
    axis = 1 if x.ndim >= 2 else 0
    p = np.exp(_log_softmax(np.cos(np.arange(x.size)).reshape(x.shape) * 3, axis)).astype(x.dtype)
    got = Tensor(x).cross_entropy(Tensor(p), None if w is None else Tensor(w),
                                  reduction=reduction, label_smoothing=ls)
    np.testing.assert_allclose(got.numpy(), ref_cross_entropy(x, p, w, reduction=reduction, ls=ls),
                               rtol=1e-4, atol=1e-5, equal_nan=True)


def test_cross_entropy_edge_cases():
    x = np.array([[1e4, -1e4, 0.0], [-1e4, 1e4, 3.0]], np.float32)  # (no overflow)
    t = np.array([1, 1])
    np.testing.assert_allclose(Tensor(x).cross_entropy(Tensor(t), reduction="none").numpy(),
                               [2e4, 0.0])
    all_ignored = Tensor(x).cross_entropy(Tensor(np.array([-100, -100]))).numpy()
    assert np.isnan(all_ignored)  # (0 / 0, as PyTorch's mean)
    assert Tensor(x).cross_entropy(Tensor(np.array([-100, -100])), reduction="sum").numpy() == 0
    half = Tensor(x.astype(np.float16)).cross_entropy(Tensor(t), reduction="none")
    assert half.dtype.np == np.float16
    np.testing.assert_allclose(half.numpy(), [2e4, 0.0], rtol=1e-3)
    u8 = Tensor(np.array([2, 0], np.uint8))  # (any integer dtype names classes)
    np.testing.assert_allclose(Tensor(x).cross_entropy(u8, reduction="none").numpy(),
                               ref_cross_entropy(x, np.array([2, 0]), reduction="none"))
    lst = Tensor(x).cross_entropy([2, 0], reduction="none").numpy()  # (a list of indices)
    np.testing.assert_allclose(lst, ref_cross_entropy(x, np.array([2, 0]), reduction="none"))


@pytest.mark.parametrize("bad", [3, -2, 100])
def test_a_class_out_of_range_raises_instead_of_reading_another_row(bad):
    x = Tensor(np.zeros((2, 3), np.float32))
    with pytest.raises(IndexError):
        x.cross_entropy(Tensor(np.array([0, bad]))).numpy()
    with pytest.raises(IndexError):
        x.nll_loss(Tensor(np.array([bad, 1])), weight=Tensor(np.ones(3, np.float32))).numpy()


def test_loss_arguments_are_checked():
    x = Tensor(np.zeros((2, 3), np.float32))
    t = Tensor(np.array([0, 1]))
    with pytest.raises(ValueError, match="reduction must be 'mean', 'sum' or 'none', got 'avg'"):
        x.cross_entropy(t, reduction="avg")
    with pytest.raises(TypeError, match="class indices .* got float32"):
        x.nll_loss(Tensor(np.array([0.0, 1.0], np.float32)))
    with pytest.raises(ShapeError, match=r"without its class axis, \(2,\)"):
        x.cross_entropy(Tensor(np.array([0, 1, 2])))
    with pytest.raises(ShapeError, match=r"one value per class, shape \(3,\), got \(2,\)"):
        x.cross_entropy(t, weight=Tensor(np.ones(2, np.float32)))
    with pytest.raises(ShapeError, match="no classes"):
        Tensor(np.zeros((2, 0), np.float32)).cross_entropy(t)
    with pytest.raises(ShapeError, match="0-d"):
        Tensor(np.float32(1)).cross_entropy(Tensor(np.int64(0)))
    with pytest.raises(ValueError, match=r"label_smoothing must be in \[0, 1\]"):
        x.cross_entropy(t, label_smoothing=1.5)
    with pytest.raises(ValueError, match="ignore_index applies to class indices only"):
        x.cross_entropy(Tensor(np.ones((2, 3), np.float32)), ignore_index=0)
    with pytest.raises(ShapeError, match="shapes must be equal"):
        x.cross_entropy(Tensor(np.ones((2, 4), np.float32)))
    with pytest.raises(ShapeError, match="shapes must be equal"):
        x.binary_cross_entropy(Tensor(np.ones(3, np.float32)))


def ref_bce(p, t, w=None):
    p, t = p.astype(np.float64), t.astype(np.float64)
    loss = (t - 1) * np.maximum(np.log1p(-p), -100) - t * np.maximum(np.log(p), -100)
    return loss if w is None else loss * w


def ref_bce_logits(x, t, w=None, pw=None):
    x, t = x.astype(np.float64), t.astype(np.float64)
    lw = 1 if pw is None else (pw - 1) * t + 1
    loss = (1 - t) * x + lw * (np.log1p(np.exp(-np.abs(x))) + np.maximum(-x, 0))
    return loss if w is None else loss * w


@cases()
@given(st.data(), shapes(max_dims=3), st.sampled_from(["mean", "sum", "none"]),
       st.sampled_from([np.float32, np.float64]))
def test_binary_cross_entropies(data, shape, reduction, dt):
    x = data.draw(arrays(dt, shape))
    t = data.draw(arrays(dt, shape).map(lambda r: np.abs(np.sin(r))))  # (targets in [0, 1])
    p = 1 / (1 + np.exp(-x.astype(np.float64)))  # (probabilities, 0 and 1 among them)
    w = data.draw(st.none() | arrays(dt, shape[-1:]).map(np.abs))
    pw = data.draw(st.none() | arrays(dt, shape[-1:]).map(np.abs))
    tol = {"rtol": 1e-4, "atol": 1e-4} if dt == np.float32 else {"rtol": 1e-9, "atol": 1e-9}
    wt = None if w is None else Tensor(w)
    got = Tensor(p.astype(dt)).binary_cross_entropy(Tensor(t), wt, reduction)
    np.testing.assert_allclose(got.numpy(), _reduce(ref_bce(p.astype(dt), t, w), reduction),
                               equal_nan=True, **tol)
    got = Tensor(x).binary_cross_entropy_with_logits(Tensor(t), wt,
                                                     None if pw is None else Tensor(pw), reduction)
    np.testing.assert_allclose(got.numpy(), _reduce(ref_bce_logits(x, t, w, pw), reduction),
                               equal_nan=True, **tol)


def test_binary_cross_entropy_at_certain_predictions_is_finite():
    p = np.array([0.0, 1.0, 0.0, 1.0], np.float32)
    t = np.array([0.0, 1.0, 1.0, 0.0], np.float32)
    np.testing.assert_allclose(Tensor(p).binary_cross_entropy(Tensor(t), reduction="none")
                               .numpy(), [0, 0, 100, 100])
    big = np.array([1e4, -1e4], np.float32)  # (no overflow from the logits)
    np.testing.assert_allclose(Tensor(big).binary_cross_entropy_with_logits(
        Tensor(np.array([0.0, 0.0], np.float32)), reduction="none").numpy(), [1e4, 0.0])


@cases()
@given(st.data(), shapes(max_dims=3), st.sampled_from(["mean", "sum", "none"]),
       st.sampled_from([np.float32, np.float64, np.int32]))
def test_regression_losses(data, shape, reduction, dt):
    a = data.draw(arrays(dt, shape, small=True))
    b = data.draw(arrays(dt, shape[1:], small=True))  # (broadcast, as PyTorch's)
    rd = float_result(np.dtype(dt))
    d = a.astype(np.float64) - b.astype(np.float64)
    ad = np.abs(d)
    refs = {"mse_loss": (d * d, {}), "l1_loss": (ad, {}),
            "smooth_l1_loss": (np.where(ad < 0.5, 0.5 * ad * ad / 0.5, ad - 0.25), {"beta": 0.5}),
            "huber_loss": (np.where(ad <= 2, 0.5 * ad * ad, 2 * (ad - 1)), {"delta": 2.0})}
    for name, (loss, kwargs) in refs.items():
        got = getattr(Tensor(a), name)(Tensor(b), reduction, **kwargs)
        assert got.dtype.np == rd
        np.testing.assert_allclose(got.numpy(), _reduce(loss, reduction), rtol=1e-5, atol=1e-5,
                                   equal_nan=True)
    l1 = Tensor(a).smooth_l1_loss(Tensor(b), reduction, beta=0.0).numpy()
    np.testing.assert_allclose(l1, _reduce(ad, reduction), rtol=1e-5, atol=1e-5, equal_nan=True)
    with pytest.raises(ValueError, match="delta must be > 0"):
        Tensor(a).huber_loss(Tensor(b), delta=0)


def test_16_bit_activations_and_losses_do_not_overflow_in_between():
    big = np.array([20000.0, 11000.0, -20000.0], np.float16)
    np.testing.assert_array_equal(Tensor(big).hardswish().numpy(), [20000.0, 11000.0, 0.0])
    d = Tensor(np.array([300.0, 0.0], np.float16))
    z = Tensor(np.zeros(2, np.float16))
    assert d.smooth_l1_loss(z, "none", beta=1000.0).numpy().tolist() == [45.0, 0.0]
    assert d.huber_loss(z, "none", delta=1000.0).numpy().tolist() == [np.float16(45000.0), 0.0]
    assert d.mse_loss(z).item() == np.float16(45000.0)  # (the mean fits; the squares do not)
    huge = Tensor(np.array([1e20], np.float32))
    np.testing.assert_allclose(huge.smooth_l1_loss(Tensor(np.zeros(1, np.float32)), "none",
                                                   beta=1e30).numpy(), [5e9], rtol=1e-6)


def test_loss_arguments_given_as_numbers_lists_or_arrays_take_the_inputs_dtype_and_device():
    x = Tensor(np.zeros((2, 3), np.float32))
    t = Tensor(np.array([0, 1]))
    assert x.cross_entropy(t, weight=[1.0, 2.0, 3.0]).dtype.np == np.float32
    p = Tensor(np.full(3, 0.5, np.float32))
    tg = np.array([0.0, 1.0, 1.0])
    assert p.binary_cross_entropy(Tensor(tg.astype(np.float32)), weight=2.0).dtype.np == \
        np.float32
    assert p.binary_cross_entropy_with_logits(tg.tolist(), pos_weight=2.0).dtype.np == np.float32
    probs = np.full((2, 3), 1 / 3)  # (an array of probabilities, not of indices)
    np.testing.assert_allclose(x.cross_entropy(probs).item(), np.log(3), rtol=1e-6)
    on1 = x.to("CPU:1")
    assert on1.cross_entropy([0, 1], weight=[1.0, 2.0, 3.0]).device == "CPU:1"
    assert p.to("CPU:1").binary_cross_entropy([0.0, 1.0, 1.0]).device == "CPU:1"


def test_loss_weights_that_would_grow_the_input_are_refused():
    p = Tensor(np.array([0.1, 0.5, 0.9], np.float32))
    t = Tensor(np.array([0.0, 1.0, 1.0], np.float32))
    with pytest.raises(ShapeError, match=r"weight of shape \(2, 3\) does not broadcast"):
        p.binary_cross_entropy(t, weight=Tensor(np.ones((2, 3), np.float32)))
    with pytest.raises(ShapeError, match="pos_weight of shape"):
        p.binary_cross_entropy_with_logits(t, pos_weight=Tensor(np.ones((2, 3), np.float32)))
    with pytest.raises(ShapeError, match=r"weight of shape \(4,\)"):
        p.binary_cross_entropy_with_logits(t, weight=Tensor(np.ones(4, np.float32)))
    for w in (Tensor(np.ones(1, np.float32)), 2.0, [1.0, 2.0, 3.0]):
        ok = p.binary_cross_entropy_with_logits(t, weight=w, reduction="none")
        assert ok.shape == (3,)


def test_more_argument_spellings_and_checks():
    a = Tensor(np.array([-2.0, 3.0], np.float32))
    np.testing.assert_array_equal(a.leaky_relu(negative_slope=0.5).numpy(), [-1.0, 3.0])
    with pytest.raises(ValueError, match="beta must be >= 0, got nan"):
        a.smooth_l1_loss(a, beta=float("nan"))
    with pytest.raises(TypeError, match="delta must be a number"):
        a.huber_loss(a, delta="1")
    x = Tensor(np.zeros((2, 3), np.float32))
    wrapped = Tensor(np.array([0, 2**64 - 1], np.uint64))  # (no int64: never -1, never ignored)
    with pytest.raises(IndexError):
        x.cross_entropy(wrapped, ignore_index=-1).numpy()


def test_hardtanh_refuses_bounds_in_the_wrong_order():
    x = Tensor(np.array([-2.0, 0.0, 2.0], np.float32))
    with pytest.raises(ValueError, match="min_val 1.0 is above its max_val -1.0"):
        x.hardtanh(1.0, -1.0)
    np.testing.assert_array_equal(x.hardtanh(0.5, 0.5).numpy(), [0.5, 0.5, 0.5])
    np.testing.assert_array_equal(x.clip(1.0, -1.0).numpy(), np.clip([-2.0, 0.0, 2.0], 1.0, -1.0))
