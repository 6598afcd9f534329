"""The tolk command: demo, schedule, and the DEBUG output."""

from __future__ import annotations

import json

import numpy as np

from tolk import Context, Tensor
from tolk.cli import main


def test_debug_1_prints_one_line_per_schedule_and_2_one_per_kernel(capsys):
    x = Tensor(np.ones((4, 4), np.float32))
    with Context(DEBUG=1):
        (x.softmax(-1) + 1).realize()
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "kernels" in out[0] and "cache" in out[0] and "MB" in out[0]
    with Context(DEBUG=2):
        (x.softmax(-1) + 2).realize()
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 + 3 and all("us" in line for line in out[1:])


def test_demo_small_gpt_matches_numpy(capsys, tmp_path):
    page = tmp_path / "report.html"
    assert main(["demo", "--size", "small", "--html", str(page)]) == 0
    out = capsys.readouterr().out
    assert "kernels" in out and "max abs error" in out
    html = page.read_text()
    assert "<svg" in html and "<table>" in html


def test_demo_json_for_mlp(capsys):
    assert main(["demo", "--model", "mlp", "--size", "small", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert (res["kernels"] >= 1 and res["max_abs_error"] < 1e-3
            and res["arena_bytes"] >= res["floor_bytes"])


def test_schedule_command_reports_every_schedule_of_a_script(tmp_path, capsys):
    script = tmp_path / "user.py"
    script.write_text(
        "import numpy as np\nfrom tolk import Tensor\n"
        "x = Tensor(np.ones((8, 8), np.float32))\n"
        "(x @ x).relu().realize()\n"
        "print((x.softmax(-1) * 2).numpy().sum())\n"
    )
    assert main(["schedule", "--json", str(script)]) == 0
    out = capsys.readouterr().out
    records = json.loads(out)  # the script's own print went to stderr
    assert len(records) == 2 and records[0]["kernels"] == 1 and records[1]["kernels"] >= 2


REUSED = (  # five intermediates, two of them at one offset with one size at different times
    "import numpy as np\nfrom tolk import Tensor\n"
    "x = Tensor(np.arange(256, dtype=np.float32))\n"
    "t1 = (x + 1).contiguous()\nt2 = (t1 * 2).contiguous()\n"
    "t3 = Tensor.cat(t2, t2 + 1).contiguous()\nt4 = (t3[:256] * t3[256:]).contiguous()\n"
    "t5 = (t4 - 1).contiguous()\nprint((t5 + 1).sum().numpy())\n")


def test_schedule_command_and_debug_report_each_buffer_where_the_plan_reuses_a_view(
        tmp_path, capsys):
    script = tmp_path / "user.py"
    script.write_text(REUSED)
    assert main(["schedule", "--json", str(script)]) == 0
    (r,) = json.loads(capsys.readouterr().out)
    assert r["planned"] and r["unplanned_bytes"] == 6 * 1024
    assert r["floor_bytes"] <= r["arena_bytes"] < r["unplanned_bytes"]
    with Context(NO_MEMORY_PLANNER=1):
        assert main(["schedule", str(script)]) == 0
    out = capsys.readouterr().out
    assert "6.00 KB -> 6.00 KB (not planned) (floor 3.00 KB, 2.000x)" in out
    with Context(DEBUG=1, SCACHE=0):
        exec(REUSED, {})
    line = capsys.readouterr().out.splitlines()[0]
    assert "memory 0.01 MB -> 0.00 MB (floor 0.00 MB)" in line  # 6 KB -> 3 KB (floor 3 KB)


def test_the_html_timeline_draws_each_buffer_with_its_own_lifetime():
    from tolk.report import lifetimes
    from tolk.schedule.planner import find_overlaps

    ns: dict = {}
    exec(REUSED.replace("print((t5 + 1).sum().numpy())", "out = (t5 + 1).sum()"), ns)
    planned = ns["out"].schedule_linear()
    with Context(NO_MEMORY_PLANNER=1):
        unplanned = ns["out"].schedule_linear()
    sizes, firsts, lasts, offsets, _, arena = lifetimes(planned, unplanned)
    assert len(sizes) == 5 and not find_overlaps(sizes, firsts, lasts, offsets)
    assert max(o + s for o, s in zip(offsets, sizes)) <= arena
    assert find_overlaps(*lifetimes(planned)[:4])  # the views alone: two drawn as one


def test_the_timeline_pairs_each_buffer_of_a_join_with_its_own_view():
    # two zero-sized buffers share one planned SLICE node: the buffers of a join were paired
    # with its views by position, and a dropped duplicate shifted the later ones
    from schedule_helpers import F32, buf, write

    from tolk.report import lifetimes
    from tolk.schedule import create_schedule, memory_plan_rewrite
    from tolk.uop import Ops, UOp

    z1, z2, b3, out = buf(-1, size=0), buf(-2, size=0), buf(-3, size=16), buf(5)
    join = UOp(Ops.MSTACK, F32, (write(z1, "w1"), write(z2, "w2"), write(b3, "w3")))
    lin = create_schedule(UOp.sink(write(out, "r", join)))
    sizes, firsts, lasts, _, _, _ = lifetimes(memory_plan_rewrite(lin), lin)
    assert (sizes, firsts, lasts) == ([0, 0, 64], [0, 1, 2], [3, 3, 3])


def test_schedule_command_on_a_missing_script_fails_cleanly(capsys):
    assert main(["schedule", "/nonexistent/script.py"]) == 2
    assert "nonexistent" in capsys.readouterr().err


def test_schedule_command_runs_a_script_as_python_would(tmp_path, capsys):
    folder = tmp_path / "a project"
    folder.mkdir()
    (folder / "helper.py").write_text("VALUE = 3\n")
    (folder / "main.py").write_text(
        "import sys\nimport numpy as np\nfrom tolk import Tensor\nimport helper\n"
        "def main():\n"
        "    (Tensor(np.arange(4, dtype=np.float32)) * helper.VALUE).realize()\n"
        "    return 0\n"
        "if __name__ == '__main__':\n    sys.exit(main())\n")
    assert main(["schedule", str(folder / "main.py")]) == 0  # its folder is on sys.path
    assert "1 schedule(s) realized" in capsys.readouterr().out  # sys.exit(0) still reports
    bad = tmp_path / "bad.py"
    bad.write_text("import numpy as np\nfrom tolk import Tensor\n"
                   "(Tensor(np.ones(2, np.float32)) + 1).realize()\nopen('missing.txt')\n")
    assert main(["schedule", str(bad)]) == 1  # the script's error, not tolk's
    out, err = capsys.readouterr()
    assert "1 schedule(s) realized" in out and "missing.txt" in err
    assert "inspect_script" not in err  # the traceback starts in the script
    assert main(["schedule", str(folder)]) == 2
    assert "no such script file" in capsys.readouterr().err


def test_demo_refuses_an_html_path_it_cannot_write_before_running(tmp_path, capsys):
    dangling = tmp_path / "dangling.html"
    dangling.symlink_to(tmp_path / "missing" / "target.html")
    for path in (tmp_path / "missing" / "x.html", tmp_path / ("a" * 300 + ".html"), dangling,
                 tmp_path):
        assert main(["demo", "--html", str(path)]) == 2  # before the run: no report printed
        out, err = capsys.readouterr()
        assert "cannot write --html" in err and len(err.splitlines()) == 1 and not out
    assert dangling.is_symlink() and sorted(p.name for p in tmp_path.iterdir()) == [dangling.name]


def test_a_script_that_clears_the_schedule_hooks_does_not_break_the_command(tmp_path, capsys):
    script = tmp_path / "clears.py"
    script.write_text("import tolk.callify\ntolk.callify.schedule_hooks.clear()\n")
    assert main(["schedule", str(script)]) == 0
    assert "0 schedule(s) realized" in capsys.readouterr().out


def test_python_m_tolk_is_the_command():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "tolk", "--version"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip()
