"""What a simulated run records: samples of the cluster over virtual time, the notable things that happened,
and the summary a run ends with. Pure data; ``report`` renders it, ``runner`` fills it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Sample:
    """The cluster at one moment of virtual time (seconds since the scenario started)."""

    t: float
    pods_total: int
    pods_running: int
    pods_pending: int
    nodes: int
    nodes_spot: int
    nodes_on_demand: int
    nodeclaims: int
    cost_per_hour: float  # the on-demand or spot price of every live instance, per hour
    cpu_utilization: float  # requests of pods running on Karpenter's nodes over those nodes' allocatable, 0..1
    memory_utilization: float
    cost_lower_bound: float | None = None  # what the pods' requests must cost at least, per hour (``costbound``)
    nodes_by_type: dict[str, int] = field(default_factory=dict)  # instance type -> Karpenter's nodes
    nodes_by_zone: dict[str, int] = field(default_factory=dict)  # zone -> Karpenter's nodes
    headroom: int | None = None  # CapacityBuffer chunks that fit on Ready nodes now (``headroom``); None: no buffer


@dataclass(frozen=True)
class Happening:
    """One line of the timeline: at ``t``, ``what`` (e.g. "launched", "interrupted", "drifted", "dead-lettered")
    about ``subject`` (a node, NodeClaim, instance or message), with free text."""

    t: float
    what: str
    subject: str
    text: str = ""


@dataclass(frozen=True)
class Decision:
    """One decision a function logged (``decision`` in its structured log line): at ``t``, ``function`` decided
    ``kind`` ("provisioned", "launched", "disrupting", "not-disrupted", "interruption", "collected", ...) with the
    fields it logged."""

    t: float
    function: str
    kind: str
    message: str
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass
class NodeHistory:
    """One NodeClaim's life: when each step happened (virtual seconds: "created", "launched", "registered",
    "initialized", "drifted", "disrupting", "cordoned", "deleting", "drained", "terminated") and what it ran as."""

    nodeclaim: str
    nodepool: str = ""
    node: str = ""
    instance_type: str = ""
    zone: str = ""
    capacity_type: str = ""
    steps: dict[str, float] = field(default_factory=dict)
    why: dict[str, str] = field(default_factory=dict)  # step -> its reason (a drift reason, a disruption reason)


@dataclass
class Timeline:
    scenario: str
    samples: list[Sample] = field(default_factory=list)
    happenings: list[Happening] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    nodes: dict[str, NodeHistory] = field(default_factory=dict)  # NodeClaim name -> its history
    pending_seconds: list[float] = field(default_factory=list)  # each pod's wait from creation to being scheduled
    started_without_launch: int = 0  # pods bound to a node that was Ready when they were created
    summary: dict[str, Any] = field(default_factory=dict)  # the keys are documented in docs/simulation.md
    checks: dict[str, bool] = field(default_factory=dict)  # expected outcome -> met

    def note(self, t: float, what: str, subject: str, text: str = "") -> None:
        self.happenings.append(Happening(round(t, 1), what, subject, text))

    def as_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "summary": self.summary,
            "checks": self.checks,
            "samples": [asdict(s) for s in self.samples],
            "happenings": [asdict(h) for h in self.happenings],
            "decisions": [asdict(d) for d in self.decisions],
            "nodes": [asdict(n) for n in self.nodes.values()],
            "pending_seconds": self.pending_seconds,
        }


def grouped(happenings: Sequence[Happening], bucket: float = 60.0) -> list[Happening]:
    """Runs of the same kind of happening within one ``bucket`` of virtual time, as one line each ("joined x148"):
    a burst of 150 nodes joining is one fact, not 150 lines."""
    lines: list[Happening] = []
    run: list[Happening] = []
    for happening in [*happenings, None]:
        if run and (happening is None or happening.what != run[0].what or happening.t - run[0].t >= bucket):
            first = run[0]
            if len(run) == 1:
                lines.append(first)
            else:
                names = ", ".join(h.subject for h in run[:3]) + (", ..." if len(run) > 3 else "")
                lines.append(Happening(first.t, f"{first.what} x{len(run)}", names, first.text if len(run) < 4 else ""))
            run = []
        if happening is not None:
            run.append(happening)
    return lines
