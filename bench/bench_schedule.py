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
with `time.perf_counter` (``--clock thread_time`` for the CPU time of the measuring thread,
steadier on a loaded machine);
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
  emptied arenas go back to the system and come back as fresh pages (at 100k kernels, measured
  at 132042a: 0-0.1 page faults a kernel in create_schedule, ~0.25 in memory_plan_rewrite, up
  to 0.4 µs of system time per kernel, every run). The report counts them: page faults per
  kernel of each call, first and repeats, at every size. On a virtual machine a fault can
  cost several µs (measured on a freshly started one: ~3 µs a page reused soon after it was
  freed, 9-12 µs a page the machine had not backed yet), so a 100k run that takes 0.1-0.2
  faults a kernel can run 1.5-2x as long per kernel as one that takes none, which the 1k runs
  (whose memory is reused) never do: the first place to look when a 100k cell is slow.

Cold (``--no-cold``: off): each round also times tolk's smallest size with the CPU caches
emptied before every timed run (a 64 MiB buffer read line by line after the collection).
Between runs a small graph, its scheduler's tables and the intern table stay in the caches,
and ``gc.collect()``, which walks every tracked object, leaves them there; a 100k-kernel graph
(some 400k nodes, over 100 MB) never fits. The cold cell is the small graph's work from where
the large one always starts; its memory_plan_rewrite runs with the caches emptied again after
the schedule, so it starts cold too. Measured here: a 1k chain scheduled at 2.4 µs per kernel alone,
at 3.3-3.4 in a process that also held a live 100k chain (the collection before each run walked
that one too and pushed the small graph out of the caches) and at 2.2-2.5 there when no
collection ran in between. The sweep also empties the caches of the interpreter's own hot
data, which a run reloads once (a 10-kernel chain took some 30 µs longer cold: 0.03 µs per
kernel at 1k).

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

The peer: where tinygrad is installed, its own `create_schedule` and `memory_plan_rewrite`
(tinygrad.schedule) run on the same graphs built from its UOps (a kernel is
``SINK(arg=KernelInfo(name)).call(out, *reads)``, a written state ``out.after(kernel)``, buffers
``UOp.new_buffer``), in the same fresh-process way, in the first ``--peer-rounds`` rounds (one by
default: it runs 5-10x longer than tolk), with one warm-up run and fewer repeats; its table shows
how many times tolk's time each cell takes, and its own 100k/1k ratios. tinygrad's
create_schedule asks, for every read of a state that another kernel overwrites, whether the
writer is in the reader's backward slice, which on the assign shape grows with the graph: it
is quadratic there (2.6 ms per kernel at 1k, 9.9 at 4k), and those cells are skipped.

A cell is skipped where its projected time for one run (extrapolated from the previous size
with the measured growth exponent; n^2 before two sizes are measured) exceeds its budget:
``--plan-budget`` seconds for memory_plan_rewrite, ``--peer-budget`` for tinygrad's
create_schedule (tolk's is never skipped); pass ``--full`` to run them anyway.

BLAS runs one thread here and in the workers (``OPENBLAS_NUM_THREADS=1`` unless it is set):
nothing measured uses BLAS, and numpy's default pool, started at import, keeps its threads
spinning for a while after (seen here: a 1k chain scheduled back to back right after import
and graph construction read 6.4-6.7 µs per kernel by ``time.process_time``, which counts every
thread of the process, for its first ~20 ms and 2.1-2.4 after, wall time 2.1-2.7 throughout;
the spinning core also shares the caches).

Run: ``python bench/bench_schedule.py`` from the repository root (``--no-peer``: tolk only).
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import statistics
import subprocess
import sys
import time

try:
    import resource  # page faults per run (Unix)
except ImportError:  # pragma: no cover
    resource = None
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy's import: see above
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
# the implementations measured: tolk, and tinygrad (the peer) when it is installed


class Impl(NamedTuple):
    """How one implementation builds a kernel graph, schedules it and plans it."""

    name: str
    buffer: Callable[[int], Any]  # a user buffer of `size` float32s
    tmp: Callable[[int], Any]  # a schedule-internal buffer of `size` float32s
    write: Callable[..., Any]  # write(name, out, *reads): `out` after a kernel writing it
    sink: Callable[..., Any]
    schedule: Callable[[Any], Any]  # create_schedule
    plan: Callable[[Any, list], Any]  # memory_plan_rewrite(linear, held user buffers)
    before_run: Callable[[], None]  # makes every run cold
    warmups: int  # schedules of another graph of the same shape and size before the first
    repeats: dict[int, int]  # timed runs after the first, by size (sizes not listed: 1)


def _tolk_write(name: str, out: UOp, *reads: UOp) -> UOp:
    ast = UOp(Ops.SINK, dtypes.void, (), KernelInfo(name))
    return UOp(Ops.AFTER, out.dtype, (out, UOp(Ops.CALL, dtypes.void, (ast, out, *reads))))


TOLK = Impl("tolk", lambda size: UOp.buffer(F32, size),
            lambda size: UOp.internal_buffer(F32, size), _tolk_write, UOp.sink, create_schedule,
            lambda lin, held: memory_plan_rewrite(lin, held, enabled=True), plan_cache_clear,
            2, REPEATS)
PEER_REPEATS = {1_000: 5, 10_000: 2}  # the peer is 5-10x slower: fewer runs of it


def tinygrad_impl() -> Impl | None:
    """tinygrad's own create_schedule and memory_plan_rewrite on the same graphs, built with
    its UOps (a kernel is ``SINK(arg=KernelInfo(name)).call(out, *reads)``, a written state
    ``out.after(kernel)``, buffers ``UOp.new_buffer``); None when tinygrad is not installed."""
    try:
        from tinygrad.dtype import dtypes as tdt
        from tinygrad.schedule import create_schedule as t_schedule
        from tinygrad.schedule.memory import memory_plan_rewrite as t_plan
        from tinygrad.uop.ops import KernelInfo as TKernelInfo
        from tinygrad.uop.ops import UOp as TUOp
    except ImportError:
        return None

    def buffer(size: int) -> Any:
        return TUOp.new_buffer("CPU", size, tdt.float32)

    def write(name: str, out: Any, *reads: Any) -> Any:
        return out.after(TUOp.sink(arg=TKernelInfo(name=name)).call(out, *reads))

    return Impl("tinygrad", buffer, buffer, write, TUOp.sink, t_schedule,
                lambda lin, held: t_plan(lin, set(held)), lambda: None, 1, PEER_REPEATS)


def _impl(name: str) -> Impl:
    impl = TOLK if name == "tolk" else tinygrad_impl()
    if impl is None:
        raise RuntimeError(f"{name} is not installed")
    return impl


# ---------------------------------------------------------------------------------------------
# graph builders: (sink, held user buffers)


class _Graph:
    """Builds kernels with unique names; sizes vary so the planner's size order matters."""

    def __init__(self, tag: str, impl: Impl):
        self.tag, self.count, self.impl = tag, 0, impl

    def tmp(self) -> Any:
        return self.impl.tmp(256 * (1 + self.count % 7))

    def write(self, out: Any, *reads: Any) -> Any:
        """`out` after a fresh kernel that writes it and reads `reads`."""
        self.count += 1
        return self.impl.write(f"{self.tag}_{self.count - 1}", out, *reads)

    def pad(self, x: Any, n: int) -> Any:
        """Chain kernels after `x` until the graph has `n` kernels."""
        while self.count < n:
            x = self.write(self.tmp(), x)
        return x


def chain(n: int, prefix: str = "", impl: Impl = TOLK) -> tuple[Any, list[Any]]:
    g, inp, out = _Graph(f"{prefix}chain{n}", impl), impl.buffer(256), impl.buffer(256)
    x = g.pad(g.write(g.tmp(), inp), n - 1)
    return impl.sink(g.write(out, x)), [inp, out]


def diamond(n: int, prefix: str = "", impl: Impl = TOLK) -> tuple[Any, list[Any]]:
    g, inp, out = _Graph(f"{prefix}diamond{n}", impl), impl.buffer(256), impl.buffer(256)
    a = g.write(g.tmp(), inp)
    while g.count + 3 <= n - 1:
        b, c = g.write(g.tmp(), a), g.write(g.tmp(), a)
        a = g.write(g.tmp(), b, c)
    return impl.sink(g.write(out, g.pad(a, n - 1))), [inp, out]


def _tree_kernels(producers: int) -> int:
    total, level = producers, producers
    while level > 1:
        level = math.ceil(level / FAN_IN)
        total += level
    return total


def fan_in(n: int, prefix: str = "", impl: Impl = TOLK) -> tuple[Any, list[Any]]:
    g, inp, out = _Graph(f"{prefix}fanin{n}", impl), impl.buffer(256), impl.buffer(256)
    producers = n
    while _tree_kernels(producers) > n - 1:
        producers -= 1
    level = [g.write(g.tmp(), inp) for _ in range(producers)]
    while len(level) > 1:
        level = [g.write(g.tmp(), *level[i:i + FAN_IN]) for i in range(0, len(level), FAN_IN)]
    return impl.sink(g.write(out, g.pad(level[0], n - 1))), [inp, out]


def assign(n: int, prefix: str = "", impl: Impl = TOLK) -> tuple[Any, list[Any]]:
    g, x = _Graph(f"{prefix}assign{n}", impl), impl.buffer(256)
    state, readers = x, []
    for _ in range(n // 2):
        state = g.write(state, state)  # in place: overwrites and reads the current state
        readers.append(g.write(g.tmp(), state))
    return impl.sink(state, *readers), [x]


SHAPES: dict[str, Callable[..., tuple[UOp, list[UOp]]]] = {
    "chain": chain, "diamond": diamond, "fan-in": fan_in, "assign": assign,
}


# ---------------------------------------------------------------------------------------------
# timing


def run_once(sink: Any, held: list[Any], n: int, plan: bool,
             clock: Callable[[], float] = time.perf_counter,
             impl: Impl = TOLK, cold: bool = False) -> tuple[float, float | None]:
    """Seconds for create_schedule and (if `plan`) memory_plan_rewrite, GC off, cold results
    (tolk's planner's remembered offset assignments are cleared first: every run plans);
    `cold`: the CPU caches emptied right before each of the two (`_empty_caches`)."""
    impl.before_run()
    gc.collect()
    gc.disable()
    try:
        if cold:
            _empty_caches()
        f0 = _faults()
        t0 = clock()
        lin = impl.schedule(sink)
        sched = clock() - t0
        f1 = _faults()
        if cold and plan:
            _empty_caches()
        f2 = _faults()
        t1 = clock()
        planned = impl.plan(lin, held) if plan else None
        t2 = clock()
        f3 = _faults()
    finally:
        gc.enable()
    run_faults.append((f1 - f0, f3 - f2 if plan else None))
    if len(lin.src) != n:
        raise AssertionError(f"expected {n} kernels in the LINEAR, got {len(lin.src)}")
    del lin, planned  # freed before the next repeat: its CALLs are rebuilt, not interned hits
    return sched, (t2 - t1) if plan else None


run_faults: list[tuple[int, int | None]] = []  # per `run_once`: page faults of each call


def _faults() -> int:
    """The minor page faults this process took so far (0 where the system does not count
    them): each is a fresh page of memory from the system, some µs each on this machine."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt if resource else 0


_sweep: list[bytearray] = []  # `_empty_caches`'s buffer, made on first use


def _empty_caches() -> None:
    """Read one byte of every 64-byte line of a 64 MiB buffer (twice this machine's last-level
    cache), written once so its pages are its own: what was cached before is evicted."""
    if not _sweep:
        _sweep.append(bytearray(b"\x01") * (64 << 20))
    _sweep[0][::64]  # noqa: B018  (the read is the point)


Times = tuple[float, float | None]  # seconds of create_schedule, of memory_plan_rewrite
# page faults of create_schedule and memory_plan_rewrite, first, then repeats
Faults = tuple[float, float | None, float, float | None]


def measure(shape: str, n: int, plan: bool, clock_name: str,
            impl: Impl = TOLK, cold: bool = False) -> tuple[Times, Times, Faults]:
    """``(first, repeats, faults)`` on a fresh `shape` graph of `n` kernels: the graph's first
    schedule (after a warm-up that schedules and plans another graph of the same shape and size
    ``impl.warmups`` times and frees it: the process's one-time costs are paid, the new graph's
    memory is its own), the medians of ``impl.repeats[n]`` more, and the page faults of the
    first's two calls and, for each call, their median over the repeats (`run_faults`);
    `cold`: every timed run starts from emptied CPU caches (see `COLD`)."""
    clock = getattr(time, clock_name)
    build = SHAPES[shape]
    warm, warm_held = build(n, prefix="warm_", impl=impl)  # never the measured graph's nodes
    for _ in range(impl.warmups):
        run_once(warm, warm_held, n, plan, clock, impl)
    del warm, warm_held
    sink, held = build(n, impl=impl)
    first = run_once(sink, held, n, plan, clock, impl, cold)
    first_faults = run_faults[-1]
    runs = [run_once(sink, held, n, plan, clock, impl, cold)
            for _ in range(impl.repeats.get(n, 1))]
    faults = run_faults[-len(runs):]
    del sink, held
    sched = statistics.median(r[0] for r in runs)
    return first, (sched, statistics.median(r[1] for r in runs) if plan else None), (
        *first_faults, statistics.median(f[0] for f in faults),
        statistics.median(f[1] for f in faults) if plan else None)


def _in_worker(shape: str, n: int, plan: bool, clock_name: str,
               impl: str = "tolk", cold: bool = False) -> tuple[Times, Times, Faults]:
    """`measure` in a fresh Python process: no earlier graph's garbage shapes this one's heap."""
    cmd = [sys.executable, __file__, "--worker", shape, str(n), str(int(plan)), clock_name, impl,
           str(int(cold))]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{shape} {n}: worker failed:\n{done.stderr}")
    first, repeats, faults = json.loads(done.stdout.strip().splitlines()[-1])
    return tuple(first), tuple(repeats), tuple(faults)


Cell = tuple[str, str, int]  # (implementation, shape, kernels)
COLD = "tolk cold"  # the implementation named in cells of tolk's smallest size timed from
# emptied CPU caches: the small graph's work, starting where the largest graph's always starts


class _Plan:
    """Which cells run, decided the first time a cell comes up and kept after: a cell whose
    projected time for one run (from the previous size, with the growth exponent measured
    between the last two sizes, at least 1; n^2 until measured) exceeds its budget is skipped,
    and so, projected from the same size, are the larger ones after it."""

    def __init__(self, plan_budget: float, sched_budget: float, full: bool):
        self.plan_budget, self.sched_budget, self.full = plan_budget, sched_budget, full
        self.decided: dict[Cell, tuple[bool, bool]] = {}  # cell -> (runs at all, plans)
        self.notes: list[str] = []

    def decide(self, cell: Cell, prev: dict[str, tuple[int, float, float]]) -> tuple[bool, bool]:
        """`prev`: for "sched" and "plan", (n, seconds, growth exponent) of the last measured
        size of this implementation and shape in this round."""
        if cell in self.decided:
            return self.decided[cell]
        impl, shape, n = cell
        run, plan = True, True
        for what, budget in (("sched", self.sched_budget), ("plan", self.plan_budget)):
            if what not in prev or self.full or (what == "sched" and impl == "tolk"):
                continue
            m, secs, growth = prev[what]
            projected = secs * (n / m) ** growth
            if projected > budget:
                name = "create_schedule" if what == "sched" else "memory_plan_rewrite"
                self.notes.append(f"{impl} {shape} {n}: {name} skipped, projected "
                                  f"{projected:.0f} s for one run (growth n^{growth:.2f}); "
                                  "--full runs it")
                if what == "sched":
                    run = False
                else:
                    plan = False
        self.decided[cell] = (run, plan)
        return run, plan


def _grow(prev: dict[str, tuple[int, float, float]], what: str, n: int, secs: float) -> None:
    """Record `secs` for `what` at size `n`, with the growth exponent since the last size."""
    growth = 2.0
    if what in prev:
        m, last, _ = prev[what]
        if secs > 0 and last > 0:
            growth = max(1.0, math.log(secs / last) / math.log(n / m))
    prev[what] = (n, secs, growth)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    ap.add_argument("--shapes", nargs="+", choices=list(SHAPES), default=list(SHAPES))
    ap.add_argument("--full", action="store_true", help="never skip a cell by its projected time")
    ap.add_argument("--plan-budget", type=float, default=60.0,
                    help="skip memory_plan_rewrite when one run is projected above this (s)")
    ap.add_argument("--clock", choices=("perf_counter", "thread_time", "process_time"),
                    default="perf_counter",
                    help="thread_time: the CPU time of the measuring thread, steadier on a "
                         "loaded machine (process_time counts every thread of the process)")
    ap.add_argument("--in-process", action="store_true",
                    help="measure every shape and size in this process (default: a fresh process "
                         "for each)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="measure every shape and size this many times, one pass after another; "
                         "cells and ratios are medians over the rounds")
    ap.add_argument("--no-peer", action="store_true", help="do not measure tinygrad")
    ap.add_argument("--peer-rounds", type=int, default=1,
                    help="rounds that measure tinygrad too (the first ones; default 1)")
    ap.add_argument("--peer-budget", type=float, default=60.0,
                    help="skip tinygrad's create_schedule when one run is projected above this (s)")
    ap.add_argument("--no-cold", action="store_true",
                    help="do not time the smallest size from emptied CPU caches")
    ap.add_argument("--worker", nargs=6, help=argparse.SUPPRESS)
    opts = ap.parse_args()
    if opts.rounds < 1 or min(opts.sizes) < 1:
        ap.error("--rounds and every size must be at least 1")
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    if opts.worker:
        shape, n, plan, clock_name, impl, cold = opts.worker
        print(json.dumps(measure(shape, int(n), plan == "1", clock_name, _impl(impl),
                                 cold == "1")))
        return

    sizes = sorted(opts.sizes)
    peer = None if opts.no_peer else tinygrad_impl()
    impls = ["tolk"] + (["tinygrad"] if peer is not None else [])
    reps = ", ".join(f"{n}: {REPEATS.get(n, 1)}" for n in sizes)
    print(f"Python {sys.version.split()[0]}; time.{opts.clock}; {opts.rounds} round(s), medians "
          f"over rounds; first: a fresh graph's first schedule (after a warm-up on another graph "
          f"of its shape and size); repeats: medians of the next runs ({reps}); "
          "gc.collect() before and gc.disable() during every timed run; "
          "graph construction not timed.")
    if peer is not None:
        peer_reps = ", ".join(f"{n}: {PEER_REPEATS.get(n, 1)}" for n in sizes)
        print(f"Peer: tinygrad {_tinygrad_version()} on the same graphs in its own UOps, in the "
              f"first {min(opts.peer_rounds, opts.rounds)} round(s); one warm-up run; repeats "
              f"{peer_reps}.")
    else:
        print("Peer: tinygrad is not installed (or --no-peer); only tolk was timed.")
    print()
    # cell -> per round: µs/kernel of (first create_schedule, first memory_plan_rewrite,
    # repeated create_schedule, repeated memory_plan_rewrite)
    cells: dict[Cell, list[tuple[float | None, ...]]] = {}
    fault_cells: dict[Cell, list[tuple[float | None, ...]]] = {}  # the same, page faults/kernel
    decide = _Plan(opts.plan_budget, opts.peer_budget, opts.full)
    def timed(r: int, impl: str, shape: str, n: int, plan: bool, cold: bool = False) -> Times:
        """Measure a cell (in a worker unless --in-process), keep its µs per kernel under
        `impl` (`COLD` for a cold one), and return the repeats' seconds."""
        first, repeats, faults = (measure(shape, n, plan, opts.clock, _impl(impl), cold)
                                  if opts.in_process else
                                  _in_worker(shape, n, plan, opts.clock, impl, cold))
        cells.setdefault((COLD if cold else impl, shape, n), []).append(tuple(
            t / n * 1e6 if t is not None else None for t in (*first, *repeats)))
        fault_cells.setdefault((COLD if cold else impl, shape, n), []).append(tuple(
            f / n if f is not None else None for f in faults))
        print(f"  done: round {r + 1}: {impl} {shape} {n}{' cold' if cold else ''}",
              file=sys.stderr, flush=True)
        return repeats

    for r in range(opts.rounds):
        for shape in opts.shapes:
            for impl in impls:
                if impl != "tolk" and r >= opts.peer_rounds:
                    continue
                prev: dict[str, tuple[int, float, float]] = {}
                for n in sizes:
                    run, plan = decide.decide((impl, shape, n), prev)
                    if not run:
                        continue
                    repeats = timed(r, impl, shape, n, plan)
                    _grow(prev, "sched", n, repeats[0])
                    if repeats[1] is not None:
                        _grow(prev, "plan", n, repeats[1])
            if not opts.no_cold and len(sizes) > 1:  # tolk's smallest size, from cold caches
                timed(r, "tolk", shape, sizes[0], True, cold=True)
    _report(cells, opts.shapes, sizes, impls, decide.notes, fault_cells)


def _tinygrad_version() -> str:
    try:
        from importlib.metadata import version
        return version("tinygrad")
    except Exception:  # not installed as a distribution: a checkout on the path
        return "(version unknown)"


def _verdict(ratio: float | None) -> str:
    return "n/a" if ratio is None else "ok" if ratio <= SCALING_GOAL else "MISSED"


def _report(cells: dict[Cell, list[tuple[float | None, ...]]], shapes: list[str],
            sizes: list[int], impls: list[str], notes: list[str],
            fault_cells: dict[Cell, list[tuple[float | None, ...]]] | None = None) -> None:
    def median_of(cell: Cell, which: int) -> float | None:
        vals = [c[which] for c in cells.get(cell, ()) if c[which] is not None]
        return statistics.median(vals) if vals else None

    def fmt(us: float | None) -> str:
        return f"{us:.1f}" if us is not None else "skipped"

    def ratio(impl: str, shape: str, which: int, lo: int, hi: int, lo_impl: str = ""
              ) -> tuple[float | None, list[float]]:
        """Median over rounds of the per-kernel ratio hi/lo, and each round's ratio (a round
        measures the sizes of a shape one after the other, so a drift moves both sides);
        `lo_impl`: whose cells are the lo side (default `impl`)."""
        vals = [b[which] / a[which] for a, b in zip(cells.get((lo_impl or impl, shape, lo), ()),
                                                     cells.get((impl, shape, hi), ()))
                if a[which] and b[which]]
        return (statistics.median(vals) if vals else None), vals

    def fastest_ratio(impl: str, shape: str, which: int, lo: int, hi: int) -> float | None:
        """Each size's fastest round, hi over lo."""
        a = [c[which] for c in cells.get((impl, shape, lo), ()) if c[which]]
        b = [c[which] for c in cells.get((impl, shape, hi), ()) if c[which]]
        return min(b) / min(a) if a and b else None

    def opt(x: float | None) -> str:
        return f"{x:.2f}" if x is not None else "n/a"

    print("| shape | kernels | create_schedule µs/kernel, first | repeats "
          "| memory_plan_rewrite µs/kernel, first | repeats |")
    print("|---|---:|---:|---:|---:|---:|")
    for shape in shapes:
        for n in sizes:
            print(f"| {shape} | {n} | "  # create_schedule first, repeats; then the plan's
                  + " | ".join(fmt(median_of(("tolk", shape, n), k)) for k in (0, 2, 1, 3)) + " |")
    lo, mid, hi = sizes[0], 10_000, sizes[-1]
    size = lambda n: f"{n // 1000}k" if n % 1000 == 0 else str(n)  # noqa: E731
    for which, label in ((0, "first schedule"), (2, "repeats")):
        print(f"\ncreate_schedule per-kernel ratio {size(hi)}/{size(lo)}, {label} "
              f"(goal <= {SCALING_GOAL}; median over rounds of each round's ratio), and "
              "memory_plan_rewrite's (the same goal):")
        for shape in shapes:
            r, each = ratio("tolk", shape, which, lo, hi)
            m, _ = ratio("tolk", shape, which + 1, lo, hi)
            fast = fastest_ratio("tolk", shape, which, lo, hi)
            print(f"- {shape}: {opt(r)} {_verdict(r)} (rounds: "
                  f"{', '.join(f'{x:.2f}' for x in each)}; fastest rounds: {opt(fast)}); "
                  f"memory_plan_rewrite: {opt(m)} {_verdict(m)}")
    if any(c[0] == COLD for c in cells):
        heads = (f"create_schedule at {size(lo)} kernels from emptied CPU caches (where a "
                 f"{size(hi)}-kernel graph always starts), µs/kernel first / repeats; {size(hi)} "
                 "over it, median over rounds of each round's ratio, first / repeats:",
                 "memory_plan_rewrite the same way (the caches emptied again after the schedule), "
                 f"µs/kernel first / repeats; {size(hi)} over it, first / repeats:")
        for head, (first, repeats) in zip(heads, ((0, 2), (1, 3))):
            print(f"\n{head}")
            for shape in shapes:
                here = [median_of((COLD, shape, lo), k) for k in (first, repeats)]
                over = [ratio("tolk", shape, k, lo, hi, lo_impl=COLD)[0] for k in (first, repeats)]
                print(f"- {shape}: {fmt(here[0])} / {fmt(here[1])} µs/kernel; "
                      f"{size(hi)} over it {opt(over[0])} / {opt(over[1])}")
    if fault_cells:
        print("\nPage faults per kernel (fresh pages from the system, taken during the timed "
              "call; the median over rounds), create_schedule first / repeats, "
              "memory_plan_rewrite first / repeats:")
        for shape in shapes:
            parts = []
            for n in sizes:
                got = [statistics.median(v) if (v := [c[k] for c in fault_cells.get(
                    ("tolk", shape, n), ()) if c[k] is not None]) else None for k in (0, 2, 1, 3)]
                parts.append(f"{size(n)} " + " / ".join(
                    "n/a" if f is None else f"{f:.3f}" for f in got))
            print(f"- {shape}: " + "; ".join(parts))
    if mid in sizes:
        print(f"\ncreate_schedule at {mid} kernels (goal < {SPEED_GOAL_US:.0f} µs/kernel, "
              "met when both are under it), first / repeats:")
        for shape in shapes:
            a, b = median_of(("tolk", shape, mid), 0), median_of(("tolk", shape, mid), 2)
            ok = a is not None and b is not None and max(a, b) < SPEED_GOAL_US
            print(f"- {shape}: {fmt(a)} / {fmt(b)} µs/kernel {'ok' if ok else 'MISSED'}")
    if "tinygrad" in impls:
        print("\nPeer, the same graphs: tinygrad's create_schedule and memory_plan_rewrite "
              "(µs/kernel; x tolk: tinygrad's repeats over tolk's, each the median of its rounds)")
        print("| shape | kernels | create_schedule first | repeats | x tolk "
              "| memory_plan_rewrite first | repeats | x tolk |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for shape in shapes:
            for n in sizes:
                t = [median_of(("tinygrad", shape, n), k) for k in range(4)]
                mine = [median_of(("tolk", shape, n), k) for k in range(4)]
                times = [t[2] / mine[2] if t[2] and mine[2] else None,
                         t[3] / mine[3] if t[3] and mine[3] else None]
                print(f"| {shape} | {n} | {fmt(t[0])} | {fmt(t[2])} | "
                      f"{'' if times[0] is None else f'{times[0]:.1f}'} | {fmt(t[1])} | "
                      f"{fmt(t[3])} | {'' if times[1] is None else f'{times[1]:.1f}'} |")
        print(f"\ntinygrad's create_schedule per-kernel ratio {size(hi)}/{size(lo)}, first / "
              "repeats (median over its rounds):")
        for shape in shapes:
            a, _ = ratio("tinygrad", shape, 0, lo, hi)
            b, _ = ratio("tinygrad", shape, 2, lo, hi)
            print(f"- {shape}: {opt(a)} / {opt(b)}")
    if notes:
        print("\nNotes:")
        for note in notes:
            print(f"- {note}")


if __name__ == "__main__":
    main()
