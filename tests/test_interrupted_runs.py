"""A realize stopped between two kernels (an interrupt) or by a kernel that raises: what ran is
settled, the rest stays pending, and every tensor then reads what it would have read had the
run finished. Checked on hand-made programs and on random ones, each stopped after every
kernel in turn, against the same program run to the end."""

import os
import random

import numpy as np
import pytest

import tolk.engine.realize as engine
from tolk import Tensor

PROGRAMS = 2000 if os.environ.get("TOLK_FUZZ", "") == "long" else 80


class _InterruptAfter(list):
    """Stands in for `engine.kernel_runs`: raises KeyboardInterrupt once `n` kernels ran."""

    def __init__(self, n: int):
        super().__init__([0])
        self.left = n

    def __setitem__(self, i, v):
        super().__setitem__(i, v)
        self.left -= 1
        if self.left == 0:
            raise KeyboardInterrupt


def _realize_interrupted(t: Tensor, after: int) -> None:
    """Realize `t`, interrupted (KeyboardInterrupt) once `after` kernels ran."""
    saved = engine.kernel_runs
    engine.kernel_runs = _InterruptAfter(after)
    try:
        t.realize()
    finally:
        engine.kernel_runs = saved


def _interrupted(t: Tensor, after: int) -> bool:
    """`_realize_interrupted`; whether the interrupt came (not when it runs fewer kernels)."""
    try:
        _realize_interrupted(t, after)
    except KeyboardInterrupt:
        return True
    return False


def test_an_interrupt_between_kernels_settles_what_ran_and_keeps_the_rest():
    x = Tensor(np.zeros(3, np.float32)).realize()
    x.assign(x + 1)
    x.assign(x * 10)
    assert _interrupted(x, 1)  # after the first kernel (x + 1) ran
    assert x.numpy().tolist() == [10.0, 10.0, 10.0]  # x + 1 once, then x * 10


def test_a_reader_of_a_temporary_computed_before_an_overwrite_keeps_the_old_value():
    def build():
        x = Tensor(np.array([1, 2, 3], np.float32)).realize()
        p = x * 10  # lazy: reads x before the assign (the schedule copies that value first)
        x.assign(Tensor(np.full(3, 7, np.float32)))
        q = p + x
        return x, q

    x, q = build()
    assert len(q.schedule_linear().src) == 3  # copy of old x, the assign, q
    for after in (1, 2):
        x, q = build()
        assert _interrupted(q, after)
        assert q.numpy().tolist() == [17, 27, 37]  # was 77 after the assign: the new x
        assert x.numpy().tolist() == [7, 7, 7]


def test_an_update_reading_a_reduction_of_weights_another_update_overwrote():
    def build():
        w1 = Tensor(np.arange(4.0)).realize()
        w2 = Tensor(np.arange(4.0) + 1).realize()
        g = (w1 * w2).sum()  # one temporary, read by both updates
        w1.assign(w1 - g * 0.1)
        w2.assign(w2 - g * 0.1 + w1.sum())
        return w1, w2

    w1, w2 = build()
    want = (w1.numpy().tolist(), w2.numpy().tolist())
    for after in range(1, len(build()[1].schedule_linear().src)):
        w1, w2 = build()
        assert _interrupted(w2, after)
        assert (w1.numpy().tolist(), w2.numpy().tolist()) == want, after


def test_a_pending_assign_equal_to_a_settled_one_still_runs():
    def build():
        x = Tensor(np.arange(4.0)).realize()
        x.assign(x + x * 0.5)
        t = x + x  # taken along (it reads the state the next assign overwrites)
        x.assign(x + x * 0.5)  # rebuilt over x once the first one ran: the first's node
        return x, t

    for after in (1, 2):
        x, t = build()
        assert _interrupted(x, after)
        assert x.numpy().tolist() == [0, 2.25, 4.5, 6.75]  # the second assign was lost
        assert t.numpy().tolist() == [0, 3, 6, 9]


def test_a_temporary_whose_bytes_were_reused_is_not_read_back():
    # the sum of x (a temporary) is read by the first kernel after it, then its bytes hold
    # another temporary; a reader of that sum left to run computes it again
    def build():
        x = Tensor(np.arange(4.0)).realize()
        x.assign(x * 1.5)
        a = x + x
        b = a + x.sum()
        x.assign(x + b * 0.5)
        x.assign(a + x * 0.5)
        c = (a - b).contiguous() * 3
        d = a + c.sum()
        return [x, a, b, c, d]

    want = [t.numpy().tolist() for t in build()]
    for after in range(1, len(build()[4].schedule_linear().src)):
        ts = build()
        assert _interrupted(ts[4], after)
        assert [t.numpy().tolist() for t in ts] == want, after


def test_an_interrupt_between_parts_run_apart_leaves_each_part_readable():
    from tolk import Variable

    m = Variable("m", 1, 3)
    b = Tensor(np.arange(4.0)).realize()
    a = b + 100  # a reader of b's value now
    l1 = b + m.bind(1)
    l2 = l1 + m.bind(3)  # m = 1 through l1, m = 3 itself
    b.assign(b * 10)  # its realize takes a, l1, l2 along: their values disagree, run apart
    assert _interrupted(b, 1)  # after a's part
    for _ in range(2):
        assert l2.numpy().tolist() == [4, 5, 6, 7]  # raised "bound to both" at every read
    assert b.numpy().tolist() == [0, 10, 20, 30] and a.numpy().tolist() == [100, 101, 102, 103]


def test_temporaries_of_a_program_with_variables_are_found_too():
    from tolk import Variable

    n = Variable("n", 1, 4)

    def build():
        x = Tensor(np.arange(4.0)).realize()
        a = x[:n.bind(3)] * 1
        x.assign(x + 1)
        b = x[:n.bind(3)] * 1
        x.assign(x * 3)
        q = a + b * 10 + x[:n.bind(3)] * 100  # reads x's three states, over a symbolic slice
        return [x, q]

    want = [t.numpy().tolist() for t in build()]
    assert want[1] == [310, 621, 932]
    for after in range(1, len(build()[1].schedule_linear().src)):
        ts = build()
        assert _interrupted(ts[1], after)
        assert [t.numpy().tolist() for t in ts] == want, after


def test_a_failing_reader_of_a_state_overwritten_again_makes_a_read_raise_once():
    y = Tensor(np.arange(4.0)).realize()
    y[0:2] = 7.0
    y[1:3] = 5.0  # pending assigns
    bad = y[Tensor(np.array([9]))] + 1  # its kernel raises; it reads y's pending state
    y.assign(y * 2)  # y does not read `bad`
    errors = 0
    for _ in range(3):
        try:
            assert y.numpy().tolist() == [14, 10, 10, 6]
        except IndexError:
            errors += 1
    assert errors == 1  # it raised twice: `bad` was taken along again over y's new state
    with pytest.raises(IndexError):
        bad.numpy()


def _random_program(seed: int):
    r = random.Random(seed)
    nbuf = r.randint(1, 3)
    steps = []
    for _ in range(r.randint(2, 9)):
        k = r.random()
        if k < 0.5:
            steps.append(("lazy", r.random(), r.random(), r.randint(0, 4)))
        elif k < 0.85:
            steps.append(("assign", r.randrange(nbuf), r.random(), r.random(), r.random() < 0.3))
        else:
            steps.append(("del", r.random()))
    return nbuf, steps, r.random()


def _run(nbuf: int, steps: list, target: float, after: int | None):
    """The program's tensors' values (buffers, then kept lazy tensors) once all realized, and
    whether an interrupt after `after` kernels of the target's realize came."""
    bufs = [Tensor(np.arange(4.0) + 10 * i).realize() for i in range(nbuf)]
    lazies: list[Tensor] = []

    def pick(u: float) -> Tensor:
        pool = bufs + lazies
        return pool[int(u * len(pool))]

    for step in steps:
        if step[0] == "lazy":
            a, b = pick(step[1]), pick(step[2])
            lazies.append([lambda: a + b, lambda: (a * 2 + b).contiguous(),
                           lambda: a + b.sum(), lambda: (a - b).contiguous() * 3,
                           lambda: a.flip(0) * b][step[3]]())
        elif step[0] == "assign":
            i, a, b, part = step[1:]
            value = pick(a) + pick(b) * 0.5
            if part:
                bufs[i][1:3] = value[::2]
            else:
                bufs[i].assign(value)
        elif lazies:
            lazies.pop(int(step[1] * len(lazies)))
    pool = bufs + lazies
    stopped = after is not None and _interrupted(pool[int(target * len(pool))], after)
    return [t.numpy().tolist() for t in bufs + lazies], stopped


@pytest.mark.parametrize("seed", range(PROGRAMS))
def test_random_programs_read_the_same_values_whichever_kernel_an_interrupt_follows(seed):
    program = _random_program(seed)
    want, _ = _run(*program, None)
    for after in range(1, 12):
        got, stopped = _run(*program, after)
        assert got == want, (program, after)
        if not stopped:
            break


def test_a_second_interrupt_while_the_temporaries_are_copied_still_settles(monkeypatch):
    import tolk.callify as callify

    def interrupted(*args):
        raise KeyboardInterrupt("the second one")

    x = Tensor(np.array([1.0, 2.0])).realize()
    p = x * 10
    x.assign(x + 1)
    q = p + x
    monkeypatch.setattr(callify, "_ran_temps", interrupted)
    with pytest.raises(KeyboardInterrupt) as e:
        _realize_interrupted(q, 2)
    assert "the second one" not in str(e.value)  # the run's own interrupt goes up
    monkeypatch.undo()
    assert x.numpy().tolist() == [2, 3]  # the assign ran once, settled
