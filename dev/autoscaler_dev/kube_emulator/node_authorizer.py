"""The Node authorizer, simplified but with its semantics: a kubelet (``system:node:<name>`` in ``system:nodes``)
may read what a kubelet reads and write only what is its own: its Node and the Node's status, its Lease, the status
of pods bound to it, deleting and evicting those pods; plus events, mirror pods and its CSINode. For anyone else,
and for anything beyond that, it has no opinion and RBAC decides (``--authorization-mode=Node,RBAC``, as EKS).

The object graph the real authorizer keeps is read from the store at decision time (which pod is bound where).
Reads of Secrets, ConfigMaps and volumes referenced by the node's pods are not modelled: no actor makes them.
"""

from __future__ import annotations

from collections.abc import Callable

from autoscaler_dev.kube_emulator.rbac import Decision
from autoscaler_dev.kube_emulator.request_info import Attributes

READ = frozenset({"get", "list", "watch"})
WRITE_OWN = frozenset({"update", "patch", "delete"})
PodNode = Callable[[str, str], str | None]  # (namespace, pod name) -> the node it is bound to, None if no pod

_READABLE = {
    "": frozenset({"nodes", "pods", "services", "endpoints"}),
    "node.k8s.io": frozenset({"runtimeclasses"}),
    "storage.k8s.io": frozenset({"csidrivers", "storageclasses"}),
}


class NodeAuthorizer:
    def __init__(self, pod_node: PodNode) -> None:
        self.pod_node = pod_node

    def authorize(self, request: Attributes) -> Decision | None:
        """Allowed, or None (no opinion): the Node authorizer never denies on its own."""
        node = request.user.node_name
        if not node or not request.resource_request:
            return None
        if self._allows(node, request):
            return Decision(True, f"Node: {request.user.name} may {request.verb} its own {request.resource}")
        return None

    def _allows(self, node: str, r: Attributes) -> bool:
        group, resource, sub, verb = r.api_group, r.resource, r.subresource, r.verb
        if not sub and verb in READ and resource in _READABLE.get(group, ()):
            return True
        if (group, resource) == ("", "nodes") and sub in ("", "status"):
            return (verb == "create" and not sub) or (verb in WRITE_OWN | READ and r.name == node)
        if (group, resource) == ("coordination.k8s.io", "leases") and r.namespace == "kube-node-lease":
            return verb == "create" or (verb in WRITE_OWN | READ and r.name == node)
        if (group, resource) == ("storage.k8s.io", "csinodes"):
            return verb == "create" or (verb in WRITE_OWN | READ and r.name == node)
        if group in ("", "events.k8s.io") and resource == "events" and not sub:
            return verb in ("create", "update", "patch")
        if (group, resource) == ("", "pods"):
            return self._pod(node, r)
        return False

    def _pod(self, node: str, r: Attributes) -> bool:
        if r.verb == "create" and not r.subresource:
            return True  # mirror pods (NodeRestriction, which checks the body, is admission's part)
        bound_here = bool(r.name) and self.pod_node(r.namespace, r.name) == node
        if r.subresource == "status":
            return r.verb in ("get", "update", "patch") and bound_here
        if r.subresource == "eviction":
            return r.verb == "create" and bound_here
        return not r.subresource and r.verb == "delete" and bound_here
