"""Optimizers over tensors marked ``requires_grad``: PyTorch's SGD, Adam and AdamW updates,
each step the gradients realized (one schedule for the forward and backward passes), then a
set of assigns into the parameters and the optimizer's state, realized together. A gradient
that fails to compute (an index out of range, say) fails the step before any parameter or
state changes.

The step count and the state live in tensors, so every step builds the same graph and
reuses the cached schedule (a Python number that changed each step would make each step a
new program)."""
from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from tolk.dtype import dtypes
from tolk.helpers import real_arg
from tolk.tensor import Tensor


class Optimizer:
    """Parameters (float tensors, marked ``requires_grad``) and a learning rate; `step`
    applies one update from their `grad` (a parameter without one is left as it is) and
    realizes; `zero_grad` forgets the gradients."""

    def __init__(self, params: Iterable[Tensor], lr: float) -> None:
        if isinstance(params, Tensor):
            raise TypeError("an optimizer takes an iterable of parameters, got one Tensor "
                            "(wrap it: [p])")
        self.params = list(params)
        if not self.params:
            raise ValueError("an optimizer needs at least one parameter")
        seen: dict[int, int] = {}
        for i, p in enumerate(self.params):
            if not isinstance(p, Tensor):
                raise TypeError(f"an optimizer's parameters must be float Tensors, got "
                                f"{type(p).__name__}")
            if not p.dtype.is_float:
                raise TypeError(f"an optimizer's parameters must be float Tensors, got "
                                f"{p.dtype.name}")
            if id(p) in seen:  # (two states for one tensor: two updates a step)
                raise ValueError(f"an optimizer's parameter {i} is parameter {seen[id(p)]} "
                                 "again")
            seen[id(p)] = i
        self.lr = real_arg(lr, "the learning rate")

    def _take(self) -> None:
        """Mark the parameters ``requires_grad``, once every argument was checked (a refused
        optimizer leaves them as they were)."""
        for p in self.params:
            p.requires_grad = True

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def step(self) -> None:
        grads = [(i, p, p.grad) for i, p in enumerate(self.params) if p.grad is not None]
        if grads:  # (a failure here changes nothing)
            Tensor.realize(*(g for _, _, g in grads))
        state = []
        for i, p, g in grads:
            state += self._update(i, p, g.cast(p.dtype))
        Tensor.realize(*self.params, *state)

    def _update(self, i: int, p: Tensor, g: Tensor) -> list[Tensor]:
        raise NotImplementedError


def _zeros_like(p: Tensor) -> Tensor:
    return Tensor.zeros(*p.shape, dtype=p.dtype, device=p.device).contiguous().realize()


def _wide(p: Tensor):
    return dtypes.float64 if p.dtype is dtypes.float64 else dtypes.float32


def _scalar(p: Tensor) -> Tensor:
    """A 0-d state of `p`'s dtype and device, 0 (a step count, a flag)."""
    return Tensor.full((), 0.0, p.dtype, p.device).contiguous().realize()


class SGD(Optimizer):
    """PyTorch's SGD: ``g = grad + weight_decay * p``; with momentum, ``buf = momentum *
    buf + (1 - dampening) * g`` (the first step's buf is g) and g is buf, or ``g +
    momentum * buf`` with `nesterov`; then ``p -= lr * g``."""

    def __init__(self, params: Iterable[Tensor], lr: float = 1e-3, momentum: float = 0.0,
                 dampening: float = 0.0, weight_decay: float = 0.0,
                 nesterov: bool = False) -> None:
        super().__init__(params, lr)
        self.momentum = real_arg(momentum, "SGD's momentum")
        self.dampening = real_arg(dampening, "SGD's dampening")
        if not isinstance(nesterov, (bool, np.bool_)):
            raise TypeError(f"SGD's nesterov must be a bool, got {nesterov!r}"[:200])
        if nesterov and (self.momentum <= 0 or self.dampening != 0):
            raise ValueError("SGD's nesterov needs a momentum > 0 and no dampening")
        self.weight_decay = real_arg(weight_decay, "SGD's weight_decay")
        self.nesterov = bool(nesterov)
        self.bufs = [_zeros_like(p) for p in self.params] if momentum else []
        self.started = [_scalar(p) for p in self.params] if momentum else []
        self._take()

    def _update(self, i: int, p: Tensor, g: Tensor) -> list[Tensor]:
        wide = _wide(p)  # (16-bit parameters: each update in float32, rounded once)
        g = g.cast(wide)
        if self.weight_decay:
            g = g + p.cast(wide) * self.weight_decay
        out = []
        if self.momentum:
            buf, started = self.bufs[i], self.started[i]  # (started: 0 before the first step)
            new = (started > 0).where(buf.cast(wide) * self.momentum + g * (1 - self.dampening),
                                      g)
            buf.assign(new.cast(p.dtype))
            started.assign(started.full_like(1.0))
            g = g + buf.cast(wide) * self.momentum if self.nesterov else buf.cast(wide)
            out += [buf, started]
        p.assign((p.cast(wide) - g * self.lr).cast(p.dtype))
        return out


class Adam(Optimizer):
    """PyTorch's Adam: ``m = b1 * m + (1 - b1) * g``, ``v = b2 * v + (1 - b2) * g**2``,
    ``p -= lr * (m / (1 - b1**t)) / (sqrt(v / (1 - b2**t)) + eps)``, with ``g = grad +
    weight_decay * p`` (L2 penalty); `AdamW` decays the parameter instead."""

    decoupled = False

    def __init__(self, params: Iterable[Tensor], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0) -> None:
        super().__init__(params, lr)
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise TypeError(f"Adam's betas must be a pair of numbers, got {betas!r}"[:200])
        b1, b2 = (real_arg(b, "Adam's betas") for b in betas)
        if not (b1 < 1 and b2 < 1):
            raise ValueError(f"Adam's betas must be in [0, 1), got {betas!r}")
        self.b1, self.b2 = b1, b2
        self.eps = real_arg(eps, "Adam's eps")
        self.weight_decay = real_arg(weight_decay, "Adam's weight_decay")
        self.m = [_zeros_like(p) for p in self.params]
        self.v = [_zeros_like(p) for p in self.params]
        # (the step count and bias corrections in float64 for float64 parameters, else in
        # float32: a 16-bit count stops at 2048 (float16) or 256 (bfloat16))
        self.t = [Tensor.full((), 0.0, _wide(p), p.device).contiguous().realize()
                  for p in self.params]
        self._take()

    def _update(self, i: int, p: Tensor, g: Tensor) -> list[Tensor]:
        m, v, t = self.m[i], self.v[i], self.t[i]
        wide = t.dtype  # (16-bit parameters: m, v and p each updated in float32, rounded
        g, pw = g.cast(wide), p.cast(wide)  # once: a gradient of 300 squared passes float16)
        if self.weight_decay and not self.decoupled:
            g = g + pw * self.weight_decay
        t.assign(t + 1)
        m.assign((m.cast(wide) * self.b1 + g * (1 - self.b1)).cast(p.dtype))
        v.assign((v.cast(wide) * self.b2 + g * g * (1 - self.b2)).cast(p.dtype))
        m_hat = m.cast(wide) / (1 - t.full_like(self.b1) ** t)
        v_hat = v.cast(wide) / (1 - t.full_like(self.b2) ** t)
        base = pw * (1 - self.lr * self.weight_decay) if self.decoupled and self.weight_decay \
            else pw
        p.assign((base - m_hat / (v_hat.sqrt() + self.eps) * self.lr).cast(p.dtype))
        return [m, v, t]


class AdamW(Adam):
    """Adam with decoupled weight decay (PyTorch's AdamW: ``p *= 1 - lr * weight_decay``
    before the update; its default weight_decay is 0.01)."""

    decoupled = True

    def __init__(self, params: Iterable[Tensor], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.01) -> None:
        super().__init__(params, lr, betas, eps, weight_decay)
