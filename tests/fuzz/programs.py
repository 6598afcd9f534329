"""Random tensor programs: a hypothesis generator, a plain-numpy interpreter, and tolk runners.

A `Program` is data: the shapes and dtypes of its starting tensors, the ranges of its bound
variables, and a tuple of steps. Steps are plain tuples (so a shrunk failure prints as Python a
regression test can paste); they name *pool entries* by index, and every step that makes a
value appends one entry. Entries are Tensors or MultiTensors (sharded over CPU:1 and CPU:2).

The oracle is numpy with eager semantics. Every tensor is a view of some storage (`_Base`):
a computed tensor gets fresh storage holding its value at the moment it is made (so does a
pad, as np.pad's copy); a movement op or a slice (reshape, permute, expand, shrink, flip,
getitem) is a view of its source's storage, stored as an index array into it. Assigns write
through a view into the storage, so every view of it sees the new data while a tensor computed
earlier keeps its old value. This is tolk's documented assign semantics (tolk.tensor).

Writes through an EXPAND are never generated: tolk rejects them, as numpy does. Bugs the
fuzzer found are pinned in tests/fuzz/test_regressions.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

DEVS = ("CPU:1", "CPU:2")
MAX_NUMEL = 2048
F32, I32, I64, F64 = (np.dtype(t) for t in (np.float32, np.int32, np.int64, np.float64))


@dataclass(frozen=True)
class Program:
    """Starting tensors ``((shape, dtype name), ...)``, variables ``((min, max), ...)`` named
    v0, v1, ..., steps, and the order in which the final realize names the pool entries."""

    inputs: tuple
    variables: tuple
    steps: tuple
    final_order: tuple = ()


# ---------------------------------------------------------------------------------------------
# numpy semantics helpers (tolk follows numpy promotion; Python scalars are weakly typed)


def weak_dtype(dt: np.dtype, x) -> np.dtype:
    """The dtype a Python scalar takes next to a tensor of dtype `dt` (tolk.tensor docstring)."""
    if isinstance(x, (bool, int)):
        return dt
    return dt if dt.kind == "f" else F32


def float_dtype(dt: np.dtype) -> np.dtype:
    return dt if dt.kind == "f" else F32


def acc_dtype(dt: np.dtype) -> np.dtype:
    return I64 if dt.kind in "biu" else dt


def _clip(a: np.ndarray, lo, hi) -> np.ndarray:
    return np.minimum(np.maximum(a, np.asarray(lo, a.dtype)), np.asarray(hi, a.dtype))


def unary_np(op: str, a: np.ndarray) -> np.ndarray:
    """What tolk computes for each unary step (see `unary_tolk`)."""
    if op == "relu":
        return np.maximum(a, np.asarray(0, a.dtype))
    if op == "abs":
        return np.abs(a)
    if op == "neg":
        return np.negative(a)
    if op == "exp":  # clipped so values stay finite
        c = _clip(a, -10, 10)
        return np.exp(c.astype(float_dtype(c.dtype)))
    if op == "exp_raw":
        return np.exp(a.astype(float_dtype(a.dtype)))
    if op == "tanh":
        return np.tanh(a.astype(float_dtype(a.dtype)))
    if op == "sigmoid":
        f = a.astype(float_dtype(a.dtype))
        return np.reciprocal(np.asarray(1, f.dtype) + np.exp(np.negative(f)))
    if op == "sqrt":
        return np.sqrt(np.abs(a).astype(float_dtype(a.dtype)))
    if op == "log":
        b = np.abs(a) + np.asarray(1, a.dtype)
        return np.log(b.astype(float_dtype(b.dtype)))
    if op == "log1p":
        return np.log1p(np.abs(a).astype(float_dtype(a.dtype)))
    raise ValueError(op)


def unary_tolk(op: str, t):
    if op == "relu":
        return t.relu()
    if op == "abs":
        return t.abs()
    if op == "neg":
        return -t
    if op == "exp":
        return t.clip(-10, 10).exp()
    if op == "exp_raw":
        return t.exp()
    if op == "tanh":
        return t.tanh()
    if op == "sigmoid":
        return t.sigmoid()
    if op == "sqrt":
        return t.abs().sqrt()
    if op == "log":
        return (t.abs() + 1).log()
    if op == "log1p":
        return t.abs().log1p()
    raise ValueError(op)


def binary_np(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    d = np.result_type(a, b)
    a, b = a.astype(d), b.astype(d)
    if op == "add":
        return np.add(a, b)
    if op == "sub":
        return np.subtract(a, b)
    if op == "mul":
        return np.multiply(a, b)
    if op == "max":
        return np.maximum(a, b)
    if op == "min":
        return np.minimum(a, b)
    if op == "div":
        f = float_dtype(d)
        return np.true_divide(a.astype(f), b.astype(f))
    raise ValueError(op)


def binary_tolk(op: str, a, b):
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op == "max":
        return a.maximum(b)
    if op == "min":
        return a.minimum(b)
    if op == "div":
        return a / b
    raise ValueError(op)


def scalar_np(op: str, a: np.ndarray, c, reverse: bool) -> np.ndarray:
    d = weak_dtype(a.dtype, c)
    x, y = a.astype(d), np.asarray(c, d)
    return binary_np(op, y, x) if reverse else binary_np(op, x, y)


def scalar_tolk(op: str, t, c, reverse: bool):
    if not reverse:
        return binary_tolk(op, t, c)
    return {"add": lambda: c + t, "sub": lambda: c - t, "mul": lambda: c * t,
            "div": lambda: c / t}[op]()


def reduce_np(op: str, a: np.ndarray, axis, keepdim: bool) -> np.ndarray:
    if op == "sum":
        return np.asarray(np.sum(a, axis=axis, keepdims=keepdim, dtype=acc_dtype(a.dtype)))
    if op == "max":
        return np.asarray(np.max(a, axis=axis, keepdims=keepdim))
    if op == "min":
        return np.asarray(np.min(a, axis=axis, keepdims=keepdim))
    if op == "mean":
        axes = range(a.ndim) if axis is None else ((axis,) if isinstance(axis, int) else axis)
        n = math.prod(a.shape[x] for x in axes)
        f = a.astype(float_dtype(a.dtype))
        s = np.asarray(np.sum(f, axis=axis, keepdims=keepdim, dtype=f.dtype))
        return s * np.asarray(1 / n if n else float("nan"), f.dtype)
    raise ValueError(op)


def reduce_tolk(op: str, t, axis, keepdim: bool):
    return getattr(t, op)(axis, keepdim=keepdim)


def pad_np(a: np.ndarray, pads, fill) -> np.ndarray:
    """tolk pad: negative amounts shrink first; None means no padding on that axis."""
    pairs = [(0, 0) if p is None else p for p in pads]
    sl = tuple(slice(max(0, -b), s - max(0, -e)) for (b, e), s in zip(pairs, a.shape))
    a = a[sl]
    if not pairs:
        return np.array(a)
    return np.pad(a, [(max(0, b), max(0, e)) for b, e in pairs], constant_values=fill)


def expand_shape(shape: tuple, new: tuple) -> tuple:
    lead = len(new) - len(shape)
    return tuple(new[:lead]) + tuple(s if n == -1 else n for s, n in zip(shape, new[lead:]))


def movement_np(kind: str, a: np.ndarray, arg, fill=0) -> np.ndarray:
    """A movement op on values or on index arrays (`fill` is what padding reads)."""
    if kind == "reshape":
        return a.reshape(arg)
    if kind == "permute":
        return a.transpose(arg)
    if kind == "expand":
        return np.broadcast_to(a, expand_shape(a.shape, arg))
    if kind == "pad":
        return pad_np(a, arg, fill)
    if kind == "shrink":
        return a[tuple(slice(None) if b is None else slice(b[0], b[1]) for b in arg)]
    if kind == "flip":
        return np.flip(a, arg)
    if kind == "getitem":
        return np.asarray(a[arg])
    raise ValueError(kind)


def fused_const(dt: np.dtype):
    """The constant a fused assign value adds: no other step uses it, so the value's graph never
    equals a pool entry's."""
    return 0.75 if dt.kind == "f" else 7


def assign_value_np(value: np.ndarray, fused: bool) -> np.ndarray:
    return scalar_np("add", value, fused_const(value.dtype), False) if fused else value


def assign_value_tolk(t, fused: bool, dtype):
    """What an assign step stores: the entry, or the entry plus a constant (fused into the
    store's kernel), cast to the target's dtype."""
    if fused:
        t = t + fused_const(np.dtype(t.dtype.np))
    return t if t.dtype == dtype else t.cast(dtype)


def movement_tolk(kind: str, t, arg):
    if kind == "getitem":
        return t[arg]
    if kind == "pad":
        return t.pad(arg)
    return getattr(t, kind)(arg)


# ---------------------------------------------------------------------------------------------
# the numpy machine


@dataclass(eq=False)
class _Base:
    """Storage in numpy semantics: a flat array that assigns write into (compared by
    identity: views of one storage share it)."""

    data: np.ndarray


@dataclass(eq=False)
class Entry:
    """A pool entry: a view (index array `idx`, -1 = padding zero) of `base`.

    `expanded`: tolk's view goes through an EXPAND, so tolk rejects a store through it (numpy
    rejects writes into broadcast views too; the index model alone cannot tell).
    Invariant: for kind "m" (a MultiTensor), idx is the identity of `base` and `axis` is set."""

    base: _Base
    idx: np.ndarray
    device: str = "CPU"
    kind: str = "t"
    axis: int = -1
    expanded: bool = False

    @property
    def shape(self) -> tuple:
        return self.idx.shape

    @property
    def dtype(self) -> np.dtype:
        return self.base.data.dtype

    def value(self) -> np.ndarray:
        d = self.base.data
        if d.size == 0:
            return np.zeros(self.idx.shape, d.dtype)
        out = d[np.maximum(self.idx, 0)]
        return np.where(self.idx >= 0, out, np.zeros((), d.dtype)).astype(d.dtype)

    def writable(self) -> bool:
        """A view an assign may write through: no padding and no element named twice."""
        flat = self.idx.reshape(-1)
        return self.kind == "t" and bool((flat >= 0).all()) and np.unique(flat).size == flat.size


def _fresh(value: np.ndarray, device: str, kind: str = "t", axis: int = -1) -> Entry:
    value = np.array(value)  # a copy (np.ascontiguousarray would make 0-d arrays 1-d)
    base = _Base(value.reshape(-1))
    return Entry(base, np.arange(value.size).reshape(value.shape), device, kind, axis)


class NumpyMachine:
    """Runs program steps eagerly on numpy. `trace` collects (label, value) at checks and end."""

    def __init__(self, arrays, var_values):
        self.pool: list[Entry] = [_fresh(np.asarray(a), "CPU") for a in arrays]
        self.vars = list(var_values)
        self.trace: list[tuple[str, np.ndarray]] = []

    def add(self, e: Entry) -> None:
        self.pool.append(e)

    def computed(self, value, device: str, kind: str = "t", axis: int = -1) -> None:
        self.add(_fresh(np.asarray(value), device, kind, axis))

    def view(self, src: Entry, kind: str, arg) -> None:
        idx = movement_np(kind, src.idx, arg, fill=-1)
        expanded = src.expanded or (kind == "expand" and idx.shape != src.shape)
        self.add(Entry(src.base, np.array(idx), src.device, expanded=expanded))

    def write(self, target: Entry, value: np.ndarray) -> None:
        """Assign `value` through `target`, a view of some storage."""
        value = np.broadcast_to(value.astype(target.dtype), target.shape)
        target.base.data[target.idx.reshape(-1)] = value.reshape(-1)

    def apply(self, step: tuple) -> None:  # one branch per step kind
        k, p = step[0], self.pool
        if k == "unary":
            e = p[step[2]]
            self.computed(unary_np(step[1], e.value()), e.device)
        elif k == "binary":
            a, b = p[step[2]], p[step[3]]
            self.computed(binary_np(step[1], a.value(), b.value()), a.device)
        elif k == "scalar":
            e = p[step[2]]
            self.computed(scalar_np(step[1], e.value(), step[3], step[4]), e.device)
        elif k == "var":  # a bound variable is an int scalar, weakly typed as a Python int
            e = p[step[2]]
            d = e.value().dtype if e.value().dtype != np.bool_ else np.dtype(np.int32)
            x, v = e.value().astype(d), np.asarray(self.vars[step[3]], d)
            self.computed(binary_np(step[1], v, x) if step[4] else
                          binary_np(step[1], x, v), e.device)
        elif k == "where":
            c, x, y = (p[i] for i in step[1:4])
            cond = c.value() > np.asarray(0, c.dtype)
            d = np.result_type(x.dtype, y.dtype)
            self.computed(np.where(cond, x.value().astype(d), y.value().astype(d)), x.device)
        elif k == "reduce":
            e = p[step[2]]
            self.computed(reduce_np(step[1], e.value(), step[3], step[4]), e.device)
        elif k == "cast":
            e = p[step[1]]
            self.computed(e.value().astype(step[2]), e.device)
        elif k == "contiguous":
            e = p[step[1]]
            self.computed(e.value(), e.device)
        elif k == "to":
            self.computed(p[step[1]].value(), step[2])
        elif k == "cat":
            a, b = p[step[1]], p[step[2]]
            d = np.result_type(a.dtype, b.dtype)
            self.computed(np.concatenate([a.value().astype(d), b.value().astype(d)], step[3]),
                          a.device)
        elif k == "move":
            e, kind, arg = p[step[2]], step[1], step[3]
            if kind == "pad":  # a new tensor, as np.pad's copy
                self.computed(pad_np(e.value(), arg, step[4]), e.device)
            else:
                self.view(e, kind, arg)
        elif k == "assign":
            self.write(p[step[1]], assign_value_np(p[step[2]].value(), step[3]))
        elif k == "assign_scalar":
            self.write(p[step[1]], np.asarray(step[2]))
        elif k in ("setitem", "view_assign"):
            e, index, v = p[step[1]], step[2], step[3]
            value = assign_value_np(p[v].value(), step[5]) if step[4] else np.asarray(v)
            self.view(e, "getitem", index)
            target = self.pool[-1]
            if k == "setitem":
                self.pool.pop()
            self.write(target, value)
        elif k == "shard":
            self.computed(p[step[1]].value(), DEVS[0], kind="m", axis=step[2])
        elif k == "m_unary":
            e = p[step[2]]
            self.computed(unary_np(step[1], e.value()), e.device, kind="m", axis=e.axis)
        elif k == "m_binary":
            a, other = p[step[2]], step[3]
            if other[0] == "s":
                value = scalar_np(step[1], a.value(), other[1], False)
            else:
                value = binary_np(step[1], a.value(), p[other[1]].value())
            self.computed(value, a.device, kind="m", axis=a.axis)
        elif k == "m_reduce":
            e, axis, keep = p[step[2]], step[3], step[4]
            r = reduce_np(step[1], e.value(), axis, keep)
            axes = range(len(e.shape)) if axis is None else \
                ((axis,) if isinstance(axis, int) else axis)
            axes = tuple(a % len(e.shape) for a in axes)
            if e.axis in axes:
                self.computed(r, DEVS[0])
            else:
                new_axis = e.axis if keep else e.axis - sum(1 for a in axes if a < e.axis)
                self.computed(r, e.device, kind="m", axis=new_axis)
        elif k == "gather":
            self.computed(p[step[1]].value(), "CPU")
        elif k == "realize":
            pass  # eager numpy has nothing pending
        elif k == "check":
            self.trace.append((f"check #{len(self.trace)} of entry {step[1]}", p[step[1]].value()))
        else:
            raise ValueError(f"unknown step {step!r}")

    def finish(self, order) -> None:
        for i in order:
            self.trace.append((f"final value of entry {i}", self.pool[i].value()))


def interpret(prog: Program, arrays, var_values) -> list[tuple[str, np.ndarray]]:
    """The program's trace (checks, then final values in `final_order`) in numpy semantics."""
    m = NumpyMachine(arrays, var_values)
    with np.errstate(all="ignore"):
        for s in prog.steps:
            m.apply(s)
    m.finish(prog.final_order)
    return m.trace


# ---------------------------------------------------------------------------------------------
# the tolk machine: the same steps on tolk Tensors


class TolkMachine:
    """Runs program steps on tolk. With ``jit=True`` checks are skipped (no reads in capture)."""

    def __init__(self, tensors, binds, jit: bool = False):
        self.pool: list = list(tensors)
        self.binds = list(binds)
        self.jit = jit
        self.trace: list[tuple[str, np.ndarray]] = []

    def apply(self, step: tuple) -> None:  # one branch per step kind
        from tolk import Tensor

        k, p = step[0], self.pool
        add = self.pool.append
        if k == "unary":
            add(unary_tolk(step[1], p[step[2]]))
        elif k == "binary":
            add(binary_tolk(step[1], p[step[2]], p[step[3]]))
        elif k == "scalar":
            add(scalar_tolk(step[1], p[step[2]], step[3], step[4]))
        elif k == "var":
            v, t = self.binds[step[3]], p[step[2]]
            add(binary_tolk(step[1], v, t) if step[4] else binary_tolk(step[1], t, v))
        elif k == "where":
            add((p[step[1]] > 0).where(p[step[2]], p[step[3]]))
        elif k == "reduce":
            add(reduce_tolk(step[1], p[step[2]], step[3], step[4]))
        elif k == "cast":
            add(p[step[1]].cast(step[2]))
        elif k == "contiguous":
            add(p[step[1]].contiguous())
        elif k == "to":
            add(p[step[1]].to(step[2]))
        elif k == "cat":
            add(p[step[1]].cat(p[step[2]], dim=step[3]))
        elif k == "move":
            kind, t, arg = step[1], p[step[2]], step[3]
            add(t.pad(arg, value=step[4]) if kind == "pad" else movement_tolk(kind, t, arg))
        elif k == "assign":
            target = p[step[1]]
            target.assign(assign_value_tolk(p[step[2]], step[3], target.dtype))
        elif k == "assign_scalar":
            p[step[1]].assign(step[2])
        elif k in ("setitem", "view_assign"):
            t, index, v, is_entry = p[step[1]], step[2], step[3], step[4]
            value = assign_value_tolk(p[v], step[5], t.dtype) if is_entry else v
            if k == "setitem":
                t[index] = value
            else:
                add(t[index].assign(value))
        elif k == "shard":
            add(p[step[1]].shard(DEVS, axis=step[2]))
        elif k == "m_unary":
            add(unary_tolk(step[1], p[step[2]]))
        elif k == "m_binary":
            other = step[3]
            b = other[1] if other[0] == "s" else p[other[1]]
            add(binary_tolk(step[1], p[step[2]], b))
        elif k == "m_reduce":
            add(reduce_tolk(step[1], p[step[2]], step[3], step[4]))
        elif k == "gather":
            add(p[step[1]].to("CPU"))
        elif k == "realize":
            ts = [s for i in step[1] for s in _tensors_of(p[i])]
            if ts:
                Tensor.realize(*ts)
        elif k == "check":
            if self.jit:  # no reads inside a capture; realize, as the read would
                Tensor.realize(*_tensors_of(p[step[1]]))
            else:
                self.trace.append((f"check #{len(self.trace)} of entry {step[1]}",
                                   p[step[1]].numpy()))
        else:
            raise ValueError(f"unknown step {step!r}")

    def finish(self, order) -> None:
        from tolk import Tensor

        ts = [s for i in order for s in _tensors_of(self.pool[i])]
        if ts:
            Tensor.realize(*ts)
        for i in order:
            self.trace.append((f"final value of entry {i}", self.pool[i].numpy()))


def _tensors_of(x) -> list:
    return list(x.shards) if hasattr(x, "shards") else [x]


def make_data(prog: Program, seed: int):
    """Input arrays and variable values for one run of `prog`."""
    rng = np.random.default_rng(seed)
    arrays = []
    for shape, dt in prog.inputs:
        if np.dtype(dt).kind == "f":
            arrays.append(rng.standard_normal(shape).astype(dt))
        else:
            arrays.append(rng.integers(-5, 6, size=shape).astype(dt))
    return arrays, [int(rng.integers(lo, hi + 1)) for lo, hi in prog.variables]


def run_tolk(prog: Program, arrays, var_values) -> list[tuple[str, np.ndarray]]:
    from tolk import Tensor, Variable

    binds = [Variable(f"v{i}", lo, hi).bind(v) for i, ((lo, hi), v)
             in enumerate(zip(prog.variables, var_values))]
    m = TolkMachine([Tensor(a) for a in arrays], binds)
    with np.errstate(all="ignore"):
        for s in prog.steps:
            m.apply(s)
        m.finish(prog.final_order)
    return m.trace


def jit_outputs(pool) -> list:
    """What the jitted function returns for a final pool: every entry, MultiTensors gathered
    to CPU (a MultiTensor is not a jit output)."""
    return [x.to("CPU") if hasattr(x, "shards") else x for x in pool]


def make_jit_fn(prog: Program):
    """A function of (*input tensors, *bound variables) running `prog`; returns its outputs,
    one per pool entry (`jit_outputs`)."""
    n_in = len(prog.inputs)

    def fn(*args):
        m = TolkMachine(args[:n_in], args[n_in:], jit=True)
        for s in prog.steps:
            m.apply(s)
        return tuple(jit_outputs(m.pool))

    return fn


def expected_pool(prog: Program, arrays, var_values) -> list[np.ndarray]:
    """Every pool entry's final value in numpy semantics (checks ignored)."""
    m = NumpyMachine(arrays, var_values)
    with np.errstate(all="ignore"):
        for s in prog.steps:
            m.apply(s)
    return [e.value() for e in m.pool]


# ---------------------------------------------------------------------------------------------
# comparing


def assert_same(label: str, got: np.ndarray, want: np.ndarray) -> None:
    """Shape, dtype and values (exact for ints; float32 tolerances scaled by magnitude)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{label}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"{label}: dtype {got.dtype} != {want.dtype}"
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=label)
        return
    finite = np.abs(want[np.isfinite(want)]) if want.size else np.zeros(0)
    scale = float(finite.max()) if finite.size else 0.0
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=2e-3,
                               atol=1e-4 * max(1.0, scale), equal_nan=True, err_msg=label)


def assert_traces(got, want) -> None:
    assert len(got) == len(want), f"trace lengths differ: {len(got)} != {len(want)}"
    for (label, g), (_, w) in zip(got, want):
        assert_same(label, g, w)


# ---------------------------------------------------------------------------------------------
# the generator


@dataclass
class Gen:
    """Generation knobs. `multi` and `variables` allow shards and bound variables; `weights`
    are the relative frequencies of the step kinds."""

    max_steps: int = 30
    multi: bool = True
    variables: bool = True
    weights: dict = field(default_factory=lambda: dict(_WEIGHTS))


_WEIGHTS = {
    "unary": 3, "binary": 4, "scalar": 2, "var": 1, "where": 1, "reduce": 3, "cast": 1,
    "contiguous": 1, "to": 1, "cat": 1, "move": 8, "assign": 3, "assign_scalar": 1,
    "setitem": 3, "view_assign": 2, "shard": 1, "m_unary": 1, "m_binary": 1, "m_reduce": 1,
    "gather": 1, "realize": 2, "check": 2,
}
UNARY = ("relu", "abs", "neg", "exp", "tanh", "sigmoid", "sqrt", "log", "log1p")
M_UNARY = ("relu", "abs", "neg", "exp_raw", "tanh", "sigmoid")
BINARY = ("add", "sub", "mul", "max", "min", "div")


def _bcast(*shapes):
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        return None


def _small(shape) -> bool:
    return shape is not None and math.prod(shape) <= MAX_NUMEL


@st.composite
def shapes_for_inputs(draw, n: int):
    rank = draw(st.integers(0, 3) if draw(st.integers(0, 9)) == 0 else st.integers(1, 3))
    universe = tuple(draw(st.integers(1, 4)) for _ in range(rank))
    out = []
    for _ in range(n):
        drop = draw(st.integers(0, rank)) if rank else 0
        s = [d if draw(st.integers(0, 3)) else 1 for d in universe[drop:]]
        out.append(tuple(s))
    return out


def _axis_arg(draw, ndim: int):
    if ndim == 0:
        return None
    kind = draw(st.integers(0, 2))
    if kind == 0:
        return None
    if kind == 1:
        return draw(st.integers(-ndim, ndim - 1))
    axes = draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True))
    return tuple(sorted(axes))


def _reshape_arg(draw, shape):
    n = math.prod(shape)
    if n == 0:
        k = draw(st.integers(1, 3))
        out = [draw(st.integers(1, 3)) for _ in range(k)]
        out[draw(st.integers(0, k - 1))] = 0
        return tuple(out)
    factors, m, f = [], n, 2
    while m > 1:
        while m % f == 0:
            factors.append(f)
            m //= f
        f += 1
    k = draw(st.integers(1, 4))
    dims = [1] * k
    for fac in factors:
        dims[draw(st.integers(0, k - 1))] *= fac
    if draw(st.booleans()):
        dims[draw(st.integers(0, k - 1))] = -1
    return tuple(dims)


def _index_arg(draw, shape):
    nd = len(shape)
    n_real = draw(st.integers(0, nd))
    parts: list = []
    for ax in range(n_real):
        size = shape[ax]
        kind = draw(st.integers(0, 3))
        if kind == 0 and size > 0:
            parts.append(draw(st.integers(-size, size - 1)))
        elif kind == 1:
            parts.append(slice(None))
        else:
            opt = st.one_of(st.none(), st.integers(-size - 1, size + 1))
            step = draw(st.sampled_from((None, 1, 2, 3, -1, -2)))
            parts.append(slice(draw(opt), draw(opt), step))
    for _ in range(draw(st.integers(0, 2)) if draw(st.integers(0, 3)) == 0 else 0):
        parts.insert(draw(st.integers(0, len(parts))), None)
    if draw(st.integers(0, 4)) == 0:
        parts.insert(draw(st.integers(0, len(parts))), Ellipsis)
    return parts[0] if len(parts) == 1 and draw(st.booleans()) else tuple(parts)


def _move_arg(draw, kind: str, shape):
    nd = len(shape)
    if kind == "reshape":
        return _reshape_arg(draw, shape)
    if kind == "permute":
        return tuple(draw(st.permutations(range(nd))))
    if kind == "expand":
        lead = tuple(draw(st.integers(1, 3)) for _ in range(draw(st.integers(0, 1))))
        rest = tuple(draw(st.integers(1, 3)) if s == 1 else draw(st.sampled_from((s, -1)))
                     for s in shape)
        return lead + rest
    if kind == "pad":
        out = []
        for s in shape:
            if draw(st.booleans()):
                out.append(None)
            else:
                lo = -1 if s >= 3 else 0
                out.append((draw(st.integers(lo, 2)), draw(st.integers(lo, 2))))
        return tuple(out)
    if kind == "shrink":
        out = []
        for s in shape:
            if draw(st.booleans()):
                out.append(None)
            else:
                b = draw(st.integers(0, s))
                out.append((b, draw(st.integers(b, s))))
        return tuple(out)
    if kind == "flip":
        return _axis_arg(draw, nd) if nd else None
    if kind == "getitem":
        return _index_arg(draw, shape)
    raise ValueError(kind)


def _scalar_for(draw, dt: np.dtype):
    if dt.kind == "f" and draw(st.booleans()):
        return draw(st.sampled_from((0.5, -1.5, 2.0, 3.25)))
    return draw(st.integers(-3, 3))


class _NoChoice(Exception):
    """No pool entry fits the step being drawn: draw another kind."""


class _Drawer:
    """Draws one valid step for the current numpy machine state."""

    def __init__(self, draw, gen: Gen, m: NumpyMachine, nvars: int):
        self.draw, self.gen, self.m, self.nvars = draw, gen, m, nvars

    def tensors(self, pred=lambda e: True) -> list[int]:
        return [i for i, e in enumerate(self.m.pool) if e.kind == "t" and pred(e)]

    def multis(self) -> list[int]:
        return [i for i, e in enumerate(self.m.pool) if e.kind == "m"]

    def pick(self, idxs: list[int]) -> int:
        if not idxs:
            raise _NoChoice
        return self.draw(st.sampled_from(idxs))

    def step(self) -> tuple:
        """One valid step."""
        kinds = [k for k, w in self.gen.weights.items() for _ in range(w) if self.possible(k)]
        while True:
            k = self.draw(st.sampled_from(kinds))
            try:
                s = getattr(self, "s_" + k)()
            except _NoChoice:
                s = None
            if s is not None:
                return s

    def possible(self, k: str) -> bool:
        if k.startswith("m_") or k == "gather":
            return self.gen.multi and bool(self.multis())
        if k == "shard":
            return self.gen.multi
        if k == "var":
            return self.nvars > 0
        return True

    def nonempty(self, e: Entry) -> bool:
        return math.prod(e.shape) > 0

    # -- value steps --------------------------------------------------------------------------

    def s_unary(self):
        return ("unary", self.draw(st.sampled_from(UNARY)), self.pick(self.tensors()))

    def s_scalar(self):
        i = self.pick(self.tensors())
        op = self.draw(st.sampled_from(("add", "sub", "mul", "div", "max", "min")))
        rev = op in ("add", "sub", "mul", "div") and self.draw(st.booleans())
        return ("scalar", op, i, _scalar_for(self.draw, self.m.pool[i].dtype), rev)

    def s_var(self):
        i = self.pick(self.tensors())
        op = self.draw(st.sampled_from(("add", "sub", "mul")))
        return ("var", op, i, self.draw(st.integers(0, self.nvars - 1)), self.draw(st.booleans()))

    def s_binary(self):
        i = self.pick(self.tensors())
        a = self.m.pool[i]
        js = self.tensors(lambda e: e.device == a.device and _small(_bcast(e.shape, a.shape)))
        return ("binary", self.draw(st.sampled_from(BINARY)), i, self.pick(js))

    def s_where(self):
        i = self.pick(self.tensors())
        c = self.m.pool[i]
        js = self.tensors(lambda e: e.device == c.device and _small(_bcast(e.shape, c.shape)))
        j = self.pick(js)
        x = self.m.pool[j]
        ks = self.tensors(lambda e: e.device == c.device
                          and _small(_bcast(e.shape, c.shape, x.shape)))
        return ("where", i, j, self.pick(ks))

    def s_reduce(self, kind: str = "reduce"):
        i = self.pick(self.multis() if kind == "m_reduce" else self.tensors())
        e = self.m.pool[i]
        op = self.draw(st.sampled_from(("sum", "max", "min", "mean")))
        axis = _axis_arg(self.draw, len(e.shape))
        if op in ("max", "min") and not self.reducible(e.shape, axis):
            op = "sum"
        return (kind, op, i, axis, self.draw(st.booleans()))

    def reducible(self, shape, axis) -> bool:
        axes = range(len(shape)) if axis is None else ((axis,) if isinstance(axis, int) else axis)
        return all(shape[a] > 0 for a in axes)

    def s_cast(self):
        i = self.pick(self.tensors())
        dt = self.m.pool[i].dtype
        return ("cast", i, "int32" if dt.kind == "f" else "float32")

    def s_contiguous(self):
        return ("contiguous", self.pick(self.tensors()))

    def s_to(self):
        i = self.pick(self.tensors())
        devs = [d for d in ("CPU", *DEVS) if d != self.m.pool[i].device]
        return ("to", i, self.draw(st.sampled_from(devs)))

    def s_cat(self):
        i = self.pick(self.tensors(lambda e: len(e.shape) > 0))
        a = self.m.pool[i]
        dim = self.draw(st.integers(-len(a.shape), len(a.shape) - 1))
        d = dim % len(a.shape)
        js = self.tensors(lambda e: e.device == a.device and len(e.shape) == len(a.shape) and all(
            x == y for k, (x, y) in enumerate(zip(e.shape, a.shape)) if k != d)
            and _small(a.shape[:d] + (a.shape[d] + e.shape[d],) + a.shape[d + 1:]))
        return ("cat", i, self.pick(js), dim) if js else None

    def s_move(self):
        i = self.pick(self.tensors())
        e = self.m.pool[i]
        kinds = ["reshape", "expand", "pad", "shrink", "getitem"]
        if len(e.shape):
            kinds += ["permute", "flip"]
        kind = self.draw(st.sampled_from(kinds))
        arg = _move_arg(self.draw, kind, e.shape)
        try:
            out = movement_np(kind, e.idx, arg, -1)
        except (ValueError, IndexError):
            return None
        if not _small(out.shape):
            return None
        fill = 0
        if kind == "pad" and self.draw(st.integers(0, 3)) == 0:
            fill = _scalar_for(self.draw, e.dtype)
        return ("move", kind, i, arg, fill)

    # -- assigns ------------------------------------------------------------------------------

    def assignable(self, e: Entry) -> bool:
        """Never through an EXPAND: tolk and numpy reject it."""
        return e.writable() and not e.expanded

    def value_for(self, target: Entry):
        """(value, is_entry): a pool entry broadcastable into `target`, or a scalar."""
        js = self.tensors(lambda v: v.device == target.device and len(v.shape) <= len(
            target.shape) and _bcast(v.shape, target.shape) == target.shape)
        if js and self.draw(st.integers(0, 3)):
            return self.pick(js), True
        return _scalar_for(self.draw, target.dtype), False

    def s_assign(self):
        ts = self.tensors(self.assignable)
        if not ts:
            return None
        i = self.pick(ts)
        v, is_entry = self.value_for(self.m.pool[i])
        if not is_entry:
            return ("assign_scalar", i, v)
        return ("assign", i, v, self.draw(st.booleans()))

    def s_assign_scalar(self):
        ts = self.tensors(self.assignable)
        if not ts:
            return None
        i = self.pick(ts)
        return ("assign_scalar", i, _scalar_for(self.draw, self.m.pool[i].dtype))

    def s_setitem(self, kind: str = "setitem"):
        ts = self.tensors(lambda e: len(e.shape) > 0)
        if not ts:
            return None
        i = self.pick(ts)
        e = self.m.pool[i]
        if e.expanded:  # tolk and numpy reject it
            return None
        index = _index_arg(self.draw, e.shape)
        try:
            idx = movement_np("getitem", e.idx, index, -1)
        except (ValueError, IndexError):
            return None
        view = Entry(e.base, idx, e.device)
        if not view.writable():
            return None
        v, is_entry = self.value_for(view)
        return (kind, i, index, v, is_entry, is_entry and self.draw(st.booleans()))

    def s_view_assign(self):
        return self.s_setitem("view_assign")

    # -- multi-device -------------------------------------------------------------------------

    def s_shard(self):
        ts = self.tensors(lambda e: len(e.shape) > 0)
        if not ts:
            return None
        i = self.pick(ts)
        axes = list(range(len(self.m.pool[i].shape)))
        return ("shard", i, self.draw(st.sampled_from(axes)))

    def s_m_unary(self):
        return ("m_unary", self.draw(st.sampled_from(M_UNARY)), self.pick(self.multis()))

    def s_m_binary(self):
        i = self.pick(self.multis())
        a = self.m.pool[i]
        op = self.draw(st.sampled_from(("add", "sub", "mul", "div")))
        same = [j for j in self.multis() if self.m.pool[j].shape == a.shape
                and self.m.pool[j].axis == a.axis]
        nd = len(a.shape)

        def fits(e: Entry) -> bool:
            if len(e.shape) > nd:
                return False
            full = (1,) * (nd - len(e.shape)) + e.shape
            return full[a.axis] in (1, a.shape[a.axis]) and _bcast(full, a.shape) == a.shape

        ts = self.tensors(fits)
        choice = self.draw(st.integers(0, 2))
        if choice == 0 and same:
            return ("m_binary", op, i, ("m", self.pick(same)))
        if choice == 1 and ts:
            return ("m_binary", op, i, ("t", self.pick(ts)))
        return ("m_binary", op, i, ("s", _scalar_for(self.draw, a.dtype)))

    def s_m_reduce(self):
        return self.s_reduce("m_reduce")

    def s_gather(self):
        return ("gather", self.pick(self.multis()))

    # -- realization --------------------------------------------------------------------------

    def s_realize(self):
        n = len(self.m.pool)
        idx = self.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=4, unique=True))
        return ("realize", tuple(idx))

    def s_check(self):
        return ("check", self.draw(st.integers(0, len(self.m.pool) - 1)))


@st.composite
def programs(draw, gen: Gen | None = None):
    """A random valid `Program` (see the module docstring)."""
    gen = gen or Gen()
    n_in = draw(st.integers(2, 3))
    shapes = draw(shapes_for_inputs(n_in))
    dts = [draw(st.sampled_from(("float32", "float32", "float32", "int32"))) for _ in shapes]
    nvars = draw(st.integers(0, 2)) if gen.variables else 0
    variables = tuple((lo, lo + draw(st.integers(0, 8)))
                      for lo in (draw(st.integers(-4, 2)) for _ in range(nvars)))
    inputs = tuple((s, d) for s, d in zip(shapes, dts))
    m = NumpyMachine([np.zeros(s, d) for s, d in inputs], [lo for lo, _ in variables])
    drawer = _Drawer(draw, gen, m, nvars)
    steps = []
    with np.errstate(all="ignore"):
        for _ in range(draw(st.integers(1, gen.max_steps))):
            s = drawer.step()
            m.apply(s)
            steps.append(s)
    order = tuple(draw(st.permutations(range(len(m.pool)))))
    return Program(inputs, variables, tuple(steps), order)


# ---------------------------------------------------------------------------------------------
# minimizing a failing program by hand (hypothesis shrinks too, but slowly on long programs)

_MAKES_VALUE = frozenset({
    "unary", "binary", "scalar", "var", "where", "reduce", "cast", "contiguous", "to", "cat",
    "move", "view_assign", "shard", "m_unary", "m_binary", "m_reduce", "gather",
})


def _ref_fields(step: tuple) -> list:
    """Paths of the pool indices a step names: ints (a field) or (field, sub) pairs."""
    k = step[0]
    if k in ("unary", "scalar", "var", "reduce", "move", "m_unary", "m_reduce"):
        return [2]
    if k == "binary":
        return [2, 3]
    if k == "where":
        return [1, 2, 3]
    if k in ("cast", "contiguous", "to", "assign_scalar", "shard", "gather", "check"):
        return [1]
    if k in ("cat", "assign"):
        return [1, 2]
    if k in ("setitem", "view_assign"):
        return [1, 3] if step[4] else [1]
    if k == "m_binary":
        return [2, (3, 1)] if step[3][0] in "mt" else [2]
    if k == "realize":
        return [(1, j) for j in range(len(step[1]))]
    raise ValueError(k)


def _get(step, path):
    return step[path] if isinstance(path, int) else step[path[0]][path[1]]


def _set(step, path, value):
    s = list(step)
    if isinstance(path, int):
        s[path] = value
    else:
        inner = list(s[path[0]])
        inner[path[1]] = value
        s[path[0]] = tuple(inner)
    return tuple(s)


def without_step(prog: Program, k: int) -> Program | None:
    """`prog` without step k and every later step that used what it made; None if nothing
    would be left."""
    pool = len(prog.inputs)
    dead: set[int] = set()
    mapping: dict[int, int] = {i: i for i in range(pool)}
    steps = []
    new_pool = pool
    for n, s in enumerate(prog.steps):
        made = s[0] in _MAKES_VALUE
        refs = [_get(s, p) for p in _ref_fields(s)]
        drop = n == k or (s[0] != "realize" and any(r in dead for r in refs))
        if s[0] == "realize" and not drop:
            kept = tuple(mapping[r] for r in s[1] if r not in dead)
            if not kept:
                drop = True
            else:
                s = ("realize", kept)
        elif not drop:
            for p in _ref_fields(s):
                s = _set(s, p, mapping[_get(s, p)])
        if drop:
            if made:
                dead.add(pool)
        else:
            steps.append(s)
            if made:
                mapping[pool] = new_pool
                new_pool += 1
        if made:
            pool += 1
    if not steps:
        return None
    order = tuple(mapping[i] for i in prog.final_order if i not in dead)
    return Program(prog.inputs, prog.variables, tuple(steps), order)


def minimize(prog: Program, fails) -> Program:
    """Greedily drop steps (and their dependents) while ``fails(program)`` stays true."""
    changed = True
    while changed:
        changed = False
        for k in reversed(range(len(prog.steps))):
            if k >= len(prog.steps):
                continue
            cand = without_step(prog, k)
            if cand is not None and fails(cand):
                prog, changed = cand, True
    ident = Program(prog.inputs, prog.variables, prog.steps,
                    tuple(range(len(prog.final_order))))
    return ident if fails(ident) else prog
