"""A memory plan as a picture: one self-contained SVG, time across, byte offset up.

Each buffer is a rectangle spanning its lifetime (first to last call, inclusive) and its
bytes; hovering shows its id, size and lifetime. Horizontal lines mark the floor (the peak
of live bytes) and the arena. Coordinates are integers and the look lives in CSS classes,
so ten thousand buffers stay a file of about a megabyte.
"""

from __future__ import annotations

import math
import re
from xml.sax.saxutils import escape as _escape

from tolk.schedule.planner import floor_bytes

# characters XML 1.0 does not allow (C0 controls but tab, newline, return; lone surrogates; two
# non-characters), shown as U+FFFD so an id holding one still makes a well-formed picture
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def escape(text: str) -> str:
    """`text` as XML character data: markup escaped, characters XML cannot hold replaced."""
    return _escape(_NOT_XML.sub("\ufffd", text))


WIDTH, HEIGHT = 1200, 640  # the plot area, in pixels
LEFT, RIGHT, TOP, BOTTOM = 90, 230, 40, 60  # margins: axis labels left and below, line labels right
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#e15759")

_STYLE = """
text{font:13px sans-serif;fill:#222}
path{fill:none}
.bg{fill:#fff}
.head{font-size:15px;font-weight:bold}
.ax{stroke:#444;stroke-width:1}
.grid{stroke:#ddd;stroke-width:1}
.floor{stroke:#2a9d2a;stroke-width:2;stroke-dasharray:8 4}
.arena{stroke:#c0392b;stroke-width:2}
.lf{fill:#2a9d2a}
.la{fill:#c0392b}
.end{text-anchor:end}
.mid{text-anchor:middle}
rect{shape-rendering:crispEdges}
rect:hover{stroke:#000;stroke-width:2}
""" + "".join(f".c{k}{{fill:{c}}}\n" for k, c in enumerate(PALETTE))


def plan_svg(
    sizes,
    firsts,
    lasts,
    offsets,
    arena: int,
    labels=None,
    *,
    floor: int | None = None,
    title: str = "memory plan",
) -> str:
    """The plan as SVG text: buffer i is a rectangle over calls firsts[i]..lasts[i] and
    bytes offsets[i]..offsets[i]+sizes[i], with `labels[i]` (default: i) in its tooltip.

    `floor` defaults to the peak of live bytes of `sizes`; pass it when sizes were rounded
    up for planning. Buffers of size 0 take no bytes and are not drawn.
    """
    n = len(sizes)
    labels = [str(i) for i in range(n)] if labels is None else [str(x) for x in labels]
    floor = floor_bytes(sizes, firsts, lasts) if floor is None else floor
    t0 = min(firsts, default=0)
    t1 = max((l + 1 for l in lasts), default=1)
    top = max(arena, floor, 1) * 1.08
    xs = WIDTH / max(t1 - t0, 1)
    ys = HEIGHT / top

    def x(t: float) -> int:
        return LEFT + round((t - t0) * xs)

    def y(b: float) -> int:
        return TOP + HEIGHT - round(b * ys)

    w, h = LEFT + WIDTH + RIGHT, TOP + HEIGHT + BOTTOM
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}">',
        f"<title>{escape(title)}</title><style>{_STYLE}</style>",
        f'<rect class="bg" x="0" y="0" width="{w}" height="{h}"/>',
    ]
    out += _axes(t0, t1, top, x, y)
    out += _rects(sizes, firsts, lasts, offsets, labels, x, y)
    close = abs(y(floor) - y(arena)) < 16  # labels would collide: floor's goes below its line
    out += _level(y(floor), "floor", f"floor {_human(floor)}", "lf", 18 if close else 4)
    ratio = f" ({arena / floor:.3f}\u00d7 floor)" if floor else ""
    out += _level(y(arena), "arena", f"arena {_human(arena)}{ratio}", "la", -6 if close else 4)
    out.append(
        f'<text class="head" x="{LEFT}" y="{TOP - 10}">{escape(title)}: {n} buffers, '
        f"arena {_human(arena)}{ratio}</text>"
    )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _rects(sizes, firsts, lasts, offsets, labels: list[str], x, y) -> list[str]:
    """One rectangle per buffer of nonzero size, at least a pixel each way, with a tooltip."""
    out = ["<g>"]
    for i, size in enumerate(sizes):
        if size <= 0:
            continue
        x0, x1 = x(firsts[i]), x(lasts[i] + 1)
        y0, y1 = y(offsets[i] + size), y(offsets[i])
        out.append(
            f'<rect class="c{i % len(PALETTE)}" x="{x0}" y="{y0}" width="{max(x1 - x0, 1)}" '
            f'height="{max(y1 - y0, 1)}"><title>{escape(labels[i])}: {size:,} B at '
            f"{offsets[i]:,}, calls {firsts[i]}..{lasts[i]}</title></rect>"
        )
    out.append("</g>")
    return out


def _axes(t0: int, t1: int, top: float, x, y) -> list[str]:
    """Frame, ticks with grid lines, and the two axis labels."""
    out = [f'<path class="ax" d="M{LEFT} {TOP}V{TOP + HEIGHT}H{LEFT + WIDTH}"/>']
    for t in sorted({round(t) for t in _ticks(t0, t1)}):
        out.append(f'<path class="grid" d="M{x(t)} {TOP}V{TOP + HEIGHT}"/>')
        out.append(f'<text class="mid" x="{x(t)}" y="{TOP + HEIGHT + 18}">{t}</text>')
    unit, name = _unit(top)
    for v in _ticks(0, top / unit):
        b = v * unit
        out.append(f'<path class="grid" d="M{LEFT} {y(b)}H{LEFT + WIDTH}"/>')
        label = f"{v:g} {name}" if v else "0"
        out.append(f'<text class="end" x="{LEFT - 6}" y="{y(b) + 4}">{label}</text>')
    out.append(
        f'<text class="mid" x="{LEFT + WIDTH // 2}" y="{TOP + HEIGHT + 45}">'
        "time (call index)</text>"
    )
    out.append(
        f'<text class="mid" transform="translate(18 {TOP + HEIGHT // 2}) rotate(-90)">'
        "byte offset</text>"
    )
    return out


def _level(yy: int, cls: str, text: str, label_cls: str, dy: int) -> list[str]:
    """A horizontal line across the plot with its label to the right, `dy` below it."""
    return [
        f'<path class="{cls}" d="M{LEFT} {yy}H{LEFT + WIDTH}"/>',
        f'<text class="{label_cls}" x="{LEFT + WIDTH + 8}" y="{yy + dy}">{escape(text)}</text>',
    ]


def _ticks(lo: float, hi: float, most: int = 8) -> list[float]:
    """Round tick values in [lo, hi]: 1, 2 or 5 times a power of ten apart, at most `most`+1."""
    step = 10.0 ** math.floor(math.log10(max(hi - lo, 1e-9) / most))
    while (hi - lo) / step > most:
        step = step * 2.5 if f"{step:e}".startswith("2") else step * 2
    k = math.ceil(lo / step)
    return [k * step + j * step for j in range(int((hi - k * step) / step + 1e-9) + 1)]


def _unit(b: float) -> tuple[int, str]:
    """The largest binary unit not above `b` (bytes at least)."""
    for k, name in reversed(list(enumerate(("B", "KiB", "MiB", "GiB", "TiB")))):
        if b >= 1024**k or k == 0:
            return 1024**k, name
    raise AssertionError("unreachable")


def _human(b: float) -> str:
    """Bytes with a binary unit: 512 B, 1.5 KiB, 3.0 MiB, ..."""
    unit, name = _unit(b)
    return f"{b:.0f} B" if unit == 1 else f"{b / unit:.1f} {name}"
