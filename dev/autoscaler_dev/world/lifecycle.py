"""Each NodeClaim's life as the cluster shows it, for the report's per-node timeline: created, launched,
registered, initialized, drifted, marked for disruption, cordoned, deleting, drained (its instance terminating:
the termination controller terminates only a drained node), terminated (gone from the cluster).

Read from the objects every step of the run, like a watch would; where the object carries the time of a step
(a condition's ``lastTransitionTime``, on the virtual clock like every timestamp of the world), that time is used,
otherwise the step's."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import INITIALIZED, LAUNCHED, REGISTERED
from autoscaler.clock import parse_time
from autoscaler.controllers.disruption.conditions import DRIFTED
from autoscaler.controllers.orchestration.record import DISRUPTION_REASON
from autoscaler.controllers.termination.instance import INSTANCE_TERMINATING
from autoscaler.kube.objects import Body, Node
from autoscaler.kube.port import KubeObject
from autoscaler_dev.world.timeline import Decision, NodeHistory

# Condition -> the step it marks, and whether its reason says why.
_CONDITIONS = (
    (LAUNCHED, "launched", False),
    (REGISTERED, "registered", False),
    (INITIALIZED, "initialized", False),
    (DRIFTED, "drifted", True),
    (DISRUPTION_REASON, "disrupting", True),
    (INSTANCE_TERMINATING, "drained", False),
)
STEPS = (
    "created",
    "launched",
    "registered",
    "initialized",
    "drifted",
    "disrupting",
    "cordoned",
    "deleting",
    "drained",
    "terminated",
)


class NodeLifecycles:
    """Fills ``histories`` (NodeClaim name -> history) from what each step of the run shows."""

    def __init__(self, histories: dict[str, NodeHistory], start: datetime) -> None:
        self.histories, self.start = histories, start

    def observe(self, claims: Sequence[KubeObject], nodes: Sequence[KubeObject], t: float) -> None:
        by_provider = {Node(n).provider_id: Node(n) for n in nodes}
        live = set()
        for raw in claims:
            claim = Body(raw)
            live.add(claim.name)
            history = self.histories.get(claim.name)
            if history is None:
                history = self.histories[claim.name] = NodeHistory(claim.name, claim.labels.get(wk.LABEL_NODEPOOL, ""))
                history.steps["created"] = self._when(claim.creation_timestamp, t)
            self._labels(history, claim)
            for condition_type, step, explains in _CONDITIONS:
                condition = claim.condition(condition_type)
                if condition is None or condition.get("status") != "True" or step in history.steps:
                    continue
                history.steps[step] = self._when(condition.get("lastTransitionTime"), t)
                if explains:
                    history.why[step] = str(condition.get("reason") or "")
            if claim.deleting:
                history.steps.setdefault("deleting", self._when(claim.deletion_timestamp, t))
            node = by_provider.get(str(claim.status.get("providerID") or ""))
            if node is not None:
                history.node = node.name
                if "cordoned" not in history.steps and (
                    node.unschedulable or any(taint.get("key") == wk.TAINT_DISRUPTED for taint in node.taints)
                ):
                    history.steps["cordoned"] = t
        for name, history in self.histories.items():
            if name not in live:
                history.steps.setdefault("terminated", t)

    @staticmethod
    def _labels(history: NodeHistory, claim: Body) -> None:
        labels = claim.labels
        history.instance_type = history.instance_type or labels.get(wk.LABEL_INSTANCE_TYPE, "")
        history.zone = history.zone or labels.get(wk.LABEL_ZONE, "")
        history.capacity_type = history.capacity_type or labels.get(wk.LABEL_CAPACITY_TYPE, "")

    def _when(self, stamp: object, t: float) -> float:
        """The object's own time of a step in virtual seconds when it has one in [0, t], else ``t``."""
        moment = parse_time(stamp)
        if moment is None:
            return t
        seconds = (moment - self.start).total_seconds()
        return round(seconds, 1) if 0 <= seconds <= t else t


def apply_terminations(histories: dict[str, NodeHistory], decisions: Sequence[Decision]) -> None:
    """The controllers' own word on steps the objects may never have shown between two looks at them: an
    interruption's cordon (its ``interruption`` decision) and how each node's termination ended (the termination
    controller's ``node-terminated`` decision) often happen within one step, so "cordoned" and "drained" are
    dated from those decisions when the objects never showed them."""
    for decision in decisions:
        history = histories.get(str(decision.fields.get("nodeclaim")))
        if history is None:
            continue
        if decision.kind == "interruption" and decision.fields.get("cordoned_at"):
            history.steps.setdefault("cordoned", decision.t)
        if decision.kind != "node-terminated":
            continue
        reason = str(decision.fields.get("reason") or "")
        if reason == "Drained":
            history.steps.setdefault("drained", decision.t)
        history.why.setdefault("terminated", reason)
