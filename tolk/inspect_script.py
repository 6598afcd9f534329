"""``tolk schedule script.py``: run a user's script and report every schedule it realized."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import runpy
import sys
import traceback

from tolk.report import format_bytes, kernel_rows


class ScheduleRecorder:
    """Collects a summary of every schedule realized while it is installed."""

    def __init__(self) -> None:
        self.records: list[dict] = []

    def __call__(self, linear, var_vals, seconds: float, stats) -> None:
        st = stats()
        self.records.append({
            "kernels": len(linear.src), "schedule_ms": seconds * 1e3, "var_vals": dict(var_vals),
            "unplanned_bytes": st.unplanned_bytes, "arena_bytes": st.arena_total,
            "planned": bool(st.arena_bytes), "floor_bytes": st.floor_bytes,
            "kernel_names": [k.name for k in kernel_rows(linear)],
        })


def run_script(path: str, argv: list[str], stdout=None) -> tuple[ScheduleRecorder, int]:
    """Run the script at `path` as ``python path argv...`` would (its folder first on
    ``sys.path``, ``sys.argv`` set), recording every schedule it realizes: ``(recorder, exit
    status)``. ``sys.exit`` ends it with that status; an exception it raises is printed (its
    traceback) and gives status 1, the schedules before it still recorded. `stdout`: where the
    script's output goes (default: the real stdout)."""
    from tolk.callify import schedule_hooks

    rec = ScheduleRecorder()
    schedule_hooks.append(rec)
    old_argv, old_path = sys.argv, sys.path[:]
    sys.argv = [path, *argv]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    status = 0
    try:
        with contextlib.redirect_stdout(stdout or sys.stdout):
            runpy.run_path(path, run_name="__main__")
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if e.code is not None and not isinstance(e.code, int):
            print(e.code, file=sys.stderr)
    except Exception as e:  # the script's error: its traceback from the script's own frames
        tb, own = e.__traceback__, os.path.abspath(path)
        while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) != own:
            tb = tb.tb_next
        traceback.print_exception(type(e), e, tb or e.__traceback__)
        status = 1
    finally:
        sys.argv, sys.path[:] = old_argv, old_path
        if rec in schedule_hooks:  # (the script may have cleared the hooks)
            schedule_hooks.remove(rec)
    return rec, status


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("script", help="a Python script that uses tolk")
    p.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    p.add_argument("--json", action="store_true", help="print the records as JSON")


def main(args: argparse.Namespace) -> int:
    if not os.path.isfile(args.script):
        print(f"tolk schedule: no such script file: {args.script!r}", file=sys.stderr)
        return 2
    # with --json the script's own output goes to stderr: stdout holds the JSON alone
    rec, status = run_script(args.script, args.args, sys.stderr if args.json else None)
    if args.json:
        print(json.dumps(rec.records, indent=2))
        return status
    print(f"{len(rec.records)} schedule(s) realized by {args.script}")
    for i, r in enumerate(rec.records):
        used = r["arena_bytes"] if r["planned"] else r["unplanned_bytes"]
        ratio = used / r["floor_bytes"] if r["floor_bytes"] else 1.0
        print(f"#{i}: {r['kernels']} kernels in {r['schedule_ms']:.2f} ms | memory "
              f"{format_bytes(r['unplanned_bytes'])} -> {format_bytes(used)}"
              f"{'' if r['planned'] else ' (not planned)'} "
              f"(floor {format_bytes(r['floor_bytes'])}, {ratio:.3f}x)"
              + (f" | vars {r['var_vals']}" if r["var_vals"] else ""))
        names = r["kernel_names"]
        print("    " + ", ".join(names[:8])
              + (f", ... ({len(names) - 8} more)" if len(names) > 8 else ""))
    return status


def register(subparsers) -> None:
    """Add the `schedule` sub-command to the `tolk` command."""
    p = subparsers.add_parser("schedule", help="run a script and report every schedule it realized",
                              description=__doc__)
    add_arguments(p)
    p.set_defaults(run=main)
