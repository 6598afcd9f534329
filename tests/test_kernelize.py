"""Fusion rules, asserted through schedule_linear(); values checked against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from tolk.helpers import Context
from tolk.schedule import schedule_cache_clear, schedule_cache_info
from tolk.schedule.kernelize import get_kernel_graph
from tolk.tensor import Tensor
from tolk.uop import Ops, UOp


def kernels(*ts: Tensor) -> int:
    return len(ts[0].schedule_linear(*ts[1:]).src)


def rnd(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_elementwise_chain_of_any_length_is_one_kernel():
    x = Tensor(rnd(4, 8))
    y = x
    for i in range(50):
        y = (y * 1.01 + i).relu() if i % 2 else (y - 0.5).abs()
    assert kernels(y) == 1


def test_diamond_fuses_into_one_kernel():
    x = Tensor(rnd(4, 8))
    assert kernels((x + 1) + (x + 2)) == 1


def test_reduction_with_elementwise_input_and_epilogue_is_one_kernel():
    x = Tensor(rnd(4, 8))
    assert kernels(((x * 2).exp().sum(1) + 1).sqrt()) == 1


def test_softmax_is_at_most_three_kernels():
    x = Tensor(rnd(4, 8))
    assert kernels(x.softmax(-1)) <= 3


def test_layernorm_is_at_most_three_kernels():
    x = Tensor(rnd(4, 8))
    assert kernels(x.layernorm(-1)) <= 3


def test_relu_of_matmul_plus_bias_is_one_kernel():
    x, w, b = Tensor(rnd(4, 8)), Tensor(rnd(8, 3)), Tensor(rnd(3))
    y = (x @ w + b).relu()
    assert kernels(y) == 1
    np.testing.assert_allclose(y.numpy(), np.maximum(rnd(4, 8) @ rnd(8, 3) + rnd(3), 0), rtol=1e-5)


def test_contiguous_always_ends_a_kernel():
    x = Tensor(rnd(4, 8))
    assert kernels(((x + 1).contiguous() * 2)) == 2


def test_a_reduction_used_by_two_outputs_is_computed_once():
    x = Tensor(rnd(4, 8))
    m = x.max(1)
    lin = (m + 1).schedule_linear(m * 2)
    reduces = [c for c in lin.src if any(n.op is Ops.REDUCE_AXIS for n in c.src[0].toposort())]
    assert len(reduces) == 1


def test_matmul_of_matmul_realizes_the_inner_product():
    a, b, c = Tensor(rnd(4, 5)), Tensor(rnd(5, 6)), Tensor(rnd(6, 2))
    y = (a @ b) @ c
    assert kernels(y) == 2
    np.testing.assert_allclose(y.numpy(), rnd(4, 5) @ rnd(5, 6) @ rnd(6, 2), rtol=1e-4)


def test_assign_writes_in_place_with_no_extra_kernel():
    x = Tensor(rnd(4, 4)).contiguous().realize()
    buf = x.uop.src[0]
    x.assign(x * 2 + 1)
    lin = x.schedule_linear()
    assert len(lin.src) == 1 and lin.src[0].src[1] is buf
    x.realize()
    np.testing.assert_allclose(x.numpy(), rnd(4, 4) * 2 + 1, rtol=1e-6)


def test_assign_reading_its_target_through_a_shifted_view_uses_a_temporary():
    data = np.arange(8, dtype=np.float32)
    x = Tensor(data)
    x[1:] = x[:-1]
    assert kernels(x) == 2
    expected = data.copy()
    expected[1:] = data[:-1]
    np.testing.assert_array_equal(x.numpy(), expected)


def test_assign_of_a_transpose_into_itself_uses_a_temporary():
    data = rnd(3, 3)
    x = Tensor(data)
    x.assign(x.T)
    np.testing.assert_array_equal(x.numpy(), data.T)


def test_views_of_an_assigned_tensor_see_the_new_data():
    x = Tensor(np.zeros(6, np.float32))
    v = x[2:5]
    x.assign(Tensor(np.arange(6, dtype=np.float32)))
    np.testing.assert_array_equal(v.numpy(), [2, 3, 4])


def test_lazy_reads_before_an_assign_keep_the_old_value():
    x = Tensor(np.ones(4, np.float32))
    before = x * 10
    x.assign(x + 1)
    after = x * 10
    np.testing.assert_array_equal(after.numpy(), [20] * 4)
    np.testing.assert_array_equal(before.numpy(), [10] * 4)


def test_views_of_a_computed_tensor_alias_its_buffer_once_it_is_realized():
    x = Tensor(np.zeros(4, np.float32)) + 1
    v = x[1:].reshape(3, 1)  # made while x is lazy
    x.realize()
    x[2:] = 7.0
    np.testing.assert_array_equal(v.numpy().ravel(), [1, 7, 7])


def test_realizing_a_view_of_a_live_computed_tensor_realizes_that_tensor():
    x = Tensor(np.arange(4, dtype=np.float32)) * 2
    v = x[::2]
    np.testing.assert_array_equal(v.numpy(), [0, 4])
    x.assign(Tensor(np.full(4, 9.0, np.float32)))
    np.testing.assert_array_equal(v.numpy(), [9, 9])  # still a view of x, as in numpy


def test_tensors_with_equal_graphs_do_not_alias_through_their_views():
    x = Tensor(np.ones(3, np.float32))
    a, b = x + 1, x + 1  # one hash-consed graph, two tensors
    vb = b[1:]
    a[:] = 0.0
    np.testing.assert_array_equal(vb.numpy(), [2, 2])
    np.testing.assert_array_equal(b.numpy(), [2, 2, 2])
    np.testing.assert_array_equal(a.numpy(), [0, 0, 0])


def test_assign_through_a_reshape_of_transposed_axes_writes_element_for_element():
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = Tensor(data.copy())
    x.T.reshape(6).assign(Tensor(np.arange(10, 16, dtype=np.float32)))
    want = data.copy()
    want.T.reshape(6)  # numpy would copy here; tolk writes through the view, element for element
    want.T[...] = np.arange(10, 16, dtype=np.float32).reshape(3, 2)
    np.testing.assert_array_equal(x.numpy(), want)


def test_an_expression_of_a_buffer_before_and_after_an_assign_sees_both_values():
    b = Tensor(np.array([1.0, 2.0], np.float32))
    old = b * 1
    b.assign(b * 0 + 5)
    z = b + old  # new and old state of b in one kernel: the old one is copied first
    del old
    np.testing.assert_array_equal(z.numpy(), [6, 7])
    np.testing.assert_array_equal(b.numpy(), [5, 5])


def test_scheduling_allocates_and_runs_nothing():
    from tolk.engine.realize import kernel_runs
    from tolk.runtime.device import has_storage

    x = Tensor(rnd(4, 4))
    y = Tensor.empty(4, 4)
    before = kernel_runs[0]
    lin = (x + y).schedule_linear()
    assert kernel_runs[0] == before and len(lin.src) == 1
    assert not has_storage(y.uop.src[0])


def test_second_realize_of_the_same_program_hits_the_cache_with_new_data():
    schedule_cache_clear()
    outs = []
    for seed in (1, 2):
        x = Tensor(rnd(4, 8, seed=seed))
        outs.append((x.softmax(-1) * 3).numpy())
    info = schedule_cache_info()
    assert info.hits >= 1
    for seed, out in zip((1, 2), outs):
        e = np.exp(rnd(4, 8, seed=seed) - rnd(4, 8, seed=seed).max(-1, keepdims=True))
        np.testing.assert_allclose(out, e / e.sum(-1, keepdims=True) * 3, rtol=1e-5)


@pytest.mark.parametrize("flags", [{"NO_MEMORY_PLANNER": 1}, {"SCACHE": 0}, {}])
def test_results_do_not_depend_on_planner_or_cache(flags):
    with Context(**flags):
        x = Tensor(rnd(6, 5))
        y = ((x @ x.T).softmax(-1) + x.sum(1).reshape(6, 1)).layernorm()
        got = y.numpy()
    a = rnd(6, 5)
    s = a @ a.T
    e = np.exp(s - s.max(-1, keepdims=True))
    z = e / e.sum(-1, keepdims=True) + a.sum(1).reshape(6, 1)
    z = (z - z.mean(-1, keepdims=True)) / np.sqrt(z.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(got, z, rtol=1e-4, atol=1e-5)


def test_kernelize_rejects_a_sink_of_plain_values():
    from tolk.errors import ScheduleError

    with pytest.raises(ScheduleError, match="AFTER"):
        get_kernel_graph(UOp.sink(UOp.const(Tensor([1.0]).dtype, 1.0)))


def test_deep_elementwise_graph_schedules_without_recursion():
    import sys

    limit = sys.getrecursionlimit()
    x = Tensor(rnd(3))
    y = x
    for _ in range(20_000):
        y = y + 1
    sys.setrecursionlimit(1000)
    try:
        assert kernels(y) == 1
        np.testing.assert_allclose(y.numpy(), rnd(3) + 20_000, rtol=1e-5)
    finally:
        sys.setrecursionlimit(limit)


def test_storage_is_freed_when_its_tensors_die():
    import gc

    from tolk.runtime.device import get_device

    gc.collect()
    dev = get_device("CPU")
    base = dev.allocated_bytes
    x = Tensor(np.ones(100_000, np.float32))
    y = (x * 2).realize()
    z = y[10:20]
    assert dev.allocated_bytes - base >= 800_000
    del x, y, z
    gc.collect()
    assert dev.allocated_bytes - base == 0


def test_every_elementwise_assign_in_a_chain_is_one_kernel():
    for shape in ((4,), (8, 8)):
        x = Tensor(np.zeros(shape, np.float32)).contiguous().realize()
        for _ in range(3):
            x.assign(x + 1)
        assert kernels(x) == 3
        np.testing.assert_array_equal(x.numpy(), np.full(shape, 3, np.float32))


def test_realize_keys_its_program_by_the_tensors_graph_and_which_tensors_are_outputs():
    from tolk.schedule import program_key, schedule_cache_clear, schedule_cache_info

    def realize_on_new_data(outputs_of):
        x = Tensor(rnd(3, 4))
        y = (x + 1).exp()
        z = y.sum(1)
        outs = outputs_of(y, z)
        Tensor.realize(*outs)
        want = {"y": np.exp(x.numpy() + 1)}
        want["z"] = want["y"].sum(1)
        return [o.numpy() for o in outs], want

    schedule_cache_clear()
    cases = [lambda y, z: [z], lambda y, z: [y, z], lambda y, z: [z, y], lambda y, z: [y]]
    for rounds in range(2):  # the first round misses four times, the second hits four times
        for outputs_of, names in zip(cases, (["z"], ["y", "z"], ["z", "y"], ["y"])):
            got, want = realize_on_new_data(outputs_of)
            for g, n in zip(got, names):
                np.testing.assert_allclose(g, want[n], rtol=1e-6)
        info = schedule_cache_info()
        assert (info.hits, info.misses) == (4 * rounds, 4)
    t = Tensor(rnd(2)) + 1
    root = t.uop
    assert program_key(root, tag="realize")[0] != program_key(root)[0]  # a tag keeps keys apart
    assert (program_key(root, tag="realize")[0]
            == program_key((Tensor(rnd(2)) + 1).uop, tag="realize")[0])


