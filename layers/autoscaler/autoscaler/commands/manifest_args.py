"""The manifest arguments of the commands that read manifests: one spelling of where they come from, one reader.

Manifests are named as kubectl names them, ``-f/--filename FILE...`` (repeatable, each taking one or more
files or directories read recursively, see ``manifests.manifest_files``); ``validate`` and ``get`` take them
as operands. Either way they land in ``args.files``.
"""

from __future__ import annotations

import argparse
from typing import Any

from autoscaler.manifests import Document, load_documents

FILES = "files"


def add_filename_option(parser: argparse.ArgumentParser, help: str, *, required: bool = False) -> None:
    """``-f/--filename FILE [FILE ...]``, repeatable; without ``required``, none is an empty list."""
    presence: dict[str, Any] = {"required": True} if required else {"default": []}
    parser.add_argument(
        "-f", "--filename", dest=FILES, action="extend", nargs="+", metavar="FILE", help=help, **presence
    )


def add_file_operands(parser: argparse.ArgumentParser, help: str) -> None:
    """``FILE...`` as operands: at least one."""
    parser.add_argument(FILES, nargs="+", help=help)


def manifest_documents(args: argparse.Namespace) -> list[Document]:
    """Every document of the files the command was given (see ``manifests.load_documents``)."""
    files: list[str] = getattr(args, FILES)
    return load_documents(files)
