"""Offset assignment: tolk's planner vs tinygrad's online TLSF planner vs the floor.

Run by hand; prints a markdown table of arena/floor and seconds per instance.

    python bench/bench_planner.py                      # 1k, 10k and 100k buffers
    python bench/bench_planner.py --sizes 1000,10000 --sets random,staircase
    python bench/bench_planner.py --tinygrad-gpt       # also capture real GPT training steps

tinygrad's column replays each instance through tinygrad 0.14's `TLSFAllocator` the way its
`memory_plan_rewrite` does (frees at last+1 before allocations, 256-byte blocks, 32 second
level buckets), in a subprocess of the interpreter given by --tinygrad-python; it reads n/a
when that interpreter is missing. Every instance uses alignment 256, tinygrad's block size.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
# one BLAS thread, set before numpy's import: nothing here runs BLAS, and the default pool's
# threads spin for a while after import, which `time.process_time` (every thread) counts
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from tolk.schedule.planner import assign_offsets, find_overlaps, floor_bytes

ALIGN = 256
Instance = tuple[list[int], list[int], list[int]]  # sizes, firsts, lasts (inclusive)

# Runs in tinygrad's interpreter: reads [[sizes, firsts, lasts], ...] as JSON on stdin and
# prints [[arena, seconds], ...]. Same event order and sizes as its memory_plan_rewrite.
TLSF_REPLAY = r"""
import json, sys, time
from tinygrad.runtime.support.memory import TLSFAllocator
def arena(sizes, firsts, lasts, block=256):
    blocks = [max(block, -(-s // block) * block) for s in sizes]
    events = sorted([(f, 1, i) for i, f in enumerate(firsts)] +
                    [(l + 1, 0, i) for i, l in enumerate(lasts)])
    alloc = TLSFAllocator(max(2 * sum(blocks), block), block_size=block, lv2_cnt=32)
    where, peak = {}, 0
    for _, is_alloc, i in events:
        if is_alloc:
            where[i] = alloc.alloc(blocks[i])
            peak = max(peak, where[i] + sizes[i])
        else:
            alloc.free(where[i])
    return -(-peak // block) * block
out = []
for sizes, firsts, lasts in json.load(sys.stdin):
    t = time.perf_counter()
    a = arena(sizes, firsts, lasts)
    out.append([a, time.perf_counter() - t])
json.dump(out, sys.stdout)
"""


def _log_uniform(rng: random.Random, lo: int, hi: int) -> int:
    return int(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def small_and_huge(n: int, rng: random.Random) -> Instance:
    """99% small short-lived buffers, 1% of 16-128 MiB ones living up to n/20 steps."""
    sizes, firsts, lasts = [], [], []
    for _ in range(n):
        huge = rng.random() < 0.01
        f = rng.randrange(n)
        d = rng.randrange(1, max(2, n // 20)) if huge else int(rng.expovariate(1 / 8))
        lo, hi = (1 << 24, 1 << 27) if huge else (256, 1 << 16)
        sizes.append(_log_uniform(rng, lo, hi))
        firsts.append(f)
        lasts.append(min(n - 1, f + d))
    return sizes, firsts, lasts


def long_lived_weights(n: int, rng: random.Random) -> Instance:
    """A fifth of the buffers live from a random step to the end, like loaded weights."""
    sizes, firsts, lasts = [], [], []
    for _ in range(n):
        f = rng.randrange(n)
        weight = rng.random() < 0.2
        sizes.append(_log_uniform(rng, 1 << 12 if weight else 1 << 10, 1 << 22))
        firsts.append(f)
        lasts.append(n - 1 if weight else min(n - 1, f + int(rng.expovariate(1 / 6))))
    return sizes, firsts, lasts


def staircase(n: int, rng: random.Random) -> Instance:
    """One buffer born per step, each living ~35 steps, sizes cycling through 97 classes."""
    sizes = [((i % 97) + 1) * 4096 + rng.randrange(4096) for i in range(n)]
    return sizes, list(range(n)), [i + 31 + i % 7 for i in range(n)]


def growing(n: int, rng: random.Random) -> Instance:
    """Each step frees its elders and asks for a bigger block: online allocators can't reuse."""
    sizes = [4096 * (1 + i % 50) + rng.randrange(256) for i in range(n)]
    return sizes, list(range(n)), [i + 1 + rng.randrange(3) for i in range(n)]


def random_lifetimes(n: int, rng: random.Random) -> Instance:
    """Exponential lifetimes (mean 20 steps) over n/2 steps, log-uniform 64 B-1 MiB sizes."""
    firsts = [rng.randrange(n // 2) for _ in range(n)]
    lasts = [min(n // 2 - 1, f + int(rng.expovariate(1 / 20))) for f in firsts]
    return [_log_uniform(rng, 64, 1 << 20) for _ in range(n)], firsts, lasts


def similar_sizes(n: int, rng: random.Random) -> Instance:
    """Sizes of 1-99 blocks, lifetimes of 1-29 steps over n/4 steps."""
    firsts = [rng.randrange(n // 4) for _ in range(n)]
    lasts = [min(n // 4 - 1, f + rng.randrange(1, 30)) for f in firsts]
    return [rng.randrange(1, 100) * 256 for _ in range(n)], firsts, lasts


def long_overlaps(n: int, rng: random.Random) -> Instance:
    """Lifetimes between two uniform random steps: a third of all buffers live at once."""
    ends = [sorted((rng.randrange(n), rng.randrange(n))) for _ in range(n)]
    sizes = [_log_uniform(rng, 256, 1 << 18) for _ in range(n)]
    return sizes, [a for a, _ in ends], [b for _, b in ends]


def transformer(layers: int, rng: random.Random, train: bool = True) -> Instance:
    """A GPT-like step (d=1024, seq 512, batch 4, 16 heads, fp16): per layer LayerNorm,
    QKV, scores, softmax, attention, projection, residual, MLP; training keeps what the
    backward pass reads, runs it in reverse with a gradient and weight update per tensor."""
    sizes: list[int] = []
    firsts: list[int] = []
    lasts: list[int] = []
    clock = [0]

    def kernel(size: int, *reads: int) -> int:
        """One call: reads `reads`, writes a new buffer of `size` bytes."""
        clock[0] += 1
        for r in reads:
            lasts[r] = clock[0]
        sizes.append(size)
        firsts.append(clock[0])
        lasts.append(clock[0])
        return len(sizes) - 1

    act, scores, saved = 4 * 512 * 1024 * 2, 4 * 16 * 512 * 512 * 2, []
    x = kernel(act)
    for _ in range(layers):
        ln = kernel(act, x)
        qkv = kernel(3 * act, ln)
        att = kernel(scores, qkv)
        sm = kernel(scores, att)
        o = kernel(act, sm, qkv)
        x2 = kernel(act, kernel(act, o), x)
        ln2 = kernel(act, x2)
        h = kernel(4 * act, ln2)
        g = kernel(4 * act, h)
        x3 = kernel(act, kernel(act, g), x2)
        saved.append([x, ln, qkv, sm, o, x2, ln2, h, g])
        x = x3
    logits = kernel(4 * 512 * 32000 * 2, x)
    grad = kernel(act, kernel(4, logits), logits)
    if not train:
        return sizes, firsts, lasts
    for layer in reversed(saved):
        for b in reversed(layer):
            tmp = kernel(sizes[b], b, grad)
            wgrad = kernel(rng.choice([1, 3, 4]) * 1024 * 1024 * 2, tmp)
            grad = kernel(act, tmp, grad)
            for _ in range(2):  # optimizer temporaries
                kernel(sizes[wgrad], wgrad)
    return sizes, firsts, lasts


SETS = {
    "small+huge": small_and_huge,
    "weights": long_lived_weights,
    "staircase": staircase,
    "growing": growing,
    "random": random_lifetimes,
    "similar": similar_sizes,
    "overlapping": long_overlaps,
}


def instances(sizes: list[int], sets: list[str]) -> list[tuple[str, Instance]]:
    out = []
    for n in sizes:
        for name in sets:
            out.append((f"{name} {n // 1000}k", SETS[name](n, random.Random(n))))
    for layers, train in ((12, False), (12, True), (96, True)):
        inst = transformer(layers, random.Random(layers), train)
        kind = "training" if train else "forward"
        out.append((f"transformer {layers}L {kind} ({len(inst[0])})", inst))
    return out


def tinygrad_gpt(python: str) -> list[tuple[str, Instance]]:
    """Buffer lifetimes of real tinygrad GPT training steps, captured from its JIT."""
    out = []
    for layers, dim in ((2, 128), (4, 64)):
        code = _GPT_CAPTURE.replace("LAYERS", str(layers)).replace("DIM", str(dim))
        env = dict(os.environ, DEV="NULL")
        res = subprocess.run(
            [python, "-c", code], capture_output=True, text=True, env=env, check=False
        )
        if res.returncode != 0:
            print(f"tinygrad GPT capture failed: {res.stderr.strip()[-300:]}", file=sys.stderr)
            continue
        rows = json.loads(res.stdout)
        inst = ([r[2] for r in rows], [r[0] for r in rows], [r[1] for r in rows])
        out.append((f"tinygrad GPT {layers}L d{dim} training step ({len(rows)})", inst))
    return out


# Builds a small GPT in tinygrad, runs a jitted Adam training step on the NULL device and
# prints the (first, last, nbytes) of every buffer its memory planner is handed.
_GPT_CAPTURE = r"""
import json
from tinygrad import Tensor, TinyJit, nn
from tinygrad.helpers import Context
from tinygrad.nn.state import get_parameters
import tinygrad.engine.jit as jit
from tinygrad.schedule.memory import _collect_bufs, _can_plan
seen = []
planner = jit.memory_plan_rewrite
def spy(linear, held=None):
    first, last = {}, {}
    for i, call in enumerate(linear.src):
        for s in call.src[1:]:
            for b in _collect_bufs(s):
                if _can_plan(b, held or set()):
                    first.setdefault(b, i)
                    last[b] = i
    seen.append([(first[b], last[b], b.max_numel() * b.dtype.itemsize) for b in first])
    return planner(linear, held)
jit.memory_plan_rewrite = spy
L, D, H, V, T, B = LAYERS, DIM, 4, 512, 64, 4
class Block:
    def __init__(s):
        s.ln1, s.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        s.qkv, s.proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
        s.fc1, s.fc2 = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)
    def __call__(s, x):
        q, k, v = s.qkv(s.ln1(x)).reshape(B, T, 3, H, D // H).permute(2, 0, 3, 1, 4)
        a = q.scaled_dot_product_attention(k, v, is_causal=True).permute(0, 2, 1, 3)
        x = x + s.proj(a.reshape(B, T, D))
        return x + s.fc2(s.fc1(s.ln2(x)).gelu())
class GPT:
    def __init__(s):
        s.wte, s.wpe = nn.Embedding(V, D), nn.Embedding(T, D)
        s.blocks = [Block() for _ in range(L)]
        s.lnf, s.head = nn.LayerNorm(D), nn.Linear(D, V, bias=False)
    def __call__(s, idx):
        x = s.wte(idx) + s.wpe(Tensor.arange(T).reshape(1, T))
        for b in s.blocks:
            x = b(x)
        return s.head(s.lnf(x))
model = GPT()
opt = nn.optim.Adam(get_parameters(model), lr=1e-3)
@TinyJit
def step(x, y):
    with Context(TRAINING=1):
        opt.zero_grad()
        loss = model(x).sparse_categorical_crossentropy(y)
        loss.backward()
        opt.step()
        return loss.realize()
for _ in range(3):
    step(Tensor.randint(B, T, high=V).realize(), Tensor.randint(B, T, high=V).realize())
print(json.dumps(seen[0]))
"""


def tlsf_arenas(python: str, insts: list[Instance]) -> list[tuple[int, float] | None]:
    if not os.path.exists(python):
        return [None] * len(insts)
    res = subprocess.run(
        [python, "-c", TLSF_REPLAY],
        input=json.dumps(insts),
        capture_output=True,
        text=True,
        check=False,
    )
    if res.returncode != 0:
        print(f"tinygrad replay failed: {res.stderr.strip()[-300:]}", file=sys.stderr)
        return [None] * len(insts)
    return [tuple(r) for r in json.loads(res.stdout)]


def measure(inst: Instance) -> tuple[int, float, float]:
    """Our arena, wall seconds and CPU seconds; checks the plan is valid."""
    sizes, firsts, lasts = inst
    wall, cpu = time.perf_counter(), time.process_time()
    plan = assign_offsets(sizes, firsts, lasts, alignment=ALIGN)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    rounded = [-(-s // ALIGN) * ALIGN for s in sizes]
    assert not find_overlaps(rounded, firsts, lasts, plan.offsets, limit=1), "invalid plan"
    return plan.arena, wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,10000,100000", help="buffer counts, comma separated")
    ap.add_argument("--sets", default=",".join(SETS), help="synthetic sets, comma separated")
    ap.add_argument("--tinygrad-python", default=sys.executable,
                    help="a Python that has tinygrad 0.14.0 installed (default: this one)")
    ap.add_argument(
        "--tinygrad-gpt",
        action="store_true",
        help="also capture GPT training steps from tinygrad (about a minute)",
    )
    args = ap.parse_args()
    insts = instances([int(s) for s in args.sizes.split(",")], args.sets.split(","))
    if args.tinygrad_gpt:
        insts += tinygrad_gpt(args.tinygrad_python)
    tg = tlsf_arenas(args.tinygrad_python, [inst for _, inst in insts])
    print(
        "| instance | buffers | floor (MiB) | tinygrad TLSF | tolk | tolk wall s | tolk CPU s "
        "| TLSF s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    worse = []
    for (name, inst), tl in zip(insts, tg):
        floor = floor_bytes(*inst, alignment=ALIGN)
        arena, wall, cpu = measure(inst)
        tl_ratio = f"{tl[0] / floor:.3f}" if tl else "n/a"
        tl_time = f"{tl[1]:.2f}" if tl else "n/a"
        if tl and arena > tl[0]:
            worse.append(name)
        print(
            f"| {name} | {len(inst[0])} | {floor / 2**20:.1f} | {tl_ratio} | "
            f"{arena / floor:.4f} | {wall:.2f} | {cpu:.2f} | {tl_time} |",
            flush=True,
        )
    print(f"\ntolk worse than tinygrad on: {', '.join(worse) if worse else 'none'}")


if __name__ == "__main__":
    main()
