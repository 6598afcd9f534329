"""Optimizers over tensors marked ``requires_grad``: PyTorch's SGD, Adam and AdamW updates,
each step a set of assigns into the parameters and the optimizer's state, realized together
(one schedule for the forward pass, the gradients and every update).

The step count and the state live in tensors, so every step builds the same graph and
reuses the cached schedule (a Python number that changed each step would make each step a
new program)."""
from __future__ import annotations

from collections.abc import Iterable

from tolk.dtype import dtypes
from tolk.helpers import real_arg
from tolk.tensor import Tensor


class Optimizer:
    """Parameters (float tensors, marked ``requires_grad``) and a learning rate; `step`
    applies one update from their `grad` (a parameter without one is left as it is) and
    realizes; `zero_grad` forgets the gradients."""

    def __init__(self, params: Iterable[Tensor], lr: float) -> None:
        self.params = list(params)
        if not self.params:
            raise ValueError("an optimizer needs at least one parameter")
        for p in self.params:
            if not isinstance(p, Tensor):
                raise TypeError(f"an optimizer's parameters must be float Tensors, got "
                                f"{type(p).__name__}")
            if not p.dtype.is_float:
                raise TypeError(f"an optimizer's parameters must be float Tensors, got "
                                f"{p.dtype.name}")
            p.requires_grad = True
        self.lr = real_arg(lr, "the learning rate")

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def step(self) -> None:
        state = []
        for i, p in enumerate(self.params):
            if p.grad is not None:
                state += self._update(i, p, p.grad.cast(p.dtype))
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
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("SGD's nesterov needs a momentum > 0 and no dampening")
        self.momentum = real_arg(momentum, "SGD's momentum")
        self.dampening = real_arg(dampening, "SGD's dampening")
        self.weight_decay, self.nesterov = real_arg(weight_decay, "SGD's weight_decay"), nesterov
        self.bufs = [_zeros_like(p) for p in self.params] if momentum else []
        self.started = [_scalar(p) for p in self.params] if momentum else []

    def _update(self, i: int, p: Tensor, g: Tensor) -> list[Tensor]:
        if self.weight_decay:
            g = g + p * self.weight_decay
        out = []
        if self.momentum:
            buf, started = self.bufs[i], self.started[i]  # (started: 0 before the first step)
            new = (started > 0).where(buf * self.momentum + g * (1 - self.dampening), g)
            buf.assign(new)
            started.assign(started.full_like(1.0))
            g = g + new * self.momentum if self.nesterov else new
            out += [buf, started]
        p.assign(p - g * self.lr)
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
        b1, b2 = betas
        if not (0 <= b1 < 1 and 0 <= b2 < 1):
            raise ValueError(f"Adam's betas must be in [0, 1), got {betas!r}")
        self.b1, self.b2 = float(b1), float(b2)
        self.eps = real_arg(eps, "Adam's eps")
        self.weight_decay = real_arg(weight_decay, "Adam's weight_decay")
        self.m = [_zeros_like(p) for p in self.params]
        self.v = [_zeros_like(p) for p in self.params]
        # (the step count and bias corrections in float64 for float64 parameters, else in
        # float32: a 16-bit count stops at 2048 (float16) or 256 (bfloat16))
        self.t = [Tensor.full((), 0.0, _wide(p), p.device).contiguous().realize()
                  for p in self.params]

    def _update(self, i: int, p: Tensor, g: Tensor) -> list[Tensor]:
        m, v, t = self.m[i], self.v[i], self.t[i]
        if self.weight_decay and not self.decoupled:
            g = g + p * self.weight_decay
        t.assign(t + 1)
        m.assign(m * self.b1 + g * (1 - self.b1))
        v.assign(v * self.b2 + g * g * (1 - self.b2))
        wide = t.dtype
        m_hat = m.cast(wide) / (1 - t.full_like(self.b1) ** t)
        v_hat = v.cast(wide) / (1 - t.full_like(self.b2) ** t)
        base = p * (1 - self.lr * self.weight_decay) if self.decoupled and self.weight_decay \
            else p
        p.assign(base - (m_hat / (v_hat.sqrt() + self.eps) * self.lr).cast(p.dtype))
        return [m, v, t]


class AdamW(Adam):
    """Adam with decoupled weight decay (PyTorch's AdamW: ``p *= 1 - lr * weight_decay``
    before the update; its default weight_decay is 0.01)."""

    decoupled = True

    def __init__(self, params: Iterable[Tensor], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.01) -> None:
        super().__init__(params, lr, betas, eps, weight_decay)
