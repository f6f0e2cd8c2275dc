"""Capacity that exists already: registered nodes and launched NodeClaims whose node has not joined yet.

Pods go here before any new NodeClaim is considered. A node's labels are fixed, so a pod must be
compatible with them exactly (no well-known label may be left undefined), and its resources must fit
what the bound pods and the DaemonSets still to come leave free.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from autoscaler.apis.resources import Resources
from autoscaler.apis.v1.labels import LABEL_HOSTNAME
from autoscaler.scheduling.narrowing import as_narrowed, narrow_for_pod
from autoscaler.scheduling.pods import HostPort, PodInfo
from autoscaler.scheduling.podstate import PodState
from autoscaler.scheduling.requirements import Requirement, Requirements
from autoscaler.scheduling.taints import Taint, describe, untolerated
from autoscaler.scheduling.topology import Topology

NO_UNDEFINED: frozenset[str] = frozenset()


def fits(requests: Mapping[str, int], available: Mapping[str, int]) -> bool:
    """Karpenter's ``Fits``: nothing fits where any resource is already overcommitted."""
    for amount in available.values():
        if amount < 0:
            return False
    return all(amount <= available.get(name, 0) for name, amount in requests.items())


def port_conflict(ports: Sequence[HostPort], used: set[HostPort]) -> HostPort | None:
    """A host port already in use: same port and protocol, on the same address or where either binds all."""
    for address, port, protocol in ports:
        for used_address, used_port, used_protocol in used:
            if (
                port == used_port
                and protocol == used_protocol
                and (not address or not used_address or address == used_address)
            ):
                return (address, port, protocol)
    return None


def node_requirements(labels: Mapping[str, str], hostname: str) -> Requirements:
    """A node's labels as requirements, its hostname included. Never mutated once built: safe to share."""
    requirements = Requirements.from_labels(labels)
    requirements.add(Requirement(LABEL_HOSTNAME, False, frozenset({hostname})))
    return requirements


class ExistingNodeState:
    """A node (or launched NodeClaim) the scheduler may place pods on."""

    def __init__(
        self,
        name: str,
        *,
        hostname: str,
        labels: Mapping[str, str],
        taints: tuple[Taint, ...],
        available: Resources,
        host_ports: set[HostPort],
        initialized: bool,
        nodeclaim: str | None,
        nodepool: str | None,
        topology: Topology,
        requirements: Requirements | None = None,
    ) -> None:
        self.name = name
        self.hostname = hostname
        self.labels = labels
        self.taints = taints
        self.remaining = available
        self.host_ports = host_ports
        self.initialized = initialized
        self.nodeclaim = nodeclaim  # set for a NodeClaim without a node yet
        self.nodepool = nodepool
        if requirements is None:  # the labels' (a scheduler solving many times passes them in, shared)
            requirements = node_requirements(labels, hostname)
        self.requirements = requirements
        self.pods: list[PodInfo] = []
        self._topology = topology
        topology.register_host(hostname)

    @property
    def order(self) -> tuple[bool, str]:
        """Initialized nodes first (consolidation prefers them), then by name."""
        return (not self.initialized, self.name)

    def can_add(self, state: PodState) -> Requirements | str:
        """The node's requirements with the pod added, or why the pod cannot go here."""
        pod = state.pod
        taint = untolerated(self.taints, state.constraints.tolerations)
        if taint is not None:
            return f"did not tolerate taint {describe(taint)}"
        if pod.host_ports and (conflict := port_conflict(pod.host_ports, self.host_ports)):
            return f"host port {conflict[1]}/{conflict[2]} is in use"
        if not fits(pod.requests, self.remaining):
            return "exceeds node resources"
        return narrow_for_pod(self.requirements, state, self._topology, NO_UNDEFINED, as_narrowed)

    def add(self, state: PodState, requirements: Requirements) -> None:
        pod = state.pod
        self.pods.append(pod)
        remaining = self.remaining
        for name, amount in pod.requests.items():
            remaining[name] = remaining.get(name, 0) - amount
        self.requirements = requirements
        self.host_ports.update(pod.host_ports)
        self._topology.record(pod, state.inverse, self.taints, requirements, NO_UNDEFINED)
