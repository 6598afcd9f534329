"""Gradients (`Tensor.gradient`, `Tensor.backward`, `tolk.gradient`) against central finite
differences of tolk's own forward values in float64, op by op and through composite layers
(softmax, losses, norms, convolution, pooling, attention), and a small model trained by
gradient descent against gradients written by hand in numpy."""
from __future__ import annotations

import sys

import numpy as np
import pytest

from tolk import Tensor
from tolk.errors import GradientError, ShapeError

RNG = np.random.default_rng(1234)


def numeric_gradient(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """d f(x) / dx by central differences, f a function of a float64 array to a float."""
    g = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        hi, lo = x.copy(), x.copy()
        hi[i] += eps
        lo[i] -= eps
        g[i] = (f(hi) - f(lo)) / (2 * eps)
    return g


def check(fn, *inputs: np.ndarray, rtol: float = 1e-5, atol: float = 1e-7) -> None:
    """The gradient of ``sum(fn(*tensors) * r)`` (r random) with respect to each input, tolk's
    against finite differences of tolk's own forward values."""
    out_shape = fn(*(Tensor(a) for a in inputs)).shape
    r = RNG.standard_normal(out_shape)

    def value(k, a):
        args = [Tensor(b) for b in inputs]
        args[k] = Tensor(a)
        return float((fn(*args) * Tensor(r)).sum().item())

    ts = [Tensor(a).requires_grad_() for a in inputs]
    got = (fn(*ts) * Tensor(r)).sum().gradient(*ts)
    for k, (a, g) in enumerate(zip(inputs, got)):
        assert g.shape == a.shape and g.dtype == ts[k].dtype
        want = numeric_gradient(lambda x, k=k: value(k, x), a)
        np.testing.assert_allclose(g.numpy(), want, rtol=rtol, atol=atol,
                                   err_msg=f"input {k}")


def rand(*shape, low=-2.0, high=2.0):
    return RNG.uniform(low, high, shape)


UNARY = {
    "exp": (lambda x: x.exp(), rand(3, 2)), "log": (lambda x: x.log(), rand(3, 2, low=0.5)),
    "sqrt": (lambda x: x.sqrt(), rand(5, low=0.5)), "rsqrt": (lambda x: x.rsqrt(), rand(5, low=.5)),
    "reciprocal": (lambda x: x.reciprocal(), rand(4, low=0.5)),
    "sin": (lambda x: x.sin(), rand(4)), "cos": (lambda x: x.cos(), rand(4)),
    "tan": (lambda x: x.tan(), rand(4, low=-1, high=1)), "tanh": (lambda x: x.tanh(), rand(4)),
    "sinh": (lambda x: x.sinh(), rand(4)), "cosh": (lambda x: x.cosh(), rand(4)),
    "arcsin": (lambda x: x.arcsin(), rand(4, low=-.9, high=.9)),
    "arccos": (lambda x: x.arccos(), rand(4, low=-.9, high=.9)),
    "arctan": (lambda x: x.arctan(), rand(4)), "arcsinh": (lambda x: x.arcsinh(), rand(4)),
    "arccosh": (lambda x: x.arccosh(), rand(4, low=1.5, high=3)),
    "arctanh": (lambda x: x.arctanh(), rand(4, low=-.9, high=.9)),
    "exp2": (lambda x: x.exp2(), rand(4)), "log2": (lambda x: x.log2(), rand(4, low=.5)),
    "log1p": (lambda x: x.log1p(), rand(4, low=-.5)), "expm1": (lambda x: x.expm1(), rand(4)),
    "erf": (lambda x: x.erf(), rand(4)), "erfc": (lambda x: x.erfc(), rand(4)),
    "abs": (lambda x: x.abs(), rand(4, low=.1) * np.array([1, -1, 1, -1])),
    "neg": (lambda x: -x, rand(4)), "square": (lambda x: x.square(), rand(4)),
    "sigmoid": (lambda x: x.sigmoid(), rand(4)), "relu": (lambda x: x.relu(), rand(6)),
    "gelu": (lambda x: x.gelu(), rand(4)), "gelu_exact": (lambda x: x.gelu("none"), rand(4)),
    "silu": (lambda x: x.silu(), rand(4)), "softplus": (lambda x: x.softplus(), rand(4)),
    "elu": (lambda x: x.elu(), rand(6)), "mish": (lambda x: x.mish(), rand(4)),
    "logsigmoid": (lambda x: x.logsigmoid(), rand(4)),
    "leaky_relu": (lambda x: x.leaky_relu(0.1), rand(6)),
    "pow_const": (lambda x: x ** 3, rand(4)), "rpow": (lambda x: 2.0 ** x, rand(4)),
    "clip": (lambda x: x.clip(-1, 1), rand(8)),
    "floor": (lambda x: x.floor() + x, rand(4)), "sort": (lambda x: x.sort(1)[0], rand(3, 4)),
    "cumsum": (lambda x: x.cumsum(1), rand(3, 4)),
    "softmax": (lambda x: x.softmax(-1), rand(3, 4)),
    "log_softmax": (lambda x: x.log_softmax(0), rand(3, 4)),
    "logsumexp": (lambda x: x.logsumexp(1), rand(3, 4)),
    "layernorm": (lambda x: x.layernorm(), rand(2, 5)),
    "layer_norm": (lambda x: x.layer_norm((2, 3)), rand(2, 2, 3)),
    "rms_norm": (lambda x: x.rms_norm(3), rand(2, 3)),
    "group_norm": (lambda x: x.group_norm(2), rand(2, 4, 3)),
    "mean_var": (lambda x: x.mean(0) * x.var(1).sum(), rand(3, 4)),
    "std": (lambda x: x.std(), rand(3, 4)), "norm": (lambda x: x.norm(axis=1), rand(3, 4)),
    "max": (lambda x: x.max(1), rand(3, 4)), "min": (lambda x: x.min(), rand(3, 4)),
    "movement": (lambda x: x.permute(2, 0, 1).reshape(4, 6).flip(0)[1:3, ::2].expand(2, 2, 3)
                 .pad(((1, 0), (0, 2), None)), rand(2, 3, 4)),
    "getitem": (lambda x: x[[2, 0, 2]], rand(3, 2)),
    "pad_reflect": (lambda x: x.pad(((2, 3),), mode="reflect"), rand(4)),
    "interpolate": (lambda x: x.interpolate(size=(5, 3), mode="bilinear"), rand(1, 1, 3, 2)),
    "max_pool": (lambda x: x.max_pool2d(2), rand(1, 1, 4, 4)),
    "avg_pool": (lambda x: x.avg_pool2d(2, 1), rand(1, 2, 3, 3)),
    "where": (lambda x: (x > 0).where(x * 2, x.exp()), rand(6)),
    "take_along_axis": (lambda x: x.take_along_axis(Tensor(np.array([[1, 0, 1]])), 1),
                        rand(2, 2)),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_and_composite_gradients_match_finite_differences(name):
    fn, a = UNARY[name]
    check(fn, a)


BINARY = {
    "add": (lambda a, b: a + b, rand(3, 2), rand(2)),
    "sub": (lambda a, b: a - b, rand(3, 1), rand(1, 4)),
    "mul": (lambda a, b: a * b, rand(3, 2), rand(3, 2)),
    "div": (lambda a, b: a / b, rand(3, 2), rand(2, low=.5)),
    "pow": (lambda a, b: a ** b, rand(4, low=.5), rand(4)),
    "maximum": (lambda a, b: a.maximum(b), rand(6), rand(6)),
    "minimum": (lambda a, b: a.minimum(b), rand(6), rand(6)),
    "arctan2": (lambda a, b: a.arctan2(b), rand(4), rand(4)),
    "hypot": (lambda a, b: a.hypot(b), rand(4), rand(4)),
    "fmod": (lambda a, b: a.fmod(b), rand(4), rand(4, low=.5)),
    "mod": (lambda a, b: a % b, rand(4), rand(4, low=.5)),
    "matmul": (lambda a, b: a @ b, rand(2, 3, 4), rand(4, 2)),
    "einsum": (lambda a, b: Tensor.einsum("ij,jk->ik", a, b), rand(2, 3), rand(3, 2)),
    "conv2d": (lambda a, b: a.conv2d(b, stride=2, padding=1), rand(1, 2, 5, 5), rand(3, 2, 3, 3)),
    "conv_transpose2d": (lambda a, b: a.conv_transpose2d(b, stride=2), rand(1, 2, 2, 3),
                         rand(2, 1, 2, 2)),
    "cat": (lambda a, b: Tensor.cat([a, b], dim=1), rand(2, 2), rand(2, 3)),
    "stack": (lambda a, b: Tensor.stack([a, b * 2]), rand(3), rand(3)),
    "attention": (lambda a, b: a.scaled_dot_product_attention(b, b * 2, is_causal=True),
                  rand(2, 3, 4), rand(2, 3, 4)),
    "lerp": (lambda a, b: a.lerp(b, 0.3), rand(3), rand(3)),
    "cdist": (lambda a, b: a.cdist(b), rand(2, 3), rand(3, 3)),
    "mse_loss": (lambda a, b: a.mse_loss(b), rand(3, 2), rand(3, 2)),
    "bce_logits": (lambda a, b: a.binary_cross_entropy_with_logits(b.sigmoid()), rand(4),
                   rand(4)),
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_and_layer_gradients_match_finite_differences(name):
    fn, a, b = BINARY[name]
    check(fn, a, b)


def test_gradients_through_indexing_losses_and_scatters():
    logits = rand(4, 5)
    target = Tensor(np.array([1, 0, 4, 2]))
    check(lambda x: x.cross_entropy(target, label_smoothing=0.1), logits)
    weight = Tensor(rand(5, low=.5))
    check(lambda x: x.nll_loss(target, weight=weight), logits)
    table = rand(5, 3)
    check(lambda w: w.gather(Tensor(np.array([3, 3, -1]))), table)
    check(lambda b, v: b.index_add(0, Tensor(np.array([1, 1, 3])), v), rand(4, 2), rand(3, 2))
    check(lambda b, v: b.scatter_add(1, Tensor(np.array([[0, 0, 2]])), v), rand(2, 3), rand(1, 3))


def test_ties_share_the_gradient_as_pytorch():
    x = Tensor(np.array([1.0, 3.0, 3.0, 2.0])).requires_grad_()
    (g,) = x.max().gradient(x)
    np.testing.assert_array_equal(g.numpy(), [0.0, 0.5, 0.5, 0.0])
    a, b = Tensor(np.array([1.0, 2.0])).requires_grad_(), Tensor(np.array([1.0, 3.0]))
    b.requires_grad = True
    ga, gb = a.maximum(b).sum().gradient(a, b)
    np.testing.assert_array_equal(ga.numpy(), [0.5, 0.0])
    np.testing.assert_array_equal(gb.numpy(), [0.5, 1.0])


def test_a_small_model_trains_with_backward_and_assign():
    x = RNG.standard_normal((32, 4))
    labels = (x[:, 0] + x[:, 1] > 0).astype(np.int64)
    w1 = Tensor(RNG.standard_normal((4, 8)) * 0.5, requires_grad=True).realize()
    w2 = Tensor(RNG.standard_normal((8, 2)) * 0.5).requires_grad_().realize()
    xs, ys = Tensor(x), Tensor(labels)
    losses = []
    for step in range(30):
        h = (xs @ w1).tanh()
        loss = (h @ w2).cross_entropy(ys)
        if step == 0:  # (the first step's gradients against numpy's, written out by hand)
            a1 = np.tanh(x @ w1.numpy())
            z = a1 @ w2.numpy()
            p = np.exp(z - z.max(1, keepdims=True))
            p /= p.sum(1, keepdims=True)
            dz = (p - np.eye(2)[labels]) / len(x)
            dw2 = a1.T @ dz
            dw1 = x.T @ ((dz @ w2.numpy().T) * (1 - a1 ** 2))
        loss.backward()
        if step == 0:
            np.testing.assert_allclose(w2.grad.numpy(), dw2, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(w1.grad.numpy(), dw1, rtol=1e-10, atol=1e-12)
        losses.append(loss.item())
        for w in (w1, w2):
            w.assign(w - w.grad * 0.5)
            w.grad = None
        Tensor.realize(w1, w2)
    assert losses[-1] < losses[0] * 0.6


def test_backward_accumulates_and_gradient_errors_name_the_problem():
    w = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    (w * 3).sum().backward()
    (w * w).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [5.0, 7.0])
    assert w.requires_grad and not Tensor(np.ones(2)).requires_grad
    y = (w * 2).sum()
    y.realize()  # (its graph is gone: a gradient through it is refused, never cut short)
    with pytest.raises(GradientError, match="before this gradient"):
        y.gradient(w)
    plain = Tensor(np.array([1.0, 2.0]))
    z = (plain * 2).sum()
    with pytest.raises(GradientError, match="reads no tensor marked requires_grad"):
        z.backward()
    with pytest.raises(ShapeError, match="needs the gradient of its output"):
        (w * 2).gradient(w)
    np.testing.assert_array_equal((w * 2).gradient(w, gradient=Tensor(np.array([1.0, -1.0])))[0]
                                  .numpy(), [2.0, -2.0])
    with pytest.raises(TypeError, match="only float tensors"):
        Tensor(np.array([1, 2])).requires_grad = True
    with pytest.raises(TypeError, match="only float tensors have gradients"):
        (w.sum() * 1).gradient(Tensor(np.array([1, 2])))
    with pytest.raises(GradientError, match="not marked requires_grad"):
        (w.sum() * 1).gradient(Tensor(np.array([1.0, 2.0])))
    with pytest.raises(GradientError, match="no rule for REDUCE_AXIS MUL"):
        w.prod().gradient(w)
    with pytest.raises(ShapeError, match="a grad must be None or a Tensor of shape"):
        w.grad = Tensor(np.ones(3))
    unused = Tensor(np.ones(2), requires_grad=True)
    with pytest.raises(GradientError, match="1 target"):
        (w * 2).sum().gradient(w, unused)


def test_gradient_of_a_deep_chain_walks_without_recursion():
    x = Tensor(np.array([0.5]), requires_grad=True)
    y = x
    for _ in range(3000):
        y = y * 1.0001 + 0.0001
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(200)  # (the walk is iterative: a deep graph never recurses)
    try:
        (g,) = y.sum().gradient(x)
    finally:
        sys.setrecursionlimit(old)
    np.testing.assert_allclose(g.numpy(), [1.0001 ** 3000], rtol=1e-9)


def test_gradients_of_views_lazy_targets_and_16_bit_floats():
    base = Tensor(rand(4, 3)).realize().requires_grad_()
    row = base[1].requires_grad_()  # (a view: the gradient of the values it shows, every use)
    loss = (row * 2).sum() + base.sum()
    (g_row, g_base) = loss.gradient(row, base)
    np.testing.assert_array_equal(g_row.numpy(), [3.0, 3.0, 3.0])
    np.testing.assert_array_equal(g_base.numpy(), np.array([[1.0] * 3, [3.0] * 3, [1.0] * 3,
                                                            [1.0] * 3]))
    x = Tensor(rand(2, 3))
    h = (x * 3).reshape(3, 2).requires_grad_()  # (marking a computed tensor realizes it)
    (gh,) = (h.reshape(6) * Tensor(np.arange(6.0))).sum().gradient(h)
    np.testing.assert_array_equal(gh.numpy(), np.arange(6.0).reshape(3, 2))
    idx = Tensor(np.array([[1, 4], [1, 0]]))
    check(lambda w: idx.embedding(w), rand(5, 3))
    half = Tensor(np.array([0.5, -1.0, 2.0], np.float16), requires_grad=True)
    (gh16,) = half.sigmoid().sum().gradient(half)
    s = 1 / (1 + np.exp(-np.array([0.5, -1.0, 2.0])))
    assert gh16.dtype == half.dtype
    np.testing.assert_allclose(gh16.numpy().astype(np.float64), s * (1 - s), rtol=2e-3)
    w = Tensor.zeros(3, requires_grad=True)  # (a lazy constant: its own node is the target)
    (w * Tensor(np.array([1.0, 2.0, 3.0]))).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [1.0, 2.0, 3.0])
    assert Tensor.randn(2, requires_grad=True).requires_grad


def test_a_strided_slice_target_counts_every_use_of_its_values():
    """A strided slice whose step does not divide its axis is a padded view (PAD, reshape,
    shrink): its uses through views of it folded over the buffer counted too (they were
    dropped: half the gradient, or 'not in the graph')."""
    xs = np.arange(10.0).reshape(5, 2)
    x = Tensor(xs).realize().requires_grad_()
    v = x[::2].requires_grad_()
    vs = xs[::2]
    loss = (v * v).sum() + (v.reshape(-1) ** 2).sum()
    np.testing.assert_array_equal(loss.gradient(v)[0].numpy(), 4 * vs)
    np.testing.assert_array_equal((v.reshape(-1) ** 2).sum().gradient(v)[0].numpy(), 2 * vs)
    got = ((v * v).sum() + (v[0:2][0:1] ** 2).sum()).gradient(v)[0].numpy()
    np.testing.assert_array_equal(got, 2 * vs + np.where(np.arange(3)[:, None] < 1, 2 * vs, 0))
    np.testing.assert_array_equal(((v * v).sum() + (x * x).sum()).gradient(v)[0].numpy(), 4 * vs)
    loss.backward()
    np.testing.assert_array_equal(v.grad.numpy(), 4 * vs)
    want_x = np.zeros_like(xs)
    want_x[::2] = 4 * vs
    np.testing.assert_array_equal(x.grad.numpy(), want_x)
    ys = np.arange(35.0).reshape(5, 7)
    y = Tensor(ys).realize().requires_grad_()
    w = y[::-2, 1::3].requires_grad_()
    loss = (w.reshape(-1) ** 2).sum() + (w.flip(0) * 3).sum() + y.sum()
    np.testing.assert_array_equal(loss.gradient(w)[0].numpy(), 2 * ys[::-2, 1::3] + 4)


def test_a_broadcast_view_target_counts_the_uses_of_views_made_from_it():
    """(A reshape of it folds into one op over the EXPAND: that use was dropped.)"""
    x = Tensor(np.float32([1, 2, 3])).realize().requires_grad_()
    t = x.reshape(1, 3).expand(2, 3).reshape(6).requires_grad_()
    w = Tensor(np.arange(6, dtype=np.float32).reshape(3, 2))
    loss = (t.reshape(3, 2) * w).sum() + (t * 100).sum()
    np.testing.assert_array_equal(loss.gradient(t)[0].numpy(), 100 + np.arange(6))
    np.testing.assert_array_equal((t.reshape(3, 2) * w).sum().gradient(t)[0].numpy(),
                                  np.arange(6))
    np.testing.assert_array_equal(loss.gradient(x)[0].numpy(), [203, 205, 207])


def test_realized_values_in_place_ops_detach_constants_and_flat_paths():
    x = Tensor(np.array([[1.0, 2.0], [3.0, -4.0]]))
    w = Tensor(np.array([0.5, -1.0]), requires_grad=True).realize()
    logits = x @ w
    loss = logits.square().mean() + (w * w).sum() * 0.01
    logits.numpy()  # (read before backward: the path through it would be cut, so refused)
    with pytest.raises(GradientError, match="before this gradient"):
        loss.backward()
    loss = (x @ w).square().mean() + (w * w).sum() * 0.01
    loss.backward()
    loss.item()  # (read after backward: fine)
    xs = np.array([[1.0, 2.0], [3.0, -4.0]])
    want = xs.T @ (2 * (xs @ [0.5, -1.0]) / 2) + 0.02 * np.array([0.5, -1.0])
    np.testing.assert_allclose(w.grad.numpy(), want, rtol=1e-12)
    p = Tensor(np.array([1.0, 2.0]), requires_grad=True).realize()
    h = p * 3
    h.requires_grad = True
    h.realize()  # (a marked value realized from another marked one)
    with pytest.raises(GradientError, match="one computed from the other"):
        (h * h).sum().backward()
    np.testing.assert_array_equal((h * h).sum().gradient(h)[0].numpy(), [6.0, 12.0])
    frozen = (Tensor(np.array([1.0, 2.0])) * 3).realize()  # (reads no marked tensor: fine)
    np.testing.assert_array_equal((frozen * p).sum().gradient(p)[0].numpy(), [3.0, 6.0])
    h = w * 2
    h += 1.0  # (an in-place op: an assign; gradients do not pass through one)
    with pytest.raises(GradientError, match="assign.s result|before this gradient"):
        (h * w).sum().gradient(w)
    pending = Tensor(np.zeros(2)).realize()
    pending.assign(w * 3)  # (a pending assign of a value read from a target)
    with pytest.raises(GradientError, match="assign's result"):
        (pending * pending).sum().gradient(w)
    v = Tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    (g,) = (v.detach() * 2 + v).sum().gradient(v)
    np.testing.assert_array_equal(g.numpy(), [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(v.detach().numpy(), [1.0, 2.0, 3.0])
    (flat,) = (v > 1).float().sum().gradient(v)  # (only through a comparison: zeros)
    np.testing.assert_array_equal(flat.numpy(), [0.0, 0.0, 0.0])
    b1 = Tensor.zeros(2, requires_grad=True)
    b2 = Tensor.zeros(2, requires_grad=True)  # (equal constants: marked, each its own buffer)
    ((Tensor(np.array([1.0, -2.0])) + b1).relu() * 3 + b2).sum().backward()
    np.testing.assert_array_equal(b1.grad.numpy(), [3.0, 0.0])
    np.testing.assert_array_equal(b2.grad.numpy(), [1.0, 1.0])
    with pytest.raises(GradientError, match="not marked requires_grad"):
        (Tensor.ones(2) * 3).sum().gradient(Tensor.ones(2))
    with pytest.raises(TypeError, match="must be float64"):
        w.grad = Tensor(np.ones(2, np.float32))


def test_threads_add_into_one_grad_and_a_jit_capture_refuses_a_stale_grad():
    import threading

    from tolk import jit
    from tolk.errors import JitError
    w = Tensor(np.ones(3), requires_grad=True).realize()

    def work():
        for _ in range(20):
            (w * 2).sum().backward()

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    np.testing.assert_array_equal(w.grad.numpy(), [160.0] * 3)

    @jit
    def step(x):
        (x * w).sum().backward()  # (no reset: the grad from before the capture is added to)
        return w.grad

    w.grad = None
    step(Tensor(np.ones(3)))
    with pytest.raises(JitError, match="reset the grads"):
        step(Tensor(np.ones(3)))


def test_values_written_by_any_run_are_refused_when_they_came_from_a_target():
    from tolk import gradient as tg
    from tolk import jit
    x0 = np.array([0.5, -1.0, 2.0])
    p = Tensor(x0).requires_grad_()
    s = Tensor(np.zeros(3)).contiguous().realize()
    s.assign(p * 2)
    s.realize()  # (an assign's value, settled: its graph is gone)
    with pytest.raises(GradientError, match="before this gradient"):
        (s * p).sum().gradient(p)
    y = Tensor(np.zeros(4)).contiguous().realize()
    y[1:3] = p[1:3] * 2
    y.realize()
    with pytest.raises(GradientError, match="before this gradient"):
        (y[1:3] * p[1:3]).sum().gradient(p)

    @jit
    def f(x):
        return (x * p).contiguous()

    for i in range(4):  # (eager, capture, then replays: each output's sources recorded)
        out = f(Tensor(np.array([1.0, 2.0, 3.0]) + i))
        with pytest.raises(GradientError, match="before this gradient"):
            (out * p).sum().gradient(p)
    lazy = (Tensor(x0) * 1.0).requires_grad_()  # (marking a computed tensor realizes it)
    twice = lazy * 2
    Tensor.realize(lazy, twice)
    with pytest.raises(GradientError, match="before this gradient"):
        (twice * lazy).sum().gradient(lazy)
    w = Tensor(x0).requires_grad_()
    e = (w * 2).realize().detach()  # (detached after the realize: gradients stop there)
    np.testing.assert_array_equal((e * w).sum().gradient(w)[0].numpy(), 2 * x0)
    h = Tensor(np.zeros(3)).realize()
    for _ in range(3):  # (truncated backpropagation through time: the state detached)
        h = (h * 0.5 + w).tanh()
        (h * h).sum().gradient(w)
        h = h.realize().detach()
    before = len(tg._sources)
    for _ in range(50):  # (a functional update loop: the records do not grow)
        g = (w * w).sum().gradient(w)[0]
        w = (w - g * 0.1).realize().requires_grad_()
    assert len(tg._sources) <= before + 3


def test_records_follow_reads_not_writes_and_copies_and_remarks():
    x0 = np.array([1.0, 2.0, 3.0])
    w = Tensor(x0).requires_grad_()
    y = (w * 2).realize()
    w.requires_grad = False
    z = (y * 3).realize()  # (inherits y's record although w is unmarked now)
    w.requires_grad = True
    with pytest.raises(GradientError, match="before this gradient"):
        (z * w).sum().gradient(w)
    x = Tensor(np.zeros(3)).contiguous().realize()
    x.assign(w * 2).realize()
    x.assign(Tensor(np.full(3, 5.0)) * 1.0).realize()  # (overwritten whole: no longer from w)
    np.testing.assert_array_equal((x * w).sum().gradient(w)[0].numpy(), [5.0, 5.0, 5.0])
    h = (w * 2).detach()
    h.realize()  # (detached inside the kernel: its buffer is not from w)
    np.testing.assert_array_equal((h * w).sum().gradient(w)[0].numpy(), 2 * x0)
    tgt = Tensor(np.ones(3)).realize()
    tgt.assign(tgt * 0.9 + w.detach() * 0.1).realize()  # (an EMA of a detached weight)
    np.testing.assert_allclose((tgt * w).sum().gradient(w)[0].numpy(), 0.9 + 0.1 * x0)
    base = Tensor(x0).realize()
    wide = base.reshape(1, 3).expand(2, 3)
    wide.requires_grad = True  # (a marked broadcast view: its buffer is base's)
    twice = (wide * 2).realize()
    with pytest.raises(GradientError, match="before this gradient"):
        (twice * wide).sum().gradient(wide)
    lazy = w * 2
    bad = Tensor(np.array([2, 3, 4])) ** Tensor(np.array([1, -1, 1]))
    after = lazy + 1
    with pytest.raises(ValueError):
        Tensor.realize(lazy, bad)  # (a failed run: the settled copies keep their records)
    with pytest.raises(GradientError, match="before this gradient"):
        (after * w).sum().gradient(w)


def test_round_four_temp_copies_whole_stores_leaf_paths_and_no_retention():
    import gc

    from tolk import gradient as tg
    w = Tensor(np.array([1.0, 2.0, 3.0])).requires_grad_()
    x = Tensor(np.zeros(3)).contiguous().realize()
    q = ((x + w) * (x + w)).sum()
    x.assign(Tensor(np.full(3, 5.0)) * 1.0)
    bad = (Tensor(np.array([2, 3, 4])) ** Tensor(np.array([1, -1, 1]))).cast("float64")
    q = q + x + w + bad
    with pytest.raises(ValueError):
        Tensor.realize(x, q)  # (the run fails after a temporary read w: a private copy kept)
    with pytest.raises(GradientError, match="before this gradient"):
        q.sum().gradient(w)
    s = Tensor(np.zeros(())).contiguous().realize()
    s.assign((w * 2).sum()).realize()
    s.assign(Tensor(np.array([1.0, 2.0, 3.0])).sum()).realize()  # (a whole store via a reshape)
    np.testing.assert_array_equal((s * w).sum().gradient(w)[0].numpy(), [6.0, 6.0, 6.0])
    w2 = (w * 2).requires_grad_()  # (a marked leaf holding a value computed from w)
    with pytest.raises(GradientError, match="before this gradient"):
        (w2 * w).sum().gradient(w)
    from tolk.runtime import device
    gc.collect()
    stored = len(device._storage)
    v = Tensor(np.ones(64)).requires_grad_()
    total = Tensor(np.zeros(())).contiguous().realize()
    for _ in range(40):  # (a functional loop with a running total: no dropped buffer kept)
        loss = (v * v).sum()
        g = loss.gradient(v)[0]
        total.assign(total + loss.detach()).realize()
        v = (v - g * 0.01).realize().requires_grad_()
    gc.collect()
    assert len(tg._leaf_sources) < 10 and len(device._storage) - stored < 10  # (freed)


def test_a_store_through_a_padded_view_keeps_the_old_record():
    w = Tensor(np.array([1.0, 2.0, 3.0, 4.0])).requires_grad_()
    y = (w * 2).contiguous().realize()
    y[1:3]._pad(((1, 1),)).assign(Tensor(np.array([9.0, 9, 9, 9]))).realize()
    with pytest.raises(GradientError, match="before this gradient"):
        (y * w).sum().gradient(w)  # (y[0] and y[3] still came from w)


def test_a_jit_capture_records_its_calls_and_marking_runs_pending_assigns():
    from tolk import jit
    w1 = Tensor(np.array([1.0, 2, 3, 4]), requires_grad=True)
    w2 = Tensor(np.array([0.5, 0.25, 2, 1]))

    @jit
    def step(x):
        w1.grad = None
        w2.grad = None
        h = (x * w2).contiguous().realize()
        (h * (w1 + w2)).sum().backward()
        return (w2.grad if w2.grad is not None else w1.grad).contiguous()

    step(Tensor(np.ones(4)))
    w2.requires_grad_()  # (unfrozen between the plain call and the capture)
    with pytest.raises(GradientError, match="before this gradient"):
        step(Tensor(2 * np.ones(4)))
    x = Tensor(np.array([1.0, 2, 3, 4]), requires_grad=True)
    w = Tensor(np.zeros(4)).realize()
    w.assign(x * 2)  # (pending when its view is marked: marking runs it first)
    t = w[0:4]
    t.requires_grad_()
    with pytest.raises(GradientError, match="one computed from"):
        (t * x).sum().gradient(x, t)


def test_gradients_stay_finite_where_a_branch_or_a_root_would_give_nan():
    """Points where a composite's backward multiplied an infinity by a zero (a reviewer's
    list, each checked against the derivative of the function itself)."""
    def grad(fn, a, *more):
        x = Tensor(np.asarray(a)).requires_grad_()
        return fn(x, *more).sum().gradient(x)[0].numpy()

    f32 = np.array([-100.0, 0.0, 100.0], np.float32)
    np.testing.assert_array_equal(grad(lambda x: x.sigmoid(), f32), [0.0, 0.25, 0.0])
    np.testing.assert_array_equal(grad(lambda x: x.silu(), f32), [0.0, 0.5, 1.0])
    assert np.isfinite(grad(lambda x: x.quick_gelu(), np.array([-800.0, 800.0]))).all()
    big = np.array([100.0, 1.0, 0.0, -1.0, -100.0], np.float32)
    e = np.exp(np.array([-1.0, -100.0, -0.5, -50.0], np.float32))  # (exp(x), not expm1(x) + 1)
    np.testing.assert_allclose(grad(lambda x: x.elu(), big), [1, 1, 1, e[0], e[1]], rtol=1e-6)
    np.testing.assert_allclose(grad(lambda x: x.celu(2.0), big), [1, 1, 1, e[2], e[3]],
                               rtol=1e-6)
    inf = np.array([np.inf, 1.0, -np.inf], np.float32)
    np.testing.assert_array_equal(grad(lambda x: x.elu(), inf), [1.0, 1.0, 0.0])
    assert np.isfinite(grad(lambda x: x.selu(), big)).all()
    p = np.array([0.0, 1.0, 0.0, 1.0, 0.3])
    t = Tensor(np.array([0.0, 1.0, 1.0, 0.0, 1.0]))
    got = grad(lambda x: x.binary_cross_entropy(t, reduction="none"), p)
    np.testing.assert_allclose(got, [1.0, -1.0, 0.0, 0.0, -1 / 0.3], rtol=1e-12)
    a, b = Tensor(np.zeros(1)).requires_grad_(), Tensor(np.zeros(1)).requires_grad_()
    assert [g.numpy().tolist() for g in a.logaddexp(b).sum().gradient(a, b)] == [[0.5], [0.5]]
    x = Tensor(np.float32([0, 1, 4, 9, 16])).realize().requires_grad_()
    v = x[::2].requires_grad_()  # (a padded view: an infinite gradient stays one)
    np.testing.assert_array_equal(v.sqrt().sum().gradient(v)[0].numpy(), [np.inf, 0.25, 0.125])
    np.testing.assert_array_equal(grad(lambda x: x.std(), np.ones(3)), 0.0)
    for ord_ in (None, 3, 0.5, -1):
        np.testing.assert_array_equal(grad(lambda x: x.norm(ord=ord_), np.zeros(2)), 0.0)
    np.testing.assert_allclose(grad(lambda x: x.norm(ord=0.5), np.array([0.0, 1.0, 4.0])),
                               [0.0, 3.0, 1.5])
    tiny = Tensor(np.float32([1e-30])).requires_grad_()  # (squares round to 0: no origin)
    assert np.isinf(tiny.arctan2(tiny.detach()).sum().gradient(tiny)[0].numpy()).all()
    xs, ys = np.array([0.0, 0.0, 0.0, 1.0]), np.array([2.0, 0.0, -1.0, 3.0])
    gx, gy = (lambda a, b: a.xlogy(b).sum().gradient(a, b))(
        Tensor(xs).requires_grad_(), Tensor(ys).requires_grad_())
    np.testing.assert_allclose(gx.numpy(), [np.log(2.0), 0.0, 0.0, np.log(3.0)])
    np.testing.assert_allclose(gy.numpy(), [0.0, 0.0, 0.0, 1 / 3])
    np.testing.assert_array_equal(grad(lambda x: x.norm(axis=(0, 1)), np.zeros((2, 2))), 0.0)
    np.testing.assert_allclose(grad(lambda x: x.norm(), np.array([3.0, 4.0])), [0.6, 0.8])
    np.testing.assert_array_equal(grad(lambda x: x.arctan2(Tensor(np.zeros(1))), np.zeros(1)), 0)
    np.testing.assert_array_equal(grad(lambda x: x.hypot(Tensor(np.zeros(1))), np.zeros(1)), 0)
    np.testing.assert_array_equal(
        grad(lambda x: x.copysign(Tensor(np.array([-1.0, 1.0, -3.0]))), np.array([0.0, -0.0, 2.0])),
        [0.0, 0.0, -1.0])
    q, z = Tensor(np.ones((2, 3))).requires_grad_(), Tensor(np.ones((2, 0))).requires_grad_()
    gq, gz = q.cat(z, dim=1).sum().gradient(q, z)  # (an empty part leaves the graph)
    assert gz.shape == (2, 0) and gq.numpy().tolist() == [[1.0] * 3] * 2


def test_sigmoid_is_one_op_with_the_formulas_values():
    for dt in (np.float16, np.float32, np.float64):
        a = np.array([-1000, -100, -20, -1, -0.0, 0, 1, 20, 100, 1000, np.inf, -np.inf, np.nan], dt)
        with np.errstate(all="ignore"):
            want = (1 / (1 + np.exp(-a.astype(np.float32 if dt == np.float16 else dt)))).astype(dt)
        got = Tensor(a).sigmoid()
        assert got.dtype.np == dt and (dt == np.float16 or got.uop.op.name == "SIGMOID")
        np.testing.assert_array_equal(got.numpy(), want)
        np.testing.assert_array_equal(Tensor(a)[::-2].sigmoid().numpy(), want[::-2])
    check(lambda x: x.sigmoid() * x, rand(3, 4))
