"""Detection latency of pending pods with and without the in-cluster forwarder, in the embedded world: the time
from a Deployment's pods being created to the first NodeClaim the provisioner creates for them.

- forwarder (the default): the pods' events reach the provisioning queue within the forwarder's window;
- zero-in-cluster (`-c forwarder=none`): the forwarder is off and the sweep runs every 10 s, as the stack's Step
  Functions loop sends it;
- the floor without either: the forwarder off and the one-minute sweep.

The figures are printed (`pytest -s`) and quoted in docs/zero-in-cluster.md."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from autoscaler import clock
from autoscaler_dev.world.runner import Simulation
from autoscaler_dev.world.scenario import Scenario
from tests.support import manifests

SCALE_AT = 95.0  # between two one-minute sweeps and off the 10-second grid, so no mode is lucky
SWEEP_SECONDS = 10.0


def scenario(forwarder: bool) -> Scenario:
    actions: list[dict[str, Any]] = [{"at": f"{int(SCALE_AT)}s", "scale": {"workload": "web", "replicas": 4}}]
    if not forwarder:
        actions.insert(0, {"at": "0s", "forwarder": {"up": False}})
    return Scenario.model_validate(
        {
            "name": f"detection-{'forwarder' if forwarder else 'none'}",
            "duration": "150s",
            "tick": "1s",
            "instanceTypes": ["m5.large", "m5.xlarge"],
            "manifests": [manifests.nodeclass(), manifests.nodepool()],
            "workloads": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {"name": "web", "namespace": "default"},
                    "spec": {
                        "replicas": 0,
                        "selector": {"matchLabels": {"app": "web"}},
                        "template": {
                            "metadata": {"labels": {"app": "web"}},
                            "spec": {
                                "containers": [
                                    {"name": "app", "image": "pause", "resources": {"requests": {"cpu": "1"}}}
                                ]
                            },
                        },
                    },
                }
            ],
            "actions": actions,
        }
    )


def detection_seconds(forwarder: bool, sweep_seconds: float | None) -> float:
    """Seconds from the first of the Deployment's pods to the first NodeClaim."""
    seen: dict[str, list[datetime]] = {}

    def after(world: Any) -> None:
        for kind, api_version in (("Pod", "v1"), ("NodeClaim", "karpenter.sh/v1")):
            seen[kind] = [
                created
                for obj in world.kube.list(api_version, kind)
                if (created := clock.parse_time(obj["metadata"].get("creationTimestamp"))) is not None
            ]

    Simulation(scenario(forwarder), sweep_seconds=sweep_seconds).run(after=after)
    assert seen["Pod"] and seen["NodeClaim"], seen
    return (min(seen["NodeClaim"]) - min(seen["Pod"])).total_seconds()


@pytest.fixture(scope="module")
def latencies() -> dict[str, float]:
    figures = {
        "forwarder": detection_seconds(True, None),
        "zero-in-cluster": detection_seconds(False, SWEEP_SECONDS),
        "one-minute sweep": detection_seconds(False, None),
    }
    print("\ndetection latency (s):", figures)
    return figures


def test_zero_in_cluster_detects_within_one_sweep_period(latencies: dict[str, float]) -> None:
    assert 0 <= latencies["zero-in-cluster"] <= SWEEP_SECONDS + 2  # a period, and the world's 1-second tick


def test_zero_in_cluster_beats_the_one_minute_floor(latencies: dict[str, float]) -> None:
    assert latencies["one-minute sweep"] > 2 * latencies["zero-in-cluster"]
    assert latencies["one-minute sweep"] >= 20  # scaled 35 s after a sweep


def test_the_forwarder_stays_the_fast_path(latencies: dict[str, float]) -> None:
    assert latencies["forwarder"] <= latencies["zero-in-cluster"]
