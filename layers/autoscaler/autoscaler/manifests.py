"""Read multi-document YAML manifests from files and directories, remembering where each came from, and
write objects back as YAML a person can read."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True)
class Document:
    """One YAML document: its parsed body (None when it did not parse) and its origin."""

    source: str
    index: int
    body: Any
    error: str | None = None

    @property
    def origin(self) -> str:
        return f"{self.source}#{self.index}"

    @property
    def problem(self) -> str | None:
        """Why this is no object a command can read (it did not parse, or it is a scalar or a list), after its
        origin; None when it is one."""
        if self.error is None and isinstance(self.body, dict):
            return None
        return f"{self.origin}: {self.error or 'not a YAML object'}"


def manifest_files(paths: Iterable[str | Path]) -> Iterator[Path]:
    """Files named directly, and the manifest files under named directories, in a stable order."""
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*") if p.suffix in MANIFEST_SUFFIXES and p.is_file())
        else:
            yield path


def load_documents(paths: Iterable[str | Path]) -> list[Document]:
    """Every non-empty document of every file; a file that does not parse is one document with an error.
    ``List`` objects (``kind: List`` or ``*List``) are expanded into their items."""
    documents: list[Document] = []
    for path in manifest_files(paths):
        index = 0
        try:
            for body in yaml.safe_load_all(path.read_text()):
                for item in _expand_lists(body):
                    documents.append(Document(str(path), index, item))
                    index += 1
        except (OSError, yaml.YAMLError) as error:
            # Keep the documents before the broken one; the broken one carries the parser's reason.
            documents.append(Document(str(path), index, None, f"cannot read manifest: {error}"))
    return documents


def _expand_lists(body: Any) -> list[Any]:
    if body is None:
        return []  # an empty document, such as a trailing `---`
    if isinstance(body, dict) and str(body.get("kind", "")).endswith("List") and isinstance(body.get("items"), list):
        return list(body["items"])
    return [body]


class _ManifestDumper(yaml.SafeDumper):
    """Multi-line strings (user data, scripts) as literal blocks, the way people write them."""


# Strings a YAML 1.1 reader might take for a number ("099720109477" is a float to Go's yaml): quote them.
_NUMBER_LIKE = re.compile(r"[-+]?[0-9][0-9_.]*([eE][-+]?[0-9]+)?")


def _represent_str(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    style = "|" if "\n" in text else "'" if _NUMBER_LIKE.fullmatch(text) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_ManifestDumper.add_representer(str, _represent_str)


def dump_manifest(body: Any) -> str:
    """One object as a YAML document, fields in the order given."""
    return yaml.dump(body, Dumper=_ManifestDumper, sort_keys=False, width=120, allow_unicode=True)
