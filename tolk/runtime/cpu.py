"""Kernel ASTs compiled to Python functions over numpy, once per (ast key, device).

A kernel AST is ``SINK(STORE(target, value), ...)`` where:
- ``LOAD(PARAM i)`` is the flat contents of the i-th buffer argument;
- movement ops (RESHAPE, PERMUTE, EXPAND, PAD, SHRINK, FLIP) are numpy views of values; a
  chain that repeats an axis and reshapes it (sliding windows) is composed into one strided
  view, where op by op numpy would copy at the reshape;
- a STORE target is a chain of view ops over ``PARAM i`` that must stay a view of the buffer;
- ALU ops, CAST, BITCAST and REDUCE_AXIS ``(op, axes)`` (keeping reduced axes as size 1;
  ARGMAX and ARGMIN over one axis give int64 indices, numpy's), SCAN ``(op, axis)`` as
  numpy's cumsum or cumprod, SORT ``(axis, descending, indices)`` as numpy's stable sort
  or argsort;
A sum of a product, ``REDUCE_AXIS(ADD, MUL(a, b))``, runs as one matrix product on the
un-broadcast operands (BLAS for matmul and convolution), never materialising the product: its
values are those of the product summed in another order (a few ulps apart, as numpy's own
matmul is from its elementwise sum); where it meets inf or nan the product and sum run as
written (an overflowing product gives what numpy gives; one that BLAS's fused multiply-adds
absorb into a finite sum is not seen, as in numpy's matmul). Not for 16-bit floats.
Other float sums and products reduce a C-contiguous array, and float to int casts read one:
numpy's results there depend on the layout, which fusion decides.
bfloat16 values are computed in float32 and rounded to bfloat16 after every op (`bf16_round`),
so a value never depends on what was fused with it.
Constant values and static window bounds (a SHRINK's, a PAD's widths, a strided view's
start) are arguments of the function, not part of its source: kernels that differ in those
only share one compiled function (a loop over a new scalar, or a row written at a new index,
each step).
"""

from __future__ import annotations

import functools
import math
import re
import string
import threading
from collections.abc import Callable

import numpy as np

from tolk.dtype import DType, bf16_to_f32, dtypes, f32_to_bf16
from tolk.errors import KernelCompileError
from tolk.helpers import DEBUG
from tolk.uop.ops import GroupOp, Ops, UOp
from tolk.uop.shape import Sym, shape_of, syms_in

KernelFn = Callable[[list, dict], None]

_UNARY = {
    Ops.NEG: "np.negative", Ops.EXP: "np.exp", Ops.LOG: "np.log", Ops.SQRT: "np.sqrt",
    Ops.RECIPROCAL: "np.reciprocal", Ops.SIN: "np.sin", Ops.COS: "np.cos", Ops.TANH: "np.tanh",
    Ops.ABS: "np.abs", Ops.SIGN: "np.sign", Ops.NOT: "np.logical_not", Ops.TRUNC: "np.trunc",
    Ops.EXP2: "np.exp2", Ops.LOG2: "np.log2", Ops.FLOOR: "np.floor", Ops.CEIL: "np.ceil",
    Ops.LOG1P: "np.log1p", Ops.EXPM1: "np.expm1", Ops.TAN: "np.tan", Ops.SINH: "np.sinh",
    Ops.COSH: "np.cosh", Ops.ASIN: "np.arcsin", Ops.ACOS: "np.arccos", Ops.ATAN: "np.arctan",
    Ops.ASINH: "np.arcsinh", Ops.ACOSH: "np.arccosh", Ops.ATANH: "np.arctanh",
    Ops.RINT: "np.rint", Ops.ERF: "erf_values", Ops.ERFC: "erfc_values",
    Ops.SIGMOID: "sigmoid_values",
}
_BINARY = {
    Ops.ADD: "np.add", Ops.SUB: "np.subtract", Ops.MUL: "np.multiply", Ops.DIV: "np.true_divide",
    Ops.IDIV: "np.floor_divide", Ops.MOD: "np.remainder", Ops.POW: "np.power",
    Ops.MAX: "np.maximum", Ops.MIN: "np.minimum", Ops.CMPLT: "np.less", Ops.CMPLE: "np.less_equal",
    Ops.CMPEQ: "np.equal", Ops.CMPNE: "np.not_equal", Ops.AND: "np.bitwise_and",
    Ops.OR: "np.bitwise_or", Ops.XOR: "np.bitwise_xor", Ops.ATAN2: "np.arctan2",
    Ops.HYPOT: "np.hypot", Ops.FMOD: "np.fmod", Ops.COPYSIGN: "np.copysign",
    Ops.SHL: "np.left_shift", Ops.SHR: "np.right_shift",
}
_REDUCE = {Ops.ADD: "np.add", Ops.MUL: "np.multiply", Ops.MAX: "np.maximum", Ops.MIN: "np.minimum"}


def compute_np(d: DType) -> np.dtype:
    """The numpy type values of dtype `d` are computed in (bfloat16 -> float32)."""
    return np.dtype(np.float32) if d is dtypes.bfloat16 else d.np


def _contraction_operands(node: UOp, users: dict[UOp, int]):
    """For REDUCE_AXIS(ADD, MUL(a, b)): the un-broadcast operands, else None."""
    if node.arg[0] is not Ops.ADD or node.src[0].op is not Ops.MUL:
        return None
    mul = node.src[0]
    # not for 16-bit floats: matmul would not round each product to 16 bits (Tensor.matmul
    # computes 16-bit operands in float32 itself)
    if not node.dtype.is_float or node.dtype.itemsize == 2 or users.get(mul, 0) > 1:
        return None
    if mul.src[0] is mul.src[1]:  # x * x: one node cannot be two einsum operands here
        return None
    ops = tuple(x.src[0] if x.op is Ops.EXPAND and users.get(x, 0) == 1 else x for x in mul.src)
    full = shape_of(mul)
    for ax in range(len(full)):
        broadcast = [shape_of(o)[ax] == 1 and full[ax] != 1 for o in ops]
        if ax in node.arg[1] and any(broadcast):  # a summed axis broadcast in an operand:
            return None  # einsum would factor it out of the sum (sum(x) * c is not
            # sum(x * c) for inf, nan and overflow)
        if all(broadcast):  # a kept axis neither operand has: no einsum label for it
            return None
    return ops


def shape_code(shape) -> str:
    """Python source for a shape whose symbolic dimensions are read from ``vv`` at run time."""
    parts = [f"(vv[{d.name!r}] + {d.add})" if isinstance(d, Sym) else str(int(d)) for d in shape]
    return "(" + "".join(p + ", " for p in parts) + ")"


def _einsum_spec(full: tuple[int, ...], ops_shapes, axes) -> tuple[str, list[tuple[int, ...]]]:
    """An einsum spec over the full iteration shape; axes broadcast in an operand are dropped."""
    if len(full) > len(string.ascii_letters):
        raise KernelCompileError(f"contraction of rank {len(full)} is too large")
    labels = string.ascii_letters[: len(full)]
    ins, squeezes = [], []
    for shp in ops_shapes:
        keep = [i for i, (s, f) in enumerate(zip(shp, full)) if not (s == 1 and f != 1)]
        ins.append("".join(labels[i] for i in keep))
        squeezes.append(tuple(i for i in range(len(full)) if i not in keep))
    out = "".join(labels[i] for i in range(len(full)) if i not in axes)
    return ",".join(ins) + "->" + out, squeezes


_VALUE_NAME = re.compile(r"\bv\d+\b")


def _free_when_dead(lines: list[str]) -> list[str]:
    """`lines` with each value name deleted right after the last line that names it, so a
    temporary array is freed as soon as it is read for the last time (as in a numpy
    expression), not when the kernel returns: a chain of elementwise ops reuses the memory
    of the values it no longer needs, where fresh memory would be faulted in every time."""
    made = {m[1] for line in lines if (m := _ASSIGNED.match(line))}
    last: dict[str, int] = {}
    for i, line in enumerate(lines):  # (a variable's name in ``vv['v3']`` is no value name)
        for name in _VALUE_NAME.findall(_STRING.sub("''", line)):
            if name in made:
                last[name] = i
    dead: dict[int, list[str]] = {}
    for name, i in last.items():
        dead.setdefault(i, []).append(name)
    out = []
    for i, line in enumerate(lines):
        if line == "    pass" or ((m := _UNREAD_LOAD.match(line)) and last[m[1]] == i):
            continue  # (a constant or buffer no line reads: folded into a later constant)
        out.append(line)
        if i in dead and i < len(lines) - 1:  # (the last line's go when the kernel returns)
            out.append(f"    del {', '.join(dead[i])}")
    return out


_UNREAD_LOAD = re.compile(r"^    (v\d+) = [bc]\[\d+\]$")
_ASSIGNED = re.compile(r"^    (v\d+) = ")
_STRING = re.compile(r"'[^']*'|\"[^\"]*\"")


class _Codegen:
    def __init__(self, ast: UOp):
        self.ast = ast
        self.lines: list[str] = []
        self.consts: list[object] = []
        self.names: dict[UOp, str] = {}
        self.nodes = ast.toposort()
        self.users: dict[UOp, int] = {}
        for n in self.nodes:
            for s in n.src:
                self.users[s] = self.users.get(s, 0) + 1
        self.skip: set[UOp] = set()
        self.ufuncs: dict[UOp, tuple[int, str]] = {}  # ALU node -> (its line, its open call)
        self.takes: dict[UOp, tuple[int, str]] = {}  # GATHER node -> (its line, its operands)
        self.store_targets: set[UOp] = set()
        self.constval: dict[UOp, np.ndarray] = {}  # values known at compile time
        self.index_targets: set[UOp] = set()  # store targets that are no numpy view (a PAD)
        for n in self.nodes:
            if n.op is Ops.STORE:
                chain, t = [], n.src[0]
                while t.op in GroupOp.Movement:
                    chain.append(t)
                    t = t.src[0]
                self.store_targets.update(chain)
                if any(x.op in (Ops.PAD, Ops.EXPAND) for x in chain) or not _numpy_view(chain, t):
                    # such a target is built over element indices (-1 in the padding) and
                    # stored through them, so no write lands in a temporary copy
                    self.index_targets.update(chain)
            if n.op is Ops.REDUCE_AXIS and (ops := _contraction_operands(n, self.users)):
                mul = n.src[0]
                self.skip.add(mul)
                self.skip.update(x for x in mul.src if x.op is Ops.EXPAND and x.src[0] in ops)
        # a pad with a value, ``WHERE(PAD(true), PAD(x), value)``: the value everywhere, x
        # copied into its region (no mask and no padded copy of x to select from)
        self.pad_fills: dict[UOp, UOp] = {}  # WHERE -> its PAD of x
        for n in self.nodes:
            if n.op is Ops.WHERE and n.src[0].op is Ops.PAD and n.src[1].op is Ops.PAD \
                    and n.src[0].arg == n.src[1].arg and _const_arg(n.src[0].src[0]) is True \
                    and _const_arg(n.src[2]) is not None and n.dtype is not dtypes.bfloat16 \
                    and not any(isinstance(d, Sym) for d in shape_of(n)) \
                    and self.users.get(n.src[0]) == 1 and self.users.get(n.src[1]) == 1:
                self.pad_fills[n] = n.src[1]
                self.skip.update(n.src[:2])
        # sums of padded values (how concatenation is written) add each value into its
        # region of one zeroed array, instead of padding every value to the full shape
        self.clips: dict[UOp, tuple[int, str, str]] = {}  # MAX as clip -> (line, x, bound)
        self.padsums: dict[UOp, list[UOp]] = {}
        self.concat_lines: dict[UOp, tuple] = {}  # concatenation -> (its zeros line, ...)
        self.concats = {n.src[0] for n in self.nodes if n.op is Ops.CAST
                        and n.dtype is n.src[0].dtype and n.src[0].op is Ops.ADD}
        # an ADD inside a sum already walked has no more PAD leaves than that sum: walking
        # each sum from its root only keeps a long chain of adds linear, not quadratic
        walked: set[UOp] = set()
        for n in reversed(self.nodes):
            if n.op is Ops.ADD and n not in self.skip and n not in walked:
                inner, leaves = self._add_tree(n)
                walked.update(inner)
                concat = False
                if n in self.concats:  # its pads and sums read elsewhere too: still copies
                    cat_leaves = self._add_tree(n, shared=True)[1]
                    concat = all(x.op is Ops.PAD for x in cat_leaves) and _disjoint(cat_leaves)
                if concat or self._padsum_exact(n, inner, leaves):
                    # skipped: what only this sum reads (a shared part is still computed for
                    # its other readers, from its own parts)
                    self.skip.update(inner)
                    self.skip.update(x for x in leaves
                                     if x.op is Ops.PAD and self.users.get(x, 0) == 1)
                    self.padsums[n] = cat_leaves if concat else leaves
        # movement chains that repeat an axis and cut it again (how overlapping windows are
        # written) would copy at a reshape; each one that is a single strided view of the
        # value under it is emitted as that view
        self.strided: dict[UOp, tuple] = {}  # view -> (base, start, coeffs)
        tried: set[UOp] = set()  # nodes of chains already looked at (each chain once)
        for n in reversed(self.nodes):
            if n.op in GroupOp.Movement and n not in tried and n not in self.skip \
                    and n not in self.store_targets:
                tried.update(self._try_strided(n))

    def _try_strided(self, end: UOp) -> list[UOp]:
        """Record `end` as one strided view if its chain of single-use movement ops (down to a
        PAD or a non-movement value) expands an axis and reshapes afterwards; returns the chain."""
        chain, base = [end], end.src[0]
        while (base.op in GroupOp.Movement and base.op is not Ops.PAD and self.users.get(base) == 1
               and base not in self.store_targets and base not in self.skip):
            chain.append(base)
            base = base.src[0]
        chain.reverse()
        first_expand = next((i for i, m in enumerate(chain) if m.op is Ops.EXPAND), None)
        if first_expand is None or all(m.op is not Ops.RESHAPE for m in chain[first_expand:]):
            return chain
        if any(len(m.src) > 1 for m in chain):
            return chain  # views with variable bounds keep the plain chain
        view = strided_view_of(shape_of(base), chain)
        if view is not None:
            self.strided[end] = (base, *view)
            self.skip.update(chain[:-1])
        return chain

    def _add_tree(self, root: UOp, shared: bool = False) -> tuple[list[UOp], list[UOp]]:
        """Single-use ADD nodes under `root` (`shared`: read elsewhere too) and the leaves of
        that sum."""
        inner, leaves, todo = [], [], list(reversed(root.src))
        while todo:
            x = todo.pop()
            if x.op is Ops.ADD and (shared or self.users.get(x, 0) == 1) and x not in self.skip:
                inner.append(x)
                todo.extend(reversed(x.src))
            else:
                leaves.append(x)
        return inner, leaves

    def _padsum_exact(self, n: UOp, inner: list[UOp], leaves: list[UOp]) -> bool:
        """Whether the sum `n` of `leaves` (two or more single-use PADs among them; `inner`:
        its ADDs) gives the same values added region by region, the PADs' sources first:
        always for integers; for floats when no element sees its order of adds change (a
        chain ``((a + b) + c) + ...``, each element meeting one source of disjoint PADs and at
        most one other leaf before it; overlapping PADs first); for bfloat16, rounded after
        every add, only a concatenation (disjoint PADs alone: copies, no add)."""
        pads = [i for i, x in enumerate(leaves) if x.op is Ops.PAD and self.users.get(x, 0) == 1]
        if len(pads) < 2:
            return False
        if n.dtype is dtypes.bfloat16:  # only a concatenation: copies, no add to round
            return len(pads) == len(leaves) and _disjoint(leaves)
        if not n.dtype.is_float:
            return True
        adds = set(inner)
        if any(a.src[1] in adds for a in (n, *inner)):  # ``a + (b + c)``: not a chain
            return False
        before = pads[-1] + 1 - len(pads)  # other leaves added before the last PAD
        return before == 0 or before == 1 and _disjoint([leaves[i] for i in pads])

    def padsum(self, n: UOp) -> None:
        name = f"v{len(self.names)}"
        self.names[n] = name
        cdt = self.const(compute_np(n.dtype))
        self.lines.append(f"    {name} = np.zeros({shape_code(shape_of(n))}, dtype={cdt})")
        concat = n in self.concats and all(x.op is Ops.PAD for x in self.padsums[n])
        pads = [x for x in self.padsums[n] if concat or x in self.skip]
        # a concatenation (`Tensor.cat`: disjoint regions, the sum marked by a cast to its own
        # dtype) is copied in, which keeps -0.0 as np.concatenate does; any other sum of pads
        # adds into zeros (+0.0 plus -0.0 is +0.0, as numpy's pad then add gives it)
        op = "=" if concat and _disjoint(pads) else "+="
        if op == "=":  # a store of it alone may copy the parts into the buffer itself
            covered = all(not isinstance(d, Sym) for d in shape_of(n)) and sum(
                math.prod(shape_of(x.src[0])) for x in pads) == math.prod(shape_of(n))
            self.concat_lines[n] = (len(self.lines) - 1, name, cdt, covered,
                                    [self.names[x.src[0]] for x in pads])
        for leaf in pads:  # their sources go into their regions (a cat's: every pad's)
            src_shape = shape_of(leaf.src[0])
            idx = ", ".join(f"{b}:{b} + {_dim_code(d)}" for (b, _), d in zip(leaf.arg, src_shape))
            self.lines.append(f"    {name}[{idx},] {op} {self.names[leaf.src[0]]}")
        copied = set(pads)  # (a set: a list here made a concatenation of n parts n**2)
        for leaf in self.padsums[n]:
            if leaf not in copied:
                self.lines.append(f"    {name} += {self.names[leaf]}")

    def const(self, value: object) -> str:
        self.consts.append(value)
        return f"c[{len(self.consts) - 1}]"

    def emit(self, n: UOp, expr: str) -> None:
        name = f"v{len(self.names)}"
        self.names[n] = name
        self.lines.append(f"    {name} = {expr}")

    def run(self) -> str:
        for n in self.nodes:
            if n in self.skip:
                continue
            if n in self.padsums:
                self.padsum(n)
                continue
            self.node(n)
        lines = _free_when_dead(self.lines)
        return "def kernel(b, vv, c):\n" + "\n".join(lines or ["    pass"]) + "\n"

    def node(self, n: UOp) -> None:  # noqa: C901 - one branch per op family
        op, s = n.op, [self.names.get(x) for x in n.src]
        cdt = None if n.dtype is dtypes.void else compute_np(n.dtype)
        if op is Ops.PARAM:
            self.emit(n, f"b[{n.arg[0]}]")
        elif op is Ops.LOAD:
            src = n.src[0]
            if src.dtype is dtypes.bfloat16:
                self.emit(n, f"bf16_to_f32({s[0]})")
            else:
                self.names[n] = s[0]  # the buffer itself: no line
        elif op is Ops.CONST:
            if n.dtype is dtypes.bfloat16:  # rounded once, from the value itself (through
                self.constval[n] = bf16_round(n.arg)  # float32 it would round twice)
            else:
                self.constval[n] = np.array(n.arg, dtype=cdt)
            self.emit(n, self.const(self.constval[n]))
        elif op is Ops.DEFINE_VAR:
            self.emit(n, f"{self.const(cdt.type)}(vv[{n.arg[0]!r}])")
        elif op is Ops.BIND:
            self.emit(n, f"{self.const(cdt.type)}(vv[{n.src[0].arg[0]!r}])")
        elif op in (Ops.MAX, Ops.MIN) and (call := self.clip_call(n, s, cdt)) is not None:
            self.ufuncs[n] = (len(self.lines), call)
            self.emit(n, call + ")")
        elif op in _UNARY or op in _BINARY:
            if op is Ops.POW and not n.dtype.is_float and not n.dtype.is_unsigned \
                    and n.dtype is not dtypes.bool:  # numpy's error, raised before any store
                e = n.src[1]
                msg = repr(f"integers to negative integer powers are not allowed (a power "
                           f"in {n.dtype.name} with a negative value in its exponent tensor), "
                           f"as in numpy: use a float tensor")
                if e not in self.constval:  # (a constant exponent was checked when built)
                    self.lines.append(f"    if any_negative({s[1]}): raise ValueError({msg})")
                elif any_negative(self.constval[e]):
                    self.lines.append(f"    raise ValueError({msg})")
            call = f"{_UNARY[op]}({s[0]}" if op in _UNARY else f"{_BINARY[op]}({s[0]}, {s[1]}"
            if op is Ops.POW and n.src[1] in self.constval \
                    and self.constval[n.src[1]].reshape(-1)[:1].tolist() == [2]:
                call = f"np.square({s[0]}"  # what numpy's power does for a power of 2
            if n.dtype is not dtypes.bfloat16:  # a ufunc call a store may write through
                self.ufuncs[n] = (len(self.lines), call)
            self.emit(n, self.bf16(n, call + ")"))
        elif op is Ops.WHERE and n in self.pad_fills:
            pad = self.pad_fills[n]
            value = self.const(np.asarray(_const_arg(n.src[2]), dtype=cdt))
            self.emit(n, f"pad_fill({self.names[pad.src[0]]}, {tuple(map(tuple, pad.arg))}, "
                         f"{value}, {shape_code(shape_of(n))})")
        elif op is Ops.WHERE:
            self.emit(n, f"np.where({s[0]}, {s[1]}, {s[2]})")
        elif op is Ops.CAST and n.dtype is n.src[0].dtype:  # a copy's mark (Tensor._copy)
            self.names[n] = self.names[n.src[0]]
        elif op is Ops.CAST:
            self.emit(n, self.cast(n, s[0]))
        elif op is Ops.BITCAST:
            self.emit(n, self.bitcast(n, s[0]))
        elif op is Ops.REDUCE_AXIS:
            self.emit(n, self.bf16(n, self.reduce(n, s[0], cdt)))
        elif op is Ops.SCAN:
            self.emit(n, self.bf16(n, self.scan(n, s[0], cdt)))
        elif op is Ops.SORT:
            self.emit(n, self.sort(n, s[0]))
        elif op is Ops.GATHER:
            where = "" if n.arg is None else f", {n.arg!r}"
            self.takes[n] = (len(self.lines), f"{s[0]}, {s[1]}{where}")
            self.emit(n, f"take_rows({s[0]}, {s[1]}{where})")
        elif op is Ops.SCATTER_ADD:
            each = ", bf16_round" if n.dtype is dtypes.bfloat16 else ", None"
            where = "" if n.arg is None else f", {n.arg!r}"
            self.emit(n, self.bf16(n, f"scatter_add({s[0]}, {s[1]}, {s[2]}, "
                                      f"{self.const(cdt)}{each}{where})"))
        elif op in GroupOp.Movement:
            self.emit(n, self.movement(n, s[0]))
        elif op is Ops.STORE:
            tgt = n.src[0]
            val = s[1]
            if tgt.dtype is dtypes.bfloat16:
                val = f"f32_to_bf16({val})"
            v = n.src[1]
            if tgt in self.index_targets:
                base = tgt
                while base.op in GroupOp.Movement:
                    base = base.src[0]
                self.lines.append(f"    store_indexed({self.names[base]}, {s[0]}, {val})")
            elif v in self.ufuncs and self.users.get(v, 0) == 1 and v.dtype is tgt.dtype:
                # the ufunc writes into the buffer itself: no temporary to copy (numpy takes
                # care of inputs that overlap the output)
                at, call = self.ufuncs[v]
                fn, args = call.split("(", 1)
                self.lines[at] = "    pass"
                self.lines.append(f"    ufunc_into({fn}, {s[0]}, {args})")
            elif v.op is Ops.CAST and v.src[0] in self.concat_lines and v.dtype is tgt.dtype \
                    and self.users.get(v, 0) == 1 and self.users.get(v.src[0], 0) == 1 \
                    and v.dtype is not dtypes.bfloat16:  # the parts copied into the buffer
                at, name, cdt, covered, parts = self.concat_lines[v.src[0]]
                self.lines[at] = (f"    {name} = concat_target({s[0]}, ({', '.join(parts)},), "
                                  f"{shape_code(shape_of(v))}, {cdt}, {covered})")
                self.lines.append(f"    if {name} is not {s[0]}: "
                                  f"np.copyto({s[0]}, {name}, casting='unsafe')")
            elif v in self.takes and self.users.get(v, 0) == 1 and v.dtype is tgt.dtype \
                    and v.dtype is not dtypes.bfloat16:  # the rows taken into the buffer itself
                at, args = self.takes[v]
                self.lines[at] = "    pass"
                self.lines.append(f"    take_into({s[0]}, {args})")
            else:
                self.lines.append(f"    np.copyto({s[0]}, {val}, casting='unsafe')")
        elif op in (Ops.SINK, Ops.NOOP):
            pass
        else:
            raise KernelCompileError(f"the CPU backend cannot compile {n.short()}")

    def clip_call(self, n: UOp, s: list, cdt) -> str | None:
        """MAX or MIN against a constant as numpy's clip (a few times faster than maximum
        and minimum with a scalar), and ``MIN(MAX(x, lo), hi)`` as one clip; the call without
        its closing parenthesis, or None. The same values: clip keeps `x` where it equals
        the bound, which differs only for zeros of the other sign where numpy's maximum and
        minimum give the bound (`keeps_value_on_ties`): there a bound of -0.0 is left to
        them, one of +0.0 (relu) adds +0.0 after (-0.0 to +0.0), and a zero bound is never
        fused into one clip."""
        if n.dtype is dtypes.bfloat16 or n.dtype is dtypes.bool or n.src[1] not in self.constval:
            return None
        v = self.constval[n.src[1]].reshape(-1)[:1]  # every element of a constant is the same
        zero = v.size > 0 and cdt.kind == "f" and v[0] == 0 and not keeps_value_on_ties(cdt)
        if v.size == 0 or (zero and np.signbit(v[0])):
            return None
        bound = self.const(np.asarray(v[0], dtype=cdt))
        inner = self.clips.get(n.src[0])
        if n.op is Ops.MIN and inner is not None and not zero and self.users.get(n.src[0]) == 1:
            at, x, lo = inner  # MIN(MAX(x, lo), hi): one clip
            self.lines[at] = "    pass"
            return f"np.clip({x}, {lo}, {bound}"
        ends = (-np.inf, np.inf) if cdt.kind == "f" else (np.iinfo(cdt).min, np.iinfo(cdt).max)
        other = self.const(np.asarray(ends[n.op is Ops.MAX], dtype=cdt))
        lo, hi = (bound, other) if n.op is Ops.MAX else (other, bound)
        if zero:
            return f"np.add(np.clip({s[0]}, {lo}, {hi}), {self.const(np.zeros((), cdt))}"
        if n.op is Ops.MAX:
            self.clips[n] = (len(self.lines), s[0], bound)
        return f"np.clip({s[0]}, {lo}, {hi}"

    @staticmethod
    def bf16(n: UOp, expr: str) -> str:
        """`expr` rounded to bfloat16 when `n` is a bfloat16 value (computed in float32): every
        op's result, as if each were its own kernel, so fusion never changes a value."""
        return f"bf16_round({expr})" if n.dtype is dtypes.bfloat16 else expr

    def cast(self, n: UOp, x: str) -> str:
        if n.dtype is dtypes.bfloat16:
            return f"bf16_round({x})"
        if n.src[0].dtype.is_float and not n.dtype.is_float:
            # numpy casts out-of-range floats to ints one way from a contiguous array and
            # another from a strided view: always from a contiguous one, so the layout a kernel
            # sees never changes a value
            return f"np.asarray({x}, order='C').astype({self.const(n.dtype.np)})"
        return f"np.asarray({x}).astype({self.const(n.dtype.np)})"

    def bitcast(self, n: UOp, x: str) -> str:
        src = n.src[0].dtype
        if src.itemsize != n.dtype.itemsize:
            raise KernelCompileError(f"bitcast {src.name} -> {n.dtype.name} changes the item size")
        bits = f"f32_to_bf16(np.asarray({x}, dtype=np.float32))" if src is dtypes.bfloat16 else x
        out = f"np.ascontiguousarray({bits}).view({self.const(n.dtype.np)})"
        return f"bf16_to_f32({out})" if n.dtype is dtypes.bfloat16 else out

    def scan(self, n: UOp, x: str, cdt: np.dtype) -> str:
        arg = n.arg
        if not (isinstance(arg, tuple) and len(arg) == 2 and arg[0] in (Ops.ADD, Ops.MUL)
                and type(arg[1]) is int and 0 <= arg[1] < len(shape_of(n))):
            raise KernelCompileError(f"SCAN needs arg (ADD or MUL, an axis of the value), "
                                     f"got {n.short()}")
        fn = "np.cumsum" if arg[0] is Ops.ADD else "np.cumprod"
        return f"{fn}({x}, axis={arg[1]}, dtype={self.const(cdt)})"

    def sort(self, n: UOp, x: str) -> str:
        arg = n.arg
        if not (isinstance(arg, tuple) and len(arg) == 3 and type(arg[0]) is int
                and 0 <= arg[0] < len(shape_of(n)) and type(arg[1]) is bool
                and type(arg[2]) is bool):
            raise KernelCompileError(f"SORT needs arg (an axis of the value, descending, "
                                     f"indices), got {n.short()}")
        axis, descending, indices = arg
        return f"sort_along({x}, {axis}, {descending}, {indices})"

    def reduce(self, n: UOp, x: str, cdt: np.dtype) -> str:
        rop, axes = n.arg
        if rop is Ops.ARGMAX or rop is Ops.ARGMIN:  # one axis: the first extreme (or NaN)
            fn = "np.argmax" if rop is Ops.ARGMAX else "np.argmin"
            return f"{fn}({x}, axis={axes[0]}, keepdims=True).astype(np.int64)"
        ops = _contraction_operands(n, self.users)
        if ops is not None:
            full = shape_of(n.src[0])
            spec, squeezes = _einsum_spec(full, [shape_of(o) for o in ops], axes)
            args = ", ".join(
                f"np.reshape({self.names[o]}, {shape_code(_drop(shape_of(o), sq))})"
                for o, sq in zip(ops, squeezes)
            )
            keep = tuple(1 if i in axes else d for i, d in enumerate(full))
            # where the result is inf or nan (a product that overflows, an inf or nan among
            # the operands), those elements as the product then the sum (BLAS fuses multiplies
            # and adds and orders the sum its own way)
            a, b = (f"np.reshape({self.names[o]}, {shape_code(shape_of(o))})" for o in ops)
            return (f"exact_where_not_finite(np.reshape(contract({spec!r}, {args}), "
                    f"{shape_code(keep)}), {a}, {b}, {tuple(axes)})")
        if n.dtype.is_float and rop in (Ops.ADD, Ops.MUL):
            # numpy adds pairwise along a contiguous axis and one by one along a strided one:
            # from a C-contiguous array always, so fusion (which decides the layout a kernel
            # sees) never changes a float sum
            return f"ordered_reduce({_REDUCE[rop]}, {x}, {tuple(axes)}, {self.const(cdt)})"
        initial = ""
        if rop in (Ops.MAX, Ops.MIN) and any(isinstance(shape_of(n.src[0])[a], Sym)
                                             for a in axes):
            # a symbolic axis may be bound to 0 at run time: the identity, not a numpy error
            initial = f", initial={self.const(_identity(rop, np.dtype(cdt)))}"
        return (f"{_REDUCE[rop]}.reduce({x}, axis={tuple(axes)}, keepdims=True, "
                f"dtype={self.const(cdt)}{initial})")

    def pad_widths(self, arg: tuple) -> str:
        """A PAD's widths: an argument when static (see the module's docstring)."""
        widths = tuple(tuple(p) for p in arg)
        return str(widths) if syms_in(arg) else self.const(widths)

    def movement(self, n: UOp, x: str) -> str:
        op, arg = n.op, n.arg
        if n in self.strided:
            base, start, coeffs = self.strided[n]
            shape, base_shape = shape_of(n), shape_of(base)
            return (f"strided_view({self.names[base]}, {base_shape}, {self.const(start)}, "
                    f"{shape}, {coeffs})")
        if n in self.index_targets:
            if n.src[0].op is Ops.PARAM:
                x = f"np.arange({x}.size)"
            if op is Ops.PAD:
                return f"np.pad({x}, {self.pad_widths(arg)}, constant_values=-1)"
            if op is Ops.RESHAPE:
                return f"reshape_prefix({x}, {shape_code(arg)})"
        src = n.src[0]
        static = op not in (Ops.RESHAPE, Ops.EXPAND) or not any(isinstance(d, Sym) for d in arg)
        if src in self.constval and op in (Ops.RESHAPE, Ops.EXPAND, Ops.PERMUTE) and static:
            v = self.constval[src]  # folded now: the kernel reads the final view of the constant
            v = (v.reshape(arg) if op is Ops.RESHAPE else np.broadcast_to(v, arg)
                 if op is Ops.EXPAND else np.transpose(v, arg))
            self.constval[n] = v
            return self.const(v)
        if op is Ops.RESHAPE:
            flat = src.op is Ops.PARAM or (src.op is Ops.LOAD and src.src[0].op is Ops.PARAM)
            param = src if src.op is Ops.PARAM else src.src[0] if flat else None
            exact = static and (param is None or param.arg[2] == math.prod(int(d) for d in arg))
            if exact and (flat or n not in self.store_targets):
                return f"{x}.reshape({shape_code(arg)})"  # a whole flat buffer or a value: a view
            fn = "view_reshape" if n in self.store_targets else "reshape_prefix"
            return f"{fn}({x}, {shape_code(arg)})"
        if op is Ops.PERMUTE:
            return f"np.transpose({x}, {tuple(arg)})"
        if op is Ops.EXPAND:
            return f"np.broadcast_to({x}, {shape_code(arg)})"
        if op is Ops.PAD:
            return f"np.pad({x}, {self.pad_widths(arg)})"
        if op is Ops.SHRINK:
            if not arg:
                return x
            if not syms_in(arg):  # an argument, as constants are: kernels that differ in
                # where their windows start (a row written at step i) share one function
                return f"{x}[{self.const(tuple(slice(int(b), int(e)) for b, e in arg))}]"
            idx = ", ".join(f"{_dim_code(b)}:{_dim_code(e)}" for b, e in arg)
            return f"{x}[{idx},]"
        if op is Ops.FLIP:
            return f"np.flip({x}, {tuple(arg)})" if arg else x
        raise KernelCompileError(f"unknown movement op {n.short()}")


def _numpy_view(chain: list[UOp], base: UOp) -> bool:
    """Whether numpy can express a store target (movement `chain` over flat PARAM `base`,
    outermost first) as a view, without a copy: a reshape that merges reordered axes cannot.

    Found by applying the chain to a strided array that claims the buffer's size over one
    byte: view operations never read memory, and a reshape that would copy is refused. A
    chain with symbolic sizes is tried at both ends of their variables' ranges."""
    if base.op is not Ops.PARAM:
        return True
    if any(syms_in(m.arg) for m in chain):
        return all(_numpy_view_at(chain, base, end) for end in (0, 1))
    return _numpy_view_at(chain, base, None)


def _at_end(arg, end: int):
    """A movement arg with each Sym at the low (0) or high (1) end of its range."""
    if isinstance(arg, Sym):
        return (arg.lo if end == 0 else arg.hi) + arg.add
    if isinstance(arg, tuple):
        return tuple(_at_end(a, end) for a in arg)
    return arg


def _numpy_view_at(chain: list[UOp], base: UOp, end: int | None) -> bool:
    x = np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), (base.arg[2],), (1,))
    for m in reversed(chain):
        arg = m.arg if end is None else _at_end(m.arg, end)
        if m.op is Ops.RESHAPE:
            x = _prefix(x, arg).view()
            try:
                x.shape = arg
            except (AttributeError, ValueError):
                return False
        elif m.op is Ops.PERMUTE:
            x = x.transpose(arg)
        elif m.op is Ops.SHRINK:
            x = x[tuple(slice(b, e) for b, e in arg)]
        elif m.op is Ops.FLIP:
            x = np.flip(x, arg) if arg else x
        else:
            return True  # PAD and EXPAND targets are stored through element indices anyway
    return True


def _drop(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _disjoint(pads: list[UOp]) -> bool:
    """Whether the regions that PADs place their sources in never meet: apart on some axis
    of static sizes (a symbolic axis may overlap)."""
    boxes = []
    for p in pads:
        src = shape_of(p.src[0])
        boxes.append([None if isinstance(d, Sym) or isinstance(b, Sym) else (b, b + d)
                      for (b, _), d in zip(p.arg, src)])
    for axis in range(len(boxes[0]) if boxes else 0):  # apart on one axis, pair by pair (a
        spans = sorted(box[axis] for box in boxes if box[axis] is not None)  # concatenation:
        if len(spans) == len(boxes) and all(a[1] <= b[0] for a, b in zip(spans, spans[1:])):
            return True  # one sort, where every pair of n parts would be n * n checks)
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            if all(x is None or y is None or (x[0] < y[1] and y[0] < x[1])
                   for x, y in zip(a, b)):
                return False
    return True


def _dim_code(d) -> str:
    return f"(vv[{d.name!r}] + {d.add})" if isinstance(d, Sym) else str(int(d))


def _prefix(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """A flat buffer allocated at a symbolic shape's maximum holds the value in its prefix."""
    n = 1
    for d in shape:
        n *= d
    return x[:n] if x.ndim == 1 and x.size > n else x


def reshape_prefix(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    return np.reshape(_prefix(x, shape), shape)


def store_indexed(buf: np.ndarray, idx: np.ndarray, value) -> None:
    """Store `value` at the element indices `idx` of flat `buf`; -1 marks padding (dropped)."""
    value = np.broadcast_to(np.asarray(value, dtype=buf.dtype), idx.shape)
    keep = idx >= 0
    buf[idx[keep]] = value[keep]


def view_reshape(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Reshape that must return a view (a STORE target); never a silent copy."""
    out = _prefix(x, shape).view()
    try:
        out.shape = shape
    except AttributeError:
        raise KernelCompileError(f"store target of shape {x.shape} cannot be viewed as "
                                 f"{shape}") from None
    return out


def _reshape_groups(src: tuple[int, ...], dst: tuple[int, ...]):
    """Pair up runs of axes of `src` and `dst` with equal products (the smallest such runs):
    a reshape only moves elements within each pair. Yields ``(src axes, dst axes)`` ranges."""
    i = j = 0
    while i < len(src) or j < len(dst):
        i0, j0 = i, j
        ps = pd = 1
        while True:
            if ps <= pd and i < len(src) and (ps < pd or i == i0 or src[i] == 1):
                ps *= src[i]
                i += 1
            elif j < len(dst) and (pd < ps or j == j0 or dst[j] == 1):
                pd *= dst[j]
                j += 1
            else:
                break
        yield range(i0, i), range(j0, j)


# elements of the largest index array `strided_view_of` builds at compile time
MAX_INDEX_ARRAY = 1 << 22


def strided_view_of(base_shape, chain: list[UOp]):
    """How the view that a movement chain makes of its base is one strided view, or None.

    Gives ``(start, coeffs)``: the view's element ``i`` is the base's element with index
    ``start[a] + sum(i[k] * coeffs[k][a])`` along each base axis ``a``. Found by running the
    chain backwards on index arrays of the view's axes; a reshape only mixes the axes of one of
    its groups, so the arrays stay as small as the axes they depend on. Exact: every index
    array is checked against the affine guess made from its first and unit-step elements."""
    shapes = [tuple(base_shape)] + [shape_of(m) for m in chain]
    if any(isinstance(d, Sym) for shp in shapes for d in shp) or 0 in shapes[-1]:
        return None
    out = shapes[-1]
    nd = len(out)

    def axis_index(k: int, size: int) -> np.ndarray:
        return np.arange(size, dtype=np.int64).reshape((1,) * k + (size,) + (1,) * (nd - k - 1))

    idx = [axis_index(k, s) for k, s in enumerate(out)]  # index along each axis of a view
    zero = np.zeros((1,) * nd, dtype=np.int64)
    for m, src in zip(reversed(chain), reversed(shapes[:-1])):
        if m.op is Ops.RESHAPE:
            if math.prod(src) != math.prod(m.arg):
                return None
            new = [zero] * len(src)
            for sa, da in _reshape_groups(src, m.arg):
                if math.prod(np.broadcast_shapes(*(idx[j].shape for j in da))) > MAX_INDEX_ARRAY:
                    return None  # a reshape mixing many large axes: left to numpy
                flat = zero
                for j in da:
                    flat = flat * m.arg[j] + idx[j]
                for i in reversed(sa):
                    new[i] = flat % src[i]
                    flat = flat // src[i]
            idx = new
        elif m.op is Ops.PERMUTE:
            new = [zero] * len(src)
            for k, p in enumerate(m.arg):
                new[p] = idx[k]
            idx = new
        elif m.op is Ops.EXPAND:
            idx = [zero if s == 1 else i for i, s in zip(idx, src)]
        elif m.op is Ops.SHRINK:
            idx = [i + b for i, (b, _) in zip(idx, m.arg)]
        elif m.op is Ops.FLIP:
            idx = [s - 1 - i if a in m.arg else i for a, (i, s) in enumerate(zip(idx, src))]
        else:
            return None
    start, coeffs = [], [[0] * len(idx) for _ in range(nd)]
    for a, arr in enumerate(idx):
        first = int(arr.reshape(-1)[0])
        guess = np.full((1,) * nd, first, dtype=np.int64)
        for k in range(nd):
            if arr.shape[k] > 1:
                coeffs[k][a] = int(arr[(0,) * k + (1,) + (0,) * (nd - k - 1)]) - first
                guess = guess + axis_index(k, arr.shape[k]) * coeffs[k][a]
        if not np.array_equal(arr, guess):
            return None
        start.append(first)
    return tuple(start), tuple(tuple(c) for c in coeffs)


def strided_view(x, base_shape: tuple[int, ...], start: tuple[int, ...], shape: tuple[int, ...],
                 coeffs: tuple[tuple[int, ...], ...]) -> np.ndarray:
    """The read-only view of `x` (of shape `base_shape`) whose element ``i`` is ``x[start +
    sum(i[k] * coeffs[k])]`` (see `strided_view_of`); nothing is copied."""
    x = np.asarray(x)
    if x.shape != base_shape:
        x = np.reshape(x, base_shape)
    first = x[(*(slice(s, s + 1) for s in start), Ellipsis)]  # a view, also of a 0-d x
    strides = tuple(sum(c * st for c, st in zip(ck, x.strides)) for ck in coeffs)
    return np.lib.stride_tricks.as_strided(first, shape, strides, writeable=False)


@functools.lru_cache(maxsize=None)
def _contract_plan(spec: str):
    """Label groups of a two-operand einsum: summed-alone axes, batch, free, contracted."""
    ins, out = spec.split("->")
    la, lb = ins.split(",")
    only_a = tuple(i for i, c in enumerate(la) if c not in lb and c not in out)
    only_b = tuple(i for i, c in enumerate(lb) if c not in la and c not in out)
    la = "".join(c for i, c in enumerate(la) if i not in only_a)
    lb = "".join(c for i, c in enumerate(lb) if i not in only_b)
    batch = [c for c in out if c in la and c in lb]
    lfree = [c for c in out if c in la and c not in lb]
    rfree = [c for c in out if c in lb and c not in la]
    contr = [c for c in la if c in lb and c not in out]
    mid = batch + lfree + rfree
    return (only_a, only_b, la, lb, (batch, lfree, contr, rfree),
            tuple(la.index(c) for c in batch + lfree + contr),
            tuple(lb.index(c) for c in batch + contr + rfree), mid,
            tuple(mid.index(c) for c in out))


def contract(spec: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A two-operand einsum as one (batched) ``np.matmul``: BLAS reads transposed views in
    place, where ``np.einsum(optimize=True)`` copies them first."""
    only_a, only_b, la, lb, groups, pa, pb, mid, po = _contract_plan(spec)
    if only_a:
        a = a.sum(axis=only_a)
    if only_b:
        b = b.sum(axis=only_b)
    size = dict(zip(la, a.shape))
    size.update(zip(lb, b.shape))
    nb, nl, nk, nr = (math.prod(size[c] for c in g) for g in groups)
    r = np.matmul(np.transpose(a, pa).reshape(nb, nl, nk), np.transpose(b, pb).reshape(nb, nk, nr))
    return np.transpose(r.reshape([size[c] for c in mid]), po)


def any_negative(x) -> bool:
    """Whether `x` holds a negative value, reading each stored element once (a broadcast
    view's repeats are not scanned)."""
    a = np.asarray(x)
    if a.ndim and 0 in a.strides:
        a = a[tuple(slice(0, 1) if st == 0 else slice(None) for st in a.strides)]
    return bool(np.any(np.less(a, 0)))


def _row_indices(src: np.ndarray, idx) -> np.ndarray:
    """`idx` as numpy's take reads it along axis 0 of `src`; an index outside ``[-n, n)``
    raises numpy's IndexError (uint64 ones past int64 too, which numpy would not cast)."""
    idx = np.asarray(idx)
    if idx.dtype == np.uint64:
        n = np.shape(src)[0]
        if idx.size and idx.max() >= n:
            raise IndexError(f"index {idx.max()} is out of bounds for axis 0 with size {n}")
        idx = idx.astype(np.int64)
    return idx


def _checked_rows(src, idx, where: tuple | None) -> np.ndarray:
    """`_row_indices`, and with `where` (the operation, the user's axis, its size, whether
    `idx` holds the user's own indices: see `Tensor._out_of_bounds_named`) an index out of
    range raised naming that axis, before numpy's take would name axis 0 of its rows."""
    if where is None:
        return _row_indices(src, idx)
    raw = np.asarray(idx)
    n = np.shape(src)[0] if np.ndim(src) else 0
    if raw.dtype == np.uint64:
        bad = raw[raw >= n]
    else:
        bad = raw[(raw < -n) | (raw >= n)]
    if bad.size:
        what, axis, size, exact = where
        head = f"{what}: " if what else ""
        if exact:
            raise IndexError(f"{head}index {bad.flat[0]} is out of bounds for axis {axis} with "
                             f"size {size}")
        raise IndexError(f"{head}an index is out of bounds for axis {axis} with size {size}")
    return _row_indices(src, raw)


def take_rows(src: np.ndarray, idx, where: tuple | None = None) -> np.ndarray:
    """``src[idx]`` along axis 0, as numpy's take: negative indices count from the end
    (`where`: see `_checked_rows`)."""
    idx = _checked_rows(src, idx, where)
    if _strided(src, idx):  # numpy's take would copy the whole source first: the rows alone
        return np.asarray(src)[idx]
    return np.take(src, idx, axis=0)


def _strided(src, idx: np.ndarray) -> bool:
    """Whether `src` is an array numpy's take copies whole before it takes rows (a view that
    is not C-contiguous: a column of a matrix, a transposed or reversed one) and `idx` names
    fewer rows than it has (many rows are faster taken from that contiguous copy)."""
    return isinstance(src, np.ndarray) and not src.flags.c_contiguous \
        and idx.size < src.shape[0]


def scatter_add(base, idx, values, dt: np.dtype, rounded=None,
                where: tuple | None = None) -> np.ndarray:
    """A copy of `base` (as `dt`) with `values` (in their own dtype) added at rows `idx` along
    axis 0, numpy's ``np.add.at``: a row named twice gets both, each add made in the promoted
    dtype and cast back (`rounded`, for a target held wider than its dtype: bfloat16 in
    float32, rounds after every add); an index outside ``[-n, n)`` raises numpy's IndexError
    before anything is added (`where`: see `_checked_rows`)."""
    out = np.array(base, dtype=dt)  # (a copy: base may be a buffer's own memory)
    idx = _checked_rows(out, idx, where)
    n = out.shape[0] if out.ndim else 0
    if idx.size and (idx.min() < -n or idx.max() >= n):
        bad = idx[(idx < -n) | (idx >= n)].flat[0]
        raise IndexError(f"index {bad} is out of bounds for axis 0 with size {n}")
    with np.errstate(all="ignore"):  # each add in the promoted dtype, cast back (numpy's)
        if rounded is None:
            np.add.at(out, idx, np.asarray(values))
        else:
            _add_rounded(out, idx, np.asarray(values), rounded)
    return out


def _add_rounded(out: np.ndarray, idx: np.ndarray, values: np.ndarray, rounded) -> None:
    """``np.add.at(out, idx, values)`` with `rounded` applied after each add: the adds to one
    row are made one round at a time, in the order they come (a row's k-th add in round k)."""
    flat = idx.reshape(-1) % max(out.shape[0], 1)
    vals = np.broadcast_to(values, idx.shape + out.shape[1:]).reshape(flat.shape + out.shape[1:])
    order = np.argsort(flat, kind="stable")
    rows = flat[order]
    first = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])  # where each row's run starts
    rank = np.arange(rows.size) - np.repeat(first, np.diff(np.r_[first, rows.size]))
    by_round = order[np.argsort(rank, kind="stable")]  # the adds, round after round
    ends = np.cumsum(np.bincount(rank)) if rank.size else ()
    start = 0
    for end in ends:  # (one numpy step a round: as many as one row's repeats)
        at = by_round[start:end]
        out[flat[at]] = rounded(out[flat[at]] + vals[at])
        start = end


def take_into(out: np.ndarray, src: np.ndarray, idx, where: tuple | None = None) -> None:
    """`take_rows` written into `out`: directly where the shapes and dtypes agree and `out`
    shares no memory with the operands, else through a temporary (what a store of it would
    copy); an index out of range raises before anything is written."""
    idx = _checked_rows(src, idx, where)
    if _strided(src, idx):
        np.copyto(out, src[idx], casting="unsafe")  # (the rows alone, as `take_rows`)
    elif out.dtype == src.dtype and out.shape == idx.shape + src.shape[1:] \
            and not np.may_share_memory(out, src) and not np.may_share_memory(out, idx):
        np.take(src, idx, axis=0, out=out)  # (numpy checks every index before it writes)
    else:
        np.copyto(out, np.take(src, idx, axis=0), casting="unsafe")


@functools.cache
def keeps_value_on_ties(dt: np.dtype) -> bool:
    """Whether numpy's maximum and minimum of an array of `dt` and a scalar give the array's
    value where the two are zeros of opposite signs (as clip does), at every length tried
    (float16 here; float32 and float64 give the scalar)."""
    for fn in (np.maximum, np.minimum):
        for x, b in ((-0.0, 0.0), (0.0, -0.0)):
            for k in (1, 3, 17, 100):
                r = np.signbit(fn(np.full(k, x, dt), np.asarray(b, dt)))
                if not (r == np.signbit(x)).all():
                    return False
    return True


def _const_arg(u: UOp):
    """The value of a constant seen through reshapes, expands, permutes and copy marks (a
    cast to its own dtype), else None."""
    while (u.op in (Ops.RESHAPE, Ops.EXPAND, Ops.PERMUTE) and len(u.src) == 1) \
            or (u.op is Ops.CAST and u.dtype is u.src[0].dtype):
        u = u.src[0]
    return u.arg if u.op is Ops.CONST else None


def pad_fill(x, pads: tuple, value: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """`x` padded by `pads` with `value` (of the result's dtype): filled, then `x` copied in."""
    out = np.full(shape, value, dtype=value.dtype)
    out[tuple(slice(b, b + d) for (b, _), d in zip(pads, np.shape(x)))] = x
    return out


def concat_target(out: np.ndarray, parts: tuple, shape: tuple[int, ...], dtype,
                  covered: bool) -> np.ndarray:
    """Where a concatenation of `parts` goes: `out` itself (zeroed unless the parts cover
    it) when it has the concatenation's shape and dtype and shares no memory with a part,
    else a zeroed temporary (which the store then copies)."""
    if out.shape == shape and out.dtype == dtype and out.flags.writeable \
            and not any(np.may_share_memory(out, p) for p in parts):
        if not covered:
            out.fill(0)
        return out
    return np.zeros(shape, dtype=dtype)


def ufunc_into(fn, out: np.ndarray, *args) -> None:
    """``fn(*args)`` written into `out`; where the operands' arrays are shaped otherwise than
    `out` (a 0-d target over arrays of one element), computed and copied as a store is."""
    try:
        fn(*args, out=out)
    except ValueError:
        if np.shape(np.broadcast(*args)) == out.shape:
            raise  # the ufunc's own error (an int to a negative power)
        np.copyto(out, fn(*args), casting="unsafe")


EXACT_WORK = 1 << 26  # products a contraction's inf/nan fix-up computes at most


def exact_where_not_finite(r: np.ndarray, a: np.ndarray, b: np.ndarray,
                           axes: tuple[int, ...]) -> np.ndarray:
    """`r`, the sum over `axes` of ``a * b`` (broadcast) as a matrix product, with each
    element that is inf or nan summed again from the products themselves, as numpy's
    elementwise product then sum gives it: a few rows where an operand holds a nan or an inf,
    found without building the whole product (past `EXACT_WORK` products, `r` stays)."""
    bad = ~np.isfinite(r)
    if not bad.any():
        return r
    full = np.broadcast_shapes(a.shape, b.shape)
    kept = [i for i in range(len(full)) if i not in axes]
    where = np.nonzero(bad)  # per axis of r (reduced axes are 0 there)
    per = math.prod(full[i] for i in axes)
    if per * len(where[0]) > EXACT_WORK:
        return r
    order = kept + list(axes)
    av = np.broadcast_to(a, full).transpose(order)
    bv = np.broadcast_to(b, full).transpose(order)
    at = tuple(where[i] for i in kept)
    out = r.copy()
    with np.errstate(all="ignore"):
        prods = np.multiply(av[at], bv[at])  # (n bad, *reduced axes)
        out[bad] = np.add.reduce(prods.reshape(len(where[0]), -1), axis=-1, dtype=r.dtype)
    return out


def _identity(rop: Ops, dt: np.dtype):
    """The identity of max (the lowest value) or min (the highest) in numpy dtype `dt`."""
    low = rop is Ops.MAX
    if dt.kind == "f":
        return dt.type(-np.inf if low else np.inf)
    if dt.kind == "b":
        return not low
    info = np.iinfo(dt)
    return dt.type(info.min if low else info.max)


def ordered_reduce(op, x, axes: tuple[int, ...], dtype) -> np.ndarray:
    """``op.reduce(x, axes, keepdims=True)`` in the order it takes on a C-contiguous array of
    `x`'s shape, whatever `x`'s layout (a copy where `x` is a strided or broadcast view: the
    same array a realized intermediate would be)."""
    # (order="C", not ascontiguousarray: that one makes a 0-d array 1-d)
    return op.reduce(np.asarray(x, order="C"), axis=axes, keepdims=True, dtype=dtype)


def _by_element(fn: Callable[[float], float]):
    """A ufunc-like function of arrays from `fn` of one float: each element through `fn` in
    float64, the result in the argument's dtype (written into `out` when given)."""
    def apply(x, out=None):
        x = np.asarray(x)
        flat = x.astype(np.float64).ravel().tolist()
        r = np.fromiter(map(fn, flat), np.float64, len(flat)).reshape(x.shape)
        if out is None:
            return r.astype(x.dtype, copy=False)
        out[...] = r
        return out
    return apply


erf_values = _by_element(math.erf)  # (numpy has no erf: libm's, ~0.1 us an element)
erfc_values = _by_element(math.erfc)


def sigmoid_values(x, out=None):
    """``1 / (1 + exp(-x))`` of an array, ufunc-like (written into `out` when given): 0 where
    exp(-x) overflows, as the formula gives; float16 computed in float32 and rounded once."""
    x = np.asarray(x)
    wide = x.astype(np.float32) if x.dtype == np.float16 else x
    with np.errstate(over="ignore"):
        r = np.asarray(1 / (1 + np.exp(-wide)), dtype=x.dtype)
    if out is None:
        return r
    out[...] = r
    return out


def sort_along(x, axis: int, descending: bool, indices: bool) -> np.ndarray:
    """numpy's stable sort of `x` along `axis`: the values, or (`indices`) their int64
    positions. Descending is the ascending order of the reversed axis, reversed: nan first,
    and equal values still in the order they come."""
    x = np.asarray(x)
    if not descending:
        if indices:
            return np.argsort(x, axis=axis, kind="stable").astype(np.int64)
        return np.sort(x, axis=axis, kind="stable")
    order = np.argsort(np.flip(x, axis=axis), axis=axis, kind="stable")
    order = (x.shape[axis] - 1 - np.flip(order, axis=axis)).astype(np.int64)
    return order if indices else np.take_along_axis(x, order, axis=axis)  # (the values
    # the positions name: -0.0 and 0.0, or two nans, in the same order)


def bf16_round(x) -> np.ndarray:
    """`x` rounded to the nearest bfloat16 (to even), as float32, keeping its shape."""
    a = np.asarray(x)
    return bf16_to_f32(f32_to_bf16(a).reshape(a.shape))


_GLOBALS = {"contract": contract, "exact_where_not_finite": exact_where_not_finite,
            "ufunc_into": ufunc_into, "concat_target": concat_target, "pad_fill": pad_fill,
            "any_negative": any_negative, "take_into": take_into,
            "take_rows": take_rows, "ordered_reduce": ordered_reduce,
            "scatter_add": scatter_add, "sort_along": sort_along,
            "erf_values": erf_values, "erfc_values": erfc_values,
            "sigmoid_values": sigmoid_values,
            "np": np, "bf16_to_f32": bf16_to_f32, "f32_to_bf16": f32_to_bf16,
            "bf16_round": bf16_round,
            "view_reshape": view_reshape, "reshape_prefix": reshape_prefix,
            "store_indexed": store_indexed, "strided_view": strided_view}


class CompiledKernel:
    """A kernel AST compiled for the CPU: ``kernel(buffers, var_vals)`` runs it."""

    def __init__(self, ast: UOp):
        gen = _Codegen(ast)
        self.source = gen.run()
        self.name = getattr(ast.arg, "name", "kernel")
        self._consts = gen.consts
        shared = _functions.get((self.name, self.source))  # constants are arguments:
        if shared is not None:  # kernels that differ in their values share one function
            self._fn = shared[0]
        else:
            scope: dict = dict(_GLOBALS)
            exec(compile(self.source, f"<tolk kernel {self.name}>", "exec"), scope)  # noqa: S102
            self._fn = scope["kernel"]
        if DEBUG.value >= 4:
            print(self.source)

    def __call__(self, bufs: list[np.ndarray], var_vals: dict[str, int]) -> None:
        with np.errstate(all="ignore"):
            self._fn(bufs, var_vals, self._consts)

    def run(self, bufs: list[np.ndarray], var_vals: dict[str, int]) -> None:
        """Run without setting numpy's error state (the caller sets it once for many kernels)."""
        self._fn(bufs, var_vals, self._consts)


_compiled: dict[tuple[bytes, str], CompiledKernel] = {}
_functions: dict[tuple[str, str], list] = {}  # (name, source) -> [its function, how many
# kernels in _compiled have them]: dropped with the last of those (a name of its own in tracebacks)
_compile_lock = threading.Lock()
compile_count = [0]


KERNEL_CACHE_SIZE = 4096  # compiled kernels kept (a constant is part of a kernel: a loop
# over ever new scalars would otherwise keep one kernel per value)
KERNEL_CACHE_CHARS = 1 << 23  # and their sources' characters in all (a kernel's code and
# constants take some 3-4 bytes a character): big kernels go sooner
_compiled_chars = [0]


def get_kernel(ast: UOp, device: str) -> CompiledKernel:
    """The compiled form of `ast` for `device`, compiled once while it stays among the last
    `KERNEL_CACHE_SIZE` kernels compiled, `KERNEL_CACHE_CHARS` of source in all (the oldest
    go first)."""
    k = (ast.key, device)
    fn = _compiled.get(k)
    if fn is None:
        fn = CompiledKernel(ast)
        with _compile_lock:
            kept = _compiled.setdefault(k, fn)
            if kept is fn:
                _compiled_chars[0] += len(fn.source)
                _functions.setdefault((fn.name, fn.source), [fn._fn, 0])[1] += 1
            fn = kept
            compile_count[0] += 1
            while len(_compiled) > KERNEL_CACHE_SIZE or (
                    _compiled_chars[0] > KERNEL_CACHE_CHARS and len(_compiled) > 1):
                gone = _compiled.pop(next(iter(_compiled)))
                _compiled_chars[0] -= len(gone.source)
                shared = _functions[gone.name, gone.source]
                shared[1] -= 1
                if not shared[1]:
                    del _functions[gone.name, gone.source]
    return fn
