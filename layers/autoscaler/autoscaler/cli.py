"""The ``autoscaler`` command. Each sub-command lives in a module that registers itself; heavy imports happen
inside the command that needs them, so ``autoscaler --help`` stays fast.

The sub-commands that run the embedded world or the Lambda harness (``invoke``, ``simulate``) live in the dev
package, which is not shipped: they are found by module name (``commands.dev_package``) and, where it is not
installed, answer how to install it."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

import autoscaler
from autoscaler.commands import dev_package, manifest_args

# Sub-command modules, in the order `--help` lists them. Each defines `register(subparsers)`.
COMMANDS = (
    "autoscaler.commands.validate",
    "autoscaler.commands.get",
    "autoscaler.commands.crds",
    "autoscaler.commands.convert",
    "autoscaler.commands.migrate_check",
    "autoscaler.commands.userdata",
    "autoscaler.commands.plan",
    "autoscaler.commands.manifests",
    "autoscaler.commands.doctor",
    "autoscaler_dev.commands.invoke",
    "autoscaler_dev.commands.simulate",
    "autoscaler.commands.forwarder",
)


class CommandParser(argparse.ArgumentParser):
    """Every (sub-)command's parser: a command that reads manifests and needs them refuses to run without any,
    whether they were to come from -f or from operands (which argparse cannot require as one)."""

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        if manifest_args.missing(parsed):
            self.error("the following arguments are required: -f/--filename (or PATH operands)")
        return parsed, extras


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(
        prog="autoscaler",
        description="Serverless Karpenter: Karpenter v1's node lifecycle as AWS Lambda functions.",
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"%(prog)s {autoscaler.__version__} (Karpenter {autoscaler.KARPENTER_VERSION}'s API)",
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
    except manifest_args.ManifestPathError as error:
        print(f"error: {error}", file=sys.stderr)  # as kubectl says it
        return 1
    except BrokenPipeError:
        _quiet_closed_pipe(sys.stdout)
        return 1
    return code


def _quiet_closed_pipe(stream: Any) -> None:
    """`autoscaler ... | head`: the reader left. Point stdout at /dev/null so that the interpreter's final flush
    does not raise again (and print a traceback) on the way out."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
    except (OSError, ValueError):  # not a real file (a test's capture): nothing will flush to the pipe
        return


if __name__ == "__main__":
    sys.exit(main())
