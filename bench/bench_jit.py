"""Per-kernel replay overhead of `tolk.jit` against eager realize and tinygrad's TinyJit.

The function under test is a chain of ``--kernels`` (100) tiny elementwise steps, each ended
by ``.contiguous()`` so every step is its own kernel: ``x = (x + 1.0).contiguous()`` on a
float32 tensor of ``--size`` (16) elements, so a kernel's own work is negligible and what is
measured is the cost of getting to it.

Rows, each the median over ``--repeats`` calls of the whole function, divided by the kernel
count (µs per kernel):

- tolk numpy op: ``np.add(a, 1, out=b)``, the arithmetic a kernel has to do (its own work).
- tolk kernel call: the compiled kernel (`tolk.runtime.cpu.CompiledKernel`) called directly
  on two preallocated buffers, the way replay calls it (``run``, the error state set by the
  caller, where the runtime has it): own work plus the generated code's views.
- tolk jit replay: ``tolk.jit(f)(x)`` after capture.
- tolk eager: ``f(x).realize()`` with the schedule cache and the kernels warm (graph
  construction, cached schedule and run), and the same with graph construction left out.
- tinygrad 0.14 (when importable): ``TinyJit`` replay on the NULL device (kernels do
  nothing) with graph batching (JIT=1, the default: one NullGraph call per batch) and without
  (JIT=2: each kernel dispatched), TinyJit on the PYTHON device (kernels are emulated, so its
  own work is not negligible there), and eager realize on NULL.

overhead = time - tolk numpy op (tolk rows) or time (tinygrad NULL rows, whose kernels do
no work). Goal: tolk jit replay overhead under 10 µs per kernel. ``gc.collect()`` before and
the collector off during each timed call; ``--clock process_time`` times CPU time instead of
wall time (steadier on a loaded machine; everything here is single-threaded, BLAS included:
one thread unless ``OPENBLAS_NUM_THREADS`` is set).

Run: ``PYTHONPATH=. python bench/bench_jit.py``; the tinygrad columns need tinygrad 0.14.0 in
that environment (``pip install '.[bench]'``), otherwise they print "not installed".
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

# one BLAS thread, set before numpy's import: nothing here runs BLAS, and the default pool's
# threads spin for a while after import, which `time.process_time` (every thread) counts
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

os.environ.setdefault("DEV", "NULL")  # tinygrad's default device; must be set before its import

try:
    import tolk  # noqa: F401  (PYTHONPATH or an install wins over the checkout)
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tolk  # noqa: E402
from tolk.runtime import cpu  # noqa: E402
from tolk.tensor import Tensor  # noqa: E402

try:
    from tinygrad import Tensor as TgTensor
    from tinygrad import TinyJit
    from tinygrad.helpers import Context as TgContext
except ImportError:
    TgTensor = None

GOAL_US = 10.0
CLOCK = {"perf_counter": time.perf_counter, "process_time": time.process_time}
clock = time.perf_counter


def _median_us(fn: Callable[[], object], repeats: int, warmup: int = 3) -> float:
    """Median wall time of `fn` in µs over `repeats` calls, the collector off while timing."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        gc.collect()
        gc.disable()
        try:
            t0 = clock()
            fn()
            times.append(clock() - t0)
        finally:
            gc.enable()
    return statistics.median(times) * 1e6


def _chain(n: int) -> Callable:
    def f(x):
        for _ in range(n):
            x = (x + 1.0).contiguous()
        return x

    return f


def _loop(fn: Callable[[], object], n: int) -> Callable[[], None]:
    def run() -> None:
        for _ in range(n):
            fn()

    return run


def tolk_rows(n: int, size: int, repeats: int) -> list[tuple[str, str, float, float | None]]:
    """(system, mode, µs per kernel, overhead µs per kernel) for tolk."""
    f = _chain(n)
    a = np.zeros(size, np.float32)
    b = np.zeros(size, np.float32)
    one = np.float32(1.0)
    own = _median_us(_loop(lambda: np.add(a, one, out=b), n), repeats) / n

    x = Tensor(a.copy()).realize()
    jf = tolk.jit(f)
    out = [jf(x) for _ in range(3)][-1]  # run, capture, first replay
    want = np.full(size, n, np.float32)
    if not np.array_equal(out.numpy(), want):
        raise AssertionError("tolk.jit replay computed a wrong value")
    replay = _median_us(lambda: jf(x), repeats) / n

    key = next(k for k, v in cpu._compiled.items() if "np.add" in v.source)
    kernel = cpu._compiled[key]
    run = getattr(kernel, "run", kernel)  # `run`: no per-call np.errstate, as replay calls it
    kcall = _median_us(_loop(lambda: run([b, a], {}), n), repeats) / n

    eager = _median_us(lambda: f(x).realize(), repeats) / n
    build = _median_us(lambda: f(x), repeats) / n
    return [
        ("tolk", "numpy op (own work)", own, None),
        ("tolk", "compiled kernel called directly", kcall, kcall - own),
        ("tolk", "jit replay", replay, replay - own),
        ("tolk", "eager realize, cache warm (build+schedule+run)", eager, eager - own),
        ("tolk", "eager realize, cache warm, graph build excluded", eager - build,
         eager - build - own),
    ]


def tinygrad_rows(n: int, size: int, repeats: int) -> list[tuple[str, str, float, float | None]]:
    """(system, mode, µs per kernel, overhead µs per kernel) for tinygrad's TinyJit."""
    f = _chain(n)
    rows = []
    for dev, jit_level, label in (("NULL", 1, "TinyJit NULL, graph batched (JIT=1)"),
                                  ("NULL", 2, "TinyJit NULL, per-kernel dispatch (JIT=2)"),
                                  ("PYTHON", 2, "TinyJit PYTHON (emulated kernels)")):
        x = TgTensor(np.zeros(size, np.float32), device=dev).realize()
        jf = TinyJit(f)
        with TgContext(JIT=jit_level):
            for _ in range(3):
                out = jf(x)
        if dev == "PYTHON" and not np.array_equal(out.numpy(), np.full(size, n, np.float32)):
            raise AssertionError("TinyJit PYTHON replay computed a wrong value")
        reps = repeats if dev == "NULL" else max(3, repeats // 10)
        with TgContext(JIT=jit_level):
            us = _median_us(lambda: jf(x), reps) / n
        rows.append(("tinygrad", label, us, us if dev == "NULL" else None))
    x = TgTensor(np.zeros(size, np.float32), device="NULL").realize()
    eager = _median_us(lambda: f(x).realize(), max(3, repeats // 10)) / n
    rows.append(("tinygrad", "eager realize NULL, cache warm", eager, eager))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", type=int, default=100)
    ap.add_argument("--size", type=int, default=16, help="elements of the float32 tensor")
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--clock", choices=sorted(CLOCK), default="perf_counter",
                    help="process_time: CPU time, steadier on a loaded machine")
    args = ap.parse_args()
    global clock
    clock = CLOCK[args.clock]

    rows = tolk_rows(args.kernels, args.size, args.repeats)
    tg_note = ""
    if TgTensor is None:
        tg_note = "tinygrad: not installed"
    else:
        rows += tinygrad_rows(args.kernels, args.size, args.repeats)

    print(f"{args.kernels} kernels of `x = (x + 1.0).contiguous()` on float32[{args.size}], "
          f"median of {args.repeats} calls ({args.clock}), µs per kernel\n")
    print("| system | mode | µs/kernel | overhead µs/kernel |")
    print("|---|---|---:|---:|")
    for system, mode, us, over in rows:
        print(f"| {system} | {mode} | {us:.2f} | {'' if over is None else f'{over:.2f}'} |")
    if tg_note:
        print(f"\n{tg_note}")
    replay = next(r for r in rows if r[1] == "jit replay")
    own = rows[0][2]
    ok = replay[3] < GOAL_US
    print(f"\ngoal: tolk jit replay overhead < {GOAL_US:.0f} µs/kernel (+ own work "
          f"{own:.2f} µs): {replay[3]:.2f} µs -> {'met' if ok else 'NOT met'}")


if __name__ == "__main__":
    main()
