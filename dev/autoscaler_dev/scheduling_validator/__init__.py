"""An independent check of a scheduling result: simple, direct, and sharing no logic with the scheduler.

``validate(snapshot, pods, result)`` re-derives every node a pod may end up on from the raw inputs
and checks every hard constraint with the Kubernetes API's own definitions: node selectors and
required node affinity, NoSchedule/NoExecute taints, resources (with DaemonSet overhead), host ports,
volume topology, pod affinity and anti-affinity, DoNotSchedule spreads, NodePool limits, instance type
options and minValues; and that every pod is placed or explained, and no pod left unplaced would
have fitted a fresh node on its own. Preferences are soft and not checked.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.scheduling.result import SchedulingResult
from autoscaler.scheduling.snapshot import ClusterSnapshot
from autoscaler_dev.scheduling_validator.checks import check_limits, check_node, check_options
from autoscaler_dev.scheduling_validator.missed import FreshNodes
from autoscaler_dev.scheduling_validator.model import KubeObject, pod_key, requests_of
from autoscaler_dev.scheduling_validator.nodes import existing_nodes, new_node
from autoscaler_dev.scheduling_validator.topology import Replay


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
    allocatable: dict[int, Any] = {}  # instance type allocatable by identity, while the result is alive
    for claim in result.new_nodeclaims:
        nodepool = nodepools.get(claim.nodepool)
        if nodepool is None:
            errors.append(f"new NodeClaim {claim.hostname} names unknown nodepool {claim.nodepool}")
            continue
        expressions = [r.model_dump(by_alias=True, exclude_none=True) for r in nodepool.spec.template.spec.requirements]
        node = new_node(claim, expressions, unavailable, allocatable, errors)
        if not claim.pods:
            errors.append(f"new NodeClaim {claim.hostname} holds no pod")
        errors += check_options(claim, max_instance_types)
        nodes.append(node)
    targets = {(n.kind, n.name): n for n in nodes}
    replay = Replay(nodes, {**{pod_key(p)[0]: {} for p in pods}, **snapshot.namespaces})
    for ref, where in result.placements.items():
        target = targets.get((where.kind, where.name))
        pod = by_key.get((ref.namespace, ref.name))
        if target is None or pod is None:
            errors.append(f"pod {ref} placed on unknown {where.kind} {where.name}")
            continue
        target.placed.append(pod)
        replay.place(pod, target)
    volumes = volume_terms(snapshot, pods)
    daemonsets = [d for d in as_running(snapshot.daemonsets, snapshot.bound_pods) if _readable(d)]
    for node in nodes:
        errors += check_node(node, daemonsets, volumes)
    errors += check_limits(snapshot.nodepools, nodes)
    errors += replay.errors
    if max_new_nodeclaims is None:
        fresh = FreshNodes(snapshot, nodes, daemonsets, unavailable, max_instance_types)
        errors += fresh.missed([by_key[k] for k in unplaced if k in by_key])
    return ValidationReport(errors)


_REQUEST_FIELDS = ("containers", "initContainers", "overhead", "resources")


def as_running(daemonsets: Sequence[KubeObject], bound: Sequence[KubeObject]) -> list[KubeObject]:
    """Each DaemonSet with the requests of its latest pod still running (the pods are what admission left of
    the template), or as it is when none runs."""
    latest: dict[tuple[str, str], tuple[tuple[str, str], KubeObject]] = {}
    for pod in bound:
        metadata = pod.get("metadata") or {}
        owners = [
            o for o in metadata.get("ownerReferences") or () if o.get("kind") == "DaemonSet" and o.get("controller")
        ]
        if not owners or metadata.get("deletionTimestamp"):
            continue
        key = (pod_key(pod)[0], str(owners[0].get("name")))
        stamp = (str(metadata.get("creationTimestamp") or ""), str(metadata.get("name") or ""))
        if key not in latest or stamp > latest[key][0]:
            latest[key] = (stamp, pod)
    result: list[KubeObject] = []
    for daemonset in daemonsets:
        found = latest.get(pod_key(daemonset))
        if found is None:
            result.append(daemonset)
            continue
        spec = daemonset.get("spec") or {}
        template = spec.get("template") or {}
        own = {k: v for k, v in (template.get("spec") or {}).items() if k not in _REQUEST_FIELDS}
        own.update({k: v for k, v in (found[1].get("spec") or {}).items() if k in _REQUEST_FIELDS})
        result.append({**daemonset, "spec": {**spec, "template": {**template, "spec": own}}})
    return result


def _readable(daemonset: KubeObject) -> bool:
    try:
        requests_of({"spec": ((daemonset.get("spec") or {}).get("template") or {}).get("spec") or {}})
    except (ValueError, KeyError, TypeError):
        return False
    return True


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


__all__ = ["ValidationReport", "validate"]
