"""Per-node checks: node affinity, taints, volumes, resources, host ports; and NodePool limits and options."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from autoscaler.apis.resources import Resources, parse_resources
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.scheduling.result import NewNodeClaim
from autoscaler_dev.scheduling_validator.model import (
    KubeObject,
    Launch,
    VNode,
    hard_taints_tolerated,
    node_affinity_holds,
    requests_of,
    term_holds,
)


def _name(pod: KubeObject) -> str:
    metadata = pod.get("metadata") or {}
    return f"{metadata.get('namespace') or 'default'}/{metadata.get('name')}"


def daemons_on(daemonsets: Sequence[KubeObject], node: VNode, launch: Launch) -> list[KubeObject]:
    """The DaemonSets whose pod would run on this launch of the node."""
    running = []
    for daemonset in daemonsets:
        spec = ((daemonset.get("spec") or {}).get("template") or {}).get("spec") or {}
        if hard_taints_tolerated(node.taints, spec.get("tolerations") or ()) and node_affinity_holds(
            spec, launch.labels, launch.unknown
        ):
            running.append(daemonset)
    return running


def _daemon_pod(daemonset: KubeObject) -> KubeObject:
    return {"spec": ((daemonset.get("spec") or {}).get("template") or {}).get("spec") or {}}


def _owned_by(pod: KubeObject, daemonset: KubeObject) -> bool:
    name = (daemonset.get("metadata") or {}).get("name")
    return any(
        o.get("kind") == "DaemonSet" and o.get("name") == name
        for o in (pod.get("metadata") or {}).get("ownerReferences") or ()
    )


def _sum(amounts: list[Resources]) -> Resources:
    total: Resources = {}
    for amount in amounts:
        for k, v in amount.items():
            total[k] = total.get(k, 0) + v
    return total


def check_node(
    node: VNode, daemonsets: Sequence[KubeObject], volumes: Mapping[tuple[str, str], list[Any]]
) -> list[str]:
    """Every placed pod's hard constraints hold on every launch, and everything fits."""
    errors: list[str] = []
    if not node.placed:
        return errors
    launches = node.launches
    if not launches:
        return [f"{node.kind} {node.name} holds pods but can launch as nothing"]
    checked: set[str] = set()
    for pod in node.placed:
        spec = pod.get("spec") or {}
        signature = repr((spec.get("nodeSelector"), spec.get("affinity"), spec.get("tolerations")))
        if signature not in checked:
            checked.add(signature)
            if not hard_taints_tolerated(node.taints, spec.get("tolerations") or ()):
                errors.append(f"pod {_name(pod)} does not tolerate the taints of {node.kind} {node.name}")
            for launch in launches:
                if not node_affinity_holds(spec, launch.labels, launch.unknown):
                    errors.append(
                        f"pod {_name(pod)} does not match {node.kind} {node.name} as {launch.instance_type or 'is'}"
                    )
                    break
        for terms in volumes.get(_key(pod), ()):
            if terms and not all(any(term_holds(lc.labels, t, lc.unknown) for t in terms) for lc in launches):
                errors.append(f"pod {_name(pod)} is away from its volume's topology on {node.kind} {node.name}")
    placed = _sum([requests_of(p) for p in node.placed])
    bound = _sum([requests_of(p) for p in node.bound])
    by_type = {launch.instance_type: launch for launch in launches}  # resources depend on the type only
    for launch in by_type.values():
        expected = [d for d in daemons_on(daemonsets, node, launch) if not any(_owned_by(p, d) for p in node.bound)]
        total = _sum([placed, bound, *(requests_of(_daemon_pod(d)) for d in expected)])
        over = [r for r in placed if total.get(r, 0) > launch.allocatable.get(r, 0)]
        if over:
            errors.append(f"{node.kind} {node.name} as {launch.instance_type or 'is'} is overcommitted on {over}")
            break
    errors += _port_conflicts(node)
    return errors


def _key(pod: KubeObject) -> tuple[str, str]:
    metadata = pod.get("metadata") or {}
    return (str(metadata.get("namespace") or "default"), str(metadata.get("name") or ""))


def _port_conflicts(node: VNode) -> list[str]:
    seen: dict[tuple[int, str], list[str]] = {}
    for pod in [*node.bound, *node.placed]:
        spec = pod.get("spec") or {}
        for container in [*(spec.get("containers") or ()), *(spec.get("initContainers") or ())]:
            for port in container.get("ports") or ():
                if port.get("hostPort"):
                    key = (int(port["hostPort"]), str(port.get("protocol") or "TCP"))
                    address = str(port.get("hostIP") or "")
                    if any(not a or not address or a == address for a in seen.get(key, [])):
                        return [f"host port {key[0]}/{key[1]} is taken twice on {node.kind} {node.name}"]
                    seen.setdefault(key, []).append(address)
    return []


def check_options(claim: NewNodeClaim, max_options: int) -> list[str]:
    errors = []
    options = claim.instance_types
    name = f"new NodeClaim {claim.hostname}"
    if not options:
        errors.append(f"{name} has no instance type option")
    if len(options) > max_options:
        errors.append(f"{name} has {len(options)} instance type options, more than {max_options}")
    if [o.price for o in options] != sorted(o.price for o in options):
        errors.append(f"{name} lists its options out of price order")
    for requirement in claim.node_selector_requirements():
        minimum = requirement.get("minValues")
        if minimum:
            key = requirement["key"]
            values = {o.instance_type.labels.get(key) for o in options} - {None}
            if key in (wk.LABEL_ZONE, wk.LABEL_CAPACITY_TYPE):
                continue  # offered by the options' offerings: checked through launches
            if len(values) < minimum:
                errors.append(f"{name} offers {len(values)} values of {key}, minValues is {minimum}")
    return errors


def check_limits(nodepools: Sequence[NodePool], nodes: Sequence[VNode]) -> list[str]:
    """Existing capacity plus each new NodeClaim's largest option stays within every NodePool's limits."""
    errors = []
    for nodepool in nodepools:
        limits = parse_resources(nodepool.spec.limits) if nodepool.spec.limits else {}
        members = [n for n in nodes if n.nodepool == nodepool.name]
        if not limits or not any(n.kind == "new" for n in members):
            continue
        for resource, limit in limits.items():
            used = len(members) if resource == "nodes" else sum(n.largest(resource) for n in members)
            if used > limit:
                errors.append(f"nodepool {nodepool.name} would use {used} {resource}, over its limit {limit}")
    return errors
