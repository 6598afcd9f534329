"""Advanced indexing (tolk.indexing): integer arrays and boolean masks, read and written,
checked against numpy on random tensors and random index tuples."""

import os

import numpy as np
import pytest

import tolk.schedule as sched
from tolk import Tensor, jit
from tolk.errors import DeviceError, JitError, ShapeError

CASES = 1500 if os.environ.get("TOLK_FUZZ", "") == "long" else 150


def _random_index(rng: np.random.Generator, shape: tuple) -> tuple:
    """A random numpy index for `shape` with at least one array (or mask) in it."""
    parts, axis = [], 0
    ellipsis = False
    while axis < len(shape):
        r = rng.random()
        n = shape[axis]
        if r < 0.1:
            parts.append(None)
            continue
        if r < 0.18 and not ellipsis:
            ellipsis = True
            parts.append(Ellipsis)
            axis = len(shape) - int(rng.integers(0, len(shape) - axis + 1))
            continue
        if r < 0.35 and n:
            parts.append(int(rng.integers(-n, n)))
        elif r < 0.55:
            a, b = sorted(int(v) for v in rng.integers(-n - 1, n + 2, 2))
            parts.append(slice(a, b, int(rng.choice([1, 2, -1, -2]))))
        elif r < 0.7 and axis + 1 <= len(shape):
            k = int(rng.integers(1, min(2, len(shape) - axis) + 1))
            parts.append(rng.random(shape[axis: axis + k]) < 0.5)
            axis += k
            continue
        else:
            parts.append(rng.integers(-n, n, size=tuple(rng.integers(0, 3, rng.integers(0, 3))))
                         if n else np.zeros((0,), np.int64))
        axis += 1
    if rng.random() < 0.3 and parts:  # drop trailing axes: they are full slices then
        parts = parts[: int(rng.integers(1, len(parts) + 1))]
    if not any(isinstance(p, np.ndarray) for p in parts):
        parts.insert(0, np.array([0, -1]) if shape and shape[0] else np.zeros((0,), np.int64))
        if all(p is not Ellipsis for p in parts) and len(parts) > len(shape):
            parts.pop()  # (an index too long stays possible: a mask covers several axes)
    return tuple(parts)


def _as(kind: str, parts: tuple) -> tuple:
    """The index with its arrays as numpy arrays, lists or Tensors."""
    out = []
    for p in parts:
        if isinstance(p, np.ndarray) and p.ndim and p.size:  # (an empty list has no dtype)
            p = p.tolist() if kind == "list" else Tensor(p) if kind == "tensor" else p
        out.append(p)
    return tuple(out)


def _numpy_or_error(a: np.ndarray, parts: tuple):
    try:
        return a[parts]
    except IndexError:
        return IndexError


@pytest.mark.parametrize("kind", ["numpy", "list", "tensor"])
def test_getitem_with_arrays_and_masks_matches_numpy(kind):
    rng = np.random.default_rng({"numpy": 1, "list": 2, "tensor": 3}[kind])
    checked = 0
    for _ in range(CASES):
        shape = tuple(int(n) for n in rng.integers(0, 4, rng.integers(1, 4)))
        a = rng.standard_normal(shape).astype(np.float32)
        x = Tensor(a)
        if rng.random() < 0.3 and a.ndim > 1:  # a non-contiguous tensor
            a, x = a.T, x.T
        parts = _random_index(rng, a.shape)
        want = _numpy_or_error(a, parts)
        if want is IndexError:
            if kind != "tensor":  # host indices are checked at once; tensor ones at run time
                with pytest.raises(IndexError):
                    x[_as(kind, parts)]
            continue
        got = x[_as(kind, parts)].numpy()
        assert got.shape == want.shape, (shape, parts)
        np.testing.assert_array_equal(got, want)
        checked += 1
    assert checked > CASES // 3


@pytest.mark.parametrize("kind", ["numpy", "tensor"])
def test_setitem_with_arrays_and_masks_matches_numpy(kind):
    rng = np.random.default_rng({"numpy": 4, "tensor": 5}[kind])
    checked = 0
    for _ in range(CASES):
        shape = tuple(int(n) for n in rng.integers(1, 4, rng.integers(1, 4)))
        base = rng.standard_normal(shape).astype(np.float32)
        parts = _random_index(rng, shape)
        if _numpy_or_error(base, parts) is IndexError:
            continue
        sel = base[parts].shape
        value = rng.standard_normal(sel[int(rng.integers(0, len(sel) + 1)):]).astype(np.float32)
        want = base.copy()
        want[parts] = value
        x = Tensor(base.copy())
        row = x[0]  # a view made before: it sees the write
        x[_as(kind, parts)] = Tensor(value) if kind == "tensor" else value
        np.testing.assert_array_equal(x.numpy(), want, err_msg=str(parts))
        np.testing.assert_array_equal(row.numpy(), want[0])
        checked += 1
    assert checked > CASES // 3


def test_repeated_places_take_numpys_choice():
    a = np.zeros(4, np.float32)
    idx = np.array([1, 3, 1, 1])
    vals = np.array([10, 20, 30, 40], np.float32)
    want = a.copy()
    want[idx] = vals
    x = Tensor(a)
    x[Tensor(idx)] = Tensor(vals)
    np.testing.assert_array_equal(x.numpy(), want)


def test_the_adjacency_rule_places_the_broadcast_axes_as_numpy_does():
    a = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    x = Tensor(a)
    for idx in [(slice(None), [0, 1], [1, 2]), ([0, 1], slice(None), [1, 2]),
                (0, slice(None), [0, 1]), (slice(None), 0, slice(None), [0, 1]),
                ([0, 1], None, [1, 2]), ([0, 1], Ellipsis, [1, 2]),
                (slice(None), [[0], [2]], [[1, 2, 3]]),
                (slice(None), slice(None), [0], Ellipsis, [1])]:  # an empty ellipsis parts too
        got = x[idx]
        assert got.shape == a[idx].shape, idx
        np.testing.assert_array_equal(got.numpy(), a[idx])


def test_results_are_new_tensors_not_views():
    x = Tensor(np.arange(6, dtype=np.float32))
    y = x[[0, 1]]
    y.realize()
    x[0] = 100.0
    assert y.tolist() == [0.0, 1.0]


def test_host_index_errors_are_numpys_and_immediate():
    x = Tensor.zeros(3, 4)
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        x[[0, 3]]
    with pytest.raises(IndexError, match="index -5 is out of bounds for axis 1 with size 4"):
        x[:, [-5]]
    with pytest.raises(IndexError, match="broadcast together with shapes"):
        x[[0, 1], [0, 1, 2]]
    with pytest.raises(IndexError, match="integer \\(or boolean\\) type"):
        x[np.array([0.5])]
    with pytest.raises(IndexError, match="integer \\(or boolean\\) type"):
        x[Tensor([0.5])]
    with pytest.raises(IndexError, match="boolean index did not match.*axis 0.*3.*4"):
        x[np.ones(4, bool)]
    with pytest.raises(IndexError, match="too many indices"):
        x[np.ones((3, 4), bool), 0]
    with pytest.raises(IndexError, match="rectangular"):
        x[[[0, 1], [2]]]
    with pytest.raises(ValueError, match="rectangular"):  # numpy's error class too
        x[[[0, 1], [2]]]
    with pytest.raises(IndexError, match="boolean scalar"):
        x[np.array(True)]
    with pytest.raises(IndexError, match="axis 0 of size 0"):
        Tensor.zeros(0, 2)[Tensor([0])]


def test_tensor_indices_are_checked_when_the_kernel_runs():
    x = Tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    y = x[Tensor([0, 7])]  # lazy: no error yet
    with pytest.raises(IndexError, match="out of bounds"):
        y.numpy()
    z = x[Tensor([0, -1]), Tensor([1, 9])]
    with pytest.raises(IndexError, match="index 9 is out of bounds.*size 4"):
        z.numpy()
    np.testing.assert_array_equal(x[Tensor([-1, 0]), Tensor([-1, 1])].numpy(), [11.0, 1.0])
    assert x.numpy()[2, 3] == 11.0  # x is still fine


def test_a_bad_setitem_leaves_the_tensor_unchanged():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = Tensor(a.copy())
    with pytest.raises(IndexError):
        x[[0, 5]] = 1.0
    with pytest.raises(ShapeError, match="value of shape \\(3,\\).*result of shape \\(2, 4\\)"):
        x[[0, 1]] = np.ones(3, np.float32)
    with pytest.raises(ShapeError):
        x[a > 5] = np.ones(2, np.float32)  # 6 elements selected
    with pytest.raises(IndexError):
        x[Tensor([0, 9])] = 1.0
    with pytest.raises(DeviceError, match="CPU:1"):
        x[[0]] = Tensor(np.ones(4, np.float32), device="CPU:1")
    np.testing.assert_array_equal(x.numpy(), a)


def test_a_masked_write_of_a_scalar_is_lazy():
    a = np.array([[-1.0, 2.0], [3.0, -4.0]], np.float32)
    x = Tensor(a.copy())
    before = sched.create_schedule_calls[0]
    x[x < 0] = 0.0  # a select: nothing realized for the mask
    x[np.array([True, False])] = Tensor([7.0, 8.0])  # a row value, broadcast over the rows
    assert sched.create_schedule_calls[0] == before
    want = a.copy()
    want[want < 0] = 0.0
    want[np.array([True, False])] = [7.0, 8.0]
    np.testing.assert_array_equal(x.numpy(), want)


def test_setitem_casts_values_as_numpy_does():
    a = np.arange(6, dtype=np.int32)
    x = Tensor(a.copy())
    x[x > 2] = 2.7
    x[[0]] = np.array([-1.9])
    a[a > 2] = 2.7
    a[[0]] = np.array([-1.9])
    np.testing.assert_array_equal(x.numpy(), a)
    assert x.dtype.name == "int32"


def test_a_mask_inside_jit_is_refused_on_capture():
    @jit
    def f(x):
        return x[x > 0] * 2

    a = Tensor(np.array([1.0, -1.0, 2.0], np.float32))
    np.testing.assert_array_equal(f(a).numpy(), [2.0, 4.0])  # the first call runs plainly
    with pytest.raises(JitError):
        f(a)


def test_integer_tensor_indices_replay_under_jit():
    @jit
    def f(x, i):
        return x[i] + 1

    x = Tensor(np.arange(5, dtype=np.float32))
    for idx in ([0, 4], [1, 2], [-1, 3]):
        np.testing.assert_array_equal(f(x, Tensor(idx)).numpy(),
                                      np.arange(5, dtype=np.float32)[idx] + 1)


def test_review_cases_match_numpy():
    from tolk import Variable

    long = np.arange(300.0, dtype=np.float32)
    for dt in (np.int8, np.uint8, np.int16, np.uint16, np.uint64):
        i = np.array([0, 7], dt)
        np.testing.assert_array_equal(Tensor(long)[i].numpy(), long[i])
        x = Tensor(long.copy())
        x[Tensor(i)] = -1.0
        want = long.copy()
        want[i] = -1.0
        np.testing.assert_array_equal(x.numpy(), want)
    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    assert Tensor(a)[np.array([], np.int64), np.array([5])].shape == \
        a[np.array([], np.int64), np.array([5])].shape  # no index read: no error
    np.testing.assert_array_equal(Tensor(a)[range(1, 2)].numpy(), a[range(1, 2)])
    with pytest.raises(IndexError, match="out of bounds for axis 1 with size 3"):
        Tensor(a)[[0], 2**70]
    with pytest.raises(IndexError, match="integer \\(or boolean\\) type"):
        Tensor(a)[np.array([], np.float32)]
    n = Variable("n", 1, 8)
    i = Tensor([1, 0, 1, 0, 1, 0, 1, 0])[:n.bind(3)]  # an index of symbolic length
    np.testing.assert_array_equal(Tensor(a)[i].numpy(), a[[1, 0, 1]])
    with pytest.raises(IndexError, match="symbolic"):
        Tensor(a)[i, i]


def test_numpy_scalar_values_wrap_as_numpys_setitem():
    for idx in ([1, 2], 1, slice(0, 2)):
        x = Tensor(np.zeros(4, np.uint8))
        a = np.zeros(4, np.uint8)
        x[idx] = np.int64(300)
        a[idx] = np.int64(300)
        x[3] = np.float32(-3.2)
        a[3] = np.float32(-3.2)
        np.testing.assert_array_equal(x.numpy(), a)


def test_data_dependent_indexing_inside_jit_says_what_reads_the_data():
    y = Tensor(np.arange(4, dtype=np.float32))

    @jit
    def masked(m):
        return y[m].sum()

    @jit
    def scatter(i):
        z = Tensor(np.zeros(4, np.float32))
        z[i] = 1.0
        return z

    for fn, arg, what in ((masked, Tensor(np.array([True, False, True, True])), "boolean mask"),
                          (scatter, Tensor([1, 2]), "integer tensor indices")):
        fn(arg).numpy()
        with pytest.raises(JitError, match=what):
            fn(arg)


# -- index_add: numpy's add.at on a copy -------------------------------------------------------


@pytest.mark.parametrize("dt", [np.float32, np.float16, np.int8, np.int64, np.bool_])
def test_index_add_matches_numpys_add_at(dt):
    rng = np.random.default_rng(7)
    for _ in range(40):
        shape = tuple(int(n) for n in rng.integers(1, 4, rng.integers(1, 4)))
        d = int(rng.integers(0, len(shape)))
        m = int(rng.integers(0, 6))
        idx = rng.integers(-shape[d], shape[d], m)
        base = (rng.standard_normal(shape) * 50).astype(dt)
        src_shape = shape[:d] + (m,) + shape[d + 1:]
        src = (rng.standard_normal(src_shape) * 50).astype(dt)
        want = base.copy()
        np.add.at(want, (slice(None),) * d + (idx,), src)
        x, s = Tensor(base), Tensor(src)
        if rng.random() < 0.3 and len(shape) > 1:  # non-contiguous operands
            x, s = Tensor(base.T.copy()).T, Tensor(src.T.copy()).T
        got = x.index_add(d, Tensor(idx), s)
        assert got.dtype is x.dtype
        np.testing.assert_array_equal(got.numpy(), want)
        np.testing.assert_array_equal((x.index_add(d, idx.tolist(), s) * 1).numpy(),
                                      want * np.asarray(1, dt))  # fused, host index


def test_index_add_accumulates_an_embedding_gradient_in_place():
    grad = Tensor(np.zeros((6, 3), np.float32))
    tokens = Tensor(np.array([[1, 4, 1], [0, 1, 5]]))
    upstream = Tensor(np.arange(18, dtype=np.float32).reshape(2, 3, 3))
    grad.assign(grad.index_add(0, tokens.reshape(-1), upstream.reshape(-1, 3)))
    want = np.zeros((6, 3), np.float32)
    np.add.at(want, np.array([1, 4, 1, 0, 1, 5]), np.arange(18, dtype=np.float32).reshape(6, 3))
    np.testing.assert_array_equal(grad.numpy(), want)


def test_index_add_takes_alpha_scalars_and_broadcast_sources():
    a = np.zeros((3, 4), np.float32)
    got = Tensor(a).index_add(1, [0, 0, 3], 2.0, alpha=3)
    want = a.copy()
    np.add.at(want, (slice(None), [0, 0, 3]), 6.0)
    np.testing.assert_array_equal(got.numpy(), want)


def test_index_add_errors_name_what_is_wrong():
    x = Tensor(np.zeros((3, 2), np.float32))
    with pytest.raises(IndexError, match="out of bounds"):
        x.index_add(0, Tensor([0, 3]), Tensor(np.ones((2, 2), np.float32))).numpy()
    with pytest.raises(ShapeError, match="does not broadcast"):
        x.index_add(0, [0], Tensor(np.ones((2, 2), np.float32)))
    with pytest.raises(TypeError, match="1-d integer index"):
        x.index_add(0, Tensor([[0]]), Tensor(np.ones((1, 2), np.float32)))
    with pytest.raises(TypeError, match="another kind"):
        Tensor(np.zeros(3, np.int32)).index_add(0, [0], Tensor([1.5]))
    with pytest.raises(IndexError, match="integer type"):
        x.index_add(0, [0.5], Tensor(np.ones((1, 2), np.float32)))
    assert x.numpy().tolist() == [[0.0, 0.0]] * 3


def test_index_add_replays_under_jit_with_new_indices():
    @jit
    def step(g, i, v):
        return g.index_add(0, i, v)

    g = Tensor(np.zeros((4, 2), np.float32))
    for idx in ([0, 0], [3, 1], [2, 2]):
        v = np.ones((2, 2), np.float32) * (idx[0] + 1)
        want = np.zeros((4, 2), np.float32)
        np.add.at(want, idx, v)
        np.testing.assert_array_equal(step(g, Tensor(idx), Tensor(v)).numpy(), want)


def test_index_add_refuses_casts_of_another_kind_as_pytorch():
    x = Tensor(np.zeros(2, np.int32))
    with pytest.raises(TypeError, match="a float into ints"):
        x.index_add(0, [0], 2.5)
    with pytest.raises(TypeError, match="integer alpha"):
        x.index_add(0, [0], Tensor(np.ones(1, np.int32)), alpha=0.5)
    with pytest.raises(TypeError, match="alpha must be a number"):
        Tensor(np.zeros(2, np.float32)).index_add(0, [0], 1.0, alpha=Tensor(2.0))
    with pytest.raises(ShapeError, match="0-d"):
        Tensor(1.0).index_add(0, [0], 2.0)
    assert x.index_add(0, [0, 0], 3, alpha=2).numpy().tolist() == [12, 0]


def test_writes_of_lists_and_numpy_scalars_cast_as_numpy():
    x = Tensor(np.zeros(2, np.uint64))
    x[[0, 1]] = [2**64 - 1, 0]  # a list: its numbers as they are (no wrap through int64)
    assert x.numpy().tolist() == [2**64 - 1, 0]
    with pytest.raises(ValueError, match="int8"):
        Tensor(np.zeros(2, np.int8))[[0]] = [300]
    z = Tensor(np.zeros(2, np.int32))
    for bad in (np.float64("nan"), np.int64(2**40)):  # numpy raises for these (a signed int)
        with pytest.raises(ValueError):
            z[0] = bad
    assert z.numpy().tolist() == [0, 0]
    u = Tensor(np.zeros(2, np.uint8))
    u[0] = np.int64(300)  # numpy wraps into an unsigned int
    assert u.numpy().tolist() == [44, 0]


def test_index_add_adds_in_the_promoted_dtype_and_casts_back_each_time():
    for base, vals, idx in ((np.array([-60000.0], np.float16), np.array([70000], np.int32), [0]),
                            (np.array([1.5], np.float64), np.array([3], np.int32), [0]),
                            (np.zeros(2, np.float16), np.array([70000, -60000], np.int32),
                             [0, 0]),
                            (np.array([2.0**24], np.float32), np.array([1, 1], np.int32),
                             [0, 0]),
                            (np.zeros(2, np.int8), np.uint8(250), [0])):
        want = base.copy()
        with np.errstate(over="ignore"):
            np.add.at(want, idx, vals)
        src = vals if isinstance(vals, np.generic) else Tensor(vals)
        got = Tensor(base).index_add(0, idx, src)
        assert got.dtype.np == base.dtype and got.numpy().tolist() == want.tolist()
    got = Tensor(np.zeros(1, np.float64)).index_add(0, [0], Tensor(np.array([1], np.int32)),
                                                    alpha=0.1)
    assert got.item() == 0.1  # alpha times the source in float64, not float32


def test_index_add_takes_a_python_int_into_unsigned_ints():
    got = Tensor(np.zeros(3, np.uint8)).index_add(0, [1, 1], 200)
    want = np.zeros(3, np.uint8)
    np.add.at(want, [1, 1], 200)
    assert got.numpy().tolist() == want.tolist()
    with pytest.raises(TypeError, match="a number into bools"):
        Tensor(np.zeros(2, bool)).index_add(0, [0], 1)


def test_a_0d_integer_array_or_tensor_index_reads_a_copy_and_writes_the_place_as_numpy():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    for zero_d in (np.array(1), Tensor(np.array(1, np.int32))):
        x, n = Tensor(a.copy()), a.copy()
        y, yn = x[zero_d], n[np.array(1)]
        r, rn = x[np.array(0), ::-1], n[np.array(0), ::-1]
        x[1, 0] = 100.0
        n[1, 0] = 100.0
        x[0, 2] = -1.0
        n[0, 2] = -1.0
        assert y.numpy().tolist() == yn.tolist() == [3, 4, 5]  # not views of x
        assert r.numpy().tolist() == rn.tolist() == [2, 1, 0]
        x[zero_d] = 7.0  # a write goes to the place, as numpy's
        n[np.array(1)] = 7.0
        assert x.numpy().tolist() == n.tolist()
    x = Tensor(a.copy())
    x[np.array(0)][0] = -7.0  # writes into the copy only
    assert x.numpy().tolist() == a.tolist()


def test_an_empty_boolean_mask_selects_nothing_whatever_axis_it_meets_as_numpy():
    a = np.arange(12).reshape(3, 4)
    x = Tensor(a)
    for mask in (np.zeros(0, bool), np.zeros((0, 4), bool), np.zeros((3, 0), bool),
                 np.zeros((0, 0), bool)):
        assert x[mask].shape == a[mask].shape
        assert x[Tensor(mask)].shape == a[mask].shape
    assert x[:, np.zeros(0, bool)].shape == a[:, np.zeros(0, bool)].shape == (3, 0)
    x[np.zeros(0, bool)] = 5
    x[Tensor(np.zeros((0, 4), bool))] = 5
    assert x.numpy().tolist() == a.tolist()
    with pytest.raises(IndexError, match="boolean index did not match"):
        x[np.zeros(2, bool)]
    y = Tensor(np.zeros((2, 3, 4)))
    for shape in ((5, 0), (0, 5), (1, 0), (0, 7, 0)):  # only a size-0 mask axis meets any axis
        with pytest.raises(IndexError, match="boolean index did not match"):
            y[np.zeros(shape, bool)]
        with pytest.raises(IndexError, match="boolean index did not match"):
            y[np.zeros(shape, bool)] = 5


def test_a_gather_from_a_view_reads_the_rows_it_names_in_one_kernel():
    rng = np.random.default_rng(3)
    a = rng.random((6, 5)).astype(np.float32)
    x = Tensor(a).realize()
    idx = np.array([4, 0, -1, 2, 2], np.int64)
    views = [(lambda t: t[1:], lambda n: n[1:]), (lambda t: t.T, lambda n: n.T),
             (lambda t: t[::-2], lambda n: n[::-2]), (lambda t: t[:, ::2].T, lambda n: n[:, ::2].T),
             (lambda t: t.reshape(5, 6)[::-1], lambda n: n.reshape(5, 6)[::-1]),
             (lambda t: t[2:3].expand(5, 5), lambda n: np.broadcast_to(n[2:3], (5, 5)))]
    for view, ref in views:
        want = ref(a)
        i = idx[idx < want.shape[0]]
        got = view(x)[Tensor(i)]
        assert len(got.schedule_linear().src) == 1  # the view is no buffer of its own
        assert np.array_equal(got.numpy(), want[i])
        assert np.array_equal(view(x)[:, Tensor(np.array([1, 0]))].numpy(), want[:, [1, 0]])
    with pytest.raises(IndexError, match="out of bounds"):
        x.T[Tensor([9])].numpy()
    many = rng.integers(-5, 5, 40)  # more indices than rows: taken from a contiguous copy
    assert np.array_equal(x.T[Tensor(many)].numpy(), a.T[many])
    assert np.array_equal(x[::-1][:, Tensor(many)].numpy(), a[::-1][:, many])
    y = Tensor(a.copy())
    y[0] = y.T[Tensor([1])][0, :5] + y[:, 0].reshape(1, 6)[0, :5]  # a gather of a view of y
    n = a.copy()
    n[0] = n.T[[1]][0, :5] + n[:, 0][:5]
    assert np.array_equal(y.numpy(), n)


def test_a_mask_over_every_axis_takes_a_value_of_at_most_one_axis_as_numpy():
    a = np.arange(6.0).reshape(2, 3)
    masks = (a > 2, [[True, False, True], [False, False, True]])
    for mask in masks:
        for value in (np.ones((1, 1)), np.ones((1, 3)), [[7.0]], Tensor(np.ones((1, 1)))):
            x = Tensor(a.copy())
            with pytest.raises(TypeError, match="0 or 1-dimensional"):
                np.array(a)[mask] = value if not isinstance(value, Tensor) else value.numpy()
            with pytest.raises(TypeError, match="0 or 1 dimensions"):
                x[mask] = value
            with pytest.raises(TypeError, match="0 or 1 dimensions"):
                x[Tensor(np.asarray(mask))] = value
            assert x.numpy().tolist() == a.tolist()  # refused before anything was written
        for value in (7.0, np.ones(1), np.arange(3.0)):  # 0-d, 1 broadcast, one per element
            n, x = a.copy(), Tensor(a.copy())
            n[mask] = value
            x[mask] = value
            assert x.numpy().tolist() == n.tolist()
    n, x = a.copy(), Tensor(a.copy())  # a mask over the leading axis: numpy broadcasts
    n[np.array([True, False])] = np.ones((1, 1, 3))
    x[np.array([True, False])] = np.ones((1, 1, 3))
    assert x.numpy().tolist() == n.tolist()


def test_an_index_out_of_bounds_names_the_users_axis_and_operation():
    z = Tensor(np.zeros((3, 4), np.float32))
    ones = Tensor(np.ones((3, 1), np.float32))
    for make, msg in (
            (lambda: z[:, Tensor([5])], "^index 5 is out of bounds for axis 1 with size 4\n"),
            (lambda: z[Tensor([1]), Tensor([-5])], "^index -5 is out of bounds for axis 1 "),
            (lambda: z[Tensor([7]), Tensor([1])], "^index 7 is out of bounds for axis 0 "),
            (lambda: z[:, Tensor(np.array([2**63 + 1], np.uint64))],
             f"^index {2**63 + 1} is out of bounds for axis 1 "),
            (lambda: z.take_along_axis(Tensor([[5]]), 1),
             "^take_along_axis: an index is out of bounds for axis 1 with size 4\n"),
            (lambda: z.gather(1, Tensor([[-5]])), "^gather: an index is out of bounds for axis 1 "),
            (lambda: z.scatter_add(1, Tensor([[5]]), Tensor([[1.0]])),
             "^scatter_add: an index is out of bounds for axis 1 with size 4\n"),
            (lambda: z.index_add(1, Tensor([5]), ones),
             "^index_add: index 5 is out of bounds for axis 1 with size 4\n"),
            (lambda: z.gather(Tensor([9])), "index 9 is out of bounds for axis 0 with size 3")):
        with pytest.raises(IndexError, match=msg):
            make().numpy()
    np.testing.assert_array_equal(z[:, Tensor([-1, 2])].numpy(), np.zeros((3, 2)))


def test_an_index_that_selects_nothing_is_still_a_view_of_the_tensor():
    a = np.array([1.0, -2.0, 3.0], np.float32)
    for index in (lambda x: x[x > 10], lambda x: x[Tensor(np.zeros(0, np.int64))],
                  lambda x: x[[]]):
        x = Tensor(a, requires_grad=True)
        y = index(x)
        assert y.shape == (0,) and y.dtype == x.dtype
        y.sum().backward()  # (a zero gradient, as PyTorch's; it read no tensor before)
        np.testing.assert_array_equal(x.grad.numpy(), np.zeros(3, np.float32))
    e = np.zeros((3, 0))  # (an empty broadcast reads no index, as numpy's)
    got = Tensor(e)[Tensor(np.zeros((0, 1), np.int64)), Tensor([0])]
    assert got.shape == e[np.zeros((0, 1), np.int64), np.array([0])].shape == (0, 1)
    got = Tensor(np.zeros((3, 2)))[Tensor(np.zeros((0, 1), np.int64)), Tensor([5])]
    assert got.shape == (0, 1)
