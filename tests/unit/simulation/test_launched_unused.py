"""The ``launched_unused`` decision-quality invariant: a NodeClaim launched for pending pods that no pod ever uses
is a wasted launch, unless the pods it was launched for were deleted before any of them ran anywhere (a workload
scaled down, and Kubernetes deletes the pending pods first): that demand went away, nobody decided badly."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler_dev.world.decisions import UNUSED_SECONDS, DecisionQuality


class Cluster:
    def __init__(self) -> None:
        self.objects: dict[str, list[dict[str, Any]]] = {"Pod": [], "NodeClaim": [], "NodePool": []}

    def list(self, api_version: str, kind: str) -> list[dict[str, Any]]:
        return self.objects.get(kind, [])


def pod(uid: str, node: str = "") -> dict[str, Any]:
    return {"metadata": {"name": uid, "namespace": "default", "uid": uid}, "spec": {"nodeName": node} if node else {}}


def nodeclaim(name: str, nominated: list[str], *, initialized: bool) -> dict[str, Any]:
    conditions = [{"type": "Initialized", "status": "True"}] if initialized else []
    return {
        "metadata": {
            "name": name,
            "labels": {wk.LABEL_NODEPOOL: "default"},
            "annotations": {wk.ANNOTATION_NOMINATED_PODS: ",".join(nominated)},
        },
        "status": {"nodeName": f"node-{name}", "conditions": conditions},
    }


class Run:
    def __init__(self) -> None:
        self.cluster, self.clock = Cluster(), SimpleNamespace(elapsed=0.0)
        self.quality = DecisionQuality(
            SimpleNamespace(kube=self.cluster, clock=self.clock, actors=SimpleNamespace(interrupted=set()))  # type: ignore[arg-type]
        )
        self.violations: list[tuple[str, str]] = []

    def sample(
        self,
        at: float,
        pods: list[dict[str, Any]],
        claims: list[dict[str, Any]],
        waited: dict[str, float] | None = None,
    ) -> None:
        self.clock.elapsed = at
        self.cluster.objects.update(Pod=pods, NodeClaim=claims)
        self.quality.check(lambda name, subject, text: self.violations.append((name, subject)), waited)


def launched_for_a_and_b(run: Run) -> None:
    run.sample(0, [pod("a"), pod("b")], [nodeclaim("c1", ["a", "b"], initialized=False)])
    run.sample(60, [pod("a"), pod("b")], [nodeclaim("c1", ["a", "b"], initialized=True)])


def test_a_node_its_pods_went_elsewhere_from_is_a_wasted_launch() -> None:
    run = Run()
    launched_for_a_and_b(run)
    run.sample(90, [pod("a", "node-other"), pod("b", "node-other")], [nodeclaim("c1", ["a", "b"], initialized=True)])
    run.sample(60 + UNUSED_SECONDS + 30, [pod("a", "node-other")], [nodeclaim("c1", ["a", "b"], initialized=True)])
    assert run.violations == [("launched_unused", "c1")]


def test_a_node_whose_pods_were_deleted_still_pending_is_not() -> None:
    run = Run()
    launched_for_a_and_b(run)
    run.sample(90, [], [nodeclaim("c1", ["a", "b"], initialized=True)])  # scaled down before the pods were bound
    run.sample(120, [], [])  # emptiness took it back
    assert run.violations == []


def test_one_pod_of_its_demand_still_there_and_unplaced_on_it_is_still_waste() -> None:
    run = Run()
    launched_for_a_and_b(run)
    run.sample(60 + UNUSED_SECONDS + 30, [pod("b")], [nodeclaim("c1", ["a", "b"], initialized=True)])
    assert run.violations == [("launched_unused", "c1")]


def test_a_node_of_a_plan_ec2_cut_short_is_not_waste_but_a_launch_of_an_uncut_plan_is() -> None:
    """EC2 refused capacity while c1 waited for its launch (the plan's other zones went unlaunched, say): that its
    pods then went elsewhere is EC2's doing. c2, launched after, is judged as usual."""
    run = Run()
    run.sample(0, [pod("a"), pod("b")], [nodeclaim("c1", ["a"], initialized=False)])
    run.quality.plan_cut({"c1"})
    run.sample(
        30, [pod("a"), pod("b")], [nodeclaim("c1", ["a"], initialized=False), nodeclaim("c2", ["b"], initialized=False)]
    )
    both = [nodeclaim("c1", ["a"], initialized=True), nodeclaim("c2", ["b"], initialized=True)]
    run.sample(60, [pod("a"), pod("b")], both)
    run.sample(60 + UNUSED_SECONDS + 30, [pod("a", "node-other"), pod("b", "node-other")], both)
    assert run.violations == [("launched_unused", "c2")]
