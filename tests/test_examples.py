"""The examples run and check themselves."""

from __future__ import annotations

import pathlib
import runpy
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_decode_example_jit_equals_eager_and_numpy(capsys):
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        mod = runpy.run_path(str(ROOT / "examples" / "decode.py"))
        assert mod["main"]() == 0
    finally:
        sys.path.remove(str(ROOT / "examples"))
    assert "equals eager decoding token for token" in capsys.readouterr().out


def test_train_example_learns_and_its_jitted_steps_equal_eager_ones(capsys):
    mod = runpy.run_path(str(ROOT / "examples" / "train.py"))
    assert mod["main"](steps=300) == 0
    assert "accuracy 1.000" in capsys.readouterr().out
