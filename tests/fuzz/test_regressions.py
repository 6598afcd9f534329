"""Bugs the program fuzzer found, pinned: a hand-minimized repro and the fuzzer's own program.

Every test here states the correct (numpy, eager) behaviour and is marked
``xfail(strict=True)`` while the bug is open: when a fix lands the test starts passing, strict
xfail turns that into a failure, and the marker comes off.

Bugs found (suspected cause in each open test's reason; fixed ones stay as plain tests):
 1. fixed: setitem/assign through a view of a lazy (unrealized) tensor was lost
 2. fixed: an assign whose whole value is another tensor's pending assign read the old value
    and dropped that assign; same cause: a realized CONTIGUOUS of a pending state
 3. fixed: realizing a pending assign reran an older store of another buffer it read
 4. fixed: a pending assign reading buffer A ran after a later realize overwrote A (WAR)
 5. fixed: realizing a pending assign while its lazy value and a lazy reader are alive: cycle
 6. fixed: an expression reading a buffer before and after a pending assign: cycle unless
    its old-value part was a live tensor listed first in the realize; also two tensors
    reading two buffers crosswise (old a with new b, new a with old b) realized together
    (now the superseded states are copied first when the kernel graph has no order)
 7. fixed: a store through a strided slice or a padded view was lost
 8. fixed: ``x.flip(0).assign(x)`` did nothing
 9. fixed: tensors with equal graphs realized together shared one buffer
10. fixed: tolk.jit replays gave zeros for an output sharing a buffer with an earlier output,
    or for an output made from host data inside the function
11. fixed: the reduction of a 0-d tensor was the tensor itself (an alias)
12. fixed: an assign through an expanded view failed late, inside the kernel (now rejected)
13. fixed: MultiTensor: max over the sharded axis with an empty shard; mean over an empty axis
14. fixed: a sum of a product whose factors are all broadcast along a reduced axis lost it
15. fixed: an assign through a reshape that merges reordered (flipped or permuted) axes failed
    at realize time with KernelCompileError (now stored element for element, like a padded view)
16. fixed: a view of a lazy tensor, realized because it read a buffer's state that another
    realize superseded, got its own buffer instead of viewing its parent's: later writes
    through the parent or the view missed the other, and a store through such a view (the
    assign target itself) was lost
17. fixed: kernelize rule 6 realized a value of variables only (no device), shared by many
    kernels: its buffer had no device and the run failed with DeviceError
18. fixed: a float value cast to int inside a kernel became 1-d when it was 0-d
    (``np.ascontiguousarray``), and a store of it through a strided view raised; a 0-d target
    written through a ufunc's ``out=`` over one-element arrays raised too
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

import tolk
from tolk import Tensor

from .programs import Program
from .test_fuzz_programs import check_jit, check_plain

DEVS = ("CPU:1", "CPU:2")


def f32(*xs):
    return np.array(xs, np.float32)


def bug(reason: str):
    return pytest.mark.xfail(strict=True, reason=f"bug: {reason}")


# 1 -------------------------------------------------------------------------------------------

LAZY_VIEW = ("assign realizes a lazy target into a fresh buffer, and views of a lazy tensor are "
             "lazy graphs, not views of its buffer (callify.assign / tensor._set): the write goes "
             "to a temporary nobody reads")


def test_setitem_into_a_computed_tensor_updates_it():
    x = Tensor(np.zeros(4, np.float32)) + 1
    x[1:3] = 5.0
    np.testing.assert_array_equal(x.numpy(), f32(1, 5, 5, 1))


def test_slice_of_a_computed_tensor_sees_a_later_assign():
    x = Tensor(np.zeros(4, np.float32)) + 1
    y = x[1:]
    x.assign(Tensor.full((4,), 5.0))
    np.testing.assert_array_equal(y.numpy(), f32(5, 5, 5))


def test_fuzz_program_setitem_into_a_computed_tensor():
    check_plain(Program(
        inputs=(((4,), "float32"), ((), "float32")), variables=(),
        steps=(("scalar", "add", 0, 1, False), ("setitem", 2, (slice(1, 3, None),), 2.0, False,
                                                 False)),
        final_order=(0, 1, 2)), 0)


# 2 -------------------------------------------------------------------------------------------

RAW_STATE = ("kernelize._Kernelizer.kernel loads `value` itself when the kernel's whole value is "
             "a buffer state (`load(n if n is value else self.state_of(n))`), i.e. the "
             "tensor-level AFTER instead of its kernel-graph state: the dependency on (and the "
             "emission of) that state's producer is lost")


def test_assign_of_a_tensor_with_a_pending_assign():
    a, b, c = Tensor(f32(1.5)), Tensor(f32(2.0)), Tensor(f32(0.0))
    b.assign(a)
    c.assign(b)
    np.testing.assert_array_equal(c.numpy(), f32(1.5))
    np.testing.assert_array_equal(b.numpy(), f32(1.5))


def test_contiguous_of_a_pending_assign_read_by_two_kernels():
    x = Tensor(f32(1, 2))
    x.assign(x * 10)
    y = x.contiguous()
    z = y + 1
    Tensor.realize(z, y)
    np.testing.assert_array_equal(y.numpy(), f32(10, 20))
    np.testing.assert_array_equal(z.numpy(), f32(11, 21))


def test_contiguous_of_an_output_realized_in_the_same_schedule():
    b = Tensor(f32(1, 2))
    b[:1] = 5.0
    c = b * 2
    d = c.contiguous()
    e = d + 1
    Tensor.realize(e, d)
    np.testing.assert_array_equal(d.numpy(), f32(10, 4))
    np.testing.assert_array_equal(e.numpy(), f32(11, 5))


def test_fuzz_program_contiguous_of_an_output_realized_in_the_same_schedule():
    check_plain(Program(
        inputs=(((), "int32"), ((2,), "float32")), variables=((-1, 2), (2, 5)),
        steps=(("setitem", 1, (Ellipsis, slice(None, -2, 1)), 0, True, False),
               ("contiguous", 0), ("binary", "mul", 2, 1), ("contiguous", 3),
               ("unary", "relu", 4), ("realize", (5, 4))),
        final_order=(0, 1, 2, 3, 4, 5)), 42)


# 3 -------------------------------------------------------------------------------------------



def test_realizing_a_pending_assign_does_not_rerun_another_buffers_store():
    a, b, c = Tensor(f32(1.5)), Tensor(f32(2.0)), Tensor(f32(0.0))
    b.assign(a)
    c.assign(b + 1)
    b.assign(-1.0)
    np.testing.assert_array_equal(b.numpy(), f32(-1))
    np.testing.assert_array_equal(c.numpy(), f32(2.5))
    np.testing.assert_array_equal(b.numpy(), f32(-1))


def test_fuzz_program_pending_assign_reads_another_pending_assign():
    check_plain(Program(
        inputs=(((), "float32"), ((), "float32"), ((1, 1), "int32")), variables=((-4, -4),),
        steps=(("assign", 1, 0, False), ("setitem", 2, Ellipsis, 1, True, False),
               ("assign_scalar", 1, -1), ("check", 1)),
        final_order=(0, 1, 2)), 568)


# 4 -------------------------------------------------------------------------------------------



def test_pending_assign_keeps_the_value_it_read_when_the_source_is_overwritten():
    a, b = Tensor(f32(1, 2)), Tensor(f32(0, 0))
    b.assign(a)
    a.assign(a * 10)
    a.realize()
    np.testing.assert_array_equal(b.numpy(), f32(1, 2))


def test_fuzz_program_pending_assign_reads_a_buffer_overwritten_later():
    check_plain(Program(
        inputs=(((), "float32"), ((4,), "float32")), variables=(),
        steps=(("view_assign", 1, None, 0, True, False), ("contiguous", 0),
               ("assign", 0, 3, True), ("realize", (0, 3))),
        final_order=(0, 1, 2, 3)), 35523)


# 5 -------------------------------------------------------------------------------------------

DUP_AFTER = ("callify._build_sink substitutes earlier outputs into later ones, also inside "
             "pending AFTERs: a reader of the pending assign then holds a second copy of that "
             "AFTER (value loaded from the output) next to the original, two kernels write the "
             "buffer and their ordering edges form a cycle")


def test_realize_pending_assign_while_its_value_and_a_reader_are_alive():
    x = Tensor(f32(1, 2, 3))
    y = x + 1
    x.assign(y)
    z = x * 2
    x.realize()
    np.testing.assert_array_equal(x.numpy(), f32(2, 3, 4))
    np.testing.assert_array_equal(z.numpy(), f32(4, 6, 8))


def test_realize_in_an_order_that_lists_the_assign_value_first():
    a = Tensor(np.array([1, -2], np.int32))
    b = Tensor(f32(0.5, -1.5))
    r = a.relu()
    e = b.abs()
    r.assign(e.cast("int32"))
    m = r * b
    Tensor.realize(r, e, m)
    np.testing.assert_array_equal(m.numpy(), f32(0, -1.5))


def test_fuzz_program_realize_lists_the_assign_value_before_a_reader():
    check_plain(Program(
        inputs=(((1, 2), "float32"), ((1, 2), "int32"), ((1, 2), "float32")), variables=(),
        steps=(("unary", "relu", 1), ("unary", "abs", 2),
               ("setitem", 3, slice(-2, None, 1), 4, True, False), ("binary", "mul", 3, 2)),
        final_order=(0, 1, 2, 3, 4, 5)), 0)


# 6 -------------------------------------------------------------------------------------------

OLD_AND_NEW = ("one kernel reads a buffer both before and after a pending assign (a WAR edge to "
               "the store and a RAW edge from it); kernelize does not split the old-value part "
               "into its own kernel, and callify only avoids it when that part is a live lazy "
               "tensor realized first")


def test_old_and_new_value_in_one_expression_after_the_old_part_is_dropped():
    b = Tensor(f32(1, 2, 3))
    y = b + 1
    b.assign(b * 0)
    z = b + y
    del y
    gc.collect()
    np.testing.assert_array_equal(z.numpy(), f32(2, 3, 4))


def test_old_and_new_value_in_one_expression_realized_before_the_old_part():
    b = Tensor(f32(1, 2))
    y = -b
    b.assign(b * 0)
    z = b + y
    Tensor.realize(z, y)
    np.testing.assert_array_equal(z.numpy(), f32(-1, -2))


def test_old_and_new_values_of_two_buffers_crosswise():
    a, b = Tensor(f32(1)), Tensor(f32(2))
    ob = b * 1
    b.assign(Tensor(f32(5)))
    x = a + b
    a.assign(Tensor(f32(7)))
    y = a + ob
    z = a * 1
    Tensor.realize(ob, z)  # x and y come along: they read a state the realize supersedes
    np.testing.assert_array_equal(x.numpy(), f32(6))
    np.testing.assert_array_equal(y.numpy(), f32(9))
    np.testing.assert_array_equal(z.numpy(), f32(7))


def test_fuzz_program_old_and_new_values_of_two_buffers_crosswise():
    check_plain(Program(
        inputs=(((1,), "float32"), ((), "float32")), variables=((0, 0), (0, 0)),
        steps=(("move", "shrink", 1, (), 0), ("unary", "relu", 2), ("assign_scalar", 1, 0),
               ("binary", "add", 0, 1), ("assign_scalar", 0, 0), ("binary", "add", 0, 3)),
        final_order=(0, 1, 2, 5, 3, 4)), 25)


def test_fuzz_program_old_and_new_value_in_one_where():
    check_plain(Program(
        inputs=(((), "float32"), ((4,), "float32"), ((4,), "int32")), variables=((2, 3), (2, 6)),
        steps=(("unary", "neg", 1), ("assign_scalar", 1, 0.5), ("binary", "min", 0, 0),
               ("where", 4, 1, 3)),
        final_order=(2, 4, 5, 1, 0, 3)), 339)


# 7 -------------------------------------------------------------------------------------------

PAD_STORE = ("Tensor._slice_step pads the extent up to a multiple of the step, and a store whose "
             "target goes through PAD writes into np.pad's copy in the CPU kernel: the write is "
             "lost silently (a store target should reject PAD, or the slice should not pad)")


@pytest.mark.parametrize("n,index", [(3, slice(None, None, 2)), (4, slice(1, None, 2)),
                                     (5, slice(None, None, 3)), (4, slice(0, None, -2))])
def test_setitem_through_a_strided_slice(n, index):
    a = np.arange(n, dtype=np.float32)
    x = Tensor(a.copy())
    x[index] = 9.0
    a[index] = 9.0
    np.testing.assert_array_equal(x.numpy(), a)


def test_assign_through_a_slice_of_a_pad_stays_in_the_pad():
    x = Tensor(f32(1, 2))
    p = x.pad(((0, 2),))  # a new tensor, as np.pad's copy (it was a view of x before)
    p[:1].assign(Tensor(f32(7)))
    np.testing.assert_array_equal(x.numpy(), f32(1, 2))
    np.testing.assert_array_equal(p.numpy(), f32(7, 2, 0, 0))


def test_fuzz_program_setitem_with_negative_step():
    check_plain(Program(
        inputs=(((), "float32"), ((), "float32"), ((2, 1, 1), "float32")),
        variables=((2, 2), (-4, -3)),
        steps=(("setitem", 2, (slice(0, None, -2), -1, 0), 1, True, False),),
        final_order=(0, 1, 2)), 259)


# 8 -------------------------------------------------------------------------------------------

FLIP_SELF = ("kernelize rule 8 realized the target's own BUFFER (the value) into a temporary; "
             "`state_of` then maps every use of that BUFFER, including the assign's target "
             "state, to the temporary, so the store goes to the temporary")


def test_assign_a_tensor_into_its_own_flipped_view():
    x = Tensor(np.array([1, 2, 3], np.int32))
    x.flip(0).assign(x)
    np.testing.assert_array_equal(x.numpy(), [3, 2, 1])


def test_fuzz_program_assign_into_own_flip():
    check_plain(Program(
        inputs=(((), "float32"), ((), "float32"), ((2,), "int32")), variables=((-4, 3),),
        steps=(("move", "flip", 2, (0,), 0), ("assign", 3, 2, False)),
        final_order=(0, 1, 2, 3)), 1682)


# 9 -------------------------------------------------------------------------------------------

SHARED = ("callify._build_sink gives outputs with the same graph (hash-consed UOp) one buffer, "
          "but they are different tensors: an assign into one changes the other")


def test_equal_graphs_realized_together_stay_independent():
    a = Tensor(f32(1, 2))
    x, y = a + 1, a + 1
    Tensor.realize(x, y)
    x.assign(Tensor(f32(5, 5)))
    np.testing.assert_array_equal(y.numpy(), f32(2, 3))


def test_fuzz_program_assign_into_one_of_two_equal_graphs():
    check_plain(Program(
        inputs=(((), "float32"), ((), "float32"), ((), "int32")), variables=((-3, 3), (2, 5)),
        steps=(("assign_scalar", 0, 0.5), ("binary", "add", 0, 0), ("binary", "add", 0, 0),
               ("assign", 4, 0, False)),
        final_order=(0, 1, 2, 3, 4)), 14)


# 10 ------------------------------------------------------------------------------------------

JIT_OUT = ("engine/jit.py _replay allocates a fresh zeroed buffer for every out_buf that is not "
           "an input, and only the first output with a given buffer is mapped to it in _compile "
           "(`where.setdefault`); a buffer no captured kernel writes (host data) stays zero")


def test_jit_outputs_that_are_views_of_one_buffer():
    f = tolk.jit(lambda x: ((y := (x + 1).realize())[0:2], y[2:4]))
    for i in range(4):
        a = np.arange(4, dtype=np.float32) * (i + 1)
        _, hi = f(Tensor(a))
        np.testing.assert_array_equal(hi.numpy(), a[2:] + 1)


def test_jit_output_made_from_host_data():
    f = tolk.jit(lambda x: (x + 1, Tensor(f32(7, 8))))
    for _ in range(4):
        _, c = f(Tensor(f32(1, 2)))
        np.testing.assert_array_equal(c.numpy(), f32(7, 8))


def test_fuzz_program_jit_two_equal_outputs():
    check_jit(Program(
        inputs=(((), "float32"), ((), "float32"), ((), "float32")), variables=((-1, 5),),
        steps=(("unary", "relu", 0), ("unary", "relu", 0)),
        final_order=(0, 1, 2, 3, 4)), 5)


# 11 ------------------------------------------------------------------------------------------

ALIAS = ("Tensor._reduce returns `self` when there are no axes to reduce (0-d input), and "
         "sum's cast to the same dtype is `self` too: the result aliases the input")


def test_reduction_of_a_0d_tensor_is_a_new_tensor():
    x = Tensor(np.array(2.0, np.float32))
    s = x.sum()
    x.assign(Tensor(np.array(5.0, np.float32)))
    assert s.item() == 2.0


def test_fuzz_program_reduce_of_0d_then_assign():
    check_plain(Program(
        inputs=(((), "float32"), ((2,), "float32"), ((2, 1), "float32")), variables=(),
        steps=(("reduce", "min", 0, None, True), ("assign", 0, 3, True)),
        final_order=(0, 1, 2, 3)), 7)


# 12 ------------------------------------------------------------------------------------------

EXPANDED = ("assign accepts a target view through EXPAND; the CPU kernel then stores into "
            "np.broadcast_to's read-only view and numpy raises mid-schedule (kernels before it "
            "already ran); assign should reject such a target up front")


def test_assign_through_an_expanded_view_is_rejected_at_assign_time():
    x = Tensor(f32(1))
    with pytest.raises(ValueError, match="expand"):
        x.expand(2)[1:] = Tensor(f32(5))


# 13 ------------------------------------------------------------------------------------------


def test_sharded_max_over_an_axis_with_an_empty_shard():
    a = np.array([[1.0, 5.0, 2.0]], np.float32)  # one row for two devices
    m = Tensor(a).shard(DEVS, axis=0)
    np.testing.assert_array_equal(m.max(0).numpy(), a.max(0))


def test_sharded_mean_over_an_empty_axis_is_nan():
    m = Tensor(np.zeros((2, 0), np.float32)).shard(DEVS, axis=0)
    assert np.isnan(m.mean(1).numpy()).all()


# 14 ------------------------------------------------------------------------------------------

EINSUM = ("runtime/cpu.py runs REDUCE_AXIS(ADD, MUL(a, b)) as one np.einsum on the un-broadcast "
          "operands (EXPANDs stripped, broadcast axes dropped from each operand's labels); an "
          "axis every operand is broadcast along then appears in no operand, and einsum never "
          "multiplies its length in")


def test_sum_of_a_product_broadcast_along_the_summed_axis():
    x = Tensor(np.array(2.0, np.float32)).reshape(1).expand(4)
    assert (x * 3.0).sum().item() == 24.0


def test_sum_of_a_self_product_through_an_expand():
    a = Tensor(np.array(3.0, np.float32))
    assert (a * a.reshape(1, 1).expand(1, 1, 2)).sum().item() == 18.0


def test_fuzz_program_sum_of_a_broadcast_product_in_a_jit():
    check_jit(Program(
        inputs=(((), "float32"), ((), "float32"), ((), "float32")), variables=(),
        steps=(("move", "reshape", 0, (1, 1), 0), ("move", "expand", 3, (1, 1, 2), 0),
               ("binary", "mul", 0, 4), ("reduce", "sum", 5, None, False)),
        final_order=(0, 1, 2, 3, 4, 5, 6)), 0)


# seen once -----------------------------------------------------------------------------------


def test_fuzz_program_self_assign_after_a_pending_assign_seen_failing_once():
    """Failed (entry 1 got the +0.75 store applied twice) after ~1,900 programs of a long run,
    and again through all of hypothesis's shrinking in that process, but passes in a fresh
    process: some process state (a cache?) was involved. Kept as a plain test."""
    prog = Program(
        inputs=(((1, 1), "float32"), ((), "float32")), variables=((0, 0),),
        steps=(("realize", (0,)), ("assign", 1, 1, True), ("unary", "relu", 0),
               ("unary", "abs", 0), ("unary", "abs", 1), ("binary", "add", 0, 1),
               ("binary", "add", 0, 0), ("assign_scalar", 0, 0), ("assign", 1, 1, False),
               ("unary", "sqrt", 0), ("check", 0)),
        final_order=(0, 1, 2, 3, 4, 5, 6, 7))
    check_plain(prog, 0)
    check_plain(prog, 0, NO_MEMORY_PLANNER=1)
    check_plain(prog, 0, SCACHE=0)
    check_jit(prog, 0)


# 15 ------------------------------------------------------------------------------------------

REORDERED = ("a reshape that merges flipped or permuted axes is not a strided view, but assign "
             "accepts it as a store target; the CPU backend then fails to compile the store "
             "(KernelCompileError from view_reshape) when the schedule runs, after the earlier "
             "kernels ran. assign should reject it up front (numpy's reshape would copy) or "
             "the store should go through a temporary")


@pytest.mark.parametrize("view", [lambda x: x.T.reshape(6), lambda x: x.flip(1).reshape(6),
                                  lambda x: x[:, ::-1].reshape(6, 1)], ids=["T", "flip", "step"])
def test_assign_through_a_reshape_of_reordered_axes_writes_or_is_rejected_up_front(view):
    x = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    v = view(x)
    try:
        v.assign(Tensor.full(v.shape, -1.0))
    except ValueError:
        return  # rejected at assign time: fine
    np.testing.assert_array_equal(x.numpy(), np.full((2, 3), -1.0, np.float32))


def test_fuzz_program_setitem_through_a_reshape_of_a_flipped_view():
    check_plain(Program(
        inputs=(((4, 1, 3), "float32"), ((), "float32"), ((), "float32")), variables=((0, 0),),
        steps=(("view_assign", 0, (Ellipsis, slice(None, None, -1)), 0, False, False),
               ("move", "reshape", 3, (12,), 0), ("setitem", 4, (), 0, False, False)),
        final_order=(0, 1, 2, 3, 4)), 0)


# 16 ------------------------------------------------------------------------------------------

TAKEN_ALONG = ("callify.realize mapped the tensors it is asked for to their `_root` (a lazy view "
               "to the lazy tensor it views) before `_closure`, but not the lazy tensors "
               "`_closure` adds because they read a state this realize supersedes: a lazy view "
               "added there is realized as an output of its own (`_build_sink` gives it a buffer "
               "holding a copy) and loses its `_parent`, so it no longer aliases its parent's "
               "buffer; when that view is an assign's target (assign realizes it first), the store "
               "goes into the copy")


def test_view_of_a_lazy_tensor_taken_along_by_a_realize_sees_a_later_assign():
    x = Tensor(f32(1, 2))
    y = x + 1
    x.assign(Tensor(f32(0, 0)))
    v = y[0:1]
    x.realize()  # y and v read x's old state: realized along with it
    y.assign(Tensor(f32(7, 7)))
    np.testing.assert_array_equal(v.numpy(), f32(7))


def test_write_through_a_view_taken_along_by_a_realize_reaches_its_tensor():
    x = Tensor(f32(1, 2))
    y = x + 1
    x.assign(Tensor(f32(0, 0)))
    v = y[0:1]
    x.realize()
    v.assign(Tensor(f32(9)))
    np.testing.assert_array_equal(y.numpy(), f32(9, 3))


def test_setitem_into_a_tensor_reading_a_buffer_before_and_after_an_assign():
    x = Tensor(f32(1, 2))
    y = x + 1
    x.assign(Tensor(f32(0, 0)))
    z = y + x  # reads x before and after the assign: the target view z[0] is taken along
    z[0] = 5.0
    np.testing.assert_array_equal(z.numpy(), f32(5, 3))


def test_fuzz_program_assign_into_a_computed_tensor_after_its_view_was_taken_along():
    check_plain(Program(
        inputs=(((2,), "int32"), ((1,), "float32")), variables=(),
        steps=(("unary", "relu", 0), ("assign_scalar", 0, 0),
               ("move", "shrink", 2, ((0, 1),), 0), ("check", 0), ("assign_scalar", 2, 0)),
        final_order=(0, 1, 2, 3)), 0)


def test_fuzz_program_jit_view_assign_into_a_tensor_reading_old_and_new_state():
    check_jit(Program(
        inputs=(((1,), "float32"), ((), "float32")), variables=(),
        steps=(("move", "reshape", 1, (-1,), 0), ("unary", "relu", 2), ("assign_scalar", 1, 0),
               ("binary", "add", 3, 1), ("view_assign", 4, (Ellipsis, 0), 1, True, False)),
        final_order=(0, 1, 2, 3, 4, 5)), 5)


# 17 ------------------------------------------------------------------------------------------

DEVICELESS = ("kernelize rule 6 realized CAST(DEFINE_VAR), a value with no device, shared by "
              "many kernels; memory planning then made an arena on device None")


def test_fuzz_program_variable_value_shared_by_many_kernels():
    check_plain(
        Program(inputs=(((1,), 'float32'), ((1, 1, 1), 'float32'), ((1, 1), 'float32')),
        variables=((0, 0),), steps=(('realize', (0,)), ('var', 'add', 1, 0, True),
        ('scalar', 'max', 2, 0.5, False), ('view_assign', 0, (), 2, False, False),
        ('scalar', 'max', 3, 0.5, False), ('shard', 6, 0), ('move', 'permute', 2, (0, 1),
        0), ('binary', 'div', 3, 4), ('assign_scalar', 3, -3), ('setitem', 6, (), 2, True,
        True), ('reduce', 'max', 2, -2, False), ('shard', 8, 1), ('check', 3), ('binary',
        'add', 1, 4), ('var', 'add', 9, 0, True), ('unary', 'tanh', 10), ('m_binary', 'div',
        11, ('m', 11)), ('unary', 'tanh', 14), ('unary', 'relu', 1), ('binary', 'add', 10,
        17), ('unary', 'relu', 0), ('where', 3, 18, 17), ('cat', 6, 18, -1), ('cat', 19, 0,
        0), ('unary', 'abs', 16), ('unary', 'relu', 2), ('shard', 20, 0), ('unary', 'abs',
        20), ('cat', 1, 1, 0)), final_order=(4, 1, 2, 3, 0, 5, 6, 13, 26, 19, 10, 27, 20,
        21, 25, 16, 17, 14, 18, 24, 12, 22, 7, 9, 23, 8, 15, 11)), 27)


def test_a_pad_of_a_computed_tensor_keeps_its_value_after_an_assign_into_that_tensor():
    x = Tensor(f32(0.5, -1.0))
    r = x.relu()
    for p in (r.pad(((0, 0),)), r.pad(((1, 0),)), Tensor(r), Tensor.cat(r), r.repeat(1)):
        assert p is not r
    kept = [r.pad(((0, 0),)), Tensor.cat(r), r.repeat(1), Tensor(r)]
    r.assign(Tensor(f32(7, 7)))
    assert r.numpy().tolist() == [7, 7]
    for p in kept:
        np.testing.assert_array_equal(p.numpy(), f32(0.5, 0))


# 18 ------------------------------------------------------------------------------------------


def test_fuzz_program_zero_d_cast_stored_through_a_strided_view():
    check_plain(Program(
        inputs=(((1,), "float32"), ((3,), "int32"), ((), "float32")), variables=(),
        steps=(("view_assign", 1, (Ellipsis, slice(None, None, 2)), 0, False, False),
               ("unary", "relu", 0), ("unary", "relu", 0), ("unary", "relu", 0),
               ("setitem", 3, (Ellipsis, 0), 2, True, False)),
        final_order=(0, 1, 2, 3, 4, 5, 6)), 0)


def test_fuzz_program_zero_d_target_written_from_one_element_arrays():
    check_plain(Program(
        inputs=(((), "float32"), ((), "float32")), variables=(),
        steps=(("unary", "relu", 0), ("unary", "relu", 0), ("assign_scalar", 0, 0),
               ("unary", "relu", 0), ("unary", "relu", 0), ("unary", "relu", 0),
               ("unary", "relu", 0), ("cast", 0, "int32"), ("unary", "relu", 0),
               ("unary", "abs", 8), ("unary", "relu", 0), ("unary", "relu", 0),
               ("assign_scalar", 8, 0)),
        final_order=tuple(range(13))), 0)
