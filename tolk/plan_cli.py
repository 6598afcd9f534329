"""`tolk plan`: byte offsets for buffer lifetimes, in the static-allocation CSV format.

Input is id,lower,upper,size with a header (columns found by name, others ignored), one
buffer per line, live from call `lower` up to but not including call `upper`. Output adds
an offset column. A summary goes to stderr. Exit codes: 0 success, 1 a plan over
--capacity or an invalid --validate solution, 2 malformed input.

    tolk plan lifetimes.csv --alignment 256 --out plan.csv --svg plan.svg
    tolk plan lifetimes.csv --validate plan.csv
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
import time
from dataclasses import dataclass

EXIT_OK, EXIT_INVALID, EXIT_MALFORMED = 0, 1, 2
COLUMNS = ("id", "lower", "upper", "size")
_INT = re.compile(r"\s*[+-]?\d+\s*")


class InputError(ValueError):
    """Malformed input, with the file and line at fault in the message."""


@dataclass(frozen=True)
class Lifetimes:
    """Buffers read from a CSV file, in file order.

    Invariant: ids are unique; lower < upper; size >= 0; offsets, when read, are >= 0.
    """

    ids: list[str]
    lowers: list[int]
    uppers: list[int]
    sizes: list[int]
    offsets: list[int] | None = None

    @property
    def lasts(self) -> list[int]:
        """Last call of each buffer, inclusive (the planner's convention)."""
        return [u - 1 for u in self.uppers]


def register(subparsers) -> None:
    """Add the `plan` sub-command to the `tolk` command."""
    p = subparsers.add_parser(
        "plan",
        help="assign arena offsets to buffer lifetimes from a CSV file",
        description=__doc__.split("\n\n")[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("file", help="CSV with header id,lower,upper,size (upper exclusive)")
    p.add_argument("--out", help="write id,lower,upper,size,offset here (default: stdout)")
    p.add_argument(
        "--alignment",
        type=int,
        default=1,
        metavar="N",
        help="round sizes up to N and place at multiples of N (default 1)",
    )
    p.add_argument(
        "--capacity",
        type=int,
        metavar="N",
        help="fail with exit code 1 when the arena needs more than N bytes",
    )
    p.add_argument(
        "--validate",
        metavar="SOLUTION",
        help="check SOLUTION (with an offset column) for FILE instead of planning",
    )
    p.add_argument("--svg", metavar="PATH", help="draw the plan as an SVG picture")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Plan or validate as `args` say; returns the exit code."""
    if not 1 <= args.alignment <= 2**62:
        return _fail(f"--alignment must be from 1 to 2**62, got {args.alignment}",
                     EXIT_MALFORMED)
    if args.capacity is not None and args.capacity < 0:
        return _fail(f"--capacity must be at least 0, got {args.capacity}", EXIT_MALFORMED)
    try:
        bufs = read_lifetimes(args.file)
        solution = read_lifetimes(args.validate, with_offsets=True) if args.validate else None
    except (InputError, OSError) as e:
        return _fail(str(e), EXIT_MALFORMED)
    if solution is not None:
        return _validate(bufs, solution, args)
    from tolk.schedule.planner import assign_offsets, floor_bytes

    from tolk.errors import ScheduleError

    start = time.perf_counter()
    try:
        plan = assign_offsets(bufs.sizes, bufs.lowers, bufs.lasts, alignment=args.alignment)
    except ScheduleError as e:  # what the planner refuses that the reader let through
        return _fail(f"{args.file}: {e}", EXIT_MALFORMED)
    elapsed = time.perf_counter() - start
    floor = floor_bytes(bufs.sizes, bufs.lowers, bufs.lasts, alignment=args.alignment)
    _summary(len(bufs.ids), floor, plan.arena, elapsed)
    if args.capacity is not None and plan.arena > args.capacity:
        why = "no plan fits: the floor alone" if floor > args.capacity else "the arena"
        return _fail(
            f"{why} needs {floor if floor > args.capacity else plan.arena} bytes, "
            f"over --capacity {args.capacity}",
            EXIT_INVALID,
        )
    try:
        _write_csv(bufs, plan.offsets, args.out)
    except OSError as e:
        return _fail(f"cannot write the plan: {e}", EXIT_MALFORMED)
    if args.svg:
        try:
            _write_svg(bufs, list(plan.offsets), plan.arena, floor, args.svg)
        except OSError as e:
            return _fail(f"cannot write the picture: {e}", EXIT_MALFORMED)
    return EXIT_OK


def read_lifetimes(path: str, with_offsets: bool = False) -> Lifetimes:
    """Parse a lifetimes CSV; raises `InputError` naming the line for malformed input."""
    with open(path, newline="", encoding="utf-8-sig") as f:  # a byte-order mark is no column
        reader = csv.reader(f)
        try:
            rows = [(reader.line_num, row) for row in reader if any(c.strip() for c in row)]
        except (csv.Error, UnicodeDecodeError) as e:
            raise InputError(f"{path}:{reader.line_num + 1}: unreadable CSV: {e}") from None
    if not rows:
        raise InputError(f"{path}:1: empty file: expected a header {','.join(COLUMNS)}")
    names = COLUMNS + ("offset",) if with_offsets else COLUMNS
    header = [c.strip().lower() for c in rows[0][1]]
    missing = [c for c in names if c not in header]
    if missing:
        raise InputError(
            f"{path}:{rows[0][0]}: missing header column(s) {','.join(missing)}: "
            f"expected a header with {','.join(names)}, got {','.join(rows[0][1])}"
        )
    twice = sorted({c for c in names if header.count(c) > 1})
    if twice:
        raise InputError(f"{path}:{rows[0][0]}: duplicate header column(s) {','.join(twice)}")
    col = {c: header.index(c) for c in names}
    out: dict[str, list] = {c: [] for c in names}
    seen: dict[str, int] = {}
    for n, row in rows[1:]:
        if len(row) != len(header):
            raise InputError(f"{path}:{n}: expected {len(header)} fields, got {len(row)}")
        ident = row[col["id"]].strip()
        if not ident:
            raise InputError(f"{path}:{n}: empty id")
        if ident in seen:
            raise InputError(f"{path}:{n}: duplicate id {ident!r} (first on line {seen[ident]})")
        seen[ident] = n
        out["id"].append(ident)
        for c in names[1:]:
            out[c].append(_integer(path, n, c, row[col[c]]))
        _check_row(path, n, ident, *(out[c][-1] for c in names[1:]))
    return Lifetimes(out["id"], out["lower"], out["upper"], out["size"], out.get("offset"))


def _integer(path: str, line: int, column: str, text: str) -> int:
    if not _INT.fullmatch(text):
        raise InputError(f"{path}:{line}: {column} must be an integer, got {text!r}")
    digits = text.strip().lstrip("+-").lstrip("0")
    if len(digits) > 19 or abs(value := int(text)) >= 1 << 63:
        raise InputError(f"{path}:{line}: {column} must be below 2**63 in magnitude, got "
                         f"{len(digits)} digits")
    return value


def _check_row(
    path: str, line: int, ident: str, lower: int, upper: int, size: int, offset: int = 0
) -> None:
    if upper <= lower:
        raise InputError(
            f"{path}:{line}: buffer {ident!r}: upper {upper} must be greater "
            f"than lower {lower} (upper is exclusive)"
        )
    if size < 0:
        raise InputError(f"{path}:{line}: buffer {ident!r}: size {size} is negative")
    if offset < 0:
        raise InputError(f"{path}:{line}: buffer {ident!r}: offset {offset} is negative")


def _validate(bufs: Lifetimes, sol: Lifetimes, args: argparse.Namespace) -> int:
    """Check `sol` places exactly the buffers of `bufs`, aligned and without overlaps."""
    from tolk.schedule.planner import find_overlaps, floor_bytes

    problems = _mismatches(bufs, sol)
    at = dict(zip(sol.ids, sol.offsets or []))
    offsets = [at.get(i, 0) for i in bufs.ids]
    if not problems:
        problems += [  # a buffer of size 0 takes no bytes: its offset is not checked
            f"buffer {i!r}: offset {at[i]} is not a multiple of {args.alignment}"
            for i, s in zip(bufs.ids, bufs.sizes)
            if s and at[i] % args.alignment
        ][:20]
        for a, b in find_overlaps(bufs.sizes, bufs.lowers, bufs.lasts, offsets, limit=20):
            problems.append(
                f"buffers {bufs.ids[a]!r} and {bufs.ids[b]!r} overlap: "
                f"{_where(bufs, offsets, a)} and {_where(bufs, offsets, b)}"
            )
    align = args.alignment
    arena = max((o + -(-s // align) * align for o, s in zip(offsets, bufs.sizes) if s),
                default=0)
    if args.capacity is not None and arena > args.capacity:
        problems.append(f"arena of {arena} bytes exceeds --capacity {args.capacity}")
    floor = floor_bytes(bufs.sizes, bufs.lowers, bufs.lasts, alignment=args.alignment)
    _summary(len(bufs.ids), floor, arena, None)
    for p in problems:
        print(f"tolk plan: invalid: {p}", file=sys.stderr)
    if problems:
        return EXIT_INVALID
    print(f"tolk plan: {args.validate} is a valid plan for {args.file}", file=sys.stderr)
    if args.svg:
        try:
            _write_svg(bufs, offsets, arena, floor, args.svg)
        except OSError as e:
            return _fail(f"cannot write the picture: {e}", EXIT_MALFORMED)
    return EXIT_OK


def _mismatches(bufs: Lifetimes, sol: Lifetimes) -> list[str]:
    """Buffers missing from, added to, or changed in the solution."""
    theirs = {i: (lo, up, s) for i, lo, up, s in zip(sol.ids, sol.lowers, sol.uppers, sol.sizes)}
    ours = set(bufs.ids)
    out = [f"buffer {i!r} has no offset in the solution" for i in bufs.ids if i not in theirs]
    out += [
        f"the solution places buffer {i!r}, which the problem does not have"
        for i in sol.ids
        if i not in ours
    ]
    for i, lo, up, s in zip(bufs.ids, bufs.lowers, bufs.uppers, bufs.sizes):
        if i in theirs and theirs[i] != (lo, up, s):
            out.append(
                f"buffer {i!r}: solution has lower,upper,size {theirs[i]}, "
                f"problem has {(lo, up, s)}"
            )
    return out[:20]


def _where(bufs: Lifetimes, offsets: list[int], i: int) -> str:
    return (
        f"calls [{bufs.lowers[i]},{bufs.uppers[i]}) bytes "
        f"[{offsets[i]},{offsets[i] + bufs.sizes[i]})"
    )


def _summary(n: int, floor: int, arena: int, elapsed: float | None) -> None:
    ratio = f"{arena / floor:.4f}" if floor else "n/a"
    tail = f" time={elapsed:.3f}s" if elapsed is not None else ""
    print(f"buffers={n} floor={floor} arena={arena} arena/floor={ratio}{tail}", file=sys.stderr)


def _write_csv(bufs: Lifetimes, offsets, path: str | None) -> None:
    rows = zip(bufs.ids, bufs.lowers, bufs.uppers, bufs.sizes, offsets)
    if path is None:
        _csv_to(sys.stdout, rows)
        return
    with open(path, "w", newline="") as f:
        _csv_to(f, rows)


def _csv_to(f, rows) -> None:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(COLUMNS + ("offset",))
    w.writerows(rows)


def _write_svg(bufs: Lifetimes, offsets: list[int], arena: int, floor: int, path: str) -> None:
    from tolk.schedule.planviz import plan_svg

    svg = plan_svg(bufs.sizes, bufs.lowers, bufs.lasts, offsets, arena, bufs.ids, floor=floor)
    with open(path, "w") as f:
        f.write(svg)


def _fail(message: str, code: int) -> int:
    print(f"tolk plan: error: {message}", file=sys.stderr)
    return code
