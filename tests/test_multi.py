"""Sharded tensors across CPU devices give the same results as unsharded ones."""

from __future__ import annotations

import numpy as np
import pytest

from tolk.errors import DeviceError
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
