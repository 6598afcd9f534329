"""conv1d, transposed convolutions, 1-d pools and "same"/"valid" padding against direct numpy
loops (PyTorch's definitions), on random sizes, strides, dilations, paddings and groups
(hypothesis; TOLK_THOROUGH=1 for many more examples)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tensor_strategies import FEW, cases
from tolk.errors import ShapeError
from tolk.tensor import Tensor


def ref_conv1d(x, w, b, stride, dilation, lo, hi, groups):
    """Cross-correlation over the last axis, from the padded input, one kernel tap at a time."""
    xp = np.pad(x, ((0, 0), (0, 0), (lo, hi)))
    cout, cin_g, k = w.shape
    span = dilation * (k - 1) + 1
    length = (xp.shape[2] - span) // stride + 1
    out = np.zeros((x.shape[0], cout, length))
    for co in range(cout):
        g = co // (cout // groups)
        for ci in range(cin_g):
            for t in range(k):
                start = t * dilation
                taps = xp[:, g * cin_g + ci, start:start + (length - 1) * stride + 1:stride]
                out[:, co] += taps * w[co, ci, t]
    return out if b is None else out + b[None, :, None]


def ref_conv_transpose2d(x, w, b, stride, dilation, pad, extra, groups):
    """Each input pixel adds its weight window into the output (the scatter form)."""
    n, cin, h, wd = x.shape
    _, cout_g, kh, kw = w.shape
    (sh, sw), (dh, dw), (ph, pw), (eh, ew) = stride, dilation, pad, extra
    oh = (h - 1) * sh - 2 * ph + dh * (kh - 1) + eh + 1
    ow = (wd - 1) * sw - 2 * pw + dw * (kw - 1) + ew + 1
    full = np.zeros((n, cout_g * groups, max(oh + ph, (h - 1) * sh + dh * (kh - 1) + 1),
                     max(ow + pw, (wd - 1) * sw + dw * (kw - 1) + 1)))
    cin_g = cin // groups
    for ci in range(cin):
        g = ci // cin_g
        for co in range(cout_g):
            for i in range(kh):
                for j in range(kw):
                    full[:, g * cout_g + co, i * dh:i * dh + (h - 1) * sh + 1:sh,
                         j * dw:j * dw + (wd - 1) * sw + 1:sw] += x[:, ci] * w[ci, co, i, j]
    out = full[:, :, ph:ph + oh, pw:pw + ow]
    return out if b is None else out + b[None, :, None, None]


@st.composite
def transposed_case(draw):
    groups = draw(st.integers(1, 3))
    cin, cout_g = groups * draw(st.integers(1, 2)), draw(st.integers(1, 3))
    k = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    stride = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    size = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    extra = tuple(draw(st.integers(0, max(s, d) - 1)) for s, d in zip(stride, dilation))
    pad = tuple(draw(st.integers(0, ((sz - 1) * s + d * (kk - 1)) // 2))
                for sz, s, d, kk in zip(size, stride, dilation, k))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    x = rng.standard_normal((draw(st.integers(0, 2)), cin) + size)
    w = rng.standard_normal((cin, cout_g) + k)
    b = rng.standard_normal(cout_g * groups) if draw(st.booleans()) else None
    return x, w, b, stride, dilation, pad, extra, groups


@cases(FEW * 3)
@given(transposed_case())
def test_conv_transpose2d_matches_the_scatter_definition(case):
    x, w, b, stride, dilation, pad, extra, groups = case
    got = Tensor(x).conv_transpose2d(Tensor(w), None if b is None else Tensor(b), groups,
                                     stride, dilation, pad, extra)
    want = ref_conv_transpose2d(x, w, b, stride, dilation, pad, extra, groups)
    assert got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-10)


@cases(FEW * 3)
@given(transposed_case())
def test_conv_transpose1d_is_the_2d_one_over_a_height_of_one(case):
    x, w, b, stride, dilation, pad, extra, groups = case
    x, w = x[:, :, 0], w[:, :, 0]
    got = Tensor(x).conv_transpose1d(Tensor(w), None if b is None else Tensor(b), groups,
                                     stride[1], dilation[1], pad[1], extra[1])
    want = ref_conv_transpose2d(x[:, :, None], w[:, :, None], b, (1, stride[1]),
                                (1, dilation[1]), (0, pad[1]), (0, extra[1]), groups)[:, :, 0]
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-10)


def test_conv_transpose2d_undoes_the_shape_of_a_strided_conv2d_and_is_its_gradient():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 2, 7, 6))
    w = rng.standard_normal((3, 2, 3, 3))
    y = Tensor(x).conv2d(Tensor(w), stride=2, padding=1)
    g = rng.standard_normal(y.shape)
    back = Tensor(g).conv_transpose2d(Tensor(w), stride=2, padding=1, output_padding=(0, 1))
    assert back.shape == x.shape
    # <conv2d(x), g> == <x, conv_transpose2d(g)>: the transpose of the same linear map
    np.testing.assert_allclose((y.numpy() * g).sum(), (x * back.numpy()).sum(), rtol=1e-10)


@cases(FEW * 3)
@given(st.data())
def test_conv1d_matches_a_direct_loop(data):
    groups = data.draw(st.integers(1, 3))
    cin, cout = groups * data.draw(st.integers(1, 2)), groups * data.draw(st.integers(1, 2))
    k, stride, dilation = (data.draw(st.integers(1, 4)), data.draw(st.integers(1, 3)),
                           data.draw(st.integers(1, 2)))
    length = data.draw(st.integers(dilation * (k - 1) + 1, 12))
    padding = data.draw(st.sampled_from(["int", "pair", "valid", "same"]) if stride == 1 else
                        st.sampled_from(["int", "pair", "valid"]))
    lo = hi = data.draw(st.integers(0, 2))
    if padding == "pair":
        hi = data.draw(st.integers(0, 2))
    arg = {"int": lo, "pair": (lo, hi), "valid": "valid", "same": "same"}[padding]
    if padding == "valid":
        lo = hi = 0
    elif padding == "same":
        lo, hi = dilation * (k - 1) // 2, dilation * (k - 1) - dilation * (k - 1) // 2
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    dt = data.draw(st.sampled_from([np.float32, np.float64]))
    x = rng.standard_normal((data.draw(st.integers(0, 2)), cin, length)).astype(dt)
    w = rng.standard_normal((cout, cin // groups, k)).astype(dt)
    b = rng.standard_normal(cout).astype(dt) if data.draw(st.booleans()) else None
    got = Tensor(x).conv1d(Tensor(w), None if b is None else Tensor(b), groups, stride,
                           dilation, arg)
    want = ref_conv1d(x.astype(np.float64), w, b, stride, dilation, lo, hi, groups)
    assert got.dtype.np == dt and got.shape == want.shape
    if padding == "same":
        assert got.shape[2] == length
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4 if dt == np.float32 else 1e-10,
                               atol=1e-4 if dt == np.float32 else 1e-10)


def test_conv2d_same_and_valid_padding():
    rng = np.random.default_rng(4)
    x = Tensor(rng.standard_normal((1, 2, 5, 6)))
    w = Tensor(rng.standard_normal((3, 2, 4, 3)))
    same = x.conv2d(w, padding="same", dilation=(1, 2))
    assert same.shape == (1, 3, 5, 6)  # (height pads 1 above and 2 below, width 2 and 2)
    np.testing.assert_allclose(same.numpy(), x.conv2d(w, padding=(2, 2, 1, 2), dilation=(1, 2))
                               .numpy(), rtol=1e-12)
    np.testing.assert_array_equal(x.conv2d(w, padding="valid").numpy(), x.conv2d(w).numpy())
    with pytest.raises(ValueError, match="'same' needs stride 1"):
        x.conv2d(w, padding="same", stride=2)
    with pytest.raises(ValueError, match="'valid' or 'same', got 'full'"):
        x.conv2d(w, padding="full")


@cases(FEW * 3)
@given(st.data())
def test_1d_pools_match_numpy_windows(data):
    k = data.draw(st.integers(1, 4))
    stride = data.draw(st.integers(1, 3))
    pad = data.draw(st.integers(0, k // 2))
    length = data.draw(st.integers(max(k - 2 * pad, 1), 10))
    x = np.random.default_rng(data.draw(st.integers(0, 2**16))).standard_normal((2, 3, length))
    count = (length + 2 * pad - k) // stride + 1
    windows = np.stack([np.pad(x, ((0, 0), (0, 0), (pad, pad)), constant_values=np.nan)
                        [:, :, i * stride:i * stride + k] for i in range(count)], 2)
    np.testing.assert_array_equal(Tensor(x).max_pool1d(k, stride, padding=pad).numpy(),
                                  np.nanmax(windows, -1))
    avg = np.nan_to_num(windows).sum(-1) / k  # (padding counts, as PyTorch's default)
    np.testing.assert_allclose(Tensor(x).avg_pool1d(k, stride, pad).numpy(), avg, rtol=1e-12)


def test_conv_arguments_are_checked():
    x1, w1 = Tensor.ones(1, 2, 5), Tensor.ones(2, 2, 3)
    x2, w2 = Tensor.ones(1, 2, 4, 4), Tensor.ones(2, 3, 3, 3)
    cases_ = [(lambda: x1.conv1d(w2), ShapeError, "3-D input and weight"),
              (lambda: x1.conv1d(w1, stride=(1, 2)), TypeError, "stride must be an int"),
              (lambda: x1.conv1d(w1, padding="same", stride=2), ValueError, "needs stride 1"),
              (lambda: x1.conv1d(np.ones((2, 2, 3))), TypeError, "conv1d takes Tensors"),
              (lambda: x2.conv_transpose2d(w1), ShapeError, "4-D input and weight"),
              (lambda: x2.conv_transpose2d(Tensor.ones(3, 3, 3, 3)), ShapeError,
               "input channels 2 must equal"),
              (lambda: x2.conv_transpose2d(w2, groups=0), TypeError, "groups must be an int"),
              (lambda: x2.conv_transpose2d(w2, stride=2, output_padding=2), ValueError,
               "smaller than the stride"),
              (lambda: x2.conv_transpose2d(w2, padding=-1), ValueError, "must be >= 0"),
              (lambda: x2.conv_transpose2d(w2, padding=(1, 2, 1, 1)), ValueError,
               "each side alike"),
              (lambda: x2.conv_transpose2d(w2, stride=0), ValueError, "stride and dilation"),
              (lambda: x1.max_pool1d(2.5), TypeError, "kernel_size must be an int")]
    for call, err, msg in cases_:
        with pytest.raises(err, match=msg):
            call()
    out = x2.conv_transpose2d(w2, stride=2, padding=1, output_padding=1)
    assert out.shape == (1, 3, 8, 8)


def test_conv_transpose_needs_static_nonempty_spatial_sizes():
    from tolk import Variable
    v = Variable("n", 1, 6)
    x = Tensor(np.ones((1, 2, 12), np.float32))[:, :, :v.bind(3) + 4]
    with pytest.raises(ShapeError, match="static size"):
        x.conv_transpose1d(Tensor(np.ones((2, 3, 3), np.float32)), None, 1, 2)
    with pytest.raises(ShapeError, match="at least 1"):
        Tensor(np.ones((1, 2, 0, 3))).conv_transpose2d(Tensor(np.ones((2, 1, 3, 3))), stride=2)
    empty_batch = Tensor(np.ones((0, 2, 3, 3))).conv_transpose2d(Tensor(np.ones((2, 1, 3, 3))),
                                                                 stride=2)
    assert empty_batch.shape == (0, 1, 7, 7)
