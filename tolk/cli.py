"""The `tolk` command."""

from __future__ import annotations

import argparse
import importlib
import sys

import tolk

# Sub-commands: each module's register(subparsers) adds its parser and sets `run`.
SUBCOMMANDS = (
    "tolk.demo",
    "tolk.inspect_script",
    "tolk.plan_cli",
)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tolk",
        description="tolk: a tensor compiler layer built around the linear schedule.",
    )
    p.add_argument("--version", action="version", version=f"tolk {tolk.__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for module in SUBCOMMANDS:
        importlib.import_module(module).register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
