"""Reverse-mode gradients of tensor graphs.

`gradients(root, targets, seed)` walks the lazy graph of `root` once, from its output back to
the targets, and returns the gradient of ``sum(root * seed)`` with respect to each target as
a lazy tensor: new graph nodes built from the forward graph's own nodes, so a gradient is
scheduled, fused and memory-planned like any other tensor (a forward value it reads is
computed again in the backward kernels unless it was realized).

Each op's rule is written once, in `_RULES`, over Tensors: the sources of an elementwise op
have the output's shape (tolk's front end broadcasts explicitly), a REDUCE_AXIS keeps its
reduced axes with size 1, and movement ops carry their arguments. Only float values carry
gradients: integer and bool nodes (indices, masks, comparisons) stop them, and so do buffer
states (`BUFFER`, an assign's `AFTER`) and constants. An op without a rule on the way to a
target raises a GradientError naming it; one on a branch that reaches no target is never
looked at."""
from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Sequence

from tolk.dtype import dtypes
from tolk.engine import realize as _engine_realize
from tolk.runtime import device as _device
from tolk.errors import GradientError
from tolk.uop.form import form_of
from tolk.uop.ops import Ops, UOp
from tolk.helpers import prod
from tolk.uop.shape import shape_of


def gradients(root, targets: Sequence, seed, strict: bool = True) -> list:
    """The gradients of ``(root * seed).sum()`` with respect to `targets` (Tensors whose
    nodes `root`'s graph reads), each a lazy tensor of its target's shape and dtype. A target
    the graph does not read is a GradientError when `strict` (unused, or read through a
    buffer state: a tensor realized or assigned after `root` was built), else None."""
    from tolk.tensor import Tensor
    views = [_view_chain(t.uop) for t in targets]
    for t, (below, _) in zip(targets, views):
        if form_of(below) is below and below.op is not Ops.BUFFER:
            raise GradientError(f"gradient with respect to a lazy constant of shape {t.shape} "
                                "(equal constants share one node): realize it, or mark it "
                                "requires_grad, before building the graph")
    wanted = {below for below, _ in views}
    # a padded view (a strided slice is one) also takes its own node's gradient: what the
    # graph reads of its padding elements, which are no values of what it views
    padded = [t.uop if any(n.op is Ops.PAD for n in chain) else None
              for t, (_, chain) in zip(targets, views)]
    top = root.uop
    order = top.toposort()  # (children first; an iterative walk)
    leads: dict[UOp, bool] = {}  # (reaches a target through ops that carry gradients)
    for n in order:
        leads[n] = n in wanted or (n.op not in _LEAVES and any(leads[s] for s in n.src))
    _refuse_hidden_paths(order, wanted, {below: b for t, (below, _) in zip(targets, views)
                                         if (b := _base_storage(t.uop)) is not None})
    # a target with no element asked for by name: its gradient is empty, read or not (a
    # concatenation leaves an empty part out of its graph)
    empty = [strict and 0 in t.shape for t in targets]
    missing = [t for t, (below, _), e in zip(targets, views, empty)
               if not e and not leads.get(below, False)]
    if missing and strict:
        raise GradientError(f"gradient: {len(missing)} target(s) (the first of shape "
                            f"{missing[0].shape}) do not appear in the graph of this tensor "
                            "(not used by it, or assigned or realized after it was built)")
    grads: dict[UOp, Tensor] = {top: seed}
    kept = wanted.union(u for u in padded if u is not None)
    for n in reversed(order):
        g = grads.pop(n, None) if n not in kept else grads.get(n)
        if g is None or n.op in _LEAVES or not any(leads[s] for s in n.src):
            continue
        rule = _RULES.get(n.op)
        if rule is None:
            raise GradientError(f"gradient: no rule for {n.op.name} (a node of shape "
                                f"{Tensor(n).shape} and dtype {n.dtype.name} on the way to a "
                                "target)")
        for s, gs in zip(n.src, rule(n, g, _Sources(n))):
            if gs is None or not leads[s] or not s.dtype.is_float:
                continue
            if gs.dtype is not s.dtype:
                gs = gs.cast(s.dtype)
            grads[s] = gs if s not in grads else grads[s] + gs
    out = []
    for t, (below, chain), pad_top, e in zip(targets, views, padded, empty):
        if e:
            out.append(t.zeros_like())
            continue
        if not leads.get(below, False):
            out.append(None)
            continue
        g = grads.get(below)
        g = t.zeros_like() if g is None else _through(g, chain)  # (None: read only through
        # ops without a gradient: comparisons, casts to ints, a where's condition)
        if pad_top is not None and (g_top := grads.get(pad_top)) is not None:
            shown = _through(Tensor.ones(*shape_of(below), dtype=g.dtype, device=g.device),
                             chain)  # 1 where the view shows a value, 0 on its padding
            g = (shown == 0).where(g_top, g)  # (chosen, not multiplied: an inf stays one)
        out.append(g)
    return out


# Which values of tensors marked requires_grad each buffer's contents came from: every call a
# schedule runs (a realize, an assign, a jit replay) reports its buffers while tensors are
# marked (`_after_call`), and a written buffer takes the union of what its store read
# (`_flows`; a copy's buffer what it copied, `_after_copy`). A graph
# holds no record of how a realized or assigned value was computed, so a gradient that would
# pass through one computed from a target is refused (`_refuse_hidden_paths`), never cut short.
_sources: weakref.WeakKeyDictionary[UOp, tuple] = weakref.WeakKeyDictionary()
# (each record a tuple of weak references: a record keeps no dropped tensor's buffer alive)
# a marked tensor's buffer -> what its contents came from when it was marked (weakly: a
# marked tensor dropped, as in ``w = (w - lr * g).realize().requires_grad_()``, is no target)
_leaf_sources: weakref.WeakKeyDictionary[UOp, weakref.WeakSet] = weakref.WeakKeyDictionary()
_flow_table: dict[UOp, tuple] = {}  # a kernel AST -> `_flows`


def mark_leaf(u: UOp) -> None:
    """A tensor marked requires_grad (over `u`) is a leaf: what its buffer came from moves
    to `_leaf_sources`, for `_refuse_hidden_paths` to tell it was computed from a target.
    The first mark installs the runtime's reports (until then a run pays nothing for them)."""
    if not _engine_realize.after_call:
        _engine_realize.after_call[:] = [_after_call]
        _device.after_copy[:] = [_after_copy]
    base = _base_storage(u)
    if base is None:
        return
    if (came := _sources.pop(base, None)) is not None:
        _leaf_sources[base] = weakref.WeakSet(_alive(came))


def _storage_of(u: UOp) -> UOp | None:
    while u.op is Ops.AFTER:
        u = u.src[0]
    return u if u.op in (Ops.BUFFER, Ops.SLICE) else None


def _base_storage(u: UOp) -> UOp | None:
    """The buffer below `u`'s view ops and assigns, if it stands over one."""
    while u.op in _MOVEMENT and u.src:
        u = u.src[0]
    return _storage_of(u)


def _flows(ast: UOp) -> tuple:
    """``(written slot, slots its value reads, partial)`` per store of a kernel AST: reads
    under a detach do not count; a partial store (into a view) keeps what was there."""
    flows = _flow_table.get(ast)
    if flows is not None:
        return flows
    if ast.op is Ops.COPY:
        flows = ((0, (1,), False),)
    else:
        found = []
        for n in ast.toposort():
            if n.op is not Ops.STORE:
                continue
            t, padded = n.src[0], False
            while t.src and t.op is not Ops.PARAM:
                padded = padded or t.op in (Ops.PAD, Ops.EXPAND)
                t = t.src[0]
            if t.op is not Ops.PARAM:
                continue
            size = shape_of(n.src[0])  # (fewer elements than the buffer, or through a pad or
            partial = padded or not all(isinstance(d, int) for d in size) or \
                prod(size) < t.arg[2]  # an expand, or symbolic: what was there may stay)
            reads, stack, seen = set(), list(n.src[1:]), set()
            while stack:
                u = stack.pop()
                if u in seen or (u.op is Ops.CAST and u.arg == "detach"):
                    continue
                seen.add(u)
                if u.op is Ops.PARAM:
                    reads.add(u.arg[0])
                else:
                    stack.extend(u.src)
            found.append((t.arg[0], tuple(sorted(reads)), partial))
        flows = tuple(found)
    if len(_flow_table) > 4096:
        _flow_table.clear()
    _flow_table[ast] = flows
    return flows


def _alive(record: tuple) -> set[UOp]:
    """The buffers of a record (weak references) that are still alive."""
    return {b for r in record if (b := r()) is not None}


def _record(came: set[UOp]) -> tuple:
    return tuple(weakref.ref(b) for b in came)


def _after_call(ast: UOp, args: list[UOp]) -> None:
    from tolk.tensor import marked_buffers
    marked = marked_buffers()
    if not marked and not _sources:
        return
    for out_slot, in_slots, partial in _flows(ast):
        if out_slot >= len(args):
            continue
        out = args[out_slot]
        came: set[UOp] = set()
        for i in in_slots + ((out_slot,) if partial else ()):
            if i >= len(args):
                continue
            a = args[i]
            if a in marked and a is not out:
                came.add(a)
            elif (r := _sources.get(a)) is not None:
                came.update(b for ref in r if (b := ref()) is not None)
        came.discard(out)
        if came and out not in marked:
            _sources[out] = _record(came)
        else:
            _sources.pop(out, None)


def _after_copy(src: UOp, new: UOp) -> None:
    """A buffer copied outside a schedule (a realize's private copies): the copy's record."""
    from tolk.tensor import marked_buffers
    if src in marked_buffers():
        _sources[new] = _record({src})
    elif (r := _sources.get(src)) is not None:
        _sources[new] = r


def _refuse_hidden_paths(order: list[UOp], wanted: set[UOp], stores: dict[UOp, UOp]) -> None:
    """A GradientError where a gradient would pass through a value the graph does not show
    how it was computed: an assign's result, or a buffer whose contents came from a target
    (`stores`: each target's node -> its buffer)."""
    all_stores = set(stores.values())
    carried = {order[-1]} if order else set()
    for n in reversed(order):
        if n not in carried:
            continue
        if n in wanted:  # (a target whose buffer was computed from another target)
            came = _leaf_sources.get(stores.get(n))
            if came is not None and not came.isdisjoint(all_stores - {stores.get(n)}):
                raise GradientError("gradient with respect to two tensors, one computed from "
                                    "the other (marking a computed tensor made it a leaf "
                                    "holding the value): mark a detach() of it instead")
            continue
        if n.op is Ops.AFTER and any(w in wanted for w in n.toposort()):
            raise GradientError("gradient: the graph reads an assign's result (an in-place op, "
                                "setitem or pending assign) whose value depends on a target; "
                                "gradients do not pass through assigns: build it from values")
        if n.op in (Ops.AFTER, Ops.STORE):  # (what an assign's value reads: checked too)
            carried.update(n.src)
            continue
        if n.op in (Ops.BUFFER, Ops.SLICE):
            r = _sources.get(n)
            came = _alive(r) if r is not None else _leaf_sources.get(n)  # (or a marked leaf)
            if came is not None and not came.isdisjoint(all_stores):
                what = ("this tensor itself was realized" if n is order[-1] or
                        _base_storage(order[-1]) is n else "it reads a value computed from "
                        "a target and realized or assigned")
                raise GradientError(f"gradient: {what} before this gradient (a loss's item or "
                                    "an activation read first): take gradients before reading "
                                    "such values, or detach() what should not carry them")
            continue
        if n.op in _LEAVES or (n.op is Ops.CAST and n.arg == "detach") or \
                not n.dtype.is_float:
            continue
        carried.update(s for s in n.src if s.dtype.is_float)


def _view_chain(u: UOp) -> tuple[UOp, list[UOp]]:
    """The node below the movement ops `u` stands on, and those ops, lowest first. A
    target's gradient is taken at that node (the front end folds a view of a view into one
    op, so the target's own node may not be in a graph built over it) and carried up the
    ops: the gradient of the values the view shows, every use of them counting (also
    through other views of the same tensor or buffer). A PAD among them (a strided slice
    is one) shows no value on its padding: there `gradients` adds what the graph reads of
    the view's own node."""
    chain = []
    while (u.op in _INJECTIVE or u.op is Ops.PAD) and len(u.src) == 1:
        chain.append(u)
        u = u.src[0]
    # (a broadcast view shows each value many times: its gradient is taken at the EXPAND
    # node, what the graph reads of the view and of views over it, not of the values)
    return u, chain[::-1]


def _through(g, chain: list[UOp]):
    """Gradient `g` of a view chain's lowest source carried up the chain."""
    for n in chain:
        if n.op is Ops.RESHAPE:
            g = g.reshape(n.arg)
        elif n.op is Ops.PERMUTE:
            g = g.permute(n.arg)
        elif n.op is Ops.SHRINK:
            g = g.shrink(n.arg)
        elif n.op is Ops.PAD:  # (zeros: no value of the view's source is there)
            g = g._pad(n.arg)
        else:
            g = g.flip(n.arg)
    return g


_INJECTIVE = frozenset({Ops.RESHAPE, Ops.PERMUTE, Ops.SHRINK, Ops.FLIP})
_MOVEMENT = _INJECTIVE | {Ops.EXPAND, Ops.PAD}


class _Sources:
    """A node's sources as Tensors, each made when a rule first asks for it (a tensor costs
    its registration), the node's own value (`out`) and the sources' shapes (no tensor)."""

    __slots__ = ("node", "made")

    def __init__(self, node: UOp) -> None:
        self.node, self.made = node, {}

    def __getitem__(self, i: int):
        t = self.made.get(i)
        if t is None:
            from tolk.tensor import Tensor
            t = self.made[i] = Tensor(self.node.src[i])
        return t

    def __len__(self) -> int:
        return len(self.node.src)

    @property
    def out(self):
        t = self.made.get("out")
        if t is None:
            from tolk.tensor import Tensor
            t = self.made["out"] = Tensor(self.node)
        return t

    def shape(self, i: int) -> tuple:
        return shape_of(self.node.src[i])


_LEAVES = frozenset({Ops.BUFFER, Ops.AFTER, Ops.CONST, Ops.PARAM, Ops.BIND, Ops.DEFINE_VAR,
                     Ops.SLICE})
Rule = Callable[[UOp, object, object], tuple]  # (node, its gradient, its `_Sources`)


def _no_binds(n: UOp) -> None:
    if len(n.src) > 1:
        raise GradientError(f"gradient: {n.op.name} of a symbolic shape (its bound variables) "
                            "has no rule")


def _reduce(n: UOp, g, s):
    op, axes = n.arg
    if op is Ops.ADD:
        return (g.expand(s.shape(0)),)
    if op in (Ops.MAX, Ops.MIN):  # (ties share the gradient equally, as PyTorch's)
        x, out = s[0], s.out
        hit = (x == out.expand(x.shape)).cast(g.dtype)
        return (hit * (g / hit.sum(axes, keepdim=True)).expand(x.shape),)
    raise GradientError(f"gradient: no rule for REDUCE_AXIS {op.name} (a product's gradient "
                        "divides by zeros)")


def _expand(n: UOp, g, s):
    _no_binds(n)
    grown = tuple(i for i, (a, b) in enumerate(zip(s.shape(0), shape_of(n))) if a != b)
    return (g.sum(grown, keepdim=True) if grown else g,)


def _permute(n: UOp, g, s):
    _no_binds(n)
    return (g.permute([n.arg.index(i) for i in range(len(n.arg))]),)


def _pad(n: UOp, g, s):
    _no_binds(n)
    return (g.shrink(tuple((b, b + size) for (b, _), size in zip(n.arg, s.shape(0)))),)


def _shrink(n: UOp, g, s):
    _no_binds(n)
    return (g._pad(tuple((b, size - e) for (b, e), size in zip(n.arg, s.shape(0)))),)


def _flip(n: UOp, g, s):
    _no_binds(n)
    return (g.flip(n.arg),)


def _reshape(n: UOp, g, s):
    _no_binds(n)
    return (g.reshape(s.shape(0)),)


def _where(n: UOp, g, s):
    return None, s[0].where(g, 0), s[0].where(0, g)


def _ties(g, a, b, first_wins):
    """The gradient of max (`first_wins` a > b) or min: to the larger / smaller, halved at
    ties (as PyTorch's maximum and minimum)."""
    win = (a > b) if first_wins else (a < b)
    share = win.cast(g.dtype) + (a == b).cast(g.dtype) * 0.5
    return g * share, g * (1 - share)


def _nonzero(d):
    """`d` with its zeros made ones: a denominator whose numerators are 0 where it is (a
    gradient of 0 there, not 0 / 0)."""
    return d + (d == 0).cast(d.dtype)


def _pow(n: UOp, g, s):
    a, b, out = s[0], s[1], s.out
    da = (b == 0).where(0, g * b * a ** (b - 1))
    db = ((a == 0) & (b >= 0)).where(0, g * out * a.log())
    return da, db


def _gather(n: UOp, g, s):
    src, idx = s[0], s[1]
    rest = src.shape[1:]
    zeros = src.full_like(0.0) if src.dtype.is_float else None
    if zeros is None:
        return None, None
    flat = idx.reshape(idx.numel()) if idx.ndim != 1 else idx
    return zeros.index_add(0, flat, g.reshape((idx.numel(),) + rest)), None


def _scatter_add(n: UOp, g, s):
    idx, vals = s[1], s[2]
    return g, None, g.gather(idx).cast(vals.dtype)


def _scan(n: UOp, g, s):
    op, axis = n.arg
    if op is not Ops.ADD:
        raise GradientError("gradient: no rule for a running product (SCAN MUL)")
    return (g.flip(axis).cumsum(axis).flip(axis),)


def _sort(n: UOp, g, s):
    axis, descending, indices = n.arg
    if indices:
        return (None,)
    from tolk.tensor import Tensor
    pos = Tensor(UOp(Ops.SORT, dtypes.int64, n.src, (axis, descending, True)))
    back = pos._sort(axis, False, True)  # (where each source element went)
    return (g.take_along_axis(back, axis),)


def _copy(n: UOp, g, s):
    return (g.to(s[0].device),)


_SQRT_PI_2 = 2 / math.sqrt(math.pi)
_RULES: dict[Ops, Rule] = {
    Ops.ADD: lambda n, g, s: (g, g),
    Ops.SUB: lambda n, g, s: (g, -g),
    Ops.MUL: lambda n, g, s: (g * s[1], g * s[0]),
    Ops.DIV: lambda n, g, s: (g / s[1], -g * s.out / s[1]),
    Ops.NEG: lambda n, g, s: (-g,),
    Ops.EXP: lambda n, g, s: (g * s.out,),
    Ops.EXP2: lambda n, g, s: (g * s.out * math.log(2),),
    Ops.EXPM1: lambda n, g, s: (g * s[0].exp(),),  # (out + 1 cancels for x << 0)
    Ops.LOG: lambda n, g, s: (g / s[0],),
    Ops.LOG2: lambda n, g, s: (g / (s[0] * math.log(2)),),
    Ops.LOG1P: lambda n, g, s: (g / (s[0] + 1),),
    Ops.SQRT: lambda n, g, s: (g / (s.out * 2),),
    Ops.RECIPROCAL: lambda n, g, s: (-g * s.out * s.out,),
    Ops.SIN: lambda n, g, s: (g * s[0].cos(),),
    Ops.COS: lambda n, g, s: (-g * s[0].sin(),),
    Ops.TAN: lambda n, g, s: (g * (s.out * s.out + 1),),
    Ops.TANH: lambda n, g, s: (g * (1 - s.out * s.out),),
    Ops.SIGMOID: lambda n, g, s: (g * s.out * (1 - s.out),),
    Ops.SINH: lambda n, g, s: (g * s[0].cosh(),),
    Ops.COSH: lambda n, g, s: (g * s[0].sinh(),),
    Ops.ASIN: lambda n, g, s: (g * (1 - s[0] * s[0]).rsqrt(),),
    Ops.ACOS: lambda n, g, s: (-g * (1 - s[0] * s[0]).rsqrt(),),
    Ops.ATAN: lambda n, g, s: (g / (s[0] * s[0] + 1),),
    Ops.ASINH: lambda n, g, s: (g * (s[0] * s[0] + 1).rsqrt(),),
    Ops.ACOSH: lambda n, g, s: (g * (s[0] * s[0] - 1).rsqrt(),),
    Ops.ATANH: lambda n, g, s: (g / (1 - s[0] * s[0]),),
    Ops.ERF: lambda n, g, s: (g * (-s[0] * s[0]).exp() * _SQRT_PI_2,),
    Ops.ERFC: lambda n, g, s: (-g * (-s[0] * s[0]).exp() * _SQRT_PI_2,),
    Ops.ABS: lambda n, g, s: (g * s[0].sign(),),
    Ops.POW: _pow,
    Ops.MAX: lambda n, g, s: _ties(g, s[0], s[1], True),
    Ops.MIN: lambda n, g, s: _ties(g, s[0], s[1], False),
    Ops.ATAN2: lambda n, g, s: (lambda d: (g * s[1] / d, -g * s[0] / d))(
        s[0] * s[0] + s[1] * s[1] + ((s[0] == 0) & (s[1] == 0)).cast(n.dtype)),  # (0 at
    # the origin, as PyTorch's; only there: a tiny pair's squares may round to 0)
    Ops.HYPOT: lambda n, g, s: (lambda d: (g * s[0] / d, g * s[1] / d))(
        _nonzero(s.out)),  # (0 at the origin, as a norm's)
    Ops.FMOD: lambda n, g, s: (g, -g * (s[0] / s[1]).trunc()),
    Ops.MOD: lambda n, g, s: (g, -g * (s[0] / s[1]).floor()),
    Ops.COPYSIGN: lambda n, g, s: (g * s[0].sign() *  # (0 at a zero, as abs and PyTorch)
                                      s[0].full_like(1.0).copysign(s[1]), None),
    Ops.WHERE: _where,
    Ops.CAST: lambda n, g, s: (None,) if n.arg == "detach" else (g,),
    Ops.CONTIGUOUS: lambda n, g, s: (g,),
    Ops.COPY: _copy,
    Ops.REDUCE_AXIS: _reduce,
    Ops.RESHAPE: _reshape,
    Ops.EXPAND: _expand,
    Ops.PERMUTE: _permute,
    Ops.PAD: _pad,
    Ops.SHRINK: _shrink,
    Ops.FLIP: _flip,
    Ops.GATHER: _gather,
    Ops.SCATTER_ADD: _scatter_add,
    Ops.SCAN: _scan,
    Ops.SORT: _sort,
}
for _op in (Ops.SIGN, Ops.FLOOR, Ops.CEIL, Ops.TRUNC, Ops.RINT):  # (flat: zero gradients)
    _RULES[_op] = lambda n, g, s: (g * 0,)
_RULES[Ops.IDIV] = lambda n, g, s: (g * 0, g * 0)  # (a float floor division: flat too)
_RULES[Ops.BITCAST] = lambda n, g, s: (None,)  # (the bits of another type: no gradient)
