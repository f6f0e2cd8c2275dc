"""Before a consolidation acts: the independent check of its placements, and its re-validation on a fresh read."""

from __future__ import annotations

from typing import Any

from autoscaler import metrics as m
from autoscaler.controllers.disruption.verification import check_placements
from autoscaler.controllers.state import InFlight
from autoscaler.scheduling import Placement
from autoscaler.scheduling.pods import PodRef
from autoscaler.scheduling.result import SchedulingResult
from tests.unit.disruption.test_cross_pool import two_pools
from tests.unit.disruption.world import pod


def _ref(name: str) -> PodRef:
    return PodRef("default", name, f"uid-{name}")


def test_the_check_reads_taints_selectors_and_room_from_the_objects_themselves() -> None:
    world = two_pools()
    found = world.controller().assess()
    snapshot = found.state.snapshot(list(found.nodepools.values()), found.instance_types, InFlight(), frozenset())
    pods = {p["metadata"]["name"]: p for p in found.state.bound_pods}
    wrong = SchedulingResult(
        placements={
            _ref("bare"): Placement("node", "node-small"),  # it selects arm64
            _ref("web-0"): Placement("node", "node-arm"),  # tainted dedicated=arm
            _ref("web-1"): Placement("node", "node-small"),  # 3 CPUs on a 2-CPU node
        }
    )
    errors = check_placements(snapshot, list(pods.values()), wrong, {"node-big"})
    assert "pod default/bare cannot run on node-small: nodeSelector kubernetes.io/arch=arm64" in errors
    assert "pod default/web-0 does not tolerate the taint dedicated=arm:NoSchedule of node-arm" in errors
    assert any(e.startswith("the pods placed on node-small need") for e in errors)
    right = SchedulingResult(placements={_ref("web-0"): Placement("node", "node-big")})
    assert check_placements(snapshot, [pods["web-0"]], right, {"node-small"}) == []


def test_a_command_whose_placements_fail_a_check_is_not_proposed_and_is_counted() -> None:
    world = two_pools()
    refuse = lambda *_: ["the world's validator says no"]  # noqa: E731 - a check that refuses everything
    result = world.controller(placement_checks=(refuse,)).run()
    assert result is not None and result.outcome.started == []
    assert result.assessment.decisions.command is None
    why = result.summary()["failed_validations"]
    assert why and all(w == "failed validation: the world's validator says no" for w in why)
    points = [p for p in result.metric_points() if p.name == m.DISRUPTION_FAILED_VALIDATIONS]
    assert points and sum(p.value for p in points) == len(why)


def test_a_pod_that_arrives_on_a_candidate_after_the_read_stops_the_command() -> None:
    world = two_pools()
    reads = [0]
    original = world.cluster.pods

    def pods(node_name: str | None = None) -> list[dict[str, Any]]:
        reads[0] += 1
        if reads[0] == 2:  # the re-read before the command's first write
            world.cluster.add(pod("late", "node-small", cpu="100m"))
        return original(node_name)

    world.cluster.pods = pods  # type: ignore[method-assign]
    result = world.controller().run()
    assert result is not None and result.assessment.decisions.command is not None
    assert result.outcome.started == [] and result.revalidation is not None
    assert result.revalidation.startswith("pods arrived on node-small after the pass read the cluster")
    assert (world.claim("small").metadata.annotations or {}).get("serverless-karpenter.io/disruption-command") is None
    assert any(p.name == m.DISRUPTION_FAILED_VALIDATIONS for p in result.metric_points())


def test_an_unchanged_cluster_passes_re_validation_and_the_command_starts() -> None:
    world = two_pools()
    result = world.controller().run()
    assert result is not None and result.revalidation is None and result.outcome.started == ["small"]
