"""The policy/v1 Eviction subresource: delete a pod unless a PodDisruptionBudget forbids it now (429).

There is no disruption controller here, so a budget's allowance is computed from the live pods at the
moment of each eviction, which is what the controller's ``status.disruptionsAllowed`` converges to.
"""

from __future__ import annotations

import math
from typing import Any

from autoscaler_dev.kube_emulator.errors import ApiError
from autoscaler_dev.kube_emulator.resources import Obj, Registry, ResourceType
from autoscaler_dev.kube_emulator.selectors import selector_from_label_selector
from autoscaler_dev.kube_emulator.store import Store

_SUCCESS: Obj = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


def _healthy(pod: Obj) -> bool:
    status = pod.get("status") or {}
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ())
    return status.get("phase") == "Running" and ready and not pod["metadata"].get("deletionTimestamp")


def _scaled(value: Any, expected: int) -> int:
    """An IntOrString budget: an absolute number, or a percentage of the expected pods rounded up."""
    if isinstance(value, str) and value.endswith("%"):
        return math.ceil(int(value[:-1]) * expected / 100)
    return int(value)


def desired_healthy(pdb: Obj, expected: int) -> int:
    spec = pdb.get("spec") or {}
    if spec.get("minAvailable") is not None:
        return _scaled(spec["minAvailable"], expected)
    if spec.get("maxUnavailable") is not None:
        return max(expected - _scaled(spec["maxUnavailable"], expected), 0)
    return 0


def evict(store: Store, registry: Registry, namespace: str, name: str, body: Obj) -> Obj:
    pods = _type(registry, "", "pods")
    budgets = _type(registry, "policy", "poddisruptionbudgets")
    with store.lock:  # the check and the deletion are one step, as the API server's are per budget
        pod = store.get(pods, namespace, name)
        phase = (pod.get("status") or {}).get("phase")
        exempt = pod["metadata"].get("deletionTimestamp") or phase in ("Pending", "Succeeded", "Failed")
        if not exempt:
            matching = [
                pdb
                for pdb in store.objects(budgets, namespace)
                if selector_from_label_selector((pdb.get("spec") or {}).get("selector"))(pod)
            ]
            if len(matching) > 1:
                raise ApiError(
                    500,
                    "InternalError",
                    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
                )
            if matching:
                _check_budget(store, pods, matching[0], pod)
        store.delete(pods, namespace, name, (body.get("deleteOptions") or {}).get("preconditions"))
    return _SUCCESS


def _check_budget(store: Store, pods: ResourceType, pdb: Obj, pod: Obj) -> None:
    selects = selector_from_label_selector(pdb["spec"].get("selector"))
    covered = [p for p in store.objects(pods, pod["metadata"]["namespace"]) if selects(p)]
    healthy = sum(_healthy(p) for p in covered)
    # The disruption controller takes the expected count from the pods' controllers (replicas); without one
    # here, a budget's status.expectedPods (when a test or simulation sets it) or else the live count stands in.
    expected = int((pdb.get("status") or {}).get("expectedPods") or len(covered))
    desired = desired_healthy(pdb, expected)
    if _healthy(pod):
        allowed = healthy - desired > 0
    else:  # an unhealthy pod does not count against the budget unless the budget is already broken
        policy = pdb["spec"].get("unhealthyPodEvictionPolicy", "IfHealthyBudget")
        allowed = policy == "AlwaysAllow" or healthy >= desired
    if not allowed:
        raise ApiError(
            429,
            "TooManyRequests",
            "Cannot evict pod as it would violate the pod's disruption budget.",
            {
                "causes": [
                    {
                        "reason": "DisruptionBudget",
                        "message": f"The disruption budget {pdb['metadata']['name']} needs {desired} healthy pods "
                        f"and has {healthy} currently",
                    }
                ]
            },
        )


def _type(registry: Registry, group: str, plural: str) -> ResourceType:
    resource = registry.get(group, "v1", plural)
    assert resource is not None, f"{plural} is a built-in resource"
    return resource
