"""The same tensor programs scheduled by tolk and by tinygrad 0.14.0, side by side, in one run.

Scheduling is timed apart from graph construction (the tensor ops), which is timed too: tolk
gives each node its form as it builds it (`tolk/uop/form.py`), work a cache hit then does not
do. build new: the builds of the cold runs (schedule cache cleared: for tolk a program it does
not know); build again: those of the cached runs.
- tolk: ``t.schedule_linear()`` (sink -> CALL, kernelize, schedule, memory plan; nothing is
  allocated or run).
- tinygrad on its NULL device: ``t.schedule_linear()`` (transform_to_call, then
  create_linear_with_vars: get_kernel_graph, create_schedule, memory_plan_rewrite), the part
  of ``Tensor.realize`` before ``run_linear``; no kernel is compiled or executed.

Each library, program and size is measured in a fresh Python process (``--in-process``: all in
this one), after a warm-up of that library's imports and tables: one library's heap, caches and
interned graphs never weigh on the other's numbers, nor earlier programs on later ones.
first: the first cold run of the program in its process (tinygrad keeps functools caches of
UOps beyond its schedule cache, so its later cold runs are faster). cold: schedule caches
cleared (tolk ``schedule_cache_clear()``, tinygrad ``tinygrad.schedule.schedule_cache.clear()``),
fresh graph. cached: a fresh identical graph scheduled again with the cache warm. Medians of
--repeats (tinygrad) and --tolk-repeats (tolk); ``gc.collect()`` before each graph is built
and the collector off during each timed call. ``--rounds N`` measures every cell N times, one
pass over all cells after another, and reports the median of the N values (a machine whose load
drifts moves one round). Times are CPU time of this process (`time.process_time`, robust to
other load on the machine; both libraries schedule on one thread, and BLAS runs one thread
here and in the workers unless ``OPENBLAS_NUM_THREADS`` is set).
scale: n=BIG cold over n=SMALL cold, measured in pairs: ``--pairs K`` times a fresh process
schedules the small program and another the big one right after (every other pair big first),
and the scale is the median of the K ratios. The cells of one round are minutes apart (the other
library's runs sit between them), long enough for this machine's speed to change; a pair is
seconds apart. The ratio of the two cells' medians is in the JSON (``scale_of_medians``). Each
tolk measurement is the median of --tolk-repeats runs; tinygrad's takes --tg-pair-repeats runs
(default 1, its first schedule of the program in the process: a tinygrad run of a big program
takes seconds to half a minute).
arena/floor: planned arena bytes over the peak of live bytes of the unplanned schedule (tolk:
`linear_stats` under ``NO_MEMORY_PLANNER=1``; tinygrad: the LINEAR its `memory_plan_rewrite`
receives, same floor definition, alignment 256). all buffers: bytes of every distinct buffer the
planned schedule names (inputs, outputs, arenas, and buffers left out of the plan).
Programs are in bench/vs_programs.py, memory helpers in bench/vs_memory.py.

Run: ``PYTHONPATH=. python bench/vs_tinygrad.py [--json out.json]``
"""

from __future__ import annotations

import argparse
import cProfile
import datetime
import gc
import json
import os
import platform
import pstats
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("DEV", "NULL")  # tinygrad: schedule only, never a real device
# one BLAS thread, set before numpy's import: nothing here runs BLAS, and the default pool's
# threads spin for a while after import, which `time.process_time` (every thread) counts
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))

import vs_programs as P  # noqa: E402
from vs_memory import tg_memory, tg_total, tolk_memory, tolk_total  # noqa: E402

import tolk.schedule as tks  # noqa: E402
from tolk.tensor import Tensor as TolkTensor  # noqa: E402

try:
    import tinygrad.schedule as tgs
    from tinygrad import Tensor as TgTensor
except ImportError:  # tolk columns only
    TgTensor = None

GOAL_SPEEDUP, GOAL_SCALE, GOAL_HIT = 10.0, 5.5, 0.1


def _timed(fn):
    """(CPU seconds of this process, result): both libraries schedule on one thread, and CPU
    time does not count the time other processes on a busy machine take from us. The
    collector is off; `_runs` collects before building the graph."""
    gc.disable()
    try:
        st = time.process_time()
        out = fn()
        return time.process_time() - st, out
    finally:
        gc.enable()


def _runs(build, clear, repeats):
    """Seconds of each ``build().schedule_linear()`` and of each build, calling `clear` first;
    the last LINEAR."""
    times, builds, lin = [], [], None
    for _ in range(repeats):
        lin = None  # free the previous schedule before building the next graph
        if clear:
            clear()
        # collected before the build, not between build and schedule: a full collection walks
        # the whole heap and leaves the CPU caches cold, a fixed ~0.05-0.1 ms that no realize
        # right after building its graph pays (a tenth of a small program's cache hit)
        gc.collect()
        bt, t = _timed(build)
        dt, lin = _timed(t.schedule_linear)
        times.append(dt)
        builds.append(bt)
        del t
    return times, builds, lin


# ---------------------------------------------------------------------------------------------
# one program at one size


def _libs():
    """{library: (Tensor class, clear its schedule cache, memory, total bytes)}, those present."""
    libs = {"tolk": (TolkTensor, tks.schedule_cache_clear, tolk_memory, tolk_total)}
    if TgTensor is not None:
        libs["tinygrad"] = (TgTensor, tgs.schedule_cache.clear, tg_memory, tg_total)
    return libs


def _program(name):
    return P.CHAINS.get(name) or P.MODELS[name]


def measure_lib(lib, name, n, repeats):
    """One library on one program at one size (n None: a model): its cells of the row."""
    T, clear, memory, total = _libs()[lib]
    fn, args = _program(name), (() if n is None else (n,))
    build = lambda: fn(T, *args)  # noqa: E731
    colds, new_builds, lin = _runs(build, clear, repeats)
    cacheds, builds, lin2 = _runs(build, None, repeats)
    cold, cached = statistics.median(colds), statistics.median(cacheds)
    kernels, total_bytes = len(lin.src), total(lin)
    if len(lin2.src) != kernels:
        raise RuntimeError(f"{lib} {name} {n}: cached schedule has {len(lin2.src)} kernels, "
                           f"cold has {kernels}")
    del lin, lin2
    arena, floor = memory(build)
    return {"kernels": kernels, "first_s": colds[0], "cold_s": cold, "cached_s": cached,
            "cold_runs_s": colds, "cached_runs_s": cacheds,
            "build_new_s": statistics.median(new_builds), "build_s": statistics.median(builds),
            "ms_per_kernel": cold * 1e3 / max(kernels, 1), "hit_over_miss": cached / cold,
            "arena_bytes": arena, "floor_bytes": floor, "total_bytes": total_bytes,
            "arena_over_floor": arena / floor if floor else 1.0}


def _warm_up(lib):
    """Imports and pattern tables of `lib` made ready, outside every measurement."""
    T, clear, _, _ = _libs()[lib]
    P.softmax_chain(T, 2).schedule_linear()
    clear()


def _in_worker(lib, name, n, repeats, mode="--worker"):
    """`measure_lib` (``--cold-worker``: `cold_median`) in a fresh Python process: neither
    library's heap, caches and interned graphs from earlier programs (its own or the other
    library's) weigh on this one."""
    cmd = [sys.executable, __file__, mode, lib, name, str(n or 0), str(repeats)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{lib} {name} {n}: worker failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def cold_median(lib, name, n, repeats):
    """Median seconds of `repeats` cold schedules of program `name` at size `n` (caches cleared
    before each, a fresh graph each time)."""
    T, clear, _, _ = _libs()[lib]
    fn = _program(name)
    times, _, _ = _runs(lambda: fn(T, n), clear, repeats)
    return statistics.median(times)


def _cold_in_worker(lib, name, n, repeats):
    return _in_worker(lib, name, n, repeats, "--cold-worker")


def paired_scales(lib, name, small, big, pairs, repeats, isolate=True):
    """`pairs` ratios big/small of cold schedule times, each from two measurements made one
    right after the other (each in a fresh process unless not `isolate`; every other pair
    measures the big program first, so a steady drift of the machine's speed cancels)."""
    run = _cold_in_worker if isolate else cold_median
    ratios = []
    for k in range(pairs):
        if k % 2:
            b = run(lib, name, big, repeats)
            a = run(lib, name, small, repeats)
        else:
            a = run(lib, name, small, repeats)
            b = run(lib, name, big, repeats)
        ratios.append(b / a)
    return ratios


def measure(name, n, repeats, isolate=True, tolk_repeats=None):
    """Both libraries on one program: the row. tolk takes `tolk_repeats` (it is fast: more
    repeats give steadier medians), tinygrad `repeats`."""
    row = {"program": name, "n": n}
    for lib in _libs():
        reps = tolk_repeats or repeats if lib == "tolk" else repeats
        if isolate:
            row[lib] = _in_worker(lib, name, n, reps)
        else:
            row[lib] = measure_lib(lib, name, n, reps)
            gc.collect()
    if "tinygrad" in row:
        row["speedup_cold"] = row["tinygrad"]["cold_s"] / row["tolk"]["cold_s"]
        row["speedup_cached"] = row["tinygrad"]["cached_s"] / row["tolk"]["cached_s"]
    return row


_TIMES = ("first_s", "cold_s", "cached_s", "build_new_s", "build_s")


def combine_rounds(rounds):
    """One row per cell from several rounds: each time the median over the rounds (kernels and
    memory are the same every round), the ratios taken again from those medians."""
    if len(rounds) == 1:
        return rounds[0]
    rows = []
    for cell in zip(*rounds):
        row = {"program": cell[0]["program"], "n": cell[0]["n"], "rounds": len(cell)}
        for lib in ("tolk", "tinygrad"):
            if lib not in cell[0]:
                continue
            out = dict(cell[0][lib])
            for key in _TIMES:
                if key not in cell[0][lib]:
                    continue
                out[key] = statistics.median(r[lib][key] for r in cell)
                out[key.replace("_s", "_rounds_s")] = [r[lib][key] for r in cell]
            out["ms_per_kernel"] = out["cold_s"] * 1e3 / max(out["kernels"], 1)
            out["hit_over_miss"] = out["cached_s"] / out["cold_s"]
            row[lib] = out
        if "tinygrad" in row:
            row["speedup_cold"] = row["tinygrad"]["cold_s"] / row["tolk"]["cold_s"]
            row["speedup_cached"] = row["tinygrad"]["cached_s"] / row["tolk"]["cached_s"]
        rows.append(row)
    return rows


def add_linearity(rows, small, big):
    by = {(r["program"], r["n"]): r for r in rows}
    for r in rows:
        if r["n"] == big and (r["program"], small) in by:
            s = by[(r["program"], small)]
            for lib in ("tolk", "tinygrad"):
                if lib in r:
                    r[lib]["scale_of_medians"] = r[lib]["cold_s"] / s[lib]["cold_s"]
                    r[lib]["scale"] = r[lib]["scale_of_medians"]  # until pairs replace it


def add_paired_scales(rows, small, big, pairs, repeats, isolate=True):
    """Each library's ``scale`` on each chain: the median of `pairs` paired ratios (see the
    module docstring); `repeats` maps a library to its repeats per measurement."""
    for r in rows:
        if r["n"] != big or not any(x["program"] == r["program"] and x["n"] == small
                                    for x in rows):
            continue
        for lib in ("tolk", "tinygrad"):
            if lib in r:
                ratios = paired_scales(lib, r["program"], small, big, pairs, repeats[lib],
                                       isolate)
                r[lib]["scale_pairs"] = ratios
                r[lib]["scale"] = statistics.median(ratios)
                print(f"  done pairs: {lib} {r['program']}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# report


def _ms(s):
    return f"{s * 1e3:.1f}" if s >= 0.01 else f"{s * 1e3:.2f}"


def _lib(lib, key, fmt):
    return lambda r: fmt(r[lib][key]) if lib in r and key in r[lib] else "n/a"


def _both(key, fmt):  # "tolk/tinygrad"
    def cell(r):
        a, b = _lib("tolk", key, fmt)(r), _lib("tinygrad", key, fmt)(r)
        return "-" if a == b == "n/a" else f"{a}/{b}"
    return cell


def _row(key, fmt):
    return lambda r: format(r[key], fmt) if key in r else "n/a"


COLUMNS = [  # (header, cell of a row)
    ("program", lambda r: r["program"]), ("n", lambda r: str(r["n"] or "-")),
    ("kernels tolk/tg", _both("kernels", str)),
    ("first ms tolk/tg", _both("first_s", _ms)),
    ("cold ms tolk", _lib("tolk", "cold_s", _ms)), ("cold ms tg", _lib("tinygrad", "cold_s", _ms)),
    ("tg/tolk cold", _row("speedup_cold", ".1f")),
    ("cached ms tolk", _lib("tolk", "cached_s", _ms)),
    ("cached ms tg", _lib("tinygrad", "cached_s", _ms)),
    ("tg/tolk cached", _row("speedup_cached", ".1f")),
    ("ms/kernel tolk/tg", _both("ms_per_kernel", "{:.3g}".format)),
    ("hit/miss tolk/tg", _both("hit_over_miss", "{:.3f}".format)),
    ("scale tolk/tg", _both("scale", "{:.2f}".format)),
    ("arena/floor tolk/tg", _both("arena_over_floor", "{:.3f}".format)),
    ("build ms new tolk/tg", _both("build_new_s", _ms)),
    ("build ms again tolk/tg", _both("build_s", _ms)),
    ("arena KB tolk/tg", _both("arena_bytes", lambda b: f"{b / 1024:.0f}")),
    ("all buffers KB tolk/tg", _both("total_bytes", lambda b: f"{b / 1024:.0f}")),
]


def table(rows) -> str:
    out = ["| " + " | ".join(h for h, _ in COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    out += ["| " + " | ".join(cell(r) for _, cell in COLUMNS) + " |" for r in rows]
    return "\n".join(out)


def goals(rows) -> dict[str, list[str]]:
    """Each goal -> the rows that miss it (empty: met)."""
    miss = {"speed": [], "linear": [], "cache": [], "memory": [], "all buffers": []}
    for r in rows:
        tag = f"{r['program']}@{r['n']}" if r["n"] else r["program"]
        t, g = r["tolk"], r.get("tinygrad")
        if g is not None and r["speedup_cold"] < GOAL_SPEEDUP:
            miss["speed"].append(f"{tag} ({r['speedup_cold']:.1f}x)")
        if t.get("scale", 0) > GOAL_SCALE:
            miss["linear"].append(f"{tag} ({t['scale']:.2f})")
        if t["hit_over_miss"] >= GOAL_HIT:
            miss["cache"].append(f"{tag} ({t['hit_over_miss']:.3f})")
        if g is not None and t["arena_over_floor"] > g["arena_over_floor"] + 1e-9:
            miss["memory"].append(
                f"{tag} ({t['arena_over_floor']:.3f} > {g['arena_over_floor']:.3f})")
        if g is not None and t["total_bytes"] > g["total_bytes"]:
            miss["all buffers"].append(f"{tag} ({t['total_bytes']} > {g['total_bytes']} B)")
    return miss


def _git() -> str:
    try:
        return subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True,
                              text=True, cwd=Path(__file__).parent, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "?"


def header() -> str:
    return (f"{datetime.datetime.now().isoformat(timespec='seconds')} | tolk {_git()} | Python "
            f"{platform.python_version()} | {platform.processor() or platform.machine()}, "
            f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f} | tinygrad "
            f"{'0.14.0, DEV=' + os.environ['DEV'] if TgTensor else 'absent'}")


def profile(name, n, top, cached=False):
    """cProfile of one tolk schedule (cold, or `cached`): the top functions by own time."""
    fn = P.CHAINS.get(name) or P.MODELS[name]
    build = lambda: fn(TolkTensor, n) if name in P.CHAINS else fn(TolkTensor)  # noqa: E731
    P.softmax_chain(TolkTensor, 2).schedule_linear()  # one-time setup stays out of the profile
    tks.schedule_cache_clear()
    if cached:
        build().schedule_linear()
    t = build()
    prof = cProfile.Profile()
    prof.runcall(t.schedule_linear)
    pstats.Stats(prof).sort_stats("tottime").print_stats(top)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs=2, default=(200, 1000), metavar=("SMALL", "BIG"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--model-repeats", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=1,
                    help="measure every cell this many times, minutes apart; each time is the "
                         "median of its round values (steadier on a machine whose load drifts)")
    ap.add_argument("--tolk-repeats", type=int, default=9,
                    help="repeats of tolk's runs, chains and models (default 9)")
    ap.add_argument("--pairs", type=int, default=5,
                    help="paired measurements of each chain's scale (0: the ratio of the two "
                         "cells' medians)")
    ap.add_argument("--tg-pair-repeats", type=int, default=1,
                    help="tinygrad's runs per paired measurement, median taken (default 1: its "
                         "first schedule of the program in a fresh process; tolk takes "
                         "--tolk-repeats)")
    ap.add_argument("--only", nargs="*", help="program names (default: all)")
    ap.add_argument("--json", help="also write the results to this JSON file")
    ap.add_argument("--in-process", action="store_true",
                    help="measure everything in this process (default: a fresh process for each "
                         "library, program and size)")
    ap.add_argument("--profile", metavar="PROGRAM[:N]",
                    help="cProfile tolk on one program, then exit")
    ap.add_argument("--cached", action="store_true", help="with --profile: profile a cache hit")
    ap.add_argument("--worker", nargs=4, metavar=("LIB", "PROGRAM", "N", "REPEATS"),
                    help=argparse.SUPPRESS)
    ap.add_argument("--cold-worker", nargs=4, metavar=("LIB", "PROGRAM", "N", "REPEATS"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    for name in ("repeats", "model_repeats", "rounds", "tolk_repeats", "tg_pair_repeats"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.pairs < 0:
        ap.error("--pairs must be 0 or more")
    if args.profile:
        name, _, n = args.profile.partition(":")
        return profile(name, int(n or args.sizes[1]), 25, args.cached)
    if args.worker:
        lib, name, n, repeats = args.worker
        _warm_up(lib)
        print(json.dumps(measure_lib(lib, name, int(n) or None, int(repeats))))
        return None
    if args.cold_worker:
        lib, name, n, repeats = args.cold_worker
        _warm_up(lib)
        print(json.dumps(cold_median(lib, name, int(n), int(repeats))))
        return None

    if args.in_process:
        for lib in _libs():
            _warm_up(lib)
    print(header(), flush=True)
    want = lambda k: not args.only or k in args.only  # noqa: E731
    isolate = not args.in_process
    cells = [(name, n, args.repeats) for name in P.CHAINS for n in args.sizes if want(name)]
    cells += [(name, None, args.model_repeats) for name in P.MODELS if want(name)]
    rounds = []
    for k in range(args.rounds):
        rows = []
        for name, n, repeats in cells:
            rows.append(measure(name, n, repeats, isolate, args.tolk_repeats))
            print(f"  done round {k + 1}: {name}{'' if n is None else f' n={n}'}",
                  file=sys.stderr, flush=True)
        rounds.append(rows)
    rows = combine_rounds(rounds)
    add_linearity(rows, *args.sizes)
    if args.pairs:
        add_paired_scales(rows, *args.sizes, args.pairs,
                          {"tolk": args.tolk_repeats, "tinygrad": args.tg_pair_repeats}, isolate)
    print(table(rows))
    miss = goals(rows)
    print("\nGoals (tolk): " + "; ".join(
        f"{g}: {'met' if not m else 'MISSED on ' + ', '.join(m)}" for g, m in miss.items()))
    print("speed: tolk cold >= 10x faster than tinygrad cold; linear: n=BIG/n=SMALL time <= 5.5 "
          f"({f'median of {args.pairs} paired ratios' if args.pairs else 'ratio of medians'}); "
          "cache: cached/cold < 0.1; memory: tolk arena/floor <= tinygrad's; "
          "all buffers (not an issue goal): tolk's total bytes <= tinygrad's.")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"header": header(), "sizes": list(args.sizes), "repeats": args.repeats,
             "tolk_repeats": args.tolk_repeats, "rounds": args.rounds, "pairs": args.pairs,
             "isolated": isolate, "rows": rows, "goals_missed": miss}, indent=1))


if __name__ == "__main__":
    main()
