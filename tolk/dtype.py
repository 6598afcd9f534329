"""Element types: a small closed set of interned `DType` objects, numpy mapping and promotion.

Promotion follows numpy (`np.result_type`) for every type numpy has. `bfloat16` is stored as
its raw uint16 bits (numpy has no bfloat16) and promotes like a float with 8 bits of
precision: it absorbs bool, int8 and uint8, and meets wider types where numpy would put a
float16 of the same rank (int16 → float32, int32/int64 → float64, float16 → float32).
"""

from __future__ import annotations

import numpy as np


class DType:
    """One element type. Interned: compare with `is` (or `==`, which is identity).

    Invariant: exactly one DType object exists per name; `np` is the numpy storage type.
    """

    __slots__ = ("name", "itemsize", "kind", "np")

    def __init__(self, name: str, itemsize: int, kind: str, np_type: type | None):
        self.name = name
        self.itemsize = itemsize
        self.kind = kind  # 'b' bool, 'i' signed, 'u' unsigned, 'f' float, 'v' void
        self.np = np.dtype(np_type) if np_type is not None else None

    def __repr__(self) -> str:
        return f"dtypes.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_int(self) -> bool:
        return self.kind in "iu"

    @property
    def is_unsigned(self) -> bool:
        return self.kind == "u"


class dtypes:
    """The namespace of all element types (tinygrad spelling: `dtypes.float32`)."""

    void = DType("void", 0, "v", None)
    bool = DType("bool", 1, "b", np.bool_)
    int8 = DType("int8", 1, "i", np.int8)
    int16 = DType("int16", 2, "i", np.int16)
    int32 = DType("int32", 4, "i", np.int32)
    int64 = DType("int64", 8, "i", np.int64)
    uint8 = DType("uint8", 1, "u", np.uint8)
    uint16 = DType("uint16", 2, "u", np.uint16)
    uint32 = DType("uint32", 4, "u", np.uint32)
    uint64 = DType("uint64", 8, "u", np.uint64)
    float16 = DType("float16", 2, "f", np.float16)
    bfloat16 = DType("bfloat16", 2, "f", np.uint16)
    float32 = DType("float32", 4, "f", np.float32)
    float64 = DType("float64", 8, "f", np.float64)
    # aliases
    half = float16
    float = float32
    double = float64
    int = int32
    long = int64
    default_float = float32
    default_int = int32


ALL_DTYPES: dict[str, DType] = {
    v.name: v for v in vars(dtypes).values() if isinstance(v, DType)
}
_NP_TO_DTYPE = {
    d.np: d for d in ALL_DTYPES.values() if d.np is not None and d is not dtypes.bfloat16
}


def _by_name(name: str) -> DType:
    return ALL_DTYPES[name]


def dtype_from_name(name: str) -> DType:
    """The DType called `name`; `ValueError` for an unknown name."""
    try:
        return ALL_DTYPES[name]
    except KeyError:
        raise ValueError(f"unknown dtype name {name!r}") from None


def to_dtype(x: DType | str | type | np.dtype) -> DType:
    """Accept a DType, a dtype name, or anything numpy understands as a dtype."""
    if isinstance(x, DType):
        return x
    if x is None:  # numpy reads None as float64; a tensor library should not guess
        raise TypeError("not a dtype: None")
    if isinstance(x, str) and x in ALL_DTYPES:
        return ALL_DTYPES[x]
    try:
        npd = np.dtype(x)
    except TypeError:
        raise TypeError(f"not a dtype: {x!r}") from None
    if npd.byteorder not in "=|":  # big-endian data: its values are what count
        npd = npd.newbyteorder("=")
    if npd not in _NP_TO_DTYPE:
        raise TypeError(f"numpy dtype {npd} has no tolk equivalent")
    return _NP_TO_DTYPE[npd]


def from_numpy(npd: np.dtype) -> DType:
    """The DType that stores numpy dtype `npd` (bfloat16 is never inferred)."""
    return to_dtype(npd)




def _bf16_with(r: DType) -> DType:
    if r.kind == "b" or (r.is_int and r.itemsize == 1):
        return dtypes.bfloat16
    if r.is_int:
        return dtypes.float32 if r.itemsize == 2 else dtypes.float64
    if r is dtypes.float16:
        return dtypes.float32
    return r


def least_upper_dtype(*ds: DType) -> DType:
    """The promoted type of `ds`, as numpy's `result_type` (bfloat16: see the module doc)."""
    if len(ds) == 2 and ds[0] is ds[1] and ds[0] is not dtypes.void:
        return ds[0]  # the common case: one dtype promotes to itself
    if not ds:
        raise ValueError("least_upper_dtype needs at least one dtype")
    if any(d is dtypes.void for d in ds):
        raise TypeError(f"cannot promote void: {ds}")
    rest = [d for d in ds if d is not dtypes.bfloat16]
    if not rest:
        return dtypes.bfloat16
    r = _NP_TO_DTYPE[np.result_type(*(d.np for d in rest))]
    return _bf16_with(r) if len(rest) < len(ds) else r


def bf16_to_f32(bits: np.ndarray) -> np.ndarray:
    """Decode bfloat16 stored as uint16 bits to float32."""
    return (bits.astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(x: np.ndarray) -> np.ndarray:
    """Encode to bfloat16 bits, rounding to nearest even. A NaN keeps its sign and top payload
    bits (a copy or bitcast of bfloat16 data keeps them; the quiet bit is set where only it
    would tell it from an infinity). float64 (of any byte order) and ints of 32 bits or more
    are rounded once from their own value (through float32 they would round twice: 1 + 2**-8
    + 2**-30 would become 1.0)."""
    a = np.asarray(x)
    if a.dtype.kind in "iu" and a.dtype.itemsize == 8 and a.size and \
            (a.max() > 1 << 53 or (a.dtype.kind == "i" and a.min() < -(1 << 53))):
        # past 2**53 float64 would round first: round the ints themselves (rare: one by one)
        a = np.array([_round_int_to_bf16(int(v)) for v in a.ravel()],
                     np.float64).reshape(a.shape)
    elif (a.dtype.kind == "f" and a.dtype.itemsize > 4) or (a.dtype.kind in "iu"
                                                             and a.dtype.itemsize >= 4):
        a = _round_f64_to_bf16(a.astype(np.float64))
    f = np.ascontiguousarray(a, dtype=np.float32)
    u = f.view(np.uint32)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    nan = np.isnan(f)
    out = rounded.astype(np.uint16)
    if nan.any():
        hi = (u >> 16).astype(np.uint16)
        out = np.where(nan, np.where(hi & 0x7F, hi, hi | 0x40), out).astype(np.uint16)
    return out


_DROP = np.uint64(45)  # float64 mantissa bits bfloat16 does not keep (52 - 7)


def _round_f64_to_bf16(d: np.ndarray) -> np.ndarray:
    """float64 values rounded to bfloat16's precision (to nearest even), still float64:
    float32 then holds them exactly. 8 significant bits; below float32's normal range a fixed
    step of 2**-133 (bfloat16's subnormals)."""
    u = np.ascontiguousarray(d).view(np.uint64)
    half = np.uint64((1 << 44) - 1) + ((u >> _DROP) & np.uint64(1))
    out = ((u + half) & ~np.uint64((1 << 45) - 1)).view(np.float64).reshape(d.shape)
    with np.errstate(all="ignore"):
        tiny = np.abs(d) < 2.0 ** -126
        if tiny.any():  # np.round rounds half to even; scaling by a power of two is exact
            out = np.where(tiny, np.round(d * 2.0 ** 133) * 2.0 ** -133, out)
    return np.where(np.isnan(d), d, out)  # a NaN's payload could round up to inf


def _round_int_to_bf16(v: int) -> int:
    """An int rounded to bfloat16's 8 significant bits, to nearest even."""
    shift = abs(v).bit_length() - 8
    if shift <= 0:
        return v
    q, r = divmod(abs(v), 1 << shift)
    half = 1 << (shift - 1)
    q += r > half or (r == half and q & 1)
    return (q << shift) * (1 if v >= 0 else -1)
