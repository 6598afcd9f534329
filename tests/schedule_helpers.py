"""Hand-built kernel graphs for schedule tests: kernel ASTs are opaque SINKs."""

from __future__ import annotations

from tolk.dtype import dtypes
from tolk.uop import KernelInfo, Ops, UOp

F32 = dtypes.float32


def ast(name: str, *reads_vars: UOp) -> UOp:
    """An opaque kernel AST; DEFINE_VARs given as sources count as variables it reads."""
    return UOp(Ops.SINK, dtypes.void, reads_vars, KernelInfo(name))


def kernel(name: str, *args: UOp, ast_src: tuple[UOp, ...] = ()) -> UOp:
    return UOp(Ops.CALL, dtypes.void, (ast(name, *ast_src), *args))


def after(state: UOp, *children: UOp) -> UOp:
    return UOp(Ops.AFTER, state.dtype, (state, *children))


def buf(slot: int, size: int = 16, device: str = "CPU", dtype=F32) -> UOp:
    return UOp(Ops.BUFFER, dtype, (), (slot, device, size))


def param(slot: int, size: int = 16, device: str = "CPU") -> UOp:
    return UOp(Ops.PARAM, F32, (), (slot, device, size))


def var(name: str, lo: int = 0, hi: int = 10) -> UOp:
    return UOp(Ops.DEFINE_VAR, dtypes.int32, (), (name, lo, hi))


def bind(v: UOp, value: int) -> UOp:
    return UOp(Ops.BIND, dtypes.int32, (v, UOp.const(dtypes.int32, value)))


def names(linear: UOp) -> list[str]:
    return [c.src[0].arg.name for c in linear.src]


def write(out: UOp, name: str, *reads: UOp) -> UOp:
    """`out` after a kernel that writes it and reads `reads`."""
    return after(out, kernel(name, out, *reads))
