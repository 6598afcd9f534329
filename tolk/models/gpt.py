"""A GPT-2-style decoder, written twice with the same math: with tolk Tensors and in numpy.

Weights follow GPT-2's names and its ``Conv1D`` layout (``(in, out)``, so a linear layer is
``x @ w + b``); the logits reuse the token embedding (``x @ wte.T``). Both versions take the
same ``dict[str, np.ndarray]`` from `init_gpt_weights` (the tolk one wrapped in Tensors, see
`tolk.models.as_tensors`), so the numpy version is an oracle for the tolk one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tolk.tensor import Tensor

LN_EPS = 1e-5


@dataclass(frozen=True)
class GPTConfig:
    """Model and input sizes. Invariant: ``dim % heads == 0``."""

    layers: int = 4
    dim: int = 256
    heads: int = 4
    seq: int = 64
    vocab: int = 512
    batch: int = 1

    def __post_init__(self) -> None:
        if self.dim % self.heads:
            raise ValueError(f"dim {self.dim} is not divisible by heads {self.heads}")


GPT2_SMALL = GPTConfig(layers=12, dim=768, heads=12, seq=128, vocab=50257, batch=1)


def init_gpt_weights(cfg: GPTConfig, seed: int = 0) -> dict[str, np.ndarray]:
    """Deterministic float32 weights (normal, std 0.02; layernorm scales near 1, small biases)."""
    rng = np.random.default_rng(seed)
    d = cfg.dim

    def normal(*shape: int, std: float = 0.02, mean: float = 0.0) -> np.ndarray:
        return (mean + std * rng.standard_normal(shape)).astype(np.float32)

    w = {"wte": normal(cfg.vocab, d), "wpe": normal(cfg.seq, d, std=0.01)}
    for i in range(cfg.layers):
        p = f"h.{i}."
        for ln in ("ln_1", "ln_2"):
            w[p + ln + ".weight"] = normal(d, std=0.1, mean=1.0)
            w[p + ln + ".bias"] = normal(d)
        w[p + "attn.c_attn.weight"], w[p + "attn.c_attn.bias"] = normal(d, 3 * d), normal(3 * d)
        w[p + "attn.c_proj.weight"], w[p + "attn.c_proj.bias"] = normal(d, d), normal(d)
        w[p + "mlp.c_fc.weight"], w[p + "mlp.c_fc.bias"] = normal(d, 4 * d), normal(4 * d)
        w[p + "mlp.c_proj.weight"], w[p + "mlp.c_proj.bias"] = normal(4 * d, d), normal(d)
    w["ln_f.weight"], w["ln_f.bias"] = normal(d, std=0.1, mean=1.0), normal(d)
    return w


def make_tokens(cfg: GPTConfig, seed: int = 0) -> np.ndarray:
    """Random token ids, int32 of shape (batch, seq)."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, cfg.vocab, size=(cfg.batch, cfg.seq)).astype(np.int32)


# -- tolk ---------------------------------------------------------------------------------------


def _layernorm_tolk(x: Tensor, w: dict[str, Tensor], name: str) -> Tensor:
    return x.layernorm(-1, LN_EPS) * w[name + ".weight"] + w[name + ".bias"]


def _causal_mask_tolk(seq: int) -> Tensor:
    """(seq, seq) additive mask: -inf above the diagonal (a query never sees later keys), else 0."""
    rows = Tensor.arange(seq).reshape(seq, 1)
    cols = Tensor.arange(seq).reshape(1, seq)
    return (cols > rows).where(-math.inf, 0.0)


def attention_tolk(x: Tensor, w: dict[str, Tensor], p: str, heads: int) -> Tensor:
    """Causal multi-head self-attention of `x` (B, T, C) with the fused qkv weights under `p`."""
    b, t, c = x.shape
    hd = c // heads
    qkv = x.linear(w[p + "c_attn.weight"], w[p + "c_attn.bias"]).reshape(b, t, 3, heads, hd)
    q, k, v = (qkv[:, :, i].permute(0, 2, 1, 3) for i in range(3))  # (B, H, T, hd)
    scores = q @ k.transpose(-1, -2) * (1 / math.sqrt(hd)) + _causal_mask_tolk(t)
    out = (scores.softmax(-1) @ v).permute(0, 2, 1, 3).reshape(b, t, c)
    return out.linear(w[p + "c_proj.weight"], w[p + "c_proj.bias"])


def block_tolk(x: Tensor, w: dict[str, Tensor], i: int, heads: int) -> Tensor:
    """One pre-norm transformer block: attention and a 4x gelu MLP, each with a residual."""
    p = f"h.{i}."
    x = x + attention_tolk(_layernorm_tolk(x, w, p + "ln_1"), w, p + "attn.", heads)
    h = _layernorm_tolk(x, w, p + "ln_2").linear(w[p + "mlp.c_fc.weight"], w[p + "mlp.c_fc.bias"])
    return x + h.gelu().linear(w[p + "mlp.c_proj.weight"], w[p + "mlp.c_proj.bias"])


def gpt_forward_tolk(w: dict[str, Tensor], tokens: Tensor, cfg: GPTConfig) -> Tensor:
    """Logits (batch, T, vocab) for integer `tokens` (batch, T), T <= cfg.seq; lazy."""
    t = tokens.shape[1]
    x = tokens.embedding(w["wte"]) + w["wpe"][:t]
    for i in range(cfg.layers):
        x = block_tolk(x, w, i, cfg.heads)
    return _layernorm_tolk(x, w, "ln_f") @ w["wte"].T


# -- numpy --------------------------------------------------------------------------------------


def _layernorm_numpy(x: np.ndarray, w: dict[str, np.ndarray], name: str) -> np.ndarray:
    y = x - x.mean(-1, keepdims=True)
    y = y * (1 / np.sqrt((y * y).mean(-1, keepdims=True) + np.float32(LN_EPS)))
    return y * w[name + ".weight"] + w[name + ".bias"]


def _gelu_numpy(x: np.ndarray) -> np.ndarray:
    c = np.float32(math.sqrt(2 / math.pi))
    return np.float32(0.5) * x * (1 + np.tanh(c * (x + np.float32(0.044715) * x * x * x)))


def _softmax_numpy(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def attention_numpy(x: np.ndarray, w: dict[str, np.ndarray], p: str, heads: int) -> np.ndarray:
    """numpy twin of `attention_tolk`."""
    b, t, c = x.shape
    hd = c // heads
    qkv = (x @ w[p + "c_attn.weight"] + w[p + "c_attn.bias"]).reshape(b, t, 3, heads, hd)
    q, k, v = (qkv[:, :, i].transpose(0, 2, 1, 3) for i in range(3))
    mask = np.triu(np.full((t, t), -np.inf, dtype=np.float32), k=1)
    scores = q @ k.transpose(0, 1, 3, 2) * np.float32(1 / math.sqrt(hd)) + mask
    out = (_softmax_numpy(scores) @ v).transpose(0, 2, 1, 3).reshape(b, t, c)
    return out @ w[p + "c_proj.weight"] + w[p + "c_proj.bias"]


def block_numpy(x: np.ndarray, w: dict[str, np.ndarray], i: int, heads: int) -> np.ndarray:
    """numpy twin of `block_tolk`."""
    p = f"h.{i}."
    x = x + attention_numpy(_layernorm_numpy(x, w, p + "ln_1"), w, p + "attn.", heads)
    h = _layernorm_numpy(x, w, p + "ln_2") @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"]
    return x + (_gelu_numpy(h) @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"])


def gpt_forward_numpy(w: dict[str, np.ndarray], tokens: np.ndarray, cfg: GPTConfig) -> np.ndarray:
    """numpy twin of `gpt_forward_tolk`: logits (batch, T, vocab), float32."""
    t = tokens.shape[1]
    x = w["wte"][tokens] + w["wpe"][:t]
    for i in range(cfg.layers):
        x = block_numpy(x, w, i, cfg.heads)
    return _layernorm_numpy(x, w, "ln_f") @ w["wte"].T
