"""The IR: interning, keys, walks, rewrite engine, export/import."""

from __future__ import annotations

import gc
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tolk.dtype import dtypes
from tolk.uop import (
    GraphFormatError,
    KernelInfo,
    Ops,
    Rules,
    RewriteError,
    UOp,
    export_graph,
    fresh_internal_buffer_slot,
    graph_rewrite,
    import_graph,
    intern_table_size,
)
from tolk.uop.shape import device_of, shape_of

F32 = dtypes.float32
DEEP = 100_000


def small_graph(slot: int = 7, internal: int = -3):
    a = UOp(Ops.BUFFER, F32, (), (slot, "CPU", 16))
    t = UOp(Ops.BUFFER, F32, (), (internal, "CPU", 16))
    c = UOp.const(F32, 2.5)
    x = UOp(Ops.MUL, F32, (UOp(Ops.ADD, F32, (a, t)), c))
    return UOp.sink(UOp(Ops.STORE, dtypes.void, (t, x)), arg=KernelInfo("k"))


def chain(n: int, base: UOp | None = None) -> UOp:
    x = base if base is not None else UOp.buffer(F32, 4)
    one = UOp.const(F32, 1.0)
    for _ in range(n):
        x = UOp(Ops.ADD, F32, (x, one))
    return x


def test_equal_fields_give_the_same_object():
    a = UOp.buffer(F32, 4)
    assert UOp(Ops.ADD, F32, (a, a)) is UOp(Ops.ADD, F32, [a, a])
    assert UOp(Ops.ADD, F32, (a, a)) is not UOp(Ops.ADD, dtypes.float64, (a, a))
    assert UOp.const(F32, 1.0).replace(arg=2.0) is UOp.const(F32, 2.0)


def test_arg_keys_tell_apart_args_python_calls_equal():
    pairs = [(0.0, -0.0), (1, 1.0), (1, True), ((1, 2), (1.0, 2)), (Ops.ADD, int(Ops.ADD))]
    for a, b in pairs:
        x, y = UOp.const(F32, a), UOp.const(F32, b)
        assert x is not y and x.arg_key != y.arg_key
    assert UOp.const(F32, (1, 2)).arg_key == UOp.const(F32, (1, 2)).arg_key


def test_equal_tuple_args_of_nodes_built_apart_are_one_object():
    a = UOp.buffer(F32, 12)
    first_key = UOp(Ops.RESHAPE, F32, (a,), (3, 4)).arg_key
    gc.collect()  # the node is gone; a node of another source gets the same arg object
    again = UOp(Ops.RESHAPE, F32, (UOp.buffer(F32, 12),), (3, 4))
    assert again.arg_key is first_key and again.arg is first_key  # one tuple, not two equal ones
    assert UOp.const(F32, (1.0, 2)).arg_key is not UOp.const(F32, (1, 2)).arg_key


def test_the_shared_arg_table_stays_bounded(monkeypatch):
    import tolk.uop.ops as ops_module

    monkeypatch.setattr(ops_module, "_SHARED_ARGS_MAX", 8)
    keep = [UOp.const(F32, (i, i)) for i in range(40)]
    assert len(ops_module._shared_args) <= 8
    assert [k.arg for k in keep] == [(i, i) for i in range(40)]


def test_ops_behave_as_an_int_enum():
    import copy
    import pickle

    members = list(Ops)
    assert [int(m) for m in members] == list(range(1, len(Ops) + 1))
    assert members[0] is Ops.BUFFER and Ops(int(Ops.ADD)) is Ops.ADD and Ops["MUL"] is Ops.MUL
    assert Ops.__members__["SINK"] is Ops.SINK
    assert list(Ops.__members__) == [m.name for m in members]
    assert Ops.ADD == int(Ops.ADD) and hash(Ops.ADD) == hash(int(Ops.ADD)) and Ops.ADD.value == 18
    assert repr(Ops.ADD) == str(Ops.ADD) == f"{Ops.ADD}" == "Ops.ADD"
    assert isinstance(Ops.ADD, Ops) and Ops.ADD in Ops and 18 not in Ops
    assert copy.deepcopy(Ops.EXP) is Ops.EXP and pickle.loads(pickle.dumps(Ops.EXP)) is Ops.EXP
    for bad in (0, len(Ops) + 1, 18.0, "ADD"):
        with pytest.raises(ValueError, match="not a valid Ops"):
            Ops(bad)
    with pytest.raises(KeyError):
        Ops["NOPE"]
    with pytest.raises(AttributeError):
        Ops.ADD = Ops.MUL
    with pytest.raises(AttributeError):
        Ops.ADD.name = "MUL"
    assert Ops.ADD.name == "ADD"
    # members are plain class attributes: no __getattr__ hook on the metaclass (the reason
    # Ops is not an enum.Enum: on Python 3.11 that hook makes every Ops.X several times slower)
    assert not any("__getattr__" in vars(k) for k in type(Ops).__mro__)


def test_a_device_is_a_nodes_own_or_that_of_its_first_source_with_one():
    a, b = UOp.buffer(F32, 4, "CPU:1"), UOp.buffer(F32, 4, "CPU:2")
    scalar = UOp.const(F32, 2.0)
    assert device_of(scalar) is None
    assert device_of(UOp(Ops.MUL, F32, (UOp(Ops.NEG, F32, (scalar,)), b))) == "CPU:2"
    assert device_of(UOp(Ops.ADD, F32, (a, b))) == "CPU:1"
    assert device_of(UOp(Ops.COPY, F32, (a,), "CPU:3")) == "CPU:3"
    shared = UOp(Ops.ADD, F32, (scalar, scalar))  # None, met twice: searched once
    assert device_of(UOp(Ops.WHERE, F32, (shared, shared, UOp(Ops.EXP, F32, (b,))))) == "CPU:2"


def test_a_node_given_its_shape_first_has_the_same_device():
    scalar = UOp.const(F32, 3.0)
    builders = [lambda a, b: UOp(Ops.ADD, F32, (a, b)), lambda a, b: UOp(Ops.ADD, F32, (b, a)),
                lambda a, b: UOp(Ops.MUL, F32, (scalar, UOp(Ops.NEG, F32, (b,)))),
                lambda a, b: UOp(Ops.COPY, F32, (UOp(Ops.EXP, F32, (a,)),), "CPU:3")]
    for build in builders:
        devices = []
        for shape_first in (True, False):
            g = build(UOp.buffer(F32, 4, "CPU:1"), UOp.buffer(F32, 4, "CPU:2"))
            if shape_first:
                shape_of(g)
            devices.append(device_of(g))
        assert devices[0] == devices[1] is not None


def test_intern_table_does_not_keep_dead_graphs_alive():
    gc.collect()
    before = intern_table_size()
    x = chain(1000)
    assert intern_table_size() >= before + 1000
    del x
    gc.collect()
    assert intern_table_size() <= before + 1


def test_replace_rejects_unknown_fields():
    with pytest.raises(TypeError, match="shape"):
        UOp.const(F32, 1.0).replace(shape=(1,))


def test_foreign_args_and_sources_and_ops_are_refused_when_the_node_is_made():
    for arg in (frozenset({1}), object(), (1, [2]), 1.5j):
        with pytest.raises(TypeError, match="arg"):
            UOp(Ops.CONST, F32, (), arg)
    with pytest.raises(TypeError, match="sources must be UOps, got int"):
        UOp(Ops.ADD, F32, (1, 2))
    with pytest.raises(TypeError, match="Ops member and a DType"):
        UOp("ADD", "float32", ())
    with pytest.raises(TypeError, match="Ops member and a DType"):
        UOp(Ops.ADD, "float32", ())
    assert UOp(Ops.NOOP, dtypes.void, (), KernelInfo("k")).key  # a registered named tuple


def test_key_differs_when_any_field_differs():
    g = small_graph()
    assert g.key == small_graph().key
    assert g.key != small_graph(slot=8).key
    assert UOp.const(F32, 1.0).key != UOp.const(dtypes.float64, 1.0).key
    assert UOp.const(F32, 1).key != UOp.const(F32, 1.0).key


def test_key_is_equal_across_processes():
    code = (
        "from tests.test_uop import small_graph; import sys; "
        "sys.stdout.write(small_graph().key.hex())"
    )
    outs = {
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       check=True, env={"PYTHONHASHSEED": seed, "PATH": ""}).stdout
        for seed in ("1", "2")
    }
    assert outs == {small_graph().key.hex()}


def test_toposort_puts_children_first_and_shared_nodes_once():
    a = UOp.buffer(F32, 4)
    b = UOp(Ops.NEG, F32, (a,))
    c = UOp(Ops.ADD, F32, (b, b))
    d = UOp(Ops.MUL, F32, (c, b))
    order = d.toposort()
    assert order == [a, b, c, d]


def test_substitute_replaces_every_occurrence():
    a, b = UOp.buffer(F32, 4), UOp.buffer(F32, 4)
    x = UOp(Ops.ADD, F32, (UOp(Ops.NEG, F32, (a,)), a))
    y = x.substitute({a: b})
    assert y is UOp(Ops.ADD, F32, (UOp(Ops.NEG, F32, (b,)), b))
    assert x.substitute({}) is x


def test_repr_numbers_lines_and_prints_shared_nodes_once():
    a = UOp.buffer(F32, 4)
    n = UOp(Ops.NEG, F32, (a,))
    text = repr(UOp(Ops.ADD, F32, (n, n)))
    assert text.count("NEG") == 1
    assert "%1 = NEG" in text and "(%1, %1)" in text


def test_graph_rewrite_runs_to_a_fixed_point_bottom_up():
    a = UOp.buffer(F32, 4)
    zero = UOp.const(F32, 0.0)
    # x + 0 -> x, applied repeatedly; NEG(NEG(x)) -> x
    rules = Rules(
        [
            (Ops.ADD, lambda ctx, n: n.src[0] if n.src[1] is zero else None),
            (Ops.NEG, lambda ctx, n: n.src[0].src[0] if n.src[0].op is Ops.NEG else None),
        ],
        name="simplify",
    )
    x = UOp(Ops.NEG, F32, (UOp(Ops.NEG, F32, (UOp(Ops.ADD, F32, (a, zero)),)),))
    x = UOp(Ops.ADD, F32, (UOp(Ops.ADD, F32, (x, zero)), zero))
    assert graph_rewrite(x, rules) is a


def test_graph_rewrite_rewrites_the_sources_of_a_replacement():
    a = UOp.buffer(F32, 4)
    one, two = UOp.const(F32, 1.0), UOp.const(F32, 2.0)
    # CONST 1.0 -> CONST 2.0 everywhere, and SUB -> ADD(x, NEG(y)) whose NEG has a const child
    rules = Rules(
        [
            (Ops.CONST, lambda ctx, n: two if n is one else None),
            (Ops.SUB, lambda ctx, n: UOp(Ops.ADD, F32, (n.src[0], UOp(Ops.NEG, F32, (one,))))),
        ]
    )
    out = graph_rewrite(UOp(Ops.SUB, F32, (a, a)), rules)
    assert out is UOp(Ops.ADD, F32, (a, UOp(Ops.NEG, F32, (two,))))


def test_graph_rewrite_passes_ctx_and_detects_non_convergence():
    seen = []
    a = UOp.buffer(F32, 4)
    graph_rewrite(UOp(Ops.NEG, F32, (a,)), Rules([(Ops.NEG, lambda ctx, n: ctx.append(n))]), seen)
    assert seen == [UOp(Ops.NEG, F32, (a,))]
    grow = Rules([(Ops.CONST, lambda ctx, n: UOp.const(F32, n.arg + 1))], name="grow")
    with pytest.raises(RewriteError, match="grow"):
        graph_rewrite(UOp.const(F32, 0), grow, max_steps=100)


def test_deep_chain_survives_every_walk():
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        base = UOp.buffer(F32, 4)
        x = chain(DEEP, base)
        assert len(x.toposort()) == DEEP + 2
        assert len(x.key) == 20
        assert device_of(x) == "CPU"
        other = UOp.buffer(F32, 4)
        y = x.substitute({base: other})
        assert y is not x and y.toposort()[0] is other
        assert import_graph(export_graph(x)) is x
        rules = Rules([(Ops.CONST, lambda ctx, n: UOp.const(F32, 3.0) if n.arg == 1.0 else None)])
        assert graph_rewrite(x, rules).src[1].arg == 3.0
        r = render_first_line = repr(x).splitlines()[0]
        assert str(DEEP + 2) in render_first_line and r
    finally:
        sys.setrecursionlimit(limit)


def test_export_import_round_trip_renumbers_internal_slots():
    g = small_graph(internal=-5)
    data = export_graph(g)
    h = import_graph(data)
    bufs = [n for n in h.toposort() if n.op is Ops.BUFFER]
    assert sorted(b.slot >= 0 for b in bufs) == [False, True]
    internal = next(b for b in bufs if b.slot < 0)
    assert internal.slot != -5 and internal.slot < 0
    # same graph up to the renumbered slot
    assert h.substitute({internal: internal.replace(arg=(-5, "CPU", 16))}) is g
    assert import_graph(data, keep_internal_slots=True) is g


def test_export_of_no_uop_and_a_node_of_an_int_op_are_type_errors():
    with pytest.raises(TypeError, match="export_graph needs a UOp, got NoneType"):
        export_graph(None)
    c = UOp.const(F32, 1.5)  # an int equal to Ops.CONST names no op, even for a built node
    with pytest.raises(TypeError, match="Ops member"):
        UOp(int(Ops.CONST), c.dtype, c.src, c.arg)
    assert UOp(Ops.CONST, c.dtype, c.src, c.arg) is c


def test_two_imports_of_the_same_bytes_never_share_an_internal_slot():
    data = export_graph(small_graph(internal=-9))
    slots = []
    for _ in range(2):
        h = import_graph(data)
        slots += [n.slot for n in h.toposort() if n.op is Ops.BUFFER and n.slot < 0]
    assert len(set(slots)) == 2
    assert fresh_internal_buffer_slot() < min(slots)


def test_import_keeps_one_internal_buffer_one_buffer():
    t = UOp(Ops.BUFFER, F32, (), (-4, "CPU", 8))
    g = UOp.sink(UOp(Ops.ADD, F32, (t, t)), UOp(Ops.NEG, F32, (t,)))
    h = import_graph(export_graph(g))
    assert len({n for n in h.toposort() if n.op is Ops.BUFFER}) == 1


def test_export_round_trips_every_arg_type():
    arg = (None, True, False, -(2**63), 2**63 - 1, 1.5, float("inf"), "naïve", b"\x00\xff",
           Ops.ADD, dtypes.bfloat16, KernelInfo("x"), ((),))
    node = UOp(Ops.NOOP, dtypes.void, (), arg)
    assert import_graph(export_graph(node)) is node


@pytest.mark.parametrize(
    "data, what",
    [
        (b"", "magic"),
        (b"NOTAGRAPH\x00\x01", "magic"),
        (b"TOLKGRAPH\x00\x02", "version"),
        (b"TOLKGRAPH\x00\x01\xff\xff\xff\xff\x0f", "exceeds"),
        (b"TOLKGRAPH\x00\x01\x00\x00", "no nodes"),
    ],
)
def test_import_rejects_malformed_headers(data, what):
    with pytest.raises(GraphFormatError, match=what):
        import_graph(data)


def test_import_rejects_truncation_and_trailing_bytes():
    data = export_graph(small_graph())
    for cut in range(len(data)):
        with pytest.raises(ValueError):
            import_graph(data[:cut])
    with pytest.raises(ValueError, match="trailing"):
        import_graph(data + b"\x00")


def test_import_rejects_a_bad_buffer_arg_and_non_bytes():
    bad = UOp(Ops.BUFFER, F32, (), ("x", "CPU", 4))
    with pytest.raises(ValueError, match="BUFFER"):
        import_graph(export_graph(bad))
    with pytest.raises(ValueError, match="bytes"):
        import_graph("text")  # type: ignore[arg-type]


def test_import_rejects_deeply_nested_args():
    arg: tuple = ()
    for _ in range(100):
        arg = (arg,)
    with pytest.raises(ValueError, match="nested"):
        import_graph(export_graph(UOp(Ops.NOOP, dtypes.void, (), arg)))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_import_of_random_bytes_raises_only_value_error(data):
    for blob in (data, b"TOLKGRAPH\x00\x01" + data):
        try:
            import_graph(blob)
        except ValueError:
            pass


_VALID = export_graph(small_graph())


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(_VALID) - 1), st.integers(0, 255)), max_size=6),
       st.integers(0, len(_VALID)))
def test_import_of_mutated_exports_raises_only_value_error(flips, cut):
    data = bytearray(_VALID)
    for pos, val in flips:
        data[pos] = val
    try:
        g = import_graph(bytes(data[:cut]) if cut < len(data) else bytes(data))
    except ValueError:
        return
    assert isinstance(g, UOp)


def test_args_that_python_calls_equal_stay_distinct_nodes():
    pairs = [(1, 1.0), (1, True), (0.0, -0.0), (int(Ops.ADD), Ops.ADD), (("k",), KernelInfo("k")),
             ((1, 2), (1.0, 2)), ((0,), (False,))]
    for x, y in pairs:
        assert UOp(Ops.NOOP, dtypes.void, (), x) is not UOp(Ops.NOOP, dtypes.void, (), y), (x, y)
    assert UOp.const(F32, float("nan")).arg != UOp.const(F32, float("nan")).arg


def test_two_nans_with_the_same_bits_are_one_node_and_one_program():
    import numpy as np

    from tolk import Tensor
    from tolk.schedule import schedule_cache_clear, schedule_cache_info

    assert UOp.const(F32, float("nan")) is UOp.const(F32, float("nan"))
    assert UOp(Ops.NOOP, dtypes.void, (), (1, float("nan"))) is \
        UOp(Ops.NOOP, dtypes.void, (), (1, float("nan")))
    x = Tensor(np.ones(4, dtype=np.float32)).realize()
    schedule_cache_clear()
    for _ in range(3):
        assert np.isnan((x + float("nan")).numpy()).all()
    assert schedule_cache_info().hits == 2


# --- scratch passes ---------------------------------------------------------------------------


def test_a_scratch_pass_interrupted_once_runs_again_and_returns_its_own_result():
    from tolk.uop.ops import _scratch_passes, scratch_pass

    runs: list[object] = []

    def outer(tok):
        runs.append(tok)
        if len(runs) == 1:
            scratch_pass(lambda t: None)  # a pass inside: the outer's scratch is not its own
        return len(runs)

    before = _scratch_passes[0]
    assert scratch_pass(outer) == 2 and runs[0] is not runs[1]
    assert _scratch_passes[0] - before == 3


def test_an_error_a_nested_scratch_pass_raises_as_its_own_goes_up_without_a_rerun():
    from tolk.uop.ops import _scratch_passes, scratch_pass

    def inner(tok):
        raise KeyError("inner's own")

    def outer(tok):
        return scratch_pass(inner)

    before = _scratch_passes[0]
    with pytest.raises(KeyError, match="inner's own"):
        scratch_pass(outer)
    assert _scratch_passes[0] - before == 2  # no rerun: the error is not the outer's scratch


def test_a_scratch_pass_that_always_runs_another_inside_ends():
    from tolk.uop.ops import SCRATCH_RERUNS, _scratch_passes, scratch_pass

    def outer(tok):  # another pass completes inside it on every run
        scratch_pass(lambda t: None)

    before = _scratch_passes[0]
    with pytest.raises(RuntimeError, match="outer was interrupted"):
        scratch_pass(outer)
    assert _scratch_passes[0] - before == 2 * (SCRATCH_RERUNS + 1)

    def nesting(tok):  # a pass inside every run of itself: the innermost's error goes up
        return scratch_pass(nesting)

    with pytest.raises(RecursionError):
        scratch_pass(nesting)


def test_a_node_gets_a_cache_dict_of_its_own_only_when_something_is_stored():
    import threading

    from tolk.uop.ops import node_cache

    a = UOp(Ops.CONST, dtypes.int32, (), 11_223_344)
    b = UOp(Ops.CONST, dtypes.int32, (), 11_223_345)
    assert "shape" not in a._cache and a._cache.get("shape") is None
    assert a._cache is b._cache  # one shared empty mapping, read-only
    with pytest.raises(TypeError):
        a._cache["shape"] = ()
    got: list[dict] = []
    threads = [threading.Thread(target=lambda: got.append(node_cache(a))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(d is got[0] for d in got) and got[0] is a._cache and type(got[0]) is dict
    got[0]["x"] = 1
    assert node_cache(a)["x"] == 1 and "x" not in b._cache
    assert shape_of(b) == () and b._cache["shape"] == ()  # inference stores through it


def test_int_args_past_int64_round_trip_and_are_keyed_apart():
    wide = [2**63, 2**64 - 1, -(2**63) - 1, -(2**64) + 1]
    nodes = [UOp(Ops.CONST, dtypes.uint64, (), v) for v in wide]
    keys = {n.key for n in nodes} | {UOp(Ops.CONST, dtypes.uint64, (), 2**63 - 1).key}
    assert len(keys) == 5
    for n, v in zip(nodes, wide):
        back = import_graph(export_graph(n))
        assert back is n and back.arg == v
    with pytest.raises(ValueError, match="beyond 64 bits"):
        UOp(Ops.CONST, dtypes.uint64, (), 2**64).key
    # the wide form is only for ints int64 cannot hold: anything else is not canonical
    data = export_graph(UOp(Ops.CONST, dtypes.uint64, (), 2**63))
    at = data.index(b"I\x00")
    narrow = data[:at] + b"I\x00\x05" + data[at + 2 + 10:]
    with pytest.raises(GraphFormatError, match="not canonical"):
        import_graph(narrow)


def test_an_arg_nested_past_the_export_bound_is_refused_when_the_node_is_built():
    from tolk.uop.ops import MAX_ARG_DEPTH
    from tolk.uop.serial import export_graph, import_graph

    def nested(depth):
        a = 1
        for _ in range(depth):
            a = (a, 2)
        return a

    u = UOp(Ops.NOOP, dtypes.void, (), nested(MAX_ARG_DEPTH))
    assert import_graph(export_graph(u)) is u
    for depth in (MAX_ARG_DEPTH + 1, 5000):  # 5000: a RecursionError inside the key before
        with pytest.raises(ValueError, match="nested deeper than"):
            UOp(Ops.NOOP, dtypes.void, (), nested(depth))


def test_claiming_an_entry_never_overwrites_a_live_one_another_thread_put_there():
    import weakref

    from tolk.uop.ops import claim_entry

    class Obj:
        pass

    for switch_at in (1, 2, 3):  # the read of the dead entry after which another thread acts
        table: dict = {}
        theirs, inserted = Obj(), []

        class Dead(weakref.ref):  # a dead entry; reading it lets "another thread" run once:
            reads = 0  # its callback removes the entry and it interns its own live object

            def __call__(self):
                Dead.reads += 1
                if Dead.reads == switch_at and table.get("k") is self:
                    del table["k"]
                    table["k"] = weakref.ref(theirs)
                    inserted.append(True)
                return None

        gone = Obj()
        dead = Dead(gone)
        del gone
        table["k"] = dead
        mine = Obj()
        got = claim_entry(table, "k", weakref.ref(mine), dead)
        assert table["k"]() is got  # one live object per key, the one handed out
        if inserted:
            assert got is theirs  # theirs is alive and stays interned
