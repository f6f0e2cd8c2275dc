"""The cluster as a scheduling pass sees it, and the existing capacity it offers.

:class:`ClusterSnapshot` is the input contract: Karpenter's kinds as our v1 models, Kubernetes kinds as
the JSON the API server serves (the Cluster port's types), instance types per NodePool as the
CloudProvider port returns them, and the offerings currently marked unavailable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from autoscaler.apis.resources import Resources, parse_resources
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.cloudprovider import InstanceType, OfferingKey
from autoscaler.scheduling.daemons import node_daemon_overhead
from autoscaler.scheduling.pods import PARSE_ERRORS, PodInfo, PodParser
from autoscaler.scheduling.requirements import Requirements
from autoscaler.scheduling.taints import NO_SCHEDULE, Taint, is_ephemeral, parse_taints

KubeObject = Mapping[str, Any]
TAINT_UNSCHEDULABLE: Taint = ("node.kubernetes.io/unschedulable", "", NO_SCHEDULE)


@dataclass(frozen=True)
class ClusterSnapshot:
    """Everything a scheduling pass reads. ``bound_pods`` are pods with ``spec.nodeName`` set (any node);
    ``nodeclaims`` may include NodeClaims that already have a node: only those without one count as
    in-flight capacity. Each DaemonSet's overhead is that of its newest pod among ``bound_pods`` (one not
    being deleted), else that of its template. ``storage_classes`` None means unbound claims impose no
    topology. ``namespaces`` holds the labels of the namespaces ``namespaceSelector`` terms may select."""

    nodepools: Sequence[NodePool]
    instance_types: Mapping[str, Sequence[InstanceType]]  # by NodePool name
    nodes: Sequence[KubeObject] = ()
    bound_pods: Sequence[KubeObject] = ()
    nodeclaims: Sequence[NodeClaim] = ()
    daemonsets: Sequence[KubeObject] = ()
    persistent_volume_claims: Sequence[KubeObject] = ()
    persistent_volumes: Sequence[KubeObject] = ()
    storage_classes: Sequence[KubeObject] | None = None
    namespaces: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # name -> labels
    unavailable_offerings: frozenset[OfferingKey] = frozenset()


@dataclass
class NodeView:
    """An existing node or in-flight NodeClaim, normalised for scheduling."""

    name: str
    hostname: str
    labels: dict[str, str]
    taints: tuple[Taint, ...]
    allocatable: Resources
    capacity: Resources
    pods: list[PodInfo]
    initialized: bool
    nodepool: str | None
    nodeclaim: str | None  # set when this is a NodeClaim without a node


def node_views(snapshot: ClusterSnapshot, parser: PodParser) -> tuple[list[NodeView], list[str]]:
    """Live nodes with their pods, then in-flight NodeClaims; plus what was skipped and why."""
    skipped: list[str] = []
    by_node: dict[str, list[PodInfo]] = {}
    for raw in snapshot.bound_pods:
        try:
            pod = parser.parse(raw)
        except ValueError as error:
            skipped.append(str(error))
            continue
        if pod.node_name and not pod.terminal:
            by_node.setdefault(pod.node_name, []).append(pod)
    claims = [c for c in snapshot.nodeclaims if not c.metadata.deletion_timestamp]
    claim_by_provider = {c.status.provider_id: c for c in claims if c.status and c.status.provider_id}
    views, joined = [], set()
    for node in snapshot.nodes:
        metadata = node.get("metadata") or {}
        if metadata.get("deletionTimestamp"):
            continue
        claim = claim_by_provider.get(str((node.get("spec") or {}).get("providerID") or ""))
        try:
            views.append(_node_view(node, claim, by_node.get(str(metadata.get("name")), [])))
        except PARSE_ERRORS as error:
            skipped.append(f"node {metadata.get('name')}: {error}")
            continue
        if claim is not None:
            joined.add(claim.name)
    for claim in claims:
        if claim.name not in joined and not (claim.status and claim.status.node_name):
            views.append(_claim_view(claim))
    return views, skipped


def _node_view(node: KubeObject, claim: NodeClaim | None, pods: list[PodInfo]) -> NodeView:
    metadata, spec, status = node.get("metadata") or {}, node.get("spec") or {}, node.get("status") or {}
    name = str(metadata["name"])
    labels = {str(k): str(v) for k, v in (metadata.get("labels") or {}).items()}
    managed = wk.LABEL_NODEPOOL in labels
    initialized = labels.get(wk.LABEL_INITIALIZED) == "true" or not managed
    taints = parse_taints(spec.get("taints"))
    if managed and not initialized:  # startup and ephemeral taints will go once the node initializes
        startup_taints = (claim.spec.startup_taints or []) if claim is not None else []
        startup = set(parse_taints(t.model_dump(by_alias=True) for t in startup_taints))
        taints = tuple(t for t in taints if not is_ephemeral(t) and t not in startup)
    if spec.get("unschedulable"):
        taints = (*taints, TAINT_UNSCHEDULABLE)
    allocatable = parse_resources(status.get("allocatable"))
    if not allocatable and claim is not None and claim.status:  # not reported yet: the NodeClaim knows
        allocatable = parse_resources(claim.status.allocatable)
    return NodeView(
        name=name,
        hostname=labels.get(wk.LABEL_HOSTNAME, name),
        labels=labels,
        taints=taints,
        allocatable=allocatable,
        capacity=parse_resources(status.get("capacity")) or allocatable,
        pods=pods,
        initialized=initialized,
        nodepool=labels.get(wk.LABEL_NODEPOOL),
        nodeclaim=None,
    )


def _claim_view(claim: NodeClaim) -> NodeView:
    labels = dict(claim.metadata.labels or {})
    status = claim.status
    return NodeView(
        name=claim.name,
        hostname=claim.name,
        labels=labels,
        taints=tuple(
            t for t in parse_taints(x.model_dump(by_alias=True) for x in claim.spec.taints or ()) if not is_ephemeral(t)
        ),
        allocatable=parse_resources(status.allocatable if status else None),
        capacity=parse_resources(status.capacity if status else None),
        pods=[],
        initialized=False,
        nodepool=labels.get(wk.LABEL_NODEPOOL),
        nodeclaim=claim.name,
    )


def available(view: NodeView, daemons: Sequence[PodInfo]) -> Resources:
    """Allocatable less the bound pods' requests and the DaemonSet pods still expected there."""
    remaining = dict(view.allocatable)
    expected = node_daemon_overhead(daemons, view.taints, Requirements.from_labels(view.labels), view.pods)
    for pod in view.pods:
        for name, amount in pod.requests.items():
            remaining[name] = remaining.get(name, 0) - amount
    for name, amount in expected.items():
        remaining[name] = remaining.get(name, 0) - amount
    return remaining
