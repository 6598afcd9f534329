"""``tolk demo``: a built-in model through tolk, checked against the same model in numpy.

Builds the model with deterministic random weights, reports how its schedule was built
(kernels, cold and cached schedule time, memory without planning, planned arena, floor), runs
the forward pass, and compares it with the plain-numpy forward (run time and max abs error).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import replace

import numpy as np

from tolk import models
from tolk.helpers import Context
from tolk.report import format_bytes, format_html, format_text, schedule_report, timeline_svg

SIZES = ("small", "default", "large")
RUNS = {"small": 5, "default": 5, "large": 3}  # timed runs of tolk and of numpy; medians shown


def _configs(model: str, size: str):
    if model == "gpt":
        base = models.GPTConfig()
        return {"small": replace(base, layers=2, dim=128, seq=32, vocab=256),
                "default": base, "large": models.GPT2_SMALL}[size]
    if model == "mlp":
        base = models.MLPConfig()
        return {"small": replace(base, batch=16, hidden=128), "default": base,
                "large": replace(base, batch=512, hidden=2048)}[size]
    base = models.ResNetConfig(size=64, width=16, classes=100)
    return {"small": models.RESNET_TINY, "default": base, "large": models.ResNetConfig()}[size]


def _build(model: str, cfg):
    """``(forward, numpy_forward)`` for a model and config: `forward()` builds the lazy tolk
    output (weights and input are tolk tensors made once), `numpy_forward()` runs the plain
    numpy model on the same values."""
    from tolk.tensor import Tensor

    if model == "gpt":
        w, inp = models.init_gpt_weights(cfg), models.make_tokens(cfg)
        fwd_tolk, fwd_numpy = models.gpt_forward_tolk, models.gpt_forward_numpy
    elif model == "mlp":
        w, inp = models.init_mlp_weights(cfg), models.make_mlp_input(cfg)
        fwd_tolk, fwd_numpy = models.mlp_forward_tolk, models.mlp_forward_numpy
    else:
        w, inp = models.init_resnet_weights(cfg), models.make_resnet_input(cfg)
        fwd_tolk, fwd_numpy = models.resnet_forward_tolk, models.resnet_forward_numpy
    tw, tx = models.as_tensors(w), Tensor(inp)
    return (lambda: fwd_tolk(tw, tx, cfg)), (lambda: fwd_numpy(w, inp, cfg))


class _Progress:
    """One line per step on stderr, with the time the step took."""

    def __init__(self, quiet: bool):
        self.quiet = quiet
        self.t0 = 0.0

    def start(self, what: str) -> None:
        self.t0 = time.perf_counter()
        if not self.quiet:
            print(f"  {what} ...", end="", file=sys.stderr, flush=True)

    def done(self) -> float:
        dt = time.perf_counter() - self.t0
        if not self.quiet:
            print(f" {dt:.2f} s", file=sys.stderr, flush=True)
        return dt


def run_demo(model: str = "gpt", size: str = "default", html_path: str | None = None,
             as_json: bool = False, quiet: bool = False) -> dict:
    cfg = _configs(model, size)
    prog = _Progress(quiet or as_json)
    prog.start(f"building {model} ({size})")
    forward, numpy_forward = _build(model, cfg)
    out = forward()
    prog.done()
    prog.start("scheduling")
    rep = schedule_report(out)
    planned = out.schedule_linear()
    unplanned = None
    if html_path:
        with Context(NO_MEMORY_PLANNER=1):  # the same calls: each buffer's own lifetime
            unplanned = out.schedule_linear()
    prog.done()
    prog.start("running tolk (first run compiles kernels)")
    got = out.numpy()
    first_run = prog.done()
    runs = RUNS[size]
    prog.start(f"running tolk and numpy {runs} times each (cached schedule and kernels)")
    tolk_times, numpy_times = [], []
    for _ in range(runs):  # alternating, so a change in the machine's load meets both
        again = forward()  # a fresh graph of the same program: built outside the timing
        t0 = time.perf_counter()
        got2 = again.numpy()
        tolk_times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        want = numpy_forward()
        numpy_times.append(time.perf_counter() - t0)
    prog.done()
    tolk_run, numpy_run = statistics.median(tolk_times), statistics.median(numpy_times)
    err = float(np.max(np.abs(got.astype(np.float64) - want))) if want.size else 0.0
    same = bool(np.array_equal(got, got2))
    result = {"model": model, "size": size, "config": repr(cfg), **rep.to_dict(),
              "first_run_s": first_run, "run_s": tolk_run, "numpy_s": numpy_run, "runs": runs,
              "max_abs_error": err, "repeat_identical": same}
    result.pop("kernel_rows")
    if html_path:
        page = format_html(rep, f"tolk demo: {model} ({size})", timeline_svg(planned, unplanned),
                           {f"run (s, median of {runs})": f"{tolk_run:.3f}",
                            f"numpy (s, median of {runs})": f"{numpy_run:.3f}",
                            "max abs error": f"{err:.3g}"})
        with open(html_path, "w") as f:
            f.write(page)
    if as_json:
        print(json.dumps(result, indent=2))
    else:
        print(format_text(rep, f"tolk demo: {model} ({size}) {cfg}"))
        print(f"  run time           {tolk_run:8.3f} s   (numpy {numpy_run:.3f} s, "
              f"ratio {tolk_run / max(numpy_run, 1e-9):.2f}; medians of {runs} runs each; "
              f"first run {first_run:.3f} s)")
        print(f"  max abs error      {err:.3g} vs the numpy forward"
              f"{'' if same else '  (repeat run differs!)'}")
        print(f"  unplanned -> planned: {format_bytes(rep.unplanned_bytes)} -> "
              f"{format_bytes(rep.arena_bytes)}")
        if html_path:
            print(f"  report written to {html_path}")
    return result


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", choices=("gpt", "mlp", "resnet"), default="gpt")
    p.add_argument("--size", choices=SIZES, default="default",
                   help="small, default (gpt: 4 layers, dim 256, seq 64) or large "
                        "(GPT-2 small, ResNet-18 at 224)")
    p.add_argument("--html", metavar="FILE", help="write a self-contained HTML report")
    p.add_argument("--json", action="store_true", help="print the report as JSON")


def main(args: argparse.Namespace) -> int:
    if args.html:  # a path that cannot be written fails now, not after the whole run
        existed = os.path.lexists(args.html)
        try:
            with open(args.html, "a"):  # opened as the report will be (not emptied here)
                pass
        except OSError as e:
            print(f"tolk demo: cannot write --html {args.html!r}: {e.strerror or e}",
                  file=sys.stderr)
            return 2
        if not existed:
            os.remove(args.html)
    try:
        res = run_demo(args.model, args.size, args.html, args.json)
    except OSError as e:  # the report, if the path went away meanwhile
        print(f"tolk demo: cannot write --html {args.html!r}: {e.strerror or e}", file=sys.stderr)
        return 2
    return 0 if res["max_abs_error"] < 1e-2 else 1


def register(subparsers) -> None:
    """Add the `demo` sub-command to the `tolk` command."""
    p = subparsers.add_parser("demo",
                              help="run a built-in model through tolk and check it against numpy",
                              description=__doc__.split("\n\n")[0])
    add_arguments(p)
    p.set_defaults(run=main)
