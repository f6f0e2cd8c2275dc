"""What a simulated run records: samples of the cluster over virtual time, the notable things that happened,
and the summary a run ends with. Pure data; ``report`` renders it, ``runner`` fills it."""

from __future__ import annotations

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


@dataclass(frozen=True)
class Happening:
    """One line of the timeline: at ``t``, ``what`` (e.g. "launched", "interrupted", "drifted", "dead-lettered")
    about ``subject`` (a node, NodeClaim, instance or message), with free text."""

    t: float
    what: str
    subject: str
    text: str = ""


@dataclass
class Timeline:
    scenario: str
    samples: list[Sample] = field(default_factory=list)
    happenings: list[Happening] = field(default_factory=list)
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
        }
