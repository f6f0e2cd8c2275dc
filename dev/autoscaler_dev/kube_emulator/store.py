"""The emulator's object store: what etcd and the API server's generic registry do for every resource.

Objects are plain dicts that are never mutated once stored (every write builds a new dict), so reads can
hand them out and cache their JSON encoding. A global counter gives resourceVersions; a bounded history
per resource lets watches resume from a resourceVersion, and answers 410 Gone once it has been trimmed.
"""

from __future__ import annotations

import asyncio
import base64
import json
import random
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

import orjson

from autoscaler.clock import utc_now
from autoscaler_dev.kube_emulator.errors import ApiError, conflict, not_found
from autoscaler_dev.kube_emulator.resources import Obj, Registry, ResourceType
from autoscaler_dev.kube_emulator.watch import Watcher, WatchEvent

Clock = Callable[[], datetime]
Predicate = Callable[[Obj], bool]
# (operation "CREATE" | "UPDATE", resource, old object or None, new object) -> the object to store
Admission = Callable[[str, ResourceType, Obj | None, Obj], Obj]

_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # the API server's generateName alphabet


def _without_version(obj: Obj) -> Obj:
    return {**obj, "metadata": {k: v for k, v in obj["metadata"].items() if k != "resourceVersion"}}


def timestamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


Key = tuple[str, str]  # (namespace or "", name)


class Store:
    def __init__(self, registry: Registry, clock: Clock | None = None, history: int = 20_000) -> None:
        self.registry = registry
        self.clock: Clock = clock or utc_now
        self.admission: list[Admission] = []
        self.lock = threading.RLock()
        self._rv = 0
        self._objects: dict[str, dict[Key, Obj]] = {}
        self._encoded: dict[str, dict[Key, bytes]] = {}
        self._history: dict[str, deque[WatchEvent]] = {}
        self._history_limit = history
        self._compacted: dict[str, int] = {}  # newest resourceVersion no longer in a resource's history
        self._watchers: dict[str, set[Watcher]] = {}
        self._uids: dict[str, tuple[ResourceType, Key]] = {}
        self._dependents: dict[str, set[str]] = {}  # owner uid -> dependent uids (for garbage collection)
        self._mirrors: dict[str, tuple[ResourceType, Callable[[Obj], Obj]]] = {}

    def mirror(
        self, one: ResourceType, other: ResourceType, to_other: Callable[[Obj], Obj], to_one: Callable[[Obj], Obj]
    ) -> None:
        """Serve ``one`` and ``other`` from the same objects (as v1 and events.k8s.io/v1 Events are): every write to
        either is seen, converted, in the other at the same resourceVersion."""
        self._mirrors[one.key] = (other, to_other)
        self._mirrors[other.key] = (one, to_one)

    # --- reads -----------------------------------------------------------------------------------
    @property
    def resource_version(self) -> str:
        return str(self._rv)

    def last_change(self, resource: ResourceType) -> int:
        """The resourceVersion of the newest write to ``resource`` (0: never written): cheap enough to ask on every
        request, for what follows a few kinds' objects (the RBAC authorizer)."""
        history = self._history.get(resource.key)
        return history[-1].rv if history else self._compacted.get(resource.key, 0)

    def get(self, resource: ResourceType, namespace: str, name: str) -> Obj:
        obj = self._objects.get(resource.key, {}).get((namespace, name))
        if obj is None:
            raise not_found(resource, name)
        return obj

    def encoded(self, resource: ResourceType, key: Key) -> bytes:
        """The object's JSON, encoded once per version."""
        with self.lock:  # a writer must not see its fresh version replaced by a stale encoding
            cache = self._encoded.setdefault(resource.key, {})
            raw = cache.get(key)
            if raw is None:
                raw = cache[key] = orjson.dumps(self._objects[resource.key][key])
            return raw

    def select(
        self,
        resource: ResourceType,
        namespace: str,
        predicate: Predicate | None = None,
        limit: int = 0,
        continue_token: str = "",
    ) -> tuple[list[Key], str, str, int]:
        """Keys of the matching objects in (namespace, name) order, one page at a time:
        (keys, list resourceVersion, continue token, remaining count)."""
        with self.lock:
            objects = self._objects.get(resource.key, {})
            keys = sorted(k for k in objects if not namespace or k[0] == namespace)
            list_rv = self.resource_version
        if continue_token:
            try:
                state = json.loads(base64.urlsafe_b64decode(continue_token))
                after, list_rv = tuple(state["after"]), state["rv"]
            except (ValueError, KeyError, TypeError):
                raise ApiError(400, "BadRequest", "continue key is not valid") from None
            keys = [k for k in keys if k > after]
        matching: list[Key] = []
        for position, key in enumerate(keys):
            obj = objects.get(key)
            if obj is None or (predicate is not None and not predicate(obj)):
                continue
            if limit and len(matching) == limit:
                token = base64.urlsafe_b64encode(json.dumps({"rv": list_rv, "after": matching[-1]}).encode()).decode()
                return matching, list_rv, token, len(keys) - position
            matching.append(key)
        return matching, list_rv, "", 0

    def objects(self, resource: ResourceType, namespace: str = "") -> Iterator[Obj]:
        for key, obj in list(self._objects.get(resource.key, {}).items()):
            if not namespace or key[0] == namespace:
                yield obj

    # --- writes ----------------------------------------------------------------------------------
    def create(self, resource: ResourceType, namespace: str, body: Obj) -> Obj:
        metadata = dict(body.get("metadata") or {})
        if resource.namespaced:
            if metadata.get("namespace") not in (None, "", namespace):
                raise ApiError(
                    400,
                    "BadRequest",
                    "the namespace of the provided object does not match the namespace sent on the request",
                )
            metadata["namespace"] = namespace
        else:
            metadata.pop("namespace", None)
        if not metadata.get("name"):
            if not metadata.get("generateName"):
                raise ApiError(
                    422,
                    "Invalid",
                    f"{resource.kind} is invalid: metadata.name: Required value: name or generateName is required",
                )
            metadata["name"] = metadata["generateName"] + "".join(random.choices(_SUFFIX_ALPHABET, k=5))
        for transient in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds"):
            metadata.pop(transient, None)
        metadata.update(uid=str(uuid.uuid4()), creationTimestamp=timestamp(self.clock()), generation=1)
        obj = {**body, "apiVersion": resource.api_version, "kind": resource.kind, "metadata": metadata}
        with self.lock:
            key = (namespace if resource.namespaced else "", metadata["name"])
            if key in self._objects.get(resource.key, {}):
                raise ApiError(
                    409,
                    "AlreadyExists",
                    f'{resource.key} "{key[1]}" already exists',
                    {"name": key[1], "kind": resource.plural},
                )
            for admit in self.admission:
                obj = admit("CREATE", resource, None, obj)
            return self._commit(resource, key, "ADDED", obj, None)

    def replace(self, resource: ResourceType, namespace: str, name: str, body: Obj, subresource: str = "") -> Obj:
        """PUT semantics: resourceVersion (when given) must match; the status subresource changes only status,
        the main resource never changes status (when the kind has a status subresource)."""
        with self.lock:
            key = (namespace if resource.namespaced else "", name)
            old = self.get(resource, *key)
            wanted_rv = (body.get("metadata") or {}).get("resourceVersion")
            if wanted_rv and wanted_rv != old["metadata"]["resourceVersion"]:
                raise conflict(
                    resource,
                    name,
                    "the object has been modified; please apply your changes to the latest version and try again",
                )
            if subresource == "status":
                new = {k: v for k, v in old.items() if k != "status"}
                if body.get("status") is not None:
                    new["status"] = body["status"]
            else:
                new = self._merge_metadata(resource, old, body)
                if resource.has_status:
                    if "status" in old:
                        new["status"] = old["status"]
                    else:
                        new.pop("status", None)
            new["metadata"] = {**new["metadata"], "generation": self._generation(old, new)}
            for admit in self.admission:
                new = admit("UPDATE", resource, old, new)
            if _without_version(new) == _without_version(old):
                return old  # a no-op write does not bump the resourceVersion, as on a real server
            if new["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers"):
                return self._remove(resource, key, new)
            return self._commit(resource, key, "MODIFIED", new, old)

    def patch(
        self, resource: ResourceType, namespace: str, name: str, mutate: Callable[[Obj], Obj], subresource: str = ""
    ) -> Obj:
        """Read, change and write back atomically (PATCH): ``mutate`` gets the stored object, returns the new one."""
        with self.lock:
            old = self.get(resource, namespace if resource.namespaced else "", name)
            return self.replace(resource, namespace, name, mutate(old), subresource)

    def delete(self, resource: ResourceType, namespace: str, name: str, preconditions: Obj | None = None) -> Obj:
        """Remove the object, or mark it (deletionTimestamp) while finalizers remain."""
        with self.lock:
            key = (namespace if resource.namespaced else "", name)
            old = self.get(resource, *key)
            for field in ("uid", "resourceVersion"):
                wanted = (preconditions or {}).get(field)
                if wanted and wanted != old["metadata"].get(field):
                    raise conflict(
                        resource,
                        name,
                        f"Precondition failed: {field}: {wanted}, but found {old['metadata'].get(field)}",
                    )
            if not old["metadata"].get("finalizers"):
                return self._remove(resource, key, old)
            if old["metadata"].get("deletionTimestamp"):
                return old
            metadata = {
                **old["metadata"],
                "deletionTimestamp": timestamp(self.clock()),
                "deletionGracePeriodSeconds": 0,
            }
            return self._commit(resource, key, "MODIFIED", {**old, "metadata": metadata}, old)

    # --- watches ---------------------------------------------------------------------------------
    def watch(
        self, resource: ResourceType, since: str, loop: asyncio.AbstractEventLoop
    ) -> tuple[Watcher, list[WatchEvent]]:
        """Register a watcher and return the events it must see first: every current object as ADDED when
        ``since`` is empty or "0", otherwise the history after ``since`` (410 Gone if it was trimmed)."""
        watcher = Watcher(loop)
        with self.lock:
            if since in ("", "0"):
                backlog = [WatchEvent(self._rv, "ADDED", obj) for obj in self._objects.get(resource.key, {}).values()]
            else:
                try:
                    start = int(since)
                except ValueError:
                    raise ApiError(400, "BadRequest", f"invalid resource version: {since}") from None
                if start < self._compacted.get(resource.key, 0):
                    raise ApiError(
                        410, "Expired", f"too old resource version: {start} ({self._compacted[resource.key]})"
                    )
                backlog = [e for e in self._history.get(resource.key, ()) if e.rv > start]
            self._watchers.setdefault(resource.key, set()).add(watcher)
        return watcher, backlog

    def unwatch(self, resource: ResourceType, watcher: Watcher) -> None:
        with self.lock:
            self._watchers.get(resource.key, set()).discard(watcher)

    def close_watches(self, abort: bool = False) -> int:
        """End every open watch (as when an API server restarts or a connection drops); returns how many."""
        with self.lock:
            watchers = [w for group in self._watchers.values() for w in group]
            self._watchers.clear()
        for watcher in watchers:
            watcher.close(abort)
        return len(watchers)

    def compact(self) -> None:
        """Forget every resource's watch history, so resuming a watch from an older version gets 410 Gone."""
        with self.lock:
            for key in list(self._history):
                self._history[key].clear()
                self._compacted[key] = self._rv

    # --- internals -------------------------------------------------------------------------------
    def _merge_metadata(self, resource: ResourceType, old: Obj, body: Obj) -> Obj:
        metadata = dict(body.get("metadata") or {})
        kept = (
            "name",
            "namespace",
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
        )
        for field in kept:
            if field in old["metadata"]:
                metadata[field] = old["metadata"][field]
            else:
                metadata.pop(field, None)
        if old["metadata"].get("deletionTimestamp"):
            added = set(metadata.get("finalizers") or ()) - set(old["metadata"].get("finalizers") or ())
            if added:
                raise ApiError(
                    422,
                    "Invalid",
                    f'{resource.kind} "{old["metadata"]["name"]}" is invalid: metadata.finalizers: '
                    "Forbidden: no new finalizers can be added if the object is being deleted, "
                    f"found new finalizers {sorted(added)}",
                )
        return {**body, "apiVersion": resource.api_version, "kind": resource.kind, "metadata": metadata}

    @staticmethod
    def _generation(old: Obj, new: Obj) -> int:
        generation = int(old["metadata"].get("generation") or 1)
        content = {k for k in (*old, *new) if k not in ("metadata", "status", "apiVersion", "kind")}
        return generation + 1 if any(old.get(k) != new.get(k) for k in content) else generation

    def _commit(self, resource: ResourceType, key: Key, kind: str, obj: Obj, old: Obj | None) -> Obj:
        self._rv += 1
        obj = {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(self._rv)}}
        self._objects.setdefault(resource.key, {})[key] = obj
        self._encoded.setdefault(resource.key, {}).pop(key, None)
        uid = obj["metadata"]["uid"]
        self._uids[uid] = (resource, key)
        for owner in obj["metadata"].get("ownerReferences") or ():
            self._dependents.setdefault(owner.get("uid", ""), set()).add(uid)
        self._publish(resource, WatchEvent(self._rv, kind, obj, old))
        if resource.key in self._mirrors:
            other, convert = self._mirrors[resource.key]
            previous = self._objects.get(other.key, {}).get(key)
            self._objects.setdefault(other.key, {})[key] = converted = convert(obj)
            self._encoded.setdefault(other.key, {}).pop(key, None)
            self._publish(other, WatchEvent(self._rv, kind, converted, previous))
        return obj

    def _remove(self, resource: ResourceType, key: Key, last: Obj) -> Obj:
        self._rv += 1
        gone = {**last, "metadata": {**last["metadata"], "resourceVersion": str(self._rv)}}
        self._objects[resource.key].pop(key, None)
        self._encoded.get(resource.key, {}).pop(key, None)
        uid = gone["metadata"]["uid"]
        self._uids.pop(uid, None)
        self._publish(resource, WatchEvent(self._rv, "DELETED", gone, last))
        if resource.key in self._mirrors:
            other, convert = self._mirrors[resource.key]
            previous = self._objects.get(other.key, {}).pop(key, None)
            self._encoded.get(other.key, {}).pop(key, None)
            if previous is not None:
                self._publish(other, WatchEvent(self._rv, "DELETED", convert(gone), previous))
        self._collect_dependents(uid)
        return gone

    def _collect_dependents(self, owner_uid: str) -> None:
        """Background cascading deletion: a dependent whose owners are all gone is deleted (finalizers apply)."""
        for dependent in self._dependents.pop(owner_uid, set()):
            located = self._uids.get(dependent)
            if located is None:
                continue
            resource, key = located
            obj = self._objects[resource.key][key]
            owners = [o.get("uid") for o in obj["metadata"].get("ownerReferences") or ()]
            if all(owner not in self._uids for owner in owners):
                self.delete(resource, *key)

    def _publish(self, resource: ResourceType, event: WatchEvent) -> None:
        history = self._history.setdefault(resource.key, deque())
        if len(history) >= self._history_limit:
            self._compacted[resource.key] = history.popleft().rv
        history.append(event)
        for watcher in self._watchers.get(resource.key, ()):
            watcher.push(event)
