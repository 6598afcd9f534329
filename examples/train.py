"""Train a small classifier with tolk's gradients and Adam, and check what it learned.

Two interleaved spirals of 2-d points, one class each; a 2-64-64-2 MLP with tanh; full-batch
Adam on the cross entropy. The whole step (forward, gradients, the optimizer's assigns) is
captured once by `tolk.jit` and replayed; the first steps run both ways and must agree.
Prints the loss every 100 steps and the final accuracy; exits 0 when the accuracy is at
least 95%.

    python examples/train.py
"""
from __future__ import annotations

import sys
import time

import numpy as np

from tolk import Tensor, jit
from tolk.optim import Adam


def spirals(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    t = np.sqrt(rng.uniform(0, 1, n)) * 3 * np.pi
    labels = rng.integers(0, 2, n)
    sign = np.where(labels == 0, 1.0, -1.0)
    points = np.stack([sign * t * np.cos(t), sign * t * np.sin(t)], 1) / (3 * np.pi)
    return (points + rng.normal(0, 0.02, points.shape)).astype(np.float32), labels


def init(sizes: list[int], seed: int = 0) -> list[Tensor]:
    rng = np.random.default_rng(seed)
    params = []
    for fan_in, fan_out in zip(sizes, sizes[1:]):
        w = rng.normal(0, 1 / np.sqrt(fan_in), (fan_in, fan_out)).astype(np.float32)
        params += [Tensor(w).realize(), Tensor(np.zeros(fan_out, np.float32)).realize()]
    return params


def forward(params: list[Tensor], x: Tensor) -> Tensor:
    for i in range(0, len(params), 2):
        x = x @ params[i] + params[i + 1]
        if i + 2 < len(params):
            x = x.tanh()
    return x


def train(steps: int, use_jit: bool, log: bool = True) -> tuple[list[Tensor], list[float]]:
    points, labels = spirals(512)
    x, y = Tensor(points), Tensor(labels)
    params = init([2, 64, 64, 2])
    opt = Adam(params, lr=0.02)

    def step(x: Tensor, y: Tensor) -> Tensor:
        opt.zero_grad()
        loss = forward(params, x).cross_entropy(y)
        loss.backward()
        opt.step()
        return loss

    run = jit(step) if use_jit else step
    losses = []
    for i in range(steps):
        losses.append(run(x, y).item())
        if log and (i % 100 == 0 or i == steps - 1):
            print(f"step {i:4d}  loss {losses[-1]:.4f}")
    return params, losses


def main(steps: int = 400) -> int:
    _, eager = train(10, use_jit=False, log=False)
    start = time.perf_counter()
    params, losses = train(steps, use_jit=True)
    took = time.perf_counter() - start
    if not np.allclose(losses[:10], eager, rtol=1e-5):
        print(f"jitted losses {losses[:10]} differ from eager {eager}")
        return 1
    points, labels = spirals(512)
    accuracy = float((forward(params, Tensor(points)).argmax(1).numpy() == labels).mean())
    print(f"accuracy {accuracy:.3f} after {steps} steps ({took / steps * 1e3:.1f} ms a step, "
          f"jitted; the first 10 equal to eager steps)")
    return 0 if accuracy >= 0.95 else 1


if __name__ == "__main__":
    sys.exit(main())
