"""The `tolk` command."""

from __future__ import annotations

import argparse
import sys

import tolk


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tolk",
        description="tolk: a tensor compiler layer built around the linear schedule.",
    )
    p.add_argument("--version", action="version", version=f"tolk {tolk.__version__}")
    p.add_subparsers(dest="command", metavar="COMMAND")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
