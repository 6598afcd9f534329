"""create_schedule against a reference: random kernel graphs generated as sequential
programs (every kernel reads and writes only states current when it is made, so the order of
generation is a valid schedule), with AFTERs that write nothing new (STORE children only,
dependencies only, ordering joins), MSTACK/MSELECT joins, END kernels, view wrappers and
sibling overwrites. Each kernel must see, for every buffer it reads, the last writer at its
creation, and every reachable kernel must be scheduled once. ``TOLK_FUZZ=long``: 10x the
graphs."""

import os
import random

import pytest

from tolk.dtype import dtypes
from tolk.errors import CycleError
from tolk.schedule import create_schedule
from tolk.uop import KernelInfo, Ops, UOp

F32 = dtypes.float32
GRAPHS = 6000 if os.environ.get("TOLK_FUZZ", "") == "long" else 600


def ast(name):
    return UOp(Ops.SINK, dtypes.void, (), KernelInfo(name))


def call(name, *args):
    return UOp(Ops.CALL, dtypes.void, (ast(name), *args))


def store(b):
    return UOp(Ops.STORE, F32, (b, UOp.const(F32, 1.0)))


class Gen:
    def __init__(self, rnd, kernelless=True, joins=True, ends=True, deps=True, siblings=True,
                 max_ops=10):
        self.r = rnd
        self.kl, self.joins, self.ends = kernelless, joins, ends
        self.deps, self.sib = deps, siblings
        nb = rnd.randint(1, 4)
        self.bases = []
        for i in range(nb):
            if rnd.random() < 0.3:
                self.bases.append(UOp(Ops.PARAM, F32, (), (i, "CPU", 16)))
            else:
                self.bases.append(UOp(Ops.BUFFER, F32, (), (100 + i, "CPU", 16)))
        self.last = {b: None for b in self.bases}  # last writer name
        # valid states: node -> frozenset of bases covered
        self.nodes = {b: frozenset([b]) for b in self.bases}
        self.cov_ver = {b: {b: None} for b in self.bases}  # node -> {base: last writer at creation}
        self.afters = []  # AFTER nodes created (for deps)
        self.want = {}  # kernel name -> {base: last writer}
        self.writes = {}
        self.max_ops = max_ops
        self.n = 0

    def valid(self):
        return [n for n, cv in self.cov_ver.items()
                if all(self.last[b] == w for b, w in cv.items())]

    def valid_for(self, b):
        return [n for n in self.valid() if self.cov_ver[n].keys() == {b}]

    def add(self, node, cv):
        self.cov_ver[node] = dict(cv)
        if node.op is Ops.AFTER:
            self.afters.append(node)

    def wrapview(self, n):
        if self.r.random() < 0.15:
            return UOp(Ops.RESHAPE, n.dtype, (n,), (16,))
        return n

    def read_arg(self):
        """A valid state node (maybe a join of valid ones) for reading."""
        v = self.valid()
        n = self.r.choice(v)
        if self.joins and self.r.random() < 0.2 and len(v) > 1:
            m = self.r.choice(v)
            if m is not n:
                op = self.r.choice([Ops.MSTACK, Ops.MSELECT])
                j = UOp(op, F32, (n, m), 0 if op is Ops.MSELECT else None)
                return j, {**self.cov_ver[n], **self.cov_ver[m]}
        return self.wrapview(n), dict(self.cov_ver[n])

    def dep_list(self):
        if not self.deps or not self.afters or self.r.random() < 0.6:
            return []
        return self.r.sample(self.afters, min(len(self.afters), self.r.randint(1, 2)))

    def step(self):
        r = self.r
        x = r.random()
        if self.kl and x < 0.35:
            # kernel-less wrapper of a valid node (single or join)
            v = self.valid()
            s = r.choice(v)
            if not self.sib:  # wrap the newest state only: a strict chain
                b0 = r.choice(self.bases)
                s = [n for n in v if b0 in self.cov_ver[n]][-1]
                v = [n for n in v if n is s or not (set(self.cov_ver[n]) & set(self.cov_ver[s]))]
                v = [n for n in v if n is s or n is [
                    m for m in self.valid() if set(self.cov_ver[n]) & set(self.cov_ver[m])][-1]]
            cv = dict(self.cov_ver[s])
            if self.joins and r.random() < 0.2 and len(v) > 1:
                m = r.choice(v)
                if m is not s and not (set(self.cov_ver[m]) & set(cv)):
                    s = UOp(Ops.MSTACK, F32, (s, m))
                    cv.update(self.cov_ver[m])
            kids = []
            if r.random() < 0.6:
                kids.append(store(s if s.op is not Ops.MSTACK else s.src[0]))
            kids += self.dep_list()
            if not kids:
                kids.append(store(s))
            r.shuffle(kids)
            a = UOp(Ops.AFTER, F32, (self.wrapview(s), *kids))
            self.add(a, cv)
            return
        # a kernel writing one or two buffers
        name = f"k{self.n}"
        self.n += 1
        nw = 2 if (self.joins and len(self.bases) > 1 and r.random() < 0.25) else 1
        outs = r.sample(self.bases, nw)
        out_nodes = []
        taken = set()
        for b in outs:
            if b in taken:
                continue
            cands = [n for n in self.valid()
                     if b in self.cov_ver[n] and not (set(self.cov_ver[n]) & taken)]
            if not cands:
                continue
            if not self.sib:  # supersede only the most recent node for b
                cands = cands[-1:]
            o = r.choice(cands)
            out_nodes.append(o)
            taken |= set(self.cov_ver[o])
        nw = len(out_nodes)
        outs = [next(iter(self.cov_ver[o])) for o in out_nodes]  # representative
        reads = [self.read_arg() for _ in range(r.randint(0, 2))]
        want = {}
        for o in out_nodes:
            want.update(self.cov_ver[o])
        for _, cv in reads:
            want.update(cv)
        # sanity: all current
        assert all(self.last[b] == w for b, w in want.items())
        mode = r.random()
        if nw == 1:
            k = call(name, out_nodes[0], *[a for a, _ in reads])
        elif mode < 0.5:
            j = UOp(Ops.MSTACK, F32, tuple(out_nodes))
            k = call(name, j, *[a for a, _ in reads])
        else:
            k = call(name, *out_nodes, *[a for a, _ in reads])
        kk = k
        if self.ends and r.random() < 0.2 and self.afters:
            kk = UOp(Ops.END, dtypes.void, (k, *r.sample(self.afters, 1)))
        deps = self.dep_list()
        new = {}
        if nw == 2 and mode < 0.5:
            a = UOp(Ops.AFTER, F32, (k.src[1], kk, *deps))
            for b in taken:
                self.last[b] = name
            self.add(a, {b: name for b in taken})
        else:
            for b, o in zip(outs, out_nodes):
                a = UOp(Ops.AFTER, F32, (self.wrapview(o), kk, *deps))
                new[b] = (a, self.cov_ver[o].keys())
            for b in taken:
                self.last[b] = name
            for b, (a, cov) in new.items():
                self.add(a, {c: name for c in cov})
            if nw == 2 and r.random() < 0.5:  # a join of the two outputs, k only ordering
                j = UOp(Ops.AFTER, F32, (UOp(Ops.MSTACK, F32, tuple(new[b][0] for b in outs)), kk))
                self.add(j, {b: name for b in taken})
        self.want[name] = want
        self.writes[name] = sorted(taken, key=lambda b: b.arg)

    def build(self):
        for _ in range(self.r.randint(1, self.max_ops)):
            self.step()
        roots = [a for a in self.afters if self.r.random() < 0.3]
        roots += [n for n in self.valid() if n.op is Ops.AFTER]
        if not roots:
            return None
        return UOp(Ops.SINK, dtypes.void, tuple(dict.fromkeys(roots)))


def reachable_kernels(sink):
    out = set()
    for n in sink.toposort(enter=lambda u: not (u.op is Ops.SINK
                                                and isinstance(u.arg, KernelInfo))):
        if n.op is Ops.SINK and isinstance(n.arg, KernelInfo):
            out.add(n.arg.name)
    return out


def check(seed, **kw):
    g = Gen(random.Random(seed), **kw)
    sink = g.build()
    if sink is None:
        return None
    try:
        lin = create_schedule(sink)
    except CycleError as e:
        return f"CycleError: {e}"
    order = [c.src[0].arg.name for c in lin.src]
    reach = reachable_kernels(sink)
    if set(order) != reach or len(order) != len(reach):
        return f"kernels {order} vs reachable {sorted(reach)}"
    last = {b: None for b in g.bases}
    for nm in order:
        for b, w in g.want[nm].items():
            if last[b] != w:
                return f"{nm} reads {b.arg} written by {last[b]}, wants {w}; order {order}"
        for b in g.writes[nm]:
            last[b] = nm
    return None


@pytest.mark.parametrize("options", [{}, {"kernelless": False}, {"joins": False},
                                     {"deps": False}, {"siblings": False}],
                         ids=["all", "no-kernelless", "no-joins", "no-deps", "no-siblings"])
def test_create_schedule_gives_every_kernel_the_versions_it_reads(options):
    bad = [(seed, err) for seed in range(GRAPHS) if (err := check(seed, **options))]
    assert not bad, f"{len(bad)} of {GRAPHS} graphs: {bad[:3]}"
