"""NodeClaims in flight (created, launching, or joined but not initialized), as later passes must see them. Pure.

The pods a NodeClaim was created for stay pending until its node is up; every pass meanwhile schedules them
again. Packed afresh, largest first, they need not fall as they did: with hostname anti-affinity or zonal
spread, a different packing leaves some pod without a place and a second NodeClaim is created for it. So the
NodeClaim records its pods (``NOMINATED_PODS``, their UIDs) when it is created, and every pass holds those pods
on it until they are bound: they are counted as running there (resources, topology, affinity) and are not
scheduled again. Pods not held so are scheduled as usual, onto the room left.

Initialization does not end the hold: the kube-scheduler binds the pods only after it, and a pass that ran in
between (every NodeClaim's update wakes the provisioner) used to pack the still-pending pods afresh onto the new
nodes in another order and launch for those left over. A nomination lapses ``NOMINATION_WINDOW`` after its
NodeClaim initialized (Karpenter's cluster state lets a nomination lapse too, after twice its batch window): a
pod the scheduler would not bind there by then is scheduled again.

A CapacityBuffer's virtual pods are held the same way while their NodeClaim has no Node (so a pass does not launch
for them twice), and no longer once it has one: the kube-scheduler binds real pods into that room without knowing
of the buffer, so what is left of it is found afresh and the rest of the buffer launched again.

A NodeClaim without a Node is shown to the scheduler as a node of its own (named after it). One not launched
yet has no capacity in its status: its requests stand in as allocatable (any instance type it launches as
holds them) and the largest capacity among its instance type options as capacity (NodePool limits count the
worst case); the labels its single-valued requirements pin (zone, capacity type, ...) are its labels.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from autoscaler.apis.autoscaling.capacitybuffer import is_virtual_pod
from autoscaler.apis.resources import format_resources, maximum, parse_resources
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.conditions import get_condition
from autoscaler.apis.v1.nodeclaim import INITIALIZED, NodeClaim, NodeClaimStatus
from autoscaler.clock import parse_time
from autoscaler.cloudprovider.types import InstanceType
from autoscaler.controllers.state.pods import pod_ref
from autoscaler.kube.objects import Node, Pod
from autoscaler.kube.port import KubeObject

NOMINATED_PODS = wk.ANNOTATION_NOMINATED_PODS  # pod UIDs, comma-separated; not copied onto the Node
INFLIGHT_PROVIDER = "inflight:///"  # the provider ID a NodeClaim not launched yet is shown with
# Two provisioner sweeps: the kube-scheduler binds within seconds of a node initializing; a pass every minute.
NOMINATION_WINDOW = timedelta(minutes=2)


def nominated(claim: NodeClaim) -> list[str]:
    return nominated_in(claim.metadata.annotations or {})


def nominated_in(annotations: Mapping[str, str]) -> list[str]:
    """The pod UIDs a NodeClaim's annotations record as nominated to it (``NOMINATED_PODS``)."""
    return [uid for uid in annotations.get(NOMINATED_PODS, "").split(",") if uid]


def nomination(pod_uids: Iterable[str]) -> str:
    return ",".join(sorted(pod_uids))


def holds_nominations(claim: NodeClaim, now: datetime) -> bool:
    """Whether ``claim`` still holds its nominated pods: until ``NOMINATION_WINDOW`` after it initialized (an
    unreadable initialization time counts as lapsed: the pods are scheduled again rather than held forever)."""
    if not claim.initialized:
        return True
    condition = get_condition(claim.status.conditions if claim.status else None, INITIALIZED)
    since = parse_time(condition.last_transition_time) if condition else None
    return since is not None and now < since + NOMINATION_WINDOW


def is_unlaunched(claim: NodeClaim) -> bool:
    status = claim.status
    return not claim.metadata.deletion_timestamp and not (status and (status.provider_id or status.capacity))


def estimated(claim: NodeClaim, instance_types: Sequence[InstanceType]) -> NodeClaim:
    """``claim`` not launched yet, with an estimated status and pinned labels (see the module's docstring)."""
    requests = (claim.spec.resources.requests if claim.spec.resources else None) or {}
    options: set[str] = set()
    labels = dict(claim.metadata.labels or {})
    for requirement in claim.spec.requirements:
        if requirement.operator != "In" or not requirement.values:
            continue
        if requirement.key == wk.LABEL_INSTANCE_TYPE:
            options.update(requirement.values)
        if len(requirement.values) == 1 and requirement.key not in wk.RESTRICTED_LABELS:
            labels.setdefault(requirement.key, requirement.values[0])
    capacities = [t.capacity for t in instance_types if t.name in options]
    capacity = maximum(capacities) if capacities else parse_resources(requests)
    status = (claim.status or NodeClaimStatus()).model_copy(
        update={
            "provider_id": f"{INFLIGHT_PROVIDER}{claim.metadata.uid or claim.name}",
            "allocatable": dict(requests),
            "capacity": format_resources(capacity),
        }
    )
    metadata = claim.metadata.model_copy(update={"labels": labels})
    return claim.model_copy(update={"status": status, "metadata": metadata})


def stand_in_node(claim: NodeClaim) -> KubeObject:
    """The node a launched (or estimated) NodeClaim without a Node is shown as: its labels, its taints, its
    allocatable; managed and not initialized, so that startup taints do not count."""
    status = claim.status or NodeClaimStatus()
    labels = {**(claim.metadata.labels or {}), wk.LABEL_HOSTNAME: claim.name}
    labels.pop(wk.LABEL_INITIALIZED, None)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": claim.name, "labels": labels},
        "spec": {"providerID": status.provider_id, "taints": [t.to_dict() for t in claim.spec.taints or []]},
        "status": {"allocatable": dict(status.allocatable or {}), "capacity": dict(status.capacity or {})},
    }


@dataclass
class InFlight:
    """What a pass schedules against: the cluster's nodes plus stand-ins, held pods as bound, the rest pending."""

    nodes: list[KubeObject] = field(default_factory=list)  # stand-in nodes for NodeClaims without a Node
    held: list[KubeObject] = field(default_factory=list)  # pending pods held on their NodeClaims, as bound there
    nodeclaims: list[NodeClaim] = field(default_factory=list)  # every NodeClaim, unlaunched ones estimated
    pending: list[KubeObject] = field(default_factory=list)  # pending pods left to schedule
    stand_ins: frozenset[str] = frozenset()  # names of the stand-in nodes (= NodeClaim names)


def in_flight(
    nodeclaims: Sequence[NodeClaim],
    nodes: Sequence[KubeObject],
    pending: Sequence[KubeObject],
    instance_types: Mapping[str, Sequence[InstanceType]],
    *,
    now: datetime,
) -> InFlight:
    node_by_provider = {
        node.provider_id: node.name for node in map(Node, nodes) if node.provider_id and not node.deleting
    }
    pending_by_uid = {pod_ref(p).uid: p for p in pending}
    result = InFlight()
    held: set[str] = set()
    stand_ins = set()
    for claim in nodeclaims:
        if claim.metadata.deletion_timestamp:
            result.nodeclaims.append(claim)
            continue
        pool = (claim.metadata.labels or {}).get(wk.LABEL_NODEPOOL, "")
        counted = estimated(claim, instance_types.get(pool, ())) if is_unlaunched(claim) else claim
        result.nodeclaims.append(counted)
        provider_id = counted.status.provider_id if counted.status else None
        node = node_by_provider.get(provider_id or "")
        joined = node is not None
        if node is None:
            result.nodes.append(stand_in_node(counted))
            stand_ins.add(counted.name)
            node = counted.name
        if not holds_nominations(counted, now):
            continue  # its nomination lapsed: pods still pending are scheduled again
        for uid in nominated(counted):
            pod = pending_by_uid.get(uid)
            if pod is not None and joined and is_virtual_pod(pod):
                continue  # a buffer's room on a node is what real pods left: placed afresh, never held
            if pod is not None and uid not in held:
                held.add(uid)
                result.held.append(_bound(pod, node))
    result.pending = [p for uid, p in pending_by_uid.items() if uid not in held]
    result.stand_ins = frozenset(stand_ins)
    return result


def _bound(pod: KubeObject, node: str) -> dict[str, Any]:
    return {**pod, "spec": {**Pod(pod).spec, "nodeName": node}, "status": {"phase": "Pending"}}
