"""Greedy decoding with a key/value cache, captured once with tolk.jit and replayed per token.

A tiny GPT-style model generates 32 tokens. Each step writes this token's keys and values
into per-layer caches at position `pos` (a bound Variable) with an in-place assign, then
attends over ``cache[:pos + 1]`` (a symbolic slice: one compiled schedule serves every
position). The jitted run must equal the eager run token for token.

    python examples/decode.py
"""

from __future__ import annotations

import math
import sys
import time

import numpy as np

import tolk
from tolk import Tensor, Variable
from tolk.models import GPTConfig, as_tensors, gpt_forward_numpy, init_gpt_weights

CFG = GPTConfig(layers=2, dim=64, heads=4, seq=48, vocab=128)
STEPS = 32


def layernorm(x: Tensor, w: dict[str, Tensor], name: str) -> Tensor:
    return x.layernorm(-1) * w[name + ".weight"] + w[name + ".bias"]


def new_caches(cfg: GPTConfig) -> list[Tensor]:
    hd = cfg.dim // cfg.heads
    return [Tensor(np.zeros((cfg.seq, cfg.heads, hd), np.float32)).contiguous().realize()
            for _ in range(2 * cfg.layers)]


def step(w: dict[str, Tensor], caches: list[Tensor], token: Tensor, pos) -> Tensor:
    """Logits of the next token after `token` at position `pos`; updates the caches."""
    heads, hd = CFG.heads, CFG.dim // CFG.heads
    x = token.embedding(w["wte"]).reshape(CFG.dim) + w["wpe"][pos]
    for i in range(CFG.layers):
        p = f"h.{i}."
        qkv = layernorm(x, w, p + "ln_1").linear(w[p + "attn.c_attn.weight"],
                                                  w[p + "attn.c_attn.bias"])
        q, k, v = (qkv[j * CFG.dim:(j + 1) * CFG.dim].reshape(heads, hd) for j in range(3))
        kc, vc = caches[2 * i], caches[2 * i + 1]
        kc[pos] = k
        vc[pos] = v
        keys, vals = kc[: pos + 1], vc[: pos + 1]  # (pos+1, heads, hd), symbolic length
        scores = (q.reshape(heads, 1, hd) @ keys.permute(1, 2, 0)) * (1 / math.sqrt(hd))
        att = (scores.softmax(-1) @ vals.permute(1, 0, 2)).reshape(CFG.dim)
        x = x + att.linear(w[p + "attn.c_proj.weight"], w[p + "attn.c_proj.bias"])
        h = layernorm(x, w, p + "ln_2").linear(w[p + "mlp.c_fc.weight"], w[p + "mlp.c_fc.bias"])
        x = x + h.gelu().linear(w[p + "mlp.c_proj.weight"], w[p + "mlp.c_proj.bias"])
    return layernorm(x, w, "ln_f") @ w["wte"].T


def generate(fn, w: dict[str, Tensor], first: int) -> tuple[list[int], float]:
    caches = new_caches(CFG)
    pos = Variable("pos", 0, CFG.seq - 1)
    tokens = [first]
    start = time.perf_counter()
    for p in range(STEPS):
        logits = fn(w, caches, Tensor(np.array([tokens[-1]], np.int32)), pos.bind(p))
        tokens.append(int(logits.argmax().item()))
    return tokens, time.perf_counter() - start


def numpy_greedy(weights: dict[str, np.ndarray], tokens: list[int]) -> list[int]:
    """What the full causal forward in numpy predicts after each prefix of `tokens`."""
    seq = np.array([tokens[:-1]], np.int32)
    logits = gpt_forward_numpy(weights, seq, CFG)
    return [tokens[0], *[int(i) for i in logits[0].argmax(-1)]]


def main() -> int:
    weights = init_gpt_weights(CFG, seed=1)
    for name in weights:  # a livelier random model, so that greedy tokens vary
        if "mlp" in name or "attn" in name:
            weights[name] *= 30
    w = as_tensors(weights)
    eager, t_eager = generate(step, w, first=3)
    jitted, t_jit = generate(tolk.jit(step), w, first=3)
    print("eager :", eager)
    print("jitted:", jitted)
    print(f"{STEPS} tokens: eager {t_eager:.2f} s, jit {t_jit:.2f} s")
    if eager != jitted:
        print("MISMATCH between eager and jitted decoding", file=sys.stderr)
        return 1
    if numpy_greedy(weights, eager) != eager:
        print("MISMATCH between the cached decoding and a full numpy forward", file=sys.stderr)
        return 1
    print("jitted decoding equals eager decoding token for token, and the numpy forward")
    return 0


if __name__ == "__main__":
    sys.exit(main())
