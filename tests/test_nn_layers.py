"""pad's modes, scaled_dot_product_attention, dropout and the normalizations (batch, group,
layer, RMS) against numpy references written from PyTorch's and numpy's definitions, on random
shapes and values (hypothesis; TOLK_THOROUGH=1 for many more examples)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tensor_strategies import ALL, array_and_dtype, arrays, cases, shapes
from tolk.dtype import dtypes
from tolk.errors import ShapeError
from tolk.tensor import Tensor

NUMPY_MODE = {"reflect": "reflect", "symmetric": "symmetric", "edge": "edge",
              "replicate": "edge", "wrap": "wrap", "circular": "wrap"}


@cases()
@given(array_and_dtype(dtype_strategy=st.sampled_from(ALL),
                      shape_strategy=shapes(min_dims=1, max_dims=3)),
       st.sampled_from(sorted(NUMPY_MODE)), st.data())
def test_pad_modes_are_numpys(a, mode, data):
    pads = tuple((data.draw(st.integers(0, 7)), data.draw(st.integers(0, 7))) if n else (0, 0)
                 for n in a.shape)
    want = np.pad(a, pads, mode=NUMPY_MODE[mode])
    got = Tensor(a).pad(pads, mode=mode)
    assert got.dtype.np == a.dtype
    np.testing.assert_array_equal(got.numpy(), want)
    flat = tuple(w for p in pads[::-1] for w in p)  # (a reversed view, PyTorch's flat widths)
    np.testing.assert_array_equal(Tensor(a)[::-1].pad(flat, mode=mode).numpy(),
                                  np.pad(a[::-1], pads, mode=NUMPY_MODE[mode]))


def test_pad_modes_refuse_what_numpy_refuses_and_make_a_new_tensor():
    x = Tensor(np.arange(6.0).reshape(2, 3))
    with pytest.raises(ValueError, match="mode must be 'constant', 'reflect'"):
        x.pad(((1, 1), (0, 0)), mode="mean")
    with pytest.raises(ValueError, match="widths >= 0"):
        x.pad(((-1, 0), (0, 0)), mode="edge")
    with pytest.raises(ValueError, match="cannot extend the empty axis 1"):
        Tensor(np.zeros((2, 0))).pad(((0, 0), (1, 1)), mode="wrap")
    same = x.pad(((0, 0), (0, 0)), mode="reflect")
    assert same is not x
    np.testing.assert_array_equal(same.numpy(), np.arange(6.0).reshape(2, 3))


def ref_attention(q, k, v, mask=None, causal=False, scale=None):
    s = q @ np.swapaxes(k, -1, -2) * (1 / np.sqrt(q.shape[-1]) if scale is None else scale)
    if causal:
        mask = np.tril(np.ones((q.shape[-2], k.shape[-2]), bool))
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    dead = s.max(-1, keepdims=True) == -np.inf  # a query attending to no key: zeros
    s = np.where(dead, 0.0, s)
    e = np.exp(s - s.max(-1, keepdims=True))
    return np.where(dead, 0.0, e / e.sum(-1, keepdims=True) @ v)


@cases()
@given(st.data())
def test_scaled_dot_product_attention_matches_its_definition(data):
    batch = data.draw(st.sampled_from([(), (2,), (2, 3)]))
    n_q, n_k, e, ev = (data.draw(st.integers(1, 5)) for _ in range(4))
    dt = data.draw(st.sampled_from([np.float32, np.float64]))
    q = data.draw(arrays(dt, batch + (n_q, e), small=True))
    k = data.draw(arrays(dt, batch[-1:] + (n_k, e), small=True))  # (batch axes broadcast)
    v = data.draw(arrays(dt, (n_k, ev), small=True))
    kind = data.draw(st.sampled_from(["none", "bool", "float", "causal"]))
    mask = None
    if kind == "bool":
        mask = data.draw(arrays(np.bool_, (n_q, n_k)))  # (a row may attend to no key)
    elif kind == "float":
        mask = data.draw(arrays(dt, (n_q, n_k), small=True))
    scale = data.draw(st.none() | st.floats(0.1, 2.0))
    got = Tensor(q).scaled_dot_product_attention(Tensor(k), Tensor(v), None if mask is None
                                                 else Tensor(mask), is_causal=kind == "causal",
                                                 scale=scale)
    want = ref_attention(q.astype(np.float64), k, v, mask, kind == "causal", scale)
    assert got.dtype.np == dt and got.shape == want.shape
    tol = 1e-4 if dt == np.float32 else 1e-10
    np.testing.assert_allclose(got.numpy(), want, rtol=tol, atol=tol)


def test_attention_edge_cases():
    q = Tensor(np.ones((2, 4), np.float16))
    k = Tensor(np.ones((3, 4), np.float16))
    v = Tensor(np.arange(6, dtype=np.float16).reshape(3, 2))
    out = q.scaled_dot_product_attention(k, v)
    assert out.dtype is dtypes.float16
    np.testing.assert_allclose(out.numpy(), [[2, 3], [2, 3]])
    none = np.zeros((2, 3), bool)
    np.testing.assert_array_equal(q.scaled_dot_product_attention(k, v, Tensor(none)).numpy(), 0)
    with pytest.raises(ValueError, match="not both"):
        q.scaled_dot_product_attention(k, v, Tensor(none), is_causal=True)
    with pytest.raises(ShapeError, match="must agree on E"):
        q.scaled_dot_product_attention(Tensor(np.ones((3, 5))), v)


def test_dropout_keeps_the_expected_share_scaled_and_repeats_with_a_seed():
    x = Tensor(np.full(20000, 2.0, np.float32))
    Tensor.manual_seed(7)
    a = x.dropout(0.25).numpy()
    assert set(np.unique(a).tolist()) <= {0.0, np.float32(2.0) / np.float32(0.75)}
    assert abs((a == 0).mean() - 0.25) < 0.02
    Tensor.manual_seed(7)
    np.testing.assert_array_equal(x.dropout(0.25).numpy(), a)
    assert x.dropout(0.25, training=False) is x and x.dropout(0.0) is x
    assert (x.dropout(1.0).numpy() == 0).all()
    with pytest.raises(ValueError, match=r"p must be in \[0, 1\]"):
        x.dropout(1.5)


def _norm(x, axes, eps):
    return (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + eps)


@cases()
@given(st.data(), st.sampled_from([np.float32, np.float64, np.float16]))
def test_batch_norm_in_both_modes(data, dt):
    shape = (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 4))) + \
        tuple(data.draw(st.lists(st.integers(1, 3), max_size=2)))
    c = shape[1]
    x = data.draw(arrays(dt, shape, small=True))
    rm = data.draw(arrays(np.float32, (c,), small=True))
    rv = np.abs(data.draw(arrays(np.float32, (c,), small=True))) + 0.5
    w, b = data.draw(arrays(np.float32, (c,), small=True)), data.draw(arrays(np.float32, (c,)))
    view = (1, c) + (1,) * (len(shape) - 2)
    xf = x.astype(np.float64)
    got = Tensor(x).batch_norm(Tensor(rm), Tensor(rv), Tensor(w), Tensor(b), eps=1e-3)
    want = (xf - rm.reshape(view)) / np.sqrt(rv.reshape(view) + 1e-3) * w.reshape(view) \
        + b.reshape(view)
    tol = 2e-2 if dt == np.float16 else 1e-4
    assert got.dtype.np == dt
    np.testing.assert_allclose(got.numpy(), want, rtol=tol, atol=tol)
    axes = tuple(a for a in range(len(shape)) if a != 1)
    n = x.size // c
    if n < 2:
        with pytest.raises(ValueError, match="more than one value per channel"):
            Tensor(x).batch_norm(Tensor(rm), Tensor(rv), training=True)
        return
    run_m, run_v = Tensor(rm.copy()).realize(), Tensor(rv.copy()).realize()
    got = Tensor(x).batch_norm(run_m, run_v, training=True, momentum=0.3)
    np.testing.assert_allclose(got.numpy(), _norm(xf, axes, 1e-5), rtol=tol, atol=tol)
    np.testing.assert_allclose(run_m.numpy(), 0.7 * rm + 0.3 * xf.mean(axes), rtol=1e-3,
                               atol=1e-3)
    np.testing.assert_allclose(run_v.numpy(), 0.7 * rv + 0.3 * xf.var(axes, ddof=1), rtol=1e-3,
                               atol=1e-3)


@cases()
@given(st.data(), st.sampled_from([np.float32, np.float64]))
def test_group_layer_and_rms_norms(data, dt):
    groups = data.draw(st.integers(1, 3))
    shape = (data.draw(st.integers(1, 2)), groups * data.draw(st.integers(1, 2))) + \
        tuple(data.draw(st.lists(st.integers(1, 3), max_size=2)))
    x = data.draw(arrays(dt, shape, small=True))
    xf = x.astype(np.float64)
    c = shape[1]
    w, b = data.draw(arrays(dt, (c,), small=True)), data.draw(arrays(dt, (c,), small=True))
    view = (1, c) + (1,) * (len(shape) - 2)
    g = xf.reshape(shape[0], groups, -1)
    want = (g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)
    want = want.reshape(shape) * w.reshape(view) + b.reshape(view)
    tol = {"rtol": 1e-3, "atol": 1e-3} if dt == np.float32 else {"rtol": 1e-9, "atol": 1e-9}
    got = Tensor(x).group_norm(groups, Tensor(w), Tensor(b))
    np.testing.assert_allclose(got.numpy(), want, **tol)
    k = data.draw(st.integers(1, len(shape)))
    norm_shape = shape[len(shape) - k:]
    lw = data.draw(arrays(dt, norm_shape, small=True))
    axes = tuple(range(len(shape) - k, len(shape)))
    got = Tensor(x).layer_norm(norm_shape, Tensor(lw), None, eps=1e-4)
    np.testing.assert_allclose(got.numpy(), _norm(xf, axes, 1e-4) * lw, **tol)
    eps = float(np.finfo(dt).eps)
    got = Tensor(x).rms_norm(norm_shape, Tensor(lw))
    want = xf / np.sqrt((xf * xf).mean(axes, keepdims=True) + eps) * lw
    np.testing.assert_allclose(got.numpy(), want, **tol)


def test_normalization_arguments_are_checked():
    x = Tensor(np.ones((2, 4, 3), np.float32))
    cases_ = [(lambda: x.group_norm(3), ShapeError, "divide into 3 groups"),
              (lambda: x.group_norm(2, Tensor(np.ones(3))), ShapeError, r"shape \(4,\)"),
              (lambda: x.layer_norm(4), ShapeError, "last axes of the input"),
              (lambda: x.layer_norm(3, Tensor(np.ones(4))), ShapeError, r"shape \(3,\)"),
              (lambda: x.rms_norm((4, 2)), ShapeError, "last axes"),
              (lambda: x.layer_norm(3.0), TypeError, "an int or a tuple of ints, got 3.0"),
              (lambda: x.rms_norm((3.0,)), TypeError, r"tuple of ints, got \(3.0,\)"),
              (lambda: x.layer_norm("3"), TypeError, "got '3'"),
              (lambda: x.batch_norm(), ValueError, "needs running_mean and running_var"),
              (lambda: x.batch_norm(Tensor(np.ones(3)), Tensor(np.ones(4))), ShapeError,
               r"running_mean must have one value per channel, shape \(4,\)"),
              (lambda: Tensor(np.ones(3)).batch_norm(), ShapeError, r"\(N, C, \.\.\.\)")]
    for call, err, msg in cases_:
        with pytest.raises(err, match=msg):
            call()
    half = Tensor(np.arange(8, dtype=np.float16).reshape(2, 4))
    assert half.rms_norm(4).dtype is dtypes.float16
    assert half.layer_norm(4).dtype is dtypes.float16


def test_review_fixes_pad_dropout_attention_and_batch_norm():
    t = Tensor(np.array([5.0]))
    p = t.pad(((2, 2),), mode="edge")  # (one piece per axis: still a new tensor)
    t[0] = 100.0
    np.testing.assert_array_equal(p.numpy(), [5.0] * 5)
    q = Tensor(np.array([5.0])).pad(((2, 2),), mode="reflect")
    q[0] = 1.0
    np.testing.assert_array_equal(q.numpy(), [1.0] + [5.0] * 4)
    with pytest.raises(ValueError, match="takes no value"):
        Tensor(np.arange(3.0)).pad(((1, 1),), 9, mode="reflect")
    with pytest.raises(TypeError, match="give a float tensor"):
        Tensor(np.arange(4)).dropout(0.5)
    qk = Tensor(np.ones((4, 6), np.float32))
    out = qk.scaled_dot_product_attention(Tensor(np.ones((6, 6), np.float32)), qk.T @ qk,
                                          attn_mask=[[0.0] * 6] * 4)
    assert out.dtype.np == np.float32
    with pytest.raises(TypeError, match="attn_mask must be bool or float"):
        qk.scaled_dot_product_attention(qk, qk, Tensor(np.zeros((4, 4), np.int64)))
    x = Tensor(np.random.default_rng(0).random((4, 3)).astype(np.float32))
    with pytest.raises(TypeError, match="updates its running_mean in place"):
        x.batch_norm(np.zeros(3, np.float32), Tensor(np.ones(3, np.float32)), training=True)
    with pytest.raises(TypeError, match="momentum must be a number"):
        x.batch_norm(training=True, momentum=None)


def test_attention_of_a_query_that_attends_to_nothing_is_zero_with_a_zero_gradient():
    """(PyTorch's: zeros, and no nan reaches the gradients of the other rows or the keys.)"""
    rng = np.random.default_rng(0)
    q, k, v = rng.standard_normal((3, 4)), rng.standard_normal((2, 4)), rng.standard_normal((2, 4))
    mask = np.array([[True, False], [False, False], [True, True]])
    tq, tk, tv = (Tensor(a, requires_grad=True) for a in (q, k, v))
    out = tq.scaled_dot_product_attention(tk, tv, attn_mask=Tensor(mask))
    out.sum().backward()
    np.testing.assert_allclose(out.numpy(), ref_attention(q, k, v, mask), rtol=1e-12)
    np.testing.assert_array_equal(out.numpy()[1], 0)
    np.testing.assert_array_equal(tq.grad.numpy()[1], 0)
    live = [0, 2]  # the same rows alone: the same gradients for them and for the keys
    lq, lk, lv = (Tensor(a, requires_grad=True) for a in (q[live], k, v))
    lq.scaled_dot_product_attention(lk, lv, attn_mask=Tensor(mask[live])).sum().backward()
    for got, want in ((tq.grad.numpy()[live], lq.grad), (tk.grad, lk.grad), (tv.grad, lv.grad)):
        np.testing.assert_allclose(np.asarray(got if isinstance(got, np.ndarray) else got.numpy()),
                                   want.numpy(), rtol=1e-12, atol=1e-12)


def test_16_bit_attention_computes_its_scores_and_softmax_in_float32():
    rng = np.random.default_rng(0)
    q, k = ((rng.standard_normal((64, 64)) * 3).astype(np.float16) for _ in range(2))
    v = rng.standard_normal((64, 64)).astype(np.float16)
    got = Tensor(q).scaled_dot_product_attention(Tensor(k), Tensor(v))
    assert got.dtype is dtypes.float16
    want = ref_attention(q.astype(np.float64), k.astype(np.float64), v.astype(np.float64))
    assert np.abs(got.numpy() - want).max() < 2e-3  # (in float16 throughout: ~1e-2)
    mixed = Tensor(q).scaled_dot_product_attention(Tensor(k), Tensor(v.astype(np.float32)))
    assert mixed.dtype is dtypes.float32


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64])
def test_rms_norm_default_eps_is_float32s_below_float64(dt):
    """PyTorch's default: float32's epsilon for 16- and 32-bit inputs (a 16-bit input's own
    would swamp small values), float64's for float64."""
    x = np.full((2, 4), 0.01, dt)
    x[1] = [1e-3, -2e-3, 3e-3, 4e-3]
    eps = np.finfo(np.float64 if dt == np.float64 else np.float32).eps
    xf = x.astype(np.float64)
    want = xf / np.sqrt((xf * xf).mean(-1, keepdims=True) + eps)
    got = Tensor(x).rms_norm(4)
    assert got.dtype.np == dt
    np.testing.assert_allclose(got.numpy().astype(np.float64), want,
                               rtol=2e-3 if dt == np.float16 else 1e-6)
    bf = Tensor(x.astype(np.float32)).cast(dtypes.bfloat16).rms_norm(4).cast(dtypes.float32)
    np.testing.assert_allclose(bf.numpy(), want, rtol=2e-2)
