"""``tolk schedule script.py``: run a user's script and report every schedule it realized."""

from __future__ import annotations

import argparse
import json
import runpy
import sys

from tolk.report import format_bytes, kernel_rows
from tolk.schedule import linear_stats


class ScheduleRecorder:
    """Collects a summary of every schedule realized while it is installed."""

    def __init__(self) -> None:
        self.records: list[dict] = []

    def __call__(self, linear, var_vals, seconds: float) -> None:
        st = linear_stats(linear)
        self.records.append({
            "kernels": len(linear.src), "schedule_ms": seconds * 1e3, "var_vals": dict(var_vals),
            "unplanned_bytes": st.unplanned_bytes, "arena_bytes": st.arena_total,
            "floor_bytes": st.floor_bytes, "kernel_names": [k.name for k in kernel_rows(linear)],
        })


def run_script(path: str, argv: list[str]) -> ScheduleRecorder:
    from tolk.callify import schedule_hooks

    rec = ScheduleRecorder()
    schedule_hooks.append(rec)
    old_argv = sys.argv
    sys.argv = [path, *argv]
    try:
        runpy.run_path(path, run_name="__main__")
    finally:
        sys.argv = old_argv
        schedule_hooks.remove(rec)
    return rec


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("script", help="a Python script that uses tolk")
    p.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    p.add_argument("--json", action="store_true", help="print the records as JSON")


def main(args: argparse.Namespace) -> int:
    try:
        rec = run_script(args.script, args.args)
    except FileNotFoundError as e:
        print(f"tolk schedule: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(rec.records, indent=2))
        return 0
    print(f"{len(rec.records)} schedule(s) realized by {args.script}")
    for i, r in enumerate(rec.records):
        ratio = r["arena_bytes"] / r["floor_bytes"] if r["floor_bytes"] else 1.0
        print(f"#{i}: {r['kernels']} kernels in {r['schedule_ms']:.2f} ms | memory "
              f"{format_bytes(r['unplanned_bytes'])} -> {format_bytes(r['arena_bytes'])} "
              f"(floor {format_bytes(r['floor_bytes'])}, {ratio:.3f}x)"
              + (f" | vars {r['var_vals']}" if r["var_vals"] else ""))
        names = r["kernel_names"]
        print("    " + ", ".join(names[:8])
              + (f", ... ({len(names) - 8} more)" if len(names) > 8 else ""))
    return 0


def register(subparsers) -> None:
    """Add the `schedule` sub-command to the `tolk` command."""
    p = subparsers.add_parser("schedule", help="run a script and report every schedule it realized",
                              description=__doc__)
    add_arguments(p)
    p.set_defaults(run=main)
