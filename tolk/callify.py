"""From Tensors to a scheduled CALL and back: realize, assign, numpy.

`realize` builds one tensor-level SINK of realizations ``AFTER(state, STORE(view, value))``
(an output buffer for each computed tensor, the pending assigns of the others), turns every
concrete BUFFER into a PARAM (the body is then the same for the same computation on other
data, so it hits the schedule cache), schedules ``CALL(body, *buffers, *binds)`` with
`create_linear_for_sink` (cached by the sink's structure: a hit builds no body), runs the
planned LINEAR, and points the tensors at their buffers.
"""

from __future__ import annotations

import time

import numpy as np

from tolk.dtype import bf16_to_f32, dtypes
from tolk.engine.realize import run_linear
from tolk.errors import DeviceError, ShapeError
from tolk.helpers import prod
from tolk.runtime.device import typed_view
from tolk.schedule import create_linear_for_sink
from tolk.tensor import IdentityWeakSet, Tensor, _base_and_chain, _lazy, _views
from tolk.uop.ops import GroupOp, Ops, UOp
from tolk.uop.shape import max_numel, shape_syms

# Called as hook(planned LINEAR, var_vals, seconds spent scheduling) for every realize.
schedule_hooks: list = []


def _is_view_of_state(u: UOp) -> bool:
    return _base_and_chain(u).op in (Ops.BUFFER, Ops.AFTER)


def _reads(u: UOp, states: set[UOp]) -> bool:
    return any(n in states for n in u.toposort())


def _register_view(t: Tensor) -> None:
    base = _base_and_chain(t.uop)
    _views.setdefault(base, IdentityWeakSet()).add(t)
    _lazy.discard(t)


def _snapshot_readers(tensors: list[Tensor], afters: list[UOp]) -> list[Tensor]:
    """Lazy tensors that read a state an assign here supersedes: realized before the write."""
    superseded = {a.src[0] for a in afters}
    chosen = {id(t) for t in tensors}
    extra = []
    for t in list(_lazy):
        if id(t) not in chosen and _reads(t.uop, superseded):
            extra.append(t)
            chosen.add(id(t))
    return extra


def _build_sink(tensors: list[Tensor]):
    """The realizations of `tensors`: (sink sources, [(tensor, AFTER, output view)]).

    An output whose graph contains an earlier output reads that output's buffer instead of
    computing it again."""
    srcs: dict[UOp, None] = {}
    outputs: list[tuple[Tensor, UOp, UOp]] = []
    reads: dict[UOp, UOp] = {}  # an earlier output's graph -> a view of its realization
    for t in tensors:
        u = t.uop
        base = _base_and_chain(u)
        if base.op is Ops.BUFFER:
            continue
        if base.op is Ops.AFTER:
            srcs[base] = None
            continue
        shape = t.shape
        binds = t._binds(d.name for d in shape_syms(shape))
        buf = UOp.buffer(t.dtype, max_numel(shape), t.device)
        # a second tensor with the same graph gets its own buffer: a copy of the first's
        value = reads[u] if u in reads else (u.substitute(reads) if reads else u)
        out_view = _view(buf, shape, binds)
        after = UOp(Ops.AFTER, t.dtype, (buf, UOp(Ops.STORE, dtypes.void, (out_view, value))))
        reads.setdefault(u, _view(after, shape, binds))
        outputs.append((t, after, out_view))
        srcs[after] = None
    return list(srcs), [(t, a, v) for t, a, v in outputs]


def _view(state: UOp, shape, binds: tuple[UOp, ...] = ()) -> UOp:
    base = state
    while base.op is Ops.AFTER:
        base = base.src[0]
    if shape == (base.size,):
        return state
    return UOp(Ops.RESHAPE, state.dtype, (state, *binds), shape)


def realize(tensors, run: bool = True):
    """Compute `tensors` in one schedule; with ``run=False`` return ``(LINEAR, var_vals)`` only."""
    tensors = list({id(t): t for t in tensors}.values())
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"realize takes Tensors, got {type(t).__name__}")
    srcs, outputs = _build_sink(tensors)
    if not srcs:
        return (UOp(Ops.LINEAR, src=()), {}) if not run else None
    fresh = {a for _, a, _ in outputs}
    sink = UOp.sink(*srcs)
    nodes = sink.toposort()
    user_afters = [n for n in nodes if n.op is Ops.AFTER and n not in fresh]
    if user_afters and run:
        extra = _snapshot_readers(tensors, user_afters)
        if extra:
            return realize(extra + tensors, run)
    start = time.perf_counter()
    # scheduled as CALL(body, *buffers, *binds), the body over PARAMs and variables: one
    # cached schedule for the same computation on other data and other variable values
    linear, var_vals = create_linear_for_sink(sink, nodes)
    for hook in schedule_hooks:
        hook(linear, var_vals, time.perf_counter() - start)
    if not run:
        return linear, var_vals
    run_linear(linear, var_vals)
    _after_run(outputs, user_afters)
    return None


def _after_run(outputs, user_afters: list[UOp]) -> None:
    for t, _, view in outputs:
        t.uop = view
        _register_view(t)
    if not user_afters:
        return
    becomes = {}
    for a in user_afters:
        b = a
        while b.op is Ops.AFTER:
            b = b.src[0]
        becomes[a] = b
    done = set(becomes)
    # views of a realized state, or of a later pending state built on it, now start from the
    # buffer: otherwise the next realize would run the realized stores again
    for state in [k for k in list(_views.keys()) if k in done or (k.op is Ops.AFTER and _reads(k, done))]:
        for t in list(_views.pop(state, ())):
            t.uop = t.uop.substitute(becomes)
            _register_view(t)
    for t in list(_lazy):
        if _reads(t.uop, done):
            t.uop = t.uop.substitute(becomes)


def assign(target: Tensor, x) -> Tensor:
    """Store `x` into `target`'s buffer through `target`'s view; every view of the buffer
    (including `target`) then reads the new state."""
    if not isinstance(x, Tensor):
        x = Tensor.full(target.shape, x, target.dtype, target.device)
    if x.shape != target.shape:
        # numpy assignment broadcasting: leading size-1 axes may go, then broadcast
        shape = x.shape
        while len(shape) > target.ndim and shape[0] == 1:
            shape = shape[1:]
        if not _broadcastable(shape, target.shape):
            raise ShapeError(f"assign of shape {x.shape} into a tensor of shape {target.shape}")
        x = x.reshape(shape)._broadcast_to(target.shape)
    if x.dtype is not target.dtype:
        raise TypeError(f"assign of dtype {x.dtype.name} into a tensor of dtype {target.dtype.name}; "
                        f"cast it first")
    if x.device != target.device:
        raise DeviceError(f"assign from device {x.device} into a tensor on {target.device}")
    chain = target.uop
    while chain.op in GroupOp.Movement:
        if chain.op is Ops.EXPAND:
            raise ValueError(f"cannot assign into a broadcast (expanded) view of shape {target.shape}: "
                             "it is read-only, as in numpy")
        chain = chain.src[0]
    if not _is_view_of_state(target.uop):
        target.realize()
    state = _base_and_chain(target.uop)
    if state.op is Ops.AFTER and _conflicting_binds(state, UOp.sink(target.uop, x.uop)):
        # an earlier pending assign used another value of the same variable: run it first
        target.realize()
        state = _base_and_chain(target.uop)
    new_state = UOp(Ops.AFTER, state.dtype, (state, UOp(Ops.STORE, dtypes.void, (target.uop, x.uop))))
    views = _views.pop(state, IdentityWeakSet())
    views.add(target)
    for t in views:
        t.uop = t.uop.substitute({state: new_state})
        _register_view(t)
    return target


def _conflicting_binds(a: UOp, b: UOp) -> bool:
    vals: dict[str, int] = {}
    for n in a.toposort():
        if n.op is Ops.BIND:
            vals[n.src[0].arg[0]] = n.src[1].arg
    return any(n.op is Ops.BIND and vals.get(n.src[0].arg[0], n.src[1].arg) != n.src[1].arg
               for n in b.toposort())


def _broadcastable(src: tuple[int, ...], dst: tuple[int, ...]) -> bool:
    if len(src) > len(dst):
        return False
    return all(s in (1, d) for s, d in zip(src[::-1], dst[::-1]))


def to_numpy(t: Tensor) -> np.ndarray:
    """The values of `t` as a new numpy array (bfloat16 as float32)."""
    from tolk.engine.realize import capturing

    if capturing:
        from tolk.errors import JitError

        raise JitError("reading tensor data inside a captured (jitted) function would bake the "
                       "value into the capture; return the tensor instead")
    realize([t])
    u = t.uop
    base = _base_and_chain(u)
    if not (u is base or (u.op is Ops.RESHAPE and u.src[0] is base)):
        c = t.contiguous()
        realize([c])
        u, base = c.uop, _base_and_chain(c.uop)
    if base.op is not Ops.BUFFER:
        raise DeviceError(f"tensor is not backed by a buffer after realize: {base.short()}")
    shape = t.concrete_shape
    data = typed_view(base)[: prod(shape)].copy()
    if t.dtype is dtypes.bfloat16:
        data = bf16_to_f32(data)
    return data.reshape(shape)
