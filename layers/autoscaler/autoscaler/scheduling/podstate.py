"""A pod during a scheduling pass: its current (possibly relaxed) constraints and what derives from them."""

from __future__ import annotations

from autoscaler.scheduling.constraints import PodConstraints
from autoscaler.scheduling.pods import PodInfo
from autoscaler.scheduling.requirements import Requirements, exists
from autoscaler.scheduling.topology import Topology
from autoscaler.scheduling.topologygroup import AFFINITY, TopologyGroup

HostLimits = list[tuple[set[str], ...]]  # per constraint, sets of hostnames whose union is allowed
DomainLimits = dict[str, set[str]]  # per topology key, the domains allowed


class PodState:
    __slots__ = ("constraints", "groups", "inverse", "limiting", "pod", "requirements", "strict", "volumes")

    def __init__(
        self, pod: PodInfo, topology: Topology, volumes: tuple[Requirements, ...], inverse: tuple[TopologyGroup, ...]
    ) -> None:
        self.pod = pod
        self.volumes = volumes
        self.inverse = inverse  # the inverse anti-affinity groups this pod owns (never relaxed)
        self.use(pod.constraints, topology)

    def use(self, constraints: PodConstraints, topology: Topology) -> None:
        """Switch to ``constraints`` (original or relaxed): requirements and owned groups follow."""
        self.constraints = constraints
        self.requirements, self.strict, self.groups, self.limiting = _derived(self.pod, constraints, topology)

    def limits(self) -> tuple[HostLimits, DomainLimits]:
        """What the pod's topology constraints allow right now, independent of any node: the hosts it may
        join (hostname spreads and anti-affinity) and the domains of other keys it may use. A node outside
        these is certain to reject the pod, so the scheduler need not ask it."""
        hosts: HostLimits = []
        domains: DomainLimits = {}
        for group, selects in self.limiting:
            if group.hostname:
                allowed_hosts = group.allowed_hosts(selects)
                if allowed_hosts is not None:
                    hosts.append(allowed_hosts)
                continue
            pod_domains = self.strict.get(group.key) or exists(group.key)
            allowed = group.allowed_domains(selects, pod_domains)
            if allowed is not None:
                previous = domains.get(group.key)
                domains[group.key] = allowed if previous is None else previous & allowed
        return hosts, domains


_Derived = tuple[Requirements, Requirements, tuple[TopologyGroup, ...], list[tuple[TopologyGroup, bool]]]


def _derived(pod: PodInfo, constraints: PodConstraints, topology: Topology) -> _Derived:
    """What follows from a pod's constraints, shared by every pod with the same constraints and labels."""
    key = (constraints, pod.label_class)
    cached = topology.derived.get(key)
    if cached is None:
        groups = topology.groups_for(pod, constraints)
        limiting = [
            (group, group.selects(pod.namespace, pod.labels, pod.label_class))
            for group in (*groups, *topology.inverse_selecting(pod))
            if group.kind != AFFINITY or not group.hostname
        ]
        requirements = constraints.requirements(topology.respect_preferences)
        cached = topology.derived[key] = (requirements, constraints.strict_requirements(), groups, limiting)
    return cached
