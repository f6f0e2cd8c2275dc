"""Pod resource requests as the kube-scheduler computes them, and pods whose specs cannot be read."""

from __future__ import annotations

from typing import Any

from autoscaler.scheduling.pods import pod_requests
from tests.unit.scheduling.builders import GIB, error_of, instance_type, pod, snapshot, solve

MIB = 2**20


def container(cpu: str | None = None, memory: str | None = None, **extra: Any) -> dict[str, Any]:
    requests = {k: v for k, v in {"cpu": cpu, "memory": memory}.items() if v is not None}
    return {"name": "c", "resources": {"requests": requests}, **extra}


def test_containers_add_up_and_take_one_pod_slot() -> None:
    spec = {"containers": [container("500m", "1Gi"), container("250m", "512Mi")]}
    assert pod_requests(spec) == {"cpu": 750, "memory": GIB + 512 * MIB, "pods": 1}


def test_largest_init_container_wins_when_larger_than_the_containers() -> None:
    spec = {"containers": [container("1", "1Gi")], "initContainers": [container("3", "512Mi"), container("2", "4Gi")]}
    assert pod_requests(spec) == {"cpu": 3000, "memory": 4 * GIB, "pods": 1}


def test_sidecars_add_to_the_containers_and_to_later_init_containers() -> None:
    sidecar = container("200m", "128Mi", restartPolicy="Always")
    spec = {
        "containers": [container("1", "1Gi")],
        "initContainers": [sidecar, container("2", "256Mi")],
    }
    # containers + sidecar = 1200m / 1152Mi; the init step runs beside the sidecar: 2200m / 384Mi
    assert pod_requests(spec) == {"cpu": 2200, "memory": GIB + 128 * MIB, "pods": 1}


def test_overhead_and_pod_level_requests_and_limits_as_requests() -> None:
    spec = {
        "containers": [{"name": "c", "resources": {"limits": {"cpu": "2", "nvidia.com/gpu": "1"}}}],
        "overhead": {"cpu": "100m", "memory": "64Mi"},
    }
    assert pod_requests(spec) == {"cpu": 2100, "memory": 64 * MIB, "nvidia.com/gpu": 1, "pods": 1}
    pod_level = {"containers": [container("1", "1Gi")], "resources": {"requests": {"cpu": "3"}}}
    assert pod_requests(pod_level)["cpu"] == 3000


def test_extended_resources_need_an_instance_type_that_has_them() -> None:
    gpu = instance_type("g5.xlarge", 4, 16, extra={"nvidia.com/gpu": 1})
    plain = instance_type("m5.xlarge", 4, 16)
    wants_gpu = pod("trainer", requests={"cpu": "1", "nvidia.com/gpu": "1"})
    wants_neuron = pod("inferentia", requests={"cpu": "1", "aws.amazon.com/neuron": "1"})
    result = solve(snapshot(instance_types=[plain, gpu]), [wants_gpu, wants_neuron])
    claim = next(c for c in result.new_nodeclaims if c.pods[0].name == "trainer")
    assert [o.name for o in claim.instance_types] == ["g5.xlarge"]
    assert "no instance type has enough resources" in error_of(result, "inferentia")
    assert "{aws.amazon.com/neuron=1, cpu=1, pods=1}" in error_of(result, "inferentia")


def test_a_pod_with_an_unreadable_spec_is_reported_not_raised() -> None:
    broken = pod("broken", requests={"cpu": "lots"})
    bad_operator = pod(
        "bad-operator",
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "Near", "values": ["x"]}]}]
                }
            }
        },
    )
    fine = pod("fine")
    result = solve(snapshot(), [broken, bad_operator, fine])
    assert "invalid spec" in error_of(result, "broken") and "lots" in error_of(result, "broken")
    assert "unknown operator 'Near'" in error_of(result, "bad-operator")
    assert len(result.placements) == 1
