"""A small cluster for the orchestrator's tests: one NodePool, candidate NodeClaims with their Nodes and a pod
each, the replacement NodeClaims a producer would ask for, and passes of the orchestrator over it. In memory."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.controllers.orchestration import Command, Orchestrator, Outcome, ReasonPolicy, Replacement, Target
from autoscaler.controllers.orchestration.policy import BudgetCheck
from autoscaler.controllers.orchestration.record import COMMAND, CommandRecord, read_record, replaces
from autoscaler.kube.port import KubeObject
from tests.support.memory_cluster import MemoryCluster
from tests.unit.disruption.world import NOW, condition, node_and_claim, pod, pool

DISRUPTED = {"key": wk.TAINT_DISRUPTED, "effect": "NoSchedule"}


def new_nodeclaim(nodepool: str = "default") -> NodeClaim:
    """A replacement as a producer builds it, before it is created (generateName, no status)."""
    return NodeClaim.model_validate(
        {
            "metadata": {"generateName": f"{nodepool}-", "labels": {wk.LABEL_NODEPOOL: nodepool}},
            "spec": {
                "requirements": [{"key": wk.LABEL_INSTANCE_TYPE, "operator": "In", "values": ["m5.large"]}],
                "nodeClassRef": {"group": wk.AWS_GROUP, "kind": "EC2NodeClass", "name": "default"},
            },
        }
    )


class ScriptedCluster(MemoryCluster):
    """Raises ``script[i]`` instead of making its i-th write (counting from 0): a ClusterError is a failed
    request, any BaseException the invocation dying there."""

    script: dict[int, BaseException]
    made: int

    def __init__(self, *objects: Any, **kwargs: Any) -> None:
        super().__init__(*objects, **kwargs)
        self.script, self.made = {}, 0

    def _record(self, write: str) -> None:
        index, self.made = self.made, self.made + 1
        if index in self.script:
            raise self.script.pop(index)
        super()._record(write)


@dataclass
class World:
    cluster: MemoryCluster
    policy: ReasonPolicy
    candidates: list[str]
    now: datetime = NOW
    outcomes: list[Outcome] = field(default_factory=list)

    @classmethod
    def of(cls, policy: ReasonPolicy, candidates: int = 1, cluster: type[MemoryCluster] = MemoryCluster) -> World:
        nodepool = pool(disruption={"budgets": [{"nodes": "100%"}]})
        objects: list[Any] = [nodepool]
        names = []
        for index in range(candidates):
            claim, node = node_and_claim(f"old-{index}", nodepool)
            objects += [claim, node, pod(f"p{index}", f"node-old-{index}")]
            names.append(claim.name)
        return cls(cluster(*objects, clock=lambda: NOW), policy, names)

    # --- what a producer and a pass do ---------------------------------------------------------------
    def orchestrator(self) -> Orchestrator:
        marks = self.policy.budget is BudgetCheck.AT_DECISION
        return Orchestrator(self.cluster, lambda: self.now, [self.policy], clean_up=marks)

    def command(self, replacements: Sequence[tuple[str, ...]] | None = None) -> Command:
        """The command for every candidate; ``replacements``: what each replacement is for (default: one for all)."""
        serve = [tuple(self.candidates)] if replacements is None else replacements
        targets = [Target(self.claim(n), self.node(n) or {}) for n in self.candidates]
        return Command(self.policy.reason, targets, [Replacement(new_nodeclaim(), s) for s in serve], "a test")

    def start(self, command: Command | None = None) -> Outcome:
        outcome = Outcome()
        self.orchestrator().start(command or self.command(), outcome)
        self.outcomes.append(outcome)
        return outcome

    def advance(self) -> Outcome:
        outcome = Outcome()
        claims, nodes = self.cluster.nodeclaims(), self.cluster.nodes()
        pods, pools = self.cluster.pods(), self.cluster.nodepools()
        self.orchestrator().advance(claims, nodes, outcome, pods=pods, nodepools=pools)
        self.outcomes.append(outcome)
        return outcome

    # --- looking and changing ------------------------------------------------------------------------
    def claim(self, name: str) -> NodeClaim:
        found = self.cluster.nodeclaim(name)
        assert found is not None, name
        return found

    def node(self, candidate: str) -> KubeObject | None:
        return self.cluster.stored("Node", f"node-{candidate}")

    def record(self, name: str) -> CommandRecord | None:
        return read_record(self.claim(name))

    def replacements(self) -> list[NodeClaim]:
        return [c for c in self.cluster.nodeclaims() if c.name not in self.candidates]

    def held(self) -> list[NodeClaim]:
        """Replacements that still stand in for a candidate that exists and is not being deleted."""
        live = {n for n in self.candidates if not self.claim(n).metadata.deletion_timestamp}
        return [r for r in self.replacements() if live.intersection(replaces(r))]

    def taints(self, candidate: str) -> list[Any]:
        return list(((self.node(candidate) or {}).get("spec") or {}).get("taints") or [])

    def initialize(self, name: str) -> None:
        stored = self.cluster.stored("NodeClaim", name)
        assert stored is not None
        stored["status"] = {"conditions": [condition("Launched", NOW), condition("Initialized", NOW)]}
        self.cluster.add(stored)

    def initialize_all(self) -> None:
        for replacement in self.replacements():
            self.initialize(replacement.name)

    def set_record(self, name: str, record: CommandRecord) -> None:
        stored = self.cluster.stored("NodeClaim", name)
        assert stored is not None
        stored["metadata"]["annotations"][COMMAND] = record.text()
        self.cluster.add(stored)
