"""Random tensor programs give numpy's values in every mode, and every schedule verifies.

Each generated program runs four ways: plainly, with NO_MEMORY_PLANNER=1, with SCACHE=0, and
as the body of a `tolk.jit` function called four times on fresh inputs (so it is run, captured
and replayed twice). Every value the program reads, and every final value, is compared with
the numpy interpreter; every schedule realize makes, and every jit capture, passes
`verify_linear`.

Profiles: the default is small and derandomized (CI, about a minute); ``TOLK_FUZZ=long`` in
the environment runs thousands of random programs with no deadline. A failure hypothesis finds
is shrunk and printed as a `Program(...)`; paste it into test_regressions.py.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import tolk
import tolk.callify
from tolk import Context, Tensor, Variable
from tolk.schedule.verify import verify_linear

from .programs import (
    Gen,
    Program,
    assert_same,
    assert_traces,
    expected_pool,
    interpret,
    make_data,
    make_jit_fn,
    programs,
    run_tolk,
)

LONG = os.environ.get("TOLK_FUZZ", "") == "long"
_HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
           HealthCheck.large_base_example]
FUZZ = settings(max_examples=20000 if LONG else 300, deadline=None, derandomize=not LONG,
                suppress_health_check=_HEALTH, print_blob=True)

verified = [0]
programs_run = [0]


@pytest.fixture(autouse=True)
def verify_every_schedule():
    """Run `verify_linear` on every planned schedule realize makes while a test runs."""

    def hook(linear, var_vals, seconds, stats):
        verify_linear(linear)
        st = stats()
        assert not st.arena_bytes or st.floor_bytes <= st.arena_total  # no plan beats the floor
        verified[0] += 1

    tolk.callify.schedule_hooks.append(hook)
    try:
        yield
    finally:
        tolk.callify.schedule_hooks.remove(hook)


def check_plain(prog: Program, seed: int, **flags) -> None:
    arrays, var_values = make_data(prog, seed)
    want = interpret(prog, arrays, var_values)
    with Context(**flags):
        got = run_tolk(prog, arrays, var_values)
    assert_traces(got, want)


def check_jit(prog: Program, seed: int, calls: int = 4) -> None:
    """Run `prog` as a jitted function of its inputs and variables, `calls` times."""
    f = tolk.jit(make_jit_fn(prog))
    variables = [Variable(f"v{i}", lo, hi) for i, (lo, hi) in enumerate(prog.variables)]
    for call in range(calls):
        arrays, var_values = make_data(prog, seed + 1000 * call)
        want = expected_pool(prog, arrays, var_values)
        ins = [Tensor(a) for a in arrays]
        with np.errstate(all="ignore"):
            outs = f(*ins, *(v.bind(x) for v, x in zip(variables, var_values)))
        if call == 1:
            held = [*f.in_index, *f.out_bufs]
            verify_linear(f.linear, held)
        for i, w in enumerate(want):
            assert_same(f"jit call {call}: entry {i}", outs[i].numpy(), w)
        for k, t in enumerate(ins):
            assert_same(f"jit call {call}: input {k} after the call", t.numpy(), want[k])


def check_all_modes(prog: Program, seed: int) -> None:
    note(repr(prog))
    check_plain(prog, seed)
    check_plain(prog, seed, NO_MEMORY_PLANNER=1)
    check_plain(prog, seed, SCACHE=0)
    check_jit(prog, seed)


@FUZZ
@given(prog=programs(Gen()), seed=st.integers(0, 2**16))
def test_random_program_matches_numpy_in_every_mode(prog, seed):
    programs_run[0] += 1
    if LONG and programs_run[0] % 250 == 0:
        print(f"fuzz: {programs_run[0]} programs", flush=True)  # progress, with pytest -s
    check_all_modes(prog, seed)


def test_schedules_were_verified():
    """The hook really runs: a realize here is verified."""
    before = verified[0]
    (Tensor(np.ones(3, np.float32)) + 1).realize()
    assert verified[0] > before
