"""The cluster as one pass reads it (provisioning, rebalance replacement, disruption): every list once, at the
start of the pass.

Besides the Cluster port's lists, the pass reads every Namespace once (pod affinity terms select namespaces by
their labels with ``namespaceSelector``, the pods a caller adds included) and every StorageClass once (an unbound
claim's class, or the default class for a claim that names none, constrains where the pod may go).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.cloudprovider import InstanceType, OfferingKey
from autoscaler.cloudprovider.overlays import Overlays
from autoscaler.controllers.state.inflight import InFlight
from autoscaler.controllers.state.pods import needs_a_new_place
from autoscaler.kube.objects import Body, Node, Pod
from autoscaler.kube.port import Cluster, KubeObject
from autoscaler.scheduling import ClusterSnapshot


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
    # CapacityBuffers' virtual pods (``controllers.buffers``), set by a pass with the gate on: demand, never stored.
    buffer_pods: list[KubeObject] = field(default_factory=list)
    # NodeOverlays evaluated for this pass (``controllers.overlays``), set with the gate on: instance types overlaid.
    overlays: Overlays | None = None

    @classmethod
    def read(cls, cluster: Cluster) -> ClusterState:
        return cls(
            nodepools=cluster.nodepools(),
            nodeclasses=cluster.nodeclasses(),
            nodeclaims=cluster.nodeclaims(),
            nodes=cluster.nodes(),
            pending_pods=cluster.pending_pods(),
            bound_pods=cluster.pods(),
            daemonsets=cluster.daemonsets(),
            persistent_volume_claims=cluster.persistent_volume_claims(),
            persistent_volumes=cluster.persistent_volumes(),
            storage_classes=cluster.list_raw("StorageClass"),
            namespaces={Body(n).name: dict(Body(n).labels) for n in cluster.list_raw("Namespace")},
        )

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
