"""numpy's and PyTorch's other spellings of `Tensor` operations and small compositions
(amax, nansum, var_mean, expand_dims, mm, addmm, logit, sinc, rot90, cross, kron, tensordot,
cdist, repeat_interleave, ...), each checked against numpy in tests/test_spellings.py. They
become methods of `Tensor` when tolk is imported (`tolk.tensor` imports this module last)."""
from __future__ import annotations

import math

import numpy as np

from tolk.dtype import dtypes, least_upper_dtype
from tolk.errors import ShapeError
from tolk.helpers import int_arg, prod, real_arg
from tolk.tensor import (Tensor, _all_tensors, _broadcast_shape, _half_in_float32, _norm_axis,
                         _numpy_names, _rounded_once, _static_dims)
from tolk.uop.ops import Ops, UOp


def _ranked(what: str, ts: tuple, ranks: tuple) -> Tensor:
    """The first of `ts` after checking they are Tensors of `ranks` axes (a ShapeError)."""
    _all_tensors(what, ts)
    if tuple(t.ndim for t in ts) != ranks:
        raise ShapeError(f"{what} needs tensors of {' and '.join(map(str, ranks))} axes, got "
                         f"shapes {' and '.join(str(t.shape) for t in ts)}")
    return ts[0]


def _scaled_sum(a: Tensor, beta, b: Tensor, alpha) -> Tensor:
    """``beta * a + alpha * b`` (a factor of 1 left out; beta 0 ignores a, nan and all)."""
    if beta == 0:  # (a's shape and dtype still count: it must broadcast, and it promotes as
        # the sum would; a new tensor, as the sum is)
        shape = _broadcast_shape(a.shape, b.shape)
        scaled = b * alpha if alpha != 1 else b
        return scaled.cast(least_upper_dtype(a.dtype, scaled.dtype))._broadcast_to(shape)._copy()
    return (a * beta if beta != 1 else a) + (b * alpha if alpha != 1 else b)


@_numpy_names
def amax(self, axis=None, keepdim: bool = False) -> Tensor:
    """`max` (numpy's and PyTorch's amax)."""
    return self.max(axis, keepdim)


@_numpy_names
def amin(self, axis=None, keepdim: bool = False) -> Tensor:
    """`min` (numpy's and PyTorch's amin)."""
    return self.min(axis, keepdim)


@_numpy_names
def aminmax(self, axis=None, keepdim: bool = False) -> tuple[Tensor, Tensor]:
    """``(min, max)``, PyTorch's aminmax."""
    return self.min(axis, keepdim), self.max(axis, keepdim)


@_numpy_names
def nansum(self, axis=None, keepdim: bool = False) -> Tensor:
    """numpy's nansum: the sum with nan counted as 0 (ints and bools: `sum`)."""
    x = self.isnan().where(0, self) if self.dtype.is_float else self
    return x.sum(axis, keepdim)


@_numpy_names
def nanmean(self, axis=None, keepdim: bool = False) -> Tensor:
    """numpy's nanmean: the mean of the values that are not nan (nan where there are
    none); ints and bools as `mean`."""
    if not self.dtype.is_float:
        return self.mean(axis, keepdim)
    kept = (~self.isnan()).sum(axis, keepdim)
    total = self.nansum(axis, keepdim)
    if total.dtype.itemsize == 2:
        return (total.cast(dtypes.float32) / kept.cast(dtypes.float32)).cast(total.dtype)
    return total / kept.cast(total.dtype)


@_numpy_names
def var_mean(self, axis=None, keepdim: bool = False, correction: int = 1
             ) -> tuple[Tensor, Tensor]:
    """``(var, mean)``, PyTorch's var_mean."""
    return self.var(axis, keepdim, correction), self.mean(axis, keepdim)


@_numpy_names
def std_mean(self, axis=None, keepdim: bool = False, correction: int = 1
             ) -> tuple[Tensor, Tensor]:
    """``(std, mean)``, PyTorch's std_mean."""
    return self.std(axis, keepdim, correction), self.mean(axis, keepdim)


def expand_as(self, other: Tensor) -> Tensor:
    _all_tensors("expand_as", (other,))
    return self.expand(other.shape)


def reshape_as(self, other: Tensor) -> Tensor:
    _all_tensors("reshape_as", (other,))
    return self.reshape(other.shape)


view_as = reshape_as


def type_as(self, other: Tensor) -> Tensor:
    _all_tensors("type_as", (other,))
    return self.cast(other.dtype)


def broadcast_to(self, *shape) -> Tensor:
    """numpy's broadcast_to (`expand`)."""
    return self.expand(*shape)


def expand_dims(self, axis) -> Tensor:
    """numpy's expand_dims: a new axis of size 1 at each of `axis` (an int or a tuple,
    positions in the result)."""
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    ndim = self.ndim + len(axes)
    where = sorted(_norm_axis(a, ndim) for a in axes)
    if len(set(where)) != len(where):
        raise ValueError(f"expand_dims names an axis twice: {axis!r}")
    shape, it = [], iter(self.shape)
    for i in range(ndim):
        shape.append(1 if i in where else next(it))
    return self.reshape(tuple(shape))


def clone(self) -> Tensor:
    """A new tensor with the same values (PyTorch's clone; numpy's copy)."""
    return self._copy()


def detach(self) -> Tensor:
    """A tensor with these values that gradients do not pass through (PyTorch's detach),
    a lazy tensor of its own like any other: it holds the values as they are now, and
    in-place changes of either tensor later are not seen by the other (PyTorch's shares the
    storage: a write through it changes the original). Nothing is copied unless one of them
    changes in place (it reads what is there until then)."""
    return Tensor(UOp(Ops.CAST, self.dtype, (self.uop,), "detach"))


def size(self, dim: int | None = None):
    """PyTorch's size: the shape, or its length along `dim` (a 0-d tensor has none: a
    ShapeError)."""
    if dim is not None and self.ndim == 0:
        raise ShapeError(f"size({dim!r}) of a 0-d tensor: it has no axis")
    return self.shape if dim is None else self.shape[_norm_axis(dim, self.ndim)]


def element_size(self) -> int:
    return self.dtype.itemsize


@property
def itemsize(self) -> int:
    return self.dtype.itemsize


@property
def nbytes(self) -> int:
    return self.numel() * self.dtype.itemsize


def eq(self, x) -> Tensor:
    return self == x


def ne(self, x) -> Tensor:
    return self != x


def lt(self, x) -> Tensor:
    return self < x


def le(self, x) -> Tensor:
    return self <= x


def gt(self, x) -> Tensor:
    return self > x


def ge(self, x) -> Tensor:
    return self >= x


def neg(self) -> Tensor:
    return -self


negative = neg


def true_divide(self, x) -> Tensor:
    return self / x


def floor_divide(self, x) -> Tensor:
    return self // x


def mm(self, other: Tensor) -> Tensor:
    """The product of two matrices (2-d tensors, PyTorch's mm)."""
    return _ranked("mm", (self, other), (2, 2)).matmul(other)


def bmm(self, other: Tensor) -> Tensor:
    """Batches of matrix products of (B, N, M) and (B, M, P) tensors (PyTorch's bmm)."""
    _ranked("bmm", (self, other), (3, 3))
    if self.shape[0] != other.shape[0]:
        raise ShapeError(f"bmm of batches {self.shape[0]} and {other.shape[0]}: they must "
                         f"be equal, got {self.shape} and {other.shape}")
    return self.matmul(other)


def mv(self, vec: Tensor) -> Tensor:
    """A matrix times a vector (PyTorch's mv)."""
    return _ranked("mv", (self, vec), (2, 1)).matmul(vec)


def addmm(self, mat1: Tensor, mat2: Tensor, beta=1, alpha=1) -> Tensor:
    """``beta * self + alpha * (mat1 @ mat2)`` (PyTorch's addmm)."""
    _all_tensors("addmm", (mat1, mat2))
    return _scaled_sum(self, beta, mat1.mm(mat2), alpha)


def addcmul(self, t1, t2, value=1) -> Tensor:
    """``self + value * t1 * t2`` (PyTorch's addcmul; 16-bit floats in float32, rounded
    once)."""
    if value != 1:
        return _rounded_once(lambda s, a, b: s + a * b * value, self, t1, t2)
    return _rounded_once(lambda s, a, b: s + a * b, self, t1, t2)


def addcdiv(self, t1, t2, value=1) -> Tensor:
    """``self + value * t1 / t2`` (PyTorch's addcdiv; 16-bit floats in float32, rounded
    once)."""
    if value != 1:
        return _rounded_once(lambda s, a, b: s + a / b * value, self, t1, t2)
    return _rounded_once(lambda s, a, b: s + a / b, self, t1, t2)


@_half_in_float32
def logit(self, eps: float | None = None) -> Tensor:
    """``log(p / (1 - p))``, p clamped to ``[eps, 1 - eps]`` when `eps` is given
    (PyTorch's logit)."""
    p = self._float()
    if eps is not None:
        eps = real_arg(eps, "logit's eps")
        p = p.clip(eps, 1 - eps)
    return (p / (1 - p)).log()


def xlogy(self, y) -> Tensor:
    """``x * log(y)``, 0 where x is 0 and y is not nan (scipy's and PyTorch's xlogy)."""
    x = self._float()
    if not isinstance(y, Tensor):
        y = Tensor.full((), y, x.dtype, x.device)
    d = least_upper_dtype(x.dtype, y.dtype) if y.dtype.is_float else x.dtype
    x, y = x.cast(d), y.cast(d)  # (promoted before the log: y's own float may be narrower)
    # x * log(y) with log(y) taken as 0 where x is 0 and y is at most 0 or inf (0 then, and
    # not nan; the gradient with respect to x stays log(y) elsewhere, PyTorch's)
    held = (x == 0) & ((y <= 0) | (y == math.inf))
    return x * held.where(1.0, y).log()


def sinc(self) -> Tensor:
    """numpy's sinc: ``sin(pi x) / (pi x)``, 1 at 0."""
    x = self._float()
    px = x * math.pi
    return (x == 0).where(1, px.sin() / px)


def frac(self) -> Tensor:
    """``x - trunc(x)``, the fractional part with the sign of x (PyTorch's frac)."""
    return self - self.trunc()


def signbit(self) -> Tensor:
    """numpy's signbit: where the sign bit is set (-0.0 and negative nan too)."""
    if self.dtype is dtypes.bool or self.dtype.is_unsigned:
        return self.full_like(False, dtypes.bool)
    if not self.dtype.is_float:
        return self < 0
    return self.full_like(1.0).copysign(self) < 0


def heaviside(self, values) -> Tensor:
    """numpy's heaviside: 0 below 0, `values` at 0, 1 above (nan stays nan)."""
    x = self._float()
    return (x < 0).where(0, (x > 0).where(1, (x == 0).where(values, x)))


def fliplr(self) -> Tensor:
    """numpy's fliplr: axis 1 reversed (two or more axes)."""
    if self.ndim < 2:
        raise ShapeError(f"fliplr needs at least 2 axes, got shape {self.shape}")
    return self.flip(1)


def flipud(self) -> Tensor:
    """numpy's flipud: axis 0 reversed (one or more axes)."""
    if self.ndim < 1:
        raise ShapeError("flipud needs at least 1 axis, got a 0-d tensor")
    return self.flip(0)


def rot90(self, k: int = 1, axes=(0, 1)) -> Tensor:
    """numpy's rot90: `k` quarter turns from the first of `axes` toward the second, a
    view that writes go through (k = 0: this tensor itself; numpy gives a view of it)."""
    k = int_arg(k, "rot90's k") % 4
    if not isinstance(axes, (tuple, list)):
        raise TypeError(f"rot90's axes must be two axes, got {axes!r}")
    if len(axes) != 2 or self.ndim < 2:
        raise ShapeError(f"rot90 needs two axes of a tensor with at least two, got {axes!r} "
                         f"for shape {self.shape}")
    a, b = (_norm_axis(x, self.ndim) for x in axes)
    if a == b:
        raise ShapeError(f"rot90's axes must differ, got {axes!r}")
    if k == 0:
        return self
    if k == 2:
        return self.flip((a, b))
    return self.flip(b).swapaxes(a, b) if k == 1 else self.swapaxes(a, b).flip(b)


def atleast_1d(self) -> Tensor:
    return self.reshape(1) if self.ndim == 0 else self


def atleast_2d(self) -> Tensor:
    """numpy's atleast_2d: a 0-d tensor as (1, 1), a 1-d one as (1, n)."""
    return self.reshape((1,) * (2 - self.ndim) + self.shape) if self.ndim < 2 else self


def atleast_3d(self) -> Tensor:
    """numpy's atleast_3d: 0-d as (1, 1, 1), (n,) as (1, n, 1), (m, n) as (m, n, 1)."""
    if self.ndim == 0:
        return self.reshape(1, 1, 1)
    if self.ndim == 1:
        return self.reshape(1, self.shape[0], 1)
    return self.reshape(*self.shape, 1) if self.ndim == 2 else self


@_numpy_names
def cross(self, other: Tensor, axis: int = -1) -> Tensor:
    """numpy's cross product of 3-vectors along `axis` (broadcast; other lengths refused)."""
    _all_tensors("cross", (other,))
    if self.ndim == 0 or other.ndim == 0:
        raise ShapeError(f"cross of a 0-d tensor (shapes {self.shape} and {other.shape}): it "
                         "needs vectors of 3")
    a, b = _norm_axis(axis, self.ndim), _norm_axis(axis, other.ndim)
    if self.shape[a] != 3 or other.shape[b] != 3:
        raise ShapeError(f"cross needs vectors of 3 along axis {axis}, got {self.shape} and "
                         f"{other.shape}")
    u = [self.moveaxis(a, -1)[..., i] for i in range(3)]
    v = [other.moveaxis(b, -1)[..., i] for i in range(3)]
    parts = [u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]]
    out = Tensor.stack(parts, dim=-1)
    return out.moveaxis(-1, axis) if axis not in (-1, out.ndim - 1) else out


def kron(self, other: Tensor) -> Tensor:
    """numpy's Kronecker product: each element of this tensor times all of `other`."""
    _all_tensors("kron", (other,))
    nd = max(self.ndim, other.ndim)
    a = self.reshape((1,) * (nd - self.ndim) + self.shape)
    b = other.reshape((1,) * (nd - other.ndim) + other.shape)
    inter_a = tuple(d for n in a.shape for d in (n, 1))
    inter_b = tuple(d for n in b.shape for d in (1, n))
    return (a.reshape(inter_a) * b.reshape(inter_b)).reshape(
        tuple(x * y for x, y in zip(a.shape, b.shape)))


def tensordot(self, other: Tensor, axes=2) -> Tensor:
    """numpy's tensordot: the sum over `axes` (an int N: this tensor's last N axes with
    `other`'s first N; or two sequences of axes, paired), as one matrix product."""
    _all_tensors("tensordot", (other,))
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, (bool, np.bool_)):
        n = int(axes)
        if n < 0 or n > min(self.ndim, other.ndim):
            raise ShapeError(f"tensordot over {n} axes of shapes {self.shape} and "
                             f"{other.shape}")
        mine, theirs = list(range(self.ndim - n, self.ndim)), list(range(n))
    else:
        try:
            mine, theirs = ([a] if isinstance(a, (int, np.integer)) else list(a)
                            for a in axes)
        except (TypeError, ValueError):
            raise TypeError(f"tensordot's axes must be an int or two sequences of axes, "
                            f"got {axes!r}"[:200]) from None
        mine = [_norm_axis(a, self.ndim) for a in mine]
        theirs = [_norm_axis(a, other.ndim) for a in theirs]
    if len(mine) != len(theirs) or len(set(mine)) != len(mine) or \
            len(set(theirs)) != len(theirs) or \
            any(self.shape[a] != other.shape[b] for a, b in zip(mine, theirs)):
        raise ShapeError(f"tensordot pairs axes {mine} of {self.shape} with {theirs} of "
                         f"{other.shape}: they must be as many, distinct and equal in size")
    free_a = [a for a in range(self.ndim) if a not in mine]
    free_b = [b for b in range(other.ndim) if b not in theirs]
    k = prod(self.shape[a] for a in mine)
    left = self.permute(*free_a, *mine).reshape(prod(self.shape[a] for a in free_a), k)
    right = other.permute(*theirs, *free_b).reshape(k, prod(other.shape[b] for b in free_b))
    return (left @ right).reshape(tuple(self.shape[a] for a in free_a) +
                                  tuple(other.shape[b] for b in free_b))


def inner(self, other: Tensor) -> Tensor:
    """numpy's inner: the sum over the last axes of both (a 0-d operand multiplies)."""
    _all_tensors("inner", (other,))
    if self.ndim == 0 or other.ndim == 0:
        return self * other
    return self.tensordot(other, ([-1], [-1]))


def cdist(self, other: Tensor, p: float = 2.0) -> Tensor:
    """PyTorch's cdist: the p-norm distance of each row of this (..., P, M) tensor to
    each row of `other` (..., R, M), shaped (..., P, R); p 0 counts differing
    coordinates, inf takes the largest difference."""
    _all_tensors("cdist", (other,))
    if self.ndim < 2 or other.ndim < 2 or self.shape[-1] != other.shape[-1]:
        raise ShapeError(f"cdist needs (..., P, M) and (..., R, M) tensors, got "
                         f"{self.shape} and {other.shape}")
    p = real_arg(p, "cdist's p")
    d = self._float().unsqueeze(-2) - other._float().unsqueeze(-3)
    return d.norm(p, axis=-1)


@_numpy_names
def repeat_interleave(self, repeats, axis: int | None = None) -> Tensor:
    """numpy's repeat (PyTorch's repeat_interleave): each element `repeats` times (an
    int, or one int per element along `axis`) along `axis` (None: of the flattened
    tensor). The repeats are read when the graph is built (no tensor of them)."""
    if axis is not None and self.ndim == 0:
        _norm_axis(axis, 1, 0)  # (a 0-d tensor repeats as one axis, numpy's: 0 or -1)
    x, ax = (self.flatten(), 0) if axis is None or self.ndim == 0 else \
        (self, _norm_axis(axis, self.ndim))
    _static_dims(x, "repeat_interleave", (ax,))
    n = x.shape[ax]
    reps = np.asarray(repeats.numpy() if isinstance(repeats, Tensor) else repeats)
    if reps.size == 0 and reps.dtype.kind == "f":  # (an empty list: no repeats, not floats)
        reps = reps.astype(np.int64)
    if reps.dtype.kind not in "iu" or reps.ndim > 1 or (reps.ndim == 1 and
                                                           reps.shape[0] not in (1, n)):
        raise ValueError(f"repeat_interleave's repeats must be an int or {n} ints, got "
                         f"{repeats!r}"[:200])
    if (reps < 0).any():
        raise ValueError(f"repeat_interleave's repeats must be >= 0, got {repeats!r}"[:200])
    at = np.repeat(np.arange(n), np.broadcast_to(reps, (n,)))
    return x.moveaxis(ax, 0).gather(Tensor(at, device=x.device)).moveaxis(0, ax)


def float_power(self, x) -> Tensor:
    """numpy's float_power: the power computed in float64 (a float64 result); the exponent
    a tensor, a number or anything numpy makes an array of numbers from."""
    if isinstance(x, Tensor):
        other = x.cast(dtypes.float64)
    else:
        a = np.asarray(x)
        if a.dtype.kind not in "biuf":
            raise TypeError(f"float_power's exponent must be a number, a tensor or numbers, got "
                            f"{type(x).__name__} {x!r}"[:200])
        other = float(a) if a.ndim == 0 else Tensor(a.astype(np.float64), device=self.device)
    return self.cast(dtypes.float64) ** other


for _name in (
        'amax', 'amin', 'aminmax', 'nansum', 'nanmean', 'var_mean', 'std_mean', 'expand_as',
        'reshape_as', 'type_as', 'broadcast_to', 'expand_dims', 'clone', 'detach', 'size',
        'element_size', 'itemsize', 'nbytes', 'eq', 'ne', 'lt', 'le', 'gt', 'ge', 'neg',
        'true_divide', 'floor_divide', 'mm', 'bmm', 'mv', 'addmm', 'addcmul', 'addcdiv',
        'logit', 'xlogy', 'sinc', 'frac', 'signbit', 'heaviside', 'fliplr', 'flipud', 'rot90',
        'atleast_1d', 'atleast_2d', 'atleast_3d', 'cross', 'kron', 'tensordot', 'inner',
        'cdist', 'repeat_interleave', 'float_power', 'view_as', 'negative',
):
    setattr(Tensor, _name, globals()[_name])
