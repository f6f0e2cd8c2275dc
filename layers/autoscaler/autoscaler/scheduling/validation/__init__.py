"""An independent check of a scheduling result: simple, direct, and sharing no logic with the scheduler.

``validate(snapshot, pods, result)`` re-derives every node a pod may end up on from the raw inputs
and checks every hard constraint with the Kubernetes API's own definitions: node selectors and
required node affinity, NoSchedule/NoExecute taints, resources (with DaemonSet overhead), host ports,
volume topology, pod affinity and anti-affinity, DoNotSchedule spreads, NodePool limits, instance type
options and minValues; and that every pod is placed or explained, and no pod left unplaced would
have fitted a fresh node on its own. Preferences are soft and not checked.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from autoscaler.apis.resources import parse_resources
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.scheduling.result import SchedulingResult
from autoscaler.scheduling.snapshot import ClusterSnapshot
from autoscaler.scheduling.validation.checks import check_limits, check_node, check_options, daemons_on
from autoscaler.scheduling.validation.model import (
    KubeObject,
    Launch,
    VNode,
    hard_taints_tolerated,
    node_affinity_holds,
    pod_key,
    requests_of,
    selector_matches,
    term_holds,
    with_aliases,
)
from autoscaler.scheduling.validation.nodes import existing_nodes, new_node
from autoscaler.scheduling.validation.topology import Replay


@dataclass
class ValidationReport:
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def __str__(self) -> str:
        return "valid" if self.ok else f"{len(self.errors)} violation(s): " + "; ".join(self.errors[:10])


def validate(
    snapshot: ClusterSnapshot,
    pods: Sequence[KubeObject],
    result: SchedulingResult,
    *,
    max_instance_types: int = 60,
    excluded_nodes: Collection[str] = (),
    max_new_nodeclaims: int | None = None,
) -> ValidationReport:
    errors: list[str] = []
    by_key = {pod_key(p): p for p in pods}
    placed = {(ref.namespace, ref.name): where for ref, where in result.placements.items()}
    unplaced = {(ref.namespace, ref.name): error for ref, error in result.unschedulable.items()}
    for key in by_key:
        if (key in placed) == (key in unplaced):
            errors.append(
                f"pod {key[0]}/{key[1]} is {'both placed and unschedulable' if key in placed else 'unaccounted for'}"
            )
    for key, error in unplaced.items():
        if not str(error).strip():
            errors.append(f"pod {key[0]}/{key[1]} is unschedulable without a reason")
    errors += [f"pod {k[0]}/{k[1]} was placed but not asked for" for k in placed if k not in by_key]
    if max_new_nodeclaims is not None and len(result.new_nodeclaims) > max_new_nodeclaims:
        errors.append(f"{len(result.new_nodeclaims)} new NodeClaims, more than the {max_new_nodeclaims} allowed")

    nodes = existing_nodes(snapshot, set(by_key), excluded_nodes)
    unavailable = {(u.instance_type, u.zone, u.capacity_type) for u in snapshot.unavailable_offerings}
    nodepools = {np.name: np for np in snapshot.nodepools}
    for claim in result.new_nodeclaims:
        nodepool = nodepools.get(claim.nodepool)
        if nodepool is None:
            errors.append(f"new NodeClaim {claim.hostname} names unknown nodepool {claim.nodepool}")
            continue
        node = new_node(claim, unavailable, errors)
        expressions = [r.model_dump(by_alias=True, exclude_none=True) for r in nodepool.spec.template.spec.requirements]
        for launch in node.launches:
            if not term_holds(launch.labels, [e for e in expressions if e["key"] in launch.labels], launch.unknown):
                errors.append(
                    f"new NodeClaim {claim.hostname} as {launch.instance_type} breaks its NodePool's requirements"
                )
                break
        if not claim.pods:
            errors.append(f"new NodeClaim {claim.hostname} holds no pod")
        errors += check_options(claim, max_instance_types)
        nodes.append(node)
    targets = {(n.kind, n.name): n for n in nodes}
    replay = Replay(nodes, snapshot.namespaces)
    for ref, where in result.placements.items():
        target = targets.get((where.kind, where.name))
        pod = by_key.get((ref.namespace, ref.name))
        if target is None or pod is None:
            errors.append(f"pod {ref} placed on unknown {where.kind} {where.name}")
            continue
        target.placed.append(pod)
        replay.place(pod, target)
    volumes = volume_terms(snapshot, pods)
    for node in nodes:
        errors += check_node(node, snapshot.daemonsets, volumes)
    errors += check_limits(snapshot.nodepools, nodes)
    errors += replay.errors
    if max_new_nodeclaims is None:
        errors += missed(snapshot, [by_key[k] for k in unplaced if k in by_key], nodes, unavailable)
    return ValidationReport(errors)


def volume_terms(snapshot: ClusterSnapshot, pods: Sequence[KubeObject]) -> dict[tuple[str, str], list[Any]]:
    """Per pod, per bound volume, the node selector terms (OR'd) of its PersistentVolume."""
    claims = {pod_key(c): c for c in snapshot.persistent_volume_claims}
    volumes = {(v.get("metadata") or {}).get("name"): v for v in snapshot.persistent_volumes}
    result: dict[tuple[str, str], list[Any]] = {}
    for pod in pods:
        namespace = pod_key(pod)[0]
        for volume in (pod.get("spec") or {}).get("volumes") or ():
            source = volume.get("persistentVolumeClaim")
            claim = claims.get((namespace, source.get("claimName"))) if source else None
            pv = volumes.get(((claim or {}).get("spec") or {}).get("volumeName"))
            if pv is None:
                continue
            spec = pv.get("spec") or {}
            terms = ((spec.get("nodeAffinity") or {}).get("required") or {}).get("nodeSelectorTerms") or []
            local = bool(spec.get("local") or spec.get("hostPath"))
            expressions = [
                [e for e in t.get("matchExpressions") or () if not (local and e.get("key") == wk.LABEL_HOSTNAME)]
                for t in terms
            ]
            result.setdefault(pod_key(pod), []).append(expressions)
    return result


def missed(
    snapshot: ClusterSnapshot, unplaced: Sequence[KubeObject], nodes: Sequence[VNode], unavailable: Collection[Any]
) -> list[str]:
    """Unschedulable pods with no pod-level constraints that a fresh node of some NodePool would hold."""
    errors = []
    repelled = _repelled_selectors(nodes)
    for pod in unplaced:
        spec = pod.get("spec") or {}
        affinity = spec.get("affinity") or {}
        if affinity.get("podAffinity") or affinity.get("podAntiAffinity") or spec.get("topologySpreadConstraints"):
            continue
        if spec.get("volumes") or any(
            p.get("hostPort") for c in spec.get("containers") or () for p in c.get("ports") or ()
        ):
            continue
        if any(_matches(selector, pod) for selector in repelled):
            continue
        fresh = _fresh_launch(snapshot, pod, nodes, unavailable)
        if fresh is not None:
            errors.append(f"pod {pod_key(pod)[0]}/{pod_key(pod)[1]} was left unschedulable but fits a new {fresh}")
    return errors


def _repelled_selectors(nodes: Sequence[VNode]) -> list[Mapping[str, Any]]:
    selectors = []
    for node in nodes:
        for pod in [*node.bound, *node.placed]:
            section = ((pod.get("spec") or {}).get("affinity") or {}).get("podAntiAffinity") or {}
            selectors += [
                t.get("labelSelector") or {}
                for t in section.get("requiredDuringSchedulingIgnoredDuringExecution") or ()
            ]
    return selectors


def _matches(selector: Mapping[str, Any], pod: KubeObject) -> bool:
    return selector_matches(selector, (pod.get("metadata") or {}).get("labels") or {})


def _fresh_launch(
    snapshot: ClusterSnapshot, pod: KubeObject, nodes: Sequence[VNode], unavailable: Collection[Any]
) -> str | None:
    """A NodePool and instance type that would hold the pod alone, DaemonSets included, within limits."""
    spec = pod.get("spec") or {}
    requests = requests_of(pod)
    for nodepool in snapshot.nodepools:
        template = nodepool.spec.template
        taints = [t.model_dump(by_alias=True) for t in template.spec.taints or ()]
        if not hard_taints_tolerated(taints, spec.get("tolerations") or ()):
            continue
        expressions = [r.model_dump(by_alias=True, exclude_none=True) for r in template.spec.requirements]
        base = {**((template.metadata.labels if template.metadata else None) or {}), wk.LABEL_NODEPOOL: nodepool.name}
        room = _room_under_limits(nodepool, nodes)
        for it in snapshot.instance_types.get(nodepool.name, ()):
            if any(it.capacity.get(r, 0) > left for r, left in room.items()):
                continue
            for offering in it.offerings:
                if not offering.available or (it.name, offering.zone, offering.capacity_type) in unavailable:
                    continue
                labels = with_aliases(
                    {**base, **it.labels, wk.LABEL_ZONE: offering.zone, wk.LABEL_CAPACITY_TYPE: offering.capacity_type}
                )
                unknown = frozenset(k for k in wk.WELL_KNOWN_LABELS if k not in labels)
                if not term_holds(labels, [e for e in expressions if e["key"] in labels], unknown):
                    continue
                if not node_affinity_holds(spec, labels, unknown):
                    continue
                launch = Launch(labels, it.allocatable, dict(it.capacity), unknown=unknown)
                total = dict(requests)
                for daemon in daemons_on(snapshot.daemonsets, VNode("probe", "new", [], taints, nodepool.name), launch):
                    for k, v in requests_of(
                        {"spec": ((daemon.get("spec") or {}).get("template") or {}).get("spec") or {}}
                    ).items():
                        total[k] = total.get(k, 0) + v
                if all(v <= it.allocatable.get(k, 0) for k, v in total.items()):
                    return f"{it.name} node of nodepool {nodepool.name}"
    return None


def _room_under_limits(nodepool: NodePool, nodes: Sequence[VNode]) -> Mapping[str, int]:
    """What one more node of the pool may have under its limits (a node limit reached leaves no room)."""
    limits = parse_resources(nodepool.spec.limits) if nodepool.spec.limits else {}
    members = [n for n in nodes if n.nodepool == nodepool.name]
    room = {}
    for resource, limit in limits.items():
        if resource == "nodes":
            if len(members) >= limit:
                return {"cpu": -1}
            continue
        room[resource] = limit - sum(n.largest(resource) for n in members)
    return room


__all__ = ["ValidationReport", "validate"]
