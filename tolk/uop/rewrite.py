"""The one rewrite engine every pass shares: a table of rules applied bottom-up to a fixed point."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from tolk.errors import RewriteError
from tolk.uop.ops import Ops, UOp

Rule = Callable[[Any, UOp], "UOp | None"]


class Rules:
    """A named table of rewrite rules: ``(op or ops, fn)`` where ``fn(ctx, node) -> UOp | None``.

    Rules for one op are tried in table order; the first that returns a node wins.
    """

    def __init__(self, rules: Iterable[tuple[Ops | Iterable[Ops], Rule]], name: str = "rules"):
        self.name = name
        self.by_op: dict[Ops, list[Rule]] = {}
        for ops, fn in rules:
            for op in (ops,) if isinstance(ops, Ops) else ops:
                self.by_op.setdefault(op, []).append(fn)

    def __add__(self, other: Rules) -> Rules:
        out = Rules((), f"{self.name}+{other.name}")
        for table in (self.by_op, other.by_op):
            for op, fns in table.items():
                out.by_op.setdefault(op, []).extend(fns)
        return out

    def rewrite(self, node: UOp, ctx: Any) -> UOp | None:
        for fn in self.by_op.get(node.op, ()):
            out = fn(ctx, node)
            if out is not None and out is not node:
                return out
        return None


def graph_rewrite(sink: UOp, rules: Rules, ctx: Any = None, max_steps: int = 10_000_000) -> UOp:
    """Rewrite `sink` bottom-up until no rule of `rules` matches anywhere.

    Each node is visited after its sources are final; a rule's replacement is itself rewritten
    (its new sources too) before it takes the node's place. Iterative: deep graphs are fine.
    Raises `RewriteError` when a replacement contains the node it replaces (a cycle) or the
    rewrite exceeds `max_steps` rule applications (a rule set that does not converge).
    """
    done: dict[UOp, UOp] = {}
    active: set[UOp] = set()
    # stack entries: (node, stage, replacement); stage 0 = expand, 1 = rebuild, 2 = link
    stack: list[tuple[UOp, int, UOp | None]] = [(sink, 0, None)]
    steps = 0
    while stack:
        node, stage, repl = stack.pop()
        if stage == 0:
            if node in done:
                continue
            if node in active:
                raise RewriteError(f"rules {rules.name!r} built a cycle through {node.short()}")
            active.add(node)
            stack.append((node, 1, None))
            for s in reversed(node.src):
                if s not in done:
                    stack.append((s, 0, None))
        elif stage == 1:
            src = node.src
            new_src = tuple([done[s] for s in src])
            cur = node if new_src == src else UOp(node.op, node.dtype, new_src, node.arg)
            out = rules.rewrite(cur, ctx)
            if out is None:
                done[node] = cur
                active.discard(node)
                continue
            steps += 1
            if steps > max_steps:
                raise RewriteError(f"rules {rules.name!r} did not converge in {max_steps} steps")
            stack.append((node, 2, out))
            stack.append((out, 0, None))
        else:
            done[node] = done[repl]
            active.discard(node)
    return done[sink]
