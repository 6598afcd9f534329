"""Hostile input: malformed graph bytes, NaN and inf, huge and empty shapes, wrong types, and a
device whose allocator fails. tolk answers with a clear error or numpy's result, never a hang,
a crash or a wrong value."""

from __future__ import annotations

import re
import time
import tracemalloc
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tolk.runtime.device as device
from tolk import Tensor
from tolk.dtype import dtypes
from tolk.uop import Ops, UOp, export_graph, import_graph
from tolk.uop.serial import MAGIC, VERSION

HOSTILE = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# -- import_graph ---------------------------------------------------------------------------


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def header(*strings: str) -> bytes:
    out = MAGIC + varint(VERSION) + varint(len(strings))
    for s in strings:
        out += varint(len(s.encode())) + s.encode()
    return out


def sample_graph() -> bytes:
    """The export of a real planned schedule (kernel ASTs, SLICEs, BINDs, KernelInfo args)."""
    from tolk import Variable

    x = Tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    y = ((x * Variable("k", 0, 9).bind(3)).exp().sum(1, keepdim=True) + x).contiguous().max(0)
    return export_graph(y.schedule_linear())


SAMPLE = sample_graph()


def _import(data: bytes):
    try:
        return import_graph(data)
    except ValueError as e:
        return e


def import_within_limits(data: bytes, seconds: float = 1.0, peak_bytes: int | None = 64 << 20):
    """import_graph(data): a UOp or ValueError, in bounded time and (traced) memory."""
    start = time.perf_counter()
    out = _import(data)
    elapsed = time.perf_counter() - start
    assert elapsed < seconds, f"import took {elapsed:.2f} s on {len(data)} bytes"
    assert isinstance(out, (UOp, ValueError))
    if peak_bytes is not None:
        tracemalloc.start()
        try:
            _import(data)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < peak_bytes, f"import peaked at {peak} bytes on {len(data)} bytes"
    return out


def test_a_real_schedule_round_trips():
    g = import_within_limits(SAMPLE)
    assert isinstance(g, UOp) and g.op is Ops.LINEAR


@HOSTILE
@given(st.binary(max_size=4096))
def test_random_bytes_give_a_value_error(data):
    import_within_limits(data)


@HOSTILE
@given(st.binary(max_size=2048))
def test_random_bytes_after_a_valid_header_give_a_value_error(data):
    import_within_limits(MAGIC + varint(VERSION) + data)


@st.composite
def mutations(draw):
    data = bytearray(SAMPLE)
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(("flip", "set", "insert", "delete", "truncate", "dup")))
        pos = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "flip" and data:
            data[pos] ^= 1 << draw(st.integers(0, 7))
        elif kind == "set" and data:
            data[pos] = draw(st.sampled_from((0x00, 0x7F, 0x80, 0xFF)))
        elif kind == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=16))
        elif kind == "delete":
            del data[pos:pos + draw(st.integers(1, 16))]
        elif kind == "truncate":
            del data[pos:]
        elif kind == "dup":
            data[pos:pos] = data[pos:pos + draw(st.integers(1, 64))]
    return bytes(data)


@HOSTILE
@given(mutations())
def test_mutated_exports_give_a_graph_or_a_value_error(data):
    import_within_limits(data)


@pytest.mark.parametrize("data", [
    MAGIC + varint(VERSION) + varint(2**62),                       # a huge string table
    header() + varint(2**60),                                      # a huge node count
    MAGIC + varint(VERSION) + varint(1) + varint(2**40),           # a huge string length
    MAGIC + varint(VERSION) + b"\xff" * 64,                        # an endless varint
    header("SINK", "void") + varint(1) + varint(0) + varint(1) + varint(2**50),  # many sources
    header("CONST", "int32") + varint(1) + varint(0) + varint(1) + varint(0) + b"t" + varint(2**55),
    header("CONST", "int32") + varint(1) + varint(0) + varint(1) + varint(0) + b"b" + varint(2**55),
    header("CONST", "int32") + varint(1) + varint(0) + varint(1) + varint(0) + b"i" + b"\xff" * 12,
], ids=["strings", "nodes", "string-length", "varint", "sources", "tuple", "bytes", "int"])
def test_huge_declared_sizes_are_rejected_without_allocating(data):
    with pytest.raises(ValueError):
        import_graph(data)
    import_within_limits(data, seconds=0.1, peak_bytes=1 << 20)


def test_deeply_nested_args_are_rejected():
    arg = b"t" + varint(1)
    data = header("CONST", "int32") + varint(1) + varint(0) + varint(1) + varint(0)
    data += arg * 10_000 + b"N"
    with pytest.raises(ValueError, match="deeper"):
        import_graph(data)


def test_a_100k_node_chain_imports_without_recursion():
    n = 100_000
    node = UOp.const(dtypes.float32, 1.0)
    for _ in range(n):
        node = UOp(Ops.NEG, dtypes.float32, (node,))
    g = import_within_limits(export_graph(node), seconds=10.0, peak_bytes=None)
    assert g is node  # hash-consing: the same graph comes back as the same node


def test_buffer_with_a_huge_declared_size_imports_without_allocating():
    buf = UOp(Ops.BUFFER, dtypes.float32, (), (-1, "CPU", 10**18))
    g = import_within_limits(export_graph(buf), peak_bytes=1 << 20)
    assert g.op is Ops.BUFFER and g.arg[2] == 10**18


def test_non_bytes_input_is_a_value_error():
    for bad in ("TOLKGRAPH", None, 12, [1, 2]):
        with pytest.raises(ValueError):
            import_graph(bad)


# -- NaN and inf ----------------------------------------------------------------------------

SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 3e38, -3e38, 1e-45],
                    np.float32)


def special_arrays():
    elems = st.sampled_from([float(x) for x in SPECIALS]) | st.floats(-10, 10, width=32)
    return hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=2, max_side=4),
                      elements=elems)


UNARY = {
    "exp": (lambda t: t.exp(), np.exp), "log": (lambda t: t.log(), np.log),
    "sqrt": (lambda t: t.sqrt(), np.sqrt), "abs": (lambda t: t.abs(), np.abs),
    "neg": (lambda t: -t, np.negative), "tanh": (lambda t: t.tanh(), np.tanh),
    "reciprocal": (lambda t: t.reciprocal(), np.reciprocal),
    "relu": (lambda t: t.relu(), lambda a: np.maximum(a, np.float32(0))),
    "sign": (lambda t: t.sign(), np.sign),
    "cast": (lambda t: t.cast("int32"), lambda a: a.astype(np.int32)),
    "where": (lambda t: t.where(1.0, 2.0), lambda a: np.where(a.astype(bool), np.float32(1),
                                                             np.float32(2))),
}
BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
    "maximum": np.maximum, "minimum": np.minimum, "lt": np.less, "eq": np.equal,
    "ne": np.not_equal, "floordiv": np.floor_divide, "mod": np.remainder, "pow": np.power,
}
TOLK_BINARY = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b, "maximum": lambda a, b: a.maximum(b),
    "minimum": lambda a, b: a.minimum(b), "lt": lambda a, b: a < b, "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b, "floordiv": lambda a, b: a // b, "mod": lambda a, b: a % b,
    "pow": lambda a, b: a ** b,
}


def same(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)  # NaN matches NaN


@settings(max_examples=100, deadline=None)
@given(special_arrays(), st.sampled_from(sorted(UNARY)))
def test_elementwise_on_nan_and_inf_is_numpys(a, name):
    ours, theirs = UNARY[name]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        same(ours(Tensor(a)).numpy(), np.asarray(theirs(a)))


@settings(max_examples=100, deadline=None)
@given(special_arrays(), st.sampled_from(sorted(BINARY)), st.data())
def test_binary_ops_on_nan_and_inf_are_numpys(a, name, data):
    b = data.draw(hnp.arrays(np.float32, a.shape, elements=st.sampled_from(
        [float(x) for x in SPECIALS])))
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        same(TOLK_BINARY[name](Tensor(a), Tensor(b)).numpy(), np.asarray(BINARY[name](a, b)))


@settings(max_examples=100, deadline=None)
@given(special_arrays(), st.sampled_from(["sum", "max", "min", "mean"]))
def test_reductions_on_nan_and_inf_are_numpys(a, name):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        got = getattr(Tensor(a), name)(0).numpy()
        want = getattr(a, name)(0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-30, equal_nan=True)


def test_tensors_from_python_nan_and_inf():
    t = Tensor([float("nan"), float("inf"), -float("inf")])
    same(t.numpy(), np.array([np.nan, np.inf, -np.inf], np.float32))
    assert np.isnan(Tensor.full((2,), float("nan")).numpy()).all()


def test_argmax_with_nan_is_the_first_nan():
    a = np.array([1.0, np.nan, 3.0, np.nan], np.float32)
    assert Tensor(a).argmax().item() == np.argmax(a) == 1


# -- huge and empty shapes ------------------------------------------------------------------


@pytest.mark.parametrize("make", [
    lambda: Tensor.empty(10**12),
    lambda: Tensor.zeros((10**6, 10**6)),
    lambda: Tensor.empty(2**62),
], ids=["1e12", "1e6x1e6", "2^62"])
def test_huge_tensors_fail_with_an_error_naming_device_and_bytes(make):
    start = time.perf_counter()
    with pytest.raises(MemoryError, match=r"CPU: cannot allocate \d+ bytes"):
        make().numpy()
    assert time.perf_counter() - start < 5.0


def test_a_size_past_numpys_reach_is_refused_when_made():
    from tolk.errors import ShapeError

    with pytest.raises(ShapeError, match="too large"):
        Tensor.empty(10**30)


def test_a_huge_fused_computation_fails_without_crashing():
    # the elementwise part runs as a numpy temporary inside the kernel: numpy's MemoryError
    with pytest.raises(MemoryError):
        (Tensor.zeros(10**6, 10**6) + 1).sum().numpy()


ZERO_SHAPES = [(0,), (3, 0), (0, 4), (2, 0, 3)]


@pytest.mark.parametrize("shape", ZERO_SHAPES)
def test_zero_size_tensors_behave_like_numpy(shape):
    z = np.zeros(shape, np.float32)
    t = Tensor(z)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        pairs = [
            (t + 1, z + np.float32(1)), (t.exp(), np.exp(z)), (t.sum(0), z.sum(0)),
            (t.sum(), z.sum()), (t.mean(), z.mean()), (t.reshape(-1), z.reshape(-1)),
            (t.T, z.T), (t.pad(((1, 1),) * t.ndim), np.pad(z, 1)), (t.flip(0), z[::-1]),
            (t.cat(t, dim=0), np.concatenate([z, z], 0)), (t[..., :0], z[..., :0]),
        ]
    for got, want in pairs:
        got = got.numpy()
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    empty_axis = shape.index(0)
    with pytest.raises(ValueError):
        t.max(empty_axis).numpy()  # numpy: a zero-size reduction has no identity
    with pytest.raises(ValueError):
        z.max(empty_axis)


def test_matmul_with_an_empty_inner_or_outer_dimension():
    a, b = np.zeros((0, 3), np.float32), np.ones((3, 2), np.float32)
    assert (Tensor(a) @ Tensor(b)).numpy().shape == (0, 2)
    c, d = np.zeros((2, 0), np.float32), np.zeros((0, 3), np.float32)
    np.testing.assert_array_equal((Tensor(c) @ Tensor(d)).numpy(), np.zeros((2, 3), np.float32))


def test_assign_into_an_empty_slice_changes_nothing():
    x = Tensor(np.array([1.0, 2.0], np.float32))
    x[2:] = 5.0
    x[:0] = Tensor(np.zeros(0, np.float32))
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0])


# -- wrong types ----------------------------------------------------------------------------

WRONG = {
    "strings": lambda: Tensor(["a"]),
    "complex dtype": lambda: Tensor([1], dtype="complex64"),
    "complex data": lambda: Tensor(np.array([1 + 2j])),
    "float128": lambda: Tensor([1], dtype="float128"),
    "unknown dtype": lambda: Tensor([1], dtype="notadtype"),
    "datetimes": lambda: Tensor(np.array(["2020-01-01"], dtype="datetime64[D]")),
    "object": lambda: Tensor(object()),
    "None": lambda: Tensor(None),
    "dict": lambda: Tensor({"a": 1}),
    "ragged": lambda: Tensor([[1, 2], [3]]),
    "too large int": lambda: Tensor([2**70]),
    "bool subtract": lambda: Tensor([True]) - Tensor([False]),
    "float bitwise": lambda: Tensor([1.0]) & Tensor([1.0]),
    "add a string": lambda: Tensor([1.0]) + "a",
    "add None": lambda: Tensor([1.0]) + None,
    "unknown device": lambda: Tensor([1.0], device="GPU"),
    "device not a string": lambda: Tensor([1.0], device=3),
    "negative shape": lambda: Tensor.zeros(-1),
    "float shape": lambda: Tensor.zeros(2.5),
    "bad reshape": lambda: Tensor.zeros(4).reshape(3),
    "scalar out of range": lambda: Tensor([1], dtype="int8") + 1000,
    "cast to complex": lambda: Tensor([1]).cast("complex64"),
    "item of many": lambda: Tensor([1, 2]).item(),
    "broadcast mismatch": lambda: Tensor.zeros(2, 3) + Tensor.zeros(4),
    "matmul mismatch": lambda: Tensor.zeros(2, 3) @ Tensor.zeros(4, 2),
}


@pytest.mark.parametrize("name", sorted(WRONG))
def test_wrong_types_give_a_clear_type_or_value_error(name):
    with pytest.raises((TypeError, ValueError)) as info:
        WRONG[name]().numpy()
    assert str(info.value)


@pytest.mark.parametrize("index", [1.5, 5, True])
def test_bad_indices_give_an_index_error(index):
    with pytest.raises(IndexError):
        Tensor([1.0, 2.0])[index]


def test_a_float_tensor_index_gives_an_index_error():
    with pytest.raises(IndexError):
        Tensor([1.0, 2.0])[Tensor([0.0])]


# -- a device whose allocator fails ---------------------------------------------------------


@pytest.fixture
def failing_alloc(monkeypatch):
    """``arm(n, exc)``: Device.alloc works n more times, then raises `exc` (a MemoryError)."""
    real = device.Device.alloc
    state = {"left": None, "exc": None}

    def alloc(self, nbytes, **kw):
        if state["left"] is not None:
            if state["left"] <= 0:
                raise state["exc"]
            state["left"] -= 1
        return real(self, nbytes, **kw)

    monkeypatch.setattr(device.Device, "alloc", alloc)

    def arm(n: int | None, exc: BaseException | None = None):
        state["left"], state["exc"] = n, exc or MemoryError()

    return arm


def rnd(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_tensors_realized_before_an_allocation_failure_stay_valid(failing_alloc):
    a, b = rnd(8, 8), rnd(8, seed=1)
    x, y = Tensor(a), Tensor(b)
    kept = [(x @ x).relu().realize(), (x + y).sum(0).realize(), (x * 2).contiguous().realize()]
    want = [np.maximum(a @ a, 0), (a + b).sum(0), a * 2]
    for n in range(2):  # the arena, then the output
        failing_alloc(n, MemoryError(f"CPU: cannot allocate 256 bytes (simulated, after {n})"))
        with pytest.raises(MemoryError, match="CPU: cannot allocate 256 bytes"):
            ((x @ x).exp() + y).softmax(-1).sum(0).contiguous().realize()
    failing_alloc(None)
    for t, w in zip(kept, want):
        np.testing.assert_allclose(t.numpy(), w, rtol=1e-5, atol=1e-5)
    # and the failed computation runs once memory is back
    out = ((x @ x).exp() + y).softmax(-1).sum(0).numpy()
    e = np.exp(np.exp(a @ a) + b - (np.exp(a @ a) + b).max(-1, keepdims=True))
    np.testing.assert_allclose(out, (e / e.sum(-1, keepdims=True)).sum(0), rtol=1e-4)


def test_a_bare_allocator_failure_is_reported_with_device_and_bytes(failing_alloc):
    x = Tensor(rnd(4, 4))
    failing_alloc(0)
    with pytest.raises(MemoryError, match=r"CPU.*\d+ bytes"):
        (x + 1).realize()


def test_an_allocation_failure_mid_schedule_does_not_apply_an_assign_twice(failing_alloc):
    raised = 0
    for n in range(3):  # fail at each allocation the schedule makes, then at none
        x = Tensor(np.array([1.0, 2.0], np.float32)).realize()
        x.assign(x + 1)
        y = x * 2
        z = (y + x).sum()
        failing_alloc(n)
        try:
            Tensor.realize(y, z)
        except MemoryError:
            raised += 1
        failing_alloc(None)
        np.testing.assert_array_equal(x.numpy(), [2.0, 3.0])
        np.testing.assert_array_equal(y.numpy(), [4.0, 6.0])
        np.testing.assert_array_equal(z.numpy(), np.float32(15.0))
    assert raised >= 2

# --- garbage collection -----------------------------------------------------------------------


def test_assigns_leave_no_cyclic_garbage_holding_weak_references_to_the_tensor():
    # each assign drops the view set of the superseded state; if that set were cyclic garbage,
    # its weak references (with callbacks) to the tensor would live on until a collection
    import gc
    import weakref

    gc.collect()
    gc.disable()
    try:
        x = Tensor.empty(4, 4)
        for _ in range(50):
            x.assign(x + 1)
        assert weakref.getweakrefcount(x) <= 2
    finally:
        gc.enable()


def test_dropping_an_assign_chain_with_the_collector_left_to_itself_does_not_crash():
    # the crash this pins: collections run while a dying tensor's weak references were
    # being cleared, and freed some of them (the garbage view sets of its assigns)
    import subprocess
    import sys

    code = (
        "import gc\n"
        "from tolk import Tensor\n"
        "from tolk.schedule import schedule_cache_clear\n"
        "for _ in range(9):\n"
        "    schedule_cache_clear()\n"
        "    gc.collect()\n"
        "    x = Tensor.empty(64, 64)\n"
        "    for _ in range(200):\n"
        "        x.assign(x + 1)\n"
        "    gc.disable()\n"
        "    lin = x.schedule_linear()\n"
        "    gc.enable()\n"
        "    del x\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", \
        (done.returncode, done.stderr[-2000:])


# -- bad arguments to the Tensor API (each a clear error; earlier tensors keep their values) ---


def test_copies_of_a_tensor_are_new_tensors_and_writes_into_them_stay_there():
    import copy

    x = Tensor(np.zeros(3, np.float32)).realize()
    y = x + 1
    for make in (copy.copy, copy.deepcopy):
        c, d = make(x), make(y)
        c[0] = 1.0
        d[0] = 42.0
        np.testing.assert_array_equal(c.numpy(), [1, 0, 0])
        np.testing.assert_array_equal(d.numpy(), [42, 1, 1])
        np.testing.assert_array_equal(x.numpy(), [0, 0, 0])
        np.testing.assert_array_equal(y.numpy(), [1, 1, 1])
    x[1] = 5.0
    assert copy.deepcopy([x])[0].numpy().tolist() == [0, 5, 0]


def test_where_and_cat_refuse_operands_on_other_devices():
    from tolk.errors import DeviceError

    a, b = Tensor([1.0, 2.0]), Tensor([3.0, 4.0], device="CPU:1")
    with pytest.raises(DeviceError, match="condition is on CPU, its values on CPU:1"):
        (a > 1).where(b, 0.0)
    with pytest.raises(DeviceError, match="different devices"):
        a.cat(Tensor.zeros(0, device="CPU:1"))
    np.testing.assert_array_equal((a > 1).where(a, 0.0).numpy(), [0, 2])


@pytest.mark.parametrize("bad", [np.array(["2020-01-01"], "datetime64[D]"), np.array([None]),
                                 np.array([1 + 2j]), np.array(["1.5"])])
def test_assign_refuses_numpy_arrays_a_tensor_cannot_be_made_from(bad):
    x = Tensor(np.zeros(3, np.float32)).realize()
    with pytest.raises(TypeError, match=re.escape(f"dtype {bad.dtype}")):
        x[0:1] = bad
    x[1:2] = np.array([2], np.int64)
    np.testing.assert_array_equal(x.numpy(), [0, 2, 0])


def test_bad_creation_arguments_name_what_was_wrong():
    from tolk.errors import ShapeError

    for kw, err, msg in ((dict(high=float("inf")), ValueError, "high = inf is not a finite"),
                         (dict(low=float("nan")), ValueError, "low = nan"),
                         (dict(high=1e6, dtype="float16"), ValueError, "finite float16"),
                         (dict(low="a"), TypeError, "low must be a number"),
                         (dict(high=None), TypeError, "high must be a number")):
        with pytest.raises(err, match=msg):
            Tensor.uniform(3, **kw)
    assert (Tensor.uniform(64, high=60000.0, dtype="float16").numpy() < 60000).all()
    with pytest.raises(TypeError, match="eye's n must be an int"):
        Tensor.eye(None)
    with pytest.raises(ShapeError, match="eye's m must not be negative"):
        Tensor.eye(3, -1)
    np.testing.assert_array_equal(Tensor.eye(np.int64(2), 3).numpy(), np.eye(2, 3))
    with pytest.raises(ValueError, match="step must not be zero"):
        Tensor.arange(0, 5, 0)


def test_void_is_no_dtype_for_tensor_data():
    x = Tensor([1.0, 2.0])
    for make in (lambda: x.cast(dtypes.void), lambda: Tensor.zeros(2, dtype="void"),
                 lambda: Tensor.empty(2, dtype=dtypes.void), lambda: x.zeros_like(dtypes.void),
                 lambda: x.sum(dtype=dtypes.void), lambda: Tensor([1], dtype=dtypes.void),
                 lambda: Tensor.arange(3, dtype=dtypes.void), lambda: x.bitcast(dtypes.void)):
        with pytest.raises(TypeError, match="void is not a dtype"):
            make()


def test_a_falsy_value_as_dtype_is_refused_as_any_other_non_dtype():
    # `dtype or default` took 0, '', [] and False for "no dtype given"
    x = Tensor([1.0, 2.0])
    makers = (lambda d: Tensor.zeros(2, dtype=d), lambda d: Tensor.ones(2, dtype=d),
              lambda d: Tensor.empty(2, dtype=d), lambda d: Tensor.eye(2, dtype=d),
              lambda d: Tensor.rand(2, dtype=d), lambda d: Tensor.randn(2, dtype=d),
              lambda d: Tensor.arange(3, dtype=d), lambda d: x.zeros_like(d),
              lambda d: x.full_like(2, dtype=d), lambda d: x.sum(dtype=d),
              lambda d: x.prod(dtype=d))
    for make in makers:
        for bad in (0, "", [], False, 1):
            with pytest.raises(TypeError, match="dtype"):
                make(bad)
        assert make(None).dtype in (dtypes.float32, dtypes.int32)  # None: the default
    assert x.sum(dtype=None).numpy() == 3.0 and x.sum(dtype="int64").dtype is dtypes.int64


def test_zero_d_softmax_transpose_linear_and_symbolic_windows():
    from tolk import Variable
    from tolk.errors import ShapeError

    assert Tensor(3.0).softmax().numpy() == 1.0 and Tensor(3.0).log_softmax(0).numpy() == 0.0
    with pytest.raises(ShapeError, match="axis 1 is out of range for a tensor of rank 0"):
        Tensor(1.0).softmax(1)
    with pytest.raises(ShapeError, match="0-d tensor"):
        Tensor(1.0).transpose(0, 0)
    with pytest.raises(ShapeError, match="axis 5 is out of range for a tensor of rank 2"):
        Tensor([[1.0]]).unsqueeze(5)
    with pytest.raises(ShapeError, match="axis 3 is out of range for a tensor of rank 2"):
        Tensor.stack(Tensor([[1.0]]), dim=3)
    with pytest.raises(TypeError, match="linear takes Tensors, got NoneType"):
        Tensor([1.0]).linear(None)
    x = Tensor(np.ones((1, 1, 8, 8), np.float32))[:, :, :Variable("hw", 3, 8).bind(5), :]
    for op in (lambda: x.conv2d(Tensor.ones(1, 1, 2, 2)), x.max_pool2d, x.avg_pool2d):
        with pytest.raises(ShapeError, match="static size on axis 2"):
            op()


def test_a_lazy_tensor_that_cannot_be_scheduled_does_not_block_the_buffer_it_reads():
    from tolk import Variable
    from tolk.errors import ScheduleError

    x = Tensor(np.arange(8, dtype=np.float32).reshape(2, 4)).realize()
    q = Variable("blocker", 1, 4)
    bad = x[:, :q.bind(2)].sum() + x[:, :q.bind(3)].sum()  # one variable, two values
    x[0, 0] = 100.0  # its realize takes `bad` along (bad reads the value x had)
    for _ in range(2):
        np.testing.assert_array_equal(x.numpy()[0, :2], [100, 1])
    with pytest.raises(ScheduleError, match="bound to both 2 and 3"):
        bad.numpy()
    y = Tensor(np.arange(4, dtype=np.float32)).realize()
    big = y.reshape(1, 4).expand(2**40, 4).contiguous()  # no memory for it
    y[0] = 7.0
    np.testing.assert_array_equal(y.numpy(), [7, 1, 2, 3])
    y += 1
    np.testing.assert_array_equal(y.numpy(), [8, 2, 3, 4])
    with pytest.raises(MemoryError):
        big.realize()


def test_more_bad_arguments_get_errors_that_name_them():
    from tolk import Context, jit
    from tolk.errors import DeviceError, ShapeError

    x = Tensor(np.arange(3, dtype=np.float32))
    cases = [(lambda: Tensor([[1, 2], [3]]), ValueError, "ragged data"),
             (lambda: Tensor([[1, 2], [3]], dtype="float32"), ValueError, "ragged data"),
             (lambda: Context(DEBUG="a").__enter__(), TypeError, "flag DEBUG takes an int"),
             (lambda: jit(None), TypeError, "jit takes a function"),
             (lambda: Tensor([1.0], device=""), DeviceError, "unknown device ''"),
             (lambda: x.shard("CPU:1"), TypeError, r"one device: \('CPU:1',\)"),
             (lambda: x.shard(None), TypeError, "tuple or list of devices"),
             (lambda: x.shrink(None), TypeError, "shrink takes"),
             (lambda: x.pad(1), TypeError, "pad takes"),
             (lambda: x.pad(None), TypeError, "pad takes"),
             (lambda: x.var(correction=None), TypeError, "correction must be a number")]
    img, w = Tensor.ones(1, 2, 4, 4), Tensor.ones(2, 1, 2, 2)
    cases += [(lambda: img.conv2d(w, groups="2"), TypeError, "groups must be an int"),
              (lambda: img.conv2d(w, groups=2.0), TypeError, "groups must be an int"),
              (lambda: img.conv2d(w, groups=0), TypeError, "groups must be an int"),
              (lambda: img.conv2d(w, groups=2, bias=Tensor.ones(3)), ShapeError,
               r"bias must have shape \(2,\)"),
              (lambda: img.conv2d(w, groups=2, bias=Tensor.ones(1, 2)), ShapeError, "bias")]
    for make, err, msg in cases:
        with pytest.raises(err, match=msg):
            make()
    np.testing.assert_array_equal(img.conv2d(w, groups=np.int64(2), bias=Tensor([1.0, 2.0]))
                                  .numpy()[0, :, 0, 0], [5, 6])


def test_bound_variables_do_the_rest_of_tensor_math():
    from tolk import Variable

    v = Variable("vm", 1, 5).bind(3)
    x = Tensor(np.arange(3, dtype=np.float32))
    assert [(v ** 2).numpy(), (2 ** v).numpy(), (v // 2).numpy(), (v % 2).numpy(),
            (-v).numpy()] == [9, 8, 1, 1, -3]
    assert bool(v < 4) and not bool(v >= 4) and bool(v > 2) and bool(v <= 3)
    assert (x < v).numpy().tolist() == [True] * 3 and (v < x).numpy().tolist() == [False] * 3
    np.testing.assert_array_equal((x ** v).numpy(), [0, 1, 8])
    np.testing.assert_array_equal((v ** x).numpy(), [1, 3, 9])


def test_an_assign_of_a_value_no_schedule_can_compute_is_refused_at_once():
    from tolk import Variable
    from tolk.errors import ScheduleError

    x = Tensor(np.arange(8, dtype=np.float32)).realize()
    y = Tensor(np.zeros(1, np.float32)).realize()
    v = Variable("twice", 1, 4)
    with pytest.raises(ScheduleError, match="binds variable 'twice' to both 2 and 3"):
        y.assign(y + x[:v.bind(2)].sum() + x[:v.bind(3)].sum())
    x[0] = 100.0  # neither buffer is blocked by it
    assert x.numpy()[0] == 100 and y.numpy()[0] == 0
    y.assign(y + x[:v.bind(2)].sum())
    assert y.numpy()[0] == 101
    z = Tensor(np.zeros(2, np.int32)).realize()
    w = Tensor(np.zeros(2, np.int32)).realize()
    z.assign(z + v.bind(2))
    w.assign(w + z + v.bind(3))  # another value in a pending state it reads: schedulable
    assert w.numpy().tolist() == [5, 5] and z.numpy().tolist() == [2, 2]


def test_sharded_clip_with_int_bounds_past_the_dtype_as_plain():
    u = np.array([0, 50, 255], np.uint8)
    m = Tensor(u).shard(("CPU:1", "CPU:2"), 0)
    for lo, hi in ((-1000, 100), (None, 1000)):
        np.testing.assert_array_equal(m.clip(lo, hi).numpy(), Tensor(u).clip(lo, hi).numpy())


def test_failure_recovery_keeps_every_assign_once_and_blocks_nothing_for_good():
    from tolk.errors import CycleError

    neg = Tensor(np.full(3, -1, np.int32)).realize()
    # a failing in-place kernel writes nothing (numpy's power wrote the elements before the
    # negative exponent into the target)
    x = Tensor(np.array([2, 3, 4, 5], np.int32)).realize()
    x.assign(x ** Tensor(np.array([2, 2, -1, 2], np.int32)))
    with pytest.raises(ValueError, match="negative integer powers"):
        x.numpy()
    assert x.numpy().tolist() == [2, 3, 4, 5]
    # a lazy tensor that did not run keeps reading what it read, and the pending assign it
    # holds stays one state of its buffer (rewritten, it forked the chain: a cycle for good)
    a, b, c = (Tensor(np.array(v, np.int32)).realize() for v in ([1, 2, 3], [4, 5, 6], [7, 8, 9]))
    u = c ** neg  # noqa: F841 - fails when taken along
    a.assign(Tensor(np.full(3, -1, np.int32)))
    a.assign(a * 2 - c)
    c.assign(c + 100)
    t = b - a * 2
    with pytest.raises(ValueError):
        Tensor.realize(t, c)
    try:
        assert c.numpy().tolist() == [107, 108, 109] and a.numpy().tolist() == [-9, -10, -11]
        assert t.numpy().tolist() == [22, 25, 28]
    except CycleError:
        pytest.fail("a failed run left a buffer with two pending states")
    # a lazy tensor reading a buffer before (through a failing part) and after an assign
    y = Tensor(np.array([1, 2, 3], np.int32)).realize()
    z = (y ** neg).contiguous()
    y.assign(y + 1)
    w = z - y * 2  # noqa: F841
    errors = 0
    for _ in range(3):
        try:
            assert y.numpy().tolist() == [2, 3, 4]
            break
        except ValueError:
            errors += 1
    assert errors <= 1


def test_an_interrupt_inside_a_kernel_keeps_its_statement_pending():
    import tolk.engine.realize as engine

    x = Tensor(np.zeros(3, np.float32)).realize()
    x.assign(x + 1)
    real = engine.get_kernel

    class Interrupted:
        def run(self, *args):
            raise KeyboardInterrupt  # arrives while the kernel's Python code runs

    engine.get_kernel = lambda *args: Interrupted()
    try:
        with pytest.raises(KeyboardInterrupt):
            x.realize()
    finally:
        engine.get_kernel = real
    assert x.numpy().tolist() == [1.0, 1.0, 1.0]


def test_later_assigns_reading_a_failing_temporary_are_dropped_when_nothing_ran():
    neg = Tensor(np.full(3, -1, np.int32)).realize()
    x = Tensor(np.array([1, 2, 3], np.int32)).realize()
    z = x ** neg  # lazy: reads x before its assigns, fails when it runs
    x += 1
    x.assign(z + 3)  # reads the failing temporary: dropped as an eager op that raised
    errors = 0
    for _ in range(4):
        try:
            assert x.numpy().tolist() == [2, 3, 4]
            break
        except ValueError:
            errors += 1
    assert errors == 1

    def t(v):
        return Tensor(np.array(v, np.int64)).realize()

    b0, b1, b2, en = t([1, -3, 0, 2]), t([3, -3, -2, -2]), t([-1, -2, -2, -1]), t([1, -1, 2, 0])
    l0 = (b0 ** en) % 7  # fails
    b1.assign((b2 + b1) % 11)
    b1.assign((b1 + l0) % 11)  # dropped
    b0 += b1  # reads b1's dropped state: reads the one before it
    l1 = (b0 * 2 - l0) % 13  # fails
    b0.assign(l1[::-1].contiguous() * 3 % 5)  # dropped
    for _ in range(8):
        try:
            got = b0.numpy().tolist()
            break
        except ValueError:
            continue
    assert got == [3, 3, 7, 10] and b1.numpy().tolist() == [2, 6, 7, 8]


# -- bad input found by a hunt: each a clear error, never a crash or a silent value -----------


def test_one_variable_bound_to_two_values_in_a_slice_is_refused():
    from tolk import Variable

    n = Variable("n", 1, 6)
    x = Tensor(np.arange(8, dtype=np.float32))
    with pytest.raises(ValueError, match="bound to both 2 and 3"):
        x[n.bind(2):n.bind(3)]
    assert x[n.bind(2):n.bind(2) + 1].tolist() == [2.0]  # one value twice is fine


def test_in_with_none_or_a_string_is_false_as_numpy():
    x = Tensor([1.0, 2.0])
    assert (None in x) is False and ("a" in x) is False and (2.0 in x) is True


def test_sizes_and_arguments_out_of_reach_are_named():
    from tolk.errors import ShapeError

    with pytest.raises(ShapeError, match="too large"):
        Tensor.zeros(10**20, 0)
    with pytest.raises(ValueError, match="finite"):
        Tensor.arange(float("nan"))
    with pytest.raises(ShapeError, match="too many"):
        Tensor.arange(10**20)
    with pytest.raises(TypeError, match="fill value must be a bool, int or float"):
        Tensor.full((2,), None)
    with pytest.raises(TypeError, match="slice bounds"):
        Tensor([1.0, 2.0])[1.5:]
    with pytest.raises(TypeError, match="split takes"):
        Tensor([1.0, 2.0, 3.0]).split(1.5)


@pytest.mark.parametrize("arg", [(-3,), None, ("a", "CPU", 4), (-3, "CPU", "x"), (-3, 5, 4),
                                 (-3, "CPU", -1)])
def test_planning_a_buffer_with_a_malformed_arg_names_it(arg):
    from tolk.errors import ScheduleError
    from tolk.schedule import linear_stats, memory_plan_rewrite

    b = UOp(Ops.BUFFER, dtypes.float32, (), arg)
    lin = UOp(Ops.LINEAR, src=(UOp(Ops.CALL, dtypes.void, (UOp.sink(arg=None), b)),))
    for f in (memory_plan_rewrite, linear_stats):
        with pytest.raises(ScheduleError, match="BUFFER's arg must be"):
            f(lin)


def test_jit_errors_are_value_errors_too():
    from tolk.errors import JitError

    assert issubclass(JitError, ValueError) and issubclass(JitError, RuntimeError)
