"""get_kernel_graph: group a tensor graph into kernels (fusion) and emit the kernel graph.

Takes a tensor-level SINK whose sources are realizations ``AFTER(state, STORE(view, value))``
("the buffer of `state` after `value` is stored through `view`"); inputs are flat buffer
states (PARAM, BUFFER, or an earlier AFTER). Gives back the kernel graph of DESIGN.md: a SINK
of ``AFTER(prev_state, CALL(ast, prev_state, *input_states))`` nodes, where the first
argument of every kernel is the state it overwrites and the rest are the states it reads.

Fusion rules. A node gets its own buffer (is *realized*, ending a kernel) when it is:
1. an AFTER (a store into a buffer the program names: an output or an assign);
2. a CONTIGUOUS (always ends a kernel);
3. a COPY, or the source of a COPY that is not already a whole buffer;
4. a REDUCE_AXIS whose result is broadcast again (reaches an EXPAND) in its kernel: the
   reduction must be finished before any element of the broadcast can be computed;
5. a REDUCE_AXIS, SCAN or SORT that would otherwise be part of two or more kernels: a
   reduction is never computed twice;
6. an elementwise value on a device that would be part of two or more kernels and is the
   third level of recomputed values nested in each other (each used by more kernels than the
   one that holds it), so that chains such as a residual stream are not recomputed from their
   start in every kernel that reads them;
7. the source of a GATHER that is not a buffer or a view of one (it is read at
   data-dependent places: a computed value is computed whole first; a view is read where
   the indices point, so ``x[:, idx]`` reads len(idx) columns, not a copy of x);
8. the value of an assign that reads the buffer being written other than element for element
   through the written view (e.g. ``x[1:].assign(x[:-1])``): it is computed into a temporary
   first, so the store cannot corrupt what is still to be read.
Everything else fuses into the kernels that consume it: elementwise chains and diamonds of
any length, a reduction with its elementwise inputs and its elementwise epilogue, and
movement ops (which become numpy views inside the kernel). Elementwise nodes used by several
kernels are recomputed in each rather than stored.
"""

from __future__ import annotations

from tolk.dtype import dtypes
from tolk.errors import ScheduleError
from tolk.uop.ops import GroupOp, KernelInfo, Ops, UOp, fresh_internal_buffer_slot
from tolk.uop.shape import Sym, device_of, max_numel, shape_of, syms_in

_BASE_STATES = frozenset({Ops.BUFFER, Ops.PARAM, Ops.AFTER})
_LEAVES = frozenset({Ops.CONST, Ops.DEFINE_VAR, Ops.BIND})
_ELEMENTWISE = GroupOp.Elementwise
# Rule 6: recomputed values may nest this deep (a value in a value in a value) before the
# outermost is stored.
MAX_NESTED_RECOMPUTE = 3


def _store_of(after: UOp) -> UOp:
    stores = [c for c in after.src[1:] if c.op is Ops.STORE]
    if len(stores) != 1 or len(after.src) != 2:
        raise ScheduleError(f"a realization must be AFTER(state, STORE(view, value)), "
                            f"got {after.short()}")
    return stores[0]


def _view_chain(view: UOp) -> list[UOp]:
    """Movement nodes from a store view down to (not including) its base state."""
    chain = []
    while view.op in GroupOp.Movement:
        chain.append(view)
        view = view.src[0]
    return chain


class _Kernelizer:
    def __init__(self, sink: UOp):
        self.sink = sink
        for s in sink.src:
            if s.op is not Ops.AFTER:
                raise ScheduleError(f"tensor SINK sources must be AFTER realizations, "
                                    f"got {s.short()}")
        self.nodes = sink.toposort()
        self.realized: dict[UOp, None] = {}
        self.state: dict[UOp, UOp] = {}  # realized node or base state -> kernel-graph state
        self.bases: dict[UOp, UOp] = {}  # AFTER state -> its BUFFER or PARAM
        # assigns whose whole value is an older state of their own target: rule 8 copies that
        # state into a temporary (the state itself is not realized: it is also the target)
        self.copied_values: dict[UOp, None] = {}
        self.state_users: dict[UOp, list[UOp]] = {}  # base state -> the nodes using it
        self.temps: dict[UOp, UOp] = {}  # realized node (not an AFTER) -> its internal BUFFER
        self.has_vars = any(n.op in (Ops.DEFINE_VAR, Ops.BIND) for n in self.nodes)

    # -- deciding what is realized --------------------------------------------------------------

    def kernel_children(self, n: UOp) -> tuple[UOp, ...]:
        """The compute nodes a realized node's kernel starts from."""
        if n.op is Ops.AFTER:
            return (_store_of(n).src[1],)
        if n.op is Ops.COPY:
            return ()
        return n.src

    def is_leaf(self, n: UOp) -> bool:
        return n.op in _BASE_STATES or n.op in _LEAVES or n.op in (Ops.STORE, Ops.SINK)

    def decide(self) -> None:
        users: dict[UOp, int] = {}
        for n in self.nodes:
            for s in n.src:
                users[s] = users.get(s, 0) + 1
                if s.op in _BASE_STATES:
                    self.state_users.setdefault(s, []).append(n)
        stored = {_store_of(n).src[1] for n in self.nodes if n.op is Ops.AFTER}
        for n in self.nodes:
            # a CONTIGUOUS stored straight into a buffer is realized by that store
            if n.op is Ops.CONTIGUOUS and n in stored and users[n] == 1:
                continue
            if n.op in (Ops.AFTER, Ops.CONTIGUOUS, Ops.COPY):
                self.realized[n] = None
            if n.op is Ops.COPY and not self.is_whole_buffer(n.src[0]):
                self.realized[n.src[0]] = None
            # a gather reads its source at data-dependent places: a buffer, or a view of one
            if n.op is Ops.GATHER and not self.is_buffer_view(n.src[0]):
                self.realized[n.src[0]] = None
        for n in self.nodes:
            if n.op is Ops.AFTER:
                self.check_assign_hazard(n)
        changed = True
        while changed:
            # reductions first: they bound the walks that rule 6 makes
            changed = self.realize_expanded_reduces() | self.realize_shared()

    def is_whole_buffer(self, x: UOp) -> bool:
        while x.op is Ops.RESHAPE:
            x = x.src[0]
        return x.op in _BASE_STATES or x in self.realized

    def is_buffer_view(self, x: UOp) -> bool:
        """Whether `x` is movement ops over a buffer state or a realized node."""
        while x.op in GroupOp.Movement:
            x = x.src[0]
        return x.op in _BASE_STATES or x in self.realized

    def realize_expanded_reduces(self) -> bool:
        """Rule 4. At each EXPAND over a value that holds an unfinished reduction, realize the
        first non-movement node under the EXPAND: the reduction with its epilogue, whole."""
        pending: dict[UOp, bool] = {}
        changed = False
        for n in self.nodes:
            if n in self.realized or self.is_leaf(n):
                pending[n] = False
                continue
            below = n.op is Ops.REDUCE_AXIS or any(pending.get(s, False) for s in n.src)
            if n.op is Ops.EXPAND and below:
                m = n.src[0]
                while m.op in GroupOp.Movement and m not in self.realized:
                    m = m.src[0]
                # `pending` may be stale after earlier realizations in this pass: check afresh
                if m not in self.realized and self.holds_reduce(m):
                    self.realized[m] = None
                    changed = True
                    pending[m] = False
                below = False
            pending[n] = below
        return changed

    def realize_shared(self) -> bool:
        """Rules 5 and 6: values that would be computed in two or more kernels.

        One pass from the outputs down (reverse toposort): when a node is reached, every
        kernel that computes it is known (`member`), and realizing it makes it the one kernel
        that what it reads belongs to. Rule 6 counts nesting from the top: `above[n]` maps
        the kernel count of each recomputed value above `n` in its kernels to how deeply
        recomputed values nest there; `n` nests under those with fewer kernels than its own.
        """
        member: dict[UOp, set[UOp]] = {}
        above: dict[UOp, dict[int, int]] = {}
        changed = False
        for n in reversed(self.nodes):
            if n in self.realized:
                kernels, nest = {n}, {}
            elif n in member:
                kernels, nest = member[n], above.get(n, {})
                if len(kernels) >= 2 and n.op in (Ops.REDUCE_AXIS, Ops.SCAN, Ops.SORT):
                    self.realized[n] = None
                    kernels, nest, changed = {n}, {}, True
                elif len(kernels) >= 2 and n.op in _ELEMENTWISE and device_of(n) is not None:
                    # (a value of variables and constants only has no device: recomputed)
                    level = 1 + max((d for k, d in nest.items() if k < len(kernels)), default=0)
                    if level >= MAX_NESTED_RECOMPUTE:
                        self.realized[n] = None
                        kernels, nest, changed = {n}, {}, True
                    else:
                        nest = {**nest, len(kernels): max(level, nest.get(len(kernels), 0))}
            else:
                continue
            for c in (self.kernel_children(n) if n in self.realized else n.src):
                if c in self.realized or self.is_leaf(c):
                    continue
                member.setdefault(c, set()).update(kernels)
                if nest:
                    into = above.setdefault(c, {})
                    for k, d in nest.items():
                        if d > into.get(k, 0):
                            into[k] = d
        return changed

    def check_assign_hazard(self, after: UOp) -> None:
        """Rule 8: realize an assign's value that reads the target other than elementwise.

        Safe reads of the target in the assign's kernel go through the written view itself
        (the same hash-consed chain of view nodes) into elementwise ops; anything else, such
        as a shifted or transposed view or an older state of the buffer, is a hazard."""
        state, store = after.src[0], _store_of(after)
        view, value = store.src
        chain = set(_view_chain(view)) | {view}
        if state.op is not Ops.AFTER \
                and all(u is after or u in chain for u in self.state_users[state]):
            return  # a buffer this graph only writes here (such as a fresh output): no hazard
        target = self.base_of(state)
        if value.op in _BASE_STATES and self.base_of(value) is target and value is not view:
            self.copied_values[after] = None
            return
        for n in self.kernel_nodes(value):
            if n is not value and (n in self.realized or self.is_leaf(n)):
                continue  # computed in another kernel
            for s in n.src:
                touches = s in chain or (s.op in _BASE_STATES and self.base_of(s) is target)
                if touches and not (n in chain or (s is view and n.op in _ELEMENTWISE)):
                    self.realized[value] = None
                    return

    def base_of(self, state: UOp) -> UOp:
        """The storage under a chain of AFTER states (memoized: assign chains can be long)."""
        chain = []
        while state.op is Ops.AFTER and state not in self.bases:
            chain.append(state)
            state = state.src[0]
        base = self.bases.get(state, state)
        for c in chain:
            self.bases[c] = base
        return base

    def param(self, i: int, state: UOp) -> UOp:
        """Kernel parameter `i` standing for the buffer of kernel-graph `state`."""
        base = self.base_of(state)
        return UOp(Ops.PARAM, base.dtype, (), (i, base.arg[1], base.arg[2]))

    def holds_reduce(self, root: UOp) -> bool:
        """Whether the kernel computing `root` contains an unfinished reduction (stops at the
        first one found)."""
        seen, todo = set(), [root]
        while todo:
            n = todo.pop()
            if n.op is Ops.REDUCE_AXIS:
                return True
            for s in n.src:
                if s not in seen and not (s in self.realized or self.is_leaf(s)):
                    seen.add(s)
                    todo.append(s)
        return False

    def kernel_nodes(self, root: UOp) -> list[UOp]:
        """The nodes computed in the kernel that computes `root` (realized inputs excluded)."""
        return root.toposort(enter=lambda n: n is root
                             or not (n in self.realized or self.is_leaf(n)))

    # -- emitting kernels -----------------------------------------------------------------------

    def state_of(self, x: UOp) -> UOp:
        return self.state[x] if x in self.state else x

    def run(self) -> UOp:
        self.decide()
        for n in self.nodes:
            if n in self.realized:
                self.state[n] = self.emit(n)
        return UOp.sink(*(self.state[s] for s in self.sink.src))

    def emit(self, n: UOp) -> UOp:
        if n.op is Ops.AFTER:
            view, value = _store_of(n).src
            if n in self.copied_values:
                copy = self.copy_kernel(value)
                return self.kernel(self.state_of(n.src[0]), view, n.src[0], value, value_state=copy)
            return self.kernel(self.state_of(n.src[0]), view, n.src[0], value)
        shape = shape_of(n)
        buf = UOp(Ops.BUFFER, n.dtype, (),
                  (fresh_internal_buffer_slot(), device_of(n), max_numel(shape)))
        self.temps[n] = buf
        if n.op is Ops.COPY:
            src = n.src[0]
            while src.op is Ops.RESHAPE and src not in self.realized:
                src = src.src[0]
            call = UOp(Ops.CALL, dtypes.void,
                       (UOp(Ops.COPY, n.dtype, (), n.arg), buf, self.state_of(src)))
            return UOp(Ops.AFTER, n.dtype, (buf, call))
        view = UOp(Ops.RESHAPE, n.dtype, (buf,), shape)
        if n.op is Ops.CONTIGUOUS:
            return self.kernel(buf, view, buf, n.src[0])
        return self.kernel(buf, view, buf, n, compute_root=True)

    def copy_kernel(self, state: UOp) -> UOp:
        """A kernel copying the whole buffer of base state `state` into a new buffer."""
        size = self.base_of(state).arg[2]
        buf = UOp(Ops.BUFFER, state.dtype, (),
                  (fresh_internal_buffer_slot(), device_of(state), size))
        return self.kernel(buf, buf, buf, state)

    def kernel(self, prev: UOp, view: UOp, view_base: UOp, value: UOp,
               compute_root: bool = False, value_state: UOp | None = None) -> UOp:
        """AFTER(prev, CALL(ast, prev, *inputs)): a kernel storing `value` through `view`.

        `compute_root`: `value` is itself realized (by this kernel), so it is computed here
        rather than loaded. `value_state`: a base-state `value` is loaded from this
        kernel-graph state instead of its own."""
        params: dict[UOp, UOp] = {prev: self.param(0, prev)}
        args: list[UOp] = [prev]

        def load(state: UOp) -> UOp:
            if state not in params:
                params[state] = self.param(len(args), state)
                args.append(state)
            return UOp(Ops.LOAD, state.dtype, (params[state],))

        def enter(x: UOp) -> bool:
            return (x is value and compute_root) or not (x in self.realized or self.is_leaf(x))

        mapping: dict[UOp, UOp] = {}
        reduce_op = None  # the first reduction computed here names the kernel
        for n in value.toposort(enter=enter):
            if reduce_op is None and n.op is Ops.REDUCE_AXIS and enter(n):
                reduce_op = n.arg[0]
            if n is value and value_state is not None:
                mapping[n] = load(value_state)
            elif n.op in _BASE_STATES and (n is value or n not in self.realized):
                mapping[n] = load(self.state_of(n))
            elif n in self.realized and not (n is value and compute_root):
                mapping[n] = UOp(Ops.RESHAPE, n.dtype, (load(self.state[n]),), shape_of(n))
            elif n.op is Ops.BIND:
                mapping[n] = n.src[0]
            elif n.op is Ops.CONST:
                mapping[n] = UOp.const(n.dtype, n.arg)  # drop the device marker
            elif n.op is Ops.CONTIGUOUS:
                mapping[n] = mapping[n.src[0]]  # realized by the store of this very kernel
            else:
                mapping[n] = n.replace(src=tuple(mapping[s] for s in n.src))
        target = view.substitute({view_base: params[prev]})
        store = UOp(Ops.STORE, dtypes.void, (target, mapping[value]))
        # the variables the kernel reads (also those that only size its shapes) are sources
        var_nodes: tuple[UOp, ...] = ()
        if self.has_vars:
            nodes = store.toposort()
            var_nodes = tuple({n: None for n in nodes if n.op is Ops.DEFINE_VAR} |
                              {_var_of(d): None for n in nodes for d in syms_in(n.arg)})
        info = KernelInfo(_kernel_name(reduce_op, shape_of(view)))
        ast = UOp(Ops.SINK, dtypes.void, (store, *var_nodes), info)
        return UOp(Ops.AFTER, prev.dtype, (prev, UOp(Ops.CALL, dtypes.void, (ast, *args))))


def _var_of(d: Sym) -> UOp:
    return UOp(Ops.DEFINE_VAR, dtypes.int32, (), (d.name, d.lo, d.hi))


def _kernel_name(reduce_op, shape: tuple[int, ...]) -> str:
    prefix = "r_" + reduce_op.name.lower() if reduce_op is not None else "E"
    return "_".join([prefix, *(str(s) for s in shape)]) if shape else prefix


def get_kernel_graph(sink: UOp) -> UOp:
    """Fuse the tensor graph under `sink` into kernels; see the module docstring for the rules.

    Raises `ScheduleError` when a SINK source is not an ``AFTER(state, STORE(view, value))``.
    """
    return _Kernelizer(sink).run()


def kernel_graph_and_temps(sink: UOp) -> tuple[UOp, dict[UOp, UOp]]:
    """`get_kernel_graph(sink)` and the temporaries it made: each realized node of the tensor
    graph that is no AFTER (rules 2-7), mapped to the internal BUFFER its kernel writes (the
    first argument of that kernel's CALL)."""
    k = _Kernelizer(sink)
    return k.run(), k.temps
