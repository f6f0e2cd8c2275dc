"""The dev package (``autoscaler_dev``: the embedded world, the Kubernetes API emulator, the Lambda harness) for the
sub-commands that need it. It is installed with the dev extras, never in the Lambda layer or the forwarder's image,
so it is imported here by name only (the shipped package holds no import statement of it), and where it or one of
its dependencies (moto, aiohttp) is missing the command says in one line how to install it, and exits 2.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import importlib.util
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

PACKAGE = "autoscaler_dev"
INSTALL = "pip install -e '.[dev]' in a checkout of the repository (or make .venv)"
EXIT_CODE = 2

Run = Callable[[argparse.Namespace], int]


class DevPackageMissingError(Exception):
    """The dev package, or a dependency of it, is not installed here."""

    def __init__(self, missing: str) -> None:
        self.missing = missing
        super().__init__(f"needs the dev package and its dependencies, {self.missing} is not installed: {INSTALL}")


def is_dev(module: str) -> bool:
    return module.partition(".")[0] == PACKAGE


def load(module: str) -> ModuleType:
    """``module`` of the dev package, imported."""
    with _reported_as_missing():
        return importlib.import_module(module)


def register(subparsers: Any, module: str) -> None:
    """The sub-command of ``module`` (``autoscaler_dev.commands.<name>``, registering ``<name>``) or, where the dev
    package is missing, a stand-in of that name that takes any arguments and answers how to install it."""
    name = module.rpartition(".")[2]
    try:
        command = load(module)
    except DevPackageMissingError as missing:
        stand_in = subparsers.add_parser(name, help=f"(not installed: {INSTALL})", prefix_chars="+", add_help=False)
        stand_in.add_argument("arguments", nargs="*", help=argparse.SUPPRESS)
        stand_in.set_defaults(run=functools.partial(_fail, missing))
        return
    command.register(subparsers)
    parser = subparsers.choices[name]
    parser.set_defaults(run=_guarded(parser.get_default("run")))


def _guarded(run: Run) -> Run:
    """``run``, with a dependency it imports when it runs (moto, for the world) missing reported as above."""

    @functools.wraps(run)
    def guarded(args: argparse.Namespace) -> int:
        with _reported_as_missing():
            return run(args)

    return guarded


@contextlib.contextmanager
def _reported_as_missing() -> Iterator[None]:
    """A module not found because its package is not installed at all becomes ``DevPackageMissingError``; any other
    (a missing module of an installed package, ours or a dependency's) is a bug and stays as it is."""
    try:
        yield
    except ModuleNotFoundError as error:
        package = (error.name or "").partition(".")[0]
        if not package or importlib.util.find_spec(package) is not None:
            raise
        raise DevPackageMissingError(package) from error


def _fail(missing: DevPackageMissingError, _: argparse.Namespace) -> int:
    raise missing
