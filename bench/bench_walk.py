"""How far a graph's size alone slows a pass: a bare walk against `create_schedule`.

The bare walk is the part of `create_schedule`'s pass that finds the AFTERs: an iterative
depth-first walk from the sink that marks every node it enters (the same gate: no kernel
AST, no LINEAR body) and does nothing else. It follows the graph's pointers, node to
source tuple to node, so each step waits for the one before: from the CPU caches (a 1k-kernel
graph) a step is a few ns, from memory (a 100k-kernel graph, over 100 MB) it is a memory
latency, and no order of the walk's own work hides it. Its 100k/1k ratio per kernel is the
part of create_schedule's ratio (bench_schedule.py, goal <= 1.3) that comes with the graph,
not with what the pass does per kernel.

Each shape and size runs in a fresh Python process on bench_schedule's graphs; a cell is the
median of the runs after the first (gc collected before and off during each), µs per kernel
by the measuring thread's CPU time; with ``--rounds N`` cells are medians over rounds.
Run: ``python bench/bench_walk.py`` from the repository root.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy's import (see bench_schedule)
sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_schedule  # noqa: E402  (its graph builders; it puts the checkout on the path)

from tolk.schedule import create_schedule  # noqa: E402
from tolk.uop import KernelInfo, Ops, UOp  # noqa: E402

SIZES = (1_000, 10_000, 100_000)
RUNS = {1_000: 12, 10_000: 6, 100_000: 4}


def bare_walk(sink: UOp) -> int:
    """Mark every node create_schedule's walk enters, in its order; the number entered.
    The loop is `tolk.schedule._schedule_pass`'s descent copied on purpose (keep the two
    alike): the point is to time that walk without the pass's work."""
    tok, linear, ksink = object(), Ops.LINEAR, Ops.SINK
    sink._mark = tok
    frames, entered = [iter(sink.src)], 1
    while frames:
        for s in frames[-1]:
            if s.src and s._mark is not tok:
                op = s.op
                if op is linear or op is ksink and isinstance(s.arg, KernelInfo):
                    continue
                s._mark = tok
                entered += 1
                frames.append(iter(s.src))
                break
        else:
            frames.pop()
    return entered


def measure(shape: str, n: int) -> tuple[float, float]:
    """µs per kernel of the bare walk and of create_schedule on one fresh graph."""
    sink, _ = bench_schedule.SHAPES[shape](n)
    out = []
    for fn in (bare_walk, create_schedule):
        times = []
        for _ in range(RUNS.get(n, 3)):
            gc.collect()
            gc.disable()
            try:
                t0 = time.thread_time()
                result = fn(sink)
                times.append(time.thread_time() - t0)
            finally:
                gc.enable()
            del result
        out.append(statistics.median(times[1:]) / n * 1e6)
    return out[0], out[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    ap.add_argument("--shapes", nargs="+", choices=list(bench_schedule.SHAPES),
                    default=list(bench_schedule.SHAPES))
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    opts = ap.parse_args()
    if opts.worker:
        print(json.dumps(measure(opts.worker[0], int(opts.worker[1]))))
        return
    if opts.rounds < 1 or min(opts.sizes) < 1:
        ap.error("--rounds and every size must be at least 1")
    sizes = sorted(opts.sizes)
    cells: dict[tuple[str, int], list[tuple[float, float]]] = {}
    for _ in range(opts.rounds):
        for shape in opts.shapes:
            for n in sizes:
                done = subprocess.run([sys.executable, __file__, "--worker", shape, str(n)],
                                      capture_output=True, text=True)
                if done.returncode != 0:
                    raise RuntimeError(f"{shape} {n}: worker failed:\n{done.stderr}")
                cells.setdefault((shape, n), []).append(
                    tuple(json.loads(done.stdout.strip().splitlines()[-1])))
    print(f"Python {sys.version.split()[0]}; time.thread_time; µs per kernel, medians over "
          f"{opts.rounds} round(s) of the runs after each graph's first")
    print()
    print("| shape | kernels | bare walk | create_schedule | walk share |")
    print("|---|---:|---:|---:|---:|")
    med = {k: (statistics.median(v[0] for v in vs), statistics.median(v[1] for v in vs))
           for k, vs in cells.items()}
    for shape in opts.shapes:
        for n in sizes:
            w, c = med[shape, n]
            print(f"| {shape} | {n} | {w:.2f} | {c:.2f} | {w / c:.0%} |")
    lo, hi = sizes[0], sizes[-1]
    if lo != hi:
        print()
        print(f"Per kernel, {hi} over {lo}:")
        for shape in opts.shapes:
            (w0, c0), (w1, c1) = med[shape, lo], med[shape, hi]
            print(f"- {shape}: bare walk {w1 / w0:.2f} (+{w1 - w0:.2f} µs); create_schedule "
                  f"{c1 / c0:.2f} (+{c1 - c0:.2f} µs); the walk's part of the growth "
                  f"{(w1 - w0) / (c1 - c0):.0%}" if c1 != c0 else f"- {shape}: no growth")


if __name__ == "__main__":
    main()
