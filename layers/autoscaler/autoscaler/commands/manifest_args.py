"""The manifest arguments of the commands that read manifests: one spelling of where they come from, one reader.

Manifests are named as kubectl names them, ``-f/--filename FILE...`` (repeatable, each taking one or more
files or directories read recursively, see ``manifests.manifest_files``), and as operands too (``validate dir/``
and ``validate -f dir/`` mean the same). A path that does not exist is refused before anything is read, as
kubectl refuses it: ``error: the path "x" does not exist`` (``ManifestPathError``, printed by ``cli.main``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from autoscaler.manifests import Document, load_documents

FILES = "files"
PATHS = "paths"
REQUIRED = "manifests_required"


class ManifestPathError(ValueError):
    """A named manifest path does not exist, or a command that needs manifests was given none."""


def add_manifest_arguments(
    parser: argparse.ArgumentParser, help: str, *, required: bool = False, operands: bool = True
) -> None:
    """``-f/--filename FILE [FILE ...]`` (repeatable) and, unless ``operands`` is False (a command whose operands
    mean something else), ``PATH...`` operands; with ``required``, at least one of them."""
    parser.add_argument(
        "-f", "--filename", dest=FILES, action="extend", nargs="+", metavar="FILE", help=help, default=[]
    )
    if operands:
        parser.add_argument(PATHS, nargs="*", metavar="PATH", help="the same as -f")
    parser.set_defaults(**{REQUIRED: required})


def missing(args: argparse.Namespace) -> bool:
    """A command that needs manifests was given none (checked by the CLI's parser once every argument is read)."""
    return bool(getattr(args, REQUIRED, False)) and not getattr(args, FILES, []) and not getattr(args, PATHS, [])


def manifest_paths(args: argparse.Namespace) -> list[str]:
    """Every path given, operands first; raises ManifestPathError for one that does not exist or for none."""
    paths = [*getattr(args, PATHS, []), *getattr(args, FILES, [])]
    for path in paths:
        if not Path(path).exists():
            raise ManifestPathError(f'the path "{path}" does not exist')
    if missing(args):
        raise ManifestPathError("must specify one or more manifests: -f FILE or PATH (a file or a directory)")
    return paths


def manifest_documents(args: argparse.Namespace) -> list[Document]:
    """Every document of the paths the command was given (see ``manifests.load_documents``)."""
    return load_documents(manifest_paths(args))
