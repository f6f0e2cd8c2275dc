"""What one provisioning pass decides, before anything is written: the plan. Pure.

``autoscaler plan`` prints it; the provisioning controller carries it out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.controllers.buffers.demand import BufferKey
from autoscaler.controllers.buffers.status import Provisioned, classify
from autoscaler.scheduling import NewNodeClaim, Placement, PodRef


@dataclass(frozen=True)
class PlannedNodeClaim:
    nodeclaim: NodeClaim  # as it will be created (generateName, no uid yet)
    decision: NewNodeClaim  # the instance type options with prices, and the pods it is for

    @property
    def nodepool(self) -> str:
        return self.decision.nodepool

    @property
    def pods(self) -> tuple[PodRef, ...]:
        return self.decision.pods

    def zones(self) -> list[str]:
        return self._allowed(wk.LABEL_ZONE)

    def capacity_types(self) -> list[str]:
        return self._allowed(wk.LABEL_CAPACITY_TYPE)

    def _allowed(self, key: str) -> list[str]:
        """The values of an offering label (zone, capacity type) this NodeClaim may launch with."""
        requirement = self.decision.requirements.get(key)
        if requirement is not None and not requirement.complement:
            return sorted(requirement.values)
        values = set()
        for option in self.decision.instance_types:
            for offering in option.instance_type.offerings:
                value = offering.zone if key == wk.LABEL_ZONE else offering.capacity_type
                if offering.available and (requirement is None or requirement.has(value)):
                    values.add(value)
        return sorted(values)

    def decision_fields(self, name: str, pods_named: int = 10) -> dict[str, Any]:
        """The decision as structured log fields: which pods, which NodePool, the instance types with their prices
        (cheapest first; the launch takes the cheapest available offering), where and of what capacity type."""
        return {
            "nodeclaim": name,
            "nodepool": self.nodepool,
            "pods": len(self.pods),
            "pod_names": [str(p) for p in self.pods[:pods_named]],
            "instance_types": [[o.name, round(o.price, 6)] for o in self.decision.instance_types],
            "zones": self.zones(),
            "capacity_types": self.capacity_types(),
            "requests": self.decision.resource_requests(),
        }

    def as_dict(self) -> dict[str, Any]:
        return {
            "nodepool": self.nodepool,
            "instanceTypes": [
                {"name": o.name, "pricePerHour": round(o.price, 6)} for o in self.decision.instance_types
            ],
            "zones": self.zones(),
            "capacityTypes": self.capacity_types(),
            "pricePerHour": round(self.decision.cheapest_price, 6),
            "requests": self.decision.resource_requests(),
            "pods": [str(p) for p in self.pods],
            "nodeClaim": self.nodeclaim.to_dict(),
        }


@dataclass(frozen=True)
class LaunchChoice:
    """How a planned NodeClaim would launch (the launcher's choice): its capacity type and, when reserved, the
    reservation it targets; or why it could not launch now."""

    capacity_type: str = ""
    reservation: str | None = None
    price: float | None = None  # the cheapest offering the launch may get
    error: str | None = None

    def text(self) -> str:
        if self.error is not None:
            return "not launchable now"
        return f"{self.capacity_type} {self.reservation}" if self.reservation else self.capacity_type

    def as_dict(self) -> dict[str, Any]:
        return {
            "capacityType": self.capacity_type or None,
            "reservation": self.reservation,
            "pricePerHour": self.price,  # unrounded: a reserved launch costs ~1e-8
            "error": self.error,
        }


@dataclass
class Plan:
    nodeclaims: list[PlannedNodeClaim] = field(default_factory=list)
    placements: Mapping[PodRef, Placement] = field(default_factory=dict)  # every pod placed, new claims included
    held: dict[PodRef, str] = field(default_factory=dict)  # pods held on the in-flight NodeClaim they were created for
    unschedulable: dict[PodRef, str] = field(default_factory=dict)  # pod -> why no NodePool can run it
    skipped_nodepools: dict[str, str] = field(default_factory=dict)  # NodePool -> why it did not take part
    ignored_pods: list[PodRef] = field(default_factory=list)  # pods that opt out of Karpenter's nodes
    pods: int = 0
    scheduling_seconds: float = 0.0
    skipped_inputs: Sequence[str] = ()  # unreadable inputs the scheduler left out
    virtual: dict[PodRef, BufferKey] = field(default_factory=dict)  # CapacityBuffers' virtual pods, by buffer
    buffer_unschedulable: dict[PodRef, str] = field(default_factory=dict)  # virtual pods that fit nowhere
    overlaid: list[dict[str, Any]] = field(default_factory=list)  # instance types NodeOverlays changed (``plan``)
    # Filled by ``autoscaler plan`` (``capacity``): how each NodeClaim would launch, the static NodePools and the
    # capacity reservations.
    launches: list[LaunchChoice] = field(default_factory=list)
    static: dict[str, dict[str, Any]] = field(default_factory=dict)
    reservations: list[dict[str, Any]] = field(default_factory=list)

    def launch_price(self, index: int) -> float:
        """NodeClaim ``index``'s price per hour: its launch's, when ``autoscaler plan`` planned the launches (a
        reservation filled by earlier NodeClaims then prices the rest on-demand or spot), else the scheduler's."""
        launch = self.launches[index] if index < len(self.launches) else None
        if launch is not None and launch.price is not None:
            return launch.price
        return self.nodeclaims[index].decision.cheapest_price

    def price(self) -> float:
        return sum(self.launch_price(i) for i in range(len(self.nodeclaims)))

    def existing(self) -> dict[PodRef, Placement]:
        """Real pods that fit on nodes or in-flight NodeClaims already there."""
        return {p: w for p, w in self.placements.items() if w.kind != "new" and p not in self.virtual}

    def buffered(self) -> dict[BufferKey, Provisioned]:
        """Per CapacityBuffer: where its virtual pods went (nodes, NodeClaims launching, new ones, nowhere)."""
        return classify(self.virtual, self.placements, self.held, self.buffer_unschedulable)

    def as_dict(self) -> dict[str, Any]:
        return {
            "nodeclaims": [
                {**c.as_dict(), **({"launch": self.launches[i].as_dict()} if i < len(self.launches) else {})}
                for i, c in enumerate(self.nodeclaims)
            ],
            "existing": [{"pod": str(p), "kind": w.kind, "name": w.name} for p, w in self.existing().items()],
            "inFlight": [{"pod": str(p), "nodeClaim": n} for p, n in sorted(self.held.items(), key=str)],
            "unschedulable": [{"pod": str(p), "reason": r} for p, r in sorted(self.unschedulable.items(), key=str)],
            "skippedNodePools": dict(self.skipped_nodepools),
            "buffers": {f"{ns}/{name}": vars(done) for (ns, name), done in sorted(self.buffered().items())},
            "pricePerHour": round(self.price(), 6),
            **({"overlaid": self.overlaid} if self.overlaid else {}),
            "static": self.static,
            "reservations": self.reservations,
        }
