"""The ``autoscaler`` command. Each sub-command lives in a module that registers itself; heavy imports happen
inside the command that needs them, so ``autoscaler --help`` stays fast.

The sub-commands that run the embedded world or the Lambda harness (``invoke``, ``simulate``) live in the dev
package, which is not shipped: they are found by module name (``commands.dev_package``) and, where it is not
installed, answer how to install it."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from autoscaler.commands import dev_package

# Sub-command modules, in the order `--help` lists them. Each defines `register(subparsers)`.
COMMANDS = (
    "autoscaler.commands.validate",
    "autoscaler.commands.get",
    "autoscaler.commands.crds",
    "autoscaler.commands.convert",
    "autoscaler.commands.migrate_check",
    "autoscaler.commands.userdata",
    "autoscaler.commands.plan",
    "autoscaler_dev.commands.invoke",
    "autoscaler_dev.commands.simulate",
    "autoscaler.commands.forwarder",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="autoscaler",
        description="Serverless Karpenter: Karpenter v1's node lifecycle as AWS Lambda functions.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS:
        if dev_package.is_dev(module):
            dev_package.register(subparsers, module)
        else:
            importlib.import_module(module).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.run(args)
    except dev_package.DevPackageMissingError as missing:
        print(f"autoscaler {args.command}: {missing}", file=sys.stderr)
        return dev_package.EXIT_CODE
    return code


if __name__ == "__main__":
    sys.exit(main())
