"""What a schedule costs: kernels, schedule time, memory; as text, JSON or a small HTML page.

Used by ``tolk demo``, ``tolk schedule`` and the benchmarks. Schedules are built with
`Tensor.schedule_linear`, so producing a report allocates and runs nothing.
"""

from __future__ import annotations

import html
import time
from dataclasses import asdict, dataclass, field

from tolk.helpers import Context
from tolk.schedule import LinearStats, buffers_of, linear_stats, schedule_cache_clear
from tolk.uop.ops import KernelInfo, Ops, UOp


@dataclass(frozen=True)
class KernelRow:
    name: str
    inputs: int
    outputs: int
    nbytes: int


@dataclass(frozen=True)
class ScheduleReport:
    """One schedule: its kernels, how long building it took, and its memory.

    `unplanned_bytes`: every intermediate in its own allocation; `arena_bytes`: the planned
    arenas; `floor_bytes`: the peak of live intermediate bytes (no plan can beat it).
    """

    kernels: int
    schedule_ms_cold: float
    schedule_ms_cached: float
    unplanned_bytes: int
    arena_bytes: int
    floor_bytes: int
    kernel_rows: list[KernelRow] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        return self.arena_bytes / self.floor_bytes if self.floor_bytes else 1.0

    def to_dict(self) -> dict:
        d = asdict(self)
        d["ratio"] = self.ratio
        return d


def _arg_bytes(a: UOp) -> int:
    if a.op is Ops.SLICE:
        return a.arg[1]
    if a.op is Ops.BUFFER:
        return a.nbytes
    return 0


def kernel_rows(linear: UOp) -> list[KernelRow]:
    """Name, inputs, outputs and bytes touched of every call (the first argument is written)."""
    rows = []
    for call in linear.src:
        ast = call.src[0]
        name = ast.arg.name if isinstance(ast.arg, KernelInfo) else ast.op.name.lower()
        args = [a for a in call.src[1:] if a.op is not Ops.BIND]
        rows.append(KernelRow(name, max(0, len(args) - 1), 1 if args else 0,
                              sum(_arg_bytes(a) for a in args)))
    return rows


def schedule_report(*tensors) -> ScheduleReport:
    """Schedule `tensors` cold (empty cache) and cached, and measure memory; runs nothing."""
    first, rest = tensors[0], tensors[1:]
    schedule_cache_clear()
    t0 = time.perf_counter()
    planned = first.schedule_linear(*rest)
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    first.schedule_linear(*rest)
    cached = time.perf_counter() - t0
    with Context(NO_MEMORY_PLANNER=1):
        unplanned = first.schedule_linear(*rest)
    st: LinearStats = linear_stats(planned)
    raw = linear_stats(unplanned)
    return ScheduleReport(len(planned.src), cold * 1e3, cached * 1e3, raw.unplanned_bytes,
                          st.arena_total, raw.floor_bytes, kernel_rows(planned))


def _leaf_pairs(planned: UOp, unplanned: UOp) -> list[tuple[UOp, UOp]]:
    """(planned leaf, the unplanned leaf it stands for) under one argument of a call, each
    unplanned leaf once: the planned argument is the unplanned one with its buffers replaced
    (`map_join_leaves`), so the two are walked in step (two distinct buffers can share one
    planned node: zero-sized ones at one offset, say)."""
    pairs: list[tuple[UOp, UOp]] = []
    seen: set[UOp] = set()
    todo = [(planned, unplanned)]
    while todo:
        p, r = todo.pop()
        if r in seen:
            continue
        seen.add(r)
        if r.op is Ops.MSTACK or r.op is Ops.MSELECT:
            todo.extend(reversed(list(zip(p.src, r.src))))
        elif p.op is Ops.BUFFER or p.op is Ops.SLICE:
            pairs.append((p, r))
    return pairs


def lifetimes(linear: UOp, unplanned: UOp | None = None
              ) -> tuple[list[int], list[int], list[int], list[int], list[str], int]:
    """(sizes, firsts, lasts, offsets, labels, arena) of the planned views of the largest arena.

    A planned view is a SLICE node, and buffers placed at one offset with one size and dtype
    at different times are one node: drawn as one buffer over both lifetimes. Given the
    schedule before planning (`unplanned`: the same calls in the same order), each of its
    buffers is drawn with its own lifetime at the offset its SLICE took."""
    views: dict[UOp, list] = {}  # a buffer (or view) -> [first, last, its SLICE]
    for i, call in enumerate(linear.src):
        raw = unplanned.src[i].src[1:] if unplanned is not None else None
        for j, a in enumerate(call.src[1:]):
            pairs = _leaf_pairs(a, raw[j]) if raw is not None else \
                [(v, v) for v in buffers_of(a, (Ops.BUFFER, Ops.SLICE))]
            for v, b in pairs:
                if v.op is Ops.SLICE:
                    views.setdefault(b, [i, i, v])[1] = i
    arenas: dict[UOp, None] = {v.src[0]: None for _, _, v in views.values()}
    if not arenas:
        return [], [], [], [], [], 0
    arena = max(arenas, key=lambda a: a.size)
    mine = [life for life in views.values() if life[2].src[0] is arena]
    return ([v.arg[1] for _, _, v in mine], [f for f, _, _ in mine], [la for _, la, _ in mine],
            [v.arg[0] for _, _, v in mine],
            [f"{v.dtype.name}[{v.arg[1] // v.dtype.itemsize}]" for _, _, v in mine],
            arena.size)


def format_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    return f"{n:.2f} GB"


def format_text(r: ScheduleReport, title: str = "schedule") -> str:
    return "\n".join([
        f"{title}",
        f"  kernels            {r.kernels}",
        f"  schedule (cold)    {r.schedule_ms_cold:8.2f} ms",
        f"  schedule (cached)  {r.schedule_ms_cached:8.2f} ms",
        f"  memory unplanned   {format_bytes(r.unplanned_bytes)}",
        f"  memory planned     {format_bytes(r.arena_bytes)}   "
        f"(floor {format_bytes(r.floor_bytes)}, arena/floor {r.ratio:.3f})",
    ])


def timeline_svg(linear: UOp, unplanned: UOp | None = None) -> str:
    """The memory timeline of a planned LINEAR's largest arena, as a self-contained SVG (each
    buffer on its own when the LINEAR before planning is given: see `lifetimes`)."""
    sizes, firsts, lasts, offsets, labels, arena = lifetimes(linear, unplanned)
    from tolk.schedule.planviz import plan_svg

    return plan_svg(sizes, firsts, lasts, offsets, arena, labels=labels)


def format_html(r: ScheduleReport, title: str, svg: str = "", extra: dict | None = None) -> str:
    """A self-contained page: summary, the kernel list, and the memory timeline."""
    rows = "\n".join(
        f"<tr><td>{i}</td><td>{html.escape(k.name)}</td><td>{k.inputs}</td><td>{k.outputs}</td>"
        f"<td>{k.nbytes}</td></tr>" for i, k in enumerate(r.kernel_rows))
    summary = {"kernels": r.kernels, "schedule cold (ms)": f"{r.schedule_ms_cold:.2f}",
               "schedule cached (ms)": f"{r.schedule_ms_cached:.2f}",
               "memory unplanned": format_bytes(r.unplanned_bytes),
               "memory planned": format_bytes(r.arena_bytes), "floor": format_bytes(r.floor_bytes),
               "arena/floor": f"{r.ratio:.3f}", **(extra or {})}
    items = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>"
                    for k, v in summary.items())
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:2px 8px;text-align:left}}</style></head><body>
<h1>{html.escape(title)}</h1><table>{items}</table>
<h2>Memory timeline</h2>{svg or "<p>no planned intermediates</p>"}
<h2>Kernels</h2><table><tr><th>#</th><th>name</th><th>inputs</th><th>outputs</th><th>bytes</th></tr>
{rows}</table></body></html>"""
