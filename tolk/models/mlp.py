"""A 2-layer MLP (linear, relu, linear), written twice with the same math: tolk and numpy."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tolk.tensor import Tensor


@dataclass(frozen=True)
class MLPConfig:
    batch: int = 64
    inp: int = 784
    hidden: int = 512
    out: int = 10


def init_mlp_weights(cfg: MLPConfig, seed: int = 0) -> dict[str, np.ndarray]:
    """Deterministic float32 weights in ``(in, out)`` layout, uniform in ±1/sqrt(fan_in)."""
    rng = np.random.default_rng(seed)

    def uniform(fan_in: int, *shape: int) -> np.ndarray:
        bound = 1 / np.sqrt(fan_in)
        return rng.uniform(-bound, bound, size=shape).astype(np.float32)

    return {
        "fc1.weight": uniform(cfg.inp, cfg.inp, cfg.hidden),
        "fc1.bias": uniform(cfg.inp, cfg.hidden),
        "fc2.weight": uniform(cfg.hidden, cfg.hidden, cfg.out),
        "fc2.bias": uniform(cfg.hidden, cfg.out),
    }


def make_mlp_input(cfg: MLPConfig, seed: int = 0) -> np.ndarray:
    """A standard-normal float32 batch of shape (batch, inp)."""
    return np.random.default_rng(seed).standard_normal((cfg.batch, cfg.inp)).astype(np.float32)


def mlp_forward_tolk(w: dict[str, Tensor], x: Tensor, cfg: MLPConfig) -> Tensor:
    """Logits (batch, out); lazy."""
    h = x.linear(w["fc1.weight"], w["fc1.bias"]).relu()
    return h.linear(w["fc2.weight"], w["fc2.bias"])


def mlp_forward_numpy(w: dict[str, np.ndarray], x: np.ndarray, cfg: MLPConfig) -> np.ndarray:
    """numpy twin of `mlp_forward_tolk`."""
    h = np.maximum(x @ w["fc1.weight"] + w["fc1.bias"], 0)
    return h @ w["fc2.weight"] + w["fc2.bias"]
