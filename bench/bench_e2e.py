"""End to end: a GPT-2-small-shaped and a ResNet-18-shaped forward in tolk against plain numpy.

Models are the reference ones in `tolk.models` (same weights, same math in tolk and numpy):
GPT-2 small (12 layers, dim 768, 12 heads, seq 128, vocab 50257, batch 1) and ResNet-18
(input 1x3x224x224, width 64, 1000 classes). ``--small`` runs reduced configs in seconds.

Per model:
- schedule: `tolk.report.schedule_report` on the lazy output gives kernels and memory
  (unplanned / planned arena / floor, the peak of live intermediate bytes). Schedule time is
  timed here with the bench clock and the collector off, medians over ``--repeats``: cold is
  ``schedule_linear`` of a fresh graph right after ``schedule_cache_clear()``, cached that of
  another fresh graph of the same program (the report's own single wall-clock figures swing
  with the load and with collections triggered by the cold run). Nothing runs.
- run: the numpy forward; tolk ``forward(...).realize()`` warm (schedule and kernels cached
  by earlier runs), split into graph construction (the tensor ops) and realize (cached
  schedule + kernels); `tolk.jit` replay of the forward (no graph, no schedule). Medians
  over ``--repeats``; a numpy forward is timed right after each tolk run, so a load that drifts
  during the run weighs on both sides of the ratio alike. The tolk output is checked against
  numpy.

Goals: tolk warm run (build + realize) within 1.5x of numpy; cached schedule under 5% of
cold. BLAS runs one thread unless ``OPENBLAS_NUM_THREADS`` is set (numpy and tolk alike; a
multi-threaded BLAS on a loaded machine swings timings by 10x). Wall time by default;
``--clock process_time`` (CPU time, valid with one BLAS thread) is steadier under load.

Run: ``python bench/bench_e2e.py [--small] [--only gpt|resnet] [--no-jit]``.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

# one BLAS thread unless the caller says otherwise: numpy and tolk call the same BLAS, and a
# multi-threaded BLAS on a loaded machine spins and swings timings by 10x and more
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

try:
    import tolk  # noqa: F401  (PYTHONPATH or an install wins over the checkout)
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tolk  # noqa: E402
from tolk.models import (  # noqa: E402
    GPT2_SMALL,
    GPTConfig,
    ResNetConfig,
    as_tensors,
    gpt_forward_numpy,
    gpt_forward_tolk,
    init_gpt_weights,
    init_resnet_weights,
    make_resnet_input,
    make_tokens,
    resnet_forward_numpy,
    resnet_forward_tolk,
)
from tolk.report import ScheduleReport, schedule_report  # noqa: E402
from tolk.schedule import schedule_cache_clear  # noqa: E402
from tolk.tensor import Tensor  # noqa: E402

GOAL_RUN_RATIO = 1.5
GOAL_CACHED_FRACTION = 0.05
RESNET18 = ResNetConfig(batch=1, size=224, width=64, classes=1000)
GPT_SMALL_CFG = GPTConfig(layers=2, dim=128, heads=4, seq=32, vocab=1024, batch=1)
RESNET_SMALL_CFG = ResNetConfig(batch=1, size=64, width=16, classes=10)
CLOCK = {"perf_counter": time.perf_counter, "process_time": time.process_time}
clock = time.perf_counter


@dataclass(frozen=True)
class Model:
    """One model: numpy inputs and forwards over (weights, input)."""

    name: str
    weights: dict[str, np.ndarray]
    inp: np.ndarray
    forward_numpy: Callable[[dict, np.ndarray], np.ndarray]
    forward_tolk: Callable[[dict, Tensor], Tensor]


@dataclass(frozen=True)
class Result:
    name: str
    report: ScheduleReport
    cold_ms: float
    cached_ms: float
    numpy_ms: float
    build_ms: float
    realize_ms: float
    jit_ms: float | None
    max_err: float

    @property
    def run_ms(self) -> float:
        return self.build_ms + self.realize_ms


def _timed_ms(fn: Callable[[], object], collect: bool = True) -> float:
    if collect:
        gc.collect()
    gc.disable()
    try:
        t0 = clock()
        fn()
        return (clock() - t0) * 1e3
    finally:
        gc.enable()


def gpt_model(small: bool) -> Model:
    cfg = GPT_SMALL_CFG if small else GPT2_SMALL
    return Model(f"GPT-2 {'(small cfg)' if small else 'small'} L{cfg.layers} d{cfg.dim} "
                 f"h{cfg.heads} T{cfg.seq} V{cfg.vocab}",
                 init_gpt_weights(cfg), make_tokens(cfg),
                 lambda w, x: gpt_forward_numpy(w, x, cfg),
                 lambda w, x: gpt_forward_tolk(w, x, cfg))


def resnet_model(small: bool) -> Model:
    cfg = RESNET_SMALL_CFG if small else RESNET18
    return Model(f"ResNet-18 {'(small cfg) ' if small else ''}{cfg.batch}x3x{cfg.size}x{cfg.size} "
                 f"w{cfg.width}", init_resnet_weights(cfg), make_resnet_input(cfg),
                 lambda w, x: resnet_forward_numpy(w, x, cfg),
                 lambda w, x: resnet_forward_tolk(w, x, cfg))


def bench_model(m: Model, repeats: int, use_jit: bool) -> Result:
    ref = m.forward_numpy(m.weights, m.inp)  # warm-up (and the oracle)
    numpys: list[float] = []  # timed next to each tolk run, so drifting load hits both alike

    def numpy_run() -> None:
        numpys.append(_timed_ms(lambda: m.forward_numpy(m.weights, m.inp)))

    w = {k: v.realize() for k, v in as_tensors(m.weights).items()}
    x = Tensor(m.inp).realize()
    report = schedule_report(m.forward_tolk(w, x))
    cold_ms, cached_ms = schedule_times(m, w, x, repeats)
    m.forward_tolk(w, x).realize()  # compiles every kernel; the schedule is cached already
    builds, realizes = [], []
    for _ in range(repeats):
        holder: list[Tensor] = []
        builds.append(_timed_ms(lambda: holder.append(m.forward_tolk(w, x))))
        realizes.append(_timed_ms(lambda: holder[0].realize()))
        out = holder[0].numpy()
        numpy_run()
    max_err = float(np.max(np.abs(out - ref)))
    if not np.allclose(out, ref, rtol=1e-3, atol=1e-3):
        raise AssertionError(f"{m.name}: tolk differs from numpy (max abs err {max_err:.3g})")

    jit_ms = None
    if use_jit:
        jf = tolk.jit(m.forward_tolk)
        for _ in range(3):  # run, capture, first replay
            out = jf(w, x)
        if not np.allclose(out.numpy(), ref, rtol=1e-3, atol=1e-3):
            raise AssertionError(f"{m.name}: tolk.jit replay differs from numpy")
        jits = []
        for _ in range(repeats):
            jits.append(_timed_ms(lambda: jf(w, x)))
            numpy_run()
        jit_ms = statistics.median(jits)
    numpy_ms = statistics.median(numpys)
    return Result(m.name, report, cold_ms, cached_ms, numpy_ms, statistics.median(builds),
                  statistics.median(realizes), jit_ms, max_err)


def schedule_times(m: Model, w: dict, x: Tensor, repeats: int) -> tuple[float, float]:
    """Medians of (cold, cached) ``schedule_linear`` ms, each on a freshly built graph.

    The collector runs before the graph is built, not between building and scheduling: a full
    collection walks the whole heap and leaves the CPU caches cold, which no user's realize
    meets right after building its graph (it costs a fixed ~0.05-0.1 ms, a tenth of a hit)."""
    colds, cacheds = [], []
    for _ in range(repeats):
        schedule_cache_clear()
        gc.collect()
        out = m.forward_tolk(w, x)
        colds.append(_timed_ms(out.schedule_linear, collect=False))
        gc.collect()
        out = m.forward_tolk(w, x)
        cacheds.append(_timed_ms(out.schedule_linear, collect=False))
    return statistics.median(colds), statistics.median(cacheds)


def _mb(n: int) -> str:
    return f"{n / 2**20:.1f}"


def print_tables(results: list[Result]) -> None:
    print("### Schedule and memory\n")
    print("| model | kernels | schedule cold ms | cached ms | cached/cold | unplanned MB "
          "| arena MB | floor MB | arena/floor |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        s = r.report
        print(f"| {r.name} | {s.kernels} | {r.cold_ms:.1f} | {r.cached_ms:.1f} "
              f"| {r.cached_ms / r.cold_ms:.1%} | {_mb(s.unplanned_bytes)} "
              f"| {_mb(s.arena_bytes)} | {_mb(s.floor_bytes)} | {s.ratio:.3f} |")
    print("\n### Run time (warm)\n")
    print("| model | numpy ms | tolk build ms | tolk realize ms | tolk run ms | run/numpy "
          "| jit replay ms | jit/numpy | max abs err |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        jit = ("", "") if r.jit_ms is None else (f"{r.jit_ms:.1f}", f"{r.jit_ms / r.numpy_ms:.2f}x")
        print(f"| {r.name} | {r.numpy_ms:.1f} | {r.build_ms:.1f} | {r.realize_ms:.1f} "
              f"| {r.run_ms:.1f} | {r.run_ms / r.numpy_ms:.2f}x | {jit[0]} | {jit[1]} "
              f"| {r.max_err:.2g} |")
    print()
    for r in results:
        ratio = r.run_ms / r.numpy_ms
        frac = r.cached_ms / r.cold_ms
        print(f"goals {r.name}: run/numpy {ratio:.2f}x "
              f"({'met' if ratio <= GOAL_RUN_RATIO else 'NOT met'}, <= {GOAL_RUN_RATIO}x); "
              f"cached/cold {frac:.1%} "
              f"({'met' if frac < GOAL_CACHED_FRACTION else 'NOT met'}, < "
              f"{GOAL_CACHED_FRACTION:.0%})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="reduced configs, seconds to run")
    ap.add_argument("--only", choices=("gpt", "resnet"))
    ap.add_argument("--repeats", type=int, default=None, help="default 3 (5 with --small)")
    ap.add_argument("--no-jit", action="store_true", help="skip the tolk.jit replay column")
    ap.add_argument("--clock", choices=sorted(CLOCK), default="perf_counter")
    args = ap.parse_args()
    global clock
    clock = CLOCK[args.clock]
    repeats = args.repeats or (5 if args.small else 3)

    threads = {k: os.environ[k] for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")
               if k in os.environ}
    # an installed tolk wins over the checkout: say which one is measured
    print(f"tolk {Path(tolk.__file__).parent}, clock {args.clock}, medians of {repeats}, numpy "
          f"{np.__version__}, BLAS threads {threads or 'default'}, {os.cpu_count()} CPUs\n")
    makers = {"gpt": gpt_model, "resnet": resnet_model}
    results = []
    for key, make in makers.items():
        if args.only and args.only != key:
            continue
        results.append(bench_model(make(args.small), repeats, not args.no_jit))
    print_tables(results)


if __name__ == "__main__":
    main()
