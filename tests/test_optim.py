"""tolk.optim's SGD, Adam and AdamW against the same updates written in numpy from
PyTorch's definitions, over several steps of a quadratic loss, and a model trained with
them; every step reuses one cached schedule."""
from __future__ import annotations

import numpy as np
import pytest

from tolk import Tensor
from tolk.optim import SGD, Adam, AdamW
from tolk.schedule import schedule_cache_info

RNG = np.random.default_rng(7)


def quadratic(ps, targets, coefs):
    """sum(coef * (p - target)**2) over the parameters; its gradient 2 coef (p - target)."""
    total = None
    for p, t, c in zip(ps, targets, coefs):
        term = ((p - Tensor(t)) ** 2 * Tensor(c)).sum()
        total = term if total is None else total + term
    return total


def run(opt_cls, kwargs, steps=6, shapes=((3, 2), (), (4,))):
    starts = [RNG.standard_normal(s) for s in shapes]
    targets = [RNG.standard_normal(s) for s in shapes]
    coefs = [RNG.uniform(0.5, 2, s) for s in shapes]
    ps = [Tensor(a.copy()).realize() for a in starts]
    opt = opt_cls(ps, **kwargs)
    for _ in range(steps):
        opt.zero_grad()
        quadratic(ps, targets, coefs).backward()
        opt.step()
    return [p.numpy() for p in ps], starts, targets, coefs


def ref_sgd(starts, targets, coefs, steps, lr, momentum=0.0, dampening=0.0,
            weight_decay=0.0, nesterov=False):
    out = []
    for p, t, c in zip(starts, targets, coefs):
        p, buf = p.copy(), None
        for _ in range(steps):
            g = 2 * c * (p - t) + weight_decay * p
            if momentum:
                buf = g if buf is None else momentum * buf + (1 - dampening) * g
                g = g + momentum * buf if nesterov else buf
            p = p - lr * g
        out.append(p)
    return out


def ref_adam(starts, targets, coefs, steps, lr, betas=(0.9, 0.999), eps=1e-8,
             weight_decay=0.0, decoupled=False):
    b1, b2 = betas
    out = []
    for p, t, c in zip(starts, targets, coefs):
        p, m, v = p.copy(), np.zeros_like(p), np.zeros_like(p)
        for k in range(1, steps + 1):
            g = 2 * c * (p - t)
            if weight_decay and not decoupled:
                g = g + weight_decay * p
            if decoupled:
                p = p * (1 - lr * weight_decay)
            m = b1 * m + (1 - b1) * g
            v = b2 * v + (1 - b2) * g * g
            p = p - lr * (m / (1 - b1 ** k)) / (np.sqrt(v / (1 - b2 ** k)) + eps)
        out.append(p)
    return out


@pytest.mark.parametrize("kwargs", [
    {"lr": 0.1}, {"lr": 0.05, "momentum": 0.9}, {"lr": 0.05, "momentum": 0.8, "dampening": 0.3},
    {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.1}])
def test_sgd_matches_pytorchs_updates(kwargs):
    got, starts, targets, coefs = run(SGD, kwargs)
    for g, w in zip(got, ref_sgd(starts, targets, coefs, 6, **kwargs)):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("cls, kwargs", [
    (Adam, {"lr": 0.1}), (Adam, {"lr": 0.05, "betas": (0.8, 0.9), "weight_decay": 0.1}),
    (AdamW, {"lr": 0.05}), (AdamW, {"lr": 0.1, "weight_decay": 0.5, "eps": 1e-3})])
def test_adam_and_adamw_match_pytorchs_updates(cls, kwargs):
    got, starts, targets, coefs = run(cls, kwargs)
    want = ref_adam(starts, targets, coefs, 6, decoupled=cls is AdamW,
                    **({"weight_decay": 0.01} if cls is AdamW else {}) | kwargs)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)


def test_steps_reuse_one_schedule_and_a_model_learns():
    x = RNG.standard_normal((64, 3))
    y = x @ np.array([1.5, -2.0, 0.5]) + 0.3
    w = Tensor(np.zeros(3)).realize()
    b = Tensor(np.zeros(())).realize()
    opt = Adam([w, b], lr=0.1)
    xs, ys = Tensor(x), Tensor(y)
    misses = []
    for _ in range(200):
        opt.zero_grad()
        ((xs @ w + b) - ys).square().mean().backward()
        before = schedule_cache_info().misses
        opt.step()
        misses.append(schedule_cache_info().misses - before)
    assert sum(misses[5:]) == 0  # (the same graph every step: cached)
    np.testing.assert_allclose(w.numpy(), [1.5, -2.0, 0.5], atol=0.05)
    np.testing.assert_allclose(b.numpy(), 0.3, atol=0.05)


def test_optimizer_arguments_are_checked():
    w = Tensor(np.zeros(2))
    with pytest.raises(ValueError, match="at least one parameter"):
        SGD([])
    with pytest.raises(TypeError, match="float Tensors"):
        SGD([Tensor(np.zeros(2, np.int32))])
    with pytest.raises(ValueError, match="learning rate"):
        SGD([w], lr=-1)
    with pytest.raises(ValueError, match="nesterov"):
        SGD([w], nesterov=True)
    with pytest.raises(ValueError, match="betas"):
        Adam([w], betas=(1.0, 0.5))
    opt = SGD([w], lr=0.1)
    opt.step()  # (no gradient yet: nothing changes)
    np.testing.assert_array_equal(w.numpy(), [0.0, 0.0])
    assert w.requires_grad


def test_adam_counts_steps_past_16_bit_and_checks_hyperparameters():
    w = Tensor(np.array([1.0, -1.0], np.float16)).realize()
    opt = Adam([w], lr=0.1)
    w.grad = Tensor(np.array([0.5, -0.5], np.float16))
    opt.step()  # (PyTorch's first step moves each weight by lr * sign(g))
    np.testing.assert_allclose(w.numpy().astype(np.float64), [0.9, -0.9], atol=1e-3)
    assert opt.t[0].dtype.np == np.float32
    for _ in range(3):
        w.grad = Tensor(np.array([0.5, -0.5], np.float16))
        opt.step()
    assert opt.t[0].item() == 4.0
    opt.t[0].assign(Tensor(np.float32(3000.0))).realize()  # (past float16's 2048)
    w.grad = Tensor(np.array([0.5, -0.5], np.float16))
    opt.step()
    assert opt.t[0].item() == 3001.0
    with pytest.raises(ValueError, match="momentum must be >= 0"):
        SGD([w], momentum=-0.5)
    with pytest.raises(TypeError, match="learning rate must be a number"):
        SGD([w], lr="0.1")
    with pytest.raises(ValueError, match="eps must be >= 0"):
        Adam([w], eps=-1e-8)
    with pytest.raises(TypeError, match="got ndarray"):
        SGD([np.zeros(2)])


def test_refused_optimizers_leave_their_parameters_as_they_were():
    w = Tensor(np.zeros(2, np.float32))
    for make, err, match in (
            (lambda: SGD([w], lr=-1), ValueError, "learning rate"),
            (lambda: SGD([w], nesterov=True), ValueError, "nesterov"),
            (lambda: SGD([w], momentum="x", nesterov=True), TypeError, "momentum"),
            (lambda: SGD([w], momentum=0.9, nesterov="yes"), TypeError, "nesterov must be"),
            (lambda: SGD([w, Tensor(np.zeros(2, np.int32))]), TypeError, "float Tensors"),
            (lambda: SGD([w, w]), ValueError, "parameter 1 is parameter 0"),
            (lambda: SGD(w), TypeError, "one Tensor"),
            (lambda: Adam([w], betas=(0.9,)), TypeError, "pair of numbers"),
            (lambda: Adam([w], betas=None), TypeError, "pair of numbers"),
            (lambda: Adam([w], betas=("a", "b")), TypeError, "betas must be a number"),
            (lambda: Adam([w], betas=(0.9, -0.1)), ValueError, "betas"),
            (lambda: Adam([w], eps=-1), ValueError, "eps")):
        with pytest.raises(err, match=match):
            make()
        assert not w.requires_grad
    assert SGD([w]).params == [w] and w.requires_grad


@pytest.mark.parametrize("cls,kw", [(Adam, {"lr": 0.1}), (AdamW, {"lr": 0.1}),
                                    (SGD, {"lr": 0.1, "momentum": 0.9, "dampening": 0.5})])
def test_a_step_whose_gradient_fails_changes_no_parameter_or_state(cls, kw):
    x = Tensor(np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32))
    got = []
    for fail_first in (False, True):
        w = Tensor(np.zeros((3, 5), np.float32)).realize()
        b = Tensor(np.zeros(5, np.float32)).realize()
        opt = cls([b, w], **kw)
        if fail_first:  # (a label out of range: the gradient's kernel raises in step)
            (x @ w + b).cross_entropy(Tensor(np.array([0, 1, 2, 9]))).backward()
            with pytest.raises(IndexError):
                opt.step()
            assert not w.numpy().any() and not b.numpy().any()
            opt.zero_grad()
        for _ in range(2):
            opt.zero_grad()
            (x @ w + b).cross_entropy(Tensor(np.array([0, 1, 2, 3]))).backward()
            opt.step()
        got.append((w.numpy(), b.numpy()))
    for a, c in zip(*got):
        np.testing.assert_array_equal(a, c)


@pytest.mark.parametrize("cls,kw", [(Adam, {"lr": 0.01}), (AdamW, {"lr": 0.01}),
                                    (SGD, {"lr": 0.01, "momentum": 0.9, "nesterov": True})])
def test_16_bit_parameters_update_in_float32_rounded_once(cls, kw):
    grads = (300.0, 1.0, -2.5, 1.0)  # (300 squared passes float16's range)
    w = Tensor(np.ones(2, np.float16)).realize()
    w32 = Tensor(np.ones(2, np.float32)).realize()
    opt, opt32 = cls([w], **kw), cls([w32], **kw)
    for g in grads:
        w.grad, w32.grad = Tensor(np.full(2, g, np.float16)), Tensor(np.full(2, g, np.float32))
        opt.step()
        opt32.step()
    assert np.isfinite(w.numpy()).all() and w.numpy()[0] != 1.0
    np.testing.assert_allclose(w.numpy().astype(np.float32), w32.numpy(), rtol=2e-3)
    if cls is not SGD:
        assert np.isfinite(opt.v[0].numpy()).all()
