"""Assigns through one view of a buffer and what every other live view of it reads.

An assign rewrites the graph of the view it goes through at once and marks the buffer's other
views stale; a stale view's graph is rebuilt over the newest state when it is next read. These
tests check the values against numpy (views of one array) and that the rebuild is lazy."""
import gc
import random
import threading
import weakref

import numpy as np
import pytest

from tolk import Tensor
from tolk.errors import ShapeError
from tolk.tensor import _base_and_chain
from tolk.uop.ops import UOp

_VIEWS = [
    lambda a: a[1:],
    lambda a: a[::-1],
    lambda a: a[::2],
    lambda a: a[2],
    lambda a: a[:, 1:3],
    lambda a: a.T,
    lambda a: a.T[::-1],
    lambda a: a[1:][::-1],
    lambda a: a[0:0],
    lambda a: a[3:4, :1],
]


def _view(a, k):
    return _VIEWS[k](a)


@pytest.mark.parametrize("seed", range(8))
def test_every_live_view_reads_the_assigns_made_through_another_as_numpy(seed):
    rng = random.Random(seed)
    base = np.arange(24, dtype=np.float32).reshape(6, 4)
    x = Tensor(base.copy()).realize()
    ref = base.copy()
    kinds = [rng.randrange(len(_VIEWS)) for _ in range(12)]
    views = [(_view(x, k), _view(ref, k)) for k in kinds]
    for step in range(30):
        what = rng.random()
        if what < 0.5:  # an assign through a random view (or x) of a random value
            t, r = views[rng.randrange(len(views))] if rng.random() < 0.7 else (x, ref)
            c = float(rng.randrange(-50, 50))
            if rng.random() < 0.5:
                t.assign(t + c)
                r += np.float32(c)
            else:
                t[...] = c
                r[...] = c
        elif what < 0.55:  # a row of x written by setitem (a temporary view)
            i = rng.randrange(6)
            c = float(rng.randrange(-50, 50))
            x[i] = c
            ref[i] = c
        elif what < 0.6:  # a new view, made now (over the newest state)
            k = rng.randrange(len(_VIEWS))
            views.append((_view(x, k), _view(ref, k)))
        elif what < 0.7:
            x.realize()
        else:  # read one view (it is rebuilt over the newest state)
            t, r = views[rng.randrange(len(views))]
            assert _base_and_chain(t.uop) is _base_and_chain(x.uop)
            np.testing.assert_array_equal(t.numpy(), r, err_msg=f"step {step}")
    for t, r in views:
        np.testing.assert_array_equal(t.numpy(), r)
    np.testing.assert_array_equal(x.numpy(), ref)


def test_assigns_do_not_rebuild_the_views_nobody_reads(monkeypatch):
    x = Tensor(np.zeros(300, np.float32)).realize()
    views = [x[i:i + 1] for i in range(300)]
    calls = [0]
    substitute = UOp.substitute

    def counting(self, *args, **kwargs):
        calls[0] += 1
        return substitute(self, *args, **kwargs)

    monkeypatch.setattr(UOp, "substitute", counting)
    for i in range(40):
        x[i] = float(i + 1)
    assert calls[0] < 40 * 4  # (rebuilding every view at each assign: 12,000)
    monkeypatch.setattr(UOp, "substitute", substitute)
    want = np.zeros(300, np.float32)
    want[:40] = np.arange(1, 41)
    np.testing.assert_array_equal(np.concatenate([v.numpy() for v in views]), want)
    np.testing.assert_array_equal(x.numpy(), want)


def test_threads_reading_one_stale_view_read_the_same_values():
    x = Tensor(np.arange(64, dtype=np.float32)).realize()
    views = [x[i::8] for i in range(8)]
    x.assign(x * 2)
    x.assign(x + 1)
    want = np.arange(64, dtype=np.float32) * 2 + 1
    seen: list = []
    barrier = threading.Barrier(4)

    def read():
        barrier.wait()
        seen.append([v.numpy() for v in views])

    threads = [threading.Thread(target=read) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 4
    for got in seen:
        for i, g in enumerate(got):
            np.testing.assert_array_equal(g, want[i::8])


def test_stale_views_keep_no_state_alive_after_they_die():
    x = Tensor(np.zeros(16, np.float32)).realize()
    views = [x[i:] for i in range(16)]
    x.assign(x + 1)
    x.assign(x + 2)
    state = weakref.ref(x.uop)
    del views, x
    gc.collect()
    assert state() is None


def test_a_view_made_between_assigns_and_its_own_views_follow_later_assigns():
    x = Tensor(np.arange(12, dtype=np.float32).reshape(3, 4)).realize()
    ref = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = x[1:]
    x.assign(x * 3)
    ref *= 3
    b = x[:, ::-1]
    bb = b[::2]
    a.assign(a - 1)
    ref[1:] -= 1
    c = bb.T
    x[0] = 7.0
    ref[0] = 7
    for t, r in [(a, ref[1:]), (b, ref[:, ::-1]), (bb, ref[:, ::-1][::2]),
                 (c, ref[:, ::-1][::2].T), (x, ref)]:
        np.testing.assert_array_equal(t.numpy(), r)


def test_views_of_a_settled_state_join_those_already_over_its_buffer():
    # (a tensor over the bare buffer while an assign is pending, as tolk's internals make: the
    # realize moves the pending state's views into the buffer's set, stale ones through a link)
    x = Tensor(np.arange(8, dtype=np.float32)).realize()
    ref = np.arange(8, dtype=np.float32)
    buf = x.uop
    views = [x[i:] for i in range(8)]
    x.assign(x + 1)
    ref += 1
    bare = Tensor(buf)  # stands over the buffer itself, not the pending state
    x.realize()
    x.assign(x * 2)
    ref *= 2
    x[0] = -1.0
    ref[0] = -1
    newest = _base_and_chain(x.uop)  # (every view stands over the newest pending state)
    assert all(_base_and_chain(t.uop) is newest for t in [*views, bare])
    for i, v in enumerate(views):
        np.testing.assert_array_equal(v.numpy(), ref[i:])
    np.testing.assert_array_equal(bare.numpy(), ref)
    np.testing.assert_array_equal(x.numpy(), ref)


def test_a_settled_assign_lets_what_its_value_read_die_while_views_stay_stale():
    x = Tensor(np.zeros(8, np.float32)).realize()
    rows = [x[i:i + 1] for i in range(8)]
    dead = []
    for step in range(3):
        g = Tensor(np.full(8, step + 1.0, np.float32)).realize()
        dead.append(weakref.ref(_base_and_chain(g.uop)))
        x.assign(x - g)
        rows.append(x[step:step + 1])  # (a view read while the assign is pending)
        x.realize()
        del g
    gc.collect()
    assert all(r() is None for r in dead)  # (no stale view holds a settled value)
    np.testing.assert_array_equal(np.concatenate([r.numpy() for r in rows[:8]]),
                                  np.full(8, -6.0, np.float32))
    np.testing.assert_array_equal(np.concatenate([r.numpy() for r in rows[8:]]),
                                  np.full(3, -6.0, np.float32))


def test_an_attribute_error_inside_a_property_reaches_the_caller_as_itself():
    class Broken(Tensor):
        @property
        def shape(self):
            raise AttributeError("inner: no such field on the node")

    t = Broken(np.zeros(3, np.float32))
    with pytest.raises(AttributeError, match="inner: no such field"):
        t.shape
    with pytest.raises(AttributeError, match="no attribute 'missing'"):
        t.missing
    half_built = Tensor.__new__(Tensor)  # (its __init__ never ran: the property's own error)
    with pytest.raises(AttributeError, match="no attribute 'uop'"):
        half_built.dtype


def test_an_in_place_operation_keeps_the_tensors_shape_as_numpys():
    for shape, other in (((3,), (1, 3)), ((), (1, 1)), ((3,), (2, 3))):
        x = Tensor(np.zeros(shape, np.float32))
        with pytest.raises(ShapeError, match="must keep the tensor's shape"):
            x += Tensor(np.ones(other, np.float32))  # (numpy: non-broadcastable output)
        np.testing.assert_array_equal(x.numpy(), np.zeros(shape, np.float32))
    x = Tensor(np.zeros((2, 3), np.float32))
    x += Tensor(np.ones((1, 3), np.float32))  # (the operand broadcasts to x: fine)
    x *= Tensor(np.full((3,), 2.0, np.float32))
    np.testing.assert_array_equal(x.numpy(), np.full((2, 3), 2.0, np.float32))
