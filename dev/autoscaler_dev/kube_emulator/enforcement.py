"""Turning the gate on for an emulator, and the emulator's direct object access on behalf of an identity.

    gate = enforce(kube, rbac_manifests, flow=FlowControl(clock=clock))
    token = gate.authenticator.issue(authentication.authenticated("me", "my-group"))
    kubelet = ActingAs.of(kube, authentication.node("ip-10-0-0-1..."))
    kubelet.create(node)                    # authorized as the kubelet first; 403 raised as ApiError

Without ``enforce`` the emulator trusts everyone (unit and functional tests), as before.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator

from autoscaler_dev.kube_emulator.authentication import Authenticator, User
from autoscaler_dev.kube_emulator.authorization import Authorizer
from autoscaler_dev.kube_emulator.emulator import KubeEmulator
from autoscaler_dev.kube_emulator.errors import ApiError
from autoscaler_dev.kube_emulator.flowcontrol import FlowControl
from autoscaler_dev.kube_emulator.gate import KubeGate
from autoscaler_dev.kube_emulator.rbac import KINDS as RBAC_KINDS
from autoscaler_dev.kube_emulator.rbac import RBAC_GROUP, Manifest
from autoscaler_dev.kube_emulator.request_info import Attributes
from autoscaler_dev.kube_emulator.resources import Obj, ResourceType


def enforce(
    kube: KubeEmulator,
    rbac: Iterable[Manifest] = (),
    *,
    flow: FlowControl | None = None,
    authorize: bool = True,
    authenticator: Authenticator | None = None,
) -> KubeGate:
    """From now on every request to ``kube`` is authenticated, flow-controlled (when ``flow`` is given) and
    authorized against the bootstrap policy plus ``rbac`` (unless ``authorize`` is False)."""

    def pod_node(namespace: str, name: str) -> str | None:
        pod = kube.get("v1", "Pod", name, namespace)
        return None if pod is None else str((pod.get("spec") or {}).get("nodeName") or "")

    authorizer = Authorizer(rbac, pod_node, _AppliedRBAC(kube)) if authorize else None
    gate = KubeGate(authenticator or Authenticator(), authorizer, flow)
    kube.api.gate = gate
    return gate


class _AppliedRBAC:
    """The RBAC objects applied to ``kube`` through its API (``authorization.StoredRBAC``)."""

    def __init__(self, kube: KubeEmulator) -> None:
        self.store = kube.store
        self.types = [kube.resource(f"{RBAC_GROUP}/v1", kind) for kind in RBAC_KINDS]

    def version(self) -> object:
        return tuple(self.store.last_change(t) for t in self.types)

    def manifests(self) -> Iterator[Manifest]:
        for resource in self.types:
            yield from self.store.objects(resource)


class ActingAs:
    """``KubeEmulator``'s direct object access (no HTTP), each call authorized as ``user`` would be through the API:
    what the world's actors (kubelets, the scheduler, controllers, the forwarder) do with their own credentials.
    A refused call raises the 403 the API would answer, counted by the gate like any other (flow control and
    latency are the HTTP path's: the actors' calls cost no virtual time)."""

    def __init__(self, kube: KubeEmulator, gate: KubeGate | None, user: User) -> None:
        self.kube, self.gate, self.user = kube, gate, user

    @classmethod
    def of(cls, kube: KubeEmulator, user: User) -> ActingAs:
        """``user``'s access to ``kube``, checked by the gate ``enforce`` installed (unchecked without one)."""
        gate = kube.api.gate
        return cls(kube, gate if isinstance(gate, KubeGate) else None, user)

    def _check(self, verb: str, resource: ResourceType, namespace: str, name: str = "", sub: str = "") -> None:
        if self.gate is not None:
            self.gate.check(
                Attributes(
                    self.user,
                    verb,
                    True,
                    api_group=resource.group,
                    api_version=resource.version,
                    resource=resource.plural,
                    subresource=sub,
                    namespace=namespace if resource.namespaced else "",
                    name=name,
                )
            )

    def resource(self, api_version: str, kind: str) -> ResourceType:
        return self.kube.resource(api_version, kind)

    def list(self, api_version: str, kind: str, namespace: str = "", *, watch: bool = True) -> list[Obj]:
        """A list (and, since the components keep a watch open from it, the watch)."""
        resource = self.kube.resource(api_version, kind)
        self._check("list", resource, namespace)
        if watch:
            self._check("watch", resource, namespace)
        return self.kube.list(api_version, kind, namespace)

    def get(self, api_version: str, kind: str, name: str, namespace: str = "default") -> Obj | None:
        self._check("get", self.kube.resource(api_version, kind), namespace, name)
        return self.kube.get(api_version, kind, name, namespace)

    def create(self, obj: Obj) -> Obj:
        """Create ``obj``; its status, if any, is then written through the status subresource (checked too)."""
        resource, namespace, name = self._address(obj)
        self._check("create", resource, namespace)
        if resource.has_status and obj.get("status") is not None:
            self._check("update", resource, namespace, name, "status")
        return self.kube.create(obj)

    def apply(self, obj: Obj) -> Obj:
        """Replace ``obj`` (spec, then status) or create it when it does not exist."""
        resource, namespace, name = self._address(obj)
        if self.kube.get(obj["apiVersion"], obj["kind"], name, namespace or "default") is None:
            return self.create(obj)
        self._check("update", resource, namespace, name)
        if resource.has_status and obj.get("status") is not None:
            self._check("update", resource, namespace, name, "status")
        return self.kube.apply(obj)

    def replace(self, obj: Obj, body: Obj, subresource: str = "") -> Obj:
        """An update of ``obj`` (or of its ``subresource``, ``status``), as ``KubeEmulator.replace``."""
        resource, namespace, name = self._address(obj)
        self._check("update", resource, namespace, name, subresource)
        return self.kube.replace(obj, body, subresource)

    def bind(self, pod: Obj, node: str) -> Obj:
        """A ``pods/binding`` create: the pod goes to ``node``."""
        resource, namespace, name = self._address(pod)
        self._check("create", resource, namespace, name, "binding")
        return self.kube.bind(pod, node)

    def delete(self, api_version: str, kind: str, name: str, namespace: str = "default") -> Obj | None:
        self._check("delete", self.kube.resource(api_version, kind), namespace, name)
        return self.kube.delete(api_version, kind, name, namespace)

    def _address(self, obj: Obj) -> tuple[ResourceType, str, str]:
        resource = self.kube.resource(obj["apiVersion"], obj["kind"])
        metadata = obj.get("metadata") or {}
        namespace = str(metadata.get("namespace") or ("default" if resource.namespaced else ""))
        return resource, namespace, str(metadata.get("name") or "")


ObjectAccess = KubeEmulator | ActingAs  # what the world's actors write through: trusted, or as someone


@contextlib.contextmanager
def forbidden_skipped() -> Iterator[None]:
    """Let an actor carry on past a refused request (already counted by the gate), as a controller logs the 403
    and retries at its next resync; any other error goes on."""
    try:
        yield
    except ApiError as error:
        if error.code != 403:
            raise
