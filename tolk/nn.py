"""The neural-network functions of `Tensor`, as PyTorch defines and names them: activations,
losses, attention, dropout, normalizations, 1-d and transposed convolutions, 1-d pools and
interpolation. Each is written once over Tensor operations (so gradients, fusion and the
schedule need nothing of their own) and becomes a method of `Tensor` when tolk is imported
(`tolk.tensor` imports this module last): ``x.cross_entropy(y)``, ``x.layer_norm(4)``.
Ints and bools compute in float32; 16-bit floats mostly in float32, rounded once."""
from __future__ import annotations

import math
import numbers

import numpy as np

from tolk.dtype import dtypes, least_upper_dtype
from tolk.errors import ShapeError
from tolk.helpers import int_arg, real_arg
from tolk.tensor import (Tensor, _all_tensors, _broadcast_shape, _conv_args, _conv_padding,
                         _half_in_float32, _named_padding, _pair, _static_dims, _width)

_SELU_ALPHA = 1.6732632423543772848170429916717  # (selu's self-normalizing constants)
_SELU_SCALE = 1.0507009873554804934193349852946
_REDUCTIONS = ("mean", "sum", "none")


def _check_reduction(reduction, name: str) -> None:
    if not isinstance(reduction, str) or reduction not in _REDUCTIONS:
        raise ValueError(f"{name}'s reduction must be 'mean', 'sum' or 'none', "
                         f"got {reduction!r}"[:200])


def _reduce_loss(loss: Tensor, reduction: str, weights: Tensor | None = None) -> Tensor:
    """`loss` summed, averaged (over `weights`' sum where given, else its count) or kept."""
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.mean() if weights is None else loss.sum() / weights.sum()


def _as_tensor(x, like: Tensor) -> Tensor:
    """`x` as a float tensor next to `like`: a float tensor as it is, an int or bool one cast
    to `like`'s dtype, an array, list or number made a tensor of that dtype on its device."""
    if isinstance(x, Tensor):
        return x if x.dtype.is_float else x.cast(like.dtype)
    return Tensor(np.asarray(x), device=like.device).cast(like.dtype)


def _loss_weight(w, x: Tensor, what: str) -> Tensor:
    """A weight broadcast against input `x` without growing it (a ShapeError naming it)."""
    w = _as_tensor(w, x)
    try:
        grown = _broadcast_shape(w.shape, x.shape) != x.shape
    except ShapeError:
        grown = True
    if grown:
        raise ShapeError(f"{what} of shape {w.shape} does not broadcast to the input's shape "
                         f"{x.shape}")
    return w


def _same_shape_target(target, x: Tensor, name: str) -> Tensor:
    t = _as_tensor(target, x)
    if t.shape != x.shape:
        raise ShapeError(f"{name} of input {x.shape} with target {t.shape}: the shapes must "
                         "be equal")
    return t


def _loss_difference(x: Tensor, target) -> Tensor:
    x = x._float()
    return x - (target._float() if isinstance(target, Tensor) else target)


def _class_weight(weight, x: Tensor, axis: int, name: str) -> Tensor:
    """`weight`, a 1-d tensor of one float per class, shaped to broadcast along `axis`."""
    w = _as_tensor(weight, x)
    if w.shape != (x.shape[axis],):
        raise ShapeError(f"{name}'s weight must have one value per class, shape "
                         f"({x.shape[axis]},), got {w.shape}")
    return w.reshape(tuple(x.shape[axis] if i == axis else 1 for i in range(x.ndim)))


def _picked_nll(logp: Tensor, target, weight, ignore_index, name: str):
    """Per element of the class indices `target`: ``-weight[t] * logp[n, t, ...]`` (0 where
    ignored), the weight each counts with (0 where ignored) and where it is ignored, all of
    `target`'s shape. A class out of range indexes past the flattened `logp`, so the gather
    raises when it runs (no row's value is read in its place)."""
    if logp.ndim == 0:
        raise ShapeError(f"{name} needs log-probabilities with a class axis, got a 0-d tensor")
    axis = 1 if logp.ndim >= 2 else 0
    if not isinstance(target, Tensor):
        target = Tensor(np.asarray(target), device=logp.device)
    if target.dtype.is_float or target.dtype is dtypes.bool:
        raise TypeError(f"{name}'s target must hold class indices (an integer tensor), got "
                        f"{target.dtype.name}")
    rows = logp.shape[:axis] + logp.shape[axis + 1:]
    if target.shape != rows:
        raise ShapeError(f"{name} of input {logp.shape} with target {target.shape}: the "
                         f"target must have the input's shape without its class axis, {rows}")
    if not all(isinstance(d, int) for d in logp.shape):
        raise ShapeError(f"{name} of input {logp.shape}: symbolic sizes are not supported")
    classes = logp.shape[axis]
    if classes == 0:
        raise ShapeError(f"{name} of input {logp.shape}: there are no classes")
    ignore_index = int_arg(ignore_index, f"{name}'s ignore_index")
    count = math.prod(rows)
    t = target.cast(dtypes.int64).reshape(count)
    ignored = t == ignore_index
    start = Tensor.arange(count, dtype=dtypes.int64, device=logp.device) * classes
    inside = (t >= 0) & (t < classes)
    if target.dtype is dtypes.uint64:  # (past int64's range: out of range, never ignored)
        wrapped = (target > 2**63 - 1).reshape(count)
        ignored, inside = ignored & ~wrapped, inside & ~wrapped
    at = ignored.where(start, inside.where(start + t, count * classes))
    flat = (logp.moveaxis(axis, -1) if axis else logp).reshape(count * classes)
    nll = -flat.gather(at)
    if weight is None:
        w = (~ignored).cast(logp.dtype)
    else:
        w = _class_weight(weight, logp, axis, name).reshape(classes)
        w = ignored.where(0, w.gather((ignored | ~inside).where(0, t)))
        nll = nll * w
    nll = ignored.where(0, nll)
    return nll.reshape(rows), w.reshape(rows), ignored.reshape(rows)


def _channel_values(t, x: Tensor, c, what: str) -> Tensor:
    """`t`, C values of a per-channel statistic or parameter, as a float tensor."""
    t = _as_tensor(t, x)
    if t.shape != (c,):
        raise ShapeError(f"{what} must have one value per channel, shape ({c},), got {t.shape}")
    return t


def _normalized(x: Tensor, axes: tuple[int, ...], eps: float) -> Tensor:
    """`x` minus its mean over `axes`, over the square root of its biased variance + eps."""
    y = x - x.mean(axes, keepdim=True)
    return y * ((y * y).mean(axes, keepdim=True) + eps).rsqrt()


def _trailing_axes(x: Tensor, normalized_shape, what: str) -> tuple[int, ...]:
    """The last axes of `x` that `normalized_shape` (an int or sizes) names."""
    dims = (normalized_shape,) if isinstance(normalized_shape, (int, np.integer)) \
        else tuple(normalized_shape) if isinstance(normalized_shape, (tuple, list)) else None
    if dims is None or not all(isinstance(d, (int, np.integer)) and not isinstance(d, bool)
                               for d in dims):
        raise TypeError(f"{what}'s normalized_shape must be an int or a tuple of ints, got "
                        f"{normalized_shape!r}"[:300])
    dims = tuple(int(d) for d in dims)
    if not dims or len(dims) > x.ndim or tuple(x.shape[x.ndim - len(dims):]) != dims:
        raise ShapeError(f"{what}'s normalized_shape {normalized_shape!r} must be the last "
                         f"axes of the input's shape {x.shape}"[:300])
    return tuple(range(x.ndim - len(dims), x.ndim))


def _affine(y: Tensor, weight, bias, want: tuple, view: tuple, what: str) -> Tensor:
    """``y * weight + bias``, each (when given) of shape `want`, broadcast as `view`."""
    for t, name in ((weight, "weight"), (bias, "bias")):
        if t is None:
            continue
        t = _as_tensor(t, y)
        if t.shape != want:
            raise ShapeError(f"{what}'s {name} must have shape {want}, got {t.shape}")
        y = y * t.reshape(view) if name == "weight" else y + t.reshape(view)
    return y


def _single(x, what: str) -> int:
    """A 1-d window size, stride, dilation or padding: an int or a sequence of one."""
    if isinstance(x, (tuple, list)) and len(x) == 1:
        x = x[0]
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
        raise TypeError(f"{what} must be an int, got {x!r}"[:200])
    return int(x)


def _conv1d_padding(padding, k: int, stride: int, dilation: int) -> tuple[int, int]:
    """(left, right) from an int, two ints, "valid" or "same"."""
    if isinstance(padding, str):
        return _named_padding(padding, (k,), (stride,), (dilation,), "conv1d")[0]
    if isinstance(padding, (tuple, list)) and len(padding) == 2:
        return _width(padding[0], padding), _width(padding[1], padding)
    p = _single(padding, "conv1d's padding")
    return p, p


def _per_axis(v, axes: int, what: str, kind: type) -> tuple:
    """A number, or a sequence of `axes` numbers, as `axes` values of `kind` (int or float)."""
    vals = tuple(v) if isinstance(v, (tuple, list)) else (v,) * axes
    ok = (int, np.integer) if kind is int else (int, float, np.integer, np.floating)
    if len(vals) != axes or any(isinstance(x, (bool, np.bool_)) or not isinstance(x, ok)
                                for x in vals):
        raise TypeError(f"{what} must be {'an int' if kind is int else 'a number'} or "
                        f"{axes} of them, got {v!r}"[:200])
    return tuple(kind(x) for x in vals)


@_half_in_float32
def leaky_relu(self, neg_slope: float = 0.01, *, negative_slope: float | None = None
               ) -> Tensor:
    """x where x > 0, else ``neg_slope * x`` (PyTorch's ``negative_slope`` too)."""
    if negative_slope is not None:
        neg_slope = negative_slope
    x = self._float()
    return (x > 0).where(x, x * neg_slope)


@_half_in_float32
def elu(self, alpha: float = 1.0) -> Tensor:
    """x where x > 0, else ``alpha * expm1(x)``; 16-bit floats in float32."""
    x = self._float()
    return (x > 0).where(x, _at_most_0(x).expm1() * alpha)


def _at_most_0(x: Tensor) -> Tensor:
    """x where x > 0 is false (nan stays), else 0: the argument of a branch taken only
    there, so that it never overflows where it is not taken (a branch's inf, multiplied by
    the zero gradient a `where` gives it, made nan gradients)."""
    return (x > 0).where(0.0, x)


@_half_in_float32
def celu(self, alpha: float = 1.0) -> Tensor:
    """x where x > 0, else ``alpha * expm1(x / alpha)`` (alpha 0 is a ValueError)."""
    if alpha == 0:
        raise ValueError("celu's alpha must not be 0 (it divides by it)")
    x = self._float()
    return (x > 0).where(x, (_at_most_0(x) / alpha).expm1() * alpha)


@_half_in_float32
def selu(self) -> Tensor:
    """``scale * elu(x, alpha)`` with the self-normalizing constants."""
    return self.elu(_SELU_ALPHA) * _SELU_SCALE


@_half_in_float32
def softplus(self, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta * x)) / beta``, computed without overflow; x itself where
    ``beta * x > threshold`` (PyTorch's). beta 0 is a ValueError."""
    if beta == 0:
        raise ValueError("softplus's beta must not be 0 (it divides by it)")
    x = self._float()
    bx = x * beta
    soft = (bx.maximum(0) + (-bx.abs()).exp().log1p()) / beta
    return (bx > threshold).where(x, soft)


@_half_in_float32
def logsigmoid(self) -> Tensor:
    """``log(sigmoid(x))``, computed without overflow: ``min(x, 0) - log1p(exp(-|x|))``."""
    x = self._float()
    return x.minimum(0) - (-x.abs()).exp().log1p()


@_half_in_float32
def mish(self) -> Tensor:
    """``x * tanh(softplus(x))``."""
    x = self._float()
    return x * x.softplus().tanh()


def relu6(self) -> Tensor:
    """``min(max(x, 0), 6)``: ints stay ints, bools become int32 (as relu)."""
    return self.relu().minimum(6)


def hardtanh(self, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """x clipped to ``[min_val, max_val]``, as `clip` (its dtype: int tensors stay ints
    for int bounds, become float32 for float ones; bools are a TypeError). Bounds in the
    wrong order are a ValueError (PyTorch's; `clip` takes them as numpy does)."""
    if self.dtype is dtypes.bool:
        raise TypeError("hardtanh of a bool tensor: cast it to a number first")
    if isinstance(min_val, numbers.Real) and isinstance(max_val, numbers.Real) \
            and min_val > max_val:
        raise ValueError(f"hardtanh's min_val {min_val!r} is above its max_val {max_val!r}")
    return self.clip(min_val, max_val)


@_half_in_float32
def hardsigmoid(self) -> Tensor:
    """``relu6(x + 3) / 6``."""
    return (self._float() + 3).relu6() / 6


@_half_in_float32
def hardswish(self) -> Tensor:
    """``x * relu6(x + 3) / 6``, as ``x * hardsigmoid(x)`` (no overflow for large x)."""
    x = self._float()
    return x * x.hardsigmoid()


@_half_in_float32
def softsign(self) -> Tensor:
    """``x / (1 + |x|)``."""
    x = self._float()
    return x / (x.abs() + 1)


@_half_in_float32
def quick_gelu(self) -> Tensor:
    """``x * sigmoid(1.702 * x)``, CLIP's approximation of gelu."""
    x = self._float()
    return x * (x * 1.702).sigmoid()


def scaled_dot_product_attention(self, key: Tensor, value: Tensor, attn_mask=None,
                                 dropout_p: float = 0.0, is_causal: bool = False,
                                 scale: float | None = None) -> Tensor:
    """``softmax(self @ key.T * scale + mask) @ value`` over the last two axes (queries
    (..., L, E), keys (..., S, E), values (..., S, Ev); batch axes broadcast), scale
    ``1 / sqrt(E)`` unless given. `attn_mask`: bool (True where a query may attend) or
    float (added to the scores), broadcast to (..., L, S); a query that may attend to no key
    (every score -inf) gets zeros, as PyTorch's (its gradient too). `is_causal`: query i
    attends to keys 0..i (not with a mask). `dropout_p` drops attention weights as `dropout`
    does (training). 16-bit floats in float32, rounded once."""
    _all_tensors("scaled_dot_product_attention", (key, value))
    q = self._float()
    if q.dtype.itemsize == 2:  # scores and softmax in float32, the result in the inputs' dtype
        want = least_upper_dtype(q.dtype, key._float().dtype, value._float().dtype)
        return q.cast(dtypes.float32).scaled_dot_product_attention(
            key, value, attn_mask, dropout_p, is_causal, scale).cast(want)
    if min(q.ndim, key.ndim, value.ndim) < 2:
        raise ShapeError(f"scaled_dot_product_attention needs queries, keys and values of at "
                         f"least 2 axes, got {q.shape}, {key.shape}, {value.shape}")
    if q.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise ShapeError(f"scaled_dot_product_attention: queries {q.shape}, keys "
                         f"{key.shape} and values {value.shape} must agree on E (the last "
                         "axis of queries and keys) and S (the keys' and values' rows)")
    dim = q.shape[-1]
    if scale is None:
        scale = 1.0 / math.sqrt(dim) if isinstance(dim, int) and dim else 1.0
    scores = (q @ key._float().transpose(-2, -1)) * scale
    if is_causal:
        if attn_mask is not None:
            raise ValueError("scaled_dot_product_attention takes attn_mask or is_causal, "
                             "not both (as PyTorch)")
        attn_mask = Tensor.ones(*scores.shape[-2:], dtype=dtypes.bool,
                                device=scores.device).tril(0)
    dead = None  # the queries that may attend to no key (a user's mask only)
    if attn_mask is not None:
        if not isinstance(attn_mask, Tensor):
            attn_mask = Tensor(np.asarray(attn_mask), device=scores.device)
        if attn_mask.dtype is dtypes.bool:
            scores = attn_mask.where(scores, -math.inf)
        elif attn_mask.dtype.is_float:  # (added in the scores' dtype, as PyTorch's)
            scores = scores + attn_mask.cast(scores.dtype)
        else:
            raise TypeError(f"scaled_dot_product_attention's attn_mask must be bool or "
                            f"float, got {attn_mask.dtype.name}")
        if not is_causal and scores.shape[-1] != 0:
            dead = scores.max(-1, keepdim=True) == -math.inf
            scores = dead.where(0.0, scores)  # (finite weights: no nan in the gradient)
    weights = scores.softmax(-1)
    if dropout_p:
        weights = weights.dropout(dropout_p)
    out = weights @ value._float()
    return out if dead is None else dead.where(0.0, out)


def dropout(self, p: float = 0.5, training: bool = True) -> Tensor:
    """Each element zeroed with probability `p`, the others scaled by ``1 / (1 - p)``
    (PyTorch's; ``Tensor.manual_seed`` makes it repeatable); itself when not `training`
    or p is 0, zeros when p is 1."""
    if not self.dtype.is_float:
        raise TypeError(f"dropout of a {self.dtype.name} tensor: it scales values, give a "
                        "float tensor (as PyTorch)")
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout's p must be in [0, 1], got {p!r}")
    if not training or p == 0.0:
        return self
    if p == 1.0:
        return self * 0
    keep = Tensor.rand(*self.shape, device=self.device) >= p
    return keep.where(self._float() / (1 - p), 0)


@_half_in_float32
def batch_norm(self, running_mean=None, running_var=None, weight=None, bias=None,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """PyTorch's batch normalization over axis 1 (channels) of (N, C, ...):
    ``(x - mean) / sqrt(var + eps) * weight + bias``. Not `training`: the running
    statistics (tensors of C values). `training`: the batch's mean and biased variance
    over every axis but 1, and the running statistics, when given, updated in place
    (assigned: ``(1 - momentum) * running + momentum * batch``, the variance unbiased).
    16-bit floats are normalized in float32."""
    if self.ndim < 2:
        raise ShapeError(f"batch_norm needs (N, C, ...) input, got shape {self.shape}")
    x = self._float()
    c = x.shape[1]
    shape = tuple(c if a == 1 else 1 for a in range(x.ndim))
    stats = [None if t is None else _channel_values(t, x, c, f"batch_norm's {name}")
             for t, name in ((running_mean, "running_mean"), (running_var, "running_var"),
                             (weight, "weight"), (bias, "bias"))]
    axes = tuple(a for a in range(x.ndim) if a != 1)
    if training:
        for run, name in ((running_mean, "running_mean"), (running_var, "running_var")):
            if run is not None and not isinstance(run, Tensor):
                raise TypeError(f"batch_norm in training updates its {name} in place: give "
                                f"a Tensor, got {type(run).__name__}")
        if isinstance(momentum, bool) or not isinstance(momentum, (int, float)):
            raise TypeError(f"batch_norm's momentum must be a number, got {momentum!r}")
        n = x._count(axes)  # (a symbolic batch: a count tensor, 1 gives an infinite variance)
        if isinstance(n, int) and (n <= 1 or not c):
            raise ValueError(f"batch_norm in training needs more than one value per "
                             f"channel, got input of shape {x.shape}")
        mean = x.mean(axes)
        var = ((x - mean.reshape(shape)) ** 2).mean(axes)
        for run, batch in ((running_mean, mean), (running_var, var * (n / (n - 1)))):
            if isinstance(run, Tensor):
                run.assign((run * (1 - momentum) + batch * momentum).cast(run.dtype))
    else:
        if stats[0] is None or stats[1] is None:
            raise ValueError("batch_norm outside training needs running_mean and "
                             "running_var")
        mean, var = stats[0], stats[1]
    y = (x - mean.reshape(shape)) * (var.reshape(shape) + eps).rsqrt()
    if stats[2] is not None:
        y = y * stats[2].reshape(shape)
    return y if stats[3] is None else y + stats[3].reshape(shape)


@_half_in_float32
def group_norm(self, num_groups: int, weight=None, bias=None, eps: float = 1e-5) -> Tensor:
    """PyTorch's group normalization of (N, C, ...): the channels in `num_groups` groups,
    each normalized over its channels and the other axes (biased variance), then
    ``* weight + bias`` per channel."""
    num_groups = int_arg(num_groups, "group_norm's num_groups")
    if self.ndim < 2 or num_groups < 1 or self.shape[1] % num_groups:
        raise ShapeError(f"group_norm of shape {self.shape}: the channels (axis 1) must "
                         f"divide into {num_groups} groups")
    x = self._float()
    n, c = x.shape[:2]
    empty = any(isinstance(d, int) and d == 0 for d in x.shape)
    g = x.reshape(n, num_groups, 0) if empty else x.reshape(n, num_groups, -1)
    y = _normalized(g, (2,), eps).reshape(x.shape)
    view = tuple(c if a == 1 else 1 for a in range(x.ndim))
    return _affine(y, weight, bias, (c,), view, "group_norm")


@_half_in_float32
def layer_norm(self, normalized_shape, weight=None, bias=None, eps: float = 1e-5) -> Tensor:
    """PyTorch's layer normalization over the last axes, `normalized_shape` (an int or a
    tuple, those axes' sizes; biased variance), then ``* weight + bias`` (tensors of
    that shape). `layernorm` is tinygrad's spelling (one axis, no affine)."""
    axes = _trailing_axes(self, normalized_shape, "layer_norm")
    y = _normalized(self._float(), axes, eps)
    want = tuple(self.shape[axes[0]:])
    return _affine(y, weight, bias, want, want, "layer_norm")


def rms_norm(self, normalized_shape, weight=None, eps: float | None = None) -> Tensor:
    """PyTorch's RMS normalization over the last axes: ``x / sqrt(mean(x**2) + eps) *
    weight``; eps by default float32's machine epsilon, float64's for float64 (PyTorch's: a
    16-bit input's own epsilon would swamp small values). 16-bit floats in float32, rounded
    once."""
    axes = _trailing_axes(self, normalized_shape, "rms_norm")
    x = self._float()
    if eps is None:
        eps = float(np.finfo(np.float64 if x.dtype is dtypes.float64 else np.float32).eps)
    wide = x.cast(dtypes.float32) if x.dtype.itemsize == 2 else x
    y = wide * ((wide * wide).mean(axes, keepdim=True) + eps).rsqrt()
    want = tuple(self.shape[axes[0]:])
    return _affine(y, weight, None, want, want, "rms_norm").cast(x.dtype)


@_half_in_float32
def nll_loss(self, target, weight=None, ignore_index: int = -100,
             reduction: str = "mean") -> Tensor:
    """The negative log likelihood of the classes `target` names, from log-probabilities
    over axis 1 (axis 0 of a 1-d tensor): ``-weight[t] * self[n, t, ...]`` per element of
    the integer tensor `target` (this shape without the class axis). Elements equal to
    `ignore_index` give 0 and count for nothing; "mean" divides by the sum of the
    weights of the others (nan when every element is ignored). A class outside
    ``[0, C)`` raises numpy's IndexError when the kernel runs."""
    _check_reduction(reduction, "nll_loss")
    nll, w, _ = _picked_nll(self._float(), target, weight, ignore_index, "nll_loss")
    return _reduce_loss(nll, reduction, w)


@_half_in_float32
def cross_entropy(self, target, weight=None, ignore_index: int = -100,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """PyTorch's cross entropy of logits over axis 1 (axis 0 of a 1-d tensor) and
    `target`: class indices (an integer tensor, as `nll_loss` takes them, of this shape
    without the class axis) or class probabilities (a float tensor of this shape; "mean"
    divides by the number of its rows, `ignore_index` is refused). `label_smoothing` in
    [0, 1] mixes the targets with the uniform distribution over the C classes:
    ``(1 - s) * nll + s / C * sum_c(-weight[c] * log_softmax[c])`` for indices, the
    probabilities ``p * (1 - s) + s / C``. Computed from ``log_softmax`` (no overflow)."""
    _check_reduction(reduction, "cross_entropy")
    s = float(label_smoothing)
    if not 0.0 <= s <= 1.0:
        raise ValueError(f"cross_entropy's label_smoothing must be in [0, 1], got {s!r}")
    x = self._float()
    if x.ndim == 0:
        raise ShapeError("cross_entropy needs logits with a class axis, got a 0-d tensor")
    axis = 1 if x.ndim >= 2 else 0
    logp = x.log_softmax(axis)
    classes = x.shape[axis]
    if not isinstance(target, Tensor):  # (an array of probabilities or of indices)
        target = Tensor(np.asarray(target), device=x.device)
    wc = None if weight is None else _class_weight(weight, x, axis, "cross_entropy")
    if isinstance(target, Tensor) and target.dtype.is_float:
        if ignore_index != -100:
            raise ValueError("cross_entropy's ignore_index applies to class indices only, "
                             "not to a target of probabilities")
        if target.shape != x.shape:
            raise ShapeError(f"cross_entropy of logits {x.shape} with probabilities "
                             f"{target.shape}: the shapes must be equal")
        p = target.cast(x.dtype)
        if s:
            p = p * (1 - s) + s / classes
        terms = logp * p
        loss = -(terms if wc is None else terms * wc).sum(axis)
        return _reduce_loss(loss, reduction)
    nll, w, ignored = _picked_nll(logp, target, weight, ignore_index, "cross_entropy")
    if s:
        smooth = -(logp if wc is None else logp * wc).sum(axis)
        nll = nll * (1 - s) + ignored.where(0, smooth) * (s / classes)
    return _reduce_loss(nll, reduction, w)


@_half_in_float32
def binary_cross_entropy(self, target, weight=None, reduction: str = "mean") -> Tensor:
    """``-weight * (t * log(p) + (1 - t) * log1p(-p))`` for probabilities p (this
    tensor) and targets t (its shape), each log at least -100 (PyTorch's: a p of 0 or 1
    gives a finite loss, and a finite gradient: 0 through a log held at -100). A p outside
    [0, 1] gives nan (PyTorch raises)."""
    _check_reduction(reduction, "binary_cross_entropy")
    p = self._float()
    t = _same_shape_target(target, p, "binary_cross_entropy")
    loss = (t - 1) * _log_at_least_m100(-p, Tensor.log1p, -1) - t * _log_at_least_m100(
        p, Tensor.log, 0)
    if weight is not None:
        loss = loss * _loss_weight(weight, p, "binary_cross_entropy's weight")
    return _reduce_loss(loss, reduction)


def _log_at_least_m100(u: Tensor, log, pole: float) -> Tensor:
    """``log(u).maximum(-100)`` (`log`: Tensor.log or Tensor.log1p, -inf at `pole`) whose
    gradient is finite at the pole too: there the log is taken of a finite stand-in and -100
    chosen (a -inf held at -100 passed 0 / 0 back)."""
    at_pole = u == pole
    return at_pole.where(-100.0, log(u + at_pole.cast(u.dtype))).maximum(-100)


@_half_in_float32
def binary_cross_entropy_with_logits(self, target, weight=None, pos_weight=None,
                                     reduction: str = "mean") -> Tensor:
    """`binary_cross_entropy` of ``sigmoid(self)``, computed from the logits without
    overflow: ``(1 - t) * x + (1 + (pos_weight - 1) * t) * (log1p(exp(-|x|)) +
    max(-x, 0))``, times `weight`; `pos_weight` weighs the positive term (broadcast
    along the last axis, as PyTorch's)."""
    _check_reduction(reduction, "binary_cross_entropy_with_logits")
    x = self._float()
    t = _same_shape_target(target, x, "binary_cross_entropy_with_logits")
    soft = (-x.abs()).exp().log1p() + (-x).maximum(0)
    if pos_weight is not None:
        pw = _loss_weight(pos_weight, x, "binary_cross_entropy_with_logits's pos_weight")
        soft = soft * ((pw - 1) * t + 1)
    loss = (1 - t) * x + soft
    if weight is not None:
        loss = loss * _loss_weight(weight, x, "binary_cross_entropy_with_logits's weight")
    return _reduce_loss(loss, reduction)


@_half_in_float32
def mse_loss(self, target, reduction: str = "mean") -> Tensor:
    """``(self - target) ** 2`` (broadcast; ints in float32)."""
    _check_reduction(reduction, "mse_loss")
    return _reduce_loss(_loss_difference(self, target).square(), reduction)


@_half_in_float32
def l1_loss(self, target, reduction: str = "mean") -> Tensor:
    """``|self - target|`` (broadcast; ints in float32)."""
    _check_reduction(reduction, "l1_loss")
    return _reduce_loss(_loss_difference(self, target).abs(), reduction)


@_half_in_float32
def smooth_l1_loss(self, target, reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """``0.5 * d**2 / beta`` where ``d = |self - target| < beta``, else ``d - 0.5 * beta``
    (the l1 loss for beta 0; a negative or nan beta is a ValueError). 16-bit floats in
    float32, rounded once."""
    _check_reduction(reduction, "smooth_l1_loss")
    beta = real_arg(beta, "smooth_l1_loss's beta")
    d = _loss_difference(self, target).abs()
    if beta == 0:
        return _reduce_loss(d, reduction)
    return _reduce_loss((d < beta).where(d * (d / beta) * 0.5, d - 0.5 * beta), reduction)


@_half_in_float32
def huber_loss(self, target, reduction: str = "mean", delta: float = 1.0) -> Tensor:
    """``0.5 * d**2`` where ``d = |self - target| <= delta``, else
    ``delta * (d - 0.5 * delta)`` (delta must be > 0). 16-bit floats in float32, rounded
    once."""
    _check_reduction(reduction, "huber_loss")
    delta = real_arg(delta, "huber_loss's delta", above_zero=True)
    d = _loss_difference(self, target).abs()
    return _reduce_loss((d <= delta).where(d * (d * 0.5), (d - 0.5 * delta) * delta),
                        reduction)


def conv1d(self, weight: Tensor, bias: Tensor | None = None, groups: int = 1, stride=1,
           dilation=1, padding=0) -> Tensor:
    """1-D convolution (cross-correlation), NCL input and (Cout, Cin/groups, K) weight:
    `conv2d` over a height of 1, its arguments in conv2d's order (tinygrad's: groups,
    stride, dilation, padding; PyTorch's conv1d takes stride, padding, dilation, groups:
    pass them by name). `padding` is an int, two ints (left, right; a negative one crops,
    as in conv2d), or PyTorch's "valid" (none) or "same" (stride 1: the output as long as
    the input, the odd one of the padding on the right)."""
    _all_tensors("conv1d", (weight,) if bias is None else (weight, bias))
    if self.ndim != 3 or weight.ndim != 3:
        raise ShapeError(f"conv1d needs 3-D input and weight, got {self.shape} and "
                         f"{weight.shape}")
    s, d = _single(stride, "conv1d's stride"), _single(dilation, "conv1d's dilation")
    lo, hi = _conv1d_padding(padding, weight.shape[2], s, d)
    out = self.unsqueeze(2).conv2d(weight.unsqueeze(2), bias, groups, (1, s), (1, d),
                                   (lo, hi, 0, 0))
    return out.squeeze(2)


def conv_transpose2d(self, weight: Tensor, bias: Tensor | None = None, groups: int = 1,
                     stride=1, dilation=1, padding=0, output_padding=0) -> Tensor:
    """PyTorch's transposed 2-D convolution (the gradient of `conv2d` with respect to its
    input): NCHW input and (Cin, Cout/groups, KH, KW) weight; each input pixel adds
    its weight window into the output at ``stride`` steps, ``padding`` cropped from each
    side, ``output_padding`` added on the bottom and right (smaller than the stride or
    the dilation). Run as `conv2d` of the input spread out with zeros, padded, with the
    weight flipped and its channels swapped. Arguments in tinygrad's order (groups,
    stride, dilation, padding, output_padding); PyTorch's takes stride, padding,
    output_padding, groups, dilation: pass them by name."""
    groups = _conv_args("conv_transpose2d", self, weight, bias, groups)
    cin, cout_g, kh, kw = weight.shape
    if self.shape[1] != cin or cin % groups:
        raise ShapeError(f"conv_transpose2d: input channels {self.shape[1]} must equal the "
                         f"weight's first axis {cin}, divisible by groups ({groups})")
    (sh, sw), (dh, dw) = _pair(stride), _pair(dilation)
    if min(sh, sw, dh, dw) < 1:
        raise ValueError(f"conv_transpose2d's stride and dilation must be >= 1, got "
                         f"{stride!r} and {dilation!r}")
    pads = _conv_padding(padding)
    if any(p < 0 for pp in pads for p in pp):
        raise ValueError(f"conv_transpose2d's padding must be >= 0, got {padding!r}")
    (ph, pw), extra = (pads[0][0], pads[1][0]), _pair(output_padding)
    if pads[0][0] != pads[0][1] or pads[1][0] != pads[1][1]:
        raise ValueError(f"conv_transpose2d's padding is one int per axis (each side "
                         f"alike), got {padding!r}")
    for e, st, dl in zip(extra, (sh, sw), (dh, dw)):
        if not 0 <= e < max(st, dl):
            raise ValueError(f"conv_transpose2d's output_padding {output_padding!r} must be "
                             f">= 0 and smaller than the stride or the dilation")
    _static_dims(self, "conv_transpose2d", (2, 3))
    n, _, h, w = self.shape
    if h == 0 or w == 0:
        raise ShapeError(f"conv_transpose2d of input {self.shape}: its height and width "
                         "must be at least 1 (as PyTorch's)")
    x = self
    if sh > 1 or sw > 1:  # (zeros between the pixels: each pixel a block, then cropped)
        x = x.reshape(n, cin, h, 1, w, 1)._pad(((0, 0), (0, 0), (0, 0), (0, sh - 1), (0, 0),
                                                (0, sw - 1)))
        x = x.reshape(n, cin, h * sh, w * sw)[:, :, :max(h * sh - sh + 1, 0),
                                               :max(w * sw - sw + 1, 0)]
    wt = weight.reshape(groups, cin // groups, cout_g, kh, kw).permute(0, 2, 1, 3, 4)
    wt = wt.reshape(groups * cout_g, cin // groups, kh, kw).flip((2, 3))
    lo_h, lo_w = dh * (kh - 1) - ph, dw * (kw - 1) - pw
    return x.conv2d(wt, bias, groups, 1, (dh, dw),
                    (lo_w, lo_w + extra[1], lo_h, lo_h + extra[0]))


def conv_transpose1d(self, weight: Tensor, bias: Tensor | None = None, groups: int = 1,
                     stride=1, dilation=1, padding=0, output_padding=0) -> Tensor:
    """`conv_transpose2d` over a height of 1: NCL input, (Cin, Cout/groups, K) weight;
    arguments in its order (not PyTorch's: pass them by name)."""
    _all_tensors("conv_transpose1d", (weight,) if bias is None else (weight, bias))
    if self.ndim != 3 or weight.ndim != 3:
        raise ShapeError(f"conv_transpose1d needs 3-D input and weight, got {self.shape} "
                         f"and {weight.shape}")
    s, d = _single(stride, "conv_transpose1d's stride"), \
        _single(dilation, "conv_transpose1d's dilation")
    p = _single(padding, "conv_transpose1d's padding")
    e = _single(output_padding, "conv_transpose1d's output_padding")
    out = self.unsqueeze(2).conv_transpose2d(weight.unsqueeze(2), bias, groups, (1, s),
                                             (1, d), (0, p), (0, e))
    return out.squeeze(2)


def max_pool1d(self, kernel_size=2, stride=None, dilation=1, padding=0) -> Tensor:
    """`max_pool2d` over the last axis alone (an int each), its arguments in max_pool2d's
    order (tinygrad's: kernel_size, stride, dilation, padding; PyTorch's max_pool1d takes
    padding before dilation: pass them by name)."""
    k = _single(kernel_size, "max_pool1d's kernel_size")
    s = k if stride is None else _single(stride, "max_pool1d's stride")
    p = _single(padding, "max_pool1d's padding")
    return self.unsqueeze(-2).max_pool2d((1, k), (1, s), (1, _single(
        dilation, "max_pool1d's dilation")), (p, p, 0, 0)).squeeze(-2)


def avg_pool1d(self, kernel_size=2, stride=None, padding=0) -> Tensor:
    """`avg_pool2d` over the last axis alone (an int each; PyTorch's order)."""
    k = _single(kernel_size, "avg_pool1d's kernel_size")
    s = k if stride is None else _single(stride, "avg_pool1d's stride")
    p = _single(padding, "avg_pool1d's padding")
    return self.unsqueeze(-2).avg_pool2d((1, k), (1, s), 1, (p, p, 0, 0)).squeeze(-2)


def interpolate(self, size=None, scale_factor=None, mode: str = "nearest",
                align_corners: bool | None = None) -> Tensor:
    """PyTorch's interpolate over the axes after the first two (N, C, ...): to `size` (an
    int or one per axis) or by `scale_factor` (a number or one per axis; the size
    ``floor(n * factor)``, source positions at ``1 / factor`` steps). "nearest" takes
    ``floor(i * scale)``, "nearest-exact" ``floor((i + 0.5) * scale)`` (with `size`,
    scale is ``n / size`` and the floor is exact, in integers); "linear",
    "bilinear" and "trilinear" (one, two or three axes) blend the two nearest values along
    each axis, pixel centres aligned unless `align_corners` (corners aligned). The
    nearest modes keep the dtype; the linear ones compute in float (ints in float32)."""
    axes = self.ndim - 2
    linear = {"linear": 1, "bilinear": 2, "trilinear": 3}
    if mode not in ("nearest", "nearest-exact", *linear):
        raise ValueError(f"interpolate's mode must be 'nearest', 'nearest-exact', 'linear', "
                         f"'bilinear' or 'trilinear', got {mode!r}"[:200])
    if axes < 1 or (mode in linear and linear[mode] != axes):
        raise ShapeError(f"interpolate in mode {mode!r} of a tensor of shape {self.shape}: "
                         f"it needs (N, C) and {linear.get(mode, 'one or more')} more axes")
    if align_corners is not None and mode not in linear:
        raise ValueError("interpolate's align_corners applies to the linear modes only")
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate takes size or scale_factor, one of them")
    _static_dims(self, "interpolate", range(2, self.ndim))
    ins = self.shape[2:]
    if size is not None:
        outs = _per_axis(size, axes, "interpolate's size", int)
        if any(o < 1 for o in outs):
            raise ValueError(f"interpolate's size must be >= 1, got {size!r}")
        factors = [None] * axes
    else:
        factors = _per_axis(scale_factor, axes, "interpolate's scale_factor", float)
        if not all(f > 0 and math.isfinite(f) for f in factors):
            raise ValueError(f"interpolate's scale_factor must be > 0, got {scale_factor!r}")
        outs = tuple(math.floor(n * f) for n, f in zip(ins, factors))
        if any(o < 1 for o in outs):
            raise ValueError(f"interpolate by {scale_factor!r} of sizes {ins} leaves none")
    if any(n == 0 for n in ins):
        raise ValueError(f"interpolate of a tensor of shape {self.shape}: an empty spatial "
                         "axis has nothing to interpolate from")
    x = self if mode not in linear else self._float()
    if mode in linear and x.dtype.itemsize == 2:  # (16-bit floats blend in float32)
        return x.cast(dtypes.float32).interpolate(size, scale_factor, mode,
                                                  align_corners).cast(x.dtype)
    for a, (n, out, f) in enumerate(zip(ins, outs, factors), start=2):
        if n == out and f in (None, 1.0):
            continue
        dst = np.arange(out, dtype=np.float64)
        if mode in linear and align_corners:
            src = dst * ((n - 1) / (out - 1) if out > 1 else 0.0)
        elif f is None and mode not in linear:  # exact: i * n / out in floats can land just
            # below a whole number (11 * (30 / 22) = 14.999...)
            i = np.arange(out, dtype=np.int64)
            src = i * n // out if mode == "nearest" else (2 * i + 1) * n // (2 * out)
        else:
            scale = n / out if f is None else 1.0 / f
            src = (dst + (0.5 if mode != "nearest" else 0.0)) * scale
            if mode in linear:
                src = np.maximum(src - 0.5, 0.0)
        lo = np.minimum(np.floor(src).astype(np.int64), n - 1)
        moved = x.moveaxis(a, 0)
        near = moved.gather(Tensor(lo, device=x.device))
        if mode in linear:
            hi = np.minimum(lo + 1, n - 1)
            w = Tensor((src - lo).reshape((out,) + (1,) * (x.ndim - 1)), device=x.device)
            w = w.cast(x.dtype)
            near = near * (1 - w) + moved.gather(Tensor(hi, device=x.device)) * w
        x = near.moveaxis(0, a)
    return x if x is not self else self._copy()


for _f in (
        leaky_relu, elu, celu, selu, softplus, logsigmoid, mish, relu6, hardtanh, hardsigmoid,
        hardswish, softsign, quick_gelu, scaled_dot_product_attention, dropout, batch_norm,
        group_norm, layer_norm, rms_norm, nll_loss, cross_entropy, binary_cross_entropy,
        binary_cross_entropy_with_logits, mse_loss, l1_loss, smooth_l1_loss, huber_loss,
        conv1d, conv_transpose2d, conv_transpose1d, max_pool1d, avg_pool1d, interpolate,
):
    setattr(Tensor, _f.__name__, _f)
