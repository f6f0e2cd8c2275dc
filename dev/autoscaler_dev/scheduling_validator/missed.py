"""Pods left unschedulable that plainly did not have to be: no pod-level constraints, and a fresh node
of some NodePool would hold them alone (DaemonSets included, within limits and minValues)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from autoscaler.apis.resources import parse_resources
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.cloudprovider import InstanceType, Offering
from autoscaler.scheduling.snapshot import ClusterSnapshot
from autoscaler_dev.scheduling_validator.checks import daemons_on
from autoscaler_dev.scheduling_validator.model import (
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


@dataclass(frozen=True)
class _Pool:
    nodepool: NodePool
    expressions: list[dict[str, Any]]
    taints: list[dict[str, Any]]
    labels: dict[str, str]
    room: Mapping[str, int]


@dataclass(frozen=True)
class FreshNodes:
    snapshot: ClusterSnapshot
    nodes: Sequence[VNode]
    daemonsets: Sequence[KubeObject]
    unavailable: Collection[Any]
    max_options: int

    def missed(self, unplaced: Sequence[KubeObject]) -> list[str]:
        errors = []
        repelled = [
            selector for node in self.nodes for pod in [*node.bound, *node.placed] for selector in _repelling(pod)
        ]
        for pod in unplaced:
            spec = pod.get("spec") or {}
            affinity = spec.get("affinity") or {}
            if affinity.get("podAffinity") or affinity.get("podAntiAffinity") or spec.get("topologySpreadConstraints"):
                continue
            ports = [p for c in spec.get("containers") or () for p in c.get("ports") or () if p.get("hostPort")]
            if spec.get("volumes") or ports:
                continue
            labels = (pod.get("metadata") or {}).get("labels") or {}
            if any(selector_matches(selector, labels) for selector in repelled):
                continue
            try:
                requests_of(pod)
            except ValueError:
                continue  # a spec the validator cannot read either: its rejection stands
            fresh = self._fresh_launch(pod)
            if fresh is not None:
                errors.append(f"pod {pod_key(pod)[0]}/{pod_key(pod)[1]} was left unschedulable but fits a new {fresh}")
        return errors

    def _fresh_launch(self, pod: KubeObject) -> str | None:
        """A NodePool and instance type that would hold the pod alone; for a pool with minValues, among
        enough cheapest options to meet them."""
        for nodepool in self.snapshot.nodepools:
            pool = self._pool(nodepool)
            if not hard_taints_tolerated(pool.taints, (pod.get("spec") or {}).get("tolerations") or ()):
                continue
            fitting = []
            for it in self.snapshot.instance_types.get(nodepool.name, ()):
                if any(it.capacity.get(r, 0) > left for r, left in pool.room.items()):
                    continue
                prices = [o.price for o in it.offerings if self._fits(pool, pod, it, o)]
                if prices:
                    fitting.append((min(prices), it))
            fitting.sort(key=lambda pair: pair[0])
            cheapest = [it for _, it in fitting[: self.max_options]]
            if cheapest and all(
                len({it.labels.get(e["key"]) for it in cheapest} - {None}) >= e["minValues"]
                for e in pool.expressions
                if e.get("minValues")
            ):
                return f"{cheapest[0].name} node of nodepool {nodepool.name}"
        return None

    def _pool(self, nodepool: NodePool) -> _Pool:
        template = nodepool.spec.template
        return _Pool(
            nodepool,
            [r.model_dump(by_alias=True, exclude_none=True) for r in template.spec.requirements],
            [t.model_dump(by_alias=True) for t in template.spec.taints or ()],
            {**((template.metadata.labels if template.metadata else None) or {}), wk.LABEL_NODEPOOL: nodepool.name},
            _room_under_limits(nodepool, self.nodes),
        )

    def _fits(self, pool: _Pool, pod: KubeObject, it: InstanceType, offering: Offering) -> bool:
        if not offering.available or (it.name, offering.zone, offering.capacity_type) in self.unavailable:
            return False
        spec = pod.get("spec") or {}
        raw = {**pool.labels, **it.labels, wk.LABEL_ZONE: offering.zone, wk.LABEL_CAPACITY_TYPE: offering.capacity_type}
        labels = with_aliases(raw)
        unknown = frozenset(k for k in wk.WELL_KNOWN_LABELS if k not in labels)
        if not term_holds(labels, [e for e in pool.expressions if e["key"] in labels], unknown):
            return False
        if not node_affinity_holds(spec, labels, unknown):
            return False
        launch = Launch(labels, it.allocatable, dict(it.capacity), unknown=unknown)
        total = requests_of(pod)
        for daemon in daemons_on(self.daemonsets, VNode("probe", "new", [], pool.taints, None), launch):
            template = ((daemon.get("spec") or {}).get("template") or {}).get("spec") or {}
            for k, v in requests_of({"spec": template}).items():
                total[k] = total.get(k, 0) + v
        return all(v <= it.allocatable.get(k, 0) for k, v in total.items())


def _repelling(pod: KubeObject) -> list[Mapping[str, Any]]:
    section = ((pod.get("spec") or {}).get("affinity") or {}).get("podAntiAffinity") or {}
    return [t.get("labelSelector") or {} for t in section.get("requiredDuringSchedulingIgnoredDuringExecution") or ()]


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
