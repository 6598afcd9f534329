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
