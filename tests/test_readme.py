"""The README's tour runs as written."""

from __future__ import annotations

import pathlib
import re

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def test_readme_tour_runs(capsys):
    code = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert code, "the README has no python block"
    namespace: dict = {}  # the blocks build on each other, as a reader's session would
    for block in code:
        exec(compile(block, str(README), "exec"), namespace)  # noqa: S102
    assert "[" in capsys.readouterr().out
