"""The ``autoscaler`` command. Each sub-command lives in ``autoscaler.commands.<name>`` and registers itself;
heavy imports happen inside the command that needs them, so ``autoscaler --help`` stays fast."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# Sub-command modules, in the order `--help` lists them. Each defines `register(subparsers)`.
COMMANDS = (
    "validate",
    "get",
    "crds",
    "convert",
    "migrate_check",
    "userdata",
    "plan",
    "invoke",
    "simulate",
    "forwarder",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="autoscaler",
        description="Serverless Karpenter: Karpenter v1's node lifecycle as AWS Lambda functions.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"autoscaler.commands.{name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    code: int = args.run(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
