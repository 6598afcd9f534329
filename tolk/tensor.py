"""The lazy Tensor front end: numpy-like ops that build a UOp graph; `realize()` runs it.

Nothing is computed until `realize()`, `numpy()`, `item()` or `tolist()`. Realizing turns
the outputs' graph into ``CALL(SINK body, *buffers)`` whose body names inputs only through
PARAMs (so the same computation on other data hits the schedule cache), schedules it with
`tolk.schedule.create_linear_with_vars`, runs the planned LINEAR and points the tensors at
their new buffers.

Semantics follow numpy where tinygrad and PyTorch disagree: broadcasting, promotion
(`tolk.dtype.least_upper_dtype`), floor division and modulo with the sign of the divisor,
sums of integers accumulate in 64 bits. Python scalars are weakly typed (they take the
tensor's dtype); Python floats and float results of integer ops use float32
(``dtypes.default_float``), as tensor libraries do.

Assignment: ``x.assign(v)`` updates x's buffer in place. Views of x (tensors made from x
by movement ops and slicing only) see the new data, also when x was a computed tensor that
was not realized yet when the views were made; lazy computed tensors that read x before the
assign keep the old value (they are realized before the write when the assign runs).
"""

from __future__ import annotations

import bisect
import collections
import functools
import inspect
import itertools
import math
import numbers
import operator
import threading
import warnings
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tolk.dtype import DType, _round_int_to_bf16, dtypes, least_upper_dtype, to_dtype
from tolk.errors import DeviceError, ShapeError
from tolk.helpers import int_arg, prod, sequence_depth
from tolk.runtime.device import canonical_device
from tolk.uop.form import Form, form_of
from tolk.uop.ops import GroupOp, Ops, UOp, node_cache
from tolk.uop.shape import Sym, concrete, device_of, is_symbolic, shape_of, syms_in
from tolk.variable import BoundVariable

Scalar = int | float | bool
_VIEW_OPS = GroupOp.Movement


def _base_and_chain(u: UOp) -> UOp:
    """The node under a chain of movement ops (a tensor's movement node keeps it in its
    cache, `Tensor._set`: a chain built op by op is not walked again for each op)."""
    while u.op in _VIEW_OPS:
        base = u._cache.get("base")
        if base is not None:
            return base
        u = u.src[0]
    return u


def _is_base_state(u: UOp) -> bool:
    return u.op in (Ops.BUFFER, Ops.AFTER)


class IdentityWeakSet:
    """A set of live objects compared by identity (Tensor's ``==`` builds a tensor).

    The callback that drops a dead member's entry reaches the set only weakly: a set that is
    dropped dies at once with its references, never as cyclic garbage. (Garbage that holds
    weak references with callbacks to a live object can crash CPython when that object dies:
    the collector may run inside its weakref cleanup and free references the cleanup is
    walking. An assign drops one set per assign.)"""

    __slots__ = ("_refs", "_self", "_ref", "__weakref__")

    def __init__(self, ref: type = weakref.ref) -> None:
        self._refs: dict[int, weakref.ref] = {}
        self._self = weakref.ref(self)
        self._ref = ref  # the reference type its entries are

    def add(self, obj: object) -> None:
        key = id(obj)
        if key not in self._refs:
            self._refs[key] = self._ref(obj, functools.partial(_forget, self._self, key))

    def discard(self, obj: object) -> None:
        self._refs.pop(id(obj), None)

    def __contains__(self, obj: object) -> bool:
        r = self._refs.get(id(obj))
        return r is not None and r() is obj

    def __iter__(self):
        return iter([o for r in list(self._refs.values()) if (o := r()) is not None])

    def __len__(self) -> int:
        return len(self._refs)

    def newest(self, k: int) -> list:
        """The references of the last `k` members added, the last first (none when a member
        dies meanwhile: its callback changes what is being read)."""
        try:
            return list(itertools.islice(reversed(self._refs.values()), k))
        except RuntimeError:
            return []


class MadeBy(weakref.ref):
    """A weak reference that knows which thread made it (`thread`, an ident) and, in a
    `MadeOrder`, when it was added (`seq`)."""

    __slots__ = ("thread", "seq")

    def __init__(self, obj, callback=None):
        super().__init__(obj, callback)
        self.thread = threading.get_ident()
        self.seq = 0


class MadeOrder(IdentityWeakSet):
    """An `IdentityWeakSet` of `MadeBy` references that also finds the members added after a
    given one, oldest first (`after`), at a cost in the entries it passes, not in the set's size.

    Members are also kept in a list in the order they were added, numbered (`MadeBy.seq`); a
    member dropped or dead stays in it until the list is twice the set and is compacted. Adds
    and `after` are called under one lock (`registry_lock`)."""

    __slots__ = ("_order", "_count")

    def __init__(self) -> None:
        super().__init__(MadeBy)
        self._order: list[MadeBy] = []
        self._count = 0

    def add(self, obj: object) -> None:
        key = id(obj)
        if key in self._refs:
            return
        r = self._refs[key] = self._ref(obj, functools.partial(_forget, self._self, key))
        self._count += 1
        r.seq = self._count
        if len(self._order) > 2 * len(self._refs) + 64:
            self._order = [x for x in self._order if self._member(x)]
        self._order.append(r)

    def _member(self, r: MadeBy) -> bool:
        o = r()
        return o is not None and self._refs.get(id(o)) is r

    def after(self, objs: list, k: int, keep: Callable[[MadeBy], bool]) -> list[MadeBy] | None:
        """The references of up to `k` members added after the oldest of `objs` that is a
        member, oldest first, that `keep` keeps, among the next ``4 * k + 256`` entries (members
        or not: a scan as long as the budget it serves); None when none of `objs` is a member."""
        seqs = [r.seq for o in objs if (r := self._refs.get(id(o))) is not None and r() is o]
        if not seqs:
            return None
        order = self._order
        out = []
        start = bisect.bisect_right(order, min(seqs), key=_seq_of)
        for i in range(start, min(len(order), start + 4 * k + 256)):
            r = order[i]
            if self._member(r) and keep(r):
                out.append(r)
                if len(out) >= k:
                    break
        return out


def _seq_of(r: MadeBy) -> int:
    return r.seq


def _forget(owner: weakref.ref, key: int, _dead: weakref.ref) -> None:
    """An `IdentityWeakSet` member died: drop its entry, if the set is still alive."""
    s = owner()
    if s is not None:
        s._refs.pop(key, None)


# Live tensors that are views of a base state (for assign), and lazy computed tensors (for
# realizing readers before an assign overwrites what they read).
_views: weakref.WeakKeyDictionary[UOp, ViewSet] = weakref.WeakKeyDictionary()
_rng_lock = threading.Lock()
# the buffers rand, randn and uniform drew into (the jit refuses to bake them into a capture)
random_buffers: weakref.WeakSet[UOp] = weakref.WeakSet()


def _random(t: Tensor) -> Tensor:
    random_buffers.add(_base_and_chain(t.uop))
    return t
_lazy = MadeOrder()  # (entries know the thread that made each tensor lazy, and when)
_grad_wanted = IdentityWeakSet()  # tensors marked requires_grad (`Tensor.backward`)


_marked_cache: list = [None, set()]  # (the marks' count and version it was made at, the set)
_marks_version = [0]


def marked_buffers() -> set[UOp]:
    """The buffers of the tensors marked requires_grad (empty: none marked; a marked tensor
    keeps its buffer, so the set changes only with the marks)."""
    if not _grad_wanted._refs:
        return set()
    key = (len(_grad_wanted._refs), _marks_version[0])
    if _marked_cache[0] == key:
        return _marked_cache[1]
    with registry_lock:
        live = [t for r in list(_grad_wanted._refs.values()) if (t := r()) is not None]
    out = set()
    for t in live:
        base = _base_and_chain(t.uop)
        while base.op is Ops.AFTER:
            base = base.src[0]
        if base.op is Ops.BUFFER:
            out.add(base)
    _marked_cache[:] = [key, out]
    return out
registry_lock = threading.RLock()  # `_views`, `_lazy` and view families change under it
_after_states: weakref.WeakSet[UOp] = weakref.WeakSet()  # pending states views are under


class _Family(weakref.ref):
    """A weak reference to a lazy tensor that has views, with those views (`kids`). A view
    keeps its family when the tensor dies (numpy's views keep their base alive; here only
    the family outlives it), so views of one dropped tensor still share what they view: a
    realize of one realizes it for all (`tolk.callify._root`). A family made for a view whose
    own family's tensor is dead hangs below that one (`up`; the lower ones in `subs`, held
    weakly: no cycle of families, whose kid sets hold weak references with callbacks), so all
    of them stay one kin."""

    __slots__ = ("kids", "up", "subs", "__weakref__")


def _family_of(t: Tensor) -> _Family:
    """The family a view of lazy `t` joins: that of the tensor `t` views while it lives, else
    `t`'s own (made on first use): a view of a view of a dropped tensor (``zeros(3)[0]``, a
    view of an internal tensor) views `t`."""
    fam = t._parent
    if fam is None or fam() is None:
        up = fam
        fam = t._kids
        if fam is None:
            fam = _Family(t)
            fam.kids, fam.up, fam.subs = IdentityWeakSet(), up, []
            t._kids = fam  # (whole before another thread can see it)
            if up is not None:
                up.subs = [r for r in up.subs if r() is not None] + [weakref.ref(fam)]
    return fam


def _join(view: Tensor, fam: _Family) -> None:
    view._parent = fam
    fam.kids.add(view)


def _view_states() -> list[UOp]:
    """The pending states (AFTERs) that live views are registered under, as a snapshot: found
    in `_after_states`, not by a walk of every view's state (a realize with an assign asks, and
    a model holds thousands of views of buffers); the states there no view holds any more are
    dropped."""
    with registry_lock:
        out = []
        for r in list(_after_states.data):
            s = r()
            if s is not None and _views.get(s):
                out.append(s)
            elif s is not None:
                _after_states.discard(s)
        return out


def register_view(t: Tensor, state: UOp) -> None:
    """Register `t` as a view of buffer state `state` (under `registry_lock`)."""
    views = _views.get(state)
    if views is None:
        views = _views[state] = ViewSet()
    views.add(t)
    if state.op is Ops.AFTER:
        _after_states.add(state)


class _StateCell:
    """The state a set of views stands over now (`state`), shared by those of its views whose
    graphs were left over an older state (held by them: no cell outlives its views). A set
    merged into another links its cell to that one's (`next`): the newest state is at the end
    of the links."""

    __slots__ = ("state", "next", "__weakref__")

    def __init__(self, state: UOp) -> None:
        self.state = state
        self.next = None

    def newest(self) -> UOp:
        c = self
        while c.next is not None:
            c = c.next
        if self.next is not None and self.next is not c:
            self.next = c  # (a long chain of merges is walked once)
        return c.state


class ViewSet(IdentityWeakSet):
    """The views registered under one buffer state, with the `_StateCell` its stale views
    read (a weak reference, or None before the first move)."""

    __slots__ = ("_cell",)

    def __init__(self) -> None:
        super().__init__()
        self._cell = None

    def cell(self, state: UOp) -> _StateCell:
        """The set's cell (made now if it has none), which reads `state`."""
        c = self._cell() if self._cell is not None else None
        if c is None:
            c = _StateCell(state)
            self._cell = weakref.ref(c)
        c.state = state
        return c


def move_views(state: UOp, new_state: UOp, target: Tensor | None = None) -> None:
    """The views of buffer state `state` now stand over `new_state` (a BUFFER or an AFTER: an
    assign's new state, or what a realize settled the state to), under `registry_lock`.
    `target`'s graph (the assign's own view) is rewritten at once; every other view's graph is
    rewritten when it is next read (`Tensor.__getattr__`), so a loop of assigns, or of assigns
    and realizes, over a buffer with many live views costs a mark per view read since the
    last move, not a rewrite of every view. A stale view holds its movement ops, not the
    state it was last read over: a settled assign's value dies as it did before."""
    views = _views.pop(state, None)
    if views is None:
        views = ViewSet()
    cell = views.cell(new_state)
    for r in list(views._refs.values()):
        t = r()
        if t is None or t is target or t._stale is not None:  # (stale since an earlier
            continue  # move: it reads the cell, which is this set's: a view sits in the one
            # set of the state its graph stands over, and every write of its graph registers
            # it anew, clearing `_stale`)
        chain = _chain_above(t.uop, state)
        if chain is None:  # (a graph written over another state since: not this set's)
            continue
        t._stale = (chain, cell)
        _UOP_SLOT.__delete__(t)
    into = _views.get(new_state)
    if into is None:
        _views[new_state] = views
    else:  # (the state's views join those already there; the stale ones through the cell)
        cell.next = into.cell(new_state)
        cell.state = None  # (read through the link from now on: it holds no old state)
        for r in list(views._refs.values()):
            if (t := r()) is not None:
                into.add(t)
    if new_state.op is Ops.AFTER:
        _after_states.add(new_state)
    if target is not None:
        target.uop = target.uop.substitute({state: new_state})
        target._stale = None
        register_view(target, new_state)


def _chain_above(u: UOp, state: UOp) -> tuple | None:
    """The movement ops from view graph `u` down to its base `state`, top first, each as
    ``(op, dtype, other sources, arg)``: what rebuilds the view over another state without
    holding `state` (a settled assign's value and what it read can then die); None when `u`
    does not stand over `state`."""
    chain = []
    while u is not state and u.op in _VIEW_OPS:
        chain.append((u.op, u.dtype, u.src[1:], u.arg))
        u = u.src[0]
    return tuple(chain) if u is state else None


def _not_sharded(x, what: str) -> None:
    """A TypeError naming `what` when `x` is a sharded tensor (the ops that take one are
    MultiTensor's own)."""
    if type(x) in DEFER_TO:
        raise TypeError(f"{what} of a Tensor and a sharded tensor: gather it with "
                        ".to(device) first")


def _norm_axis(axis: int, ndim: int, rank: int | None = None) -> int:
    """`axis` in ``[0, ndim)``; `rank` (the tensor's, where it is not `ndim`: an insertion
    position, or a 0-d tensor taken as one axis) only names the tensor in the error."""
    try:
        if isinstance(axis, (bool, np.bool_)):  # (an int to Python, but no axis to numpy)
            raise TypeError
        axis = operator.index(axis)  # numpy's integers are axes too
    except TypeError:
        raise TypeError(f"an axis must be an int, got {type(axis).__name__} {axis!r}") from None
    if not -ndim <= axis < max(ndim, 1):
        if rank is None or rank == ndim:
            raise ShapeError(f"axis {axis} is out of range for a tensor of rank {ndim}")
        raise ShapeError(f"axis {axis} is out of range for a tensor of rank {rank} (here "
                         f"{-ndim} to {max(ndim, 1) - 1})")
    return axis % ndim if ndim else 0


def _static_dims(t: Tensor, what: str, axes) -> None:
    """ShapeError when an axis `what` needs the size of is symbolic (a Variable's)."""
    for a in axes:
        if isinstance(t.shape[a], Sym):
            raise ShapeError(f"{what} needs a static size on axis {a}, got the symbolic "
                             f"shape {t.shape}")


def _broadcast_shape(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    if len(shapes) == 2 and shapes[0] == shapes[1]:  # the common case: nothing to broadcast
        return shapes[0]
    nd = max(len(s) for s in shapes)
    padded = [(1,) * (nd - len(s)) + tuple(s) for s in shapes]
    out = []
    for dims in zip(*padded):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            raise ShapeError(f"shapes {' and '.join(str(tuple(s)) for s in shapes)} "
                             "cannot be broadcast together")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


# Types whose reflected operators Tensor's +, -, * and / leave the operation to (Python then
# calls theirs): tolk.multi registers MultiTensor, so ``tensor + sharded`` is sharded.
DEFER_TO: set[type] = set()


def _alien(x: Any) -> bool:
    """Whether `x` is nothing a tensor computes with: no number, array, list or tensor (an
    equality with it, None's say, is Python's own, not elementwise; a number of a kind
    tensors do not take, a Fraction or a complex, is a TypeError as in arithmetic)."""
    return not isinstance(x, (Tensor, BoundVariable, numbers.Number, np.generic, np.ndarray,
                              list, tuple)) and type(x) not in DEFER_TO


def _scalar_dtype(x: Scalar, other: DType) -> DType:
    """The dtype a Python scalar takes next to a tensor of dtype `other` (weak typing)."""
    if isinstance(x, bool):
        return other
    if isinstance(x, int):  # next to bools: int32, or int64 for a wider int (as numpy)
        if other is not dtypes.bool:
            return other
        return dtypes.default_int if -(1 << 31) <= x < (1 << 31) else dtypes.int64
    return other if other.is_float else dtypes.default_float


def _numpy_names(method):
    """`method` also taking numpy's ``keepdims`` and ``ddof`` and PyTorch's ``dim`` for its
    ``keepdim``, ``correction`` and ``axis`` (passing both spellings is a TypeError)."""
    params = list(inspect.signature(method).parameters)
    axis_at = params.index("axis") - 1 if "axis" in params else len(params)  # (after self)
    keep_at = params.index("keepdim") - 1 if "keepdim" in params else len(params) + 1

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        if kwargs:
            for alias, name in (("keepdims", "keepdim"), ("dim", "axis"), ("ddof", "correction")):
                if alias in kwargs:
                    if name in kwargs or (name == "axis" and len(args) > axis_at):
                        raise TypeError(f"{method.__name__}() got both {name} and {alias}")
                    kwargs[name] = kwargs.pop(alias)
        keep = args[keep_at] if len(args) > keep_at else kwargs.get("keepdim", False)
        if keep is not True and keep is not False and (
                not isinstance(keep, (int, np.integer, np.bool_))):  # (an int: numpy's 0 or 1)
            raise TypeError(f"{method.__name__}()'s keepdim must be a bool, got {keep!r}"[:200])
        return method(self, *args, **kwargs)
    return wrapper


def _half_in_float32(method):
    """`method` of a 16-bit float tensor (or sharded tensor) computed in float32, the result
    cast back (sums of many terms round away in 16 bits); other tensors call it as it is."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        if self.dtype.is_float and self.dtype.itemsize == 2:
            return method(self.cast(dtypes.float32), *args, **kwargs).cast(self.dtype)
        return method(self, *args, **kwargs)
    return wrapper


def _rounded_once(fn, *xs):
    """``fn(*xs)``, or where that is a 16-bit float tensor, `fn` of the tensors among `xs`
    cast to float32 (numbers as they are), rounded once to its dtype: a formula of several
    ops rounds each step in 16 bits (lerp of close values cancels to 0)."""
    out = fn(*xs)
    if not (out.dtype.is_float and out.dtype.itemsize == 2):
        return out
    wide = (x.cast(dtypes.float32) if isinstance(x, Tensor) else x for x in xs)
    return fn(*wide).cast(out.dtype)


def _power_of_ten(n: int) -> float:
    """10**n as numpy's round makes it: exact up to 1e8, then 1e9 times 10.0 once per
    further digit, each product rounded (so 1e23 is not ``10.0 ** 23``); inf past the
    range."""
    if n < 9:
        return float(10 ** n)
    r = 1e9
    for _ in range(n - 9):
        r *= 10.0
        if r == math.inf:
            break
    return r


def _root_of_sum(v: Tensor, power: float = 2.0) -> Tensor:
    """``v ** (1 / power)`` of a sum of non-negative powers (power > 0) whose gradient is 0
    where v is 0 (PyTorch's for std and norms; through sqrt it was 0 * inf = nan): the root
    of 1 taken there, times 0. Elsewhere the same values."""
    zero = (v == 0).cast(v.dtype)
    safe = v + zero
    return (safe.sqrt() if power == 2 else safe ** (1.0 / power)) * (1 - zero)


def _grad_option(factory):
    """`factory` also taking PyTorch's ``requires_grad=`` (the new tensor marked)."""
    @functools.wraps(factory)
    def make(*args, requires_grad: bool = False, **kwargs):
        t = factory(*args, **kwargs)
        return t.requires_grad_() if requires_grad else t
    return make


@_half_in_float32
def _exact_gelu(x: Tensor) -> Tensor:
    x = x._float()
    return x * (x * -math.sqrt(0.5)).erfc() * 0.5


class Tensor:
    """A lazy n-dimensional array on one device.

    ``Tensor(data)`` takes numpy arrays, nested lists and scalars (copied), or a Tensor: a new
    tensor with its values, on its device unless `device` says otherwise (as ``np.array(t)``:
    writes into either do not reach the other).
    ``cast`` to the same dtype and ``to`` the same device return the tensor itself (as in
    PyTorch and tinygrad)."""

    # `_parent`: for a view of a lazy (computed) tensor, the `_Family` of the tensor it views
    # (the computed one, not an intermediate view: a weak reference to it); realizing that
    # tensor makes this one a view of its buffer (see callify).
    # `_kids`: for a lazy computed tensor with views, its `_Family` (None before the first).
    # `_stale`: for a view whose graph an assign or a realize left over an older state (its
    # `uop` slot then empty), its movement ops over that state (`_chain_above`) and the
    # `_StateCell` of the state it stands over now; else None (every write of a view's `uop`
    # clears it: `_set`, a read, a register).
    __slots__ = ("uop", "_parent", "_kids", "_stale", "_grad", "__weakref__")
    __array_ufunc__ = None  # numpy defers to Tensor's operators (``ndarray + Tensor``: TypeError)
    _seed = [0]
    _rng_counter = [0]

    def __init__(self, data: Any, device: str | None = None, dtype: DType | str | None = None,
                 requires_grad: bool = False):
        self._kids = self._stale = None
        self._take(data, device, dtype)
        if requires_grad:
            self.requires_grad = True

    def _take(self, data: Any, device: str | None, dtype: DType | str | None) -> None:
        if isinstance(data, UOp):
            self._set(data)
            return
        if device is None:  # a tensor's copy stays on its device
            device = data.device if isinstance(data, Tensor) else "CPU"
        device = canonical_device(device)
        want = _data_dtype(dtype) if dtype is not None else None
        if isinstance(data, Tensor):  # a new tensor, as np.array(t) copies (computed lazily)
            t = data.to(device)
            self._set((t.cast(want) if want else t)._copy().uop)
            return
        arr = _to_numpy(data, want)
        d = want or _infer_dtype(arr)
        self._set(_from_host(arr, d, device))

    def _set(self, u: UOp) -> None:
        cache = node_cache(u)  # a tensor's node remembers its shape
        if "shape" not in cache:  # a new node over sources whose shapes are known: no walk
            _shape_by_form(u, cache)
        elif u._form is None:
            form_of(u)
        self.uop = u
        self._parent = self._stale = None
        base = _base_and_chain(u)
        if base is not u:
            cache["base"] = base
        with registry_lock:  # (one set per state: two threads' views of it in the same one)
            if _is_base_state(base):
                register_view(self, base)
            else:
                _lazy.add(self)

    def __getattr__(self, name: str):
        """Only for a stale view's `uop` (see `move_views`): its graph over the state it
        stands over now, computed once. A property that raised AttributeError itself lands
        here too: it is run again so that its own error, not a missing name, reaches the
        caller."""
        if name != "uop":
            prop = getattr(type(self), name, None)
            if isinstance(prop, property):
                return prop.__get__(self, type(self))
            raise AttributeError(f"'Tensor' object has no attribute {name!r}")
        with registry_lock:
            try:
                return _UOP_SLOT.__get__(self)  # (another thread read it meanwhile)
            except AttributeError:
                pass
            try:
                chain, cell = self._stale
            except (AttributeError, TypeError):  # (a tensor whose __init__ failed)
                raise AttributeError("'Tensor' object has no attribute 'uop'") from None
            u = cell.newest()
            for op, dtype, rest, arg in reversed(chain):
                u = UOp(op, dtype, (u, *rest), arg)
            self.uop = u
            self._stale = None
        return u

    # -- gradients ----------------------------------------------------------------------------

    def gradient(self, *targets: Tensor, gradient: Tensor | None = None) -> list[Tensor]:
        """The gradients of this tensor with respect to `targets` (float tensors marked
        ``requires_grad`` that its graph reads), as lazy tensors of their shapes (reverse
        mode, `tolk.gradient`): of this tensor itself when it has one element, else of
        ``(self * gradient).sum()``. A target the graph does not read, or reads only through
        a value realized or assigned from it, raises a GradientError."""
        _all_tensors("gradient", targets)
        for t in targets:
            if not t.dtype.is_float:
                raise TypeError(f"gradient with respect to a {t.dtype.name} tensor: only float "
                                "tensors have gradients")
            if not t.requires_grad:  # (values realized from it are recorded only once marked)
                raise _gradient.GradientError(
                    f"gradient with respect to a tensor of shape {t.shape} not marked "
                    "requires_grad (as PyTorch's autograd.grad): mark it before computing "
                    "from it")
        return _gradient.gradients(self, targets, self._grad_seed(gradient))

    def backward(self, gradient: Tensor | None = None) -> Tensor:
        """PyTorch's backward: for each live tensor marked ``requires_grad`` that this
        tensor's graph reads, its gradient (as `gradient` computes it) added to its `grad`
        (set when None). The gradients are lazy; nothing runs until they are read. Returns
        this tensor."""
        seed = self._grad_seed(gradient)
        with registry_lock:
            wanted = [t for r in list(_grad_wanted._refs.values()) if (t := r()) is not None]
        grads = _gradient.gradients(self, wanted, seed, strict=False)
        if all(g is None for g in grads):
            raise _gradient.GradientError(
                "backward: this tensor's graph reads no tensor marked requires_grad (none "
                "marked, or each realized or assigned after this tensor was built)")
        with registry_lock:  # (threads adding into one tensor's grad add both)
            for t, g in zip(wanted, grads):
                if g is None:
                    continue
                if t.grad is not None and _realize.capturing:
                    raise _jit.JitError("backward inside a jit capture adds to a grad from "
                                        "before it (a replay would not): reset the grads "
                                        "(zero_grad) inside the captured step")
                t.grad = g if t.grad is None else t.grad + g
        return self

    def _grad_seed(self, gradient: Tensor | None) -> Tensor:
        if not self.dtype.is_float:
            raise TypeError(f"gradient of a {self.dtype.name} tensor: only float values have "
                            "gradients")
        if gradient is None:
            if self.numel() != 1:
                raise ShapeError(f"gradient of a tensor of shape {self.shape} needs the "
                                 "gradient of its output (one value per element); of one "
                                 "element it is 1")
            return self.full_like(1.0)
        _all_tensors("gradient", (gradient,))
        if gradient.shape != self.shape:
            raise ShapeError(f"gradient of shape {gradient.shape} for a tensor of shape "
                             f"{self.shape}: they must be equal")
        return gradient.cast(self.dtype)

    @property
    def requires_grad(self) -> bool:
        """Whether `backward` computes this tensor's gradient into `grad` (PyTorch's flag;
        tolk follows no graph forward from it: backward finds it in the graph)."""
        return id(self) in _grad_wanted._refs

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if value and not self.dtype.is_float:
            raise TypeError(f"requires_grad of a {self.dtype.name} tensor: only float tensors "
                            "have gradients")
        base = _base_and_chain(self.uop)
        if value and (not _is_base_state(base) or base.op is Ops.AFTER):  # (a marked tensor
            self.realize()  # is a leaf with a buffer of its own, its pending assigns run: equal
            # lazy constants share a node, and an assign's record is made when it runs)
        if value:
            _gradient.mark_leaf(self.uop)
        _marks_version[0] += 1
        with registry_lock:
            (_grad_wanted.add if value else _grad_wanted.discard)(self)

    def requires_grad_(self, value: bool = True) -> Tensor:
        self.requires_grad = value
        return self

    @property
    def grad(self) -> Tensor | None:
        """The gradient `backward` accumulated (None before; set it to None to reset)."""
        try:
            return self._grad
        except AttributeError:
            return None

    @grad.setter
    def grad(self, g: Tensor | None) -> None:
        if g is not None and not isinstance(g, Tensor):
            raise TypeError(f"a grad must be None or a Tensor, got {type(g).__name__}")
        if g is not None and g.shape != self.shape:
            raise ShapeError(f"a grad must be None or a Tensor of shape {self.shape}, got "
                             f"{g.shape}")
        if g is not None and g.dtype is not self.dtype:
            raise TypeError(f"a grad of a {self.dtype.name} tensor must be {self.dtype.name}, "
                            f"got {g.dtype.name}")
        self._grad = g

    # -- properties ---------------------------------------------------------------------------

    @property
    def shape(self) -> tuple[int, ...]:
        shape = self.uop._cache.get("shape")  # set when the node was built by a tensor op
        return shape if shape is not None else shape_of(self.uop)

    @property
    def dtype(self) -> DType:
        return self.uop.dtype

    @property
    def device(self) -> str:
        return device_of(self.uop) or "CPU"

    @property
    def ndim(self) -> int:
        shape = self.uop._cache.get("shape")
        return len(shape if shape is not None else shape_of(self.uop))

    def numel(self) -> int:
        """Number of elements (for a symbolic shape: at the variables' bound values, a
        JitError inside a jit capture, as `concrete_shape`)."""
        return prod(self.concrete_shape)

    @property
    def concrete_shape(self) -> tuple[int, ...]:
        """The shape with every symbolic dimension at its bound value (inside a jit capture a
        JitError: that value would be baked into every replay; use `shape`, whose symbolic
        sizes build graphs)."""
        shape = self.shape
        if not is_symbolic(shape):
            return shape
        if _realize.capturing:
            raise _jit.JitError(f"the concrete size of a symbolic shape {shape} read inside a "
                                "captured (jitted) function would bake the variables' values "
                                "of this call into every replay")
        return concrete(shape, self.var_vals())

    def var_vals(self) -> dict[str, int]:
        """Values of the variables bound in this tensor's graph."""
        return {n.src[0].arg[0]: n.src[1].arg for n in self.uop.toposort() if n.op is Ops.BIND}

    def _binds(self, names) -> tuple[UOp, ...]:
        """The BIND nodes of this graph for the given variable names."""
        names = set(names)
        if not names:
            return ()
        found = {n.src[0].arg[0]: n for n in self.uop.toposort() if n.op is Ops.BIND}
        missing = names - set(found)
        if missing:
            raise ShapeError(f"symbolic dimensions {sorted(missing)} have no bound value "
                             "in this graph")
        return tuple(found[n] for n in sorted(names))

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        _static_dims(self, "len()", (0,))
        return self.shape[0]

    def __contains__(self, value) -> bool:
        """``value in t``: whether any element equals `value`, as numpy answers it (realizes)."""
        eq = self == value
        return bool(eq.any()) if isinstance(eq, Tensor) else bool(eq)  # (None, a str: False)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        """``np.asarray(t)``: the values (realizes; `numpy` makes the same new array)."""
        if copy is False:
            raise ValueError("a tensor's values are computed into a new array: copy=False "
                             "cannot be honoured")
        arr = self.numpy()
        return arr if dtype is None else arr.astype(dtype, copy=False)

    def __copy__(self) -> Tensor:
        """``copy.copy(t)``: a new tensor with t's values, as ``ndarray.copy`` (not a second
        name for t's storage: a write into the copy leaves t as it is)."""
        return Tensor(self)

    def __deepcopy__(self, memo: dict) -> Tensor:
        """``copy.deepcopy(t)``: as `__copy__` (a tensor holds no Python objects to copy)."""
        return Tensor(self)

    def __iter__(self):
        """The sub-tensors along the first axis, as numpy iterates an array; a 0-d tensor is
        not iterable (TypeError), as a 0-d array is not."""
        if not self.shape:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(len(self)))

    def __repr__(self) -> str:
        return f"<Tensor shape={self.shape} dtype={self.dtype.name} device={self.device}>"

    def __bool__(self) -> bool:
        if self.numel() != 1:
            raise ValueError(f"the truth value of a tensor of shape {self.shape} is ambiguous")
        return bool(self.item())

    def __float__(self) -> float:
        """A one-element tensor, of any shape, as a Python float (PyTorch's; numpy 2 takes
        0-d arrays only); realizes it. Another size is a ValueError."""
        return float(self.item())

    def __int__(self) -> int:
        """A one-element tensor, of any shape, as a Python int (as `__float__`)."""
        return int(self.item())

    def __index__(self) -> int:
        """A 0-d integer tensor as an index (as numpy's integer scalars and 0-d arrays)."""
        if self.dtype.is_float or self.dtype is dtypes.bool:
            raise TypeError(f"only integer tensors can be indices, got {self.dtype.name}")
        if self.ndim:
            raise TypeError(f"only 0-d integer tensors can be indices, got shape {self.shape}")
        return int(self.item())

    def __format__(self, spec: str) -> str:
        return format(self.item(), spec) if spec else str(self)

    # -- creation -----------------------------------------------------------------------------

    @staticmethod
    @_grad_option
    def full(shape, fill_value: Scalar, dtype: DType | str | None = None,
             device: str | None = None) -> Tensor:
        """A new tensor of `shape` filled with `fill_value`. A size may be a bound Variable
        (``Tensor.full((2, n.bind(5)), 1.0)``): the shape is symbolic, one cached schedule
        serves every value."""
        shape, binds = _bound_shape(shape)
        return Tensor._full(shape, fill_value, dtype, device, binds)

    @staticmethod
    def _full(shape, fill_value: Scalar, dtype, device, binds: tuple[UOp, ...]) -> Tensor:
        """`full`; a symbolic size takes its value from `binds` (BIND nodes riding along)."""
        shape = _shape_arg(shape)
        if fill_value is None or isinstance(fill_value, (str, bytes, BoundVariable)):
            hint = (" (a bound Variable's value is a tensor: Tensor.full(shape, 0) + n)"
                    if isinstance(fill_value, BoundVariable) else "")
            raise TypeError(f"full's fill value must be a bool, int or float, got "
                            f"{fill_value!r}{hint}")
        d = _data_dtype(dtype) if dtype is not None else _scalar_default_dtype(fill_value)
        dev = UOp(Ops.DEVICE, dtypes.void, (), canonical_device("CPU" if device is None
                                                                else device))
        t = Tensor(UOp(Ops.CONST, d, (dev,), _py_value(fill_value, d)))
        if not shape:
            return t
        ones = t.reshape((1,) * len(shape))
        syms = sorted({x.name for x in shape if isinstance(x, Sym)})
        if syms and binds:  # (without: the values come from what it is combined with)
            have = {b.src[0].arg[0]: b for b in binds}
            x = ones._mov(Ops.EXPAND, shape, tuple(have[n] for n in syms))
        else:
            x = ones.expand(shape)
        # a tensor of its own (as numpy's full: writable), not a view of the 0-d constant: its
        # node no movement op either (a view of it, the tensor dropped, would view the constant)
        return x._alu(Ops.CAST) if x.uop.op in _VIEW_OPS else Tensor(x.uop)

    @staticmethod
    @_grad_option
    def zeros(*shape, dtype=None, device=None) -> Tensor:
        return Tensor.full(shape, 0, dtypes.default_float if dtype is None else dtype, device)

    @staticmethod
    @_grad_option
    def ones(*shape, dtype=None, device=None) -> Tensor:
        return Tensor.full(shape, 1, dtypes.default_float if dtype is None else dtype, device)

    def zeros_like(self, dtype=None) -> Tensor:
        return self.full_like(0, dtype)

    def ones_like(self, dtype=None) -> Tensor:
        return self.full_like(1, dtype)

    def full_like(self, fill_value: Scalar, dtype=None) -> Tensor:
        """A tensor of this one's shape filled with `fill_value` (a symbolic size takes the
        value bound in this tensor's graph)."""
        syms = [x.name for x in self.shape if isinstance(x, Sym)]
        return Tensor._full(self.shape, fill_value, self.dtype if dtype is None else dtype,
                            self.device, self._binds(syms) if syms else ())

    @staticmethod
    @_grad_option
    def empty(*shape, dtype=None, device=None) -> Tensor:
        """An uninitialised tensor; its storage is allocated when a schedule first uses it."""
        shape = _shape_arg(shape)
        d = _data_dtype(dtypes.default_float if dtype is None else dtype)
        buf = UOp.buffer(d, prod(shape), canonical_device("CPU" if device is None else device))
        return Tensor(_view_of_buffer(buf, shape))

    @staticmethod
    def arange(start, stop=None, step=1, dtype=None, device=None) -> Tensor:
        if stop is None:
            start, stop = 0, start
        for v in (start, stop, step):
            if not isinstance(v, (int, float, np.integer, np.floating)):
                what = "a symbolic size" if isinstance(v, Sym) else type(v).__name__
                raise TypeError(f"arange takes int or float bounds, got {v!r} ({what})")
        if step == 0:
            raise ValueError("arange's step must not be zero")
        if not all(math.isfinite(v) for v in (start, stop, step)):
            raise ValueError(f"arange's bounds and step must be finite, got {start}, {stop}, "
                             f"{step}")
        n = math.ceil((stop - start) / step)
        if n > _MAX_DIM // 8:  # (past what numpy can allocate: its error says less)
            raise ShapeError(f"arange({start}, {stop}, {step}) would hold {n} elements: too "
                             "many")
        arr = np.arange(start, stop, step)
        fits = arr.dtype.kind == "f" or not arr.size or (
            np.iinfo(np.int32).min <= arr.min() and arr.max() <= np.iinfo(np.int32).max)
        if dtype is not None:
            d = _data_dtype(dtype)
        else:
            d = dtypes.default_float if arr.dtype.kind == "f" else \
                dtypes.default_int if fits else dtypes.int64
        if d is dtypes.bool and arr.size > 2:  # numpy's rule
            raise TypeError(f"arange of bools has at most 2 elements, got {arr.size}")
        if d.is_int and d is not dtypes.bool:  # in the dtype itself, as numpy's (from the
            # first two values: float bounds truncate there, not element by element)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("error", RuntimeWarning)
                    arr = np.arange(start, stop, step, dtype=d.np)
            except (OverflowError, RuntimeWarning) as e:  # (a start or step it cannot hold)
                raise ValueError(f"arange({start}, {stop}, {step}) in {d.name}: {e}") from None
        return Tensor(arr, device=device, dtype=d)

    @staticmethod
    def linspace(start, stop, num: int = 50, endpoint: bool = True, dtype=None,
                 device=None) -> Tensor:
        """numpy's linspace: `num` values evenly spaced from `start` to `stop` (included with
        `endpoint`), computed as numpy computes them (in float64, then cast: an int dtype
        rounds toward negative infinity, as numpy 2); float32 unless `dtype` says."""
        for v in (start, stop):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer,
                                                                     np.floating)):
                raise TypeError(f"linspace takes int or float bounds, got {v!r}")
        num = int_arg(num, "linspace's num")
        if num < 0:
            raise ValueError(f"linspace's num must not be negative, got {num}")
        if num > _MAX_DIM // 8:
            raise ShapeError(f"linspace of {num} elements: too many")
        d = dtypes.default_float if dtype is None else _data_dtype(dtype)
        np_d = np.float64 if d is dtypes.bfloat16 else d.np  # (rounded to bfloat16 once,
        # from float64: through float32 a value near a bfloat16 midpoint rounded twice)
        arr = np.linspace(start, stop, num, endpoint=bool(endpoint), dtype=np_d)
        return Tensor(arr, device=device, dtype=d)

    @staticmethod
    def meshgrid(*xs: Tensor, indexing: str = "xy") -> list[Tensor]:
        """numpy's meshgrid of 1-d tensors (0-d ones count as one element): one tensor per
        input, each broadcast over the grid; ``indexing="xy"`` (numpy's default, PyTorch's
        is "ij") swaps the first two axes of the grid."""
        _all_tensors("meshgrid", xs)
        if indexing not in ("xy", "ij"):
            raise ValueError(f"meshgrid's indexing must be 'xy' or 'ij', got {indexing!r}")
        flat = [x.reshape(-1) if x.ndim != 1 else x for x in xs]
        shape = [x.shape[0] for x in flat]
        if indexing == "xy" and len(flat) >= 2:
            shape[0], shape[1] = shape[1], shape[0]
        out = []
        for i, x in enumerate(flat):
            at = i
            if indexing == "xy" and len(flat) >= 2 and i < 2:
                at = 1 - i
            view = [1] * len(flat)
            view[at] = x.shape[0]
            out.append(x.reshape(tuple(view))._broadcast_to(tuple(shape))._copy())
        return out

    @staticmethod
    @_grad_option
    def eye(n: int, m: int | None = None, dtype=None, device=None) -> Tensor:
        """The (n, m) identity (m defaults to n)."""
        for what, v in (("n", n), ("m", m)):
            if v is None and what == "m":
                continue
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"eye's {what} must be an int, got {v!r}")
            if v < 0:
                raise ShapeError(f"eye's {what} must not be negative, got {v}")
        return Tensor(np.eye(n, m), device=device,
                      dtype=dtypes.default_float if dtype is None else dtype)

    @staticmethod
    def manual_seed(seed: int = 0) -> None:
        """Seed `rand`/`randn`: the same seed gives the same sequence of tensors."""
        if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
            raise ValueError(f"a seed must be a non-negative int, got {seed!r}")
        Tensor._seed[0] = int(seed)
        Tensor._rng_counter[0] = 0

    @staticmethod
    def _rng() -> np.random.Generator:
        with _rng_lock:  # one stream per draw, also when threads draw at once
            Tensor._rng_counter[0] += 1
            key = [Tensor._seed[0], Tensor._rng_counter[0]]
        return np.random.default_rng(key)

    @staticmethod
    @_grad_option
    def rand(*shape, dtype=None, device=None) -> Tensor:
        """Uniform in [0, 1) (a float dtype: in 16 bits, values that would round up to 1 are
        the largest below it; float64 drawn with float64's precision, the others in
        float32)."""
        d = _data_dtype(dtypes.default_float if dtype is None else dtype)
        if not d.is_float:
            raise TypeError(f"rand draws floats, got dtype {d.name}")
        x = Tensor._rng().random(_shape_arg(shape), dtype=_draw_dtype(d))
        if d.itemsize == 2:  # what would round up to 1: the largest value below it
            x = np.minimum(x, np.float32(_step_inside(1.0, d, up=False)))
        return _random(Tensor(x, device=device, dtype=d))

    @staticmethod
    @_grad_option
    def randn(*shape, dtype=None, device=None) -> Tensor:
        """Standard normal (float64 drawn with float64's precision, the others in float32)."""
        d = _data_dtype(dtypes.default_float if dtype is None else dtype)
        if not d.is_float:
            raise TypeError(f"randn draws floats, got dtype {d.name}")
        return _random(Tensor(Tensor._rng().standard_normal(_shape_arg(shape),
                                                             dtype=_draw_dtype(d)),
                              device=device, dtype=d))

    @staticmethod
    @_grad_option
    def uniform(*shape, low=0.0, high=1.0, dtype=None, device=None) -> Tensor:
        """Uniform in [low, high) (numbers, or tensors broadcasting to the shape): drawn in
        float64 and rounded to the dtype, a value that rounds up to `high` becomes the largest
        one below it (as `rand`)."""
        d = _data_dtype(dtypes.default_float if dtype is None else dtype)
        if not d.is_float:
            raise TypeError(f"uniform draws floats, got dtype {d.name}")
        top = float(np.finfo(np.float32 if d is dtypes.bfloat16 else d.np).max)
        for what, v in (("low", low), ("high", high)):
            if isinstance(v, Tensor):
                continue
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.number)):
                raise TypeError(f"uniform's {what} must be a number or a Tensor, got {v!r}")
            if not abs(float(v)) <= top:  # (a NaN too)
                raise ValueError(f"uniform's {what} = {v!r} is not a finite {d.name} value")
        if isinstance(low, Tensor) or isinstance(high, Tensor):  # bounds per element, in d
            lo, hi = (v.cast(d) if isinstance(v, Tensor) else Tensor(float(v), device, d)
                      for v in (low, high))
            out = Tensor.rand(*shape, dtype=dtypes.float64, device=device)
            span = hi.cast(dtypes.float64) - lo.cast(dtypes.float64)
            try:
                fits = _broadcast_shape(span.shape, out.shape) == out.shape
            except ShapeError:
                fits = False
            if not fits:
                raise ShapeError(f"uniform of shape {out.shape}: its bounds, of shape "
                                 f"{span.shape}, must broadcast to it")
            x = (out * span + lo.cast(dtypes.float64)).cast(d)
            return ((x >= hi) & (hi > lo)).where(_below(hi), x)  # (a value rounded up to high)
        x = Tensor._rng().random(_shape_arg(shape)) * (high - low) + low
        if high > low:  # the ends as values of `d` (each rounds to itself)
            x = np.clip(x, _step_inside(float(low), d, up=True),
                        _step_inside(float(high), d, up=False))
        return _random(Tensor(x, device=device, dtype=d))

    # -- elementwise --------------------------------------------------------------------------

    def _operands(self, other: Tensor | Scalar, reverse: bool = False) -> tuple[Tensor, Tensor]:
        if isinstance(other, BoundVariable):  # an int scalar, weakly typed as a Python int (a
            d = _scalar_dtype(0, self.dtype)  # float32 tensor times a variable stays float32)
            if not d.is_float and d is not dtypes.bool:
                info, lo, hi = np.iinfo(d.np), other.var.min + other.add, other.var.max + other.add
                if lo < info.min or hi > info.max:
                    raise ValueError(f"variable {other.name!r} ranges over [{lo}, {hi}], "
                                     f"beyond {d.name}: cast the tensor first")
            other = other._t().cast(d)
        if isinstance(other, Tensor):
            mine, theirs = device_of(self.uop), device_of(other.uop)
            if mine != theirs and mine is not None and theirs is not None:
                raise DeviceError(f"operands are on different devices: {mine} and {theirs}")
            d = least_upper_dtype(self.dtype, other.dtype)
            a, b = self.cast(d), other.cast(d)
        elif isinstance(other, (bool, int, float, np.generic)):
            if not isinstance(other, (bool, int, float, np.number, np.bool_)) \
                    or isinstance(other, np.complexfloating):
                raise TypeError(f"cannot combine a {self.dtype.name} tensor with "
                                f"{type(other).__name__} {other!r}"[:200])
            other = other.item() if isinstance(other, np.generic) else other
            d = _scalar_dtype(other, self.dtype)
            a = self.cast(d)
            b = Tensor(_broadcast_const(d, _py_value(other, d), a.shape))
            return (b, a) if reverse else (a, b)
        else:
            hint = ": wrap it in Tensor()" if isinstance(other, (np.ndarray, list, tuple)) else ""
            raise TypeError(f"cannot combine a Tensor with {type(other).__name__}{hint}")
        shape = _broadcast_shape(a.shape, b.shape)
        a, b = a._broadcast_to(shape), b._broadcast_to(shape)
        return (b, a) if reverse else (a, b)

    def _broadcast_to(self, shape: tuple[int, ...]) -> Tensor:
        if self.shape == shape:
            return self
        nd = len(shape)
        x = self.reshape((1,) * (nd - self.ndim) + self.shape) if self.ndim < nd else self
        return x.expand(shape)

    def _alu(self, op: Ops, *srcs: Tensor, dtype: DType | None = None) -> Tensor:
        return Tensor(UOp(op, self.dtype if dtype is None else dtype,
                          (self.uop, *(s.uop for s in srcs))))

    def _binop(self, op: Ops, other, reverse: bool = False, out: DType | None = None) -> Tensor:
        a, b = self._operands(other, reverse)
        return a._alu(op, b, dtype=out)

    def _float(self) -> Tensor:
        return self if self.dtype.is_float else self.cast(dtypes.default_float)

    def add(self, x, reverse=False) -> Tensor:
        return self._binop(Ops.ADD, x, reverse)

    def sub(self, x, reverse=False) -> Tensor:
        a, b = self._operands(x, reverse)
        if a.dtype is dtypes.bool:
            raise TypeError("numpy boolean subtract is not supported; use ^ or logical ops")
        return a._alu(Ops.SUB, b)

    def mul(self, x, reverse=False) -> Tensor:
        return self._binop(Ops.MUL, x, reverse)

    def div(self, x, reverse=False) -> Tensor:
        """True division; integer operands give float32 (a Python int divides as a float:
        ``int8_tensor / 1000`` is fine, as in numpy)."""
        if not self.dtype.is_float and isinstance(x, (int, np.integer, BoundVariable)) \
                and not isinstance(x, (bool, np.bool_)):
            return self._float().div(x, reverse)
        a, b = self._operands(x, reverse)
        return a._float()._alu(Ops.DIV, b._float())

    def _arith(self, op: Ops, x, reverse: bool) -> Tensor:
        """An arithmetic op numpy does not define on bools: bool operands become int8."""
        a, b = self._operands(x, reverse)
        if a.dtype is dtypes.bool:
            a, b = a.cast(dtypes.int8), b.cast(dtypes.int8)
        return a._alu(op, b)

    def floordiv(self, x, reverse=False) -> Tensor:
        """Floor division (numpy's ``//``: rounds toward negative infinity)."""
        return self._arith(Ops.IDIV, x, reverse)

    def mod(self, x, reverse=False) -> Tensor:
        """Remainder with the sign of the divisor (numpy's ``%``)."""
        return self._arith(Ops.MOD, x, reverse)

    remainder = mod

    def fmod(self, x) -> Tensor:
        """Remainder with the sign of the dividend (numpy's fmod, C's fmod; ``%`` takes the
        divisor's): an int divided by 0 gives 0, as numpy's."""
        return self._arith(Ops.FMOD, x, False)

    def pow(self, x, reverse=False) -> Tensor:
        """numpy's power; an integer raised to a negative integer constant is refused here, as
        numpy refuses it (a tensor of exponents is checked only when the kernel runs)."""
        out = self._arith(Ops.POW, x, reverse)
        if not reverse and isinstance(x, (int, np.integer)) and not isinstance(x, bool) \
                and x < 0 and not out.dtype.is_float:
            raise ValueError(f"integers to negative integer powers are not allowed "
                             f"({self.dtype.name} ** {x}), as in numpy: use a float tensor")
        return out

    def maximum(self, x) -> Tensor:
        return x._rmaximum(self) if type(x) in DEFER_TO else self._binop(Ops.MAX, x)

    def minimum(self, x) -> Tensor:
        return x._rminimum(self) if type(x) in DEFER_TO else self._binop(Ops.MIN, x)

    def _cmp(self, op: Ops, x, reverse=False) -> Tensor:
        """A comparison; a Python int the tensor's dtype cannot hold compares by value, as in
        numpy 2 (``uint8_tensor < -1`` is all False, ``== 300`` all False, ``!= 300`` all
        True), where arithmetic with it is an error; an int or bool tensor meets a float
        scalar in float64, as numpy's (the float32 of arithmetic would round both)."""
        if isinstance(x, np.integer):  # a numpy int compares as the Python int it holds
            x = int(x)
        if isinstance(x, (float, np.floating)) and not self.dtype.is_float:
            # ints against a float in float64 (numpy's), where float32 would round both
            return self.cast(dtypes.float64)._binop(op, float(x), reverse, out=dtypes.bool)
        if isinstance(x, Tensor) and _signed_against_uint64(self.dtype, x.dtype):
            return self._cmp_uint64(op, x, reverse)
        if isinstance(x, BoundVariable) and not self.dtype.is_float:  # by value, as an int
            info = np.iinfo(_scalar_dtype(0, self.dtype).np)
            if x.var.min + x.add < info.min or x.var.max + x.add > info.max:
                v = x._t().cast(dtypes.int64)
                if self.dtype is dtypes.uint64:
                    return self._cmp_uint64(op, v, reverse)
                return self.cast(dtypes.int64)._binop(op, v, reverse, out=dtypes.bool)
        if type(x) is int and not self.dtype.is_float:
            info = np.iinfo(_scalar_dtype(x, self.dtype).np)  # a bool tensor compares as int32
            if not info.min <= x <= info.max:
                if op is Ops.CMPEQ or op is Ops.CMPNE:
                    value = op is Ops.CMPNE
                else:  # self < x (or <=) holds when x lies above the range; x < self below
                    value = (x < info.min) if reverse else (x > info.max)
                return self.full_like(value, dtypes.bool)
        return self._binop(op, x, reverse, out=dtypes.bool)

    def _cmp_uint64(self, op: Ops, x: Tensor, reverse: bool) -> Tensor:
        """A comparison of a signed int tensor with a uint64 one, exact as numpy 2 makes it
        (promotion would compare both as float64, which rounds past 2**53): a negative value
        is below every uint64, the others compare as uint64."""
        left, right = (x, self) if reverse else (self, x)
        signed_left = left.dtype is not dtypes.uint64
        i = (left if signed_left else right).cast(dtypes.int64)
        u64 = i.cast(dtypes.uint64)
        if signed_left:
            cmp = u64._binop(op, right, out=dtypes.bool)
        else:
            cmp = left._binop(op, u64, out=dtypes.bool)
        # where the signed value is negative: i < u, i <= u and != hold, u < i, u <= i and ==
        # do not
        negative_holds = op is Ops.CMPNE or (signed_left and op is not Ops.CMPEQ)
        return (i < 0).where(negative_holds, cmp)

    def __add__(self, x):
        return NotImplemented if type(x) in DEFER_TO else self.add(x)

    def __mul__(self, x):
        return NotImplemented if type(x) in DEFER_TO else self.mul(x)

    def __sub__(self, x):
        return NotImplemented if type(x) in DEFER_TO else self.sub(x)

    def __truediv__(self, x):
        return NotImplemented if type(x) in DEFER_TO else self.div(x)

    def __floordiv__(self, x):
        return NotImplemented if type(x) in DEFER_TO else self.floordiv(x)

    def __mod__(self, x):
        return NotImplemented if type(x) in DEFER_TO else self.mod(x)

    def __pow__(self, x):
        if isinstance(x, (float, np.floating)) and x == 0.5 and self.dtype.is_float:
            return self.sqrt()  # numpy's ``a ** 0.5`` is sqrt (-0.0 stays, -inf is nan)
        return NotImplemented if type(x) in DEFER_TO else self.pow(x)

    def __radd__(self, x):
        return self.add(x, True)

    def __rsub__(self, x):
        return self.sub(x, True)

    def __rmul__(self, x):
        return self.mul(x, True)

    def __rtruediv__(self, x):
        return self.div(x, True)

    def __rfloordiv__(self, x):
        return self.floordiv(x, True)

    def __rmod__(self, x):
        return self.mod(x, True)

    def __rpow__(self, x):
        return self.pow(x, True)

    def __neg__(self) -> Tensor:
        """Negation; bool tensors raise as in numpy (use ``~`` or `logical_not`)."""
        if self.dtype is dtypes.bool:
            raise TypeError("negating a bool tensor is not supported (numpy raises too); use ~")
        return self._alu(Ops.NEG)

    def __pos__(self) -> Tensor:
        """``+t``: a new tensor with t's values (numpy's copy); bool tensors raise as numpy's."""
        if self.dtype is dtypes.bool:
            raise TypeError("unary + of a bool tensor is not supported (numpy raises too)")
        return self._copy()

    def __abs__(self) -> Tensor:
        return self.abs()

    def __divmod__(self, x):
        """``divmod(t, x)``: ``(t // x, t % x)``, numpy's floor division and modulo."""
        return NotImplemented if type(x) in DEFER_TO else (self.floordiv(x), self.mod(x))

    def __rdivmod__(self, x):
        return self.floordiv(x, True), self.mod(x, True)

    def __lt__(self, x):
        return NotImplemented if type(x) in DEFER_TO else self._cmp(Ops.CMPLT, x)

    def __le__(self, x):
        return NotImplemented if type(x) in DEFER_TO else self._cmp(Ops.CMPLE, x)

    def __gt__(self, x):
        return NotImplemented if type(x) in DEFER_TO else self._cmp(Ops.CMPLT, x, True)

    def __ge__(self, x):
        return NotImplemented if type(x) in DEFER_TO else self._cmp(Ops.CMPLE, x, True)

    def __eq__(self, x):  # type: ignore[override]
        """Elementwise ``==``; against an object that is no number, array or tensor (None, a
        string) Python's own answer, False (``t in [None, t]`` then asks ``t == t``)."""
        return NotImplemented if type(x) in DEFER_TO or _alien(x) else self._cmp(Ops.CMPEQ, x)

    def __ne__(self, x):  # type: ignore[override]
        return NotImplemented if type(x) in DEFER_TO or _alien(x) else self._cmp(Ops.CMPNE, x)

    def isclose(self, other, rtol: float = 1e-05, atol: float = 1e-08,
                equal_nan: bool = False) -> Tensor:
        """numpy's isclose: ``|self - other| <= atol + rtol * |other|`` where `other` is
        finite, else equality (an inf is close to itself only); nan is close to nan only with
        `equal_nan`. Computed as numpy does: in the dtype of the two when both are floats,
        else in float64. Bool, broadcast."""
        _not_sharded(other, "isclose")
        x, y = self, other
        if not isinstance(y, Tensor):
            if not isinstance(y, (bool, int, float, np.bool_, np.integer, np.floating)):
                raise TypeError(f"isclose takes a Tensor or a scalar, got {type(y).__name__}")
            y = float(y)  # (numpy takes a scalar as a float)
            if not x.dtype.is_float:
                x = x.cast(dtypes.float64)
            close = (x - y).abs() <= atol + rtol * abs(y)
            if math.isfinite(y):
                out = close | (x == y)
            else:
                out = x == y
            return out | x.isnan() if equal_nan and math.isnan(y) else out
        if not (x.dtype.is_float and y.dtype.is_float):
            x, y = x.cast(dtypes.float64), y.cast(dtypes.float64)
        out = (((x - y).abs() <= atol + rtol * y.abs()) & y.isfinite()) | (x == y)
        return out | (x.isnan() & y.isnan()) if equal_nan else out

    def allclose(self, other, rtol: float = 1e-05, atol: float = 1e-08,
                 equal_nan: bool = False) -> bool:
        """numpy's allclose: whether `isclose` holds everywhere (a Python bool; realizes)."""
        return bool(self.isclose(other, rtol, atol, equal_nan).all())

    __hash__ = object.__hash__

    def _bitwise(self, op: Ops, x, reverse=False) -> Tensor:
        a, b = self._operands(x, reverse)
        if a.dtype.is_float:
            raise TypeError(f"bitwise {op.name.lower()} needs bool or integer tensors, "
                            f"got {a.dtype.name}")
        return a._alu(op, b)

    def __and__(self, x):
        return NotImplemented if type(x) in DEFER_TO else self._bitwise(Ops.AND, x)

    def __or__(self, x):
        return NotImplemented if type(x) in DEFER_TO else self._bitwise(Ops.OR, x)

    def __xor__(self, x):
        return NotImplemented if type(x) in DEFER_TO else self._bitwise(Ops.XOR, x)

    def __rand__(self, x):
        return self._bitwise(Ops.AND, x, True)

    def __ror__(self, x):
        return self._bitwise(Ops.OR, x, True)

    def __rxor__(self, x):
        return self._bitwise(Ops.XOR, x, True)

    def _shift(self, op: Ops, x, reverse=False) -> Tensor:
        """numpy's left_shift / right_shift: integers in their promoted dtype (bools as int8,
        as numpy's); a count past the width gives 0 (-1 for a negative value shifted right)."""
        _not_sharded(x, "a shift")
        a, b = self._operands(x, reverse)
        if a.dtype.is_float:
            raise TypeError(f"a shift needs integer tensors, got {a.dtype.name}")
        if a.dtype is dtypes.bool:
            a, b = a.cast(dtypes.int8), b.cast(dtypes.int8)
        return a._alu(op, b)

    def __lshift__(self, x):
        return NotImplemented if type(x) in DEFER_TO else self._shift(Ops.SHL, x)

    def __rshift__(self, x):
        return NotImplemented if type(x) in DEFER_TO else self._shift(Ops.SHR, x)

    def __rlshift__(self, x):
        return self._shift(Ops.SHL, x, True)

    def __rrshift__(self, x):
        return self._shift(Ops.SHR, x, True)

    def left_shift(self, x) -> Tensor:
        """numpy's left_shift (``<<``; PyTorch's bitwise_left_shift)."""
        return self._shift(Ops.SHL, x)

    def right_shift(self, x) -> Tensor:
        """numpy's right_shift (``>>``, arithmetic for signed ints)."""
        return self._shift(Ops.SHR, x)

    bitwise_left_shift, bitwise_right_shift = left_shift, right_shift

    def bitwise_and(self, x) -> Tensor:
        return self._bitwise(Ops.AND, x)

    def bitwise_or(self, x) -> Tensor:
        return self._bitwise(Ops.OR, x)

    def bitwise_xor(self, x) -> Tensor:
        return self._bitwise(Ops.XOR, x)

    def bitwise_not(self) -> Tensor:
        return ~self

    def __invert__(self) -> Tensor:
        if self.dtype is dtypes.bool:
            return self.logical_not()
        if self.dtype.is_float:
            raise TypeError(f"~ needs bool or integer tensors, got {self.dtype.name}")
        return self ^ -1 if not self.dtype.is_unsigned else self ^ int(np.iinfo(self.dtype.np).max)

    def logical_not(self) -> Tensor:
        return self.cast(dtypes.bool)._alu(Ops.NOT)

    def _logical(self, op: Ops, x) -> Tensor:
        _not_sharded(x, "logical ops")
        if isinstance(x, Tensor):
            x = x.cast(dtypes.bool)
        elif isinstance(x, (bool, int, float, np.bool_, np.integer, np.floating)):
            x = bool(x)  # (a nan is true, as numpy's truth of it)
        else:
            raise TypeError(f"logical ops take Tensors and scalars, got {type(x).__name__}")
        return self.cast(dtypes.bool)._binop(op, x)

    def logical_and(self, x) -> Tensor:
        """numpy's logical_and: where both are true (nonzero, nan included); bool."""
        return self._logical(Ops.AND, x)

    def logical_or(self, x) -> Tensor:
        """numpy's logical_or: where either is true; bool."""
        return self._logical(Ops.OR, x)

    def logical_xor(self, x) -> Tensor:
        """numpy's logical_xor: where exactly one is true; bool."""
        return self._logical(Ops.XOR, x)

    def where(self, x, y) -> Tensor:
        """``cond.where(x, y)``: x where self is true, else y (numpy broadcasting and promotion;
        with a sharded x or y, sharded as it is)."""
        for v in (x, y):
            if type(v) in DEFER_TO:
                return v._where_of(self, x, y)
        for v in (x, y):
            if not isinstance(v, (Tensor, BoundVariable, bool, int, float, np.generic)):
                raise TypeError(f"where takes Tensors and scalars, got {type(v).__name__}: wrap "
                                "it in Tensor()")
        if not isinstance(x, Tensor) and not isinstance(y, Tensor):  # a bound variable next
            x, y = (v._t() if isinstance(v, BoundVariable) else v for v in (x, y))  # to a
        if not isinstance(x, Tensor):  # tensor is weak, as a Python int (`_operands`)
            if not isinstance(y, Tensor):  # two scalars: the dtype ``Tensor([x, y])`` has;
                gx, gy = isinstance(x, np.generic), isinstance(y, np.generic)  # a numpy one's
                if gx and gy:  # own dtype, the other one next to it (weak)
                    d = least_upper_dtype(_scalar_default_dtype(x), _scalar_default_dtype(y))
                elif gx or gy:
                    g, py = (x, y) if gx else (y, x)
                    d = _scalar_dtype(py, _scalar_default_dtype(g))
                else:
                    d = _infer_dtype(_to_numpy([x, y], None))
                x = Tensor.full((), x, d, self.device)
            else:
                y, x = y._operands(x)
        x, y = x._operands(y)
        mine, theirs = device_of(self.uop), device_of(x.uop)
        if mine != theirs and mine is not None and theirs is not None:
            raise DeviceError(f"where's condition is on {mine}, its values on {theirs}")
        shape = _broadcast_shape(self.shape, x.shape)
        c = self.cast(dtypes.bool)._broadcast_to(shape)
        return c._alu(Ops.WHERE, x._broadcast_to(shape), y._broadcast_to(shape), dtype=x.dtype)

    def masked_fill(self, mask: Tensor, value) -> Tensor:
        """`value` where `mask` is true (nonzero), else self, in self's dtype (PyTorch's
        masked_fill: a float into an int tensor truncates, as ``full_like``); `mask` and a
        tensor `value` broadcast with self, numpy's way."""
        if not isinstance(mask, Tensor):
            raise TypeError(f"masked_fill's mask must be a Tensor, got {type(mask).__name__}")
        if isinstance(value, Tensor):
            value = value.cast(self.dtype)
        elif isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)):
            value = self.full_like(value)
        else:
            raise TypeError(f"masked_fill's value must be a scalar or a Tensor, got "
                            f"{type(value).__name__}")
        return mask.where(value, self)

    def lerp(self, end, weight) -> Tensor:
        """``self + weight * (end - self)``, PyTorch's lerp (numpy broadcasting and
        promotion; at weight 1 the result can differ from `end` in the last bit). Ints and
        bools are computed in float32 (PyTorch refuses them; the difference of two ints
        would wrap), 16-bit floats in float32 and rounded once (as PyTorch's)."""
        a = self._float()
        if isinstance(end, Tensor):
            end = end._float()
        return _rounded_once(lambda a, end, w: a + (end - a) * w, a, end, weight)

    def _unary(self, op: Ops) -> Tensor:
        return self._float()._alu(op)

    def exp(self) -> Tensor:
        return self._unary(Ops.EXP)

    def log(self) -> Tensor:
        return self._unary(Ops.LOG)

    def sqrt(self) -> Tensor:
        return self._unary(Ops.SQRT)

    def rsqrt(self) -> Tensor:
        """``1 / sqrt(x)``; 16-bit floats in float32, rounded once."""
        return _rounded_once(lambda x: x._unary(Ops.SQRT)._alu(Ops.RECIPROCAL), self)

    def reciprocal(self) -> Tensor:
        return self._unary(Ops.RECIPROCAL)

    def sin(self) -> Tensor:
        return self._unary(Ops.SIN)

    def cos(self) -> Tensor:
        return self._unary(Ops.COS)

    def tanh(self) -> Tensor:
        return self._unary(Ops.TANH)

    def tan(self) -> Tensor:
        return self._unary(Ops.TAN)

    def sinh(self) -> Tensor:
        return self._unary(Ops.SINH)

    def cosh(self) -> Tensor:
        return self._unary(Ops.COSH)

    def arcsin(self) -> Tensor:
        """numpy's arcsin (nan outside [-1, 1]); also ``asin``."""
        return self._unary(Ops.ASIN)

    def arccos(self) -> Tensor:
        """numpy's arccos (nan outside [-1, 1]); also ``acos``."""
        return self._unary(Ops.ACOS)

    def arctan(self) -> Tensor:
        """numpy's arctan; also ``atan``."""
        return self._unary(Ops.ATAN)

    def arcsinh(self) -> Tensor:
        """numpy's arcsinh; also ``asinh``."""
        return self._unary(Ops.ASINH)

    def arccosh(self) -> Tensor:
        """numpy's arccosh (nan below 1); also ``acosh``."""
        return self._unary(Ops.ACOSH)

    def arctanh(self) -> Tensor:
        """numpy's arctanh (+-inf at +-1, nan outside); also ``atanh``."""
        return self._unary(Ops.ATANH)

    asin, acos, atan, asinh, acosh, atanh = arcsin, arccos, arctan, arcsinh, arccosh, arctanh

    def arctan2(self, x) -> Tensor:
        """numpy's arctan2(self, x): the angle of the point (x, self), in [-pi, pi], with the
        signs of zeros and infinities as numpy takes them; ints and bools computed in
        float32 (as every float op here); also ``atan2``."""
        return self._float_binop(Ops.ATAN2, x)

    atan2 = arctan2

    def hypot(self, x) -> Tensor:
        """numpy's hypot: sqrt(self**2 + x**2) without overflow or underflow on the way."""
        return self._float_binop(Ops.HYPOT, x)

    def copysign(self, x) -> Tensor:
        """numpy's copysign: the magnitude of self with the sign bit of x (-0.0 and nan's
        sign bit count)."""
        return self._float_binop(Ops.COPYSIGN, x)

    def logaddexp(self, x) -> Tensor:
        """numpy's logaddexp: log(exp(self) + exp(x)) without overflow (equal infinities give
        themselves, nan propagates); 16-bit floats computed in float32 and rounded once, as
        numpy's. Equal finite arguments share the gradient (half each: the function is
        smooth there)."""
        _not_sharded(x, "logaddexp")
        a, b = self._operands(x)
        a, b = a._float(), b._float()
        out = a.dtype
        if out.itemsize == 2:
            a, b = a.cast(dtypes.float32), b.cast(dtypes.float32)
        spread = (-(a - b).abs()).exp().log1p()
        tie = a * 0.5 + b * 0.5 + math.log(2)  # (a itself when equal: halves are exact)
        return (a == b).where(tie, a.maximum(b) + spread).cast(out)

    def deg2rad(self) -> Tensor:
        """numpy's deg2rad: self * (pi / 180), the factor as numpy takes it (in float32 for
        32- and 16-bit floats, the product of 16-bit ones in float32, rounded once)."""
        return self._scaled(float(np.float32(np.pi) / np.float32(180)), math.pi / 180)

    def rad2deg(self) -> Tensor:
        """numpy's rad2deg: self * (180 / pi), the factor as `deg2rad`'s."""
        return self._scaled(float(np.float32(180) / np.float32(np.pi)), 180 / math.pi)

    def _scaled(self, factor32: float, factor64: float) -> Tensor:
        x = self._float()
        if x.dtype is dtypes.float64:
            return x * factor64
        if x.dtype.itemsize == 2:
            return (x.cast(dtypes.float32) * factor32).cast(x.dtype)
        return x * factor32

    def _float_binop(self, op: Ops, x, reverse: bool = False) -> Tensor:
        _not_sharded(x, op.name.lower())
        a, b = self._operands(x, reverse)
        return a._float()._alu(op, b._float())

    def exp2(self) -> Tensor:
        """2 ** x, numpy's exp2 (exact at integers)."""
        return self._unary(Ops.EXP2)

    def log2(self) -> Tensor:
        """numpy's log2 (exact at powers of two)."""
        return self._unary(Ops.LOG2)

    def log1p(self) -> Tensor:
        """log(1 + x), numpy's log1p: accurate where x is near 0."""
        return self._unary(Ops.LOG1P)

    def expm1(self) -> Tensor:
        """exp(x) - 1, numpy's expm1: accurate where x is near 0."""
        return self._unary(Ops.EXPM1)

    def trunc(self) -> Tensor:
        return self._alu(Ops.TRUNC) if self.dtype.is_float else self._copy()  # (a new tensor)

    def floor(self) -> Tensor:
        """Round toward negative infinity; infinities, nan and -0.0 stay (numpy's floor)."""
        if not self.dtype.is_float:
            return self._copy()  # a new tensor with the same values, as numpy's
        return self._alu(Ops.FLOOR)

    def ceil(self) -> Tensor:
        """Round toward positive infinity, as numpy's ceil."""
        return self._alu(Ops.CEIL) if self.dtype.is_float else self._copy()

    def abs(self) -> Tensor:
        if self.dtype is dtypes.bool or self.dtype.is_unsigned:
            return self._copy()  # a new tensor with the same values, as numpy's
        return self._alu(Ops.ABS)

    def sign(self) -> Tensor:
        if self.dtype is dtypes.bool:
            raise TypeError("sign is not defined for bool tensors (numpy raises too)")
        return self._alu(Ops.SIGN)

    def isnan(self) -> Tensor:
        """Where the elements are nan (bool; never for ints and bools, as numpy's)."""
        return self != self if self.dtype.is_float else self.full_like(False, dtypes.bool)

    def isinf(self) -> Tensor:
        """Where the elements are +inf or -inf (bool; never for ints and bools)."""
        if not self.dtype.is_float:
            return self.full_like(False, dtypes.bool)
        return self.abs() == math.inf

    def isfinite(self) -> Tensor:
        """Where the elements are neither inf nor nan (bool; always for ints and bools)."""
        if not self.dtype.is_float:
            return self.full_like(True, dtypes.bool)
        return self.abs() < math.inf

    def nan_to_num(self, nan: float = 0.0, posinf: float | None = None,
                   neginf: float | None = None) -> Tensor:
        """numpy's nan_to_num: nan, +inf and -inf replaced (by 0, the dtype's largest and
        its lowest finite value unless given); ints and bools unchanged (a new tensor)."""
        if not self.dtype.is_float:
            return self._copy()
        big = float(np.finfo(np.float32 if self.dtype is dtypes.bfloat16 else self.dtype.np).max)
        if self.dtype is dtypes.bfloat16:
            big = 3.3895313892515355e38  # (bfloat16's largest)
        hi = big if posinf is None else posinf
        lo = -big if neginf is None else neginf
        x = self.isnan().where(self.full_like(nan), self)
        x = (x == math.inf).where(self.full_like(hi), x)
        return (x == -math.inf).where(self.full_like(lo), x)

    @_numpy_names
    def count_nonzero(self, axis=None, keepdim: bool = False) -> Tensor:
        """numpy's count_nonzero: how many elements are nonzero (nan counts), int64."""
        return (self != 0).sum(axis, keepdim=keepdim).cast(dtypes.int64)

    def round(self, decimals: int = 0) -> Tensor:
        """numpy's round: to the nearest multiple of ``10**-decimals``, halves to the even
        one. Floats as numpy computes them, in the tensor's dtype: ``rint(x * 10**decimals)
        / 10**decimals`` (``rint(x / 10**-decimals) * 10**-decimals`` for decimals below 0;
        so ``round(2.675, 2)`` is 2.68 in float32, and a product past the dtype's range is
        inf; bfloat16 rounds each step, as float16 does in numpy). Ints stay ints: decimals
        of 0 or more change nothing, below 0 round exactly in integer arithmetic (numpy
        goes through float64: int64 values past 2**53 can differ),
        a result past the dtype's range wrapping; ``10**-decimals`` must fit the dtype (a
        ValueError otherwise, where numpy wraps it). Bools are refused (numpy's answer is
        float16)."""
        decimals = int_arg(decimals, "round's decimals")
        if self.dtype is dtypes.bool:
            raise TypeError("round of a bool tensor: cast it to a number first")
        if self.dtype.is_float:
            if decimals == 0:
                return self._alu(Ops.RINT)
            f = _power_of_ten(abs(decimals))
            if decimals > 0:
                return (self * f)._alu(Ops.RINT) / f
            return (self / f)._alu(Ops.RINT) * f
        if decimals >= 0:
            return self._copy()  # a new tensor with the same values, as numpy's
        f = 10 ** min(-decimals, 20)  # (past 20 digits no 64-bit int fits: no huge power)
        if f > np.iinfo(self.dtype.np).max:
            raise ValueError(f"round to {decimals} decimals of a tensor of {self.dtype.name}: "
                             f"10**{-decimals} does not fit {self.dtype.name}")
        q = self // f  # (floor) and the remainder, 0 <= r < f; f is even: halves go to even q
        r = self - q * f
        half = f // 2
        up = (r > half) | ((r == half) & ((q % 2) == 1))
        return (q + up.cast(self.dtype)) * f

    @_half_in_float32
    def sigmoid(self) -> Tensor:
        """1 / (1 + exp(-x)) (0 where exp(-x) overflows), one op whose gradient
        ``y * (1 - y)`` is finite everywhere (through exp it was nan below ~-88 in float32);
        16-bit floats computed in float32 and rounded once (exp(-x) overflows float16 below
        x = -11.1, where float16 still holds the result)."""
        return self._unary(Ops.SIGMOID)

    def relu(self) -> Tensor:
        return self.maximum(0)

    def gelu(self, approximate: str = "tanh") -> Tensor:
        """GELU, ``x * P(X <= x)`` for a standard normal X. ``approximate="tanh"`` (the
        default, as tinygrad's and GPT-2's: fast, within ~1e-3 of the exact value) or
        ``"none"``: ``0.5 * x * erfc(-x / sqrt(2))``, exact (PyTorch's default; 16-bit floats
        in float32, rounded once)."""
        if approximate == "none":
            return _exact_gelu(self)
        if approximate != "tanh":
            raise ValueError(f"gelu's approximate must be 'tanh' or 'none', got {approximate!r}")
        x = self._float()
        return 0.5 * x * (1 + (math.sqrt(2 / math.pi) * (x + 0.044715 * x * x * x)).tanh())

    def erf(self) -> Tensor:
        """The error function, each value as Python's ``math.erf`` gives it (numpy has none;
        computed element by element, ~0.1 us each); ints and bools in float32."""
        return self._unary(Ops.ERF)

    def erfc(self) -> Tensor:
        """``1 - erf(x)``, accurate where erf(x) is near 1 (Python's ``math.erfc``)."""
        return self._unary(Ops.ERFC)


    @_half_in_float32
    def silu(self) -> Tensor:
        """x * sigmoid(x); 16-bit floats in float32, rounded once, as `sigmoid`."""
        x = self._float()  # an int tensor: float32, as sigmoid (not int times float32)
        return x * x.sigmoid()

    swish = silu

    def square(self) -> Tensor:
        """x * x; a bool tensor squares to int8, as numpy's."""
        x = self.cast(dtypes.int8) if self.dtype is dtypes.bool else self
        return x * x

    def clip(self, min_=None, max_=None, **bounds) -> Tensor:
        """Bounded below by `min_` and above by `max_` (a scalar or a tensor each, None for no
        bound; ``min=``/``max=`` as PyTorch names them): ``maximum`` then ``minimum``."""
        return _clip_by(self, *_clip_bounds(self.dtype, min_, max_, bounds))

    clamp = clip

    def cast(self, dtype: DType | str) -> Tensor:
        """This tensor's values as `dtype` (itself when the dtype is the same), as numpy's
        ``astype``: floats to ints truncate toward zero, and NaN, inf or a float outside the
        int dtype's range give what numpy's cast of a C-contiguous array gives (no error, as
        numpy; the same value whatever the layout of the view cast); ints wrap; bfloat16
        rounds once, to nearest even."""
        d = _data_dtype(dtype)
        return self if d is self.dtype else self._alu(Ops.CAST, dtype=d)

    def astype(self, dtype: DType | str) -> Tensor:
        """numpy's name for `cast` (a new tensor unless the dtype is the same)."""
        return self.cast(dtype)

    def float(self) -> Tensor:
        return self.cast(dtypes.float32)

    def half(self) -> Tensor:
        return self.cast(dtypes.float16)

    def int(self) -> Tensor:
        return self.cast(dtypes.int32)

    def bool(self) -> Tensor:
        return self.cast(dtypes.bool)

    def bitcast(self, dtype: DType | str) -> Tensor:
        """Reinterpret the bits; the item size must not change."""
        d = _data_dtype(dtype)
        if d.itemsize != self.dtype.itemsize:
            raise TypeError(f"bitcast from {self.dtype.name} to {d.name} changes the item size")
        return self if d is self.dtype else self._alu(Ops.BITCAST, dtype=d)

    # -- reductions ---------------------------------------------------------------------------

    def _axes(self, axis) -> tuple[int, ...]:
        if axis is None:
            return tuple(range(self.ndim))
        if isinstance(axis, np.ndarray) and axis.ndim == 0 and axis.dtype.kind in "iu":
            axis = int(axis)  # a 0-d int array is an axis (numpy's operator.index)
        if isinstance(axis, (bool, np.bool_)):
            raise TypeError(f"an axis must be an int, got the bool {axis!r}")
        if isinstance(axis, (int, np.integer)):
            if self.ndim == 0 and axis in (0, -1):  # numpy: a 0-d array reduces over axis 0
                return ()  # or -1 as over none
            axes: tuple = (axis,)
        elif isinstance(axis, (tuple, list)):
            axes = tuple(axis)
            if self.ndim == 0 and axes:
                raise ShapeError(f"axis {axis} is out of range for a 0-d tensor")
        else:
            raise TypeError(f"an axis must be an int or a tuple of ints, got "
                            f"{type(axis).__name__} {axis!r}")
        out = tuple(_norm_axis(a, self.ndim) for a in axes)
        if len(set(out)) != len(out):
            raise ShapeError(f"repeated axis in {axis}")
        return out

    def _reduce(self, op: Ops, axis, keepdim: bool) -> Tensor:
        axes = self._axes(axis)
        if op in (Ops.MAX, Ops.MIN) and any(self.shape[a] == 0 for a in axes):
            raise ShapeError(f"{op.name.lower()} over a zero-size axis of shape {self.shape} "
                             "has no identity")
        out_shape = tuple(1 if i in axes else s for i, s in enumerate(self.shape))
        if axes and self.ndim:
            r = Tensor(UOp(Ops.REDUCE_AXIS, self.dtype, (self.uop,), (op, axes)))
        elif op is Ops.ADD and self.dtype.is_float:  # nothing to reduce: numpy still adds its
            r = (self + 0.0).contiguous()  # identity, so -0.0 sums to 0.0
        else:  # nothing to reduce: still a new value, never an alias of the input (numpy)
            r = self.contiguous()
        if keepdim:
            return r
        return r.reshape(tuple(s for i, s in enumerate(out_shape) if i not in axes))

    def _acc_dtype(self) -> DType:
        if self.dtype is dtypes.bool or (self.dtype.is_int and not self.dtype.is_unsigned):
            return dtypes.int64
        return dtypes.uint64 if self.dtype.is_unsigned else self.dtype

    @_numpy_names
    def sum(self, axis=None, keepdim: bool = False, dtype=None) -> Tensor:
        """Sum; bool and integer tensors accumulate in (u)int64 as numpy does, 16-bit floats
        (kept, or asked for as `dtype`: the inputs rounded to it first, as numpy's) in float32
        (numpy's float16 sums stall at 2048 along some memory layouts and not others: here
        the layout a kernel sees never changes a value)."""
        return self._accumulate(Ops.ADD, axis, keepdim, dtype)

    @_numpy_names
    def prod(self, axis=None, keepdim: bool = False, dtype=None) -> Tensor:
        """Product; accumulates as `sum` does."""
        return self._accumulate(Ops.MUL, axis, keepdim, dtype)

    def _accumulate(self, op: Ops, axis, keepdim: bool, dtype) -> Tensor:
        out = self._acc_dtype() if dtype is None else _data_dtype(dtype)
        if out.is_float and out.itemsize == 2:  # (kept or asked for: in float32, rounded once;
            x = self.cast(out).cast(dtypes.float32)  # the inputs in `out` first, as numpy's)
            return x._reduce(op, axis, keepdim).cast(out)
        return self.cast(out)._reduce(op, axis, keepdim)

    @_numpy_names
    def max(self, axis=None, keepdim: bool = False) -> Tensor:
        """Largest value along `axis`; over a zero-size axis a ShapeError (numpy raises), over
        a symbolic axis bound to 0 the identity (-inf, or the dtype's lowest value)."""
        return self._reduce(Ops.MAX, axis, keepdim)

    @_numpy_names
    def min(self, axis=None, keepdim: bool = False) -> Tensor:
        """Smallest value along `axis` (as `max`)."""
        return self._reduce(Ops.MIN, axis, keepdim)

    @_numpy_names
    def any(self, axis=None, keepdim: bool = False) -> Tensor:
        """Whether any element along `axis` is nonzero (NaN counts), a bool tensor; False
        over an empty axis (numpy's ``any``)."""
        if any(self.shape[a] == 0 for a in self._axes(axis)):  # nothing to look at
            return (self != 0).sum(axis, keepdim) > 0
        return self._truth().max(axis, keepdim)  # a max of bools: no count in 64 bits

    @_numpy_names
    def all(self, axis=None, keepdim: bool = False) -> Tensor:
        """Whether every element along `axis` is nonzero (NaN counts), a bool tensor; True
        over an empty axis (numpy's ``all``)."""
        if any(self.shape[a] == 0 for a in self._axes(axis)):
            return (self == 0).sum(axis, keepdim) == 0
        return self._truth().min(axis, keepdim)

    def _truth(self) -> Tensor:
        """Whether each element is nonzero: a bool tensor is its own."""
        return self if self.dtype is dtypes.bool else self != 0

    @_numpy_names
    def cumsum(self, axis=None, dtype=None) -> Tensor:
        """Running sums along `axis` (None: over the flattened tensor, as numpy's default).
        Accumulates as `sum` does (ints and bools in 64 bits, 16-bit floats in float32, then
        rounded back once), left to right as numpy's: other dtypes give numpy's bits."""
        return self._scan(Ops.ADD, axis, dtype)

    @_numpy_names
    def cumprod(self, axis=None, dtype=None) -> Tensor:
        """Running products along `axis`, as `cumsum` (accumulated as `prod`, left to right
        as numpy's)."""
        return self._scan(Ops.MUL, axis, dtype)

    def _scan(self, op: Ops, axis, dtype) -> Tensor:
        x = self.flatten() if axis is None else self
        if x.ndim == 0:
            x = x.reshape(1)
        ax = _norm_axis(0 if axis is None else axis, x.ndim)
        _static_dims(x, "a running sum", (ax,))
        want = _data_dtype(dtype) if dtype is not None else (
            self.dtype if self.dtype.is_float and self.dtype.itemsize == 2 else None)
        if want is not None and want.is_float and want.itemsize == 2:
            x = x.cast(want).cast(dtypes.float32)  # numpy rounds the inputs to `want` first
        else:
            x = x.cast(want or x._acc_dtype())
        x = Tensor(UOp(Ops.SCAN, x.dtype, (x.uop,), (op, ax)))
        return x.cast(want) if want is not None else x

    @_numpy_names
    def sort(self, axis: int = -1, descending: bool = False) -> tuple[Tensor, Tensor]:
        """The values sorted along `axis` and their int64 positions along it, a pair (as
        tinygrad's and PyTorch's sort; numpy's np.sort gives the values alone: ``[0]``).
        numpy's stable sort: nan sorts last ascending and first descending, equal values keep
        their order either way; a 0-d tensor is its own sort; axis None sorts the flattened
        tensor (numpy's)."""
        return self._sort(axis, descending, False), self._sort(axis, descending, True)

    @_numpy_names
    def median(self, axis=None, keepdim: bool = False) -> Tensor:
        """numpy's median along one axis (None: the whole tensor): the middle of the sorted
        values, the mean of the two middle ones for an even count; nan where a nan is among
        them or there is none (numpy's answer, with its warning). Ints and bools give float32
        (numpy's float64), 16-bit floats average in float32 and round once, as numpy's."""
        x, ax, f = self._along(axis, "median")
        n = x.shape[ax]
        if n == 0:
            out = Tensor.full(x.shape[:ax] + (1,) + x.shape[ax + 1:], math.nan, f, x.device)
        else:
            at = x._sorted_at(ax, f, ((n - 1) // 2, n // 2, n - 1))
            mid = (at[0] + at[1]) / 2 if n % 2 == 0 else at[1]
            out = at[2].isnan().where(math.nan, mid).cast(f)
        return self._reduced(out, axis, ax, keepdim)

    @_numpy_names
    def quantile(self, q, axis=None, keepdim: bool = False, method: str = "linear") -> Tensor:
        """numpy's quantile along one axis (None: the whole tensor) at the levels `q` in
        [0, 1] (a number, or a sequence of them: a leading axis of the result, as numpy's).
        The sorted values' position ``q * (n - 1)``: "linear" interpolates between its two
        neighbours (numpy's default and its formula), "lower" / "higher" take the one below /
        above, "nearest" the nearer one (halves to the even position), "midpoint" their mean.
        nan where a nan is among the values; a position on one value gives that value (an
        infinity too, where numpy's lerp gives nan; between values, numpy's formula and its
        nan for some infinities). The result has this tensor's float dtype (ints and bools:
        float32; numpy's answer is float64 for them and for a sequence of levels); 16-bit
        floats interpolate in float32 and round once. An empty axis is a ShapeError (numpy
        raises too)."""
        if isinstance(q, (Tensor, str)):
            raise TypeError(f"quantile's levels q must be numbers (a number or a sequence), not "
                            f"{type(q).__name__}: they decide which sorted values are read")
        levels = np.asarray(q, dtype=np.float64)
        if levels.ndim > 1:
            raise ValueError(f"quantile's q must be a number or a 1-d sequence, got shape "
                             f"{levels.shape}")
        if not ((levels >= 0) & (levels <= 1)).all():
            raise ValueError(f"quantile's levels must be in [0, 1], got {q!r}"[:200])
        if method not in ("linear", "lower", "higher", "nearest", "midpoint"):
            raise ValueError(f"quantile's method must be 'linear', 'lower', 'higher', 'nearest' "
                             f"or 'midpoint', got {method!r}"[:200])
        x, ax, f = self._along(axis, "quantile")
        n = x.shape[ax]
        if n == 0:
            raise ShapeError(f"quantile over an empty axis of a tensor of shape {self.shape}")
        picks = []
        for v in (levels * (n - 1)).reshape(-1).tolist():
            lo = math.floor(v)
            g = v - lo
            if method == "lower" or (method == "nearest" and round(v) == lo):
                g = 0.0
            elif method in ("higher", "nearest") and g:
                lo, g = lo + 1, 0.0
            elif method == "midpoint" and g:
                g = 0.5
            picks.append((lo, min(lo + 1, n - 1), g))
        wanted = sorted({n - 1}.union(*((lo, hi) if g else (lo,) for lo, hi, g in picks)))
        at = dict(zip(wanted, x._sorted_at(ax, f, wanted)))
        has_nan = at[n - 1].isnan()  # (nan sorts last)
        outs = []
        for lo, hi, g in picks:
            a = at[lo]
            if g:
                b = at[hi]
                d = b - a
                a = a + d * g if g < 0.5 else b - d * (1 - g)  # (numpy's lerp: exact at 1)
            outs.append(self._reduced(has_nan.where(math.nan, a).cast(f), axis, ax, keepdim))
        if levels.ndim == 0:
            return outs[0]
        if not outs:  # (no levels: an empty leading axis)
            shape = self._reduced(has_nan, axis, ax, keepdim).shape
            return Tensor.zeros((0, *shape), dtype=f, device=self.device)
        return Tensor.stack(outs)

    @_numpy_names
    def percentile(self, q, axis=None, keepdim: bool = False, method: str = "linear") -> Tensor:
        """numpy's percentile: `quantile` at ``q / 100`` (levels in [0, 100])."""
        if isinstance(q, (Tensor, str)):
            raise TypeError(f"percentile's levels q must be numbers, not {type(q).__name__}")
        levels = np.asarray(q, dtype=np.float64)
        if not ((levels >= 0) & (levels <= 100)).all():
            raise ValueError(f"percentile's levels must be in [0, 100], got {q!r}"[:200])
        return self.quantile(levels / 100 if levels.ndim else float(levels) / 100, axis,
                             keepdim, method)

    def _along(self, axis, what: str) -> tuple[Tensor, int, DType]:
        """For an order statistic along `axis` (None: all elements): the tensor it reads, the
        axis, and the float dtype of its result."""
        x = self.flatten() if axis is None or self.ndim == 0 else self
        ax = 0 if axis is None or self.ndim == 0 else _norm_axis(axis, self.ndim)
        if axis is not None and self.ndim == 0:
            _norm_axis(axis, 0, 0)
        _static_dims(x, what, (ax,))
        return x, ax, x.dtype if x.dtype.is_float else dtypes.default_float

    def _sorted_at(self, ax: int, f: DType, positions) -> list[Tensor]:
        """The sorted values (nan last) at `positions` along `ax`, each keeping the axis with
        size 1, in `f` (float32 for 16-bit floats; float64 for ints and bools, rounded to `f`
        once at the end, as numpy's in float64)."""
        wide = dtypes.float64 if not self.dtype.is_float else (
            dtypes.float32 if f.itemsize == 2 else f)
        s = self._sort(ax, False, False).cast(wide)
        return [s.shrink(tuple((i, i + 1) if a == ax else None for a in range(s.ndim)))
                for i in positions]

    def _reduced(self, out: Tensor, axis, ax: int, keepdim: bool) -> Tensor:
        """`out`, a reduction along `ax` that kept it with size 1, shaped as numpy's
        reduction of this tensor over `axis` (None: every axis) gives it."""
        if axis is None:
            return out.reshape((1,) * self.ndim if keepdim else ())
        return out if keepdim else out.squeeze(ax)

    @_numpy_names
    def argsort(self, axis: int = -1, descending: bool = False) -> Tensor:
        """The int64 positions that sort the tensor along `axis` (numpy's stable argsort;
        descending as `sort`)."""
        return self._sort(axis, descending, True)

    @_numpy_names
    def topk(self, k: int, axis: int = -1, largest: bool = True,
             sorted: bool = True) -> tuple[Tensor, Tensor]:  # noqa: A002 (PyTorch's name)
        """The `k` largest (or smallest) values along `axis` and their int64 positions, a
        pair, in sorted order whatever `sorted` says (PyTorch's topk; ties keep the order
        they come in, nan counts as the largest)."""
        k = int_arg(k, "topk's k")
        n = self.shape[_norm_axis(axis, self.ndim)] if self.ndim else 1
        if isinstance(n, Sym):
            _static_dims(self, "topk", (_norm_axis(axis, self.ndim),))
        if not 0 <= k <= n:
            raise ValueError(f"topk's k must be in [0, {n}] for an axis of size {n}, got {k}")
        if not self.ndim:  # (one element: k of 0 or 1 of it, along one axis)
            self._sort(axis, largest, True)  # (checks the axis)
            v, i = self.reshape(1).topk(k, 0, largest)
            return (v.reshape(()), i.reshape(())) if k else (v, i)
        values, indices = self.sort(axis, descending=largest)
        ax = _norm_axis(axis, self.ndim)
        window = tuple((0, k) if i == ax else None for i in range(self.ndim))
        return values.shrink(window), indices.shrink(window)

    def _sort(self, axis, descending: bool, indices: bool) -> Tensor:
        if axis is None:  # (numpy's: the flattened tensor)
            return self.flatten()._sort(0, descending, indices)
        if not self.ndim:  # (one element: itself, at position 0; axis 0 or -1, PyTorch's)
            if isinstance(axis, bool) or axis not in (0, -1):
                raise ShapeError(f"axis {axis!r} is out of range for a 0-d tensor (0 or -1)")
            return Tensor.zeros((), dtype=dtypes.int64, device=self.device) if indices \
                else self._copy()
        ax = _norm_axis(axis, self.ndim)
        _static_dims(self, "sort", (ax,))
        return Tensor(UOp(Ops.SORT, dtypes.int64 if indices else self.dtype, (self.uop,),
                          (ax, bool(descending), indices)))

    def _count(self, axis) -> int | Tensor:
        """How many elements a reduction over `axis` sees: an int, or a scalar tensor when a
        reduced dimension is symbolic."""
        dims = [self.shape[a] for a in self._axes(axis)]
        n = prod(d for d in dims if not isinstance(d, Sym))
        syms = [d for d in dims if isinstance(d, Sym)]
        if not syms:
            return n
        out: Tensor | int = n
        for d in syms:
            out = out * (Tensor(self._binds([d.name])[0]) + d.add if d.add
                         else Tensor(self._binds([d.name])[0]))
        return out

    @_numpy_names
    @_half_in_float32
    def norm(self, ord=None, axis=None, keepdim: bool = False) -> Tensor:  # noqa: A002
        """numpy's ``np.linalg.norm``. A vector norm along `axis` (an int; None: all elements
        as one vector): `ord` None or 2 the Euclidean norm, 1 the sum of magnitudes, inf /
        -inf the largest / smallest magnitude, 0 the count of nonzeros, any other number
        ``sum(|x|**ord) ** (1 / ord)``. A matrix norm over a pair of axes (rows, columns;
        also a 2-d tensor with an `ord` and no axis): None or "fro" the Frobenius norm, 1 /
        -1 the largest / smallest column sum of magnitudes, inf / -inf the largest /
        smallest row sum (2, -2 and "nuc" need singular values: refused). Ints and bools
        are computed in float64 (squares of big ints pass float32's range) and give float32
        (numpy's float64); 16-bit floats are computed in float32; each rounded once."""
        if not self.dtype.is_float:
            return self.cast(dtypes.float64).norm(ord, axis, keepdim).cast(dtypes.default_float)
        if isinstance(axis, (tuple, list)) and len(axis) == 1:
            axis = axis[0]
        if isinstance(axis, (tuple, list)) or (axis is None and ord is not None and
                                                 self.ndim >= 2):
            if axis is None and self.ndim > 2:
                raise ValueError(f"norm with an ord of a tensor of {self.ndim} axes: give "
                                 "one axis (a vector norm) or two (a matrix norm)")
            return self._matrix_norm(ord, (0, 1) if axis is None else tuple(axis), keepdim)
        if isinstance(ord, str):
            raise ValueError(f"norm's ord {ord!r} is a matrix norm: give two axes or a 2-d "
                             "tensor")
        if ord is not None and (isinstance(ord, (bool, np.bool_)) or
                                not isinstance(ord, (int, float, np.integer, np.floating))):
            raise ValueError(f"norm's ord must be a number or None, got {ord!r}")
        if ord is not None and self.ndim == 0:
            raise ValueError("norm with an ord of a 0-d tensor: it has no axis (numpy refuses "
                             "it too)")
        if axis is not None and self.ndim == 0:
            raise ShapeError(f"norm along axis {axis!r} of a 0-d tensor: it has no axis (numpy "
                             "refuses it too)")
        x = (self.flatten() if axis is None else self)._float()
        ax = None if axis is None else _norm_axis(axis, self.ndim)
        a = x.abs()
        n = x.shape[0 if ax is None else ax]
        if ord is None or ord == 2:
            out = _root_of_sum((x * x).sum(ax, keepdim=True))
        elif ord == math.inf and isinstance(n, int) and n == 0:
            out = a.sum(ax, keepdim=True)  # (nothing: 0, as numpy's)
        elif ord == math.inf:  # (a symbolic axis may be bound to 0: no magnitude is below 0)
            out = a.max(ax, keepdim=True)
            out = out if isinstance(n, int) else out.maximum(0.0)
        elif ord == -math.inf:
            out = a.min(ax, keepdim=True)
        elif ord == 0:
            out = (x != 0).sum(ax, keepdim=True).cast(x.dtype)
        elif ord == 1:
            out = a.sum(ax, keepdim=True)
        else:  # (the powers of zeros chosen, not computed: their gradient is 0, not nan)
            zero = a == 0
            pw = zero.where(0.0 if ord > 0 else math.inf, (a + zero.cast(a.dtype)) ** float(ord))
            total = pw.sum(ax, keepdim=True)
            out = _root_of_sum(total, float(ord)) if ord > 0 else total ** (1.0 / float(ord))
        if axis is None:
            return out.reshape((1,) * self.ndim if keepdim else ())
        return out if keepdim else out.squeeze(ax)

    def _matrix_norm(self, ord, axes: tuple, keepdim: bool) -> Tensor:  # noqa: A002
        if len(axes) != 2:
            raise ValueError(f"norm takes one axis or two, got {axes!r}"[:200])
        rows, cols = (_norm_axis(a, self.ndim) for a in axes)
        if rows == cols:
            raise ValueError(f"norm's two axes name one axis twice: {axes!r}")
        a = self._float().abs()
        if ord is None or ord == "fro":
            out = _root_of_sum((a * a).sum((rows, cols), keepdim=True))
        elif isinstance(ord, str) or isinstance(ord, (bool, np.bool_)) or \
                ord not in (1, -1, math.inf, -math.inf):
            raise ValueError(f"norm's matrix ord must be None, 'fro', 1, -1, inf or -inf, got "
                             f"{ord!r} (2, -2 and 'nuc' need singular values)"[:200])
        else:  # (column sums for 1 / -1, row sums for inf / -inf; then their max or min)
            along, across = (rows, cols) if abs(ord) == 1 else (cols, rows)
            sums = a.sum(along, keepdim=True)
            if ord < 0:  # (of no sums: an error, numpy's too)
                out = sums.min(across, keepdim=True)
            elif self.shape[across] == 0:  # (numpy's largest of no sums: 0)
                out = sums.sum(across, keepdim=True)
            else:  # (a symbolic axis may be bound to 0: no sum is below 0)
                out = sums.max(across, keepdim=True)
                out = out if isinstance(self.shape[across], int) else out.maximum(0.0)
        return out if keepdim else out.squeeze(tuple(sorted((rows, cols))))

    @_numpy_names
    @_half_in_float32
    def mean(self, axis=None, keepdim: bool = False) -> Tensor:
        """Mean; 16-bit floats accumulate in float32 (as numpy) and come back 16-bit; ints and
        bools are summed in float64 (as numpy's) and give float32 (numpy: float64; tolk's
        default float)."""
        if not self.dtype.is_float:
            return self.cast(dtypes.float64).mean(axis, keepdim).cast(dtypes.default_float)
        n = self._count(axis)
        x = self._float()
        if isinstance(n, Tensor):
            return x.sum(axis, keepdim) / n.cast(x.dtype)
        return x.sum(axis, keepdim) / n  # a division, as numpy's (not a product with 1/n)

    @_numpy_names
    @_half_in_float32
    def var(self, axis=None, keepdim: bool = False, correction: int = 1) -> Tensor:
        """Variance with `correction` (tinygrad and PyTorch default 1; numpy's ddof=0 is 0);
        16-bit floats are computed in float32, ints and bools in float64 (as numpy's) and give
        float32 (numpy: float64; tolk's default float). A correction of the count or more
        divides by zero (inf, or nan where every value is equal), as numpy's."""
        if not self.dtype.is_float:
            return self.cast(dtypes.float64).var(axis, keepdim, correction).cast(
                dtypes.default_float)
        if isinstance(correction, (bool, np.bool_)) or \
                not isinstance(correction, (int, float, np.integer, np.floating)):
            raise TypeError(f"var's correction must be a number, got {correction!r}")
        n = self._count(axis)
        x = self._float()
        d = x - x.mean(axis, keepdim=True)
        div = n - correction
        if isinstance(div, Tensor):  # (past the count: a division by zero, as below)
            return (d * d).sum(axis, keepdim) / div.maximum(0).cast(x.dtype)
        if div <= 0:  # numpy (ddof >= n): a division by zero, inf (or nan where all are equal)
            return (d * d).sum(axis, keepdim) / 0.0
        return (d * d).sum(axis, keepdim) / div

    @_numpy_names
    @_half_in_float32
    def std(self, axis=None, keepdim: bool = False, correction: int = 1) -> Tensor:
        """The square root of `var` (ints and bools: in float64, then float32)."""
        if not self.dtype.is_float:
            return self.cast(dtypes.float64).std(axis, keepdim, correction).cast(
                dtypes.default_float)
        return _root_of_sum(self.var(axis, keepdim, correction))

    def _arg(self, op: Ops, axis, keepdim: bool) -> Tensor:
        """Index (int64) of the first extreme value along `axis`; a NaN counts as extreme."""
        if axis is None or self.ndim == 0 and not isinstance(axis, (tuple, bool, np.bool_)) \
                and axis in (0, -1):
            out = self.flatten()._arg(op, 0, False)
            return out.reshape((1,) * self.ndim) if keepdim else out
        ax = _norm_axis(axis, self.ndim)
        name = f"arg{op.name.lower()}"
        _static_dims(self, name, (ax,))
        if self.shape[ax] == 0:
            raise ShapeError(f"{name} over a zero-size axis of shape {self.shape} has no answer")
        arg_op = Ops.ARGMAX if op is Ops.MAX else Ops.ARGMIN  # one reduction, numpy's own
        r = Tensor(UOp(Ops.REDUCE_AXIS, dtypes.int64, (self.uop,), (arg_op, (ax,))))
        return r if keepdim else r.reshape(self.shape[:ax] + self.shape[ax + 1:])

    @_numpy_names
    def argmax(self, axis=None, keepdim: bool = False) -> Tensor:
        """Index of the first maximum (int64, as numpy); axis None flattens."""
        return self._arg(Ops.MAX, axis, keepdim)

    @_numpy_names
    def argmin(self, axis=None, keepdim: bool = False) -> Tensor:
        """Index of the first minimum (int64, as numpy); axis None flattens."""
        return self._arg(Ops.MIN, axis, keepdim)

    @_numpy_names
    @_half_in_float32
    def softmax(self, axis: int = -1) -> Tensor:
        """Softmax over `axis`; 16-bit floats are computed in float32 (the sum of many small
        terms would round away in 16 bits) and come back 16-bit."""
        if not self.ndim:  # a 0-d tensor as its one element (axis 0 or -1): 1
            _norm_axis(axis, 1, 0)
            return self.reshape(1).softmax(0).reshape(())
        x = self._float()
        if self.shape[_norm_axis(axis, self.ndim)] == 0:  # nothing to normalise (no max)
            return x
        e = (x - x.max(axis, keepdim=True)).exp()
        return e / e.sum(axis, keepdim=True)

    @_numpy_names
    @_half_in_float32
    def log_softmax(self, axis: int = -1) -> Tensor:
        """Log of the softmax over `axis`; 16-bit floats are computed in float32."""
        if not self.ndim:  # a 0-d tensor as its one element (axis 0 or -1): 0
            _norm_axis(axis, 1, 0)
            return self.reshape(1).log_softmax(0).reshape(())
        x = self._float()
        if self.shape[_norm_axis(axis, self.ndim)] == 0:
            return x
        s = x - x.max(axis, keepdim=True)
        return s - s.exp().sum(axis, keepdim=True).log()

    @_numpy_names
    def logsumexp(self, axis=None, keepdim: bool = False) -> Tensor:
        """``log(sum(exp(x)))`` over `axis`, computed from the maximum so large values do
        not overflow (scipy's logsumexp): -inf where every value is -inf, inf where one is
        inf, nan where one is nan; ints and bools in float32, 16-bit floats in float32 and
        back."""
        x = self._float()
        if x.dtype.itemsize == 2:
            return x.cast(dtypes.float32).logsumexp(axis, keepdim).cast(x.dtype)
        if any(isinstance(d, int) and d == 0 for d in x.shape):  # (a symbolic size bound to
            return x.exp().sum(axis, keepdim).log()  # 0 takes the path below) log(0) = -inf
        m = x.max(axis, keepdim=True)
        m = m._finite().where(m, 0)  # all -inf (or an inf, a nan): nothing to subtract
        out = (x - m).exp().sum(axis, keepdim=True).log() + m
        return out if keepdim else out.reshape(x.max(axis).shape)

    def _finite(self) -> Tensor:
        """Whether each element is finite (not inf, not nan), a bool tensor."""
        return (self == self) & (self.abs() != float("inf"))


    def one_hot(self, num_classes: int) -> Tensor:
        """``(..., num_classes)``: 1 where the last index equals this integer tensor's value,
        else 0 (int32, tinygrad's; PyTorch's int64); values outside ``[0, num_classes)`` give
        rows of zeros."""
        if self.dtype.is_float or self.dtype is dtypes.bool:
            raise TypeError(f"one_hot needs an integer tensor, got {self.dtype.name}")
        if isinstance(num_classes, (bool, np.bool_)) \
                or not isinstance(num_classes, (int, np.integer)):
            raise TypeError(f"one_hot's number of classes must be an int (a static size), got "
                            f"{type(num_classes).__name__} {num_classes!r}"[:200])
        if num_classes < 0:
            raise ValueError(f"one_hot needs a number of classes >= 0, got {num_classes!r}")
        classes = Tensor.arange(int(num_classes), dtype=dtypes.int64, device=self.device)
        return (self.unsqueeze(-1).cast(dtypes.int64) == classes).cast(dtypes.default_int)

    def _band(self, k: int, lower: bool) -> Tensor:
        if self.ndim < 2:
            raise ShapeError(f"{'tril' if lower else 'triu'} needs at least 2 axes, got "
                             f"shape {self.shape}")
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
            raise TypeError(f"the diagonal must be an int, got {k!r}")
        _static_dims(self, "tril/triu", (-2, -1))
        r, c = self.shape[-2:]
        k = min(max(int(k), -r), c)  # (past the corners: everything or nothing, no overflow)
        rows = Tensor.arange(r, dtype=dtypes.int64, device=self.device).reshape(r, 1)
        cols = Tensor.arange(c, dtype=dtypes.int64, device=self.device).reshape(1, c)
        keep = (cols <= rows + int(k)) if lower else (cols >= rows + int(k))
        return keep.where(self, Tensor.zeros((), dtype=self.dtype, device=self.device))

    def tril(self, diagonal: int = 0) -> Tensor:
        """The lower triangle of the last two axes (numpy's tril: a new tensor, zeros above
        the `diagonal`-th diagonal)."""
        return self._band(diagonal, True)

    def triu(self, diagonal: int = 0) -> Tensor:
        """The upper triangle of the last two axes (numpy's triu)."""
        return self._band(diagonal, False)

    def split(self, sizes, dim: int = 0) -> tuple[Tensor, ...]:
        """Views along `dim` (PyTorch's split): pieces of `sizes` each (an int: the last one
        may be smaller) or of the sizes listed (they must add up to the axis)."""
        if self.ndim == 0:
            raise ShapeError("split needs a tensor with at least one axis, got a 0-d one")
        d = _norm_axis(dim, self.ndim)
        _static_dims(self, "split", (d,))
        n = self.shape[d]
        if isinstance(sizes, (int, np.integer)) and not isinstance(sizes, bool):
            if sizes < 0 or (sizes == 0 and n):
                raise ValueError(f"split needs a size > 0, got {sizes}")
            sizes = [min(int(sizes), n - i) for i in range(0, n, int(sizes) or 1)] or [0]
        if not isinstance(sizes, (list, tuple)):
            raise TypeError(f"split takes an int size or a list of sizes, got "
                            f"{type(sizes).__name__} {sizes!r}"[:200])
        sizes = list(sizes)
        if any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0
               for v in sizes) or sum(sizes) != n:
            raise ValueError(f"split sizes {sizes} must be ints >= 0 adding up to {n}")
        out, start = [], 0
        for v in sizes:
            out.append(self.shrink(tuple((start, start + int(v)) if i == d else None
                                         for i in range(self.ndim))))
            start += int(v)
        return tuple(out)

    def chunk(self, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
        """`chunks` views along `dim` of ceil(n / chunks) each (PyTorch's chunk: fewer when
        they cover the axis sooner)."""
        if isinstance(chunks, bool) or not isinstance(chunks, (int, np.integer)) or chunks <= 0:
            raise ValueError(f"chunk needs a number of chunks > 0, got {chunks!r}")
        if self.ndim == 0:
            raise ShapeError("chunk needs a tensor with at least one axis, got a 0-d one")
        d = _norm_axis(dim, self.ndim)
        _static_dims(self, "chunk", (d,))
        n = self.shape[d]
        if n == 0:  # an empty axis: `chunks` empty pieces (PyTorch's)
            return self.split([0] * int(chunks), d)
        return self.split(-(-n // int(chunks)), d)

    @_half_in_float32
    def layernorm(self, axis=-1, eps: float = 1e-5) -> Tensor:
        """Normalise over `axis` to zero mean and unit variance (no affine); 16-bit floats are
        normalised in float32."""
        x = self._float()
        y = x - x.mean(axis, keepdim=True)
        return y * ((y * y).mean(axis, keepdim=True) + eps).rsqrt()

    # -- movement -----------------------------------------------------------------------------

    def _mov(self, op: Ops, arg, binds: tuple[UOp, ...] = ()) -> Tensor:
        """A movement op; `binds` (the BIND nodes giving symbolic bounds their values) ride
        along as extra sources so a symbolic shape can always be evaluated."""
        with registry_lock:  # (a realize in another thread may make `self` a view meanwhile)
            src = self.uop
            # a view of a lazy tensor joins the family of the one it views
            fam = _family_of(self) if self in _lazy else None
            if op is Ops.SHRINK and src.op is Ops.SHRINK and len(src.src) == 1 and \
                    (fam is None or fam is not self._kids) and not syms_in((src.arg, arg)):
                # a window of a window is one window (`v = v[1:]` in a loop keeps its graph
                # small); not the view of a lazy tensor with a family of its own: its views
                # are found to be its views by walking down to its node
                arg = tuple((b0 + b, b0 + e) for (b0, _), (b, e) in zip(src.arg, arg))
                src = src.src[0]
            out = Tensor(UOp(op, self.dtype, (src, *binds), arg))
            if fam is not None:
                _join(out, fam)
        return out

    def reshape(self, *shape) -> Tensor:
        shape = _shape_arg(shape, allow_neg=True)
        if sum(1 for d in shape if d == -1) > 1:
            raise ShapeError(f"reshape can infer only one dimension, got {shape}")
        old_syms, old_n = _split(self.shape)
        new_syms, new_n = _split(tuple(d for d in shape if d != -1))
        if -1 in shape and len(old_syms) == len(new_syms) + 1 and old_n == new_n:
            # -1 stands for the one symbolic dimension left out (``x.reshape(-1, 1)`` of a
            # tensor of symbolic length), where it keeps the symbolic dims' order
            missing = list(old_syms)  # (a multiset: (n, n) into (-1, n) leaves one n)
            for d in new_syms:
                if d in missing:
                    missing.remove(d)
            guess = tuple(missing[0] if d == -1 else d for d in shape) if missing else shape
            if _split(guess)[0] == old_syms:
                shape, new_syms = guess, old_syms
        if old_syms != new_syms:
            raise ShapeError(f"cannot reshape {self.shape} into {shape}: "
                             "symbolic dimensions must stay")
        if -1 in shape:
            if new_n == 0 or old_n % new_n:
                raise ShapeError(f"cannot reshape {self.shape} into {shape}")
            shape = tuple(old_n // new_n if d == -1 else d for d in shape)
        elif new_n != old_n:
            raise ShapeError(f"cannot reshape {self.shape} ({old_n} elements) into {shape} "
                             f"({new_n})")
        if shape == self.shape:
            return self
        with registry_lock:  # (a realize in another thread may make `self` a view meanwhile)
            u, lazy, parent = self.uop, self in _lazy, self._parent
            if u.op is Ops.RESHAPE and len(u.src) == 1 and shape_of(u.src[0]) != shape \
                    and (not lazy or parent is not None and parent() is not None):
                # a reshape of a reshape is one reshape of the first one's source; not when
                # `self` is a computed tensor of its own (its views must keep passing through
                # its node)
                out = Tensor(UOp(Ops.RESHAPE, self.dtype, u.src, shape))
                if lazy:
                    _join(out, parent)
                return out
        return self._mov(Ops.RESHAPE, shape)

    view = reshape

    def permute(self, *order) -> Tensor:
        if len(order) == 1 and isinstance(order[0], (tuple, list)):
            order = tuple(order[0])
        if not all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in order):
            raise TypeError(f"permute order must be ints, got {order}")
        order = tuple(_norm_axis(int(a), self.ndim) for a in order)
        if sorted(order) != list(range(self.ndim)):
            raise ShapeError(f"permute order {order} is not a permutation of {self.ndim} axes")
        return self if order == tuple(range(self.ndim)) else self._mov(Ops.PERMUTE, order)

    def transpose(self, dim0: int = 1, dim1: int = 0) -> Tensor:
        if not self.ndim:  # as numpy's swapaxes: a 0-d tensor has no axis to swap
            raise ShapeError(f"transpose({dim0}, {dim1}) of a 0-d tensor: it has no axes")
        return self.permute(_swapped(self.ndim, dim0, dim1))

    @property
    def T(self) -> Tensor:
        return self.permute(tuple(reversed(range(self.ndim))))

    def swapaxes(self, axis1: int, axis2: int) -> Tensor:
        """numpy's swapaxes (PyTorch's transpose and swapdims)."""
        return self.transpose(axis1, axis2)

    swapdims = swapaxes

    def moveaxis(self, source, destination) -> Tensor:
        """numpy's moveaxis: the axes `source` (an int or a sequence) moved to the places
        `destination`, the others kept in their order; also ``movedim``."""
        src = tuple(source) if isinstance(source, (tuple, list)) else (source,)
        dst = tuple(destination) if isinstance(destination, (tuple, list)) else (destination,)
        if len(src) != len(dst):
            raise ValueError(f"moveaxis: {len(src)} source axes but {len(dst)} destinations")
        if self.ndim == 0 and src:
            raise ShapeError("moveaxis of a 0-d tensor: it has no axes")
        src = tuple(_norm_axis(a, self.ndim) for a in src)
        dst = tuple(_norm_axis(a, self.ndim) for a in dst)
        for what, axes in (("source", src), ("destination", dst)):
            if len(set(axes)) != len(axes):
                raise ValueError(f"moveaxis: repeated axis in {what} {axes}")
        order = [a for a in range(self.ndim) if a not in src]
        for d, a in sorted(zip(dst, src)):
            order.insert(d, a)
        return self.permute(tuple(order))

    movedim = moveaxis

    def ravel(self) -> Tensor:
        """numpy's ravel: the elements in C order, 1-d (``flatten()``)."""
        return self.flatten()

    def unflatten(self, dim: int, sizes) -> Tensor:
        """PyTorch's unflatten: axis `dim` split into `sizes` (one of them may be -1)."""
        if self.ndim == 0:
            raise ShapeError("unflatten of a 0-d tensor: it has no axes")
        d = _norm_axis(dim, self.ndim)
        sizes = tuple(sizes) if isinstance(sizes, (tuple, list)) else (sizes,)
        if not sizes:
            raise ShapeError("unflatten needs at least one size")
        if not all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
                   for v in sizes):
            raise TypeError(f"unflatten's sizes must be ints, got {sizes!r}")
        sizes = tuple(int(v) for v in sizes)
        _static_dims(self, "unflatten", (d,))
        known = [s for s in sizes if s != -1]
        if len(sizes) - len(known) > 1:
            raise ShapeError(f"unflatten takes at most one -1, got {sizes}")
        if -1 not in sizes and prod(sizes) != self.shape[d] or \
                -1 in sizes and (prod(known) == 0 or self.shape[d] % prod(known)):
            raise ShapeError(f"unflatten of axis {dim} (size {self.shape[d]}) into {sizes}")
        return self.reshape(self.shape[:d] + sizes + self.shape[d + 1:])

    def diagonal(self, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Tensor:
        """numpy's diagonal: the elements ``[i, i + offset]`` of axes `axis1` and `axis2`,
        along a new last axis (the other axes first, in order); a new tensor, not a view."""
        offset = int_arg(offset, "diagonal's offset")
        if self.ndim < 2:
            raise ShapeError(f"diagonal needs at least 2 axes, got shape {self.shape}")
        a1, a2 = _norm_axis(axis1, self.ndim), _norm_axis(axis2, self.ndim)
        if a1 == a2:
            raise ValueError(f"diagonal's axis1 and axis2 are the same axis ({a1})")
        _static_dims(self, "diagonal", (a1, a2))
        x = self.moveaxis((a1, a2), (-2, -1))
        n, m = x.shape[-2:]
        lead = tuple((0, s) for s in x.shape[:-2])
        rows = (min(-offset, n), n) if offset < 0 else (0, n)
        cols = (min(offset, m), m) if offset >= 0 else (0, m)
        x = x.shrink(lead + (rows, cols))
        k, outer = min(x.shape[-2:]), x.shape[:-2]
        x = x.shrink(lead + ((0, k), (0, k))).reshape(outer + (k * k,))
        x = x.pad(tuple((0, 0) for _ in lead) + ((0, k),))  # rows of k + 1: column 0 is it
        x = x.reshape(outer + (k, k + 1)).shrink(lead + ((0, k), (0, 1)))
        return x.reshape(outer + (k,))._copy()

    def trace(self, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Tensor:
        """numpy's trace: the sum of `diagonal` (summed as `sum` sums: ints in int64)."""
        return self.diagonal(offset, axis1, axis2).sum(-1)

    def diff(self, n: int = 1, axis: int = -1, prepend=None, append=None) -> Tensor:
        """numpy's diff: the `n`-th differences along `axis` (``x[1:] - x[:-1]``; for bools
        ``!=``, as numpy's), after `prepend` and `append` (scalars or tensors) join it (for
        n of 1 or more; a scalar is weak, as a Python scalar next to a tensor is, where numpy
        makes it an int64 or float64 array first: 0.5 before an int tensor gives float32)."""
        n = int_arg(n, "diff's n")
        if n < 0:
            raise ValueError(f"diff's order n must not be negative, got {n}")
        if self.ndim == 0:
            raise ShapeError("diff of a 0-d tensor: it has no axes")
        ax = _norm_axis(axis, self.ndim)
        _static_dims(self, "diff", (ax,))
        if n == 0:  # (prepend and append unused, as numpy's)
            return self._copy()
        x = self
        if prepend is not None or append is not None:
            ends = [v for v in (prepend, append) if v is not None]
            d = functools.reduce(least_upper_dtype, [self.dtype] + [v.dtype for v in ends
                                                                    if isinstance(v, Tensor)])
            for v in ends:  # (a scalar next to the tensors is weak)
                if not isinstance(v, Tensor):
                    d = _scalar_dtype(v, d)
            side = self.shape[:ax] + (1,) + self.shape[ax + 1:]
            parts = []
            for v in (prepend, self, append):
                if v is None:
                    continue
                if not isinstance(v, Tensor):
                    v = Tensor.full(side, v, d, self.device)
                elif v.ndim == 0:
                    v = v.reshape((1,) * self.ndim)._broadcast_to(side)
                parts.append(v.cast(d))
            x = parts[0].cat(*parts[1:], dim=ax)
        for _ in range(n):
            size = x.shape[ax]
            if size == 0:
                break
            hi = tuple((1, size) if i == ax else (0, s) for i, s in enumerate(x.shape))
            lo = tuple((0, size - 1) if i == ax else (0, s) for i, s in enumerate(x.shape))
            x = x.shrink(hi) != x.shrink(lo) if x.dtype is dtypes.bool else \
                x.shrink(hi) - x.shrink(lo)
        return x if x is not self else self._copy()

    def expand(self, *shape) -> Tensor:
        shape = _shape_arg(shape, allow_neg=True)
        if len(shape) < self.ndim:
            raise ShapeError(f"cannot expand {self.shape} to fewer dimensions {shape}")
        if any(s == -1 for s in shape[:len(shape) - self.ndim]):
            raise ShapeError(f"cannot expand {self.shape} to {shape}: -1 (keep the size) in a "
                             "new leading dimension")
        x = (self.reshape((1,) * (len(shape) - self.ndim) + self.shape) if len(shape) > self.ndim
             else self)
        new = tuple(o if s == -1 else s for s, o in zip(shape, x.shape))
        for o, s in zip(x.shape, new):
            if o != s and o != 1:
                raise ShapeError(f"cannot expand {self.shape} to {shape}")
        return x if new == x.shape else x._mov(Ops.EXPAND, new)

    def pad(self, padding, value: Scalar = 0, mode: str = "constant") -> Tensor:
        """Pad with `value`: ``padding`` is ``((before, after), ...)`` per axis (None = no pad),
        or a flat tuple of ints in PyTorch order (last axis first). `mode` other than
        "constant" pads with the tensor's own values, as ``np.pad``'s modes: "reflect"
        (mirrored about the edge value), "symmetric" (mirrored, the edge value repeated),
        "edge" (PyTorch's "replicate") and "wrap" ("circular"); widths past an axis's size
        repeat the pattern (numpy's; PyTorch refuses them), widths must be >= 0 and an empty
        axis cannot be padded so (ValueErrors, numpy's). The result keeps this
        tensor's dtype, `value` cast to it as ``Tensor.full`` casts (7.5 pads an int tensor
        with 7, as ``np.pad``; a value outside the dtype's range, -2 for uint8 say, is a
        ValueError, numpy 2's rule for a Python int next to an array, where ``np.pad`` wraps
        some such values and refuses others). Negative widths cut. As ``np.pad``, the result
        is a new tensor, not a view: writes into it stay in it, and later writes into this
        tensor do not reach it (it is computed lazily: no copy is made unless one of them is
        written)."""
        if mode != "constant":
            if not (isinstance(value, (int, float, np.number)) and value == 0):
                raise ValueError(f"pad in mode {mode!r} takes no value (numpy refuses one too), "
                                 f"got {value!r}"[:200])
            return self._pad_from_values(padding, mode)
        return self._pad(padding, value)._copy()

    def _pad_from_values(self, padding, mode) -> Tensor:
        kinds = {"reflect": "reflect", "symmetric": "symmetric", "edge": "edge",
                 "replicate": "edge", "wrap": "wrap", "circular": "wrap"}
        if mode not in kinds:
            raise ValueError(f"pad's mode must be 'constant', 'reflect', 'symmetric', 'edge' "
                             f"('replicate') or 'wrap' ('circular'), got {mode!r}"[:200])
        pads = _pad_arg(padding, self.ndim)
        x = self
        for axis, (before, after) in enumerate(pads):
            if not before and not after:
                continue
            if before < 0 or after < 0:
                raise ValueError(f"pad in mode {mode!r} takes widths >= 0, got "
                                 f"{(before, after)} for axis {axis}")
            _static_dims(x, "pad", (axis,))
            n = x.shape[axis]
            if n == 0:
                raise ValueError(f"pad in mode {mode!r} cannot extend the empty axis {axis} "
                                 f"(shape {x.shape})")
            pieces = []
            for start, length, step in _index_runs(_pad_positions(n, before, after, kinds[mode])):
                lo = start if step >= 0 else start - length + 1
                piece = x.shrink(tuple((lo, lo + (1 if step == 0 else length)) if a == axis
                                       else None for a in range(x.ndim)))
                if step < 0:
                    piece = piece.flip(axis)
                elif step == 0 and length > 1:
                    piece = piece.expand(tuple(length if a == axis else d
                                               for a, d in enumerate(x.shape)))
                pieces.append(piece)
            x = Tensor.cat(pieces, dim=axis) if len(pieces) > 1 else pieces[0]
        return x._copy()  # (a new tensor also where an axis was one piece, a view)

    def _pad(self, padding, value: Scalar = 0) -> Tensor:
        """`pad`, as a view where `value` is 0 (internal: a strided slice is one)."""
        pads = _pad_arg(padding, self.ndim)
        if any(b < 0 or a < 0 for b, a in pads):
            x = self.shrink(tuple((max(0, -b), s - max(0, -a))
                                  for (b, a), s in zip(pads, self.shape)))
            return x._pad(tuple((max(0, b), max(0, a)) for b, a in pads), value)
        if all(b == 0 and a == 0 for b, a in pads):
            return self
        out = self._mov(Ops.PAD, pads)
        if value == 0 and not (isinstance(value, (float, np.floating)) and np.signbit(value)):
            return out
        inside = Tensor.ones(self.shape, dtype=dtypes.bool, device=self.device)._mov(Ops.PAD, pads)
        return inside.where(out, Tensor.full((), value, self.dtype, self.device))

    def _copy(self) -> Tensor:
        """A new tensor with this one's values (numpy's copy semantics for `pad`, `repeat`,
        `cat` and ``Tensor(t)``), computed lazily: over a view of a buffer, a cast to its own
        dtype, which kernels read as the view itself (no work) while realizes treat the
        tensor as computed; over a computed graph, another tensor of that graph (an assign
        into either then leaves the other alone)."""
        if not _is_base_state(_base_and_chain(self.uop)) and self.uop.op not in _VIEW_OPS:
            return Tensor(self.uop)  # (a movement op over a computed graph is no tensor's own
        return self._alu(Ops.CAST)  # node: views of it, it dropped, would view what it moves)

    def shrink(self, arg) -> Tensor:
        """Keep ``[start, end)`` per axis (None = all). Bounds may be bound Variables (plus an
        int offset): the result then has a symbolic shape sized at run time."""
        if not isinstance(arg, (tuple, list)):
            raise TypeError(f"shrink takes a (start, end) pair or None per axis, got "
                            f"{type(arg).__name__} {arg!r}"[:200])
        if len(arg) != self.ndim:
            raise ShapeError(f"shrink needs {self.ndim} (start, end) pairs, got {len(arg)}")
        _check_pairs("shrink", tuple(arg))
        binds: dict[str, UOp] = {}
        bounds = []
        for a, size in zip(arg, self.shape):
            if a is None:
                bounds.append((0, size))
                continue
            b, e = a[0], a[1]
            if type(b) is int and type(e) is int and type(size) is int:  # the common case
                if not 0 <= b <= e <= size:
                    raise ShapeError(f"shrink {arg} is out of bounds for shape {self.shape}")
                bounds.append((b, e))
                continue
            b, e = _dim(b, binds), _dim(e, binds)
            if isinstance(b, Sym) and not (isinstance(e, Sym) and e.name == b.name):
                # the size e - b would fall as the variable grows: not a shape tolk can hold
                raise ShapeError(f"shrink {arg} of shape {self.shape}: a variable start {b} "
                                 f"needs an end of the same variable plus an offset, got {e}")
            if not (smin(b) >= 0 and _le(b, e) and _le(e, size)):  # for every value bound
                raise ShapeError(f"shrink {arg} is out of bounds for shape {self.shape} (for "
                                 "some value of its variables)")
            bounds.append((b, e))
        bounds = tuple(bounds)
        if all(b == 0 and e == s for (b, e), s in zip(bounds, self.shape)):
            return self
        return self._mov(Ops.SHRINK, bounds, tuple(binds[k] for k in sorted(binds)))

    def flip(self, axis) -> Tensor:
        axes = self._axes(axis)
        _static_dims(self, "flip", axes)
        axes = tuple(sorted(a for a in axes if self.shape[a] > 1))
        return self._mov(Ops.FLIP, axes) if axes else self

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        if self.ndim == 0:
            for d in (start_dim, end_dim):
                _norm_axis(d, 1, 0)  # a 0-d tensor flattens as one axis: 0 or -1 only
            return self.reshape(1)
        s, e = _norm_axis(start_dim, self.ndim), _norm_axis(end_dim, self.ndim)
        if s > e:
            raise ShapeError(f"flatten of shape {self.shape}: start_dim {start_dim} comes after "
                             f"end_dim {end_dim}")
        if s == e:
            return self
        _static_dims(self, "flatten", range(s, e + 1))
        return self.reshape(self.shape[:s] + (prod(self.shape[s : e + 1]),) + self.shape[e + 1 :])

    def squeeze(self, dim=None) -> Tensor:
        """Drop axes of size 1: all of them, or those of `dim` (an int or a tuple) that have
        size 1 (others stay, as in PyTorch)."""
        if dim is None:
            return self.reshape(tuple(s for s in self.shape if s != 1))
        dims = {_norm_axis(d, self.ndim) for d in (dim if isinstance(dim, tuple) else (dim,))}
        if self.ndim == 0:
            return self
        return self.reshape(tuple(s for i, s in enumerate(self.shape)
                                  if not (i in dims and s == 1)))

    def unsqueeze(self, dim: int) -> Tensor:
        d = _norm_axis(dim, self.ndim + 1, self.ndim)
        return self.reshape(self.shape[:d] + (1,) + self.shape[d:])

    def _slice_step(self, axis: int, start: int, stop: int, step: int) -> Tensor:
        """Elements start, start+step, ... < stop along `axis` (step > 0, 0 <= start <= stop)."""
        if step == 1:  # one shrink (none for the whole axis)
            if start == 0 and stop == self.shape[axis]:
                return self
            return self.shrink(tuple((start, stop) if i == axis else None
                                     for i in range(self.ndim)))
        n = max(0, -(-(stop - start) // step))
        x = self.shrink(tuple((start, start + min(n * step, self.shape[axis] - start))
                              if i == axis else None
                              for i in range(self.ndim)))
        if step == 1 or n == 0:
            return x.shrink(tuple((0, n) if i == axis else None for i in range(self.ndim)))
        if n == 1:  # one element: no pad (a huge step would pad the axis to `step`)
            return x.shrink(tuple((0, 1) if i == axis else None for i in range(self.ndim)))
        x = x._pad(tuple((0, n * step - x.shape[axis]) if i == axis else None
                         for i in range(self.ndim)))
        shp = x.shape
        x = x.reshape(shp[:axis] + (n, step) + shp[axis + 1 :])
        x = x.shrink(tuple((0, 1) if i == axis + 1 else None for i in range(x.ndim)))
        return x.reshape(shp[:axis] + (n,) + shp[axis + 1 :])

    def __getitem__(self, idx) -> Tensor:
        """numpy indexing. Basic: ints, slices (any step), None and Ellipsis give a view.
        Advanced: integer arrays (numpy arrays, lists, integer Tensors) and boolean masks
        give a new tensor, with numpy's rules (`tolk.indexing`: a bool Tensor mask is
        realized, its nonzero() being data; integer Tensor indices stay lazy). A 0-d integer
        array or Tensor is an array to numpy: the int it holds, the result a new tensor."""
        zero_d = any(_zero_d_int(i) for i in (idx if type(idx) is tuple else (idx,)))
        idx = _index_tuple(idx)
        if zero_d and not any(_indexing.is_array_index(i) for i in idx):
            return self[idx]._copy()  # the same place as an int's, not a view
        if any(_indexing.is_array_index(i) for i in idx):
            return _indexing.getitem(self, idx)
        if sum(1 for i in idx if i is Ellipsis) > 1:
            raise IndexError("an index can only have a single ellipsis")
        n_real = sum(1 for i in idx if i is not None and i is not Ellipsis)
        has_ellipsis = any(i is Ellipsis for i in idx)
        if n_real > self.ndim:
            raise IndexError(f"too many indices for a tensor of rank {self.ndim}: {idx}")
        if has_ellipsis:
            k = next(j for j, i in enumerate(idx) if i is Ellipsis)
            idx = idx[:k] + (slice(None),) * (self.ndim - n_real) + idx[k + 1 :]
        else:
            idx = idx + (slice(None),) * (self.ndim - n_real)
        x, axis, out_shape = self, 0, []
        for i in idx:
            if i is None:
                out_shape.append(1)
                continue
            if isinstance(i, (bool, np.bool_)):
                raise IndexError("boolean indices are not supported")
            if _is_bound(i):
                x = x.shrink(tuple((i, i + 1) if a == axis else None for a in range(x.ndim)))
            elif isinstance(i, (int, np.integer)):
                _static_dims(x, "an int index", (axis,))
                size = x.shape[axis]
                j = int(i) + size if i < 0 else int(i)
                if not 0 <= j < size:
                    raise IndexError(f"index {i} is out of bounds for axis {axis} with size {size}")
                x = x.shrink(tuple((j, j + 1) if a == axis else None for a in range(x.ndim)))
            elif isinstance(i, slice) and _is_symbolic_slice(i, x.shape[axis]):
                if i.step not in (None, 1):
                    raise IndexError(f"a slice with a variable bound needs step 1, got {i}")
                size = x.shape[axis]
                start = 0 if i.start is None else i.start
                stop = size if i.stop is None else i.stop
                # a negative int bound counts from the end, as numpy's (size - k: a Sym too)
                start, stop = (size + int(v) if isinstance(v, (int, np.integer)) and
                               not isinstance(v, (bool, np.bool_)) and v < 0 else v
                               for v in (start, stop))
                x = x.shrink(tuple((start, stop) if a == axis else None for a in range(x.ndim)))
                out_shape.append(x.shape[axis])
            elif isinstance(i, slice):
                if not all(v is None or isinstance(v, (int, np.integer)) or
                           hasattr(v, "__index__") for v in (i.start, i.stop, i.step)):
                    raise TypeError(f"slice bounds and step must be ints, None or bound "
                                     f"Variables (a step an int), got {i}")
                start, stop, step = i.indices(x.shape[axis])
                if step < 0:
                    n = len(range(start, stop, step))
                    x = x.flip(axis)
                    size = x.shape[axis]
                    start = size - 1 - start
                    x = x._slice_step(axis, start, start + n * (-step), -step) if n else \
                        x.shrink(tuple((0, 0) if a == axis else None for a in range(x.ndim)))
                else:
                    x = x._slice_step(axis, start, max(start, stop), step)
                out_shape.append(x.shape[axis])
            else:
                raise IndexError(f"unsupported index {i!r}: use ints, slices, None or ...")
            axis += 1
        return x.reshape(tuple(out_shape))

    def __setitem__(self, idx, value) -> None:
        """``x[idx] = value``: an assign into the view ``x[idx]``; a tensor of another dtype
        is cast to x's first, as numpy's setitem casts an array (`assign` wants the dtype).
        As in numpy, a list deeper than the view, or a list or array into one element, is a
        ValueError (`_check_sequence_value`).
        With integer arrays or boolean masks in `idx`, numpy's advanced assignment
        (`tolk.indexing.setitem`: ``x[mask] = scalar`` is a lazy select; other forms realize
        their indices)."""
        idx = _index_tuple(idx)
        if any(_indexing.is_array_index(i) for i in idx):
            _indexing.setitem(self, idx, value)
            return
        if isinstance(value, Tensor) and value.dtype is not self.dtype:
            value = value.cast(self.dtype)
        target = self[idx]
        _check_sequence_value(target.ndim, value, idx, self.ndim)
        target.assign(value)

    def cat(self, *others: Tensor, dim: int = 0) -> Tensor:
        """Concatenate along `dim` (numpy's concatenate: a new tensor, dtypes promoted);
        ``Tensor.cat([a, b])`` takes a list, as `stack` does."""
        ts = ((*self, *others) if isinstance(self, (list, tuple)) else (self, *others))
        if not ts:
            raise ValueError("cat needs at least one tensor")
        _all_tensors("cat", ts)
        self = ts[0]
        if self.ndim == 0:
            raise ShapeError("0-d tensors cannot be concatenated (stack them, or reshape to 1-d)")
        d = _norm_axis(dim, self.ndim)
        for t in ts:
            if t.ndim != self.ndim \
                    or any(a != b for i, (a, b) in enumerate(zip(t.shape, self.shape)) if i != d):
                raise ShapeError(f"cat along axis {d} needs equal other dims, "
                                 f"got {[t.shape for t in ts]}")
        for t in ts:
            _static_dims(t, "cat", (d,))
        devs = {device_of(t.uop) for t in ts} - {None}
        if len(devs) > 1:  # (checked before empty parts are left out)
            raise DeviceError(f"cat of tensors on different devices: {sorted(devs)}")
        dt = least_upper_dtype(*(t.dtype for t in ts))
        total = sum(t.shape[d] for t in ts)
        out, off = None, 0
        parts = [t for t in ts if t.shape[d] != 0] or [ts[0]]  # an empty part adds only +0.0s
        for t in parts:
            p = t.cast(dt)._pad(tuple((off, total - off - t.shape[d]) if i == d else None
                                      for i in range(self.ndim)))
            out = p if out is None else out + p
            off += t.shape[d]
        if len(parts) == 1:
            return out._copy()  # of one tensor too, a new tensor (as np.concatenate)
        # the sum of disjoint pads marked as a concatenation (a cast to its own dtype, no
        # work): kernels copy each part into its region (-0.0 stays, as np.concatenate
        # keeps it), where an add of +0.0 pads would make it +0.0
        return Tensor(UOp(Ops.CAST, out.dtype, (out.uop,)))

    @staticmethod
    def stack(*ts: Tensor, dim: int = 0) -> Tensor:
        if len(ts) == 1 and isinstance(ts[0], (list, tuple)):
            ts = tuple(ts[0])
        if not ts:
            raise ValueError("stack needs at least one tensor")
        _all_tensors("stack", ts)
        d = _norm_axis(dim, ts[0].ndim + 1, ts[0].ndim)
        return ts[0].unsqueeze(d).cat(*(t.unsqueeze(d) for t in ts[1:]), dim=d)

    def repeat(self, *repeats) -> Tensor:
        """Tile the tensor (``np.tile`` / ``torch.Tensor.repeat``)."""
        reps = _shape_arg(repeats)
        if len(reps) < self.ndim:
            raise ShapeError(f"repeat needs at least {self.ndim} repeats, got {reps}")
        _static_dims(self, "repeat", range(self.ndim))
        x = self.reshape((1,) * (len(reps) - self.ndim) + self.shape)
        base = x.shape
        x = x.reshape(tuple(v for s in base for v in (1, s)))
        x = x.expand(tuple(v for r, s in zip(reps, base) for v in (r, s)))
        return x.reshape(tuple(r * s for r, s in zip(reps, base)))._copy()  # np.tile copies

    def tile(self, reps) -> Tensor:
        """numpy's tile: `reps` (an int or a sequence) copies along each axis; fewer reps than
        axes repeat the last axes, more add leading axes."""
        reps = (reps,) if not isinstance(reps, (tuple, list)) else tuple(reps)
        for r in reps:
            if isinstance(r, (bool, np.bool_)) or not isinstance(r, (int, np.integer)):
                raise TypeError(f"tile's reps must be ints, got {reps}")
            if r < 0:
                raise ValueError(f"tile's reps must not be negative, got {reps}")
        reps = (1,) * (self.ndim - len(reps)) + tuple(int(r) for r in reps)
        return self.repeat(*reps) if reps else self._copy()

    def roll(self, shifts, dims=None, axis=None) -> Tensor:
        """numpy's roll (PyTorch's): elements shifted by `shifts` along `dims` (or numpy's
        `axis`), those pushed past the end coming back at the start; without axes, over the
        flattened tensor, shape kept. Shifts and axes pair up as numpy broadcasts them (one
        shift for many axes, or many shifts summed on one axis)."""
        if axis is not None:
            if dims is not None:
                raise TypeError("roll got both dims and axis")
            dims = axis
        if dims is None:  # (several shifts add up, as numpy's broadcast of them does)
            if isinstance(shifts, (tuple, list)):
                if not shifts:
                    return self._copy()
                flat = self.flatten().roll(tuple(shifts), (0,) * len(shifts))
                return flat.reshape(self.shape)
            return self.flatten().roll(shifts, 0).reshape(self.shape)
        sh = tuple(shifts) if isinstance(shifts, (tuple, list)) else (shifts,)
        ax = tuple(dims) if isinstance(dims, (tuple, list)) else (dims,)
        if len(sh) == 1:
            sh *= len(ax)
        elif len(ax) == 1:
            ax *= len(sh)
        if len(sh) != len(ax):
            raise ValueError(f"roll: {len(sh)} shifts for {len(ax)} axes")
        if self.ndim == 0:
            raise ShapeError("roll of a 0-d tensor along an axis: it has no axes")
        total: dict[int, int] = {}
        for s, a in zip(sh, ax):
            if isinstance(s, (bool, np.bool_)) or not isinstance(s, (int, np.integer)):
                raise TypeError(f"roll's shifts must be ints, got {shifts!r}")
            a = _norm_axis(a, self.ndim)
            total[a] = total.get(a, 0) + int(s)
        _static_dims(self, "roll", total)
        x = self
        for a, s in sorted(total.items()):
            n = x.shape[a]
            if n == 0 or s % n == 0:
                continue
            k = n - s % n  # the first k elements move to the end
            bounds = [(0, d) for d in x.shape]
            head, tail = list(bounds), list(bounds)
            head[a], tail[a] = (0, k), (k, n)
            x = x.shrink(tuple(tail)).cat(x.shrink(tuple(head)), dim=a)
        return x if x is not self else self._copy()  # (a new tensor, as numpy's)

    # -- linear algebra and nn ------------------------------------------------------------------

    @staticmethod
    def einsum(subscripts: str, *operands: Tensor) -> Tensor:
        """numpy's einsum: each operand's axes named by letters (``...`` for the axes left,
        broadcast from the right across operands), the output's named after ``->`` (without
        it: the ellipsis axes, then the letters used once, in alphabetical order); a letter
        repeated in one operand takes its diagonal; letters not in the output are summed
        over. Axes of size 1 broadcast. The result has the operands' promoted dtype (ints
        wrap as numpy's; bools give any of the products; 16-bit floats are multiplied and
        summed in float32 and rounded once), a new tensor (numpy's can be a view)."""
        if not isinstance(subscripts, str):
            raise TypeError(f"einsum's subscripts must be a str, got {type(subscripts).__name__}")
        _all_tensors("einsum", operands)
        if not operands:
            raise ValueError("einsum needs at least one operand")
        spec = subscripts.replace(" ", "")
        lhs, arrow, rhs = spec.partition("->")
        inputs = lhs.split(",")
        if len(inputs) != len(operands):
            raise ValueError(f"einsum {subscripts!r} names {len(inputs)} operands, got "
                             f"{len(operands)}")
        for part in inputs + ([rhs] if arrow else []):
            body = part.replace("...", "", 1)
            if not all(c.isalpha() and c.isascii() for c in body):
                raise ValueError(f"einsum {subscripts!r}: {part!r} holds something other than "
                                 "letters and one '...'")
        ells = [t.ndim - len(p.replace("...", "")) for p, t in zip(inputs, operands)]
        for p, t, e in zip(inputs, operands, ells):
            if e < 0 or (e > 0 and "..." not in p):
                raise ValueError(f"einsum {subscripts!r}: {p!r} names {len(p)} axes of a "
                                 f"tensor of shape {t.shape}")
        ell = [chr(0x100 + i) for i in range(max(ells + [0]))]  # (the ellipsis axes' names)
        labels = [list(p.replace("...", "".join(ell[len(ell) - e:])))
                  for p, e in zip(inputs, ells)]
        if arrow:
            if ell and "..." not in rhs:
                raise ValueError(f"einsum {subscripts!r}: the operands' '...' axes need a '...' "
                                 "in the output (numpy's rule)")
            out = list(rhs.replace("...", "".join(ell)))
            if len(set(out)) != len(out) or any(c not in sum(labels, []) for c in out):
                raise ValueError(f"einsum {subscripts!r}: the output repeats a letter or names "
                                 "one no operand has")
        else:
            counts = collections.Counter(sum(labels, []))
            out = ell + sorted(c for c in counts if counts[c] == 1 and c not in ell)
        xs = []
        for t, names in zip(operands, labels):
            _static_dims(t, "einsum", range(t.ndim))
            while len(set(names)) != len(names):  # a repeated letter: its diagonal, last
                c = next(c for c in names if names.count(c) > 1)
                i = names.index(c)
                j = names.index(c, i + 1)
                if t.shape[i] != t.shape[j]:
                    raise ValueError(f"einsum {subscripts!r}: {c!r} repeats over axes of "
                                     f"sizes {t.shape[i]} and {t.shape[j]}")
                t = t.diagonal(0, i, j)
                names = [n for k, n in enumerate(names) if k not in (i, j)] + [c]
            xs.append((t, names))
        summed = sorted({c for _, names in xs for c in names} - set(out))
        order = out + summed
        sizes: dict[str, int] = {}
        for t, names in xs:
            for c, d in zip(names, t.shape):
                if sizes.get(c, 1) not in (1, d) and d != 1:
                    raise ValueError(f"einsum {subscripts!r}: {c!r} has sizes {sizes[c]} and "
                                     f"{d}")
                sizes[c] = d if sizes.get(c, 1) == 1 else sizes[c]
        dtype = least_upper_dtype(*(t.dtype for t, _ in xs))  # (all at once, as numpy's)
        # 16-bit floats multiply and sum in float32, rounded once (as matmul; numpy's einsum
        # works in float32 too, its sums in another order: within an ulp)
        work = dtypes.float32 if dtype.is_float and dtype.itemsize == 2 else dtype
        full = tuple(sizes[c] for c in order)
        prod_t = None
        for t, names in xs:
            mine = sorted(names, key=order.index)  # (its letters in the result's order)
            t = t.cast(work).permute(tuple(names.index(c) for c in mine))
            shape = tuple(t.shape[mine.index(c)] if c in names else 1 for c in order)
            t = t.reshape(shape)._broadcast_to(full)
            prod_t = t if prod_t is None else prod_t * t
        if summed:
            prod_t = prod_t.sum(tuple(range(len(out), len(order))))
        return prod_t.cast(dtype) if prod_t.dtype is not dtype else prod_t._copy()

    def outer(self, x: Tensor) -> Tensor:
        """numpy's outer: every element of self (flattened) times every element of x
        (flattened), shape (self.numel(), x.numel())."""
        _all_tensors("outer", (self, x))
        return self.reshape(-1, 1) * x.reshape(1, -1)

    def dot(self, w: Tensor) -> Tensor:
        """numpy's dot: a 0-d tensor scales the other; otherwise the last axis of self with
        the second-to-last of `w` (its only one when 1-d), the result shaped self's other axes
        then w's. Where both are 1-d or 2-d, or one is 1-d, that is `matmul` (tinygrad's dot
        is matmul everywhere: it broadcasts batches, where numpy's dot of two stacks pairs
        every matrix of one with every matrix of the other)."""
        _all_tensors("dot", (self, w))
        if self.ndim == 0 or w.ndim == 0:
            return self * w
        if self.ndim == 1 or w.ndim == 1 or (self.ndim == 2 and w.ndim == 2):
            return self.matmul(w)
        a, b = self.shape[:-1], w.shape[:-2]
        if self.shape[-1] != w.shape[-2]:
            raise ShapeError(f"dot of shapes {self.shape} and {w.shape}: {self.shape[-1]} "
                             f"(last axis) != {w.shape[-2]} (second-to-last)")
        x = self.reshape(a + (1,) * len(b) + (1, self.shape[-1]))  # batches a + 1s against b
        return (x @ w).reshape(a + b + w.shape[-1:])

    def matmul(self, w: Tensor) -> Tensor:
        """numpy matmul semantics: 1-D operands are promoted and squeezed; batches broadcast.
        16-bit floats are multiplied and summed in float32 and rounded once (as numpy's
        float16 matmul)."""
        _all_tensors("matmul", (self, w))
        want = least_upper_dtype(self.dtype, w.dtype)
        if want.is_float and want.itemsize == 2:
            return self.cast(dtypes.float32).matmul(w.cast(dtypes.float32)).cast(want)
        if self.ndim == 0 or w.ndim == 0:
            raise ShapeError(f"matmul needs at least 1-D operands, got {self.shape} and {w.shape}")
        x = self.unsqueeze(0) if self.ndim == 1 else self
        y = w.unsqueeze(-1) if w.ndim == 1 else w
        if x.shape[-1] != y.shape[-2]:
            raise ShapeError(f"matmul shapes {self.shape} and {w.shape} do not align: "
                             f"{x.shape[-1]} != {y.shape[-2]}")
        x = x.reshape(x.shape[:-1] + (1,) + x.shape[-1:])
        y = y.transpose(-1, -2)
        y = y.reshape(y.shape[:-2] + (1,) + y.shape[-2:])
        out = (x * y).sum(-1)
        if out.dtype is not least_upper_dtype(self.dtype, w.dtype) and not out.dtype.is_float:
            out = out.cast(least_upper_dtype(self.dtype, w.dtype))
        if self.ndim == 1:
            out = out.squeeze(-2)
        if w.ndim == 1:
            out = out.squeeze(-1)
        return out

    __matmul__ = matmul

    def __rmatmul__(self, x: Tensor) -> Tensor:
        _all_tensors("matmul", (x, self))
        return x.matmul(self)

    def linear(self, weight: Tensor, bias: Tensor | None = None) -> Tensor:
        _all_tensors("linear", (weight,) if bias is None else (weight, bias))
        x = self * weight if weight.ndim == 1 else self @ weight
        return x + bias if bias is not None else x

    def embedding(self, weight: Tensor) -> Tensor:
        """``idx.embedding(weight)``: rows of `weight` (vocab, ...) picked by integer `self`,
        indexed as `gather` (numpy's take)."""
        _all_tensors("embedding", (weight,))
        return weight.gather(self)

    def gather(self, idx=None, index=None, *, dim=None) -> Tensor:
        """``self[idx]`` along axis 0 for an integer tensor `idx`: shape idx.shape + self.shape[1:].
        Called as PyTorch's and tinygrad's ``gather(dim, index)`` (an int first, or ``dim=``
        and ``index=``): `take_along_axis` of `index`, whose sizes off `dim` are at most this
        tensor's (the corner it names), the result shaped as `index`.

        As numpy's take: a negative index counts from the end, and one outside
        ``[-len(self), len(self))`` raises numpy's IndexError when the kernel runs (before it
        stores anything; tinygrad clips, PyTorch raises too)."""
        if index is not None or dim is not None:
            if dim is not None and idx is not None:
                raise TypeError("gather got its dim twice (positionally and as dim=)")
            if isinstance(idx, Tensor):
                raise TypeError("gather(dim, index) takes the dim first (PyTorch's and "
                                "tinygrad's order)")
            return self._gather_dim(idx if dim is None else dim, index)
        if not isinstance(idx, Tensor) or idx.dtype.is_float or idx.dtype is dtypes.bool:
            what = (f"a sharded tensor ({idx!r}): gather it with .to(device) first"
                    if hasattr(idx, "shards") else f"{getattr(idx, 'dtype', type(idx).__name__)}")
            raise TypeError(f"gather indices must be an integer Tensor, got {what}")
        if self.ndim == 0:
            raise ShapeError("gather needs a tensor with at least one axis")
        if self.shape[0] == 0 and idx.numel() != 0:
            raise IndexError(f"gather of {idx.shape} indices from a tensor of shape {self.shape}: "
                             "its first axis is empty, so no index is valid (numpy's take)")
        if idx.device != self.device:
            raise DeviceError(f"gather indices on {idx.device}, values on {self.device}")
        return Tensor(UOp(Ops.GATHER, self.dtype, (self.uop, idx.uop)))

    def _gather_dim(self, dim, index) -> Tensor:
        index = _index_tensor(index, self, "gather")
        d = _norm_axis(dim, self.ndim)
        if index.ndim != self.ndim or any(i > n for a, (i, n) in enumerate(
                zip(index.shape, self.shape)) if a != d):
            raise ShapeError(f"gather along dim {d}: the index {index.shape} must have the "
                             f"tensor's {self.ndim} axes, none longer off dim {d} than "
                             f"{self.shape}")
        x = self.shrink(tuple(None if a == d else (0, i) for a, i in enumerate(index.shape)))
        return x._take_along(index, d, "gather")

    def take_along_axis(self, indices, axis=-1) -> Tensor:
        """numpy's take_along_axis: ``out[..., i, ...] = self[..., indices[..., i, ...], ...]``
        along `axis` (None: of the flattened tensor, 1-d indices); `indices`, an integer
        tensor (or array) with this tensor's number of axes, broadcast against it off
        `axis`. A negative index counts from the end; one out of range raises numpy's
        IndexError when the kernel runs (never another element in its place)."""
        return self._take_along(indices, axis, "take_along_axis")

    def _take_along(self, indices, axis, what: str) -> Tensor:
        indices = _index_tensor(indices, self, what)
        x = self
        if axis is None:
            if indices.ndim != 1:
                raise ShapeError(f"take_along_axis with axis None needs 1-d indices, got "
                                 f"shape {indices.shape}")
            x, axis = self.flatten(), 0
        if indices.ndim != x.ndim or x.ndim == 0:
            raise ShapeError(f"take_along_axis needs indices with the tensor's axes (at least "
                             f"one), got {indices.shape} for {x.shape}")
        d = _norm_axis(axis, x.ndim)
        try:
            out = _broadcast_shape(x.shape[:d] + (1,) + x.shape[d + 1:],
                                   indices.shape[:d] + (1,) + indices.shape[d + 1:])
        except ShapeError:
            raise ShapeError(f"take_along_axis: indices {indices.shape} do not broadcast "
                             f"against the tensor {x.shape} off axis {d}") from None
        _static_dims(x, "take_along_axis", range(x.ndim))
        full = out[:d] + (x.shape[d],) + out[d + 1:]
        want = out[:d] + (indices.shape[d],) + out[d + 1:]
        if x.shape[d] == 0 and prod(want):
            raise IndexError(f"take_along_axis of {indices.shape} indices along the empty axis "
                             f"{d} of a tensor of shape {x.shape}")
        flat = x.expand(full).reshape(prod(full))
        out = flat.gather(_flat_positions(full, d, indices.expand(want)))
        return _out_of_bounds_named(out, (what, d, x.shape[d], False)).reshape(want)

    def scatter_add(self, dim: int, index, src) -> Tensor:
        """PyTorch's scatter_add on a copy: ``out[..., index[i, j], ...] += src[i, j]`` along
        `dim` for every position of `index` (an integer tensor with this tensor's axes, none
        longer than `src`'s, nor than this tensor's off `dim`), a position named twice getting
        both (numpy's ``add.at``; the dtype rules of `index_add`). A negative index counts
        from the end; one out of range raises numpy's IndexError when the kernel runs."""
        index = _index_tensor(index, self, "scatter_add")
        if self.ndim == 0:
            raise ShapeError("scatter_add needs a tensor with at least one axis, got a 0-d one")
        d = _norm_axis(dim, self.ndim)
        if not isinstance(src, Tensor):
            src = Tensor(np.asarray(src), device=self.device)
        if index.ndim != self.ndim or src.ndim != self.ndim or any(
                i > sz or (a != d and i > n) for a, (i, sz, n) in enumerate(
                    zip(index.shape, src.shape, self.shape))):
            raise ShapeError(f"scatter_add along dim {d}: the index {index.shape} must have the "
                             f"tensor's {self.ndim} axes and be no longer than the source "
                             f"{src.shape}, nor than the tensor {self.shape} off dim {d}")
        _static_dims(self, "scatter_add", range(self.ndim))
        part = src.shrink(tuple((0, i) for i in index.shape))
        at = _flat_positions(self.shape, d, index).reshape(index.numel())
        flat = self.reshape(self.numel())
        out = flat._index_add(0, at, part.reshape(index.numel()), 1,
                              ("scatter_add", d, self.shape[d], False))
        return out.reshape(self.shape)

    def index_add(self, dim: int, index: Tensor, source, alpha=1) -> Tensor:
        """A new tensor: this one with ``alpha * source`` added at positions `index` along
        `dim` (PyTorch's index_add; numpy's ``np.add.at(x, (..., index), source)`` on a copy):
        ``out[..., index[i], ...] += alpha * source[..., i, ...]``, a position named twice
        getting both. `index` is a 1-d integer tensor (or a list or array), `source` this
        tensor's shape with ``len(index)`` along `dim` (broadcast to it). As numpy's add.at,
        each add is made in the promoted dtype and cast back to this one at once (a float
        into ints, or ints into bools, is a TypeError, as PyTorch's; numpy's add.at would cast).
        A negative index counts from the end; one out of range raises numpy's IndexError when
        the kernel runs."""
        return self._index_add(dim, index, source, alpha, None)

    def _index_add(self, dim: int, index, source, alpha, where) -> Tensor:
        if self.ndim == 0:
            raise ShapeError("index_add needs a tensor with at least one axis, got a 0-d one")
        d = _norm_axis(dim, self.ndim)
        if isinstance(alpha, (bool, np.bool_)) or not isinstance(alpha, numbers.Number):
            raise TypeError(f"index_add's alpha must be a number, got {type(alpha).__name__}")
        if not self.dtype.is_float and not isinstance(alpha, (int, np.integer)):
            raise TypeError(f"index_add into a {self.dtype.name} tensor needs an integer alpha, "
                            f"got {alpha!r} (as PyTorch's)")
        if not isinstance(index, Tensor):
            index = Tensor(_indexing.host_indices(index, "iu", "index_add's indices"),
                           device=self.device)
        if index.dtype.is_float or index.dtype is dtypes.bool or index.ndim != 1:
            raise TypeError(f"index_add needs a 1-d integer index, got {index.dtype.name} of "
                            f"shape {index.shape}")
        if index.device != self.device:
            raise DeviceError(f"index_add index on {index.device}, tensor on {self.device}")
        _static_dims(self, "index_add", (d,))
        if self.shape[d] == 0 and index.shape[0] != 0:
            raise IndexError(f"index_add of {index.shape[0]} positions along axis {d} of size 0")
        if isinstance(source, Tensor):
            src = source
        elif isinstance(source, (list, tuple, np.ndarray, np.generic)):
            src = Tensor(np.asarray(source), device=self.device)  # (a numpy scalar: its dtype)
        else:  # a Python scalar, weakly typed (this tensor's dtype where its kind allows)
            if not isinstance(source, (bool, int, float)):
                raise TypeError(f"index_add's source must be a Tensor, an array, a list or a "
                                f"number, got {type(source).__name__} {source!r}"[:200])
            kind = _scalar_default_dtype(source)
            if (kind.is_float and not self.dtype.is_float) or (
                    kind is not dtypes.bool and self.dtype is dtypes.bool):
                what = "a float into ints" if kind.is_float else "a number into bools"
                raise TypeError(f"index_add of {source!r} into a {self.dtype.name} tensor "
                                f"({what}: PyTorch refuses it too)")
            src = Tensor.full((), source, dtype=self.dtype, device=self.device)
        if src.device != self.device:
            raise DeviceError(f"index_add source on {src.device}, tensor on {self.device}")
        if not _same_kind(src.dtype, self.dtype):
            raise TypeError(f"index_add of {src.dtype.name} values into a {self.dtype.name} "
                            "tensor (a cast of another kind: PyTorch refuses it too)")
        want = self.shape[:d] + (index.shape[0],) + self.shape[d + 1:]
        if not _callify._broadcastable(src.shape, want):
            raise ShapeError(f"index_add source of shape {src.shape} does not broadcast to "
                             f"{want} (this shape with len(index) along axis {d})")
        if alpha != 1:  # (alpha times the source in their promoted dtype)
            up = least_upper_dtype(self.dtype, src.dtype)
            src = src.cast(up) * Tensor.full((), alpha, dtype=up, device=self.device)
        src = src._broadcast_to(want)
        order = [d] + [a for a in range(self.ndim) if a != d]
        x, v = self.permute(order), src.permute(order)
        # as numpy's add.at: each add in the promoted dtype, cast back to this one at once
        where = ("index_add", d, self.shape[d], True) if where is None else where
        out = Tensor(UOp(Ops.SCATTER_ADD, self.dtype, (x.uop, index.uop, v.uop), where))
        return out.permute([order.index(a) for a in range(self.ndim)])

    def _window_outs(self, k, stride, dilation) -> tuple[int, ...]:
        """Output sizes of windows `k` sliding over the last len(k) axes; ShapeError if none fit."""
        for what, v in (("kernel size", k), ("stride", stride), ("dilation", dilation)):
            if len(v) != len(k) or any(x < 1 for x in v):
                raise ShapeError(f"{what} must be {len(k)} ints >= 1, got {v}")
        if self.ndim < len(k):
            raise ShapeError(f"a {len(k)}-D window needs at least {len(k)} axes, got shape "
                             f"{self.shape}")
        _static_dims(self, "a sliding window", range(self.ndim - len(k), self.ndim))
        spatial = self.shape[-len(k):]
        outs = tuple((s - d * (kk - 1) - 1) // st + 1
                     for s, kk, st, d in zip(spatial, k, stride, dilation))
        if any(o <= 0 for o in outs):
            raise ShapeError(f"window {k} with dilation {dilation} does not fit input {spatial}")
        return outs

    def _windows(self, k, stride, dilation):
        """(offsets, window view) pairs: for each kernel offset, the strided view of the last
        len(k) axes that it sees (sliding windows without stacking them)."""
        outs = self._window_outs(k, stride, dilation)
        for offs in np.ndindex(*k):
            sl = tuple(slice(o * d, o * d + (n - 1) * st + 1, st)
                       for o, d, n, st in zip(offs, dilation, outs, stride))
            yield offs, self[(Ellipsis, *sl)]

    def _unfold(self, k: tuple[int, ...], stride: tuple[int, ...],
                dilation: tuple[int, ...]) -> Tensor:
        """Each of the last len(k) axes (length L) becomes two axes (k, out) holding every
        window along it: element ``[j, t]`` is element ``t * stride + j * dilation`` of the axis.

        Windows overlap, and views alone never make two places read one element, so each axis
        is repeated (EXPAND), flattened and cut into rows of ``m * L + dilation`` elements: row
        j then starts ``j * dilation`` into the axis. Every step acts on all the axes at once
        (one movement node per step, whatever the number of axes). The CPU backend composes
        the chain into one strided view of the input (nothing is copied)."""
        lead = self.shape[: self.ndim - len(k)]
        sizes = self.shape[len(lead):]
        outs = tuple((n - d * (kk - 1) - 1) // st + 1
                     for n, kk, st, d in zip(sizes, k, stride, dilation))

        def each(*parts) -> tuple[int, ...]:  # the lead axes, then parts[i][j] for axis j
            return lead + tuple(p for group in zip(*parts) for p in group)

        def cut(x: Tensor, width: int, at: int, ends) -> Tensor:
            # axis j is `width` axes wide from here on: its axis `at` is cut to ends[j]
            return x.shrink((None,) * len(lead) + tuple(
                (0, e) if i == at else None for e in ends for i in range(width)))

        if all(kk == 1 for kk in k) and all(o * st <= n for o, st, n in zip(outs, stride, sizes)):
            # one window position per axis: a strided slice
            x = cut(self, 1, 0, [o * st for o, st in zip(outs, stride)])
            x = cut(x.reshape(each((1,) * len(k), outs, stride)), 3, 2, [1] * len(k))
            return x.reshape(each((1,) * len(k), outs))
        rows = [n * max(1, -(-(o * st - d) // n)) + d
                for n, o, st, d in zip(sizes, outs, stride, dilation)]
        reps = [-(-kk * r // n) for kk, r, n in zip(k, rows, sizes)]
        x = self.reshape(each((1,) * len(k), sizes)).expand(each(reps, sizes))
        x = cut(x.reshape(each([r * n for r, n in zip(reps, sizes)])), 1, 0,
                [kk * r for kk, r in zip(k, rows)])
        x = cut(x.reshape(each(k, rows)), 2, 1, [o * st for o, st in zip(outs, stride)])
        if all(st == 1 for st in stride):
            return x
        x = cut(x.reshape(each(k, outs, stride)), 3, 2, [1] * len(k))
        return x.reshape(each(k, outs))

    def conv2d(self, weight: Tensor, bias: Tensor | None = None, groups: int = 1, stride=1,
               dilation=1, padding=0) -> Tensor:
        """2-D convolution (cross-correlation), NCHW input and (Cout, Cin/groups, KH, KW) weight.
        `padding`: an int, two (height, width), four (left, right, top, bottom; negative
        crops), or PyTorch's "valid" or "same" (stride 1: the output the input's size).

        The windows of the padded input are one view (N, Cin, KH, OH, KW, OW); the convolution
        is one contraction of it with the weight over (Cin/groups, KH, KW), which the CPU
        backend runs as one matrix product per group. Integer operands give their promoted
        dtype, as `matmul` does (the sum runs in 64 bits); 16-bit floats run in float32 and are
        rounded once, as in `matmul`."""
        groups = _conv_args("conv2d", self, weight, bias, groups)
        n, cin = self.shape[:2]
        cout, cin_g, kh, kw = weight.shape
        if cin != cin_g * groups or cout % groups:
            raise ShapeError(f"conv2d: input channels {cin} != {cin_g}*groups({groups}) or "
                             f"output channels {cout} not divisible by groups")
        if bias is not None and bias.shape != (cout,):
            raise ShapeError(f"conv2d's bias must have shape ({cout},) (one per output "
                             f"channel), got {bias.shape}")
        want = least_upper_dtype(self.dtype, weight.dtype)
        if want.is_float and want.itemsize == 2:  # as matmul: in float32, rounded once (with
            if bias is None or least_upper_dtype(want, bias.dtype) is want:  # the bias added)
                f32 = None if bias is None else bias.cast(dtypes.float32)
                return self.cast(dtypes.float32).conv2d(weight.cast(dtypes.float32), f32, groups,
                                                        stride, dilation, padding).cast(want)
            out = self.cast(dtypes.float32).conv2d(weight.cast(dtypes.float32), None, groups,
                                                   stride, dilation, padding).cast(want)
            return out + bias.reshape(1, cout, 1, 1)  # a wider bias: added in its dtype
        if isinstance(padding, str):
            (t, b), (left, r) = _named_padding(padding, (kh, kw), _pair(stride), _pair(dilation),
                                               "conv2d")
            padding = (left, r, t, b)
        pads = _conv_padding(padding)
        _padded_sizes(self, pads, "conv2d")
        x = self._pad(((0, 0), (0, 0), pads[0], pads[1]))
        (sh, sw), (dh, dw) = _pair(stride), _pair(dilation)
        oh, ow = x._window_outs((kh, kw), (sh, sw), (dh, dw))
        win = x._unfold((kh, kw), (sh, sw), (dh, dw))
        xs = win.reshape(n, groups, 1, cin_g, kh, oh, kw, ow)
        ws = weight.reshape(1, groups, cout // groups, cin_g, kh, 1, kw, 1)
        # weight first: its free axis leads the matrix product, so the result comes out NCHW
        out = (ws * xs).sum((3, 4, 6), keepdim=True).reshape(n, cout, oh, ow)
        want = least_upper_dtype(self.dtype, weight.dtype)
        if out.dtype is not want and not out.dtype.is_float:  # integers: as matmul does
            out = out.cast(want)
        return out + bias.reshape(1, cout, 1, 1) if bias is not None else out


    def max_pool2d(self, kernel_size=(2, 2), stride=None, dilation=1, padding=0) -> Tensor:
        """Maximum over each window; padding (the dtype's lowest value) is between 0 and half
        the window on each side, as PyTorch's (wider, a window would hold padding alone)."""
        k = _pair(kernel_size)
        pads = _conv_padding(padding)
        _padded_sizes(self, pads, "max_pool2d", k)
        x = self
        if any(p for pp in pads for p in pp):
            lowest = (-math.inf if x.dtype.is_float else False if x.dtype is dtypes.bool
                      else int(np.iinfo(x.dtype.np).min))
            x = x._pad(((0, 0),) * (x.ndim - 2) + tuple(pads), value=lowest)
        out = None
        for _, win in x._windows(k, _pair(stride) if stride is not None else k, _pair(dilation)):
            out = win if out is None else out.maximum(win)
        return out

    @_half_in_float32
    def avg_pool2d(self, kernel_size=(2, 2), stride=None, dilation=1, padding=0) -> Tensor:
        """Average over each window, padding included in the count (PyTorch's default);
        16-bit floats are summed in float32 and come back 16-bit. Padding is at most half the
        window, as `max_pool2d`'s (PyTorch's rule)."""
        k = _pair(kernel_size)
        pads = _conv_padding(padding)
        _padded_sizes(self, pads, "avg_pool2d", k)
        x = self._float()
        x = (x._pad(((0, 0),) * (x.ndim - 2) + tuple(pads)) if any(p for pp in pads for p in pp)
             else x)
        out = None
        for _, win in x._windows(k, _pair(stride) if stride is not None else k, _pair(dilation)):
            out = win if out is None else out + win
        return out / (k[0] * k[1])  # a division, as `mean` (a product with 1/n is 1 ulp off)

    # -- realization --------------------------------------------------------------------------

    def contiguous(self) -> Tensor:
        """A tensor whose value is computed into its own buffer (always ends a kernel)."""
        return Tensor(UOp(Ops.CONTIGUOUS, self.dtype, (self.uop,)))

    def to(self, device: str) -> Tensor:
        dev = canonical_device(device)
        if dev == self.device:
            return self
        return Tensor(UOp(Ops.COPY, self.dtype, (self.uop,), dev))

    # ``x += y`` and the like write into x in place, as numpy's (views of x see it, and a
    # jitted function's replays make the write again); the result is cast back to x's dtype
    # where numpy's in-place rule allows it ("same_kind": bools to anything, unsigned to
    # signed, ints to floats, any width within a kind), else a TypeError, as numpy's
    def _inplace(self, r: Tensor) -> Tensor:
        if isinstance(r, Tensor) and r.shape != self.shape:  # (an operand with more axes,
            # size 1 or not: numpy's non-broadcastable output operand)
            raise ShapeError(f"an in-place operation on a tensor of shape {self.shape} gives "
                             f"shape {r.shape}: the result must keep the tensor's shape")
        if isinstance(r, Tensor) and r.dtype is not self.dtype and _same_kind(r.dtype, self.dtype):
            r = r.cast(self.dtype)
        return self.assign(r)

    def __iadd__(self, x):
        return self._inplace(self + x)

    def __isub__(self, x):
        return self._inplace(self - x)

    def __imul__(self, x):
        return self._inplace(self * x)

    def __itruediv__(self, x):
        return self._inplace(self / x)

    def __ifloordiv__(self, x):
        return self._inplace(self // x)

    def __imod__(self, x):
        return self._inplace(self % x)

    def __ipow__(self, x):
        return self._inplace(self ** x)

    def __iand__(self, x):
        return self._inplace(self & x)

    def __ior__(self, x):
        return self._inplace(self | x)

    def __ixor__(self, x):
        return self._inplace(self ^ x)

    def __ilshift__(self, x):
        return self._inplace(self << x)

    def __irshift__(self, x):
        return self._inplace(self >> x)

    def assign(self, x: Tensor | Scalar) -> Tensor:
        """Store `x` into this tensor's buffer in place; views of it see the new data.

        A view that shows a `pad`'s padding is a new tensor, as ``np.pad``'s copy: the assign
        makes it one (the padded tensor keeps its values); a view of the padded tensor that
        shows none of the padding writes through to it."""
        return _callify.assign(self, x)

    def realize(self, *others: Tensor) -> Tensor:
        """Compute this tensor (and `others`, sharded ones too: their shards) now, in one
        schedule."""
        ts = [self]
        for t in others:
            ts.extend(t.shards if type(t) in DEFER_TO and hasattr(t, "shards") else (t,))
        _callify.realize(ts)
        return self

    def schedule_linear(self, *others: Tensor):
        """The planned LINEAR that `realize` would run, without allocating or running anything
        (where realize runs parts apart, their variables bound to two values, a ScheduleError:
        one LINEAR cannot show it)."""
        return self.linear_with_vars(*others)[0]

    def linear_with_vars(self, *others: Tensor):
        """``(planned LINEAR, var_vals)`` that `realize` would run; nothing runs."""
        return _callify.realize((self, *others), run=False)

    def numpy(self) -> np.ndarray:
        """The values as a new numpy array (bfloat16 comes back as float32)."""
        return _callify.to_numpy(self)

    def item(self) -> Scalar:
        if self.numel() != 1:
            raise ValueError(f"item() needs a tensor with one element, got shape {self.shape}")
        return self.numpy().reshape(()).item()

    def tolist(self):
        return self.numpy().tolist()

    def shard(self, devices: Sequence[str], axis: int = 0):
        """Split along `axis` across `devices` (see `tolk.multi.MultiTensor`)."""
        from tolk.multi import MultiTensor

        return MultiTensor.from_tensor(self, devices, axis)


# ---------------------------------------------------------------------------------------------
# helpers


_UOP_SLOT = Tensor.__dict__["uop"]  # the slot itself: a read that never calls __getattr__


def _swapped(ndim: int, dim0, dim1) -> list[int]:
    """The axis order of `ndim` axes with `dim0` and `dim1` swapped (a transpose)."""
    order = list(range(ndim))
    a, b = _norm_axis(dim0, ndim), _norm_axis(dim1, ndim)
    order[a], order[b] = order[b], order[a]
    return order


def _clip_bounds(dtype: DType, min_, max_, bounds: dict) -> tuple:
    """clip's bounds: ``min=``/``max=`` (PyTorch's names) taken, and for an int dtype an int
    bound past the dtype's range on the side that clips nothing made that end of the range
    (as numpy; the other side stays an error)."""
    for alias in bounds:
        if alias not in ("min", "max"):
            raise TypeError(f"clip() got an unexpected keyword argument {alias!r}")
    if "min" in bounds:
        if min_ is not None:
            raise TypeError("clip() got both min_ and min")
        min_ = bounds["min"]
    if "max" in bounds:
        if max_ is not None:
            raise TypeError("clip() got both max_ and max")
        max_ = bounds["max"]
    if min_ is None and max_ is None:
        raise ValueError("clip needs at least one of min_ and max_")
    if dtype.is_int and dtype is not dtypes.bool:  # (a numpy int is weak, as a Python int)
        info = np.iinfo(dtype.np)
        if isinstance(min_, (int, np.integer)) and not isinstance(min_, (bool, np.bool_)) \
                and min_ < info.min:
            min_ = int(info.min)
        if isinstance(max_, (int, np.integer)) and not isinstance(max_, (bool, np.bool_)) \
                and max_ > info.max:
            max_ = int(info.max)
    return min_, max_


def _clip_by(x, min_, max_):
    """``x.maximum(min_).minimum(max_)``, a None bound left out (a Tensor or sharded `x`)."""
    if min_ is not None:
        x = x.maximum(min_)
    if max_ is not None:
        x = x.minimum(max_)
    return x


def _kind_rank(d: DType) -> int:
    return 0 if d is dtypes.bool else 3 if d.is_float else 1 if d.is_unsigned else 2


def _same_kind(src: DType, dst: DType) -> bool:
    """numpy's "same_kind" casting between tolk dtypes: within a kind, or up the order bool,
    unsigned, signed, float."""
    return _kind_rank(src) <= _kind_rank(dst)


def _signed_against_uint64(a: DType, b: DType) -> bool:
    """Whether one of `a`, `b` is uint64 and the other a signed int (numpy 2 compares those
    exactly; their promotion, float64, would not)."""
    if a is dtypes.uint64:
        a, b = b, a
    return b is dtypes.uint64 and not a.is_float and a.np.kind == "i"


def _data_dtype(x) -> DType:
    """`to_dtype` for the dtype of tensor data: void (no values) is a TypeError."""
    d = to_dtype(x)
    if d is dtypes.void:
        raise TypeError("void is not a dtype tensor data can have")
    return d


def _shape_arg(shape, allow_neg: bool = False) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer, Sym)) and not isinstance(shape, (bool, np.bool_)):
        shape = (shape,)  # a bare int (or symbolic size), as numpy takes it
    elif not isinstance(shape, (tuple, list)):
        raise TypeError(f"a shape must be an int or a tuple of ints, got {shape!r}")
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)) and not isinstance(shape[0], Sym):
        shape = shape[0]  # one tuple (a Sym is a named tuple, and one size)
    if type(shape) is tuple and all(type(s) is int and 0 <= s <= _MAX_DIM for s in shape):
        if len(shape) > 1 and math.prod(shape) > _MAX_DIM:
            _too_many(shape)
        return shape  # the common case: a tuple of plain non-negative ints
    out = []
    for s in shape:
        if isinstance(s, Sym):
            out.append(s)
            continue
        if isinstance(s, (bool, np.bool_)) or not isinstance(s, (int, np.integer)):
            raise TypeError(f"shape entries must be ints, got {s!r} in {tuple(shape)}")
        if s < 0 and not (allow_neg and s == -1):
            raise ShapeError(f"negative dimension {s} in shape {tuple(shape)}")
        if s > _MAX_DIM:
            raise ShapeError(f"dimension {s} in shape {tuple(shape)} is too large (numpy's "
                             f"arrays hold at most {_MAX_DIM} elements)")
        out.append(int(s))
    if len(out) > 1 and all(type(s) is int and s >= 0 for s in out) and \
            math.prod(out) > _MAX_DIM:
        _too_many(tuple(out))
    return tuple(out)


def _draw_dtype(d: DType) -> type:
    """The numpy dtype random numbers of dtype `d` are drawn in (float64's own bits)."""
    return np.float64 if d is dtypes.float64 else np.float32


def _too_many(shape: tuple) -> None:
    raise ShapeError(f"shape {shape} holds {math.prod(shape)} elements: too many (numpy's "
                     f"arrays hold at most {_MAX_DIM})")


_MAX_DIM = int(np.iinfo(np.intp).max)


def _split(shape) -> tuple[tuple[Sym, ...], int]:
    """(symbolic dims in order, product of the int dims): equal for reshapeable shapes."""
    return (tuple(d for d in shape if isinstance(d, Sym)),
            prod(d for d in shape if not isinstance(d, Sym)))


def _zero_d_int(i) -> bool:
    """Whether an index component is a 0-d integer tensor or array."""
    return isinstance(i, (Tensor, np.ndarray)) and i.ndim == 0 and i.dtype.kind in "iu"


def _check_sequence_value(ndim: int, value, idx: tuple, base_ndim: int) -> None:
    """numpy's rule for ``x[idx] = value`` with basic indices: a list or tuple may have no more
    dimensions than the view it fills (`ndim`), and one element (an integer index on every
    one of x's `base_ndim` axes) takes no numpy array of one dimension or more (a ValueError,
    before anything is written). A Tensor value broadcasts as in `assign` (size-1 axes in
    front may go, as in PyTorch). Scalars and tensors, the common values, are not looked at."""
    if isinstance(value, (list, tuple)):
        depth = sequence_depth(value)  # (along the first entries: `assign` checks the rest)
    elif isinstance(value, np.ndarray):
        depth = value.ndim
    else:
        return
    element = len(idx) == base_ndim and all(
        type(i) is int or isinstance(i, np.integer) for i in idx)
    if not element and not isinstance(value, (list, tuple)):
        return  # (an array broadcasts into a view)
    if depth > ndim:
        into = "one element" if element else f"{ndim} dimension(s)"
        raise ValueError(f"setting an array element with a sequence: a value of {depth} "
                         f"dimension(s) into {into} (numpy's rule)")


def _index_tuple(idx) -> tuple:
    """An index as a tuple, a 0-d integer tensor or array in it as the int it holds (the
    place numpy's ``a[np.array(1)]`` reads or writes; a read is a copy, `__getitem__`)."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    return tuple(int(i) if _zero_d_int(i) else i for i in idx)


def _is_bound(x) -> bool:
    return isinstance(x, BoundVariable)


def _bound_shape(shape) -> tuple[tuple, tuple[UOp, ...]]:
    """`_shape_arg` that also takes bound Variables as sizes: the shape with a Sym for each,
    and their BIND nodes (sorted by name). Two values of one variable are a ValueError, a
    variable that may be negative a ShapeError."""
    if _is_bound(shape):
        shape = (shape,)
    if type(shape) in (tuple, list) and len(shape) == 1 and type(shape[0]) in (tuple, list):
        shape = shape[0]
    if type(shape) not in (tuple, list) or not any(_is_bound(s) for s in shape):
        return _shape_arg(shape), ()
    binds: dict[str, UOp] = {}
    dims = []
    for s in shape:
        if _is_bound(s):
            if s.name in binds and binds[s.name] is not s.uop:
                raise ValueError(f"variable {s.name!r} is bound to two values in shape "
                                 f"{tuple(shape)}")
            if s.var.min + s.add < 0:
                raise ShapeError(f"size {s!r} in shape {tuple(shape)} may be negative (its "
                                 f"variable ranges over [{s.var.min}, {s.var.max}])")
            s = _dim(s, binds)
        dims.append(s)
    return _shape_arg(tuple(dims)), tuple(binds[k] for k in sorted(binds))


def _is_symbolic_slice(sl: slice, size) -> bool:
    return _is_bound(sl.start) or _is_bound(sl.stop) or isinstance(size, Sym)


def _dim(x, binds: dict[str, UOp]):
    """A slice bound as an int or a Sym (recording the BIND of a bound variable)."""
    if _is_bound(x):
        had = binds.setdefault(x.name, x.uop)
        if had is not x.uop and had.src[1].arg != x.uop.src[1].arg:
            raise ValueError(f"variable {x.name!r} is bound to both {had.src[1].arg} and "
                             f"{x.uop.src[1].arg} in one shape or slice: bind it once")
        return Sym(x.name, x.var.min, x.var.max, x.add)
    if isinstance(x, Sym):
        return x
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
        raise TypeError(f"slice bounds must be ints or bound Variables, got {x!r}")
    return int(x)


def smin(d) -> int:
    return d.min if isinstance(d, Sym) else d


def smax_(d) -> int:
    return d.max if isinstance(d, Sym) else d


def _le(a, b) -> bool:
    """a <= b for every value of the variables (ints, or Syms of one variable)."""
    if isinstance(a, Sym) and isinstance(b, Sym) and a.name == b.name:
        return a.add <= b.add
    return smax_(a) <= smin(b)


def _pad_arg(padding, ndim: int) -> tuple[tuple[int, int], ...]:
    if not isinstance(padding, (tuple, list)):
        raise TypeError(f"pad takes (before, after) pairs per axis or a flat list of ints, "
                        f"got {type(padding).__name__} {padding!r}"[:200])
    padding = tuple(padding)
    if padding and all(isinstance(p, (int, np.integer)) and not isinstance(p, (bool, np.bool_))
                       for p in padding):
        if len(padding) % 2 or len(padding) // 2 > ndim:
            raise ShapeError(f"flat padding {padding} needs pairs for at most {ndim} axes")
        pairs = [(int(padding[i]), int(padding[i + 1])) for i in range(0, len(padding), 2)]
        return tuple([(0, 0)] * (ndim - len(pairs)) + pairs[::-1])
    if padding and all(isinstance(p, (int, float, np.number, np.bool_)) for p in padding):
        raise TypeError(f"pad widths must be ints, got {padding}")  # a flat list, not all ints
    if len(padding) != ndim:
        raise ShapeError(f"pad needs {ndim} (before, after) pairs, got {len(padding)}")
    _check_pairs("pad", padding)
    return tuple((0, 0) if p is None else (_width(p[0], padding), _width(p[1], padding))
                 for p in padding)


def _index_tensor(index, x: Tensor, what: str) -> Tensor:
    """`index` (an integer tensor, array or list) as an integer tensor on `x`'s device."""
    if not isinstance(index, Tensor):
        index = Tensor(_indexing.host_indices(index, "iu", f"{what}'s indices"), device=x.device)
    if index.dtype.is_float or index.dtype is dtypes.bool:
        raise TypeError(f"{what} needs integer indices, got {index.dtype.name}")
    if index.device != x.device:
        raise DeviceError(f"{what}'s indices on {index.device}, the tensor on {x.device}")
    return index


def _out_of_bounds_named(t: Tensor, where: tuple) -> Tensor:
    """`t`, a GATHER, carrying `where` for the message of an index out of bounds: (the
    operation, the user's axis, its size, whether the gather's indices are the user's own
    values, else positions in a flattened tensor)."""
    u = t.uop
    return Tensor(UOp(u.op, u.dtype, u.src, where))


def _flat_positions(shape: tuple[int, ...], axis: int, idx: Tensor) -> Tensor:
    """For each element of `idx` (an integer tensor with `shape`'s axes, none longer): the
    int64 position, in a C-contiguous array of `shape`, of the element it names along `axis`
    (its own position off `axis`); a negative index counts from the end, one out of range
    points past the end (so a gather or an add there raises when it runs)."""
    n = shape[axis]
    strides = [prod(shape[a + 1:]) for a in range(len(shape))]
    t = idx.cast(dtypes.int64)
    t = (t < 0).where(t + n, t)
    inside = (t >= 0) & (t < n)
    if idx.dtype is dtypes.uint64:  # (past int64's range: wrapped, so out of range)
        inside = inside & (idx <= 2**62)
    at = t * strides[axis]
    for a, size in enumerate(idx.shape):
        if a != axis and size > 1:
            steps = Tensor.arange(size, dtype=dtypes.int64, device=idx.device) * strides[a]
            at = at + steps.reshape(tuple(size if b == a else 1 for b in range(idx.ndim)))
    return inside.where(at, prod(shape))


def _pad_positions(n: int, before: int, after: int, kind: str) -> np.ndarray:
    """For each position of an axis of size `n` padded by `before` and `after`: the index of
    the value it takes, as numpy's pad modes choose it."""
    i = np.arange(-before, n + after)
    if kind == "edge":
        return np.clip(i, 0, n - 1)
    if kind == "wrap":
        return i % n
    if kind == "symmetric":
        j = i % (2 * n)
        return np.where(j < n, j, 2 * n - 1 - j)
    if n == 1:  # (reflect about the one value: itself)
        return np.zeros_like(i)
    j = i % (2 * n - 2)
    return np.where(j < n, j, 2 * n - 2 - j)


def _index_runs(idx: np.ndarray) -> list[tuple[int, int, int]]:
    """`idx` as runs ``(first index, length, step)`` with step 1, -1 or 0 (a repeated index)."""
    runs: list[list[int]] = []
    for v in idx.tolist():
        if runs:
            first, length, step = runs[-1]
            last = first + (length - 1) * step
            if length == 1 and abs(v - last) <= 1:
                runs[-1] = [first, 2, v - last]
                continue
            if length > 1 and v - last == step:
                runs[-1][1] += 1
                continue
        runs.append([v, 1, 1])
    return [(f, n, st) for f, n, st in runs]


def _width(w, what) -> int:
    """A pad width: an int (numpy's ints too; a float or bool is a TypeError, as np.pad's)."""
    if isinstance(w, (int, np.integer)) and not isinstance(w, (bool, np.bool_)):
        return int(w)
    raise TypeError(f"pad widths must be ints, got {w!r} in {what}")


def _check_pairs(what: str, pairs: tuple) -> None:
    for p in pairs:
        if not (p is None or isinstance(p, (tuple, list)) and len(p) == 2):
            raise ShapeError(f"{what} {pairs}: each axis takes None or a pair, got {p!r}")


def _all_tensors(what: str, ts) -> None:
    for t in ts:
        if not isinstance(t, Tensor):
            fix = "gather it with .to(device)" if type(t) in DEFER_TO else "wrap it in Tensor()"
            raise TypeError(f"{what} takes Tensors, got {type(t).__name__}: {fix}")


def _pair(x) -> tuple[int, int]:
    """A window size, stride or dilation: an int or two ints (TypeError/ShapeError naming it)."""
    if isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)):
        return (int(x), int(x))
    if not isinstance(x, (tuple, list)) or not all(
            isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in x):
        raise TypeError(f"a window size, stride or dilation must be an int or two ints, got "
                        f"{x!r}")
    if len(x) != 2:
        raise ShapeError(f"a window size, stride or dilation must be an int or two ints, got "
                         f"{len(x)}: {x!r}")
    return (int(x[0]), int(x[1]))


def _conv_args(what: str, x: Tensor, weight, bias, groups) -> int:
    """Checks a 2-D convolution's operands (Tensors, 4-D input and weight) and returns its
    `groups` as an int (a TypeError unless an int >= 1)."""
    _all_tensors(what, (weight,) if bias is None else (weight, bias))
    if isinstance(groups, (bool, np.bool_)) or not isinstance(groups, (int, np.integer)) \
            or groups < 1:
        raise TypeError(f"{what}'s groups must be an int >= 1, got {groups!r}")
    if x.ndim != 4 or weight.ndim != 4:
        raise ShapeError(f"{what} needs 4-D input and weight, got {x.shape} and {weight.shape}")
    return int(groups)


def _named_padding(padding: str, ks, strides, dilations, what: str) -> list[tuple[int, int]]:
    """PyTorch's "valid" (no padding) and "same" (stride 1: each output axis as long as the
    input's, the odd one of an axis's padding at its end), as (start, end) per axis."""
    if padding == "valid":
        return [(0, 0)] * len(ks)
    if padding != "same":
        raise ValueError(f"{what}'s padding string must be 'valid' or 'same', got "
                         f"{padding!r}"[:200])
    if any(st != 1 for st in strides):
        raise ValueError(f"{what}'s padding 'same' needs stride 1 (as PyTorch's)")
    return [(d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2) for k, d in zip(ks, dilations)]


def _conv_padding(padding) -> tuple[tuple[int, int], tuple[int, int]]:
    if isinstance(padding, (int, np.integer)) and not isinstance(padding, (bool, np.bool_)):
        return ((int(padding),) * 2,) * 2
    if isinstance(padding, np.ndarray) and padding.ndim == 1:
        padding = padding.tolist()
    if not isinstance(padding, (tuple, list)):
        raise TypeError(f"conv padding must be an int, 2 or 4 ints, got {padding!r}")
    p = tuple(_width(w, padding) for w in padding)
    if len(p) == 2:
        return ((p[0],) * 2, (p[1],) * 2)
    if len(p) == 4:  # PyTorch order: left, right, top, bottom
        return ((p[2], p[3]), (p[0], p[1]))
    raise ShapeError(f"conv padding must be an int, 2 or 4 ints, got {padding}")


def _padded_sizes(x: Tensor, pads, what: str, k=None) -> None:
    """ShapeError naming `what`'s padding where it crops past an edge of the last two axes of
    x (a negative padding crops), or, for a pooling window `k`, where it is negative or wider
    than half the window (PyTorch's rule: a window of padding alone has no input)."""
    for (lo, hi), size, kk in zip(pads, x.shape[-2:], k or (None, None)):
        if kk is not None and not (0 <= lo <= kk // 2 and 0 <= hi <= kk // 2):
            raise ShapeError(f"{what}'s padding {(lo, hi)} must be between 0 and half the "
                             f"window ({kk}), as PyTorch's")
        if isinstance(size, int) and (-lo > size or -hi > size or size + lo + hi < 0):
            raise ShapeError(f"{what}'s padding {(lo, hi)} crops past an axis of size {size}")


def _shape_by_form(u: UOp, cache: dict) -> None:
    """Give a new node its form (`tolk.uop.form`) and its shape and device: a form made
    before carries them (a node's shape and device follow from its form), so a program
    built again infers no shapes; a new form takes them from `shape_of`."""
    f = form_of(u)
    if type(f) is not Form:  # none, or the node itself (no buffer below it): inferred
        shape_of(u)
    elif f.shape is not None:
        cache["shape"] = f.shape
        if f.device is not None:
            cache["device"] = f.device
    else:
        shape_of(u)
        f.device = cache.get("device")
        f.shape = cache["shape"]


def _broadcast_const(dtype: DType, value: Scalar, shape: tuple) -> UOp:
    """The constant `value` broadcast to `shape`: the nodes ``Tensor(const)._broadcast_to``
    builds (a reshape to ones, then an expand), without the checks a constant cannot fail."""
    u = UOp.const(dtype, value)
    node_cache(u)["shape"] = ()
    form_of(u)  # each node's form made as it is built, so none of it walks
    if not shape:
        return u
    ones = (1,) * len(shape)
    u = UOp(Ops.RESHAPE, dtype, (u,), ones)
    node_cache(u)["shape"] = ones  # what `shape_of` would find; set here so none of it walks
    form_of(u)
    if shape == ones:
        return u
    u = UOp(Ops.EXPAND, dtype, (u,), tuple(shape))
    node_cache(u)["shape"] = u.arg
    form_of(u)
    return u


def _below(x: Tensor) -> Tensor:
    """The largest value of x's float dtype below each element of x (by its bits: one step
    toward -inf; below a zero the negative of the smallest subnormal)."""
    ints = {2: dtypes.int16, 4: dtypes.int32, 8: dtypes.int64}[x.dtype.itemsize]
    bits = x.bitcast(ints)
    neg_tiny = Tensor(int(np.iinfo(ints.np).min) + 1, x.device, ints)
    return (x > 0).where(bits - 1, (x == 0).where(neg_tiny, bits + 1)).bitcast(x.dtype)


def _step_inside(v: float, d: DType, up: bool) -> float:
    """The value of float dtype `d` nearest `v` on the inside of a range: with `up`, the
    smallest one >= v (a low end); else the largest one < v (a high end, excluded)."""
    if d is dtypes.bfloat16:
        from tolk.dtype import bf16_to_f32, f32_to_bf16

        def value(bits: int) -> float:
            return float(bf16_to_f32(np.array([bits], np.uint16))[0])

        bits = int(f32_to_bf16(np.array([v]))[0])
        if (value(bits) < v) if up else (value(bits) >= v):  # one bfloat16 step, by its bits
            neg = bits & 0x8000
            if up:
                bits = 1 if bits == 0x8000 else (bits - 1 if neg else bits + 1)
            else:
                bits = 0x8001 if bits == 0 else (bits + 1 if neg else bits - 1)
        return value(bits)
    t = d.np.type(v)
    if (float(t) < v) if up else (float(t) >= v):
        t = np.nextafter(t, d.np.type(np.inf if up else -np.inf))
    return float(t)


def _py_value(x: Scalar, d: DType) -> Scalar:
    """`x` as a Python value of dtype `d`; an int that `d` cannot hold is an error (numpy 2),
    and so is anything that is no real scalar (a list, None, a complex number)."""
    if not isinstance(x, (bool, int, float, np.bool_, np.integer, np.floating)):
        raise TypeError(f"a scalar for a {d.name} tensor must be a bool, int or float, got "
                        f"{type(x).__name__} {x!r}"[:200])
    if d is dtypes.bool:
        return bool(x)
    if d.is_int:
        given = x
        if isinstance(x, (float, np.floating)):
            if not math.isfinite(x):
                raise ValueError(f"cannot represent {x} as {d.name}")
            x = int(x)
        info = np.iinfo(d.np)
        if not info.min <= int(x) <= info.max:
            what = f"integer {x}" if given is x else f"{given!r} (as an integer {x})"
            raise ValueError(f"{what} is out of bounds for {d.name}")
        return int(x)
    if d is dtypes.bfloat16 and isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return float(_round_int_to_bf16(int(x)))  # once, from the int (float() rounds first)
    return float(x)


def _scalar_default_dtype(x: Scalar) -> DType:
    if isinstance(x, (bool, np.bool_)):
        return dtypes.bool
    if isinstance(x, int):  # int32, or the wider type its value needs (as `Tensor(x)`)
        if -(1 << 31) <= x < (1 << 31):
            return dtypes.default_int
        return _infer_dtype(_to_numpy(x, None))
    if isinstance(x, np.integer):
        return to_dtype(np.asarray(x).dtype)
    if isinstance(x, np.floating):  # a numpy scalar keeps its dtype (as `Tensor(x)`)
        return to_dtype(np.asarray(x).dtype)
    return dtypes.default_float if isinstance(x, float) else to_dtype(np.asarray(x).dtype)


def _infer_dtype(arr: np.ndarray) -> DType:
    return to_dtype(arr.dtype)


def _to_numpy(data: Any, want: DType | None) -> np.ndarray:
    if isinstance(data, np.ndarray):
        arr = data
    elif isinstance(data, (bool, int, float, np.generic)) or isinstance(data, (list, tuple)):
        if want is not None and want is not dtypes.bfloat16 and not isinstance(data, np.generic):
            try:  # numpy 2 semantics: Python ints that do not fit the dtype are an error
                return np.array(data, dtype=want.np)
            except OverflowError as e:
                raise ValueError(f"data does not fit {want.name}: {e}") from None
            except ValueError as e:
                _refuse_ragged(data, e)
                raise
        try:
            arr = np.asarray(data)
        except ValueError as e:
            _refuse_ragged(data, e)
            raise
        if arr.dtype == object and want is dtypes.bfloat16 and _all_numbers(arr):
            arr = _ints_to_bf16_values(arr)  # (big ints among floats too, as float32 takes them)
        elif arr.dtype == object or (arr.dtype.kind == "f" and arr.size
                                     and max(-float(arr.min()), float(arr.max())) >= 2.0 ** 63):
            arr = _wide_ints(data, arr)
        if want is None and not isinstance(data, np.generic) and _python_leaves(data):
            # Python floats become float32, Python ints int32 (tensor-library defaults)
            if arr.dtype.kind == "f":
                arr = arr.astype(np.float32)
            elif arr.dtype.kind in "iu":  # int32, else int64, else (past int64) uint64
                if not arr.size or (arr.max() <= np.iinfo(np.int32).max
                                    and arr.min() >= np.iinfo(np.int32).min):
                    arr = arr.astype(np.int32)
                elif arr.dtype != np.uint64 or arr.max() <= np.iinfo(np.int64).max:
                    arr = arr.astype(np.int64)
    else:
        hint = ": gather a sharded tensor with .to(device)" if hasattr(data, "shards") else ""
        raise TypeError(f"cannot make a tensor from {type(data).__name__}{hint}")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"unsupported numpy dtype {arr.dtype} for a tensor")
    return arr


def _all_numbers(arr: np.ndarray) -> bool:
    return all(isinstance(x, (int, float, np.number)) for x in arr.ravel())


def _ints_to_bf16_values(arr: np.ndarray) -> np.ndarray:
    """Numbers, Python ints among them past 64 bits, as float64 values: each int rounded
    once to bfloat16's 8 significant bits (to even), as a float32 target takes them (float64
    alone would round twice; past float64's range a ValueError, as numpy's for float32), the
    others as they are."""
    def rounded(x) -> float:
        if not isinstance(x, int) or isinstance(x, bool):
            return float(x)
        m, shift = abs(x), abs(x).bit_length() - 8
        if shift > 0:
            q, r = divmod(m, 1 << shift)
            half = 1 << (shift - 1)
            m = (q + (r > half or (r == half and q & 1))) << shift
        try:
            return float(m if x >= 0 else -m)
        except OverflowError as e:
            raise ValueError(f"data does not fit bfloat16: {e}") from None
    return np.array([rounded(x) for x in arr.ravel()], np.float64).reshape(arr.shape)


def _refuse_ragged(data: Any, e: ValueError) -> None:
    """numpy's error for nested lists of unequal lengths, said as what it is."""
    if "inhomogeneous" in str(e):
        raise ValueError(f"cannot make a tensor from ragged data (nested lists of unequal "
                         f"lengths): {data!r}"[:200]) from None


def _python_leaves(data: Any) -> bool:
    """Whether nested lists hold Python scalars only: those take the tensor-library
    defaults; where any leaf is a numpy array, numpy scalar or tensor, the lists keep numpy's
    dtype (as ``np.array(list)``: ``[1.0, np.float64(1e300)]`` is float64 in either order)."""
    todo = [data]
    while todo:
        x = todo.pop()
        if isinstance(x, (list, tuple)):
            todo.extend(x)
        elif isinstance(x, (np.ndarray, np.generic, Tensor)):
            return False
    return True


def _wide_ints(data: Any, arr: np.ndarray) -> np.ndarray:
    """`arr` (numpy's array of `data`) where numpy made objects or floats of Python ints past
    int64: uint64 when they all fit it (numpy makes ``[2**63, 1]`` float64: rounded), else a
    ValueError (no 64-bit dtype holds them); objects of another kind are ragged or mixed data
    (TypeError); floats that were floats are returned as they are."""
    leaves = np.array(data, dtype=object).ravel() if arr.dtype != object else arr.ravel()
    if not all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in leaves):
        if arr.dtype == object:
            big = [x for x in leaves if isinstance(x, int) and not -(1 << 63) <= x < 1 << 64]
            if big and all(isinstance(x, (int, float, np.number)) for x in leaves):
                hint = (f": write it as a float ({float(big[0])!r})"
                        if any(isinstance(x, (float, np.floating)) for x in leaves) else "")
                raise ValueError(f"integer {big[0]} does not fit 64 bits{hint}"[:200])
            raise TypeError(f"cannot make a tensor from ragged or mixed data {data!r}"[:200])
        return arr
    lo, hi = int(min(leaves)), int(max(leaves))
    if 0 <= lo and hi < 1 << 64:
        return np.array(data, dtype=np.uint64)
    if lo < -(1 << 63) or hi >= 1 << 64:
        what = f"integer {lo if lo < -(1 << 63) else hi} fits"
    else:
        what = f"integers from {lo} to {hi} fit"
    raise ValueError(f"{what} no 64-bit integer dtype (int64 holds -2**63..2**63-1, uint64 "
                     f"0..2**64-1)"[:200])


def _view_of_buffer(buf: UOp, shape: tuple[int, ...]) -> UOp:
    return buf if shape == (buf.size,) else UOp(Ops.RESHAPE, buf.dtype, (buf,), shape)


def _from_host(arr: np.ndarray, d: DType, device: str) -> UOp:
    from tolk.dtype import f32_to_bf16
    from tolk.runtime.device import set_storage

    if d is dtypes.bfloat16:
        data = f32_to_bf16(arr)
    else:
        data = np.ascontiguousarray(arr, dtype=d.np)
    buf = UOp.buffer(d, int(arr.size), device)
    set_storage(buf, data)
    return _view_of_buffer(buf, tuple(int(s) for s in arr.shape))


__all__ = ["Tensor"]

# realize and friends live in callify, which builds on this module: imported last, so each
# call finds it in a module global instead of running an import statement (every realize,
# cache hits included, goes through here)
from tolk import callify as _callify  # noqa: E402
from tolk import gradient as _gradient  # noqa: E402
from tolk.engine import jit as _jit  # noqa: E402
from tolk.engine import realize as _realize  # noqa: E402
from tolk import nn as _nn  # noqa: E402,F401  (the neural-network methods, attached)
from tolk import spellings as _spellings  # noqa: E402,F401  (numpy's and PyTorch's names)
from tolk import indexing as _indexing  # noqa: E402
