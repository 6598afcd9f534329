"""Tensor programs for bench/vs_tinygrad.py, written once against the API tolk and tinygrad share.

Each builder takes the Tensor class `T` (tolk's or tinygrad's) and a size, builds the lazy
graph and returns the tensor to schedule. Nothing here runs or allocates: inputs and weights
are `T.empty` (no data until run; tinygrad's NULL device never has any).

Choices made so both libraries run identical code:
- embeddings are a one-hot matmul, ``(tok[..., None] == arange(vocab)).float() @ wte``:
  tinygrad has no ``Tensor.embedding`` of the same form; both have ==, arange and matmul.
- layernorm with scale/bias is ``x.layernorm() * w + b`` (both `layernorm`s have no affine).
- batch norm is folded into a per-channel scale and shift: ``x * s + t``.
- the causal mask compares two aranges and `where`s in -inf (no `triu` in tolk).
"""

from __future__ import annotations

import math

SMALL = (64, 64)  # tensor shape of the chains


def elementwise_chain(T, n):
    x = T.empty(*SMALL)
    for i in range(n):
        x = x + 1.5 if i % 2 == 0 else x * 0.5
    return x


def diamond(T, n):
    x = T.empty(*SMALL)
    for _ in range(n):
        a, b = x + 1, x * 2
        x = a + b
    return x


def softmax_chain(T, n):
    x = T.empty(*SMALL)
    for _ in range(n):
        x = x.softmax(-1)
    return x


def layernorm_chain(T, n):
    x = T.empty(*SMALL)
    for _ in range(n):
        x = x.layernorm()
    return x


def matmul_chain(T, n):
    x = T.empty(16, 16)
    for _ in range(n):
        x = x @ T.empty(16, 16)
    return x


def contiguous_chain(T, n):
    x = T.empty(*SMALL)
    for _ in range(n):
        x = (x + 1).contiguous()
    return x


def assign_chain(T, n):
    x = T.empty(*SMALL)  # a buffer that already exists: assigns write it in place
    for _ in range(n):
        x.assign(x + 1)
    return x


def concat(T, n):
    xs = [T.empty(4, 8) for _ in range(n)]
    return xs[0].cat(*xs[1:], dim=0)


CHAINS = {
    "elementwise": elementwise_chain, "diamond": diamond, "softmax": softmax_chain,
    "layernorm": layernorm_chain, "matmul": matmul_chain, "contiguous": contiguous_chain,
    "assign": assign_chain, "concat": concat,
}


# ---------------------------------------------------------------------------------------------
# GPT-2 small forward: 12 layers, dim 768, 12 heads, seq 128, vocab 50257, batch 1


def gpt2(T, layers=12, dim=768, heads=12, seq=128, vocab=50257, batch=1):
    hd = dim // heads
    tok = T.empty(batch, seq, dtype="int32")
    wte, wpe = T.empty(vocab, dim), T.empty(1024, dim)
    x = (tok.unsqueeze(-1) == T.arange(vocab)).float() @ wte + wpe[:seq]
    pos = T.arange(seq)
    future = pos.reshape(seq, 1) < pos.reshape(1, seq)  # True above the diagonal
    for _ in range(layers):
        h = x.layernorm() * T.empty(dim) + T.empty(dim)
        qkv = h @ T.empty(dim, 3 * dim) + T.empty(3 * dim)
        q, k, v = (qkv[:, :, i * dim:(i + 1) * dim].reshape(batch, seq, heads, hd).transpose(1, 2)
                   for i in range(3))
        att = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(hd))
        att = future.where(-math.inf, att).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(batch, seq, dim)
        x = x + (y @ T.empty(dim, dim) + T.empty(dim))
        h = x.layernorm() * T.empty(dim) + T.empty(dim)
        h = (h @ T.empty(dim, 4 * dim) + T.empty(4 * dim)).gelu()
        x = x + (h @ T.empty(4 * dim, dim) + T.empty(dim))
    x = x.layernorm() * T.empty(dim) + T.empty(dim)
    return x @ wte.transpose(0, 1)  # tied logits


# ---------------------------------------------------------------------------------------------
# ResNet-18 forward, 1x3x224x224, batch norm folded into scale and shift


def _conv_bn(T, x, cin, cout, k, stride, relu=True):
    x = x.conv2d(T.empty(cout, cin, k, k), stride=stride, padding=k // 2)
    x = x * T.empty(1, cout, 1, 1) + T.empty(1, cout, 1, 1)
    return x.relu() if relu else x


def _basic_block(T, x, cin, cout, stride):
    out = _conv_bn(T, x, cin, cout, 3, stride)
    out = _conv_bn(T, out, cout, cout, 3, 1, relu=False)
    short = _conv_bn(T, x, cin, cout, 1, stride, relu=False) if stride != 1 or cin != cout else x
    return (out + short).relu()


def resnet18(T, batch=1):
    x = _conv_bn(T, T.empty(batch, 3, 224, 224), 3, 64, 7, 2)
    x = x.max_pool2d(kernel_size=3, stride=2, padding=1)
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        x = _basic_block(T, x, cin, cout, stride)
        x = _basic_block(T, x, cout, cout, 1)
        cin = cout
    x = x.mean((2, 3))
    return x @ T.empty(512, 1000) + T.empty(1000)


MODELS = {"gpt2-small": gpt2, "resnet18": resnet18}
