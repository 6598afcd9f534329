"""Sharded tensors across CPU devices give the same results as unsharded ones."""

from __future__ import annotations

import operator

import numpy as np
import pytest

from tolk.dtype import dtypes
from tolk.errors import DeviceError, ShapeError
from tolk.multi import MultiTensor
from tolk.schedule import linear_stats
from tolk.tensor import Tensor
from tolk.uop import Ops

DEVS = ("CPU:1", "CPU:2")


def rnd(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_shard_round_trips():
    a = rnd(5, 3)
    m = Tensor(a).shard(DEVS, axis=0)
    assert m.shape == (5, 3) and m.devices == DEVS
    np.testing.assert_array_equal(m.numpy(), a)
    np.testing.assert_array_equal(m.to("CPU").numpy(), a)


def test_sharded_elementwise_equals_unsharded():
    a, b = rnd(6, 4), rnd(4, seed=1)
    m = Tensor(a).shard(DEVS, axis=0)
    got = ((m * 2 + Tensor(b)).relu() - m).numpy()
    np.testing.assert_allclose(got, np.maximum(a * 2 + b, 0) - a, rtol=1e-6)


@pytest.mark.parametrize("axis", [0, 1, None, (0, 1)])
def test_sharded_reductions_equal_unsharded(axis):
    a = rnd(6, 4)
    m = Tensor(a).shard(DEVS, axis=0)
    np.testing.assert_allclose(np.asarray(m.sum(axis).numpy()), a.sum(axis), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(m.max(axis).numpy()), a.max(axis), rtol=1e-6)


def test_sharded_matmul_equals_unsharded():
    a, w = rnd(8, 5), rnd(5, 3, seed=2)
    m = Tensor(a).shard(DEVS, axis=0)
    np.testing.assert_allclose((m @ Tensor(w)).numpy(), a @ w, rtol=1e-5)


def test_each_device_gets_its_own_arena():
    a = rnd(64, 64)
    m = Tensor(a).shard(DEVS, axis=0)
    y = ((m * 2).exp() + 1).sum(1)
    lin = y.shards[0].schedule_linear(*y.shards[1:])
    devices = {s.src[0].device for c in lin.src for s in c.src[1:] if s.op is Ops.SLICE}
    assert devices >= set(DEVS)
    assert set(linear_stats(lin).arena_bytes) >= set(DEVS)


def test_unknown_and_repeated_devices_are_rejected():
    with pytest.raises(DeviceError, match="GPU"):
        Tensor(rnd(2)).shard(("CPU:1", "GPU"))
    with pytest.raises(DeviceError, match="distinct"):
        Tensor(rnd(2)).shard(("CPU:1", "CPU:1"))


def test_sharded_operands_broadcast_as_numpy_or_are_refused():
    devs = ("CPU:1", "CPU:2")
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    m = Tensor(a).shard(devs, 0)
    for bad in (np.ones((8, 3), np.float32), np.ones((2, 4, 3), np.float32)):
        with pytest.raises(ShapeError, match="does not broadcast"):
            m + Tensor(bad)
    row, col = np.arange(3, dtype=np.float32), np.arange(4, dtype=np.float32).reshape(4, 1)
    np.testing.assert_allclose((m + Tensor(row)).numpy(), a + row)
    np.testing.assert_allclose((m * Tensor(col)).numpy(), a * col)
    np.testing.assert_allclose((1 - m).numpy(), 1 - a)
    np.testing.assert_allclose((1 / (m + 1)).numpy(), 1 / (a + 1))
    t = Tensor(a + 2)  # a plain tensor first: the sharded operand's operator runs
    for op in (operator.add, operator.sub, operator.mul, operator.truediv):
        got = op(t, m + 1)
        assert isinstance(got, MultiTensor)
        np.testing.assert_allclose(got.numpy(), op(a + 2, a + 1))
    with pytest.raises(TypeError, match="MultiTensor"):  # what shards do not offer stays refused
        t @ m
    with pytest.raises(ShapeError, match="at least one axis"):
        Tensor(3.0).shard(devs, 0)


def test_a_batch_sharded_matmul_cuts_a_batched_right_operand_alike():
    devs = ("CPU:1", "CPU:2")
    rng = np.random.default_rng(0)
    b, wb = rng.random((4, 2, 3), np.float32), rng.random((4, 3, 5), np.float32)
    np.testing.assert_allclose((Tensor(b).shard(devs, 0) @ Tensor(wb)).numpy(), b @ wb,
                               rtol=1e-5)
    np.testing.assert_allclose((Tensor(b).shard(devs, 0) @ Tensor(wb[0])).numpy(), b @ wb[0],
                               rtol=1e-5)
    np.testing.assert_allclose((Tensor(b).shard(devs, 1) @ Tensor(wb)).numpy(), b @ wb,
                               rtol=1e-5)
    with pytest.raises(ShapeError, match="batch sizes"):
        Tensor(b).shard(devs, 0) @ Tensor(rng.random((3, 3, 5), np.float32))


def test_a_sharded_matmul_with_a_batched_weight_moves_the_sharded_axis_and_means_in_float32():
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    w = np.random.default_rng(0).random((2, 2, 4), np.float32)
    for devs in (("CPU:1", "CPU:2", "CPU:3"), ("CPU:1", "CPU:2")):  # even and uneven shards
        r = Tensor(x).shard(devs, 0) @ Tensor(w)
        assert r.shape == (2, 3, 4)
        np.testing.assert_allclose(r.numpy(), x @ w, rtol=1e-6)
    m = Tensor(np.full((2, 4), 40000, np.float16)).shard(("CPU:1", "CPU:2"), 0)
    for axis in (None, 0, 1, np.int64(1)):  # 16-bit floats accumulate in float32 (inf before)
        got = m.mean(axis)
        assert got.dtype is dtypes.float16
        np.testing.assert_array_equal(got.numpy(), np.full((2, 4), 40000, np.float16).mean(
            None if axis is None else int(axis)))
    np.testing.assert_array_equal(m.max(np.int64(0)).numpy(), np.full(4, 40000, np.float16))


def test_the_constructor_checks_its_shards_and_operands_match_shard_by_shard():
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    m1 = MultiTensor([Tensor(a[:1]).to("CPU:1"), Tensor(a[1:]).to("CPU:2")], 0)
    m2 = MultiTensor([Tensor(a[:3]).to("CPU:1"), Tensor(a[3:]).to("CPU:2")], 0)
    with pytest.raises(ShapeError, match="shards"):
        m1 + m2  # one logical shape, split differently
    with pytest.raises(DeviceError, match="distinct"):
        MultiTensor([Tensor(a[:2]), Tensor(a[2:])], 0)
    with pytest.raises(ShapeError, match="agree"):
        MultiTensor([Tensor(a[:2]).to("CPU:1"), Tensor(a[2:, :2]).to("CPU:2")], 0)
    with pytest.raises(TypeError, match="Tensors"):
        MultiTensor([a], 0)
    assert MultiTensor([Tensor(a[:2]).to("CPU:1"), Tensor(a[2:]).to("CPU:2")], -2).axis == 0


def test_bound_variables_and_symbolic_shapes_with_shards():
    from tolk import Variable

    m = Tensor(np.ones((4, 3), np.float32)).shard(("CPU:1", "CPU:2"), 0)
    k = Variable("k", 1, 8).bind(2)
    for r in (m * k, k * m, k + m, k - m, k / m):
        assert isinstance(r, MultiTensor)
    assert (k * m).numpy()[0].tolist() == [2, 2, 2] and (k - m).numpy()[0].tolist() == [1, 1, 1]
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    x = Tensor(a)[:, :Variable("n", 1, 6).bind(3)]
    s = x.shard(("CPU:1", "CPU:2"), 0)
    np.testing.assert_allclose(s.mean(1).numpy(), a[:, :3].mean(1))
    np.testing.assert_allclose(s.mean().numpy(), a[:, :3].mean())
    with pytest.raises(ShapeError, match="symbolic axis"):
        x.shard(("CPU:1", "CPU:2"), 1)


def test_comparisons_where_floor_division_powers_and_argmax_run_shard_by_shard_as_numpy():
    a = np.arange(15, dtype=np.float32).reshape(5, 3) - 6
    m = Tensor(a).shard(("CPU:1", "CPU:2"), 0)  # shards of 3 and 2 rows
    t = Tensor(a)
    with np.errstate(all="ignore"):
        pairs = [
            (m < 0, a < 0), (0 < m, 0 < a), (t <= m, a <= a), (m == t, a == a),
            (m != 1, a != 1), (m >= t * 0, a >= 0), (m // 2, a // 2), (7 % m, 7 % a),
            (m % 4, a % 4), (m.abs() ** 2, np.abs(a) ** 2),
            (2 ** (m * 0 + 3), np.full_like(a, 8)), ((m > 0).where(m, 0.0), np.where(a > 0, a, 0)),
            (m.maximum(t * 0), np.maximum(a, 0)), (m.minimum(1), np.minimum(a, 1)),
            (m.clip(-1, 1), np.clip(a, -1, 1)), (m.exp2(), np.exp2(a)),
        ]
        for got, want in pairs:
            assert isinstance(got, MultiTensor)
            np.testing.assert_array_equal(got.numpy(), want)
    for name in ("argmax", "argmin"):
        ref = getattr(a, name)
        for axis, keep in ((0, False), (1, False), (1, True), (None, False), (-1, True)):
            got = getattr(m, name)(axis, keepdim=keep)
            assert isinstance(got, MultiTensor) == (axis in (1, -1))
            np.testing.assert_array_equal(got.numpy(), ref(axis=axis, keepdims=keep))


def test_a_sharded_16_bit_sum_adds_the_partial_sums_in_float32():
    h = np.random.default_rng(0).uniform(0, 1, (1000,)).astype(np.float16)
    for devs in (("CPU:1", "CPU:2"), ("CPU:1", "CPU:2", "CPU:3")):
        got = Tensor(h).shard(devs, 0).sum()
        assert got.dtype.np == np.float16
        assert got.item() == Tensor(h).sum().item() == h.astype(np.float32).sum().astype(np.float16)


def test_a_plain_tensor_defers_where_maximum_and_minimum_to_a_sharded_one():
    a = np.arange(8, dtype=np.float32).reshape(2, 4)
    m = Tensor(a).shard(("CPU:1", "CPU:2"), 0)
    t = Tensor(a[::-1].copy())
    for got, want in (((t > 3).where(m, 0.0), np.where(a[::-1] > 3, a, 0)),
                      ((t > 3).where(0.0, m), np.where(a[::-1] > 3, 0, a)),
                      (t.maximum(m), np.maximum(a[::-1], a)),
                      (t.minimum(m), np.minimum(a[::-1], a))):
        assert isinstance(got, MultiTensor)
        np.testing.assert_array_equal(got.numpy(), want)


def test_sharded_int_mean_truth_inplace_clip_and_gather_as_plain_tensors():
    devs = ("CPU:1", "CPU:2")
    a = np.array([[16777217] * 3 + [1]], np.int32)
    for axis in (0, 1):
        m = Tensor(a).shard(devs, axis)
        for ax in (None, 0, 1):
            got = m.mean(ax).numpy()
            assert got.dtype == np.float32
            np.testing.assert_array_equal(got, Tensor(a).mean(ax).numpy())
    assert not bool(Tensor.zeros(1).shard(("CPU:1",), 0))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(Tensor.zeros(4).shard(devs, 0))
    w = Tensor(np.arange(4, dtype=np.float32)).shard(devs, 0)
    shards = w.shards

    def step(x):
        x -= 1.0  # in place, as Tensor's: the caller's tensor changes
        x *= 2

    step(w)
    assert w.shards == shards
    np.testing.assert_array_equal(w.numpy(), [-2, 0, 2, 4])
    wi = Tensor(np.arange(4, dtype=np.int32)).shard(devs, 0)
    with pytest.raises(TypeError, match="float32 into a tensor of dtype int32"):
        wi += 1.5  # numpy's in-place rule refuses a float into ints
    w += Tensor([0.0, 0.0, 0.0, 0.0], dtype="float64")  # and casts a float64 into float32
    np.testing.assert_array_equal(w.clip(Tensor([0.0, 1.0, 2.0, 3.0]), 3.0).numpy(), [0, 1, 2, 3])
    np.testing.assert_array_equal(w.clip(0.5, Tensor([1.0, 1.0, 5.0, 5.0]).shard(devs, 0)).numpy(),
                                  [0.5, 0.5, 2, 4])
    with pytest.raises(TypeError):
        np.ones(4) * w
    one = Tensor([1.0, 2.0]).shard(("CPU:1",), 0)
    g = one.to("CPU:1")
    g[0] = 9.0  # a gather is a new tensor, also of one shard
    assert one.numpy().tolist() == [1, 2] and g.numpy().tolist() == [9, 2]
    t = Tensor([0.0, 0.0, 0.0, 0.0])
    with pytest.raises(TypeError, match="gather it with .to"):
        t.assign(w)
    with pytest.raises(TypeError, match="gather it with .to"):
        t.cat(w)


def test_sharded_operands_broadcast_along_unsharded_axes():
    devs = ("CPU:1", "CPU:2")
    a = np.random.default_rng(0).random((4, 6)).astype(np.float32)
    z = Tensor(a).shard(devs, 0)
    e = (z - z.max(1, keepdim=True)).exp()
    np.testing.assert_allclose((e / e.sum(1, keepdim=True)).numpy(),
                               np.exp(a - a.max(1, keepdims=True))
                               / np.exp(a - a.max(1, keepdims=True)).sum(1, keepdims=True),
                               rtol=1e-6)
    with pytest.raises(ShapeError):
        z + Tensor(a[:, :3]).shard(devs, 0)


def test_sharded_softmax_layernorm_var_std_permute_and_linear_as_plain():
    devs = ("CPU:1", "CPU:2")
    rng = np.random.default_rng(3)
    a = rng.random((4, 6)).astype(np.float32)
    for ax in (0, 1):
        m = Tensor(a).shard(devs, ax)
        for name in ("softmax", "log_softmax", "layernorm"):
            for axis in (0, 1, -1):
                np.testing.assert_allclose(getattr(m, name)(axis).numpy(),
                                           getattr(Tensor(a), name)(axis).numpy(), atol=1e-6)
        for axis in (None, 0, 1):
            for keepdim in (False, True):
                np.testing.assert_allclose(m.var(axis, keepdim).numpy(),
                                           a.var(axis, ddof=1, keepdims=keepdim), rtol=1e-5)
                np.testing.assert_allclose(m.std(axis, keepdim, 0).numpy(),
                                           a.std(axis, keepdims=keepdim), rtol=1e-5)
        for t in (m.T, m.permute(1, 0), m.transpose()):
            np.testing.assert_array_equal(t.numpy(), a.T)
        assert len(m) == 4
    w, b = rng.random((6, 3)).astype(np.float32), rng.random(3).astype(np.float32)
    np.testing.assert_allclose(Tensor(a).shard(devs, 0).linear(Tensor(w), Tensor(b)).numpy(),
                               a @ w + b, rtol=1e-5)


def test_sharded_std_rounds_once_layernorm_takes_axis_tuples_and_linear_checks_its_weight():
    devs = ("CPU:1", "CPU:2")
    a = np.array([0.2820369, -2.2304978, -2.7651761, -1.3731775, 0.6605853])
    for dt, x in (("float16", a), ("bfloat16", a), ("int32", np.array([0, 2, 3, -1, 5]))):
        assert Tensor(x, dtype=dt).shard(devs, 0).std().numpy() == Tensor(x, dtype=dt).std().numpy()
    b = np.random.default_rng(0).random((4, 6)).astype(np.float32)
    m = Tensor(b).shard(devs, 0)
    for axis in ((0, 1), (1,)):
        np.testing.assert_allclose(m.layernorm(axis).numpy(), Tensor(b).layernorm(axis).numpy(),
                                   atol=1e-6)
    with pytest.raises(TypeError, match="linear takes Tensors, got ndarray"):
        m.linear(np.ones((6, 3)))


def test_sharded_copies_are_new_shards_and_numpy_reads_them_gathered():
    import copy

    m = Tensor(np.arange(4, dtype=np.float32)).shard(("CPU:1", "CPU:2"))
    c = copy.copy(m)
    c += 10
    assert m.numpy().tolist() == [0, 1, 2, 3] and c.numpy().tolist() == [10, 11, 12, 13]
    d = copy.deepcopy(m)
    assert d.devices == ("CPU:1", "CPU:2") and (d + m).numpy().tolist() == [0, 2, 4, 6]
    np.testing.assert_array_equal(np.asarray(m), [0, 1, 2, 3])
    assert np.array(m, dtype=np.int8).dtype == np.int8 and m.tolist() == [0.0, 1.0, 2.0, 3.0]
    one = Tensor([3.0]).shard(("CPU:1",))
    assert float(one) == 3.0 and int(one) == 3 and one.item() == 3.0
    assert (m == None) is False and (m != "x") is True  # noqa: E711


def test_sharded_matmul_over_the_sharded_axis_sums_the_partial_products():
    rng = np.random.default_rng(0)
    x, dz = rnd(7, 4), rng.standard_normal((7, 3)).astype(np.float32)
    xs = Tensor(x).shard(DEVS, axis=0)
    g = xs.T @ Tensor(dz).shard(DEVS, axis=0)  # a weight's gradient over a sharded batch
    assert isinstance(g, Tensor) and g.device == DEVS[0]
    np.testing.assert_allclose(g.numpy(), x.T @ dz, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose((xs.T @ Tensor(dz)).numpy(), x.T @ dz, rtol=1e-5, atol=1e-5)
    with pytest.raises(ShapeError, match="sharded alike"):
        xs.T @ Tensor(dz).shard(DEVS, axis=1)
    with pytest.raises(ShapeError, match="do not align: 7 != 5"):
        xs.T @ Tensor(rnd(5, 3))
    other = Tensor([1.0])
    other.realize(xs * 2)  # realize takes sharded tensors too


def test_sharded_matmul_over_a_size_one_sharded_axis_and_linear_with_a_bias():
    xs = Tensor(np.ones((1, 4), np.float32)).shard(DEVS, axis=0)  # one shard is empty
    np.testing.assert_array_equal((xs.T @ Tensor(np.ones((1, 3), np.float32))).numpy(),
                                  np.ones((4, 3)))
    a = rnd(4, 3)
    cols = Tensor(a).shard(DEVS, axis=1)
    w, b = rnd(3, 2, seed=1), rnd(2, seed=2)
    np.testing.assert_allclose(cols.linear(Tensor(w), Tensor(b)).numpy(), a @ w + b, rtol=1e-5)


@pytest.mark.parametrize("dt", [np.float16, dtypes.bfloat16])
def test_a_16_bit_matmul_over_the_sharded_axis_rounds_once(dt):
    a = np.array([[1.0, 2048.0, -2048.0]], np.float32)
    x = Tensor(a).cast(dt) if dt is dtypes.bfloat16 else Tensor(a.astype(dt))
    w = Tensor(np.ones((3, 1), np.float32)).cast(x.dtype)
    got = x.shard(DEVS, 1) @ w
    assert got.dtype is x.dtype and got.numpy().tolist() == (x @ w).numpy().tolist() == [[1.0]]


def test_matmul_over_the_sharded_axis_with_vectors_is_numpys():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    v = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal((Tensor(a).shard(DEVS, 1) @ Tensor(v)).numpy(), a @ v)
    np.testing.assert_array_equal((Tensor(v).shard(DEVS, 0) @ Tensor(a.T)).numpy(), v @ a.T)
    assert (Tensor(v).shard(DEVS, 0) @ Tensor(v)).item() == v @ v
    with pytest.raises(ShapeError, match="do not align: 4 != 3"):
        Tensor(a).shard(DEVS, 1) @ Tensor(np.ones((3, 2), np.float32))
    for other in (np.ones((4, 2), np.float32), 3):
        with pytest.raises(TypeError, match="matmul takes Tensors"):
            Tensor(a).shard(DEVS, 1) @ other


def test_sharded_clip_takes_bounds_as_tensor_clip_does():
    a = np.array([0, 100, 200, 250], np.uint8)
    m = Tensor(a).shard(DEVS, 0)
    assert m.clip(Tensor(np.uint8(5)), 300).numpy().tolist() == [5, 100, 200, 250]
    assert m.clip(min=150).numpy().tolist() == [150, 150, 200, 250]
    with pytest.raises(TypeError, match="both"):
        m.clip(1, min=2)


def test_sharded_reductions_take_numpy_and_pytorch_argument_names():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    m = Tensor(a).shard(DEVS, 0)
    np.testing.assert_array_equal(m.sum(keepdims=True).numpy(), a.sum(keepdims=True))
    np.testing.assert_allclose(m.var(ddof=0).numpy(), a.var(), rtol=1e-6)
    np.testing.assert_array_equal(m.argmax(dim=1).numpy(), a.argmax(1))
    np.testing.assert_array_equal(m.max(dim=0).numpy(), a.max(0))
    np.testing.assert_allclose(m.softmax(dim=0).numpy(), Tensor(a).softmax(0).numpy())
    got = m.sum(1, dtype="float64")
    assert got.dtype is dtypes.float64
    np.testing.assert_array_equal(got.numpy(), a.sum(1, dtype=np.float64))


def test_a_sum_asked_for_in_16_bits_adds_in_float32_sharded_or_not():
    a = np.ones((5000, 3), np.float32)  # (16-bit adds down a column stall at 2048 and 256)
    b = np.array([70000.0, -69999.0], np.float32)  # (numpy rounds the inputs first: inf - inf)
    for x in (Tensor(a), Tensor(a).shard(DEVS, 0), Tensor(a).shard(DEVS, 1)):
        got = x.sum(0, dtype="float16")
        assert got.dtype is dtypes.float16 and got.numpy().tolist() == [5000.0] * 3
        got = x.sum(0, dtype=dtypes.bfloat16).float().numpy()
        assert got.tolist() == [4992.0] * 3  # (5000 rounded once)
    assert Tensor(a).prod(0, dtype="float16").numpy().tolist() == [1.0] * 3
    for x in (Tensor(b), Tensor(b).shard(DEVS, 0)):
        assert np.isnan(x.sum(dtype="float16").item())
    with pytest.raises(TypeError, match="void"):
        Tensor(a).sum(dtype="void")


def test_unsupported_sharded_operations_are_type_errors_with_a_hint():
    m = Tensor(np.ones((2, 3), np.float32)).shard(DEVS, 0)
    for op in (lambda: m.reshape(3, 2), lambda: m[0], lambda: m.flip(0)):
        with pytest.raises(TypeError, match="to\\(device\\)"):
            op()
    with pytest.raises(TypeError, match="to\\(device\\)"):
        m[0] = 1.0
    assert not hasattr(m, "reshape")  # still an AttributeError for hasattr
    assert abs(-m).numpy().tolist() == [[1.0] * 3] * 2
    with pytest.raises(TypeError, match="to\\(device\\)"):
        Tensor(m)
    with pytest.raises(TypeError, match="sharded"):
        Tensor(np.ones(3, np.float32)).gather(Tensor(np.array([0, 1])).shard(DEVS, 0))


def test_requires_grad_on_a_multitensor_is_refused_and_gradients_reach_the_source():
    t = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    m = t.shard(DEVS, 0)
    for name in ("requires_grad", "grad"):
        with pytest.raises(TypeError, match="before sharding"):
            setattr(m, name, True)
    with pytest.raises(AttributeError, match="'scale'"):
        m.scale = 2
    assert m.axis == 0 and (m * 2).numpy().tolist() == (t * 2).numpy().tolist()
    t.requires_grad = True
    ((t.shard(DEVS, 0) * t.shard(DEVS, 0)).sum()).backward()
    np.testing.assert_array_equal(t.grad.numpy(), 2 * t.numpy())


def test_a_multitensor_needs_a_sequence_of_shards_with_axes():
    with pytest.raises(ShapeError, match="0-d"):
        MultiTensor([Tensor(np.float32(1), device="CPU:1"),
                     Tensor(np.float32(2), device="CPU:2")], 0)
    with pytest.raises(TypeError, match="sequence of Tensors"):
        MultiTensor(Tensor(np.ones((2, 2), np.float32)), 0)


def test_a_sharded_sum_with_an_int_or_bool_dtype_sums_in_it_as_numpy():
    a = np.array([[100, 5], [100, 2]], np.int32)
    m = Tensor(a).shard(DEVS, 0)
    got = m.sum(0, dtype=dtypes.int8)
    assert got.dtype is dtypes.int8 and got.numpy().tolist() == a.sum(0, dtype=np.int8).tolist()
    b = np.array([[200, 100], [250, 3]], np.uint8)
    assert Tensor(b).shard(DEVS, 0).sum(1, dtype=dtypes.uint8).numpy().tolist() == \
        b.sum(1, dtype=np.uint8).tolist()
    any_ = m.sum(dtype=dtypes.bool)
    assert any_.dtype is dtypes.bool and any_.item() is True


def test_sharded_bitwise_operators_are_tensors():
    a = np.array([1, 2, 3, 4], np.int32)
    m = Tensor(a).shard(DEVS, 0)
    assert (m & 3).numpy().tolist() == (a & 3).tolist()
    assert (6 | m).numpy().tolist() == (6 | a).tolist() and (~m).numpy().tolist() == (~a).tolist()
    m ^= 5
    assert m.numpy().tolist() == (a ^ 5).tolist()
    b = np.array([7, 1, 6, 2], np.int32)  # a plain tensor on the left defers to the shards
    m = Tensor(a).shard(DEVS, 0)
    for op in (operator.and_, operator.or_, operator.xor):
        got = op(Tensor(b), m)
        assert isinstance(got, MultiTensor) and got.numpy().tolist() == op(b, a).tolist()
