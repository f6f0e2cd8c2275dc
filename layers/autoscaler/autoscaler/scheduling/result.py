"""What a scheduling pass decides: new NodeClaims, where each pod goes, and why the rest cannot go anywhere."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, NamedTuple

from autoscaler.apis.resources import Resources, format_resources
from autoscaler.apis.v1 import labels as wk
from autoscaler.cloudprovider import InstanceType
from autoscaler.scheduling.pods import PodRef
from autoscaler.scheduling.requirements import Requirements
from autoscaler.scheduling.taints import Taint

PlacementKind = Literal["node", "nodeclaim", "new"]


@dataclass(frozen=True)
class Placement:
    """Where a pod goes: an existing node, an in-flight NodeClaim (by name), or a new NodeClaim (by its
    placeholder hostname, ``NewNodeClaim.hostname``)."""

    kind: PlacementKind
    name: str


class InstanceTypeOption(NamedTuple):
    instance_type: InstanceType
    price: float  # the cheapest available offering the NodeClaim's requirements allow, per hour

    @property
    def name(self) -> str:
        return self.instance_type.name


@dataclass(frozen=True)
class NewNodeClaim:
    """A NodeClaim to create. ``requirements`` already carry the instance type and capacity type choices."""

    nodepool: str
    hostname: str  # a placeholder naming this claim within the result; not a label to apply
    requirements: Requirements
    requests: Resources  # the pods' requests plus the DaemonSet overhead every option reserves
    pods: tuple[PodRef, ...]
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    options: Sequence[tuple[InstanceType, float]]  # cheapest first; see instance_types

    @cached_property
    def instance_types(self) -> tuple[InstanceTypeOption, ...]:
        """The instance types this NodeClaim may launch as, with their prices, cheapest first."""
        return tuple(InstanceTypeOption(it, price) for it, price in self.options)

    @property
    def cheapest_price(self) -> float:
        return self.options[0][1] if self.options else float("inf")

    def node_selector_requirements(self) -> list[dict[str, Any]]:
        """The requirements as ``spec.requirements`` of a NodeClaim (with minValues)."""
        return self.requirements.to_selector()

    def resource_requests(self) -> dict[str, str]:
        return format_resources(self.requests)


@dataclass(frozen=True)
class Rejection:
    """Why one NodePool (or the existing capacity, when ``nodepool`` is None) could not take a pod."""

    nodepool: str | None
    reason: str

    def __str__(self) -> str:
        return f"nodepool {self.nodepool!r}: {self.reason}" if self.nodepool else self.reason


@dataclass(frozen=True)
class PodError:
    rejections: tuple[Rejection, ...]
    relaxed: tuple[str, ...] = ()  # preferences given up before failing

    @property
    def message(self) -> str:
        text = "; ".join(str(r) for r in self.rejections)
        if self.relaxed:
            text += " (after relaxing: " + ", ".join(self.relaxed) + ")"
        return text

    def __str__(self) -> str:
        return self.message


@dataclass
class SchedulingResult:
    """``placements`` is in the order pods were placed (a valid order to bind them in)."""

    new_nodeclaims: list[NewNodeClaim] = field(default_factory=list)
    placements: dict[PodRef, Placement] = field(default_factory=dict)
    unschedulable: dict[PodRef, PodError] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)  # inputs ignored as unreadable (logged by callers)

    @property
    def existing_placements(self) -> dict[str, list[PodRef]]:
        """Pods placed on existing nodes and in-flight NodeClaims, by node or NodeClaim name."""
        placed: dict[str, list[PodRef]] = {}
        for pod, where in self.placements.items():
            if where.kind != "new":
                placed.setdefault(where.name, []).append(pod)
        return placed

    @property
    def cost_per_hour(self) -> float:
        return sum(claim.cheapest_price for claim in self.new_nodeclaims)


def nodeclaim_labels(
    template_labels: Mapping[str, str], requirements: Requirements, well_known: frozenset[str]
) -> dict[str, str]:
    """The template's labels plus a value for each custom requirement that pins one (Karpenter resolves
    custom labels this way; well-known ones come from the instance type and offering at launch)."""
    labels = dict(template_labels)
    skip = well_known | wk.RESTRICTED_LABELS | {wk.LABEL_REGISTERED, wk.LABEL_INITIALIZED}
    for key, requirement in requirements.items():
        if key in skip:
            continue
        value = requirement.any_value()
        if value is not None:
            labels.setdefault(key, value)
    return labels
