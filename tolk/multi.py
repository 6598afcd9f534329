"""Tensors split across devices: `Tensor.shard(devices, axis)` gives a `MultiTensor`.

A MultiTensor is one logical tensor held as per-device shards along `axis` (each device's
part is an ordinary Tensor, so each device gets its own kernels and its own arena in the
planned schedule). Elementwise ops (arithmetic, comparisons, `where`, `maximum`, unary math)
and reductions that keep the sharded axis run shard by shard; a reduction over the sharded
axis reduces each shard on its device, then copies the partial results to the first device
and combines them there; argmax and argmin along the sharded axis (or over all) gather to the
first device. ``x @ w`` with x sharded on a non-contracted axis copies w to every device.
``to(device)`` and ``numpy()`` gather (into a new tensor); ``bool(m)`` gathers a one-element
tensor. softmax, log_softmax, layernorm, var and std along other axes run shard by shard,
along the sharded one on the gathered tensor; permute, transpose and T move the sharded axis
with the others; `linear` is ``x @ weight + bias``. In-place operators (``w -= lr * g``)
write each shard in place, as Tensor's do.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tolk.dtype import dtypes, least_upper_dtype, to_dtype
from tolk.errors import DeviceError, ShapeError
from tolk.runtime.device import canonical_device
from tolk.tensor import (DEFER_TO, Tensor, _alien, _clip_bounds, _clip_by, _half_in_float32,
                         _norm_axis, _numpy_names, _swapped)


class ShardedUnsupported(AttributeError, TypeError):
    """An operation sharded tensors do not have (gather with ``.to(device)`` first); an
    AttributeError too, so ``hasattr`` answers False."""


class MultiTensor:
    """One logical tensor as shards on several devices. Invariant: shards are split along
    `axis`, in device order, and concatenate to the logical tensor."""

    __array_ufunc__ = None  # numpy defers to the operators (``ndarray * m``: TypeError)

    def __init__(self, shards: Sequence[Tensor], axis: int):
        if isinstance(shards, (Tensor, MultiTensor)) or not isinstance(shards, Sequence):
            raise TypeError(f"MultiTensor takes a sequence of Tensors as shards, got "
                            f"{type(shards).__name__} (Tensor.shard splits one)")
        shards = tuple(shards)
        if not shards or not all(isinstance(s, Tensor) for s in shards):
            raise TypeError(f"MultiTensor needs one or more Tensors as shards, got "
                            f"{[type(s).__name__ for s in shards]}")
        if shards[0].ndim == 0:
            raise ShapeError("MultiTensor shards need at least one axis, got 0-d tensors")
        ax = _norm_axis(axis, shards[0].ndim)
        devs = [s.device for s in shards]
        if len(set(devs)) != len(devs):
            raise DeviceError(f"MultiTensor shards must be on distinct devices, got {devs}")
        first = shards[0]
        for s in shards[1:]:
            if s.dtype is not first.dtype or s.ndim != first.ndim or any(
                    a != b for i, (a, b) in enumerate(zip(s.shape, first.shape)) if i != ax):
                raise ShapeError(f"MultiTensor shards must agree but on axis {ax}: "
                                 f"{[(t.shape, t.dtype.name) for t in shards]}")
        self.shards = shards
        self.axis = ax

    @staticmethod
    def from_tensor(t: Tensor, devices: Sequence[str], axis: int = 0) -> MultiTensor:
        if not isinstance(devices, (tuple, list)):
            hint = f" (one device: ({devices!r},))" if isinstance(devices, str) else ""
            raise TypeError(f"shard takes a tuple or list of devices, got "
                            f"{type(devices).__name__} {devices!r}{hint}"[:200])
        devs = [canonical_device(d) for d in devices]
        if not devs:
            raise DeviceError("shard needs at least one device")
        if len(set(devs)) != len(devs):
            raise DeviceError(f"shard devices must be distinct, got {devs}")
        if t.ndim == 0:
            raise ShapeError("shard needs a tensor with at least one axis, got a 0-d one")
        ax = _norm_axis(axis, t.ndim)
        n = t.shape[ax]
        if not isinstance(n, int):
            raise ShapeError(f"shard cannot split the symbolic axis {ax} of shape {t.shape}: "
                             "its size is known only when the schedule runs")
        bounds = np.linspace(0, n, len(devs) + 1).round().astype(int)
        shards = []
        for d, lo, hi in zip(devs, bounds[:-1], bounds[1:]):
            part = t.shrink(tuple((int(lo), int(hi)) if i == ax else None for i in range(t.ndim)))
            shards.append(part.contiguous().to(d))
        return MultiTensor(shards, ax)

    @property
    def devices(self) -> tuple[str, ...]:
        return tuple(s.device for s in self.shards)

    @property
    def shape(self) -> tuple[int, ...]:
        s = list(self.shards[0].shape)
        s[self.axis] = sum(t.shape[self.axis] for t in self.shards)
        return tuple(s)

    @property
    def dtype(self):
        return self.shards[0].dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        return f"<MultiTensor shape={self.shape} axis={self.axis} devices={self.devices}>"

    # -- shard-wise ops -----------------------------------------------------------------------

    def _match(self, other) -> list:
        """`other` split like self: a MultiTensor with the same layout (the same devices,
        axis and shard sizes along it; other axes may broadcast, as a reduction with keepdim
        leaves them), a scalar, or a Tensor broadcast against the logical shape."""
        if isinstance(other, MultiTensor):
            ax = self.axis
            if other.devices != self.devices or other.axis != ax or other.ndim != self.ndim \
                    or [s.shape[ax] for s in other.shards] != [s.shape[ax] for s in self.shards] \
                    or any(a != b and 1 not in (a, b) for a, b in zip(other.shape, self.shape)):
                raise ShapeError(f"sharded operands differ: {self} and {other} (shards "
                                 f"{[s.shape for s in self.shards]} and "
                                 f"{[s.shape for s in other.shards]})")
            return list(other.shards)
        if not isinstance(other, Tensor):
            return [other] * len(self.shards)
        full = (1,) * (self.ndim - other.ndim) + other.shape
        if other.ndim > self.ndim or any(o not in (1, s) for o, s in zip(full, self.shape)):
            raise ShapeError(f"a Tensor of shape {other.shape} does not broadcast to the sharded "
                             f"shape {self.shape} (gather with .to(device) for a larger result)")
        return self._split(other.reshape(full), self.axis)

    def _split(self, t: Tensor, axis: int) -> list[Tensor]:
        """`t` cut along `axis` as self is along its own (whole where `axis` has size 1), each
        part on its shard's device."""
        out, off = [], 0
        for s in self.shards:
            size = s.shape[self.axis]
            part = t if t.shape[axis] == 1 else t.shrink(
                tuple((off, off + size) if i == axis else None for i in range(t.ndim)))
            out.append(part.to(s.device))
            off += size
        return out

    def _map(self, fn, *others) -> MultiTensor:
        matched = [self._match(o) for o in others]
        return MultiTensor([fn(s, *(m[i] for m in matched)) for i, s in enumerate(self.shards)],
                           self.axis)

    def __add__(self, o):
        return self._map(lambda a, b: a + b, o)

    def __sub__(self, o):
        return self._map(lambda a, b: a - b, o)

    def __mul__(self, o):
        return self._map(lambda a, b: a * b, o)

    def __truediv__(self, o):
        return self._map(lambda a, b: a / b, o)

    def __rsub__(self, o):
        return self._map(lambda a, b: b - a, o)

    def __rtruediv__(self, o):
        return self._map(lambda a, b: b / a, o)

    def __floordiv__(self, o):
        return self._map(lambda a, b: a // b, o)

    def __rfloordiv__(self, o):
        return self._map(lambda a, b: b // a, o)

    def __mod__(self, o):
        return self._map(lambda a, b: a % b, o)

    def __rmod__(self, o):
        return self._map(lambda a, b: b % a, o)

    def __pow__(self, o):
        return self._map(lambda a, b: a ** b, o)

    def __rpow__(self, o):
        return self._map(lambda a, b: b ** a, o)

    def __lt__(self, o):
        return self._map(lambda a, b: a < b, o)

    def __le__(self, o):
        return self._map(lambda a, b: a <= b, o)

    def __gt__(self, o):
        return self._map(lambda a, b: a > b, o)

    def __ge__(self, o):
        return self._map(lambda a, b: a >= b, o)

    def __eq__(self, o):  # type: ignore[override]
        """Shard by shard; against None or a string Python's own answer, as Tensor's."""
        return NotImplemented if _alien(o) else self._map(lambda a, b: a == b, o)

    def __ne__(self, o):  # type: ignore[override]
        return NotImplemented if _alien(o) else self._map(lambda a, b: a != b, o)

    __hash__ = object.__hash__
    __radd__ = __add__
    __rmul__ = __mul__

    def __bool__(self) -> bool:
        """The truth of a one-element tensor (gathered), as Tensor's; ValueError otherwise."""
        return bool(self._gathered())

    def _gathered(self) -> Tensor:
        return self.to(self.devices[0])

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        """``np.asarray(m)``: the values gathered, as Tensor's."""
        return self._gathered().__array__(dtype, copy)

    def __float__(self) -> float:
        return float(self._gathered())

    def __int__(self) -> int:
        return int(self._gathered())

    def tolist(self):
        return self._gathered().tolist()

    def item(self):
        return self._gathered().item()

    def __copy__(self) -> MultiTensor:
        """``copy.copy(m)``: new shards with m's values on m's devices (as Tensor's copy)."""
        return MultiTensor([Tensor(s) for s in self.shards], self.axis)

    def __deepcopy__(self, memo: dict) -> MultiTensor:
        return self.__copy__()

    def _inplace(self, fn, o) -> MultiTensor:
        """``self = fn(self, o)`` written into each shard in place, as Tensor's in-place
        operators (the result keeps this tensor's dtype and layout)."""
        out = self._map(fn, o)
        for s, r in zip(self.shards, out.shards):
            s._inplace(r)  # (cast back where numpy's in-place rule allows, as Tensor's)
        return self

    def __iadd__(self, o):
        return self._inplace(lambda a, b: a + b, o)

    def __isub__(self, o):
        return self._inplace(lambda a, b: a - b, o)

    def __imul__(self, o):
        return self._inplace(lambda a, b: a * b, o)

    def __itruediv__(self, o):
        return self._inplace(lambda a, b: a / b, o)

    def __ifloordiv__(self, o):
        return self._inplace(lambda a, b: a // b, o)

    def __imod__(self, o):
        return self._inplace(lambda a, b: a % b, o)

    def __ipow__(self, o):
        return self._inplace(lambda a, b: a ** b, o)

    def __and__(self, o):
        return self._map(lambda a, b: a & b, o)

    def __or__(self, o):
        return self._map(lambda a, b: a | b, o)

    def __xor__(self, o):
        return self._map(lambda a, b: a ^ b, o)

    def __rand__(self, o):
        return self._map(lambda a, b: b & a, o)

    def __ror__(self, o):
        return self._map(lambda a, b: b | a, o)

    def __rxor__(self, o):
        return self._map(lambda a, b: b ^ a, o)

    def __invert__(self):
        return self._map(lambda a: ~a)

    def __iand__(self, o):
        return self._inplace(lambda a, b: a & b, o)

    def __ior__(self, o):
        return self._inplace(lambda a, b: a | b, o)

    def __ixor__(self, o):
        return self._inplace(lambda a, b: a ^ b, o)

    def clip(self, min_=None, max_=None, **bounds) -> MultiTensor:
        """`Tensor.clip` with bounds that are scalars, tensors or sharded tensors (split as
        this one is)."""
        min_, max_ = _clip_bounds(self.dtype, min_, max_, bounds)
        if not any(isinstance(b, (Tensor, MultiTensor)) for b in (min_, max_)):
            return self._map(lambda s: s.clip(min_, max_))  # scalars: as Tensor.clip takes them
        return _clip_by(self, min_, max_)

    clamp = clip

    def maximum(self, o):
        return self._map(lambda a, b: a.maximum(b), o)

    def minimum(self, o):
        return self._map(lambda a, b: a.minimum(b), o)

    def _rmaximum(self, o):
        """``o.maximum(self)`` for a plain `o`: split as this one is, `o` kept first (numpy's
        maximum of 0.0 and -0.0 is its first operand)."""
        return self._map(lambda a, b: b.maximum(a), o)

    def _rminimum(self, o):
        return self._map(lambda a, b: b.minimum(a), o)

    def where(self, x, y):
        """``cond.where(x, y)`` shard by shard (x and y split as the condition is)."""
        return self._map(lambda c, a, b: c.where(a, b), x, y)

    def _where_of(self, cond, x, y):
        """``cond.where(x, y)`` for a plain tensor `cond` and this one among x and y: split as
        this one is."""
        parts = [self._match(o) for o in (cond, x, y)]
        return MultiTensor([c.where(a, b) for c, a, b in zip(*parts)], self.axis)

    def _arg(self, name: str, axis, keepdim: bool):
        if axis is not None:
            ax = _norm_axis(axis, self.ndim)
            if ax != self.axis:  # along another axis: shard by shard
                new_axis = self.axis if keepdim or ax > self.axis else self.axis - 1
                return MultiTensor([getattr(s, name)(ax, keepdim) for s in self.shards],
                                   new_axis)
        # along the sharded axis, or over all: on the first device, gathered
        return getattr(self._gathered(), name)(axis, keepdim)

    @_numpy_names
    def argmax(self, axis=None, keepdim: bool = False):
        return self._arg("argmax", axis, keepdim)

    @_numpy_names
    def argmin(self, axis=None, keepdim: bool = False):
        return self._arg("argmin", axis, keepdim)

    def __neg__(self):
        return self._map(lambda a: -a)

    def __len__(self) -> int:
        return self.shape[0]

    # -- along one axis: shard by shard where it is not the sharded one, else gathered --------

    def _along(self, name: str, axis, *args):
        """``Tensor.name(axis, *args)`` of this tensor: shard by shard when `axis` (an int or
        a tuple) leaves out the sharded one (the layout stays), else of the tensor gathered on
        the first device (a plain Tensor, as a reduction over the sharded axis gives)."""
        axes = self._axes(axis) if isinstance(axis, (tuple, list)) else \
            (_norm_axis(axis, self.ndim),) if self.ndim else ()
        if axes and self.axis not in axes:
            return self._map(lambda s: getattr(s, name)(axis, *args))
        return getattr(self._gathered(), name)(axis, *args)

    @_numpy_names
    def softmax(self, axis: int = -1):
        return self._along("softmax", axis)

    @_numpy_names
    def log_softmax(self, axis: int = -1):
        return self._along("log_softmax", axis)

    @_numpy_names
    def layernorm(self, axis: int = -1, eps: float = 1e-5):
        return self._along("layernorm", axis, eps)

    def _spread(self, name: str, axis, keepdim: bool, correction):
        """`Tensor.var` or `std`: over axes that keep the sharded one, shard by shard; else
        of the gathered tensor (each computed as Tensor's: 16-bit floats and ints rounded
        once)."""
        axes = self._axes(axis)
        if self.axis not in axes:
            new_axis = self.axis if keepdim else self.axis - sum(1 for a in axes if a < self.axis)
            return MultiTensor([getattr(s, name)(axes, keepdim, correction)
                                for s in self.shards], new_axis)
        return getattr(self._gathered(), name)(axis, keepdim, correction)

    @_numpy_names
    def var(self, axis=None, keepdim: bool = False, correction: int = 1):
        return self._spread("var", axis, keepdim, correction)

    @_numpy_names
    def std(self, axis=None, keepdim: bool = False, correction: int = 1):
        return self._spread("std", axis, keepdim, correction)

    def permute(self, *order) -> MultiTensor:
        """The axes reordered, shard by shard (the sharded axis moves with them)."""
        if len(order) == 1 and isinstance(order[0], (tuple, list)):
            order = tuple(order[0])
        shards = [s.permute(order) for s in self.shards]  # (checks the order)
        norm = [_norm_axis(a, self.ndim) for a in order]
        return MultiTensor(shards, norm.index(self.axis))

    def transpose(self, dim0: int = 1, dim1: int = 0) -> MultiTensor:
        return self.permute(_swapped(self.ndim, dim0, dim1))

    @property
    def T(self) -> MultiTensor:
        return self.permute(tuple(reversed(range(self.ndim))))

    def linear(self, weight: Tensor, bias: Tensor | None = None):
        """``x @ weight + bias`` with the weight (and bias) copied to every device."""
        for t in (weight,) if bias is None else (weight, bias):
            if not isinstance(t, (Tensor, MultiTensor)):
                raise TypeError(f"linear takes Tensors, got {type(t).__name__}: wrap it in "
                                "Tensor()")
        x = self * weight if weight.ndim == 1 else self @ weight
        if bias is not None and isinstance(x, Tensor) and isinstance(bias, Tensor):
            bias = bias.to(x.device)  # (summed over the sharded axis: on the first device)
        return x + bias if bias is not None else x

    def __getattr__(self, name: str):
        if name in {"exp", "log", "sqrt", "relu", "sigmoid", "tanh", "gelu", "abs", "cast",
                    "sin", "cos", "exp2", "log2", "log1p", "expm1", "rsqrt", "reciprocal",
                    "square", "sign", "floor", "ceil", "trunc", "logical_not", "silu", "float",
                    "half", "int", "bool"}:
            return lambda *a, **k: self._map(lambda s: getattr(s, name)(*a, **k))
        if name.startswith("__"):  # a protocol Python probes (copy, pickle, numpy): absent
            raise AttributeError(name)
        raise ShardedUnsupported(f"MultiTensor has no attribute {name!r}; "
                                 "gather with .to(device) first")

    def __setattr__(self, name: str, value) -> None:
        if name in ("shards", "axis"):
            object.__setattr__(self, name, value)
            return
        hint = ("; set requires_grad on the tensor before sharding it: gradients reach it "
                "through the shards") if name in ("requires_grad", "grad") else ""
        raise ShardedUnsupported(f"a MultiTensor has no attribute {name!r} to set{hint}")

    def _unsupported(self, what: str):
        raise ShardedUnsupported(f"{what} of a sharded tensor is not supported; gather it with "
                                 f".to(device) first ({self})")

    def __getitem__(self, idx):
        self._unsupported("indexing")

    def __setitem__(self, idx, value):
        self._unsupported("item assignment")

    def __abs__(self):
        return self.abs()

    def _axes(self, axis) -> tuple[int, ...]:
        """Reduction axes as Tensor takes them (a shard has this tensor's axes)."""
        return self.shards[0]._axes(axis)

    def _reduce(self, name: str, axis, keepdim: bool, combine, **kw):
        axes = self._axes(axis)
        if self.axis not in axes:
            new_axis = self.axis if keepdim else self.axis - sum(1 for a in axes if a < self.axis)
            return MultiTensor([getattr(s, name)(axes, keepdim=keepdim, **kw)
                                for s in self.shards], new_axis)
        # an empty shard holds nothing to reduce (and max/min of nothing has no identity)
        shards = [s for s in self.shards if s.shape[self.axis] > 0] or list(self.shards[:1])
        parts = [getattr(s, name)(axes, keepdim=keepdim, **kw).to(self.devices[0])
                 for s in shards]
        out = parts[0]
        for p in parts[1:]:
            out = combine(out, p)
        return out

    @_numpy_names
    def sum(self, axis=None, keepdim: bool = False, dtype=None):
        """Sum; 16-bit floats add in float32, the shards' partial sums too (as Tensor.sum);
        `dtype` as Tensor.sum's: each shard sums in it and the partial sums add in it (ints
        wrap as numpy's do, a bool sum is any; a 16-bit float's in float32, rounded once)."""
        if dtype is not None and to_dtype(dtype).is_float and to_dtype(dtype).itemsize == 2:
            return self.cast(dtype).sum(axis, keepdim, dtypes.float32).cast(to_dtype(dtype))
        if dtype is not None:
            return self._reduce("sum", axis, keepdim, lambda a, b: a + b, dtype=dtype)
        return self._sum(axis, keepdim)

    @_half_in_float32
    def _sum(self, axis, keepdim: bool):
        return self._reduce("sum", axis, keepdim, lambda a, b: a + b)

    @_numpy_names
    def max(self, axis=None, keepdim: bool = False):
        return self._reduce("max", axis, keepdim, lambda a, b: a.maximum(b))

    @_numpy_names
    def min(self, axis=None, keepdim: bool = False):
        return self._reduce("min", axis, keepdim, lambda a, b: a.minimum(b))

    @_numpy_names
    @_half_in_float32
    def mean(self, axis=None, keepdim: bool = False):
        """As `Tensor.mean` (ints and bools summed in float64, then float32)."""
        if not self.dtype.is_float:
            out = self.cast("float64").mean(axis, keepdim)
            return out.cast("float32")
        x = self
        axes = self._axes(axis)
        # a shard's count over the other axes (a scalar tensor where one is symbolic), times
        # the whole sharded axis
        n = self.shards[0]._count(tuple(a for a in axes if a != self.axis))
        if self.axis in axes:
            n = n * self.shape[self.axis]
        total = x.sum(axis, keepdim)
        if isinstance(n, Tensor):  # a variable's value: a scalar each shard divides by itself
            n = n.cast(x.dtype)
            return total._map(lambda a: a / n) if isinstance(total, MultiTensor) else total / n
        return total / n  # a division, as numpy's mean

    def matmul(self, w: Tensor):
        """Shard by shard where self is sharded on a batch or row axis; sharded on the axis
        the product sums over (``xs.T @ dz``, a weight's gradient), each device's partial
        product, summed on the first device (a plain Tensor there, as a reduction over the
        sharded axis gives)."""
        if not isinstance(w, (Tensor, MultiTensor)):
            raise TypeError(f"matmul takes Tensors, got {type(w).__name__}: wrap it in Tensor()")
        if self.axis == self.ndim - 1:
            return self._contract(w)
        if self.ndim < 2 or self.axis >= self.ndim - 1:
            raise ShapeError(f"sharded matmul needs the input sharded on a batch or row axis, "
                             f"got {self}")
        if isinstance(w, MultiTensor):
            w = w.to(self.devices[0])
        rows = w.shape[-2] if w.ndim >= 2 else w.shape[0] if w.ndim else None
        if rows is not None and rows != self.shape[-1]:  # named by the logical shape
            raise ShapeError(f"matmul shapes {self.shape} (sharded on axis {self.axis}) and "
                             f"{w.shape} do not align: {self.shape[-1]} != {rows}")
        wa = self.axis - (self.ndim - w.ndim)  # self's sharded batch axis among w's axes
        if 0 <= wa < w.ndim - 2 and w.shape[wa] != 1:  # w has that batch: cut it alike
            if w.shape[wa] != self.shape[self.axis]:
                raise ShapeError(f"matmul of the sharded {self.shape} with {w.shape}: batch "
                                 f"sizes {self.shape[self.axis]} and {w.shape[wa]} differ")
            parts = self._split(w, wa)
        else:  # w is the same for every shard: a copy on each device
            parts = [w.to(s.device) for s in self.shards]
        # a weight of more axes puts batch axes in front: the sharded axis moves along
        axis = self.axis + max(0, w.ndim - self.ndim)
        return MultiTensor([s @ p for s, p in zip(self.shards, parts)], axis)

    __matmul__ = matmul

    def _contract(self, w) -> Tensor:
        """``self @ w`` summed over self's sharded last axis: each device's partial product
        (16-bit floats in float32, rounded once at the end, as Tensor.matmul), summed on the
        first device."""
        rows = w.ndim - 2 if w.ndim >= 2 else 0  # w's axis the product sums over
        if w.ndim == 0:
            raise ShapeError(f"matmul needs at least 1-D operands, got {self} and a 0-d tensor")
        if isinstance(w, MultiTensor):
            if w.devices != self.devices or w.axis != rows or \
                    [s.shape[-1] for s in self.shards] != [s.shape[rows] for s in w.shards]:
                raise ShapeError(f"sharded matmul over the sharded axis needs the other "
                                 f"operand sharded alike on its rows: {self} and {w}")
            parts = list(w.shards)
        else:
            if w.shape[rows] != self.shape[-1]:
                raise ShapeError(f"matmul shapes {self.shape} (sharded on its last axis) and "
                                 f"{w.shape} do not align: {self.shape[-1]} != {w.shape[rows]}")
            parts, off = [], 0  # (cut as the shards are, a size-1 axis too: no broadcast)
            for sh in self.shards:
                size = sh.shape[-1]
                parts.append(w.shrink(tuple((off, off + size) if i == rows else None
                                            for i in range(w.ndim))).to(sh.device))
                off += size
        want = least_upper_dtype(self.dtype, w.dtype)
        half = want.is_float and want.itemsize == 2
        first = self.devices[0]
        out = None
        for s, p in zip(self.shards, parts):
            partial = (s.float() @ p.float() if half else s @ p).to(first)
            out = partial if out is None else out + partial
        return out.cast(want) if half else out

    # -- gathering ------------------------------------------------------------------------------

    def to(self, device: str) -> Tensor:
        dev = canonical_device(device)
        parts = [s.to(dev) for s in self.shards]  # (a new tensor: a write into it stays there)
        return parts[0].cat(*parts[1:], dim=self.axis) if len(parts) > 1 else Tensor(parts[0])

    def realize(self) -> MultiTensor:
        self.shards[0].realize(*self.shards[1:])
        return self

    def numpy(self) -> np.ndarray:
        return self._gathered().numpy()


DEFER_TO.add(MultiTensor)  # tensor + sharded: the sharded reflected operator runs
