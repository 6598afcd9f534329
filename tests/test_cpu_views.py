"""The CPU backend's composed views: a chain of movement ops that repeats an axis and cuts it
again (how sliding windows are written) runs as one strided numpy view of the value under it.

Oracle tests: each view is compared with the same chain of numpy ops."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from tensor_strategies import FEW, cases
from tolk.runtime import cpu
from tolk.tensor import Tensor
from tolk.uop.ops import GroupOp, Ops
from tolk.uop.shape import shape_of


def chain_of(t: Tensor):
    """(base node, movement chain from the base up to t) of a lazy tensor."""
    chain, u = [], t.uop
    while u.op in GroupOp.Movement:
        chain.append(u)
        u = u.src[0]
    return u, chain[::-1]


def apply_numpy(x: np.ndarray, chain) -> np.ndarray:
    """The chain's view of `x` computed with plain numpy ops (copying where numpy must)."""
    for m in chain:
        if m.op is Ops.RESHAPE:
            x = x.reshape(m.arg)
        elif m.op is Ops.PERMUTE:
            x = x.transpose(m.arg)
        elif m.op is Ops.EXPAND:
            x = np.broadcast_to(x, m.arg)
        elif m.op is Ops.SHRINK:
            x = x[tuple(slice(b, e) for b, e in m.arg)]
        elif m.op is Ops.FLIP:
            x = np.flip(x, m.arg)
        else:
            raise AssertionError(f"no numpy twin for {m.op}")
    return x


def composed(x: np.ndarray, t: Tensor) -> np.ndarray | None:
    """The chain under `t` over `x` as one strided view, or None if it is not one."""
    base, chain = chain_of(t)
    if not chain:
        return x
    view = cpu.strided_view_of(shape_of(base), chain)
    if view is None:
        return None
    start, coeffs = view
    base_shape = shape_of(base)
    return cpu.strided_view(x.reshape(base_shape), base_shape, start, shape_of(chain[-1]), coeffs)


@st.composite
def movement_chains(draw):
    """A base shape and up to 8 random movement steps on a Tensor of it, with expand-then-
    reshape steps (an axis repeated and merged into its neighbour) among them."""
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    t = Tensor(x)
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["repeat", "merge", "split", "permute", "shrink", "flip"]))
        nd = t.ndim
        ax = draw(st.integers(0, nd - 1))
        if kind == "repeat":
            reps = draw(st.integers(2, 3))
            t = t.reshape(t.shape[:ax] + (1,) + t.shape[ax:])
            t = t.expand(t.shape[:ax] + (reps,) + t.shape[ax + 1:])
            t = t.reshape(t.shape[:ax] + (reps * t.shape[ax + 1],) + t.shape[ax + 2:])
        elif kind == "merge" and ax + 1 < nd:
            t = t.reshape(t.shape[:ax] + (t.shape[ax] * t.shape[ax + 1],) + t.shape[ax + 2:])
        elif kind == "split":
            n = t.shape[ax]
            f = draw(st.sampled_from([d for d in range(1, n + 1) if n % d == 0]))
            t = t.reshape(t.shape[:ax] + (f, n // f) + t.shape[ax + 1:])
        elif kind == "permute":
            t = t.permute(draw(st.permutations(range(nd))))
        elif kind == "shrink":
            n = t.shape[ax]
            b = draw(st.integers(0, n - 1))
            e = draw(st.integers(b + 1, n))
            t = t.shrink(tuple((b, e) if i == ax else None for i in range(nd)))
        elif kind == "flip":
            t = t.flip(ax)
    return x, t


@cases(FEW * 10)
@given(movement_chains())
def test_a_composed_chain_is_the_view_numpy_ops_give(case):
    x, t = case
    _, chain = chain_of(t)
    want = apply_numpy(x, chain)
    got = composed(x, t)
    if got is not None:
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(t.numpy(), want)  # and the kernel, composed or not
