"""A small slice of Karpenter's scheduling benchmark (bench/scheduling.py runs the full one and times it):
every pod of each kind is placed and the independent validator accepts the result. No timing here."""

from __future__ import annotations

from autoscaler.scheduling import ClusterSnapshot
from bench.workloads import PodFactory, instance_types, nodepool
from tests.unit.scheduling.builders import solve


def cluster() -> ClusterSnapshot:
    return ClusterSnapshot(nodepools=[nodepool()], instance_types={"default": instance_types(400)})


def test_diverse_pods_all_schedule_and_validate() -> None:
    pods = PodFactory().diverse(200)
    result = solve(cluster(), pods)
    assert len(result.placements) == 200 and not result.unschedulable
    # 40 pods with hostname anti-affinity to each other need 40 nodes; nothing forces more
    assert len(result.new_nodeclaims) == 40


def test_preference_pods_respected_and_ignored() -> None:
    pods = PodFactory().preference(60)
    respected = solve(cluster(), pods)
    assert len(respected.placements) == 60
    # the satisfiable preferences hold: one pod per host, all in test-zone-1
    assert len(respected.new_nodeclaims) == 60
    assert {c.requirements["topology.kubernetes.io/zone"].values for c in respected.new_nodeclaims} == {
        frozenset({"test-zone-1"})
    }
    ignored = solve(cluster(), pods, respect_preferences=False)
    assert len(ignored.placements) == 60 and len(ignored.new_nodeclaims) == 1
