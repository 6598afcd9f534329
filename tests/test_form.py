"""Forms (tolk.uop.form): a graph's structure with buffers and bind values left open."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
from schedule_helpers import F32, after, bind, buf, var, write

import tolk.callify
import tolk.uop.form as form_module
from tolk import Tensor, Variable
from tolk.dtype import dtypes
from tolk.schedule import program_form, program_key, schedule_cache_clear, schedule_cache_info
from tolk.uop import Ops, UOp
from tolk.uop.form import AFTER, BINDS, Form, form_of, leaves, may_bind


def add(a: UOp, b: UOp) -> UOp:
    return UOp(Ops.ADD, a.dtype, (a, b))


def mul(a: UOp, b: UOp) -> UOp:
    return UOp(Ops.MUL, a.dtype, (a, b))


def described(*roots: UOp):
    """(root forms, leaf description, leaves) of a graph."""
    return tuple(form_of(r) for r in roots), *leaves(roots)


def test_one_program_on_other_buffers_has_one_form_and_one_description():
    two = UOp.const(F32, 2.0)
    f1, d1, l1 = described(mul(add(buf(1), buf(2)), two))
    f2, d2, l2 = described(mul(add(buf(7), buf(8)), two))
    assert isinstance(f1[0], Form) and f1 == f2 and d1 == d2
    assert l1 == [buf(1), buf(2)] and l2 == [buf(7), buf(8)]


def test_one_buffer_read_twice_has_the_form_of_two_buffers_and_another_description():
    f1, d1, l1 = described(add(buf(1), buf(2)))
    f2, d2, l2 = described(add(buf(3), buf(3)))
    assert f1 == f2 and d1 != d2 and l2 == [buf(3)]
    # the same at depth: x*y + x*y (one node) against x*y + x*z
    xy = mul(buf(1), buf(2))
    _, d3, l3 = described(add(xy, xy))
    _, d4, l4 = described(add(xy, mul(buf(1), buf(3))))
    assert d3 != d4 and l3 == [buf(1), buf(2)] and l4 == [buf(1), buf(2), buf(3)]


def test_forms_tell_apart_dtypes_sizes_devices_ops_and_args_python_calls_equal():
    base = form_of(add(buf(1), buf(2)))
    for b in (buf(3, dtype=dtypes.float64), buf(3, size=32), buf(3, device="CPU:1")):
        assert form_of(add(buf(1), b)) is not base
    assert form_of(mul(buf(1), buf(2))) is not base
    for a, b in ((0.0, -0.0), (1, 1.0), (1, True)):
        x = UOp(Ops.RESHAPE, F32, (buf(1),), a)
        y = UOp(Ops.RESHAPE, F32, (buf(1),), b)
        assert form_of(x) is not form_of(y)


def test_a_node_without_buffers_is_its_own_form():
    c = UOp(Ops.EXPAND, F32, (UOp(Ops.RESHAPE, F32, (UOp.const(F32, 1.5),), (1,)),), (4,))
    assert form_of(c) is c
    assert form_of(add(buf(1), c)) is form_of(add(buf(2), c))
    other = UOp(Ops.EXPAND, F32, (UOp(Ops.RESHAPE, F32, (UOp.const(F32, 2.5),), (1,)),), (4,))
    assert form_of(add(buf(1), c)) is not form_of(add(buf(1), other))


def test_a_bind_has_one_form_at_every_value_and_its_own_per_variable():
    n, m = var("n"), var("m")
    f, d, found = described(add(buf(1), bind(n, 2)))
    assert described(add(buf(5), bind(n, 7)))[:2] == (f, d)
    assert form_of(add(buf(1), bind(m, 2))) is not f[0]
    assert found == [buf(1), bind(n, 2)]
    # a bind whose value is not a plain constant has no form, nor does anything above it
    i32 = dtypes.int32
    odd = UOp(Ops.BIND, i32, (n, add(UOp.const(i32, 1), UOp.const(i32, 2))))
    assert form_of(odd) is None and form_of(add(buf(1), odd)) is None
    assert program_form(add(buf(1), odd)) is None


def test_a_bind_is_marked_on_every_form_above_it():
    n = var("n")
    x = add(buf(1), bind(n, 3))
    assert form_of(x).flags & BINDS and may_bind(mul(x, buf(2)))
    assert not may_bind(add(buf(1), buf(2))) and not may_bind(UOp.const(F32, 1.0))
    i32 = dtypes.int32
    odd = UOp(Ops.BIND, i32, (n, add(UOp.const(i32, 1), UOp.const(i32, 2))))
    assert may_bind(odd)  # no form: it may


def test_a_pending_write_is_marked_on_every_form_above_it():
    x = buf(1)
    state = write(x, "k", buf(2))
    assert form_of(state).flags & AFTER and form_of(add(state, buf(3))).flags & AFTER
    assert not form_of(add(x, buf(3))).flags & AFTER
    assert program_form(add(state, buf(3))) is None  # a realize of it needs the whole graph
    assert program_form(add(x, buf(3))) is not None
    assert form_of(after(x)).flags & AFTER


def test_leaves_come_in_program_key_order():
    one = UOp.const(F32, 1.0)
    n = var("n")
    shared = add(buf(1), one)
    outs = [add(add(buf(100 + i), shared), bind(n, 3) if i % 5 == 0 else one) if i % 3 else shared
            for i in range(300)]
    root = UOp.sink(*outs, buf(2))
    _, bufs, binds, _ = program_key(root)
    key, fbufs, fbinds = program_form(root)
    assert (fbufs, fbinds) == (bufs, binds)
    for roots in ((root.src[5], root.src[0]), tuple(reversed(root.src[:40]))):
        _, bufs, binds, _ = program_key(*roots)
        assert program_form(*roots)[1:] == (bufs, binds)


def test_program_forms_are_equal_only_for_equal_program_keys():
    a, b = add(mul(buf(1), buf(2)), buf(1)), add(mul(buf(3), buf(4)), buf(5))
    c = add(mul(buf(6), buf(7)), buf(6))
    assert program_form(a)[0] == program_form(c)[0] and program_key(a)[0] == program_key(c)[0]
    assert program_form(a)[0] != program_form(b)[0] and program_key(a)[0] != program_key(b)[0]
    assert program_form(a, tag="x")[0] != program_form(a)[0]
    assert program_form(a, b)[0] != program_form(b, a)[0]


def test_forms_and_leaves_of_a_very_deep_graph_need_no_recursion(low_recursion_limit):
    def chain(b, n):
        x, one = b, UOp.const(F32, 1.0)
        for i in range(n):
            x = add(x, one) if i % 1000 else add(x, b)
        return program_form(x)

    key, bufs, _ = chain(buf(1), 100_000)
    assert bufs == [buf(1)]
    assert chain(buf(2), 100_000)[0] == key
    assert chain(buf(1), 99_999)[0] != key


def test_forms_die_with_their_graphs_unless_a_root_form_is_kept():
    def graph(slot):
        x = buf(slot, size=977)
        for _ in range(50):
            x = mul(add(x, buf(slot + 1, size=977)), UOp.const(F32, 0.5))
        return x

    before = len(form_module._forms)
    g = graph(1)
    kept = form_of(g)
    assert len(form_module._forms) >= before + 100
    del g
    gc.collect()
    assert form_of(graph(5)) is kept  # the kept root form holds every form below it
    del kept
    gc.collect()
    assert len(form_module._forms) <= before + 2


def test_a_tensor_op_gives_its_node_the_form_and_the_shape_of_its_form():
    def build(x):
        return ((x * 2).reshape(3, 4).permute(1, 0) + 1).sum(0)

    first, second = build(Tensor.empty(12)), build(Tensor.empty(12))
    assert first.uop is not second.uop
    f = first.uop._form
    assert isinstance(f, Form) and f is second.uop._form and f.shape == (3,)
    assert second.uop._cache["shape"] is f.shape and second.shape == (3,)
    assert second.device == "CPU"
    v = Variable("n", 1, 10).bind(4)
    t = Tensor.empty(10, 4)[:v] * 2
    u = Tensor.empty(10, 4)[:v] * 2
    assert t.uop._form is u.uop._form and t.shape == u.shape and t.shape[0] != 4


def test_a_buffer_dies_with_its_last_tensor_without_the_collector():
    gc.disable()
    try:
        x = Tensor.empty(64)
        y = (x * 2 + 1).sum()
        assert y.uop._form is not None
        ref = weakref.ref(x.uop.src[0] if x.uop.src else x.uop)
        del x, y
        assert ref() is None  # no reference cycle through the leaf links
    finally:
        gc.enable()


def test_a_realize_finds_a_program_seen_before_by_its_form_without_a_walk(monkeypatch):
    def run(v):
        x = Tensor(v)
        return ((x * 3 - 1).max(0) + x.sum(0)).numpy()

    schedule_cache_clear()
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    run(a)
    run(a + 1)  # a hit the slow way: now the form is known

    def no_walk(*roots, tag=None):
        raise AssertionError("program_key walked a graph the form key knows")

    monkeypatch.setattr(tolk.callify, "program_key", no_walk)
    monkeypatch.setattr(tolk.callify, "CHECK_FORMS", False)
    hits = schedule_cache_info().hits
    np.testing.assert_allclose(run(-a), (-a * 3 - 1).max(0) + (-a).sum(0))
    assert schedule_cache_info().hits == hits + 1
    b = Tensor(a)
    with pytest.raises(AssertionError, match="walked"):  # x*3 + x: another program
        (b * 3 + b).numpy()


def test_outputs_found_by_form_are_computed_in_the_order_of_the_first_realize():
    def run(v):
        x = Tensor(v)
        inner = x * 2
        outer = (inner + 1).sum()
        Tensor.realize(outer, inner)  # the inner output is substituted into the outer one
        return outer.numpy(), inner.numpy()

    for k in range(4):
        v = np.arange(6, dtype=np.float32) + k
        outer, inner = run(v)
        np.testing.assert_allclose(inner, v * 2)
        np.testing.assert_allclose(outer, (v * 2 + 1).sum())


def test_an_assign_looks_for_conflicting_binds_only_where_forms_say_binds_may_be(monkeypatch):
    calls = []
    real = tolk.callify._conflicting_binds
    monkeypatch.setattr(tolk.callify, "_conflicting_binds",
                        lambda a, b: calls.append(1) or real(a, b))
    x = Tensor(np.zeros(8, np.float32))
    for _ in range(50):  # no variable anywhere: no walk of the growing chain of states
        x.assign(x + 1)
    assert not calls
    np.testing.assert_allclose(x.numpy(), np.full(8, 50.0))
    v = Variable("i", 0, 10)
    y = Tensor(np.zeros(8, np.int32))
    y.assign(y + v.bind(2))
    y.assign(y + v.bind(3))  # another value of the same variable: the first assign runs first
    assert calls
    np.testing.assert_array_equal(y.numpy(), np.full(8, 5))
