"""Capture and replay: `tolk.jit(fn)` runs fn's schedules once, then replays them directly.

Call 1 runs `fn` normally. Call 2 captures: a capturer is registered in
``tolk.engine.realize.capturing`` (per thread), so every schedule `fn` realizes in this
thread is recorded (unplanned, not executed; other threads' realizes run as usual); when `fn`
returns, its outputs are realized into the capture too, the combined schedule is
memory-planned once holding every input and output buffer, and run.
Later calls replay: each input tensor's buffer is bound where the captured input was, the
new variable values are passed, and the compiled kernels run in order with no scheduling.

Arguments may be Tensors, sharded tensors (their shards are the inputs) and bound Variables
in any mix (positional or keyword, also inside lists, tuples and dicts); any other value is a
constant baked into the capture, and so is every number the function reads as a global or
closure variable (a replay where one changed is a JitError: pass it as an argument, a 0-d
Tensor to vary it; one read as an attribute of an object is not seen); a tensor whose buffer
the capture reads that way (also from a list, tuple or dict held there) must be the same
tensor at every replay, or the same view of the same buffer (assign into it to change its
values; one bound to another tensor is a JitError), and one bound to a name that it only
looks at must keep its shape, dtype and device; a capture whose input was such a tensor
refuses replays with another input (the plan read one buffer for both). Tensors nested deeper
(a list in a list) are neither checked nor realized first: pass them as arguments. A replay's
arguments
must have the captured call's shape:
the same containers (dict keys, lengths), tensors and variables in the same places, and equal
constants (``==``; numpy arrays by value), else a JitError (a call the function's signature
refuses is the TypeError calling it would raise). Replay returns fresh output tensors each
call (an output made from host data inside the function is a fresh copy of the captured one;
a tensor from outside the function that it returns is that tensor's buffer). Inputs must keep their
shapes, dtypes and devices, variables their names, ranges and offsets, and arguments that
were one tensor at capture must stay one tensor (`JitError` otherwise; distinct tensors may
later be one tensor unless the function writes it); each input must be a tensor of its own,
not a view of part of another's buffer (pass ``x.contiguous()``); reading a tensor's data
inside a captured function is an error (the value would be baked in), and so is drawing
random numbers inside it (rand, randn, uniform draw in Python: a replay would reuse them;
draw outside and pass them in). ``w -= lr * g`` is an assign (Tensor's in-place operators
write in place), so a replay makes it again.

A tensor the function realizes on the way without returning it lives in memory every replay
writes again (as the intermediates of a captured graph do elsewhere): one the capture call
left in a list or on an object shows what the latest replay computed there.

Assigns: the capture takes every assign the function makes (also into tensors it does not
return: a weight update), so each replay makes them again. This thread's assigns still
pending when a capture or a replay starts are run first, and so are another thread's that
the function reads, so the function always sees the values its tensors hold (a replay reads
those tensors' buffers directly); an input may not be a tensor from outside the function
that it writes. Lazy tensors the function reads as globals or closure variables are realized
before the capture, so a replay reads the value they hold (a lazy tensor reached otherwise,
as an attribute or inside a function it calls, is computed from what its sources hold at
each replay). A capture that
raises runs what the function had realized before the error, as a plain call would have,
and the next call captures again. A jitted function called while another one captures (in
the same thread) runs as plain code: its schedules join the outer capture; one called from
inside its own first, plain call (a recursive function) runs as plain code too and counts
as no call of its own. With ``CAPTURING=0`` every call runs the function as plain code.
"""

from __future__ import annotations

import copy
import dis
import functools
import inspect
import math
import struct
import threading
import types
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from tolk.engine.realize import after_call, capturing, run_linear
from tolk.errors import JitError
from tolk.helpers import CAPTURING
from tolk.runtime.cpu import get_kernel
from tolk.runtime.device import buffer_storage, copy_buffer, has_storage, typed_view
from tolk.schedule import memory_plan_rewrite
from tolk.uop.ops import Ops, UOp, fresh_buffer_slot


def _flatten(obj: Any, out: list, kinds: list | None = None,
             skeleton: list | None = None) -> None:
    """The tensors (a sharded one's shards) and bound variables in `obj`, through lists,
    tuples and dicts (`_dict_keys`) nested to any depth, in order, without recursion; a
    container met twice is walked each time (as `_rebuild` rebuilds it), one that holds
    itself is a JitError. `kinds` gets, per sharded tensor, its axis, shape and shard count
    (and None per tensor or variable): what a replay must be called with again. `skeleton`
    gets one entry per item met: a container's type and keys (or length), a marker per
    tensor, variable or sharded tensor, and any other value itself (a constant the capture
    bakes in)."""
    from tolk.multi import MultiTensor
    from tolk.tensor import Tensor
    from tolk.variable import BoundVariable

    frames, path, on_path = [iter((obj,))], [], set()  # the containers being walked
    while frames:
        for o in frames[-1]:
            if isinstance(o, (Tensor, BoundVariable)):
                out.append(o)
                if kinds is not None:
                    kinds.append(None)
                if skeleton is not None:
                    skeleton.append(_TENSOR if isinstance(o, Tensor) else _VARIABLE)
            elif isinstance(o, MultiTensor):
                out.extend(o.shards)
                if kinds is not None:
                    kinds.append((o.axis, o.shape, len(o.shards)))
                if skeleton is not None:
                    skeleton.append(_SHARDED)
            elif o is _LEFT_OUT:
                if skeleton is not None:
                    skeleton.append(_DEFAULT)
            elif not isinstance(o, (list, tuple, dict)):
                if skeleton is not None:  # ints, strings, None and bools compare exactly as
                    skeleton.append((type(o), o) if type(o) in _PLAIN  # (type, value)
                                    else _Constant(o))
            else:
                if skeleton is not None:
                    skeleton.append((type(o), tuple(_dict_keys(o)) if isinstance(o, dict)
                                     else len(o)))
                if id(o) in on_path:
                    raise JitError(f"a jitted function's argument or result holds itself "
                                   f"({type(o).__name__})")
                on_path.add(id(o))
                path.append(id(o))
                frames.append(iter([o[k] for k in _dict_keys(o)] if isinstance(o, dict)
                                   else o))
                break
        else:
            frames.pop()
            if path:
                on_path.discard(path.pop())


_TENSOR, _VARIABLE, _SHARDED = "a tensor", "a bound variable", "a sharded tensor"
_DEFAULT = "the parameter's default"
_LEFT_OUT = object()  # a parameter left to its default (`CapturedJit._arguments`)


_PLAIN = (int, str, bool, type(None))


class _Constant:
    """A value in a jitted function's arguments that is no tensor or variable: the capture
    bakes it in, so a replay needs the same value (compared as safely as it can be: floats by
    their bits, numpy arrays by their values, as the capture's copy holds them)."""

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value

    def kept(self) -> _Constant:
        """This constant as the capture keeps it: an array copied (a later write into the
        caller's array is a new value, not the captured one)."""
        return _Constant(self.value.copy()) if isinstance(self.value, np.ndarray) else self

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Constant):
            return False
        a, b = self.value, other.value
        if type(a) is not type(b):
            return False
        if isinstance(a, np.ndarray):
            if a.shape != b.shape or a.dtype != b.dtype:
                return False
            try:  # floats by their bits (-0.0, NaN); objects' == may raise: not equal then
                return a.tobytes() == b.tobytes() if a.dtype.kind in "fc" else \
                    bool(np.array_equal(a, b))
            except Exception:
                return False
        if type(a) is float:  # by the bits: -0.0 is no 0.0, NaN is NaN
            return a == b and math.copysign(1.0, a) == math.copysign(1.0, b) or \
                a != a and b != b and struct.pack("<d", a) == struct.pack("<d", b)
        if isinstance(a, np.floating):
            return a.tobytes() == b.tobytes()
        if a is b:
            return True
        try:
            same = a == b
            return same if type(same) is bool else bool(same) if isinstance(same, np.bool_) \
                else False
        except Exception:
            return False

    __hash__ = None

    def __repr__(self) -> str:
        text = repr(self.value)
        return f"the constant {text if len(text) <= 60 else text[:57] + '...'}"


def _dict_keys(d: dict) -> list:
    """The order a dict's values are taken in: string keys sorted (keyword arguments given in
    another order are the same call), any other keys in the dict's own order (a repr may hold
    an address, which is no order from call to call)."""
    return sorted(d) if all(type(k) is str for k in d) else list(d)


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


def _var_signature(b) -> tuple:
    return (b.name, b.var.min, b.var.max, b.add)  # the offset is in the captured graph


def _var_value(b) -> int:
    """The value a bound variable binds (``n.bind(3) + 1`` binds 3; the graph adds the 1)."""
    return b.value - b.add


class _JitSlot:
    """Where an instance keeps its jitted method's capture: copied, deep-copied and pickled
    as an empty slot (a capture holds locks and buffers, and belongs to one instance)."""

    __slots__ = ("jit",)

    def __init__(self) -> None:
        self.jit = None

    def __reduce__(self):
        return (_JitSlot, ())

    def __copy__(self) -> _JitSlot:
        return _JitSlot()

    def __deepcopy__(self, memo: dict) -> _JitSlot:
        return _JitSlot()


def _aliases(bufs: list[UOp]) -> tuple[int, ...]:
    """For each input, the first input with its buffer."""
    first: dict[UOp, int] = {}
    return tuple(first.setdefault(b, i) for i, b in enumerate(bufs))


def _run_pending() -> None:
    """Run this thread's pending assigns (a plain realize, never captured)."""
    from tolk.callify import take_pending_assigns

    pending = take_pending_assigns()
    if pending:
        pending[0].realize(*pending[1:])


class _Capturer:
    """Collects the schedules realized while a function is captured."""

    def __init__(self, pending_before: set[UOp] = frozenset(), lazy_before=None) -> None:
        self.calls: list[UOp] = []
        self.var_vals: dict[str, int] = {}
        self.pending_before = pending_before  # run outside the capture when read (callify)
        self.lazy_before = lazy_before  # lazy tensors made before: realized outside when
        # a realize would take them along (callify)

    def add_linear(self, linear: UOp, var_vals: dict[str, int]) -> None:
        for name, value in var_vals.items():
            if self.var_vals.get(name, value) != value:
                raise JitError(f"variable {name!r} is bound to {self.var_vals[name]} and to "
                               f"{value} in one captured function: a replay has one value per "
                               "variable (use two variables)")
        self.calls.extend(linear.src)
        self.var_vals.update(var_vals)
        if after_call:  # (nothing runs while capturing: what each call's buffers will come
            for call in linear.src:  # from is reported now, for gradients built meanwhile)
                after_call[0](call.src[0], [a for a in call.src[1:] if a.op is not Ops.BIND])


class CapturedJit:
    """The decorated function: see the module docstring for its three phases."""

    def __init__(self, fn: Callable):
        self.fn = fn
        self.calls = 0
        self.plan: list[tuple[Any, list, UOp, list[UOp]]] | None = None
        self.linear: UOp | None = None
        self.in_sigs: list[tuple] = []
        self.var_names: list[str] = []
        self.out_template: Any = None
        self.out_bufs: list[UOp] = []
        self.out_views: list[UOp] = []
        self.in_index: dict[UOp, int] = {}
        self.in_alias: tuple[int, ...] = ()
        self.written_in: set[int] = set()  # the inputs some captured call writes
        self.const_outs: set[UOp] = set()  # made from host data in the function: copied
        self.kept_outs: set[UOp] = set()  # closure tensors' buffers returned: kept
        self.fixed: set[UOp] = set()  # the buffers the plan binds itself (closure tensors)
        self.stored: set[UOp] = set()  # the buffers the plan writes
        self.seen_assigns = 0  # `callify.assign_count` when pending assigns were last run
        self.in_kinds: list = []  # per argument tensor: None, or a sharded one's layout
        self.in_skeleton: list = []  # the captured call's arguments (`_flatten`)
        self.scalar_names: tuple = ([], set())  # the globals it loads, closure cells it writes
        self.in_scalars: list = []  # the numbers among those and its closure variables
        self.in_tensors: dict = {}  # and the tensors whose buffers the plan reads (also in a
        # list, tuple or dict there), by name: [(index or key, the tensor weakly, its nodes,
        # `_read_view`)]
        self.in_meta: dict = {}  # the others bound to a name: key -> shape, dtype, device
        self.in_closure: dict[int, tuple] = {}  # inputs that were a closure tensor at capture
        self.baked_vals: dict[str, int] = {}  # variables the arguments do not bind
        self._lock = threading.RLock()  # a nested call of this function runs as plain code
        self._plain = 0  # 1 while the first, plain call runs (in the thread holding `_lock`)
        self._replay_lock = threading.Lock()
        self.initial: dict[UOp, np.ndarray] = {}  # host data made inside, then written
        try:
            self.signature: inspect.Signature | None = inspect.signature(fn)
        except (TypeError, ValueError):  # no signature to bind arguments by
            self.signature = None
        try:  # a wrapper's own signature (functools.wraps points past it): tried second
            own = inspect.signature(fn, follow_wrapped=False)
        except (TypeError, ValueError):
            own = None
        try:  # (== compares the defaults: a Tensor's says no truth value)
            same = own is None or bool(own == self.signature)
        except Exception:
            same = False
        self.own_signature = None if same else own
        functools.update_wrapper(self, fn)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        """A jitted method (``@jit`` over ``def __call__(self, x)``): one capture per instance,
        as the tensors it reads through `self` are that instance's, kept in the instance's
        `__dict__` in a holder that copies and pickles as empty (a copy captures anew); a
        jitted staticmethod is the function."""
        fn = self.fn
        if obj is None or isinstance(fn, staticmethod):
            return self
        own = getattr(obj, "__dict__", None)
        if not isinstance(own, dict):
            raise JitError(f"a jitted method needs instances with a __dict__; "
                           f"{type(obj).__name__} has none: jit a function of the instance")
        name = f"_tolk_jit_{getattr(fn, '__qualname__', id(self))}"
        holder = own.get(name)
        bound = holder.jit if isinstance(holder, _JitSlot) else None
        if bound is None or bound.fn.__self__ is not obj:
            with self._lock:  # (two threads' first lookups make one capture)
                holder = own.get(name)
                if not isinstance(holder, _JitSlot):
                    holder = own[name] = _JitSlot()
                bound = holder.jit
                if bound is None or bound.fn.__self__ is not obj:
                    bound = holder.jit = CapturedJit(types.MethodType(fn, obj))
        return bound

    def reset(self) -> None:
        """Forget the capture: the next call runs normally, the one after captures again."""
        self.calls, self.plan, self.linear = 0, None, None

    def _arguments(self, args: tuple, kwargs: dict) -> Any:
        """The call's arguments by parameter, in the signature's order: a parameter passed by
        keyword in one call and by position in another is the same input."""
        if self.signature is not None:
            try:
                bound = self.signature.bind(*args, **kwargs)
            except TypeError as e:  # what calling the function would raise
                try:
                    if self.own_signature is None:
                        raise
                    bound = self.own_signature.bind(*args, **kwargs)
                except TypeError:
                    raise TypeError(f"{getattr(self.fn, '__name__', 'jitted function')}(): "
                                    f"{e}") from None
            given = bound.arguments  # a default passed or left out is one call, and a default
            return [given[name] if name in given and given[name] is not p.default  # object
                    else _LEFT_OUT  # is no constant of the call: it is the function's own
                    for name, p in bound.signature.parameters.items()]
        return (args, kwargs)

    def __call__(self, *args, **kwargs):
        flat: list = []
        kinds: list = []
        skeleton: list = []
        _flatten(self._arguments(args, kwargs), flat, kinds, skeleton)
        from tolk.tensor import Tensor

        tensors = [x for x in flat if isinstance(x, Tensor)]
        binds = [x for x in flat if not isinstance(x, Tensor)]
        if self.calls < 2 and not capturing and CAPTURING.value:
            with self._lock:  # the first call and the capture, one thread at a time (another
                if self.calls < 2 and not self._plain:  # thread's call waits: the capture is
                    return self._first_calls(tensors, binds, kinds, skeleton, args, kwargs)
                if self._plain:  # one for all); called from inside the first call: plain code
                    return self._plain_call(args, kwargs)
        if capturing or not CAPTURING.value:  # plain code (inside a capture: part of it)
            return self._plain_call(args, kwargs)
        if skeleton != self.in_skeleton:
            self._refuse_skeleton(skeleton)
        if kinds != self.in_kinds:
            raise JitError(f"jitted function called with inputs sharded as (axis, shape, "
                           f"shards) {kinds}, captured with {self.in_kinds} (None: a tensor "
                           f"or variable): sharded inputs must keep their layout")
        return self._replay(tensors, binds)

    def _plain_call(self, args: tuple, kwargs: dict) -> Any:
        """The function run as plain code, its outputs realized."""
        out = self.fn(*args, **kwargs)
        _realize_outputs(out)
        return out

    def _refuse_skeleton(self, skeleton: list) -> None:
        """A JitError naming the first item where a call's arguments differ from the
        captured call's (their containers, where their tensors are, their constants)."""
        was = self.in_skeleton
        k = next((i for i, (a, b) in enumerate(zip(skeleton, was)) if a != b),
                 min(len(skeleton), len(was)))

        def show(items: list) -> str:
            if k >= len(items):
                return "nothing more"
            x = items[k]
            if isinstance(x, str) or isinstance(x, _Constant):
                return x if isinstance(x, str) else repr(x)
            if x[0] in _PLAIN:
                return repr(_Constant(x[1]))
            return f"a {x[0].__name__} of {'keys ' + repr(list(x[1])) if x[0] is dict else x[1]}"
        raise JitError(f"jitted function called with other arguments than it was captured "
                       f"with: item {k} (in argument order, containers first) is {show(skeleton)}"
                       f", captured with {show(was)}; a replay needs the same containers, "
                       f"tensors in the same places and the same constants (reset() to capture "
                       f"again)")

    def _first_calls(self, tensors, binds, kinds, skeleton, args, kwargs):
        """Call 1 (plain) or call 2 (the capture), under the lock."""
        if self.calls == 0:
            for t in tensors:  # what the capture will ask of them, asked from the first call
                _input_buffer(t)
            self.calls = 1
            self._plain += 1
            try:
                return self._plain_call(args, kwargs)
            finally:
                self._plain -= 1
        out = self._capture(tensors, binds, args, kwargs)
        self.in_kinds = kinds
        self.in_skeleton = [x.kept() if isinstance(x, _Constant) else x for x in skeleton]
        return out

    # -- capture ------------------------------------------------------------------------------

    def _capture(self, tensors, binds, args, kwargs):
        from tolk.callify import assign_count, pending_states, take_pending_assigns
        from tolk.tensor import IdentityWeakSet, Tensor, _lazy

        in_bufs = [_input_buffer(t) for t in tensors]
        _realize_closure_lazies(self.fn)
        self.scalar_names = _global_names(self.fn)
        self.in_scalars = _scalar_reads(self.fn, self.scalar_names)
        read_tensors = _tensor_reads(self.fn, self.scalar_names)
        _run_pending()  # what was assigned before the call is not the function's to replay
        first_new = fresh_buffer_slot()  # buffers past it are made during the capture
        self.seen_assigns = assign_count[0]
        lazy_before = IdentityWeakSet()
        for t in _lazy:
            lazy_before.add(t)
        cap = _Capturer(pending_states(), lazy_before)  # other threads' pending assigns: run
        # when the function reads them
        capturing.append(cap)  # this thread's: other threads capture on their own
        try:
            out = self.fn(*args, **kwargs)
            outs: list = []
            _flatten(out, outs)
            out_tensors = [o for o in outs if isinstance(o, Tensor)]
            todo = out_tensors + take_pending_assigns()  # also the assigns no output reads
            if todo:
                todo[0].realize(*todo[1:])
        except BaseException:
            capturing.remove(cap)
            if cap.calls:  # tensors realized before the error hold their values, as when run
                run_linear(UOp(Ops.LINEAR, src=tuple(cap.calls)), cap.var_vals)
            raise
        capturing.remove(cap)
        self.in_sigs = [_signature(t) for t in tensors]
        self.var_names = [_var_signature(b) for b in binds]
        given = {b.name for b in binds}
        fixed = _closure_binds(self.fn)  # a variable bound outside the function: baked in
        self.baked_vals = {k: v for k, v in cap.var_vals.items() if k not in given}
        inner = [k for k, v in self.baked_vals.items() if fixed.get(k) != v]
        if inner:  # run what the call realized, as a plain call would have, then refuse
            run_linear(UOp(Ops.LINEAR, src=tuple(cap.calls)), cap.var_vals)
            raise JitError(f"variable {inner[0]!r} is bound inside the jitted function (to "
                           f"{self.baked_vals[inner[0]]}), not passed in as an argument: a "
                           "replay would not know its next value; pass the bound variable")
        made = {id(t) for t in _lazy_made(out, first_new)}
        try:  # (the template holds no tensor)
            self.out_template = _rebuild(out, None, lambda x, f: _skeleton_leaf(x, f, made))
        except JitError:  # (run what the call realized, as a plain call would have)
            run_linear(UOp(Ops.LINEAR, src=tuple(cap.calls)), cap.var_vals)
            raise
        self.in_alias = _aliases(in_bufs)
        self.out_views = [o.uop for o in out_tensors]
        self.out_bufs = list({_base(o.uop): None for o in out_tensors})  # distinct buffers
        linear = UOp(Ops.LINEAR, src=tuple(cap.calls))
        held = [*in_bufs, *self.out_bufs]
        self.linear = memory_plan_rewrite(linear, held)
        self.initial = self._initial_contents(first_new)
        run_linear(self.linear, {**cap.var_vals, **{b.name: _var_value(b) for b in binds}})
        self._refuse_random_draws(first_new)
        self._compile(in_bufs, first_new)
        # the globals and closure tensors whose buffers the plan binds: a replay must find the
        # same tensors there (one only looked at, or not used at all, may change)
        bound = self.fixed | self.kept_outs | set(in_bufs)  # (an input a closure tensor too)
        self.in_tensors = {}
        for k, t in read_tensors:  # by name: (index or key, the tensor weakly, its nodes, what
            if any(b in bound for b in _buffers_of(t)):  # the plan reads of it)
                self.in_tensors.setdefault(k[0], []).append(
                    (k[1] if len(k) > 1 else _WHOLE, weakref.ref(t), _views(t), _read_view(t)))
        self.in_meta = {k: _meta(t) for k, t in read_tensors if len(k) == 1}
        self.in_closure = {}  # input i -> (its buffer, the closure tensor's name)
        for i, b in enumerate(in_bufs):
            for k, t in read_tensors:  # (a global it writes may hold a former input: no read)
                if k[0] not in self.scalar_names[2] and b in _buffers_of(t):
                    self.in_closure.setdefault(i, (b, _key_name(k)))
        self.calls = 2
        return out

    def _refuse_random_draws(self, first_new: int) -> None:
        """A JitError (after the call ran) where the plan reads numbers rand, randn or uniform
        drew inside the function: drawn in Python, a replay would reuse them."""
        from tolk.tensor import random_buffers

        read = [a for c in self.linear.src for a in c.src[1:]]
        for a in read + self.out_bufs:  # read by a kernel, or returned
            if a.op is Ops.BUFFER and a.arg[0] > first_new and a in random_buffers:
                raise JitError("a jitted function draws random numbers (rand, randn, "
                               "uniform): they are drawn when Python runs it, so every replay "
                               "would reuse the captured ones; draw them outside and pass "
                               "them in")

    def _initial_contents(self, first_new: int) -> dict[UOp, np.ndarray]:
        """A copy of what each buffer made from host data inside the function (so holding
        data before the plan runs) holds, where the plan writes it: every replay starts it
        from there again (``t = Tensor(data); t[0] = x.sum()``)."""
        from tolk.callify import call_writes

        written = {b for c in self.linear.src for b in call_writes(c)}
        return {b: buffer_storage(b).copy() for b in written
                if b.op is Ops.BUFFER and b.arg[0] > first_new and has_storage(b)}

    def _compile(self, in_bufs: list[UOp], first_new: int) -> None:
        """Per call: its kernel and, per argument, a fixed view or an input/output index.

        Outputs: an input's buffer is that input's; a buffer that existed before the capture
        (a closure tensor the function returns, maybe after assigning into it) stays that
        buffer, written in place; one made during it is fresh per call, a copy of the
        captured one where no call writes it (host data made inside the function)."""
        from tolk.callify import call_writes

        self.in_index = {b: i for i, b in enumerate(in_bufs)}
        self.stored = stored = {b for c in self.linear.src for b in call_writes(c)}
        self.written_in = {i for i, b in enumerate(in_bufs) if b in stored}
        made = {b for b in self.out_bufs if b not in self.in_index and b.arg[0] > first_new}
        self.kept_outs = {b for b in self.out_bufs if b not in self.in_index and b not in made}
        self.const_outs = {b for b in made if b not in stored}
        where = {b: ("in", i) for i, b in enumerate(in_bufs)}
        for j, b in enumerate(self.out_bufs):
            if b not in self.kept_outs:
                where.setdefault(b, ("out", j))
        self.fixed = {a for c in self.linear.src for a in c.src[1:]
                      if a.op is Ops.BUFFER and a not in where}
        # closure tensors' buffers the plan writes (the inputs it writes: `written_in`)
        self.written = [b for b in stored if b in self.fixed or b in self.kept_outs]
        plan = []
        for call in self.linear.src:
            specs = []
            for a in call.src[1:]:
                if a.op is Ops.BIND:
                    continue
                specs.append(where.get(a) or ("fixed", typed_view(a)))
            ast = call.src[0]
            dev = call.src[1].src[0].device if call.src[1].op is Ops.SLICE else call.src[1].device
            plan.append((None if ast.op is Ops.COPY else get_kernel(ast, dev), specs, ast,
                         [a for a in call.src[1:] if a.op is not Ops.BIND]))
        self.plan = plan

    # -- replay -------------------------------------------------------------------------------

    def _replay(self, tensors, binds):
        from tolk.callify import realize_readers
        from tolk.tensor import Tensor, _lazy

        sigs = [_signature(t) for t in tensors]
        if sigs != self.in_sigs:
            raise JitError(f"jitted function called with inputs {sigs}, "
                           f"captured with {self.in_sigs}")
        vsigs = [_var_signature(b) for b in binds]
        if vsigs != self.var_names:
            raise JitError(f"jitted function called with variables (name, min, max, offset) "
                           f"{vsigs}, captured with {self.var_names}")
        scalars = _scalar_reads(self.fn, self.scalar_names)
        if not _same_scalars(scalars, self.in_scalars):
            was = dict(self.in_scalars)
            name, now = next((n, v) for n, v in scalars + [(n, None) for n in was]
                             if n not in was or v is None
                             or (v is not was[n] and _Constant(v) != _Constant(was[n])))
            raise JitError(f"the jitted function reads {name!r}, now {_shown(now)}, captured as "
                           f"{_shown(was.get(name))}: the capture baked it in; pass it as an "
                           f"argument (a 0-d Tensor varies without a new capture), or reset()")
        in_bufs = [_input_buffer(t) for t in tensors]
        for i, (b, name) in self.in_closure.items():
            if in_bufs[i] is not b:
                raise JitError(f"jitted function captured with input {i} the tensor it also "
                               f"reads as {name!r}: the plan cannot tell the two apart, so a "
                               "replay with another input is refused; capture it with a tensor "
                               "of its own (reset())")
        self._check_aliases(_aliases(in_bufs))
        for i, b in enumerate(in_bufs):
            if b in self.fixed and (i in self.written_in or b in self.stored):
                raise JitError(f"jitted function called with input {i} the tensor it uses as a "
                               f"closure tensor, which it writes: it was captured with another")
        _run_pending()  # the plan reads the buffers of the tensors it did not get as inputs
        self._run_pending_on_closures()
        self._check_closure_tensors()
        if (self.written_in or self.written) and _lazy:  # lazy readers of what the plan
            realize_readers([in_bufs[i] for i in self.written_in] + self.written)  # overwrites
            # keep their values
        ins = [typed_view(b) for b in in_bufs]
        new_bufs = []
        for b in self.out_bufs:
            if b in self.in_index:  # an output that is an input (e.g. updated in place)
                new_bufs.append(in_bufs[self.in_index[b]])
                continue
            if b in self.kept_outs:  # a closure tensor's buffer: the same one
                new_bufs.append(b)
                continue
            if b in self.const_outs:  # made from host data in the function: a fresh copy
                new_bufs.append(copy_buffer(b))
                continue
            start = self.initial.get(b)  # host data made inside, then written: from that data
            new_bufs.append(copy_buffer(b, np.zeros(b.nbytes, np.uint8) if start is None
                                        else start))
        outs = [typed_view(b) for b in new_bufs]
        spaces = {"in": ins, "out": outs}
        var_vals = {**self.baked_vals, **{b.name: _var_value(b) for b in binds}}
        # one replay's kernels at a time: replays share the plan's arena and its closure
        # tensors' buffers (two threads interleaving them read each other's intermediates)
        with self._replay_lock, np.errstate(all="ignore"):
            for b, data in self.initial.items():  # host data made inside, written by the plan
                if b in self.fixed:
                    np.copyto(buffer_storage(b), data)
            nodes = {"in": in_bufs, "out": new_bufs}
            for kernel, specs, ast, captured in self.plan:
                bufs = [s[1] if s[0] == "fixed" else spaces[s[0]][s[1]] for s in specs]
                if kernel is None:
                    np.copyto(bufs[0], bufs[1].view(bufs[0].dtype))
                else:
                    kernel.run(bufs, var_vals)
                if after_call:  # (the buffers this call's arguments are in this replay)
                    after_call[0](ast, [a if s[0] == "fixed" else nodes[s[0]][s[1]]
                                        for a, s in zip(captured, specs)])
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
        variables = {b.name: b for b in binds}
        return _rebuild(self.out_template, iter(fresh),
                        lambda x, f: _rebuilt_leaf(x, f, variables))

    def _check_closure_tensors(self) -> None:
        """A JitError where a global or closure tensor the plan reads is now another view (an
        equal view of the same buffer is the same node), or one the function only looked at
        changed its shape, dtype or device: the capture baked those in."""
        if not self.in_tensors and not self.in_meta:
            return
        from tolk.multi import MultiTensor
        from tolk.tensor import Tensor

        values = dict(_named_values(self.fn, self.scalar_names, written=True))
        bad = []
        for name, entries in self.in_tensors.items():
            v = values.get(name)
            for sub, ref, views, read in entries:
                t = v if sub is _WHOLE else _item(v, sub)
                if t is ref() and t is not None and (
                        t.uop is views[0] if len(views) == 1 and type(t) is Tensor
                        else _views(t) == views):
                    continue  # the same tensor, as it was: the common case, and quick
                if not isinstance(t, (Tensor, MultiTensor)) or _read_view(t) != read:
                    bad.append((name,) if sub is _WHOLE else (name, sub))  # (the same view
                    # of the same buffer passes: a new one, or an assign pending meanwhile)
        for k, meta in self.in_meta.items():
            t = values.get(k[0])
            if isinstance(t, (Tensor, MultiTensor)) and _meta(t) != meta:
                bad.append(k)
        if bad:
            raise JitError(f"the jitted function reads the tensor {_key_name(bad[0])!r}, now "
                           "another tensor (or none) than at capture: the capture reads the "
                           "captured one's buffer and shape; pass it as an argument (or assign "
                           "into it), or reset()")

    def _run_pending_on_closures(self) -> None:
        """Run the assigns pending on the buffers the plan binds itself (another thread's:
        this thread's ran already); looked for only when an assign was made since."""
        from tolk.callify import assign_count, pending_on

        seen = assign_count[0]  # (read first: an assign made meanwhile is looked for next)
        if seen == self.seen_assigns:
            return
        todo = pending_on(self.fixed | self.kept_outs)
        if todo:
            todo[0].realize(*todo[1:])
        self.seen_assigns = seen

    def _check_aliases(self, now: tuple[int, ...]) -> None:
        """Inputs that were one tensor at capture must be one now (the plan has one buffer for
        them); inputs that are one now but were not may share only if the plan writes neither
        (it orders a write and a read of different buffers freely)."""
        if now == self.in_alias:
            return
        for i, (was, is_) in enumerate(zip(self.in_alias, now)):
            if was != i and now[was] != is_:
                raise JitError(f"jitted function captured with inputs {was} and {i} the same "
                               f"tensor, called with different ones: reset() it to capture "
                               f"again")
            if is_ != i and self.in_alias[is_] != was and \
                    (i in self.written_in or is_ in self.written_in):
                raise JitError(f"jitted function called with inputs {is_} and {i} the same "
                               f"tensor, which it writes: it was captured with different ones")


_NUMBERS = (bool, int, float, np.number)


def _global_names(fn: Callable) -> tuple[list[str], set[str], list[str]]:
    """The names `fn`'s code (and code nested in it, and the functions it wraps) loads as
    globals, found in its instructions (attribute names are no globals), but those it writes
    itself (a call counter); the closure variables it writes; and the globals it loads and
    writes (``global w; w -= lr * g``: a tensor there is checked as one it only reads)."""
    names: set[str] = set()
    written: set[str] = set()
    cells: set[str] = set()
    seen: set[int] = set()
    f: Any = fn
    while f is not None and id(f) not in seen:
        seen.add(id(f))
        code = getattr(f, "__code__", None)
        codes = [code] if code is not None else []
        while codes:
            c = codes.pop()
            for i in dis.get_instructions(c):
                if i.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
                    names.add(i.argval)
                elif i.opname in ("STORE_GLOBAL", "DELETE_GLOBAL", "STORE_NAME"):
                    written.add(i.argval)
                elif i.opname in ("STORE_DEREF", "DELETE_DEREF"):
                    cells.add(i.argval)
            codes += [k for k in c.co_consts if isinstance(k, type(c))]
        f = getattr(f, "__wrapped__", None)
    return sorted(names - written), cells, sorted(names & written)


def _named_values(fn: Callable, names: tuple[list[str], set[str], list[str]],
                  written: bool = False) -> list[tuple[str, Any]]:
    """The globals `fn` (and the functions it wraps) loads and the closure variables it does
    not write (`_global_names`), as (name, value) pairs; with `written`, also those it
    writes."""
    out: list[tuple[str, Any]] = []
    f: Any = fn
    seen: set[int] = set()
    loads, cells_written, loads_written = names
    if written:
        loads, cells_written = [*loads, *loads_written], set()
    while f is not None and id(f) not in seen:
        seen.add(id(f))
        scope = getattr(f, "__globals__", {})
        out += [(n, scope[n]) for n in loads if n in scope]
        code, cells = getattr(f, "__code__", None), getattr(f, "__closure__", None) or ()
        if code is not None:  # (a wrapped function's closure variable named as its own)
            where = "" if f is fn else f" of {getattr(f, '__qualname__', '?')}"
            out += [(n + where, c.cell_contents) for n, c in zip(code.co_freevars, cells)
                    if n not in cells_written and _cell_set(c)]
        f = getattr(f, "__wrapped__", None)
    return list(dict(out).items())  # (a global two of them load: once)


def _scalar_reads(fn: Callable, names: tuple[list[str], set[str], list[str]]
                  ) -> list[tuple[str, Any]]:
    """The numbers and bound variables `fn` reads as globals or closure variables
    (`_global_names`: not those it writes), as (name, value) pairs (a variable's value its
    name and number): what a capture bakes in."""
    from tolk.variable import BoundVariable

    return [(n, v if isinstance(v, _NUMBERS) else (v.name, _var_value(v)))
            for n, v in _named_values(fn, names) if isinstance(v, (*_NUMBERS, BoundVariable))]


def _tensor_reads(fn: Callable, names: tuple[list[str], set[str], list[str]]
                  ) -> list[tuple[str, Any]]:
    """The tensors (sharded ones too) `fn` reads as globals or closure variables, also those
    in a list, tuple or dict held there and those it writes (``global w; w -= g`` binds w to
    itself again; ``w = w - g`` to another tensor, which a replay refuses), as (key, tensor)
    pairs: the key (name,) or (name, index or dict key)."""
    from tolk.multi import MultiTensor
    from tolk.tensor import Tensor

    kinds = (Tensor, MultiTensor)
    out: list[tuple[tuple, Any]] = []
    for name, v in _named_values(fn, names, written=True):
        if name in names[2] and not isinstance(v, kinds):
            continue
        if isinstance(v, kinds):
            out.append(((name,), v))
        elif isinstance(v, (list, tuple)):
            out.extend(((name, i), x) for i, x in enumerate(v) if isinstance(x, kinds))
        elif isinstance(v, dict):
            out.extend(((name, k), x) for k, x in list(v.items()) if isinstance(x, kinds))
    return out


_WHOLE = object()  # `in_tensors`: the tensor bound to the name itself


def _item(v: Any, sub: Any) -> Any:
    """``v[sub]`` for a list, tuple or dict `v`; None where it has no such item."""
    if isinstance(v, (list, tuple)):
        return v[sub] if type(sub) is int and sub < len(v) else None
    return v.get(sub) if isinstance(v, dict) else None


def _key_name(key: tuple) -> str:
    """`_tensor_reads`' key as the function spells it: ``w``, ``params[0]``, ``st['w']``."""
    return key[0] if len(key) == 1 else f"{key[0]}[{key[1]!r}]"


def _same_scalars(now: list[tuple[str, Any]], was: list[tuple[str, Any]]) -> bool:
    if len(now) != len(was):
        return False
    for (n, a), (m, b) in zip(now, was):
        if n != m or (a is not b and _Constant(a) != _Constant(b)):
            return False
    return True


def _shown(v: Any) -> str:
    return "no number" if v is None else repr(v)


def _closure_binds(fn: Callable) -> dict[str, int]:
    """The values of the bound variables `fn` reads as globals or closure variables."""
    from tolk.variable import BoundVariable

    return {x.name: _var_value(x) for x in _closure_values(fn) if isinstance(x, BoundVariable)}


def _closure_values(fn: Callable) -> list:
    """The globals `fn` names (also in code nested in it) and its closure variables."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return []
    names, codes = set(), [code]
    while codes:  # the function's code and the code nested in it (comprehensions, lambdas)
        c = codes.pop()
        names.update(c.co_names)
        codes += [k for k in c.co_consts if isinstance(k, type(code))]
    scope = getattr(fn, "__globals__", {})
    found = [scope[n] for n in sorted(names) if n in scope]
    return found + [c.cell_contents for c in (fn.__closure__ or ()) if _cell_set(c)]


def _realize_closure_lazies(fn: Callable) -> None:
    """Realize the lazy tensors `fn` reads as globals or closure variables, so the capture
    reads their buffers: inlined, their graphs would read what their sources hold at each
    replay, where the tensor keeps the value it had when an assign overwrote a source (one
    reached another way, an attribute of an object say, is inlined)."""
    from tolk.multi import MultiTensor
    from tolk.tensor import Tensor, _lazy

    found: dict[int, Tensor] = {}
    values = _closure_values(fn) + [v for _, v in _named_values(fn, _global_names(fn),
                                                                written=True)]
    for v in values:  # (the wrapped functions' too, and one level into a list, tuple or dict)
        inner = list(v) if isinstance(v, (list, tuple)) else list(v.values()) \
            if isinstance(v, dict) else []
        for x in [v, *inner]:
            for t in (x.shards if isinstance(x, MultiTensor) else (x,)):
                if isinstance(t, Tensor) and t in _lazy:
                    found[id(t)] = t
    ts = list(found.values())
    if ts:
        ts[0].realize(*ts[1:])


def _cell_set(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:  # a closure variable not assigned yet
        return False
    return True


def _views(t) -> tuple[UOp, ...]:
    """A tensor's nodes (a sharded one's shards'): equal views of one buffer are one node."""
    from tolk.multi import MultiTensor

    return tuple(s.uop for s in (t.shards if isinstance(t, MultiTensor) else (t,)))


def _read_view(t) -> tuple:
    """What the plan reads of a tensor (a sharded one's shards): its buffer and the view ops
    over it, whatever state the buffer is in (a pending assign, another thread's say, puts an
    AFTER between them)."""
    from tolk.multi import MultiTensor

    out = []
    for s in t.shards if isinstance(t, MultiTensor) else (t,):
        u, ops = s.uop, []
        while u.src and (u.op is Ops.AFTER or u.op in _VIEW_OPS):
            if u.op is not Ops.AFTER:
                ops.append((u.op, u.arg))
            u = u.src[0]
        out.append((u, tuple(ops)))
    return tuple(out)


_VIEW_OPS = (Ops.RESHAPE, Ops.PERMUTE, Ops.EXPAND, Ops.PAD, Ops.SHRINK, Ops.FLIP)


def _meta(t) -> tuple:
    return (t.shape, t.dtype, getattr(t, "devices", None) or t.device)


def _buffers_of(t) -> list[UOp]:
    """The BUFFERs a tensor (a sharded one's shards) views, where it is a view of one."""
    from tolk.multi import MultiTensor

    bases = [_base(s.uop) for s in (t.shards if isinstance(t, MultiTensor) else (t,))]
    return [b for b in bases if b.op is Ops.BUFFER]


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


_NESTED = object()  # `_rebuilt_leaf`'s answer for a list, tuple or dict


class _TensorSlot:
    """In an output template, where a tensor goes (a sharded one: its axis and shard count)."""

    __slots__ = ("axis", "shards")

    def __init__(self, axis: int | None = None, shards: int = 0):
        self.axis, self.shards = axis, shards


_ONE_TENSOR = _TensorSlot()


class _VariableSlot:
    """In an output template, where a bound variable goes: the replay's of that name (one
    passed in), else the captured one (bound outside the function: baked in)."""

    __slots__ = ("name", "captured")

    def __init__(self, variable) -> None:
        self.name, self.captured = variable.name, variable


def _skeleton_leaf(x, fresh, made: set[int] = frozenset()):
    """`_rebuild`'s leaf for a template: a slot where a tensor or a bound variable is (no
    tensor kept alive); a JitError for tensors the capture made (`made`, by id) in another
    kind of object (a dataclass, a set, a function's closure): a replay would return the
    capture's."""
    from tolk.multi import MultiTensor
    from tolk.tensor import Tensor
    from tolk.variable import BoundVariable

    if isinstance(x, Tensor):
        return _ONE_TENSOR
    if isinstance(x, MultiTensor):
        return _TensorSlot(x.axis, len(x.shards))
    if isinstance(x, BoundVariable):
        return _VariableSlot(x)
    if isinstance(x, (list, tuple, dict)):
        return _NESTED
    if made and _holds_tensor(x, made):
        raise JitError(f"a jitted function returns tensors inside an object of type "
                       f"{type(x).__name__}: a replay rebuilds lists, tuples and dicts only "
                       "(it would return the capture's tensors); return them in one of those")
    return x


def _holds_tensor(x, wanted: set[int]) -> bool:
    """Whether `x` holds one of the tensors `wanted` (by id) in its attributes, set members
    or closure cells, also inside lists, tuples and dicts there: an object from before the
    call holding its own tensors is returned as it is."""
    return any(o is not x and id(o) in wanted for o in _reachable(x))


def _reachable(x, budget: int = 10_000):
    """`x` and the objects in its attributes (slots too), set members and closure cells, also
    inside lists, tuples and dicts there, each once (the first `budget`; a tensor's insides
    are not entered; numbers, strings and arrays are left out)."""
    from tolk.multi import MultiTensor
    from tolk.tensor import Tensor

    todo, seen = [x], set()
    while todo and len(seen) < budget:
        o = todo.pop()
        if id(o) in seen or isinstance(o, (str, bytes, int, float, np.ndarray, np.generic)):
            continue
        seen.add(id(o))
        yield o
        if isinstance(o, (Tensor, MultiTensor)):
            continue
        if isinstance(o, dict):
            todo += list(o.values())
        elif isinstance(o, (list, tuple, set, frozenset)):
            todo += list(o)
        elif isinstance(o, types.FunctionType):
            todo += [c.cell_contents for c in (o.__closure__ or ()) if _cell_set(c)]
        elif not isinstance(o, type):
            todo += list(getattr(o, "__dict__", {}).values())
            for k in getattr(type(o), "__slots__", ()):
                if isinstance(k, str) and hasattr(o, k):
                    todo.append(getattr(o, k))


def _rebuilt_leaf(x, fresh, variables: dict | None = None):
    from tolk.multi import MultiTensor

    if x is _ONE_TENSOR:
        return next(fresh)
    if isinstance(x, _TensorSlot):
        return MultiTensor([next(fresh) for _ in range(x.shards)], x.axis)
    if isinstance(x, _VariableSlot):
        given = (variables or {}).get(x.name)
        if given is None:
            return x.captured
        from tolk.variable import BoundVariable  # (the call's value, the output's offset)
        return BoundVariable(given.var, _var_value(given), x.captured.add)
    return _NESTED if isinstance(x, (list, tuple, dict)) else x


def _rebuild(template, fresh, leaf=_rebuilt_leaf):
    """`template` (`_skeleton_leaf`'s) with its tensor slots filled by `fresh` tensors, in
    `_flatten`'s order, nested containers rebuilt bottom up without recursion."""
    def kids(x) -> list:
        return [x[k] for k in _dict_keys(x)] if isinstance(x, dict) else list(x)

    top = leaf(template, fresh)
    if top is not _NESTED:
        return top
    stack = [(template, kids(template), [])]
    while True:
        node, todo, done = stack[-1]
        if len(done) < len(todo):
            kid = todo[len(done)]
            v = leaf(kid, fresh)
            if v is _NESTED:
                stack.append((kid, kids(kid), []))
            else:
                done.append(v)
            continue
        stack.pop()
        if isinstance(node, dict):
            by_key = dict(zip(_dict_keys(node), done))
            built = {k: by_key[k] for k in node}
            if type(node) is not dict:  # an OrderedDict, a defaultdict...: a copy of its kind
                same = copy.copy(node)
                same.update(built)
                built = same
        elif isinstance(node, tuple) and hasattr(type(node), "_fields"):  # a named tuple
            built = type(node)(*done)
        else:
            built = type(node)(done)
        if not stack:
            return built
        stack[-1][2].append(built)


def jit(fn: Callable) -> CapturedJit:
    """Capture `fn`'s schedules on its second call and replay them on later calls."""
    if not callable(fn):
        raise TypeError(f"jit takes a function, got {type(fn).__name__} {fn!r}"[:200])
    return CapturedJit(fn)


def _lazy_made(out, first_new: int) -> list:
    """The tensors `_reachable` from what the function returned whose buffers the capture
    made (slots from `first_new`, or none yet): a plain object from before holding its own
    weights is no output."""
    from tolk.tensor import Tensor

    return [o for o in _reachable(out) if isinstance(o, Tensor) and (
        not (bufs := _buffers_of(o)) or any(b.arg[0] >= first_new for b in bufs))]
