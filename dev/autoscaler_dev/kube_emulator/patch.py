"""The three patch formats of the API server: JSON merge patch, JSON patch and strategic merge patch."""

from __future__ import annotations

import copy
from typing import Any

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"


class PatchError(ValueError):
    """A patch that cannot apply (the API server answers 422, or 415 for an unsupported format)."""

    def __init__(self, message: str, status: int = 422) -> None:
        super().__init__(message)
        self.status = status


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, ``null`` removes a key, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _parent(document: Any, parts: list[str]) -> tuple[Any, str]:
    node = document
    for part in parts[:-1]:
        if isinstance(node, list):
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise PatchError(f"doc is missing path: /{'/'.join(parts)}")
    return node, parts[-1]


def _get(document: Any, path: str) -> Any:
    parts = _pointer(path)
    if not parts:
        return document
    parent, last = _parent(document, parts)
    try:
        return parent[int(last)] if isinstance(parent, list) else parent[last]
    except (KeyError, IndexError, ValueError):
        raise PatchError(f"doc is missing path: {path}") from None


def _remove(document: Any, path: str) -> Any:
    parent, last = _parent(document, _pointer(path))
    try:
        return parent.pop(int(last)) if isinstance(parent, list) else parent.pop(last)
    except (KeyError, IndexError, ValueError):
        raise PatchError(f"unable to remove nonexistent key: {last}: missing value") from None


def _add(document: Any, path: str, value: Any) -> Any:
    parts = _pointer(path)
    if not parts:
        return value
    parent, last = _parent(document, parts)
    if isinstance(parent, list):
        index = len(parent) if last == "-" else int(last)
        if not 0 <= index <= len(parent):
            raise PatchError(f"add operation does not apply: index {index} out of bounds")
        parent.insert(index, value)
    elif isinstance(parent, dict):
        parent[last] = value
    else:
        raise PatchError(f"add operation does not apply: doc is missing path: {path}")
    return document


def json_patch(target: Any, operations: Any) -> Any:
    """RFC 6902 operations applied in order to a copy of ``target``."""
    if not isinstance(operations, list):
        raise PatchError("json patch must be a list of operations")
    document = copy.deepcopy(target)
    for operation in operations:
        op, path = operation.get("op"), operation.get("path", "")
        if op == "add":
            document = _add(document, path, copy.deepcopy(operation.get("value")))
        elif op == "remove":
            _remove(document, path)
        elif op == "replace":
            _get(document, path)
            if _pointer(path):
                _remove(document, path)
            document = _add(document, path, copy.deepcopy(operation.get("value")))
        elif op in ("move", "copy"):
            value = _get(document, operation["from"])
            if op == "move":
                _remove(document, operation["from"])
            document = _add(document, path, copy.deepcopy(value))
        elif op == "test":
            if _get(document, path) != operation.get("value"):
                raise PatchError(f"testing value {path} failed")
        else:
            raise PatchError(f"Unexpected kind: {op}")
    return document


# Lists Kubernetes merges by a key under strategic merge patch (patchMergeKey in the core types).
_MERGE_KEYS = {
    "conditions": "type",
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "ports": "containerPort",
    "imagePullSecrets": "name",
    "ownerReferences": "uid",
    "addresses": "type",
}
_SET_LISTS = ("finalizers",)  # lists of scalars merged as sets


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """Strategic merge for the core kinds: keyed lists merge element-wise, ``$patch: delete|replace`` and
    ``$deleteFromPrimitiveList`` are honoured; ``$setElementOrder`` and ``$retainKeys`` are accepted and ignored."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith(("$setElementOrder/", "$retainKeys", "$patch")):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            name = key.split("/", 1)[1]
            result[name] = [v for v in result.get(name, []) if v not in value]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list) and key in _MERGE_KEYS and isinstance(result.get(key), list):
            result[key] = _merge_keyed_list(result[key], value, _MERGE_KEYS[key])
        elif isinstance(value, list) and key in _SET_LISTS and isinstance(result.get(key), list):
            result[key] = [*result[key], *(v for v in value if v not in result[key])]
        else:
            result[key] = strategic_merge_patch(result.get(key), value)
    return result


def _merge_keyed_list(current: list[Any], patch: list[Any], merge_key: str) -> list[Any]:
    merged = list(current)
    for item in patch:
        if not isinstance(item, dict) or merge_key not in item:
            raise PatchError(f"map: {item} does not contain declared merge key: {merge_key}")
        index = next(
            (i for i, e in enumerate(merged) if isinstance(e, dict) and e.get(merge_key) == item[merge_key]), None
        )
        if item.get("$patch") == "delete":
            if index is not None:
                merged.pop(index)
        elif index is None:
            merged.append({k: v for k, v in item.items() if k != "$patch"})
        else:
            merged[index] = strategic_merge_patch(merged[index], item)
    return merged


def apply_patch(target: dict[str, Any], patch: Any, content_type: str, custom_resource: bool) -> dict[str, Any]:
    """Apply a PATCH body of the given content type, as the API server would for this kind of resource."""
    kind = content_type.split(";", 1)[0].strip()
    if kind == MERGE:
        result = merge_patch(target, patch)
    elif kind == JSON_PATCH:
        result = json_patch(target, patch)
    elif kind == STRATEGIC:
        if custom_resource:
            raise PatchError(
                "the body of the request was in an unknown format - accepted media types include: "
                f"{JSON_PATCH}, {MERGE}, {APPLY}",
                415,
            )
        result = strategic_merge_patch(target, patch)
    else:
        raise PatchError(f"unsupported patch type {kind!r}: server-side apply is not emulated", 415)
    if not isinstance(result, dict):
        raise PatchError("the patch did not produce an object")
    return result
