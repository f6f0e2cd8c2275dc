"""The ``displaced_pod_unplaced`` decision-quality invariant: the successor of a pod a consolidation evicted must find
a node within ``UNPLACED_SECONDS``, not counting the time EC2 refused the capacity it was nominated to (the same
excuse ``pod_pending_too_long`` gives, from the same pending clocks)."""

from __future__ import annotations

from typing import Any

from autoscaler_dev.world.decisions import UNPLACED_SECONDS
from tests.unit.simulation.test_launched_unused import Run

OWNER = {"kind": "ReplicaSet", "name": "web", "uid": "rs-1", "controller": True}


def web(uid: str, node: str = "") -> dict[str, Any]:
    metadata = {"name": uid, "namespace": "default", "uid": uid, "ownerReferences": [OWNER]}
    return {"metadata": metadata, "spec": {"nodeName": node} if node else {}}


def consolidated(name: str) -> dict[str, Any]:
    mark = {"type": "DisruptionReason", "status": "True", "reason": "Underutilized"}
    return {"metadata": {"name": name, "labels": {}}, "status": {"nodeName": f"node-{name}", "conditions": [mark]}}


def evicted_then_replaced() -> Run:
    """web-1 runs on a node a consolidation takes; web-2, its successor, is pending from t=60 s."""
    run = Run()
    run.sample(0, [web("web-1", "node-old")], [consolidated("old")])
    run.sample(30, [], [consolidated("old")])
    run.sample(60, [web("web-2")], [])
    return run


def test_a_successor_pending_past_the_bound_is_a_violation() -> None:
    run = evicted_then_replaced()
    run.sample(60 + UNPLACED_SECONDS + 30, [web("web-2")], [])
    assert run.violations == [("displaced_pod_unplaced", "web-2")]


def test_the_time_ec2_refused_its_capacity_does_not_count_but_the_rest_does() -> None:
    run = evicted_then_replaced()
    late = 60 + UNPLACED_SECONDS + 30
    run.sample(late, [web("web-2")], [], {"web-2": late - 60 - 180})  # one refusal excused its 3 minutes
    assert run.violations == []
    run.sample(late + 200, [web("web-2")], [], {"web-2": UNPLACED_SECONDS + 1})  # past the bound all the same
    assert run.violations == [("displaced_pod_unplaced", "web-2")]


def test_a_replica_already_pending_before_the_eviction_is_not_the_successor() -> None:
    """web-0 was pending (for want of capacity) before web-1's eviction; web-2, created for web-1, places at once."""
    run = Run()
    run.sample(0, [web("web-0"), web("web-1", "node-old")], [consolidated("old")])
    run.sample(30, [web("web-0")], [consolidated("old")])
    run.sample(60, [web("web-0"), web("web-2", "node-new")], [])
    run.sample(60 + UNPLACED_SECONDS + 30, [web("web-0"), web("web-2", "node-new")], [])
    assert run.violations == []
