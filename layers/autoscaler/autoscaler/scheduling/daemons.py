"""DaemonSet overhead: what every new node reserves for the DaemonSet pods that will land on it.

A DaemonSet's pod is its newest pod in the cluster when it has one (not being deleted), else its template:
admission webhooks and mutating controllers may have changed the pods (sidecars injected, requests
defaulted), and the pods are what will run, as Karpenter reasons too. Where it runs comes from the
template's required node affinity all the same: the DaemonSet controller pins each pod to its node.

Which DaemonSets run on a node depends on the node's taints and labels, so within one NodePool the
overhead differs between instance types (a GPU DaemonSet only runs on GPU types). Instance types
with the same set of DaemonSets form a :class:`DaemonGroup`; a pod fits an instance type when its
requests plus the group's overhead fit the type's allocatable.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from autoscaler.apis.resources import Resources
from autoscaler.scheduling.instancetypes import InstanceTypeIndex, bits
from autoscaler.scheduling.pods import HostPort, PodInfo, PodParser
from autoscaler.scheduling.requirements import Requirements
from autoscaler.scheduling.taints import TOLERATE_PREFER_NO_SCHEDULE, Taint, untolerated

KubeObject = Mapping[str, Any]
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def daemonset_pods(
    daemonsets: Sequence[KubeObject], cluster_pods: Iterable[KubeObject], parser: PodParser
) -> tuple[list[PodInfo], list[str]]:
    """The pod each DaemonSet would run on a node (its newest pod in ``cluster_pods``, else its template),
    and the DaemonSets that could not be read."""
    newest = _newest_pods(cluster_pods)
    pods, skipped = [], []
    for daemonset in daemonsets:
        metadata = daemonset.get("metadata") or {}
        namespace, name = str(metadata.get("namespace") or "default"), str(metadata.get("name") or "")
        template = (daemonset.get("spec") or {}).get("template") or {}
        found = newest.get((namespace, name))
        source = found[1] if found is not None else template
        spec = dict(source.get("spec") or {})
        spec.pop("nodeName", None)
        spec["affinity"] = _with_required_node_affinity(spec.get("affinity"), template.get("spec") or {})
        raw = {
            "metadata": {
                "namespace": namespace,
                "name": name,
                "labels": (source.get("metadata") or {}).get("labels") or {},
                "ownerReferences": [{"kind": "DaemonSet", "name": name, "controller": True}],
            },
            "spec": spec,
        }
        try:
            pods.append(parser.parse(raw))
        except ValueError as error:
            skipped.append(f"daemonset {namespace}/{name}: {error}")
    return pods, skipped


def _newest_pods(pods: Iterable[KubeObject]) -> dict[tuple[str, str], tuple[str, KubeObject]]:
    """Per (namespace, DaemonSet name): the creation time and body of the newest pod the DaemonSet controls that
    is not being deleted (ties broken by pod name, for a stable answer). Pods are matched by their controller's
    name, not its UID: a DaemonSet deleted and made again has its old pods deleted or orphaned, and manifests
    given to ``autoscaler plan`` cannot know the UIDs the API server will assign."""
    newest: dict[tuple[str, str], tuple[str, KubeObject]] = {}
    for pod in pods:
        metadata = pod.get("metadata") or {}
        if metadata.get("deletionTimestamp"):
            continue
        owner = next(
            (o for o in metadata.get("ownerReferences") or () if o.get("controller") and o.get("kind") == "DaemonSet"),
            None,
        )
        if owner is None:
            continue
        key = (str(metadata.get("namespace") or "default"), str(owner.get("name") or ""))
        created = f"{metadata.get('creationTimestamp') or ''}/{metadata.get('name') or ''}"
        if key not in newest or created > newest[key][0]:
            newest[key] = (created, pod)
    return newest


def _with_required_node_affinity(affinity: Mapping[str, Any] | None, template: Mapping[str, Any]) -> dict[str, Any]:
    """``affinity`` with the template's required node affinity in place of the pod's own (which the DaemonSet
    controller set to the pod's node)."""
    result = dict(affinity or {})
    node_affinity = dict(result.get("nodeAffinity") or {})
    required = ((template.get("affinity") or {}).get("nodeAffinity") or {}).get(_REQUIRED)
    if required is None:
        node_affinity.pop(_REQUIRED, None)
    else:
        node_affinity[_REQUIRED] = required
    if node_affinity:
        result["nodeAffinity"] = node_affinity
    else:
        result.pop("nodeAffinity", None)
    return result


@dataclass(frozen=True)
class DaemonGroup:
    mask: int  # the instance types this group covers
    overhead: Resources  # summed requests of the group's DaemonSet pods (with one "pods" slot each)
    host_ports: tuple[HostPort, ...]
    daemons: tuple[str, ...]  # namespace/name of each DaemonSet, for messages


def _sum(pods: Sequence[PodInfo]) -> Resources:
    total: Resources = {}
    for pod in pods:
        for name, amount in pod.requests.items():
            total[name] = total.get(name, 0) + amount
    return total


def daemon_groups(
    daemons: Sequence[PodInfo],
    requirements: Requirements,
    taints: Sequence[Taint],
    index: InstanceTypeIndex,
    allow: frozenset[str],
) -> tuple[DaemonGroup, ...]:
    """Group the NodePool's instance types by the DaemonSets that would run on them."""
    masks = []
    for daemon in daemons:
        constraints = daemon.constraints
        # A DaemonSet pod does not act on PreferNoSchedule: only hard taints keep it away.
        if untolerated(taints, (*constraints.tolerations, TOLERATE_PREFER_NO_SCHEDULE)) is not None:
            masks.append(0)
            continue
        mask = 0
        for term in constraints.required_terms or (Requirements(),):  # the terms are OR'd
            term_requirements = constraints.node_selector.merged(term)
            if requirements.incompatibility(term_requirements, allow) is None:
                mask |= index.compatible(term_requirements)
        masks.append(mask)
    signatures: dict[tuple[int, ...], int] = {}
    for type_index in bits(index.all):
        signature = tuple(d for d, mask in enumerate(masks) if mask >> type_index & 1)
        signatures[signature] = signatures.get(signature, 0) | 1 << type_index
    return tuple(
        DaemonGroup(
            mask=mask,
            overhead=_sum([daemons[d] for d in signature]),
            host_ports=tuple(port for d in signature for port in daemons[d].host_ports),
            daemons=tuple(str(daemons[d].ref) for d in signature),
        )
        for signature, mask in signatures.items()
    )


def node_daemon_overhead(
    daemons: Sequence[PodInfo], taints: Sequence[Taint], labels: Requirements, running: Sequence[PodInfo]
) -> Resources:
    """What an existing node still has to reserve for DaemonSet pods that should run there but have not
    arrived yet (never negative: a DaemonSet pod that arrived unexpectedly frees nothing)."""
    expected = [d for d in daemons if untolerated(taints, d.constraints.tolerations) is None and _selects(d, labels)]
    missing = _sum(expected)
    for name, amount in _sum([p for p in running if p.owner_kind == "DaemonSet" and not p.terminal]).items():
        if name in missing:
            missing[name] = max(missing[name] - amount, 0)
    return missing


def _selects(daemon: PodInfo, labels: Requirements) -> bool:
    """The node matches the DaemonSet's node selector and any of its required node affinity terms (all of
    them count, as for the DaemonSet controller; Karpenter looks at the first only)."""
    constraints = daemon.constraints
    terms = constraints.required_terms or (Requirements(),)
    return any(labels.incompatibility(constraints.node_selector.merged(t), frozenset()) is None for t in terms)


def smallest_overhead(groups: Sequence[DaemonGroup], mask: int) -> Resources:
    """Per resource, the least overhead among the groups still holding a type in ``mask`` (what a NodeClaim
    requests for DaemonSets whichever of its instance types launches)."""
    present = [g.overhead for g in groups if g.mask & mask]
    if not present:
        return {}
    names = set(present[0]).intersection(*present[1:])
    return {name: min(o[name] for o in present) for name in names}


def requests_with(base: Mapping[str, int], extra: Mapping[str, int]) -> Resources:
    total = dict(base)
    for name, amount in extra.items():
        total[name] = total.get(name, 0) + amount
    return total
