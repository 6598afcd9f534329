"""A ResNet-18-shaped image classifier, written twice with the same math: tolk and numpy.

conv7x7/2 → batchnorm → relu → maxpool3x3/2 → 4 stages of 2 basic blocks (widths w, 2w, 4w,
8w; stages 2-4 halve the size in their first block, whose shortcut is a 1x1/2 conv +
batchnorm) → global average pool → fc. Batchnorm is the inference form, folded into a
per-channel ``scale`` and ``shift``. Convolutions have no bias (the batchnorm shift is it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tolk.tensor import Tensor

BN_EPS = 1e-5
STAGES = 4
BLOCKS_PER_STAGE = 2


@dataclass(frozen=True)
class ResNetConfig:
    """Input ``(batch, 3, size, size)``; `width` is the channel count of the stem and stage 1."""

    batch: int = 1
    size: int = 224
    width: int = 64
    classes: int = 1000


RESNET_TINY = ResNetConfig(batch=2, size=32, width=8, classes=10)


def _blocks(cfg: ResNetConfig):
    """(weight prefix, in channels, out channels, stride) of every basic block, in order."""
    cin = cfg.width
    for s in range(STAGES):
        cout = cfg.width * 2**s
        for b in range(BLOCKS_PER_STAGE):
            stride = 2 if s > 0 and b == 0 else 1
            yield f"layer{s + 1}.{b}.", cin, cout, stride
            cin = cout


def init_resnet_weights(cfg: ResNetConfig, seed: int = 0) -> dict[str, np.ndarray]:
    """Deterministic float32 weights: He-normal convs, batchnorm folded from random statistics."""
    rng = np.random.default_rng(seed)
    w: dict[str, np.ndarray] = {}

    def conv(name: str, cout: int, cin: int, k: int) -> None:
        std = np.sqrt(2 / (cin * k * k))
        w[name] = (std * rng.standard_normal((cout, cin, k, k))).astype(np.float32)

    def bn(name: str, c: int, gamma: float = 1.0) -> None:
        g = gamma * (1 + 0.1 * rng.standard_normal(c))
        beta, mean = 0.1 * rng.standard_normal(c), 0.1 * rng.standard_normal(c)
        var = rng.uniform(0.5, 1.5, c)
        scale = g / np.sqrt(var + BN_EPS)
        w[name + ".scale"] = scale.astype(np.float32)
        w[name + ".shift"] = (beta - mean * scale).astype(np.float32)

    conv("conv1.weight", cfg.width, 3, 7)
    bn("bn1", cfg.width)
    for p, cin, cout, stride in _blocks(cfg):
        conv(p + "conv1.weight", cout, cin, 3)
        bn(p + "bn1", cout)
        conv(p + "conv2.weight", cout, cout, 3)
        bn(p + "bn2", cout, gamma=0.5)  # a damped residual branch keeps activations O(1)
        if stride != 1 or cin != cout:
            conv(p + "downsample.conv.weight", cout, cin, 1)
            bn(p + "downsample.bn", cout)
    feat = cfg.width * 2 ** (STAGES - 1)
    bound = 1 / np.sqrt(feat)
    w["fc.weight"] = rng.uniform(-bound, bound, (feat, cfg.classes)).astype(np.float32)
    w["fc.bias"] = rng.uniform(-bound, bound, cfg.classes).astype(np.float32)
    return w


def make_resnet_input(cfg: ResNetConfig, seed: int = 0) -> np.ndarray:
    """A standard-normal float32 image batch of shape (batch, 3, size, size)."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal((cfg.batch, 3, cfg.size, cfg.size)).astype(np.float32)


# -- tolk ---------------------------------------------------------------------------------------


def _bn_tolk(x: Tensor, w: dict[str, Tensor], name: str) -> Tensor:
    c = x.shape[1]
    return x * w[name + ".scale"].reshape(1, c, 1, 1) + w[name + ".shift"].reshape(1, c, 1, 1)


def basic_block_tolk(x: Tensor, w: dict[str, Tensor], p: str, stride: int) -> Tensor:
    """relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x))."""
    out = _bn_tolk(x.conv2d(w[p + "conv1.weight"], stride=stride, padding=1), w, p + "bn1").relu()
    out = _bn_tolk(out.conv2d(w[p + "conv2.weight"], padding=1), w, p + "bn2")
    if p + "downsample.conv.weight" in w:
        x = x.conv2d(w[p + "downsample.conv.weight"], stride=stride)
        x = _bn_tolk(x, w, p + "downsample.bn")
    return (out + x).relu()


def resnet_forward_tolk(w: dict[str, Tensor], x: Tensor, cfg: ResNetConfig) -> Tensor:
    """Logits (batch, classes) for images `x` (batch, 3, H, W); lazy."""
    x = _bn_tolk(x.conv2d(w["conv1.weight"], stride=2, padding=3), w, "bn1").relu()
    x = x.max_pool2d(kernel_size=3, stride=2, padding=1)
    for p, _, _, stride in _blocks(cfg):
        x = basic_block_tolk(x, w, p, stride)
    return x.mean((2, 3)).linear(w["fc.weight"], w["fc.bias"])


# -- numpy --------------------------------------------------------------------------------------


def conv2d_numpy(x: np.ndarray, weight: np.ndarray, stride: int = 1,
                 padding: int = 0) -> np.ndarray:
    """NCHW cross-correlation by im2col: strided sliding windows contracted with one tensordot."""
    kh, kw = weight.shape[2:]
    x = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    win = np.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(2, 3))
    win = win[:, :, ::stride, ::stride]  # (N, Cin, OH, OW, KH, KW)
    out = np.tensordot(win, weight, axes=((1, 4, 5), (1, 2, 3)))  # (N, OH, OW, Cout)
    return out.transpose(0, 3, 1, 2)


def max_pool2d_numpy(x: np.ndarray, k: int, stride: int, padding: int) -> np.ndarray:
    pads = ((0, 0), (0, 0), (padding, padding), (padding, padding))
    x = np.pad(x, pads, constant_values=-np.inf)
    win = np.lib.stride_tricks.sliding_window_view(x, (k, k), axis=(2, 3))
    return win[:, :, ::stride, ::stride].max((-2, -1))


def _bn_numpy(x: np.ndarray, w: dict[str, np.ndarray], name: str) -> np.ndarray:
    c = x.shape[1]
    return x * w[name + ".scale"].reshape(1, c, 1, 1) + w[name + ".shift"].reshape(1, c, 1, 1)


def basic_block_numpy(x: np.ndarray, w: dict[str, np.ndarray], p: str, stride: int) -> np.ndarray:
    """numpy twin of `basic_block_tolk`."""
    out = np.maximum(_bn_numpy(conv2d_numpy(x, w[p + "conv1.weight"], stride, 1), w, p + "bn1"), 0)
    out = _bn_numpy(conv2d_numpy(out, w[p + "conv2.weight"], 1, 1), w, p + "bn2")
    if p + "downsample.conv.weight" in w:
        x = conv2d_numpy(x, w[p + "downsample.conv.weight"], stride)
        x = _bn_numpy(x, w, p + "downsample.bn")
    return np.maximum(out + x, 0)


def resnet_forward_numpy(w: dict[str, np.ndarray], x: np.ndarray, cfg: ResNetConfig) -> np.ndarray:
    """numpy twin of `resnet_forward_tolk`: logits (batch, classes), float32."""
    x = np.maximum(_bn_numpy(conv2d_numpy(x, w["conv1.weight"], 2, 3), w, "bn1"), 0)
    x = max_pool2d_numpy(x, 3, 2, 1)
    for p, _, _, stride in _blocks(cfg):
        x = basic_block_numpy(x, w, p, stride)
    return x.mean((2, 3)) @ w["fc.weight"] + w["fc.bias"]
