"""Walk two sets of CustomResourceDefinitions side by side and list every difference but descriptions.

Karpenter's CRDs cannot live in this repository, so the comparison is a tool: point it at the CRD folder of a
Karpenter release (``pkg/apis/crds`` of aws/karpenter-provider-aws at the tag) and it compares each of those
CRDs with ours (``infra/manifests/crds`` by default)::

    python -m tools.crd_walk /tmp/karpenter/pkg/apis/crds

Everything counts — properties, types, formats, defaults, enums, patterns, bounds, required lists, list and
map types, CEL rules and messages, printer columns, names, scope, versions and subresources — except
``description`` texts (ours are our own words) and ``metadata.annotations`` (the generator's version stamp).
Lists are compared in order, as the API server and ``kubectl`` present them, except ``required``, which is a
set. The exit status is 1 when anything differs.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

OURS = Path(__file__).parents[1] / "infra" / "manifests" / "crds"
_SHOWN = 160  # characters of a value quoted in a difference


def load_crds(directory: Path) -> dict[str, dict[str, Any]]:
    """The CRDs of ``directory`` (``*.yaml``, one or more documents each), by ``metadata.name``."""
    crds: dict[str, dict[str, Any]] = {}
    for path in sorted(directory.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if isinstance(document, dict) and document.get("kind") == "CustomResourceDefinition":
                crds[document["metadata"]["name"]] = document
    return crds


def _undescribed(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _undescribed(v) for k, v in value.items() if k != "description"}
    if isinstance(value, list):
        return [_undescribed(v) for v in value]
    return value


def _shown(value: Any) -> str:
    text = yaml.safe_dump(_undescribed(value), default_flow_style=True, width=10_000).strip()
    text = text.removesuffix("\n...").removesuffix("...").strip()
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def _by_name(items: Sequence[Any]) -> dict[str, Any] | None:
    """A list of named items (versions) as a mapping, when every item has a distinct name."""
    names = [item.get("name") if isinstance(item, Mapping) else None for item in items]
    if None in names or len(set(names)) != len(names):
        return None
    return {str(item["name"]): item for item in items}


def differences(ours: Any, theirs: Any, path: str = "", *, in_properties: bool = False) -> Iterator[str]:
    """Every difference between two CRD fragments, as ``path: what differs``."""
    if isinstance(ours, Mapping) and isinstance(theirs, Mapping):
        for key in sorted(set(ours) | set(theirs), key=str):
            if key == "description" and not in_properties:
                continue
            child = f"{path}.{key}" if path else str(key)
            if key not in theirs:
                yield f"{child}: only ours: {_shown(ours[key])}"
            elif key not in ours:
                yield f"{child}: only Karpenter's: {_shown(theirs[key])}"
            elif key == "required" and not in_properties:
                yield from _set_difference(child, ours[key], theirs[key])
            else:
                yield from differences(ours[key], theirs[key], child, in_properties=key == "properties")
        return
    if isinstance(ours, list) and isinstance(theirs, list):
        ours_named, theirs_named = _by_name(ours), _by_name(theirs)
        if ours_named is not None and theirs_named is not None and path.endswith("versions"):
            yield from differences(ours_named, theirs_named, path)
            return
        for index in range(max(len(ours), len(theirs))):
            child = f"{path}[{index}]"
            if index >= len(theirs):
                yield f"{child}: only ours: {_shown(ours[index])}"
            elif index >= len(ours):
                yield f"{child}: only Karpenter's: {_shown(theirs[index])}"
            else:
                yield from differences(ours[index], theirs[index], child)
        return
    if ours != theirs or type(ours) is not type(theirs):
        yield f"{path}: ours {_shown(ours)}, Karpenter's {_shown(theirs)}"


def _set_difference(path: str, ours: Sequence[Any], theirs: Sequence[Any]) -> Iterator[str]:
    missing, extra = sorted(set(theirs) - set(ours)), sorted(set(ours) - set(theirs))
    if missing:
        yield f"{path}: missing {missing}"
    if extra:
        yield f"{path}: extra {extra}"


def readable(path: str) -> str:
    """A schema path as a field path: ``spec.versions.v1.schema.openAPIV3Schema.properties.spec.properties.a.items``
    reads ``v1 .spec.a[*]``."""
    path = re.sub(r"^spec\.versions\.([^.]+)\.schema\.openAPIV3Schema", r"\1 ", path)
    return path.replace(".properties.", ".").replace(".items", "[*]").replace(" properties.", " .")


def _without_stamp(crd: Mapping[str, Any]) -> dict[str, Any]:
    metadata = {k: v for k, v in crd.get("metadata", {}).items() if k != "annotations"}
    return {**crd, "metadata": metadata}


def walk(ours: Mapping[str, dict[str, Any]], theirs: Mapping[str, dict[str, Any]]) -> dict[str, list[str]]:
    """The differences of each CRD Karpenter ships (by name); a CRD only one side has is itself a difference."""
    report: dict[str, list[str]] = {}
    for name in sorted(set(ours) | set(theirs)):
        if name not in ours:
            report[name] = ["only Karpenter serves this CRD"]
        elif name not in theirs:
            report[name] = ["only we serve this CRD"]
        else:
            found = differences(_without_stamp(ours[name]), _without_stamp(theirs[name]))
            report[name] = [readable(difference) for difference in found]
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.crd_walk", description=__doc__.split("\n\n")[0])
    parser.add_argument("karpenter", type=Path, help="the folder of Karpenter's CRDs (pkg/apis/crds at a tag)")
    parser.add_argument("--ours", type=Path, default=OURS, help=f"the folder of our CRDs (default {OURS})")
    args = parser.parse_args(argv)
    report = walk(load_crds(args.ours), load_crds(args.karpenter))
    total = 0
    for name, found in report.items():
        total += len(found)
        print(f"{name}: {'no difference' if not found else f'{len(found)} differences'}")
        for difference in found:
            print(f"  {difference}")
    print(f"\n{len(report)} CRDs compared, {total} differences (descriptions excepted)")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
