"""Benchmark the schedule stage: `create_schedule` and `memory_plan_rewrite` per kernel.

Synthetic kernel graphs of 1k, 10k and 100k kernels, built by hand as in
tests/schedule_helpers.py (a kernel is ``CALL(SINK(arg=KernelInfo(name)), *args)``, a written
state is ``AFTER(prev_state, kernel)``; intermediates are internal BUFFERs):

- chain:     each kernel reads the previous kernel's output buffer.
- diamond:   repeated fan-out/fan-in, a -> (b, c) -> d -> (e, f) -> g ...
- fan-in:    many independent producers, then a tree of consumers reading 32 at a time.
- assign:    one user buffer updated in place n/2 times, a reader of every intermediate
             state (n/2 writers + n/2 readers = n kernels).

Shapes that do not divide evenly are padded with chain kernels so every graph has exactly
n kernels. Kernel names are unique, so no two kernels hash-cons into one node. Graph
construction is not timed. Each repeat runs ``lin = create_schedule(sink)`` then
``memory_plan_rewrite(lin, held)`` (held: the user input/output buffers), timed separately
with `time.perf_counter` (``--clock process_time`` for CPU time on a loaded machine);
``gc.collect()`` runs before and the garbage collector is off during each timed repeat,
and both results are freed before the next repeat so every repeat builds its LINEAR cold
(no intern-table hits); the planner's cache of offset assignments (a schedule run again has
the same lifetimes) is cleared before each run, so every run plans. Two numbers per cell:

- first: the first schedule of a freshly built graph, after a warm-up that schedules and plans
  another graph of the same shape and size twice and frees it (a process's first schedules of
  a size take new memory: at 1k kernels the first two ran 1.1-2x as long as later ones).
  What a program pays when it schedules a new graph: the graph was just built, the LINEAR and
  the scheduler's tables take new memory.
- repeats: the medians of the next ``REPEATS[n]`` runs on the same graph. A small graph's
  repeats reuse the memory its first run freed (Python keeps those pools); a large one's
  emptied arenas go back to the system and come back as fresh pages (at 100k kernels ~0.3 page
  faults and 0.5-1.6 µs of system time per kernel, every run).

Each shape and size is measured in
a fresh Python process (``--in-process``: all in this one), so the heap left by an earlier graph
(a 100k-kernel graph is some 400k nodes) does not shape a later measurement. ``--rounds N``
measures every cell N times, one pass over all cells after another; cells are medians over the
rounds, and the 100k/1k ratio is the median of each round's own ratio (this machine's speed
drifts by up to 2x within minutes, and small graphs, which fit in the CPU caches, swing most).
The ratio of the fastest rounds (each size's fastest round, 100k over 1k) is printed next to it:
the machine switches between a fast and a slow state for seconds at a time (a 1k chain, in one
process, scheduled back to back: ~3.9 µs per kernel in one, ~7 in the other), so a cell's
fastest round is its time in the fast state, and two of them compare like with like.

`memory_plan_rewrite` is skipped where its projected time for one run (extrapolated from the
previous size with the measured growth exponent) exceeds ``--plan-budget`` seconds; pass
``--full`` to run it anyway.

Run: ``python bench/bench_schedule.py`` from the repository root.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

try:
    import tolk  # noqa: F401  (PYTHONPATH or an install wins over the checkout)
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tolk.dtype import dtypes
from tolk.schedule import create_schedule, memory_plan_rewrite
from tolk.schedule.memory import plan_cache_clear
from tolk.uop import KernelInfo, Ops, UOp

F32 = dtypes.float32
SIZES = (1_000, 10_000, 100_000)
REPEATS = {1_000: 11, 10_000: 5, 100_000: 3}  # sizes not listed: 1
FAN_IN = 32
SCALING_GOAL = 1.3  # create_schedule µs/kernel at 100k over that at 1k
SPEED_GOAL_US = 20.0  # create_schedule µs/kernel at 10k


# ---------------------------------------------------------------------------------------------
# graph builders: (sink, held user buffers)


class _Graph:
    """Builds kernels with unique names; sizes vary so the planner's size order matters."""

    def __init__(self, tag: str):
        self.tag, self.count = tag, 0

    def tmp(self) -> UOp:
        return UOp.internal_buffer(F32, 256 * (1 + self.count % 7))

    def write(self, out: UOp, *reads: UOp) -> UOp:
        """`out` after a fresh kernel that writes it and reads `reads`."""
        ast = UOp(Ops.SINK, dtypes.void, (), KernelInfo(f"{self.tag}_{self.count}"))
        self.count += 1
        return UOp(Ops.AFTER, out.dtype, (out, UOp(Ops.CALL, dtypes.void, (ast, out, *reads))))

    def pad(self, x: UOp, n: int) -> UOp:
        """Chain kernels after `x` until the graph has `n` kernels."""
        while self.count < n:
            x = self.write(self.tmp(), x)
        return x


def chain(n: int, prefix: str = "") -> tuple[UOp, list[UOp]]:
    g, inp, out = _Graph(f"{prefix}chain{n}"), UOp.buffer(F32, 256), UOp.buffer(F32, 256)
    x = g.pad(g.write(g.tmp(), inp), n - 1)
    return UOp.sink(g.write(out, x)), [inp, out]


def diamond(n: int, prefix: str = "") -> tuple[UOp, list[UOp]]:
    g, inp, out = _Graph(f"{prefix}diamond{n}"), UOp.buffer(F32, 256), UOp.buffer(F32, 256)
    a = g.write(g.tmp(), inp)
    while g.count + 3 <= n - 1:
        b, c = g.write(g.tmp(), a), g.write(g.tmp(), a)
        a = g.write(g.tmp(), b, c)
    return UOp.sink(g.write(out, g.pad(a, n - 1))), [inp, out]


def _tree_kernels(producers: int) -> int:
    total, level = producers, producers
    while level > 1:
        level = math.ceil(level / FAN_IN)
        total += level
    return total


def fan_in(n: int, prefix: str = "") -> tuple[UOp, list[UOp]]:
    g, inp, out = _Graph(f"{prefix}fanin{n}"), UOp.buffer(F32, 256), UOp.buffer(F32, 256)
    producers = n
    while _tree_kernels(producers) > n - 1:
        producers -= 1
    level = [g.write(g.tmp(), inp) for _ in range(producers)]
    while len(level) > 1:
        level = [g.write(g.tmp(), *level[i:i + FAN_IN]) for i in range(0, len(level), FAN_IN)]
    return UOp.sink(g.write(out, g.pad(level[0], n - 1))), [inp, out]


def assign(n: int, prefix: str = "") -> tuple[UOp, list[UOp]]:
    g, x = _Graph(f"{prefix}assign{n}"), UOp.buffer(F32, 256)
    state, readers = x, []
    for _ in range(n // 2):
        state = g.write(state, state)  # in place: overwrites and reads the current state
        readers.append(g.write(g.tmp(), state))
    return UOp.sink(state, *readers), [x]


SHAPES: dict[str, Callable[..., tuple[UOp, list[UOp]]]] = {
    "chain": chain, "diamond": diamond, "fan-in": fan_in, "assign": assign,
}


# ---------------------------------------------------------------------------------------------
# timing


def run_once(sink: UOp, held: list[UOp], n: int, plan: bool,
             clock: Callable[[], float] = time.perf_counter) -> tuple[float, float | None]:
    """Seconds for create_schedule and (if `plan`) memory_plan_rewrite, GC off, cold results
    (the planner's remembered offset assignments are cleared first: every run plans)."""
    plan_cache_clear()
    gc.collect()
    gc.disable()
    try:
        t0 = clock()
        lin = create_schedule(sink)
        t1 = clock()
        planned = memory_plan_rewrite(lin, held, enabled=True) if plan else None
        t2 = clock()
    finally:
        gc.enable()
    if len(lin.src) != n:
        raise AssertionError(f"expected {n} kernels in the LINEAR, got {len(lin.src)}")
    del lin, planned  # freed before the next repeat: its CALLs are rebuilt, not interned hits
    return t1 - t0, (t2 - t1) if plan else None


Times = tuple[float, float | None]  # seconds of create_schedule, of memory_plan_rewrite


def measure(shape: str, n: int, plan: bool, clock_name: str) -> tuple[Times, Times]:
    """``(first, repeats)`` on a fresh `shape` graph of `n` kernels: the graph's first schedule
    (after a warm-up that schedules and plans another graph of the same shape and size twice and
    frees it: the process's one-time costs are paid, the new graph's memory is its own) and the
    medians of ``REPEATS[n]`` more."""
    clock = getattr(time, clock_name)
    warm, warm_held = SHAPES[shape](n, prefix="warm_")  # never the measured graph's nodes
    for _ in range(2):
        run_once(warm, warm_held, n, plan, clock)
    del warm, warm_held
    sink, held = SHAPES[shape](n)
    first = run_once(sink, held, n, plan, clock)
    runs = [run_once(sink, held, n, plan, clock) for _ in range(REPEATS.get(n, 1))]
    del sink, held
    sched = statistics.median(r[0] for r in runs)
    return first, (sched, statistics.median(r[1] for r in runs) if plan else None)


def _in_worker(shape: str, n: int, plan: bool, clock_name: str) -> tuple[Times, Times]:
    """`measure` in a fresh Python process: no earlier graph's garbage shapes this one's heap."""
    cmd = [sys.executable, __file__, "--worker", shape, str(n), str(int(plan)), clock_name]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{shape} {n}: worker failed:\n{done.stderr}")
    first, repeats = json.loads(done.stdout.strip().splitlines()[-1])
    return tuple(first), tuple(repeats)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    ap.add_argument("--shapes", nargs="+", choices=list(SHAPES), default=list(SHAPES))
    ap.add_argument("--full", action="store_true", help="never skip memory_plan_rewrite")
    ap.add_argument("--plan-budget", type=float, default=60.0,
                    help="skip memory_plan_rewrite when one run is projected above this (s)")
    ap.add_argument("--clock", choices=("perf_counter", "process_time"), default="perf_counter",
                    help="process_time counts CPU time only: steadier on a loaded machine")
    ap.add_argument("--in-process", action="store_true",
                    help="measure every shape and size in this process (default: a fresh process "
                         "for each)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="measure every shape and size this many times, one pass after another; "
                         "cells and ratios are medians over the rounds")
    ap.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    opts = ap.parse_args()
    if opts.rounds < 1 or min(opts.sizes) < 1:
        ap.error("--rounds and every size must be at least 1")
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    if opts.worker:
        shape, n, plan, clock_name = opts.worker
        print(json.dumps(measure(shape, int(n), plan == "1", clock_name)))
        return

    reps = ", ".join(f"{n}: {REPEATS.get(n, 1)}" for n in opts.sizes)
    print(f"Python {sys.version.split()[0]}; time.{opts.clock}; {opts.rounds} round(s), medians "
          f"over rounds; first: a fresh graph's first schedule (after a warm-up on another graph "
          f"of its shape and size); repeats: medians of the next runs ({reps}); "
          "gc.collect() before and gc.disable() during every timed run; "
          "graph construction not timed.\n")
    # (shape, n) -> per round: µs/kernel of (first create_schedule, first memory_plan_rewrite,
    # repeated create_schedule, repeated memory_plan_rewrite)
    cells: dict[tuple[str, int], list[tuple[float | None, ...]]] = {}
    plans: dict[tuple[str, int], bool] = {}  # decided in the first round, kept after
    notes: list[str] = []
    for r in range(opts.rounds):
        for shape in opts.shapes:
            prev: tuple[int, float] | None = None  # (n, plan seconds) of the last planned size
            growth = 2.0  # assumed exponent of the planner's time in n until measured
            for n in opts.sizes:
                if (shape, n) not in plans:
                    plans[shape, n] = True
                    if prev is not None and not opts.full:
                        projected = prev[1] * (n / prev[0]) ** growth
                        if projected > opts.plan_budget:
                            plans[shape, n] = False
                            notes.append(f"{shape} {n}: memory_plan_rewrite skipped, projected "
                                         f"{projected:.0f} s for one run (growth "
                                         f"n^{growth:.2f}); --full runs it")
                plan = plans[shape, n]
                if opts.in_process:
                    first, repeats = measure(shape, n, plan, opts.clock)
                else:
                    first, repeats = _in_worker(shape, n, plan, opts.clock)
                mem = repeats[1]
                if mem is not None:
                    if prev is not None:
                        growth = max(1.0, math.log(mem / prev[1]) / math.log(n / prev[0]))
                    prev = (n, mem)
                cells.setdefault((shape, n), []).append(tuple(
                    t / n * 1e6 if t is not None else None for t in (*first, *repeats)))
                print(f"  done: round {r + 1}: {shape} {n}", file=sys.stderr, flush=True)

    def median_of(shape: str, n: int, which: int) -> float | None:
        vals = [c[which] for c in cells[shape, n] if c[which] is not None]
        return statistics.median(vals) if vals else None

    def fmt(us: float | None) -> str:
        return f"{us:.1f}" if us is not None else "skipped"

    rows: list[str] = []
    for shape in opts.shapes:
        for n in opts.sizes:
            rows.append(f"| {shape} | {n} | "  # create_schedule first, repeats; then the plan's
                        + " | ".join(fmt(median_of(shape, n, k)) for k in (0, 2, 1, 3)) + " |")

    def ratio(shape: str, which: int, lo: int, hi: int) -> tuple[float | None, list[float]]:
        """Median over rounds of the per-kernel ratio hi/lo, and each round's ratio (a round
        measures the sizes of a shape one after the other, so a drift moves both sides)."""
        vals = [b[which] / a[which] for a, b in zip(cells[shape, lo], cells[shape, hi])
                if a[which] and b[which]]
        return (statistics.median(vals) if vals else None), vals

    def fastest_ratio(shape: str, which: int, lo: int, hi: int) -> float | None:
        """Each size's fastest round, hi over lo."""
        a = [c[which] for c in cells[shape, lo] if c[which]]
        b = [c[which] for c in cells[shape, hi] if c[which]]
        return min(b) / min(a) if a and b else None

    print("| shape | kernels | create_schedule µs/kernel, first | repeats "
          "| memory_plan_rewrite µs/kernel, first | repeats |")
    print("|---|---:|---:|---:|---:|---:|")
    print("\n".join(rows))
    lo, mid, hi = min(opts.sizes), 10_000, max(opts.sizes)
    size = lambda n: f"{n // 1000}k" if n % 1000 == 0 else str(n)  # noqa: E731
    for which, label in ((0, "first schedule"), (2, "repeats")):
        print(f"\ncreate_schedule per-kernel ratio {size(hi)}/{size(lo)}, {label} "
              f"(goal <= {SCALING_GOAL}; median over rounds of each round's ratio):")
        for shape in opts.shapes:
            r, each = ratio(shape, which, lo, hi)
            m, _ = ratio(shape, which + 1, lo, hi)
            fast = fastest_ratio(shape, which, lo, hi)
            print(f"- {shape}: {r:.2f} {'ok' if r <= SCALING_GOAL else 'MISSED'} (rounds: "
                  f"{', '.join(f'{x:.2f}' for x in each)}; fastest rounds: {fast:.2f}; "
                  f"memory_plan_rewrite: {f'{m:.2f}' if m is not None else 'n/a (skipped)'})")
    if mid in opts.sizes:
        print(f"\ncreate_schedule at {mid} kernels (goal < {SPEED_GOAL_US:.0f} µs/kernel, "
              "met when both are under it), first / repeats:")
        for shape in opts.shapes:
            a, b = median_of(shape, mid, 0), median_of(shape, mid, 2)
            print(f"- {shape}: {a:.1f} / {b:.1f} µs/kernel "
                  f"{'ok' if max(a, b) < SPEED_GOAL_US else 'MISSED'}")
    if notes:
        print("\nNotes:")
        for note in notes:
            print(f"- {note}")


if __name__ == "__main__":
    main()
