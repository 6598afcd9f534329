"""From Tensors to a scheduled CALL and back: realize, assign, numpy.

`realize` schedules one tensor-level SINK of realizations ``AFTER(state, STORE(view, value))``
(an output buffer for each computed tensor, the pending assigns of the others) as
``CALL(body, *buffers, *binds)``, the body over PARAMs (so it is the same for the same
computation on other data), with `create_linear_for_program`: cached by the `program_key` of
the tensors' graph, so a hit builds neither the SINK nor a body. A program realized before is
found by its form (`program_form`: the forms its nodes got as tensor ops built them, and a walk
of its leaf links only), so a hit does not walk the graph either. It then runs the planned
LINEAR and points the tensors at their buffers.

Buffer states. A buffer's contents over time are a chain of states: its BUFFER, then one
``AFTER(previous, STORE(view, value))`` per pending assign. A view of x reads x's newest
state; a lazy tensor made before an assign reads an older one. A realize that runs assigns
makes the newest state it runs of each buffer (its *final* state) the buffer's contents, and
every older state of that buffer *superseded*. Invariants:
- after a realize, no live graph reads a superseded state: the realize takes along every
  live lazy tensor and every pending assign that reads one (`_closure`), and graphs that
  read a final state read the buffer instead (`_after_run`);
- in one schedule, the kernel graph orders each buffer's reads before the write that
  supersedes them; where no order exists (one expression reads a buffer both before and
  after an assign), the superseded states are copied first (`_copy_old_states`);
- a view of a lazy tensor is realized through that tensor, so views made before a realize
  stay views of its buffer (numpy's aliasing), and a write through them reaches it;
- a lazy tensor built over a realized one (``z = y + 1``, then ``y`` realized) by the same
  thread reads its buffer, not its graph, from then on (`_reuse_outputs`: within a bound on
  the walk, not inside a jit capture), so `y` is not computed again; a tensor that merely
  equals `y` stays a tensor of its own.

Threads. Realizes and assigns run one at a time, whatever thread asks (`state_lock`), and
views and lazy tensors are registered under `registry_lock`: threads may read one tensor, its
views and views of one lazy tensor at once; graph building, numpy's kernels (which release the
GIL) and jit replays of other threads run meanwhile. The states of a buffer are one chain:
threads that write into one buffer (their own rows of one tensor, through views of it) need a
lock of their own around what they build over it, assign and realize, as a numpy array's
writers would around a read-modify-write. A jit capture records only its own thread's
schedules.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable

import numpy as np

from tolk.dtype import bf16_to_f32, dtypes
from tolk.engine import realize as _realize  # its `capturing`, read at each call
from tolk.engine.realize import run_linear
from tolk.errors import DeviceError, JitError, ScheduleError, ShapeError
from tolk.helpers import SCACHE, gc_paused, prod
from tolk.runtime.device import after_copy, copy_buffer, set_storage, typed_view
from tolk.schedule import (LinearStats, buffers_of, create_linear_for_program, linear_stats,
                           program_by_form, program_form, program_key, program_stats,
                           remember_program_form)
from tolk.tensor import (Tensor, _base_and_chain, _is_base_state, _family_of, _join, _lazy,
                         _view_states, _views, move_views, register_view, registry_lock)
from tolk.uop.form import form_of, leaves, links_of, may_bind
from tolk.uop.ops import GroupOp, Ops, UOp, node_cache
from tolk.uop.shape import device_of, max_numel, shape_of, shape_syms

# Called as hook(planned LINEAR, var_vals, seconds spent scheduling, stats) for every realize;
# stats() gives the schedule's `LinearStats`: exact from the cached program (unplanned bytes
# and floor of the unplanned schedule, as `tolk.schedule.planned_stats`); with SCACHE=0 the
# planned schedule's `linear_stats` (whose limits its docstring names). A hook runs inside the
# realize, with `state_lock` held: it may realize tensors itself, but must not wait for
# another thread's tensor work (that thread waits for the lock).
schedule_hooks: list = []
# The tag of realize's program keys: a realize's program is made from the tensors' graph
# (`_build_sink`), not scheduled as that graph, so its keys never meet a sink's.
_REALIZE = "realize"


def _is_view_of_state(u: UOp) -> bool:
    return _base_and_chain(u).op in (Ops.BUFFER, Ops.AFTER)


def _storage(state: UOp) -> UOp:
    while state.op is Ops.AFTER:
        state = state.src[0]
    return state


def _register_view(t: Tensor) -> None:
    base = _base_and_chain(t.uop)
    with registry_lock:
        register_view(t, base)
        _lazy.discard(t)
        t._parent = t._kids = t._stale = None


class _Substitution:
    """``graph.substitute(mapping)`` for many graphs, sharing one memo (BIND nodes are kept
    whole: the value bound is a number, never a state or an output; so are the nodes for
    which `whole` is true). `mapping` may grow between calls as long as no graph substituted
    before contains a key added later. With a `budget`, a call that would walk more new nodes
    than are left of it raises `_OverBudget` (what earlier calls substituted stays valid)."""

    def __init__(self, mapping: dict[UOp, UOp], whole: Callable[[UOp], bool] | None = None,
                 budget: int | None = None):
        self.mapping = mapping
        self.out: dict[UOp, UOp] = {}
        self.whole = whole
        self.left = budget

    def charge(self, steps: int = 1) -> None:
        """Take `steps` from the budget (other walks share it): `_OverBudget` when it is spent."""
        if self.left is not None:
            self.left -= steps
            if self.left < 0:
                raise _OverBudget

    def __call__(self, u: UOp, keep_root: bool = False) -> UOp:
        """`u` substituted; with `keep_root`, `u` itself is rebuilt even if it is a key."""
        mapping, out, whole = self.mapping, self.out, self.whole
        if not mapping:
            return u
        if u in mapping and not keep_root:
            return mapping[u]
        if u in out:
            return out[u]

        def enter(n: UOp) -> bool:  # a BIND's value is a number, not a graph to substitute in
            return n is u or (n not in mapping and n not in out and n.op is not Ops.BIND)

        def gated(n: UOp) -> bool:
            if n is not u and (n in mapping or n in out or n.op is Ops.BIND or
                               (whole is not None and whole(n))):
                return False
            self.charge()
            return True

        for n in u.toposort(enter=enter if whole is None and self.left is None else gated):
            if n is not u and (n in mapping or n in out):
                continue
            if n.op is Ops.BIND or (whole is not None and n is not u and whole(n)):
                out[n] = n
                continue
            src = tuple(mapping[s] if s in mapping else out[s] for s in n.src)
            out[n] = n if src == n.src else UOp(n.op, n.dtype, src, n.arg)
        return out[u]


class _OverBudget(Exception):
    """A bounded `_Substitution` walked as many nodes as it was given."""


def _parent_of(t: Tensor) -> Tensor | None:
    """The live lazy tensor `t` is a view of, if any."""
    ref = t._parent
    p = ref() if ref is not None else None
    if p is None or p not in _lazy:
        return None
    u = t.uop
    while u.op in GroupOp.Movement and u is not p.uop:
        u = u.src[0]
    return p if u is p.uop else None


def _root(t: Tensor) -> Tensor:
    """What realizing `t` realizes: the live lazy tensor it views, else `t`; for a view of a
    dropped lazy tensor that has live kin (other views of it, also through views of views
    made after it died), a new tensor over what they all view, which becomes their parent:
    realized, it leaves them views of one buffer (as numpy's views of one base), so a write
    through one reaches the others."""
    with registry_lock:  # (other threads make views meanwhile)
        return _root_now(t)


def _root_now(t: Tensor) -> Tensor:
    while (p := _parent_of(t)) is not None:
        t = p
    fam = t._parent
    if fam is None or fam() is not None or t not in _lazy:
        return t
    base = _base_and_chain(t.uop)
    kin = [v for v in _dead_kin(fam) if _base_and_chain(v.uop) is base]
    if len(kin) < 2:
        return t
    root = Tensor(base)
    new = _family_of(root)
    for v in kin:
        _join(v, new)
    return root


def _final_states(nodes) -> dict[UOp, UOp]:
    """{storage: newest AFTER state} for every buffer an AFTER in `nodes` writes."""
    below = {n.src[0] for n in nodes if n.op is Ops.AFTER}
    return {_storage(n): n for n in nodes if n.op is Ops.AFTER and n not in below}


def _closure(tensors: list[Tensor], nodes):
    """`tensors` plus every live lazy tensor and pending assign that reads a state this
    realize supersedes (until none is left): ``(tensors, final states of the written
    buffers)``, the list given when nothing was added. `nodes` holds the graphs of the
    `tensors` given, children first."""
    chosen = {id(t) for t in tensors}
    while True:
        finals = _final_states(nodes)
        if not finals:
            return tensors, finals
        old: set[UOp] = set()
        for f in finals.values():
            s = f.src[0]
            while True:
                old.add(s)
                if s.op is not Ops.AFTER:
                    break
                s = s.src[0]
        memo: dict[UOp, bool] = {}
        stop = set(finals.values())
        in_sink = set(nodes)
        written = set(finals)  # what no graph over other buffers reads: found by its leaves
        candidates = [t for t in _lazy if id(t) not in chosen and _may_read(t.uop, written)]
        for state in _view_states():
            if state.op is Ops.AFTER and state not in in_sink and _may_read(state, written):
                candidates.extend(t for t in list(_views.get(state, ()))[:1] if id(t) not in chosen)
        # a view is taken along through the tensor it views, so it stays a view of its buffer
        extra = list({id(r): r for t in candidates if _reads_old(t.uop, old, stop, memo)
                      for r in (_root(t),) if id(r) not in chosen}.values())
        if not extra:
            return tensors, finals
        tensors = tensors + extra
        chosen.update(id(t) for t in extra)
        nodes = UOp.sink(*(t.uop for t in tensors)).toposort()


def _may_read(u: UOp, bufs: set[UOp]) -> bool:
    """Whether the graph `u` may read a state of a buffer in `bufs`: False when its form's
    leaf links (`tolk.uop.form.leaves`: no walk of the graph, only of the links where
    buffers meet) name none of them."""
    f = form_of(u)
    if f is None:
        return True
    if f is u:  # no buffer below it
        return False
    below = u._cache.get("leaf_set")  # a node never changes: its leaves are known for good
    if below is None:  # (asked of every live lazy tensor at every realize with an assign)
        below = node_cache(u)["leaf_set"] = frozenset(leaves((u,))[1])
    return not below.isdisjoint(bufs)


def _reads_old(u: UOp, old: set[UOp], stop: set[UOp], memo: dict[UOp, bool]) -> bool:
    """Whether `u` reads a state in `old` other than through a state in `stop` (memoized)."""
    for n in u.toposort(enter=lambda n: n not in stop and n not in old and n not in memo):
        if n not in memo:
            memo[n] = n in old or (n not in stop and any(memo[s] for s in n.src))
    return memo[u]


def _outputs(tensors: list[Tensor]) -> tuple[list[Tensor], list[UOp]]:
    """``(computed, pending)``: the tensors of `tensors` that get an output buffer, and the
    pending assign states (without the views over them) to run."""
    pending: dict[UOp, None] = {}
    computed: list[Tensor] = []
    for t in tensors:
        base = _base_and_chain(t.uop)
        if base.op is Ops.AFTER:
            pending[base] = None
        elif base.op is not Ops.BUFFER:
            computed.append(t)
    return computed, list(pending)


def _inner_first(computed: list[Tensor], nodes) -> list[Tensor]:
    """`computed` ordered as their graphs come in `nodes` (children first), so `_build_sink`
    substitutes inner outputs into the later ones; outputs without sources first, in the order
    given (they contain no other output, and where the walk meets a constant can depend on
    the value of a BIND, which the program key leaves out)."""
    if len(computed) < 2:
        return computed
    pos = {n: i for i, n in enumerate(nodes)}
    return sorted(computed, key=lambda t: pos[t.uop] if t.uop.src else -1)


def _out_buffer(t: Tensor) -> UOp:
    u = t.uop
    return UOp.buffer(u.dtype, max_numel(shape_of(u)), device_of(u) or "CPU")


def _shape_binds(t: Tensor) -> tuple[UOp, ...]:
    """The BINDs of the variables in `t`'s shape (a view of its buffer takes them along)."""
    return t._binds(d.name for d in shape_syms(t.shape))


def _out_view(t: Tensor, buf: UOp) -> UOp:
    return _view(buf, t.shape, _shape_binds(t))


def _build_sink(computed: list[Tensor], pending: list[UOp], out_bufs: list[UOp],
                originals: dict[UOp, UOp] | None = None) -> UOp:
    """The SINK of realizations: ``AFTER(out_buf, STORE(view, graph))`` for each tensor of
    `computed` (`_outputs`) into its buffer of `out_bufs`, and the `pending` assign states.

    A graph that contains another output's graph reads that output's buffer instead of
    computing it again (also inside pending assigns, so every reader sees one AFTER per
    state); a second tensor with the same graph gets its own buffer, a copy of the first's.
    `originals`, if given, gets each node that differs from the tensors' graphs mapped to the
    node it stands for there."""
    reads: dict[UOp, UOp] = {}  # an output's graph -> a view of its realization
    sub = _Substitution(reads)
    srcs: dict[UOp, None] = {}
    for t, buf in zip(computed, out_bufs):
        u = t.uop
        value = reads[u] if u in reads else sub(u, keep_root=True)
        binds = _shape_binds(t)
        out_view = _view(buf, t.shape, binds)
        after = UOp(Ops.AFTER, t.dtype, (buf, UOp(Ops.STORE, dtypes.void, (out_view, value))))
        reads.setdefault(u, _view(after, t.shape, binds))
        srcs[after] = None
    for a in pending:
        srcs[sub(a)] = None
    if originals is not None:
        originals.update((v, k) for k, v in sub.out.items() if v is not k)
        for u, view in reads.items():
            originals.setdefault(view, u)
    return UOp.sink(*srcs)


def _view(state: UOp, shape, binds: tuple[UOp, ...] = ()) -> UOp:
    if shape == (_storage(state).size,):
        return state
    return UOp(Ops.RESHAPE, state.dtype, (state, *binds), shape)


def _copy_old_states(sink: UOp, originals: dict[UOp, UOp] | None = None) -> UOp:
    """`sink` with every read of a superseded state going through a CONTIGUOUS copy of it.

    The copies depend only on the state they copy, so each runs before the write that
    supersedes its state, and no kernel reads a buffer both before and after a write: the
    kernel graph has an order. Store targets and the state an AFTER builds on are not reads.
    `originals`, if given, gets each node the rewrite made mapped to the one it stands for
    (a copy to the state it copies)."""
    nodes = sink.toposort()
    old = {n.src[0] for n in nodes if n.op is Ops.AFTER}
    new: dict[UOp, UOp] = {}

    def read(s: UOp) -> UOp:
        if s not in old:
            return new[s]
        copy = UOp(Ops.CONTIGUOUS, s.dtype, (new[s],))
        if originals is not None:
            originals[copy] = s
        return copy

    def target(v: UOp) -> UOp:
        chain = []
        while v.op in GroupOp.Movement:
            chain.append(v)
            v = v.src[0]
        out = new[v]
        for m in reversed(chain):
            out = UOp(m.op, m.dtype, (out, *(read(b) for b in m.src[1:])), m.arg)
        return out

    for n in nodes:
        if n.op is Ops.AFTER:
            src = (new[n.src[0]], *(new[s] for s in n.src[1:]))
        elif n.op is Ops.STORE:
            src = (target(n.src[0]), read(n.src[1]))
        else:
            src = tuple(read(s) for s in n.src)
        new[n] = n if src == n.src else UOp(n.op, n.dtype, src, n.arg)
        if originals is not None and new[n] is not n:
            originals[new[n]] = n
    return new[sink]


state_lock = threading.RLock()  # one realize or assign at a time (see Threads above)


def realize(tensors, run: bool = True, _split: bool | int = True, _retry: bool = True):
    """Compute `tensors` in one schedule (see `_realize_now`), one realize or assign of any
    thread at a time."""
    with state_lock:
        return _realize_now(tensors, run, _split, _retry)


def _realize_now(tensors, run: bool = True, _split: bool | int = True,
                 _retry: bool = True):
    """Compute `tensors` in one schedule; with ``run=False`` return ``(LINEAR, var_vals)`` only.

    A view of a live lazy tensor is computed by realizing that tensor (the view then reads
    its buffer); lazy tensors and pending assigns that read a state this realize overwrites
    are realized along with it.

    The schedule is cached by the `program_key` of the graphs to compute (the computed tensors'
    and the pending assign states, tagged: the SINK of realizations is a function of them), so a
    cache hit walks those graphs once and builds only the output buffers, not the SINK. Without
    pending assigns, a program realized before is found by `program_form` (a walk of the leaf
    links only); the order of its outputs is the one the first realize found.

    A lazy tensor taken along that cannot be scheduled or allocated (it binds a variable to
    two values, say) does not block the realize asked for: when nothing ran, the tensors taken
    along read a copy of the buffers this realize overwrites from then on (`_detach_unrun`),
    and the realize runs again without them; their own realize raises their error. Not inside
    a jit capture, nor for a schedule hook's own error (those go up as they are)."""
    start = time.perf_counter() if schedule_hooks else 0.0
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"realize takes Tensors, got {type(t).__name__}")
    if _realize.capturing and getattr(_realize.capturing[0], "pending_before", None):
        _run_pending_before(tensors, _realize.capturing[0])
    tensors = list({id(r): r for r in map(_root, tensors)}.values())  # each root once
    finals: dict[UOp, UOp] = {}
    asked = tensors
    computed, pending = _outputs(tensors)
    roots = tuple(t.uop for t in computed)
    form = None if pending or not roots or not SCACHE.value else program_form(*roots, tag=_REALIZE)
    known = program_by_form(form[0]) if form is not None else None
    if known is not None:  # a program realized before: no walk (and no AFTER, so no closure)
        key, order = known[0], known[1]
        bufs, binds = form[1], form[2]
        if CHECK_FORMS:
            _check_form_hit(key, bufs, binds, roots)
        computed = [computed[i] for i in order]
    else:
        key, bufs, binds, nodes = program_key(*roots, *pending, tag=_REALIZE)
        # also with run=False: the schedule shown is the one a realize would run
        more, finals = _closure(tensors, nodes)
        if more is not tensors:
            ids = {id(t) for t in asked}
            taken = [t for t in more if id(t) not in ids]
            if _realize.capturing and run and _run_lazy_before(taken, _realize.capturing[0],
                                                              finals):
                return realize(asked, run, _split, _retry)  # (they are settled: not taken)
            tensors = more
            computed, pending = _outputs(tensors)
            key, bufs, binds, nodes = program_key(
                *(t.uop for t in computed), *pending, tag=_REALIZE)
            form = None
            if run and _retry and not _realize.capturing:  # a failure before anything ran:
                try:  # the realize again without them
                    return _realize_taking(asked, tensors, computed, pending, key, bufs, binds,
                                           nodes, finals, form, _split, start)
                except Exception as e:
                    if isinstance(getattr(e, "calls_done", None), int) or \
                            getattr(e, _FROM_HOOK, False) or not _detach_unrun(set(finals), taken):
                        raise
                return realize(asked, run, _split, _retry=False)
    return _realize_taking(asked, tensors, computed, pending, key, bufs, binds,
                           nodes if known is None else None, finals, form, _split, start, run,
                           known is not None, known[2] if known is not None else 0)


def _realize_taking(asked, tensors, computed, pending, key, bufs, binds, nodes, finals, form,
                    _split: bool | int, start: float, run: bool = True, known: bool = False,
                    size: int = 0):
    """The rest of `realize`, its closure found: `asked` and what it took along (`tensors`);
    `size`: the nodes of the graph when `known` (a program found by its form: no `nodes`)."""
    if nodes is not None:
        size = len(nodes)
    if not known:
        if run and _split and _binds_disagree(binds) and \
                _realize_apart(asked, tensors, nodes, int(_split)):
            return realize(asked, _split=False)  # what was taken along ran first
        if not computed and not pending:
            return (UOp(Ops.LINEAR, src=()), {}) if not run else None
        given = {id(t): i for i, t in enumerate(computed)}
        computed = _inner_first(computed, nodes)
        if form is not None:
            if form[1] == bufs and form[2] == binds:
                remember_program_form(form[0], (key, tuple([given[id(t)] for t in computed]),
                                                len(nodes)))
            elif CHECK_FORMS:
                raise AssertionError("the leaves of a form differ from program_key's")
    out_bufs = [_out_buffer(t) for t in computed]
    with gc_paused():  # params: the graph's buffers in walk order, then the output buffers
        linear, var_vals = create_linear_for_program(
            key, bufs + out_bufs, binds, lambda: _build_sink(computed, pending, out_bufs),
            _copy_old_states)
    if schedule_hooks and run:  # realizes only (schedule_linear runs nothing)
        seconds = time.perf_counter() - start

        def stats() -> LinearStats:  # exact from the cached program (see `program_stats`)
            return (linear.src and program_stats(key)) or linear_stats(linear)

        for hook in schedule_hooks:
            try:
                hook(linear, var_vals, seconds, stats)
            except Exception as e:  # the hook's own error: no retry of the realize for it
                try:
                    setattr(e, _FROM_HOOK, True)
                except AttributeError:
                    pass
                raise
    if not run:
        return linear, var_vals
    try:
        run_linear(linear, var_vals)
    except BaseException as e:  # (an interrupt between kernels too: what ran is settled)
        if isinstance(getattr(e, "calls_done", None), int):
            done = e.calls_done
            _settle_failed_run(linear, done, finals,
                               [(t, _out_view(t, b), b) for t, b in zip(computed, out_bufs)],
                               interrupted=not getattr(e, "call_failed", False),
                               temps=lambda: _ran_temps(linear, done, lambda originals:
                                                        _build_sink(computed, pending, out_bufs,
                                                                    originals), binds))
        raise
    _after_run([(t, _out_view(t, b)) for t, b in zip(computed, out_bufs)], finals,
               0 if _realize.capturing else 2 * size + 16)  # (a capture writes at its end)
    return None


CHECK_FORMS = False  # tests: every realize found by its form also checks it against program_key
_FROM_HOOK = "_tolk_raised_by_schedule_hook"


def _check_form_hit(key, bufs: list[UOp], binds: list[UOp], roots: tuple[UOp, ...]) -> None:
    k, b, v, _ = program_key(*roots, tag=_REALIZE)
    if k != key or b != bufs or v != binds:
        raise AssertionError(f"a form key found another program: {len(b)} buffers, "
                             f"{len(v)} binds by program_key, {len(bufs)} and {len(binds)} by form")


def _after_run(outputs, finals: dict[UOp, UOp], reuse: int = 0) -> None:
    """Point the outputs (``(tensor, view of its buffer)`` pairs) at their buffers, and every
    live graph that read a realized final state or a realized output's view at the buffer.
    With `reuse` (a budget of nodes to walk), lazy tensors made after an output that compute
    it read its buffer too (`_reuse_outputs`)."""
    try:
        _point_outputs(outputs, reuse)
    finally:  # (an interrupt inside still settles the assigns that ran: none runs twice)
        if finals:
            _rebase(_Substitution({f: b for b, f in finals.items()}))


def _point_outputs(outputs, reuse: int) -> None:
    """`_after_run`'s outputs (and their lazy views, and with `reuse` the tensors made after
    them that compute them) pointed at their buffers."""
    rebase = []  # lazy views of an output: (view, output's node, output's buffer view)
    with registry_lock:  # (views made meanwhile are either rebased here or views of buffers)
        later, quick = _made_after([t for t, _ in outputs], reuse) if reuse else ([], 0)
        olds: dict[UOp, UOp] = {}
        for t, view in outputs:
            olds.setdefault(t.uop, view)
        for t, view in outputs:
            fam = t._kids
            if fam is not None:
                rebase.extend((v, t.uop, view) for v in fam.kids if _parent_of(v) is t)
        for t, view in outputs:
            t.uop = view
            _register_view(t)
        subs: dict[int, _Substitution] = {}  # one memo per output: its kept views of a long
        for t, old, view in rebase:  # chain share their prefixes (linear, not quadratic); two
            sub = subs.get(id(view))  # outputs of one node (a copy) are two buffers
            if sub is None:
                sub = subs[id(view)] = _Substitution({old: view})
            t.uop = sub(t.uop)
            _register_view(t)
        if later:
            _reuse_outputs(olds, later, reuse, quick)


NEWEST_FIRST = 4  # realize reuse looks at this many of the newest tensors first, briefly


def _made_after(outputs: list[Tensor], k: int) -> tuple[list[Tensor], int]:
    """Up to `k` live lazy tensors this thread made after an output (the oldest one, so also
    those between outputs), the oldest first: those that read an output's graph directly come
    before those built on them (`_lazy` keeps the order they were made in; another thread's
    tensors are its own: one that came to read this thread's buffer would race with its
    writes, and none would know). An output's views are not among them (they move with it)
    and mark its age too: the tensor `_root` makes for the views of a dropped tensor is newer
    than all of them, but tensors made after the oldest may hold its graph. When no output is
    lazy any more, the last `k` made. Ahead of them come the `NEWEST_FIRST` newest made after
    the outputs (``z = y + 1`` made after many other tensors; those may come again among the
    `k`): returns the list and how many of it are those newest."""
    stop_objs = []
    for t in outputs:
        stop_objs.append(t)
        fam = t._kids
        if fam is not None:
            stop_objs.extend(v for v in fam.kids if v._parent is fam and v in _lazy)
    stops = {id(t) for t in stop_objs}
    me = threading.get_ident()
    refs = _lazy.after(stop_objs, k, lambda r: r.thread == me and id(r()) not in stops)
    if refs is None:
        refs = [r for r in reversed(_lazy.newest(k)) if r.thread == me]
    newest: list[Tensor] = []
    for r in _lazy.newest(NEWEST_FIRST + len(stops)):
        if (t := r()) is None or r.thread != me:
            continue
        if id(t) in stops or len(newest) == NEWEST_FIRST:
            break
        newest.append(t)
    rest = [t for r in refs if (t := r()) is not None and id(t) not in stops]
    return newest + rest, len(newest)  # (one of the newest left is looked at again in turn)


def _reuse_outputs(olds: dict[UOp, UOp], later: list[Tensor], budget: int,
                   quick: int = 0) -> None:
    """Each lazy tensor of `later` whose graph holds a realized output's old graph (a key of
    `olds`: ``z = y + 1``, then ``y`` realized) reads the output's buffer (the value of `olds`)
    there from now on, so its realize does not compute the output again: as much of the work
    as the output's own graph, and its value exactly (16-bit intermediates rounded as stored).

    Only tensors made after the output are looked at, oldest first (`later`): those that read
    it directly come first, and their graphs, rewritten, are the memo of the ones built on
    them (a chain of results kept and realized in order, ``L.append(L[-1] * a + b)``, costs a
    few nodes a realize; newest first, the deepest came first, took the budget, and the chain
    was computed again and again: quadratic). Equal graphs are one node, so an older tensor
    may hold the output's graph too: it computes it again, as before. A tensor is walked only
    if its leaf links reach an output's (`tolk.uop.form`: a graph that holds a node holds its
    links; far fewer than its nodes), and the walks keep pending assigns (AFTER) whole and stop
    after `budget` tensors, links, nodes and kin in all, one tensor (with its kin) taking half
    of it at most (one that needs more is left as it is and the next one is looked at; what is
    left computes the outputs again), so a realize pays for this about as much as for its own
    graph, however many lazy tensors or views live. A tensor equal to an output, a view of a
    lazy tensor (it moves with that tensor, with its other views) and one that would become a
    view of the output's buffer (it would alias it) are left as they are. The first `quick`
    of `later` (the newest few, `_made_after`) take an eighth of the budget each at most.
    Called under `registry_lock`."""
    targets: set[int] | None = set()
    for old in olds:
        if form_of(old) is None:
            targets = None  # (no links to look for: every tensor is walked)
            break
        if (links := links_of(old)) is not None:
            targets.add(id(links))
    if targets is not None and not targets:
        return  # outputs over no buffer: nothing to find

    def whole(n: UOp) -> bool:  # a pending assign; with targets, a graph over no buffer
        return n.op is Ops.AFTER or (targets is not None and form_of(n) is n)

    sub = _Substitution(olds, whole, budget)
    clean: set[int] = set()  # links whose whole walk met no target
    seen: set[int] = set()
    for i, c in enumerate(later):
        left = sub.left
        if left <= 0:
            return
        share = budget // 8 if i < quick else budget // 2  # one tensor takes half at most
        given = sub.left = min(left, max(share, 1))
        try:
            _reuse_in(c, olds, targets, sub, clean, seen)
        except _OverBudget:
            pass  # (it computes the outputs again, as before; the next may be cheaper)
        finally:
            sub.left = left - (given - max(sub.left, 0))


def _reuse_in(c: Tensor, olds: dict[UOp, UOp], targets: set[int] | None, sub: _Substitution,
              clean: set[int], seen: set[int]) -> None:
    """`_reuse_outputs` for one tensor of `later`: it and its kin (`_kin`, marked in `seen`)
    read the outputs' buffers, unless one would become a view of a state; `_OverBudget` (from
    `sub`) leaves them all as they were."""
    sub.charge()
    u = c.uop
    if id(c) in seen or u in olds or c not in _lazy or \
            (targets is not None and not _reaches(u, targets, clean, sub)) or sub(u) is u:
        return
    kin = _kin(c, sub)
    seen.update(id(t) for t in kin)
    if not kin or any(t.uop in olds for t in kin):
        return
    new = [sub(t.uop) for t in kin]
    if not any(_is_view_of_state(u) for u in new):
        for t, u in zip(kin, new):
            t.uop = u


def _reaches(u: UOp, targets: set[int], clean: set[int], sub: _Substitution) -> bool:
    """Whether the leaf links of `u` reach one whose id is in `targets` (a walk of the links
    not in `clean`, each step taken from `sub`'s budget; those of a walk that found none join
    `clean`). Without a form, True (the caller walks the graph)."""
    if form_of(u) is None:
        return True
    top = links_of(u)
    if top is None:
        return False
    stack, walked = [top], []
    while stack:
        x = stack.pop()
        k = id(x)
        if k in targets:
            clean.difference_update(walked)
            return True
        if k in clean:
            continue
        clean.add(k)  # (taken back below if a target is found: not clean)
        walked.append(k)
        try:
            sub.charge()
        except _OverBudget:
            clean.difference_update(walked)
            raise
        if type(x) is tuple:
            stack.extend(x)
    return False


def _kin(t: Tensor, budget: _Substitution) -> list[Tensor]:
    """The live lazy tensors whose graphs must change with lazy `t`'s for its views to stay
    views of what they view: `t` and its views, or, for a view of a dropped tensor, every
    view of it (`_root_now`'s kin, all of them); empty for a view of a live tensor (it
    changes with that one). Each view looked at is charged to `budget`."""
    ref = t._parent
    if ref is None:
        fam = t._kids
        if fam is None:
            return [t]
        budget.charge(len(fam.kids))
        return [t] + [v for v in fam.kids if v._parent is fam and v in _lazy]
    return [] if ref() is not None else _dead_kin(ref, budget)


def _dead_kin(fam, budget: _Substitution | None = None) -> list[Tensor]:
    """The live lazy members of the topmost dead family above `fam` (a dead tensor's), theirs
    and those of the families below it (each family's views charged to `budget`, if given)."""
    while fam.up is not None:
        fam = fam.up
    kin, todo = [], [fam]
    while todo:
        f = todo.pop()
        todo += [sub for r in f.subs if (sub := r()) is not None]
        if budget is not None:
            budget.charge(len(f.kids) + 1)
        for v in f.kids:
            if v._parent is f and v in _lazy:
                kin.append(v)
                if v._kids is not None:
                    todo.append(v._kids)
    return kin


def _rebase(sub: _Substitution) -> None:
    """Every live tensor's graph (views, by the states they are registered under, and lazy
    tensors) substituted by `sub`, its states mapped to what replaces them."""
    with registry_lock:  # (views and lazy tensors other threads make meanwhile are rebased)
        _rebase_now(sub)


def _rebase_now(sub: _Substitution) -> None:
    bufs = {_storage(k) for k in sub.mapping}
    for state in _view_states():
        if state.op is Ops.AFTER and _may_read(state, bufs) and (new := sub(state)) is not state:
            if _is_base_state(new):  # (each view rewritten when it is next read)
                move_views(state, new)
            else:
                for t in list(_views.pop(state, ())):
                    t.uop = sub(t.uop)
                    _register_view(t)
            if new.op is Ops.AFTER:  # still pending (made over an assign dropped as failed)
                _note_pending(new)
    for t in list(_lazy):  # written only where it changes: another thread's tensors are its own
        old = t.uop
        if not _may_read(old, bufs):
            continue
        new = sub(old)
        if new is not old:
            t.uop = new


def _settle_failed_run(linear: UOp, done: int, finals: dict[UOp, UOp],
                       outputs: list[tuple[Tensor, UOp, UOp]] = (),
                       interrupted: bool = False,
                       temps: Callable[[], list[tuple[UOp, UOp]]] | None = None) -> None:
    """`_settle_now` under the registry lock (it moves views and rewrites lazy tensors); the
    temporaries that ran (`temps`) are found before it is taken (the graph lowered again)."""
    pairs: list[tuple[UOp, UOp]] = []
    if finals and done and temps is not None:  # (no pending assign, or nothing ran: no
        # state the run overwrote)
        try:
            pairs = temps()
        except BaseException:  # (a second interrupt, no memory: the run's own error goes up,
            pairs = []  # the rest is settled all the same, those graphs stay as they are)
    with registry_lock:
        _settle_now(linear, done, finals, outputs, interrupted, pairs)


def _settle_now(linear: UOp, done: int, finals: dict[UOp, UOp],
                outputs: list[tuple[Tensor, UOp, UOp]] = (),
                interrupted: bool = False, temps: list[tuple[UOp, UOp]] = ()) -> None:
    """After a run whose call `done` raised (the calls before it ran), each written buffer's
    pending assigns: those a call which ran wrote are settled (their tensors read the buffer,
    the new value); the one the failing call wrote is dropped, as an eager op that raises (the
    kernel raised before writing: the buffer holds the value before it); those after it stay
    pending, made over what the buffer then holds (what they read of the dropped state reads
    that). Assigns are matched to the calls that write their buffer in order when there are
    as many calls as assigns (each its own kernel); otherwise a buffer a call which ran wrote
    is settled whole and one the failing call wrote first loses its oldest assign. Never run
    twice, never left failing for good (each failure settles or drops an assign; when no
    assign or output was written (temporaries may have been), a later assign of a buffer that
    reads what the failing call computes is dropped too; when one was, such a buffer stays
    failing). A computed
    tensor (`outputs`: tensor, view of its buffer, buffer) whose writing calls all ran reads
    its buffer (it read states the run went on to overwrite); the others stay lazy.
    `interrupted`: no call failed (an interrupt came between calls `done - 1` and `done`):
    what ran is settled, the rest stays pending.
    A graph left to run that reads a state the run overwrote (``p = x * 10; x.assign(y);
    q = p + x``, stopped after the assign: q's kernel read p's temporary, computed before)
    reads private copies of the temporaries that ran instead (`temps`: `_ran_temps`' pairs),
    where the value it needs is still held: the old value, not the new one."""
    writers: dict[UOp, list[int]] = {}
    for i, call in enumerate(linear.src):
        for b in call_writes(call):
            calls = writers.setdefault(b, [])
            if not calls or calls[-1] != i:
                calls.append(i)
    doomed = set() if interrupted or done >= len(linear.src) else _doomed_calls(linear, done,
                                                                               finals)
    # whether only temporaries ran: no call writing a buffer the program names
    nothing_settled = not any(c < done for b in (*finals, *(b for _, _, b in outputs))
                              for c in writers.get(b, ()))
    mapping: dict[UOp, UOp] = {}
    lost: set[UOp] = set()  # states superseded by a write that ran
    later: list[tuple[UOp, UOp]] = []  # doomed states past the next one: (state, the one before)
    for b, final in finals.items():
        chain = [final]  # the buffer's pending states, oldest first
        while chain[-1].src[0].op is Ops.AFTER:
            chain.append(chain[-1].src[0])
        chain.reverse()
        calls = writers.get(b, [])
        if len(calls) == len(chain):
            ran = sum(1 for c in calls if c < done)
            failed = ran < len(calls) and calls[ran] in doomed
            if not failed and nothing_settled:  # a later writer doomed (it reads the failing
                j = next((j for j in range(ran + 1, len(calls)) if calls[j] in doomed), None)
                if j is not None:  # call's temporary), when nothing was settled: dropped too
                    later.append((chain[j], chain[j - 1]))
        elif calls and calls[0] < done:
            ran, failed = len(chain), False
        else:
            ran, failed = 0, bool(calls) and calls[0] in doomed
        if ran:
            mapping[chain[ran - 1]] = b
            lost.add(chain[0].src[0])  # the states before it (the bare buffer too, whose
            # node now stands for what it holds after the run): their values are gone
            lost.update(chain[:ran - 1])
        if failed:
            mapping[chain[ran]] = b if ran else chain[0].src[0]
    if later:  # each dropped state reads as the one before it, that one with the drops made in
        for _ in range(len(later) + 1):  # it too (a state of another buffer it reads): to a
            sub = _Substitution(dict(mapping))  # fixed point (values are older states)
            new = {state: sub(prev) for state, prev in later}
            if all(mapping.get(s) is v for s, v in new.items()):
                break
            mapping.update(new)
    def written(b: UOp) -> bool:  # every call writing `b` ran
        return bool(writers.get(b)) and writers[b][-1] < done

    ran = [(t, view, b) for t, view, b in outputs if written(b)]
    # a tensor that did not run may hold one that did in its graph (``t = y + s``, `s` read y
    # before an assign that ran): it reads a copy of that one's value (its graph would read
    # y's buffer, now overwritten; a copy, as the tensor that ran may be written later, and
    # a graph equal to it in another tensor, another thread's, is no view of it)
    kept = {t.uop: _kept_copy(view, b) for t, view, b in ran}
    copies: dict[UOp, UOp] = {}  # temporaries that ran and read a lost state: their copies
    if lost and temps:
        try:
            copies = _copies_of_temps(temps, lost, kept)
        except BaseException:  # (a second interrupt, no memory: as in `_settle_failed_run`)
            copies = {}
    if ran:
        _after_run([(t, view) for t, view, _ in ran], {})
    # the copies and the settled states in one pass over the graphs as they are: rebased
    # first, a graph over a later state could equal one that ran over an earlier state (the
    # same buffer); copied first, a settled state rebuilt around a copy would no longer be a
    # key of `mapping` (and would run again)
    if kept or copies:
        sub = _Substitution({**copies, **kept, **mapping})
        for t in list(_lazy):
            old = t.uop
            new = sub(old)
            if new is not old:
                t.uop = new
                if _is_view_of_state(new):  # the graph of one that ran: a view of its copy
                    _register_view(t)
        moved = []  # (all taken first: a state rebuilt can be the node of another one)
        for state in _view_states():  # pending assigns whose values hold one of them
            if state.op is Ops.AFTER and (new := sub(state)) is not state:
                moved += [(t, sub(t.uop)) for t in _views.pop(state, ())]
                if new.op is Ops.AFTER:  # (still pending)
                    _note_pending(new)
        for t, new in moved:
            t.uop = new
            _register_view(t)
    elif mapping:  # (once: a state rebuilt over its buffer can be a settled state's node,
        _rebase(_Substitution(mapping))  # x.assign(x * 2) twice, the first one settled)
    # buffers a pending assign of which is still to run: a computed tensor that did not run
    # reads what they hold now, which those assigns will overwrite
    unwritten = {b for b in finals if not writers.get(b) or writers[b][-1] > done}
    _detach_unrun(unwritten, [t for t, _, b in outputs if not written(b)])


def _copies_of_temps(pairs: list[tuple[UOp, UOp]], lost: set[UOp],
                     kept: dict[UOp, UOp]) -> dict[UOp, UOp]:
    """Of the temporaries that ran (`_ran_temps`' pairs), those whose node reads a `lost`
    state (one walk of them all) mapped to a private copy of their value (`_temp_copy`)."""
    reads_lost: dict[UOp, bool] = {}
    for n in UOp.sink(*(node for node, _ in pairs)).toposort():
        reads_lost[n] = n in lost or any(reads_lost[x] for x in n.src)
    copies: dict[UOp, UOp] = {}
    for node, arg in pairs:
        if reads_lost[node] and node not in kept and node not in copies:
            copy = _temp_copy(node, arg)
            if copy is not None:
                copies[node] = copy
    return copies


def _ran_temps(linear: UOp, done: int, make_sink: Callable[[dict[UOp, UOp]], UOp],
               binds: list[UOp]) -> list[tuple[UOp, UOp]]:
    """The temporaries of a run that calls ``0 .. done - 1`` of `linear` wrote, as (the node
    of the tensors' graphs it holds, the argument holding it: a BUFFER or an arena's SLICE):
    what the graph of `make_sink` (which fills the dict it is given with `_build_sink`'s
    originals) lowers to again, its `binds` replaced by their variables as the program's were,
    matched call by call (the schedule is a function of the graph's form); empty when the two
    schedules differ (nested calls, joins of several devices)."""
    from tolk.schedule import CycleError, create_schedule
    from tolk.schedule.kernelize import kernel_graph_and_temps

    built: dict[UOp, UOp] = {}
    sink = make_sink(built)
    if binds:  # (nodes over a variable stand for those over its BIND)
        unbind = _Substitution({b: b.src[0] for b in binds})
        sink = unbind(sink)
        built = built | {v: built.get(k, k) for k, v in unbind.out.items() if v is not k}
    copied: dict[UOp, UOp] = {}
    graph, temps = kernel_graph_and_temps(sink)
    try:
        lowered = create_schedule(graph)
    except CycleError:
        graph, temps = kernel_graph_and_temps(_copy_old_states(sink, copied))
        lowered = create_schedule(graph)
    if len(lowered.src) != len(linear.src) or not all(map(_same_call, lowered.src, linear.src)):
        return []
    writes = {c.src[1]: i for i, c in enumerate(lowered.src[:done]) if len(c.src) > 1}
    out = []
    for node, buf in temps.items():
        i = writes.get(buf)
        if i is None or _overwritten(linear, i, done):
            continue
        node = copied.get(node, node)
        out.append((built.get(node, node), linear.src[i].src[1]))
    return out


def _same_call(lowered: UOp, bound: UOp) -> bool:
    """Whether a call of a schedule lowered again (temporaries are internal BUFFERs) is the
    call of the one that ran (the same kernel; in each argument the same buffer, but where the
    first has a temporary: there, a SLICE of an arena or an internal BUFFER)."""
    if lowered.src[0] is not bound.src[0] or len(lowered.src) != len(bound.src):
        return False
    for a, b in zip(lowered.src[1:], bound.src[1:]):
        if a.op is Ops.BUFFER and a.arg[0] < 0:
            if b.op is not Ops.SLICE and (b.op is not Ops.BUFFER or b.arg[0] >= 0):
                return False
        elif a is not b:
            return False
    return True


def _overwritten(linear: UOp, i: int, done: int) -> bool:
    """Whether a call after call `i` and before call `done` of `linear` wrote bytes of the
    arena SLICE that call `i` writes as its first argument (the planner reuses the bytes of
    a temporary none of the calls after reads)."""
    arg = linear.src[i].src[1]
    if arg.op is not Ops.SLICE:
        return False
    lo, hi = arg.arg[0], arg.arg[0] + arg.arg[1]
    for call in linear.src[i + 1:done]:
        for w in call_writes(call):
            for s in buffers_of(w, Ops.SLICE):
                if s.src[0] is arg.src[0] and s.arg[0] < hi and lo < s.arg[0] + s.arg[1]:
                    return True
    return False


def _temp_copy(node: UOp, arg: UOp) -> UOp | None:
    """`node`'s value as a private copy of the temporary `arg` (a BUFFER or a SLICE of an
    arena) that holds it: the copy itself for a buffer state, else a view of it in `node`'s
    shape; None for a symbolic shape."""
    data = typed_view(arg)
    state = node.op is Ops.BUFFER or node.op is Ops.AFTER  # a copy of a superseded state
    shape = None if state else shape_of(node)
    if (data.size != _storage(node).size) if state else shape_syms(shape):
        return None  # (decided before anything is copied)
    buf = UOp.buffer(arg.dtype, data.size, (arg.src[0] if arg.op is Ops.SLICE else arg).device)
    set_storage(buf, data)
    if after_copy:  # (what the temporary came from, for gradients: `copy_buffer`'s report)
        after_copy[0](arg, buf)
    return buf if state else UOp(Ops.RESHAPE, node.dtype, (buf,), shape)


def _kept_copy(view: UOp, buf: UOp) -> UOp:
    """`view` of `buf` over a private copy of `buf`'s contents."""
    return view.substitute({buf: copy_buffer(buf)})


def _doomed_calls(linear: UOp, done: int, finals: dict[UOp, UOp]) -> set[int]:
    """The failing call `done` and the later calls that read a temporary it would have
    written, or one such a call would have: run again they would fail the same way (an
    assign whose value the failing kernel computes into a temporary first is written by a
    later call). A buffer with a pending assign (`finals`) is no such temporary: its failed
    assign is dropped, and what reads it reads the value before."""
    doomed = {done}
    bad = {b for b in _buffer_args(call_writes(linear.src[done])) if b not in finals}
    for i in range(done + 1, len(linear.src)):
        call = linear.src[i]
        writes = _buffer_args(call_writes(call))
        if any(b in bad for b in _buffer_args(call.src[1:]) if b not in writes):
            doomed.add(i)
            bad.update(b for b in writes if b not in finals)
        else:  # written afresh: what it holds no longer comes from the failure
            bad.difference_update(writes)
    return doomed


def _buffer_args(args) -> list[UOp]:
    return [b for a in args for b in buffers_of(a, (Ops.BUFFER, Ops.SLICE))]


def _detach_unrun(unwritten: set[UOp], lazies: list[Tensor]) -> bool:
    """`_detach_now` under the registry lock (it rewrites lazy tensors and their views)."""
    with registry_lock:
        return _detach_now(unwritten, lazies)


def _detach_now(unwritten: set[UOp], lazies: list[Tensor]) -> bool:
    """Computed tensors of a failed run whose kernels did not run, that read buffers with a
    pending assign that did not run either, read a copy of those buffers from now on: the value
    they read, which the assigns will overwrite. Otherwise the next realize of the buffer
    takes them along again, and one whose kernel fails (``x ** e`` with a negative int in e)
    would fail every realize of the buffer. Only the tensor's own reads are replaced: a
    pending state it reads (of any buffer) stays as it is, whatever that state reads (its own
    assign reads the buffer when it runs; rewritten, it would be a second state of its
    buffer). Whether any tensor was detached."""
    snaps: dict[UOp, UOp] = {}
    detached = False
    for t in lazies:
        if t not in _lazy:
            continue
        nodes = t.uop.toposort(enter=lambda n: n.op is not Ops.AFTER)
        reads = {n for n in nodes if n.op is Ops.BUFFER and n in unwritten}
        if not reads:
            continue
        for b in reads:
            if b not in snaps:
                snaps[b] = copy_buffer(b)
        sub: dict[UOp, UOp] = {b: snaps[b] for b in reads}
        sub.update((n, n) for n in nodes if n.op is Ops.AFTER)  # (not entered)
        for v in [t, *(t._kids.kids if t._kids is not None else ())]:
            v.uop = v.uop.substitute(sub)
        detached = True
    return detached


def call_writes(call: UOp) -> list[UOp]:
    """The arguments a scheduled CALL writes (its kernel's PARAM slots number the arguments
    other than BINDs)."""
    args = [a for a in call.src[1:] if a.op is not Ops.BIND]
    return [args[slot] for slot in _written_slots(call.src[0]) if slot < len(args)]


def _written_slots(ast: UOp) -> set[int]:
    """The argument slots a kernel writes: its STOREs' targets (a COPY: its first)."""
    if ast.op is Ops.COPY:
        return {0}
    out = set()
    for n in ast.toposort():
        if n.op is Ops.STORE:
            t = n.src[0]
            while t.op in GroupOp.Movement or t.op is Ops.LOAD:
                t = t.src[0]
            if t.op is Ops.PARAM:
                out.add(t.arg[0])
    return out


def _refuse_broadcast_target(target: Tensor) -> None:
    chain = target.uop
    while chain.op in GroupOp.Movement:
        if chain.op is Ops.EXPAND:
            raise ValueError(f"cannot assign into a broadcast (expanded) view (of shape "
                             f"{shape_of(chain)}; the target: {target.shape}): it is "
                             "read-only, as in numpy")
        chain = chain.src[0]


def assign(target: Tensor, x) -> Tensor:
    """Store `x` into `target`'s buffer through `target`'s view; every view of the buffer
    (including `target`) then reads the new state."""
    with state_lock:
        return _assign_now(target, x)


def _assign_now(target: Tensor, x) -> Tensor:
    if isinstance(x, np.generic):  # a numpy scalar, as numpy's setitem takes one: into a
        # signed int as a Python number (out of range or NaN an error), else cast (wraps)
        x = x.item() if target.dtype.kind == "i" else np.asarray(x)
    if isinstance(x, (list, tuple, np.ndarray)):  # host data, cast to the target's dtype
        if isinstance(x, np.ndarray) and x.dtype.kind not in "biuf":  # as Tensor(x) refuses
            raise TypeError(f"cannot assign a numpy array of dtype {x.dtype} into a "
                            f"{target.dtype.name} tensor (bools, ints and floats only)")
        if isinstance(x, np.ndarray) and target.dtype is not dtypes.bfloat16:  # (bfloat16's
            x = x.astype(target.dtype.np)  # numpy dtype is its storage: Tensor rounds to it)
        x = Tensor(x, device=target.device, dtype=target.dtype)
    elif not isinstance(x, Tensor):  # (a symbolic size: its value from the target's graph)
        if hasattr(x, "shards"):
            raise TypeError(f"cannot assign a sharded tensor ({x!r}) into a Tensor: gather it "
                            "with .to(device) first")
        x = target.full_like(x)
    if x.shape != target.shape:
        # numpy assignment broadcasting: leading size-1 axes may go, then broadcast
        shape = x.shape
        while len(shape) > target.ndim and shape[0] == 1:
            shape = shape[1:]
        if not _broadcastable(shape, target.shape):
            raise ShapeError(f"assign of shape {x.shape} into a tensor of shape {target.shape}")
        x = x.reshape(shape)._broadcast_to(target.shape)
    if x.dtype is not target.dtype:
        raise TypeError(f"assign of dtype {x.dtype.name} into a tensor of dtype "
                        f"{target.dtype.name}; cast it first")
    if x.device != target.device:
        raise DeviceError(f"assign from device {x.device} into a tensor on {target.device}")
    _refuse_broadcast_target(target)  # (before a realize, which may give a broadcast view
    if not _is_view_of_state(target.uop):  # of a dropped lazy tensor a buffer of its own;
        realize([target])  # a lazy tensor, Tensor.zeros say, gets its own buffer; a view of
        _refuse_broadcast_target(target)  # one realizes the tensor it views)
    state = _base_and_chain(target.uop)
    if state.op is Ops.AFTER and may_bind(state) and (may_bind(target.uop) or may_bind(x.uop)) \
            and _conflicting_binds(state, UOp.sink(target.uop, x.uop)):
        # an earlier pending assign used another value of the same variable: run it first
        target.realize()
        state = _base_and_chain(target.uop)
    if may_bind(x.uop):  # a value no schedule can compute: refused now, before it is pending
        vals: dict[str, int] = {}  # (it would block every realize of the buffer for good);
        # binds in pending states it reads are not its own (a realize runs those apart)
        for n in UOp.sink(target.uop, x.uop).toposort(enter=lambda n: n.op is not Ops.AFTER):
            if n.op is Ops.BIND:
                name, v = n.src[0].arg[0], n.src[1].arg
                if vals.setdefault(name, v) != v:
                    raise ScheduleError(f"assign of a value that binds variable {name!r} to both "
                                        f"{vals[name]} and {v}: realize its parts apart first")
    new_state = UOp(Ops.AFTER, state.dtype,
                    (state, UOp(Ops.STORE, dtypes.void, (target.uop, x.uop))))
    with registry_lock:  # (a view another thread makes meanwhile is moved too)
        move_views(state, new_state, target)
        _lazy.discard(target)
        target._parent = target._kids = None
    _note_pending(new_state)
    return target


def _run_pending_before(tensors: list[Tensor], capturer) -> None:
    """Inside a jit capture: run, for real and outside the capture, the assigns that were
    pending before it began (another thread's) and that `tensors` read, so the capture does
    not take them as its own (a replay would make them again)."""
    before = capturer.pending_before
    stale = [n for n in UOp.sink(*(t.uop for t in tensors)).toposort()
             if n.op is Ops.AFTER and n in before]
    if not stale:
        return
    views = [_tensor_of_state(s) for s in stale]
    _realize.capturing.remove(capturer)
    try:
        realize(views)
    finally:
        _realize.capturing.append(capturer)


def _run_lazy_before(taken: list[Tensor], capturer, finals: dict[UOp, UOp]) -> bool:
    """Inside a jit capture: realize, for real and outside the capture, the lazy tensors
    among `taken` (lazy readers of what the captured function overwrites) that lived before
    it began, so the capture does not take them as its own (every replay would compute them
    again, into their buffers, from the then current values); whether there were any."""
    before = getattr(capturer, "lazy_before", None)
    outside = [t for t in taken if before is not None and t in before]
    if not outside:
        return False
    _realize.capturing.remove(capturer)
    try:
        _realize_or_detach(outside, {_storage(s) for s in finals})
    finally:
        _realize.capturing.append(capturer)
    return True


def realize_readers(bufs: list[UOp]) -> None:
    """Realize the live lazy tensors that may read one of the buffers `bufs` (before a jit
    replay writes them: each keeps the value it has now, as a realize's closure gives it);
    where that fails (a reader's own kernel raises), they read a copy of those buffers from
    now on instead, and their own realize raises their error."""
    written = set(bufs)
    readers = [t for t in list(_lazy) if _may_read(t.uop, written)]
    if readers:
        _realize_or_detach(readers, written)


def _realize_or_detach(readers: list[Tensor], bufs: set[UOp]) -> None:
    try:
        realize(readers)
    except Exception:  # those that did not run read a copy (their realize raises again)
        _detach_unrun(bufs, readers)


assign_count = [0]  # assigns made in this process (any thread): a replay's cue to look


_thread = threading.local()  # .pending: weak references to the states this thread assigned


def _note_pending(state: UOp) -> None:
    """Remember that this thread made the pending state `state` (see `take_pending_assigns`);
    the record drops settled and dead states whenever it doubles, so it stays small."""
    assign_count[0] += 1
    record = getattr(_thread, "pending", None)
    if record is None:
        record = _thread.pending = [[], 64]  # the references, the size that prunes them
    refs = record[0]
    refs.append(weakref.ref(state))
    if len(refs) >= record[1]:
        refs[:] = [r for r in refs if (s := r()) is not None and _views.get(s)]
        record[1] = max(64, 2 * len(refs))


def pending_states() -> set[UOp]:
    """Every pending assign state with a live view, any thread's."""
    return {s for s in _view_states() if s.op is Ops.AFTER}


def pending_on(bufs: set[UOp]) -> list[Tensor]:
    """One tensor viewing each pending state (any thread's) of a buffer in `bufs`."""
    return [t for s in _view_states() if s.op is Ops.AFTER and _storage(s) in bufs
            for t in list(_views.get(s, ()))[:1]]


def take_pending_assigns() -> list[Tensor]:
    """The assigns this thread made that are still pending: one tensor viewing each pending
    state (realizing them runs them). The record is emptied: the caller realizes them."""
    record = getattr(_thread, "pending", None)
    if not record or not record[0]:
        return []
    out = []
    for r in record[0]:
        s = r()
        views = _views.get(s) if s is not None else None
        if views:
            out.extend(list(views)[:1])
    record[0].clear()
    return out


def _tensor_of_state(state: UOp) -> Tensor:
    """A tensor whose realize writes `state` (a pending AFTER): a view registered under it,
    else a new tensor over it."""
    held = list(_views.get(state, ()))[:1]
    return held[0] if held else Tensor(state)


def _binds_disagree(binds) -> bool:
    """Whether two of these BIND nodes give one variable two values."""
    seen: dict[str, int] = {}
    return any(seen.setdefault(b.src[0].arg[0], b.src[1].arg) != b.src[1].arg for b in binds)


APART_DEPTH = 8  # realizes run apart inside realizes run apart, at most this deep


def _realize_apart(asked: list[Tensor], tensors: list[Tensor], nodes, level: int = 1) -> bool:
    """A realize whose parts bind one variable to two values (each statement bound it once:
    a reader of a state, or a pending assign, made with another value) runs its parts one
    after another, as the statements ran: first the lazy tensors taken along (they read
    states the rest overwrites), then each pending assign's final state; when the values
    disagree within what was asked, the live lazy tensors its graph holds, innermost first
    (``l1 = b + n.bind(1); l2 = l1 + n.bind(3)``: l1, then l2 over l1's buffer). Each part is
    a realize of its own, itself run apart where its values disagree (`level` deep, up to
    `APART_DEPTH`). The asked tensors follow (`realize` again, once). False when there is
    nothing to run apart (a ScheduleError follows)."""
    ids = {id(t) for t in asked}
    parts = [t for t in tensors if id(t) not in ids]
    below = {n.src[0] for n in nodes if n.op is Ops.AFTER}
    parts += [t for n in nodes if n.op is Ops.AFTER and n not in below
              and id(t := _tensor_of_state(n)) not in ids]
    if not parts:  # (this thread's: another thread's tensors are its own)
        at = {n: i for i, n in enumerate(nodes)}
        roots = {t.uop for t in asked}
        me = threading.get_ident()
        mine = [t for r in _lazy.newest(len(_lazy)) if r.thread == me and (t := r()) is not None]
        parts = sorted((t for t in mine if t.uop in at and t.uop not in roots),
                       key=lambda t: at[t.uop])
    if not parts:
        return False
    for t in parts:  # one at a time: each bound its variables once (or runs apart itself)
        realize([t], _split=level + 1 if level < APART_DEPTH else False)
    return True


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
    if _realize.capturing:
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
