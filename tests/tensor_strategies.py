"""Hypothesis strategies and numpy oracles shared by the Tensor op tests.

Example counts: `EXAMPLES` is small by default so the suite stays fast; set TOLK_THOROUGH=1 in
the environment (read once, at import) for a long run.
"""

from __future__ import annotations

import os

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

THOROUGH = os.environ.get("TOLK_THOROUGH", "") not in ("", "0")
EXAMPLES = 400 if THOROUGH else 25
FEW = 100 if THOROUGH else 10  # for the slower tests (conv, pools, flags)


def cases(n: int = EXAMPLES) -> settings:
    """Hypothesis settings for one test: `n` examples and no deadline (first calls compile)."""
    return settings(max_examples=n, deadline=None)


# The element types the tests cover, as numpy dtypes (tolk accepts them as dtype arguments).
FLOATS = (np.dtype(np.float32), np.dtype(np.float16), np.dtype(np.float64))
INTS = (np.dtype(np.int32), np.dtype(np.int8), np.dtype(np.uint8))
BOOL = np.dtype(np.bool_)
ALL = FLOATS + INTS + (BOOL,)

dtypes_all = st.sampled_from(ALL)
dtypes_float = st.sampled_from(FLOATS)
dtypes_int = st.sampled_from(INTS)
dtypes_intlike = st.sampled_from(INTS + (BOOL,))


def shapes(min_dims: int = 0, max_dims: int = 4, min_side: int = 0, max_side: int = 5):
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side)


def elements(dt: np.dtype, small: bool = False):
    """Values of dtype `dt`: finite floats (|x| <= 100, or <= 4 when `small`), every int."""
    dt = np.dtype(dt)
    if dt == BOOL:
        return st.booleans()
    if dt.kind in "iu":
        info = np.iinfo(dt)
        if small:
            return st.integers(max(int(info.min), -8), min(int(info.max), 8))
        return st.integers(int(info.min), int(info.max))
    bound = 4.0 if small else 100.0
    return st.floats(-bound, bound, width=8 * dt.itemsize if dt.itemsize <= 4 else 64,
                     allow_nan=False, allow_infinity=False)


def arrays(dt, shape, small: bool = False):
    return hnp.arrays(np.dtype(dt), shape, elements=elements(dt, small))


@st.composite
def array_and_dtype(draw, dtype_strategy=dtypes_all, shape_strategy=None, small: bool = False):
    dt = draw(dtype_strategy)
    shape = draw(shape_strategy if shape_strategy is not None else shapes())
    return draw(arrays(dt, shape, small))


def axes_for(ndim: int):
    """An `axis` argument: None, an int (possibly negative) or a tuple of distinct axes."""
    if ndim == 0:
        return st.none()
    return st.one_of(st.none(), st.integers(-ndim, ndim - 1), hnp.valid_tuple_axes(ndim))


# ---------------------------------------------------------------------------------------------
# numpy oracles for tolk's documented dtype rules


def weak_scalar_dtype(tensor_dt: np.dtype, x) -> np.dtype:
    """The dtype a Python scalar takes next to a tensor (tolk.tensor module docstring)."""
    tensor_dt = np.dtype(tensor_dt)
    if isinstance(x, bool):
        return tensor_dt
    if isinstance(x, int):
        return tensor_dt if tensor_dt != BOOL else np.dtype(np.int32)
    return tensor_dt if tensor_dt.kind == "f" else np.dtype(np.float32)


def float_result(dt: np.dtype) -> np.dtype:
    """Float ops on a dtype: floats keep it, bools and ints give float32 (default_float)."""
    dt = np.dtype(dt)
    return dt if dt.kind == "f" else np.dtype(np.float32)


def tolerance(dt: np.dtype) -> dict:
    dt = np.dtype(dt)
    if dt == np.float16:
        return {"rtol": 2e-3, "atol": 2e-3}
    if dt == np.float32:
        return {"rtol": 2e-5, "atol": 1e-5}
    if dt == np.float64:
        return {"rtol": 1e-10, "atol": 1e-12}
    return {"rtol": 0, "atol": 0}


def assert_matches(got: np.ndarray, want: np.ndarray, dtype=None, tol_dtype=None) -> None:
    """`got` has `want`'s shape, the dtype `dtype` (default: `want`'s) and its values
    (exact for bool/int, within the float tolerance of `tol_dtype` otherwise; NaNs match)."""
    want = np.asarray(want)
    dtype = np.dtype(dtype if dtype is not None else want.dtype)
    assert got.shape == want.shape, f"shape {got.shape} != {want.shape}"
    assert got.dtype == dtype, f"dtype {got.dtype} != {dtype}"
    tol = tolerance(tol_dtype if tol_dtype is not None else dtype)
    if dtype.kind in "biu" and want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                   equal_nan=True, **tol)
