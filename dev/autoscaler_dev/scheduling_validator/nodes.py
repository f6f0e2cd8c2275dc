"""Building the validator's nodes: existing nodes, in-flight NodeClaims and the result's new NodeClaims."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from autoscaler.apis.resources import Resources, parse_resources
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.cloudprovider import InstanceType
from autoscaler.scheduling.result import NewNodeClaim
from autoscaler.scheduling.snapshot import ClusterSnapshot
from autoscaler_dev.scheduling_validator.model import KubeObject, Launch, VNode, pod_key, term_holds, with_aliases

_STARTING_TAINTS = (
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
    "node.cloudprovider.kubernetes.io/uninitialized",
    "karpenter.sh/unregistered",
)


def _starting(taint: Mapping[str, Any], startup: list[dict[str, Any]]) -> bool:
    key = str(taint.get("key"))
    if key in _STARTING_TAINTS or key.startswith("readiness.k8s.io/"):
        return True
    return any(key == s.get("key") and taint.get("effect") == s.get("effect") for s in startup)


def _terminal(pod: KubeObject) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed") or bool(
        (pod.get("metadata") or {}).get("deletionTimestamp")
    )


def existing_nodes(
    snapshot: ClusterSnapshot, moving: Collection[tuple[str, str]], excluded: Collection[str]
) -> list[VNode]:
    """Live nodes (with their bound pods, minus the pods being moved) and NodeClaims without a node."""
    claims = {c.status.provider_id: c for c in snapshot.nodeclaims if c.status and c.status.provider_id}
    joined = set()
    nodes = []
    for node in snapshot.nodes:
        try:
            built = _existing(node, claims, excluded)
        except (ValueError, KeyError, TypeError):
            continue  # unreadable: the scheduler skips it too, so nothing may be placed there
        if built is not None:
            vnode, claim = built
            nodes.append(vnode)
            if claim is not None:
                joined.add(claim.name)
    by_name = {n.name: n for n in nodes}
    for pod in snapshot.bound_pods:
        host = by_name.get(str((pod.get("spec") or {}).get("nodeName") or ""))
        if host is not None and not _terminal(pod) and pod_key(pod) not in moving:
            host.bound.append(pod)
    for claim in snapshot.nodeclaims:
        if claim.name in joined or claim.name in excluded or claim.metadata.deletion_timestamp:
            continue
        if claim.status and claim.status.node_name:
            continue
        labels = with_aliases({**(claim.metadata.labels or {}), wk.LABEL_HOSTNAME: claim.name})
        status = claim.status
        taints = [t.model_dump(by_alias=True) for t in claim.spec.taints or ()]
        taints = [t for t in taints if not _starting(t, [])]
        launch = Launch(
            labels,
            parse_resources(status.allocatable if status else None),
            parse_resources(status.capacity if status else None),
        )
        nodes.append(VNode(claim.name, "nodeclaim", [launch], taints, labels.get(wk.LABEL_NODEPOOL)))
    return nodes


def _existing(
    node: KubeObject, claims: Mapping[str, NodeClaim], excluded: Collection[str]
) -> tuple[VNode, NodeClaim | None] | None:
    metadata, spec, status = node.get("metadata") or {}, node.get("spec") or {}, node.get("status") or {}
    name = str(metadata["name"])
    if metadata.get("deletionTimestamp") or name in excluded:
        return None
    claim = claims.get(str(spec.get("providerID") or ""))
    labels = with_aliases({wk.LABEL_HOSTNAME: name, **(metadata.get("labels") or {})})
    taints = list(spec.get("taints") or ())
    if wk.LABEL_NODEPOOL in labels and labels.get(wk.LABEL_INITIALIZED) != "true":
        startup = [t.model_dump(by_alias=True) for t in (claim.spec.startup_taints or ())] if claim else []
        taints = [t for t in taints if not _starting(t, startup)]
    if spec.get("unschedulable"):
        taints.append({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"})
    allocatable = parse_resources(status.get("allocatable"))
    if not allocatable and claim is not None and claim.status:
        allocatable = parse_resources(claim.status.allocatable)
    capacity = parse_resources(status.get("capacity")) or allocatable
    return VNode(name, "node", [Launch(labels, allocatable, capacity)], taints, labels.get(wk.LABEL_NODEPOOL)), claim


def new_node(
    claim: NewNodeClaim,
    nodepool_requirements: list[dict[str, Any]],
    unavailable: Collection[tuple[str, str, str]],
    allocatable: dict[int, Resources],
    errors: list[str],
) -> VNode:
    """A new NodeClaim as the set of launches its options and requirements allow; checks on the way that
    every option can launch at its stated price and within its NodePool's requirements."""
    expressions = [*claim.node_selector_requirements(), *nodepool_requirements]

    def launches() -> list[Launch]:
        return [
            launch
            for option in claim.instance_types
            for launch in _option_launches(claim, option.instance_type, expressions, unavailable, allocatable)
        ]

    name = f"new NodeClaim {claim.hostname}"
    for option in claim.instance_types:
        prices = [
            launch.price
            for launch in _option_launches(claim, option.instance_type, expressions, unavailable, allocatable)
        ]
        if not prices:
            errors.append(f"{name}: option {option.name} has no offering its (and its NodePool's) requirements allow")
        elif abs(min(prices) - option.price) > 1e-9:
            errors.append(f"{name}: option {option.name} priced {option.price}, cheapest is {min(prices)}")
    taints = [{"key": k, "value": v, "effect": e} for k, v, e in claim.taints]
    options = [dict(option.instance_type.capacity) for option in claim.instance_types]
    return VNode(claim.hostname, "new", launches, taints, claim.nodepool, options=options)


def _option_launches(
    claim: NewNodeClaim,
    it: InstanceType,
    expressions: list[dict[str, Any]],
    unavailable: Collection[tuple[str, str, str]],
    allocatable: dict[int, Resources],
) -> list[Launch]:
    """The launches of one instance type option: one per available offering the requirements allow.
    ``allocatable`` caches each type's allocatable by identity for the length of one validation."""
    if id(it) not in allocatable:
        allocatable[id(it)] = it.allocatable
    base = with_aliases({**claim.labels, **it.labels, wk.LABEL_HOSTNAME: claim.hostname})
    by_type = [
        e for e in expressions if e["key"] not in _OFFERING_KEYS and (e["key"] in base or e["key"] in _LAUNCH_KEYS)
    ]
    if not term_holds(base, by_type):
        return []
    by_offering = [e for e in expressions if e["key"] in _OFFERING_KEYS]
    launches = []
    for offering in it.offerings:
        if not offering.available or (it.name, offering.zone, offering.capacity_type) in unavailable:
            continue
        labels = {
            **base,
            wk.LABEL_ZONE: offering.zone,
            _BETA_ZONE: offering.zone,
            wk.LABEL_CAPACITY_TYPE: offering.capacity_type,
        }
        if offering.zone_id:
            labels[wk.LABEL_ZONE_ID] = offering.zone_id
        if not term_holds(labels, by_offering):
            continue
        unknown = frozenset(k for k in wk.WELL_KNOWN_LABELS if k not in labels and k not in _LAUNCH_KEYS)
        launches.append(Launch(labels, allocatable[id(it)], dict(it.capacity), offering.price, it.name, unknown))
    return launches


_BETA_ZONE = next(beta for beta, stable in wk.NORMALIZED_LABELS.items() if stable == wk.LABEL_ZONE)
_OFFERING_KEYS = frozenset({wk.LABEL_ZONE, wk.LABEL_CAPACITY_TYPE, wk.LABEL_ZONE_ID, *wk.NORMALIZED_LABELS})
# Labels the instance type and offering decide: a launch without one of them will not have it.
_LAUNCH_KEYS = frozenset(
    {
        wk.LABEL_INSTANCE_TYPE,
        wk.LABEL_ARCH,
        wk.LABEL_OS,
        wk.LABEL_WINDOWS_BUILD,
        *wk.AWS_INSTANCE_LABELS,
        wk.LABEL_ZONE,
        wk.LABEL_CAPACITY_TYPE,
        wk.LABEL_ZONE_ID,
    }
)
