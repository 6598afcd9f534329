"""Capture and replay: `tolk.jit(fn)` runs fn's schedules once, then replays them directly.

Call 1 runs `fn` normally. Call 2 captures: a capturer is registered in
``tolk.engine.realize.capturing`` (per thread), so every schedule `fn` realizes in this
thread is recorded (unplanned, not executed; other threads' realizes run as usual); when `fn`
returns, its outputs are realized into the capture too, the combined schedule is
memory-planned once holding every input and output buffer, and run.
Later calls replay: each input tensor's buffer is bound where the captured input was, the
new variable values are passed, and the compiled kernels run in order with no scheduling.

Arguments may be Tensors and bound Variables in any mix (positional or keyword, also inside
lists, tuples and dicts); any other value is a constant baked into the capture. Replay
returns fresh output tensors each call. Inputs must keep their shapes, dtypes and devices
(`JitError` otherwise), and each must be a tensor of its own, not a view of part of
another's buffer (pass ``x.contiguous()``); reading a tensor's data inside a captured
function is an error (the value would be baked in), and captures do not nest (within a
thread; two threads may capture at once).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from tolk.engine.realize import capturing, run_linear
from tolk.errors import JitError
from tolk.runtime.cpu import get_kernel
from tolk.runtime.device import set_storage, typed_view
from tolk.schedule import memory_plan_rewrite
from tolk.uop.ops import Ops, UOp


def _flatten(obj: Any, out: list) -> None:
    from tolk.tensor import Tensor
    from tolk.variable import BoundVariable

    if isinstance(obj, (Tensor, BoundVariable)):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _flatten(o, out)
    elif isinstance(obj, dict):
        for k in sorted(obj, key=repr):
            _flatten(obj[k], out)


def _whole_buffer(u: UOp) -> bool:
    return u.op is Ops.BUFFER or (u.op is Ops.RESHAPE and u.src[0].op is Ops.BUFFER)


def _input_buffer(t) -> UOp:
    """The whole contiguous BUFFER `t` reads, `t` realized first (as any realize: its views
    and later assigns keep following it). A view of part of a buffer (a slice, a transpose)
    is refused: the capture binds whole buffers, and a copy would cut the caller's tensor off
    from the buffer it views (its writes and the function's would not reach it)."""
    u = t.uop
    if not _whole_buffer(u):
        t.realize()
        u = t.uop
    if not _whole_buffer(u):
        raise JitError(f"a jitted function's input of shape {t.shape} is a view of part of "
                       "another tensor's buffer (a slice, a transpose): pass x.contiguous(), "
                       "a tensor of its own")
    return u if u.op is Ops.BUFFER else u.src[0]


def _signature(t) -> tuple:
    return (t.shape, t.dtype, t.device)


class _Capturer:
    """Collects the schedules realized while a function is captured."""

    def __init__(self) -> None:
        self.calls: list[UOp] = []
        self.var_vals: dict[str, int] = {}

    def add_linear(self, linear: UOp, var_vals: dict[str, int]) -> None:
        self.calls.extend(linear.src)
        self.var_vals.update(var_vals)


class CapturedJit:
    """The decorated function: see the module docstring for its three phases."""

    def __init__(self, fn: Callable):
        self.fn = fn
        self.calls = 0
        self.plan: list[tuple[Any, list]] | None = None
        self.linear: UOp | None = None
        self.in_sigs: list[tuple] = []
        self.var_names: list[str] = []
        self.out_template: Any = None
        self.out_bufs: list[UOp] = []
        self.out_views: list[UOp] = []
        self.in_index: dict[UOp, int] = {}
        self.const_outs: set[UOp] = set()
        functools.update_wrapper(self, fn)

    def reset(self) -> None:
        """Forget the capture: the next call runs normally, the one after captures again."""
        self.calls, self.plan, self.linear = 0, None, None

    def __call__(self, *args, **kwargs):
        flat: list = []
        _flatten((args, kwargs), flat)
        from tolk.tensor import Tensor

        tensors = [x for x in flat if isinstance(x, Tensor)]
        binds = [x for x in flat if not isinstance(x, Tensor)]
        if self.calls == 0:
            for t in tensors:  # what the capture will ask of them, asked from the first call
                _input_buffer(t)
            self.calls = 1
            out = self.fn(*args, **kwargs)
            _realize_outputs(out)
            return out
        if capturing:
            raise JitError(f"tolk.jit captures do not nest: {self.fn.__name__!r} was called while "
                           "another function is being captured")
        if self.calls == 1:
            return self._capture(tensors, binds, args, kwargs)
        return self._replay(tensors, binds)

    # -- capture ------------------------------------------------------------------------------

    def _capture(self, tensors, binds, args, kwargs):
        from tolk.tensor import Tensor

        in_bufs = [_input_buffer(t) for t in tensors]
        self.in_sigs = [_signature(t) for t in tensors]
        self.var_names = [b.name for b in binds]
        cap = _Capturer()
        if capturing:  # this thread's: other threads capture on their own
            raise JitError("tolk.jit captures do not nest: a capture is already running")
        capturing.append(cap)
        try:
            out = self.fn(*args, **kwargs)
            outs: list = []
            _flatten(out, outs)
            out_tensors = [o for o in outs if isinstance(o, Tensor)]
            if out_tensors:
                out_tensors[0].realize(*out_tensors[1:])
        finally:
            capturing.remove(cap)
        self.out_views = [o.uop for o in out_tensors]
        self.out_bufs = list({_base(o.uop): None for o in out_tensors})  # distinct buffers
        self.out_template = out
        linear = UOp(Ops.LINEAR, src=tuple(cap.calls))
        held = [*in_bufs, *self.out_bufs]
        self.linear = memory_plan_rewrite(linear, held)
        run_linear(self.linear, {**cap.var_vals, **{b.name: b.value for b in binds}})
        self._compile(in_bufs)
        self.calls = 2
        return out

    def _compile(self, in_bufs: list[UOp]) -> None:
        """Per call: its kernel and, per argument, a fixed view or an input/output index."""
        self.in_index = {b: i for i, b in enumerate(in_bufs)}
        written = {c.src[1] for c in self.linear.src if len(c.src) > 1}
        # an output no call writes (made from host data inside fn) is a constant of the capture
        self.const_outs = {b for b in self.out_bufs if b not in written and b not in self.in_index}
        where = {b: ("in", i) for i, b in enumerate(in_bufs)}
        for j, b in enumerate(self.out_bufs):
            where.setdefault(b, ("out", j))
        plan = []
        for call in self.linear.src:
            specs = []
            for a in call.src[1:]:
                if a.op is Ops.BIND:
                    continue
                specs.append(where.get(a) or ("fixed", typed_view(a)))
            ast = call.src[0]
            dev = call.src[1].src[0].device if call.src[1].op is Ops.SLICE else call.src[1].device
            plan.append((None if ast.op is Ops.COPY else get_kernel(ast, dev), specs))
        self.plan = plan

    # -- replay -------------------------------------------------------------------------------

    def _replay(self, tensors, binds):
        from tolk.tensor import Tensor

        sigs = [_signature(t) for t in tensors]
        if sigs != self.in_sigs:
            raise JitError(f"jitted function called with inputs {sigs}, "
                           f"captured with {self.in_sigs}")
        if [b.name for b in binds] != self.var_names:
            raise JitError(f"jitted function called with variables {[b.name for b in binds]}, "
                           f"captured with {self.var_names}")
        in_bufs = [_input_buffer(t) for t in tensors]
        ins = [typed_view(b) for b in in_bufs]
        new_bufs = []
        for b in self.out_bufs:
            if b in self.in_index:  # an output that is an input (e.g. updated in place)
                new_bufs.append(in_bufs[self.in_index[b]])
                continue
            if b in self.const_outs:
                new_bufs.append(b)
                continue
            nb = UOp.buffer(b.dtype, b.size, b.device)
            set_storage(nb, np.zeros(nb.nbytes, np.uint8))
            new_bufs.append(nb)
        outs = [typed_view(b) for b in new_bufs]
        var_vals = {b.name: b.value for b in binds}
        with np.errstate(all="ignore"):
            for kernel, specs in self.plan:
                bufs = [s[1] if s[0] == "fixed" else (ins[s[1]] if s[0] == "in" else outs[s[1]])
                        for s in specs]
                if kernel is None:
                    np.copyto(bufs[0], bufs[1].view(bufs[0].dtype))
                else:
                    kernel.run(bufs, var_vals)
        new_binds = {b.name: b.uop for b in binds}
        fresh = []
        new_of = dict(zip(self.out_bufs, new_bufs))
        for v in self.out_views:
            old = _base(v)
            mapping = {old: new_of[old]}
            for n in v.toposort():  # symbolic output shapes take this call's variable values
                if n.op is Ops.BIND and n.src[0].arg[0] in new_binds:
                    mapping[n] = new_binds[n.src[0].arg[0]]
            fresh.append(Tensor(v.substitute(mapping)))
        return _rebuild(self.out_template, iter(fresh))


def _base(u: UOp) -> UOp:
    while u.op in (Ops.RESHAPE, Ops.PERMUTE, Ops.EXPAND, Ops.PAD, Ops.SHRINK, Ops.FLIP):
        u = u.src[0]
    return u


def _realize_outputs(out) -> None:
    from tolk.tensor import Tensor

    flat: list = []
    _flatten(out, flat)
    ts = [o for o in flat if isinstance(o, Tensor)]
    if ts:
        ts[0].realize(*ts[1:])


def _rebuild(template, fresh):
    from tolk.tensor import Tensor

    if isinstance(template, Tensor):
        return next(fresh)
    if isinstance(template, (list, tuple)):
        return type(template)(_rebuild(t, fresh) for t in template)
    if isinstance(template, dict):
        keys = sorted(template, key=repr)
        vals = {k: _rebuild(template[k], fresh) for k in keys}
        return {k: vals[k] for k in template}
    return template


def jit(fn: Callable) -> CapturedJit:
    """Capture `fn`'s schedules on its second call and replay them on later calls."""
    return CapturedJit(fn)
