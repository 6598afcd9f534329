"""Forms: a tensor graph's structure with its buffers and variable values left open, per node.

A node's *form* is its structure with every BUFFER standing for any buffer of its dtype,
device and size and every BIND for its variable at any value: ``a * 2`` and ``b * 2`` over
two buffers of one dtype, device and size have one form. A node with no BUFFER or BIND below
it is its own form (nodes are hash-consed: one structure, one node); the others have a
`Form`, interned, so equal forms are one object. A form is made once per node from its
sources' forms, as a tensor op builds the node (`tolk.tensor`), so a program built again
knows it is the same program without a walk of its graph; and since a node's shape and
device follow from its form, the `Form` carries them and the second build infers no shapes.

A form does not say which buffers are the same buffer: ``a * b`` and ``a * a`` have one
form. The node's *leaf links* do: a BUFFER or BIND links to itself, any other node to the
links of its only source that has any, or to the tuple of its sources' links. `leaves` walks
the links under some roots (one tuple per node where two sources with leaves meet, so far
fewer than the nodes) and returns the leaves in first-use order with a canonical description
of which occurrence is which leaf. Two graphs with equal root forms and equal descriptions
are one program on other buffers and values: the structure is the same, and so is every
place each buffer is used (hash-consing then makes the sharing of nodes the same too): what
`tolk.schedule.program_key` finds by describing every node.

A BIND that is not a variable bound to a plain constant has no form (None), nor has any node
above it, nor an AFTER with no buffer below it: such graphs take the slow path. The interning
table holds forms weakly: a form lives while a node, a cache or a form above it holds it (a
form holds its sources' forms), so a program whose root form a cache keeps finds all of its
forms again when it is built anew.
"""

from __future__ import annotations

from typing import Any

from tolk.uop.ops import Ops, UOp, _Ref, _remove_dead_weakref, claim_entry

__all__ = ["Form", "form_of", "leaves", "links_of", "may_bind", "AFTER", "BINDS"]

AFTER, BINDS = 1, 2  # Form.flags: an AFTER (a pending write) / a BIND is in the graph


class Form:
    """An interned form of a node with a BUFFER or BIND below it.

    `flags`: `AFTER` and `BINDS`, for what is in the graph. `shape` and `device`: those of
    every node of this form, once one of them has been given its shape (None before). `key`:
    what it was interned by, holding the forms of its sources (and its buffer-free source
    nodes), so a form lives as long as some node or cache holds it or a form above it."""

    __slots__ = ("flags", "shape", "device", "key", "__weakref__")

    def __init__(self, flags: int, key: tuple):
        self.flags = flags
        self.key = key
        self.shape = self.device = None


# (op, dtype, arg key, source forms) or (BUFFER, dtype, device, size) -> its live form
_forms: dict[tuple, _Ref] = {}
_FREE = object()  # `_form` of a node with no BUFFER or BIND below it: the node is its form
_NONE = object()  # `_form` of a node with no form
_LEAF = object()  # `_links` of a BUFFER or BIND: the node itself (a node holding itself
#                   would be a reference cycle, and a buffer must die when its last user does)


def _drop(ref: _Ref, _remove=_remove_dead_weakref, _table=_forms) -> None:
    _remove(_table, ref.key)  # only if the entry still holds a dead reference


def _form(key: tuple, flags: int, _get=_forms.get) -> Form:
    """The live form of `key`, made (with `flags`) if there is none."""
    ref = _get(key)
    if ref is not None:
        f = ref()
        if f is not None:
            return f
    f = Form(flags, key)
    ref = _Ref(f, _drop)
    ref.key = key
    got = _forms.setdefault(key, ref)  # one atomic step: two threads get one form
    return f if got is ref else claim_entry(_forms, key, ref, got)


def _make(n: UOp, _bind=Ops.BIND, _after=Ops.AFTER) -> None:
    """Set ``n._form`` and ``n._links`` from its sources' (all known). Runs for every node a
    tensor op builds: one and two sources are spelled out."""
    src = n.src
    op = n.op
    k = len(src)
    if k == 2 and op is not _bind:
        a, b = src
        fa, fb = a._form, b._form
        if fa is _FREE:
            if fb is _FREE:  # (an AFTER over no buffer is not a tensor graph's: no form)
                n._form = _FREE if op is not _after else _NONE
                return
            if fb is _NONE:
                n._form = _NONE
                return
            fa, flags = a, fb.flags
        elif fb is _FREE:
            if fa is _NONE:
                n._form = _NONE
                return
            fb, flags = b, fa.flags
        elif fa is _NONE or fb is _NONE:
            n._form = _NONE
            return
        else:
            flags = fa.flags | fb.flags
        f = _form((op, n.dtype, n.arg_key, fa, fb), flags | (op is _after))
        la, lb = a._links, b._links
        if la is _LEAF:
            la = a
        if lb is _LEAF:
            lb = b
        n._links = la if lb is None else lb if la is None else (lb, la)
        n._form = f  # last: a node with a form has its links (another thread may look)
        return
    if k == 1:
        s = src[0]
        fs = s._form
        if fs is _FREE or fs is _NONE:
            n._form = fs if op is not _after else _NONE
            return
        f = _form((op, n.dtype, n.arg_key, fs), fs.flags | (op is _after))
        n._links = s if s._links is _LEAF else s._links
        n._form = f
        return
    if not k:
        if op is Ops.BUFFER:
            n._links = _LEAF
            n._form = _form((op, n.dtype, n.arg[1], n.arg[2]), 0)
        else:
            n._form = _FREE
        return
    if op is _bind:  # the variable's form: the value is the bind's own business
        var, value = src[0], src[-1]
        if k != 2 or var._form is not _FREE or value.op is not Ops.CONST or value.src:
            n._form = _NONE
            return
        n._links = _LEAF
        n._form = _form((op, n.dtype, n.arg_key, var), BINDS)
        return
    forms = [s._form for s in src]
    if _NONE in forms:
        n._form = _NONE
        return
    if all(f is _FREE for f in forms):
        n._form = _FREE if op is not _after else _NONE
        return
    flags = int(op is _after)
    for f in forms:
        if f is not _FREE:
            flags |= f.flags
    f = _form((op, n.dtype, n.arg_key, *[s if f is _FREE else f for s, f in zip(src, forms)]),
              flags)
    links = [s if s._links is _LEAF else s._links for s in reversed(src) if s._links is not None]
    n._links = links[0] if len(links) == 1 else tuple(links)
    n._form = f


def form_of(u: UOp) -> Form | UOp | None:
    """`u`'s form: a `Form`, `u` itself when no BUFFER or BIND is below it, or None when it
    has none. Made for every node below `u` that lacks one (iteratively), then kept."""
    f = u._form
    if f is None:
        for s in u.src:
            if s._form is None:
                break
        else:  # the usual case, a node a tensor op just built: its sources have theirs
            _make(u)
            f = u._form
            return u if f is _FREE else None if f is _NONE else f
        stack = [u]
        while stack:
            n = stack[-1]
            for s in n.src:
                if s._form is None:
                    stack.append(s)
                    break
            else:
                stack.pop()
                if n._form is None:
                    _make(n)
        f = u._form
    return u if f is _FREE else None if f is _NONE else f


def links_of(u: UOp) -> Any:
    """`u`'s leaf links (`u` has a form): None when no BUFFER or BIND is below it, the node
    itself for a BUFFER or BIND, else a leaf or a tuple of links. A graph holding a node holds
    that node's links: an object, a tuple met once per node where leaves meet."""
    links = u._links
    return u if links is _LEAF else links


def may_bind(u: UOp) -> bool:
    """Whether a BIND may be in the graph under `u`: False only when its form says none is."""
    f = form_of(u)
    return f is None or (f is not u and bool(f.flags & BINDS))


def leaves(roots: tuple[UOp, ...]) -> tuple[tuple[int, ...], list[UOp]]:
    """``(description, leaves)`` of the leaf links under `roots` (each must have a form:
    `form_of` makes the missing ones first).

    `leaves` are the BUFFERs and BINDs under `roots` in the order a depth-first walk of the
    graph first meets them (sources in order, roots in order). The description numbers each
    link met, leaf or tuple, by its first meeting and lists the numbers in meeting order; a
    tuple met again is not entered again. (A tuple holds its sources' links last first: the
    order a stack gives them back.)"""
    desc: list[int] = []
    out: list[UOp] = []
    seen: dict[int, int] = {}
    get, note, found = seen.get, desc.append, out.append
    count = 0
    for r in roots:
        if r._form is None:
            form_of(r)
        top = r if r._links is _LEAF else r._links
        if top is None:
            continue
        stack: list[Any] = [top]
        pop, push = stack.pop, stack.extend
        while stack:
            x = pop()
            k = id(x)
            i = get(k)
            if i is None:
                i = seen[k] = count
                count += 1
                if type(x) is tuple:
                    push(x)
                else:
                    found(x)
            note(i)
    return tuple(desc), out
