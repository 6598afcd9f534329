"""Shapes and devices of tensor-graph nodes, inferred bottom-up and cached on each node.

Conventions of the tensor graph:
- BUFFER and PARAM are flat: shape ``(size,)``; tensors view them through movement ops.
- CONST, DEFINE_VAR and BIND are scalars: shape ``()``.
- ALU sources have equal shapes (the front end broadcasts explicitly with RESHAPE/EXPAND).
- REDUCE_AXIS ``arg=(op, axes)`` keeps reduced axes as size 1.
- AFTER has the shape of its state ``src[0]``; STORE, SINK and CALL have none (``()``).
Devices: BUFFER/PARAM carry one; COPY moves to its arg; other nodes take their first
source's device (constants and variables have none and adopt their neighbours').
"""

from __future__ import annotations

from typing import NamedTuple

from tolk.helpers import prod
from tolk.uop.ops import Ops, UOp, node_cache, register_arg_type


@register_arg_type
class Sym(NamedTuple):
    """A symbolic dimension: the value of variable `name` (in ``[lo, hi]``) plus `add`.

    Shapes may hold Syms where a bound variable sized a slice. A Sym never equals an int;
    ``Sym - Sym`` of one variable is an int; `smax` gives the size buffers are allocated at.
    """

    name: str
    lo: int
    hi: int
    add: int = 0

    def __add__(self, k):  # type: ignore[override]
        if isinstance(k, int):
            return Sym(self.name, self.lo, self.hi, self.add + k)
        return NotImplemented

    __radd__ = __add__

    def __sub__(self, k):
        if isinstance(k, int):
            return Sym(self.name, self.lo, self.hi, self.add - k)
        if isinstance(k, Sym) and k.name == self.name:
            return self.add - k.add
        return NotImplemented

    def __rsub__(self, k):
        return NotImplemented

    def __mul__(self, k):  # type: ignore[override]
        return NotImplemented  # no product of a symbolic size (a tuple would repeat itself)

    __rmul__ = __mul__

    def __repr__(self) -> str:
        return self.name + (f"{self.add:+d}" if self.add else "")

    @property
    def max(self) -> int:
        return self.hi + self.add

    @property
    def min(self) -> int:
        return self.lo + self.add

    def value(self, var_vals: dict[str, int]) -> int:
        return var_vals[self.name] + self.add


Dim = int | Sym
Shape = tuple[Dim, ...]


def smax(d: Dim) -> int:
    """The largest value a dimension can take."""
    return d.max if isinstance(d, Sym) else d


def max_numel(shape: Shape) -> int:
    """Elements at the largest value of every symbolic dimension (what buffers hold)."""
    return prod(smax(d) for d in shape)


def concrete(shape: Shape, var_vals: dict[str, int]) -> tuple[int, ...]:
    return tuple(d.value(var_vals) if isinstance(d, Sym) else d for d in shape)


def is_symbolic(shape: Shape) -> bool:
    return any(isinstance(d, Sym) for d in shape)


def syms_in(arg) -> list[Sym]:
    """Every symbolic dimension anywhere in a (nested tuple) arg."""
    out, todo = [], [arg]
    while todo:
        a = todo.pop()
        if isinstance(a, Sym):
            out.append(a)
        elif isinstance(a, tuple):
            todo.extend(a)
    return out


def shape_syms(shape: Shape) -> list[Sym]:
    return [d for d in shape if isinstance(d, Sym)]
_NO_SHAPE = frozenset({Ops.STORE, Ops.SINK, Ops.CALL, Ops.LINEAR, Ops.END, Ops.NOOP, Ops.DEVICE})


def _infer(u: UOp) -> Shape:
    op, arg = u.op, u.arg
    if op in (Ops.BUFFER, Ops.PARAM):
        return (arg[2],)
    if op is Ops.SLICE:
        return (arg[1] // u.dtype.itemsize,)
    if op in (Ops.CONST, Ops.DEFINE_VAR, Ops.BIND) or op in _NO_SHAPE:
        return ()
    if op is Ops.RESHAPE or op is Ops.EXPAND:
        return tuple(arg)
    src = shape_of(u.src[0])
    if op is Ops.PERMUTE:
        return tuple(src[i] for i in arg)
    if op is Ops.PAD:
        return tuple(s + b + a for s, (b, a) in zip(src, arg))
    if op is Ops.SHRINK:
        return tuple(e - b for b, e in arg)
    if op is Ops.GATHER:
        return shape_of(u.src[1]) + src[1:]
    if op is Ops.REDUCE_AXIS:
        axes = arg[1]
        return tuple(1 if i in axes else s for i, s in enumerate(src))
    return src


def _cached(u: UOp, name: str, infer) -> object:
    """``u._cache[name]``, computing ``infer(n)`` for every node below `u` that lacks it,
    children first and without recursion (so `infer` may read its sources' values)."""
    cache = u._cache
    if name in cache:
        return cache[name]
    for s in u.src:
        if name not in s._cache:
            break
    else:  # a new node over known sources, as a tensor op builds it: no walk
        value = infer(u)
        node_cache(u)[name] = value
        return value
    for n in u.toposort(enter=lambda n: name not in n._cache):
        if name not in n._cache:
            value = infer(n)
            node_cache(n)[name] = value
    return u._cache[name]


def shape_of(u: UOp) -> Shape:
    """The shape of a tensor-graph node (cached; computed without recursion)."""
    return _cached(u, "shape", _infer_noting_device)


def _infer_noting_device(n: UOp) -> Shape:
    """`_infer`, caching the node's device too when it is at hand: the node's own, or its first
    source's when cached (the first source with a device has it). A tensor gets its shape when
    it is built, so a chain of ops knows its device without the walk of `device_of`."""
    own = _OWN_DEVICE.get(n.op)
    if own is not None:
        node_cache(n)["device"] = own(n)
    elif n.src:
        first = n.src[0]._cache.get("device")
        if first is not None:
            node_cache(n)["device"] = first
    return _infer(n)


def numel(u: UOp) -> int:
    return prod(shape_of(u))


def device_of(u: UOp) -> str | None:
    """The device a tensor-graph node lives on: its own (BUFFER, PARAM, COPY, DEVICE, SLICE)
    or else that of its first source that has one; None for sourceless scalars.

    Depth first, sources left to right, stopping at the first device found (a graph whose
    inputs all sit on one device is rarely walked far); remembered on the nodes searched.
    """
    path: list[UOp] = []  # nodes whose device is the first one found below them
    frames: list = []  # iterators over the sources of `path` not tried yet
    n: UOp | None = u
    while n is not None:
        cache = n._cache
        if "device" in cache:
            device = cache["device"]
        elif n.op in _OWN_DEVICE:
            device = _OWN_DEVICE[n.op](n)
        elif n.src:
            path.append(n)
            frames.append(iter(n.src))
            device = None
        else:
            device = None
        if device is not None:
            for p in path:
                _remember_device(p, device)
            return device
        n = None
        while frames and n is None:
            n = next(frames[-1], None)
            if n is None:  # no source of this node has a device
                frames.pop()
                _remember_device(path.pop(), None)
    return None


_OWN_DEVICE = {
    Ops.BUFFER: lambda n: n.arg[1], Ops.PARAM: lambda n: n.arg[1], Ops.COPY: lambda n: n.arg,
    Ops.DEVICE: lambda n: n.arg, Ops.SLICE: lambda n: n.src[0].arg[1],
}


def _remember_device(n: UOp, device: str | None) -> None:
    node_cache(n)["device"] = device
