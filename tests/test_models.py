"""tolk.models: each model's tolk forward against its numpy twin (the oracle), on tiny sizes."""

from __future__ import annotations

import numpy as np
import pytest

from tolk.models import (
    GPTConfig,
    MLPConfig,
    RESNET_TINY,
    ResNetConfig,
    as_tensors,
    gpt_forward_numpy,
    gpt_forward_tolk,
    init_gpt_weights,
    init_mlp_weights,
    init_resnet_weights,
    make_mlp_input,
    make_resnet_input,
    make_tokens,
    mlp_forward_numpy,
    mlp_forward_tolk,
    resnet_forward_numpy,
    resnet_forward_tolk,
)
from tolk.models.gpt import block_numpy, block_tolk
from tolk.models.resnet import conv2d_numpy, max_pool2d_numpy
from tolk.tensor import Tensor

TOL = dict(rtol=1e-4, atol=1e-4)
TINY_GPT = GPTConfig(layers=2, dim=32, heads=2, seq=8, vocab=64, batch=2)


def test_two_layer_mlp_matches_numpy():
    cfg = MLPConfig(batch=8, inp=64, hidden=32, out=10)
    w, x = init_mlp_weights(cfg), make_mlp_input(cfg)
    got = mlp_forward_tolk(as_tensors(w), Tensor(x), cfg).numpy()
    assert got.shape == (cfg.batch, cfg.out) and got.dtype == np.float32
    np.testing.assert_allclose(got, mlp_forward_numpy(w, x, cfg), **TOL)


def test_tiny_transformer_block_matches_numpy():
    cfg = GPTConfig(layers=1, dim=32, heads=4, seq=8, vocab=16, batch=2)
    w = init_gpt_weights(cfg)
    x = np.random.default_rng(1).standard_normal((cfg.batch, cfg.seq, cfg.dim)).astype(np.float32)
    got = block_tolk(Tensor(x), as_tensors(w), 0, cfg.heads).numpy()
    np.testing.assert_allclose(got, block_numpy(x, w, 0, cfg.heads), **TOL)


def test_tiny_gpt_logits_match_numpy():
    w, tok = init_gpt_weights(TINY_GPT), make_tokens(TINY_GPT)
    got = gpt_forward_tolk(as_tensors(w), Tensor(tok), TINY_GPT).numpy()
    assert got.shape == (TINY_GPT.batch, TINY_GPT.seq, TINY_GPT.vocab)
    np.testing.assert_allclose(got, gpt_forward_numpy(w, tok, TINY_GPT), **TOL)


def test_gpt_is_causal_later_tokens_do_not_change_earlier_logits():
    w, tok = as_tensors(init_gpt_weights(TINY_GPT)), make_tokens(TINY_GPT)
    changed = tok.copy()
    changed[:, -1] = (changed[:, -1] + 1) % TINY_GPT.vocab
    a = gpt_forward_tolk(w, Tensor(tok), TINY_GPT).numpy()
    b = gpt_forward_tolk(w, Tensor(changed), TINY_GPT).numpy()
    np.testing.assert_allclose(a[:, :-1], b[:, :-1], rtol=1e-6, atol=1e-7)
    assert not np.allclose(a[:, -1], b[:, -1])


def test_gpt_runs_on_a_prefix_shorter_than_the_context():
    w, tok = init_gpt_weights(TINY_GPT), make_tokens(TINY_GPT)[:, :5]
    got = gpt_forward_tolk(as_tensors(w), Tensor(tok), TINY_GPT).numpy()
    np.testing.assert_allclose(got, gpt_forward_numpy(w, tok, TINY_GPT), **TOL)


def test_tiny_resnet_matches_numpy():
    w, x = init_resnet_weights(RESNET_TINY), make_resnet_input(RESNET_TINY)
    got = resnet_forward_tolk(as_tensors(w), Tensor(x), RESNET_TINY).numpy()
    assert got.shape == (RESNET_TINY.batch, RESNET_TINY.classes)
    np.testing.assert_allclose(got, resnet_forward_numpy(w, x, RESNET_TINY), **TOL)


def test_weights_are_deterministic_float32_and_seeded():
    a, b = init_resnet_weights(RESNET_TINY, seed=3), init_resnet_weights(RESNET_TINY, seed=3)
    assert list(a) == list(b)
    assert all(v.dtype == np.float32 and np.array_equal(v, b[k]) for k, v in a.items())
    other = init_resnet_weights(RESNET_TINY, seed=4)
    assert not np.array_equal(a["conv1.weight"], other["conv1.weight"])
    assert make_tokens(TINY_GPT).dtype == np.int32


def test_resnet_has_resnet18_layer_counts():
    w = init_resnet_weights(ResNetConfig(size=32, width=8, classes=10))
    convs = [k for k in w if k.endswith("conv1.weight") or k.endswith("conv2.weight")]
    assert len(convs) == 1 + 16  # stem + 8 blocks x 2 (plus the fc: 18 layers)
    assert sum(k.endswith("downsample.conv.weight") for k in w) == 3
    assert w["fc.weight"].shape == (64, 10)


# -- the numpy oracles themselves, against naive loops ------------------------------------------


def _conv2d_naive(x, weight, stride, padding):
    n, _, h, wd = x.shape
    cout, _, kh, kw = weight.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding))).astype(np.float64)
    oh, ow = (h + 2 * padding - kh) // stride + 1, (wd + 2 * padding - kw) // stride + 1
    out = np.zeros((n, cout, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, i * stride : i * stride + kh, j * stride : j * stride + kw]
            out[:, :, i, j] = np.tensordot(patch, weight, axes=((1, 2, 3), (1, 2, 3)))
    return out


@pytest.mark.parametrize("k,stride,padding", [(7, 2, 3), (3, 1, 1), (3, 2, 1), (1, 2, 0)])
def test_numpy_reference_conv_matches_naive_loops(k, stride, padding):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 11, 11)).astype(np.float32)
    weight = rng.standard_normal((4, 3, k, k)).astype(np.float32)
    got = conv2d_numpy(x, weight, stride, padding)
    np.testing.assert_allclose(got, _conv2d_naive(x, weight, stride, padding), rtol=1e-5, atol=1e-5)


def test_numpy_reference_max_pool_matches_naive_loops():
    x = np.random.default_rng(0).standard_normal((1, 2, 9, 9)).astype(np.float32)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    want = np.array([[[[xp[0, c, 2 * i : 2 * i + 3, 2 * j : 2 * j + 3].max() for j in range(5)]
                       for i in range(5)] for c in range(2)]])
    np.testing.assert_array_equal(max_pool2d_numpy(x, 3, 2, 1), want)
