"""The cluster as one pass reads it (provisioning, rebalance replacement, disruption): every list once, at the
start of the pass.

Besides the Cluster port's lists, the pass needs the labels of the namespaces that pod affinity terms select
by ``namespaceSelector`` (read only when some pod has such a term) and the StorageClasses of volume claims
that are not bound yet (their ``allowedTopologies`` constrain where the pod may go).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.cloudprovider import InstanceType, OfferingKey
from autoscaler.controllers.state.inflight import InFlight
from autoscaler.controllers.state.pods import needs_a_new_place
from autoscaler.kube.objects import Body, Node, Pod
from autoscaler.kube.port import Cluster, KubeObject, ObjectRef
from autoscaler.scheduling import ClusterSnapshot

log = logging.getLogger(__name__)
_AFFINITY_KINDS = ("podAffinity", "podAntiAffinity")
_TERM_LISTS = ("requiredDuringSchedulingIgnoredDuringExecution", "preferredDuringSchedulingIgnoredDuringExecution")


@dataclass
class ClusterState:
    nodepools: list[NodePool]
    nodeclasses: list[EC2NodeClass]
    nodeclaims: list[NodeClaim]
    nodes: list[KubeObject]
    pending_pods: list[KubeObject]
    bound_pods: list[KubeObject]
    daemonsets: list[KubeObject]
    persistent_volume_claims: list[KubeObject]
    persistent_volumes: list[KubeObject]
    storage_classes: list[KubeObject] = field(default_factory=list)
    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)

    @classmethod
    def read(cls, cluster: Cluster) -> ClusterState:
        state = cls(
            nodepools=cluster.nodepools(),
            nodeclasses=cluster.nodeclasses(),
            nodeclaims=cluster.nodeclaims(),
            nodes=cluster.nodes(),
            pending_pods=cluster.pending_pods(),
            bound_pods=cluster.pods(),
            daemonsets=cluster.daemonsets(),
            persistent_volume_claims=cluster.persistent_volume_claims(),
            persistent_volumes=cluster.persistent_volumes(),
        )
        state.storage_classes = _storage_classes(cluster, state.persistent_volume_claims, state.pending_pods)
        pods = [*state.pending_pods, *state.bound_pods]
        if any(_selects_namespaces(p) for p in pods):
            state.namespaces = _namespace_labels(cluster, {Pod(p).namespace or "default" for p in pods})
        return state

    def snapshot(
        self,
        nodepools: Sequence[NodePool],
        instance_types: Mapping[str, Sequence[InstanceType]],
        flight: InFlight,
        unavailable: frozenset[OfferingKey],
    ) -> ClusterSnapshot:
        """What the scheduler sees of this state: its nodes and bound pods with ``flight``'s stand-ins and held pods."""
        return ClusterSnapshot(
            nodepools=nodepools,
            instance_types=instance_types,
            nodes=[*self.nodes, *flight.nodes],
            bound_pods=[*self.bound_pods, *flight.held],
            nodeclaims=flight.nodeclaims,
            daemonsets=self.daemonsets,
            persistent_volume_claims=self.persistent_volume_claims,
            persistent_volumes=self.persistent_volumes,
            storage_classes=self.storage_classes,
            namespaces=self.namespaces,
            unavailable_offerings=unavailable,
        )

    def nodeclass(self, name: str) -> EC2NodeClass | None:
        return next((c for c in self.nodeclasses if c.name == name), None)

    def reschedulable_pods(self, also: Iterable[str] = ()) -> list[KubeObject]:
        """Pods on nodes being deleted (and the nodes named in ``also``) that will need a place elsewhere
        (Karpenter provisions for them before they are evicted): not DaemonSet or static pods, not finished, not
        already being deleted."""
        deleting = set(also) | {node.name for node in map(Node, self.nodes) if node.deleting}
        deleting |= {
            c.status.node_name
            for c in self.nodeclaims
            if c.metadata.deletion_timestamp and c.status and c.status.node_name
        }
        return [p for p in self.bound_pods if (pod := Pod(p)).node_name in deleting and needs_a_new_place(pod)]


def _selects_namespaces(pod: Mapping[str, Any]) -> bool:
    affinity = Pod(pod).spec.get("affinity") or {}
    for kind in _AFFINITY_KINDS:
        for terms in _TERM_LISTS:
            for term in (affinity.get(kind) or {}).get(terms) or ():
                if (term.get("podAffinityTerm") or term).get("namespaceSelector") is not None:
                    return True
    return False


def _namespace_labels(cluster: Cluster, names: Iterable[str]) -> dict[str, dict[str, str]]:
    labels = {}
    for name in sorted(names):
        namespace = cluster.get(ObjectRef("Namespace", name))
        if namespace is not None:
            labels[name] = dict(Body(namespace).labels)
    return labels


def _storage_classes(cluster: Cluster, claims: Sequence[KubeObject], pods: Sequence[KubeObject]) -> list[KubeObject]:
    """The StorageClasses unbound claims (and pending pods' ephemeral claims) name."""
    names = {
        str(spec["storageClassName"])
        for spec in (Body(c).spec for c in claims)
        if not spec.get("volumeName") and spec.get("storageClassName")
    }
    for pod in pods:
        for volume in Pod(pod).volumes:
            template = ((volume.get("ephemeral") or {}).get("volumeClaimTemplate") or {}).get("spec") or {}
            if template.get("storageClassName"):
                names.add(str(template["storageClassName"]))
    found = []
    for name in sorted(names):
        storage_class = cluster.get(ObjectRef("StorageClass", name))
        if storage_class is not None:
            found.append(storage_class)
        else:
            log.info("storageclass %s named by a volume claim does not exist", name)
    return found
