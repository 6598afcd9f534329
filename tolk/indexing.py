"""numpy's advanced indexing for tensors: integer arrays and boolean masks in an index.

``x[idx]`` where `idx` holds, besides ints, slices, None and Ellipsis, integer arrays (numpy
arrays, lists, integer Tensors) or boolean masks (numpy arrays, lists, bool Tensors), with
numpy's rules:

- a boolean mask of k axes stands for the k integer arrays of its ``nonzero()``; its shape
  must equal the axes it covers;
- once an array is present, every int in the index is an array too (of no axes), and all of
  them broadcast to one shape B;
- where the arrays (and ints) sit next to each other in the index, B takes their place in the
  result; apart (a slice or None between them), B comes first;
- the result is a new tensor (a gather), never a view.

Integer Tensor indices stay lazy: the values are checked when the kernel runs (an index out of
range raises numpy's IndexError then, as `Tensor.gather`). Host indices (numpy arrays, lists)
are checked at once. A boolean mask's ``nonzero()`` is data: a bool Tensor index is realized
(inside a `jit` capture that is refused, as every read of tensor data).

``x[idx] = value`` with advanced indices writes `value`, broadcast to the shape ``x[idx]``
has, into the places it names; where one place is named twice, numpy's assignment decides
which value lands (the last, in practice). It realizes Tensor indices (the places are data)
and rewrites the box of x the indices span (a select between old and new values). A
single boolean mask with a value that has no axis of its own for the selected elements (a
scalar, or a value shaped like the axes after the mask's) stays lazy: ``x[x < 0] = 0`` is
``x.assign((x < 0).where(0, x))`` and realizes nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tolk.dtype import dtypes
from tolk.errors import DeviceError, RaggedIndexError, ShapeError
from tolk.helpers import prod, sequence_depth


def _broadcastable(src: tuple, dst: tuple) -> bool:
    """Whether shape `src` broadcasts to `dst` (callify's rule, sizes symbolic too)."""
    from tolk.callify import _broadcastable as fits

    return fits(src, dst)


def _tensor_type():
    from tolk.tensor import Tensor

    return Tensor


def is_array_index(i: Any) -> bool:
    """Whether an index component is an array (of integers or booleans, a boolean scalar
    array too), not a basic index."""
    Tensor = _tensor_type()
    if isinstance(i, Tensor):
        return i.ndim > 0 or i.dtype is dtypes.bool
    if isinstance(i, np.ndarray):
        return i.ndim > 0 or i.dtype == np.bool_
    return isinstance(i, (list, tuple, range))


def host_indices(i: Any, kinds: str = "biu", what: str = "arrays used as indices") -> np.ndarray:
    """A numpy array, list or tuple of indices as an array of integers (or booleans, where
    `kinds` has "b"); IndexError naming `what` otherwise."""
    try:
        a = np.asarray(i)
    except (ValueError, OverflowError) as e:  # a ragged list, or ints past 64 bits
        raise RaggedIndexError(f"an index list must be rectangular and of integers within 64 "
                               f"bits, got {i!r}: {e}"[:300]) from None
    if a.size == 0 and a.dtype.kind == "f" and not isinstance(i, np.ndarray):
        a = a.astype(np.int64)  # numpy reads an empty list as no integers (not a float array)
    if a.dtype == object and all(isinstance(x, (int, np.integer)) for x in a.flat):
        big = next((x for x in a.flat if not -(1 << 63) <= int(x) < 1 << 64), None)
        if big is not None:
            raise IndexError(f"index {big} is out of bounds: {what} must fit 64 bits"[:300])
    if a.dtype.kind not in kinds:
        of = "integer (or boolean)" if "b" in kinds else "integer"
        raise IndexError(f"{what} must be of {of} type, got {a.dtype}")
    return a


def _components(x, idx: tuple) -> list[tuple[str, Any, int]]:
    """The index as ``(kind, value, axis of x)`` per component after Ellipsis and masks are
    expanded: kind 'none' (a new axis; axis -1), 'basic' (a slice of one axis), 'array' (an
    integer numpy array, or an integer Tensor, for one axis; ints are arrays, numpy's rule once
    an array is present) or 'gap' (an ellipsis of no axes: it parts the arrays around it)."""
    Tensor = _tensor_type()
    if sum(1 for i in idx if i is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis")
    parts: list[Any] = []
    for i in idx:
        if isinstance(i, (bool, np.bool_)) or (
                isinstance(i, (Tensor, np.ndarray)) and i.ndim == 0 and
                (i.dtype is dtypes.bool or i.dtype == np.bool_)):
            raise IndexError("a boolean scalar index is not supported (numpy makes it a new "
                             "axis of length 1 or 0: use None and a slice)")
        if isinstance(i, Tensor):
            if i.dtype is dtypes.bool:
                i = np.asarray(_read(i, "a boolean mask index (its nonzero() gives the "
                                      "places; mask.where(x, 0) reads nothing)"),
                               dtype=np.bool_)
            elif i.dtype.is_float:
                raise IndexError(f"tensors used as indices must be of integer (or boolean) "
                                 f"type, got {i.dtype.name}")
            elif i.device != x.device:
                raise IndexError(f"an index tensor on {i.device} for a tensor on {x.device}")
        elif isinstance(i, (np.ndarray, list, tuple, range)):
            i = host_indices(i)
        parts.append(i)
    # how many axes of x each part takes: a mask its own number, None and ... none
    def width(i) -> int:
        if i is None or i is Ellipsis:
            return 0
        return i.ndim if isinstance(i, np.ndarray) and i.dtype == np.bool_ else 1
    used = sum(width(i) for i in parts)
    if used > x.ndim:
        raise IndexError(f"too many indices for a tensor of rank {x.ndim}: {len(idx)} given, "
                         f"{used} axes indexed")
    out: list[tuple[str, Any, int]] = []
    axis = 0
    for i in parts:
        if i is Ellipsis:
            for _ in range(x.ndim - used):
                out.append(("basic", slice(None), axis))
                axis += 1
            if x.ndim == used:  # numpy: an ellipsis parts arrays even where it spans no axis
                out.append(("gap", None, -1))
        elif i is None:
            out.append(("none", None, -1))
        elif isinstance(i, np.ndarray) and i.dtype == np.bool_:
            covered = x.shape[axis: axis + i.ndim]
            for k, (n, m) in enumerate(zip(covered, i.shape)):
                if n != m and m != 0:  # (numpy lets a mask axis of size 0 meet any axis)
                    raise IndexError(f"boolean index did not match indexed tensor along axis "
                                     f"{axis + k}; size of axis is {n} but size of "
                                     f"corresponding boolean axis is {m}")
            for a in np.nonzero(i):
                out.append(("array", a.astype(np.int64), axis))
                axis += 1
        elif isinstance(i, (Tensor, np.ndarray)):
            out.append(("array", i, axis))
            axis += 1
        elif isinstance(i, (int, np.integer)) and not _is_bound(i):
            n = x.shape[axis]
            if isinstance(n, int) and not -n <= i < n:  # (before it must fit in 64 bits)
                raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
            out.append(("array", np.asarray(int(i), dtype=np.int64), axis))
            axis += 1
        elif isinstance(i, slice):
            out.append(("basic", i, axis))
            axis += 1
        else:
            raise IndexError(f"unsupported index {i!r} next to array indices: use ints, slices, "
                             "None, ..., integer arrays or boolean masks")
    for _ in range(x.ndim - used if not any(i is Ellipsis for i in parts) else 0):
        out.append(("basic", slice(None), axis))
        axis += 1
    return out


def _read(t, what: str) -> np.ndarray:
    """``t.numpy()``; inside a jit capture, whose replays could not read it again, a JitError
    naming `what` needs the values."""
    from tolk.errors import JitError

    try:
        return t.numpy()
    except JitError:
        raise JitError(f"{what} reads tensor data, which a captured (jitted) function cannot "
                       "do: its replays would reuse the values of the capture") from None


def _is_bound(i: Any) -> bool:
    from tolk.tensor import _is_bound as bound

    return bound(i)


class _Plan:
    """What an advanced index does to x: the basic part (a view y of x), the axes of y the
    arrays index, their sizes, the arrays and the shape B they broadcast to."""

    def __init__(self, x, idx: tuple):
        comps = _components(x, idx)
        self.basic = tuple(None if k == "none" else slice(None) if k == "array" else v
                           for k, v, _ in comps if k != "gap")
        self.y = x[self.basic]
        pos, self.axes, self.arrays, where = 0, [], [], []
        for j, (k, v, axis) in enumerate(comps):
            if k == "gap":
                continue
            if k == "array":
                self.axes.append(pos)
                self.arrays.append((v, axis))
                where.append(j)
            pos += 1  # (arrays keep their axis in y: `basic` holds a full slice there)
        # numpy: arrays next to each other put B where they are, else first
        self.adjacent = where[-1] - where[0] + 1 == len(where)
        sizes = []
        for a, axis in zip(self.axes, self.arrays):
            n = self.y.shape[a]
            if not isinstance(n, int):
                raise IndexError(f"an array index on axis {axis[1]}, whose size {n} is "
                                 "symbolic: index it with a slice")
            sizes.append(n)
        self.sizes = sizes
        shapes = [tuple(v.shape) for v, _ in self.arrays]
        if len(shapes) == 1:  # (one array: its own shape, symbolic sizes too)
            self.B = shapes[0]
        elif any(not isinstance(d, int) for sh in shapes for d in sh):
            raise IndexError(f"index tensors of symbolic shapes {shapes} cannot broadcast "
                             "together: index with one of them, or realize them first")
        else:
            try:
                self.B = tuple(np.broadcast_shapes(*shapes))
            except ValueError:
                raise IndexError(f"shape mismatch: indexing arrays could not be broadcast "
                                 f"together with shapes {' '.join(map(str, shapes))}") from None
        self.rest_axes = [a for a in range(self.y.ndim) if a not in self.axes]
        self.rest = tuple(self.y.shape[a] for a in self.rest_axes)
        self.lead = self.axes[0] if self.adjacent else 0  # rest axes before B in the result

    def checked_host(self, a: np.ndarray, n: int, axis: int) -> np.ndarray:
        """Host indices `a` into an axis of `n` as int64, negatives wrapped; IndexError out of
        range (none where the arrays broadcast to nothing: numpy reads no index then)."""
        if a.size and 0 not in self.B and (a.min() < -n or a.max() >= n):
            bad = a[(a < -n) | (a >= n)].flat[0]
            raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {n}")
        if 0 in self.B:
            return np.zeros(a.shape, np.int64)
        a = a.astype(np.int64)  # (in range: uint64 fits; a narrow dtype cannot hold a + n)
        return np.where(a < 0, a + n, a)

    def merged(self):
        """y with the indexed axes first and merged into one: (prod(sizes), *rest)."""
        order = self.axes + self.rest_axes
        z = self.y.permute(order) if order != list(range(self.y.ndim)) else self.y
        return z.reshape((prod(self.sizes),) + self.rest)

    def place(self, t):
        """A tensor shaped B + rest put in the result's layout (B after `lead` rest axes)."""
        nb, lead = len(self.B), self.lead
        if lead == 0 or nb == 0:
            return t
        order = list(range(nb, nb + lead)) + list(range(nb)) + list(range(nb + lead, t.ndim))
        return t.permute(order)

    def result_shape(self) -> tuple:
        return self.rest[:self.lead] + self.B + self.rest[self.lead:]


def getitem(x, idx: tuple):
    """``x[idx]`` for an index with arrays (see the module's docstring)."""
    from tolk.tensor import _out_of_bounds_named

    Tensor = _tensor_type()
    p = _Plan(x, idx)
    if 0 in p.B:  # (no index is read, as numpy's: an empty view of x, reaching x's gradient)
        return x.flatten().shrink(((0, 0),)).reshape(p.result_shape())
    one = len(p.arrays) == 1
    flat = where = None
    for (v, axis), n, stride in zip(p.arrays, p.sizes, _strides(p.sizes)):
        if isinstance(v, np.ndarray):
            w = Tensor(p.checked_host(v, n, axis), device=x.device)
        else:
            if n == 0 and v.numel() != 0:
                raise IndexError(f"index tensor of shape {v.shape} into axis {axis} of size 0: "
                                 "no index is valid")
            # checked when the kernel runs: a take from 0..n-1 wraps negatives and raises out
            # of range (one array needs none: the gather below is that take)
            if not one:  # (named in the message of one out of bounds, as numpy names it)
                w = _out_of_bounds_named(Tensor.arange(n, dtype=dtypes.int64,
                                                       device=x.device).gather(v),
                                         ("", axis, n, True))
            else:
                w = v
                where = ("", axis, n, True)
        if not one:
            w = w.cast(dtypes.int64)._broadcast_to(p.B) * stride
        flat = w if flat is None else flat + w
    if 0 in p.sizes:  # (no element: as above)
        return x.flatten().shrink(((0, 0),)).reshape(p.result_shape())
    out = p.merged().gather(flat)
    return p.place(_out_of_bounds_named(out, where) if one and where is not None else out)


def _strides(sizes: list[int]) -> list[int]:
    out, s = [], 1
    for n in reversed(sizes):
        out.append(s)
        s *= n
    return out[::-1]


def setitem(x, idx: tuple, value) -> None:
    """``x[idx] = value`` for an index with arrays (see the module's docstring). As numpy's,
    a boolean mask over every axis of x takes a value of at most one axis (TypeError)."""
    Tensor = _tensor_type()
    _check_full_mask_value(x, idx, value)
    if _lazy_mask(x, idx, value):
        return
    # the places written are data: integer index tensors are read (realized) first
    idx = tuple(np.asarray(_read(i, "an assignment at integer tensor indices (the places "
                                 "written are data; a select with where reads nothing)"))
                if isinstance(i, Tensor) and i.ndim and i.dtype.kind in "iu" else i
                for i in idx)
    p = _Plan(x, idx)
    v = _value(x, value)
    shape = p.result_shape()
    vs = v.shape
    while len(vs) > len(shape) and vs[0] == 1:  # numpy: leading size-1 axes may go
        vs = vs[1:]
    if not _broadcastable(vs, shape):
        raise ShapeError(f"shape mismatch: value of shape {v.shape} could not be broadcast to "
                         f"the indexing result of shape {shape}")
    nb = prod(p.B)
    cols = []
    for (a, axis), n in zip(p.arrays, p.sizes):
        cols.append(np.broadcast_to(p.checked_host(a, n, axis), p.B))
    if nb == 0 or prod(p.sizes) == 0:
        return  # nothing is named (checked all the same)
    # only the box the indices span is rewritten (one row of a table, not the whole table)
    box = [(int(c.min()), int(c.max()) + 1) for c in cols]
    p.y = p.y.shrink(tuple(box[p.axes.index(a)] if a in p.axes else None
                           for a in range(p.y.ndim)))
    p.sizes = [hi - lo for lo, hi in box]
    cols = [c - lo for c, (lo, _) in zip(cols, box)]
    flat = np.zeros(p.B, dtype=np.int64)
    for c, stride in zip(cols, _strides(p.sizes)):
        flat += c * stride
    inv = np.full(prod(p.sizes), -1, dtype=np.int64)
    inv[flat.reshape(-1)] = np.arange(nb, dtype=np.int64)  # numpy's own choice among repeats
    v = v.reshape(vs)._broadcast_to(shape)
    lead, k = p.lead, len(p.B)
    if lead and k:  # to B-first: (B, rest)
        v = v.permute(list(range(lead, lead + k)) + list(range(lead)) +
                      list(range(lead + k, v.ndim)))
    v = v.reshape((nb,) + p.rest)
    got = v.gather(Tensor(np.maximum(inv, 0), device=x.device))
    hit = Tensor((inv >= 0).reshape((-1,) + (1,) * len(p.rest)), device=x.device)
    new = hit.where(got, p.merged())
    order = p.axes + p.rest_axes
    new = new.reshape(tuple(p.sizes) + p.rest)
    if order != list(range(p.y.ndim)):
        new = new.permute([order.index(a) for a in range(p.y.ndim)])
    p.y.assign(new)


def _check_full_mask_value(x, idx: tuple, value) -> None:
    """numpy's rule for ``x[mask] = value`` where one boolean mask spans all of x's axes: the
    result is 1-d and the value may have no more than one axis (not even leading size-1 ones,
    which other assignments drop)."""
    if len(idx) != 1 or x.ndim == 0:
        return
    m = idx[0]
    if isinstance(m, (list, tuple)):
        m = np.asarray(m)
    dtype = getattr(m, "dtype", None)
    if not (dtype is dtypes.bool or (isinstance(m, np.ndarray) and dtype == np.bool_)) \
            or m.ndim != x.ndim:
        return
    ndim = sequence_depth(value)
    if ndim > 1:
        raise TypeError(f"x[mask] = value with a boolean mask over all {x.ndim} axes of x needs "
                        f"a value of 0 or 1 dimensions (numpy's rule), got {ndim} dimensions")


def _value(x, value):
    """`value` as a tensor of x's dtype on x's device (numpy's setitem casts)."""
    Tensor = _tensor_type()
    if isinstance(value, Tensor):
        if value.device != x.device:
            raise DeviceError(f"assign from device {value.device} into a tensor on {x.device}")
        return value.cast(x.dtype) if value.dtype is not x.dtype else value
    if isinstance(value, (list, tuple)):  # Python numbers: checked as Tensor() checks them
        return Tensor(value, dtype=x.dtype, device=x.device)
    if isinstance(value, (np.ndarray, np.generic)):
        a = np.asarray(value)  # (cast as numpy's advanced setitem casts it: wrapping)
        if a.dtype.kind not in "biuf":
            raise TypeError(f"cannot assign values of dtype {a.dtype} into a {x.dtype.name} "
                            "tensor (bools, ints and floats only)")
        if x.dtype is not dtypes.bfloat16:
            a = a.astype(x.dtype.np)
        return Tensor(a, dtype=x.dtype, device=x.device)
    if hasattr(value, "shards"):
        raise TypeError(f"cannot assign a sharded tensor ({value!r}) into a Tensor: gather it "
                        "with .to(device) first")
    return Tensor.full((), value, dtype=x.dtype, device=x.device)


def _lazy_mask(x, idx: tuple, value) -> bool:
    """``x[mask] = value`` as a select, when the index is one boolean mask over x's leading
    axes and the value has no axis for the selected elements. True when done."""
    Tensor = _tensor_type()
    if len(idx) != 1:
        return False
    m = idx[0]
    if isinstance(m, (list, tuple)):
        m = host_indices(m)
    is_mask = (isinstance(m, Tensor) and m.dtype is dtypes.bool) or \
        (isinstance(m, np.ndarray) and m.dtype == np.bool_)
    if not is_mask or m.ndim == 0 or m.ndim > x.ndim or tuple(m.shape) != x.shape[:m.ndim]:
        return False
    if isinstance(m, Tensor) and m.device != x.device:
        return False
    v = _value(x, value)
    if not _broadcastable(v.shape, x.shape[m.ndim:]):
        return False
    rest = x.shape[m.ndim:]
    mask = m if isinstance(m, Tensor) else Tensor(m, device=x.device)
    mask = mask.reshape(tuple(m.shape) + (1,) * len(rest))
    x.assign(mask.where(v, x))
    return True
