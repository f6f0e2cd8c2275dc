"""A Kubernetes API server in memory, on 127.0.0.1 and a free port, in a background thread.

The official ``kubernetes`` client and ``kubectl`` talk to it unchanged. It serves the core kinds the
autoscaler touches and our CRDs, with the API server's semantics where the controllers depend on them:
201 on create, PUT, merge / JSON / strategic patches, resourceVersion conflicts, generation, finalizers
and deletionTimestamp, owner-reference garbage collection, label and field selectors, paginated lists,
watches that resume from a resourceVersion (410 once trimmed) and end after ``timeoutSeconds``, the status
and eviction subresources (PodDisruptionBudgets honoured), validation of our kinds and server-side tables.

    with KubeEmulator() as kube:
        kube.write_kubeconfig(path)            # or point a client at kube.url
        kube.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
"""

from __future__ import annotations

import asyncio
import socket
import threading
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml
from aiohttp import web

from autoscaler_dev.kube_emulator import events
from autoscaler_dev.kube_emulator.admission import register_custom_resources, validate_karpenter_kinds
from autoscaler_dev.kube_emulator.defaults import default_builtin
from autoscaler_dev.kube_emulator.errors import ApiError
from autoscaler_dev.kube_emulator.event_ttl import EventExpiry
from autoscaler_dev.kube_emulator.resources import Obj, Registry, ResourceType
from autoscaler_dev.kube_emulator.server import Fault, KubeApi
from autoscaler_dev.kube_emulator.store import Clock, Store

_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class KubeEmulator:
    def __init__(
        self, *, clock: Clock | None = None, history: int = 20_000, validate: bool = True, port: int = 0
    ) -> None:
        self.registry = Registry.default()
        self.store = Store(self.registry, clock, history)
        self.store.admission.append(register_custom_resources(self.registry))
        self.store.admission.append(default_builtin)
        if validate:
            self.store.admission.append(validate_karpenter_kinds)
        self.store.mirror(
            self.resource("v1", "Event"),
            self.resource("events.k8s.io/v1", "Event"),
            events.to_events_v1,
            events.to_core,
        )
        self.events = EventExpiry(self.store, self.resource("v1", "Event"))
        self.store.admission.append(self.events.admit)
        self.api = KubeApi(self.store)
        for name in _NAMESPACES:
            self.create(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}, "status": {"phase": "Active"}}
            )
        self.port = 0
        self._wanted_port = port  # 0: a free one
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle -------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        if not self.port:
            raise RuntimeError("the emulator is not running: call start() first")
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> KubeEmulator:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self._wanted_port))
        self.port = sock.getsockname()[1]
        loop = asyncio.new_event_loop()

        async def listen() -> web.ServerRunner:
            runner = web.ServerRunner(web.Server(self.api, access_log=None), shutdown_timeout=0.2)
            await runner.setup()
            await web.SockSite(runner, sock).start()
            return runner

        runner = loop.run_until_complete(listen())

        def serve() -> None:
            asyncio.set_event_loop(loop)
            loop.run_forever()
            loop.run_until_complete(runner.cleanup())
            loop.close()

        self._loop = loop
        self._thread = threading.Thread(target=serve, name=f"kube-emulator-{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._loop is None or self._thread is None:
            return
        self.store.close_watches()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop = self._thread = None
        self.port = 0

    def __enter__(self) -> KubeEmulator:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def kubeconfig(self, namespace: str = "default") -> dict[str, Any]:
        """A kubeconfig for this emulator (a bearer token is sent, and ignored, as with any client)."""
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "emulator", "cluster": {"server": self.url}}],
            "users": [{"name": "emulator", "user": {"token": "emulator"}}],
            "contexts": [
                {"name": "emulator", "context": {"cluster": "emulator", "user": "emulator", "namespace": namespace}}
            ],
            "current-context": "emulator",
        }

    def write_kubeconfig(self, path: Path, namespace: str = "default") -> Path:
        path.write_text(yaml.safe_dump(self.kubeconfig(namespace)))
        return path

    # --- test controls ---------------------------------------------------------------------------
    def inject(self, fault: Fault) -> None:
        """Fail (or delay) the next matching requests, e.g. ``Fault(429, "PATCH", "/nodes/n1", times=2)``."""
        self.api.faults.add(fault)

    def drop_watches(self, abort: bool = True) -> int:
        """Cut every open watch: ``abort`` closes the connection mid-stream, otherwise the stream ends cleanly."""
        return self.store.close_watches(abort)

    def compact(self) -> None:
        """Trim the watch history: resuming from an older resourceVersion now gets 410 Gone."""
        self.store.compact()

    @property
    def requests(self) -> dict[str, int]:
        """Requests served so far by "VERB resource" (``"GET nodeclaims.karpenter.sh"``)."""
        return dict(self.api.requests)

    # --- direct object access (no HTTP), for seeding and asserting ---------------------------------
    def resource(self, api_version: str, kind: str) -> ResourceType:
        resource = self.registry.by_kind(api_version, kind)
        if resource is None:
            raise KeyError(f"the emulator serves no {kind} in {api_version}")
        return resource

    def create(self, obj: Obj) -> Obj:
        """Create ``obj`` (status included: it is written through the status subresource as a controller would)."""
        resource = self.resource(obj["apiVersion"], obj["kind"])
        namespace = (obj.get("metadata") or {}).get("namespace") or ("default" if resource.namespaced else "")
        created = self.store.create(resource, namespace, obj)
        if resource.has_status and obj.get("status") is not None:
            created = self.store.replace(
                resource, namespace, created["metadata"]["name"], {"status": obj["status"]}, "status"
            )
        return created

    def apply(self, obj: Obj) -> Obj:
        """Create ``obj`` or, when it exists, replace it (spec and status)."""
        resource = self.resource(obj["apiVersion"], obj["kind"])
        metadata = obj.get("metadata") or {}
        namespace = metadata.get("namespace") or ("default" if resource.namespaced else "")
        with self.store.lock:
            try:
                self.store.get(resource, namespace if resource.namespaced else "", metadata.get("name", ""))
            except ApiError:
                return self.create(obj)
            body = {**obj, "metadata": {k: v for k, v in metadata.items() if k != "resourceVersion"}}
            stored = self.store.replace(resource, namespace, metadata["name"], body)
            if resource.has_status and obj.get("status") is not None:
                stored = self.store.replace(resource, namespace, metadata["name"], {"status": obj["status"]}, "status")
            return stored

    def replace(self, obj: Obj, body: Obj, subresource: str = "") -> Obj:
        """PUT ``body`` over the stored ``obj`` (``subresource="status"``: ``{"status": ...}`` only)."""
        resource = self.resource(obj["apiVersion"], obj["kind"])
        metadata = obj["metadata"]
        return self.store.replace(resource, metadata.get("namespace") or "", metadata["name"], body, subresource)

    def bind(self, pod: Obj, node: str) -> Obj:
        """What a ``pods/binding`` does: set the pending pod's ``spec.nodeName``."""
        metadata = {k: v for k, v in pod["metadata"].items() if k != "resourceVersion"}
        return self.replace(pod, {**pod, "metadata": metadata, "spec": {**pod["spec"], "nodeName": node}})

    def get(self, api_version: str, kind: str, name: str, namespace: str = "default") -> Obj | None:
        resource = self.resource(api_version, kind)
        try:
            return self.store.get(resource, namespace if resource.namespaced else "", name)
        except ApiError:
            return None

    def list(self, api_version: str, kind: str, namespace: str = "") -> list[Obj]:
        return list(self.store.objects(self.resource(api_version, kind), namespace))

    def delete(self, api_version: str, kind: str, name: str, namespace: str = "default") -> Obj | None:
        resource = self.resource(api_version, kind)
        try:
            return self.store.delete(resource, namespace if resource.namespaced else "", name)
        except ApiError:
            return None
