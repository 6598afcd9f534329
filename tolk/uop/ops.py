"""The IR: `Ops`, the hash-consed `UOp` node, iterative walks, and the buffer slot counters.

A `UOp` is an immutable node ``(op, dtype, src, arg)``. Building the same fields twice gives
the same object (hash-consing), so ``is`` is structural equality. The intern table holds
nodes weakly: a graph nobody references is freed. ``UOp.key`` is a content hash that is the
same in every process, and every walk is iterative so 100,000-node chains are fine.

Args are plain data only (None, bool, int, float, str, bytes, tuples, `Ops`, `DType` and
registered NamedTuples), so a graph can be hashed and exported without pickle.
"""

from __future__ import annotations

import hashlib
import itertools
import struct
import threading
import types
import weakref
from collections.abc import Callable
from typing import Any, NamedTuple

try:
    from _weakref import _remove_dead_weakref
except ImportError:  # not CPython: the same check in two steps
    def _remove_dead_weakref(table: dict, key: Any) -> None:
        ref = table.get(key)
        if ref is not None and ref() is None:
            table.pop(key, None)

from tolk.dtype import DType, dtypes


_AUTO = object()


def auto() -> object:
    """In the body of `Ops`: the next member (numbered in order of definition, from 1)."""
    return _AUTO


class _OpsType(type):
    """The metaclass of `Ops`: an int enum whose members are plain class attributes.

    Not `enum.IntEnum`: on Python 3.11 every ``Ops.X`` of an enum class goes through its
    metaclass's ``__getattr__`` hook, some five times the cost of a plain class attribute, and
    the passes read ``Ops.X`` in their inner loops (a third of a cold schedule's time).
    """

    def __new__(mcs, name: str, bases: tuple, ns: dict):
        names = [k for k, v in ns.items() if v is _AUTO]
        cls = super().__new__(mcs, name, bases, {k: v for k, v in ns.items() if v is not _AUTO})
        members: dict[str, Any] = {}
        for value, key in enumerate(names, start=1):
            member = int.__new__(cls, value)
            object.__setattr__(member, "name", key)
            members[key] = member
            type.__setattr__(cls, key, member)
        type.__setattr__(cls, "_members", types.MappingProxyType(members))
        type.__setattr__(cls, "_by_value", {int(m): m for m in members.values()})
        return cls

    def __call__(cls, value: Any):
        member = cls._by_value.get(value) if type(value) is int or type(value) is cls else None
        if member is None:
            raise ValueError(f"{value!r} is not a valid {cls.__name__}")
        return member

    def __getitem__(cls, name: str):
        return cls._members[name]

    def __iter__(cls):
        return iter(cls._members.values())

    def __len__(cls) -> int:
        return len(cls._members)

    def __contains__(cls, x: Any) -> bool:
        return type(x) is cls

    @property
    def __members__(cls) -> types.MappingProxyType:
        return cls._members

    def __setattr__(cls, attr: str, value: Any) -> None:
        if attr in cls._members:
            raise AttributeError(f"cannot reassign {cls.__name__}.{attr}")
        type.__setattr__(cls, attr, value)

    def __delattr__(cls, attr: str) -> None:
        if attr in cls._members:
            raise AttributeError(f"cannot delete {cls.__name__}.{attr}")
        type.__delattr__(cls, attr)


class Ops(int, metaclass=_OpsType):
    """Every node kind. Names are the contract between modules (and the export format).

    An IntEnum in all that tolk uses of one: members are ints numbered from 1 in the order
    below, with a ``name``; ``Ops(value)``, ``Ops[name]``, ``Ops.__members__``, iteration
    and ``len(Ops)`` work as on an enum; ``repr`` and ``str`` give ``Ops.NAME``.
    """

    # storage, parameters, variables, constants
    BUFFER = auto()
    PARAM = auto()
    DEFINE_VAR = auto()
    BIND = auto()
    CONST = auto()
    # unary
    NEG = auto()
    EXP = auto()
    LOG = auto()
    SQRT = auto()
    RECIPROCAL = auto()
    SIN = auto()
    COS = auto()
    TANH = auto()
    ABS = auto()
    SIGN = auto()
    NOT = auto()
    TRUNC = auto()
    # binary
    ADD = auto()
    SUB = auto()
    MUL = auto()
    DIV = auto()
    IDIV = auto()
    MOD = auto()
    POW = auto()
    MAX = auto()
    MIN = auto()
    CMPLT = auto()
    CMPLE = auto()
    CMPEQ = auto()
    CMPNE = auto()
    AND = auto()
    OR = auto()
    XOR = auto()
    # ternary
    WHERE = auto()
    # type changes and reductions
    CAST = auto()
    BITCAST = auto()
    REDUCE_AXIS = auto()
    GATHER = auto()
    # movement (tensor graph only)
    RESHAPE = auto()
    PERMUTE = auto()
    EXPAND = auto()
    PAD = auto()
    SHRINK = auto()
    FLIP = auto()
    # realization
    CONTIGUOUS = auto()
    COPY = auto()
    STORE = auto()
    LOAD = auto()
    AFTER = auto()
    # multi-device
    MSTACK = auto()
    MSELECT = auto()
    # functions
    SINK = auto()
    CALL = auto()
    LINEAR = auto()
    END = auto()
    # planned views
    SLICE = auto()
    # a constant's device (the only source a CONST may have)
    DEVICE = auto()
    NOOP = auto()
    # unary, added later (numbered after the rest: earlier numbers stay as they were)
    EXP2 = auto()
    LOG2 = auto()
    # REDUCE_AXIS ops giving an index (int64) along one axis: numpy's argmax and argmin
    ARGMAX = auto()
    ARGMIN = auto()
    # running reduction along one axis, arg ``(op, axis)`` with op ADD or MUL, the value's
    # shape (numpy's cumsum and cumprod, left to right)
    SCAN = auto()
    # unary: numpy's floor and ceil (infinities, nan and -0.0 stay)
    FLOOR = auto()
    CEIL = auto()
    # unary: numpy's log1p and expm1 (accurate near 0, where log(1 + x) and exp(x) - 1 are not)
    LOG1P = auto()
    EXPM1 = auto()
    # (base, idx, values): base with values added at rows idx along axis 0, numpy's add.at
    # on a copy (a row named twice gets both; each add in the promoted dtype, cast back at
    # once), the shape and dtype of base
    SCATTER_ADD = auto()
    # unary: numpy's tan, sinh, cosh, arcsin, arccos, arctan, arcsinh, arccosh, arctanh and
    # rint (round half to even)
    TAN = auto()
    SINH = auto()
    COSH = auto()
    ASIN = auto()
    ACOS = auto()
    ATAN = auto()
    ASINH = auto()
    ACOSH = auto()
    ATANH = auto()
    RINT = auto()
    # binary: numpy's arctan2, hypot and fmod (the remainder with the sign of the dividend)
    ATAN2 = auto()
    HYPOT = auto()
    FMOD = auto()
    # binary: numpy's copysign (the magnitude of the first, the sign bit of the second)
    COPYSIGN = auto()
    # sort along one axis, arg ``(axis, descending, indices)``: the values (the source's
    # dtype) or their int64 positions in the source (``indices``), numpy's stable sort (nan
    # last ascending, first descending; equal values keep their order either way); the
    # source's shape
    SORT = auto()
    # unary: the error function and its complement, 1 - erf(x) (accurate where erf(x) is
    # near 1), each value as Python's math.erf and math.erfc give it, in the source's dtype
    ERF = auto()
    ERFC = auto()
    # binary: numpy's left_shift and right_shift of integers (a count past the width: 0, or
    # -1 for a negative value shifted right)
    SHL = auto()
    SHR = auto()
    # unary: the logistic function 1 / (1 + exp(-x)), 0 where exp(-x) overflows (an op of its
    # own so that its gradient, y * (1 - y), is finite everywhere)
    SIGMOID = auto()

    name: str  # in the member's own __dict__ (an int subclass takes no slots)

    @property
    def value(self) -> int:
        return int(self)

    def __repr__(self) -> str:
        return f"Ops.{self.name}"

    __str__ = __repr__

    def __reduce__(self):  # copies and pickles are the member itself
        return Ops, (int(self),)

    def __setattr__(self, attr: str, value: Any) -> None:
        raise AttributeError(f"{self!r} is read-only")


class GroupOp:
    """Sets of ops that passes treat alike."""

    Unary = frozenset(
        {Ops.NEG, Ops.EXP, Ops.LOG, Ops.SQRT, Ops.RECIPROCAL, Ops.SIN, Ops.COS, Ops.TANH,
         Ops.ABS, Ops.SIGN, Ops.NOT, Ops.TRUNC, Ops.EXP2, Ops.LOG2, Ops.FLOOR, Ops.CEIL,
         Ops.LOG1P, Ops.EXPM1, Ops.TAN, Ops.SINH, Ops.COSH, Ops.ASIN, Ops.ACOS, Ops.ATAN,
         Ops.ASINH, Ops.ACOSH, Ops.ATANH, Ops.RINT, Ops.ERF, Ops.ERFC,
         Ops.SIGMOID}
    )
    Binary = frozenset(
        {Ops.ADD, Ops.SUB, Ops.MUL, Ops.DIV, Ops.IDIV, Ops.MOD, Ops.POW, Ops.MAX, Ops.MIN,
         Ops.CMPLT, Ops.CMPLE, Ops.CMPEQ, Ops.CMPNE, Ops.AND, Ops.OR, Ops.XOR, Ops.ATAN2,
         Ops.HYPOT, Ops.FMOD, Ops.SHL, Ops.SHR, Ops.COPYSIGN}
    )
    Ternary = frozenset({Ops.WHERE})
    ALU = Unary | Binary | Ternary
    Elementwise = ALU | {Ops.CAST, Ops.BITCAST}
    Comparison = frozenset({Ops.CMPLT, Ops.CMPLE, Ops.CMPEQ, Ops.CMPNE})
    Movement = frozenset({Ops.RESHAPE, Ops.PERMUTE, Ops.EXPAND, Ops.PAD, Ops.SHRINK, Ops.FLIP})
    Buffer = frozenset({Ops.BUFFER, Ops.PARAM})


class KernelInfo(NamedTuple):
    """The arg of a kernel AST's SINK: its presence marks a sink as a kernel, not a tensor graph."""

    name: str = "kernel"


# NamedTuple arg types that the key and the export format know by name.
ARG_TYPES: dict[str, type] = {"KernelInfo": KernelInfo}


def register_arg_type(cls: type) -> type:
    """Allow NamedTuple `cls` as (part of) a UOp arg; returns `cls` so it works as a decorator."""
    ARG_TYPES[cls.__name__] = cls
    return cls


# ---------------------------------------------------------------------------------------------
# arg encoding: one canonical byte string per arg, shared by `UOp.key` and the export format


def _varint(n: int, out: bytearray) -> None:
    n = (n << 1) ^ (n >> 63) if -(1 << 63) <= n < (1 << 63) else None
    if n is None:
        raise ValueError("integer arg out of the 64-bit range")
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _uvarint(n: int, out: bytearray) -> None:
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def encode_arg(arg: Any, out: bytearray) -> None:
    """Append the canonical encoding of `arg` to `out`; `TypeError` for a type args may not hold."""
    t = type(arg)
    if arg is None:
        out += b"N"
    elif arg is True:
        out += b"T"
    elif arg is False:
        out += b"F"
    elif t is int:
        if -(1 << 63) <= arg < (1 << 63):
            out += b"i"
            _varint(arg, out)
        elif -(1 << 64) < arg < (1 << 64):  # a uint64 constant past int64: sign, magnitude
            out += b"I"
            out.append(arg < 0)
            _uvarint(abs(arg), out)
        else:
            raise ValueError(f"integer arg {arg} is beyond 64 bits")
    elif t is float:
        out += b"f" + struct.pack("<d", arg)
    elif t is str:
        b = arg.encode("utf-8")
        out += b"s"
        _uvarint(len(b), out)
        out += b
    elif t is bytes:
        out += b"b"
        _uvarint(len(arg), out)
        out += arg
    elif t is tuple:
        out += b"t"
        _uvarint(len(arg), out)
        for a in arg:
            encode_arg(a, out)
    elif t is Ops or t is DType:
        out += b"O" if t is Ops else b"D"
        encode_arg(arg.name, out)
    elif isinstance(arg, tuple) and ARG_TYPES.get(t.__name__) is t:
        out += b"K"
        encode_arg(t.__name__, out)
        encode_arg(tuple(arg), out)
    else:
        raise TypeError(f"UOp arg of type {t.__name__} cannot be hashed or exported: {arg!r}")


# ---------------------------------------------------------------------------------------------
# buffer slots


_slot_lock = threading.Lock()
_user_slots = itertools.count(0)
_internal_slots = itertools.count(1)


def fresh_buffer_slot() -> int:
    """Next user-facing buffer slot (non-negative, increasing, process-wide, thread-safe)."""
    with _slot_lock:
        return next(_user_slots)


def fresh_internal_buffer_slot() -> int:
    """Next schedule-internal buffer slot: negative and strictly decreasing, thread-safe.

    A slot identifies a buffer (BUFFER nodes hash-cons on it), so internal slots from this
    counter never collide with user slots, nor with each other within this process.
    """
    with _slot_lock:
        return -next(_internal_slots)


# ---------------------------------------------------------------------------------------------
# the node


_intern: dict[tuple, weakref.ref] = {}

# A node's `_cache` until something is stored in it: one shared, read-only empty mapping, so
# the many nodes nothing is ever remembered on (the calls a schedule builds, the slices a plan
# makes) carry no dict of their own. Read ``u._cache`` freely; store through `node_cache`.
_NO_CACHE = types.MappingProxyType({})
_cache_lock = threading.Lock()


def node_cache(u: UOp) -> dict:
    """The dict of what is remembered on `u`, to store into: made on first use, once even
    when threads ask together (a store into ``u._cache`` itself raises TypeError before)."""
    cache = u._cache
    if cache.__class__ is dict:
        return cache
    with _cache_lock:
        cache = u._cache
        if cache.__class__ is not dict:
            cache = u._cache = {}
    return cache


# canonical tuple args -> one object for all nodes that have them, so that the graphs of two
# runs of one program (a cached schedule's key and a new graph's, say) hold the very same
# arg objects and compare by identity; bounded, and only a shortcut (equal args are equal)
_shared_args: dict[tuple, tuple] = {}
_SHARED_ARGS_MAX = 1 << 14


class _Ref(weakref.ref):
    """A weak reference to an interned object (a node, a form) that remembers its table key."""

    __slots__ = ("key",)


def claim_entry(table: dict, key: Any, ref: weakref.ref, got: weakref.ref) -> Any:
    """The object interned under `key` in a table of weak references, after
    ``table.setdefault(key, ref)`` returned `got`, another thread's entry: that entry's object
    if it is alive, else `ref`'s (a dead entry whose callback has not run yet is removed and
    the insert tried again). Only atomic dict steps: a dead entry is removed only while it is
    still the entry, so a live one another thread inserts meanwhile is never overwritten (a
    check and a write, even under a lock, let a node alive in one thread lose its entry to
    another thread's equal node: two live nodes for one key)."""
    while True:
        other = got()
        if other is not None:
            return other
        _remove_dead_weakref(table, key)
        got = table.setdefault(key, ref)
        if got is ref:
            return ref()


def _drop(ref: _Ref, _remove=_remove_dead_weakref, _table=_intern) -> None:
    """Called when an interned node dies: remove its entry unless a live node took the key.

    `_remove_dead_weakref` deletes the entry only if it still holds a dead reference, in one
    step, so it never removes the entry of a node another thread has just built."""
    _remove(_table, ref.key)


class _Tag:
    """A private marker: canonical args tagged with one can never equal a user's plain arg."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name


_BOOL, _FLOAT, _OP, _DTYPE, _NAMED, _TUPLE = (_Tag(n) for n in ("b", "f", "o", "d", "k", "t"))
_PLAIN = (int, str, type(None), bytes)


MAX_ARG_DEPTH = 32  # tuples in a node's arg nest at most this deep (the export format's bound)


def _canon(arg: Any, depth: int = 0) -> Any:
    """`arg` made safe as an intern-table key: Python says ``1 == 1.0 == True`` and
    ``0.0 == -0.0`` and ``Ops.ADD == its int value``, but those must stay distinct nodes.
    An arg nested deeper than `MAX_ARG_DEPTH` is a ValueError."""
    t = type(arg)
    if t in _PLAIN:
        return arg
    if t is bool:
        return (_BOOL, arg)
    if t is float:  # by its bits alone: a NaN equals no float, not even itself
        return (_FLOAT, struct.pack("<d", arg))
    if t is tuple:
        if depth >= MAX_ARG_DEPTH and arg:
            raise ValueError(f"a UOp arg nested deeper than {MAX_ARG_DEPTH} levels")
        for a in arg:  # a loop, not all(): shapes are most args, and this runs per new node
            if type(a) not in _PLAIN:
                return (_TUPLE, *(_canon(a, depth + 1) for a in arg))
        return arg
    if t is Ops:
        return (_OP, arg.name)
    if t is DType:
        return (_DTYPE, arg)
    if isinstance(arg, tuple) and ARG_TYPES.get(t.__name__) is t:
        return (_NAMED, t, _canon(tuple(arg), depth + 1))
    raise TypeError(f"a UOp arg holds None, bools, ints, floats, str, bytes, Ops, DTypes, "
                    f"tuples and registered named tuples (ARG_TYPES), got {t.__name__} {arg!r}")


# Whole-graph passes that keep their scratch on the nodes: one at a time (see `scratch_pass`)
_scratch_lock = threading.RLock()
_scratch_passes = [0]  # passes started
SCRATCH_RERUNS = 32  # a pass interrupted this many times in a row gives up
_ESCAPED = "_tolk_scratch_pass_failed"  # set on an exception a pass raised as its own


def scratch_pass(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(token, *args)``, a pass over a graph that keeps what it knows of each node on the
    node: it sets ``node._mark = token`` and then owns ``node._scratch``; a node whose mark is
    not `token` has not been met by this pass (its scratch is another pass's, or stale).

    An attribute of a node already at hand costs far less than a lookup in a dict of every node
    met once a graph outgrows the CPU caches. Passes run one at a time; one started inside
    another on the same thread (by a finalizer the garbage collector runs, say) overwrites the
    outer pass's scratch, so the outer pass runs again, whatever it returned or raised, except
    an error that the inner pass raised as its own, which goes on up. A pass interrupted on
    each of `SCRATCH_RERUNS` reruns raises `RuntimeError`. `token` is a fresh object per run.
    Scratch left behind is never read again: keep in it only what the node may keep alive
    (ints, nodes that do not lead back to it)."""
    with _scratch_lock:
        for _ in range(SCRATCH_RERUNS + 1):
            _scratch_passes[0] += 1
            started = _scratch_passes[0]
            try:
                out = fn(object(), *args)
            except Exception as e:
                if _scratch_passes[0] == started or getattr(e, _ESCAPED, False):
                    setattr(e, _ESCAPED, True)
                    raise
                continue  # what it met was the other pass's scratch: not an error of its own
            if _scratch_passes[0] == started:
                return out
    name = getattr(fn, "__name__", repr(fn))
    raise RuntimeError(f"scratch pass {name} was interrupted by another pass started inside it "
                       f"on each of its {SCRATCH_RERUNS + 1} runs")


class UOp:
    """An immutable, hash-consed IR node. Construct as ``UOp(op, dtype, src, arg)``.

    ``arg_key`` is the arg as interning compares it: nodes of equal op, dtype and src are one
    node exactly when their arg keys are equal (args alone are not: ``1 == 1.0 == True``).

    Invariant: for equal ``(op, dtype, src, arg)`` at most one live UOp exists.

    ``_mark`` and ``_scratch`` belong to the whole-graph pass running in `scratch_pass`: what
    it keeps of a node, on the node (see there).
    """

    __slots__ = ("op", "dtype", "src", "arg", "arg_key", "_key", "_cache", "_form", "_links",
                 "_mark", "_scratch", "__weakref__")
    op: Ops
    dtype: DType
    src: tuple[UOp, ...]
    arg: Any
    arg_key: Any

    def __new__(cls, op: Ops, dtype: DType = dtypes.void, src: tuple[UOp, ...] = (),
                arg: Any = None):
        if type(src) is not tuple:
            src = tuple(src)
        arg_key = arg if arg is None or type(arg) is int else _canon(arg)
        k = (op, dtype, src, arg_key)
        ref = _intern.get(k)
        if ref is not None:
            node = ref()
            if node is not None and node.op is op:  # (an int equal to an op is refused below)
                return node
        if type(op) is not Ops or not isinstance(dtype, DType):  # a new node: checked once
            raise TypeError(f"UOp needs an Ops member and a DType, got {op!r} and {dtype!r}")
        for s in src:
            if type(s) is not UOp:
                raise TypeError(f"UOp {op.name} sources must be UOps, got "
                                f"{type(s).__name__} {s!r}")
        if type(arg_key) is tuple:  # one object per distinct arg: see _shared_args
            if len(_shared_args) >= _SHARED_ARGS_MAX:
                _shared_args.clear()
            shared = _shared_args.setdefault(arg_key, arg_key)
            if shared is not arg_key:  # the node, its arg and its intern key hold that one
                if arg is arg_key:
                    arg = shared
                arg_key = shared
                k = (op, dtype, src, shared)
        node = object.__new__(cls)
        node.op, node.dtype, node.src, node.arg = op, dtype, src, arg
        node.arg_key = arg_key
        node._key = node._form = node._links = None  # made when asked for (see tolk.uop.form)
        node._mark = node._scratch = None
        node._cache = _NO_CACHE  # a dict of its own when something is stored: `node_cache`
        ref = _Ref(node, _drop)
        ref.key = k
        # insert-if-absent is one atomic dict operation: two threads building one node get one
        # object; the loser's node is dropped (its callback finds a live entry and leaves it)
        got = _intern.setdefault(k, ref)
        if got is ref:
            return node
        return claim_entry(_intern, k, ref, got)

    def __reduce__(self):
        raise TypeError("UOps are not pickled; use tolk.uop.export_graph")

    def __copy__(self) -> UOp:
        return self

    def __deepcopy__(self, memo) -> UOp:
        return self

    # -- construction helpers -----------------------------------------------------------------

    def replace(self, **fields: Any) -> UOp:
        """This node with some of ``op``, ``dtype``, ``src``, ``arg`` changed."""
        bad = set(fields) - {"op", "dtype", "src", "arg"}
        if bad:
            raise TypeError(f"UOp.replace got unknown fields {sorted(bad)}")
        return UOp(
            fields.get("op", self.op),
            fields.get("dtype", self.dtype),
            fields.get("src", self.src),
            fields.get("arg", self.arg),
        )

    @staticmethod
    def const(dtype: DType, value: Any) -> UOp:
        return UOp(Ops.CONST, dtype, (), value)

    @staticmethod
    def sink(*srcs: UOp, arg: Any = None) -> UOp:
        return UOp(Ops.SINK, dtypes.void, srcs, arg)

    @staticmethod
    def buffer(dtype: DType, size: int, device: str = "CPU", slot: int | None = None) -> UOp:
        """A BUFFER of `size` elements; a fresh user-facing slot unless `slot` is given."""
        if slot is None:
            slot = fresh_buffer_slot()
        return UOp(Ops.BUFFER, dtype, (), (slot, device, size))

    @staticmethod
    def internal_buffer(dtype: DType, size: int, device: str = "CPU") -> UOp:
        """A BUFFER with a fresh schedule-internal (negative) slot."""
        return UOp(Ops.BUFFER, dtype, (), (fresh_internal_buffer_slot(), device, size))

    @staticmethod
    def param(slot: int, dtype: DType, size: int, device: str = "CPU") -> UOp:
        return UOp(Ops.PARAM, dtype, (), (slot, device, size))

    # -- buffer accessors (BUFFER and PARAM share the arg layout (slot, device, size)) --------

    @property
    def slot(self) -> int:
        return self.arg[0]

    @property
    def device(self) -> str:
        return self.arg[1]

    @property
    def size(self) -> int:
        return self.arg[2]

    @property
    def nbytes(self) -> int:
        return self.arg[2] * self.dtype.itemsize

    @property
    def is_internal_buffer(self) -> bool:
        return self.op is Ops.BUFFER and self.arg[0] < 0

    # -- walks --------------------------------------------------------------------------------

    def toposort(self, enter: Callable[[UOp], bool] | None = None) -> list[UOp]:
        """All nodes reachable from this one, children before parents (iterative DFS).

        With `enter`, a node whose ``enter(node)`` is false is listed but its sources are not
        walked (a gate, e.g. to skip kernel ASTs). Sources are visited left to right, so the
        order is deterministic.
        """
        order: dict[UOp, None] = {}
        nodes = [self]
        if enter is None:  # the common, ungated walk: leaves are listed without a frame
            frames = [iter(self.src)]
            while frames:
                for s in frames[-1]:
                    if s not in order:
                        if s.src:
                            nodes.append(s)
                            frames.append(iter(s.src))
                            break
                        order[s] = None
                else:
                    frames.pop()
                    order[nodes.pop()] = None
            return list(order)
        frames = [iter(self.src if enter(self) else ())]
        while frames:
            for s in frames[-1]:  # resume this node's sources where we left off
                if s not in order:
                    nodes.append(s)
                    frames.append(iter(s.src if enter(s) else ()))
                    break
            else:
                frames.pop()
                order[nodes.pop()] = None
        return list(order)

    def substitute(self, mapping: dict[UOp, UOp]) -> UOp:
        """This graph with every occurrence of a key of `mapping` replaced by its value."""
        if not mapping:
            return self
        out: dict[UOp, UOp] = {}
        for node in self.toposort(enter=lambda n: n not in mapping):
            if node in mapping:
                out[node] = mapping[node]
                continue
            src = node.src
            new_src = tuple([out[s] for s in src])
            out[node] = node if new_src == src else UOp(node.op, node.dtype, new_src, node.arg)
        return out[self]

    @property
    def key(self) -> bytes:
        """A content hash of the whole graph, identical across processes (cached per node)."""
        k = self._key
        if k is not None:
            return k
        for node in self.toposort(enter=lambda n: n._key is None):
            if node._key is None:
                h = hashlib.blake2b(digest_size=20)
                enc = bytearray(node.op.name.encode())
                enc += b"|" + node.dtype.name.encode() + b"|"
                encode_arg(node.arg, enc)
                h.update(enc)
                for s in node.src:
                    h.update(s._key)
                node._key = h.digest()
        return self._key

    # -- printing -----------------------------------------------------------------------------

    def short(self) -> str:
        """One line naming this node: op, dtype, arg and the number of sources."""
        arg = "" if self.arg is None else f" arg={self.arg!r}"
        src = f" ({len(self.src)} src)" if self.src else ""
        return f"{self.op.name} {self.dtype.name}{arg}{src}"

    def __repr__(self) -> str:
        return render_graph(self)


def render_graph(root: UOp, max_lines: int = 400) -> str:
    """The graph under `root` as numbered lines, children first; shared nodes printed once."""
    nodes = root.toposort()
    ids = {n: i for i, n in enumerate(nodes)}
    lines = []
    skip_to = len(nodes) - max_lines if len(nodes) > max_lines else 0
    if skip_to:
        lines.append(f"  ... {skip_to} earlier nodes not shown")
    for n in nodes[skip_to:]:
        src = ", ".join(f"%{ids[s]}" for s in n.src)
        arg = "" if n.arg is None else f" {n.arg!r}"
        lines.append(f"  %{ids[n]} = {n.op.name}:{n.dtype.name}{arg}"
                     + (f" ({src})" if src else ""))
    return f"<UOp graph, {len(nodes)} nodes, root %{ids[root]}>\n" + "\n".join(lines)


def intern_table_size() -> int:
    """How many live nodes the intern table holds (for tests of memory behaviour)."""
    return len(_intern)
