"""New NodeClaims while they are being packed: a NodePool's template, narrowed by every pod added.

A new NodeClaim starts as its NodePool's requirements plus a placeholder hostname and every instance
type the pool allows (within its limits). Each pod added intersects the requirements with the pod's
and with what its topology constraints allow, and keeps only the instance types that still satisfy
the requirements, have an available offering and hold all the pods plus DaemonSet overhead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from autoscaler.apis.resources import Resources, format_resources
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.scheduling.daemons import DaemonGroup, daemon_groups, requests_with
from autoscaler.scheduling.existing import port_conflict
from autoscaler.scheduling.instancetypes import OFFERING_LABELS, InstanceTypeIndex, bits
from autoscaler.scheduling.narrowing import narrow_for_pod
from autoscaler.scheduling.pods import HostPort, PodInfo
from autoscaler.scheduling.podstate import PodState
from autoscaler.scheduling.requirements import Requirement, Requirements
from autoscaler.scheduling.taints import Toleration, describe, parse_taints, untolerated
from autoscaler.scheduling.topology import Topology

# Requirement keys only the DaemonSet simulation uses (a launched node is registered and initialized).
SIMULATION_KEYS = frozenset({wk.LABEL_REGISTERED, wk.LABEL_INITIALIZED})

Attempt = tuple[Requirements, int, Resources]  # requirements, instance types, requests if the pod is added


def nodeclass_label(group: str, kind: str) -> str:
    return f"{group}/{kind.lower()}"


class NodeClaimTemplate:
    """What a NodePool launches: requirements, labels, taints, instance types and DaemonSet overhead."""

    def __init__(
        self, nodepool: NodePool, index: InstanceTypeIndex, daemons: Sequence[PodInfo], allow: frozenset[str]
    ) -> None:
        template = nodepool.spec.template
        spec = template.spec
        self.nodepool = nodepool
        self.name = nodepool.name
        self.weight = nodepool.spec.weight or 0
        ref = spec.node_class_ref
        self.labels = {
            **((template.metadata.labels if template.metadata else None) or {}),
            wk.LABEL_NODEPOOL: self.name,
            nodeclass_label(ref.group, ref.kind): ref.name,
        }
        self.requirements = Requirements()
        for r in spec.requirements:
            self.requirements.add(Requirement.of(r.key, r.operator, r.values or (), r.min_values))
        self.requirements.add(*Requirements.from_labels(self.labels).values())
        self.requirements.add(*(Requirement(key, False, frozenset({"true"})) for key in SIMULATION_KEYS))
        self.has_min_values = any(r.min_values is not None for r in self.requirements.values())
        self.taints = parse_taints(t.model_dump(by_alias=True) for t in spec.taints or ())
        self.index = index
        self.allow = allow
        self.mask = index.compatible(self.requirements)
        self.groups: tuple[DaemonGroup, ...] = daemon_groups(daemons, self.requirements, self.taints, index, allow)
        self._tolerated: dict[tuple[Toleration, ...], str | None] = {}
        self._overhead = {i: group.overhead for group in self.groups for i in bits(group.mask)}
        limits = nodepool.spec.limits or {}
        self.limited = tuple(sorted(name for name in limits if name != "nodes"))  # resources the NodePool caps

    def room(self, type_index: int, requests: Mapping[str, int]) -> Resources:
        """What is left on instance type ``type_index`` once its DaemonSets and ``requests`` are in."""
        overhead = self._overhead.get(type_index, {})
        allocatable = self.index.allocatable[type_index]
        return {r: amount - overhead.get(r, 0) - requests.get(r, 0) for r, amount in allocatable.items()}

    def untolerated_taint(self, tolerations: tuple[Toleration, ...]) -> str | None:
        cached = self._tolerated.get(tolerations, "?")
        if cached == "?":
            taint = untolerated(self.taints, tolerations)
            cached = self._tolerated[tolerations] = None if taint is None else describe(taint)
        return cached

    def fits(self, requests: Mapping[str, int], ports: Sequence[HostPort]) -> int:
        """Instance types that hold ``requests`` plus their DaemonSet overhead (and whose DaemonSets
        leave the pod's host ports free)."""
        index = self.index
        if len(self.groups) == 1 and not ports:
            group = self.groups[0]
            return group.mask & index.fits(requests_with(requests, group.overhead) if group.overhead else requests)
        mask = 0
        for group in self.groups:
            if ports and port_conflict(ports, set(group.host_ports)):
                continue
            mask |= group.mask & index.fits(requests_with(requests, group.overhead))
        return mask

    def narrow(self, mask: int, new: Mapping[str, Requirement], old: Mapping[str, Requirement]) -> int:
        """``mask`` (types compatible with ``old``) cut down to the types compatible with ``new``, looking
        only at the requirements that changed."""
        index = self.index
        offerings_changed = False
        for key, requirement in new.items():
            if old.get(key) is requirement:
                continue
            if key in index.label_keys:
                mask &= index.label_mask(requirement)
            elif key in OFFERING_LABELS:
                offerings_changed = True
        if offerings_changed and mask:
            mask &= index.offerings(new)[0]
        return mask

    def explain(self, requirements: Requirements, requests: Mapping[str, int], mask: int) -> str:
        """Why no instance type is left, in the terms a person can act on."""
        index = self.index
        if not index.types:
            return "the cloud provider offers it no instance type (is its node class ready?)"
        labels = mask
        for key, requirement in requirements.items():
            if key in index.label_keys:
                labels &= index.label_mask(requirement)
        offered = mask & index.offerings(requirements)[0]
        fitting = mask & self.fits(requests, ())
        shown = ", ".join(f"{k}={v}" for k, v in sorted(format_resources(requests).items()))
        checks = (
            (labels, f"no instance type meets the requirements ({_keys(requirements, index)})"),
            (fitting, f"no instance type has enough resources for {{{shown}}} (with DaemonSet overhead)"),
            (offered, f"no instance type has an available offering for {_offering_text(requirements)}"),
            (labels & fitting, "no instance type both meets the requirements and has enough resources"),
            (labels & offered, "no instance type both meets the requirements and has an available offering"),
            (fitting & offered, "no instance type both has enough resources and an available offering"),
        )
        for found, message in checks:
            if not found:
                return message
        return "no instance type meets the requirements, has enough resources and an available offering at once"


def _keys(requirements: Requirements, index: InstanceTypeIndex) -> str:
    relevant = [repr(r) for k, r in sorted(requirements.items()) if k in index.label_keys]
    return ", ".join(relevant) or "none on instance type labels"


def _offering_text(requirements: Requirements) -> str:
    parts = [repr(requirements[k]) for k in OFFERING_LABELS if k in requirements]
    return ", ".join(parts) or "any zone and capacity type"


class NewClaim:
    """A NodeClaim being packed. ``hostname`` is a placeholder that makes it its own hostname domain."""

    __slots__ = (
        "_order",
        "_position",
        "_topology",
        "cheapest",
        "host_ports",
        "hostname",
        "limit_mask",
        "mask",
        "pods",
        "price",
        "requests",
        "requirements",
        "sequence",
        "slack",
        "template",
    )

    def __init__(self, template: NodeClaimTemplate, mask: int, sequence: int, topology: Topology) -> None:
        self.template = template
        self.sequence = sequence
        self.hostname = f"hostname-placeholder-{sequence:04d}"
        self.requirements = Requirements(template.requirements)
        self.requirements.add(Requirement(wk.LABEL_HOSTNAME, False, frozenset({self.hostname})))
        self.mask = mask
        self.limit_mask = mask  # the instance types the NodePool's limits allowed when the claim was opened
        self.requests: Resources = {}
        self.pods: list[PodInfo] = []
        self.host_ports: set[HostPort] = set()
        self._topology = topology
        self.cheapest = -1  # the cheapest instance type left, its price, and the room it has left
        self.price = float("inf")
        self.slack: Resources = {}
        self._order: list[tuple[float, int]] = []
        self._position = 0

    @property
    def pod_count(self) -> int:
        return len(self.pods)

    def can_add(self, state: PodState, explain: bool = False) -> Attempt | str:
        """The claim as it would be with the pod added, or why the pod cannot join (in detail when
        ``explain``: reasons are only shown for fresh claims, so in-flight ones skip the work)."""
        pod = state.pod
        template = self.template
        taint = template.untolerated_taint(state.constraints.tolerations)
        if taint is not None:
            return f"did not tolerate taint {taint}"
        if pod.host_ports and (conflict := port_conflict(pod.host_ports, self.host_ports)):
            return f"host port {conflict[1]}/{conflict[2]} is in use"
        requests = requests_with(self.requests, pod.requests)
        fitting = self.mask & template.fits(requests, pod.host_ports)
        if not fitting:
            return template.explain(self.requirements, requests, self.mask) if explain else "exceeds resources"
        return narrow_for_pod(
            self.requirements,
            state,
            self._topology,
            template.allow,
            lambda narrowed: self._complete(pod, narrowed, fitting, requests, explain),
        )

    def _complete(
        self, pod: PodInfo, requirements: Requirements, fitting: int, requests: Resources, explain: bool
    ) -> Attempt | str:
        """The attempt for ``requirements`` (already narrowed by the pod): the instance types among
        ``fitting`` that still meet them, with the domains the pod is counted in settled and minValues met."""
        template = self.template
        mask = template.narrow(fitting, requirements, self.requirements)
        if not mask:
            return template.explain(requirements, requests, self.mask) if explain else "no instance type left"
        settled = self._settle(pod, requirements, mask)
        if isinstance(settled, str):
            return settled
        requirements, mask = settled
        if template.has_min_values:
            shortfall = template.index.min_values_shortfall(requirements, list(bits(mask)))
            if shortfall:
                return min_values_message(shortfall)
        return requirements, mask, requests

    def _settle(self, pod: PodInfo, requirements: Requirements, mask: int) -> tuple[Requirements, int] | str:
        """Fix the domains the pod will be counted in (see ``Topology.unsettled``): the least-counted domain
        that still leaves an instance type, as a spread would choose."""
        template = self.template
        for group in self._topology.unsettled(pod, template.taints, requirements, template.allow):
            current = requirements.get(group.key)
            choices = sorted((c, d) for d, c in group.domains.items() if current is None or current.has(d))
            for _, domain in choices:
                narrowed = requirements.merged({group.key: Requirement(group.key, False, frozenset({domain}))})
                narrowed_mask = template.narrow(mask, narrowed, requirements)
                if narrowed_mask:
                    requirements, mask = narrowed, narrowed_mask
                    break
            else:
                return f"no {group.key} domain with an instance type left to count the pod in"
        return requirements, mask

    def add(self, state: PodState, attempt: Attempt) -> None:
        self.requirements, self.mask, self.requests = attempt
        self.pods.append(state.pod)
        self.host_ports.update(state.pod.host_ports)
        self._topology.record(state.pod, state.inverse, self.template.taints, self.requirements, self.template.allow)
        self._find_cheapest(resume=True)

    def reshape(self, requests: Resources, mask: int) -> None:
        """Replace the claim's requests and instance types (rebalancing exchanged a pod)."""
        self.requests, self.mask = requests, mask
        self._find_cheapest(resume=False)

    def refill(self, pods: list[PodInfo], requests: Resources, mask: int) -> None:
        """Replace the claim's pods (repacking moved pods no constraint binds), requests and instance types."""
        self.pods = pods
        self.host_ports = {port for pod in pods for port in pod.host_ports}
        self.reshape(requests, mask)

    def _find_cheapest(self, resume: bool) -> None:
        # While pods are only added, the cheapest type only moves up the price order: resume from it.
        order = self.template.index.price_order(self.requirements)
        position = self._position if resume and order is self._order else 0
        mask = self.mask
        while position < len(order) and not mask >> order[position][1] & 1:
            position += 1
        self._order, self._position = order, position
        if position < len(order):
            self.price, self.cheapest = order[position]
            self.slack = self.template.room(self.cheapest, self.requests)
        else:
            self.price, self.cheapest, self.slack = float("inf"), -1, {}

    def options(self, limit: int) -> list[tuple[int, float]]:
        """The ``limit`` cheapest instance types left, with their prices."""
        index = self.template.index
        order = index.price_order(self.requirements)
        start = self._position if order is self._order else 0
        return index.cheapest(self.mask, self.requirements, limit, start)

    def keeps_cheapest(self, attempt: Attempt) -> bool:
        """True when adding the pod as ``attempt`` keeps the cheapest instance type: the pod rides free."""
        return self.cheapest >= 0 and bool(attempt[1] >> self.cheapest & 1)


def min_values_message(shortfall: Mapping[str, tuple[int, int]]) -> str:
    parts = [
        f"{key} has {offered} of the {needed} values minValues requires"
        for key, (offered, needed) in sorted(shortfall.items())
    ]
    return "minValues not met: " + "; ".join(parts)
