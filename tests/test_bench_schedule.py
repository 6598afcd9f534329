"""bench/bench_schedule.py runs end to end on tiny graphs (the README's command, small sizes)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_bench_schedule_prints_its_tables_ratios_and_cold_cells():
    cmd = [sys.executable, str(ROOT / "bench" / "bench_schedule.py"), "--sizes", "20", "60",
           "--shapes", "chain", "assign", "--rounds", "2", "--no-peer", "--in-process",
           "--clock", "thread_time"]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for shape in ("chain", "assign"):
        for n in (20, 60):
            assert f"| {shape} | {n} |" in out
    assert "create_schedule per-kernel ratio 60/20, first schedule" in out
    assert "create_schedule at 20 kernels from emptied CPU caches" in out
    assert "memory_plan_rewrite the same way (the caches emptied again" in out
    cold = [line for line in out.splitlines() if line.startswith("- chain:") and "over it" in line]
    assert len(cold) == 2 and not any("n/a" in c or "skipped" in c for c in cold), out
    assert "time.thread_time; 2 round(s)" in out
    faults = [line for line in out.splitlines() if line.startswith("- assign: 20 ")]
    assert len(faults) == 1 and "; 60 " in faults[0] and "n/a" not in faults[0], out


def test_run_once_times_neither_cache_sweep_of_a_cold_run(monkeypatch):
    # a cold run empties the caches before the schedule and again before the plan; the sweeps
    # are not part of either time
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    import bench_schedule as bs

    now = [0.0]

    class Linear:
        src = (None,) * 3

    def advance(dt, out=None):
        now[0] += dt
        return out

    monkeypatch.setattr(bs, "_empty_caches", lambda: advance(100.0))
    impl = bs.TOLK._replace(schedule=lambda sink: advance(1.0, Linear()),
                            plan=lambda lin, held: advance(2.0), before_run=lambda: None)
    clock = lambda: now[0]  # noqa: E731
    before = len(bs.run_faults)
    assert bs.run_once(None, [], 3, True, clock, impl, cold=True) == (1.0, 2.0)
    assert bs.run_once(None, [], 3, False, clock, impl, cold=True) == (1.0, None)
    assert bs.run_once(None, [], 3, True, clock, impl) == (1.0, 2.0)
    runs = bs.run_faults[before:]  # page faults of each call, per run
    assert len(runs) == 3 and runs[1][1] is None
    assert all(type(f) is int and f >= 0 for run in runs for f in run if f is not None)
