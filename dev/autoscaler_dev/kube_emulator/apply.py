"""Server-side apply (``application/apply-patch+yaml``) and the managedFields that record who set what.

A simplification of structured-merge-diff that keeps its visible rules: every field an applier sets becomes
that manager's; applying a value another manager owns, to something different, is a 409 Conflict naming the
field and the manager, unless ``force=true`` takes it over; a field an applier set before and leaves out now is
removed, unless someone else owns it too. Maps merge field by field; lists and scalars are atomic (the API
server merges lists with ``x-kubernetes-list-map-keys`` per item). Writes other than apply record their
``fieldManager`` as an ``Update`` owner of the fields they changed (only when they name one, as kubectl does,
or when the object is already managed, so the autoscaler's own writes cost nothing extra).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from autoscaler_dev.kube_emulator.errors import ApiError
from autoscaler_dev.kube_emulator.resources import Obj, ResourceType
from autoscaler_dev.kube_emulator.store import Store, timestamp

Path = tuple[str, ...]
_SERVER_METADATA = frozenset(
    {
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "managedFields",
        "selfLink",
    }
)


def leaves(obj: Mapping[str, Any], *, with_status: bool = False) -> dict[Path, Any]:
    """Every set field of ``obj`` as a path to its (atomic) value, server-owned metadata left out."""
    found: dict[Path, Any] = {}

    def walk(value: Any, path: Path) -> None:
        if isinstance(value, Mapping) and value:
            for key, item in value.items():
                walk(item, (*path, str(key)))
        else:
            found[path] = value

    for key, value in obj.items():
        if key in ("apiVersion", "kind") or (key == "status" and not with_status):
            continue
        if key == "metadata" and isinstance(value, Mapping):
            for field, item in value.items():
                if field not in _SERVER_METADATA:
                    walk(item, ("metadata", field))
            continue
        walk(value, (key,))
    return found


def fields_v1(paths: Iterable[Path]) -> Obj:
    tree: Obj = {}
    for path in sorted(paths):
        node = tree
        for part in path:
            node = node.setdefault(f"f:{part}", {})
    return tree


def paths_of(fields: Mapping[str, Any], prefix: Path = ()) -> set[Path]:
    found: set[Path] = set()
    for key, child in fields.items():
        if not key.startswith("f:"):
            continue
        path = (*prefix, key[2:])
        found |= paths_of(child, path) if child else {path}
    return found


def _value(obj: Any, path: Path) -> Any:
    for part in path:
        if not isinstance(obj, Mapping) or part not in obj:
            return None
        obj = obj[part]
    return obj


def _overlaps(a: Path, b: Path) -> bool:
    shorter = min(len(a), len(b))
    return a[:shorter] == b[:shorter]


def _set(obj: Obj, path: Path, value: Any) -> None:
    for part in path[:-1]:
        child = obj.get(part)
        if not isinstance(child, dict):
            child = obj[part] = {}
        obj = child
    obj[path[-1]] = copy.deepcopy(value)


def _remove(obj: Obj, path: Path) -> None:
    parents = [obj]
    for part in path[:-1]:
        child = parents[-1].get(part)
        if not isinstance(child, dict):
            return
        parents.append(child)
    parents[-1].pop(path[-1], None)
    for parent, part in zip(reversed(parents[:-1]), reversed(path[:-1]), strict=True):
        if parent.get(part) == {}:
            parent.pop(part)


def _owners(obj: Mapping[str, Any]) -> list[Obj]:
    return [dict(entry) for entry in (obj.get("metadata") or {}).get("managedFields") or ()]


def _entry(manager: str, operation: str, api_version: str, now: datetime, paths: Iterable[Path]) -> Obj:
    return {
        "manager": manager,
        "operation": operation,
        "apiVersion": api_version,
        "time": timestamp(now),
        "fieldsType": "FieldsV1",
        "fieldsV1": fields_v1(paths),
    }


def _with_owners(obj: Obj, owners: list[Obj]) -> Obj:
    kept = [o for o in owners if o.get("fieldsV1")]
    return {**obj, "metadata": {**obj["metadata"], "managedFields": kept}}


def _take(owners: list[Obj], paths: Iterable[Path], but: tuple[str, str]) -> list[Obj]:
    """Owners with ``paths`` (and what overlaps them) no longer theirs, except the (manager, operation) ``but``."""
    taken = list(paths)
    result = []
    for owner in owners:
        if (owner.get("manager"), owner.get("operation")) == but:
            result.append(owner)
            continue
        mine = {p for p in paths_of(owner.get("fieldsV1") or {}) if not any(_overlaps(p, t) for t in taken)}
        result.append({**owner, "fieldsV1": fields_v1(mine)})
    return result


def record_update(old: Mapping[str, Any] | None, new: Obj, manager: str, now: datetime) -> Obj:
    """``new`` with ``manager`` owning (operation Update) every field that differs from ``old``."""
    before, after = leaves(old or {}), leaves(new)
    changed = {p for p, v in after.items() if before.get(p) != v} | {p for p in before if p not in after}
    owners = _owners(old or {})
    if not changed:
        return _with_owners(new, owners) if owners else new
    owners = _take(owners, changed, (manager, "Update"))
    mine = next((o for o in owners if (o.get("manager"), o.get("operation")) == (manager, "Update")), None)
    paths = {p for p in changed if p in after}
    if mine is None:
        owners.append(_entry(manager, "Update", str(new.get("apiVersion")), now, paths))
    else:
        mine.update(_entry(manager, "Update", str(new.get("apiVersion")), now, paths_of(mine["fieldsV1"]) | paths))
    return _with_owners(new, owners)


def _conflicts(live: Obj, applied: dict[Path, Any], owners: list[Obj], manager: str) -> list[tuple[str, str]]:
    found = []
    for owner in owners:
        if owner.get("manager") == manager and owner.get("operation") == "Apply":
            continue
        for owned in paths_of(owner.get("fieldsV1") or {}):
            for path, value in applied.items():
                if _overlaps(owned, path) and _value(live, path) != value:
                    found.append((str(owner.get("manager")), "." + ".".join(path)))
    return sorted(set(found))


def _conflict_error(resource: ResourceType, name: str, conflicts: list[tuple[str, str]]) -> ApiError:
    lines = [f'conflict with "{manager}": {field}' for manager, field in conflicts]
    message = (
        f"Apply failed with {len(conflicts)} conflict{'s' if len(conflicts) > 1 else ''}: " + "\n".join(lines)
        if len(lines) > 1
        else f"Apply failed with 1 conflict: {lines[0]}"
    )
    causes = [
        {"reason": "FieldManagerConflict", "message": line, "field": field}
        for line, (_, field) in zip(lines, conflicts, strict=True)
    ]
    return ApiError(409, "Conflict", message, {"name": name, "kind": resource.plural, "causes": causes})


def server_side_apply(
    store: Store, resource: ResourceType, namespace: str, name: str, body: Obj, *, manager: str, force: bool
) -> tuple[Obj, int]:
    """Apply ``body`` as ``manager``: (the stored object, 201 when created or 200)."""
    if not manager:
        raise ApiError(400, "BadRequest", "PATCH is not supported: fieldManager is required for apply requests")
    if not isinstance(body, dict) or body.get("kind") != resource.kind:
        raise ApiError(400, "BadRequest", f"the apply configuration must be a {resource.kind} object")
    metadata = body.get("metadata") or {}
    if metadata.get("name") not in (None, name):
        raise ApiError(400, "BadRequest", "the name of the object does not match the name on the URL")
    applied = leaves(body)
    now = store.clock()
    with store.lock:
        try:
            live = store.get(resource, namespace, name)
        except ApiError as error:
            if error.code != 404:
                raise
            fresh = {**body, "metadata": {**metadata, "name": name}}
            fresh = _with_owners(fresh, [_entry(manager, "Apply", resource.api_version, now, applied)])
            return store.create(resource, namespace, fresh), 201
        owners = _owners(live)
        conflicts = _conflicts(live, applied, owners, manager)
        if conflicts and not force:
            raise _conflict_error(resource, name, conflicts)
        changed = [path for path, value in applied.items() if _value(live, path) != value]  # same value: shared
        owners = _take(owners, changed, (manager, "Apply"))
        before = next((o for o in owners if (o.get("manager"), o.get("operation")) == (manager, "Apply")), None)
        others = {p for o in owners if o is not before for p in paths_of(o.get("fieldsV1") or {})}
        merged = copy.deepcopy(live)
        for path in paths_of(before["fieldsV1"]) if before else ():
            if path not in applied and not any(_overlaps(path, other) for other in others):
                _remove(merged, path)
        for path, value in applied.items():
            _set(merged, path, value)
        owners = [o for o in owners if o is not before]
        owners.append(_entry(manager, "Apply", resource.api_version, now, applied))
        merged = _with_owners(merged, owners)
        merged["metadata"]["resourceVersion"] = live["metadata"]["resourceVersion"]
        return store.replace(resource, namespace, name, merged), 200
