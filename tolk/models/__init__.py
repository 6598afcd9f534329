"""Reference models, each written twice with identical math: with tolk Tensors and in numpy.

Every model has ``init_*_weights(cfg, seed) -> dict[str, np.ndarray]`` (deterministic
float32), a tolk forward taking those weights as Tensors (`as_tensors`) and returning a lazy
Tensor, and a numpy forward that is its oracle.
"""

from __future__ import annotations

import numpy as np

from tolk.models.gpt import (
    GPT2_SMALL,
    GPTConfig,
    gpt_forward_numpy,
    gpt_forward_tolk,
    init_gpt_weights,
    make_tokens,
)
from tolk.models.mlp import (
    MLPConfig,
    init_mlp_weights,
    make_mlp_input,
    mlp_forward_numpy,
    mlp_forward_tolk,
)
from tolk.models.resnet import (
    RESNET_TINY,
    ResNetConfig,
    init_resnet_weights,
    make_resnet_input,
    resnet_forward_numpy,
    resnet_forward_tolk,
)
from tolk.tensor import Tensor


def as_tensors(weights: dict[str, np.ndarray], device: str | None = None) -> dict[str, Tensor]:
    """The same weights wrapped in tolk Tensors (one buffer each), in the same order."""
    return {k: Tensor(v, device=device) for k, v in weights.items()}


__all__ = [
    "GPT2_SMALL", "GPTConfig", "MLPConfig", "RESNET_TINY", "ResNetConfig", "as_tensors",
    "gpt_forward_numpy", "gpt_forward_tolk", "init_gpt_weights", "init_mlp_weights",
    "init_resnet_weights", "make_mlp_input", "make_resnet_input", "make_tokens",
    "mlp_forward_numpy", "mlp_forward_tolk", "resnet_forward_numpy", "resnet_forward_tolk",
]
