"""Benchmark tolk's UOp IR against tinygrad 0.14.0's UOp on 100,000-node graphs.

Two shapes: a chain ``x = ADD(x, c)`` and a diamond ladder ``x = ADD(ADD(x, c), MUL(x, c))``
(every node used twice). Each repeat builds the graph from a fresh BUFFER leaf, so no node is
an intern-table hit and no per-node cache (toposort, key) is warm; the graph is freed before
the next repeat (and before import, so the imported graph is built cold too). The garbage
collector is off inside timed regions, as in `timeit`. Medians over `REPEATS`.

Run: ``PYTHONPATH=. python bench/bench_uop.py`` (with tinygrad installed for the comparison).
"""

from __future__ import annotations

import gc
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

# one BLAS thread, set before numpy's import: nothing here runs BLAS, and the default pool's
# threads spin on the other core for a while after import
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
try:
    import tolk  # noqa: F401  (PYTHONPATH or an install wins over the checkout)
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

N = 100_000
REPEATS = 5
DEEP_LIMIT = 4 * N  # recursion limit we fall back to if a library recurses per node
STEPS = ("construction", "toposort", "key", "export", "teardown", "import")


class Lib:
    """What the benchmark needs from one IR: a constructor, its ops and the walks to time."""

    def __init__(self, name: str, uop: Any, ops: Any, dt: Any, leaf: Callable[[], Any],
                 const: Any, sink: Callable, export: Callable | None, load: Callable | None):
        self.name, self.uop, self.ops, self.dt, self.leaf = name, uop, ops, dt, leaf
        self.const, self.sink, self.export, self.load = const, sink, export, load
        self.key: Callable | None = (lambda u: u.key) if hasattr(uop, "key") else None


def tolk_lib() -> Lib:
    from tolk.dtype import dtypes
    from tolk.uop import Ops, UOp, export_graph, import_graph

    dt = dtypes.float32
    return Lib("tolk", UOp, Ops, dt, lambda: UOp.buffer(dt, 16), UOp.const(dt, 1.0),
               UOp.sink, export_graph, import_graph)


def tinygrad_lib() -> Lib | None:
    try:
        from tinygrad.dtype import dtypes
        from tinygrad.uop.ops import Ops, UOp
    except ImportError:
        return None
    dt = dtypes.float
    return Lib("tinygrad", UOp, Ops, dt, lambda: UOp.new_buffer("CPU", 16, dt),
               UOp.const(1.0, dt), UOp.sink, None, None)  # no graph serializer in tinygrad


def chain(lib: Lib) -> Any:
    U, add, dt, c = lib.uop, lib.ops.ADD, lib.dt, lib.const
    x = lib.leaf()
    for _ in range(N - 3):
        x = U(add, dt, (x, c))
    return lib.sink(x)


def diamond(lib: Lib) -> Any:
    U, add, mul, dt, c = lib.uop, lib.ops.ADD, lib.ops.MUL, lib.dt, lib.const
    x = lib.leaf()
    for _ in range((N - 3) // 3):
        x = U(add, dt, (U(add, dt, (x, c)), U(mul, dt, (x, c))))
    return lib.sink(x)


def timed(fn: Callable[[], Any], notes: list[str], who: str) -> tuple[float, Any]:
    """(milliseconds, result) of `fn()`; retries once with a deep recursion limit if needed."""
    try:
        t0 = time.perf_counter()
        out = fn()
        return (time.perf_counter() - t0) * 1e3, out
    except RecursionError:
        sys.setrecursionlimit(max(sys.getrecursionlimit(), DEEP_LIMIT))
        notes.append(f"{who} raised RecursionError; retried with sys.setrecursionlimit"
                     f"({DEEP_LIMIT})")
        t0 = time.perf_counter()
        out = fn()
        return (time.perf_counter() - t0) * 1e3, out


def sample(lib: Lib, build: Callable[[Lib], Any], notes: list[str]) -> dict[str, float]:
    """Milliseconds per step for one cold run on a freshly built graph (absent: unsupported)."""
    who = f"{lib.name} {build.__name__}"
    out: dict[str, float] = {}
    gc.collect()
    gc.disable()
    try:
        out["construction"], root = timed(lambda: build(lib), notes, who + " construction")
        out["toposort"], order = timed(lambda: root.toposort(), notes, who + " toposort")
        notes.append(f"{who}: {len(order)} nodes")
        del order
        if lib.key is not None:
            out["key"], key = timed(lambda: lib.key(root), notes, who + " key")
        if lib.export is not None:
            out["export"], data = timed(lambda: lib.export(root), notes, who + " export")
        t0 = time.perf_counter()
        root = None  # the only reference: frees the whole graph now
        out["teardown"] = (time.perf_counter() - t0) * 1e3
        if lib.load is not None:
            out["import"], back = timed(lambda: lib.load(data), notes, who + " import")
            assert back.key == key, f"{who}: import did not round-trip"
    finally:
        gc.enable()
    return out


def bench(libs: list[Lib], build: Callable[[Lib], Any], notes: list[str]) -> list[dict]:
    """Median milliseconds per step for each library; repeats alternate between libraries
    so that drift in machine load hits both alike."""
    runs: list[list[dict[str, float]]] = [[] for _ in libs]
    for _ in range(REPEATS):
        for lib, samples in zip(libs, runs):
            samples.append(sample(lib, build, notes))
    return [{s: statistics.median([r[s] for r in rs]) for s in STEPS if s in rs[0]} for rs in runs]


def cell(ms: float | None, lib: Lib | None) -> str:
    if lib is None:
        return "not installed"
    return "n/a" if ms is None else f"{ms:.1f}"


def main() -> None:
    tolk, tg = tolk_lib(), tinygrad_lib()
    notes: list[str] = []
    print(f"N = {N} nodes, median of {REPEATS} repeats, Python {sys.version.split()[0]}\n")
    print("| operation | tolk (ms) | tinygrad (ms) | ratio tolk/tinygrad |")
    print("|---|---:|---:|---:|")
    for build in (chain, diamond):
        medians = bench([tolk] if tg is None else [tolk, tg], build, notes)
        a, b = medians[0], medians[1] if tg is not None else {}
        for step in STEPS:
            ta, tb = a.get(step), b.get(step)
            ratio = f"{ta / tb:.2f}" if ta is not None and tb else "n/a"
            print(f"| {build.__name__}: {step} | {cell(ta, tolk)} | {cell(tb, tg)} | {ratio} |")
    print("\nNotes:")
    if tg is None:
        print("- tinygrad is not installed; only tolk was timed.")
    else:
        print("- tinygrad has no graph export/import (its pickle support recurses per node).")
    print("- teardown = `del root`: freeing the graph, intern-table entries included.")
    for note in dict.fromkeys(notes):
        print(f"- {note}")


if __name__ == "__main__":
    main()
