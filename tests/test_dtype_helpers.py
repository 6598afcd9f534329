"""dtypes, promotion, and flags."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys

import numpy as np
import pytest

from tolk.dtype import ALL_DTYPES, bf16_to_f32, dtypes, f32_to_bf16, least_upper_dtype, to_dtype
from tolk.helpers import CAPTURING, DEBUG, NO_MEMORY_PLANNER, SCACHE, Context

NUMPY_TYPES = [d for d in ALL_DTYPES.values() if d.np is not None and d is not dtypes.bfloat16]


def test_itemsizes_match_numpy():
    for d in NUMPY_TYPES:
        assert d.itemsize == d.np.itemsize
    assert dtypes.bfloat16.itemsize == 2


@pytest.mark.parametrize("a, b", list(itertools.product(NUMPY_TYPES, repeat=2)))
def test_promotion_matches_numpy(a, b):
    assert least_upper_dtype(a, b).np == np.result_type(a.np, b.np)


def test_bfloat16_promotion():
    assert least_upper_dtype(dtypes.bfloat16, dtypes.int8) is dtypes.bfloat16
    assert least_upper_dtype(dtypes.bfloat16, dtypes.bool) is dtypes.bfloat16
    assert least_upper_dtype(dtypes.bfloat16, dtypes.float16) is dtypes.float32
    assert least_upper_dtype(dtypes.bfloat16, dtypes.int16) is dtypes.float32
    assert least_upper_dtype(dtypes.bfloat16, dtypes.int64) is dtypes.float64
    assert least_upper_dtype(dtypes.bfloat16, dtypes.float64) is dtypes.float64
    assert least_upper_dtype(dtypes.bfloat16) is dtypes.bfloat16


def test_bfloat16_bits_round_trip():
    x = np.array([0.0, 1.0, -2.5, 3.140625, np.inf, -np.inf], np.float32)
    np.testing.assert_array_equal(bf16_to_f32(f32_to_bf16(x)), x)
    assert np.isnan(bf16_to_f32(f32_to_bf16(np.array([np.nan], np.float32))))[0]


def test_to_dtype_accepts_names_numpy_types_and_rejects_others():
    assert to_dtype("float32") is dtypes.float32
    assert to_dtype(np.int16) is dtypes.int16
    assert to_dtype(dtypes.half) is dtypes.float16
    with pytest.raises(TypeError, match="complex"):
        to_dtype(np.complex64)
    with pytest.raises(TypeError):
        to_dtype(object())


def test_flag_defaults_and_context_overrides_restore():
    assert (SCACHE.value, NO_MEMORY_PLANNER.value, CAPTURING.value) == (1, 0, 1) or os.environ.get(
        "SCACHE") or os.environ.get("NO_MEMORY_PLANNER") or os.environ.get("CAPTURING")
    before = (SCACHE.value, DEBUG.value)
    with Context(SCACHE=0, DEBUG=3):
        assert (SCACHE.value, DEBUG.value) == (0, 3)
        with Context(SCACHE=1):
            assert SCACHE.value == 1
        assert SCACHE.value == 0
    assert (SCACHE.value, DEBUG.value) == before


def test_context_rejects_unknown_flags():
    with pytest.raises(ValueError, match="NOPE"):
        with Context(NOPE=1):
            pass


def test_flags_are_read_from_the_environment():
    code = ("from tolk.helpers import SCACHE, NO_MEMORY_PLANNER; "
            "print(SCACHE.value, NO_MEMORY_PLANNER.value)")
    env = dict(os.environ, SCACHE="0", NO_MEMORY_PLANNER="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.split() == ["0", "1"]
    for value in ("true", "0", ""):  # (the spec: the planner is off when the variable is set)
        env = dict(os.environ, NO_MEMORY_PLANNER=value)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True)
        assert out.stdout.split()[1:] == ["1"], (value, out.stderr[-300:])
    env = {k: v for k, v in os.environ.items() if k != "NO_MEMORY_PLANNER"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.split()[1:] == ["0"]


def test_cli_version_and_help():
    from tolk.cli import main

    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert main([]) == 0


def test_importing_uop_does_not_pull_in_the_runtime_or_tensor():
    code = ("import sys, tolk.uop; "
            "print([m for m in sys.modules if m.startswith(('tolk.runtime', 'tolk.tensor', "
            "'tolk.engine'))])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_gc_paused_nests_and_restores_the_collector():
    import gc

    from tolk.helpers import gc_paused

    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # a collector that was off stays off
    finally:
        gc.enable()


def test_bfloat16_keeps_nan_bits_through_copies_and_rounds_big_endian_doubles_once():
    from tolk import Tensor
    from tolk.dtype import dtypes

    bits = np.array([0xFFC0, 0x7FC1, 0x7F81, 0xFF81, 0x3F80], np.uint16)
    b = Tensor(bits).bitcast(dtypes.bfloat16)
    for copy in (lambda t: t, lambda t: t.contiguous(), lambda t: t.cat(t)[:5],
                 lambda t: t.pad(((0, 1),))[:5]):
        assert copy(b).bitcast(dtypes.uint16).numpy().tolist() == bits.tolist()
    v = 1 + 2**-8 + 2**-30  # through float32 it rounds twice, to 1.0
    for order in ("<f8", ">f8"):
        got = Tensor(np.array([v], order), dtype=dtypes.bfloat16).bitcast(dtypes.uint16)
        assert got.numpy().tolist() == [0x3F81]
    x = np.array([[-2.0, 6.0, 1.0]], np.float16)  # std in float32, rounded once
    assert Tensor(x).std(1).numpy()[0] == np.float16(x.astype(np.float32).std(1, ddof=1)[0])
